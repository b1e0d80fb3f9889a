/*
 * ops_internal.h - the op kernels behind rfb_op_apply() (ops_apply.c), split by
 * concept: ops_color.c (point ops, histograms, ImageEnhance blends) and
 * ops_geometry.c (PIL's affine transform, rotate, transposes).
 *
 * Kernels trust their arguments: rfb_op_apply() has checked that src and
 * dst have the same shape, 1 or 3 channels, and do not overlap, and that
 * the parameters are finite and in range.
 */
#ifndef REFURB_OPS_INTERNAL_H
#define REFURB_OPS_INTERNAL_H

#include <stdint.h>

#include "refurb/image.h"
#include "refurb/ops.h"
#include "refurb/transform.h"

/* ---- per-sample arithmetic shared by the scalar and AVX2 kernels ---- */

/* Blend.c for one sample: in1 + alpha * (in2 - in1), clamped, truncated. */
static inline unsigned char pil_blend(int in1, int in2, float alpha)
{
	float v = (float)in1 + alpha * (float)(in2 - in1);

	v = v < 0.0f ? 0.0f : v;
	v = v > 255.0f ? 255.0f : v;
	return (unsigned char)(int)v;
}

/* Convert.c's rgb2l: ITU-R 601-2 luma in 16.16 fixed point, rounded. */
static inline int pil_luma(const unsigned char *p)
{
	return (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16;
}

/* Filter.c's 3x3 SMOOTH (kernel 1 1 1 / 1 5 1 / 1 1 1, divided by 13 in
 * float) at sample i of the row in (d = channels apart), blended with
 * the original sample. */
static inline unsigned char pil_sharpen(const unsigned char *above,
					const unsigned char *in,
					const unsigned char *below,
					size_t i, size_t d, float factor)
{
	const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
	/* Filter.c sums the row below first, then this one, then the one
	 * above, each left to right, starting from 0.5 (rounding) */
	float ss = 0.5f;

	ss += (float)below[i - d] * k1 + (float)below[i] * k1 +
	      (float)below[i + d] * k1;
	ss += (float)in[i - d] * k1 + (float)in[i] * k5 + (float)in[i + d] * k1;
	ss += (float)above[i - d] * k1 + (float)above[i] * k1 +
	      (float)above[i + d] * k1;
	/* Filter.c clamps to [0, 255] and truncates; with positive weights
	 * summing to 1 (within a float ulp), 0.5 <= ss < 255.6 and the
	 * clamp never acts (leaving it out lets the loop vectorize) */
	return pil_blend((int)ss, in[i], factor);
}

/* ---- ops_color.c ---- */

/* ImageEnhance.Brightness(img).enhance(factor); factor as PIL's float. */
void rfbi_ops_brightness(const rfb_image *src, rfb_image *dst, float factor);
/* ImageEnhance.Color: blend of the L (ITU-R 601-2) image and src. */
void rfbi_ops_color(const rfb_image *src, rfb_image *dst, float factor);
/* ImageEnhance.Contrast: blend of the rounded mean of the L image. */
void rfbi_ops_contrast(const rfb_image *src, rfb_image *dst, float factor);
/* ImageEnhance.Sharpness: blend of ImageFilter.SMOOTH's output and src. */
void rfbi_ops_sharpness(const rfb_image *src, rfb_image *dst, float factor);
/* ImageOps.posterize: keep the bits high bits (0 <= bits <= 8). */
void rfbi_ops_posterize(const rfb_image *src, rfb_image *dst, int bits);
/* ImageOps.solarize: invert samples v with !(v < threshold). */
void rfbi_ops_solarize(const rfb_image *src, rfb_image *dst, double threshold);
/* ImageOps.autocontrast(cutoff=0), per channel. */
void rfbi_ops_autocontrast(const rfb_image *src, rfb_image *dst);
/* ImageOps.equalize, per channel. */
void rfbi_ops_equalize(const rfb_image *src, rfb_image *dst);
/* ImageOps.invert. */
void rfbi_ops_invert(const rfb_image *src, rfb_image *dst);

/* The scalar kernels (the reference) and the AVX2 ones behind the
 * dispatchers above: same float operations in the same order per sample,
 * so identical bytes.  Call the _avx2 ones only when rfbi_ops_have_avx2(). */
int rfbi_ops_have_avx2(void);
void rfbi_ops_sharpness_scalar(const rfb_image *src, rfb_image *dst, float factor);
void rfbi_ops_sharpness_avx2(const rfb_image *src, rfb_image *dst, float factor);
/* Sharpness's interior: rows [0, rows) of m samples at out (out_stride
 * apart) from the input samples under them at in (in_stride apart), the
 * rows above and below and the samples d (channels) left and right of
 * each readable.  The image border is the caller's (a copy).  The scalar
 * one is here so that the AVX2 file can finish its rows with it without
 * depending on ops_color.c. */
static inline void ops_sharpen_block_scalar(const unsigned char *in,
					    size_t in_stride,
					    unsigned char *out,
					    size_t out_stride, int rows,
					    size_t m, size_t d, float factor)
{
	enum { BLOCK = 32 }; /* samples per vectorized block */

	for (int r = 0; r < rows; r++) {
		/* one column to the left, so that sample i - d exists */
		const unsigned char *row = in + (size_t)r * in_stride - d;
		const unsigned char *above = row - in_stride, *below = row + in_stride;
		unsigned char *o = out + (size_t)r * out_stride - d;
		size_t i = d;

		for (; i + BLOCK <= m + d; i += BLOCK)
			for (size_t k = 0; k < BLOCK; k++)
				o[i + k] = pil_sharpen(above, row, below, i + k,
						       d, factor);
		for (; i < m + d; i++)
			o[i] = pil_sharpen(above, row, below, i, d, factor);
	}
}
void rfbi_ops_sharpen_block_avx2(const unsigned char *in, size_t in_stride,
				 unsigned char *out, size_t out_stride, int rows,
				 size_t m, size_t d, float factor);
void rfbi_ops_color_scalar(const rfb_image *src, rfb_image *dst, float factor);
void rfbi_ops_color_avx2(const rfb_image *src, rfb_image *dst, float factor);
/* Blend of the constant image level with src (Brightness, Contrast). */
void rfbi_ops_blend_level_scalar(const rfb_image *src, rfb_image *dst,
				 int level, float factor);
void rfbi_ops_blend_level_avx2(const rfb_image *src, rfb_image *dst,
			       int level, float factor);
/* AutoContrast with the ranges of stats applied to src (stats itself
 * for the op; the whole image when src is a part of it): the scalar one
 * from histograms and tables, the AVX2 one from per-channel minima and
 * maxima and the table's formula in double (the same two roundings,
 * i * scale then + offset). */
void rfbi_ops_autocontrast_scalar(const rfb_image *stats, const rfb_image *src,
				  rfb_image *dst);
void rfbi_ops_autocontrast_avx2(const rfb_image *stats, const rfb_image *src,
				rfb_image *dst);
/* Sum of the L image's samples (rgb2l of each pixel, or the samples). */
uint64_t rfbi_ops_luma_sum_scalar(const rfb_image *img);
uint64_t rfbi_ops_luma_sum_avx2(const rfb_image *img);

/* ---- ops_affine.c: PIL's Geometry.c ---- */

/*
 * Image.transform(AFFINE, a, resample=interp, fillcolor=fill) of an image
 * the size of sp's full one into one the size of dp's full one (the same
 * but for Image.rotate with expand), computed for the window dst placed
 * at dp from src placed at sp (which holds every pixel
 * rfbi_ops_affine_need names).  Windows only with NEAREST: the filters need whole images
 * (sp and dp at 0, 0).  fill has one value per channel.
 */
void rfbi_ops_affine(const rfb_image *src, const struct rfb_place *sp,
		     rfb_image *dst, const struct rfb_place *dp, const double a[6],
		     enum rfb_interp interp, const unsigned char *fill);
/* The source window NEAREST reads for the output window out: inside the
 * image, never empty. */
void rfbi_ops_affine_need(const double a[6], int full_w, int full_h,
			  const struct rfb_rect *out, struct rfb_rect *need);
/* Image.transform(PERSPECTIVE, a, resample=interp, fillcolor=fill) of
 * whole images (ImagingGenericTransform with perspective_transform). */
void rfbi_ops_perspective(const rfb_image *src, rfb_image *dst,
			  const double a[8], enum rfb_interp interp,
			  const unsigned char *fill);
/* Image.rotate's ROTATE_180, and ROTATE_90 (quarter 1) / ROTATE_270 (3)
 * (dst is src->height x src->width: the same for a square image). */
void rfbi_ops_rotate180(const rfb_image *src, rfb_image *dst);
void rfbi_ops_quarter_turn(const rfb_image *src, rfb_image *dst, int quarter);

/* ---- ops_geometry.c ---- */

/* fill has one value per channel (never NULL here). */
void rfbi_ops_shear(const rfb_image *src, rfb_image *dst, double shear_x,
		    double shear_y, enum rfb_interp interp,
		    const unsigned char *fill);
void rfbi_ops_translate(const rfb_image *src, rfb_image *dst, double tx,
			double ty, enum rfb_interp interp,
			const unsigned char *fill);
void rfbi_ops_rotate(const rfb_image *src, rfb_image *dst, double degrees,
		     enum rfb_interp interp, const unsigned char *fill);

/* ---- ops on windows (ops_window.c; the geometry in ops_geometry.c) ---- */

/* Contrast, AutoContrast or Equalize with the statistics of stats (the
 * whole input) applied to src (a part of it, dst's size) into dst. */
void rfbi_ops_stat_window(enum rfb_op op, float factor, const rfb_image *stats,
			  const rfb_image *src, rfb_image *dst);

/* Sharpness of the part of src (placed at sp) under dst (at dp). */
void rfbi_ops_sharpness_window(const rfb_image *src, const struct rfb_place *sp,
			       rfb_image *dst, const struct rfb_place *dp,
			       float factor);

/* The geometric ops' parts of the two above (0 from need: not on
 * windows). */
int rfbi_ops_geometry_need(enum rfb_op op, double magnitude,
			   enum rfb_interp interp, int full_w, int full_h,
			   const struct rfb_rect *out, struct rfb_rect *need);
void rfbi_ops_geometry_window(enum rfb_op op, double magnitude,
			      enum rfb_interp interp, const unsigned char *fill,
			      const rfb_image *src, const struct rfb_place *sp,
			      rfb_image *dst, const struct rfb_place *dp);

#endif
