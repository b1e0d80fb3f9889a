/*
 * fuzz_jpeg.c - the JPEG decode path on any bytes: the TurboJPEG header
 * probe (rfb_jpeg_read_header), then rfb_decode with a small pixel limit
 * (decompression bombs must stop at the header), at the scale, colour
 * mode and region chosen by the input's first bytes, then, on the same
 * decoder (which must stay usable after any error), the same decode with
 * RFB_DECODE_VIEW toggled: the rows decoded in place and the rows copied
 * out must be the same pixels.
 *
 * Input: 5 option bytes, then the JPEG file.
 *   byte 0  bits 0-1 scale 1/1, 1/2, 1/4, 1/8; bits 2-3 colour mode (RGB,
 *           KEEP, GRAY; 3 = RGB); bit 4 lenient; bit 5 decode a region;
 *           bit 6 a scan limit of 4; bit 7 the second decode
 *   1-4     the region's x, y, width, height in 256ths of the full image,
 *           mapped to scaled pixels by rfb_decode_map_region; the low bit
 *           of byte 4 also asks RFB_DECODE_VIEW for the first decode
 */
#include "fuzz.h"
#include "refurb/decode.h"
#include "refurb/jpeg.h"

#define FUZZ_JPEG_MAX_PIXELS ((uint64_t)1 << 18)
#define FUZZ_JPEG_OPTIONS 5

/* A region of the w x h image from four bytes, at least 1x1. */
static void jpeg_region(const uint8_t *b, int w, int h, int r[4])
{
	r[0] = (int)((int64_t)b[0] * w / 256);
	r[1] = (int)((int64_t)b[1] * h / 256);
	r[2] = 1 + (int)((int64_t)b[2] * (w - r[0] - 1) / 255);
	r[3] = 1 + (int)((int64_t)b[3] * (h - r[1] - 1) / 255);
}

/* Options from the first bytes.  A region inside the image must always
 * map to a region of the scaled image. */
static void jpeg_options(const uint8_t *b, const struct rfb_jpeg_info *info,
			 struct rfb_decode_opts *o)
{
	static const int denoms[4] = { 1, 2, 4, 8 };
	int r[4];
	double box[4];

	o->scale_denom = denoms[b[0] & 3];
	o->color = (enum rfb_decode_color)((b[0] >> 2 & 3) % 3);
	o->flags = (b[0] & 0x10 ? RFB_DECODE_LENIENT : 0) |
		   (b[4] & 1 ? RFB_DECODE_VIEW : 0);
	o->max_scans = b[0] & 0x40 ? 4 : 0;
	o->max_pixels = FUZZ_JPEG_MAX_PIXELS;
	if (!(b[0] & 0x20))
		return;
	jpeg_region(b + 1, info->width, info->height, r);
	FUZZ_ASSERT(rfb_decode_map_region(info->width, info->height,
					  o->scale_denom, r[0], r[1], r[2],
					  r[3], o, box) == 0);
	FUZZ_ASSERT(o->width >= 1 && o->height >= 1);
	FUZZ_ASSERT(box[0] >= 0 && box[1] >= 0 && box[2] <= o->width &&
		    box[3] <= o->height && box[0] < box[2] && box[1] < box[3]);
}

static int jpeg_channels(enum rfb_decode_color c, int components)
{
	if (c == RFB_DECODE_GRAY || (c == RFB_DECODE_KEEP && components == 1))
		return 1;
	return 3;
}

/* The same pixels, row by row (either may be a view with a larger
 * stride). */
static int jpeg_same(const rfb_image *a, const rfb_image *b)
{
	if (a->width != b->width || a->height != b->height ||
	    a->channels != b->channels)
		return 0;
	for (int y = 0; y < a->height; y++)
		if (memcmp(rfb_image_px(a, 0, y), rfb_image_px(b, 0, y),
			   (size_t)a->width * a->channels))
			return 0;
	return 1;
}

/* 1 if the image decoded. */
static int jpeg_decode(rfb_decoder *dec, const uint8_t *opt,
			const uint8_t *jpeg, size_t len, int probed,
			const struct rfb_jpeg_info *probe_info)
{
	struct rfb_decode_opts o = { .max_pixels = FUZZ_JPEG_MAX_PIXELS };
	struct rfb_jpeg_info info;
	rfb_imgbuf buf = { 0 }, buf2 = { 0 };
	rfb_image img, img2;
	rfb_err err = { 0 };
	int rc;

	o.flags = opt[0] & 0x10 ? RFB_DECODE_LENIENT : 0;
	rc = rfb_decode_header(dec, jpeg, len, &o, &info, &err);

	if (rc == 0) {
		FUZZ_ASSERT((uint64_t)info.width * info.height <=
			    FUZZ_JPEG_MAX_PIXELS);
		if (probed)
			FUZZ_ASSERT(info.width == probe_info->width &&
				    info.height == probe_info->height);
		jpeg_options(opt, &info, &o);
		rc = rfb_decode_pixels(dec, &o, &img, &buf, &err);
	}
	if (rc == 0) {
		int w = o.width ? o.width
			: rfb_decode_scaled_size(info.width, o.scale_denom);
		int h = o.height ? o.height
			: rfb_decode_scaled_size(info.height, o.scale_denom);
		FUZZ_ASSERT(img.width == w && img.height == h);
		FUZZ_ASSERT(img.channels == jpeg_channels(o.color,
							  info.components));
		FUZZ_ASSERT(img.stride >= (size_t)w * img.channels);
	} else {
		FUZZ_REJECTED(&err, rc);
	}
	if (opt[0] & 0x80) {
		o.flags ^= RFB_DECODE_VIEW;
		if (rfb_decode(dec, jpeg, len, &o, &img2, &buf2, &info, &err) == 0 &&
		    rc == 0)
			FUZZ_ASSERT(jpeg_same(&img, &img2));
	}
	rfb_imgbuf_free(&buf);
	rfb_imgbuf_free(&buf2);
	return rc == 0;
}

FUZZ_TARGET(jpeg)
{
	struct rfb_jpeg_info info = { 0 };
	rfb_jpeg_probe *probe;
	rfb_decoder *dec;
	rfb_err err = { 0 };
	unsigned char *jpeg;
	size_t len;
	int probed, ok;

	if (size < FUZZ_JPEG_OPTIONS)
		return 0;
	/* an exact-size copy, so that reading past the end is caught */
	len = size - FUZZ_JPEG_OPTIONS;
	jpeg = fuzz_copy(data + FUZZ_JPEG_OPTIONS, len);
	probe = rfb_jpeg_probe_new(&err);
	dec = rfb_decoder_new(&err);
	FUZZ_ASSERT(probe && dec);
	probed = rfb_jpeg_read_header(probe, jpeg, len, FUZZ_JPEG_MAX_PIXELS,
				      &info, &err) == 0;
	if (probed)
		FUZZ_ASSERT(info.width > 0 && info.height > 0 &&
			    (uint64_t)info.width * info.height <=
				    FUZZ_JPEG_MAX_PIXELS);
	else
		FUZZ_REJECTED(&err, err.code);
	ok = jpeg_decode(dec, data, jpeg, len, probed, &info);
	rfb_decoder_free(dec);
	rfb_jpeg_probe_free(probe);
	free(jpeg);
	return ok;
}
