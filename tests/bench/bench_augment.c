/*
 * bench_augment.c - throughput of a pipeline on JPEG bytes, for
 * scripts/bench-augment.
 *
 *   bench_augment [-p SPEC] [-r RUNS] [--full-decode] [--ratio R]
 *                 [--decode-only] [--band off|on|auto] FILE...
 *
 * Loads every FILE into memory, then runs SPEC (default the paper's
 * ImageNet pipeline 'resize=256,randaug=n=2:m=9,crop=224,flip') on each
 * of them once as a warm-up and RUNS times (default 5) more, on the
 * calling thread only, each pass with new epochs (new random draws).
 * Prints one line: images, then the median, lowest and highest images
 * per second of thread CPU time over the passes.  --full-decode turns the decode-time
 * shortcuts off; --ratio sets the DCT-scaling ratio (pipeline.h);
 * --band sets the band resize (rfb_pipe_ctx_set_band_resize: off, on,
 * auto, the default).
 * --decode-only times a full decode to RGB instead (libjpeg-turbo through
 * rfb_decode, into one reused buffer): the decode bound.
 *
 * Not a test: it prints numbers, it asserts nothing.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "refurb/decode.h"
#include "refurb/io.h"
#include "refurb/pipeline.h"
#include "bench.h"

#define MAX_RUNS 101

struct input {
	unsigned char *data;
	size_t len;
};

/* One pass over all inputs; seconds, or -1 after printing an error. */
static double pass(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
		   const struct input *in, int n, char **names, uint32_t epoch)
{
	struct rfb_pipe_out out;
	rfb_err err = { 0 };
	double t0 = bench_thread_cpu();

	for (int i = 0; i < n; i++) {
		struct rfb_pipe_key k = { 1, epoch, (uint32_t)i, RFB_STAGE_PARTIAL };
		if (rfb_pipe_run_jpeg(ctx, p, in[i].data, in[i].len, &k, &out, &err)) {
			fprintf(stderr, "bench_augment: %s: %s\n", names[i], err.msg);
			return -1;
		}
	}
	return bench_thread_cpu() - t0;
}

/* One pass of full decodes; seconds of thread CPU, or -1 after an error. */
static double pass_decode(rfb_decoder *dec, rfb_imgbuf *buf,
			  const struct input *in, int n, char **names)
{
	rfb_image img;
	rfb_err err = { 0 };
	double t0 = bench_thread_cpu();

	for (int i = 0; i < n; i++)
		if (rfb_decode(dec, in[i].data, in[i].len, NULL, &img, buf, NULL,
			       &err)) {
			fprintf(stderr, "bench_augment: %s: %s\n", names[i], err.msg);
			return -1;
		}
	return bench_thread_cpu() - t0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pipeline", required_argument, NULL, 'p' },
		{ "runs", required_argument, NULL, 'r' },
		{ "full-decode", no_argument, NULL, 'F' },
		{ "ratio", required_argument, NULL, 'R' },
		{ "decode-only", no_argument, NULL, 'D' },
		{ "band", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 }
	};
	const char *spec = "resize=256,randaug=n=2:m=9,crop=224,flip";
	int runs = 5, full = 0, decode_only = 0, opt, n;
	enum rfb_pipe_band band = RFB_PIPE_BAND_AUTO;
	double ratio = -1, t[MAX_RUNS];
	rfb_pipeline *p = NULL;
	rfb_err err = { 0 };

	while ((opt = getopt_long(argc, argv, "p:r:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': spec = optarg; break;
		case 'r': runs = atoi(optarg); break;
		case 'F': full = 1; break;
		case 'R': ratio = atof(optarg); break;
		case 'D': decode_only = 1; break;
		case 'B':
			band = strcmp(optarg, "off") == 0  ? RFB_PIPE_BAND_OFF
			       : strcmp(optarg, "on") == 0 ? RFB_PIPE_BAND_ON
							   : RFB_PIPE_BAND_AUTO;
			break;
		default: return 2;
		}
	}
	n = argc - optind;
	if (runs < 1 || runs > MAX_RUNS || n < 1) {
		fprintf(stderr, "usage: bench_augment [-p SPEC] [-r RUNS] "
				"[--full-decode] [--ratio R] [--decode-only] "
				"[--band off|on|auto] FILE...\n");
		return 2;
	}
	if (rfb_pipeline_parse(spec, &p, &err)) {
		fprintf(stderr, "bench_augment: %s\n", err.msg);
		return 2;
	}
	struct input *in = calloc((size_t)n, sizeof *in);
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(&err);
	rfb_decoder *dec = rfb_decoder_new(&err);
	rfb_imgbuf buf = { 0 };
	if (!in || !ctx || !dec)
		return 1;
	rfb_pipe_ctx_set_fast_decode(ctx, !full);
	rfb_pipe_ctx_set_scale_ratio(ctx, ratio);
	rfb_pipe_ctx_set_band_resize(ctx, band);
	for (int i = 0; i < n; i++)
		if (rfb_file_load(argv[optind + i], (size_t)1 << 28, &in[i].data,
				  &in[i].len, &err)) {
			fprintf(stderr, "bench_augment: %s: %s\n", err.path, err.msg);
			return 1;
		}
	for (int r = -1; r < runs; r++) {
		double s = decode_only
			? pass_decode(dec, &buf, in, n, argv + optind)
			: pass(ctx, p, in, n, argv + optind, (uint32_t)(r + 1));
		if (s < 0)
			return 1;
		if (r >= 0)
			t[r] = n / s;
	}
	qsort(t, (size_t)runs, sizeof t[0], bench_cmp_double);
	printf("%d %.1f %.1f %.1f\n", n, t[runs / 2], t[0], t[runs - 1]);
	for (int i = 0; i < n; i++)
		free(in[i].data);
	free(in);
	rfb_pipe_ctx_free(ctx);
	rfb_decoder_free(dec);
	rfb_imgbuf_free(&buf);
	rfb_pipeline_free(p);
	return 0;
}
