/*
 * ops_affine.c - PIL 9.4's Geometry.c: Image.transform(AFFINE) and the
 * transposes of Image.rotate, bit for bit (ops_geometry.c computes the
 * matrices torchvision passes).
 *
 * For NEAREST PIL picks one of three engines, and the choice matters for
 * the exact result: a pure scale/translate matrix goes through
 * ImagingScaleAffine (double accumulation), anything else whose corners
 * fit in 16.16 fixed point through affine_fixed (integer accumulation),
 * the rest through a double-accumulating loop.  BILINEAR and BICUBIC
 * evaluate the matrix per pixel (ImagingGenericTransform).  The
 * fixed-point engine solves the range of valid x of a row in closed form
 * so that its inner loop is a branch-free gather.  The NEAREST engines
 * also compute windows of their result (rfbi_ops_affine with places) and
 * the source window a result window reads (rfbi_ops_affine_need).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops_internal.h"

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

/*
 * Every NEAREST engine below computes a window of the transformed image:
 * the output dst is the part of the full_w x full_h result at (dx, dy),
 * read from src, the part of the input at (sx, sy), which must contain
 * every source pixel those outputs read (rfbi_ops_geometry_need).  The
 * whole-image op is the frame with all offsets 0.  Coordinates are those
 * of the full images, so every pixel gets PIL's value.
 */
struct frame {
	int sx, sy, dx, dy;
	int full_w, full_h;   /* the full input (the engines' source limits) */
	int out_w, out_h;     /* the full output (the same, but for Image.rotate
			       * with expand) */
};

/* Source pixel (x, y) of the full image in the window src. */
static const unsigned char *frame_px(const rfb_image *src, const struct frame *f,
				     int x, int y)
{
	return rfb_image_px(src, x - f->sx, y - f->sy);
}

static void fixed_matrix(const double a[6], int64_t k[6])
{
	k[0] = pil_fix(a[0]);
	k[1] = pil_fix(a[1]);
	k[3] = pil_fix(a[3]);
	k[4] = pil_fix(a[4]);
	k[2] = pil_fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
	k[5] = pil_fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
}

static void nearest_fixed(const rfb_image *src, rfb_image *dst,
			  const double a[6], const unsigned char *fill,
			  const struct frame *f)
{
	int64_t k[6];
	int64_t xlimit = (int64_t)f->full_w << 16;
	int64_t ylimit = (int64_t)f->full_h << 16;

	fixed_matrix(a, k);
	for (int y = 0; y < dst->height; y++) {
		unsigned char *out = row_of(dst, y);
		int64_t yf = f->dy + y;
		int64_t xx = k[2] + yf * k[1] + f->dx * k[0];
		int64_t yy = k[5] + yf * k[4] + f->dx * k[3];
		int64_t lo = 0, hi = dst->width;

		/* the pixels that land inside the image form one interval */
		clip_span(xx, k[0], xlimit, &lo, &hi);
		clip_span(yy, k[3], ylimit, &lo, &hi);
		if (lo >= hi) /* empty: lo may lie beyond the row */
			lo = hi = 0;
		fill_span(out, 0, (int)lo, dst->channels, fill);
		/* whole pixels of offset keep the fractions (and the runs) */
		xx -= (int64_t)f->sx << 16;
		yy -= (int64_t)f->sy << 16;
		if (k[0] == 65536)
			copy_runs_fixed(src, out, lo, hi, xx, yy, k[3]);
		else
			gather_fixed(src, out, lo, hi, xx, yy, k[0], k[3]);
		fill_span(out, (int)hi, dst->width, dst->channels, fill);
	}
}

/* ---- NEAREST engine 2: ImagingScaleAffine (a[1] == a[3] == 0) ---- */

#define SCALE_CHUNK 512

/* ScaleAffine's source coordinate of every output column (row) from 0
 * to first + n: accumulated, as PIL does, from the first; kept for
 * [first, first + n). */
static void scale_coords(double start, double step, int first, int n,
			 int size, int *out)
{
	double v = start;

	for (int i = 0; i < first; i++)
		v += step;
	for (int i = 0; i < n; i++, v += step)
		out[i] = pil_coord(v, size);
}

static void nearest_scale(const rfb_image *src, rfb_image *dst,
			  const double a[6], const unsigned char *fill,
			  const struct frame *f)
{
	int c = dst->channels;
	int xin[SCALE_CHUNK], yin[SCALE_CHUNK];

	/* PIL tabulates every column's source once; a chunk at a time
	 * keeps the tables on the stack, same accumulation order */
	for (int x0 = 0; x0 < dst->width; x0 += SCALE_CHUNK) {
		int n = dst->width - x0 < SCALE_CHUNK ? dst->width - x0 : SCALE_CHUNK;

		scale_coords(a[2] + a[0] * 0.5, a[0], f->dx + x0, n, f->full_w, xin);
		for (int y0 = 0; y0 < dst->height; y0 += SCALE_CHUNK) {
			int m = dst->height - y0 < SCALE_CHUNK ? dst->height - y0
								: SCALE_CHUNK;
			scale_coords(a[5] + a[4] * 0.5, a[4], f->dy + y0, m,
				     f->full_h, yin);
			for (int y = 0; y < m; y++) {
				unsigned char *out = row_of(dst, y0 + y) + (size_t)x0 * c;
				for (int i = 0; i < n; i++) {
					const unsigned char *p = yin[y] < 0 || xin[i] < 0 ?
						fill : frame_px(src, f, xin[i], yin[y]);
					memcpy(out + (size_t)i * c, p, (size_t)c);
				}
			}
		}
	}
}

/* Whole-pixel shift (translate): ScaleAffine's result when a = (1, 0, -tx,
 * 0, 1, -ty) with integer tx, ty, where every addition is exact. */
static void nearest_shift(const rfb_image *src, rfb_image *dst, int tx, int ty,
			  const unsigned char *fill, const struct frame *f)
{
	int c = dst->channels, w = dst->width;
	/* output columns x (full x = dx + x) read x + dx - tx, inside
	 * [0, full_w) for x in [lo, hi) */
	int lo = tx - f->dx > 0 ? tx - f->dx : 0;
	int hi = f->full_w + tx - f->dx < w ? f->full_w + tx - f->dx : w;

	if (hi < lo)
		hi = lo = 0;
	for (int y = 0; y < dst->height; y++) {
		unsigned char *out = row_of(dst, y);
		int sy = f->dy + y - ty;

		if (sy < 0 || sy >= f->full_h || hi == lo) {
			fill_span(out, 0, w, c, fill);
			continue;
		}
		fill_span(out, 0, lo, c, fill);
		memcpy(out + (size_t)lo * c, frame_px(src, f, f->dx + lo - tx, sy),
		       (size_t)(hi - lo) * c);
		fill_span(out, hi, w, c, fill);
	}
}

/* ---- NEAREST engine 3: ImagingTransformAffine's double loop ---- */

static void nearest_double(const rfb_image *src, rfb_image *dst,
			   const double a[6], const unsigned char *fill,
			   const struct frame *f)
{
	int c = dst->channels;
	double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
	double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;

	/* the same additions as from the full image's first row and
	 * column */
	for (int y = 0; y < f->dy; y++, xo += a[1], yo += a[4])
		;
	for (int y = 0; y < dst->height; y++, xo += a[1], yo += a[4]) {
		unsigned char *out = row_of(dst, y);
		double xx = xo, yy = yo;

		for (int x = 0; x < f->dx; x++, xx += a[0], yy += a[3])
			;
		for (int x = 0; x < dst->width; x++, xx += a[0], yy += a[3]) {
			int xi = pil_coord(xx, f->full_w);
			int yi = xi < 0 ? -1 : pil_coord(yy, f->full_h);
			const unsigned char *p = yi < 0 ? fill : frame_px(src, f, xi, yi);
			memcpy(out + (size_t)x * c, p, (size_t)c);
		}
	}
}

enum nearest_engine { ENGINE_SHIFT, ENGINE_SCALE, ENGINE_FIXED, ENGINE_DOUBLE };

/* The engine PIL uses for matrix a on a w x h output. */
static enum nearest_engine nearest_engine(const double a[6], int w, int h)
{
	if (a[1] == 0 && a[3] == 0) {
		/* whole-pixel shift: every addition of ScaleAffine is exact,
		 * so copying row spans gives its result */
		if (a[0] == 1.0 && a[4] == 1.0 && fabs(a[2]) < 1e9 &&
		    fabs(a[5]) < 1e9 && a[2] == floor(a[2]) &&
		    a[5] == floor(a[5]))
			return ENGINE_SHIFT;
		return ENGINE_SCALE;
	}
	if (fits_fixed(a, 0, 0) && fits_fixed(a, w, h) && fits_fixed(a, 0, h) &&
	    fits_fixed(a, w, 0))
		return ENGINE_FIXED;
	return ENGINE_DOUBLE;
}

static void affine_nearest(const rfb_image *src, rfb_image *dst,
			   const double a[6], const unsigned char *fill,
			   const struct frame *f)
{
	switch (nearest_engine(a, f->out_w, f->out_h)) {
	case ENGINE_SHIFT:
		nearest_shift(src, dst, (int)-a[2], (int)-a[5], fill, f);
		break;
	case ENGINE_SCALE:
		nearest_scale(src, dst, a, fill, f);
		break;
	case ENGINE_FIXED:
		nearest_fixed(src, dst, a, fill, f);
		break;
	case ENGINE_DOUBLE:
		nearest_double(src, dst, a, fill, f);
		break;
	}
}

/* ---- the source window a NEAREST output window reads ---- */

static void bound(int64_t v, int64_t *lo, int64_t *hi)
{
	*lo = v < *lo ? v : *lo;
	*hi = v > *hi ? v : *hi;
}

/* Columns [*lo, *hi] (inclusive) of a ScaleAffine axis read by outputs
 * [first, first + n); *lo > *hi when none. */
static void scale_bounds(double start, double step, int first, int n, int size,
			 int64_t *lo, int64_t *hi)
{
	int coord[SCALE_CHUNK];

	*lo = INT64_MAX;
	*hi = INT64_MIN;
	for (int i = 0; i < n; i += SCALE_CHUNK) {
		int m = n - i < SCALE_CHUNK ? n - i : SCALE_CHUNK;
		scale_coords(start, step, first + i, m, size, coord);
		for (int j = 0; j < m; j++)
			if (coord[j] >= 0)
				bound(coord[j], lo, hi);
	}
}

/* Bounding box (inclusive, unclipped) of the source pixels the output
 * rectangle r maps to under a with engine e. */
static void nearest_bounds(const double a[6], enum nearest_engine e, int fw,
			   int fh, const struct rfb_rect *r, int64_t b[4])
{
	int64_t x0 = r->left, x1 = r->left + r->width - 1;
	int64_t y0 = r->top, y1 = r->top + r->height - 1, k[6];

	b[0] = b[1] = INT64_MAX;
	b[2] = b[3] = INT64_MIN;
	if (e == ENGINE_SHIFT) {
		b[0] = x0 + (int64_t)a[2], b[2] = x1 + (int64_t)a[2];
		b[1] = y0 + (int64_t)a[5], b[3] = y1 + (int64_t)a[5];
	} else if (e == ENGINE_SCALE) {
		scale_bounds(a[2] + a[0] * 0.5, a[0], r->left, r->width, fw, &b[0], &b[2]);
		scale_bounds(a[5] + a[4] * 0.5, a[4], r->top, r->height, fh, &b[1], &b[3]);
	} else if (e == ENGINE_FIXED) {
		/* floor of an affine map: extremes at the corners, exactly */
		fixed_matrix(a, k);
		for (int i = 0; i < 4; i++) {
			int64_t x = i & 1 ? x1 : x0, y = i & 2 ? y1 : y0;
			bound((k[2] + y * k[1] + x * k[0]) >> 16, &b[0], &b[2]);
			bound((k[5] + y * k[4] + x * k[3]) >> 16, &b[1], &b[3]);
		}
	} else {
		/* accumulated doubles stay within far less than a pixel of
		 * the exact map: two pixels of margin */
		for (int i = 0; i < 4; i++) {
			double x = (i & 1 ? x1 : x0) + 0.5, y = (i & 2 ? y1 : y0) + 0.5;
			double u = a[0] * x + a[1] * y + a[2], v = a[3] * x + a[4] * y + a[5];
			bound((int64_t)floor(fmax(-1e9, fmin(1e9, u))) - 2, &b[0], &b[2]);
			bound((int64_t)floor(fmax(-1e9, fmin(1e9, u))) + 2, &b[0], &b[2]);
			bound((int64_t)floor(fmax(-1e9, fmin(1e9, v))) - 2, &b[1], &b[3]);
			bound((int64_t)floor(fmax(-1e9, fmin(1e9, v))) + 2, &b[1], &b[3]);
		}
	}
}

void rfbi_ops_affine_need(const double a[6], int full_w, int full_h,
			  const struct rfb_rect *out, struct rfb_rect *need)
{
	int64_t b[4];

	nearest_bounds(a, nearest_engine(a, full_w, full_h), full_w, full_h,
		       out, b);
	/* only pixels inside the image are read */
	b[0] = b[0] < 0 ? 0 : b[0];
	b[1] = b[1] < 0 ? 0 : b[1];
	b[2] = b[2] > full_w - 1 ? full_w - 1 : b[2];
	b[3] = b[3] > full_h - 1 ? full_h - 1 : b[3];
	if (b[0] > b[2] || b[1] > b[3]) /* all fill: any one pixel will do */
		b[0] = b[1] = b[2] = b[3] = 0;
	need->left = (int)b[0];
	need->top = (int)b[1];
	need->width = (int)(b[2] - b[0] + 1);
	need->height = (int)(b[3] - b[1] + 1);
}

/* ---- BILINEAR and BICUBIC: ImagingGenericTransform's filters ---- */

static int clampi(int v, int size)
{
	return v < 0 ? 0 : v < size ? v : size - 1;
}

/* Where PIL's filters sample (xin, yin): the pixel (*x, *y) above and
 * left of the point and the fractions (*dx, *dy) past it; 0 if the
 * point is outside im. */
static int sample_at(const rfb_image *im, double xin, double yin, int *x,
		     int *y, double *dx, double *dy)
{
	if (xin < 0.0 || xin >= im->width || yin < 0.0 || yin >= im->height)
		return 0;
	xin -= 0.5;
	yin -= 0.5;
	*x = pil_floor(xin);
	*y = pil_floor(yin);
	*dx = xin - *x;
	*dy = yin - *y;
	return 1;
}

/* bilinear_filter8/32RGB: 0 if (xin, yin) is outside src. */
static int bilinear_px(const rfb_image *im, double xin, double yin,
		       unsigned char *out)
{
	int c = im->channels, x, y, x0, x1;
	const unsigned char *r0, *r1;
	double dx, dy;

	if (!sample_at(im, xin, yin, &x, &y, &dx, &dy))
		return 0;
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

	if (!sample_at(im, xin, yin, &x, &y, &dx, &dy))
		return 0;
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

void rfbi_ops_affine(const rfb_image *src, const struct rfb_place *sp,
		     rfb_image *dst, const struct rfb_place *dp, const double a[6],
		     enum rfb_interp interp, const unsigned char *fill)
{
	struct frame f = { sp->x, sp->y, dp->x, dp->y, sp->full_w, sp->full_h,
			   dp->full_w, dp->full_h };

	if (interp == RFB_INTERP_NEAREST)
		affine_nearest(src, dst, a, fill, &f);
	else if (interp == RFB_INTERP_BILINEAR)
		affine_filtered(src, dst, a, bilinear_px, fill);
	else
		affine_filtered(src, dst, a, bicubic_px, fill);
}

/* nearest_filter8/32 of ImagingGenericTransform: COORD() truncation. */
static int nearest_px(const rfb_image *im, double xin, double yin,
		      unsigned char *out)
{
	int x, y;

	if (!(xin >= 0.0 && xin < im->width && yin >= 0.0 && yin < im->height))
		return 0;
	x = (int)xin;
	y = (int)yin;
	memcpy(out, rfb_image_px(im, x, y), (size_t)im->channels);
	return 1;
}

void rfbi_ops_perspective(const rfb_image *src, rfb_image *dst,
			  const double a[8], enum rfb_interp interp,
			  const unsigned char *fill)
{
	filter_fn filter = interp == RFB_INTERP_NEAREST ? nearest_px :
			   interp == RFB_INTERP_BILINEAR ? bilinear_px : bicubic_px;
	int c = dst->channels;

	for (int y = 0; y < dst->height; y++) {
		unsigned char *out = row_of(dst, y);
		double yin = y + 0.5;

		for (int x = 0; x < dst->width; x++, out += c) {
			/* Geometry.c perspective_transform */
			double xin = x + 0.5;
			double d = a[6] * xin + a[7] * yin + 1;
			double xo = (a[0] * xin + a[1] * yin + a[2]) / d;
			double yo = (a[3] * xin + a[4] * yin + a[5]) / d;
			/* beyond the plane's horizon: PIL reads garbage */
			if (!isfinite(xo) || !isfinite(yo) ||
			    !filter(src, xo, yo, out))
				memcpy(out, fill, (size_t)c);
		}
	}
}

/* ---- transposes (Image.rotate's 90/180/270 shortcuts) ---- */

#define TILE 16 /* pixels: square tiles keep both images in cache */

/* Source pixel of output (x, r) for quarter 1 = ROTATE_90 (counter-
 * clockwise) or 3 = ROTATE_270 (the output is src transposed in size). */
static const unsigned char *quarter_src(const rfb_image *src, int quarter,
					int x, int r)
{
	return quarter == 1 ? rfb_image_px(src, src->width - 1 - r, x) :
			      rfb_image_px(src, r, src->height - 1 - x);
}

/* One tile of a quarter turn; c is a constant in each instance. */
static inline void quarter_tile(const rfb_image *src, rfb_image *dst,
				int quarter, int x0, int r0, int c)
{
	int w = dst->width, h = dst->height;
	int x1 = x0 + TILE < w ? x0 + TILE : w, r1 = r0 + TILE < h ? r0 + TILE : h;
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

/* ROTATE_90 / ROTATE_270: dst is src->height x src->width. */
void rfbi_ops_quarter_turn(const rfb_image *src, rfb_image *dst, int quarter)
{
	for (int r0 = 0; r0 < dst->height; r0 += TILE)
		for (int x0 = 0; x0 < dst->width; x0 += TILE) {
			if (src->channels == 1)
				quarter_tile(src, dst, quarter, x0, r0, 1);
			else
				quarter_tile(src, dst, quarter, x0, r0, 3);
		}
}

/* ROTATE_180: every row reversed into the mirrored row. */
void rfbi_ops_rotate180(const rfb_image *src, rfb_image *dst)
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
