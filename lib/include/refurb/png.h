/*
 * png.h - PNG images: the header (refurb-index's probe) and decoding to
 * the pixels torchvision's loader gives, Image.open(f).convert("RGB").
 *
 * Decoding goes through Debian's libpng (1.6).  Of PIL 9.4's conversion
 * to RGB: 8-bit gray (and 1, 2, 4-bit gray, scaled to 0..255 by bit
 * replication) and gray with alpha give one channel (the caller treats
 * it as the gray value in R, G and B, which is what convert("RGB")
 * gives); RGB, palette and RGBA give three channels, alpha dropped
 * (convert("RGB") drops it, it does not composite), a palette's tRNS
 * ignored; 16-bit samples keep their high byte, as PIL's unpackers do.
 * 16-bit gray without alpha (PIL's mode I;16, which convert("RGB")
 * clips) is refused.  No gamma or colour-profile correction: PIL applies
 * none.
 */
#ifndef REFURB_PNG_H
#define REFURB_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"
#include "refurb/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The 8 bytes every PNG starts with. */
#define RFB_PNG_SIGNATURE "\x89PNG\r\n\x1a\n"

struct rfb_png_info {
	int width, height;
	int bit_depth;   /* 1, 2, 4, 8 or 16 */
	int color_type;  /* 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA */
	int interlaced;
	int channels;    /* of the decoded image: 1 (gray) or 3 */
};

/* 1 if data[0..len) starts with the PNG signature. */
int rfb_png_sniff(const void *data, size_t len);

/*
 * Read the IHDR chunk of the PNG in data[0..len) (len may cover only the
 * file's start: 33 bytes suffice).  RFB_EFORMAT for something that is not
 * a PNG, a bad IHDR (its CRC included) or an unsupported kind (16-bit
 * gray), RFB_ETRUNC when len is too short, RFB_ELIMIT beyond max_pixels;
 * err's path left empty.
 */
int rfb_png_read_header(const void *data, size_t len, uint64_t max_pixels,
			struct rfb_png_info *info, rfb_err *err) RFB_MUST_CHECK;

/*
 * Decode the PNG in data[0..len) into img (info->channels channels),
 * backed by buf.  Returns 0, or RFB_EFORMAT / RFB_ETRUNC / RFB_ELIMIT /
 * RFB_ENOMEM with libpng's reason in err (path left empty).  Thread-safe:
 * no state outside the call.
 */
int rfb_png_decode(const void *data, size_t len, uint64_t max_pixels,
		   rfb_image *img, rfb_imgbuf *buf, rfb_err *err) RFB_MUST_CHECK;

/*
 * The name of the image format data starts with, when it is one refurb
 * does not read ("GIF", "BMP", "WebP", "TIFF", "PNM", "JPEG 2000",
 * "HEIF/AVIF"), else NULL: for messages that say what a file is.
 */
const char *rfb_image_format_name(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
