/*
 * test_augment.c - the random choices of RandAugment, AutoAugment and
 * TrivialAugmentWide: magnitude tables and policies equal torchvision's
 * (golden files from scripts/golden-ops.py), the rng consumption order
 * documented in augment.h, and the distributions (chi-square and binomial
 * tests at fixed seeds, so the results are reproducible).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/augment.h"
#include "test.h"

#define GOLDEN_DIR "tests/data/golden/ops"
#define SEED 20240611u

static const char *const space_names[] = { "randaug", "trivialaug", "autoaug" };
static const char *const policy_names[] = { "imagenet", "cifar10", "svhn" };

static int op_by_name(const char *name, enum rfb_op *op)
{
	int v = rfb_op_parse(name);

	if (v < 0)
		return -1;
	*op = (enum rfb_op)v;
	return 0;
}

static int index_of(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* Wilson-Hilferty approximation of the chi-square quantile with dof
 * degrees of freedom at upper tail probability 0.001 (z = 3.0902). */
static double chi2_critical(int dof)
{
	double k = dof, t = 2.0 / (9.0 * k);
	double r = 1.0 - t + 3.0902 * sqrt(t);
	return k * r * r * r;
}

static double chi2_uniform(const long *count, int cells)
{
	long total = 0;
	double stat = 0;

	for (int i = 0; i < cells; i++)
		total += count[i];
	for (int i = 0; i < cells; i++) {
		double e = (double)total / cells, d = count[i] - e;
		stat += d * d / e;
	}
	return stat;
}

/* |k - n p| within 4.5 standard deviations (exact for p = 0 or 1). */
static int binomial_ok(long k, long n, double p)
{
	double sd = sqrt(n * p * (1 - p));
	return fabs(k - n * p) <= 4.5 * sd + 1e-9;
}

/* ---- golden tables ---- */

static int check_table_row(char *line)
{
	char space[16], opname[32], *bits;
	int n, w, h, is_signed, s;
	enum rfb_op op;

	bits = strrchr(line, '\t');
	if (!bits || sscanf(line, "%15s %31s %d %d %d %d", space, opname, &n, &w,
			    &h, &is_signed) != 6 || op_by_name(opname, &op) ||
	    (s = index_of(space_names, 3, space)) < 0) {
		printf("# bad magnitudes line: %s", line);
		return 0;
	}
	CHECKF(rfb_aug_op_signed(op) == is_signed, "%s signed", opname);
	bits++;
	for (int b = 0; b < n; b++) {
		uint32_t want = (uint32_t)strtoul(bits, &bits, 16), got;
		double m = rfb_aug_magnitude((enum rfb_aug_space)s, op, b, n, w, h);
		float f = (float)m;
		memcpy(&got, &f, 4);
		CHECKF(got == want && (double)f == m,
		       "%s %s bins %d %dx%d bin %d: %.9g (%08x), torchvision %08x",
		       space, opname, n, w, h, b, m, got, want);
		if (*bits == ',')
			bits++;
	}
	return 1;
}

static void test_magnitude_tables(void)
{
	char line[4096];
	int rows = 0;
	FILE *f = fopen(GOLDEN_DIR "/magnitudes.tsv", "r");

	CHECKF(f != NULL, "no %s/magnitudes.tsv (run scripts/golden-ops.py)",
	       GOLDEN_DIR);
	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		if (line[0] != '#')
			rows += check_table_row(line);
	fclose(f);
	printf("# %d tables checked\n", rows);
	CHECK(rows > 200);
	/* spot values: RandAugment m=9 of 31; AutoAugment's bins */
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, RFB_OP_ROTATE, 9, 31, 1, 1) ==
	      9.0);
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, RFB_OP_POSTERIZE, 9, 31, 1,
				1) == 7.0);
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_AUTOAUG, RFB_OP_POSTERIZE, 8, 10, 1,
				1) == 4.0);
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_TRIVIALAUG, RFB_OP_POSTERIZE, 30, 31,
				1, 1) == 2.0);
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, RFB_OP_IDENTITY, 9, 31, 1,
				1) == 0.0);
	/* clamping of out-of-range arguments */
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, RFB_OP_ROTATE, 99, 31, 1, 1) ==
	      30.0);
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, RFB_OP_ROTATE, -5, 31, 1, 1) ==
	      0.0);
	CHECK(rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, RFB_OP_ROTATE, 1, 0, 1, 1) ==
	      30.0);
}

static int check_policy_row(char *line)
{
	char pname[16], op1[32], op2[32], b1[8], b2[8];
	double p1, p2;
	int index, pol;
	enum rfb_op want1, want2;
	const struct rfb_autoaug_step *sub;

	if (sscanf(line, "%15s %d %31s %lf %7s %31s %lf %7s", pname, &index, op1,
		   &p1, b1, op2, &p2, b2) != 8 ||
	    (pol = index_of(policy_names, 3, pname)) < 0 ||
	    op_by_name(op1, &want1) || op_by_name(op2, &want2)) {
		printf("# bad policies line: %s", line);
		return 0;
	}
	sub = rfb_autoaug_subpolicy((enum rfb_autoaug_policy)pol, index);
	CHECKF(sub != NULL, "%s %d missing", pname, index);
	if (!sub)
		return 0;
	CHECKF(sub[0].op == want1 && sub[0].prob == p1 &&
	       sub[0].bin == (b1[0] == '-' ? -1 : atoi(b1)) && sub[1].op == want2 &&
	       sub[1].prob == p2 && sub[1].bin == (b2[0] == '-' ? -1 : atoi(b2)),
	       "%s sub-policy %d differs from torchvision", pname, index);
	return 1;
}

static void test_policies(void)
{
	char line[512];
	int rows = 0;
	FILE *f = fopen(GOLDEN_DIR "/policies.tsv", "r");

	CHECKF(f != NULL, "no %s/policies.tsv", GOLDEN_DIR);
	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		if (line[0] != '#')
			rows += check_policy_row(line);
	fclose(f);
	CHECK(rows == 75);
	for (int p = 0; p < 3; p++)
		CHECK(rfb_autoaug_count((enum rfb_autoaug_policy)p) == 25);
	CHECK(rfb_autoaug_count((enum rfb_autoaug_policy)3) == 0);
	CHECK(rfb_autoaug_subpolicy(RFB_AUTOAUG_SVHN, 25) == NULL);
	CHECK(rfb_autoaug_subpolicy(RFB_AUTOAUG_SVHN, -1) == NULL);
}

/* ---- RandAugment ---- */

static void test_randaug_distribution(void)
{
	const int samples = 140000, layers = 2, w = 224, h = 160;
	long ops[RFB_OP_INVERT] = { 0 }, neg[RFB_OP_INVERT] = { 0 };
	long pairs[RFB_OP_INVERT * RFB_OP_INVERT] = { 0 };

	for (int s = 0; s < samples; s++) {
		rfb_rng rng;
		int first = 0;
		rfb_rng_init(&rng, SEED, 3, (uint32_t)s, RFB_STAGE_PARTIAL + 1);
		for (int l = 0; l < layers; l++) {
			struct rfb_aug_op o;
			rfb_randaug_draw(&rng, 9, 31, w, h, &o);
			CHECK(o.op < RFB_OP_INVERT);
			double want = rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, o.op, 9,
							31, w, h);
			CHECKF(fabs(o.magnitude) == want, "%s %g", rfb_op_name(o.op),
			       o.magnitude);
			ops[o.op]++;
			neg[o.op] += o.magnitude < 0 || signbit(o.magnitude);
			if (l == 0)
				first = o.op;
			else
				pairs[first * RFB_OP_INVERT + o.op]++;
		}
	}
	double stat = chi2_uniform(ops, RFB_OP_INVERT);
	printf("# RandAugment ops: chi2 %.2f (13 dof, critical %.2f)\n", stat,
	       chi2_critical(13));
	CHECK(stat < chi2_critical(13));
	stat = chi2_uniform(pairs, RFB_OP_INVERT * RFB_OP_INVERT);
	printf("# RandAugment layer pairs: chi2 %.2f (195 dof, critical %.2f)\n",
	       stat, chi2_critical(195));
	CHECK(stat < chi2_critical(195));
	for (int op = 0; op < RFB_OP_INVERT; op++) {
		int is_signed = rfb_aug_op_signed((enum rfb_op)op);
		CHECKF(is_signed ? binomial_ok(neg[op], ops[op], 0.5) : neg[op] == 0,
		       "%s: %ld of %ld negative", rfb_op_name((enum rfb_op)op),
		       neg[op], ops[op]);
	}
}

/* The draw consumes exactly what augment.h documents. */
static void test_randaug_consumption(void)
{
	for (int s = 0; s < 2000; s++) {
		rfb_rng rng, copy;
		struct rfb_aug_op o;
		rfb_rng_init(&rng, SEED, 0, (uint32_t)s, RFB_STAGE_PARTIAL);
		copy = rng;
		enum rfb_op op = (enum rfb_op)rfb_rng_below(&copy, 14);
		int negative = rfb_aug_op_signed(op) ? (int)rfb_rng_below(&copy, 2) : 0;
		rfb_randaug_draw(&rng, 30, 31, 99, 77, &o);
		double m = rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, op, 30, 31, 99, 77);
		CHECK(o.op == op && o.magnitude == (negative ? -m : m));
		CHECK(rfb_rng_u32(&rng) == rfb_rng_u32(&copy));
	}
}

/* ---- TrivialAugmentWide ---- */

/* Bin of |m| in op's table when the table values are distinct, or -1. */
static int bin_of(enum rfb_op op, double m, int n)
{
	if (op == RFB_OP_POSTERIZE || !(rfb_aug_op_signed(op) || op == RFB_OP_SOLARIZE))
		return -1;
	for (int b = 0; b < n; b++)
		if (rfb_aug_magnitude(RFB_AUG_SPACE_TRIVIALAUG, op, b, n, 64, 64) ==
		    fabs(m))
			return b;
	return -2;
}

static void test_trivialaug_distribution(void)
{
	const int samples = 200000, n = 31;
	long ops[RFB_OP_INVERT] = { 0 }, bins[31] = { 0 }, neg = 0, signed_ops = 0;

	for (int s = 0; s < samples; s++) {
		rfb_rng rng;
		struct rfb_aug_op o;
		rfb_rng_init(&rng, SEED, 1, (uint32_t)s, RFB_STAGE_FINAL + 2);
		rfb_trivialaug_draw(&rng, n, 64, 64, &o);
		ops[o.op]++;
		int b = bin_of(o.op, o.magnitude, n);
		CHECKF(b != -2, "%s %g not in the table", rfb_op_name(o.op),
		       o.magnitude);
		if (b >= 0)
			bins[b]++;
		if (rfb_aug_op_signed(o.op)) {
			signed_ops++;
			neg += signbit(o.magnitude) != 0;
		}
	}
	double stat = chi2_uniform(ops, RFB_OP_INVERT);
	printf("# TrivialAugment ops: chi2 %.2f (13 dof, critical %.2f)\n", stat,
	       chi2_critical(13));
	CHECK(stat < chi2_critical(13));
	stat = chi2_uniform(bins, n);
	printf("# TrivialAugment bins: chi2 %.2f (30 dof, critical %.2f)\n", stat,
	       chi2_critical(30));
	CHECK(stat < chi2_critical(30));
	CHECKF(binomial_ok(neg, signed_ops, 0.5), "%ld of %ld negative", neg,
	       signed_ops);
}

static void test_trivialaug_consumption(void)
{
	for (int s = 0; s < 2000; s++) {
		rfb_rng rng, copy;
		struct rfb_aug_op o;
		double m = 0.0;
		rfb_rng_init(&rng, SEED, 0, (uint32_t)s, RFB_STAGE_PARTIAL);
		copy = rng;
		enum rfb_op op = (enum rfb_op)rfb_rng_below(&copy, 14);
		if (rfb_aug_op_signed(op) || op == RFB_OP_POSTERIZE ||
		    op == RFB_OP_SOLARIZE)
			m = rfb_aug_magnitude(RFB_AUG_SPACE_TRIVIALAUG, op,
					      (int)rfb_rng_below(&copy, 31), 31, 50, 40);
		if (rfb_aug_op_signed(op) && rfb_rng_below(&copy, 2))
			m = -m;
		rfb_trivialaug_draw(&rng, 31, 50, 40, &o);
		CHECK(o.op == op && o.magnitude == m);
		CHECK(rfb_rng_u32(&rng) == rfb_rng_u32(&copy));
	}
}

/* ---- AutoAugment ---- */

/* Predict a draw from a copy of the rng (augment.h's order), check the
 * real draw against it; returns the sub-policy index, sets applied[]. */
static int autoaug_check_one(rfb_rng *rng, enum rfb_autoaug_policy pol,
			     int applied[2])
{
	rfb_rng copy = *rng;
	struct rfb_aug_op out[2];
	int index = (int)rfb_rng_below(&copy, 25), k = 0;
	double u[2] = { rfb_rng_uniform(&copy), rfb_rng_uniform(&copy) };
	uint32_t sign[2] = { rfb_rng_below(&copy, 2), rfb_rng_below(&copy, 2) };
	const struct rfb_autoaug_step *sub = rfb_autoaug_subpolicy(pol, index);
	int n = rfb_autoaug_draw(rng, pol, 120, 90, out);

	for (int i = 0; i < 2; i++) {
		applied[i] = u[i] < sub[i].prob;
		if (!applied[i])
			continue;
		double m = sub[i].bin < 0 ? 0.0 :
			rfb_aug_magnitude(RFB_AUG_SPACE_AUTOAUG, sub[i].op,
					  sub[i].bin, 10, 120, 90);
		if (rfb_aug_op_signed(sub[i].op) && sign[i] == 0)
			m = -m;
		CHECK(k < n && out[k].op == sub[i].op && out[k].magnitude == m);
		k++;
	}
	CHECK(n == k);
	CHECK(rfb_rng_u32(rng) == rfb_rng_u32(&copy));
	return index;
}

static void test_autoaug_distribution(void)
{
	const int samples = 100000;

	for (int p = 0; p < 3; p++) {
		long chosen[25] = { 0 }, applied[25][2] = { { 0 } };
		for (int s = 0; s < samples; s++) {
			rfb_rng rng;
			int a[2];
			rfb_rng_init(&rng, SEED + (unsigned)p, 0, (uint32_t)s,
				     RFB_STAGE_PARTIAL + 3);
			int index = autoaug_check_one(&rng, (enum rfb_autoaug_policy)p, a);
			chosen[index]++;
			applied[index][0] += a[0];
			applied[index][1] += a[1];
		}
		double stat = chi2_uniform(chosen, 25);
		printf("# AutoAugment %s sub-policies: chi2 %.2f (24 dof, critical %.2f)\n",
		       policy_names[p], stat, chi2_critical(24));
		CHECK(stat < chi2_critical(24));
		for (int i = 0; i < 25; i++) {
			const struct rfb_autoaug_step *sub =
				rfb_autoaug_subpolicy((enum rfb_autoaug_policy)p, i);
			for (int j = 0; j < 2; j++)
				CHECKF(binomial_ok(applied[i][j], chosen[i], sub[j].prob),
				       "%s %d step %d: %ld of %ld, p %.1f",
				       policy_names[p], i, j, applied[i][j], chosen[i],
				       sub[j].prob);
		}
	}
}

static void test_autoaug_signs(void)
{
	long neg = 0, total = 0;
	struct rfb_aug_op out[2];

	for (int s = 0; s < 50000; s++) {
		rfb_rng rng;
		rfb_rng_init(&rng, SEED, 9, (uint32_t)s, RFB_STAGE_PARTIAL);
		int n = rfb_autoaug_draw(&rng, RFB_AUTOAUG_SVHN, 32, 32, out);
		for (int i = 0; i < n; i++)
			if (rfb_aug_op_signed(out[i].op)) {
				total++;
				neg += out[i].magnitude < 0;
			}
	}
	CHECK(total > 10000);
	CHECKF(binomial_ok(neg, total, 0.5), "%ld of %ld negative", neg, total);
	rfb_rng rng;
	rfb_rng_init(&rng, SEED, 0, 0, 0);
	CHECK(rfb_autoaug_draw(&rng, (enum rfb_autoaug_policy)7, 32, 32, out) == 0);
}

/* ---- determinism ---- */

static void test_same_key_same_draws(void)
{
	int differ = 0;

	for (int s = 0; s < 500; s++) {
		rfb_rng a, b, c;
		struct rfb_aug_op x[2], y[2], z[2];
		rfb_rng_init(&a, SEED, 5, (uint32_t)s, RFB_STAGE_PARTIAL + 1);
		rfb_rng_init(&b, SEED, 5, (uint32_t)s, RFB_STAGE_PARTIAL + 1);
		rfb_rng_init(&c, SEED, 6, (uint32_t)s, RFB_STAGE_PARTIAL + 1);
		for (int l = 0; l < 3; l++) {
			rfb_randaug_draw(&a, 9, 31, 64, 48, &x[0]);
			rfb_randaug_draw(&b, 9, 31, 64, 48, &y[0]);
			rfb_randaug_draw(&c, 9, 31, 64, 48, &z[0]);
			CHECK(x[0].op == y[0].op && x[0].magnitude == y[0].magnitude);
			differ += x[0].op != z[0].op || x[0].magnitude != z[0].magnitude;
		}
		rfb_trivialaug_draw(&a, 31, 64, 48, &x[0]);
		rfb_trivialaug_draw(&b, 31, 64, 48, &y[0]);
		CHECK(x[0].op == y[0].op && x[0].magnitude == y[0].magnitude);
		int n = rfb_autoaug_draw(&a, RFB_AUTOAUG_IMAGENET, 64, 48, x);
		CHECK(rfb_autoaug_draw(&b, RFB_AUTOAUG_IMAGENET, 64, 48, y) == n);
		for (int i = 0; i < n; i++)
			CHECK(x[i].op == y[i].op && x[i].magnitude == y[i].magnitude);
	}
	/* another epoch gives other draws (same op by chance 1/14 or so) */
	CHECKF(differ > 1200, "%d of 1500 differ", differ);
}

int main(void)
{
	RUN(test_magnitude_tables);
	RUN(test_policies);
	RUN(test_randaug_distribution);
	RUN(test_randaug_consumption);
	RUN(test_trivialaug_distribution);
	RUN(test_trivialaug_consumption);
	RUN(test_autoaug_distribution);
	RUN(test_autoaug_signs);
	RUN(test_same_key_same_draws);
	return test_done();
}
