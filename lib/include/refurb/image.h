/*
 * image.h - the image type every decoder and transform works on.
 *
 * An rfb_image is a view: 8-bit samples, height rows of width pixels of
 * channels interleaved samples (1 = gray, 3 = RGB), rows stride bytes
 * apart.  It does not own its pixels.  Pixels live in rfb_imgbuf buffers
 * that only ever grow, so a worker thread that keeps its buffers reuses
 * them for every sample: no allocation per sample in the steady state.
 */
#ifndef REFURB_IMAGE_H
#define REFURB_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rfb_image {
	unsigned char *data; /* pixel (0, 0); row y starts at data + y*stride */
	size_t stride;       /* bytes from one row to the next, >= width*channels */
	int width, height;   /* pixels, > 0 */
	int channels;        /* 1 or 3 */
} rfb_image;

/* A growable buffer.  Zero-initialise; free with rfb_imgbuf_free(). */
typedef struct rfb_imgbuf {
	unsigned char *data;
	size_t cap;
} rfb_imgbuf;

/* Largest width or height refurb handles, and default pixel limit. */
#define RFB_IMAGE_MAX_SIDE 65535
#define RFB_IMAGE_DEFAULT_MAX_PIXELS 100000000ULL

/*
 * Make sure buf holds at least n bytes (contents are not preserved when it
 * grows).  Returns 0 or RFB_ENOMEM with err filled.
 */
int rfb_imgbuf_reserve(rfb_imgbuf *buf, size_t n, rfb_err *err) RFB_MUST_CHECK;

/* Release buf's memory and zero it.  NULL accepted. */
void rfb_imgbuf_free(rfb_imgbuf *buf);

/*
 * Point img at a fresh width x height x channels image stored in buf
 * (stride = width * channels), growing buf if needed.  Checks sizes
 * (1..RFB_IMAGE_MAX_SIDE, channels 1 or 3) and overflow.  Pixel values are
 * undefined.  Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_image_alloc(rfb_image *img, rfb_imgbuf *buf, int width, int height,
		    int channels, rfb_err *err) RFB_MUST_CHECK;

/* Pointer to pixel (x, y) of img. */
static inline unsigned char *rfb_image_px(const rfb_image *img, int x, int y)
{
	return img->data + (size_t)y * img->stride + (size_t)x * img->channels;
}

/* Copy src's pixels into dst, which must have the same shape. */
void rfb_image_copy(rfb_image *dst, const rfb_image *src);

#ifdef __cplusplus
}
#endif

#endif
