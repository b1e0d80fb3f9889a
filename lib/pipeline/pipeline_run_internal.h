/*
 * pipeline_run_internal.h - the executor's state, shared by pipeline_exec.c (layers
 * on decoded images), pipeline_window.c (augment layers on windows) and
 * pipeline_jpeg.c (planning and running the decode-time shortcuts); their
 * common primitives are in pipeline_run.c.
 */
#ifndef REFURB_PIPELINE_RUN_INTERNAL_H
#define REFURB_PIPELINE_RUN_INTERNAL_H

#include "refurb/augmix.h"
#include "refurb/decode.h"
#include "pipeline_internal.h"

struct rfb_pipe_ctx {
	rfb_imgbuf buf[2];      /* ping-pong images (the decoded one in buf[0]) */
	rfb_resizer *rz;
	float *tensor;          /* normalize's output */
	float *scratch;         /* gaussblur's intermediate rows */
	size_t scratch_cap;
	size_t tensor_cap;
	rfb_norm norm;          /* table of the last (mean, std, channels) */
	int norm_valid;
	double norm_mean[3], norm_std[3];
	int fast_decode;
	double scale_ratio;     /* < 0: the decoder's RFB_DECODE_MIN_RATIO */
	uint64_t max_pixels;
	rfb_decoder *dec;       /* pipeline_jpeg.c's, created on first use */
	int band_mode;          /* enum rfb_pipe_band + 1; 0: not set (AUTO) */
	struct rfb_pipe_decode last; /* what the last JPEG run decoded */
	struct rfb_augmix_scratch augmix; /* augmix's chains and float mix */
};

/*
 * Windows (pipeline_window.c): when augment layers [first, crop) are
 * followed by a crop inside the image, only what the crop keeps is
 * computed.  The plan holds, for the full_w x full_h image those layers
 * work on, the window every op writes (out, in order), the window the
 * first one reads (in) and the crop's rectangle.
 */
#define RFB_WIN_MAX_OPS (2 * RFB_PIPELINE_MAX_LAYERS)

struct rfb_win_plan {
	int first, crop;
	int full_w, full_h;
	struct rfb_rect in, rect;
	int nops;
	struct rfb_rect out[RFB_WIN_MAX_OPS];
};

/* One run: the current image is cur; it lives in ctx->buf[cur_buf], in
 * the caller's output memory dest when cur_buf is RFBI_RUN_DEST, or in
 * the caller's input when cur_buf is -1 (then it must not be written).
 * dest (data NULL: none) is where rfb_pipe_run_into wants the output; a
 * target of its shape is placed there (when cur is not), so that the last
 * layer writes the output where the caller wants it instead of a copy.
 * gray3: cur has one channel but stands for the RGB image with that
 * channel in all three (a grayscale JPEG as torchvision's loader gives
 * it); every layer gives the same result on either form as long as its
 * fill colour is gray, so the work is done once per pixel and the
 * channels are replicated at the end (rfbi_run_expand). */
struct rfb_run {
	rfb_pipe_ctx *ctx;
	const struct rfb_pipe_key *key;
	rfb_image cur;
	int cur_buf;
	int gray3;
	/* with a window plan, from layer win->first until its crop cur is
	 * the part of the full image at (win_x, win_y); win_op counts the
	 * ops run so far */
	const struct rfb_win_plan *win;
	int win_x, win_y, win_op;
	uint64_t deferred_on; /* bit i: deferred erasing layer i was reached
			       * (not skipped by an apply) */
	rfb_image dest;
	/* the layer running (NULL: none yet, the decode's folded resize),
	 * for messages; its number is layer_pos */
	const struct rfb_layer *layer;
	int layer_pos;
};
#define RFBI_RUN_DEST 2

/* The ops augment layer l (number position) draws on a w x h image, into
 * ops[0..2); returns how many (1, or 2 for AutoAugment). */
int rfbi_run_draw_ops(const struct rfb_run *r, const struct rfb_layer *l,
		      int position, int w, int h, struct rfb_aug_op ops[2]);

/* A window plan for the layers from first of p on an image of w x h
 * there: 1 with *pl filled when augment layers followed by a crop inside
 * the image start at first and every op they draw runs on windows, and
 * some window is smaller than the image; 0 otherwise. */
int rfbi_win_plan_make(const rfb_pipeline *p, int first, int w, int h,
		       const struct rfb_pipe_key *key, struct rfb_win_plan *pl);

/* Run augment layer l (number position) on the current window. */
int rfbi_win_augment(struct rfb_run *r, const struct rfb_layer *l, int position,
		     rfb_err *err) RFB_MUST_CHECK;

/* The plan's crop: the current window cut to the crop's rectangle (a
 * view); the run leaves window mode. */
void rfbi_win_crop(struct rfb_run *r);

/* ---- pipeline_run.c ---- */

/* A gray3 image may stay gray through a layer filling with fill. */
static inline int run_gray_fill(const unsigned char *fill)
{
	return !fill || (fill[0] == fill[1] && fill[1] == fill[2]);
}

/* Replicate a gray3 image into three real channels (nothing otherwise). */
int rfbi_run_expand(struct rfb_run *r, rfb_err *err) RFB_MUST_CHECK;

/* 0 when a w x h image is within the context's pixel cap (its
 * max_pixels, checked before anything is allocated), else RFB_ELIMIT with
 * err naming the running layer, what it would make (what: "image", "resize
 * intermediate") and the cap. */
int rfbi_run_check_pixels(const struct rfb_run *r, int w, int h,
			  const char *what, rfb_err *err) RFB_MUST_CHECK;

/* Allocate dst (w x h x c) in a buffer other than cur's, within the pixel
 * cap (rfbi_run_check_pixels); *slot says which. */
int rfbi_run_target(struct rfb_run *r, int w, int h, int c, rfb_image *dst,
		    int *slot, rfb_err *err) RFB_MUST_CHECK;

/* Make img (in buffer slot) the current image. */
/* r->dest from the caller's dest for an input of w x h x c (a JPEG's as
 * RGB, c = 3): asked when p's output is 8-bit HWC of a size that follows
 * from the input's. */
void rfbi_run_ask_dest(struct rfb_run *r, const rfb_pipeline *p, int w, int h,
		       int c, const struct rfb_pipe_dest *dest);
void rfbi_run_take(struct rfb_run *r, const rfb_image *img, int slot);

/* Crop cur to rect (view if inside, padded copy with fill otherwise). */
int rfbi_run_crop(struct rfb_run *r, const struct rfb_rect *rect,
		  const unsigned char *fill, rfb_err *err) RFB_MUST_CHECK;

/* Crop cur to rect for crop or pad layer l: the parts outside the image
 * made by l's padding_mode (rfb_crop_padded with l->pad), or l's fill. */
int rfbi_run_crop_padded(struct rfb_run *r, const struct rfb_rect *rect,
			 const struct rfb_layer *l, rfb_err *err) RFB_MUST_CHECK;

/* Run layers [from, n) of p, then produce the output. */
int rfbi_run_layers(struct rfb_run *r, const rfb_pipeline *p, int from,
		    struct rfb_pipe_out *out, rfb_err *err) RFB_MUST_CHECK;

/* RandomErasing after Normalize (layer l, its random stream rng) on the
 * float32 CHW tensor of out, in place. */
void rfbi_run_erase_float(const struct rfb_layer *l, rfb_rng *rng,
			 struct rfb_pipe_out *out);

/* Deferred erasing (layer l, its random stream rng) on the float32 CHW
 * tensor of out, normalized by norm with nl's mean and std: its constant
 * is the normalized pixel value, value=random draws (N(0, 1) - mean) /
 * std, what torchvision's Normalize makes of the normal values that
 * RandomErasing wrote into the ToTensor image. */
void rfbi_run_erase_deferred(const struct rfb_layer *l, rfb_rng *rng,
			     const struct rfb_layer *nl, const rfb_norm *norm,
			     struct rfb_pipe_out *out);

/* Run one of torchvision's single transforms (pipeline_single.c): layer
 * l with its random stream rng. */
int rfbi_run_single(struct rfb_run *r, const struct rfb_layer *l, rfb_rng *rng,
		    rfb_err *err) RFB_MUST_CHECK;

#endif
