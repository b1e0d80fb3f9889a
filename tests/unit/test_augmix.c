/*
 * test_augmix.c - the augmix filter against torchvision 0.14's AugMix:
 * the golden cases of tests/data/golden/augmix (scripts/golden-augmix.py:
 * torchvision with its Dirichlet and randint draws fixed; the same
 * choices given here to rfb_augmix_apply), the Dirichlet sampler's
 * moments and its marginals against the Beta CDF (KS), the draws'
 * structure, the parser (aliases, defaults, bad values), and the filter
 * in a pipeline (determinism, gray images, a crop after it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "refurb/augment.h"
#include "refurb/augmix.h"
#include "refurb/pipeline.h"
#include "test.h"

#define GOLDEN_DIR "tests/data/golden/augmix"

/* The value of key k in params "a=b:c=d" into out (size n); 0 or -1. */
static int param(const char *params, const char *k, char *out, size_t n)
{
	size_t kl = strlen(k);
	const char *p = params;

	while (p && *p) {
		if (strncmp(p, k, kl) == 0 && p[kl] == '=') {
			size_t len = strcspn(p + kl + 1, ":");
			if (len >= n)
				return -1;
			memcpy(out, p + kl + 1, len);
			out[len] = '\0';
			return 0;
		}
		p = strchr(p, ':');
		p = p ? p + 1 : NULL;
	}
	return -1;
}

/* "a/b/c" floats into v; returns the count. */
static int floats(const char *s, float *v, int max)
{
	int n = 0;

	while (*s && n < max) {
		char *end;
		v[n++] = (float)strtod(s, &end);
		s = *end == '/' ? end + 1 : end;
		if (end == s && *end)
			break;
	}
	return n;
}

/* The manifest's choices: m, d, interp, fill, all_ops, ops. */
static int read_choice(const char *params, struct rfb_augmix_spec *spec,
		       unsigned char fill[3], struct rfb_augmix_choice *c)
{
	char buf[1024], *p;
	float d[RFB_AUGMIX_MAX_WIDTH];
	int n, chain = 0, k = 0;

	memset(c, 0, sizeof *c);
	memset(spec, 0, sizeof *spec);
	spec->severity = 10;
	if (param(params, "m", buf, sizeof buf) || floats(buf, c->m, 2) != 2 ||
	    param(params, "d", buf, sizeof buf))
		return -1;
	n = floats(buf, d, RFB_AUGMIX_MAX_WIDTH);
	c->width = spec->width = n;
	for (int i = 0; i < n; i++)
		c->weight[i] = d[i] * c->m[1]; /* torch: float32 product */
	if (param(params, "interp", buf, sizeof buf))
		return -1;
	spec->interp = buf[0] == 'b' ? RFB_INTERP_BILINEAR : RFB_INTERP_NEAREST;
	if (param(params, "fill", buf, sizeof buf))
		return -1;
	if (strcmp(buf, "none") != 0) {
		int v[3], m = sscanf(buf, "%d/%d/%d", &v[0], &v[1], &v[2]);
		for (int i = 0; i < 3; i++)
			fill[i] = (unsigned char)v[m == 3 ? i : 0];
		spec->fill = fill;
	}
	if (param(params, "all_ops", buf, sizeof buf))
		return -1;
	spec->all_ops = buf[0] == '1';
	if (param(params, "ops", buf, sizeof buf))
		return -1;
	for (p = buf; *p;) {
		struct rfb_augmix_step *s = &c->step[chain][k];
		int used = 0;
		if (sscanf(p, "%d.%d.%d%n", &s->index, &s->bin, &s->negative,
			   &used) != 3)
			return -1;
		p += used;
		c->depth[chain] = ++k;
		if (*p == '/') {
			chain++;
			k = 0;
		}
		if (*p)
			p++;
	}
	return chain + 1 == n ? 0 : -1;
}

struct augmix_golden {
	struct rfb_augmix_scratch scratch;
	int ops; /* cases of one op ("op_*") */
};

/* A case: rfb_augmix_apply with the manifest's choices. */
static int golden_case(void *ctx, const struct golden_line *g)
{
	struct augmix_golden *t = ctx;
	rfb_imgbuf outb = { 0 };
	rfb_image out;
	struct rfb_augmix_spec spec;
	struct rfb_augmix_choice c;
	unsigned char fill[3];
	int ok = 0;

	t->ops += strncmp(g->name, "op_", 3) == 0;
	if (read_choice(g->params, &spec, fill, &c)) {
		printf("# %s: bad params %s\n", g->name, g->params);
		return 0;
	}
	if (rfb_image_alloc(&out, &outb, g->in->width, g->in->height,
			    g->in->channels, NULL) ||
	    rfb_augmix_apply(&spec, &c, g->in, &out, &t->scratch, NULL))
		goto done;
	struct golden_diff d = golden_compare(&out, g->expected);
	/* the tolerance, and mostly exact: a mix rounded instead of
	 * truncated is within 1 everywhere, but exact on about half */
	ok = d.same_shape && d.within1 >= 0.99 && d.exact >= 0.98;
	printf("# %-40s exact %.4f  within1 %.4f  max %3d%s\n", g->name, d.exact,
	       d.within1, d.max_abs, ok ? "" : "  FAIL");
done:
	rfb_imgbuf_free(&outb);
	return ok;
}

static void test_golden(void)
{
	struct augmix_golden t = { .ops = 0 };
	int bad, n = golden_run(GOLDEN_DIR, golden_case, &t, &bad);

	rfb_augmix_scratch_free(&t.scratch);
	CHECKF(n >= 0, "no %s/manifest.tsv (run scripts/golden-augmix.py)",
	       GOLDEN_DIR);
	printf("# %d golden cases (%d single ops), %d out of tolerance\n", n,
	       t.ops, bad);
	CHECK(t.ops >= 100);
	CHECK(n - t.ops >= 30);
	CHECK(bad == 0);
}

/* ---- the Dirichlet sampler ---- */

/* The Beta(a, a) CDF at x for a = 0.5, 1, 2 (Dirichlet([a, a])'s
 * first component). */
static double beta_cdf(double a, double x)
{
	if (a == 0.5)
		return 2.0 / M_PI * asin(sqrt(x));
	if (a == 1.0)
		return x;
	return 3 * x * x - 2 * x * x * x;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* Kolmogorov-Smirnov: Dirichlet([a, a])[0] against Beta(a, a), and the
 * mean and variance of Dirichlet([a] * 3)'s components against
 * 1/3 and 2 / (9 (3a + 1)). */
static void test_dirichlet(void)
{
	static const double alphas[] = { 0.5, 1.0, 2.0 };
	enum { N = 20000 };
	static float x[N];
	rfb_rng rng;

	for (int k = 0; k < 3; k++) {
		double a = alphas[k], al[3] = { a, a, a }, d = 0.0;
		double sum[3] = { 0 }, sq[3] = { 0 };
		rfb_rng_init(&rng, 99, (uint32_t)k, 0, 0);
		for (int i = 0; i < N; i++) {
			float v[2];
			rfb_dirichlet_draw(&rng, al, 2, v);
			CHECK(v[0] > 0.0f && v[0] < 1.0f);
			CHECK(fabsf(v[0] + v[1] - 1.0f) < 1e-6f);
			x[i] = v[0];
		}
		qsort(x, N, sizeof x[0], cmp_float);
		for (int i = 0; i < N; i++) {
			double f = beta_cdf(a, x[i]);
			d = fmax(d, fmax(fabs(f - (double)i / N),
					 fabs((double)(i + 1) / N - f)));
		}
		/* 1.95 / sqrt(N): the 0.1% critical value */
		printf("# alpha %.1f: KS D = %.4f (critical %.4f)\n", a, d,
		       1.95 / sqrt(N));
		CHECK(d < 1.95 / sqrt(N));
		for (int i = 0; i < N; i++) {
			float v[3];
			rfb_dirichlet_draw(&rng, al, 3, v);
			for (int c = 0; c < 3; c++) {
				sum[c] += v[c];
				sq[c] += (double)v[c] * v[c];
			}
		}
		for (int c = 0; c < 3; c++) {
			double mean = sum[c] / N, var = sq[c] / N - mean * mean;
			double want = 2.0 / (9.0 * (3.0 * a + 1.0));
			CHECKF(fabs(mean - 1.0 / 3.0) < 0.01, "alpha %g mean %g", a, mean);
			CHECKF(fabs(var - want) < 0.08 * want, "alpha %g var %g want %g",
			       a, var, want);
		}
	}
}

/* Gamma(alpha): mean and variance alpha, below and above 1. */
static void test_gamma(void)
{
	static const double alphas[] = { 0.3, 1.0, 4.5 };
	rfb_rng rng;

	for (int k = 0; k < 3; k++) {
		double a = alphas[k], sum = 0, sq = 0;
		enum { N = 40000 };
		rfb_rng_init(&rng, 5, 0, (uint32_t)k, 1);
		for (int i = 0; i < N; i++) {
			double g = rfb_gamma_draw(&rng, a);
			CHECK(g >= 0.0);
			sum += g;
			sq += g * g;
		}
		double mean = sum / N, var = sq / N - mean * mean;
		CHECKF(fabs(mean - a) < 0.03 * a + 0.01, "alpha %g mean %g", a, mean);
		CHECKF(fabs(var - a) < 0.08 * a, "alpha %g var %g", a, var);
	}
}

/* The draws' structure: depths 1..3 (or the fixed one), op indices in
 * the space (9 without all_ops), bins below severity, signs only on
 * signed ops, m[0] + sum of the weights = 1. */
static void test_draw(void)
{
	int seen_depth[4] = { 0 }, seen_op[RFB_AUGMIX_OPS] = { 0 }, max_bin = 0;
	rfb_rng rng;

	for (int all = 0; all <= 1; all++)
		for (uint32_t s = 0; s < 2000; s++) {
			struct rfb_augmix_spec spec = { 4, 3, s % 5 == 0 ? 2 : -1, 1.0,
							all, RFB_INTERP_BILINEAR, NULL };
			struct rfb_augmix_choice c;
			double total;
			rfb_rng_init(&rng, 1, 2, s, 3);
			rfb_augmix_draw(&rng, &spec, &c);
			CHECK(c.width == 3);
			total = c.m[0];
			for (int i = 0; i < 3; i++) {
				total += c.weight[i];
				CHECK(c.depth[i] >= 1 && c.depth[i] <= 3);
				CHECK(spec.depth < 0 || c.depth[i] == 2);
				if (spec.depth < 0)
					seen_depth[c.depth[i]]++;
				for (int k = 0; k < c.depth[i]; k++) {
					const struct rfb_augmix_step *st = &c.step[i][k];
					enum rfb_op op = rfb_augmix_op(st->index);
					CHECK(st->index >= 0 &&
					      st->index < (all ? 13 : 9));
					seen_op[st->index]++;
					CHECK(st->bin >= 0 && st->bin < 4);
					max_bin = st->bin > max_bin ? st->bin : max_bin;
					CHECK(rfb_aug_op_signed(op) || st->negative == 0);
					CHECK(op != RFB_OP_AUTOCONTRAST || st->bin == 0);
				}
			}
			CHECK(fabs(total - 1.0) < 1e-5);
		}
	for (int d = 1; d <= 3; d++)
		CHECKF(seen_depth[d] > 1000, "depth %d: %d", d, seen_depth[d]);
	/* width 1: m is still Dirichlet([alpha, alpha]): Beta(0.5, 0.5) has
	 * mean 1/2 and variance 1/8 */
	double sum = 0, sq = 0;
	for (uint32_t s = 0; s < 20000; s++) {
		struct rfb_augmix_spec spec = { 3, 1, -1, 0.5, 1, RFB_INTERP_NEAREST,
						NULL };
		struct rfb_augmix_choice c;
		rfb_rng_init(&rng, 4, 0, s, 3);
		rfb_augmix_draw(&rng, &spec, &c);
		CHECK(c.width == 1 && fabsf(c.m[0] + c.weight[0] - 1.0f) < 1e-6f);
		sum += c.m[0];
		sq += (double)c.m[0] * c.m[0];
	}
	CHECKF(fabs(sum / 20000 - 0.5) < 0.01, "mean %g", sum / 20000);
	CHECKF(fabs(sq / 20000 - 0.25 - 0.125) < 0.01, "var %g",
	       sq / 20000 - 0.25);
	for (int i = 0; i < RFB_AUGMIX_OPS; i++)
		CHECKF(seen_op[i] > 100, "op %d: %d", i, seen_op[i]);
	CHECK(max_bin == 3);
}

/* ---- the filter ---- */

static const char *canonical(const char *spec)
{
	static char buf[1100];
	rfb_pipeline *p = NULL;
	rfb_err err = { 0 };

	if (rfb_pipeline_parse(spec, &p, &err)) {
		snprintf(buf, sizeof buf, "ERROR %s", err.msg);
		return buf;
	}
	snprintf(buf, sizeof buf, "%s", rfb_pipeline_canonical(p));
	rfb_pipeline_free(p);
	return buf;
}

static void test_parse(void)
{
	static const struct {
		const char *spec, *want;
	} ok[] = {
		{ "augmix", "augmix=severity=3:width=3:depth=-1:alpha=1:all_ops=1:"
			    "interp=bilinear:fill=none" },
		{ "augmix=severity=2:mixture_width=4:chain_depth=2:alpha=0.5:"
		  "all_ops=0:interpolation=nearest:fill=10/20/30",
		  "augmix=severity=2:width=4:depth=2:alpha=0.5:all_ops=0:"
		  "interp=nearest:fill=10/20/30" },
		{ "augmix=7:chain_depth=0:alpha=1/4:fill=9",
		  "augmix=severity=7:width=3:depth=-1:alpha=0.25:all_ops=1:"
		  "interp=bilinear:fill=9/9/9" },
		{ "augmix=depth=-5:fill=none", "augmix=severity=3:width=3:depth=-1:"
		  "alpha=1:all_ops=1:interp=bilinear:fill=none" },
	};
	static const struct {
		const char *spec, *msg;
	} bad[] = {
		{ "augmix=severity=11", "severity 11 out of range 1..10" },
		{ "augmix=severity=0", "severity 0 out of range 1..10" },
		{ "augmix=width=0", "width 0 out of range 1..16" },
		{ "augmix=mixture_width=17", "width 17 out of range 1..16" },
		{ "augmix=depth=17", "depth 17 out of range 0..16" },
		{ "augmix=alpha=0", "alpha 0 out of range: need 0 < alpha" },
		{ "augmix=alpha=x", "alpha \"x\" is not a number" },
		{ "augmix=interp=bicubic", "unknown interpolation \"bicubic\"" },
		{ "augmix=interp=bicubic", "interpolation: nearest, bilinear\0" },
		{ "augmix=all_ops=2", "unknown all_ops value \"2\"" },
		{ "augmix=fill=300", "fill 300 out of range 0..255" },
		{ "augmix=sevrity=3", "(did you mean \"severity\"?)" },
		{ "augmix=width=3:width=2", "width given twice" },
		{ "augmx", "(did you mean \"augmix\"?)" },
		{ "AugMix", "(did you mean \"augmix\"?)" },
	};

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		const char *got = canonical(ok[i].spec);
		CHECKF(strcmp(got, ok[i].want) == 0, "%s -> %s", ok[i].spec, got);
		CHECKF(strcmp(canonical(ok[i].want), ok[i].want) == 0, "%s",
		       ok[i].want);
	}
	/* the valid choices end the message: bicubic is not one (tensors) */
	const char *hint = "interpolation: nearest, bilinear";
	const char *got = canonical("augmix=interp=cubic");
	size_t len = strlen(got);
	CHECKF(len > strlen(hint) && strcmp(got + len - strlen(hint), hint) == 0,
	       "%s", got);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *got = canonical(bad[i].spec);
		CHECKF(strncmp(got, "ERROR ", 6) == 0, "%s parsed", bad[i].spec);
		/* a message ending in \0 must end the error's hint line */
		CHECKF(strstr(got, bad[i].msg) != NULL, "%s: %s", bad[i].spec, got);
	}
}

static void make_image(rfb_image *img, rfb_imgbuf *buf, int w, int h, int c)
{
	CHECK(rfb_image_alloc(img, buf, w, h, c, NULL) == 0);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w * c; x++)
			rfb_image_px(img, 0, y)[x] =
				(unsigned char)((x * 7 + y * 13 + (x * y) % 31) & 255);
}

static int run(rfb_pipe_ctx *ctx, const char *spec, const rfb_image *in,
	       uint32_t sample, struct rfb_pipe_out *out)
{
	struct rfb_pipe_key key = { 3, 1, sample, RFB_STAGE_FINAL };
	rfb_pipeline *p = NULL;
	int rc = rfb_pipeline_parse(spec, &p, NULL);

	if (!rc)
		rc = rfb_pipe_run(ctx, p, in, &key, out, NULL);
	rfb_pipeline_free(p);
	return rc;
}

/* Same key, same bytes (any context); other samples differ; the output
 * keeps the shape; a 1-channel image stays one channel; the mix is
 * between the image and its chains (identity-like: m[0] = 1 gives the
 * image back). */
static void test_pipeline(void)
{
	rfb_imgbuf b1 = { 0 }, b2 = { 0 }, keep = { 0 };
	rfb_image rgb, gray;
	rfb_pipe_ctx *c1 = rfb_pipe_ctx_new(NULL), *c2 = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_out a, b;
	int differ = 0;

	make_image(&rgb, &b1, 61, 47, 3);
	make_image(&gray, &b2, 40, 30, 1);
	for (uint32_t s = 0; s < 20; s++) {
		size_t n;
		CHECK(run(c1, "augmix", &rgb, s, &a) == 0);
		CHECK(a.shape.width == 61 && a.shape.height == 47 &&
		      a.shape.channels == 3);
		n = a.size;
		CHECK(rfb_imgbuf_reserve(&keep, n, NULL) == 0);
		memcpy(keep.data, a.data, n);
		CHECK(run(c2, "resize=10,augmix=interp=nearest", &rgb, s, &b) == 0);
		CHECK(run(c2, "augmix", &rgb, s, &b) == 0);
		CHECK(b.size == n && memcmp(b.data, keep.data, n) == 0);
		CHECK(run(c2, "augmix", &rgb, s + 100, &b) == 0);
		differ += memcmp(b.data, keep.data, n) != 0;
		CHECK(run(c1, "gray,augmix=width=2:fill=30", &rgb, s, &a) == 0);
		CHECK(a.shape.channels == 1);
		CHECK(run(c1, "augmix=all_ops=0", &gray, s, &a) == 0);
		CHECK(a.shape.width == 40 && a.shape.channels == 1);
	}
	CHECK(differ >= 19);
	rfb_pipe_ctx_free(c1);
	rfb_pipe_ctx_free(c2);
	rfb_imgbuf_free(&b1);
	rfb_imgbuf_free(&b2);
	rfb_imgbuf_free(&keep);
}

/* rfb_augmix_apply's bad inputs. */
static void test_apply_errors(void)
{
	rfb_imgbuf b1 = { 0 }, b2 = { 0 };
	rfb_image in, out;
	struct rfb_augmix_spec spec = { 3, 1, 1, 1.0, 1, RFB_INTERP_BILINEAR, NULL };
	struct rfb_augmix_choice c = { 0 };
	struct rfb_augmix_scratch s = { 0 };
	rfb_err err = { 0 };

	make_image(&in, &b1, 20, 10, 3);
	CHECK(rfb_image_alloc(&out, &b2, 20, 10, 3, NULL) == 0);
	c.width = 1;
	c.m[0] = 1.0f;
	c.depth[0] = 1;
	c.step[0][0] = (struct rfb_augmix_step){ 13, 0, 0 };
	CHECK(rfb_augmix_apply(&spec, &c, &in, &out, &s, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "op 13 bin 0 out of range") != NULL);
	c.step[0][0] = (struct rfb_augmix_step){ 4, 10, 0 };
	CHECK(rfb_augmix_apply(&spec, &c, &in, &out, &s, &err) == RFB_EINVAL);
	c.step[0][0] = (struct rfb_augmix_step){ 4, 9, 0 };
	spec.interp = RFB_INTERP_BICUBIC;
	CHECK(rfb_augmix_apply(&spec, &c, &in, &out, &s, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "nearest or bilinear") != NULL);
	spec.interp = RFB_INTERP_NEAREST;
	CHECK(rfb_augmix_apply(&spec, &c, &in, &out, &s, &err) == 0);
	c.width = 0;
	CHECK(rfb_augmix_apply(&spec, &c, &in, &out, &s, &err) == RFB_EINVAL);
	/* m[0] = 1, weight 0: the image itself */
	c.width = 1;
	CHECK(rfb_augmix_apply(&spec, &c, &in, &out, &s, &err) == 0);
	CHECK(memcmp(in.data, out.data, 20 * 10 * 3) == 0);
	/* the tensor ops' own checks */
	CHECK(rfb_tensor_op_apply(RFB_OP_POSTERIZE, 9, RFB_INTERP_NEAREST, NULL, &in,
				  &out, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "Posterize bits 9 outside 0..8") != NULL);
	CHECK(rfb_tensor_op_apply(RFB_OP_TRANSLATE_X, 1e12, RFB_INTERP_NEAREST, NULL,
				  &in, &out, &err) == RFB_EINVAL);
	CHECK(rfb_tensor_op_apply(RFB_OP_BRIGHTNESS, -1.5, RFB_INTERP_NEAREST, NULL,
				  &in, &out, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "Brightness factor -0.5 is negative") != NULL);
	CHECK(rfb_tensor_op_apply(RFB_OP_ROTATE, 10, RFB_INTERP_BICUBIC, NULL, &in,
				  &out, &err) == RFB_EINVAL);
	out.width = 19;
	CHECK(rfb_tensor_op_apply(RFB_OP_ROTATE, 10, RFB_INTERP_NEAREST, NULL, &in,
				  &out, &err) == RFB_EINVAL);
	CHECK(rfb_augmix_apply(&spec, &c, &in, &out, &s, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "different shapes") != NULL);
	rfb_augmix_scratch_free(&s);
	rfb_imgbuf_free(&b1);
	rfb_imgbuf_free(&b2);
}

int main(void)
{
	RUN(test_golden);
	RUN(test_dirichlet);
	RUN(test_gamma);
	RUN(test_draw);
	RUN(test_parse);
	RUN(test_pipeline);
	RUN(test_apply_errors);
	return test_done();
}
