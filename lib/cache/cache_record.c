/*
 * cache_record.c - encoding, checking and decoding cache records' payloads
 * (see record.h; the header's bytes are cache_format.c's, the layout is in
 * refurb-cache(5)).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "refurb/checksum.h"
#include "refurb/decode.h"
#include "refurb/encode.h"
#include "refurb/record.h"
#include "cache_format_internal.h"


struct rfb_codec_ctx {
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
	rfb_encoder *jenc;   /* made on first use */
	rfb_decoder *jdec;
	rfb_imgbuf packed;   /* contiguous copy of a strided image */
	rfb_imgbuf jpeg;     /* JPEG payload before it is framed */
};

const struct rfb_enum_name rfb_codec_kind_names[] = {
	{ RFB_CODEC_RAW, "raw" },
	{ RFB_CODEC_ZSTD, "zstd" },
	{ RFB_CODEC_JPEG, "jpeg" },
	{ 0, NULL },
};

const char *rfb_codec_kind_name(enum rfb_codec_kind kind)
{
	return rfb_enum_name(rfb_codec_kind_names, (int)kind);
}

int rfb_codec_parse(const char *text, struct rfb_codec *c, rfb_err *err)
{
	const char *colon = strchr(text, ':');
	size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
	char name[8];
	char *end;
	long v;
	int kind = -1;

	if (name_len < sizeof name) {
		memcpy(name, text, name_len);
		name[name_len] = '\0';
		kind = rfb_enum_parse(rfb_codec_kind_names, name);
	}
	if (kind < 0 || (kind == RFB_CODEC_RAW && colon))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "unknown codec '%s' (zstd[:LEVEL], raw, "
				   "jpeg[:QUALITY])", text);
	c->kind = kind;
	c->level = kind == RFB_CODEC_ZSTD ? RFB_CODEC_ZSTD_DEFAULT_LEVEL
		   : kind == RFB_CODEC_JPEG ? RFB_CODEC_JPEG_DEFAULT_QUALITY : 0;
	if (!colon)
		return 0;
	v = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || v < 1 ||
	    v > (c->kind == RFB_CODEC_ZSTD ? 19 : 100))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "codec '%s': %s must be a number from 1 to %d",
				   text, c->kind == RFB_CODEC_ZSTD ? "level"
				   : "quality", c->kind == RFB_CODEC_ZSTD ? 19 : 100);
	c->level = (int)v;
	return 0;
}

const char *rfb_codec_text(const struct rfb_codec *c, char *buf, size_t n)
{
	const char *name = rfb_codec_kind_name(c->kind);

	if (c->kind == RFB_CODEC_RAW || !name)
		snprintf(buf, n, "%s", name ? name : "?");
	else
		snprintf(buf, n, "%s:%d", name, c->level);
	return buf;
}

rfb_codec_ctx *rfb_codec_ctx_new(rfb_err *err)
{
	rfb_codec_ctx *x = calloc(1, sizeof *x);

	if (x) {
		x->zc = ZSTD_createCCtx();
		x->zd = ZSTD_createDCtx();
	}
	if (!x || !x->zc || !x->zd) {
		rfb_codec_ctx_free(x);
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory for codecs");
		return NULL;
	}
	return x;
}

void rfb_codec_ctx_free(rfb_codec_ctx *x)
{
	if (!x)
		return;
	ZSTD_freeCCtx(x->zc);
	ZSTD_freeDCtx(x->zd);
	rfb_encoder_free(x->jenc);
	rfb_decoder_free(x->jdec);
	rfb_imgbuf_free(&x->packed);
	rfb_imgbuf_free(&x->jpeg);
	free(x);
}

/* The image's pixels as one contiguous block (a copy only if strided). */
static const unsigned char *contiguous(rfb_codec_ctx *x, const rfb_image *img,
				       rfb_err *err)
{
	rfb_image packed;

	if (img->stride == (size_t)img->width * img->channels)
		return img->data;
	if (rfb_image_alloc(&packed, &x->packed, img->width, img->height,
			    img->channels, err))
		return NULL;
	rfb_image_copy(&packed, img);
	return packed.data;
}

/* Compress (or copy) the pixels into out after the header's room; only
 * zstd needs them contiguous (a packed copy of a strided view). */
static int encode_payload(rfb_codec_ctx *x, const struct rfb_codec *codec,
			  const rfb_image *img, size_t raw, rfb_imgbuf *out,
			  size_t *stored, rfb_err *err)
{
	const unsigned char *px;
	size_t cap, n;
	int rc;

	if (codec->kind == RFB_CODEC_JPEG) {
		if (!x->jenc && !(x->jenc = rfb_encoder_new(err)))
			return err ? err->code : RFB_ENOMEM;
		rc = rfb_jpeg_encode(x->jenc, img, codec->level, RFB_ENCODE_444,
				     &x->jpeg, &n, err);
		if (rc || (rc = rfb_imgbuf_reserve(out, RFB_RECORD_HEADER_SIZE + n,
						   err)))
			return rc;
		memcpy(out->data + RFB_RECORD_HEADER_SIZE, x->jpeg.data, n);
		*stored = n;
		return 0;
	}
	cap = codec->kind == RFB_CODEC_ZSTD ? ZSTD_compressBound(raw) : raw;
	if ((rc = rfb_imgbuf_reserve(out, RFB_RECORD_HEADER_SIZE + cap, err)))
		return rc;
	if (codec->kind == RFB_CODEC_RAW) {
		/* the rows straight into the record, strided or not: the
		 * only copy of the pixels (none when they were made there:
		 * rfb_record_raw_room) */
		rfb_image payload = { out->data + RFB_RECORD_HEADER_SIZE,
				      (size_t)img->width * img->channels,
				      img->width, img->height, img->channels };
		if (img->data != payload.data || img->stride != payload.stride)
			rfb_image_copy(&payload, img);
		*stored = raw;
		return 0;
	}
	if (!(px = contiguous(x, img, err)))
		return err ? err->code : RFB_ENOMEM;
	n = ZSTD_compressCCtx(x->zc, out->data + RFB_RECORD_HEADER_SIZE, cap,
			      px, raw, codec->level);
	if (ZSTD_isError(n))
		return rfb_err_set(err, RFB_EINVAL, NULL, "zstd: %s",
				   ZSTD_getErrorName(n));
	*stored = n;
	return 0;
}

unsigned char *rfb_record_raw_room(rfb_imgbuf *out, int width, int height,
				   int channels)
{
	size_t raw = (size_t)width * height * channels;

	if (width < 1 || height < 1 || width > 65535 || height > 65535 ||
	    raw > RFB_RECORD_MAX_RAW ||
	    rfb_imgbuf_reserve(out, RFB_RECORD_HEADER_SIZE + raw, NULL))
		return NULL;
	return out->data + RFB_RECORD_HEADER_SIZE;
}

int rfb_record_encode(rfb_codec_ctx *x, const struct rfb_codec *codec,
		      const rfb_image *img, uint32_t sample,
		      uint32_t write_epoch, uint32_t death_epoch,
		      rfb_imgbuf *out, size_t *len, rfb_err *err)
{
	struct rfb_record_meta m = { 0 };
	size_t raw = (size_t)img->width * img->height * img->channels, stored = 0;
	int rc;

	if (img->width > 65535 || img->height > 65535 || raw > RFB_RECORD_MAX_RAW)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "the partial pipeline's "
				   "output, %dx%dx%d (%zu bytes), is more than "
				   "the %u bytes and 65535 pixels a side a cache "
				   "record holds: end the partial pipeline with "
				   "a smaller resize or crop", img->width,
				   img->height, img->channels, raw,
				   (unsigned)RFB_RECORD_MAX_RAW);
	if ((rc = encode_payload(x, codec, img, raw, out, &stored, err)))
		return rc;
	if (stored > RFB_RECORD_MAX_STORED)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "record too large");
	m.sample = sample;
	m.write_epoch = write_epoch;
	m.death_epoch = death_epoch;
	m.stored_len = (uint32_t)stored;
	m.raw_len = (uint32_t)raw;
	m.width = (uint16_t)img->width;
	m.height = (uint16_t)img->height;
	m.channels = (uint8_t)img->channels;
	m.codec = (uint8_t)codec->kind;
	m.payload_crc = rfb_crc32c(0, out->data + RFB_RECORD_HEADER_SIZE, stored);
	rfbi_record_header_encode(&m, out->data);
	*len = RFB_RECORD_HEADER_SIZE + stored;
	return 0;
}

int rfb_record_verify(const unsigned char *rec, size_t len,
		      const struct rfb_record_meta *m, rfb_err *err)
{
	if (len < rfb_record_size(m))
		return rfb_err_set(err, RFB_ETRUNC, NULL, "record cut short");
	if (rfb_crc32c(0, rec + RFB_RECORD_HEADER_SIZE, m->stored_len) !=
	    m->payload_crc)
		return rfb_err_set(err, RFB_ECHECKSUM, NULL,
				   "record payload checksum mismatch");
	return 0;
}

static int decode_jpeg(rfb_codec_ctx *x, const unsigned char *p,
		       const struct rfb_record_meta *m, rfb_image *img,
		       rfb_imgbuf *buf, rfb_err *err)
{
	struct rfb_decode_opts o = { 0 };
	int rc;

	if (!x->jdec && !(x->jdec = rfb_decoder_new(err)))
		return err ? err->code : RFB_ENOMEM;
	o.color = m->channels == 1 ? RFB_DECODE_GRAY : RFB_DECODE_RGB;
	/* the JPEG must have the header's size: refuse a larger one before
	 * its pixels are allocated or decoded (a bomb in the cache) */
	o.max_pixels = (uint64_t)m->width * m->height;
	rc = rfb_decode(x->jdec, p, m->stored_len, &o, img, buf, NULL, err);
	if (rc == 0 && (img->width != m->width || img->height != m->height ||
			img->channels != m->channels))
		rc = rfb_err_set(err, RFB_EFORMAT, NULL,
				 "record's JPEG does not match its header");
	return rc;
}

int rfb_record_decode_checked(rfb_codec_ctx *x, const unsigned char *rec,
			      const struct rfb_record_meta *m, rfb_image *img,
			      rfb_imgbuf *buf, rfb_err *err)
{
	const unsigned char *p = rec + RFB_RECORD_HEADER_SIZE;
	size_t n;
	int rc;

	if (m->codec == RFB_CODEC_JPEG)
		return decode_jpeg(x, p, m, img, buf, err);
	if (m->codec == RFB_CODEC_RAW) {
		/* the pixels are the payload: a view, no copy */
		img->data = (unsigned char *)p;
		img->stride = (size_t)m->width * m->channels;
		img->width = m->width;
		img->height = m->height;
		img->channels = m->channels;
		return 0;
	}
	if ((rc = rfb_image_alloc(img, buf, m->width, m->height, m->channels,
				  err)))
		return rc;
	n = ZSTD_decompressDCtx(x->zd, img->data, m->raw_len, p, m->stored_len);
	if (ZSTD_isError(n) || n != m->raw_len)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "record payload does not decompress: %s",
				   ZSTD_isError(n) ? ZSTD_getErrorName(n)
				   : "wrong length");
	return 0;
}

int rfb_record_decode(rfb_codec_ctx *x, const unsigned char *rec, size_t len,
		      struct rfb_record_meta *m, rfb_image *img,
		      rfb_imgbuf *buf, rfb_err *err)
{
	int rc;

	if ((rc = rfb_record_parse_header(rec, len, m, err)) ||
	    (rc = rfb_record_verify(rec, len, m, err)))
		return rc;
	return rfb_record_decode_checked(x, rec, m, img, buf, err);
}
