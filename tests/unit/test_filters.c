/*
 * test_filters.c - torchvision's single transforms as pipeline filters:
 * the golden cases of tests/data/golden/filters (scripts/golden-filters.py:
 * torchvision 0.14 with its random ranges collapsed, run here through the
 * spec in the manifest), the parser's aliases, fractions and suggestions,
 * canonical round trips, RandomApply's gate, and the frequencies of the
 * p draws.  The distributions of the random ranges against torchvision
 * are scripts/compare-filters.py's (KS on real photos).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "golden.h"
#include "refurb/filters.h"
#include "refurb/pipeline.h"
#include "test.h"

#define GOLDEN_DIR "tests/data/golden/filters"

static int run_spec(const char *spec, const rfb_image *in, uint32_t sample,
		    rfb_pipe_ctx *ctx, struct rfb_pipe_out *out)
{
	struct rfb_pipe_key key = { 7, 0, sample, RFB_STAGE_FINAL };
	rfb_pipeline *p;
	rfb_err err = { 0 };
	int rc = rfb_pipeline_parse(spec, &p, &err);

	if (rc) {
		printf("# %s: %s\n", spec, err.msg);
		return rc;
	}
	rc = rfb_pipe_run(ctx, p, in, &key, out, &err);
	if (rc)
		printf("# %s: %s\n", spec, err.msg);
	rfb_pipeline_free(p);
	return rc;
}

/* A perspective case: rfb_perspective with the manifest's end points,
 * the image's corners as start points, its interp and fill. */
static int run_perspective(const rfb_image *in, const char *params,
			   rfb_imgbuf *buf, rfb_image *out)
{
	int e[8], fill;
	char interp[16];
	int start[4][2] = { { 0, 0 }, { in->width - 1, 0 },
			    { in->width - 1, in->height - 1 },
			    { 0, in->height - 1 } }, end[4][2];
	unsigned char f[3];

	if (sscanf(params, "end=%d/%d/%d/%d/%d/%d/%d/%d:interp=%15[a-z]:fill=%d",
		   &e[0], &e[1], &e[2], &e[3], &e[4], &e[5], &e[6], &e[7], interp,
		   &fill) != 10 ||
	    rfb_image_alloc(out, buf, in->width, in->height, in->channels, NULL))
		return -1;
	for (int i = 0; i < 4; i++) {
		end[i][0] = e[2 * i];
		end[i][1] = e[2 * i + 1];
	}
	memset(f, fill, sizeof f);
	return rfb_perspective(in, out, start, end,
			       interp[2] == 'a' ? RFB_INTERP_NEAREST :
			       interp[2] == 'l' ? RFB_INTERP_BILINEAR :
			       RFB_INTERP_BICUBIC, f, NULL);
}

/* 1 if img equals a window of big exactly (RandomCrop with pad_if_needed:
 * big is the image torchvision pads before its random crop). */
static int is_window(const rfb_image *img, const rfb_image *big)
{
	size_t row = (size_t)img->width * img->channels;

	if (img->channels != big->channels || img->width > big->width ||
	    img->height > big->height)
		return 0;
	for (int y0 = 0; y0 <= big->height - img->height; y0++)
		for (int x0 = 0; x0 <= big->width - img->width; x0++) {
			int y = 0;
			while (y < img->height &&
			       memcmp(rfb_image_px(img, 0, y),
				      rfb_image_px(big, x0, y0 + y), row) == 0)
				y++;
			if (y == img->height)
				return 1;
		}
	return 0;
}

/* A case: the manifest's spec through a pipeline (or rfb_perspective). */
static int golden_case(void *ctx, const struct golden_line *g)
{
	int perspective = strcmp(g->op, "perspective") == 0;
	rfb_imgbuf pb = { 0 };
	struct rfb_pipe_out out;
	int ok = 0;

	if (perspective) {
		if (run_perspective(g->in, g->params, &pb, &out.img))
			goto done;
	} else if (run_spec(g->op, g->in, 0, ctx, &out)) {
		goto done;
	}
	if (strcmp(g->params, "window=1") == 0) {
		/* several draws: each a window of the padded image */
		ok = 1;
		for (uint32_t s = 0; s < 4 && ok; s++)
			ok = run_spec(g->op, g->in, s, ctx, &out) == 0 &&
			     is_window(&out.img, g->expected);
		printf("# %-36s window of the padded image%s\n", g->name,
		       ok ? "" : "  FAIL");
		goto done;
	}
	struct golden_diff d = golden_compare(&out.img, g->expected);
	/* perspective: the coefficients come from another solver (torch's
	 * float32 least squares), so a few samples on the image's edge fall
	 * in or out of it: the tolerance (>= 99% within +-1), not
	 * the MAE bound */
	ok = perspective ? d.same_shape && d.within1 >= 0.99
			 : golden_ok_color(&d);
	printf("# %-36s exact %.4f  within1 %.4f  mae %.4f%s\n", g->name,
	       d.exact, d.within1, d.mean_abs, ok ? "" : "  FAIL");
done:
	rfb_imgbuf_free(&pb);
	return ok;
}

static void test_golden(void)
{
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	int bad, n = golden_run(GOLDEN_DIR, golden_case, ctx, &bad);

	rfb_pipe_ctx_free(ctx);
	CHECKF(n >= 0, "no %s/manifest.tsv (run scripts/golden-filters.py)",
	       GOLDEN_DIR);
	printf("# %d golden cases, %d out of tolerance\n", n, bad);
	CHECK(n >= 60);
	CHECK(bad == 0);
}

/* The error of spec, or "" when it parses. */
static const char *parse_error(const char *spec)
{
	static rfb_err err;
	rfb_pipeline *p = NULL;

	memset(&err, 0, sizeof err);
	if (rfb_pipeline_parse(spec, &p, &err) == 0) {
		rfb_pipeline_free(p);
		return "";
	}
	return err.msg;
}

/* A spec and a part of its parse error ("": the spec parses). */
struct spec_error {
	const char *spec, *want;
};

static void check_errors(const struct spec_error *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *e = parse_error(cases[i].spec);
		CHECKF(cases[i].want[0] ? strstr(e, cases[i].want) != NULL
					: e[0] == '\0',
		       "%s: got \"%s\", want \"%s\"", cases[i].spec, e,
		       cases[i].want);
	}
}

static void test_errors(void)
{
	static const struct spec_error cases[] = {
		{ "randaug=2:9", "\"9\" needs a key (key=value): did you mean m=9?" },
		{ "colorjiter=0.4", "unknown filter \"colorjiter\" (did you mean \"colorjitter\"?)" },
		{ "RandomRotation=10", "(did you mean \"rotation\"?)" },
		{ "GaussianBlur=3", "(did you mean \"gaussblur\"?)" },
		{ "nosuch", "filters: resize, centercrop," },
		{ "rotation=10:interp=bilinar", "unknown interpolation \"bilinar\" (did you mean \"bilinear\"?)" },
		{ "rotation=10:interp=bilinar", "interpolation: nearest, bilinear, bicubic" },
		{ "randaug=n=2:bin=31", "randaug has no argument \"bin\" (did you mean \"bins\"?)" },
		{ "randaug=n=2:bin=31", "its arguments: n, m, bins, interp, fill" },
		{ "gaussblur=4", "kernel_size 4x4: must be odd" },
		{ "gaussblur", "gaussblur needs its kernel_size" },
		{ "rotation", "rotation needs its degrees" },
		{ "colorjitter=hue=0.6", "hue -0.6-0.6 out of range -0.5..0.5" },
		{ "colorjitter=brightness=-1", "a single value must be >= 0" },
		{ "vflip=p=1.5", "p 1.5 out of range 0..1" },
		{ "apply=0.5", "apply n=1: only 0 layers follow it" },
		{ "apply=0.5,gray", "apply cannot gate gray (only filters that keep "
		  "the image's channels, and no normalize or other gate)" },
		{ "affine=10:translate=0.1", "translate needs 2 values A/B" },
		{ "rrcrop=32:ratio=3/0-4/3", "is not a number" },
		{ "posterize=9", "bits 9 out of range 0..8" },
		{ "crop=32:pad=4:padding_mode=mirror", "unknown padding_mode \"mirror\"" },
		{ "crop=32:pad=4:padding_mode=mirror",
		  "padding_mode: constant, edge, reflect, symmetric" },
		{ "pad=4:mode=reflct", "(did you mean \"reflect\"?)" },
		{ "pad", "pad needs its pad" },
		{ "pad=-1", "pad \"-1\" is not an integer" },
		{ "pad=1/2/3", "pad needs 1, 2 or 4 values" },
		{ "apply,apply,vflip", "apply cannot gate apply" },
		{ "order=2,vflip,rotation=3:expand=1", "order cannot gate rotation expand=1" },
		{ "Pad=2", "(did you mean \"pad\"?)" },
	};

	check_errors(cases, sizeof cases / sizeof *cases);
}

/* Canonical text of spec ("" on error). */
static void canonical(const char *spec, char *out, size_t size)
{
	rfb_pipeline *p = NULL;

	out[0] = '\0';
	if (rfb_pipeline_parse(spec, &p, NULL) == 0)
		snprintf(out, size, "%s", rfb_pipeline_canonical(p));
	rfb_pipeline_free(p);
}

static void test_aliases_and_canonical(void)
{
	static const struct {
		const char *a, *b; /* same layers */
	} same[] = {
		{ "randaug=num_ops=2:magnitude=9:num_magnitude_bins=31:interpolation=bilinear",
		  "randaug=n=2:m=9:bins=31:interp=bilinear" },
		{ "rrcrop=224:ratio=3/4-4/3", "rrcrop=224:ratio=0.75-1.3333333333333333" },
		{ "sharpness=sharpness_factor=2", "sharpness=factor=2:p=0.5" },
		{ "colorjitter=0.4", "colorjitter=brightness=0.6-1.4" },
		{ "colorjitter=hue=0.1", "colorjitter=hue=-0.1-0.1" },
		{ "colorjitter=brightness=1-1", "colorjitter" },
		{ "rotation=30", "rotation=degrees=-30-30:interp=nearest:fill=0" },
		{ "affine=0:shear=5", "affine=degrees=0-0:shear=-5-5" },
		{ "gaussblur=5", "gaussblur=kernel_size=5x5:sigma=0.1-2" },
		{ "crop=32:padding=4", "crop=32:pad=4" },
		{ "apply,vflip", "apply=p=0.5:n=1,vflip=p=0.5" },
		{ "pad=padding=2/3:padding_mode=edge", "pad=2/3/2/3:mode=edge" },
		{ "rotation=30:expand=0", "rotation=30" },
		{ "choice=2,randaug=n=2,vflip", "choice=n=2:p=1/1:layers=2/1,randaug,vflip" },
		{ "order=2,vflip,invert", "order=n=2:layers=1/1,vflip,invert" },
		{ "rotation=degrees=30:expand=1:center=1/2.5",
		  "rotation=-30-30:center=1/2.5:expand=1" },
		{ "pad=1:mode=reflect:fill=9", "pad=1:mode=reflect" },
		{ "crop=32:pad=4:padding_mode=constant", "crop=32:pad=4" },
	};
	static const char *const round_trip[] = {
		"rrcrop=224,flip,apply=0.8,colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1,"
		"grayscale=0.2,gaussblur=23:sigma=0.1-2,solarize=128:p=0.2",
		"affine=degrees=-10-10:translate=0.1/0.2:scale=0.9-1.1:shear=-5-5/-3-3:"
		"interp=bilinear:fill=1/2/3,perspective=0.3:p=0.7:interp=bicubic,"
		"erasing=p=0.25:scale=0.1-0.2:ratio=1/3-3:value=9/8/7",
		"posterize=4,equalize,autocontrast=0.3,invert=1,vflip=0.1,"
		"colorjitter=hue=-0.2--0.1,rotation=1e-05-0.5",
		"pad=1/2/3/4:fill=5:mode=symmetric,crop=40:pad=3:mode=reflect:pad_if_needed=1,"
		"crop=9:pad=2:fill=1/2/3,pad=7",
		"rotation=5:expand=1:center=-3/4.5,centercrop=9,affine=3:center=0/0.25",
		/* one layer whose canonical text is over 300 bytes */
		"affine=degrees=-1.2345678901234567-1.2345678901234567:translate="
		"0.12345678901234567/0.12345678901234567:scale=0.12345678901234567-"
		"1.2345678901234567:shear=-1.2345678901234567-1.2345678901234567/"
		"-1.2345678901234567-1.2345678901234567:interp=bilinear:fill=255/255/255:"
		"center=123.45678901234567/123.45678901234567",
		"choice=3:p=0.2/0.5/1,randaug=n=1,randaug=n=1,vflip,order=2:layers=2/1,"
		"randaug=n=2,invert,order=1,flip",
		"resize=8,erasing=p=0.3:value=random,erasing=value=3,normalize=mean=0.1:std=2",
		"resize=8,normalize=imagenet,erasing=value=random,erasing=p=0.1:value=-1.5/0/2.25",
	};
	char a[4096], b[4096];

	for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
		canonical(same[i].a, a, sizeof a);
		canonical(same[i].b, b, sizeof b);
		CHECKF(a[0] && strcmp(a, b) == 0, "\"%s\" -> \"%s\" vs \"%s\" -> \"%s\"",
		       same[i].a, a, same[i].b, b);
	}
	for (size_t i = 0; i < sizeof round_trip / sizeof *round_trip; i++) {
		canonical(round_trip[i], a, sizeof a);
		canonical(a, b, sizeof b);
		CHECKF(a[0] && strcmp(a, b) == 0, "%s: \"%s\" then \"%s\"",
		       round_trip[i], a, b);
	}
}

/* A small deterministic RGB image. */
static void make_image(rfb_image *img, rfb_imgbuf *buf, int w, int h)
{
	if (rfb_image_alloc(img, buf, w, h, 3, NULL))
		return;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w * 3; x++)
			img->data[(size_t)y * img->stride + x] =
				(unsigned char)((x * 7 + y * 13 + (x * y) % 31) & 255);
}

/* How often spec changes the image, over n samples. */
static double change_rate(const char *spec, const rfb_image *in, int n)
{
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	size_t size = (size_t)in->width * in->height * 3;
	int changed = 0;

	for (int i = 0; i < n; i++) {
		struct rfb_pipe_out out;
		if (run_spec(spec, in, (uint32_t)i, ctx, &out))
			break;
		changed += out.size != size || memcmp(out.data, in->data, size) != 0;
	}
	rfb_pipe_ctx_free(ctx);
	return (double)changed / n;
}

static void test_probabilities(void)
{
	static const struct {
		const char *spec;
		double p;
	} cases[] = {
		{ "vflip=0.3", 0.3 }, { "grayscale=0.2", 0.2 },
		{ "invert", 0.5 }, { "apply=0.8,invert=1", 0.8 },
		{ "apply=0.6:n=2,vflip=1,invert=1", 0.6 },
		{ "apply=0,invert=1", 0.0 }, { "perspective=0.5:p=0.25", 0.25 },
	};
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	const int n = 2000;

	make_image(&img, &buf, 24, 17);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		double rate = change_rate(cases[i].spec, &img, n);
		double sd = sqrt(cases[i].p * (1 - cases[i].p) / n);
		CHECKF(fabs(rate - cases[i].p) <= 4 * sd + 1e-9, "%s: rate %.3f, want %.3f",
		       cases[i].spec, rate, cases[i].p);
	}
	rfb_imgbuf_free(&buf);
}

/* How often spec's output is each of the outputs of alt[0..k), over n
 * samples, into freq[]; returns how many outputs were none of them. */
static int outcome_rates(const char *spec, const char *const *alt, int k,
			 const rfb_image *in, int n, double *freq)
{
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL), *ref = rfb_pipe_ctx_new(NULL);
	int other = 0;

	for (int j = 0; j < k; j++)
		freq[j] = 0;
	for (int s = 0; s < n; s++) {
		struct rfb_pipe_out out, want;
		int hit = -1;
		if (run_spec(spec, in, (uint32_t)s, ctx, &out))
			return n;
		for (int j = 0; j < k && hit < 0; j++)
			if (run_spec(alt[j], in, 0, ref, &want) == 0 &&
			    want.size == out.size &&
			    memcmp(want.data, out.data, out.size) == 0)
				hit = j;
		if (hit < 0)
			other++;
		else
			freq[hit] += 1.0 / n;
	}
	rfb_pipe_ctx_free(ctx);
	rfb_pipe_ctx_free(ref);
	return other;
}

/* choice (RandomChoice) picks by its weights, order (RandomOrder) runs
 * its options in every order equally often; their parse errors. */
static void test_choice_and_order(void)
{
	static const char *const picks[] = { "vflip=1", "invert=1",
					      "posterize=bits=1:p=1" };
	static const char *const orders[] = {
		"invert=1,posterize=bits=1:p=1", "posterize=bits=1:p=1,invert=1" };
	static const char *const grouped[] = {
		"vflip=1,invert=1,posterize=bits=1:p=1",
		"posterize=bits=1:p=1,vflip=1,invert=1" };
	static const struct spec_error errors[] = {
		/* a randaug=n=2 filter is one option of two layers */
		{ "choice=2,randaug=n=2,invert", "" },
		{ "choice=3,vflip,invert", "choice n=3: only 2 filters follow it" },
		{ "choice=2:layers=2/2,vflip,invert,flip",
		  "choice n=2: its options have 4 layers, only 3 follow it" },
		{ "choice=2:p=1,vflip,invert",
		  "choice n=2 needs 2 weights in p, not 1" },
		{ "choice=2:p=0/0,vflip,invert", "choice p: the weights are all 0" },
		{ "choice=2:p=1/-1,vflip,invert", "p -1 out of range 0..1e+09" },
		{ "order=2:layers=1,vflip,invert",
		  "order n=2 needs 2 counts in layers, not 1" },
		{ "order=2,vflip,crop=8", "order cannot gate crop" },
		{ "choice=2,vflip,apply,invert", "choice cannot gate apply" },
		{ "choice=2,vflip,normalize", "choice cannot gate normalize" },
		{ "order", "order needs its n" },
		{ "choice=17", "n 17 out of range 1..16" },
		{ "order=2:p=1/1,vflip,invert", "order has no argument \"p\"" },
	};
	const double want[3] = { 0.25, 0.5, 0.25 };
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	double freq[3];
	const int n = 1200;

	make_image(&img, &buf, 24, 17);
	CHECK(outcome_rates("choice=3:p=1/2/1,vflip=1,invert=1,posterize=bits=1:p=1",
			    picks, 3, &img, n, freq) == 0);
	for (int j = 0; j < 3; j++)
		CHECKF(fabs(freq[j] - want[j]) < 4 * sqrt(want[j] * (1 - want[j]) / n),
		       "choice option %d: %.3f, want %.3f", j, freq[j], want[j]);
	CHECK(outcome_rates("choice=n=3:p=0/1/0,vflip=1,invert=1,posterize=bits=1:p=1",
			    picks, 3, &img, 200, freq) == 0);
	CHECK(freq[1] > 0.999);
	CHECK(outcome_rates("order=2,invert=1,posterize=bits=1:p=1", orders, 2,
			    &img, n, freq) == 0);
	CHECKF(fabs(freq[0] - 0.5) < 4 * sqrt(0.25 / n), "order: %.3f", freq[0]);
	CHECK(outcome_rates("order=2:layers=2/1,vflip=1,invert=1,posterize=bits=1:p=1",
			    grouped, 2, &img, n, freq) == 0);
	CHECKF(fabs(freq[0] - 0.5) < 4 * sqrt(0.25 / n), "order: %.3f", freq[0]);
	check_errors(errors, sizeof errors / sizeof *errors);
	rfb_imgbuf_free(&buf);
}

static void test_split_keeps_apply(void)
{
	rfb_pipeline *p, *head, *tail;
	rfb_err err = { 0 };

	CHECK(rfb_pipeline_parse("resize=32,apply=0.5:n=2,vflip,invert,flip", &p,
				 NULL) == 0);
	CHECK(rfb_pipeline_split(p, 2, &head, &tail, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "cuts apply") != NULL);
	CHECK(rfb_pipeline_split(p, 3, &head, &tail, &err) == RFB_EINVAL);
	CHECK(rfb_pipeline_split(p, 4, &head, &tail, &err) == 0);
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	CHECK(rfb_pipeline_split(p, 1, &head, &tail, &err) == 0);
	CHECK(strcmp(rfb_pipeline_canonical(tail),
		     "apply=p=0.5:n=2,vflip=p=0.5,invert=p=0.5,flip=p=0.5") == 0);
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	rfb_pipeline_free(p);
	CHECK(rfb_pipeline_parse("resize=32,order=2,vflip,invert,flip", &p,
				 NULL) == 0);
	CHECK(rfb_pipeline_split(p, 3, &head, &tail, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "cuts order (layer 2)") != NULL);
	CHECK(rfb_pipeline_split(p, 4, &head, &tail, &err) == 0);
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	rfb_pipeline_free(p);
}

/* Same key, same output; a gray image keeps one channel through all. */
static void test_determinism_and_gray(void)
{
	const char *spec = "colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1,"
			   "grayscale=0.5,gaussblur=5,affine=10:translate=0.1/0.1,"
			   "perspective,erasing=1,rotation=20,vflip";
	rfb_pipe_ctx *c1 = rfb_pipe_ctx_new(NULL), *c2 = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf buf = { 0 }, gbuf = { 0 };
	rfb_image img, gray;

	make_image(&img, &buf, 40, 30);
	for (uint32_t s = 0; s < 50; s++) {
		struct rfb_pipe_out a, b;
		CHECK(run_spec(spec, &img, s, c1, &a) == 0);
		CHECK(run_spec(spec, &img, s, c2, &b) == 0);
		CHECK(a.size == b.size && memcmp(a.data, b.data, a.size) == 0);
		CHECK(a.shape.channels == 3 && a.shape.width == 40);
	}
	gray = img;
	CHECK(rfb_image_alloc(&gray, &gbuf, 40, 30, 1, NULL) == 0);
	CHECK(rfb_to_gray(&img, &gray, NULL) == 0);
	for (uint32_t s = 0; s < 20; s++) {
		struct rfb_pipe_out a;
		CHECK(run_spec(spec, &gray, s, c1, &a) == 0);
		CHECK(a.shape.channels == 1);
	}
	rfb_imgbuf_free(&buf);
	rfb_imgbuf_free(&gbuf);
	rfb_pipe_ctx_free(c1);
	rfb_pipe_ctx_free(c2);
}

/* RandomErasing after Normalize: the erased box holds the float value
 * (or standard normal values), the rest is the normalized image. */
static void test_erasing_after_normalize(void)
{
	static const struct spec_error errors[] = {
		{ "erasing=value=random", "erasing value=random draws float "
		  "values: put a normalize after it" },
		{ "erasing=value=0.5", "a whole pixel value 0..255" },
		{ "normalize,vflip", "only erasing may follow it" },
	};
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	struct rfb_pipe_out out;
	/* scale 0.1 of 40 x 30 = 120 pixels, ratio 1: an 11 x 11 box */
	const char *fixed = "normalize=mean=0.5:std=0.25,erasing=p=1:scale=0.1-0.1:"
			    "ratio=1-1:value=7/8/9";
	const char *random = "normalize=mean=0.5:std=0.25,erasing=p=1:scale=0.1-0.1:"
			     "ratio=1-1:value=random";
	double sum = 0, sum2 = 0;
	long n = 0;

	make_image(&img, &buf, 40, 30);
	CHECK(run_spec(fixed, &img, 3, ctx, &out) == 0);
	CHECK(out.dtype == RFB_DTYPE_F32 && out.layout == RFB_LAYOUT_CHW);
	for (int c = 0; c < 3; c++) {
		const float *t = (const float *)out.data + (size_t)c * 40 * 30;
		int count = 0;
		for (int i = 0; i < 40 * 30; i++)
			count += t[i] == (float)(7 + c);
		CHECKF(count == 121, "channel %d: %d values erased", c, count);
	}
	for (uint32_t s = 0; s < 40; s++) {
		const float *t;
		CHECK(run_spec(random, &img, s, ctx, &out) == 0);
		t = out.data;
		for (int i = 0; i < 3 * 40 * 30; i++) {
			/* normalized pixels are multiples of 1/(255 * 0.25) */
			double v = t[i], k = (v * 0.25 + 0.5) * 255;
			if (fabs(k - nearbyint(k)) > 1e-3 || v < -2.0001 || v > 2.0001) {
				sum += v;
				sum2 += v * v;
				n++;
			}
		}
	}
	/* nearly all 40 x 363 erased values are off the pixel grid */
	CHECKF(n > 40 * 363 * 9 / 10, "%ld random values", n);
	CHECKF(fabs(sum / n) < 0.05 && fabs(sum2 / n - 1.0) < 0.1,
	       "mean %.3f variance %.3f", sum / n, sum2 / n);
	check_errors(errors, sizeof errors / sizeof *errors);
	rfb_imgbuf_free(&buf);
	rfb_pipe_ctx_free(ctx);
}

/* The parsed spec's out_shape for a w x h RGB input (its return code). */
static int shape_of(const char *spec, int w, int h, struct rfb_pipe_shape *out,
		    rfb_err *err)
{
	struct rfb_pipe_shape in = { w, h, 3 };
	rfb_pipeline *p = NULL;
	int rc = rfb_pipeline_parse(spec, &p, NULL);

	if (!rc)
		rc = rfb_pipeline_out_shape(p, &in, out, err);
	rfb_pipeline_free(p);
	return rc;
}

static int fixed_of(const char *spec, struct rfb_pipe_shape *out, rfb_err *err)
{
	rfb_pipeline *p = NULL;
	int rc = rfb_pipeline_parse(spec, &p, NULL);

	if (!rc)
		rc = rfb_pipeline_fixed_shape(p, 3, out, err);
	rfb_pipeline_free(p);
	return rc;
}

/* A spec's output size for a 67 x 53 RGB input (shape_of) or its fixed
 * size (fixed_of): the return code, then, when it is 0 and w > 0, the size
 * w x h, or, when it is not 0 and msg is not NULL, a part of the error. */
struct shape_case {
	int fixed;
	const char *spec;
	int rc, w, h;
	const char *msg;
};

static void check_shapes(const struct shape_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct shape_case *c = &cases[i];
		struct rfb_pipe_shape s = { 0, 0, 0 };
		rfb_err err = { 0 };
		int rc = c->fixed ? fixed_of(c->spec, &s, &err)
				  : shape_of(c->spec, 67, 53, &s, &err);

		CHECKF(rc == c->rc, "%s: %d, want %d (%s)", c->spec, rc, c->rc,
		       err.msg);
		if (rc == 0 && c->rc == 0 && c->w)
			CHECKF(s.width == c->w && s.height == c->h,
			       "%s: %dx%d, want %dx%d", c->spec, s.width,
			       s.height, c->w, c->h);
		if (rc && c->msg)
			CHECKF(strstr(err.msg, c->msg) != NULL,
			       "%s: got \"%s\", want \"%s\"", c->spec, err.msg,
			       c->msg);
	}
}

/* rotation expand=1: a size drawn per sample, fixed again by what follows;
 * the shapes predicted where they can be, refused where they cannot. */
static void test_rotation_expand_shapes(void)
{
	static const struct shape_case shapes[] = {
		{ 0, "rotation=30:expand=1", RFB_ESPEC, 0, 0,
		  "depends on the angle layer 1 (rotation expand=1) draws" },
		{ 0, "rotation=30:expand=1,centercrop=20", 0, 20, 20, NULL },
		{ 0, "rotation=30:expand=1,rrcrop=9x8,pad=1", 0, 10, 11, NULL },
		/* a crop fits every angle (the least size is at 0 degrees) ... */
		{ 0, "rotation=10:expand=1,crop=50", 0, 50, 50, NULL },
		/* ... or may not, unless it pads */
		{ 0, "rotation=10:expand=1,crop=60", RFB_ESPEC, 0, 0,
		  "crop 60x60 may be larger than the image layer 1 (rotation "
		  "expand=1) makes, 53x67 or more: use pad_if_needed=1" },
		{ 0, "rotation=10:expand=1,crop=60:pad_if_needed=1", 0, 60, 60,
		  NULL },
		{ 0, "rotation=90-180:expand=1,crop=60", RFB_ESPEC, 0, 0, NULL },
		{ 0, "rotation=80-100:expand=1,crop=60", RFB_ESPEC, 0, 0, NULL },
		{ 0, "rotation=80-100:expand=1,crop=50", 0, 50, 50, NULL },
		/* batching stages need a fixed size */
		{ 1, "resize=64x64,rotation=20:expand=1", RFB_ESPEC, 0, 0,
		  "depends on the angle layer 2 (rotation expand=1) draws: "
		  "follow it with a crop" },
		{ 1, "resize=64x64,rotation=90-90:expand=1", 0, 64, 64, NULL },
		{ 1, "resize=64x32,rotation=90-90:expand=1", 0, 64, 32, NULL },
		{ 1, "rotation=20:expand=1,resize=32x30", 0, 30, 32, NULL },
	};
	static const struct spec_error errors[] = {
		{ "rotation=10:expand=2", "unknown expand value \"2\"" },
		{ "rotation=10:center=5", "center needs 2 values X/Y" },
		{ "rotation=10:center=a/1", "center \"a\" is not a number" },
		{ "affine=10:expand=1", "affine has no argument \"expand\"" },
	};
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_shape s;
	struct rfb_pipe_out out;
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	int sizes = 0, last_w = 0, nw, nh;

	make_image(&img, &buf, 67, 53);
	/* one angle: exact, as PIL's expand computes it */
	rfb_rotate_size(67, 53, 30.0, 1, NULL, &nw, &nh);
	CHECK(nw == 85 && nh == 81); /* PIL 9.4: (67, 53).rotate(30, expand=1) */
	CHECK(shape_of("rotation=30-30:expand=1", 67, 53, &s, NULL) == 0);
	CHECK(s.width == nw && s.height == nh);
	CHECK(run_spec("rotation=30-30:expand=1", &img, 0, ctx, &out) == 0);
	CHECK(out.shape.width == nw && out.shape.height == nh);
	rfb_rotate_size(67, 53, 90.0, 1, NULL, &nw, &nh);
	CHECK(nw == 53 && nh == 67);
	/* a range: per sample (refused by shape_of until a layer fixes it) */
	for (uint32_t k = 0; k < 20; k++) {
		CHECK(run_spec("rotation=30:expand=1", &img, k, ctx, &out) == 0);
		CHECK(out.shape.width >= 67 && out.shape.height >= 53);
		sizes += out.shape.width != last_w;
		last_w = out.shape.width;
		CHECK(run_spec("rotation=30:expand=1,centercrop=20", &img, k, ctx,
			       &out) == 0);
		CHECK(out.shape.width == 20 && out.shape.height == 20);
	}
	CHECK(sizes > 5);
	check_shapes(shapes, sizeof shapes / sizeof *shapes);
	check_errors(errors, sizeof errors / sizeof *errors);
	rfb_imgbuf_free(&buf);
	rfb_pipe_ctx_free(ctx);
}

/* ToTensor, RandomErasing(value='random'), Normalize: the erased box
 * holds (N(0, 1) - mean) / std, drawn at normalize; erasing up to
 * normalize is deferred with it (a constant is its normalized pixel). */
static void test_erasing_random_before_normalize(void)
{
	static const struct spec_error errors[] = {
		{ "erasing=value=random,vflip,normalize",
		  "only erasing may come between erasing value=random and "
		  "normalize (its values are drawn at normalize): move vflip "
		  "before it" },
		{ "choice=2,erasing=value=random,erasing,normalize",
		  "choice cannot gate erasing before normalize after "
		  "value=random" },
		{ "apply=0.5,erasing=value=random,normalize", "" },
		{ "erasing=value=random,normalize=imagenet,erasing=value=random",
		  "" },
	};
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	struct rfb_pipe_out out;
	/* an 11 x 11 box, as in test_erasing_after_normalize */
	const char *random = "erasing=p=1:scale=0.1-0.1:ratio=1-1:value=random,"
			     "normalize=mean=0.5:std=0.25";
	const char *then_const = "erasing=p=1:scale=0.1-0.1:ratio=1-1:value=random,"
				 "erasing=p=1:scale=0.1-0.1:ratio=1-1:value=7,"
				 "normalize=mean=0.5:std=0.25";
	double sum = 0, sum2 = 0;
	long n = 0, sevens = 0;

	make_image(&img, &buf, 40, 30);
	for (uint32_t s = 0; s < 40; s++) {
		const float *t;
		CHECK(run_spec(random, &img, s, ctx, &out) == 0);
		CHECK(out.dtype == RFB_DTYPE_F32);
		t = out.data;
		for (int i = 0; i < 3 * 40 * 30; i++) {
			double v = t[i], k = (v * 0.25 + 0.5) * 255;
			if (fabs(k - nearbyint(k)) > 1e-3 || v < -2.0001 || v > 2.0001) {
				sum += v;
				sum2 += v * v;
				n++;
			}
		}
		CHECK(run_spec(then_const, &img, s, ctx, &out) == 0);
		t = out.data;
		for (int i = 0; i < 3 * 40 * 30; i++)
			sevens += t[i] == (float)((7 / 255.0f - 0.5f) / 0.25f);
	}
	/* mean -0.5 / 0.25 = -2, variance 1 / 0.25^2 = 16 */
	CHECKF(n > 40 * 363 * 9 / 10, "%ld random values", n);
	CHECKF(fabs(sum / n + 2.0) < 0.1 &&
	       fabs(sum2 / n - sum / n * sum / n - 16.0) < 1.0,
	       "mean %.3f variance %.3f", sum / n, sum2 / n - sum / n * sum / n);
	/* the constant box (drawn second) lies on top: all its samples */
	CHECKF(sevens >= 40 * 363, "%ld normalized 7s", sevens);
	check_errors(errors, sizeof errors / sizeof *errors);
	rfb_imgbuf_free(&buf);
	rfb_pipe_ctx_free(ctx);
}

/* apply and choice holding layers that change the size: the size is
 * drawn with the gate, one when every branch gives it. */
static void test_gates_that_resize(void)
{
	static const struct shape_case shapes[] = {
		{ 0, "apply=0.5,crop=32", RFB_ESPEC, 0, 0, "output size depends "
		  "on what layer 1 (apply) draws: give its options one size, or "
		  "follow it with a crop" },
		{ 0, "apply=1,crop=32", 0, 32, 32, NULL },
		{ 0, "apply=0,crop=32", 0, 67, 53, NULL },
		{ 0, "apply=0.5,crop=32,centercrop=20", 0, 20, 20, NULL },
		{ 0, "choice=2:layers=1/2,rrcrop=32,resize=40,centercrop=32", 0,
		  32, 32, NULL },
		{ 1, "choice=2:layers=1/2,rrcrop=32,resize=40,centercrop=32", 0,
		  32, 32, NULL },
		{ 1, "choice=2,rrcrop=32,centercrop=30", RFB_ESPEC, 0, 0,
		  "output size depends on what layer 1 (choice) draws" },
		{ 1, "choice=2:p=1/0,rrcrop=32,centercrop=30", 0, 32, 32, NULL },
		{ 1, "resize=64x64,apply=0.5,rotation=30:expand=1,centercrop=20", 0,
		  20, 20, NULL },
		/* a crop that may not fit the smaller branch */
		{ 0, "choice=2,centercrop=20,pad=4,crop=26", RFB_ESPEC, 0, 0,
		  "crop 26x26 may be larger than the image layer 1 (choice) "
		  "makes, 20x20 or more" },
	};
	static const char *const picks[] = { "centercrop=32",
					     "resize=40x40,centercrop=32" };
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	double freq[2];
	const int n = 600;

	check_shapes(shapes, sizeof shapes / sizeof *shapes);
	make_image(&img, &buf, 67, 53);
	CHECK(outcome_rates("choice=2:layers=1/2,centercrop=32,resize=40x40,"
			    "centercrop=32", picks, 2, &img, n, freq) == 0);
	CHECKF(fabs(freq[0] - 0.5) < 4 * sqrt(0.25 / n), "choice: %.3f", freq[0]);
	rfb_imgbuf_free(&buf);
}

static void test_blur_kernel(void)
{
	float k[23];
	double sum = 0;

	rfb_blur_kernel(23, 2.0, k);
	for (int i = 0; i < 23; i++)
		sum += k[i];
	CHECK(fabs(sum - 1.0) < 1e-5);
	CHECK(k[11] > k[10] && k[10] == k[12] && k[0] == k[22]);
}

int main(void)
{
	RUN(test_golden);
	RUN(test_errors);
	RUN(test_aliases_and_canonical);
	RUN(test_probabilities);
	RUN(test_split_keeps_apply);
	RUN(test_choice_and_order);
	RUN(test_gates_that_resize);
	RUN(test_determinism_and_gray);
	RUN(test_erasing_after_normalize);
	RUN(test_blur_kernel);
	RUN(test_rotation_expand_shapes);
	RUN(test_erasing_random_before_normalize);
	return test_done();
}
