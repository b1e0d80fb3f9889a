/*
 * ops_internal.h - the op kernels behind rfb_op_apply() (ops.c), split by
 * concept: ops_color.c (point ops, histograms, ImageEnhance blends) and
 * ops_geometry.c (PIL's affine transform, rotate, transposes).
 *
 * Kernels trust their arguments: rfb_op_apply() has checked that src and
 * dst have the same shape, 1 or 3 channels, and do not overlap, and that
 * the parameters are finite and in range.
 */
#ifndef REFURB_OPS_INTERNAL_H
#define REFURB_OPS_INTERNAL_H

#include "refurb/image.h"
#include "refurb/ops.h"

/* ---- ops_color.c ---- */

/* ImageEnhance.Brightness(img).enhance(factor); factor as PIL's float. */
void rfb_ops_brightness(const rfb_image *src, rfb_image *dst, float factor);
/* ImageEnhance.Color: blend of the L (ITU-R 601-2) image and src. */
void rfb_ops_color(const rfb_image *src, rfb_image *dst, float factor);
/* ImageEnhance.Contrast: blend of the rounded mean of the L image. */
void rfb_ops_contrast(const rfb_image *src, rfb_image *dst, float factor);
/* ImageEnhance.Sharpness: blend of ImageFilter.SMOOTH's output and src. */
void rfb_ops_sharpness(const rfb_image *src, rfb_image *dst, float factor);
/* ImageOps.posterize: keep the bits high bits (0 <= bits <= 8). */
void rfb_ops_posterize(const rfb_image *src, rfb_image *dst, int bits);
/* ImageOps.solarize: invert samples v with !(v < threshold). */
void rfb_ops_solarize(const rfb_image *src, rfb_image *dst, double threshold);
/* ImageOps.autocontrast(cutoff=0), per channel. */
void rfb_ops_autocontrast(const rfb_image *src, rfb_image *dst);
/* ImageOps.equalize, per channel. */
void rfb_ops_equalize(const rfb_image *src, rfb_image *dst);
/* ImageOps.invert. */
void rfb_ops_invert(const rfb_image *src, rfb_image *dst);

/* ---- ops_geometry.c ---- */

/* fill has one value per channel (never NULL here). */
void rfb_ops_shear(const rfb_image *src, rfb_image *dst, double shear_x,
		   double shear_y, enum rfb_interp interp,
		   const unsigned char *fill);
void rfb_ops_translate(const rfb_image *src, rfb_image *dst, double tx,
		       double ty, enum rfb_interp interp,
		       const unsigned char *fill);
void rfb_ops_rotate(const rfb_image *src, rfb_image *dst, double degrees,
		    enum rfb_interp interp, const unsigned char *fill);

#endif
