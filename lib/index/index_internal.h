/*
 * index_internal.h - what the writing (index_build.c) and the reading
 * (index_read.c) of refurb-index(5) share: the records of the format,
 * each with one encoder and one decoder (index_format.c).
 */
#ifndef REFURB_INDEX_INTERNAL_H
#define REFURB_INDEX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"

#define INDEX_VERSION 2           /* the version written; 1 is still read */
#define INDEX_HEADER_SIZE 80      /* version 2 */
#define INDEX_HEADER_SIZE_V1 64
#define INDEX_RECORD_SIZE 48
#define INDEX_RECORD_SIZE_V1 40
#define INDEX_RECORD_CONTENT 24   /* label .. bytes: what a sample is */
#define INDEX_CLASS_HEAD 4        /* a class entry before its name */
#define INDEX_SHARD_HEAD 20       /* a shard entry before its path */

/* The header's fields (refurb-index(5), Header). */
struct index_header {
	unsigned version;         /* decoded: 1 or 2; encoded: always 2 */
	uint64_t count;           /* N, samples */
	uint32_t class_count, record_size, root_len, shard_count;
	uint64_t classes_len, paths_len, shards_len; /* section bytes */
	uint64_t identity;
	uint32_t body_crc;        /* of every byte after the header */
};

/* Header bytes of a version (80 for 2, 64 for 1), record bytes (48, 40). */
size_t rfbi_index_header_size(unsigned version);
size_t rfbi_index_record_size(unsigned version);

/* Version 2 header of h (h->version and h->record_size are not read);
 * the header CRC is computed. */
void rfbi_index_header_encode(const struct index_header *h,
			      unsigned char out[INDEX_HEADER_SIZE]);
/* The header at in (len bytes of file): 0, or RFB_ETRUNC, RFB_EFORMAT,
 * RFB_EVERSION or RFB_ECHECKSUM with err filled (name for messages) for
 * a bad magic, version, length, header CRC or record size. */
int rfbi_index_header_decode(const unsigned char *in, size_t len,
			     struct index_header *h, const char *name,
			     rfb_err *err) RFB_MUST_CHECK;

/* A sample's record (refurb-index(5), Record section). */
struct index_record {
	uint32_t label, width, height;
	uint8_t channels, colorspace, subsampling;
	uint64_t bytes;           /* of the image */
	uint64_t path_offset;     /* in the path section */
	uint32_t path_len;
	uint32_t shard;           /* RFB_INDEX_NO_SHARD or 1..S */
	uint64_t offset;          /* in the shard */
};

void rfbi_index_record_encode(const struct index_record *r,
			      unsigned char out[INDEX_RECORD_SIZE]);
/* A record of a version's layout; version 1 has no shard (NO_SHARD, 0). */
void rfbi_index_record_decode(const unsigned char *in, unsigned version,
			      struct index_record *r);

/* A class entry of name (len bytes, no NUL inside) into out, which has
 * INDEX_CLASS_HEAD + len + 1 bytes; returns that size. */
size_t rfbi_index_class_encode(const char *name, uint32_t len,
			       unsigned char *out);
/* The class entry at in (avail bytes left in the section): its size and
 * *name (pointing into in, NUL-terminated), or 0 when it is corrupt. */
size_t rfbi_index_class_decode(const unsigned char *in, size_t avail,
			       const char **name);

/* A shard entry (refurb-index(5), Shard section). */
struct index_shard_entry {
	uint64_t size;
	int64_t mtime_ns;
	uint32_t path_len;
	const char *path;         /* path_len bytes, no NUL inside */
};

/* Into out of INDEX_SHARD_HEAD + path_len + 1 bytes; returns that size. */
size_t rfbi_index_shard_encode(const struct index_shard_entry *s,
			       unsigned char *out);
/* The entry at in (avail bytes left): its size, or 0 when corrupt (path
 * empty, too long, overrunning or not NUL-terminated). */
size_t rfbi_index_shard_decode(const unsigned char *in, size_t avail,
			       struct index_shard_entry *s);
/* A spill's frame (index_spill.c's temporary files, private to one run):
 * each record is preceded by its length, u32 little-endian. */
#define RFBI_SPILL_FRAME 4
void rfbi_spill_frame_encode(unsigned char *out, uint32_t len);
uint32_t rfbi_spill_frame_decode(const unsigned char *in);

/*
 * The identity of a version 2 index: a hash of the class section and of
 * the first INDEX_RECORD_CONTENT bytes of each of the n records (what the
 * samples are, not where they are stored), seeded with n.
 */
uint64_t rfbi_index_identity_v2(const unsigned char *classes, size_t classes_len,
				const unsigned char *records, uint32_t n);
/* The identity's chain h continued over n more version 2 records (for a
 * writer that has them in pieces). */
uint64_t rfbi_index_identity_records(uint64_t h, const unsigned char *records,
				     size_t n);

#endif
