/*
 * test_ops_window.c - every augment op run on a window (ops_window.c)
 * gives exactly the bytes of the op on the whole image, cut to the
 * window, and reads nothing outside the input window it asks for: the
 * input window is copied alone into a buffer whose margins hold noise.
 * Random image sizes, windows (on the borders too), magnitudes of both
 * signs, 1 and 3 channels, fills; the geometric ops with NEAREST (the
 * only filter they run windowed with), and those that cannot run on a
 * window say so.  White-box: calls the functions of ops_internal.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/ops/ops_internal.h"
#include "test.h"

static unsigned seed = 4242;

static unsigned next(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

static void fill_noise(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)next();
}

/* A photo-like image (smooth, edges, noise): histograms and ranges of
 * real photos, not uniform noise. */
static void make_image(rfb_image *img, rfb_imgbuf *buf, int w, int h, int c)
{
	if (rfb_image_alloc(img, buf, w, h, c, NULL))
		abort();
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w * c; x++) {
			double v = 110 + 60 * sin(x / 9.0 + (x % c)) * cos(y / 7.0) +
				   (next() % 23);
			if ((x / c / 11 + y / 13) % 4 == 0)
				v = 30 + 50 * (x % c);
			img->data[(size_t)y * img->stride + x] = (unsigned char)v;
		}
}

/* A random window of a w x h image, sometimes touching its borders. */
static struct rfb_rect random_rect(int w, int h)
{
	struct rfb_rect r;

	r.width = 1 + (int)(next() % (unsigned)w);
	r.height = 1 + (int)(next() % (unsigned)h);
	r.left = (int)(next() % (unsigned)(w - r.width + 1));
	r.top = (int)(next() % (unsigned)(h - r.height + 1));
	if (next() % 4 == 0)
		r.left = next() % 2 ? 0 : w - r.width;
	if (next() % 4 == 0)
		r.top = next() % 2 ? 0 : h - r.height;
	return r;
}

/* Magnitudes torchvision's spaces give each op (random bin and sign). */
static double draw_magnitude(enum rfb_op op, int w, int h)
{
	double u = (double)(next() % 1000) / 999.0, sign = next() % 2 ? 1 : -1;

	switch (op) {
	case RFB_OP_SHEAR_X:
	case RFB_OP_SHEAR_Y: return sign * 0.99 * u;
	case RFB_OP_TRANSLATE_X: return sign * 0.45 * w * u + (next() % 3 ? 0 : 0.5);
	case RFB_OP_TRANSLATE_Y: return sign * 0.45 * h * u;
	case RFB_OP_ROTATE: return sign * (next() % 5 ? 30 * u : 135 * u);
	case RFB_OP_POSTERIZE: return (double)(next() % 9);
	case RFB_OP_SOLARIZE: return 255.0 * u;
	default: return sign * 0.99 * u;
	}
}

static int check_case(const rfb_image *full_in, enum rfb_op op, double mag,
		      const unsigned char *fill, const struct rfb_rect *want)
{
	int w = full_in->width, h = full_in->height, c = full_in->channels, ok;
	rfb_imgbuf fb = { 0 }, sb = { 0 }, db = { 0 };
	rfb_image full_out, src, dst;
	struct rfb_rect need;
	enum { M = 3 }; /* margin of noise around the input window */

	if (!rfb_op_window_need(op, mag, RFB_INTERP_NEAREST, w, h, want, &need))
		return -1;
	ok = need.left >= 0 && need.top >= 0 && need.width >= 1 &&
	     need.height >= 1 && need.left + need.width <= w &&
	     need.top + need.height <= h;
	if (!ok)
		return 0;
	if (rfb_image_alloc(&full_out, &fb, w, h, c, NULL) ||
	    rfb_op_apply(op, mag, RFB_INTERP_NEAREST, fill, full_in, &full_out, NULL))
		abort();
	/* the input window alone, inside noise */
	src.width = need.width;
	src.height = need.height;
	src.channels = c;
	src.stride = (size_t)(need.width + 2 * M) * c;
	if (rfb_imgbuf_reserve(&sb, src.stride * (need.height + 2 * M), NULL))
		abort();
	fill_noise(sb.data, src.stride * (need.height + 2 * M));
	src.data = sb.data + M * src.stride + M * c;
	for (int y = 0; y < need.height; y++)
		memcpy(rfb_image_px(&src, 0, y),
		       rfb_image_px(full_in, need.left, need.top + y),
		       (size_t)need.width * c);
	if (rfb_image_alloc(&dst, &db, want->width, want->height, c, NULL))
		abort();
	struct rfb_place sp = { need.left, need.top, w, h };
	struct rfb_place dp = { want->left, want->top, w, h };
	ok = rfb_op_apply_window(op, mag, RFB_INTERP_NEAREST, fill, &src, &sp,
				 &dst, &dp, NULL) == 0;
	for (int y = 0; ok && y < want->height; y++)
		ok = memcmp(rfb_image_px(&dst, 0, y),
			    rfb_image_px(&full_out, want->left, want->top + y),
			    (size_t)want->width * c) == 0;
	rfb_imgbuf_free(&fb);
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&db);
	return ok;
}

static void test_every_op(void)
{
	static const unsigned char fills[2][3] = { { 0, 0, 0 }, { 200, 17, 90 } };
	rfb_imgbuf ib = { 0 };
	rfb_image in;
	int cases = 0, unsupported = 0;

	for (int n = 0; n < 400; n++) {
		int w = 1 + (int)(next() % (n % 10 == 0 ? 300 : 40));
		int h = 1 + (int)(next() % (n % 10 == 0 ? 200 : 40));
		int c = next() % 2 ? 3 : 1;
		make_image(&in, &ib, w, h, c);
		for (int op = 0; op < RFB_OP_COUNT; op++)
			for (int k = 0; k < 3; k++) {
				double mag = draw_magnitude((enum rfb_op)op, w, h);
				struct rfb_rect r = random_rect(w, h);
				const unsigned char *fill = next() % 3 ? NULL : fills[next() % 2];
				int res = check_case(&in, (enum rfb_op)op, mag, fill, &r);
				cases++;
				unsupported += res < 0;
				CHECKF(res != 0, "%s %g on %dx%dx%d, window %dx%d+%d+%d",
				       rfb_op_name((enum rfb_op)op), mag, w, h, c,
				       r.width, r.height, r.left, r.top);
			}
	}
	printf("# %d cases, %d not windowed (transposes)\n", cases, unsupported);
	CHECK(unsupported < cases / 20);
	rfb_imgbuf_free(&ib);
}

/* What cannot run on windows says so: filters other than NEAREST for
 * the geometry, Rotate's transposes; everything else can. */
static void test_unsupported(void)
{
	struct rfb_rect r = { 2, 3, 10, 10 }, need;

	CHECK(rfb_op_window_need(RFB_OP_ROTATE, 9, RFB_INTERP_BILINEAR, 40, 30,
				 &r, &need) == 0);
	CHECK(rfb_op_window_need(RFB_OP_SHEAR_X, 0.3, RFB_INTERP_BICUBIC, 40, 30,
				 &r, &need) == 0);
	CHECK(rfb_op_window_need(RFB_OP_ROTATE, 180, RFB_INTERP_NEAREST, 40, 30,
				 &r, &need) == 0);
	CHECK(rfb_op_window_need(RFB_OP_ROTATE, 90, RFB_INTERP_NEAREST, 40, 40,
				 &r, &need) == 0);
	CHECK(rfb_op_window_need(RFB_OP_ROTATE, 0, RFB_INTERP_BILINEAR, 40, 30,
				 &r, &need) == 1 && need.left == 3 && need.width == 10);
	CHECK(rfb_op_window_need(RFB_OP_EQUALIZE, 0, RFB_INTERP_BILINEAR, 40, 30,
				 &r, &need) == 1 && need.width == 40 && need.height == 30);
	CHECK(rfb_op_window_need(RFB_OP_SHARPNESS, 0.5, RFB_INTERP_NEAREST, 40, 30,
				 &r, &need) == 1 && need.left == 2 && need.top == 1 &&
	      need.width == 12 && need.height == 12);
}

int main(void)
{
	RUN(test_every_op);
	RUN(test_unsupported);
	return test_done();
}
