/*
 * advise_internal.h - what refurb-advise's measurement (advise.c) takes
 * from the other files of its concept.
 */
#ifndef REFURB_ADVISE_INTERNAL_H
#define REFURB_ADVISE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/advise.h"
#include "refurb/pipeline.h"
#include "refurb/record.h"
#include "refurb/index.h"
#include "refurb/image.h"

/* CPU seconds (both ends) to pass one image of bytes through the batch
 * stream: copied into a frame, checksummed, written to a pipe, read into
 * a fresh buffer, checksummed again; NAN when the pipe or a thread cannot
 * be had (advise_transfer.c). */
double rfbi_advise_time_transfer(size_t bytes);

/* What one measurement shares: the pipelines and their splits, and where
 * the timing threads (advise.c's struct bench_worker, one each) put what
 * they measure, each in its own images' slots. */
struct bench {
	const struct rfb_advise_opts *o;
	rfb_index *idx;
	rfb_pipeline *full;            /* what is timed: gates open */
	rfb_pipeline *gated;           /* the spec's, when it has gates */
	double weight[RFB_PIPELINE_MAX_LAYERS];  /* full's layer i runs */
	int position[RFB_PIPELINE_MAX_LAYERS];   /* as gated's layer ... */
	rfb_pipeline **head, **tail;  /* by split k */
	int *width, *height;           /* [k * sample + i]: input of layer k */
	double *med;                   /* [(k * sample + i) * 4 + q]: image i's
					* median time of split k's part q
					* (partial, write, read, final) */
	double *out_bytes;             /* per split, summed */
	rfb_advice *a;
	int L;
	int cuts;                      /* splits 0 .. cuts-1 can be timed: a
					* normalize, what follows it and an
					* erasing value=random before it stay
					* final together */
	rfb_err **why;                 /* per image: why it was left out */
	double *runs;                  /* repeat: one image's runs (add_up) */
};

/* A copy of s (malloc'd), or NULL without memory (advise_tail.c). */
char *rfbi_advise_dup(const char *s);

/* The specs of p split after its first k layers into s->partial_spec and
 * s->final_spec (malloc'd; the final part made runnable alone by
 * rfbi_advise_fix_tail for images of shape): 0 or an RFB_E* code
 * (advise_tail.c). */
int rfbi_advise_split_specs(const rfb_pipeline *p, int k,
			    const struct rfb_pipe_shape *shape,
			    struct rfb_advise_split *s, rfb_err *err);

/* tail, and a centercrop to shape before any normalize when the tail
 * alone does not fix the output size (advise_tail.c). */
int rfbi_advise_fix_tail(rfb_pipeline **tail, const struct rfb_pipe_shape *shape,
			 rfb_err *err);

/* The advice of b->gated from the one timed with its gates open: its
 * layers and the splits that keep every gate whole (advise_gates.c). */
int rfbi_advise_regate(struct bench *b, rfb_err *err);

#endif
