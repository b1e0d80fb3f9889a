/*
 * test_resize.c - resize against PIL's golden outputs (bilinear, bicubic,
 * nearest; 1 and 3 channels; up, down, odd sizes; torchvision's shorter
 * side rule with max_size), the window and box forms, the size rule and
 * the coefficient cache (no allocation in the steady state).
 */
#include <malloc.h>

#include "refurb/resize.h"
#include "golden.h"
#include "geometry_cases.h"
#include "test.h"

static struct gcase *cases;
static int ncases;

/* Run one golden resize case; returns its diff (same_shape 0 on error). */
static struct golden_diff run_case(rfb_resizer *rz, const struct gcase *c)
{
	struct golden_diff d = { 0 };
	rfb_imgbuf ib = { 0 }, ob = { 0 }, rb = { 0 };
	rfb_image in, want, got;
	char path[512], buf[32];
	int w, h, interp;

	gcase_param(c, "interp", buf, sizeof buf);
	interp = rfb_interp_parse(buf);
	if (gcase_path(path, sizeof path, c->input) || golden_read_pnm(path, &in, &ib) ||
	    gcase_path(path, sizeof path, c->output) || golden_read_pnm(path, &want, &ob) ||
	    interp < 0)
		goto out;
	if (strcmp(c->op, "resize") == 0) {
		w = gcase_int(c, "w");
		h = gcase_int(c, "h");
	} else if (rfb_resize_shorter(in.width, in.height, gcase_int(c, "size"),
				      gcase_int(c, "max_size"), &w, &h, NULL)) {
		goto out;
	}
	if (rfb_image_alloc(&got, &rb, w, h, in.channels, NULL) ||
	    rfb_resize(rz, &in, &got, (enum rfb_interp)interp, NULL))
		goto out;
	d = golden_compare(&got, &want);
out:
	rfb_imgbuf_free(&ib);
	rfb_imgbuf_free(&ob);
	rfb_imgbuf_free(&rb);
	return d;
}

static void test_golden_resize(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	int n = 0, exact = 0;

	CHECK(ncases > 0);
	for (int i = 0; i < ncases; i++) {
		if (strcmp(cases[i].op, "resize") && strcmp(cases[i].op, "resize_short"))
			continue;
		struct golden_diff d = run_case(rz, &cases[i]);
		n++;
		CHECKF(golden_ok_color(&d), "%s: shape %d mae %.4f within1 %.4f",
		       cases[i].name, d.same_shape, d.mean_abs, d.within1);
		/* PIL's arithmetic is reproduced exactly: not one sample off */
		CHECKF(d.same_shape && d.max_abs == 0, "%s: max diff %d, exact %.4f",
		       cases[i].name, d.max_abs, d.exact);
		exact += d.same_shape && d.max_abs == 0;
	}
	printf("# %d resize cases, %d bit-exact\n", n, exact);
	CHECK(n >= 100);
	rfb_resizer_free(rz);
}

static void fill_pattern(rfb_image *img, unsigned seed)
{
	for (int y = 0; y < img->height; y++)
		for (int x = 0; x < img->width * img->channels; x++) {
			seed = seed * 1103515245u + 12345u;
			img->data[(size_t)y * img->stride + x] =
				(unsigned char)((x * 7 + y * 3) ^ (seed >> 24));
		}
}

static int images_equal(const rfb_image *a, const rfb_image *b)
{
	struct golden_diff d = golden_compare(a, b);
	return d.same_shape && d.max_abs == 0;
}

/* A window of a resize equals resizing everything and cropping. */
static void test_window_matches_crop(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf sb = { 0 }, fb = { 0 }, wb = { 0 };
	rfb_image src, full, win;

	for (int interp = 0; interp < 3; interp++)
		for (int ch = 1; ch <= 3; ch += 2) {
			CHECK(rfb_image_alloc(&src, &sb, 301, 207, ch, NULL) == 0);
			fill_pattern(&src, 99u + ch);
			CHECK(rfb_image_alloc(&full, &fb, 130, 91, ch, NULL) == 0);
			CHECK(rfb_resize(rz, &src, &full, interp, NULL) == 0);
			CHECK(rfb_image_alloc(&win, &wb, 100, 80, ch, NULL) == 0);
			CHECK(rfb_resize_window(rz, &src, 130, 91, 17, 6, &win,
						interp, NULL) == 0);
			full.data = rfb_image_px(&full, 17, 6);
			full.width = 100;
			full.height = 80;
			CHECKF(images_equal(&full, &win), "interp %d ch %d", interp, ch);
		}
	CHECK(rfb_resize_window(rz, &src, 130, 91, 31, 0, &win, 1, NULL) ==
	      RFB_EINVAL);
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&fb);
	rfb_imgbuf_free(&wb);
	rfb_resizer_free(rz);
}

/* The box of the whole image is a plain resize; boxes are checked. */
static void test_box(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf sb = { 0 }, ab = { 0 }, bb = { 0 };
	rfb_image src, a, b;
	struct rfb_resize_box box = { 0, 0, 120, 77 };
	rfb_err err = { 0 };

	CHECK(rfb_image_alloc(&src, &sb, 120, 77, 3, NULL) == 0);
	fill_pattern(&src, 5);
	CHECK(rfb_image_alloc(&a, &ab, 50, 33, 3, NULL) == 0);
	CHECK(rfb_image_alloc(&b, &bb, 50, 33, 3, NULL) == 0);
	CHECK(rfb_resize(rz, &src, &a, RFB_INTERP_BICUBIC, NULL) == 0);
	CHECK(rfb_resize_box(rz, &src, &box, &b, RFB_INTERP_BICUBIC, NULL) == 0);
	CHECK(images_equal(&a, &b));
	box.x1 = 120.5;
	CHECK(rfb_resize_box(rz, &src, &box, &b, RFB_INTERP_BICUBIC, &err) ==
	      RFB_EINVAL);
	CHECK(strstr(err.msg, "outside") != NULL);
	box.x1 = 0;
	CHECK(rfb_resize_box(rz, &src, &box, &b, RFB_INTERP_BICUBIC, NULL) ==
	      RFB_EINVAL);
	/* a fractional box: a smooth ramp stays a ramp */
	for (int y = 0; y < src.height; y++)
		for (int x = 0; x < src.width; x++)
			for (int k = 0; k < 3; k++)
				rfb_image_px(&src, x, y)[k] = (unsigned char)(2 * x);
	box = (struct rfb_resize_box){ 10.5, 3.25, 60.5, 40.0 };
	CHECK(rfb_resize_box(rz, &src, &box, &b, RFB_INTERP_BILINEAR, NULL) == 0);
	for (int x = 1; x < b.width - 1; x++) {
		double want = 2 * (10.5 + (x + 0.5)) - 1; /* centre of pixel x */
		CHECKF(abs(rfb_image_px(&b, x, 5)[0] - (int)(want + 0.5)) <= 1,
		       "x %d: %d vs %g", x, rfb_image_px(&b, x, 5)[0], want);
	}
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&ab);
	rfb_imgbuf_free(&bb);
	rfb_resizer_free(rz);
}

static void test_shorter_rule(void)
{
	int w, h;
	rfb_err err = { 0 };

	CHECK(rfb_resize_shorter(500, 375, 256, 0, &w, &h, NULL) == 0);
	CHECK(w == 341 && h == 256); /* int(256 * 500 / 375) = 341 */
	CHECK(rfb_resize_shorter(375, 500, 256, 0, &w, &h, NULL) == 0);
	CHECK(w == 256 && h == 341);
	CHECK(rfb_resize_shorter(300, 300, 224, 0, &w, &h, NULL) == 0);
	CHECK(w == 224 && h == 224);
	CHECK(rfb_resize_shorter(1000, 100, 50, 200, &w, &h, NULL) == 0);
	CHECK(w == 200 && h == 20); /* 500 > 200: int(200 * 50 / 500) */
	CHECK(rfb_resize_shorter(1000, 100, 50, 50, &w, &h, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "max_size") != NULL);
	CHECK(rfb_resize_shorter(60000, 1, 2, 0, &w, &h, NULL) == RFB_ELIMIT);
	CHECK(rfb_resize_shorter(0, 5, 2, 0, &w, &h, NULL) == RFB_EINVAL);
}

/* Resizing a second image of the same size neither recomputes nor
 * allocates: the heap in use is unchanged. */
static void test_steady_state(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf sb = { 0 }, db = { 0 };
	rfb_image src, dst;
	size_t before, after;

	CHECK(rfb_image_alloc(&src, &sb, 640, 480, 3, NULL) == 0);
	CHECK(rfb_image_alloc(&dst, &db, 341, 256, 3, NULL) == 0);
	fill_pattern(&src, 1);
	CHECK(rfb_resize(rz, &src, &dst, RFB_INTERP_BILINEAR, NULL) == 0);
	fill_pattern(&src, 2);
	before = mallinfo2().uordblks;
	for (int i = 0; i < 5; i++)
		CHECK(rfb_resize(rz, &src, &dst, RFB_INTERP_BILINEAR, NULL) == 0);
	after = mallinfo2().uordblks;
	CHECKF(before == after, "heap grew %zu -> %zu", before, after);
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&db);
	rfb_resizer_free(rz);
}

/* Samples that push the sums to their extremes: all 255 (the largest
 * positive sum), a 0/255 checkerboard (bicubic's negative weights on 255s
 * next to 0s: the most negative sums and overshoots) or the pattern. */
static void fill_kind(rfb_image *img, unsigned seed, int kind)
{
	if (kind == 2) {
		fill_pattern(img, seed);
		return;
	}
	for (int y = 0; y < img->height; y++)
		for (int x = 0; x < img->width * img->channels; x++)
			img->data[(size_t)y * img->stride + x] =
				kind == 0 ? 255
				: ((x / img->channels + y) & 1) ? 255 : 0;
}

/* A random resize case: sizes from 1 px to a few hundred (odd widths,
 * 1-px images, up- and downscales up to 1:60), every filter, 1 and 3
 * channels, half of them a window of the full resize. */
struct sim_case {
	int sw, sh, fw, fh, dw, dh, left, top, ch, kind;
	enum rfb_interp interp;
};

static unsigned next(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static struct sim_case sim_case(unsigned *seed)
{
	struct sim_case c;
	int tiny = next(seed) % 5 == 0;

	c.sw = 1 + (int)(next(seed) % (tiny ? 3 : 300));
	c.sh = 1 + (int)(next(seed) % (tiny ? 3 : 200));
	c.fw = 1 + (int)(next(seed) % 260);
	c.fh = 1 + (int)(next(seed) % 180);
	c.ch = next(seed) & 1 ? 3 : 1;
	c.interp = (enum rfb_interp)(next(seed) % 3);
	c.kind = (int)(next(seed) % 3);
	c.dw = c.fw, c.dh = c.fh, c.left = 0, c.top = 0;
	if (next(seed) & 1) {
		c.dw = 1 + (int)(next(seed) % (unsigned)c.fw);
		c.dh = 1 + (int)(next(seed) % (unsigned)c.fh);
		c.left = (int)(next(seed) % (unsigned)(c.fw - c.dw + 1));
		c.top = (int)(next(seed) % (unsigned)(c.fh - c.dh + 1));
	}
	return c;
}

/* Every AVX2 horizontal kernel (pmulld, the default, and pmaddwd) gives
 * exactly the scalar reference's bytes, for every filter, channel count,
 * up- and downscales, windows, odd sizes, 1-px images and extreme
 * samples (rows whose last taps fall back to the scalar kernel
 * included). */
static void test_simd_matches_scalar(void)
{
	rfb_resizer *rz[3];
	rfb_imgbuf sb = { 0 }, ob[3] = { { 0 } };
	rfb_image src, out[3];
	unsigned seed = 7;

	for (int k = 0; k < 3; k++)
		rz[k] = rfb_resizer_new(NULL);
	if (rfb_resizer_set_simd(rz[1], RFB_RESIZE_MADD) != RFB_RESIZE_MADD) {
		printf("# no AVX2 on this CPU: scalar only\n");
		goto out;
	}
	CHECK(rfb_resizer_set_simd(rz[2], RFB_RESIZE_AVX2) == RFB_RESIZE_AVX2);
	CHECK(rfb_resizer_set_simd(rz[2], 7) == RFB_RESIZE_AVX2);
	CHECK(rfb_resizer_set_simd(rz[0], RFB_RESIZE_SCALAR) == RFB_RESIZE_SCALAR);
	for (int i = 0; i < 1500; i++) {
		struct sim_case c = sim_case(&seed);
		CHECK(rfb_image_alloc(&src, &sb, c.sw, c.sh, c.ch, NULL) == 0);
		fill_kind(&src, seed, c.kind);
		for (int k = 0; k < 3; k++) {
			CHECK(rfb_image_alloc(&out[k], &ob[k], c.dw, c.dh, c.ch, NULL) == 0);
			CHECK(rfb_resize_window(rz[k], &src, c.fw, c.fh, c.left, c.top,
						&out[k], c.interp, NULL) == 0);
		}
		for (int k = 1; k < 3; k++)
			CHECKF(images_equal(&out[0], &out[k]),
			       "kernel %d: %dx%dx%d -> %dx%d+%d+%d of %dx%d interp %d "
			       "samples %d", k, c.sw, c.sh, c.ch, c.dw, c.dh, c.left,
			       c.top, c.fw, c.fh, (int)c.interp, c.kind);
	}
out:
	rfb_imgbuf_free(&sb);
	for (int k = 0; k < 3; k++) {
		rfb_imgbuf_free(&ob[k]);
		rfb_resizer_free(rz[k]);
	}
}

/* Feed src to the band form in bands of random heights (1 to 24 rows). */
static int feed_bands(rfb_resizer *rz, const rfb_image *src, unsigned *seed)
{
	for (int y = 0; y < src->height;) {
		rfb_image band = *src;
		int h = 1 + (int)(next(seed) % 24);
		band.data += (size_t)y * src->stride;
		band.height = h < src->height - y ? h : src->height - y;
		if (rfb_resize_bands_rows(rz, &band, y, NULL))
			return -1;
		y += band.height;
	}
	return rfb_resize_bands_end(rz, NULL);
}

/* The band form gives rfb_resize_mapped's bytes (and the box form
 * rfb_resize_box's), with every kernel, whatever the band heights:
 * windows, identities on one axis or both, 1-px images. */
static void test_bands_match_whole(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf sb = { 0 }, xb = { 0 }, yb = { 0 };
	rfb_image src, x, y;
	unsigned seed = 11;

	for (int i = 0; i < 900; i++) {
		struct sim_case c = sim_case(&seed);
		int kernel = (int)(next(&seed) % 3), ident = (int)(next(&seed) % 6);
		if (c.interp == RFB_INTERP_NEAREST)
			c.interp = RFB_INTERP_BICUBIC;
		if (ident == 1 || ident == 3) /* no horizontal pass */
			c.fw = c.dw = c.sw, c.left = 0;
		if (ident == 2 || ident == 3) /* no vertical pass */
			c.fh = c.dh = c.sh, c.top = 0;
		struct rfb_resize_axis ax = { 0.0, (double)c.sw / c.fw, c.left, 0 };
		struct rfb_resize_axis ay = { 0.0, (double)c.sh / c.fh, c.top, 0 };
		rfb_resizer_set_simd(rz, kernel);
		CHECK(rfb_image_alloc(&src, &sb, c.sw, c.sh, c.ch, NULL) == 0);
		fill_kind(&src, seed, c.kind);
		CHECK(rfb_image_alloc(&x, &xb, c.dw, c.dh, c.ch, NULL) == 0);
		CHECK(rfb_image_alloc(&y, &yb, c.dw, c.dh, c.ch, NULL) == 0);
		CHECK(rfb_resize_mapped(rz, &src, &ax, &ay, &x, c.interp, NULL) == 0);
		if (ident == 4) {
			struct rfb_resize_box box = { 0.25 * (c.sw > 1), 0.5 * (c.sh > 1),
						      c.sw, c.sh - 0.25 * (c.sh > 1) };
			CHECK(rfb_resize_box(rz, &src, &box, &x, c.interp, NULL) == 0);
			CHECK(rfb_resize_bands_begin_box(rz, c.sw, c.sh, c.ch, &box, &y,
							 c.interp, NULL) == 0);
		} else {
			CHECK(rfb_resize_bands_begin(rz, c.sw, c.sh, c.ch, &ax, &ay, &y,
						     c.interp, NULL) == 0);
		}
		memset(y.data, 0x5a, (size_t)y.height * y.stride);
		CHECK(feed_bands(rz, &src, &seed) == 0);
		CHECKF(images_equal(&x, &y),
		       "case %d kernel %d ident %d: %dx%dx%d -> %dx%d+%d+%d of %dx%d "
		       "interp %d", i, kernel, ident, c.sw, c.sh, c.ch, c.dw, c.dh,
		       c.left, c.top, c.fw, c.fh, (int)c.interp);
	}
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&xb);
	rfb_imgbuf_free(&yb);
	rfb_resizer_free(rz);
}

/* Bands out of order, of the wrong shape, too few, nearest, a box
 * outside the source: refused with a message. */
static void test_bands_bad(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf sb = { 0 }, db = { 0 };
	rfb_image src, dst, band;
	struct rfb_resize_axis ax = { 0.0, 2.0, 0, 0 }, ay = { 0.0, 2.0, 0, 0 };
	struct rfb_resize_box box = { 0, 0, 41, 10 };
	rfb_err err = { 0 };

	CHECK(rfb_image_alloc(&src, &sb, 40, 30, 3, NULL) == 0);
	CHECK(rfb_image_alloc(&dst, &db, 20, 15, 3, NULL) == 0);
	fill_pattern(&src, 3);
	CHECK(rfb_resize_bands_begin(rz, 40, 30, 3, &ax, &ay, &dst,
				     RFB_INTERP_NEAREST, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "nearest") != NULL);
	CHECK(rfb_resize_bands_rows(rz, &src, 0, &err) == RFB_EINVAL);
	CHECK(rfb_resize_bands_begin_box(rz, 40, 30, 3, &box, &dst,
					 RFB_INTERP_BILINEAR, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "outside 40x30") != NULL);
	CHECK(rfb_resize_bands_begin(rz, 40, 30, 1, &ax, &ay, &dst,
				     RFB_INTERP_BILINEAR, &err) == RFB_EINVAL);
	CHECK(rfb_resize_bands_begin(rz, 40, 30, 3, &ax, &ay, &dst,
				     RFB_INTERP_BILINEAR, &err) == 0);
	band = src;
	band.height = 10;
	CHECK(rfb_resize_bands_rows(rz, &band, 5, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "out of order") != NULL);
	CHECK(rfb_resize_bands_rows(rz, &band, 0, &err) == 0);
	band.width = 39;
	CHECK(rfb_resize_bands_rows(rz, &band, 10, &err) == RFB_EINVAL);
	CHECK(rfb_resize_bands_end(rz, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "row 10 of 30") != NULL);
	CHECK(rfb_resize_bands_end(rz, &err) == RFB_EINVAL);
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&db);
	rfb_resizer_free(rz);
}

/* The golden cases again with the scalar kernels and with the pmaddwd
 * horizontal pass. */
static void test_golden_other_kernels(void)
{
	static const int kernels[] = { RFB_RESIZE_SCALAR, RFB_RESIZE_MADD };

	for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
		rfb_resizer *rz = rfb_resizer_new(NULL);
		int n = 0;

		if (rfb_resizer_set_simd(rz, kernels[k]) != kernels[k]) {
			printf("# no AVX2 on this CPU: no pmaddwd kernel\n");
			rfb_resizer_free(rz);
			continue;
		}
		for (int i = 0; i < ncases; i++) {
			if (strcmp(cases[i].op, "resize") &&
			    strcmp(cases[i].op, "resize_short"))
				continue;
			struct golden_diff d = run_case(rz, &cases[i]);
			CHECKF(d.same_shape && d.max_abs == 0, "kernel %d: %s",
			       kernels[k], cases[i].name);
			n++;
		}
		CHECK(n >= 100);
		rfb_resizer_free(rz);
	}
}

static void test_bad_args(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf sb = { 0 }, db = { 0 };
	rfb_image src, dst;

	CHECK(rfb_image_alloc(&src, &sb, 10, 10, 3, NULL) == 0);
	CHECK(rfb_image_alloc(&dst, &db, 5, 5, 1, NULL) == 0);
	CHECK(rfb_resize(rz, &src, &dst, RFB_INTERP_BILINEAR, NULL) == RFB_EINVAL);
	dst.channels = 3;
	CHECK(rfb_resize(rz, &src, &dst, (enum rfb_interp)7, NULL) == RFB_EINVAL);
	CHECK(rfb_interp_parse("bicubic") == RFB_INTERP_BICUBIC);
	CHECK(rfb_interp_parse("bicubi") == -1);
	rfb_resizer_free(NULL);
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&db);
	rfb_resizer_free(rz);
}

int main(void)
{
	ncases = gcase_load(&cases);
	RUN(test_golden_resize);
	RUN(test_golden_other_kernels);
	RUN(test_simd_matches_scalar);
	RUN(test_bands_match_whole);
	RUN(test_bands_bad);
	RUN(test_window_matches_crop);
	RUN(test_box);
	RUN(test_shorter_rule);
	RUN(test_steady_state);
	RUN(test_bad_args);
	free(cases);
	return test_done();
}
