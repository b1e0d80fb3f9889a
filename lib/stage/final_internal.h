/*
 * final_internal.h - the engine of refurb-final (final.c) and what it
 * opens before the first batch (final_inputs.c): its state, its batch
 * slots, tasks and workers.
 */
#ifndef REFURB_FINAL_INTERNAL_H
#define REFURB_FINAL_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "refurb/aio.h"
#include "refurb/annotate.h"
#include "refurb/cache.h"
#include "refurb/final.h"
#include "refurb/handover.h"
#include "refurb/index.h"
#include "refurb/pipeline.h"
#include "refurb/plan.h"
#include "refurb/pool.h"
#include "refurb/record.h"
#include "refurb/source.h"
#include "refurb/stream.h"
#include "slot_ring_internal.h"

#define MAX_IMAGE_FILE ((size_t)1 << 30)

struct final;
struct fslot;

struct ftask {
	struct rfb_task task;
	struct final *F;
	struct fslot *slot;
	uint32_t out;          /* position in the collated batch */
	uint32_t sample, write_epoch;
	const struct rfb_batch_record *rec;
	uint32_t aio;          /* rec's index in the slot's batch reader */
	int status, healed;
	int unreadable;        /* status is from the record and its image */
	rfb_err why;
	double decode_s, augment_s, heal_s, cpu_s;
};

struct fslot {
	rfb_plan_batch batch;
	rfb_plan_sample *samples;
	struct rfb_cache_addr *addrs;   /* records to read, in order */
	uint32_t *addr_sample;
	uint32_t *write_epochs;
	uint32_t nread;
	/* the records read from the cache (one io_submit): their addresses
	 * and samples, compacted, and their position j among the nread */
	struct rfb_cache_addr *aio_addrs;
	uint32_t *aio_sample, *aio_index, naio;
	struct rfb_batch_record *ring_recs; /* nread; those in the handover */
	uint64_t ring_end;              /* end of the batch's last such record */
	uint32_t ring_count;            /* records in the ring */
	int rq_pos;                     /* its entry in final.rq */
	struct ftask *tasks;            /* one per image kept */
	uint32_t n;                     /* images kept */
	uint32_t *labels, *ids;
	unsigned char *pixels;          /* batch_size samples' images, group
					 * after group, 64-aligned */
	rfb_batch_reader *reader;
	struct rfb_group group;
	double read_s;
	uint64_t bytes_read, misses;
};

/* A view group: views of one size, together in the stream (--view-group;
 * without it, one group of every view). */
struct fgroup {
	int views, first;          /* its views: first .. first + views - 1 */
	struct rfb_pipe_shape shape;
	size_t image_bytes;        /* one view */
	size_t sample_bytes;       /* views * image_bytes */
	size_t offset;             /* its images in a slot's pixels */
};

struct fworker {
	rfb_pipe_ctx *final, *heal;
	rfb_codec_ctx *codec;
	rfb_imgbuf record_img;
	unsigned char *file;
	size_t file_cap;
};

struct final {
	const struct rfb_final_opts *o;
	struct rfb_final_stats *st;
	rfb_plan_reader *reader;
	const rfb_plan_header *h;
	struct rfb_annot_header annot;
	rfb_index *idx;
	rfb_source *src;          /* reads images to heal bad records */
	rfb_cache_view *view;
	rfb_handover *ho;         /* refurb-partial's ring, or NULL */
	rfb_err ho_err;           /* why it could not be opened */
	/* The prepared batches in plan order with the ring records their
	 * tasks still use: a batch's ring space is released as soon as its
	 * tasks and those of every older batch are done, by whichever
	 * thread ends the last of them (not when the frame is written,
	 * which waits for the next plan line: refurb-partial may be waiting
	 * for that space to write it). */
	pthread_mutex_t rq_mu;
	struct { uint64_t end; uint32_t pending; } *rq;
	int rq_cap, rq_head, rq_count;
	rfb_cache_position_writer *position; /* NULL: the cache is read-only */
	struct rfb_cache_position pos;
	rfb_pipeline *final_pipe, *partial_pipe;
	/* view v's final pipeline: view_pipe[v], or final_pipe for every
	 * view when one spec serves them all (view_pipe NULL) */
	rfb_pipeline **view_pipe;
	char *final_text;         /* the per-view specs joined by ';' */
	uint64_t seed;
	struct rfb_pipe_shape shape;
	int dtype, layout;
	int views;                /* images per sample (>= 1) */
	size_t sample_bytes;      /* every view's image_bytes */
	struct fgroup group[RFB_STREAM_MAX_GROUPS];
	int ngroups;              /* >= 1; > 1: a version 3 stream */
	size_t slot_bytes;        /* a slot's pixels: the groups' blocks */
	rfb_pool *pool;
	struct fslot *slots;
	int nslots;
	struct rfbi_ring ring; /* slots in plan order */
	rfb_stream_writer *writer;
	const char *in_name;      /* the annotated plan, for messages */
	double start, last_write, sum_iv, sum_iv2;
	uint64_t intervals;
};

/* What the header of the annotated plan says, with the options'
 * overrides (final_inputs.c). */
int rfbi_final_read_annotation(struct final *F, const char *in_name,
			       rfb_err *err);

/* The index, the cache, the handover ring and the final pipelines (one
 * per view); checks that they belong to the plan (final_inputs.c). */
int rfbi_final_open_inputs(struct final *F, const char *in_name, rfb_err *err);
/* Check the open-file limit, size the shards' descriptors (0 or an error). */
int rfbi_final_fit_fds(struct final *F, rfb_err *err);

/* The HEADER's extra text: the cache, its codec and the plan identity
 * lines (final_extra.c).  Returns a string the caller frees, or NULL when
 * out of memory. */
char *rfbi_final_stream_extra(const struct final *F);

/*
 * One group of views: views (>= 1) run the same final pipeline on the
 * record of one sample.  When two of them would come out identical with
 * a probability (rfb_pipeline_views_collision, final's input width x
 * height) over RFB_VIEW_COLLISION_LIMIT: RFB_ESPEC with a message naming
 * the probability and the random layers of partial to move into the
 * final part.  0 otherwise (final_inputs.c).
 */
int rfbi_final_check_views(const rfb_pipeline *partial, const rfb_pipeline *final,
			   int views, int width, int height, rfb_err *err);

/*
 * Views (>= 1) made from one cached record (all the views of a sample):
 * when there are two or more and partial has layers that draw
 * (rfb_pipeline_layer_draws on width x height), the views would share
 * those draws: RFB_ESPEC with a message naming them and the way out.
 * 0 otherwise (final_inputs.c).
 */
int rfbi_final_check_shared_draws(const rfb_pipeline *partial, int views,
				  int width, int height, rfb_err *err);

/* The final pipelines of the views and their groups, checked against
 * each other; where each group's images go in a slot (final_groups.c). */
int rfbi_final_open_groups(struct final *F, rfb_err *err);
void rfbi_final_close_groups(struct final *F);

/* The group of view v. */
int rfbi_final_group_of(const struct final *F, int v);

/* Where view v of the sample at place j of s goes. */
unsigned char *rfbi_final_view_pixels(const struct final *F,
				      const struct fslot *s, uint32_t j, int v);

/* Copy the images of the sample at place from to place to. */
void rfbi_final_copy_sample(const struct final *F, struct fslot *s,
			    uint32_t to, uint32_t from);

#endif
