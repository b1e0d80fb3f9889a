/*
 * pipeline_run_internal.h - the executor's state, shared by pipeline.c (layers
 * on decoded images) and pipeline_jpeg.c (planning and running the
 * decode-time shortcuts).
 */
#ifndef REFURB_PIPELINE_RUN_INTERNAL_H
#define REFURB_PIPELINE_RUN_INTERNAL_H

#include "pipeline_internal.h"

struct rfb_pipe_ctx {
	rfb_imgbuf buf[2];      /* ping-pong images (the decoded one in buf[0]) */
	rfb_resizer *rz;
	float *tensor;          /* normalize's output */
	size_t tensor_cap;
	rfb_norm norm;          /* table of the last (mean, std, channels) */
	int norm_valid;
	double norm_mean[3], norm_std[3];
	int fast_decode;
	double scale_ratio;     /* < 0: the decoder's RFB_DECODE_MIN_RATIO */
	uint64_t max_pixels;
	struct rfb_jpeg_state *jpeg; /* pipeline_jpeg.c's, created on first use */
};

/* One run: the current image is cur; it lives in ctx->buf[cur_buf], or in
 * the caller's memory when cur_buf is -1 (then it must not be written). */
struct rfb_run {
	rfb_pipe_ctx *ctx;
	const struct rfb_pipe_key *key;
	rfb_image cur;
	int cur_buf;
};

/* Allocate dst (w x h x c) in a buffer other than cur's; *slot says which. */
int rfb_run_target(struct rfb_run *r, int w, int h, int c, rfb_image *dst,
		   int *slot, rfb_err *err);

/* Make img (in buffer slot) the current image. */
void rfb_run_take(struct rfb_run *r, const rfb_image *img, int slot);

/* Crop cur to rect (view if inside, padded copy with fill otherwise). */
int rfb_run_crop(struct rfb_run *r, const struct rfb_rect *rect,
		 const unsigned char *fill, rfb_err *err);

/* Run layer l as layer number position (its RNG stream). */
int rfb_run_layer(struct rfb_run *r, const struct rfb_layer *l, int position,
		  rfb_err *err);

/* Run layers [from, n) of p, then produce the output. */
int rfb_run_layers(struct rfb_run *r, const rfb_pipeline *p, int from,
		   struct rfb_pipe_out *out, rfb_err *err);

/* Make cur contiguous in a context buffer and fill out (normalising if p
 * ends in normalize). */
int rfb_run_finish(struct rfb_run *r, const rfb_pipeline *p,
		   struct rfb_pipe_out *out, rfb_err *err);

/* Free pipeline_jpeg.c's state of ctx (NULL state accepted). */
void rfb_pipe_ctx_free_jpeg(rfb_pipe_ctx *ctx);

#endif
