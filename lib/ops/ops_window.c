/*
 * ops_window.c - the augment ops on windows of an image: what part of its
 * input an op reads for a part of its output, and computing only that
 * part (see ops_internal.h).  The pipeline uses them when a crop follows
 * the ops: most of the image would be computed to be thrown away.
 *
 * Point ops read the same pixels they write; Sharpness one more pixel
 * around; Contrast, AutoContrast and Equalize the whole image (their
 * mean, range or histogram), then map only the window; the geometric ops
 * the source pixels of their output window (ops_geometry.c).  Every
 * output pixel is computed with the full image's coordinates and
 * statistics, so a window holds exactly the bytes of the full result.
 */
#include "ops_internal.h"

/* r grown by one pixel on each side, clipped to a w x h image. */
static void grow_one(const struct rfb_rect *r, int w, int h,
		     struct rfb_rect *out)
{
	int x0 = r->left > 0 ? r->left - 1 : 0, y0 = r->top > 0 ? r->top - 1 : 0;
	int x1 = r->left + r->width < w ? r->left + r->width + 1 : w;
	int y1 = r->top + r->height < h ? r->top + r->height + 1 : h;

	*out = (struct rfb_rect){ y0, x0, y1 - y0, x1 - x0 };
}

int rfb_op_window_need(enum rfb_op op, double magnitude, enum rfb_interp interp,
		       int full_w, int full_h, const struct rfb_rect *out,
		       struct rfb_rect *need)
{
	switch (op) {
	case RFB_OP_SHEAR_X:
	case RFB_OP_SHEAR_Y:
	case RFB_OP_TRANSLATE_X:
	case RFB_OP_TRANSLATE_Y:
	case RFB_OP_ROTATE:
		return rfbi_ops_geometry_need(op, magnitude, interp, full_w, full_h,
					     out, need);
	case RFB_OP_SHARPNESS:
		grow_one(out, full_w, full_h, need);
		return 1;
	case RFB_OP_CONTRAST:
	case RFB_OP_AUTOCONTRAST:
	case RFB_OP_EQUALIZE:
		*need = (struct rfb_rect){ 0, 0, full_h, full_w };
		return 1;
	default:
		*need = *out;
		return 1;
	}
}

/* The part of src (placed at sp) under the window dst (placed at dp). */
static rfb_image under(const rfb_image *src, const struct rfb_place *sp,
		       const rfb_image *dst, const struct rfb_place *dp)
{
	rfb_image v = *src;

	v.data = rfb_image_px(src, dp->x - sp->x, dp->y - sp->y);
	v.width = dst->width;
	v.height = dst->height;
	return v;
}

int rfb_op_apply_window(enum rfb_op op, double magnitude,
			enum rfb_interp interp, const unsigned char *fill,
			const rfb_image *src, const struct rfb_place *sp,
			rfb_image *dst, const struct rfb_place *dp, rfb_err *err)
{
	static const unsigned char black[3] = { 0, 0, 0 };
	rfb_image part = under(src, sp, dst, dp);
	/* ImageEnhance's factor reaches Blend.c as a C float */
	float factor = (float)(1.0 + magnitude);

	switch (op) {
	case RFB_OP_SHEAR_X:
	case RFB_OP_SHEAR_Y:
	case RFB_OP_TRANSLATE_X:
	case RFB_OP_TRANSLATE_Y:
	case RFB_OP_ROTATE:
		rfbi_ops_geometry_window(op, magnitude, interp, fill ? fill : black,
					src, sp, dst, dp);
		break;
	case RFB_OP_SHARPNESS:
		rfbi_ops_sharpness_window(src, sp, dst, dp, factor);
		break;
	case RFB_OP_CONTRAST:
	case RFB_OP_AUTOCONTRAST:
	case RFB_OP_EQUALIZE:
		rfbi_ops_stat_window(op, factor, src, &part, dst);
		break;
	default:
		/* point ops: the op itself on the part (checked there) */
		return rfb_op_apply(op, magnitude, interp, fill, &part, dst, err);
	}
	return 0;
}
