/*
 * fuzz_record.c - a cache record (refurb-cache(5)) on any bytes: header
 * parse, payload check and decode through whichever codec the header
 * names (raw, zstd, JPEG), checksums repaired first.  Decoding must not
 * allocate an image larger than the header's raw length (a JPEG payload
 * may claim any size); a record that decodes must give an image of the
 * header's shape; a raw record must
 * encode back to the same bytes, and a zstd one to a record that decodes
 * to the same pixels.
 */
#include "fuzz.h"
#include "refurb/record.h"

/* The payload CRC lives in the header, so it goes first. */
static void record_fix(unsigned char *d, size_t len)
{
	if (len < RFB_RECORD_HEADER_SIZE)
		return;
	fuzz_fix_crc(d, len, 32, RFB_RECORD_HEADER_SIZE,
		     rfb_get_le32(d + 16));
	fuzz_fix_crc(d, len, 36, 0, 36);
}

static void record_reencode(rfb_codec_ctx *x, const unsigned char *d,
			    const struct rfb_record_meta *m,
			    const rfb_image *img)
{
	struct rfb_codec codec = { m->codec, m->codec == RFB_CODEC_ZSTD };
	struct rfb_record_meta m2;
	rfb_imgbuf out = { 0 }, buf2 = { 0 };
	rfb_image img2;
	rfb_err err = { 0 };
	size_t len;

	FUZZ_ASSERT(rfb_record_encode(x, &codec, img, m->sample, m->write_epoch,
				      m->death_epoch, &out, &len, &err) == 0);
	if (m->codec == RFB_CODEC_RAW && rfb_get_le16(d + 30) == 0)
		FUZZ_ASSERT(len == rfb_record_size(m) &&
			    memcmp(out.data, d, len) == 0);
	FUZZ_ASSERT(rfb_record_decode(x, out.data, len, &m2, &img2, &buf2,
				      &err) == 0);
	FUZZ_ASSERT(m2.width == m->width && m2.height == m->height &&
		    m2.channels == m->channels);
	FUZZ_ASSERT(memcmp(img2.data, img->data, m->raw_len) == 0);
	rfb_imgbuf_free(&out);
	rfb_imgbuf_free(&buf2);
}

FUZZ_TARGET(record)
{
	unsigned char *d = fuzz_copy(data, size);
	struct rfb_record_meta m;
	rfb_codec_ctx *x;
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	rfb_err err = { 0 };
	int rc;

	record_fix(d, size);
	x = rfb_codec_ctx_new(&err);
	FUZZ_ASSERT(x != NULL);
	rc = rfb_record_decode(x, d, size, &m, &img, &buf, &err);
	/* the image buffer is only touched once the header parsed, and never
	 * grows beyond what the header says, whatever the payload claims */
	FUZZ_ASSERT(buf.cap == 0 || buf.cap <= m.raw_len);
	if (rc == 0) {
		FUZZ_ASSERT(rfb_record_size(&m) <= size);
		FUZZ_ASSERT(img.width == m.width && img.height == m.height &&
			    img.channels == m.channels);
		FUZZ_ASSERT(img.stride == (size_t)m.width * m.channels);
		if (m.codec != RFB_CODEC_JPEG)
			record_reencode(x, d, &m, &img);
	} else {
		FUZZ_REJECTED(&err, rc);
	}
	rfb_imgbuf_free(&buf);
	rfb_codec_ctx_free(x);
	free(d);
	return rc == 0;
}
