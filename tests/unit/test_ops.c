/*
 * test_ops.c - rfb_op_apply() against torchvision 0.14 + PIL 9.4: every
 * case of tests/data/golden/ops/manifest.tsv (made by
 * scripts/golden-ops.py) with the tolerances, plus argument
 * checks, strides and fill handling.  Each golden case prints its exact
 * fraction as a TAP comment.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/ops.h"
#include "golden.h"
#include "test.h"

#define GOLDEN_DIR "tests/data/golden/ops"
#define MAX_CASES 1024

struct golden_case {
	char name[96], input[64], output[96];
	enum rfb_op op;
	double magnitude;
	enum rfb_interp interp;
	unsigned char fill[3];
	int has_fill;
};

static struct golden_case cases[MAX_CASES];
static int case_count, manifest_ok;
static enum rfb_op current_op;

static int op_by_name(const char *name, enum rfb_op *op)
{
	int v = rfb_op_parse(name);

	if (v < 0)
		return -1;
	*op = (enum rfb_op)v;
	return 0;
}

/* params: m=V[:interp=NAME][:fill=A,B,C] */
static int parse_params(char *params, struct golden_case *c)
{
	c->interp = RFB_INTERP_NEAREST;
	for (char *tok = strtok(params, ":"); tok; tok = strtok(NULL, ":")) {
		if (strncmp(tok, "m=", 2) == 0) {
			c->magnitude = strtod(tok + 2, NULL);
		} else if (strcmp(tok, "interp=bilinear") == 0) {
			c->interp = RFB_INTERP_BILINEAR;
		} else if (strcmp(tok, "interp=bicubic") == 0) {
			c->interp = RFB_INTERP_BICUBIC;
		} else if (strncmp(tok, "fill=", 5) == 0) {
			unsigned v[3] = { 0, 0, 0 };
			int n = sscanf(tok + 5, "%u,%u,%u", &v[0], &v[1], &v[2]);
			if (n < 1)
				return -1;
			for (int i = 0; i < 3; i++)
				c->fill[i] = (unsigned char)v[i < n ? i : 0];
			c->has_fill = 1;
		} else {
			return -1;
		}
	}
	return 0;
}

static void load_manifest(void)
{
	char line[512], op[32], params[128];
	FILE *f = fopen(GOLDEN_DIR "/manifest.tsv", "r");

	if (!f)
		return;
	while (fgets(line, sizeof line, f) && case_count < MAX_CASES) {
		struct golden_case *c = &cases[case_count];
		if (line[0] == '#')
			continue;
		memset(c, 0, sizeof *c);
		if (sscanf(line, "%95s %63s %31s %127s %95s", c->name, c->input, op,
			   params, c->output) != 5 ||
		    op_by_name(op, &c->op) || parse_params(params, c)) {
			printf("# bad manifest line: %s", line);
			fclose(f);
			return;
		}
		case_count++;
	}
	fclose(f);
	manifest_ok = case_count > 0;
}

static int is_geometric(enum rfb_op op)
{
	return op >= RFB_OP_SHEAR_X && op <= RFB_OP_ROTATE;
}

/* Run one case; returns 1 if within tolerance. */
static int run_case(const struct golden_case *c, double *exact)
{
	rfb_imgbuf inb = { 0 }, expb = { 0 }, outb = { 0 };
	rfb_image in, expected, out;
	char path[256];
	rfb_err err = { 0 };
	int ok = 0;

	snprintf(path, sizeof path, GOLDEN_DIR "/%s", c->input);
	if (golden_read_pnm(path, &in, &inb)) {
		printf("# %s: cannot read %s\n", c->name, path);
		goto done;
	}
	snprintf(path, sizeof path, GOLDEN_DIR "/%s", c->output);
	if (golden_read_pnm(path, &expected, &expb) ||
	    rfb_image_alloc(&out, &outb, in.width, in.height, in.channels, NULL)) {
		printf("# %s: cannot read %s\n", c->name, path);
		goto done;
	}
	if (rfb_op_apply(c->op, c->magnitude, c->interp, c->has_fill ? c->fill : NULL,
			 &in, &out, &err)) {
		printf("# %s: %s\n", c->name, err.msg);
		goto done;
	}
	struct golden_diff d = golden_compare(&out, &expected);
	ok = is_geometric(c->op) ? golden_ok_geometric(&d) : golden_ok_color(&d);
	*exact = d.exact;
	printf("# %-40s exact %.4f  mae %.4f  max %d%s\n", c->name, d.exact,
	       d.mean_abs, d.max_abs, ok ? "" : "  FAIL");
done:
	rfb_imgbuf_free(&inb);
	rfb_imgbuf_free(&expb);
	rfb_imgbuf_free(&outb);
	return ok;
}

/* All golden cases of current_op. */
static void test_golden_op(void)
{
	int n = 0, bad = 0, all_exact = 0;

	CHECKF(manifest_ok, "no golden manifest in %s (run scripts/golden-ops.py)",
	       GOLDEN_DIR);
	for (int i = 0; i < case_count; i++) {
		double exact = 0;
		if (cases[i].op != current_op)
			continue;
		n++;
		if (!run_case(&cases[i], &exact))
			bad++;
		all_exact += exact == 1.0;
	}
	printf("# %s: %d cases, %d bit-exact, %d out of tolerance\n",
	       rfb_op_name(current_op), n, all_exact, bad);
	CHECKF(n > 0, "no golden case for %s", rfb_op_name(current_op));
	CHECKF(bad == 0, "%d %s cases out of tolerance", bad, rfb_op_name(current_op));
}

/* ---- argument checks ---- */

static void test_bad_arguments(void)
{
	unsigned char a[4 * 3 * 3], b[4 * 3 * 3];
	rfb_image src = { a, 12, 4, 3, 3 }, dst = { b, 12, 4, 3, 3 };
	rfb_image small = { b, 9, 3, 3, 3 }, two = { b, 8, 4, 3, 2 };
	rfb_image overlap = { a + 6, 12, 4, 3, 3 };
	rfb_err err = { 0 };

	memset(a, 7, sizeof a);
	CHECK(rfb_op_apply(RFB_OP_INVERT, 0, RFB_INTERP_NEAREST, NULL, &src, &dst,
			   &err) == 0);
	CHECK(rfb_op_apply(RFB_OP_INVERT, 0, RFB_INTERP_NEAREST, NULL, NULL, &dst,
			   &err) == RFB_EINVAL);
	CHECK(rfb_op_apply(RFB_OP_INVERT, 0, RFB_INTERP_NEAREST, NULL, &src, &small,
			   &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "does not match") != NULL);
	CHECK(rfb_op_apply(RFB_OP_INVERT, 0, RFB_INTERP_NEAREST, NULL, &two, &two,
			   &err) == RFB_EINVAL);
	CHECK(rfb_op_apply(RFB_OP_INVERT, 0, RFB_INTERP_NEAREST, NULL, &src,
			   &overlap, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "overlap") != NULL);
	CHECK(rfb_op_apply(RFB_OP_COUNT, 0, RFB_INTERP_NEAREST, NULL, &src, &dst,
			   &err) == RFB_EINVAL);
	CHECK(rfb_op_apply((enum rfb_op)-1, 0, RFB_INTERP_NEAREST, NULL, &src, &dst,
			   &err) == RFB_EINVAL);
	CHECK(rfb_op_apply(RFB_OP_ROTATE, 10, (enum rfb_interp)7, NULL, &src, &dst,
			   &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "interpolation") != NULL);
	CHECK(rfb_op_apply(RFB_OP_ROTATE, NAN, RFB_INTERP_NEAREST, NULL, &src, &dst,
			   &err) == RFB_EINVAL);
	CHECK(rfb_op_apply(RFB_OP_SHEAR_X, INFINITY, RFB_INTERP_NEAREST, NULL, &src,
			   &dst, &err) == RFB_EINVAL);
	CHECK(rfb_op_apply(RFB_OP_POSTERIZE, 9, RFB_INTERP_NEAREST, NULL, &src, &dst,
			   &err) == RFB_EINVAL);
	CHECK(rfb_op_apply(RFB_OP_POSTERIZE, -1, RFB_INTERP_NEAREST, NULL, &src,
			   &dst, &err) == RFB_EINVAL);
	CHECK(rfb_op_apply(RFB_OP_POSTERIZE, 8.9, RFB_INTERP_NEAREST, NULL, &src,
			   &dst, &err) == 0);
	CHECK(rfb_op_apply(RFB_OP_BRIGHTNESS, 1e300, RFB_INTERP_NEAREST, NULL, &src,
			   &dst, &err) == RFB_EINVAL);
	/* ops without magnitude ignore it, even NaN */
	CHECK(rfb_op_apply(RFB_OP_EQUALIZE, NAN, (enum rfb_interp)7, NULL, &src, &dst,
			   &err) == 0);
	CHECK(strcmp(rfb_op_name(RFB_OP_AUTOCONTRAST), "AutoContrast") == 0);
	CHECK(rfb_op_name(RFB_OP_COUNT) == NULL);
	/* huge but finite magnitudes are fine */
	CHECK(rfb_op_apply(RFB_OP_TRANSLATE_X, -1e18, RFB_INTERP_NEAREST, NULL, &src,
			   &dst, &err) == 0);
	CHECK(b[0] == 0 && b[35] == 0);
	CHECK(rfb_op_apply(RFB_OP_ROTATE, 1e17, RFB_INTERP_BILINEAR, NULL, &src,
			   &dst, &err) == 0);
}

/* ---- strides, padding, fill ---- */

static void make_pattern(rfb_image *img, unsigned seed)
{
	for (int y = 0; y < img->height; y++)
		for (int i = 0; i < img->width * img->channels; i++) {
			seed = seed * 1103515245u + 12345u;
			img->data[(size_t)y * img->stride + i] = (unsigned char)(seed >> 16);
		}
}

/* Every op on a padded-stride image gives the packed result, and never
 * writes the padding.  Tall image and strong shears: whole rows fall
 * outside the source. */
#define SW 23
#define SH 41
#define PAD_STRIDE (32 * 3)

static void check_padded(enum rfb_op op, double m, int ch, int interp)
{
	static unsigned char packed_in[SW * SH * 3], packed_out[SW * SH * 3];
	static unsigned char pad_in[PAD_STRIDE * SH], pad_out[PAD_STRIDE * SH];
	rfb_image a = { packed_in, (size_t)SW * ch, SW, SH, ch };
	rfb_image b = { packed_out, (size_t)SW * ch, SW, SH, ch };
	rfb_image c = { pad_in, PAD_STRIDE, SW, SH, ch };
	rfb_image d = { pad_out, PAD_STRIDE, SW, SH, ch };

	make_pattern(&a, 99);
	rfb_image_copy(&c, &a);
	memset(pad_out, 0xA5, sizeof pad_out);
	CHECK(rfb_op_apply(op, m, interp, NULL, &a, &b, NULL) == 0);
	CHECK(rfb_op_apply(op, m, interp, NULL, &c, &d, NULL) == 0);
	struct golden_diff g = golden_compare(&b, &d);
	CHECKF(g.exact == 1.0, "%s %g ch %d interp %d", rfb_op_name(op), m, ch,
	       interp);
	for (int y = 0; y < SH; y++)
		for (size_t i = (size_t)SW * ch; i < PAD_STRIDE; i++)
			if (pad_out[y * PAD_STRIDE + i] != 0xA5) {
				CHECKF(0, "%s %g ch %d interp %d wrote padding of row %d",
				       rfb_op_name(op), m, ch, interp, y);
				return;
			}
}

static void test_strides(void)
{
	static const double mags[] = { 0, 0.3, -0.3, 5, -7, 30, 0.5, -0.5, 0.5,
				       0.9, 4, 100, 0, 0, 0 };
	static const double shears[] = { -0.99, 0.99, -1000, 1000, 0.01 };

	for (int ch = 1; ch <= 3; ch += 2)
		for (int interp = 0; interp < 3; interp++) {
			for (int op = 0; op < RFB_OP_COUNT; op++)
				check_padded((enum rfb_op)op, mags[op], ch, interp);
			for (int i = 0; i < 5; i++) {
				check_padded(RFB_OP_SHEAR_X, shears[i], ch, interp);
				check_padded(RFB_OP_SHEAR_Y, shears[i], ch, interp);
				check_padded(RFB_OP_ROTATE, shears[i] * 90, ch, interp);
			}
		}
}

static void test_fill(void)
{
	unsigned char in[16 * 16 * 3], out1[16 * 16 * 3], out2[16 * 16 * 3];
	static const unsigned char black[3] = { 0, 0, 0 }, color[3] = { 1, 2, 3 };
	rfb_image a = { in, 48, 16, 16, 3 }, b = { out1, 48, 16, 16, 3 };
	rfb_image c = { out2, 48, 16, 16, 3 };

	make_pattern(&a, 5);
	CHECK(rfb_op_apply(RFB_OP_ROTATE, 33, RFB_INTERP_NEAREST, NULL, &a, &b,
			   NULL) == 0);
	CHECK(rfb_op_apply(RFB_OP_ROTATE, 33, RFB_INTERP_NEAREST, black, &a, &c,
			   NULL) == 0);
	CHECK(memcmp(out1, out2, sizeof out1) == 0);
	/* a shift by 4 fills the 4 left columns, keeps the rest */
	CHECK(rfb_op_apply(RFB_OP_TRANSLATE_X, 4.7, RFB_INTERP_NEAREST, color, &a,
			   &c, NULL) == 0);
	for (int y = 0; y < 16; y++) {
		CHECK(memcmp(out2 + y * 48, color, 3) == 0);
		CHECK(memcmp(out2 + y * 48 + 9, color, 3) == 0);
		CHECK(memcmp(out2 + y * 48 + 12, in + y * 48, 36) == 0);
	}
}

/* Saturated images: SMOOTH of all-255 must stay 255 (ops_color.c relies
 * on the kernel weights summing to 1 instead of clamping), and every
 * enhance op keeps a uniform image uniform. */
static void test_saturated(void)
{
	static const double factors_minus_one[] = { -1.0, -0.5, 0.0, 0.9, 2.5, 100 };
	unsigned char in[9 * 7 * 3], out[9 * 7 * 3];

	for (int v = 0; v <= 255; v += 255)
		for (int ch = 1; ch <= 3; ch += 2)
			for (size_t f = 0; f < 6; f++) {
				rfb_image a = { in, 9 * ch, 9, 7, ch };
				rfb_image b = { out, 9 * ch, 9, 7, ch };
				memset(in, v, sizeof in);
				CHECK(rfb_op_apply(RFB_OP_SHARPNESS, factors_minus_one[f],
						   RFB_INTERP_NEAREST, NULL, &a, &b, NULL) == 0);
				for (int i = 0; i < 9 * 7 * ch; i++)
					if (out[i] != v) {
						CHECKF(0, "sharpness of %d, factor %g: %d", v,
						       1 + factors_minus_one[f], out[i]);
						break;
					}
			}
}

int main(void)
{
	load_manifest();
	for (int op = 0; op < RFB_OP_COUNT; op++) {
		char name[64];
		current_op = (enum rfb_op)op;
		snprintf(name, sizeof name, "golden %s", rfb_op_name(current_op));
		test_run(name, test_golden_op);
	}
	RUN(test_bad_arguments);
	RUN(test_strides);
	RUN(test_fill);
	RUN(test_saturated);
	return test_done();
}
