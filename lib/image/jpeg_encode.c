/*
 * jpeg_encode.c - JPEG encoding through TurboJPEG (see encode.h).
 *
 * The caller's buffer is grown to tjBufSize() (TurboJPEG's worst case for
 * the image) before compressing, and tjCompress2() is told never to
 * reallocate it (TJFLAG_NOREALLOC), so the buffer stays an ordinary
 * malloc'ed rfb_imgbuf.  TurboJPEG reports errors through its handle and
 * never prints.
 */
#include <limits.h>
#include <stdlib.h>

#include <turbojpeg.h>

#include "refurb/encode.h"

struct rfb_encoder {
	tjhandle tj;
};

rfb_encoder *rfb_encoder_new(rfb_err *err)
{
	rfb_encoder *e = calloc(1, sizeof *e);

	if (!e) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory for an encoder");
		return NULL;
	}
	e->tj = tjInitCompress();
	if (!e->tj) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "cannot start TurboJPEG: %s",
			    tjGetErrorStr2(NULL));
		free(e);
		return NULL;
	}
	return e;
}

void rfb_encoder_free(rfb_encoder *e)
{
	if (!e)
		return;
	tjDestroy(e->tj);
	free(e);
}

static int check_args(const rfb_image *img, int quality,
		      enum rfb_encode_subsampling subsampling, rfb_err *err)
{
	if (!img || !img->data || img->width < 1 || img->height < 1 ||
	    (img->channels != 1 && img->channels != 3) ||
	    img->stride < (size_t)img->width * img->channels)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "bad image to encode");
	if (quality < 1 || quality > 100)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "JPEG quality %d (1..100)", quality);
	if ((unsigned)subsampling > RFB_ENCODE_444)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "bad subsampling %d", (int)subsampling);
	return 0;
}

int rfb_jpeg_encode(rfb_encoder *e, const rfb_image *img, int quality,
		    enum rfb_encode_subsampling subsampling, rfb_imgbuf *out,
		    size_t *len, rfb_err *err)
{
	static const int tjsamp[] = { TJSAMP_420, TJSAMP_422, TJSAMP_444 };
	unsigned char *dst;
	unsigned long size, dst_len;
	int samp, rc;

	if (!e || !out || !len)
		return rfb_err_set(err, RFB_EINVAL, NULL, "no encoder or output");
	rc = check_args(img, quality, subsampling, err);
	if (rc)
		return rc;
	if (img->stride > (size_t)INT_MAX)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "image rows too long");
	samp = img->channels == 1 ? TJSAMP_GRAY : tjsamp[subsampling];
	size = tjBufSize(img->width, img->height, samp);
	if (size == (unsigned long)-1)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "image too large");
	rc = rfb_imgbuf_reserve(out, size, err);
	if (rc)
		return rc;
	dst = out->data;
	dst_len = out->cap;
	if (tjCompress2(e->tj, img->data, img->width, (int)img->stride,
			img->height, img->channels == 1 ? TJPF_GRAY : TJPF_RGB,
			&dst, &dst_len, samp, quality, TJFLAG_NOREALLOC))
		return rfb_err_set(err, RFB_EINVAL, NULL, "JPEG encoding failed: %s",
				   tjGetErrorStr2(e->tj));
	*len = dst_len;
	return 0;
}
