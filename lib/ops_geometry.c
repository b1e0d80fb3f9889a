/*
 * ops_geometry.c - ShearX/Y, TranslateX/Y and Rotate as torchvision 0.14
 * runs them on PIL 9.4 images.
 *
 * torchvision turns each op into an inverse affine matrix (in Python
 * doubles: _get_inverse_affine_matrix, or Image.rotate's own matrix with
 * its round(x, 15)), and PIL's Geometry.c resamples with it.  For NEAREST
 * PIL picks one of three engines, and the choice matters for the exact
 * result: a pure scale/translate matrix goes through ImagingScaleAffine
 * (double accumulation), anything else whose corners fit in 16.16 fixed
 * point through affine_fixed (integer accumulation), the rest through a
 * double-accumulating loop.  BILINEAR and BICUBIC evaluate the matrix per
 * pixel (ImagingGenericTransform).  This file reproduces each of them;
 * the fixed-point engine solves the range of valid x of a row in closed
 * form so that its inner loop is a branch-free gather.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* ---- Python's arithmetic, as torchvision and PIL's Python code use it ---- */

static double py_radians(double deg)
{
	return deg * (M_PI / 180.0); /* math.radians: x * degToRad */
}

static double py_degrees(double rad)
{
	return rad * (180.0 / M_PI); /* math.degrees: x * radToDeg */
}

/* Python's float modulo x % 360.0: the sign follows the divisor. */
static double py_mod360(double x)
{
	double m = fmod(x, 360.0);

	if (m == 0.0)
		return 0.0;
	return m < 0.0 ? m + 360.0 : m;
}

/* Python's round(x, 15): correctly rounded to 15 decimals, both ways. */
static double py_round15(double x)
{
	char text[64];

	snprintf(text, sizeof text, "%.15f", x);
	return strtod(text, NULL);
}

/*
 * torchvision's _get_inverse_affine_matrix(center, angle, translate,
 * scale=1.0, shear), operation for operation.
 */
static void tv_inverse_affine(const double center[2], double angle,
			      const double translate[2], const double shear[2],
			      double m[6])
{
	double rot = py_radians(angle);
	double sx = py_radians(shear[0]), sy = py_radians(shear[1]);
	double cx = center[0], cy = center[1];
	double tx = translate[0], ty = translate[1];
	double a = cos(rot - sy) / cos(sy);
	double b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
	double c = sin(rot - sy) / cos(sy);
	double d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);

	m[0] = d;
	m[1] = -b;
	m[2] = 0.0;
	m[3] = -c;
	m[4] = a;
	m[5] = 0.0;
	m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
	m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
	m[2] += cx;
	m[5] += cy;
}

/* Image.rotate's matrix for angle (already % 360) about the centre. */
static void pil_rotate_matrix(int w, int h, double angle, double m[6])
{
	double cx = w / 2.0, cy = h / 2.0;
	double rad = -py_radians(angle);
	double x = -cx, y = -cy;

	m[0] = py_round15(cos(rad));
	m[1] = py_round15(sin(rad));
	m[2] = 0.0;
	m[3] = py_round15(-sin(rad));
	m[4] = py_round15(cos(rad));
	m[5] = 0.0;
	m[2] = m[0] * x + m[1] * y + m[2];
	m[5] = m[3] * x + m[4] * y + m[5];
	m[2] += cx;
	m[5] += cy;
}

/* ---- helpers ---- */

static unsigned char *row_of(const rfb_image *img, int y)
{
	return img->data + (size_t)y * img->stride;
}

static void fill_span(unsigned char *row, int x0, int x1, int channels,
		      const unsigned char *fill)
{
	if (x1 <= x0)
		return;
	if (channels == 1) {
		memset(row + x0, fill[0], (size_t)(x1 - x0));
		return;
	}
	for (int x = x0; x < x1; x++)
		memcpy(row + (size_t)x * 3, fill, 3);
}

/* PIL's FLOOR(): truncation for v >= 0, floor() below (no overflow:
 * callers only pass |v| < 2^31). */
static int pil_floor(double v)
{
	return v < 0.0 ? (int)floor(v) : (int)v;
}

/* PIL's COORD() followed by the range check: the index, or -1. */
static int pil_coord(double v, int size)
{
	if (!(v >= 0.0) || v >= size)
		return -1;
	return (int)v;
}

static int64_t floor_div(int64_t a, int64_t b) /* b > 0 */
{
	int64_t q = a / b;
	return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b) /* b > 0 */
{
	return -floor_div(-a, b);
}

/* Narrow [*lo, *hi) to the x with 0 <= v0 + x * dv < limit.  When the
 * result is empty, *lo == *hi but both may lie outside the old span. */
static void clip_span(int64_t v0, int64_t dv, int64_t limit, int64_t *lo,
		      int64_t *hi)
{
	int64_t first, last;

	if (dv == 0) {
		if (v0 < 0 || v0 >= limit)
			*hi = *lo;
		return;
	}
	if (dv > 0) {
		first = ceil_div(-v0, dv);
		last = floor_div(limit - 1 - v0, dv);
	} else {
		first = ceil_div(v0 - limit + 1, -dv);
		last = floor_div(v0, -dv);
	}
	if (first > *lo)
		*lo = first;
	if (last + 1 < *hi)
		*hi = last + 1;
	if (*hi < *lo)
		*hi = *lo;
}

/* ---- NEAREST engine 1: affine_fixed (16.16 fixed point) ---- */

static int pil_fix(double v)
{
	return pil_floor(v * 65536.0 + 0.5);
}

static int fits_fixed(const double a[6], int x, int y)
{
	return fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 &&
	       fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

/* Copy pixels x in [lo, hi) of one output row from fixed-point source
 * coordinates (xx, yy) + x * (dx, dy), all known to be inside src. */
static void gather_fixed(const rfb_image *src, unsigned char *out, int64_t lo,
			 int64_t hi, int64_t xx, int64_t yy, int64_t dx,
			 int64_t dy)
{
	const unsigned char *base = src->data;
	size_t stride = src->stride;

	xx += lo * dx;
	yy += lo * dy;
	if (src->channels == 1) {
		for (int64_t x = lo; x < hi; x++, xx += dx, yy += dy)
			out[x] = base[(size_t)(yy >> 16) * stride +
				      (size_t)(xx >> 16)];
		return;
	}
	/* 4-byte moves: the 4th byte written is the next output pixel's,
	 * which is written after (by this loop, or by the fill after the
	 * span; the span's last pixel is copied exactly); the 4th byte read
	 * must lie inside src, i.e. not after its very last pixel */
	const unsigned char *last = rfb_image_px(src, src->width - 1,
						 src->height - 1);
	for (int64_t x = lo; x < hi - 1; x++, xx += dx, yy += dy) {
		const unsigned char *p = base + (size_t)(yy >> 16) * stride +
					 (size_t)(xx >> 16) * 3;
		uint32_t v;
		memcpy(&v, p < last ? p : last - 1, 4);
		if (p == last)
			v >>= 8;
		memcpy(out + 3 * x, &v, 4);
	}
	if (lo < hi)
		memcpy(out + 3 * (hi - 1), base + (size_t)(yy >> 16) * stride +
		       (size_t)(xx >> 16) * 3, 3);
}

/* gather_fixed() when dx is exactly one pixel (the shears): the source
 * x advances by one per output pixel, so every run of pixels whose
 * source row stays the same is a single copy.  Same result. */
static void copy_runs_fixed(const rfb_image *src, unsigned char *out,
			    int64_t lo, int64_t hi, int64_t xx, int64_t yy,
			    int64_t dy)
{
	size_t c = (size_t)src->channels;

	xx += lo * 65536;
	yy += lo * dy;
	for (int64_t x = lo; x < hi;) {
		int64_t sy = yy >> 16, run = hi - x;
		if (dy > 0)
			run = ceil_div(((sy + 1) << 16) - yy, dy);
		else if (dy < 0)
			run = floor_div(yy - (sy << 16), -dy) + 1;
		if (run > hi - x)
			run = hi - x;
		memcpy(out + (size_t)x * c,
		       row_of(src, (int)sy) + (size_t)(xx >> 16) * c,
		       (size_t)run * c);
		x += run;
		xx += run * 65536;
		yy += run * dy;
	}
}

static void nearest_fixed(const rfb_image *src, rfb_image *dst,
			  const double a[6], const unsigned char *fill)
{
	int64_t a0 = pil_fix(a[0]), a1 = pil_fix(a[1]);
	int64_t a3 = pil_fix(a[3]), a4 = pil_fix(a[4]);
	int64_t a2 = pil_fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
	int64_t a5 = pil_fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
	int64_t xlimit = (int64_t)src->width << 16;
	int64_t ylimit = (int64_t)src->height << 16;

	for (int y = 0; y < dst->height; y++) {
		unsigned char *out = row_of(dst, y);
		int64_t xx = a2 + y * a1, yy = a5 + y * a4;
		int64_t lo = 0, hi = dst->width;

		/* the pixels that land inside src form one interval */
		clip_span(xx, a0, xlimit, &lo, &hi);
		clip_span(yy, a3, ylimit, &lo, &hi);
		if (lo >= hi) /* empty: lo may lie beyond the row */
			lo = hi = 0;
		fill_span(out, 0, (int)lo, dst->channels, fill);
		if (a0 == 65536)
			copy_runs_fixed(src, out, lo, hi, xx, yy, a3);
		else
			gather_fixed(src, out, lo, hi, xx, yy, a0, a3);
		fill_span(out, (int)hi, dst->width, dst->channels, fill);
	}
}

/* ---- NEAREST engine 2: ImagingScaleAffine (a[1] == a[3] == 0) ---- */

#define SCALE_CHUNK 512

static void nearest_scale(const rfb_image *src, rfb_image *dst,
			  const double a[6], const unsigned char *fill)
{
	int c = dst->channels;
	int xin[SCALE_CHUNK];
	double xo = a[2] + a[0] * 0.5;

	/* PIL tabulates every column's source once; a chunk at a time
	 * keeps the table on the stack, same accumulation order */
	for (int x0 = 0; x0 < dst->width; x0 += SCALE_CHUNK) {
		int n = dst->width - x0 < SCALE_CHUNK ? dst->width - x0 : SCALE_CHUNK;
		double yo = a[5] + a[4] * 0.5;

		for (int i = 0; i < n; i++, xo += a[0])
			xin[i] = pil_coord(xo, src->width);
		for (int y = 0; y < dst->height; y++, yo += a[4]) {
			unsigned char *out = row_of(dst, y) + (size_t)x0 * c;
			int yi = pil_coord(yo, src->height);
			const unsigned char *in = yi < 0 ? NULL : row_of(src, yi);

			for (int i = 0; i < n; i++) {
				if (in && xin[i] >= 0)
					memcpy(out + (size_t)i * c,
					       in + (size_t)xin[i] * c, (size_t)c);
				else
					memcpy(out + (size_t)i * c, fill, (size_t)c);
			}
		}
	}
}

/* Whole-pixel shift (translate): ScaleAffine's result when a = (1, 0, -tx,
 * 0, 1, -ty) with integer tx, ty, where every addition is exact. */
static void nearest_shift(const rfb_image *src, rfb_image *dst, int tx, int ty,
			  const unsigned char *fill)
{
	int c = dst->channels, w = dst->width;
	int lo = tx > 0 ? tx : 0, hi = tx < 0 ? w + tx : w;

	if (hi < lo)
		hi = lo = 0;
	for (int y = 0; y < dst->height; y++) {
		unsigned char *out = row_of(dst, y);
		int sy = y - ty;

		if (sy < 0 || sy >= src->height || hi == lo) {
			fill_span(out, 0, w, c, fill);
			continue;
		}
		fill_span(out, 0, lo, c, fill);
		memcpy(out + (size_t)lo * c, row_of(src, sy) + (size_t)(lo - tx) * c,
		       (size_t)(hi - lo) * c);
		fill_span(out, hi, w, c, fill);
	}
}

/* ---- NEAREST engine 3: ImagingTransformAffine's double loop ---- */

static void nearest_double(const rfb_image *src, rfb_image *dst,
			   const double a[6], const unsigned char *fill)
{
	int c = dst->channels;
	double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
	double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;

	for (int y = 0; y < dst->height; y++, xo += a[1], yo += a[4]) {
		unsigned char *out = row_of(dst, y);
		double xx = xo, yy = yo;

		for (int x = 0; x < dst->width; x++, xx += a[0], yy += a[3]) {
			int xi = pil_coord(xx, src->width);
			int yi = xi < 0 ? -1 : pil_coord(yy, src->height);
			const unsigned char *p = yi < 0 ? fill :
				rfb_image_px(src, xi, yi);
			memcpy(out + (size_t)x * c, p, (size_t)c);
		}
	}
}

static void affine_nearest(const rfb_image *src, rfb_image *dst,
			   const double a[6], const unsigned char *fill)
{
	int w = dst->width, h = dst->height;

	if (a[1] == 0 && a[3] == 0) {
		/* whole-pixel shift: every addition of ScaleAffine is exact,
		 * so copying row spans gives its result */
		if (a[0] == 1.0 && a[4] == 1.0 && fabs(a[2]) < 1e9 &&
		    fabs(a[5]) < 1e9 && a[2] == floor(a[2]) &&
		    a[5] == floor(a[5]))
			nearest_shift(src, dst, (int)-a[2], (int)-a[5], fill);
		else
			nearest_scale(src, dst, a, fill);
	} else if (fits_fixed(a, 0, 0) && fits_fixed(a, w, h) &&
		   fits_fixed(a, 0, h) && fits_fixed(a, w, 0)) {
		nearest_fixed(src, dst, a, fill);
	} else {
		nearest_double(src, dst, a, fill);
	}
}

/* ---- BILINEAR and BICUBIC: ImagingGenericTransform's filters ---- */

static int clampi(int v, int size)
{
	return v < 0 ? 0 : v < size ? v : size - 1;
}

/* bilinear_filter8/32RGB: 0 if (xin, yin) is outside src. */
static int bilinear_px(const rfb_image *im, double xin, double yin,
		       unsigned char *out)
{
	int c = im->channels, x, y, x0, x1;
	const unsigned char *r0, *r1;
	double dx, dy;

	if (xin < 0.0 || xin >= im->width || yin < 0.0 || yin >= im->height)
		return 0;
	xin -= 0.5;
	yin -= 0.5;
	x = pil_floor(xin);
	y = pil_floor(yin);
	dx = xin - x;
	dy = yin - y;
	r0 = row_of(im, clampi(y, im->height));
	r1 = y + 1 >= 0 && y + 1 < im->height ? row_of(im, y + 1) : NULL;
	x0 = clampi(x, im->width) * c;
	x1 = clampi(x + 1, im->width) * c;
	for (int b = 0; b < c; b++) {
		double v1 = r0[x0 + b] + (r0[x1 + b] - r0[x0 + b]) * dx;
		double v2 = r1 ? r1[x0 + b] + (r1[x1 + b] - r1[x0 + b]) * dx : v1;
		v1 = v1 + (v2 - v1) * dy;
		out[b] = (unsigned char)v1;
	}
	return 1;
}

static double cubic(double v1, double v2, double v3, double v4, double d)
{
	double p1 = v2;
	double p2 = -v1 + v3;
	double p3 = 2 * (v1 - v2) + v3 - v4;
	double p4 = -v1 + v2 - v3 + v4;
	return p1 + d * (p2 + d * (p3 + d * p4));
}

/* One row's cubic along x (PIL evaluates p1..p4 in int: exact). */
static double cubic_row(const unsigned char *r, const int xs[4], int b,
			double dx)
{
	int v1 = r[xs[0] + b], v2 = r[xs[1] + b];
	int v3 = r[xs[2] + b], v4 = r[xs[3] + b];
	double p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4;
	double p4 = -v1 + v2 - v3 + v4;
	return v2 + dx * (p2 + dx * (p3 + dx * p4));
}

/* bicubic_filter8/32RGB: 0 if (xin, yin) is outside src. */
static int bicubic_px(const rfb_image *im, double xin, double yin,
		      unsigned char *out)
{
	int c = im->channels, x, y, xs[4];
	const unsigned char *rows[4];
	double dx, dy;

	if (xin < 0.0 || xin >= im->width || yin < 0.0 || yin >= im->height)
		return 0;
	xin -= 0.5;
	yin -= 0.5;
	x = pil_floor(xin);
	y = pil_floor(yin);
	dx = xin - x;
	dy = yin - y;
	x--;
	y--;
	for (int i = 0; i < 4; i++)
		xs[i] = clampi(x + i, im->width) * c;
	/* PIL reuses the previous row's value below the image: the same
	 * as reading the previous row again */
	rows[0] = row_of(im, clampi(y, im->height));
	for (int i = 1; i < 4; i++)
		rows[i] = y + i >= 0 && y + i < im->height ? row_of(im, y + i) :
							     rows[i - 1];
	for (int b = 0; b < c; b++) {
		double r = cubic(cubic_row(rows[0], xs, b, dx),
				 cubic_row(rows[1], xs, b, dx),
				 cubic_row(rows[2], xs, b, dx),
				 cubic_row(rows[3], xs, b, dx), dy);
		out[b] = r <= 0.0 ? 0 : r >= 255.0 ? 255 : (unsigned char)r;
	}
	return 1;
}

typedef int (*filter_fn)(const rfb_image *im, double xin, double yin,
			 unsigned char *out);

static inline void affine_filtered(const rfb_image *src, rfb_image *dst,
				   const double a[6], filter_fn filter,
				   const unsigned char *fill)
{
	int c = dst->channels;

	for (int y = 0; y < dst->height; y++) {
		unsigned char *out = row_of(dst, y);
		double yin = y + 0.5;

		for (int x = 0; x < dst->width; x++, out += c) {
			double xin = x + 0.5;
			double xo = a[0] * xin + a[1] * yin + a[2];
			double yo = a[3] * xin + a[4] * yin + a[5];
			if (!filter(src, xo, yo, out))
				memcpy(out, fill, (size_t)c);
		}
	}
}

/* Image.transform(size, AFFINE, a, resample, fillcolor=fill). */
static void pil_affine(const rfb_image *src, rfb_image *dst, const double a[6],
		       enum rfb_interp interp, const unsigned char *fill)
{
	if (interp == RFB_INTERP_NEAREST)
		affine_nearest(src, dst, a, fill);
	else if (interp == RFB_INTERP_BILINEAR)
		affine_filtered(src, dst, a, bilinear_px, fill);
	else
		affine_filtered(src, dst, a, bicubic_px, fill);
}

/* ---- transposes (Image.rotate's 90/180/270 shortcuts) ---- */

#define TILE 16 /* pixels: square tiles keep both images in cache */

/* Source pixel of output (x, r) for quarter 1 = ROTATE_90 (counter-
 * clockwise) or 3 = ROTATE_270 of a square image of side n. */
static const unsigned char *quarter_src(const rfb_image *src, int quarter,
					int x, int r)
{
	int n = src->width;
	return quarter == 1 ? rfb_image_px(src, n - 1 - r, x) :
			      rfb_image_px(src, r, n - 1 - x);
}

/* One tile of a quarter turn; c is a constant in each instance. */
static inline void quarter_tile(const rfb_image *src, rfb_image *dst,
				int quarter, int x0, int r0, int c)
{
	int n = src->width;
	int x1 = x0 + TILE < n ? x0 + TILE : n, r1 = r0 + TILE < n ? r0 + TILE : n;
	/* along an output row the source steps one row down (90) or up */
	ptrdiff_t step = quarter == 1 ? (ptrdiff_t)src->stride :
					-(ptrdiff_t)src->stride;

	for (int r = r0; r < r1; r++) {
		unsigned char *out = row_of(dst, r) + (size_t)x0 * c;
		const unsigned char *p = quarter_src(src, quarter, x0, r);
		for (int x = x0; x < x1; x++, out += c, p += step)
			for (int b = 0; b < c; b++)
				out[b] = p[b];
	}
}

/* ROTATE_90 / ROTATE_270 of a square image. */
static void pil_quarter_turn(const rfb_image *src, rfb_image *dst, int quarter)
{
	int n = src->width;

	for (int r0 = 0; r0 < n; r0 += TILE)
		for (int x0 = 0; x0 < n; x0 += TILE) {
			if (src->channels == 1)
				quarter_tile(src, dst, quarter, x0, r0, 1);
			else
				quarter_tile(src, dst, quarter, x0, r0, 3);
		}
}

/* ROTATE_180: every row reversed into the mirrored row. */
static void pil_rotate180(const rfb_image *src, rfb_image *dst)
{
	int w = src->width, h = src->height;

	for (int y = 0; y < h; y++) {
		const unsigned char *in = row_of(src, h - 1 - y);
		unsigned char *out = row_of(dst, y);
		if (src->channels == 1) {
			for (int x = 0; x < w; x++)
				out[x] = in[w - 1 - x];
			continue;
		}
		for (int x = 0; x < w; x++) {
			const unsigned char *p = in + (size_t)(w - 1 - x) * 3;
			out[3 * x] = p[0];
			out[3 * x + 1] = p[1];
			out[3 * x + 2] = p[2];
		}
	}
}

/* ---- the ops ---- */

void rfb_ops_shear(const rfb_image *src, rfb_image *dst, double shear_x,
		   double shear_y, enum rfb_interp interp,
		   const unsigned char *fill)
{
	/* _apply_op: shear = degrees(atan(magnitude)), center = [0, 0] */
	double center[2] = { 0.0, 0.0 }, translate[2] = { 0.0, 0.0 };
	double shear[2] = { py_degrees(atan(shear_x)), py_degrees(atan(shear_y)) };
	double m[6];

	tv_inverse_affine(center, 0.0, translate, shear, m);
	pil_affine(src, dst, m, interp, fill);
}

void rfb_ops_translate(const rfb_image *src, rfb_image *dst, double tx,
		       double ty, enum rfb_interp interp,
		       const unsigned char *fill)
{
	/* _apply_op passes int(magnitude); beyond the image every shift
	 * gives the same all-fill result, so clamp before converting */
	double lim = (double)(src->width > src->height ? src->width : src->height) + 1;
	double center[2] = { src->width * 0.5, src->height * 0.5 };
	double translate[2] = { trunc(fmax(-lim, fmin(lim, tx))),
				trunc(fmax(-lim, fmin(lim, ty))) };
	double shear[2] = { 0.0, 0.0 };
	double m[6];

	tv_inverse_affine(center, 0.0, translate, shear, m);
	pil_affine(src, dst, m, interp, fill);
}

void rfb_ops_rotate(const rfb_image *src, rfb_image *dst, double degrees,
		    enum rfb_interp interp, const unsigned char *fill)
{
	double angle = py_mod360(degrees), m[6];

	/* Image.rotate's shortcuts, whatever the filter */
	if (angle == 0.0) {
		rfb_image_copy(dst, src);
		return;
	}
	if (angle == 180.0) {
		pil_rotate180(src, dst);
		return;
	}
	if ((angle == 90.0 || angle == 270.0) && src->width == src->height) {
		pil_quarter_turn(src, dst, angle == 90.0 ? 1 : 3);
		return;
	}
	pil_rotate_matrix(src->width, src->height, angle, m);
	pil_affine(src, dst, m, interp, fill);
}
