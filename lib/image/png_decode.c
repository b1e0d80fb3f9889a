/*
 * png_decode.c - PNG headers and decoding through libpng (see png.h).
 *
 * The header is parsed here (signature, IHDR and its CRC) so that the
 * index's probe needs no libpng state.  Decoding uses libpng's
 * progressive-free read API from memory; libpng reports errors through
 * a callback that must not return, so it longjmps back to decode(), the
 * one function that calls setjmp.  Nothing is printed (warnings are
 * dropped).
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "refurb/png.h"

int rfb_png_sniff(const void *data, size_t len)
{
	return len >= 8 && memcmp(data, RFB_PNG_SIGNATURE, 8) == 0;
}

const char *rfb_image_format_name(const void *data, size_t len)
{
	const unsigned char *p = data;

	if (len >= 6 && (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0))
		return "GIF";
	if (len >= 2 && p[0] == 'B' && p[1] == 'M')
		return "BMP";
	if (len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0)
		return "WebP";
	if (len >= 4 && (memcmp(p, "II*\0", 4) == 0 || memcmp(p, "MM\0*", 4) == 0))
		return "TIFF";
	if (len >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '7')
		return "PNM";
	if (len >= 12 && memcmp(p, "\0\0\0\x0cjP  \r\n\x87\n", 12) == 0)
		return "JPEG 2000";
	if (len >= 12 && memcmp(p + 4, "ftyp", 4) == 0)
		return "HEIF/AVIF";
	return NULL;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
	       p[3];
}


/* Why a 16-bit gray PNG is refused, and what to do: torchvision's loader
 * (Image.open(f).convert("RGB")) clips PIL's I;16 values to 255, so the
 * image it trains on is nearly white. */
#define GRAY16_MSG "16-bit grayscale PNG (not supported: PIL reads it as " \
	"I;16, which torchvision's convert(\"RGB\") clips to white); save it " \
	"with 8 bits (its high bytes) and index it again"

/* PNG's CRC-32 (ISO 3309, as zlib's crc32), bit by bit: only the 17
 * bytes of an IHDR go through it. */
static uint32_t png_crc(const unsigned char *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
	}
	return c ^ 0xFFFFFFFFu;
}

/* The kind of pixels PIL's convert("RGB") gives: 1 or 3 channels, or 0
 * when refurb refuses it. */
static int decoded_channels(int color_type, int bit_depth)
{
	switch (color_type) {
	case 0: return bit_depth == 16 ? 0 : 1;
	case 4: return 1;
	case 2: case 3: case 6: return 3;
	default: return 0;
	}
}

static int valid_depth(int color_type, int d)
{
	switch (color_type) {
	case 0: return d == 1 || d == 2 || d == 4 || d == 8 || d == 16;
	case 3: return d == 1 || d == 2 || d == 4 || d == 8;
	case 2: case 4: case 6: return d == 8 || d == 16;
	default: return 0;
	}
}

int rfb_png_read_header(const void *data, size_t len, uint64_t max_pixels,
			struct rfb_png_info *info, rfb_err *err)
{
	const unsigned char *p = data;

	if (!rfb_png_sniff(data, len))
		return rfb_err_set(err, len < 8 ? RFB_ETRUNC : RFB_EFORMAT, NULL,
				   "not a PNG file");
	if (len < 33)
		return rfb_err_set(err, RFB_ETRUNC, NULL, "PNG header cut short");
	if (be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0)
		return rfb_err_set(err, RFB_EFORMAT, NULL, "PNG without IHDR chunk");
	if (be32(p + 29) != png_crc(p + 12, 17))
		return rfb_err_set(err, RFB_EFORMAT, NULL, "PNG IHDR CRC mismatch");
	uint32_t w = be32(p + 16), h = be32(p + 20);
	info->bit_depth = p[24];
	info->color_type = p[25];
	info->interlaced = p[28];
	if (w == 0 || h == 0)
		return rfb_err_set(err, RFB_EFORMAT, NULL, "PNG of %ux%u pixels "
				   "(a width or height of 0)", w, h);
	if (w > RFB_IMAGE_MAX_SIDE || h > RFB_IMAGE_MAX_SIDE)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "PNG of %ux%u pixels: "
				   "wider or taller than %d, the largest side "
				   "refurb handles", w, h, RFB_IMAGE_MAX_SIDE);
	if ((uint64_t)w * h > max_pixels)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "PNG of %ux%u pixels, "
				   "more than the cap of %llu pixels "
				   "(--max-pixels)", w, h,
				   (unsigned long long)max_pixels);
	if (!valid_depth(info->color_type, info->bit_depth) || p[26] || p[27] ||
	    info->interlaced > 1)
		return rfb_err_set(err, RFB_EFORMAT, NULL, "bad PNG IHDR (colour "
				   "type %d, bit depth %d)", info->color_type,
				   info->bit_depth);
	info->width = (int)w;
	info->height = (int)h;
	info->channels = decoded_channels(info->color_type, info->bit_depth);
	if (!info->channels)
		return rfb_err_set(err, RFB_EFORMAT, NULL, "%s", GRAY16_MSG);
	return 0;
}

/* ---- decoding ---- */

struct png_job {
	const unsigned char *data;
	size_t len, pos;
	uint64_t max_pixels;
	rfb_image *img;
	rfb_imgbuf *buf;
	rfb_err *err;
	jmp_buf jump;
	int code;
	char msg[200];
	png_bytep *rows;
};

static void on_error(png_structp png, png_const_charp msg)
{
	struct png_job *j = png_get_error_ptr(png);

	snprintf(j->msg, sizeof j->msg, "%s", msg);
	if (!j->code)
		j->code = RFB_EFORMAT;
	longjmp(j->jump, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg; /* libpng's warnings are about ancillary chunks */
}

static void read_mem(png_structp png, png_bytep out, size_t n)
{
	struct png_job *j = png_get_io_ptr(png);

	if (n > j->len - j->pos) {
		j->code = RFB_ETRUNC;
		png_error(png, "PNG data cut short");
	}
	memcpy(out, j->data + j->pos, n);
	j->pos += n;
}

/* A PLTE shorter than the bit depth allows, filled up as PIL has it:
 * Pillow's palette starts as a gray ramp (ImagingPaletteNew, entry k =
 * (k, k, k)) that the PLTE overwrites from entry 0, so an index past the
 * table is the gray of its own value, where libpng would give black. */
static void fill_palette(png_structp png, png_infop info)
{
	png_color full[PNG_MAX_PALETTE_LENGTH];
	png_colorp plte;
	int n = 0, want = 1 << png_get_bit_depth(png, info);

	if (!png_get_PLTE(png, info, &plte, &n) || n >= want)
		return;
	for (int k = 0; k < want; k++)
		full[k] = k < n ? plte[k]
				: (png_color){ (png_byte)k, (png_byte)k, (png_byte)k };
	png_set_PLTE(png, info, full, want);
}

/* The transforms that give PIL's convert("RGB") (or its L image). */
static void set_transforms(png_structp png, png_infop info)
{
	int type = png_get_color_type(png, info);

	png_set_strip_16(png);         /* the high byte, as PIL */
	png_set_packing(png);          /* 1, 2, 4-bit samples in bytes */
	if (type == PNG_COLOR_TYPE_PALETTE) {
		fill_palette(png, info);
		png_set_palette_to_rgb(png);
	}
	if (type == PNG_COLOR_TYPE_GRAY)
		png_set_expand_gray_1_2_4_to_8(png);
	/* alpha, and the tRNS that palette_to_rgb may turn into alpha,
	 * are dropped: convert("RGB") ignores transparency */
	png_set_strip_alpha(png);
	png_set_interlace_handling(png);
}

/* Runs under setjmp: everything that can call on_error(). */
static int decode(struct png_job *j, png_structp png, png_infop info)
{
	uint32_t w, h;
	int channels;

	if (setjmp(j->jump))
		return j->code ? j->code : RFB_EFORMAT;
	png_set_read_fn(png, j, read_mem);
	png_set_user_limits(png, RFB_IMAGE_MAX_SIDE, RFB_IMAGE_MAX_SIDE);
	png_read_info(png, info);
	w = png_get_image_width(png, info);
	h = png_get_image_height(png, info);
	if ((uint64_t)w * h > j->max_pixels) {
		snprintf(j->msg, sizeof j->msg, "PNG of %ux%u pixels, more than "
			 "the cap of %llu pixels (--max-pixels)", w, h,
			 (unsigned long long)j->max_pixels);
		return RFB_ELIMIT;
	}
	channels = decoded_channels(png_get_color_type(png, info),
				    png_get_bit_depth(png, info));
	if (!channels) {
		snprintf(j->msg, sizeof j->msg, "%s", GRAY16_MSG);
		return RFB_EFORMAT;
	}
	set_transforms(png, info);
	png_read_update_info(png, info);
	if (png_get_rowbytes(png, info) != (size_t)w * channels) {
		snprintf(j->msg, sizeof j->msg, "PNG rows of %zu bytes, expected "
			 "%zu", (size_t)png_get_rowbytes(png, info),
			 (size_t)w * channels);
		return RFB_EFORMAT;
	}
	if (rfb_image_alloc(j->img, j->buf, (int)w, (int)h, channels, j->err))
		return j->err ? j->err->code : RFB_ENOMEM;
	if (!(j->rows = malloc((size_t)h * sizeof *j->rows)))
		return RFB_ENOMEM;
	for (uint32_t y = 0; y < h; y++)
		j->rows[y] = rfb_image_px(j->img, 0, (int)y);
	png_read_image(png, j->rows);
	png_read_end(png, NULL);
	return 0;
}

int rfb_png_decode(const void *data, size_t len, uint64_t max_pixels,
		   rfb_image *img, rfb_imgbuf *buf, rfb_err *err)
{
	struct png_job *j = calloc(1, sizeof *j);
	png_structp png = NULL;
	png_infop info = NULL;
	int rc = RFB_ENOMEM;

	if (!j)
		goto fail;
	*j = (struct png_job){ .data = data, .len = len, .max_pixels = max_pixels,
			       .img = img, .buf = buf, .err = err };
	if (!rfb_png_sniff(data, len)) {
		rc = RFB_EFORMAT;
		snprintf(j->msg, sizeof j->msg, "not a PNG file");
		goto fail;
	}
	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, on_error, on_warning);
	if (!png || !(info = png_create_info_struct(png)))
		goto fail;
	rc = decode(j, png, info);
fail:
	if (png)
		png_destroy_read_struct(&png, info ? &info : NULL, NULL);
	if (rc && j && j->msg[0])
		rfb_err_set(err, rc, NULL, "%s", j->msg);
	else if (rc && !(err && err->code == rc))
		rfb_err_set(err, rc, NULL, "out of memory decoding a PNG");
	if (j)
		free(j->rows);
	free(j);
	return rc;
}
