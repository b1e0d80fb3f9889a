/*
 * ops_tensor.c - the augment ops as torchvision 0.14 computes them on a
 * uint8 tensor (functional_tensor.py), which AugMix uses even on a PIL
 * image (augmix.h): the enhance ops are torch's _blend in float32,
 * truncated by .to(uint8); AutoContrast truncates too; the geometry is
 * torch 1.13's CPU grid_sample (align_corners=False, zeros padding,
 * fill blended through a sampled mask, rounded half to even).  Each
 * float32 operation is written as its own rounding, in torch's order
 * (the build does not contract a * b + c: -std=c11).
 */
#include <math.h>
#include <string.h>

#include "refurb/ops.h"

/* Round half to even and floor, for |v| < 2^22, without a libm call
 * (nearbyintf and floorf are calls on baseline x86-64): adding and
 * subtracting 1.5 * 2^23 rounds in the default rounding mode. */
static inline float round_even(float v)
{
	const float magic = 12582912.0f;

	return (v + magic) - magic;
}

static inline int floor_int(float v)
{
	int i = (int)v; /* toward zero */

	return (float)i > v ? i - 1 : i;
}

static unsigned char trunc8(float v)
{
	/* .clamp(0, 255).to(uint8) */
	return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (unsigned char)v;
}

static unsigned char round8(float v)
{
	/* torch.round (half to even), then .to(uint8) */
	v = round_even(v);
	return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (unsigned char)v;
}

/* ---- the geometry: F.affine / F.rotate on a tensor ---- */

/* torchvision's _get_inverse_affine_matrix (functional.py), in double. */
static void inverse_affine(const double center[2], double angle,
			   const double translate[2], double scale,
			   const double shear[2], double m[6])
{
	double rot = angle * M_PI / 180.0;
	double sx = shear[0] * M_PI / 180.0, sy = shear[1] * M_PI / 180.0;
	double cx = center[0], cy = center[1], tx = translate[0], ty = translate[1];
	double a = cos(rot - sy) / cos(sy);
	double b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
	double c = sin(rot - sy) / cos(sy);
	double d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);

	m[0] = d / scale;
	m[1] = -b / scale;
	m[2] = 0.0 / scale;
	m[3] = -c / scale;
	m[4] = a / scale;
	m[5] = 0.0 / scale;
	m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
	m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
	m[2] += cx;
	m[5] += cy;
}

/* The grid of _gen_affine_grid and its unnormalisation in grid_sample:
 * the source position (ix, iy) of output pixel (x, y). */
struct grid {
	float r[3][2];          /* theta^T / [w / 2, h / 2] */
	float sw, sh;           /* size / 2 */
	int w, h;
};

static void grid_init(struct grid *g, const double m[6], int w, int h)
{
	float hw = (float)(0.5 * w), hh = (float)(0.5 * h);

	for (int k = 0; k < 3; k++) {
		g->r[k][0] = (float)m[k] / hw;
		g->r[k][1] = (float)m[3 + k] / hh;
	}
	g->sw = (float)w / 2.0f;
	g->sh = (float)h / 2.0f;
	g->w = w;
	g->h = h;
}

static void grid_at(const struct grid *g, int x, int y, float *ix, float *iy)
{
	/* base grid: linspace(-w/2 + 0.5, w/2 - 0.5), exact half integers */
	float bx = (float)(-g->w * 0.5 + 0.5) + (float)x;
	float by = (float)(-g->h * 0.5 + 0.5) + (float)y;
	/* bmm (a BLAS sgemm of depth 3), in float32, in order */
	float gx = bx * g->r[0][0], gy = bx * g->r[0][1];

	gx = gx + by * g->r[1][0];
	gy = gy + by * g->r[1][1];
	gx = gx + g->r[2][0];
	gy = gy + g->r[2][1];
	float tx = gx + 1.0f, ty = gy + 1.0f;

	/* GridSamplerKernel's unnormalize, align_corners=False */
	tx = tx * g->sw;
	ty = ty * g->sh;
	*ix = tx - 0.5f;
	*iy = ty - 0.5f;
}

/* Source positions beyond this are outside any image and too large for
 * the rounding helpers: clamped (still outside). */
#define FAR 4.0e6f

static inline float clampf(float v)
{
	return v < -FAR ? -FAR : v > FAR ? FAR : v;
}

static void sample_nearest(const rfb_image *src, const struct grid *g, int x,
			   int y, const unsigned char *fill, unsigned char *out)
{
	int c = src->channels, xi, yi;
	float ix, iy;

	grid_at(g, x, y, &ix, &iy);
	xi = (int)round_even(clampf(ix));
	yi = (int)round_even(clampf(iy));
	if (xi >= 0 && xi < src->width && yi >= 0 && yi < src->height) {
		const unsigned char *p = rfb_image_px(src, xi, yi);
		for (int b = 0; b < c; b++)
			out[b] = p[b];
		return;
	}
	for (int b = 0; b < c; b++)
		out[b] = fill ? fill[b] : 0;
}

static void sample_bilinear(const rfb_image *src, const struct grid *g, int x,
			    int y, const unsigned char *fill, unsigned char *out)
{
	int c = src->channels, x0, y0;
	float ix, iy, fx, fy, e, s, wt[4], mask = 0.0f;
	const unsigned char *px[4] = { NULL, NULL, NULL, NULL };

	grid_at(g, x, y, &ix, &iy);
	ix = clampf(ix);
	iy = clampf(iy);
	x0 = floor_int(ix);
	y0 = floor_int(iy);
	fx = ix - (float)x0; /* w: distance to the west side */
	fy = iy - (float)y0; /* n */
	e = 1.0f - fx;
	s = 1.0f - fy;
	wt[0] = s * e;   /* nw */
	wt[1] = s * fx;  /* ne */
	wt[2] = fy * e;  /* sw */
	wt[3] = fy * fx; /* se */
	if (x0 >= 0 && x0 + 1 < src->width && y0 >= 0 && y0 + 1 < src->height) {
		/* inside: the mask is 1 - (1 - 1) * fill, the image itself */
		const unsigned char *p = rfb_image_px(src, x0, y0);
		const unsigned char *q = p + src->stride;
		for (int b = 0; b < c; b++) {
			float v = (float)p[b] * wt[0], t = (float)p[b + c] * wt[1];
			v = v + t;
			t = (float)q[b] * wt[2];
			v = v + t;
			t = (float)q[b + c] * wt[3];
			v = v + t;
			if (fill) {
				float m = wt[0] + wt[1];
				m = m + wt[2];
				m = m + wt[3];
				float keep = v * m, add = (1.0f - m) * (float)fill[b];
				v = keep + add;
			}
			out[b] = round8(v);
		}
		return;
	}
	for (int k = 0; k < 4; k++) {
		int xx = x0 + (k & 1), yy = y0 + (k >> 1);
		if (xx >= 0 && xx < src->width && yy >= 0 && yy < src->height)
			px[k] = rfb_image_px(src, xx, yy);
	}
	if (fill) /* the ones channel, sampled the same way */
		for (int k = 0; k < 4; k++)
			mask = k == 0 ? (px[0] ? wt[0] : 0.0f)
				      : mask + (px[k] ? wt[k] : 0.0f);
	for (int b = 0; b < c; b++) {
		float v = 0.0f;
		for (int k = 0; k < 4; k++) {
			float t = px[k] ? (float)px[k][b] * wt[k] : 0.0f;
			v = k == 0 ? t : v + t;
		}
		if (fill) {
			float keep = v * mask, add = (1.0f - mask) * (float)fill[b];
			v = keep + add;
		}
		out[b] = round8(v);
	}
}

/*
 * Four output pixels at a time (GCC's vector extensions, SSE2 on
 * x86-64): the same float32 operations as grid_at and sample_*, lane by
 * lane, so the bytes are those of the scalar code, which does the
 * row's tail.
 */
typedef float v4f __attribute__((vector_size(16)));

/* (float)v for a byte, without a conversion instruction */
#define F4(i) (float)(i), (float)(i + 1), (float)(i + 2), (float)(i + 3)
#define F16(i) F4(i), F4(i + 4), F4(i + 8), F4(i + 12)
#define F64(i) F16(i), F16(i + 16), F16(i + 32), F16(i + 48)
static const float tofloat[256] = { F64(0), F64(64), F64(128), F64(192) };
typedef int v4i __attribute__((vector_size(16)));
typedef unsigned char v4u8 __attribute__((vector_size(4)));

static inline v4f v4_splat(float v)
{
	return (v4f){ v, v, v, v };
}

/* mask ? a : b, for masks of all ones or zeros */
static inline v4f v4_select(v4i mask, v4f a, v4f b)
{
	return (v4f)(((v4i)a & mask) | ((v4i)b & ~mask));
}

static inline v4f v4_round_even(v4f v)
{
	const v4f magic = v4_splat(12582912.0f);

	return (v + magic) - magic;
}

static inline v4f v4_clamp(v4f v, float lo, float hi)
{
	v = v4_select(v < v4_splat(lo), v4_splat(lo), v);
	return v4_select(v > v4_splat(hi), v4_splat(hi), v);
}

/* The source positions of pixels x .. x + 3 of row y. */
static void grid_at4(const struct grid *g, int x, float by_r10, float by_r11,
		     v4f *ix, v4f *iy)
{
	float b0 = (float)(-g->w * 0.5 + 0.5);
	v4f bx = v4_splat(b0) + (v4f){ (float)x, (float)(x + 1), (float)(x + 2),
				       (float)(x + 3) };
	v4f gx = bx * v4_splat(g->r[0][0]), gy = bx * v4_splat(g->r[0][1]);

	gx = gx + v4_splat(by_r10);
	gy = gy + v4_splat(by_r11);
	gx = gx + v4_splat(g->r[2][0]);
	gy = gy + v4_splat(g->r[2][1]);
	gx = gx + v4_splat(1.0f);
	gy = gy + v4_splat(1.0f);
	gx = gx * v4_splat(g->sw);
	gy = gy * v4_splat(g->sh);
	*ix = v4_clamp(gx - v4_splat(0.5f), -FAR, FAR);
	*iy = v4_clamp(gy - v4_splat(0.5f), -FAR, FAR);
}

static inline v4i v4_inside(v4i xi, v4i yi, int w, int h)
{
	v4i zero = { 0, 0, 0, 0 };

	return (xi >= zero) & (xi < (v4i){ w, w, w, w }) & (yi >= zero) &
	       (yi < (v4i){ h, h, h, h });
}

static void nearest4(const rfb_image *src, const struct grid *g, int x,
		     float by_r10, float by_r11, const unsigned char *fill,
		     unsigned char *out)
{
	int c = src->channels;
	v4f ix, iy;
	v4i xi, yi, in;

	grid_at4(g, x, by_r10, by_r11, &ix, &iy);
	xi = __builtin_convertvector(v4_round_even(ix), v4i);
	yi = __builtin_convertvector(v4_round_even(iy), v4i);
	in = v4_inside(xi, yi, src->width, src->height);
	for (int k = 0; k < 4; k++, out += c) {
		if (in[k]) {
			const unsigned char *p = rfb_image_px(src, xi[k], yi[k]);
			for (int b = 0; b < c; b++)
				out[b] = p[b];
		} else {
			for (int b = 0; b < c; b++)
				out[b] = fill ? fill[b] : 0;
		}
	}
}

static void bilinear4(const rfb_image *src, const struct grid *g, int x,
		      float by_r10, float by_r11, const unsigned char *fill,
		      unsigned char *out)
{
	int c = src->channels;
	v4f ix, iy, fx, fy, e, s, wt[4], mask = v4_splat(0.0f);
	v4i x0, y0, ok[4], off[4];

	grid_at4(g, x, by_r10, by_r11, &ix, &iy);
	x0 = __builtin_convertvector(ix, v4i);
	y0 = __builtin_convertvector(iy, v4i);
	x0 += (v4i)(__builtin_convertvector(x0, v4f) > ix); /* floor: -1 */
	y0 += (v4i)(__builtin_convertvector(y0, v4f) > iy);
	fx = ix - __builtin_convertvector(x0, v4f);
	fy = iy - __builtin_convertvector(y0, v4f);
	e = v4_splat(1.0f) - fx;
	s = v4_splat(1.0f) - fy;
	wt[0] = s * e;
	wt[1] = s * fx;
	wt[2] = fy * e;
	wt[3] = fy * fx;
	/* the top-left tap's byte offset, from coordinates clamped to
	 * -1 .. size (which changes no tap inside, and cannot overflow):
	 * one multiply (SSE2 has no 32-bit one: it takes several) */
	v4i cx = x0, cy = y0, lo = { -1, -1, -1, -1 };
	v4i wx = { src->width, src->width, src->width, src->width };
	v4i hy = { src->height, src->height, src->height, src->height };
	cx = (cx & ~(cx < lo)) | (lo & (cx < lo));
	cx = (cx & ~(cx > wx)) | (wx & (cx > wx));
	cy = (cy & ~(cy < lo)) | (lo & (cy < lo));
	cy = (cy & ~(cy > hy)) | (hy & (cy > hy));
	v4i base = cy * (int)src->stride + cx * c;
	for (int k = 0; k < 4; k++) {
		v4i xx = x0 + (k & 1), yy = y0 + (k >> 1);
		ok[k] = v4_inside(xx, yy, src->width, src->height);
		/* byte offsets; 0 (any valid pixel) where outside */
		off[k] = (base + ((k & 1) * c + (k >> 1) * (int)src->stride)) & ok[k];
		if (fill) {
			v4f t = (v4f)((v4i)wt[k] & ok[k]); /* 1 * w, or 0 */
			mask = k == 0 ? t : mask + t;
		}
	}
	/* the taps per pixel, scalar: gathers are byte loads anyway */
	int o[4][4], in[4][4];
	float wv[4][4], mv[4];
	for (int k = 0; k < 4; k++) {
		memcpy(o[k], &off[k], sizeof o[k]);
		memcpy(in[k], &ok[k], sizeof in[k]);
		memcpy(wv[k], &wt[k], sizeof wv[k]);
	}
	memcpy(mv, &mask, sizeof mv);
	v4i all = ok[0] & ok[1] & ok[2] & ok[3];
	if (!fill && (all[0] & all[1] & all[2] & all[3])) {
		/* every tap inside: no zeros, no mask */
		for (int j = 0; j < 4; j++, out += c) {
			const unsigned char *p0 = src->data + o[0][j];
			const unsigned char *p1 = src->data + o[1][j];
			const unsigned char *p2 = src->data + o[2][j];
			const unsigned char *p3 = src->data + o[3][j];
			for (int b = 0; b < c; b++) {
				float v = tofloat[p0[b]] * wv[0][j];
				float t1 = tofloat[p1[b]] * wv[1][j];
				float t2 = tofloat[p2[b]] * wv[2][j];
				float t3 = tofloat[p3[b]] * wv[3][j];
				v = v + t1;
				v = v + t2;
				v = v + t3;
				/* a convex mix of bytes: 0 .. 255 (+ rounding) */
				out[b] = (unsigned char)(int)round_even(v);
			}
		}
		return;
	}
	for (int j = 0; j < 4; j++, out += c) {
		const unsigned char *p[4];
		for (int k = 0; k < 4; k++)
			p[k] = in[k][j] ? src->data + o[k][j] : NULL;
		for (int b = 0; b < c; b++) {
			float v = p[0] ? tofloat[p[0][b]] * wv[0][j] : 0.0f, t;
			t = p[1] ? tofloat[p[1][b]] * wv[1][j] : 0.0f;
			v = v + t;
			t = p[2] ? tofloat[p[2][b]] * wv[2][j] : 0.0f;
			v = v + t;
			t = p[3] ? tofloat[p[3][b]] * wv[3][j] : 0.0f;
			v = v + t;
			if (fill) {
				float keep = v * mv[j];
				float add = (1.0f - mv[j]) * tofloat[fill[b]];
				v = keep + add;
			}
			out[b] = round8(v);
		}
	}
}

static void tensor_affine(const rfb_image *src, rfb_image *dst, const double m[6],
			  enum rfb_interp interp, const unsigned char *fill)
{
	int c = src->channels, w = src->width;
	struct grid g;

	grid_init(&g, m, src->width, src->height);
	for (int y = 0; y < src->height; y++) {
		unsigned char *out = rfb_image_px(dst, 0, y);
		float by = (float)(-g.h * 0.5 + 0.5) + (float)y;
		float by_r10 = by * g.r[1][0], by_r11 = by * g.r[1][1];
		int x = 0;
		for (; x + 4 <= w; x += 4, out += 4 * c) {
			if (interp == RFB_INTERP_NEAREST)
				nearest4(src, &g, x, by_r10, by_r11, fill, out);
			else
				bilinear4(src, &g, x, by_r10, by_r11, fill, out);
		}
		for (; x < w; x++, out += c) {
			if (interp == RFB_INTERP_NEAREST)
				sample_nearest(src, &g, x, y, fill, out);
			else
				sample_bilinear(src, &g, x, y, fill, out);
		}
	}
}

/* _apply_op's geometric ops: the matrix F.affine / F.rotate builds. */
static void geometry_matrix(enum rfb_op op, double magnitude, int w, int h,
			    double m[6])
{
	double zero[2] = { 0.0, 0.0 }, shear[2] = { 0.0, 0.0 };
	double center[2] = { 0.0, 0.0 }, translate[2] = { 0.0, 0.0 };
	double angle = 0.0;

	switch (op) {
	case RFB_OP_SHEAR_X:
	case RFB_OP_SHEAR_Y:
		/* center=[0, 0]: the top-left corner, as 1.0 * (c - s * 0.5) */
		center[0] = 1.0 * (0 - w * 0.5);
		center[1] = 1.0 * (0 - h * 0.5);
		shear[op == RFB_OP_SHEAR_Y] = atan(magnitude) * 180.0 / M_PI;
		break;
	case RFB_OP_TRANSLATE_X:
		translate[0] = 1.0 * (int)magnitude;
		break;
	case RFB_OP_TRANSLATE_Y:
		translate[1] = 1.0 * (int)magnitude;
		break;
	default: /* RFB_OP_ROTATE: F.rotate passes -angle */
		angle = -magnitude;
		break;
	}
	inverse_affine(center, angle, op == RFB_OP_ROTATE ? zero : translate, 1.0,
		       shear, m);
}

/* ---- colour ---- */

/* rgb_to_grayscale: (0.2989 * r + 0.587 * g + 0.114 * b).to(uint8) */
static unsigned char gray_of(const unsigned char *p)
{
	float r = 0.2989f * (float)p[0], g = 0.587f * (float)p[1];
	float b = 0.114f * (float)p[2], rg = r + g, sum = rg + b;

	return (unsigned char)sum; /* at most 255 * 0.9999 */
}

/* _blend(img, other, ratio) with a constant other (a zeros image for
 * Brightness, the gray mean for Contrast): (ratio * a + (1 - ratio) *
 * other).clamp(0, 255).to(uint8), four samples at a time. */
static void blend(const rfb_image *src, rfb_image *dst, double ratio,
		  float other)
{
	float r = (float)ratio, q = (float)(1.0 - ratio), qb = q * other;
	const v4f vr = v4_splat(r), vqb = v4_splat(qb);
	size_t row = (size_t)src->width * src->channels;

	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		unsigned char *out = rfb_image_px(dst, 0, y);
		size_t i = 0;
		for (; i + 4 <= row; i += 4) {
			v4u8 b;
			memcpy(&b, in + i, sizeof b);
			v4f v = vr * __builtin_convertvector(b, v4f);
			v = v4_clamp(v + vqb, 0.0f, 255.0f);
			b = __builtin_convertvector(__builtin_convertvector(v, v4i), v4u8);
			memcpy(out + i, &b, sizeof b);
		}
		for (; i < row; i++) {
			float ra = r * (float)in[i];
			out[i] = trunc8(ra + qb);
		}
	}
}

/* The gray image of an RGB src, written into dst's first w * h bytes
 * (dst may then be read as a 1-channel image of src's size). */
static rfb_image gray_into(const rfb_image *src, rfb_image *dst)
{
	rfb_image g = { dst->data, (size_t)src->width, src->width, src->height, 1 };

	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		unsigned char *out = g.data + (size_t)y * g.stride;
		for (int x = 0; x < src->width; x++)
			out[x] = gray_of(in + 3 * x);
	}
	return g;
}

/* torch.mean of a uint8 plane as float32: torch sums float32 pairwise,
 * close to the exact sum; the exact sum rounded is used here. */
static float plane_mean(const rfb_image *g)
{
	double sum = 0.0;

	for (int y = 0; y < g->height; y++) {
		const unsigned char *p = rfb_image_px(g, 0, y);
		for (int x = 0; x < g->width * g->channels; x++)
			sum += p[x];
	}
	return (float)((float)sum / (float)((double)g->width * g->height *
					    g->channels));
}

static void contrast(const rfb_image *src, rfb_image *dst, double factor)
{
	float mean;

	if (src->channels == 3) {
		/* the gray plane goes through dst, overwritten by the blend
		 * only after the mean is known */
		rfb_image g = gray_into(src, dst);
		mean = plane_mean(&g);
	} else {
		mean = plane_mean(src);
	}
	blend(src, dst, factor, mean);
}

static void saturation(const rfb_image *src, rfb_image *dst, double factor)
{
	if (src->channels == 1) {
		rfb_image_copy(dst, src); /* "Match PIL behaviour" */
		return;
	}
	/* the blend of each pixel needs only its own gray value */
	float r = (float)factor, q = (float)(1.0 - factor);
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		unsigned char *out = rfb_image_px(dst, 0, y);
		for (int x = 0; x < src->width; x++, in += 3, out += 3) {
			float gv = (float)gray_of(in), qb = q * gv;
			for (int b = 0; b < 3; b++) {
				float ra = r * (float)in[b];
				out[b] = trunc8(ra + qb);
			}
		}
	}
}

/* _blurred_degenerate_image: conv2d with [[1,1,1],[1,5,1],[1,1,1]] / 13
 * in float32, rounded; the border keeps the image.  Then _blend. */
static void sharpness(const rfb_image *src, rfb_image *dst, double factor)
{
	int w = src->width, h = src->height, c = src->channels;
	float r = (float)factor, q = (float)(1.0 - factor);

	if (w <= 2 || h <= 2) {
		rfb_image_copy(dst, src);
		return;
	}
	for (int y = 0; y < h; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		unsigned char *out = rfb_image_px(dst, 0, y);
		for (int x = 0; x < w; x++)
			for (int b = 0; b < c; b++) {
				float v = (float)in[x * c + b], d = v;
				if (y > 0 && y < h - 1 && x > 0 && x < w - 1) {
					/* torch's float32 sum is within 1e-5 of
					 * s / 13, never within 1/26 of a half:
					 * rounded, it is round(s / 13) */
					const unsigned char *p0 = rfb_image_px(src, x - 1, y - 1) + b;
					const unsigned char *p1 = p0 + src->stride;
					const unsigned char *p2 = p1 + src->stride;
					int sum = p0[0] + p0[c] + p0[2 * c] + p1[0] +
						  5 * p1[c] + p1[2 * c] + p2[0] + p2[c] +
						  p2[2 * c];
					d = (float)((2 * sum + 13) / 26);
				}
				float ra = r * v, qb = q * d;
				out[x * c + b] = trunc8(ra + qb);
			}
	}
}

static void autocontrast(const rfb_image *src, rfb_image *dst)
{
	int c = src->channels;
	float lo[3], scale[3];

	for (int b = 0; b < c; b++) {
		int mn = 255, mx = 0;
		for (int y = 0; y < src->height; y++) {
			const unsigned char *p = rfb_image_px(src, 0, y) + b;
			for (int x = 0; x < src->width; x++) {
				mn = p[x * c] < mn ? p[x * c] : mn;
				mx = p[x * c] > mx ? p[x * c] : mx;
			}
		}
		/* scale = 255 / (max - min); infinite: min 0, scale 1 */
		lo[b] = mx == mn ? 0.0f : (float)mn;
		scale[b] = mx == mn ? 1.0f : 255.0f / (float)(mx - mn);
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		unsigned char *out = rfb_image_px(dst, 0, y);
		for (int x = 0; x < src->width; x++, in += c, out += c)
			for (int b = 0; b < c; b++) {
				float d = (float)in[b] - lo[b];
				out[b] = trunc8(d * scale[b]);
			}
	}
}

/* _scale_channel: torch's equalize, integer arithmetic. */
static void equalize(const rfb_image *src, rfb_image *dst)
{
	int c = src->channels;

	for (int b = 0; b < c; b++) {
		int64_t hist[256] = { 0 }, step = 0, cum = 0, last = -1;
		unsigned char lut[256];
		for (int y = 0; y < src->height; y++) {
			const unsigned char *p = rfb_image_px(src, 0, y) + b;
			for (int x = 0; x < src->width; x++)
				hist[p[x * c]]++;
		}
		/* the sum of the non-zero bins but the last one, // 255 */
		for (int i = 0; i < 256; i++)
			if (hist[i]) {
				if (last >= 0)
					step += hist[last];
				last = i;
			}
		step /= 255;
		for (int i = 0; i < 256; i++) {
			int64_t v = step ? (cum + step / 2) / step : i;
			lut[i] = (unsigned char)(v > 255 ? 255 : v);
			cum += hist[i];
		}
		for (int y = 0; y < src->height; y++) {
			const unsigned char *in = rfb_image_px(src, 0, y) + b;
			unsigned char *out = rfb_image_px(dst, 0, y) + b;
			for (int x = 0; x < src->width; x++)
				out[x * c] = lut[in[x * c]];
		}
	}
}

/* Point ops: dst = lut[src] */
static void point_op(const rfb_image *src, rfb_image *dst,
		     const unsigned char lut[256])
{
	size_t row = (size_t)src->width * src->channels;

	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		unsigned char *out = rfb_image_px(dst, 0, y);
		for (size_t i = 0; i < row; i++)
			out[i] = lut[in[i]];
	}
}

static int check(enum rfb_op op, double magnitude, enum rfb_interp interp,
		 const rfb_image *src, const rfb_image *dst, rfb_err *err)
{
	if (!src || !dst || src->width != dst->width ||
	    src->height != dst->height || src->channels != dst->channels ||
	    (src->channels != 1 && src->channels != 3) || src->width < 1 ||
	    src->height < 1)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "tensor op: images of different shapes or "
				   "not 1 or 3 channels");
	if (op < RFB_OP_IDENTITY || op >= RFB_OP_COUNT || !isfinite(magnitude))
		return rfb_err_set(err, RFB_EINVAL, NULL, "tensor op %d magnitude %g",
				   (int)op, magnitude);
	if (interp != RFB_INTERP_NEAREST && interp != RFB_INTERP_BILINEAR)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "tensor ops interpolate nearest or bilinear only");
	if (op >= RFB_OP_BRIGHTNESS && op <= RFB_OP_SHARPNESS && 1.0 + magnitude < 0)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "%s factor %g is negative", rfb_op_name(op),
				   1.0 + magnitude);
	if (op == RFB_OP_POSTERIZE && (magnitude < 0 || magnitude >= 9))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "Posterize bits %g outside 0..8", magnitude);
	if ((op == RFB_OP_TRANSLATE_X || op == RFB_OP_TRANSLATE_Y) &&
	    fabs(magnitude) > 1e9)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "%s by %g pixels", rfb_op_name(op), magnitude);
	return 0;
}

int rfb_tensor_op_apply(enum rfb_op op, double magnitude, enum rfb_interp interp,
			const unsigned char *fill, const rfb_image *src,
			rfb_image *dst, rfb_err *err)
{
	unsigned char lut[256];
	double m[6];
	int rc = check(op, magnitude, interp, src, dst, err);

	if (rc)
		return rc;
	switch (op) {
	case RFB_OP_SHEAR_X: case RFB_OP_SHEAR_Y: case RFB_OP_TRANSLATE_X:
	case RFB_OP_TRANSLATE_Y: case RFB_OP_ROTATE:
		geometry_matrix(op, magnitude, src->width, src->height, m);
		tensor_affine(src, dst, m, interp, fill);
		return 0;
	case RFB_OP_BRIGHTNESS:
		blend(src, dst, 1.0 + magnitude, 0.0f);
		return 0;
	case RFB_OP_COLOR:
		saturation(src, dst, 1.0 + magnitude);
		return 0;
	case RFB_OP_CONTRAST:
		contrast(src, dst, 1.0 + magnitude);
		return 0;
	case RFB_OP_SHARPNESS:
		sharpness(src, dst, 1.0 + magnitude);
		return 0;
	case RFB_OP_AUTOCONTRAST:
		autocontrast(src, dst);
		return 0;
	case RFB_OP_EQUALIZE:
		equalize(src, dst);
		return 0;
	default:
		break;
	}
	for (int v = 0; v < 256; v++) {
		if (op == RFB_OP_POSTERIZE) /* img & -(2 ** (8 - bits)) */
			lut[v] = (unsigned char)(v & (0xff00 >> (int)magnitude));
		else if (op == RFB_OP_SOLARIZE) /* float32 comparison */
			lut[v] = (float)v >= (float)magnitude ? (unsigned char)(255 - v)
							       : (unsigned char)v;
		else if (op == RFB_OP_INVERT)
			lut[v] = (unsigned char)(255 - v);
		else
			lut[v] = (unsigned char)v;
	}
	point_op(src, dst, lut);
	return 0;
}
