/*
 * jpeg.h - reading a JPEG's header without decoding it.
 *
 * Used by refurb-index (pixel sizes of every file) and by the decoder to
 * plan decode-time scaling.  The header is parsed by TurboJPEG; nothing is
 * allocated from the header's values.
 */
#ifndef REFURB_JPEG_H
#define REFURB_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_jpeg_info {
	int width, height;
	int components;  /* 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK */
	int colorspace;  /* TurboJPEG TJCS_* */
	int subsampling; /* TurboJPEG TJSAMP_*, -1 if unknown */
};

typedef struct rfb_jpeg_probe rfb_jpeg_probe;

/* A reusable header reader (one per thread).  NULL with err on failure. */
rfb_jpeg_probe *rfb_jpeg_probe_new(rfb_err *err) RFB_MUST_CHECK;

/* Free a probe.  NULL accepted. */
void rfb_jpeg_probe_free(rfb_jpeg_probe *p);

/*
 * Read the header of the JPEG in data[0..len).  Rejects data that is not
 * a JPEG (RFB_EFORMAT), a header that is cut short (RFB_ETRUNC), width or
 * height 0 (RFB_EFORMAT) and more than max_pixels pixels (RFB_ELIMIT),
 * with a reason in err (path left empty: the caller knows the file).
 * len may cover only the start of the file; RFB_ETRUNC then means "read
 * more and try again".
 */
int rfb_jpeg_read_header(rfb_jpeg_probe *p, const void *data, size_t len,
			 uint64_t max_pixels, struct rfb_jpeg_info *info,
			 rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
