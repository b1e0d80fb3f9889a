/*
 * bench_decode.c - decode timings for scripts/bench-decode, and a dump
 * mode the script uses to check the decoder against PIL.
 *
 *   bench_decode [-r RUNS] FILE...
 *       one line per file: name, size, then the median microseconds of a
 *       full decode, of decodes scaled by 1/2, 1/4, 1/8, and of a 224x224
 *       region at full resolution (centred), each over RUNS runs (default
 *       15) after one warm-up, on the calling thread only.
 *   bench_decode --dump DENOM X Y W H IN OUT
 *       decode IN at 1/DENOM, region W x H at (X, Y) in scaled pixels (W or
 *       H 0: whole image), as RGB, and write a binary PPM to OUT.
 *
 * Not a test: it prints numbers, it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "refurb/decode.h"
#include "refurb/io.h"
#include "bench.h"

#define MAX_RUNS 101

struct ctx {
	rfb_decoder *dec;
	rfb_imgbuf buf;
	rfb_image img;
	rfb_err err;
};

/* Median microseconds of runs decodes with opts; -1 on a decode error. */
static double time_decode(struct ctx *c, const unsigned char *data,
			  size_t len, const struct rfb_decode_opts *opts,
			  int runs)
{
	double t[MAX_RUNS];

	for (int i = -1; i < runs; i++) {
		double t0 = bench_now_us();
		if (rfb_decode(c->dec, data, len, opts, &c->img, &c->buf, NULL,
			       &c->err))
			return -1;
		if (i >= 0)
			t[i] = bench_now_us() - t0;
	}
	qsort(t, (size_t)runs, sizeof t[0], bench_cmp_double);
	return t[runs / 2];
}

static int bench_file(struct ctx *c, const char *path, int runs)
{
	unsigned char *data = NULL;
	size_t len;
	struct rfb_jpeg_info info;
	struct rfb_decode_opts o = { 0 };
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	double us[5];

	if (rfb_file_load(path, (size_t)1 << 30, &data, &len, &c->err) ||
	    rfb_decode_header(c->dec, data, len, NULL, &info, &c->err)) {
		fprintf(stderr, "bench_decode: %s: %s\n", path, c->err.msg);
		free(data);
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		o.scale_denom = 1 << i;
		us[i] = time_decode(c, data, len, &o, runs);
	}
	o.scale_denom = 1;
	o.width = info.width < 224 ? info.width : 224;
	o.height = info.height < 224 ? info.height : 224;
	o.x = (info.width - o.width) / 2;
	o.y = (info.height - o.height) / 2;
	us[4] = time_decode(c, data, len, &o, runs);
	free(data);
	if (us[0] < 0 || us[1] < 0 || us[2] < 0 || us[3] < 0 || us[4] < 0) {
		fprintf(stderr, "bench_decode: %s: %s\n", path, c->err.msg);
		return 1;
	}
	printf("%-28s %5dx%-5d %9.0f %9.0f %9.0f %9.0f %9.0f\n", name,
	       info.width, info.height, us[0], us[1], us[2], us[3], us[4]);
	return 0;
}

static int write_ppm(const rfb_image *img, const char *path)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	fprintf(f, "P%d\n%d %d\n255\n", img->channels == 3 ? 6 : 5,
		img->width, img->height);
	for (int y = 0; y < img->height; y++)
		fwrite(rfb_image_px(img, 0, y), 1,
		       (size_t)img->width * img->channels, f);
	ok = !ferror(f);
	return fclose(f) == 0 && ok ? 0 : -1;
}

static int dump(struct ctx *c, char **argv)
{
	struct rfb_decode_opts o = { 0 };
	unsigned char *data = NULL;
	size_t len;
	int rc;

	o.scale_denom = atoi(argv[0]);
	o.x = atoi(argv[1]);
	o.y = atoi(argv[2]);
	o.width = atoi(argv[3]);
	o.height = atoi(argv[4]);
	rc = rfb_file_load(argv[5], (size_t)1 << 30, &data, &len, &c->err);
	if (!rc)
		rc = rfb_decode(c->dec, data, len, &o, &c->img, &c->buf, NULL,
				&c->err);
	free(data);
	if (rc) {
		fprintf(stderr, "bench_decode: %s: %s\n", argv[5], c->err.msg);
		return 1;
	}
	if (write_ppm(&c->img, argv[6])) {
		fprintf(stderr, "bench_decode: %s: cannot write\n", argv[6]);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = { 0 };
	int runs = 15, status = 0, i = 1;

	c.dec = rfb_decoder_new(&c.err);
	if (!c.dec)
		return 1;
	if (argc == 9 && strcmp(argv[1], "--dump") == 0) {
		status = dump(&c, argv + 2);
	} else {
		if (argc > 2 && strcmp(argv[1], "-r") == 0) {
			runs = atoi(argv[2]);
			i = 3;
		}
		if (runs < 1 || runs > MAX_RUNS || i >= argc) {
			fprintf(stderr, "usage: bench_decode [-r RUNS] FILE...\n"
				"       bench_decode --dump DENOM X Y W H IN OUT\n");
			return 2;
		}
		printf("%-28s %11s %9s %9s %9s %9s %9s\n", "# file", "size",
		       "full_us", "half_us", "qtr_us", "8th_us", "r224_us");
		for (; i < argc; i++)
			status |= bench_file(&c, argv[i], runs);
	}
	rfb_imgbuf_free(&c.buf);
	rfb_decoder_free(c.dec);
	return status;
}
