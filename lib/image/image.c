/*
 * image.c - image views and their reusable buffers (see image.h).
 */
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/image.h"

int rfb_imgbuf_reserve(rfb_imgbuf *buf, size_t n, rfb_err *err)
{
	unsigned char *p;

	if (n <= buf->cap)
		return 0;
	/* grow by half again so slowly growing sizes settle quickly */
	if (n < buf->cap + buf->cap / 2)
		n = buf->cap + buf->cap / 2;
	p = malloc(n);
	if (!p)
		return rfb_err_set(err, RFB_ENOMEM, NULL,
				   "out of memory for a %zu-byte image", n);
	free(buf->data);
	buf->data = p;
	buf->cap = n;
	return 0;
}

void rfb_imgbuf_free(rfb_imgbuf *buf)
{
	if (!buf)
		return;
	free(buf->data);
	buf->data = NULL;
	buf->cap = 0;
}

int rfb_image_alloc(rfb_image *img, rfb_imgbuf *buf, int width, int height,
		    int channels, rfb_err *err)
{
	size_t row, total;
	int rc;

	if (width < 1 || height < 1 || width > RFB_IMAGE_MAX_SIDE ||
	    height > RFB_IMAGE_MAX_SIDE)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "image size %dx%d out of range", width, height);
	if (channels != 1 && channels != 3)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "%d channels (only 1 or 3 supported)", channels);
	if (rfb_mul_size((size_t)width, (size_t)channels, &row) ||
	    rfb_mul_size(row, (size_t)height, &total))
		return rfb_err_set(err, RFB_ELIMIT, NULL, "image too large");
	rc = rfb_imgbuf_reserve(buf, total, err);
	if (rc)
		return rc;
	img->data = buf->data;
	img->stride = row;
	img->width = width;
	img->height = height;
	img->channels = channels;
	return 0;
}

void rfb_image_copy(rfb_image *dst, const rfb_image *src)
{
	size_t row = (size_t)src->width * (size_t)src->channels;

	if (src->stride == row && dst->stride == row) {
		memcpy(dst->data, src->data, row * (size_t)src->height);
		return;
	}
	for (int y = 0; y < src->height; y++)
		memcpy(dst->data + (size_t)y * dst->stride,
		       src->data + (size_t)y * src->stride, row);
}
