/*
 * bench_ops.c - time rfb_op_apply() per op on one image (used by
 * scripts/bench-ops, which times torchvision + PIL on the same cases).
 *
 *   bench_ops IMAGE.ppm [RUNS] < CASES
 *
 * CASES has one case a line: "OP MAGNITUDE INTERP" (OP as rfb_op_name,
 * INTERP nearest, bilinear or bicubic), or "RandAugment N M" for a whole
 * RandAugment(num_ops=N, magnitude=M) layer stack averaged over draws.
 * Prints "OP<TAB>MAGNITUDE<TAB>INTERP<TAB>MEDIAN_US" per case: the median
 * over RUNS (default 15) runs of the mean time of one call, each run
 * calibrated to last about 5 ms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "refurb/augment.h"
#include "refurb/ops.h"
#include "../unit/golden.h"
#include "bench.h"

struct bench_case {
	enum rfb_op op;
	double magnitude;
	enum rfb_interp interp;
	int randaug_layers, randaug_bin; /* > 0: a RandAugment stack */
};

/* One RandAugment stack on src; ping-pongs between two buffers. */
static int run_randaug(const struct bench_case *c, rfb_rng *rng,
		       const rfb_image *src, rfb_image tmp[2])
{
	const rfb_image *in = src;

	for (int l = 0; l < c->randaug_layers; l++) {
		struct rfb_aug_op o;
		rfb_randaug_draw(rng, c->randaug_bin, 31, src->width, src->height, &o);
		if (rfb_op_apply(o.op, o.magnitude, RFB_INTERP_NEAREST, NULL, in,
				 &tmp[l & 1], NULL))
			return -1;
		in = &tmp[l & 1];
	}
	return 0;
}

static int run_once(const struct bench_case *c, rfb_rng *rng,
		    const rfb_image *src, rfb_image tmp[2])
{
	if (c->randaug_layers > 0)
		return run_randaug(c, rng, src, tmp);
	return rfb_op_apply(c->op, c->magnitude, c->interp, NULL, src, &tmp[0], NULL);
}

/* Median microseconds per call, or -1 on error. */
static double time_case(const struct bench_case *c, const rfb_image *src,
			rfb_image tmp[2], int runs)
{
	double per_call[64];
	long iters = 1;
	rfb_rng rng;

	rfb_rng_init(&rng, 1, 0, 0, RFB_STAGE_PARTIAL);
	for (;;) { /* calibrate: one run of about 5 ms */
		double t0 = bench_now_us();
		for (long i = 0; i < iters; i++)
			if (run_once(c, &rng, src, tmp))
				return -1;
		if (bench_now_us() - t0 > 5000 || iters > 1000000)
			break;
		iters *= 2;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now_us();
		for (long i = 0; i < iters; i++)
			(void)run_once(c, &rng, src, tmp);
		per_call[r] = (bench_now_us() - t0) / (double)iters;
	}
	qsort(per_call, (size_t)runs, sizeof per_call[0], bench_cmp_double);
	return per_call[runs / 2];
}

static int parse_case(const char *line, struct bench_case *c, char *label,
		      size_t label_size)
{
	char op[32], interp[16];
	double m;

	memset(c, 0, sizeof *c);
	if (sscanf(line, "%31s %lf %15s", op, &m, interp) < 2)
		return -1;
	snprintf(label, label_size, "%s\t%.17g\t%s", op, m,
		 strcmp(op, "RandAugment") == 0 ? "nearest" : interp);
	if (strcmp(op, "RandAugment") == 0)
		return sscanf(line, "%*s %d %d", &c->randaug_layers,
			      &c->randaug_bin) == 2 ? 0 : -1;
	c->magnitude = m;
	c->interp = strcmp(interp, "bilinear") == 0 ? RFB_INTERP_BILINEAR :
		    strcmp(interp, "bicubic") == 0  ? RFB_INTERP_BICUBIC :
						      RFB_INTERP_NEAREST;
	if (rfb_op_parse(op) < 0)
		return -1;
	c->op = (enum rfb_op)rfb_op_parse(op);
	return 0;
}

int main(int argc, char **argv)
{
	rfb_imgbuf inbuf = { 0 }, buf[2] = { { 0 }, { 0 } };
	rfb_image src, tmp[2];
	char line[256], label[128];
	int runs = argc > 2 ? atoi(argv[2]) : 15;

	if (argc < 2 || runs < 1 || runs > 64) {
		fprintf(stderr, "usage: bench_ops IMAGE.ppm [RUNS] < CASES\n");
		return 2;
	}
	if (golden_read_pnm(argv[1], &src, &inbuf) ||
	    rfb_image_alloc(&tmp[0], &buf[0], src.width, src.height, src.channels, NULL) ||
	    rfb_image_alloc(&tmp[1], &buf[1], src.width, src.height, src.channels, NULL)) {
		fprintf(stderr, "bench_ops: %s: cannot read image\n", argv[1]);
		return 1;
	}
	while (fgets(line, sizeof line, stdin)) {
		struct bench_case c;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (parse_case(line, &c, label, sizeof label)) {
			fprintf(stderr, "bench_ops: bad case: %s", line);
			return 2;
		}
		double us = time_case(&c, &src, tmp, runs);
		if (us < 0) {
			fprintf(stderr, "bench_ops: case failed: %s", line);
			return 1;
		}
		printf("%s\t%.3f\n", label, us);
		fflush(stdout);
	}
	rfb_imgbuf_free(&inbuf);
	rfb_imgbuf_free(&buf[0]);
	rfb_imgbuf_free(&buf[1]);
	return 0;
}
