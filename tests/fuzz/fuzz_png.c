/*
 * fuzz_png.c - the PNG path on any bytes: the header probe
 * (rfb_png_read_header, as refurb-index uses it), libpng's decode with a
 * small pixel limit (rfb_png_decode), and a pipeline run on the bytes
 * (rfb_pipe_run_jpeg, which sends PNGs to the same decoder): the decode
 * agrees with the probe, and the pipeline's output has the spec's size.
 * The target repairs the CRC of every chunk of its copy, so that the
 * fuzzer explores libpng's parsing behind them.
 *
 * Input: the PNG file.
 */
#include "fuzz.h"
#include "refurb/pipeline.h"
#include "refurb/png.h"

#define FUZZ_PNG_MAX_PIXELS ((uint64_t)1 << 18)

static uint32_t png_fuzz_crc(const unsigned char *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
	}
	return c ^ 0xFFFFFFFFu;
}

/* Rewrite the CRC of every whole chunk after the signature. */
static void png_fix_crcs(unsigned char *p, size_t len)
{
	size_t at = 8;

	while (at + 12 <= len) {
		uint32_t n = (uint32_t)p[at] << 24 | (uint32_t)p[at + 1] << 16 |
			     (uint32_t)p[at + 2] << 8 | p[at + 3];
		uint32_t c;
		if (n > len - at - 12)
			break;
		c = png_fuzz_crc(p + at + 4, (size_t)n + 4);
		p[at + 8 + n] = (unsigned char)(c >> 24);
		p[at + 9 + n] = (unsigned char)(c >> 16);
		p[at + 10 + n] = (unsigned char)(c >> 8);
		p[at + 11 + n] = (unsigned char)c;
		at += 12 + (size_t)n;
	}
}

FUZZ_TARGET(png)
{
	unsigned char *png = fuzz_copy(data, size);
	struct rfb_png_info info = { 0 };
	struct rfb_pipe_key key = { 1, 0, 0, RFB_STAGE_PARTIAL };
	struct rfb_pipe_out out;
	rfb_pipeline *p = NULL;
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	rfb_err err = { 0 };
	int probed, rc;

	png_fix_crcs(png, size);
	probed = rfb_png_read_header(png, size, FUZZ_PNG_MAX_PIXELS, &info,
				     &err) == 0;
	if (!probed)
		FUZZ_REJECTED(&err, err.code);
	memset(&err, 0, sizeof err);
	rc = rfb_png_decode(png, size, FUZZ_PNG_MAX_PIXELS, &img, &buf, &err);
	if (rc == 0) {
		FUZZ_ASSERT(probed);
		FUZZ_ASSERT(img.width == info.width && img.height == info.height &&
			    img.channels == info.channels);
	} else {
		FUZZ_REJECTED(&err, rc);
	}
	FUZZ_ASSERT(ctx && rfb_pipeline_parse("resize=9x7,vflip=1", &p, NULL) == 0);
	rfb_pipe_ctx_set_max_pixels(ctx, FUZZ_PNG_MAX_PIXELS);
	memset(&err, 0, sizeof err);
	if (rfb_pipe_run_jpeg(ctx, p, png, size, &key, &out, &err) == 0) {
		FUZZ_ASSERT(rc == 0);
		FUZZ_ASSERT(out.shape.width == 7 && out.shape.height == 9 &&
			    out.shape.channels == 3);
	} else {
		FUZZ_ASSERT(rc != 0);
	}
	rfb_pipeline_free(p);
	rfb_pipe_ctx_free(ctx);
	rfb_imgbuf_free(&buf);
	free(png);
	return rc == 0;
}
