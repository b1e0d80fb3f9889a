/*
 * ops.h - the image operations of RandAugment, AutoAugment and
 * TrivialAugmentWide, applied with explicit parameters.
 *
 * Each op reproduces torchvision 0.14's _apply_op() on a PIL image
 * (torchvision/transforms/autoaugment.py and functional_pil.py), down to
 * PIL's rounding, so that a given (op, magnitude) gives the image
 * torchvision would give.  Choosing the op and its magnitude at random is
 * augment.h's job.
 */
#ifndef REFURB_OPS_H
#define REFURB_OPS_H

#include "refurb/enum.h"
#include "refurb/error.h"
#include "refurb/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Order is RandAugment's augmentation space order, then Invert
 * (AutoAugment only).  Part of the RNG's meaning: never reorder. */
enum rfb_op {
	RFB_OP_IDENTITY,
	RFB_OP_SHEAR_X,
	RFB_OP_SHEAR_Y,
	RFB_OP_TRANSLATE_X,
	RFB_OP_TRANSLATE_Y,
	RFB_OP_ROTATE,
	RFB_OP_BRIGHTNESS,
	RFB_OP_COLOR,
	RFB_OP_CONTRAST,
	RFB_OP_SHARPNESS,
	RFB_OP_POSTERIZE,
	RFB_OP_SOLARIZE,
	RFB_OP_AUTOCONTRAST,
	RFB_OP_EQUALIZE,
	RFB_OP_INVERT,
	RFB_OP_COUNT
};

enum rfb_interp {
	RFB_INTERP_NEAREST,  /* torchvision's default for the augment ops */
	RFB_INTERP_BILINEAR, /* PIL's affine bilinear (2x2, truncated) */
	RFB_INTERP_BICUBIC,  /* PIL's affine bicubic (4x4, a = -1) */
};

/* torchvision's names of the ops ("Identity", "ShearX" ..., in the enum's
 * order; enum.h), and their namer and parser: NULL for an unknown value,
 * -1 for an unknown name. */
extern const struct rfb_enum_name rfb_op_names[];
const char *rfb_op_name(enum rfb_op op);
int rfb_op_parse(const char *name);

/*
 * Apply op to src, writing dst, with torchvision's _apply_op semantics:
 * magnitude is the signed value _apply_op receives (shear factor, pixels
 * for translate, degrees for rotate, factor - 1 for the enhance ops, bits
 * for posterize, threshold for solarize; ignored where unused).  Geometric
 * ops use interp and fill (one value per channel; NULL = black, like
 * torchvision's fill=None).  dst must already have src's shape and must
 * not overlap it.  Returns 0 or a negative RFB_E* code with err filled.
 *
 * NEAREST, BILINEAR and BICUBIC are all PIL's affine resampling (exact).
 * RFB_EINVAL for: NULL or mismatched images, 0 or 2 channels, overlap,
 * an unknown op or interp, a non-finite magnitude, Posterize with
 * int(magnitude) outside 0..8 (torchvision raises ValueError), an enhance
 * factor 1 + magnitude beyond float range.  No allocation: histograms and
 * tables live on the stack.  Thread-safe (no state).
 */
int rfb_op_apply(enum rfb_op op, double magnitude, enum rfb_interp interp,
		 const unsigned char *fill, const rfb_image *src,
		 rfb_image *dst, rfb_err *err) RFB_MUST_CHECK;

/* ---- ops on windows (an op computing only part of its output) ---- */

struct rfb_rect; /* transform.h */

/* Where an image lies in a full_w x full_h one: its pixel (0, 0) is the
 * full image's (x, y). */
struct rfb_place {
	int x, y, full_w, full_h;
};

/*
 * The rectangle of op's input (a full_w x full_h image) that the
 * rectangle out of its output reads: 1 with *need filled (inside the
 * image, never empty), or 0 when op cannot run on a window (geometry
 * with a filter other than NEAREST, Rotate's transposes).  Contrast,
 * AutoContrast and Equalize need the whole image (their statistics).
 */
int rfb_op_window_need(enum rfb_op op, double magnitude, enum rfb_interp interp,
		       int full_w, int full_h, const struct rfb_rect *out,
		       struct rfb_rect *need);

/*
 * rfb_op_apply on windows: src holds the part of the input placed at sp,
 * which contains rfb_op_window_need() of dst's rectangle; dst (width x
 * height, not overlapping src) receives the part of the output placed at
 * dp; sp and dp have the same full size.  fill NULL is black.  The
 * arguments are trusted (the pipeline plans the windows, the parameters
 * come from the draws; only the point ops go through rfb_op_apply's
 * checks); the result is the bytes of rfb_op_apply on the full images,
 * cut to dp.  Returns 0 or a negative RFB_E* code.
 */
int rfb_op_apply_window(enum rfb_op op, double magnitude,
			enum rfb_interp interp, const unsigned char *fill,
			const rfb_image *src, const struct rfb_place *sp,
			rfb_image *dst, const struct rfb_place *dp,
			rfb_err *err) RFB_MUST_CHECK;

/*
 * One op on a uint8 image with torchvision 0.14's tensor semantics
 * (autoaugment._apply_op on a tensor; functional_tensor.py), the ops of
 * AugMix (augmix.h): magnitude as _apply_op receives it (as for
 * rfb_op_apply).  Geometric ops: grid_sample with interp NEAREST or
 * BILINEAR, zeros outside, then fill (NULL: none, as fill=None) blended
 * by the sampled mask; rounded half to even.  Enhance
 * ops: torch's _blend, truncated.  dst has src's shape and does not
 * overlap it.  RFB_EINVAL for bad shapes, an op outside ShearX ..
 * Invert, interp BICUBIC, a negative enhance factor, posterize bits
 * outside 0..8.
 */
int rfb_tensor_op_apply(enum rfb_op op, double magnitude, enum rfb_interp interp,
			const unsigned char *fill, const rfb_image *src,
			rfb_image *dst, rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
