/*
 * filters.h - the pixel kernels of torchvision 0.14's single transforms
 * that RandAugment's ops (ops.h) do not cover: hue, Gaussian blur,
 * erasing, vertical flip, RandomAffine's general affine map and
 * RandomPerspective's projective map, each as torchvision computes it on
 * a PIL 9.4 image (or, for erasing, on a uint8 tensor).
 *
 * The kernels only transform; the random parameters are drawn by the
 * pipeline (refurb-pipeline(7) documents every draw).  src and dst have
 * the same shape (1 or 3 channels) and do not overlap; the arguments are
 * the caller's to check.  Thread-safe (no state).
 */
#ifndef REFURB_FILTERS_H
#define REFURB_FILTERS_H

#include "refurb/image.h"
#include "refurb/ops.h"
#include "refurb/transform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* F.adjust_hue(img, hue_factor) on a PIL RGB image: RGB -> HSV (PIL's
 * Convert.c), H += uint8(int(hue_factor * 255)) mod 256, HSV -> RGB.
 * -0.5 <= hue_factor <= 0.5.  A 1-channel image is copied (PIL returns L
 * images unchanged). */
void rfb_hue(const rfb_image *src, rfb_image *dst, double hue_factor);

/*
 * The normalised 1-D Gaussian kernel of torchvision's
 * _get_gaussian_kernel1d(size, sigma) in float32, into k[0..size).
 * size odd, 1..RFB_BLUR_MAX_KERNEL; sigma > 0.
 */
#define RFB_BLUR_MAX_KERNEL 255
void rfb_blur_kernel(int size, double sigma, float *k);

/* Floats of scratch rfb_gaussian_blur needs for a w x h x c image and a
 * kernel kw wide. */
size_t rfb_blur_scratch(int w, int h, int c, int kw);

/*
 * F.gaussian_blur(img, [kw, kh], [sigma_x, sigma_y]) of a PIL image: the
 * uint8 samples convolved in float32 with the kernels (reflect padding,
 * as torch's pad mode "reflect"), rounded half to even.  Computed as two
 * separable passes (torch convolves with the 2-D outer product: the sums
 * differ in the last float bit, so a sample may differ by 1 where the
 * exact value is within an ulp of .5).  kw, kh odd, each half (k / 2)
 * smaller than the image's side (torch's reflect padding needs it).
 * tmp holds rfb_blur_scratch() floats.  Returns 0 or RFB_EINVAL.
 */
int rfb_gaussian_blur(const rfb_image *src, rfb_image *dst, int kw, int kh,
		      double sigma_x, double sigma_y, float *tmp,
		      rfb_err *err) RFB_MUST_CHECK;

/* F.vflip: mirror src top to bottom into dst. */
void rfb_vflip(const rfb_image *src, rfb_image *dst);

/* F.erase(img, i, j, h, w, v) in place: the rectangle r (inside img) set
 * to value[c] in channel c. */
void rfb_erase(rfb_image *img, const struct rfb_rect *r,
	       const unsigned char *value);

/*
 * F.affine(img, angle, translate, scale, shear, interpolation, fill,
 * center) on a PIL image: torchvision's inverse matrix about center
 * (x, y in pixels; NULL: the centre (w * 0.5, h * 0.5)), then
 * Image.transform(AFFINE).  translate in pixels, shear in degrees (x, y),
 * scale > 0.  fill one value a channel.
 */
void rfb_affine(const rfb_image *src, rfb_image *dst, double angle,
		const double translate[2], double scale, const double shear[2],
		const double *center, enum rfb_interp interp,
		const unsigned char *fill);

/*
 * The size of F.rotate(img, angle, expand=expand, center=center) of a
 * w x h PIL image, into *nw, *nh: w x h without expand; with it, PIL's
 * Image.rotate(expand=True) box around the rotated corners (a quarter
 * turn without center swaps the sides).  center (x, y) or NULL.
 */
void rfb_rotate_size(int w, int h, double angle, int expand,
		     const double *center, int *nw, int *nh);

/*
 * F.rotate(img, angle, interpolation, expand, center, fill) on a PIL
 * image (Image.rotate, its 0/90/180/270 shortcuts only without center):
 * dst has rfb_rotate_size()'s size and src's channels, and does not
 * overlap src.
 */
void rfb_rotate(const rfb_image *src, rfb_image *dst, double angle,
		int expand, const double *center, enum rfb_interp interp,
		const unsigned char *fill);

/*
 * F.perspective(img, startpoints, endpoints, interpolation, fill) on a
 * PIL image: the 8 coefficients of torchvision's _get_perspective_coeffs
 * (solved in double, rounded to float32 as torch's float32 lstsq
 * returns them), then Image.transform(PERSPECTIVE).  Points are (x, y)
 * pairs, 4 each.  Returns 0, or RFB_EINVAL when the points are
 * degenerate (no projective map).
 */
int rfb_perspective(const rfb_image *src, rfb_image *dst,
		    const int start[4][2], const int end[4][2],
		    enum rfb_interp interp, const unsigned char *fill,
		    rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
