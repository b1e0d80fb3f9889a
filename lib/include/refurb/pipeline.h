/*
 * pipeline.h - augmentation pipelines written as text, parsed once and
 * run by many threads.
 *
 * A spec is an ffmpeg-style filter chain (grammar and every filter in
 * refurb-pipeline(7)):
 *
 *     resize=256,randaug=n=2:m=9,crop=224:pad=4,flip
 *
 * Parsing gives an immutable rfb_pipeline that any number of threads may
 * share.  Each thread owns an rfb_pipe_ctx with every scratch buffer
 * (ping-pong images, resize coefficient caches, the output tensor, the
 * JPEG decoder), so running the same pipeline on same-sized images
 * allocates nothing in the steady state.
 *
 * Layers: the parsed filters after expansion - randaug=n=2 is two
 * RandAugment layers, each a layer of its own as in the paper; every
 * other filter is one layer.  Layer i of a stage draws all its random
 * numbers from rfb_rng keyed by (seed, epoch, sample, stage_base + i)
 * (stage_base RFB_STAGE_PARTIAL or RFB_STAGE_FINAL): the same sample in
 * the same epoch is augmented the same way on any thread, in any order,
 * on any run.  Splitting a pipeline into a partial and a final part (the
 * paper's split policy) is cutting its layer list in two.
 */
#ifndef REFURB_PIPELINE_H
#define REFURB_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"
#include "refurb/image.h"
#include "refurb/rng.h" /* RFB_STAGE_PARTIAL, RFB_STAGE_FINAL */
#include "refurb/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rfb_pipeline rfb_pipeline;
typedef struct rfb_pipe_ctx rfb_pipe_ctx;

/* Longest spec accepted, in bytes (its canonical text, which spells out
 * every default, must be shorter than this). */
#define RFB_PIPELINE_MAX_SPEC 4096
/* Most layers a pipeline may have after expansion. */
#define RFB_PIPELINE_MAX_LAYERS 64

/*
 * Parse spec (NUL-terminated; "" is the empty pipeline, which passes
 * images through).  On success *out owns the pipeline (free with
 * rfb_pipeline_free).  A malformed spec returns RFB_ESPEC with err->msg
 * giving the 1-based column of the offending character and the reason,
 * then on two more lines the spec (an excerpt around the column when it
 * is longer than 160 bytes) and a caret under that column:
 *
 *     bad pipeline spec at column 12: unknown filter "blur"
 *       resize=256,blur
 *                  ^
 */
int rfb_pipeline_parse(const char *spec, rfb_pipeline **out,
		       rfb_err *err) RFB_MUST_CHECK;

/* Free a pipeline.  NULL accepted. */
void rfb_pipeline_free(rfb_pipeline *p);

/*
 * The canonical text of p: every filter with every argument spelled out
 * in a fixed order, numbers in their shortest exact form, runs of equal
 * RandAugment layers merged into one randaug=n=K.  Two specs that parse
 * to the same layers have the same canonical text, and parsing the
 * canonical text gives those layers again.  Owned by p.
 */
const char *rfb_pipeline_canonical(const rfb_pipeline *p);

/* Number of layers after expansion. */
int rfb_pipeline_layers(const rfb_pipeline *p);

/* Element type and layout of what the pipeline produces: float32 CHW
 * when it ends in normalize, uint8 HWC otherwise. */
enum rfb_dtype rfb_pipeline_dtype(const rfb_pipeline *p);
enum rfb_layout rfb_pipeline_layout(const rfb_pipeline *p);

/*
 * 1 when p ends in normalize, with its per-channel mean and std (a single
 * value given for all channels is repeated) in mean[3] and std[3];
 * 0 otherwise (mean and std untouched).
 */
int rfb_pipeline_normalization(const rfb_pipeline *p, float mean[3],
			       float std[3]);

/* Shape of an output. */
struct rfb_pipe_shape {
	int width, height, channels;
};

/*
 * The output shape for an input of in (any size; channels 1 or 3).
 * Returns 0, or a negative RFB_E* code with err filled when the input
 * cannot go through (a crop larger than the image without padding:
 * RFB_EINVAL).  RFB_ESPEC when the size depends on a random draw: after
 * a rotation with expand=1 over a range of angles no crop, centercrop,
 * rrcrop or resize=HxW fixes it again, or a crop without pad_if_needed
 * may not fit every angle's image (runs may then succeed or fail per
 * sample).
 */
int rfb_pipeline_out_shape(const rfb_pipeline *p, const struct rfb_pipe_shape *in,
			   struct rfb_pipe_shape *out, rfb_err *err) RFB_MUST_CHECK;

/*
 * The pixel cap, checked before a run (refurb-pipeline(7), MEMORY): 0
 * when no layer of p makes an image of more than max_pixels pixels
 * whatever the input, else RFB_ESPEC with err naming the first such
 * layer, the least size it makes and the cap.  A layer's least size is
 * exact after a crop, centercrop, rrcrop or resize=HxW, and a lower bound
 * otherwise (the input at least 1x1, resize=N at least NxN, pad adding
 * its pixels); every branch a gate may take is checked.  Sizes that
 * depend on the input are checked again at run time (RFB_ELIMIT), before
 * each image is allocated, against the context's max_pixels.
 */
int rfb_pipeline_check_pixels(const rfb_pipeline *p, uint64_t max_pixels,
			      rfb_err *err) RFB_MUST_CHECK;

/* The channels p makes of in_channels (gray and rgb layers decide). */
int rfb_pipeline_out_channels(const rfb_pipeline *p, int in_channels);

/*
 * The output shape when it does not depend on the input's size (what a
 * batching stage needs).  in_channels is the input's channel count (3 for
 * what rfb_pipe_run_jpeg decodes).  Returns 0, or RFB_ESPEC with a
 * message naming the reason (no crop or exact-size resize fixes the
 * size, or a later filter changes it again).
 */
int rfb_pipeline_fixed_shape(const rfb_pipeline *p, int in_channels,
			     struct rfb_pipe_shape *out,
			     rfb_err *err) RFB_MUST_CHECK;

/*
 * Split p after its first k layers (0 <= k <= layers): *head gets layers
 * [0, k), *tail the rest, each a pipeline of its own (with its canonical
 * text: the two specs of the split policy).  normalize, which must be
 * last, stays in the tail.  Returns 0 or RFB_EINVAL/RFB_ENOMEM with err
 * filled; on error nothing is allocated.
 */
int rfb_pipeline_split(const rfb_pipeline *p, int k, rfb_pipeline **head,
		       rfb_pipeline **tail, rfb_err *err) RFB_MUST_CHECK;

/* a followed by b as one pipeline (a must not end in normalize).
 * Returns 0 or RFB_ESPEC/RFB_ENOMEM with err filled. */
int rfb_pipeline_join(const rfb_pipeline *a, const rfb_pipeline *b,
		      rfb_pipeline **out, rfb_err *err) RFB_MUST_CHECK;

/* Who draws: the key of every random choice of one run. */
struct rfb_pipe_key {
	uint64_t seed;
	uint32_t epoch;
	uint32_t sample;
	uint32_t stage_base; /* RFB_STAGE_PARTIAL or RFB_STAGE_FINAL */
};

/*
 * The result of one run, owned by the context and valid until its next
 * run.  img is the final uint8 HWC image (contiguous: stride = width *
 * channels).  data/size are the output as the pipeline's dtype and
 * layout: img's pixels for uint8 HWC, the float32 CHW tensor after
 * normalize.
 */
struct rfb_pipe_out {
	enum rfb_dtype dtype;
	enum rfb_layout layout;
	struct rfb_pipe_shape shape;
	rfb_image img;
	const void *data;
	size_t size;
};

/* A per-thread context.  NULL with err filled on failure. */
rfb_pipe_ctx *rfb_pipe_ctx_new(rfb_err *err) RFB_MUST_CHECK;

/* Free a context and its buffers.  NULL accepted. */
void rfb_pipe_ctx_free(rfb_pipe_ctx *ctx);

/*
 * Decode-time shortcuts of rfb_pipe_run_jpeg: DCT scaling and region
 * decoding when the first filters allow it (on by default).  Off, every
 * JPEG is decoded whole at full size: for measuring, and for outputs
 * bit-identical to rfb_pipe_run on the full decode.
 */
void rfb_pipe_ctx_set_fast_decode(rfb_pipe_ctx *ctx, int on);

/* Largest image (width * height) rfb_pipe_run_jpeg decodes (default
 * RFB_IMAGE_DEFAULT_MAX_PIXELS); larger ones are RFB_ELIMIT. */
void rfb_pipe_ctx_set_max_pixels(rfb_pipe_ctx *ctx, uint64_t max_pixels);

/*
 * DCT scaling by 1/d is used only while the scaled source is at least
 * min_ratio times the resize's output in both directions, and only for
 * outputs of at least RFB_PIPE_SCALE_MIN_OUT pixels a side.  The default,
 * RFB_PIPE_SCALE_RATIO, keeps every image within the augmentation
 * tolerance (>= 99% of samples within +-1 of the full decode, MAE <= 0.5):
 * measured on the 304 JPEGs of Debian's kphotoalbum, labelme-examples and
 * opencv-doc with resize/rrcrop to 64-256 pixels, no image failed at 8
 * while at 4 (decode.h's pooled limit) one resize=64 in eight did, and
 * 32-pixel outputs failed at any ratio through the scaled decode's last
 * partial row and column.  Smaller values trade fidelity for speed; 0
 * disables DCT scaling but keeps region decoding (bit-exact); a negative
 * value restores the default, under which a resize's own dct=R option
 * (refurb-pipeline(7)) sets the ratio for that resize.
 */
#define RFB_PIPE_SCALE_RATIO 8.0
#define RFB_PIPE_SCALE_MIN_OUT 64
void rfb_pipe_ctx_set_scale_ratio(rfb_pipe_ctx *ctx, double min_ratio);

/*
 * Band resize: when rfb_pipe_run_jpeg folds a resize (bilinear or
 * bicubic) into the decode, its horizontal pass can run on each band of
 * 16 decoded rows as the decoder outputs them, while they are in the
 * cache, so that the decoded image is never stored whole
 * (rfb_decode_pixels_bands, rfb_resize_bands_begin); a resize of the whole
 * image at full size is then folded too.  Both ways give the same bytes.
 * RFB_PIPE_BAND_AUTO (the default) bands only decodes of more than
 * RFB_PIPE_BAND_MIN_BYTES (width x height x 3): measured on an AMD Zen 4
 * (1 MiB of L2 a core) with bench_augment --band, the paper's partial
 * pipeline (resize=256,randaug=n=2:m=9) runs 2% slower banded on 500x375
 * photos (560 KB decoded: they stay in L2 anyway, and the resize's
 * scratch evicts the decoder's own data from L1) and 4% to 7% faster on
 * 1000x750 and 1600x1200 ones.  RFB_PIPE_BAND_ON bands every folded
 * resize, RFB_PIPE_BAND_OFF none.  For tests and measurements.
 */
enum rfb_pipe_band {
	RFB_PIPE_BAND_OFF = 0,
	RFB_PIPE_BAND_ON = 1,
	RFB_PIPE_BAND_AUTO = 2,
};
#define RFB_PIPE_BAND_MIN_BYTES (1u << 20)
void rfb_pipe_ctx_set_band_resize(rfb_pipe_ctx *ctx, enum rfb_pipe_band mode);

/*
 * Run p on an already decoded image (1 or 3 channels, kept as they are:
 * use the gray/rgb filters to convert).  The input is not modified.
 * Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_pipe_run(rfb_pipe_ctx *ctx, const rfb_pipeline *p, const rfb_image *in,
		 const struct rfb_pipe_key *key, struct rfb_pipe_out *out,
		 rfb_err *err) RFB_MUST_CHECK;

/*
 * The caller's memory for a run's output: once the output's shape is
 * known (from the input's, or the image header's), get(arg, width,
 * height, channels) returns room for that 8-bit HWC image (rows of
 * width * channels bytes), or NULL for none.  Called at most once per
 * run, before any layer, and only when p's output is 8-bit HWC and its
 * size follows from the input's (rfb_pipeline_out_shape).
 */
struct rfb_pipe_dest {
	unsigned char *(*get)(void *arg, int width, int height, int channels);
	void *arg;
};

/*
 * rfb_pipe_run with the output in the caller's memory (dest NULL: none):
 * the output is written where dest->get says (out->data is that memory),
 * and the layers use it for their intermediate images of that shape, so
 * that the last layer (a flip after a crop, the resize to it, the last
 * op of two) writes it in place of a copy.  Any other output is
 * rfb_pipe_run's (in the context: the caller copies it).  The memory's
 * bytes are undefined after an error.
 */
int rfb_pipe_run_into(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
		      const rfb_image *in, const struct rfb_pipe_key *key,
		      const struct rfb_pipe_dest *dest, struct rfb_pipe_out *out,
		      rfb_err *err) RFB_MUST_CHECK;

/*
 * Decode the JPEG in data[0..len) the way torchvision's default loader
 * does (RGB; 1 channel when the first filter is gray) and run p on it.
 * With fast decode on (the default), the first layers are folded into
 * the decode when they allow it:
 *   resize[,centercrop|crop]  decode only the source pixels the resize
 *                             (and the crop after it) reads, DCT-scaled
 *                             while the scaled source stays min_ratio
 *                             times the output; the resize maps onto it
 *   rrcrop                    decode only the drawn rectangle, DCT-scaled
 *                             likewise, resized from its exact box
 *   centercrop, crop          decode only the rectangle (no padding)
 * and when augment layers (randaug, autoaug, trivialaug) are followed by
 * a centercrop or crop inside the image, with or without a resize before
 * them, every op computes only the part of its output the crop keeps,
 * and the resize and the decode only the part the first op reads (ops
 * that need the whole image - Contrast, AutoContrast, Equalize - get it;
 * geometry with a filter other than nearest turns this off).  A
 * grayscale JPEG is worked on as one channel and replicated into RGB at
 * the end (or before a layer filling with a colour that is not gray).
 * Random draws are made on the full image's size, so the layers draw what
 * they would after a full decode.  Without DCT scaling the output is
 * bit-identical to decoding fully and calling rfb_pipe_run; with it, it
 * stays within the augmentation tolerance (decode.h).  Returns 0 or a
 * negative RFB_E* code with err filled (RFB_EDECODE, RFB_ETRUNC,
 * RFB_ELIMIT for bad JPEGs; path left empty).
 */
/* A PNG (recognised by its signature) is decoded whole through libpng
 * as PIL's convert("RGB") gives it (png.h; a gray PNG stays one channel
 * standing for RGB), then every layer runs on it: no decode-time
 * shortcuts. */
int rfb_pipe_run_jpeg(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
		      const void *data, size_t len,
		      const struct rfb_pipe_key *key, struct rfb_pipe_out *out,
		      rfb_err *err) RFB_MUST_CHECK;

/* rfb_pipe_run_jpeg with the output in the caller's memory, as
 * rfb_pipe_run_into (the shape from the image's header). */
int rfb_pipe_run_jpeg_into(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
			   const void *data, size_t len,
			   const struct rfb_pipe_key *key,
			   const struct rfb_pipe_dest *dest,
			   struct rfb_pipe_out *out, rfb_err *err) RFB_MUST_CHECK;

/* What the last rfb_pipe_run_jpeg decoded: the full image's size, the
 * DCT scale 1/scale_denom, the region (in scaled pixels; the whole
 * scaled image when no region was used) and how many layers were folded
 * into the decode. */
struct rfb_pipe_decode {
	int image_width, image_height;
	int scale_denom;
	int x, y, width, height;
	int layers_folded;
};
void rfb_pipe_ctx_last_decode(const rfb_pipe_ctx *ctx, struct rfb_pipe_decode *d);

/* ---- what the layers draw (pipeline_space.c) ---- */

/* Filter name of layer ("resize", "randaug" ...; a randaug=n=2 filter is
 * two "randaug" layers; static storage), or NULL when layer is out of
 * range. */
const char *rfb_pipeline_layer_name(const rfb_pipeline *p, int layer);

/*
 * Number of distinct outcomes of layer for a width x height input: its
 * parameter space, for Theorem 1's |A| (the product over all layers) and
 * |A_F| (over the final layers).  resize, centercrop, normalize, gray,
 * rgb: 1; flip with 0 < p < 1: 2; crop: the positions (W - w + 1)(H - h
 * + 1) of the padded input; rrcrop: the integer boxes whose area fraction
 * and aspect ratio are in range, at every position; randaug: the 14 ops,
 * two signs for each signed op whose magnitude is not 0; trivialaug: the
 * distinct signed magnitudes of each op over its bins; autoaug: per
 * sub-policy, (1 + signs) for each of its two steps, summed (an upper
 * bound); apply with 0 < p < 1: 2 (gated or not); choice: its options
 * of weight > 0, order: K! orders (each
 * times its gated layers' own counts: an upper bound).  1 when layer is
 * out of range.
 */
double rfb_pipeline_layer_choices(const rfb_pipeline *p, int layer, int width,
				  int height);

/*
 * View collisions: the probability that two independent runs of the
 * same layers on one image draw the same parameters, so that two views
 * of a sample come out identical.  For one layer the sum over its
 * outcomes of P(outcome)^2: flip, vflip, grayscale and the other
 * single ops with a p: p^2 + (1 - p)^2; crop: 1 / its positions; rrcrop:
 * the boxes torchvision draws (size and position), integrated
 * numerically, plus its central-crop fallback squared; randaug,
 * trivialaug, autoaug: their op outcomes (op, signed magnitude; every
 * draw that leaves the image as it is counts as one outcome);
 * colorjitter, gaussblur, rotation, affine, augmix with a range to draw
 * from: 0 (continuous); erasing: (not applied or no box fitting)^2,
 * plus the boxes' when the value is fixed; perspective: its corner
 * offsets; apply: p^2 + (1 - p)^2, choice: the sum of the squared
 * option weights, order: 1 / K!; resize, centercrop, pad, normalize,
 * gray, rgb: 1.  Draws that differ but give the same pixels (a blur of
 * a tiny sigma, a flip of a symmetric image) count as different.
 */
double rfb_pipeline_layer_collision(const rfb_pipeline *p, int layer, int width,
				    int height);

/*
 * The view-collision probability of layers from .. L-1 of p (from 0:
 * the whole pipeline) on a width x height input: the product of the
 * layers' (their input sizes followed through the pipeline), a gate
 * counting as the same branch with the same draws inside it (apply:
 * (1 - p)^2 + p^2 x its layers'; choice: the sum of w^2 x each
 * option's; order: 1 / K! x the product of its options').  1 for no
 * layer.
 */
double rfb_pipeline_collision(const rfb_pipeline *p, int from, int width,
			      int height);

/* Most view-collision probability refurb-final accepts for the views
 * of one spec, and refurb-advise's default limit: 1%. */
#define RFB_VIEW_COLLISION_LIMIT 0.01

/*
 * The probability that some two of `views` views, each an independent
 * run of layers from .. L-1 of p, are identical: for 2 views the pair's
 * (rfb_pipeline_collision), for K > 2 the union bound over their K(K-1)/2
 * pairs, at most 1; 0 for views < 2.
 */
double rfb_pipeline_views_collision(const rfb_pipeline *p, int from, int width,
				    int height, int views);

/* That bound from a pair's probability: 0 for views < 2, else
 * min(1, views (views - 1) / 2 x pair). */
double rfb_views_collision(double pair, int views);

/* 1 if layer of p draws something that could make two views of one
 * input differ (rfb_pipeline_layer_collision below 1 on a width x
 * height input), 0 for a layer that draws nothing or out of range; a
 * gate (apply, choice, order) that draws is 1 only when none of the
 * layers it holds draws (else those are named): the layers views would
 * share the draws of when cached. */
int rfb_pipeline_layer_draws(const rfb_pipeline *p, int layer, int width,
			     int height);

/* 1 if layer of p is a gate (apply, choice, order: it decides which of
 * the layers after it run), 0 if not or out of range. */
int rfb_pipeline_layer_is_gate(const rfb_pipeline *p, int layer);

/*
 * 1 if p may be split after its first k layers (rfb_pipeline_split
 * takes it): no apply, choice or order cut from the layers it gates,
 * normalize and the erasing deferred to it in the final part.
 */
int rfb_pipeline_splittable(const rfb_pipeline *p, int k);

/*
 * p with every gate open: its apply, choice and order layers removed, so
 * that every layer they gate runs (each option of a choice, the options
 * of an order in their written order) - what a cost model times.  Layer
 * i of *out is layer position[i] of p, and runs in p with probability
 * weight[i]: an apply's p, a choice option's weight over their total, 1
 * otherwise (order runs every option).  weight and position hold
 * rfb_pipeline_layers(p) values.  Returns 0 or RFB_ENOMEM/RFB_ESPEC with
 * err filled.
 */
int rfb_pipeline_ungated(const rfb_pipeline *p, rfb_pipeline **out,
			 double *weight, int *position,
			 rfb_err *err) RFB_MUST_CHECK;

/*
 * The op (enum rfb_op) that a randaug or trivialaug layer at position
 * layer draws under key (the same draw the executor makes), or -1 for
 * any other layer.
 */
int rfb_pipeline_layer_op(const rfb_pipeline *p, int layer,
			  const struct rfb_pipe_key *key);

#ifdef __cplusplus
}
#endif

#endif
