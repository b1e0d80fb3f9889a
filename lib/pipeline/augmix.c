/*
 * augmix.c - torchvision 0.14's AugMix (augmix.h): its random choices in
 * AugMix.forward's order (torch._sample_dirichlet twice, then each
 * chain's depth and ops), and their application: the chains with the
 * tensor ops of ops_tensor.c, mixed in float32 and truncated to uint8.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/augment.h"
#include "refurb/augmix.h"

static const enum rfb_op space[RFB_AUGMIX_OPS] = {
	RFB_OP_SHEAR_X, RFB_OP_SHEAR_Y, RFB_OP_TRANSLATE_X, RFB_OP_TRANSLATE_Y,
	RFB_OP_ROTATE, RFB_OP_POSTERIZE, RFB_OP_SOLARIZE, RFB_OP_AUTOCONTRAST,
	RFB_OP_EQUALIZE, RFB_OP_BRIGHTNESS, RFB_OP_COLOR, RFB_OP_CONTRAST,
	RFB_OP_SHARPNESS,
};

enum rfb_op rfb_augmix_op(int index)
{
	return index >= 0 && index < RFB_AUGMIX_OPS ? space[index] : RFB_OP_IDENTITY;
}

/* AutoContrast and Equalize have no magnitude table (tensor(0.0)). */
static int has_bins(enum rfb_op op)
{
	return op != RFB_OP_AUTOCONTRAST && op != RFB_OP_EQUALIZE;
}

/* ---- Dirichlet ---- */

/* A standard normal value (Box-Muller; torch draws its own way: the same
 * distribution, not the same values). */
static double normal_draw(rfb_rng *rng)
{
	double u = rfb_rng_uniform(rng), v = rfb_rng_uniform(rng);

	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

double rfb_gamma_draw(rfb_rng *rng, double alpha)
{
	double scale = 1.0, d, c;

	if (!(alpha > 0.0))
		return 0.0;
	if (alpha < 1.0) { /* boost: Gamma(a) = Gamma(a + 1) * U^(1/a) */
		scale *= pow(1.0 - rfb_rng_uniform(rng), 1.0 / alpha);
		alpha += 1.0;
	}
	/* Marsaglia and Tsang (2000) */
	d = alpha - 1.0 / 3.0;
	c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x, y, v, u, xx;
		do {
			x = normal_draw(rng);
			y = 1.0 + c * x;
		} while (y <= 0);
		v = y * y * y;
		u = 1.0 - rfb_rng_uniform(rng);
		xx = x * x;
		if (u < 1.0 - 0.0331 * xx * xx)
			return scale * d * v;
		if (log(u) < 0.5 * xx + d * (1.0 - v + log(v)))
			return scale * d * v;
	}
}

void rfb_dirichlet_draw(rfb_rng *rng, const double *alpha, int n, float *out)
{
	double g[RFB_AUGMIX_MAX_WIDTH > 2 ? RFB_AUGMIX_MAX_WIDTH : 2], sum = 0.0;
	const float hi = nextafterf(1.0f, 0.0f);

	if (n > (int)(sizeof g / sizeof g[0]))
		n = (int)(sizeof g / sizeof g[0]);
	for (int i = 0; i < n; i++) {
		/* alpha is a float32 tensor in torch */
		g[i] = fmax(DBL_MIN, rfb_gamma_draw(rng, (float)alpha[i]));
		sum += g[i];
	}
	for (int i = 0; i < n; i++) {
		float v = (float)(g[i] / sum);
		out[i] = v < FLT_MIN ? FLT_MIN : v > hi ? hi : v;
	}
}

/* ---- the draws ---- */

void rfb_augmix_draw(rfb_rng *rng, const struct rfb_augmix_spec *spec,
		     struct rfb_augmix_choice *out)
{
	double alpha[RFB_AUGMIX_MAX_WIDTH];
	float w[RFB_AUGMIX_MAX_WIDTH];
	int width = spec->width, nops = spec->all_ops ? RFB_AUGMIX_OPS
						      : RFB_AUGMIX_OPS_BASIC;

	memset(out, 0, sizeof *out);
	if (width > RFB_AUGMIX_MAX_WIDTH)
		width = RFB_AUGMIX_MAX_WIDTH;
	out->width = width;
	for (int i = 0; i < width; i++)
		alpha[i] = spec->alpha;
	rfb_dirichlet_draw(rng, alpha, 2, out->m);
	rfb_dirichlet_draw(rng, alpha, width, w);
	for (int i = 0; i < width; i++)
		out->weight[i] = w[i] * out->m[1]; /* float32 product */
	for (int i = 0; i < width; i++) {
		int depth = spec->depth > 0 ? spec->depth
					    : 1 + (int)rfb_rng_below(rng, 3);
		if (depth > RFB_AUGMIX_MAX_DEPTH)
			depth = RFB_AUGMIX_MAX_DEPTH;
		out->depth[i] = depth;
		for (int k = 0; k < depth; k++) {
			struct rfb_augmix_step *s = &out->step[i][k];
			enum rfb_op op;
			s->index = (int)rfb_rng_below(rng, (uint32_t)nops);
			op = space[s->index];
			if (has_bins(op))
				s->bin = (int)rfb_rng_below(rng, (uint32_t)spec->severity);
			if (rfb_aug_op_signed(op))
				s->negative = (int)rfb_rng_below(rng, 2);
		}
	}
}

/* ---- the mix ---- */

void rfb_augmix_scratch_free(struct rfb_augmix_scratch *s)
{
	if (!s)
		return;
	rfb_imgbuf_free(&s->img[0]);
	rfb_imgbuf_free(&s->img[1]);
	free(s->mix);
	s->mix = NULL;
	s->mix_cap = 0;
}

/* mix (+)= weight * img, each product rounded to float32 (torch's
 * m * batch, then mix.add_(w * aug)). */
static void mix_row(float *restrict m, const unsigned char *restrict p, size_t n,
		    float weight, int first)
{
	if (first) {
		for (size_t i = 0; i < n; i++)
			m[i] = weight * (float)p[i];
		return;
	}
	for (size_t i = 0; i < n; i++) {
		float t = weight * (float)p[i];
		m[i] = m[i] + t;
	}
}

static void mix_add(float *mix, const rfb_image *img, float weight, int first)
{
	size_t row = (size_t)img->width * img->channels;

	for (int y = 0; y < img->height; y++)
		mix_row(mix + (size_t)y * row, rfb_image_px(img, 0, y), row, weight,
			first);
}

/* mix.to(uint8): truncation toward zero (the mix is within 0..255 up
 * to float rounding: clamped). */
static void mix_out(const float *mix, rfb_image *dst)
{
	size_t row = (size_t)dst->width * dst->channels;

	for (int y = 0; y < dst->height; y++) {
		const float *restrict m = mix + (size_t)y * row;
		unsigned char *restrict out = rfb_image_px(dst, 0, y);
		for (size_t i = 0; i < row; i++) {
			float v = m[i] < 0.0f ? 0.0f : m[i] > 255.0f ? 255.0f : m[i];
			out[i] = (unsigned char)(int)v;
		}
	}
}

static int step_magnitude(const struct rfb_augmix_step *s, int w, int h,
			  double *out, rfb_err *err)
{
	enum rfb_op op = rfb_augmix_op(s->index);

	if (s->index < 0 || s->index >= RFB_AUGMIX_OPS || s->bin < 0 ||
	    s->bin >= RFB_AUGMIX_MAX_SEVERITY)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "augmix: op %d bin %d out of range", s->index,
				   s->bin);
	*out = has_bins(op) ? rfb_aug_magnitude(RFB_AUG_SPACE_AUGMIX, op, s->bin,
						RFB_AUGMIX_MAX_SEVERITY, w, h)
			    : 0.0;
	if (rfb_aug_op_signed(op) && s->negative)
		*out = -*out;
	return 0;
}

/* Chain i of c on src; *res is its last image (src itself for none). */
static int run_chain(const struct rfb_augmix_spec *spec,
		     const struct rfb_augmix_choice *c, int i, const rfb_image *src,
		     struct rfb_augmix_scratch *s, rfb_image *res, rfb_err *err)
{
	rfb_image cur = *src, img[2];
	int rc = 0;

	for (int b = 0; b < 2 && !rc; b++)
		rc = rfb_image_alloc(&img[b], &s->img[b], src->width, src->height,
				     src->channels, err);
	for (int k = 0; k < c->depth[i] && !rc; k++) {
		const struct rfb_augmix_step *st = &c->step[i][k];
		double m = 0.0;
		rfb_image *dst = &img[k & 1];
		rc = step_magnitude(st, src->width, src->height, &m, err);
		if (!rc)
			rc = rfb_tensor_op_apply(rfb_augmix_op(st->index), m,
						 spec->interp, spec->fill, &cur,
						 dst, err);
		cur = *dst;
	}
	*res = cur;
	return rc;
}

int rfb_augmix_apply(const struct rfb_augmix_spec *spec,
		     const struct rfb_augmix_choice *c, const rfb_image *src,
		     rfb_image *dst, struct rfb_augmix_scratch *s, rfb_err *err)
{
	size_t n = (size_t)src->width * src->height * src->channels;
	int rc = 0;

	if (src->width != dst->width || src->height != dst->height ||
	    src->channels != dst->channels ||
	    (src->channels != 1 && src->channels != 3))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "augmix: images of different shapes");
	if (c->width < 1 || c->width > RFB_AUGMIX_MAX_WIDTH)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "augmix: width %d out of range 1..%d", c->width,
				   RFB_AUGMIX_MAX_WIDTH);
	if (n > s->mix_cap) {
		float *t = realloc(s->mix, n * sizeof *t);
		if (!t)
			return rfb_err_set(err, RFB_ENOMEM, NULL,
					   "out of memory for an augmix image");
		s->mix = t;
		s->mix_cap = n;
	}
	mix_add(s->mix, src, c->m[0], 1);
	for (int i = 0; i < c->width && !rc; i++) {
		rfb_image aug;
		if (c->depth[i] < 0 || c->depth[i] > RFB_AUGMIX_MAX_DEPTH)
			return rfb_err_set(err, RFB_EINVAL, NULL,
					   "augmix: depth %d out of range",
					   c->depth[i]);
		rc = run_chain(spec, c, i, src, s, &aug, err);
		if (!rc)
			mix_add(s->mix, &aug, c->weight[i], 0);
	}
	if (!rc)
		mix_out(s->mix, dst);
	return rc;
}
