/*
 * index_format.c - the records of refurb-index(5), each as one encoder
 * and one decoder: the header, a sample's record, a class entry and a
 * shard entry.  The writer (index_build.c) and the reader (index_read.c)
 * know the byte layout only through these; the tables below are the man
 * page's.  Decoders check what a record says about itself (magic,
 * version, checksum, its own length); what it says about the rest of the
 * file (section sizes, labels, ranges) index_read.c checks.
 */
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/format.h"
#include "refurb/index.h"
#include "index_internal.h"

/* ---- header ---------------------------------------------------------- */

/*
 * Header, version 2 (80 bytes):
 *
 *   Offset Size Type  Meaning
 *   0      8    bytes magic "RFBINDX" + version byte 0x02
 *   8      8    u64   N, number of samples
 *   16     4    u32   C, number of classes
 *   20     4    u32   record size, 48
 *   24     4    u32   R, bytes of the root section
 *   28     4    u32   S, number of shards
 *   32     8    u64   bytes of the class section
 *   40     8    u64   bytes of the path section
 *   48     8    u64   bytes of the shard section
 *   56     8    u64   identity
 *   64     4    u32   CRC-32C of all bytes after the header
 *   68     8    -     reserved, 0
 *   76     4    u32   CRC-32C of header bytes 0 to 75
 *
 * Version 1 (64 bytes, read only): as version 2 up to 47 but offset 28
 * reserved, identity at 48, body CRC at 56, header CRC of 0-59 at 60.
 */
enum {
	HDR_COUNT = 8, HDR_CLASSES = 16, HDR_RECORD_SIZE = 20, HDR_ROOT = 24,
	HDR_SHARDS = 28, HDR_CLASS_BYTES = 32, HDR_PATH_BYTES = 40,
	HDR_SHARD_BYTES = 48, HDR_IDENTITY = 56, HDR_BODY_CRC = 64,
	HDR_CRC = 76,
	HDR1_IDENTITY = 48, HDR1_BODY_CRC = 56, HDR1_CRC = 60,
};

size_t rfbi_index_header_size(unsigned version)
{
	return version == 1 ? INDEX_HEADER_SIZE_V1 : INDEX_HEADER_SIZE;
}

size_t rfbi_index_record_size(unsigned version)
{
	return version == 1 ? INDEX_RECORD_SIZE_V1 : INDEX_RECORD_SIZE;
}

void rfbi_index_header_encode(const struct index_header *h,
			      unsigned char out[INDEX_HEADER_SIZE])
{
	memset(out, 0, INDEX_HEADER_SIZE);
	memcpy(out, RFB_INDEX_MAGIC "\x02", 8);
	rfb_put_le64(out + HDR_COUNT, h->count);
	rfb_put_le32(out + HDR_CLASSES, h->class_count);
	rfb_put_le32(out + HDR_RECORD_SIZE, INDEX_RECORD_SIZE);
	rfb_put_le32(out + HDR_ROOT, h->root_len);
	rfb_put_le32(out + HDR_SHARDS, h->shard_count);
	rfb_put_le64(out + HDR_CLASS_BYTES, h->classes_len);
	rfb_put_le64(out + HDR_PATH_BYTES, h->paths_len);
	rfb_put_le64(out + HDR_SHARD_BYTES, h->shards_len);
	rfb_put_le64(out + HDR_IDENTITY, h->identity);
	rfb_put_le32(out + HDR_BODY_CRC, h->body_crc);
	rfb_put_le32(out + HDR_CRC, rfb_crc32c(0, out, HDR_CRC));
}

/* The fields after the magic, once the version is known. */
static void header_fields(const unsigned char *in, struct index_header *h)
{
	int v1 = h->version == 1;

	h->count = rfb_get_le64(in + HDR_COUNT);
	h->class_count = rfb_get_le32(in + HDR_CLASSES);
	h->record_size = rfb_get_le32(in + HDR_RECORD_SIZE);
	h->root_len = rfb_get_le32(in + HDR_ROOT);
	h->shard_count = v1 ? 0 : rfb_get_le32(in + HDR_SHARDS);
	h->classes_len = rfb_get_le64(in + HDR_CLASS_BYTES);
	h->paths_len = rfb_get_le64(in + HDR_PATH_BYTES);
	h->shards_len = v1 ? 0 : rfb_get_le64(in + HDR_SHARD_BYTES);
	h->identity = rfb_get_le64(in + (v1 ? HDR1_IDENTITY : HDR_IDENTITY));
	h->body_crc = rfb_get_le32(in + (v1 ? HDR1_BODY_CRC : HDR_BODY_CRC));
}

int rfbi_index_header_decode(const unsigned char *in, size_t len,
			     struct index_header *h, const char *name,
			     rfb_err *err)
{
	size_t size, crc_at;

	if (len < 8 || memcmp(in, RFB_INDEX_MAGIC, 7) != 0)
		return rfb_err_set(err, len == 0 ? RFB_ETRUNC : RFB_EFORMAT,
				   name, len == 0 ? "empty file, not a refurb index"
				   : "bad magic (not a refurb index)");
	if (in[7] != 1 && in[7] != INDEX_VERSION)
		return rfb_err_set(err, RFB_EVERSION, name,
				   "index format version %u, this refurb reads "
				   "versions 1 and %u", in[7], INDEX_VERSION);
	h->version = in[7];
	size = rfbi_index_header_size(h->version);
	crc_at = h->version == 1 ? HDR1_CRC : HDR_CRC;
	if (len < size)
		return rfb_err_set(err, RFB_ETRUNC, name,
				   "truncated index (%zu bytes, header needs %zu)",
				   len, size);
	if (rfb_crc32c(0, in, crc_at) != rfb_get_le32(in + crc_at))
		return rfb_err_set(err, RFB_ECHECKSUM, name,
				   "index header checksum mismatch");
	header_fields(in, h);
	if (h->record_size != rfbi_index_record_size(h->version))
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "record size %u, expected %zu", h->record_size,
				   rfbi_index_record_size(h->version));
	return 0;
}

/* ---- a sample's record ----------------------------------------------- */

/*
 * Record, version 2 (48 bytes; version 1: 40, bytes 36-39 reserved):
 *
 *   Offset Size Type Meaning
 *   0      4    u32  label (< C)
 *   4      4    u32  width in pixels
 *   8      4    u32  height in pixels
 *   12     1    u8   components (JPEG) or channels as decoded (PNG)
 *   13     1    u8   colour space (TurboJPEG TJCS_*)
 *   14     1    u8   chroma subsampling (TJSAMP_*, 255 unknown)
 *   15     1    u8   reserved, 0
 *   16     8    u64  bytes of the image
 *   24     8    u64  offset of the path in the path section
 *   32     4    u32  P, path length in bytes
 *   36     4    u32  shard: 0 none, else 1 + its position (1 to S)
 *   40     8    u64  byte offset of the member's data in the shard
 *
 * Bytes 0 to 23 (INDEX_RECORD_CONTENT) are what the identity covers.
 */
enum {
	REC_LABEL = 0, REC_WIDTH = 4, REC_HEIGHT = 8, REC_CHANNELS = 12,
	REC_COLORSPACE = 13, REC_SUBSAMPLING = 14, REC_BYTES = 16,
	REC_PATH_OFFSET = 24, REC_PATH_LEN = 32, REC_SHARD = 36,
	REC_OFFSET = 40,
};

void rfbi_index_record_encode(const struct index_record *r,
			      unsigned char out[INDEX_RECORD_SIZE])
{
	memset(out, 0, INDEX_RECORD_SIZE);
	rfb_put_le32(out + REC_LABEL, r->label);
	rfb_put_le32(out + REC_WIDTH, r->width);
	rfb_put_le32(out + REC_HEIGHT, r->height);
	out[REC_CHANNELS] = r->channels;
	out[REC_COLORSPACE] = r->colorspace;
	out[REC_SUBSAMPLING] = r->subsampling;
	rfb_put_le64(out + REC_BYTES, r->bytes);
	rfb_put_le64(out + REC_PATH_OFFSET, r->path_offset);
	rfb_put_le32(out + REC_PATH_LEN, r->path_len);
	rfb_put_le32(out + REC_SHARD, r->shard);
	rfb_put_le64(out + REC_OFFSET, r->offset);
}

void rfbi_index_record_decode(const unsigned char *in, unsigned version,
			      struct index_record *r)
{
	r->label = rfb_get_le32(in + REC_LABEL);
	r->width = rfb_get_le32(in + REC_WIDTH);
	r->height = rfb_get_le32(in + REC_HEIGHT);
	r->channels = in[REC_CHANNELS];
	r->colorspace = in[REC_COLORSPACE];
	r->subsampling = in[REC_SUBSAMPLING];
	r->bytes = rfb_get_le64(in + REC_BYTES);
	r->path_offset = rfb_get_le64(in + REC_PATH_OFFSET);
	r->path_len = rfb_get_le32(in + REC_PATH_LEN);
	r->shard = version >= 2 ? rfb_get_le32(in + REC_SHARD)
				: RFB_INDEX_NO_SHARD;
	r->offset = version >= 2 ? rfb_get_le64(in + REC_OFFSET) : 0;
}

/* ---- class entry ----------------------------------------------------- */

/*
 * Class entry (the class section is C of them, back to back):
 *
 *   Size Type  Meaning
 *   4    u32   L, length of the name in bytes (at most 1024)
 *   L    bytes class name, no NUL inside
 *   1    u8    0 (terminator)
 */
size_t rfbi_index_class_encode(const char *name, uint32_t len,
			       unsigned char *out)
{
	rfb_put_le32(out, len);
	memcpy(out + INDEX_CLASS_HEAD, name, len);
	out[INDEX_CLASS_HEAD + len] = 0;
	return INDEX_CLASS_HEAD + (size_t)len + 1;
}

size_t rfbi_index_class_decode(const unsigned char *in, size_t avail,
			       const char **name)
{
	uint32_t n;

	if (avail < INDEX_CLASS_HEAD)
		return 0;
	n = rfb_get_le32(in);
	if (n > RFB_INDEX_MAX_CLASS_NAME ||
	    avail - INDEX_CLASS_HEAD < (size_t)n + 1 ||
	    in[INDEX_CLASS_HEAD + n] != 0 || memchr(in + INDEX_CLASS_HEAD, 0, n))
		return 0;
	*name = (const char *)in + INDEX_CLASS_HEAD;
	return INDEX_CLASS_HEAD + (size_t)n + 1;
}

/* ---- shard entry ----------------------------------------------------- */

/*
 * Shard entry (the shard section is S of them, shard 1 first):
 *
 *   Size Type  Meaning
 *   8    u64   size of the shard in bytes when it was indexed
 *   8    i64   its modification time then, ns since 1970 (UTC)
 *   4    u32   L, length of the path in bytes (1 to 4096)
 *   L    bytes path: absolute, or relative to the root
 *   1    u8    0 (terminator)
 */
enum { SHARD_SIZE = 0, SHARD_MTIME = 8, SHARD_PATH_LEN = 16 };

size_t rfbi_index_shard_encode(const struct index_shard_entry *s,
			       unsigned char *out)
{
	rfb_put_le64(out + SHARD_SIZE, s->size);
	rfb_put_le64(out + SHARD_MTIME, (uint64_t)s->mtime_ns);
	rfb_put_le32(out + SHARD_PATH_LEN, s->path_len);
	memcpy(out + INDEX_SHARD_HEAD, s->path, s->path_len);
	out[INDEX_SHARD_HEAD + s->path_len] = 0;
	return INDEX_SHARD_HEAD + (size_t)s->path_len + 1;
}

size_t rfbi_index_shard_decode(const unsigned char *in, size_t avail,
			       struct index_shard_entry *s)
{
	uint32_t n;

	if (avail < INDEX_SHARD_HEAD)
		return 0;
	n = rfb_get_le32(in + SHARD_PATH_LEN);
	if (n == 0 || n > RFB_INDEX_MAX_PATH ||
	    avail - INDEX_SHARD_HEAD < (size_t)n + 1 ||
	    in[INDEX_SHARD_HEAD + n] != 0 || memchr(in + INDEX_SHARD_HEAD, 0, n))
		return 0;
	s->size = rfb_get_le64(in + SHARD_SIZE);
	s->mtime_ns = (int64_t)rfb_get_le64(in + SHARD_MTIME);
	s->path_len = n;
	s->path = (const char *)in + INDEX_SHARD_HEAD;
	return INDEX_SHARD_HEAD + (size_t)n + 1;
}

/* ---- identity -------------------------------------------------------- */

uint64_t rfbi_index_identity_records(uint64_t h, const unsigned char *records,
				     size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = rfb_hash64(records + i * INDEX_RECORD_SIZE,
			       INDEX_RECORD_CONTENT, h);
	return h;
}

uint64_t rfbi_index_identity_v2(const unsigned char *classes, size_t classes_len,
				const unsigned char *records, uint32_t n)
{
	return rfbi_index_identity_records(rfb_hash64(classes, classes_len, n),
					   records, n);
}

/* A spill's frame: offset 0, u32 le, the length of the record after it. */
void rfbi_spill_frame_encode(unsigned char *out, uint32_t len)
{
	rfb_put_le32(out, len);
}

uint32_t rfbi_spill_frame_decode(const unsigned char *in)
{
	return rfb_get_le32(in);
}
