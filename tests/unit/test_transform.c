/*
 * test_transform.c - crops, padding, flips, channel conversion and
 * normalisation against torchvision/PIL golden outputs; the random
 * rectangle draws of RandomCrop and RandomResizedCrop (bounds,
 * determinism, and RandomResizedCrop's distribution compared with
 * statistics of torchvision's own get_params).
 */
#include <math.h>

#include "refurb/resize.h"
#include "refurb/tensor.h"
#include "refurb/transform.h"
#include "golden.h"
#include "geometry_cases.h"
#include "test.h"

static struct gcase *cases;
static int ncases;

/* Apply a golden case's geometric op to in, writing out (backed by ob). */
static int apply_case(rfb_resizer *rz, const struct gcase *c,
		      const rfb_image *in, rfb_image *out, rfb_imgbuf *ob)
{
	unsigned char fill[3];
	char buf[32];
	int ch = in->channels;

	if (strcmp(c->op, "centercrop") == 0) {
		struct rfb_rect r = rfb_centercrop_rect(in->width, in->height,
							gcase_int(c, "h"),
							gcase_int(c, "w"));
		return rfb_image_alloc(out, ob, r.width, r.height, ch, NULL) ||
		       rfb_crop(in, &r, NULL, out, NULL);
	}
	if (strcmp(c->op, "padcrop") == 0) {
		struct rfb_rect r = { gcase_int(c, "i") - gcase_int(c, "pt"),
				      gcase_int(c, "j") - gcase_int(c, "pl"),
				      gcase_int(c, "h"), gcase_int(c, "w") };
		memset(fill, gcase_int(c, "fill"), sizeof fill);
		return rfb_image_alloc(out, ob, r.width, r.height, ch, NULL) ||
		       rfb_crop(in, &r, fill, out, NULL);
	}
	if (strcmp(c->op, "resizedcrop") == 0) {
		struct rfb_rect r = { gcase_int(c, "i"), gcase_int(c, "j"),
				      gcase_int(c, "h"), gcase_int(c, "w") };
		rfb_image view = rfb_crop_view(in, &r);
		gcase_param(c, "interp", buf, sizeof buf);
		return rfb_image_alloc(out, ob, gcase_int(c, "ow"),
				       gcase_int(c, "oh"), ch, NULL) ||
		       rfb_resize(rz, &view, out,
				  rfb_interp_parse(buf), NULL);
	}
	if (strcmp(c->op, "hflip") == 0) {
		if (rfb_image_alloc(out, ob, in->width, in->height, ch, NULL))
			return -1;
		rfb_hflip(in, out);
		return 0;
	}
	if (strcmp(c->op, "gray") == 0)
		return rfb_image_alloc(out, ob, in->width, in->height, 1, NULL) ||
		       rfb_to_gray(in, out, NULL);
	if (strcmp(c->op, "rgb") == 0)
		return rfb_image_alloc(out, ob, in->width, in->height, 3, NULL) ||
		       rfb_to_rgb(in, out, NULL);
	return -1;
}

static void test_golden_geometry(void)
{
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf ib = { 0 }, wb = { 0 }, ob = { 0 };
	int n = 0;

	for (int i = 0; i < ncases; i++) {
		const struct gcase *c = &cases[i];
		rfb_image in, want, got;
		char path[512];
		int resized = strcmp(c->op, "resizedcrop") == 0;

		if (strncmp(c->op, "resize", 6) == 0 && !resized)
			continue;
		if (strcmp(c->op, "normalize") == 0)
			continue;
		n++;
		gcase_path(path, sizeof path, c->input);
		CHECKF(golden_read_pnm(path, &in, &ib) == 0, "%s", path);
		gcase_path(path, sizeof path, c->output);
		CHECKF(golden_read_pnm(path, &want, &wb) == 0, "%s", path);
		CHECKF(apply_case(rz, c, &in, &got, &ob) == 0, "%s", c->name);
		struct golden_diff d = golden_compare(&got, &want);
		if (resized)
			CHECKF(golden_ok_color(&d) && d.max_abs == 0,
			       "%s: mae %.4f max %d", c->name, d.mean_abs, d.max_abs);
		else
			CHECKF(golden_ok_geometric(&d) && d.max_abs == 0,
			       "%s: shape %d exact %.4f max %d", c->name,
			       d.same_shape, d.exact, d.max_abs);
	}
	printf("# %d crop/flip/channel cases\n", n);
	CHECK(n >= 60);
	rfb_imgbuf_free(&ib);
	rfb_imgbuf_free(&wb);
	rfb_imgbuf_free(&ob);
	rfb_resizer_free(rz);
}

static int parse_triple(const char *s, double v[3])
{
	int n = 0;
	char *end;

	while (n < 3) {
		v[n++] = strtod(s, &end);
		if (*end != '/')
			break;
		s = end + 1;
	}
	return n;
}

static void test_golden_normalize(void)
{
	rfb_imgbuf ib = { 0 };
	int n = 0;

	for (int i = 0; i < ncases; i++) {
		const struct gcase *c = &cases[i];
		double mean[3], std[3];
		char path[512], buf[128];
		rfb_image in;
		rfb_norm norm;

		if (strcmp(c->op, "normalize"))
			continue;
		n++;
		gcase_path(path, sizeof path, c->input);
		CHECK(golden_read_pnm(path, &in, &ib) == 0);
		size_t count = (size_t)in.width * in.height * in.channels;
		float *got = malloc(count * sizeof *got), *want = malloc(count * 4 + 4);
		gcase_path(path, sizeof path, c->output);
		FILE *f = fopen(path, "rb");
		CHECK(f && fread(want, 4, count + 1, f) == count);
		if (f)
			fclose(f);
		CHECK(parse_triple(gcase_param(c, "mean", buf, sizeof buf), mean) ==
		      in.channels);
		CHECK(parse_triple(gcase_param(c, "std", buf, sizeof buf), std) ==
		      in.channels);
		CHECK(rfb_norm_init(&norm, in.channels, mean, std, NULL) == 0);
		CHECK(rfb_tensor_normalize(&in, &norm, RFB_LAYOUT_CHW, got, NULL) == 0);
		CHECKF(memcmp(got, want, count * 4) == 0, "%s differs", c->name);
		free(got);
		free(want);
	}
	CHECK(n == 12);
	rfb_imgbuf_free(&ib);
}

static void test_normalize_layouts(void)
{
	unsigned char px[2 * 3 * 3];
	rfb_image img = { px, 6, 2, 3, 3 };
	double mean[3] = { 0, 0.5, 1 }, std[3] = { 1, 0.5, 2 };
	float hwc[18], chw[18];
	unsigned char chw8[18];
	rfb_norm n;
	rfb_err err = { 0 };

	for (int i = 0; i < 18; i++)
		px[i] = (unsigned char)(i * 15);
	CHECK(rfb_norm_init(&n, 3, mean, std, NULL) == 0);
	CHECK(rfb_tensor_normalize(&img, &n, RFB_LAYOUT_HWC, hwc, NULL) == 0);
	CHECK(rfb_tensor_normalize(&img, &n, RFB_LAYOUT_CHW, chw, NULL) == 0);
	rfb_tensor_chw_u8(&img, chw8);
	for (int y = 0; y < 3; y++)
		for (int x = 0; x < 2; x++)
			for (int c = 0; c < 3; c++) {
				int h = (y * 2 + x) * 3 + c, p = c * 6 + y * 2 + x;
				CHECK(hwc[h] == chw[p]);
				CHECK(chw8[p] == px[h]);
				CHECK(fabsf(hwc[h] - (float)((px[h] / 255.0 - mean[c]) / std[c])) < 1e-6f);
			}
	std[1] = 0;
	CHECK(rfb_norm_init(&n, 3, mean, std, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "std") != NULL);
	CHECK(rfb_norm_init(&n, 2, mean, std, NULL) == RFB_EINVAL);
	std[1] = 1;
	CHECK(rfb_norm_init(&n, 1, mean, std, NULL) == 0);
	CHECK(rfb_tensor_normalize(&img, &n, RFB_LAYOUT_CHW, chw, NULL) == RFB_EINVAL);
}

static void test_randcrop(void)
{
	struct rfb_padding pad = { 4, 4, 4, 4 };
	struct rfb_rect r, r2;
	int seen_min_top = 0, seen_max_top = 0;
	rfb_rng rng;
	rfb_err err = { 0 };

	for (uint32_t s = 0; s < 3000; s++) {
		rfb_rng_init(&rng, 1, 0, s, RFB_STAGE_FINAL);
		CHECK(rfb_randcrop_rect(&rng, 32, 30, 32, 32, &pad, 0, &r, NULL) == 0);
		CHECK(r.top >= -4 && r.top + 32 <= 30 + 4);
		CHECK(r.left >= -4 && r.left + 32 <= 32 + 4);
		seen_min_top |= r.top == -4;
		seen_max_top |= r.top == 2;
		rfb_rng_init(&rng, 1, 0, s, RFB_STAGE_FINAL);
		CHECK(rfb_randcrop_rect(&rng, 32, 30, 32, 32, &pad, 0, &r2, NULL) == 0);
		CHECK(memcmp(&r, &r2, sizeof r) == 0);
	}
	CHECK(seen_min_top && seen_max_top); /* both ends are reachable */
	/* exact fit: no draw, offset 0 */
	rfb_rng_init(&rng, 1, 0, 0, 0);
	CHECK(rfb_randcrop_rect(&rng, 24, 24, 24, 24, NULL, 0, &r, NULL) == 0);
	CHECK(r.top == 0 && r.left == 0 && rng.left == 0 && rng.ctr[0] == 0);
	/* too small without pad_if_needed, fine with it (both sides padded) */
	CHECK(rfb_randcrop_rect(&rng, 20, 30, 24, 24, NULL, 0, &r, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "larger") != NULL);
	for (uint32_t s = 0; s < 200; s++) {
		rfb_rng_init(&rng, 1, 0, s, 0);
		CHECK(rfb_randcrop_rect(&rng, 20, 30, 24, 24, NULL, 1, &r, NULL) == 0);
		CHECK(r.left >= -4 && r.left + 24 <= 24);
	}
}

static void test_centercrop_rect(void)
{
	struct rfb_rect r = rfb_centercrop_rect(10, 7, 6, 9);

	/* (7-6)/2 = 0.5 -> 0 and (10-9)/2 = 0.5 -> 0 (half to even) */
	CHECK(r.top == 0 && r.left == 0);
	r = rfb_centercrop_rect(13, 9, 6, 10); /* 1.5 -> 2 both */
	CHECK(r.top == 2 && r.left == 2);
	r = rfb_centercrop_rect(5, 5, 8, 9); /* larger: pad (t - s) // 2 */
	CHECK(r.top == -1 && r.left == -2);
}

struct rr_stats {
	int w, h, draws;
	double area_mean, area_std, logr_mean, logr_std, top_mean, fallback;
};

static int read_rr_stats(struct rr_stats *st, int max)
{
	FILE *f = fopen(GEOMETRY_DIR "/rrcrop_stats.tsv", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof line, f)) {
		struct rr_stats *s = &st[n];
		if (line[0] != '#' &&
		    sscanf(line, "%d\t%d\t%*s\t%*s\t%d\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf",
			   &s->w, &s->h, &s->draws, &s->area_mean, &s->area_std,
			   &s->logr_mean, &s->logr_std, &s->top_mean,
			   &s->fallback) == 9)
			n++;
	}
	fclose(f);
	return n;
}

/* Our draws of one size, summarised like add_rrcrop_stats does. */
static struct rr_stats our_stats(int w, int h, int draws)
{
	struct rr_stats s = { w, h, draws, 0, 0, 0, 0, 0, 0 };
	struct rfb_rect fb, r;
	double a2 = 0, l2 = 0, ntop = 0;
	rfb_rng rng;

	/* the fallback rectangle: a scale no attempt can meet */
	rfb_rng_init(&rng, 0, 0, 0, 0);
	rfb_rrcrop_rect(&rng, w, h, 1e9, 1e9, 0.75, 4.0 / 3.0, &fb);
	for (int i = 0; i < draws; i++) {
		rfb_rng_init(&rng, 42, 3, (uint32_t)i, RFB_STAGE_FINAL + 1);
		int ok = rfb_rrcrop_rect(&rng, w, h, 0.08, 1.0, 0.75, 4.0 / 3.0, &r);
		double area = (double)r.width * r.height / ((double)w * h);
		double logr = log((double)r.width / r.height);
		CHECK(r.top >= 0 && r.left >= 0 && r.top + r.height <= h &&
		      r.left + r.width <= w && r.width > 0 && r.height > 0);
		if (ok) { /* a successful attempt honours scale and ratio (up to rounding) */
			CHECK((r.width + 0.5) * (r.height + 0.5) >= 0.08 * w * h);
			CHECK((r.width - 0.5) * (r.height - 0.5) <= 1.0 * w * h);
			CHECK((r.width + 0.5) / (r.height - 0.5) >= 0.75);
			CHECK((r.width - 0.5) / (r.height + 0.5) <= 4.0 / 3.0);
		}
		s.area_mean += area;
		a2 += area * area;
		s.logr_mean += logr;
		l2 += logr * logr;
		if (h > r.height) {
			s.top_mean += (double)r.top / (h - r.height);
			ntop++;
		}
		s.fallback += memcmp(&r, &fb, sizeof r) == 0;
	}
	s.area_mean /= draws;
	s.logr_mean /= draws;
	s.area_std = sqrt(fmax(a2 / draws - s.area_mean * s.area_mean, 0));
	s.logr_std = sqrt(fmax(l2 / draws - s.logr_mean * s.logr_mean, 0));
	s.top_mean = ntop ? s.top_mean / ntop : 0.5;
	s.fallback /= draws;
	return s;
}

/* |a - b| within k standard errors of a difference of two means. */
static int close_means(double a, double b, double sd, int n)
{
	return fabs(a - b) <= 5 * sd * sqrt(2.0 / n) + 1e-9;
}

static void test_rrcrop_distribution(void)
{
	struct rr_stats tv[8];
	int n = read_rr_stats(tv, 8);

	CHECK(n == 4);
	for (int i = 0; i < n; i++) {
		struct rr_stats s = our_stats(tv[i].w, tv[i].h, tv[i].draws);
		double p = tv[i].fallback;
		CHECKF(close_means(s.area_mean, tv[i].area_mean, tv[i].area_std, s.draws),
		       "%dx%d area %.4f vs torchvision %.4f", s.w, s.h, s.area_mean,
		       tv[i].area_mean);
		CHECKF(fabs(s.area_std - tv[i].area_std) <= 0.05 * tv[i].area_std + 1e-9,
		       "%dx%d area sd %.4f vs %.4f", s.w, s.h, s.area_std, tv[i].area_std);
		CHECKF(close_means(s.logr_mean, tv[i].logr_mean, tv[i].logr_std, s.draws),
		       "%dx%d log ratio %.4f vs torchvision %.4f", s.w, s.h,
		       s.logr_mean, tv[i].logr_mean);
		CHECKF(fabs(s.top_mean - tv[i].top_mean) <= 0.02,
		       "%dx%d top %.4f vs %.4f", s.w, s.h, s.top_mean, tv[i].top_mean);
		CHECKF(fabs(s.fallback - p) <= 5 * sqrt(2 * p * (1 - p) / s.draws) + 0.002,
		       "%dx%d fallback %.4f vs torchvision %.4f", s.w, s.h, s.fallback, p);
	}
}

static void test_rrcrop_fallback(void)
{
	struct rfb_rect r;
	rfb_rng rng;

	rfb_rng_init(&rng, 9, 0, 0, 0);
	CHECK(rfb_rrcrop_rect(&rng, 1000, 10, 0.08, 1.0, 0.75, 4.0 / 3.0, &r) == 0);
	CHECK(r.height == 10 && r.width == 13 && r.top == 0 && r.left == 493);
	CHECK(rfb_rrcrop_rect(&rng, 10, 1000, 0.08, 1.0, 0.75, 4.0 / 3.0, &r) == 0);
	CHECK(r.width == 10 && r.height == 13 && r.left == 0 && r.top == 493);
	/* ratio range covering the image: the whole image */
	CHECK(rfb_rrcrop_rect(&rng, 50, 40, 2.0, 3.0, 0.5, 2.0, &r) == 0);
	CHECK(r.width == 50 && r.height == 40 && r.top == 0 && r.left == 0);
	/* a ratio range so far from the image's that a side rounds to 0
	 * keeps one row or column (found by fuzz_pipeline: the resize after
	 * it failed on a 13x0 crop the shape calculation had not foreseen) */
	CHECK(rfb_rrcrop_rect(&rng, 13, 9, 0.5, 1.0, 2250, 2250, &r) == 0);
	CHECK(r.width == 13 && r.height == 1 && r.top == 4 && r.left == 0);
	CHECK(rfb_rrcrop_rect(&rng, 13, 9, 0.5, 1.0, 1e-4, 1e-4, &r) == 0);
	CHECK(r.width == 1 && r.height == 9 && r.top == 0 && r.left == 6);
}

static void test_flip(void)
{
	unsigned char px[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
			       16, 17, 18 };
	unsigned char out[18];
	rfb_image a = { px, 9, 3, 2, 3 }, b = { out, 9, 3, 2, 3 };
	rfb_rng rng;
	int flips = 0;

	rfb_hflip(&a, &b);
	CHECK(out[0] == 7 && out[1] == 8 && out[2] == 9 && out[6] == 1);
	rfb_hflip_inplace(&b);
	CHECK(memcmp(out, px, sizeof px) == 0);
	for (uint32_t s = 0; s < 10000; s++) {
		rfb_rng_init(&rng, 3, 1, s, RFB_STAGE_FINAL);
		flips += rfb_flip_draw(&rng, 0.3);
	}
	CHECKF(flips > 2800 && flips < 3200, "%d", flips);
	rfb_rng_init(&rng, 3, 1, 0, 0);
	CHECK(rfb_flip_draw(&rng, 0.0) == 0);
	CHECK(rfb_flip_draw(&rng, 1.0) == 1);
}

/* Flips of every width from 1 to 70 and some wide rows, 1 and 3
 * channels, copied and in place, against the definition, with guard
 * bytes around every row (the vector paths must stay inside rows). */
static void test_flip_widths(void)
{
	enum { GUARD = 17, MAXW = 301 };
	static unsigned char src[3 * (3 * MAXW + 2 * GUARD)], dst[sizeof src];
	static const int wide[] = { 127, 128, 255, 300, 301 };

	for (int i = 0; i < 70 + 5; i++) {
		int w = i < 70 ? i + 1 : wide[i - 70];
		for (int ch = 1; ch <= 3; ch += 2) {
			size_t stride = (size_t)w * ch + 2 * GUARD;
			rfb_image a = { src + GUARD, stride, w, 3, ch };
			rfb_image b = { dst + GUARD, stride, w, 3, ch };
			int ok = 1;
			for (size_t k = 0; k < sizeof src; k++) {
				src[k] = (unsigned char)(k * 7 + w);
				dst[k] = 0xEE;
			}
			rfb_hflip(&a, &b);
			for (int y = 0; y < 3; y++)
				for (int x = 0; x < w; x++)
					ok &= memcmp(rfb_image_px(&b, x, y),
						     rfb_image_px(&a, w - 1 - x, y),
						     (size_t)ch) == 0;
			for (int y = 0; y < 3; y++)
				for (int g = 0; g < GUARD; g++)
					ok &= b.data[y * stride - GUARD + g] == 0xEE &&
					      b.data[y * stride + (size_t)w * ch + g] == 0xEE;
			CHECKF(ok, "hflip width %d channels %d", w, ch);
			memcpy(dst, src, sizeof src);
			rfb_hflip_inplace(&b);
			CHECKF(memcmp(dst, src, sizeof src) != 0 || w == 1,
			       "in place width %d channels %d: unchanged", w, ch);
			for (int y = 0; y < 3; y++)
				for (int x = 0; x < w; x++)
					ok &= memcmp(rfb_image_px(&b, x, y),
						     rfb_image_px(&a, w - 1 - x, y),
						     (size_t)ch) == 0;
			for (int y = 0; y < 3; y++)
				for (int g = 0; g < GUARD; g++) {
					size_t lo = y * stride + g;
					size_t hi = y * stride + GUARD + (size_t)w * ch + g;
					ok &= dst[lo] == src[lo] && dst[hi] == src[hi];
				}
			CHECKF(ok, "in place width %d channels %d", w, ch);
		}
	}
}

/* Gray to RGB of every width from 1 to 70 and some wide rows, against
 * the definition, with guard bytes around the output rows. */
static void test_to_rgb_widths(void)
{
	enum { GUARD = 17, MAXW = 301 };
	static unsigned char src[2 * (MAXW + GUARD)], dst[2 * (3 * MAXW + 2 * GUARD)];
	static const int wide[] = { 127, 128, 255, 300, 301 };

	for (int i = 0; i < 70 + 5; i++) {
		int w = i < 70 ? i + 1 : wide[i - 70];
		size_t ostride = 3 * (size_t)w + 2 * GUARD;
		rfb_image a = { src, (size_t)w + GUARD, w, 2, 1 };
		rfb_image b = { dst + GUARD, ostride, w, 2, 3 };
		int ok = 1;
		for (size_t k = 0; k < sizeof src; k++)
			src[k] = (unsigned char)(k * 13 + w);
		memset(dst, 0xEE, sizeof dst);
		CHECK(rfb_to_rgb(&a, &b, NULL) == 0);
		for (int y = 0; y < 2; y++) {
			for (int x = 0; x < w; x++)
				for (int c = 0; c < 3; c++)
					ok &= rfb_image_px(&b, x, y)[c] ==
					      rfb_image_px(&a, x, y)[0];
			for (int g = 0; g < GUARD; g++)
				ok &= b.data[y * ostride - GUARD + g] == 0xEE &&
				      b.data[y * ostride + 3 * (size_t)w + g] == 0xEE;
		}
		CHECKF(ok, "to_rgb width %d", w);
	}
}

static void test_crop_fill_and_errors(void)
{
	unsigned char px[4 * 3] = { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120 };
	rfb_image src = { px, 6, 2, 2, 3 }, dst;
	rfb_imgbuf b = { 0 };
	unsigned char fill[3] = { 1, 2, 3 };
	struct rfb_rect r = { -1, 1, 3, 3 };

	CHECK(rfb_image_alloc(&dst, &b, 3, 3, 3, NULL) == 0);
	CHECK(rfb_crop(&src, &r, fill, &dst, NULL) == 0);
	CHECK(memcmp(dst.data, "\1\2\3\1\2\3\1\2\3", 9) == 0);
	CHECK(memcmp(dst.data + 9, "\x28\x32\x3c\1\2\3\1\2\3", 9) == 0);
	CHECK(memcmp(dst.data + 18, "\x6e\x78\x64\1\2\3\1\2\3", 3) != 0);
	CHECK(dst.data[18] == 100 && dst.data[21] == 1);
	r.width = 2;
	CHECK(rfb_crop(&src, &r, fill, &dst, NULL) == RFB_EINVAL);
	r = (struct rfb_rect){ 0, 0, 2, 2 };
	CHECK(rfb_rect_inside(&r, 2, 2));
	r.left = 1;
	CHECK(!rfb_rect_inside(&r, 2, 2));
	rfb_imgbuf_free(&b);
}

int main(void)
{
	ncases = gcase_load(&cases);
	RUN(test_golden_geometry);
	RUN(test_golden_normalize);
	RUN(test_normalize_layouts);
	RUN(test_randcrop);
	RUN(test_centercrop_rect);
	RUN(test_rrcrop_distribution);
	RUN(test_rrcrop_fallback);
	RUN(test_flip);
	RUN(test_flip_widths);
	RUN(test_to_rgb_widths);
	RUN(test_crop_fill_and_errors);
	free(cases);
	return test_done();
}
