/*
 * ops_apply.c - rfb_op_apply(): argument checks and dispatch to the kernels of
 * ops_color.c and ops_geometry.c, with torchvision's _apply_op mapping
 * from the signed magnitude to each op's parameter.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "ops_internal.h"
#include "refurb/resize.h"

const struct rfb_enum_name rfb_op_names[] = {
	{ RFB_OP_IDENTITY, "Identity" },
	{ RFB_OP_SHEAR_X, "ShearX" },
	{ RFB_OP_SHEAR_Y, "ShearY" },
	{ RFB_OP_TRANSLATE_X, "TranslateX" },
	{ RFB_OP_TRANSLATE_Y, "TranslateY" },
	{ RFB_OP_ROTATE, "Rotate" },
	{ RFB_OP_BRIGHTNESS, "Brightness" },
	{ RFB_OP_COLOR, "Color" },
	{ RFB_OP_CONTRAST, "Contrast" },
	{ RFB_OP_SHARPNESS, "Sharpness" },
	{ RFB_OP_POSTERIZE, "Posterize" },
	{ RFB_OP_SOLARIZE, "Solarize" },
	{ RFB_OP_AUTOCONTRAST, "AutoContrast" },
	{ RFB_OP_EQUALIZE, "Equalize" },
	{ RFB_OP_INVERT, "Invert" },
	{ 0, NULL },
};

const char *rfb_op_name(enum rfb_op op)
{
	return rfb_enum_name(rfb_op_names, (int)op);
}

int rfb_op_parse(const char *name)
{
	return rfb_enum_parse(rfb_op_names, name);
}

/* First and one-past-last byte an image's pixels occupy. */
static void image_span(const rfb_image *img, uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)img->data;
	*hi = *lo + (size_t)(img->height - 1) * img->stride +
	      (size_t)img->width * (size_t)img->channels;
}

static int check_images(const rfb_image *src, const rfb_image *dst,
			rfb_err *err)
{
	uintptr_t s0, s1, d0, d1;

	if (!src || !dst || !src->data || !dst->data)
		return rfb_err_set(err, RFB_EINVAL, NULL, "op: NULL image");
	if (src->width < 1 || src->height < 1 ||
	    (src->channels != 1 && src->channels != 3) ||
	    src->stride < (size_t)src->width * (size_t)src->channels)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "op: bad source image %dx%dx%d",
				   src->width, src->height, src->channels);
	if (dst->width != src->width || dst->height != src->height ||
	    dst->channels != src->channels ||
	    dst->stride < (size_t)dst->width * (size_t)dst->channels)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "op: destination %dx%dx%d does not match source %dx%dx%d",
				   dst->width, dst->height, dst->channels,
				   src->width, src->height, src->channels);
	image_span(src, &s0, &s1);
	image_span(dst, &d0, &d1);
	if (s0 < d1 && d0 < s1)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "op: source and destination overlap");
	return 0;
}

static int uses_magnitude(enum rfb_op op)
{
	return op != RFB_OP_IDENTITY && op != RFB_OP_AUTOCONTRAST &&
	       op != RFB_OP_EQUALIZE && op != RFB_OP_INVERT;
}

static int is_geometric(enum rfb_op op)
{
	return op >= RFB_OP_SHEAR_X && op <= RFB_OP_ROTATE;
}

static int check_params(enum rfb_op op, double magnitude, enum rfb_interp interp,
			rfb_err *err)
{
	if (!rfb_op_name(op))
		return rfb_err_set(err, RFB_EINVAL, NULL, "op: unknown op %d", (int)op);
	if (uses_magnitude(op) && !isfinite(magnitude))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "%s: magnitude is not a finite number", rfb_op_name(op));
	if (is_geometric(op) && !rfb_interp_name(interp))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "%s: unsupported interpolation %d", rfb_op_name(op),
				   (int)interp);
	if (op == RFB_OP_POSTERIZE && !(magnitude > -1.0 && magnitude < 9.0))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "Posterize: %g bits (int(magnitude) must be 0 to 8)",
				   magnitude);
	if (op >= RFB_OP_BRIGHTNESS && op <= RFB_OP_SHARPNESS &&
	    !(fabs(1.0 + magnitude) <= FLT_MAX))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "%s: factor 1 + %g out of range", rfb_op_name(op),
				   magnitude);
	return 0;
}

static void apply_color(enum rfb_op op, double magnitude,
			const rfb_image *src, rfb_image *dst)
{
	/* ImageEnhance's factor reaches Blend.c as a C float */
	float factor = (float)(1.0 + magnitude);

	switch (op) {
	case RFB_OP_BRIGHTNESS: rfbi_ops_brightness(src, dst, factor); break;
	case RFB_OP_COLOR: rfbi_ops_color(src, dst, factor); break;
	case RFB_OP_CONTRAST: rfbi_ops_contrast(src, dst, factor); break;
	case RFB_OP_SHARPNESS: rfbi_ops_sharpness(src, dst, factor); break;
	case RFB_OP_POSTERIZE: rfbi_ops_posterize(src, dst, (int)magnitude); break;
	case RFB_OP_SOLARIZE: rfbi_ops_solarize(src, dst, magnitude); break;
	case RFB_OP_AUTOCONTRAST: rfbi_ops_autocontrast(src, dst); break;
	case RFB_OP_EQUALIZE: rfbi_ops_equalize(src, dst); break;
	case RFB_OP_INVERT: rfbi_ops_invert(src, dst); break;
	default: rfb_image_copy(dst, src); break;
	}
}

int rfb_op_apply(enum rfb_op op, double magnitude, enum rfb_interp interp,
		 const unsigned char *fill, const rfb_image *src,
		 rfb_image *dst, rfb_err *err)
{
	static const unsigned char black[3] = { 0, 0, 0 };
	int rc = check_images(src, dst, err);

	if (rc == 0)
		rc = check_params(op, magnitude, interp, err);
	if (rc)
		return rc;
	if (!fill)
		fill = black;
	switch (op) {
	case RFB_OP_SHEAR_X:
		rfbi_ops_shear(src, dst, magnitude, 0.0, interp, fill);
		break;
	case RFB_OP_SHEAR_Y:
		rfbi_ops_shear(src, dst, 0.0, magnitude, interp, fill);
		break;
	case RFB_OP_TRANSLATE_X:
		rfbi_ops_translate(src, dst, magnitude, 0.0, interp, fill);
		break;
	case RFB_OP_TRANSLATE_Y:
		rfbi_ops_translate(src, dst, 0.0, magnitude, interp, fill);
		break;
	case RFB_OP_ROTATE:
		rfbi_ops_rotate(src, dst, magnitude, interp, fill);
		break;
	default:
		apply_color(op, magnitude, src, dst);
		break;
	}
	return 0;
}
