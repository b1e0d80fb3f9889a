/*
 * partial.h - the engine of refurb-partial: read a plan stream, keep the
 * cache in step with the schedule, run the partial pipeline on every miss
 * (and on every hit whose record is gone) with -j workers, append the
 * records to the cache, and pass the plan on with every sample annotated
 * with its record's address (annotate.h).
 */
#ifndef REFURB_PARTIAL_H
#define REFURB_PARTIAL_H

#include <stdint.h>

#include "refurb/error.h"
#include "refurb/record.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_partial_stats {
	uint64_t batches, samples;
	/* the split, for the first progress line (on_progress is called
	 * once with batches 0 before the first batch): this stage's
	 * pipeline (owned by the run) and r */
	const char *partial_spec;
	uint32_t reuse;
	uint64_t computed;      /* misses run through the pipeline */
	uint64_t reused;        /* misses whose record a stopped run made */
	uint64_t hits;          /* hits served from the cache */
	uint64_t healed;        /* hits whose record was gone: recomputed */
	uint64_t skipped;       /* samples whose image could not be read */
	uint64_t image_bytes;   /* JPEG bytes read */
	uint64_t record_bytes;  /* bytes of records appended */
	uint64_t handover_records; /* handed to the reader in memory */
	int handover_unused;    /* --handover, but no reader opened the ring
				 * (in time: only when waiting for it) */
	uint64_t written_bytes; /* bytes written to segments (compaction too) */
	uint64_t compacted, deleted_segments;
	uint64_t live_records, live_bytes, raw_bytes;
	double seconds;         /* wall time */
	double worker_seconds;  /* decode + augment + encode, all workers */
	double worker_cpu_seconds; /* the same in thread CPU time */
	/* what opening the cache found */
	int created;
	uint64_t recovered_records, torn_bytes, lost_records;
	uint32_t epoch;         /* last epoch seen */
	uint64_t global_step;   /* last batch seen */
	int stopped_by_reader;  /* downstream closed the stream (EPIPE) */
	int stopped_by_signal;  /* *opts->stop was set: the signal number */
	/* images that could not be read: distinct samples, the first one's
	 * reason, and why the run stopped because of them */
	uint64_t bad_images;
	uint64_t bad_allowed;   /* the --max-bad limit, in images */
	uint64_t samples_planned; /* samples per epoch of the plan */
	uint64_t first_batch_jobs; /* images the first batch read (or tried) */
	rfb_err first_bad;
	enum { RFB_PARTIAL_GOING = 0, RFB_PARTIAL_NOTHING_READ,
	       RFB_PARTIAL_TOO_MANY_BAD } bad_stop;
	char index_root[1024];  /* the index's root, for messages */
	int checkpointed;       /* the cache was checkpointed as the run ended
				 * (whether it ended well or not) */
};

/* One finished batch, for on_batch (refurb-partial --stats). */
struct rfb_partial_batch_stats {
	uint32_t epoch, step;
	uint32_t samples, misses;  /* as planned */
	uint32_t computed;         /* misses run through the pipeline */
	uint32_t healed, reused, skipped;
	double worker_seconds;     /* wall time of the batch's jobs, summed */
	double cpu_seconds;        /* their thread CPU time, summed */
};

/* A handover ring of two batches of 256 KiB records (a 256 x 341 RGB
 * image), at least 16 MiB, at most 1 GiB: small enough that its pages
 * are reused lap after lap (fresh shared pages cost as much as the page
 * cache: a 256 MiB ring that never wraps saves nothing), large enough
 * that a batch being written and one being read fit. */
#define RFB_PARTIAL_HANDOVER_AUTO 1
/* How long refurb-partial waits for refurb-final to open the ring. */
#define RFB_PARTIAL_HANDOVER_WAIT_MS 10000

struct rfb_partial_opts {
	const char *cache_dir;
	const char *index_path;
	const char *root;        /* dataset root override, or NULL */
	const char *pipeline;    /* partial pipeline spec */
	struct rfb_codec codec;
	int threads;
	int strict;              /* an unreadable image is fatal */
	/* How many unreadable images stop the run (RFB_ELIMIT, st->bad_stop):
	 * more than max_bad_count images when max_bad_is_count, else more
	 * than max_bad_fraction of the shard's samples; a first batch whose
	 * every image fails, none of them with bad content (a file opened
	 * and read), stops it whatever the limit. */
	int max_bad_is_count;
	double max_bad_fraction;
	uint64_t max_bad_count;
	int reset;               /* empty a cache made for other inputs */
	int have_seed;           /* else: the plan's seed */
	uint64_t seed;
	uint64_t segment_max;    /* 0: default */
	uint64_t grace;          /* batches; 0: one epoch, at least 64 */
	uint64_t max_pixels;     /* the pixel cap: images decoded or made by
				  * any layer (0: RFB_IMAGE_DEFAULT_MAX_PIXELS) */
	int inflight;            /* batches being worked on at once (>= 1) */
	uint64_t handover;       /* bytes of the handover ring; 0: none;
				  * RFB_PARTIAL_HANDOVER_AUTO: sized by the
				  * batch (the output must then be a pipe
				  * to refurb-final: handover.h) */
	/* With handover: 0, wait (up to RFB_PARTIAL_HANDOVER_WAIT_MS) for
	 * the reader to open the ring before the first record, so that
	 * which records go where does not depend on timing; 1, do not wait:
	 * the ring is used from the first batch whose records are placed
	 * after a reader opened it (before, and if none ever does, they go
	 * to the cache).  refurb-partial's default when its output is a
	 * pipe: a reader that is no refurb-final costs nothing. */
	int handover_nowait;
	const char *out_name;    /* the output, for messages; NULL: "(output)" */
	/* When not NULL and non-zero (a signal handler sets it), the run
	 * stops before the next batch: the batches under way are finished
	 * and passed on, the cache is checkpointed, and rfb_partial_run
	 * returns 0 with st->stopped_by_signal set. */
	volatile int *stop;
	const char *costs_path;  /* append every computed sample's thread CPU
				  * time there (refurb-costs(5)), or NULL */
	/* Called from the calling thread the first time an image is left out
	 * (once per sample and run), and, with strict, for the one that stops
	 * the run. */
	void (*on_bad)(void *ctx, uint32_t sample, const rfb_err *why);
	/* Called from the calling thread after every batch. */
	void (*on_progress)(void *ctx, const struct rfb_partial_stats *st,
			    uint64_t total_batches);
	/* Called from the calling thread after every batch's line is
	 * written, or NULL. */
	void (*on_batch)(void *ctx, const struct rfb_partial_batch_stats *b);
	/* Called from the calling thread before the first batch with how the
	 * run fits the system where that makes it slower (fewer shard files
	 * kept open than it would, for the open-file limit), or NULL. */
	void (*on_note)(void *ctx, const rfb_err *note);
	void *ctx;
};

/*
 * Run: read the plan from in_fd (name for messages), write the annotated
 * plan to out_fd.  Returns 0 when the plan was done (or the reader went
 * away: st->stopped_by_reader), or a negative RFB_E* code with err
 * filled.  In every case the cache is left consistent and checkpointed
 * when that was still possible.
 */
int rfb_partial_run(const struct rfb_partial_opts *o, int in_fd,
		    const char *in_name, int out_fd,
		    struct rfb_partial_stats *st, rfb_err *err) RFB_MUST_CHECK;

/*
 * The epoch whose augmentation serves sample (of eviction phase) as a hit
 * in epoch, and the epoch that record dies in, under the schedule rule of
 * evict.h.
 */
uint32_t rfb_partial_write_epoch(uint32_t epoch, uint32_t phase,
				 uint32_t reuse);

#ifdef __cplusplus
}
#endif

#endif
