/*
 * golden.h - reading the golden outputs of tests/data/golden/ (made by
 * scripts/golden-*.py from torchvision + PIL), comparing images with
 * the fidelity tolerances of the augmentation tests, and running a
 * manifest's cases through a test's own check (golden_run).
 */
#ifndef REFURB_GOLDEN_H
#define REFURB_GOLDEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/image.h"

/* Read a binary PGM/PPM (maxval 255) into img backed by buf; 0 or -1. */
static inline int golden_read_pnm(const char *path, rfb_image *img,
				  rfb_imgbuf *buf)
{
	FILE *f = fopen(path, "rb");
	char magic[3] = { 0 };
	int w, h, maxval, ok = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%2s %d %d %d", magic, &w, &h, &maxval) == 4 &&
	    maxval == 255 && fgetc(f) != EOF &&
	    (strcmp(magic, "P5") == 0 || strcmp(magic, "P6") == 0) &&
	    rfb_image_alloc(img, buf, w, h, magic[1] == '5' ? 1 : 3, NULL) == 0 &&
	    fread(img->data, 1, (size_t)w * h * img->channels, f) ==
		    (size_t)w * h * img->channels)
		ok = 0;
	fclose(f);
	return ok;
}

/* Differences between two images of the same shape. */
struct golden_diff {
	int same_shape;
	double mean_abs;   /* mean absolute difference over all samples */
	double within1;    /* fraction of samples that differ by at most 1 */
	double exact;      /* fraction of samples that are equal */
	double off_by_one; /* fraction of samples that differ by exactly 1 */
	int max_abs;
};

static inline struct golden_diff golden_compare(const rfb_image *a,
						const rfb_image *b)
{
	struct golden_diff d = { 0 };
	size_t n = 0, eq = 0, one = 0;
	double sum = 0;

	if (a->width != b->width || a->height != b->height ||
	    a->channels != b->channels)
		return d;
	d.same_shape = 1;
	for (int y = 0; y < a->height; y++) {
		const unsigned char *p = a->data + (size_t)y * a->stride;
		const unsigned char *q = b->data + (size_t)y * b->stride;
		for (int i = 0; i < a->width * a->channels; i++) {
			int diff = abs((int)p[i] - (int)q[i]);
			sum += diff;
			eq += diff == 0;
			one += diff == 1;
			if (diff > d.max_abs)
				d.max_abs = diff;
			n++;
		}
	}
	d.mean_abs = sum / (double)n;
	d.exact = (double)eq / (double)n;
	d.off_by_one = (double)one / (double)n;
	d.within1 = (double)(eq + one) / (double)n;
	return d;
}

/* The tolerances.  Geometric ops: exact except at most 0.5% of
 * samples off by one.  Everything else: >= 99% within +-1, MAE <= 0.5. */
static inline int golden_ok_geometric(const struct golden_diff *d)
{
	return d->same_shape && d->exact + d->off_by_one >= 1.0 - 1e-12 &&
	       d->off_by_one <= 0.005;
}

static inline int golden_ok_color(const struct golden_diff *d)
{
	return d->same_shape && d->within1 >= 0.99 && d->mean_abs <= 0.5;
}

/* One line of a golden manifest (tab-separated: case, input, op, params,
 * output; scripts/golden_common.py) with its two images read. */
struct golden_line {
	const char *name, *op, *params;
	const rfb_image *in, *expected;
};

/* Checks one case; returns 1 if it is within tolerance. */
typedef int (*golden_check_fn)(void *ctx, const struct golden_line *c);

/*
 * Run check on every case of dir/manifest.tsv ('#' lines skipped), with
 * its input and output images read from dir.  Returns the number of cases,
 * or -1 when the manifest cannot be opened; *bad gets how many were out of
 * tolerance, unreadable or malformed (each printed as a TAP comment).
 */
static inline int golden_run(const char *dir, golden_check_fn check,
			     void *ctx, int *bad)
{
	char path[512], line[2048], name[128], input[128], op[512],
		params[1024], output[128];
	FILE *f;
	int n = 0;

	*bad = 0;
	snprintf(path, sizeof path, "%s/manifest.tsv", dir);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof line, f)) {
		rfb_imgbuf inb = { 0 }, expb = { 0 };
		rfb_image in, expected;
		struct golden_line c = { name, op, params, &in, &expected };
		int ok;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%127s %127s %511s %1023s %127s", name, input,
			   op, params, output) != 5) {
			printf("# bad manifest line: %s", line);
			(*bad)++;
			continue;
		}
		n++;
		snprintf(path, sizeof path, "%s/%s", dir, input);
		ok = golden_read_pnm(path, &in, &inb) == 0;
		if (!ok)
			printf("# %s: cannot read %s\n", name, path);
		snprintf(path, sizeof path, "%s/%s", dir, output);
		if (ok && !(ok = golden_read_pnm(path, &expected, &expb) == 0))
			printf("# %s: cannot read %s\n", name, path);
		*bad += !(ok && check(ctx, &c));
		rfb_imgbuf_free(&inb);
		rfb_imgbuf_free(&expb);
	}
	fclose(f);
	return n;
}

#endif
