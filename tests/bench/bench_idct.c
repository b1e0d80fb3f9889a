/*
 * bench_idct.c - libjpeg's speed settings that refurb does not offer,
 * measured: the fast integer IDCT (JDCT_IFAST) against PIL's accurate
 * one (JDCT_ISLOW), and merged upsampling (PIL's draft mode) against
 * fancy upsampling, on a full decode to RGB through libjpeg's API.
 *
 *   bench_idct [-r ROUNDS] FILE...
 *       the files are read into memory once; each round decodes all of
 *       them with each of the four settings in turn (so that machine
 *       noise hits every setting alike) and prints, per setting, images
 *       per CPU-second of the calling thread.
 *
 * Not a test: it prints numbers, it asserts nothing.  refurb-pipeline(7)
 * (DECODE-TIME SHORTCUTS) quotes it.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>

#include "refurb/error.h"
#include "refurb/io.h"
#include "bench.h"

struct fail {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
};

static void on_error(j_common_ptr c)
{
	longjmp(((struct fail *)(void *)c->err)->jump, 1);
}

/* One full decode of data with the setting (bit 0: IFAST, bit 1:
 * merged); 0 or -1 on a bad JPEG. */
static int decode(const unsigned char *data, size_t len, int setting,
		  unsigned char **rows, size_t *cap)
{
	struct jpeg_decompress_struct c;
	struct fail f;
	volatile int rc = -1;

	c.err = jpeg_std_error(&f.mgr);
	f.mgr.error_exit = on_error;
	jpeg_create_decompress(&c);
	if (setjmp(f.jump))
		goto out;
	jpeg_mem_src(&c, data, (unsigned long)len);
	jpeg_read_header(&c, TRUE);
	c.out_color_space = JCS_RGB;
	c.dct_method = setting & 1 ? JDCT_IFAST : JDCT_ISLOW;
	c.do_fancy_upsampling = setting & 2 ? FALSE : TRUE;
	jpeg_start_decompress(&c);
	size_t row = (size_t)c.output_width * 3;
	if (row * c.output_height > *cap) {
		free(*rows);
		*cap = row * c.output_height;
		if (!(*rows = malloc(*cap))) {
			*cap = 0;
			goto out;
		}
	}
	while (c.output_scanline < c.output_height) {
		JSAMPROW r = *rows + row * c.output_scanline;
		jpeg_read_scanlines(&c, &r, 1);
	}
	jpeg_finish_decompress(&c);
	rc = 0;
out:
	jpeg_destroy_decompress(&c);
	return rc;
}

int main(int argc, char **argv)
{
	static const char *const names[4] = {
		"islow+fancy (PIL)", "ifast+fancy", "islow+merged", "ifast+merged"
	};
	int rounds = 3, opt;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r' || (rounds = atoi(optarg)) < 1) {
			fprintf(stderr, "usage: bench_idct [-r ROUNDS] FILE...\n");
			return 2;
		}
	}
	int n = argc - optind;
	if (n < 1) {
		fprintf(stderr, "usage: bench_idct [-r ROUNDS] FILE...\n");
		return 2;
	}
	unsigned char **data = calloc((size_t)n, sizeof *data), *rows = NULL;
	size_t *len = calloc((size_t)n, sizeof *len), cap = 0;
	rfb_err err = { 0 };

	if (!data || !len)
		return 1;
	for (int i = 0; i < n; i++) {
		if (rfb_file_load(argv[optind + i], (size_t)1 << 30, &data[i],
				  &len[i], &err) ||
		    decode(data[i], len[i], 0, &rows, &cap)) {
			fprintf(stderr, "bench_idct: %s: %s\n", argv[optind + i],
				err.msg[0] ? err.msg : "not a JPEG libjpeg decodes");
			return 1;
		}
	}
	printf("# %d JPEGs, full decode to RGB, images per CPU-second\n", n);
	printf("%-6s", "round");
	for (int s = 0; s < 4; s++)
		printf(" %18s", names[s]);
	printf("\n");
	for (int r = 0; r < rounds; r++) {
		printf("%-6d", r + 1);
		for (int s = 0; s < 4; s++) {
			double t0 = bench_thread_cpu();
			for (int i = 0; i < n; i++)
				if (decode(data[i], len[i], s, &rows, &cap))
					return 1;
			printf(" %18.1f", n / (bench_thread_cpu() - t0));
		}
		printf("\n");
		fflush(stdout);
	}
	for (int i = 0; i < n; i++)
		free(data[i]);
	free(data);
	free(len);
	free(rows);
	return 0;
}
