/*
 * jpeg_probe.c - JPEG header probe through TurboJPEG (see jpeg.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
#include <string.h>
#include <turbojpeg.h>

#include "refurb/jpeg.h"

struct rfb_jpeg_probe {
	tjhandle tj;
};

rfb_jpeg_probe *rfb_jpeg_probe_new(rfb_err *err)
{
	rfb_jpeg_probe *p = calloc(1, sizeof *p);

	if (!p) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	p->tj = tjInitDecompress();
	if (!p->tj) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "cannot start TurboJPEG: %s",
			    tjGetErrorStr2(NULL));
		free(p);
		return NULL;
	}
	return p;
}

void rfb_jpeg_probe_free(rfb_jpeg_probe *p)
{
	if (!p)
		return;
	tjDestroy(p->tj);
	free(p);
}

/* Components per TurboJPEG colorspace. */
static int colorspace_components(int cs)
{
	switch (cs) {
	case TJCS_GRAY: return 1;
	case TJCS_CMYK:
	case TJCS_YCCK: return 4;
	default: return 3;
	}
}

/*
 * Walk the marker segments up to the start of scan (where the header
 * ends): 1 if data reaches the end of the SOS header, 0 if it ends before
 * (the header is cut short), -1 if the segments do not chain up (left to
 * libjpeg, which skips some kinds of garbage).  libjpeg pads data that
 * ends early with a fake end-of-image and may then "succeed" with a 0x0
 * image, so a cut header must be caught here.
 */
static int reaches_sos(const unsigned char *d, size_t len)
{
	size_t i = 2;

	while (i + 2 <= len) {
		unsigned m, seglen;
		if (d[i] != 0xff)
			return -1;
		m = d[i + 1];
		if (m == 0xff) { /* fill byte */
			i++;
			continue;
		}
		if (m == 0x01 || (m >= 0xd0 && m <= 0xd8)) /* no length */
			return -1;
		if (i + 4 > len)
			return 0;
		seglen = (unsigned)d[i + 2] << 8 | d[i + 3];
		if (seglen < 2)
			return -1;
		if (m == 0xda)
			return i + 2 + seglen <= len;
		i += 2 + seglen;
	}
	return 0;
}

int rfb_jpeg_read_header(rfb_jpeg_probe *p, const void *data, size_t len,
			 uint64_t max_pixels, struct rfb_jpeg_info *info,
			 rfb_err *err)
{
	const unsigned char *d = data;
	int w = 0, h = 0, samp = -1, cs = -1;

	if (len < 2 || d[0] != 0xff || d[1] != 0xd8)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   len == 0 ? "empty file" : "not a JPEG file");
	if (len > (unsigned long)~0UL >> 1)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "file too large");
	if (reaches_sos(d, len) == 0)
		return rfb_err_set(err, RFB_ETRUNC, NULL,
				   "JPEG header is truncated (no start of scan)");
	if (tjDecompressHeader3(p->tj, d, (unsigned long)len, &w, &h, &samp,
				&cs) != 0) {
		char why[JMSG_LENGTH_MAX];
		snprintf(why, sizeof why, "%s", tjGetErrorStr2(p->tj));
		/* TurboJPEG 2.1 leaves a handle unusable after a failed header
		 * read (the next read returns 0x0): start afresh */
		tjhandle fresh = tjInitDecompress();
		if (fresh) {
			tjDestroy(p->tj);
			p->tj = fresh;
		}
		return rfb_err_set(err, RFB_EFORMAT, NULL, "bad JPEG header: %s",
				   why);
	}
	if (w <= 0 || h <= 0)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "JPEG header says %dx%d pixels", w, h);
	if ((uint64_t)w * (uint64_t)h > max_pixels)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "%dx%d pixels, more than the cap of %llu "
				   "pixels (--max-pixels)",
				   w, h, (unsigned long long)max_pixels);
	info->width = w;
	info->height = h;
	info->colorspace = cs;
	info->subsampling = samp;
	info->components = colorspace_components(cs);
	return 0;
}
