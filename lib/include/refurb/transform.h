/*
 * transform.h - crops, padding, flips and channel conversion with
 * torchvision 0.14 / PIL semantics, and the random parameter draws of
 * RandomCrop, RandomResizedCrop and RandomHorizontalFlip.
 *
 * Crops are expressed in the input's coordinates; a crop rectangle that
 * reaches outside the image (negative offsets or beyond the far edge)
 * means padding, filled with a constant - exactly what torchvision's
 * pad-then-crop produces with padding_mode="constant".  The parameter
 * functions only decide rectangles; applying them is rfb_crop() (and
 * rfb_resize_window/rfb_resize for the resized crop).
 *
 * Random draws come from an rfb_rng the caller positions (pipeline.h keys
 * it by seed, epoch, sample and layer); the order of draws of each
 * function is part of its contract and documented with it.
 */
#ifndef REFURB_TRANSFORM_H
#define REFURB_TRANSFORM_H

#include "refurb/enum.h"
#include "refurb/error.h"
#include "refurb/image.h"
#include "refurb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A rectangle in input coordinates: rows [top, top + height), columns
 * [left, left + width).  top/left may be negative (padding). */
struct rfb_rect {
	int top, left, height, width;
};

/* Padding in pixels on each side (torchvision's (left, top, right,
 * bottom) order), all >= 0. */
struct rfb_padding {
	int left, top, right, bottom;
};

/* torchvision's padding_mode: how pixels outside the image are made
 * (np.pad's modes; constant fills with a value). */
enum rfb_pad_mode {
	RFB_PAD_CONSTANT,
	RFB_PAD_EDGE,      /* the nearest edge pixel repeated */
	RFB_PAD_REFLECT,   /* mirrored without repeating the edge: 2 1 | 0 1 2 */
	RFB_PAD_SYMMETRIC  /* mirrored with the edge repeated: 1 0 | 0 1 2 */
};

/* The modes' names ("constant", "edge", "reflect", "symmetric", in the
 * enum's order; enum.h), and their namer: NULL for an unknown value. */
extern const struct rfb_enum_name rfb_pad_mode_names[];
const char *rfb_pad_mode_name(enum rfb_pad_mode mode);

/*
 * Crop src to r into dst (allocated by the caller with r's size and src's
 * channels, not overlapping src).  Parts of r outside src are filled with
 * fill[c] (fill may be NULL: zero; it has src->channels values).
 * Returns 0, or RFB_EINVAL with err filled on a shape mismatch.
 */
int rfb_crop(const rfb_image *src, const struct rfb_rect *r,
	     const unsigned char *fill, rfb_image *dst,
	     rfb_err *err) RFB_MUST_CHECK;

/*
 * Crop src to r (src's coordinates) where the pixels outside src come
 * from torchvision's F.pad(img, pad, padding_mode=mode) (np.pad: edge,
 * reflect, symmetric; mode constant is rfb_crop with fill) and, for the
 * parts of r beyond the padded image (RandomCrop's pad_if_needed, which
 * pads the padded image again), from that padded image padded the same
 * way.  Reflections longer than the image repeat as np.pad's do (a
 * 1-pixel image reflects as edge).  pad may be NULL (none).  dst as for
 * rfb_crop.  Returns 0 or RFB_EINVAL on a shape mismatch.
 */
int rfb_crop_padded(const rfb_image *src, const struct rfb_rect *r,
		    const struct rfb_padding *pad, enum rfb_pad_mode mode,
		    const unsigned char *fill, rfb_image *dst,
		    rfb_err *err) RFB_MUST_CHECK;

/* 1 if r lies inside a w x h image (so a crop is only a view). */
int rfb_rect_inside(const struct rfb_rect *r, int w, int h);

/* A view of the part r of src (no copy); r must be inside src. */
rfb_image rfb_crop_view(const rfb_image *src, const struct rfb_rect *r);

/*
 * torchvision CenterCrop's rectangle for a crop of th x tw from a w x h
 * image: offset int(round((size - t) / 2.0)) (half to even) when the crop
 * fits, else -((t - size) // 2) (the image padded with zeros around).
 */
struct rfb_rect rfb_centercrop_rect(int w, int h, int th, int tw);

/*
 * torchvision RandomCrop(size=(th, tw), padding=pad, pad_if_needed)'s
 * rectangle, in the unpadded w x h image's coordinates.  Pads first; with
 * pad_if_needed a side still smaller than the crop is padded by the
 * missing amount on both ends (torchvision's F.pad with [t - size, 0]).
 * Draws: none if the padded image is exactly th x tw; otherwise the row
 * offset i = rfb_rng_below(H - th + 1), then the column offset j =
 * rfb_rng_below(W - tw + 1) (H, W padded).  Returns 0, or RFB_EINVAL with
 * err filled when the padded image is smaller than the crop.
 */
int rfb_randcrop_rect(rfb_rng *rng, int w, int h, int th, int tw,
		      const struct rfb_padding *pad, int pad_if_needed,
		      struct rfb_rect *out, rfb_err *err) RFB_MUST_CHECK;

/*
 * torchvision RandomResizedCrop.get_params for a w x h image with area
 * scale [scale_lo, scale_hi] and aspect ratio [ratio_lo, ratio_hi]
 * (ratio_lo > 0).  Up to 10 attempts, each drawing: u = rfb_rng_uniform
 * (target area = w * h * float32(scale_lo + (scale_hi - scale_lo) * u)),
 * then v = rfb_rng_uniform (aspect = float32(exp(float32 log ratio_lo +
 * (log ratio_hi - log ratio_lo) * v))); cw = round(sqrt(area * aspect)),
 * ch = round(sqrt(area / aspect)) (half to even); when 0 < cw <= w and
 * 0 < ch <= h, two more draws: top = rfb_rng_below(h - ch + 1) then left
 * = rfb_rng_below(w - cw + 1), and that is the result.  After 10 failed
 * attempts: the central crop clamped to the ratio range (no draws), at
 * least 1 pixel a side (torchvision's would be empty, and fail, when the
 * range is far from the image's ratio: ratio_lo > 2w, ratio_hi < 1/(2h)).
 * Returns 1 if an attempt succeeded, 0 if the fallback was used.
 */
int rfb_rrcrop_rect(rfb_rng *rng, int w, int h, double scale_lo,
		    double scale_hi, double ratio_lo, double ratio_hi,
		    struct rfb_rect *out);

/* Mirror src left-right into dst (same shape, not overlapping). */
void rfb_hflip(const rfb_image *src, rfb_image *dst);

/* Mirror img left-right in place. */
void rfb_hflip_inplace(rfb_image *img);

/* RandomHorizontalFlip(p)'s decision: one draw, flip iff
 * rfb_rng_uniform() < p. */
int rfb_flip_draw(rfb_rng *rng, double p);

/* PIL convert("L") of an RGB image: (R*19595 + G*38470 + B*7471 +
 * 0x8000) >> 16.  dst is 1-channel with src's size; src 1-channel is
 * copied.  Returns 0 or RFB_EINVAL on a shape mismatch. */
int rfb_to_gray(const rfb_image *src, rfb_image *dst,
		rfb_err *err) RFB_MUST_CHECK;

/* PIL convert("RGB") of a gray image: the value in all three channels.
 * dst is 3-channel with src's size; src 3-channel is copied. */
int rfb_to_rgb(const rfb_image *src, rfb_image *dst,
	       rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
