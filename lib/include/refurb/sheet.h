/*
 * sheet.h - contact sheets: a grid of images in one picture, for looking
 * at what a pipeline does (refurb-dump --preview).
 *
 * Cells are as large as the largest image, images sit centred in their
 * cell on a background colour, cells are separated by a gap.  A sheet
 * with any 3-channel image is RGB (gray images are expanded); otherwise
 * it is gray.
 */
#ifndef REFURB_SHEET_H
#define REFURB_SHEET_H

#include <stddef.h>

#include "refurb/error.h"
#include "refurb/image.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_sheet_opts {
	int cols;                /* cells per row, >= 1 */
	int gap;                 /* pixels between cells and around them */
	unsigned char bg[3];     /* background (gray sheets use bg[0]) */
};

/*
 * Lay out images[0..n) row by row, cols per row, into sheet (backed by
 * buf, grown as needed).  Images may differ in size and channel count.
 * Returns 0 or a negative RFB_E* code with err filled (RFB_EINVAL for no
 * image or a bad option, RFB_ELIMIT for a sheet beyond
 * RFB_IMAGE_MAX_SIDE).
 */
int rfb_sheet_build(const rfb_image *images, int n,
		    const struct rfb_sheet_opts *opts, rfb_image *sheet,
		    rfb_imgbuf *buf, rfb_err *err) RFB_MUST_CHECK;

/*
 * Encode sheet as a JPEG (quality 1..100, 4:2:0) into out; *len gets its
 * size.  Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_sheet_encode(const rfb_image *sheet, int quality, rfb_imgbuf *out,
		     size_t *len, rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
