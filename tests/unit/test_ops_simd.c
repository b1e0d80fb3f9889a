/*
 * test_ops_simd.c - the AVX2 op kernels (lib/ops_*_avx2.c) give exactly
 * the bytes of the scalar reference kernels, which test_ops.c checks
 * against PIL's golden outputs.  Random and smooth images of every width
 * from 1 to 80 (all the vector loops' remainders), some wide ones, 1 and
 * 3 channels, padded strides, and blend factors inside, at the ends of
 * and outside [0, 1]; AutoContrast on narrowed and flat ranges.  White-box: calls the kernels of ops_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "../../lib/ops/ops_internal.h"
#include "test.h"

static unsigned seed = 12345;

static unsigned next(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

/* A w x h x c image with stride padding, filled with noise (kind 0),
 * a smooth ramp with noise (1) or few levels (2). */
static void make_image(rfb_image *img, rfb_imgbuf *buf, int w, int h, int c,
		       int kind)
{
	size_t pad = next() % 5;

	img->width = w;
	img->height = h;
	img->channels = c;
	img->stride = (size_t)w * c + pad;
	if (rfb_imgbuf_reserve(buf, img->stride * h, NULL))
		abort();
	img->data = buf->data;
	for (int y = 0; y < h; y++)
		for (size_t i = 0; i < img->stride; i++) {
			unsigned v = next();
			if (kind == 1)
				v = (unsigned)(i * 3 + y * 2) + v % 9;
			else if (kind == 2)
				v = (v % 4) * 85;
			img->data[(size_t)y * img->stride + i] = (unsigned char)v;
		}
}

/* dst like src (own stride padding), its padding filled with a marker. */
static void make_dst(rfb_image *dst, rfb_imgbuf *buf, const rfb_image *src)
{
	*dst = *src;
	dst->stride = (size_t)src->width * src->channels + 3;
	if (rfb_imgbuf_reserve(buf, dst->stride * src->height, NULL))
		abort();
	dst->data = buf->data;
	memset(dst->data, 0xA5, dst->stride * src->height);
}

/* Same bytes, padding included (a kernel must not write outside rows). */
static int same(const rfb_image *a, const rfb_image *b)
{
	return memcmp(a->data, b->data, a->stride * a->height) == 0;
}

static float draw_factor(void)
{
	static const float fixed[] = { 0.0f, 1.0f, 0.1f, 1.9f, 0.73f, 1.27f,
				       -0.5f, 3.0f, 0.01f, 1.99f };
	unsigned r = next();

	if (r % 3 == 0)
		return fixed[(r / 3) % (sizeof fixed / sizeof fixed[0])];
	return -1.0f + (float)(r % 100000) / 25000.0f;
}

typedef void (*kernel)(const rfb_image *, rfb_image *, float);

static int compare(kernel scalar, kernel simd, const rfb_image *src, float f)
{
	rfb_imgbuf xb = { 0 }, yb = { 0 };
	rfb_image x, y;
	int ok;

	make_dst(&x, &xb, src);
	make_dst(&y, &yb, src);
	scalar(src, &x, f);
	simd(src, &y, f);
	ok = same(&x, &y);
	rfb_imgbuf_free(&xb);
	rfb_imgbuf_free(&yb);
	return ok;
}

static int level;

static void level_scalar(const rfb_image *s, rfb_image *d, float f)
{
	rfbi_ops_blend_level_scalar(s, d, level, f);
}

static void level_simd(const rfb_image *s, rfb_image *d, float f)
{
	rfbi_ops_blend_level_avx2(s, d, level, f);
}

/* Widths 1..80 and a few wide ones, heights 1..5 and taller. */
static void each_shape(void (*body)(const rfb_image *, const char *))
{
	rfb_imgbuf sb = { 0 };
	rfb_image src;
	static const int wide[] = { 127, 255, 256, 257, 300, 511, 1031 };

	for (int w = 1; w <= 80 + 7; w++) {
		int width = w <= 80 ? w : wide[w - 81];
		for (int c = 1; c <= 3; c += 2) {
			int h = 1 + (int)(next() % (width > 200 ? 40 : 9));
			make_image(&src, &sb, width, h, c, (int)(next() % 3));
			body(&src, "");
		}
	}
	rfb_imgbuf_free(&sb);
}

static void sharp_case(const rfb_image *src, const char *what)
{
	float f = draw_factor();

	(void)what;
	CHECKF(compare(rfbi_ops_sharpness_scalar, rfbi_ops_sharpness_avx2, src, f),
	       "Sharpness %dx%dx%d factor %g", src->width, src->height,
	       src->channels, f);
}

static void color_case(const rfb_image *src, const char *what)
{
	float f = draw_factor();

	(void)what;
	CHECKF(compare(rfbi_ops_color_scalar, rfbi_ops_color_avx2, src, f),
	       "Color %dx%dx%d factor %g", src->width, src->height,
	       src->channels, f);
}

static void level_case(const rfb_image *src, const char *what)
{
	float f = draw_factor();

	(void)what;
	level = (int)(next() % 256);
	CHECKF(compare(level_scalar, level_simd, src, f),
	       "blend level %d %dx%dx%d factor %g", level, src->width,
	       src->height, src->channels, f);
}

static void autocontrast_scalar(const rfb_image *s, rfb_image *d, float f)
{
	(void)f;
	rfbi_ops_autocontrast_scalar(s, s, d);
}

static void autocontrast_simd(const rfb_image *s, rfb_image *d, float f)
{
	(void)f;
	rfbi_ops_autocontrast_avx2(s, s, d);
}

/* Narrow the image's range to [lo, hi] per channel sometimes, so that
 * stretches of every size (and flat channels) come up. */
static void autocontrast_case(const rfb_image *src, const char *what)
{
	rfb_imgbuf nb = { 0 };
	rfb_image img = *src;
	int lo = (int)(next() % 256), span = (int)(next() % 40);

	(void)what;
	if (next() % 2) {
		if (rfb_imgbuf_reserve(&nb, src->stride * src->height, NULL))
			abort();
		img.data = nb.data;
		for (int y = 0; y < src->height; y++)
			for (size_t i = 0; i < src->stride; i++) {
				int v = lo + src->data[y * src->stride + i] % (span + 1);
				/* the first channel sometimes flat */
				if (span < 5 && i % (size_t)src->channels == 0)
					v = lo;
				img.data[y * src->stride + i] = (unsigned char)(v > 255 ? 255 : v);
			}
	}
	CHECKF(compare(autocontrast_scalar, autocontrast_simd, &img, 0.0f),
	       "AutoContrast %dx%dx%d range %d+%d", img.width, img.height,
	       img.channels, lo, span);
	rfb_imgbuf_free(&nb);
}

static void luma_case(const rfb_image *src, const char *what)
{
	(void)what;
	CHECKF(rfbi_ops_luma_sum_scalar(src) == rfbi_ops_luma_sum_avx2(src),
	       "luma sum %dx%dx%d", src->width, src->height, src->channels);
}

/* Without AVX2 there is nothing to compare: the test is skipped, and TAP
 * says so rather than passing. */
#define NEED_SIMD()                                                        \
	do {                                                               \
		if (!rfbi_ops_have_avx2())                                  \
			SKIP("no AVX2 on this CPU");                       \
	} while (0)

static void test_sharpness(void)
{
	NEED_SIMD();
	each_shape(sharp_case);
}

static void test_color(void)
{
	NEED_SIMD();
	each_shape(color_case);
}

static void test_blend_level(void)
{
	NEED_SIMD();
	each_shape(level_case);
}

static void test_autocontrast(void)
{
	NEED_SIMD();
	each_shape(autocontrast_case);
	each_shape(autocontrast_case);
}

static void test_luma_sum(void)
{
	NEED_SIMD();
	each_shape(luma_case);
}

/* Every factor torchvision's RandAugment can draw (31 bins, both signs)
 * on one photo-like image, all levels for the constant blend. */
static void test_all_factors(void)
{
	rfb_imgbuf sb = { 0 };
	rfb_image src;

	NEED_SIMD();
	make_image(&src, &sb, 97, 23, 3, 1);
	for (int bin = 0; bin < 31; bin++)
		for (int sign = -1; sign <= 1; sign += 2) {
			float f = (float)(1.0 + sign * (0.9 * bin / 30.0));
			CHECKF(compare(rfbi_ops_sharpness_scalar, rfbi_ops_sharpness_avx2,
				       &src, f), "Sharpness factor %g", f);
			CHECKF(compare(rfbi_ops_color_scalar, rfbi_ops_color_avx2, &src, f),
			       "Color factor %g", f);
			for (level = 0; level < 256; level += 15)
				CHECKF(compare(level_scalar, level_simd, &src, f),
				       "level %d factor %g", level, f);
		}
	rfb_imgbuf_free(&sb);
}

int main(void)
{
	RUN(test_sharpness);
	RUN(test_color);
	RUN(test_blend_level);
	RUN(test_luma_sum);
	RUN(test_autocontrast);
	RUN(test_all_factors);
	return test_done();
}
