/*
 * make_dataset.c - a deterministic synthetic JPEG dataset in ImageFolder
 * layout, with ImageNet-like variety: sizes, aspect ratios, qualities,
 * chroma subsampling, some grayscale, some progressive, some with restart
 * markers.  Run through scripts/make-dataset.
 *
 *   make-dataset [-n N] [-k K] [--min PX] [--max PX] [-s SEED] OUTDIR
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

#include "refurb/rng.h"

struct params {
	unsigned n, k, min, max;
	unsigned long long seed;
	const char *out;
};

struct shape {
	double cx, cy, rx, ry, r, g, b;
	int rect;
};

/* Class-dependent colours and textures, per-sample shapes and noise, so
 * images compress like photos (neither flat nor pure noise). */
static void render(unsigned char *px, int w, int h, int gray, unsigned label,
		   unsigned k, rfb_rng *rng)
{
	double hue = 6.2831853 * label / (k ? k : 1);
	double fx = 0.01 + 0.05 * rfb_rng_uniform(rng);
	double fy = 0.01 + 0.05 * rfb_rng_uniform(rng);
	struct shape s[12];
	int ns = 4 + (int)rfb_rng_below(rng, 8);

	for (int i = 0; i < ns; i++) {
		s[i].cx = w * rfb_rng_uniform(rng);
		s[i].cy = h * rfb_rng_uniform(rng);
		/* stored as inverse radii */
		s[i].rx = 1 / (10 + w * 0.3 * rfb_rng_uniform(rng));
		s[i].ry = 1 / (10 + h * 0.3 * rfb_rng_uniform(rng));
		s[i].r = 255 * rfb_rng_uniform(rng);
		s[i].g = 255 * rfb_rng_uniform(rng);
		s[i].b = 255 * rfb_rng_uniform(rng);
		s[i].rect = (int)rfb_rng_below(rng, 2);
	}
	double *colwave = malloc((size_t)w * sizeof *colwave);

	for (int x = 0; x < w && colwave; x++)
		colwave[x] = sin(x * fx + hue) * 60;
	for (int y = 0; y < h && colwave; y++) {
		double rowwave = cos(y * fy);
		for (int x = 0; x < w; x++) {
			double t = colwave[x] * rowwave;
			double c[3] = { 128 + 80 * cos(hue) + t,
					128 + 80 * cos(hue + 2.1) - t,
					128 + 80 * cos(hue + 4.2) + t * 0.5 };
			for (int i = 0; i < ns; i++) {
				double dy = (y - s[i].cy) * s[i].ry;
				if (fabs(dy) >= 1)
					continue;
				double dx = (x - s[i].cx) * s[i].rx;
				int in = s[i].rect ? fabs(dx) < 1 && fabs(dy) < 1
						   : dx * dx + dy * dy < 1;
				if (in) {
					c[0] = s[i].r + t * 0.3;
					c[1] = s[i].g;
					c[2] = s[i].b - t * 0.3;
				}
			}
			double noise = (double)(rfb_rng_u32(rng) & 31) - 15.5;
			unsigned char *p = px + ((size_t)y * w + x) * (gray ? 1 : 3);
			for (int ch = 0; ch < (gray ? 1 : 3); ch++) {
				double v = (gray ? (c[0] + c[1] + c[2]) / 3 : c[ch]) + noise;
				p[ch] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
			}
		}
	}
	free(colwave);
}

static int write_jpeg(const char *path, const unsigned char *px, int w, int h,
		      int gray, rfb_rng *rng)
{
	static const int qualities[] = { 60, 75, 85, 90, 95 };
	struct jpeg_compress_struct ci;
	struct jpeg_error_mgr jerr;
	FILE *f = fopen(path, "wb");
	unsigned form = rfb_rng_below(rng, 20);

	if (!f)
		return -1;
	ci.err = jpeg_std_error(&jerr);
	jpeg_create_compress(&ci);
	jpeg_stdio_dest(&ci, f);
	ci.image_width = (JDIMENSION)w;
	ci.image_height = (JDIMENSION)h;
	ci.input_components = gray ? 1 : 3;
	ci.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&ci);
	jpeg_set_quality(&ci, qualities[rfb_rng_below(rng, 5)], TRUE);
	if (!gray && form < 4) { /* 4:4:4 */
		ci.comp_info[0].h_samp_factor = ci.comp_info[0].v_samp_factor = 1;
	} else if (!gray && form < 7) { /* 4:2:2 */
		ci.comp_info[0].h_samp_factor = 2;
		ci.comp_info[0].v_samp_factor = 1;
	}
	if (form % 7 == 1)
		jpeg_simple_progression(&ci);
	if (form % 10 == 3)
		ci.restart_in_rows = 1 + (int)rfb_rng_below(rng, 4);
	jpeg_start_compress(&ci, TRUE);
	while (ci.next_scanline < ci.image_height) {
		JSAMPROW row = (JSAMPROW)(px + (size_t)ci.next_scanline * w *
					  ci.input_components);
		jpeg_write_scanlines(&ci, &row, 1);
	}
	jpeg_finish_compress(&ci);
	jpeg_destroy_compress(&ci);
	return fclose(f);
}

static void size_of(const struct params *p, rfb_rng *rng, int *w, int *h)
{
	static const double ratios[] = { 4.0 / 3, 3.0 / 4, 1.0, 3.0 / 2, 2.0 / 3, 16.0 / 9 };
	double r = ratios[rfb_rng_below(rng, 6)];
	int longer = (int)(p->min + rfb_rng_below(rng, p->max - p->min + 1));

	*w = r >= 1 ? longer : (int)(longer * r);
	*h = r >= 1 ? (int)(longer / r) : longer;
	if (*w < 8)
		*w = 8;
	if (*h < 8)
		*h = 8;
}

static int make(const struct params *p)
{
	unsigned char *px = malloc((size_t)p->max * p->max * 3);
	char path[4096];

	if (!px)
		return -1;
	for (unsigned c = 0; c <= p->k; c++) {
		if (c == 0)
			snprintf(path, sizeof path, "%s", p->out);
		else
			snprintf(path, sizeof path, "%s/class%03u", p->out, c - 1);
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "make-dataset: %s: %s\n", path,
				strerror(errno));
			free(px);
			return -1;
		}
	}
	for (unsigned i = 0; i < p->n; i++) {
		rfb_rng rng;
		int w, h, gray;
		unsigned label = i % p->k;
		rfb_rng_init(&rng, p->seed, 0, i, 0x7e57);
		size_of(p, &rng, &w, &h);
		gray = rfb_rng_below(&rng, 10) == 0;
		render(px, w, h, gray, label, p->k, &rng);
		snprintf(path, sizeof path, "%s/class%03u/img%06u.jpg", p->out,
			 label, i);
		if (write_jpeg(path, px, w, h, gray, &rng) < 0) {
			fprintf(stderr, "make-dataset: %s: %s\n", path, strerror(errno));
			free(px);
			return -1;
		}
	}
	free(px);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "min", required_argument, NULL, 'a' },
		{ "max", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 }
	};
	struct params p = { 1000, 10, 200, 800, 1, NULL };
	int opt;

	while ((opt = getopt_long(argc, argv, "n:k:s:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n': p.n = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'k': p.k = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': p.seed = strtoull(optarg, NULL, 10); break;
		case 'a': p.min = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'b': p.max = (unsigned)strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || p.k == 0 || p.k > 1000 || p.min < 8 ||
	    p.max < p.min || p.max > 8192) {
		fprintf(stderr, "usage: make-dataset [-n N] [-k K] [--min PX] "
			"[--max PX] [-s SEED] OUTDIR\n");
		return 2;
	}
	p.out = argv[optind];
	return make(&p) ? 1 : 0;
}
