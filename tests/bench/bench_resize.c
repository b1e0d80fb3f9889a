/*
 * bench_resize.c - the resize kernels side by side, for
 * scripts/bench-resize.
 *
 *   bench_resize [-r ROUNDS] [-n REPS] SRC_WxH DST_WxH CHANNELS INTERP
 *
 * Resizes a fixed pseudo-random SRC image to DST (INTERP: bilinear,
 * bicubic) REPS times (default 50) with each kernel of
 * rfb_resizer_set_simd() in turn, ROUNDS times (default 15, the kernels
 * alternating inside a round so that machine noise hits them alike), and
 * prints one line per kernel: its name and the median microseconds of
 * thread CPU time per resize, then its ratio to the default kernel.
 * Kernels the CPU lacks are left out.  Not a test: it asserts nothing.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/resize.h"
#include "bench.h"

#define MAX_ROUNDS 101

static const struct {
	int kernel;
	const char *name;
} kernels[] = {
	{ RFB_RESIZE_SCALAR, "scalar" },
	{ RFB_RESIZE_AVX2, "avx2-pmulld" },
	{ RFB_RESIZE_MADD, "avx2-pmaddwd" },
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

static int parse_size(const char *s, int *w, int *h)
{
	return sscanf(s, "%dx%d", w, h) == 2 && *w > 0 && *h > 0 ? 0 : -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_resize [-r ROUNDS] [-n REPS] SRC_WxH "
			"DST_WxH CHANNELS INTERP\n");
	return 2;
}

int main(int argc, char **argv)
{
	rfb_resizer *rz[NKERNELS] = { NULL };
	double t[NKERNELS][MAX_ROUNDS], med[NKERNELS];
	rfb_imgbuf sb = { 0 }, db = { 0 };
	rfb_image src, dst;
	int rounds = 15, reps = 50, sw, sh, dw, dh, ch, interp, opt;

	while ((opt = getopt(argc, argv, "r:n:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 'n')
			reps = atoi(optarg);
		else
			return usage();
	}
	if (argc - optind != 4 || parse_size(argv[optind], &sw, &sh) ||
	    parse_size(argv[optind + 1], &dw, &dh) || rounds < 1 ||
	    rounds > MAX_ROUNDS || reps < 1)
		return usage();
	ch = atoi(argv[optind + 2]);
	interp = rfb_interp_parse(argv[optind + 3]);
	if ((ch != 1 && ch != 3) || interp < 0 ||
	    rfb_image_alloc(&src, &sb, sw, sh, ch, NULL) ||
	    rfb_image_alloc(&dst, &db, dw, dh, ch, NULL))
		return usage();
	for (size_t i = 0; i < (size_t)sh * src.stride; i++)
		src.data[i] = (unsigned char)((i * 2654435761u) >> 24);
	for (size_t k = 0; k < NKERNELS; k++) {
		rz[k] = rfb_resizer_new(NULL);
		if (!rz[k])
			return 1;
		if (rfb_resizer_set_simd(rz[k], kernels[k].kernel) != kernels[k].kernel) {
			rfb_resizer_free(rz[k]);
			rz[k] = NULL;
		}
	}
	for (int r = 0; r < rounds; r++)
		for (size_t k = 0; k < NKERNELS; k++) {
			if (!rz[k])
				continue;
			double t0 = bench_thread_cpu();
			for (int i = 0; i < reps; i++)
				if (rfb_resize(rz[k], &src, &dst, (enum rfb_interp)interp,
					       NULL))
					return 1;
			t[k][r] = (bench_thread_cpu() - t0) / reps * 1e6;
		}
	for (size_t k = 0; k < NKERNELS; k++)
		med[k] = rz[k] ? bench_median(t[k], (size_t)rounds) : 0;
	for (size_t k = 0; k < NKERNELS; k++) {
		if (!rz[k])
			continue;
		printf("%-13s %9.1f us  %5.3f\n", kernels[k].name, med[k],
		       rz[1] ? med[k] / med[1] : 1.0);
		rfb_resizer_free(rz[k]);
	}
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&db);
	return 0;
}
