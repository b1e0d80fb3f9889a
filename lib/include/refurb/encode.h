/*
 * encode.h - JPEG encoding of an rfb_image into a reusable buffer.
 *
 * Used by the cache's lossy codec and by contact sheets.  One rfb_encoder
 * per thread; the output goes into a caller-owned rfb_imgbuf that only
 * grows, so encoding allocates nothing per image in the steady state.
 * TurboJPEG (tjCompress2) does the work with its defaults: baseline,
 * Huffman tables from the standard, accurate integer DCT (JDCT_ISLOW).
 * The same image, quality and subsampling always give the same bytes.
 */
#ifndef REFURB_ENCODE_H
#define REFURB_ENCODE_H

#include <stddef.h>

#include "refurb/error.h"
#include "refurb/image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rfb_encoder rfb_encoder;

/* Chroma subsampling of 3-channel images (1-channel images are always
 * written as grayscale JPEGs).  RFB_ENCODE_420 is the default (PIL's
 * default too): chroma at half resolution in both directions. */
enum rfb_encode_subsampling {
	RFB_ENCODE_420 = 0,
	RFB_ENCODE_422 = 1,
	RFB_ENCODE_444 = 2,
};

/* A new encoder, NULL with err filled on failure.  Free with
 * rfb_encoder_free(). */
rfb_encoder *rfb_encoder_new(rfb_err *err) RFB_MUST_CHECK;

/* Free an encoder.  NULL accepted. */
void rfb_encoder_free(rfb_encoder *e);

/*
 * Encode img (1 or 3 channels, any stride) as a JPEG of the given quality
 * (1..100) and subsampling into out, which is grown as needed (its old
 * contents are lost); *len receives the JPEG's size in bytes.  Returns 0
 * or a negative RFB_E* code with err filled (RFB_EINVAL for a bad image,
 * quality or subsampling).
 */
int rfb_jpeg_encode(rfb_encoder *e, const rfb_image *img, int quality,
		    enum rfb_encode_subsampling subsampling, rfb_imgbuf *out,
		    size_t *len, rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
