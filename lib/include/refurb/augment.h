/*
 * augment.h - random choice of ops for RandAugment, AutoAugment and
 * TrivialAugmentWide, with torchvision 0.14's tables and probabilities.
 *
 * The draw functions only decide (which op, which signed magnitude); the
 * caller applies the result with rfb_op_apply().  All randomness comes
 * from the rfb_rng passed in, keyed by (seed, epoch, sample, stage), so the
 * same sample gets the same choice on every thread and every run.
 */
#ifndef REFURB_AUGMENT_H
#define REFURB_AUGMENT_H

#include "refurb/ops.h"
#include "refurb/rng.h"

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

/*
 * One RandAugment layer (torchvision RandAugment with num_ops = 1): op
 * uniform over the 14 ops of its augmentation space, magnitude =
 * table[magnitude_bin] of num_bins bins for an image of width x height,
 * sign negative with probability 1/2 for signed ops.  0 <= magnitude_bin <
 * num_bins, num_bins >= 2.
 */
void rfb_randaug_draw(rfb_rng *rng, int magnitude_bin, int num_bins,
		      int width, int height, struct rfb_aug_op *out);

/*
 * AutoAugment: choose one of the policy's sub-policies uniformly, then
 * each of its two ops applies with its probability (and a random sign
 * where signed).  Writes the ops that apply, in order, to out and returns
 * their number (0, 1 or 2).
 */
int rfb_autoaug_draw(rfb_rng *rng, enum rfb_autoaug_policy policy, int width,
		     int height, struct rfb_aug_op out[2]);

/*
 * TrivialAugmentWide: op uniform over its 14 ops, magnitude bin uniform
 * over num_bins (torchvision default 31), random sign where signed.
 */
void rfb_trivialaug_draw(rfb_rng *rng, int num_bins, int width, int height,
			 struct rfb_aug_op *out);

#endif
