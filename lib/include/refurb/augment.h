/*
 * augment.h - random choice of ops for RandAugment, AutoAugment and
 * TrivialAugmentWide, with torchvision 0.14's tables and probabilities.
 *
 * The draw functions only decide (which op, which signed magnitude); the
 * caller applies the result with rfb_op_apply().  All randomness comes
 * from the rfb_rng passed in, keyed by (seed, epoch, sample, stage), so the
 * same sample gets the same choice on every thread and every run.
 *
 * What each draw consumes from the rng, in order (part of the meaning of
 * a seed: never change it):
 *   RandAugment layer:  op = rfb_rng_below(14); then, for a signed op
 *                       only, negative = rfb_rng_below(2).
 *   TrivialAugmentWide: op = rfb_rng_below(14); then, for an op with a
 *                       magnitude table, bin = rfb_rng_below(num_bins);
 *                       then, for a signed op, negative = rfb_rng_below(2).
 *   AutoAugment:        sub-policy = rfb_rng_below(count); u0, u1 =
 *                       rfb_rng_uniform() twice; s0, s1 = rfb_rng_below(2)
 *                       twice (always all five, like torchvision's
 *                       get_params); step i applies when u_i < p_i, and is
 *                       negated (signed ops) when s_i == 0.
 * Ops are numbered as enum rfb_op, which is torchvision's order of the
 * augmentation space (Identity .. Equalize).
 */
#ifndef REFURB_AUGMENT_H
#define REFURB_AUGMENT_H

#include "refurb/enum.h"
#include "refurb/ops.h"
#include "refurb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One chosen op and the signed magnitude to give rfb_op_apply(). */
struct rfb_aug_op {
	enum rfb_op op;
	double magnitude;
};

enum rfb_autoaug_policy {
	RFB_AUTOAUG_IMAGENET,
	RFB_AUTOAUG_CIFAR10,
	RFB_AUTOAUG_SVHN,
};

/* Which torchvision augmentation space a magnitude table belongs to. */
enum rfb_aug_space {
	RFB_AUG_SPACE_RANDAUG,    /* RandAugment (num_bins default 31) */
	RFB_AUG_SPACE_TRIVIALAUG, /* TrivialAugmentWide's wide space */
	RFB_AUG_SPACE_AUTOAUG,    /* AutoAugment (always 10 bins) */
	RFB_AUG_SPACE_AUGMIX,     /* AugMix (10 bins, augmix.h) */
};

/* One step of an AutoAugment sub-policy. */
struct rfb_autoaug_step {
	enum rfb_op op;
	double prob; /* probability that the step applies */
	int bin;     /* magnitude bin of 10, -1 for ops without magnitude */
};

/*
 * Unsigned magnitude of op at bin (0 <= bin < num_bins) of the space's
 * table for a width x height image: torchvision's float32 torch.linspace
 * value (or Posterize's integer bits), converted to double exactly as
 * float(tensor.item()) does.  0.0 for ops without a table.  Out-of-range
 * bin is clamped to the table, num_bins < 2 taken as 2.  The linspace
 * values are those of torch 1.13's AVX2 CPU kernel (on other CPU kernels
 * torch itself differs by one float32 ulp in a few bins).
 */
double rfb_aug_magnitude(enum rfb_aug_space space, enum rfb_op op, int bin,
			 int num_bins, int width, int height);

/* 1 if op's magnitude gets a random sign (ShearX .. Sharpness), else 0. */
int rfb_aug_op_signed(enum rfb_op op);

/* The policies' names ("imagenet", "cifar10", "svhn", in the enum's
 * order; enum.h) and their namer: NULL for an unknown value. */
extern const struct rfb_enum_name rfb_autoaug_policy_names[];
const char *rfb_autoaug_policy_name(enum rfb_autoaug_policy policy);

/* Number of sub-policies of policy (25 for all three), 0 if unknown. */
int rfb_autoaug_count(enum rfb_autoaug_policy policy);

/* The two steps of sub-policy index of policy (static storage), or NULL
 * if policy or index is out of range. */
const struct rfb_autoaug_step *rfb_autoaug_subpolicy(enum rfb_autoaug_policy policy,
						     int index);

/*
 * One RandAugment layer (torchvision RandAugment with num_ops = 1): op
 * uniform over the 14 ops of its augmentation space, magnitude =
 * table[magnitude_bin] of num_bins bins for an image of width x height,
 * sign negative with probability 1/2 for signed ops.  0 <= magnitude_bin <
 * num_bins, num_bins >= 2 (the caller validates; out-of-range values are
 * clamped as rfb_aug_magnitude() does).  Call once per layer.
 */
void rfb_randaug_draw(rfb_rng *rng, int magnitude_bin, int num_bins,
		      int width, int height, struct rfb_aug_op *out);

/*
 * AutoAugment: choose one of the policy's sub-policies uniformly, then
 * each of its two ops applies with its probability (and a random sign
 * where signed).  Writes the ops that apply, in order, to out and returns
 * their number (0, 1 or 2); 0 without drawing for an unknown policy.
 * Magnitudes come from the AutoAugment space's 10-bin tables.
 */
int rfb_autoaug_draw(rfb_rng *rng, enum rfb_autoaug_policy policy, int width,
		     int height, struct rfb_aug_op out[2]);

/*
 * TrivialAugmentWide: op uniform over its 14 ops, magnitude bin uniform
 * over num_bins (torchvision default 31; < 2 taken as 2), random sign
 * where signed.
 */
void rfb_trivialaug_draw(rfb_rng *rng, int num_bins, int width, int height,
			 struct rfb_aug_op *out);

#ifdef __cplusplus
}
#endif

#endif
