/*
 * augment.c - the random choices of RandAugment, AutoAugment and
 * TrivialAugmentWide (see augment.h): torchvision 0.14's magnitude tables,
 * reproduced bit for bit, and AutoAugment's three policies.
 *
 * The tables are torch.linspace(...) in float32.  torch 1.13's CPU kernel
 * does not compute start + i * step: its AVX2 build fills the first
 * 16 * floor(n / 16) entries eight at a time (Vectorized<float>::arange:
 * base + k * step, rounded twice) and the rest one at a time, from the
 * start for the first half and from the end for the second half, with
 * the multiply-add fused (one rounding).  tv_linspace() does the same, so
 * that int(TranslateX magnitude) and the Rotate angle are exactly
 * torchvision's.
 */
#include <math.h>

#include "refurb/augment.h"

/* torch.linspace(start, end, n)[i] in float32 (n >= 2, 0 <= i < n). */
static float tv_linspace(float start, float end, int n, int i)
{
	const int lanes = 8; /* Vectorized<float>::size() with AVX2 */
	float step = (end - start) / (float)(n - 1);
	int half = n / 2;

	if (i < n / (2 * lanes) * (2 * lanes)) {
		int base_i = i - i % lanes, k = i % lanes;
		float base = base_i < half ?
			fmaf(step, (float)base_i, start) :
			fmaf(-step, (float)(n - base_i - 1), end);
		float offset = (float)k * step;
		return k == 0 ? base : base + offset;
	}
	return i < half ? fmaf(step, (float)i, start) :
			  fmaf(-step, (float)(n - i - 1), end);
}

/* top - (torch.arange(n) / ((n - 1) / divisor)).round().int() at i. */
static int tv_posterize_bits(int n, int i, int top, int divisor)
{
	float q = (float)i / (float)((n - 1) / (double)divisor);
	return top - (int)rintf(q); /* round half to even, like torch */
}

int rfb_aug_op_signed(enum rfb_op op)
{
	return op >= RFB_OP_SHEAR_X && op <= RFB_OP_SHARPNESS;
}

/* The end of op's linspace(0, end) table (0 for ops without one). */
static double table_end(enum rfb_aug_space space, enum rfb_op op, int width,
			int height)
{
	int wide = space == RFB_AUG_SPACE_TRIVIALAUG;

	if (space == RFB_AUG_SPACE_AUGMIX)
		switch (op) {
		case RFB_OP_TRANSLATE_X:
			return width / 3.0;
		case RFB_OP_TRANSLATE_Y:
			return height / 3.0;
		default:
			break; /* the others are RandAugment's */
		}
	switch (op) {
	case RFB_OP_SHEAR_X:
	case RFB_OP_SHEAR_Y:
		return wide ? 0.99 : 0.3;
	case RFB_OP_TRANSLATE_X:
		return wide ? 32.0 : 150.0 / 331.0 * width;
	case RFB_OP_TRANSLATE_Y:
		return wide ? 32.0 : 150.0 / 331.0 * height;
	case RFB_OP_ROTATE:
		return wide ? 135.0 : 30.0;
	case RFB_OP_BRIGHTNESS:
	case RFB_OP_COLOR:
	case RFB_OP_CONTRAST:
	case RFB_OP_SHARPNESS:
		return wide ? 0.99 : 0.9;
	default:
		return 0.0;
	}
}

double rfb_aug_magnitude(enum rfb_aug_space space, enum rfb_op op, int bin,
			 int num_bins, int width, int height)
{
	if (num_bins < 2)
		num_bins = 2;
	if (bin < 0)
		bin = 0;
	if (bin >= num_bins)
		bin = num_bins - 1;
	switch (op) {
	case RFB_OP_POSTERIZE:
		if (space == RFB_AUG_SPACE_AUGMIX)
			return tv_posterize_bits(num_bins, bin, 4, 4);
		return tv_posterize_bits(num_bins, bin, 8,
					 space == RFB_AUG_SPACE_TRIVIALAUG ? 6 : 4);
	case RFB_OP_SOLARIZE:
		return tv_linspace(255.0f, 0.0f, num_bins, bin);
	default:
		if (!rfb_aug_op_signed(op))
			return 0.0;
		return tv_linspace(0.0f, (float)table_end(space, op, width, height),
				   num_bins, bin);
	}
}

static int has_table(enum rfb_op op)
{
	return rfb_aug_op_signed(op) || op == RFB_OP_POSTERIZE ||
	       op == RFB_OP_SOLARIZE;
}

/* Negate the magnitude of a signed op when negative is set. */
static void set_op(struct rfb_aug_op *out, enum rfb_op op, double magnitude,
		   int negative)
{
	out->op = op;
	out->magnitude = rfb_aug_op_signed(op) && negative ? -magnitude : magnitude;
}

void rfb_randaug_draw(rfb_rng *rng, int magnitude_bin, int num_bins,
		      int width, int height, struct rfb_aug_op *out)
{
	/* 14 ops: Identity .. Equalize, enum order = torchvision's order */
	enum rfb_op op = (enum rfb_op)rfb_rng_below(rng, RFB_OP_INVERT);
	double m = rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, op, magnitude_bin,
				     num_bins, width, height);
	int negative = rfb_aug_op_signed(op) ? (int)rfb_rng_below(rng, 2) : 0;

	set_op(out, op, m, negative);
}

void rfb_trivialaug_draw(rfb_rng *rng, int num_bins, int width, int height,
			 struct rfb_aug_op *out)
{
	enum rfb_op op = (enum rfb_op)rfb_rng_below(rng, RFB_OP_INVERT);
	int bin, negative = 0;
	double m = 0.0;

	if (num_bins < 2)
		num_bins = 2;
	if (has_table(op)) {
		bin = (int)rfb_rng_below(rng, (uint32_t)num_bins);
		m = rfb_aug_magnitude(RFB_AUG_SPACE_TRIVIALAUG, op, bin,
				      num_bins, width, height);
	}
	if (rfb_aug_op_signed(op))
		negative = (int)rfb_rng_below(rng, 2);
	set_op(out, op, m, negative);
}

int rfb_autoaug_draw(rfb_rng *rng, enum rfb_autoaug_policy policy, int width,
		     int height, struct rfb_aug_op out[2])
{
	int count = rfb_autoaug_count(policy), n = 0;
	const struct rfb_autoaug_step *sub;
	double u[2];
	uint32_t sign[2];

	if (count == 0)
		return 0;
	/* torchvision's get_params order: policy id, two probs, two signs */
	sub = rfb_autoaug_subpolicy(policy, (int)rfb_rng_below(rng, (uint32_t)count));
	u[0] = rfb_rng_uniform(rng);
	u[1] = rfb_rng_uniform(rng);
	sign[0] = rfb_rng_below(rng, 2);
	sign[1] = rfb_rng_below(rng, 2);
	for (int i = 0; i < 2; i++) {
		double m = 0.0;
		if (!(u[i] < sub[i].prob))
			continue;
		if (sub[i].bin >= 0)
			m = rfb_aug_magnitude(RFB_AUG_SPACE_AUTOAUG, sub[i].op,
					      sub[i].bin, 10, width, height);
		/* torchvision negates when the sign draw is 0 */
		set_op(&out[n++], sub[i].op, m, sign[i] == 0);
	}
	return n;
}
