/*
 * augmix.h - torchvision 0.14's AugMix (transforms.AugMix) on uint8
 * images, as it computes it on a PIL image: the image becomes a uint8
 * tensor, every op of the chains runs with the tensor semantics of
 * torchvision.transforms.functional_tensor (not PIL's: blends truncate,
 * geometry is torch's grid_sample), and the float32 mix is truncated
 * back to uint8.
 *
 * The random choices (rfb_augmix_draw) and their application
 * (rfb_augmix_apply) are separate, so that tests can give both
 * torchvision and refurb the same choices.
 */
#ifndef REFURB_AUGMIX_H
#define REFURB_AUGMIX_H

#include "refurb/error.h"
#include "refurb/image.h"
#include "refurb/ops.h"
#include "refurb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_AUGMIX_MAX_WIDTH 16 /* mixture_width */
#define RFB_AUGMIX_MAX_DEPTH 16 /* chain_depth */
#define RFB_AUGMIX_MAX_SEVERITY 10
#define RFB_AUGMIX_OPS 13        /* the op space with all_ops */
#define RFB_AUGMIX_OPS_BASIC 9   /* without all_ops */

/* AugMix's op space in torchvision's order (_augmentation_space's dict):
 * ShearX, ShearY, TranslateX, TranslateY, Rotate, Posterize, Solarize,
 * AutoContrast, Equalize, then with all_ops Brightness, Color, Contrast,
 * Sharpness.  The op at index (0 <= index < 13). */
enum rfb_op rfb_augmix_op(int index);

/* The parameters of one AugMix layer. */
struct rfb_augmix_spec {
	int severity;          /* 1..10: bins drawn among the first severity */
	int width;             /* mixture_width, 1..RFB_AUGMIX_MAX_WIDTH */
	int depth;             /* chain_depth; <= 0: 1..3 at random */
	double alpha;          /* Dirichlet concentration, > 0 */
	int all_ops;           /* 13 ops, else the first 9 */
	enum rfb_interp interp;/* NEAREST or BILINEAR (tensor semantics) */
	const unsigned char *fill; /* NULL: torchvision's fill=None */
};

/* One op of a chain: its index in the op space, its magnitude bin (0..9,
 * unused by AutoContrast and Equalize), and its sign. */
struct rfb_augmix_step {
	int index, bin, negative;
};

/* Every random choice of one AugMix call. */
struct rfb_augmix_choice {
	int width;
	float m[2];                         /* Dirichlet([alpha, alpha]) */
	float weight[RFB_AUGMIX_MAX_WIDTH]; /* Dirichlet([alpha]*width) * m[1] */
	int depth[RFB_AUGMIX_MAX_WIDTH];
	struct rfb_augmix_step step[RFB_AUGMIX_MAX_WIDTH][RFB_AUGMIX_MAX_DEPTH];
};

/*
 * Dirichlet(alpha[0..n)) as torch._sample_dirichlet gives it for a
 * float32 tensor: each component a Gamma(alpha_i) sample in double
 * (Marsaglia-Tsang, boosted below 1: torch's sample_gamma), at least
 * DBL_MIN, divided by their sum in double, rounded to float and kept in
 * [FLT_MIN, the float below 1].  Draws from rng (a variable number of
 * uniforms: the rejection loop).  1 <= n <= RFB_AUGMIX_MAX_WIDTH (more
 * are not drawn).
 */
void rfb_dirichlet_draw(rfb_rng *rng, const double *alpha, int n, float *out);

/* One Gamma(alpha, 1) sample (alpha > 0), torch's sample_gamma. */
double rfb_gamma_draw(rfb_rng *rng, double alpha);

/*
 * AugMix.forward's draws in its order: m, the mixing weights, then per
 * chain its depth (only when spec->depth <= 0: 1 + below(3)) and per op
 * the op index (below(9 or 13)), its bin (below(severity), ops with a
 * table only) and its sign (below(2), signed ops only).
 */
void rfb_augmix_draw(rfb_rng *rng, const struct rfb_augmix_spec *spec,
		     struct rfb_augmix_choice *out);

/*
 * Scratch for rfb_augmix_apply: two chain images and the float mix.
 * Zero-initialise; rfb_augmix_scratch_free releases it (NULL accepted).
 */
struct rfb_augmix_scratch {
	rfb_imgbuf img[2];
	float *mix;
	size_t mix_cap;
};

void rfb_augmix_scratch_free(struct rfb_augmix_scratch *s);

/*
 * The AugMix image of src with the choices c into dst (src's shape, 1 or
 * 3 channels, not overlapping src): mix = m[0] * src + sum_i weight[i] *
 * chain_i(src) in float32, truncated to uint8.  Magnitudes are AugMix's
 * tables (10 bins, TranslateX/Y up to a third of the width/height).
 * Returns 0, RFB_EINVAL (shapes, an index or bin out of range, interp
 * not NEAREST or BILINEAR) or RFB_ENOMEM, with err filled.
 */
int rfb_augmix_apply(const struct rfb_augmix_spec *spec,
		     const struct rfb_augmix_choice *c, const rfb_image *src,
		     rfb_image *dst, struct rfb_augmix_scratch *s,
		     rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
