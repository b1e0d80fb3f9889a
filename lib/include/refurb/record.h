/*
 * record.h - one cached sample: a partially augmented image, compressed,
 * behind a checksummed header.  Records are what refurb-partial appends
 * to cache segments and what refurb-final reads back; the byte layout is
 * in refurb-cache(5).
 *
 * A per-thread rfb_codec_ctx holds the compressor and decompressor state
 * and is reused for every record.
 */
#ifndef REFURB_RECORD_H
#define REFURB_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/enum.h"
#include "refurb/error.h"
#include "refurb/image.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_RECORD_HEADER_SIZE 40
#define RFB_RECORD_MAX_RAW ((uint32_t)1 << 28)    /* 256 MiB of pixels */
#define RFB_RECORD_MAX_STORED ((uint32_t)1 << 29) /* after compression */
#define RFB_RECORD_NO_DEATH 0xffffffffu           /* never evicted */

enum rfb_codec_kind {
	RFB_CODEC_RAW = 0,
	RFB_CODEC_ZSTD = 1,
	RFB_CODEC_JPEG = 2,
};

/* A codec and its setting: zstd level (1..19) or JPEG quality (1..100). */
struct rfb_codec {
	int kind;
	int level;
};

#define RFB_CODEC_ZSTD_DEFAULT_LEVEL 1
#define RFB_CODEC_JPEG_DEFAULT_QUALITY 90

/* What a record header says. */
struct rfb_record_meta {
	uint32_t sample;       /* sample id in the index */
	uint32_t write_epoch;  /* epoch whose augmentation this is */
	uint32_t death_epoch;  /* epoch it is evicted in, or RFB_RECORD_NO_DEATH */
	uint32_t stored_len;   /* payload bytes */
	uint32_t raw_len;      /* width * height * channels */
	uint16_t width, height;
	uint8_t channels;      /* 1 or 3 */
	uint8_t codec;         /* enum rfb_codec_kind */
	uint32_t payload_crc;  /* CRC-32C of the payload */
};

/* The codecs' names ("raw", "zstd", "jpeg"; enum.h) and their namer:
 * NULL for an unknown value. */
extern const struct rfb_enum_name rfb_codec_kind_names[];
const char *rfb_codec_kind_name(enum rfb_codec_kind kind);

/*
 * Parse "zstd", "zstd:LEVEL", "raw", "jpeg" or "jpeg:QUALITY" into *c.
 * Returns 0 or RFB_EINVAL with a message.
 */
int rfb_codec_parse(const char *text, struct rfb_codec *c,
		    rfb_err *err) RFB_MUST_CHECK;

/* Canonical text of c ("zstd:1", "raw", "jpeg:90"; "?" for an unknown
 * kind) into buf of size n. */
const char *rfb_codec_text(const struct rfb_codec *c, char *buf, size_t n);

typedef struct rfb_codec_ctx rfb_codec_ctx;

/* A per-thread codec context.  NULL with err filled on failure. */
rfb_codec_ctx *rfb_codec_ctx_new(rfb_err *err) RFB_MUST_CHECK;

/* Free a context.  NULL accepted. */
void rfb_codec_ctx_free(rfb_codec_ctx *x);

/*
 * Encode img (1 or 3 channels, sides <= 65535) as a complete record,
 * header and payload, into out (grown as needed); *len is the record's
 * length.  Deterministic: the same image and codec give the same bytes.
 * Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_record_encode(rfb_codec_ctx *x, const struct rfb_codec *codec,
		      const rfb_image *img, uint32_t sample,
		      uint32_t write_epoch, uint32_t death_epoch,
		      rfb_imgbuf *out, size_t *len, rfb_err *err) RFB_MUST_CHECK;

/*
 * Room in out for the payload of a raw record of a width x height x
 * channels image (its rows contiguous, where rfb_record_encode puts
 * them): an image made there is encoded by the raw codec without a copy.
 * NULL when out of memory or the image is too large for a record.
 */
unsigned char *rfb_record_raw_room(rfb_imgbuf *out, int width, int height,
				   int channels);

/*
 * Parse and check a record header at p (len >= RFB_RECORD_HEADER_SIZE
 * bytes): magic, version, header checksum, codec, shape and lengths
 * within limits and consistent.  Returns 0 or RFB_EFORMAT /
 * RFB_EVERSION / RFB_ECHECKSUM / RFB_ETRUNC / RFB_ELIMIT.
 */
int rfb_record_parse_header(const unsigned char *p, size_t len,
			    struct rfb_record_meta *m,
			    rfb_err *err) RFB_MUST_CHECK;

/* Total bytes of the record m describes (header + payload). */
static inline size_t rfb_record_size(const struct rfb_record_meta *m)
{
	return RFB_RECORD_HEADER_SIZE + (size_t)m->stored_len;
}

/*
 * Check the payload of the record at rec (len bytes, header included)
 * against its checksum.  Returns 0, RFB_ETRUNC or RFB_ECHECKSUM.
 */
int rfb_record_verify(const unsigned char *rec, size_t len,
		      const struct rfb_record_meta *m,
		      rfb_err *err) RFB_MUST_CHECK;

/*
 * Verify and decode the record at rec (len bytes) into img, backed by
 * buf.  A raw record is not copied: img is then a view of rec's payload,
 * valid as long as rec is, and must not be written to.  Returns 0 or a
 * negative RFB_E* code with err filled; a record whose payload does not
 * decode to exactly raw_len bytes is RFB_EFORMAT.
 */
int rfb_record_decode(rfb_codec_ctx *x, const unsigned char *rec, size_t len,
		      struct rfb_record_meta *m, rfb_image *img,
		      rfb_imgbuf *buf, rfb_err *err) RFB_MUST_CHECK;

/*
 * Decode like rfb_record_decode a record whose header was parsed into *m
 * and whose length and payload checksum were checked already (by
 * rfb_record_parse_header and rfb_record_verify: rfb_batch_reader_wait
 * does both for every record it returns), without a second pass over
 * its bytes.  Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_record_decode_checked(rfb_codec_ctx *x, const unsigned char *rec,
			      const struct rfb_record_meta *m, rfb_image *img,
			      rfb_imgbuf *buf, rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
