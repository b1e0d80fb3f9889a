/*
 * final.h - the engine of refurb-final: read the annotated plan, fetch
 * each batch's records with one batched AIO submission, decompress, run
 * the final pipeline with -j workers, collate, and write the batch stream
 * (stream.h).  A record that cannot be read or fails its checksum is
 * recomputed from its image with the partial pipeline the plan's header
 * names, with the same random parameters.
 */
#ifndef REFURB_FINAL_H
#define REFURB_FINAL_H

#include <stdint.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_final_stats {
	uint64_t batches, images;
	/* the split, for the first progress line (on_progress is called
	 * once with batches 0 before the first batch): the plan's partial
	 * pipeline, this stage's (the views' joined by ';'), r, the views;
	 * the texts owned by the run */
	const char *partial_spec, *final_spec;
	uint32_t reuse;
	int views;
	uint64_t skipped;        /* samples refurb-partial left out */
	int stopped_by_signal;   /* *opts->stop was set: the signal number */
	uint32_t last_epoch, last_step; /* the last batch written */
	int wrote_batch;         /* at least one batch was written */
	uint32_t epoch_batches;  /* batches of an epoch (the plan's) */
	char plan_options[160];  /* refurb-plan options that made the plan,
				  * e.g. "-b 256 -e 0-89 -s 7" */
	uint64_t repeats;        /* places of unreadable samples given to
				  * repeats of their batch's other samples */
	uint64_t healed;         /* records recomputed from their image */
	uint64_t bytes_read, submit_calls;
	uint64_t handover_records; /* read from refurb-partial's handover */
	double seconds;          /* wall */
	double read_s;           /* in io_submit + io_getevents */
	double decode_s;         /* decompressing records, all workers */
	double augment_s;        /* final pipeline, all workers */
	double heal_s;           /* recomputing records, all workers */
	double input_wait_s;     /* waiting for the next plan line */
	double output_wait_s;    /* writing frames (the reader's pace) */
	double interval_mean_s;  /* time between two batches written */
	double interval_cv;      /* its coefficient of variation */
	int direct_refused;      /* --direct asked, filesystem refused it */
	int stopped_by_reader;   /* the reader closed the stream (EPIPE) */
	uint32_t epoch;
	uint64_t global_step;
};

/* One finished batch, for on_batch (refurb-final --stats); times in
 * seconds. */
struct rfb_final_batch_stats {
	uint32_t epoch, step;
	uint32_t images;          /* written to the stream */
	uint64_t misses, healed;
	uint64_t bytes_read;
	double read_s;            /* reading the records (AIO) */
	double decompress_s, augment_s, heal_s; /* summed over the tasks */
	double output_wait_s;     /* writing the frame */
	double interval_s;        /* since the previous frame (0: first) */
	double cpu_s;             /* the tasks' thread CPU time, summed */
};

struct rfb_final_opts {
	const char *pipeline;     /* the final pipeline spec */
	/* NULL, or one spec per view (views of them, overriding pipeline):
	 * view v runs view_pipelines[v]; every one must make the same
	 * dtype and normalization, and the same image size (that of its
	 * group, with group_views) */
	const char *const *view_pipelines;
	int views;                /* final pipelines per sample, 1 to
				   * RFB_STREAM_MAX_VIEWS (0 = 1); more than
				   * one makes a version 2 stream */
	/* NULL, or the views in groups (refurb-final --view-group): group g
	 * is the next group_views[g] views of view_pipelines (which the
	 * groups use up), all of one size; groups of 2 to
	 * RFB_STREAM_MAX_GROUPS make a version 3 stream, each group one
	 * array of the reader's batch */
	const int *group_views;
	int groups;
	int allow_view_collisions; /* else views of one spec that would often
				   * be identical are refused (RFB_ESPEC:
				   * refurb-final(1), --allow-view-collisions) */
	int allow_shared_draws;   /* else two or more views made from a record
				   * whose partial pipeline draws are refused
				   * (RFB_ESPEC: refurb-final(1),
				   * --allow-shared-draws) */
	int threads;
	int prefetch;             /* batches in flight (>= 1) */
	int direct;               /* O_DIRECT reads */
	int strict;               /* a bad record is fatal instead of healed */
	int have_seed;            /* else: the plan header's aug-seed */
	uint64_t seed;
	const char *cache_dir;    /* overrides of the header's values, or NULL */
	const char *index_path;
	const char *root;
	uint64_t max_pixels;      /* the pixel cap of every image a pipeline
				   * makes (0: RFB_IMAGE_DEFAULT_MAX_PIXELS) */
	const char *out_name;     /* the stream, for messages; NULL: "(output)" */
	/* When not NULL and non-zero (a signal handler sets it), the run
	 * stops before the next batch: the batches under way are written,
	 * the stream is left without its END frame (it did not end), and
	 * rfb_final_run returns 0 with st->stopped_by_signal set. */
	volatile int *stop;
	/* Called from the calling thread after each batch is written, or
	 * NULL (refurb-final keeps its resume line up to date with it). */
	void (*on_written)(void *ctx, const struct rfb_final_stats *st);
	void (*on_heal)(void *ctx, uint32_t sample, const rfb_err *why);
	/* a sample left out: its record is bad and its image unreadable */
	void (*on_bad)(void *ctx, uint32_t sample, const rfb_err *why);
	void (*on_progress)(void *ctx, const struct rfb_final_stats *st,
			    uint64_t total_batches);
	/* every batch written, in order (NULL: none) */
	void (*on_batch)(void *ctx, const struct rfb_final_batch_stats *b);
	/* Called from the calling thread before the first batch with how the
	 * run fits the system where that makes it slower (fewer shard files
	 * kept open to recompute records than it would), or NULL. */
	void (*on_note)(void *ctx, const rfb_err *note);
	void *ctx;
};

/*
 * Read the annotated plan from in_fd, write the batch stream to out_fd.
 * Returns 0 when the plan was done (or the reader went away:
 * st->stopped_by_reader) or a negative RFB_E* code with err filled
 * (RFB_ESPEC for a bad pipeline spec).  A stream cut short by an error is
 * detectable as such: it has no END frame.
 */
int rfb_final_run(const struct rfb_final_opts *o, int in_fd,
		  const char *in_name, int out_fd, struct rfb_final_stats *st,
		  rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
