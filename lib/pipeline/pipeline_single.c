/*
 * pipeline_single.c - running torchvision's single transforms
 * (ColorJitter, RandomGrayscale, GaussianBlur, RandomErasing, the
 * RandomX versions of RandAugment's ops, RandomVerticalFlip,
 * RandomRotation, RandomAffine, RandomPerspective, AugMix) as pipeline
 * layers: their random draws, in torchvision 0.14's order, then the
 * kernels of ops.h, filters.h and augmix.h.  refurb-pipeline(7) lists
 * every draw.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/filters.h"
#include "pipeline_run_internal.h"

/* torch.empty(1).uniform_(lo, hi).item(): a float32 value */
static double draw_range(rfb_rng *rng, const double r[2])
{
	return (float)(r[0] + (r[1] - r[0]) * rfb_rng_uniform(rng));
}

/* torch.rand(1) < p */
static int draw_p(rfb_rng *rng, double p)
{
	return rfb_rng_uniform(rng) < p;
}

/* Python's round(): half to even */
static int py_round(double v)
{
	return (int)nearbyint(v);
}

/* A 1-channel image standing for RGB must be made RGB before a layer
 * that fills with a colour that is not gray. */
static int expand_for(struct rfb_run *r, const unsigned char *fill, rfb_err *err)
{
	if (fill[0] == fill[1] && fill[1] == fill[2])
		return 0;
	return rfbi_run_expand(r, err);
}

/* dst = a fresh image of cur's shape in the other buffer. */
static int target(struct rfb_run *r, rfb_image *dst, int *slot, rfb_err *err)
{
	return rfbi_run_target(r, r->cur.width, r->cur.height, r->cur.channels,
			      dst, slot, err);
}

static int run_op(struct rfb_run *r, enum rfb_op op, double magnitude,
		  const struct rfb_layer *l, rfb_err *err)
{
	rfb_image dst;
	int slot, rc = target(r, &dst, &slot, err);

	if (!rc)
		rc = rfb_op_apply(op, magnitude, l->interp, l->fill, &r->cur, &dst,
				  err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

static int run_hue(struct rfb_run *r, double factor, rfb_err *err)
{
	rfb_image dst;
	int slot, rc = target(r, &dst, &slot, err);

	if (!rc) {
		rfb_hue(&r->cur, &dst, factor);
		rfbi_run_take(r, &dst, slot);
	}
	return rc;
}

/* ColorJitter.forward: randperm(4), then the factors drawn in the order
 * brightness, contrast, saturation, hue (those given), applied in the
 * permutation's order. */
static int run_colorjitter(struct rfb_run *r, const struct rfb_layer *l,
			   rfb_rng *rng, rfb_err *err)
{
	static const enum rfb_op ops[3] = { RFB_OP_BRIGHTNESS, RFB_OP_CONTRAST,
					    RFB_OP_COLOR };
	int order[4] = { 0, 1, 2, 3 }, rc = 0;
	double factor[4] = { 0 };

	for (int i = 3; i > 0; i--) {
		int j = (int)rfb_rng_below(rng, (uint32_t)i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < 4; i++)
		if (l->jitter_on & (1u << i))
			factor[i] = draw_range(rng, l->jitter[i]);
	for (int k = 0; k < 4 && !rc; k++) {
		int i = order[k];
		if (!(l->jitter_on & (1u << i)))
			continue;
		/* ImageEnhance's factor: 1 + (f - 1) is f exactly */
		rc = i < 3 ? run_op(r, ops[i], factor[i] - 1.0, l, err)
			   : run_hue(r, factor[i], err);
	}
	return rc;
}

/* RandomGrayscale: PIL's convert("L"), kept as a gray image standing for
 * RGB (the three equal channels come at the output). */
static int run_grayscale(struct rfb_run *r, const struct rfb_layer *l,
			 rfb_rng *rng, rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (!draw_p(rng, l->p) || r->cur.channels == 1)
		return 0;
	rc = rfbi_run_target(r, r->cur.width, r->cur.height, 1, &dst, &slot, err);
	if (!rc)
		rc = rfb_to_gray(&r->cur, &dst, err);
	if (!rc) {
		rfbi_run_take(r, &dst, slot);
		r->gray3 = 1;
	}
	return rc;
}

static int run_blur(struct rfb_run *r, const struct rfb_layer *l, rfb_rng *rng,
		    rfb_err *err)
{
	double sigma = draw_range(rng, l->sigma);
	size_t n = rfb_blur_scratch(r->cur.width, r->cur.height, r->cur.channels,
				    l->kernel[1]);
	rfb_pipe_ctx *ctx = r->ctx;
	rfb_image dst;
	int slot, rc;

	if (n > ctx->scratch_cap) {
		float *t = realloc(ctx->scratch, n * sizeof *t);
		if (!t)
			return rfb_err_set(err, RFB_ENOMEM, NULL,
					   "out of memory for a blur");
		ctx->scratch = t;
		ctx->scratch_cap = n;
	}
	rc = target(r, &dst, &slot, err);
	/* kernel_size is torchvision's (kx, ky): width, height */
	if (!rc)
		rc = rfb_gaussian_blur(&r->cur, &dst, l->kernel[1], l->kernel[0],
				       sigma, sigma, ctx->scratch, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

/* RandomErasing.get_params: up to 10 attempts; 0 when none fits (the
 * image is returned unchanged). */
static int erase_rect(rfb_rng *rng, const struct rfb_layer *l, int w, int h,
		      struct rfb_rect *out)
{
	double area = (double)w * h;
	float log_lo = logf((float)l->ratio[0]), log_hi = logf((float)l->ratio[1]);

	for (int attempt = 0; attempt < 10; attempt++) {
		double erase = area * draw_range(rng, l->scale);
		double lr[2] = { log_lo, log_hi };
		double aspect = expf((float)draw_range(rng, lr));
		int eh = py_round(sqrt(erase * aspect));
		int ew = py_round(sqrt(erase / aspect));
		if (!(eh < h && ew < w))
			continue;
		out->top = (int)rfb_rng_below(rng, (uint32_t)(h - eh + 1));
		out->left = (int)rfb_rng_below(rng, (uint32_t)(w - ew + 1));
		out->height = eh;
		out->width = ew;
		return 1;
	}
	return 0;
}

/* Two standard normal float32 values: Marsaglia's polar method (no
 * trigonometry; a point outside the unit disc, one in five, is drawn
 * again) on a point of a 2^16 x 2^16 grid centred in the square, one
 * random word a point (the generator is most of the cost).  torch's
 * normal_ draws its own way: the same distribution, not the values. */
static void draw_normals(rfb_rng *rng, float z[2])
{
	float u, v, s;

	do {
		uint32_t w = rfb_rng_u32(rng);
		u = ((float)(w >> 16) + 0.5f) * 0x1.0p-15f - 1.0f;
		v = ((float)(w & 0xffff) + 0.5f) * 0x1.0p-15f - 1.0f;
		s = u * u + v * v;
	} while (s >= 1.0f);
	s = sqrtf(-2.0f * logf(s) / s);
	z[0] = u * s;
	z[1] = v * s;
}

/* Erase the drawn rectangle of the CHW tensor of out: value[ch], or when
 * random (N(0, 1) - mean[ch]) / std[ch] in float32. */
static void erase_tensor(const struct rfb_layer *l, rfb_rng *rng,
			 struct rfb_pipe_out *out, const float *value,
			 const float *mean, const float *std)
{
	int w = out->shape.width, h = out->shape.height, c = out->shape.channels;
	float *t = (float *)out->data, z[2] = { 0, 0 };
	struct rfb_rect rect;
	unsigned k = 0; /* normals used: a pair is drawn every other one */
	/* random values: a multiply is as good as torch's division */
	const float inv_std[3] = { 1.0f / std[0], 1.0f / std[1], 1.0f / std[2] };

	if (!draw_p(rng, l->p) || !erase_rect(rng, l, w, h, &rect))
		return;
	for (int ch = 0; ch < c; ch++)
		for (int y = rect.top; y < rect.top + rect.height; y++) {
			float *row = t + ((size_t)ch * h + (size_t)y) * w + rect.left;
			if (!l->erase_random) {
				for (int x = 0; x < rect.width; x++)
					row[x] = value[ch];
				continue;
			}
			for (int x = 0; x < rect.width; x++, k++) {
				if (!(k & 1))
					draw_normals(rng, z);
				row[x] = (z[k & 1] - mean[ch]) * inv_std[ch];
			}
		}
}

void rfbi_run_erase_float(const struct rfb_layer *l, rfb_rng *rng,
			 struct rfb_pipe_out *out)
{
	const float value[3] = { (float)l->evalue[0], (float)l->evalue[1],
				 (float)l->evalue[2] };
	const float zero[3] = { 0, 0, 0 }, one[3] = { 1, 1, 1 };

	erase_tensor(l, rng, out, value, zero, one);
}

void rfbi_run_erase_deferred(const struct rfb_layer *l, rfb_rng *rng,
			     const struct rfb_layer *nl, const rfb_norm *norm,
			     struct rfb_pipe_out *out)
{
	float value[3], mean[3], std[3];

	for (int c = 0; c < 3; c++) {
		int k = nl->norm_channels == 1 ? 0 : c;
		/* the normalized pixel of value fill[c], exactly */
		value[c] = norm->lut[c < norm->channels ? c : 0][l->fill[c]];
		mean[c] = (float)nl->mean[k];
		std[c] = (float)nl->std[k];
	}
	erase_tensor(l, rng, out, value, mean, std);
}

static int run_erasing(struct rfb_run *r, const struct rfb_layer *l,
		       rfb_rng *rng, rfb_err *err)
{
	struct rfb_rect rect;
	rfb_image dst;
	int slot, rc;

	if (l->after_norm || l->deferred)
		return 0; /* on the tensor, at normalize (run_finish in pipeline_exec.c) */
	if (!draw_p(rng, l->p))
		return 0;
	if (!erase_rect(rng, l, r->cur.width, r->cur.height, &rect))
		return 0;
	if ((rc = expand_for(r, l->fill, err)))
		return rc;
	/* a copy: cur may be the caller's image or a view */
	rc = target(r, &dst, &slot, err);
	if (!rc) {
		rfb_image_copy(&dst, &r->cur);
		rfb_erase(&dst, &rect, l->fill);
		rfbi_run_take(r, &dst, slot);
	}
	return rc;
}

static int run_vflip(struct rfb_run *r, const struct rfb_layer *l, rfb_rng *rng,
		     rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (!draw_p(rng, l->p))
		return 0;
	rc = target(r, &dst, &slot, err);
	if (!rc) {
		rfb_vflip(&r->cur, &dst);
		rfbi_run_take(r, &dst, slot);
	}
	return rc;
}

/* RandomSolarize, RandomPosterize, RandomEqualize, RandomAutocontrast,
 * RandomAdjustSharpness, RandomInvert: one draw, then the op. */
static int run_random_op(struct rfb_run *r, const struct rfb_layer *l,
			 rfb_rng *rng, rfb_err *err)
{
	enum rfb_op op;
	double m = 0.0;

	if (!draw_p(rng, l->p))
		return 0;
	switch (l->kind) {
	case RFB_F_SOLARIZE: op = RFB_OP_SOLARIZE; m = l->amount; break;
	case RFB_F_POSTERIZE: op = RFB_OP_POSTERIZE; m = l->magnitude; break;
	case RFB_F_EQUALIZE: op = RFB_OP_EQUALIZE; break;
	case RFB_F_AUTOCONTRAST: op = RFB_OP_AUTOCONTRAST; break;
	case RFB_F_SHARPNESS: op = RFB_OP_SHARPNESS; m = l->amount - 1.0; break;
	default: op = RFB_OP_INVERT; break;
	}
	return run_op(r, op, m, l, err);
}

/* RandomRotation: one angle, then F.rotate; with expand or center PIL's
 * general Image.rotate (expand: the output's size depends on the angle). */
static int run_rotation(struct rfb_run *r, const struct rfb_layer *l,
			rfb_rng *rng, rfb_err *err)
{
	double angle = draw_range(rng, l->degrees);
	const double *center = l->has_center ? l->center : NULL;
	int rc = expand_for(r, l->fill, err), nw, nh, slot;
	rfb_image dst;

	if (rc || (!l->expand && !l->has_center))
		return rc ? rc : run_op(r, RFB_OP_ROTATE, angle, l, err);
	rfb_rotate_size(r->cur.width, r->cur.height, angle, l->expand, center,
			&nw, &nh);
	rc = rfbi_run_target(r, nw, nh, r->cur.channels, &dst, &slot, err);
	if (!rc) {
		rfb_rotate(&r->cur, &dst, angle, l->expand, center, l->interp,
			   l->fill);
		rfbi_run_take(r, &dst, slot);
	}
	return rc;
}

/* RandomAffine.get_params, then F.affine. */
static int run_affine(struct rfb_run *r, const struct rfb_layer *l,
		      rfb_rng *rng, rfb_err *err)
{
	double angle = draw_range(rng, l->degrees), scale = 1.0;
	double translate[2] = { 0.0, 0.0 }, shear[2] = { 0.0, 0.0 };
	rfb_image dst;
	int slot, rc;

	if (l->has_translate) {
		double dx = l->translate[0] * r->cur.width;
		double dy = l->translate[1] * r->cur.height;
		double rx[2] = { -dx, dx }, ry[2] = { -dy, dy };
		translate[0] = py_round(draw_range(rng, rx));
		translate[1] = py_round(draw_range(rng, ry));
	}
	if (l->has_scale)
		scale = draw_range(rng, l->scale);
	if (l->shear_n >= 2)
		shear[0] = draw_range(rng, l->shear);
	if (l->shear_n == 4)
		shear[1] = draw_range(rng, l->shear + 2);
	if ((rc = expand_for(r, l->fill, err)))
		return rc;
	rc = target(r, &dst, &slot, err);
	if (!rc) {
		rfb_affine(&r->cur, &dst, angle, translate, scale, shear,
			   l->has_center ? l->center : NULL, l->interp, l->fill);
		rfbi_run_take(r, &dst, slot);
	}
	return rc;
}

/* torch.randint(lo, hi) */
static int draw_int(rfb_rng *rng, int lo, int hi)
{
	return lo + (int)rfb_rng_below(rng, (uint32_t)(hi - lo));
}

/* RandomPerspective.get_params: top-left, top-right, bottom-right,
 * bottom-left, x then y of each. */
static void perspective_points(rfb_rng *rng, double d, int w, int h,
			       int start[4][2], int end[4][2])
{
	int dw = (int)(d * (w / 2)), dh = (int)(d * (h / 2));

	end[0][0] = draw_int(rng, 0, dw + 1);
	end[0][1] = draw_int(rng, 0, dh + 1);
	end[1][0] = draw_int(rng, w - dw - 1, w);
	end[1][1] = draw_int(rng, 0, dh + 1);
	end[2][0] = draw_int(rng, w - dw - 1, w);
	end[2][1] = draw_int(rng, h - dh - 1, h);
	end[3][0] = draw_int(rng, 0, dw + 1);
	end[3][1] = draw_int(rng, h - dh - 1, h);
	start[0][0] = 0;
	start[0][1] = 0;
	start[1][0] = w - 1;
	start[1][1] = 0;
	start[2][0] = w - 1;
	start[2][1] = h - 1;
	start[3][0] = 0;
	start[3][1] = h - 1;
}

static int run_perspective(struct rfb_run *r, const struct rfb_layer *l,
			   rfb_rng *rng, rfb_err *err)
{
	int start[4][2], end[4][2], slot, rc;
	rfb_image dst;

	if (!draw_p(rng, l->p))
		return 0;
	perspective_points(rng, l->amount, r->cur.width, r->cur.height, start,
			   end);
	if ((rc = expand_for(r, l->fill, err)))
		return rc;
	rc = target(r, &dst, &slot, err);
	if (!rc)
		rc = rfb_perspective(&r->cur, &dst, start, end, l->interp, l->fill,
				     err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

/* AugMix: its draws from the layer's stream, then the chains and the
 * mix (augmix.c).  A gray3 image becomes RGB first: torchvision gets an
 * RGB image, and the tensor ops' gray of (v, v, v) is not always v. */
static int run_augmix(struct rfb_run *r, const struct rfb_layer *l,
		      rfb_rng *rng, rfb_err *err)
{
	struct rfb_augmix_spec spec = {
		l->magnitude, l->mix_width, l->mix_depth, l->alpha, l->all_ops,
		l->interp, l->has_fill ? l->fill : NULL
	};
	struct rfb_augmix_choice choice;
	rfb_image dst;
	int slot, rc = rfbi_run_expand(r, err);

	if (rc)
		return rc;
	rfb_augmix_draw(rng, &spec, &choice);
	rc = target(r, &dst, &slot, err);
	if (!rc)
		rc = rfb_augmix_apply(&spec, &choice, &r->cur, &dst,
				      &r->ctx->augmix, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

int rfbi_run_single(struct rfb_run *r, const struct rfb_layer *l, rfb_rng *rng,
		    rfb_err *err)
{
	switch (l->kind) {
	case RFB_F_VFLIP: return run_vflip(r, l, rng, err);
	case RFB_F_GRAYSCALE: return run_grayscale(r, l, rng, err);
	case RFB_F_COLORJITTER: return run_colorjitter(r, l, rng, err);
	case RFB_F_GAUSSBLUR: return run_blur(r, l, rng, err);
	case RFB_F_ERASING: return run_erasing(r, l, rng, err);
	case RFB_F_SOLARIZE:
	case RFB_F_POSTERIZE:
	case RFB_F_EQUALIZE:
	case RFB_F_AUTOCONTRAST:
	case RFB_F_SHARPNESS:
	case RFB_F_INVERT:
		return run_random_op(r, l, rng, err);
	case RFB_F_ROTATION: return run_rotation(r, l, rng, err);
	case RFB_F_AFFINE: return run_affine(r, l, rng, err);
	case RFB_F_PERSPECTIVE: return run_perspective(r, l, rng, err);
	case RFB_F_AUGMIX: return run_augmix(r, l, rng, err);
	default: return 0;
	}
}
