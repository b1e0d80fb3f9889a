/*
 * contact_sheet.c - contact sheets (see sheet.h).
 */
#include <string.h>

#include "refurb/encode.h"
#include "refurb/sheet.h"

static void fill_bg(rfb_image *s, const unsigned char bg[3])
{
	for (int y = 0; y < s->height; y++) {
		unsigned char *row = s->data + (size_t)y * s->stride;
		for (int x = 0; x < s->width; x++)
			memcpy(row + (size_t)x * s->channels, bg, (size_t)s->channels);
	}
}

/* Copy img into s with its top-left corner at (x0, y0). */
static void paste(rfb_image *s, const rfb_image *img, int x0, int y0)
{
	for (int y = 0; y < img->height; y++) {
		const unsigned char *in = img->data + (size_t)y * img->stride;
		unsigned char *out = rfb_image_px(s, x0, y0 + y);
		if (img->channels == s->channels) {
			memcpy(out, in, (size_t)img->width * img->channels);
			continue;
		}
		for (int x = 0; x < img->width; x++) /* gray into RGB */
			out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[x];
	}
}

int rfb_sheet_build(const rfb_image *images, int n,
		    const struct rfb_sheet_opts *opts, rfb_image *sheet,
		    rfb_imgbuf *buf, rfb_err *err)
{
	int cell_w = 0, cell_h = 0, ch = 1, cols, rows, rc;
	long w, h;

	if (n < 1 || opts->cols < 1 || opts->gap < 0 || opts->gap > 1000)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "contact sheet: %d images, %d columns, gap %d",
				   n, opts->cols, opts->gap);
	for (int i = 0; i < n; i++) {
		if (images[i].width > cell_w)
			cell_w = images[i].width;
		if (images[i].height > cell_h)
			cell_h = images[i].height;
		if (images[i].channels == 3)
			ch = 3;
	}
	cols = n < opts->cols ? n : opts->cols;
	rows = (n + cols - 1) / cols;
	w = (long)cols * (cell_w + opts->gap) + opts->gap;
	h = (long)rows * (cell_h + opts->gap) + opts->gap;
	if (w > RFB_IMAGE_MAX_SIDE || h > RFB_IMAGE_MAX_SIDE)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "contact sheet of %ldx%ld pixels is too large", w, h);
	rc = rfb_image_alloc(sheet, buf, (int)w, (int)h, ch, err);
	if (rc)
		return rc;
	fill_bg(sheet, opts->bg);
	for (int i = 0; i < n; i++) {
		const rfb_image *img = &images[i];
		int x0 = opts->gap + (i % cols) * (cell_w + opts->gap);
		int y0 = opts->gap + (i / cols) * (cell_h + opts->gap);
		paste(sheet, img, x0 + (cell_w - img->width) / 2,
		      y0 + (cell_h - img->height) / 2);
	}
	return 0;
}

int rfb_sheet_encode(const rfb_image *sheet, int quality, rfb_imgbuf *out,
		     size_t *len, rfb_err *err)
{
	rfb_encoder *e = rfb_encoder_new(err);
	int rc;

	if (!e)
		return err ? err->code : RFB_ENOMEM;
	rc = rfb_jpeg_encode(e, sheet, quality, RFB_ENCODE_420, out, len, err);
	rfb_encoder_free(e);
	return rc;
}
