/*
 * test_png.c - PNG input: every kind refurb reads gives the pixels of
 * PIL's Image.open(f).convert("RGB") (tests/data/png, made by
 * scripts/make-test-pngs.py), through rfb_png_decode and through a
 * pipeline run on the file's bytes; 16-bit gray is refused; truncated
 * and corrupted files give errors, never a crash; other formats are
 * named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "refurb/io.h"
#include "refurb/pipeline.h"
#include "refurb/png.h"
#include "refurb/transform.h"
#include "test.h"

#define PNG_DIR "tests/data/png"

static const char *const kinds[] = {
	"gray1", "gray2", "gray4", "gray8", "la8", "la16", "rgb8", "rgb16",
	"rgba8", "rgba16", "pal1", "pal4trns", "pal8", "palshort",
};

/* The whole file at path into *data (malloc'd); its length, 0 on error. */
static size_t slurp(const char *path, unsigned char **data)
{
	FILE *f = fopen(path, "rb");
	long n;

	*data = NULL;
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (n > 0 && (*data = malloc((size_t)n)) &&
	    fread(*data, 1, (size_t)n, f) != (size_t)n) {
		free(*data);
		*data = NULL;
		n = 0;
	}
	fclose(f);
	return n > 0 ? (size_t)n : 0;
}

static int same_pixels(const rfb_image *a, const rfb_image *b)
{
	struct golden_diff d = golden_compare(a, b);

	return d.same_shape && d.exact == 1.0;
}

static void test_kinds(void)
{
	rfb_pipeline *empty;
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_key key = { 1, 0, 0, RFB_STAGE_PARTIAL };

	CHECK(rfb_pipeline_parse("", &empty, NULL) == 0);
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
		char path[256];
		unsigned char *data;
		rfb_imgbuf eb = { 0 }, db = { 0 }, rb = { 0 };
		rfb_image expected, img, rgb;
		struct rfb_png_info info;
		struct rfb_pipe_out out;
		rfb_err err = { 0 };
		size_t len;

		snprintf(path, sizeof path, PNG_DIR "/%s.png", kinds[i]);
		len = slurp(path, &data);
		CHECKF(len > 0, "cannot read %s (run scripts/make-test-pngs.py)", path);
		snprintf(path, sizeof path, PNG_DIR "/%s.ppm", kinds[i]);
		CHECK(golden_read_pnm(path, &expected, &eb) == 0);
		CHECK(rfb_png_read_header(data, len, 1u << 30, &info, &err) == 0);
		CHECK(info.width == expected.width && info.height == expected.height);
		CHECKF(rfb_png_decode(data, len, 1u << 30, &img, &db, &err) == 0,
		       "%s: %s", kinds[i], err.msg);
		CHECK(img.channels == info.channels);
		/* a gray PNG stands for the RGB image with it in R, G, B */
		CHECK(rfb_image_alloc(&rgb, &rb, img.width, img.height, 3, NULL) == 0);
		CHECK(rfb_to_rgb(&img, &rgb, NULL) == 0);
		CHECKF(same_pixels(&rgb, &expected), "%s: decoded pixels differ "
		       "from PIL's convert(\"RGB\")", kinds[i]);
		CHECKF(rfb_pipe_run_jpeg(ctx, empty, data, len, &key, &out, &err) == 0,
		       "%s: %s", kinds[i], err.msg);
		CHECKF(same_pixels(&out.img, &expected), "%s: pipeline input differs",
		       kinds[i]);
		printf("# %-9s %dx%d depth %2d type %d -> %d channel(s), as PIL\n",
		       kinds[i], info.width, info.height, info.bit_depth,
		       info.color_type, info.channels);
		free(data);
		rfb_imgbuf_free(&eb);
		rfb_imgbuf_free(&db);
		rfb_imgbuf_free(&rb);
	}
	rfb_pipeline_free(empty);
	rfb_pipe_ctx_free(ctx);
}

static void test_refused(void)
{
	unsigned char *data;
	size_t len = slurp(PNG_DIR "/gray16.png", &data);
	struct rfb_png_info info;
	rfb_imgbuf b = { 0 };
	rfb_image img;
	rfb_err err = { 0 };

	CHECK(len > 0);
	CHECK(rfb_png_read_header(data, len, 1u << 30, &info, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "16-bit grayscale PNG") != NULL);
	memset(&err, 0, sizeof err);
	CHECK(rfb_png_decode(data, len, 1u << 30, &img, &b, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "16-bit grayscale PNG") != NULL);
	CHECK(rfb_png_read_header(data, len, 100, &info, &err) == RFB_ELIMIT);
	free(data);
	rfb_imgbuf_free(&b);
	CHECK(strcmp(rfb_image_format_name("GIF89a....", 10), "GIF") == 0);
	CHECK(strcmp(rfb_image_format_name("RIFF\0\0\0\0WEBPVP8 ", 16), "WebP") == 0);
	CHECK(strcmp(rfb_image_format_name("BM\0\0", 4), "BMP") == 0);
	CHECK(rfb_image_format_name("\xff\xd8\xff\xe0", 4) == NULL);
}

/* Every prefix and many one-byte corruptions: an error or an image, never
 * a crash (ASan and valgrind runs check the memory). */
static void test_damaged(void)
{
	unsigned char *data;
	size_t len = slurp(PNG_DIR "/rgb8.png", &data);
	rfb_imgbuf b = { 0 };
	rfb_image img;
	int errors = 0;

	CHECK(len > 100);
	for (size_t n = 0; n < len; n += n < 64 ? 1 : 37) {
		rfb_err err = { 0 };
		int rc = rfb_png_decode(data, n, 1u << 30, &img, &b, &err);
		errors += rc != 0;
		CHECK(rc == 0 || err.msg[0]);
	}
	CHECK(errors > 0);
	for (size_t at = 8; at < len; at += 7) {
		unsigned char *copy = malloc(len);
		rfb_err err = { 0 };
		memcpy(copy, data, len);
		copy[at] ^= 0x5a;
		if (rfb_png_decode(copy, len, 1u << 30, &img, &b, &err))
			CHECK(err.msg[0] != '\0');
		free(copy);
	}
	free(data);
	rfb_imgbuf_free(&b);
}

int main(void)
{
	RUN(test_kinds);
	RUN(test_refused);
	RUN(test_damaged);
	return test_done();
}
