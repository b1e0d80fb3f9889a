/*
 * cache_format_internal.h - the records of refurb-cache(5), each with one
 * encoder and one decoder (cache_format.c), for the cache group's files.
 */
#ifndef REFURB_CACHE_FORMAT_INTERNAL_H
#define REFURB_CACHE_FORMAT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/cache.h"
#include "refurb/record.h"

#define MANIFEST_MAGIC "RFBCMAN\x01"
#define MANIFEST_FIXED 64        /* the manifest before its pipeline text */
#define SEGMENT_MAGIC "RFBSEG\0\x01"
#define POSITION_BYTES 64

/* the checkpoint file: magic, sizes of its parts */
#define CKPT_MAGIC "RFBCREC\x01"
#define CKPT_HEADER 64
#define CKPT_SEG 40
#define CKPT_ENTRY 24

/* The manifest of m into b (MANIFEST_FIXED + RFB_CACHE_MAX_SPEC + 4
 * bytes): its length.  Decoded by rfb_cache_parse_manifest (cache.h). */
size_t rfbi_cache_manifest_encode(const struct rfb_cache_manifest *m,
				  unsigned char *b);

/* A segment's header (RFB_CACHE_SEGMENT_HEADER bytes); the parser
 * returns 0 or RFB_EFORMAT (bad magic or checksum). */
void rfbi_cache_put_segment_header(unsigned char *h, uint32_t id, uint32_t death);
int rfbi_cache_parse_segment_header(const unsigned char *h, uint32_t *id,
				    uint32_t *death);

/* A record's header, checksum included; decoded by
 * rfb_record_parse_header (record.h). */
void rfbi_record_header_encode(const struct rfb_record_meta *m,
			       unsigned char h[RFB_RECORD_HEADER_SIZE]);

/* The checkpoint's header fields. */
struct ckpt_header {
	uint64_t manifest_hash;
	uint32_t samples, entries, segments, next_id, epoch;
	uint64_t step, appended, written;
};
/* A segment row and an entry row of the checkpoint. */
struct ckpt_seg {
	uint32_t id, death, dead;
	uint64_t durable;         /* bytes covered */
	uint64_t dead_since;      /* global step it died at */
};
struct ckpt_entry {
	uint32_t sample, seg;
	uint64_t offset;
	uint32_t length, write_epoch;
};

void rfbi_cache_ckpt_header_encode(const struct ckpt_header *k,
				   unsigned char out[CKPT_HEADER]);
/* 0, or RFB_EFORMAT for a bad magic or header checksum. */
int rfbi_cache_ckpt_header_decode(const unsigned char in[CKPT_HEADER],
				  struct ckpt_header *k);
void rfbi_cache_ckpt_seg_encode(const struct ckpt_seg *s,
				unsigned char out[CKPT_SEG]);
void rfbi_cache_ckpt_seg_decode(const unsigned char in[CKPT_SEG],
				struct ckpt_seg *s);
void rfbi_cache_ckpt_entry_encode(const struct ckpt_entry *e,
				  unsigned char out[CKPT_ENTRY]);
void rfbi_cache_ckpt_entry_decode(const unsigned char in[CKPT_ENTRY],
				  struct ckpt_entry *e);
/* The CRC-32C of the len bytes of rows, stored in the 4 bytes after
 * them; the check returns 0 or RFB_ECHECKSUM. */
void rfbi_cache_ckpt_crc_encode(unsigned char *rows, size_t len);
int rfbi_cache_ckpt_crc_check(const unsigned char *rows, size_t len);
/* The stored CRC-32C alone, for rows checksummed a chunk at a time. */
void rfbi_cache_ckpt_crc_put(unsigned char out[4], uint32_t crc);
uint32_t rfbi_cache_ckpt_crc_get(const unsigned char in[4]);

/* The read position p (p->updates and p->pid included), checksummed. */
void rfbi_cache_position_encode(const struct rfb_cache_position *p,
				unsigned char out[POSITION_BYTES]);
/* 0, or RFB_EFORMAT for a bad magic or checksum (a torn write). */
int rfbi_cache_position_decode(const unsigned char in[POSITION_BYTES],
			       struct rfb_cache_position *p);
/* Whether in starts with the position's magic. */
int rfbi_cache_position_is(const unsigned char in[POSITION_BYTES]);

#endif
