/*
 * cache_format.c - the records of refurb-cache(5), each as one encoder
 * and one decoder: the manifest, a segment's header, a cache record's
 * header, the checkpoint (its header, segment rows and entry rows) and the
 * read position.  The writer, the reader, recovery and the summaries know
 * the byte layout only through these; the tables below are the man
 * page's.  Decoders check what a record says about itself (magic,
 * version, checksums, its own lengths), their callers the rest.
 */
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/record.h"
#include "cache_format_internal.h"

/* ---- manifest -------------------------------------------------------- */

/*
 * manifest:
 *
 *   Offset Size Type  Meaning
 *   0      8    bytes magic "RFBCMAN" + version byte 0x01
 *   8      8    u64   identity of the index
 *   16     8    u64   identity of the eviction schedule
 *   24     8    u64   augmentation seed
 *   32     4    u32   samples in the index
 *   36     1    u8    codec: 0 raw, 1 zstd, 2 jpeg
 *   37     1    u8    zstd level or JPEG quality (0 for raw)
 *   38     2    u16   reserved, 0
 *   40     4    u32   L, length of the pipeline text (< 4096)
 *   44     4    u32   reserved, 0
 *   48     8    u64   segment size limit in bytes
 *   56     4    u32   reserved, 0
 *   60     4    u32   CRC-32C of bytes 0 to 59
 *   64     L    bytes the canonical partial pipeline spec
 *   64+L   4    u32   CRC-32C of the pipeline text
 */
enum {
	MAN_INDEX = 8, MAN_SCHEDULE = 16, MAN_SEED = 24, MAN_SAMPLES = 32,
	MAN_CODEC = 36, MAN_LEVEL = 37, MAN_TEXT_LEN = 40, MAN_SEGMENT_MAX = 48,
	MAN_CRC = 60,
};

size_t rfbi_cache_manifest_encode(const struct rfb_cache_manifest *m,
				  unsigned char *b)
{
	size_t len = strnlen(m->pipeline, RFB_CACHE_MAX_SPEC - 1);

	memset(b, 0, MANIFEST_FIXED);
	memcpy(b, MANIFEST_MAGIC, 8);
	rfb_put_le64(b + MAN_INDEX, m->index_identity);
	rfb_put_le64(b + MAN_SCHEDULE, m->schedule_identity);
	rfb_put_le64(b + MAN_SEED, m->seed);
	rfb_put_le32(b + MAN_SAMPLES, m->samples);
	b[MAN_CODEC] = (unsigned char)m->codec.kind;
	b[MAN_LEVEL] = (unsigned char)m->codec.level;
	rfb_put_le32(b + MAN_TEXT_LEN, (uint32_t)len);
	rfb_put_le64(b + MAN_SEGMENT_MAX, m->segment_max);
	rfb_put_le32(b + MAN_CRC, rfb_crc32c(0, b, MAN_CRC));
	memcpy(b + MANIFEST_FIXED, m->pipeline, len);
	rfb_put_le32(b + MANIFEST_FIXED + len, rfb_crc32c(0, m->pipeline, len));
	return MANIFEST_FIXED + len + 4;
}

int rfb_cache_parse_manifest(const void *data, size_t len, const char *name,
			     struct rfb_cache_manifest *m, rfb_err *err)
{
	const unsigned char *b = data;
	size_t plen = 0;

	memset(m, 0, sizeof *m);
	if (len < 8 || memcmp(b, MANIFEST_MAGIC, 7) != 0)
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "bad magic (not a refurb cache manifest)");
	if (b[7] != MANIFEST_MAGIC[7])
		return rfb_err_set(err, RFB_EVERSION, name,
				   "cache format version %u, this refurb reads 1",
				   b[7]);
	if (len < MANIFEST_FIXED + 4 ||
	    rfb_crc32c(0, b, MAN_CRC) != rfb_get_le32(b + MAN_CRC) ||
	    (plen = rfb_get_le32(b + MAN_TEXT_LEN)) >= RFB_CACHE_MAX_SPEC ||
	    len != MANIFEST_FIXED + plen + 4 ||
	    rfb_crc32c(0, b + MANIFEST_FIXED, plen) !=
		    rfb_get_le32(b + MANIFEST_FIXED + plen))
		return rfb_err_set(err, RFB_ECHECKSUM, name,
				   "manifest is truncated or corrupt");
	m->index_identity = rfb_get_le64(b + MAN_INDEX);
	m->schedule_identity = rfb_get_le64(b + MAN_SCHEDULE);
	m->seed = rfb_get_le64(b + MAN_SEED);
	m->samples = rfb_get_le32(b + MAN_SAMPLES);
	m->codec.kind = b[MAN_CODEC];
	m->codec.level = b[MAN_LEVEL];
	m->segment_max = rfb_get_le64(b + MAN_SEGMENT_MAX);
	memcpy(m->pipeline, b + MANIFEST_FIXED, plen);
	m->pipeline[plen] = '\0';
	return 0;
}

/* ---- segment header -------------------------------------------------- */

/*
 * Segment file header (64 bytes; records follow back to back):
 *
 *   Offset Size Type  Meaning
 *   0      8    bytes magic "RFBSEG", a NUL, version byte 0x01
 *   8      4    u32   segment id (the one in the file name)
 *   12     4    u32   death epoch of every record in it
 *   16     44   bytes reserved, 0
 *   60     4    u32   CRC-32C of bytes 0 to 59
 */
enum { SEG_ID = 8, SEG_DEATH = 12, SEG_CRC = 60 };

void rfbi_cache_put_segment_header(unsigned char *h, uint32_t id, uint32_t death)
{
	memset(h, 0, RFB_CACHE_SEGMENT_HEADER);
	memcpy(h, SEGMENT_MAGIC, 8);
	rfb_put_le32(h + SEG_ID, id);
	rfb_put_le32(h + SEG_DEATH, death);
	rfb_put_le32(h + SEG_CRC, rfb_crc32c(0, h, SEG_CRC));
}

int rfbi_cache_parse_segment_header(const unsigned char *h, uint32_t *id,
				    uint32_t *death)
{
	if (memcmp(h, SEGMENT_MAGIC, 8) != 0 ||
	    rfb_crc32c(0, h, SEG_CRC) != rfb_get_le32(h + SEG_CRC))
		return RFB_EFORMAT;
	*id = rfb_get_le32(h + SEG_ID);
	*death = rfb_get_le32(h + SEG_DEATH);
	return 0;
}

/* ---- record header --------------------------------------------------- */

/*
 * Record (40-byte header, then the payload):
 *
 *   Offset Size Type  Meaning
 *   0      4    bytes magic "RFR" + record version byte 0x01
 *   4      4    u32   sample id
 *   8      4    u32   write epoch
 *   12     4    u32   death epoch (0xFFFFFFFF: never)
 *   16     4    u32   S, stored (payload) length (at most 2^29)
 *   20     4    u32   raw length = width x height x channels (<= 2^28)
 *   24     2    u16   width
 *   26     2    u16   height
 *   28     1    u8    channels, 1 or 3
 *   29     1    u8    codec: 0 raw, 1 zstd, 2 jpeg
 *   30     2    u16   reserved, 0
 *   32     4    u32   CRC-32C of the payload
 *   36     4    u32   CRC-32C of bytes 0 to 35
 *   40     S    bytes payload
 */
#define RECORD_MAGIC "RFR"
#define RECORD_VERSION 1
enum {
	REC_SAMPLE = 4, REC_WRITE_EPOCH = 8, REC_DEATH = 12, REC_STORED = 16,
	REC_RAW = 20, REC_WIDTH = 24, REC_HEIGHT = 26, REC_CHANNELS = 28,
	REC_CODEC = 29, REC_PAYLOAD_CRC = 32, REC_CRC = 36,
};

void rfbi_record_header_encode(const struct rfb_record_meta *m,
			       unsigned char h[RFB_RECORD_HEADER_SIZE])
{
	memcpy(h, RECORD_MAGIC, 3);
	h[3] = RECORD_VERSION;
	rfb_put_le32(h + REC_SAMPLE, m->sample);
	rfb_put_le32(h + REC_WRITE_EPOCH, m->write_epoch);
	rfb_put_le32(h + REC_DEATH, m->death_epoch);
	rfb_put_le32(h + REC_STORED, m->stored_len);
	rfb_put_le32(h + REC_RAW, m->raw_len);
	rfb_put_le16(h + REC_WIDTH, m->width);
	rfb_put_le16(h + REC_HEIGHT, m->height);
	h[REC_CHANNELS] = m->channels;
	h[REC_CODEC] = m->codec;
	rfb_put_le16(h + REC_CODEC + 1, 0);
	rfb_put_le32(h + REC_PAYLOAD_CRC, m->payload_crc);
	rfb_put_le32(h + REC_CRC, rfb_crc32c(0, h, REC_CRC));
}

/* The fields once magic, version and checksum are known good. */
static void record_fields(const unsigned char *h, struct rfb_record_meta *m)
{
	m->sample = rfb_get_le32(h + REC_SAMPLE);
	m->write_epoch = rfb_get_le32(h + REC_WRITE_EPOCH);
	m->death_epoch = rfb_get_le32(h + REC_DEATH);
	m->stored_len = rfb_get_le32(h + REC_STORED);
	m->raw_len = rfb_get_le32(h + REC_RAW);
	m->width = rfb_get_le16(h + REC_WIDTH);
	m->height = rfb_get_le16(h + REC_HEIGHT);
	m->channels = h[REC_CHANNELS];
	m->codec = h[REC_CODEC];
	m->payload_crc = rfb_get_le32(h + REC_PAYLOAD_CRC);
}

int rfb_record_parse_header(const unsigned char *h, size_t len,
			    struct rfb_record_meta *m, rfb_err *err)
{
	if (len < RFB_RECORD_HEADER_SIZE)
		return rfb_err_set(err, RFB_ETRUNC, NULL, "record header cut short");
	if (memcmp(h, RECORD_MAGIC, 3) != 0)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "bad record magic (not a refurb cache record)");
	if (h[3] != RECORD_VERSION)
		return rfb_err_set(err, RFB_EVERSION, NULL,
				   "record version %u, this refurb reads %u", h[3],
				   RECORD_VERSION);
	if (rfb_crc32c(0, h, REC_CRC) != rfb_get_le32(h + REC_CRC))
		return rfb_err_set(err, RFB_ECHECKSUM, NULL,
				   "record header checksum mismatch");
	record_fields(h, m);
	if (m->codec > RFB_CODEC_JPEG || (m->channels != 1 && m->channels != 3) ||
	    !m->width || !m->height ||
	    (uint64_t)m->width * m->height * m->channels != m->raw_len)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "record header is inconsistent");
	if (m->raw_len > RFB_RECORD_MAX_RAW || m->stored_len > RFB_RECORD_MAX_STORED ||
	    (m->codec == RFB_CODEC_RAW && m->stored_len != m->raw_len))
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "record lengths out of range");
	return 0;
}

/* ---- the checkpoint -------------------------------------------------- */

/*
 * records (the checkpoint): a 64-byte header, G segment rows of 40 bytes,
 * E entry rows of 24 bytes, then the u32 CRC-32C of the rows.
 *
 *   Offset Size Type  Meaning
 *   0      8    bytes magic "RFBCREC" + version byte 0x01
 *   8      8    u64   hash64 of the manifest's bytes
 *   16     4    u32   samples in the index
 *   20     4    u32   E, number of entries
 *   24     4    u32   G, number of segments
 *   28     4    u32   next segment id
 *   32     8    u64   global step of the plan when written
 *   40     4    u32   epoch when written
 *   44     8    u64   bytes of records appended over the cache's life
 *   52     8    u64   bytes written to segments over the cache's life
 *   60     4    u32   CRC-32C of bytes 0 to 59
 */
enum {
	CK_MANIFEST = 8, CK_SAMPLES = 16, CK_ENTRIES = 20, CK_SEGMENTS = 24,
	CK_NEXT_ID = 28, CK_STEP = 32, CK_EPOCH = 40, CK_APPENDED = 44,
	CK_WRITTEN = 52, CK_CRC = 60,
};

void rfbi_cache_ckpt_header_encode(const struct ckpt_header *k,
				   unsigned char out[CKPT_HEADER])
{
	memset(out, 0, CKPT_HEADER);
	memcpy(out, CKPT_MAGIC, 8);
	rfb_put_le64(out + CK_MANIFEST, k->manifest_hash);
	rfb_put_le32(out + CK_SAMPLES, k->samples);
	rfb_put_le32(out + CK_ENTRIES, k->entries);
	rfb_put_le32(out + CK_SEGMENTS, k->segments);
	rfb_put_le32(out + CK_NEXT_ID, k->next_id);
	rfb_put_le64(out + CK_STEP, k->step);
	rfb_put_le32(out + CK_EPOCH, k->epoch);
	rfb_put_le64(out + CK_APPENDED, k->appended);
	rfb_put_le64(out + CK_WRITTEN, k->written);
	rfb_put_le32(out + CK_CRC, rfb_crc32c(0, out, CK_CRC));
}

int rfbi_cache_ckpt_header_decode(const unsigned char in[CKPT_HEADER],
				  struct ckpt_header *k)
{
	if (memcmp(in, CKPT_MAGIC, 8) != 0 ||
	    rfb_crc32c(0, in, CK_CRC) != rfb_get_le32(in + CK_CRC))
		return RFB_EFORMAT;
	k->manifest_hash = rfb_get_le64(in + CK_MANIFEST);
	k->samples = rfb_get_le32(in + CK_SAMPLES);
	k->entries = rfb_get_le32(in + CK_ENTRIES);
	k->segments = rfb_get_le32(in + CK_SEGMENTS);
	k->next_id = rfb_get_le32(in + CK_NEXT_ID);
	k->step = rfb_get_le64(in + CK_STEP);
	k->epoch = rfb_get_le32(in + CK_EPOCH);
	k->appended = rfb_get_le64(in + CK_APPENDED);
	k->written = rfb_get_le64(in + CK_WRITTEN);
	return 0;
}

/*
 * Segment row (40 bytes):
 *
 *   Offset Size Type Meaning
 *   0      4    u32  segment id
 *   4      4    u32  death epoch
 *   8      4    u32  dead: 1 if its records died
 *   12     4    u32  reserved, 0
 *   16     8    u64  bytes of the file covered by this checkpoint
 *   24     8    u64  global step it died at
 *   32     8    u64  reserved, 0
 */
enum { CS_ID = 0, CS_DEATH = 4, CS_DEAD = 8, CS_DURABLE = 16, CS_DEAD_SINCE = 24 };

void rfbi_cache_ckpt_seg_encode(const struct ckpt_seg *s,
				unsigned char out[CKPT_SEG])
{
	memset(out, 0, CKPT_SEG);
	rfb_put_le32(out + CS_ID, s->id);
	rfb_put_le32(out + CS_DEATH, s->death);
	rfb_put_le32(out + CS_DEAD, s->dead);
	rfb_put_le64(out + CS_DURABLE, s->durable);
	rfb_put_le64(out + CS_DEAD_SINCE, s->dead_since);
}

void rfbi_cache_ckpt_seg_decode(const unsigned char in[CKPT_SEG],
				struct ckpt_seg *s)
{
	s->id = rfb_get_le32(in + CS_ID);
	s->death = rfb_get_le32(in + CS_DEATH);
	s->dead = rfb_get_le32(in + CS_DEAD);
	s->durable = rfb_get_le64(in + CS_DURABLE);
	s->dead_since = rfb_get_le64(in + CS_DEAD_SINCE);
}

/*
 * Entry row (24 bytes):
 *
 *   Offset Size Type Meaning
 *   0      4    u32  sample id
 *   4      4    u32  segment id
 *   8      8    u64  offset of the record in the segment
 *   16     4    u32  length of the record
 *   20     4    u32  write epoch
 */
enum { CE_SAMPLE = 0, CE_SEG = 4, CE_OFFSET = 8, CE_LENGTH = 16, CE_EPOCH = 20 };

void rfbi_cache_ckpt_entry_encode(const struct ckpt_entry *e,
				  unsigned char out[CKPT_ENTRY])
{
	rfb_put_le32(out + CE_SAMPLE, e->sample);
	rfb_put_le32(out + CE_SEG, e->seg);
	rfb_put_le64(out + CE_OFFSET, e->offset);
	rfb_put_le32(out + CE_LENGTH, e->length);
	rfb_put_le32(out + CE_EPOCH, e->write_epoch);
}

void rfbi_cache_ckpt_entry_decode(const unsigned char in[CKPT_ENTRY],
				  struct ckpt_entry *e)
{
	e->sample = rfb_get_le32(in + CE_SAMPLE);
	e->seg = rfb_get_le32(in + CE_SEG);
	e->offset = rfb_get_le64(in + CE_OFFSET);
	e->length = rfb_get_le32(in + CE_LENGTH);
	e->write_epoch = rfb_get_le32(in + CE_EPOCH);
}

/* The u32 after the rows: CRC-32C of the len bytes of rows before it. */
void rfbi_cache_ckpt_crc_put(unsigned char out[4], uint32_t crc)
{
	rfb_put_le32(out, crc);
}

uint32_t rfbi_cache_ckpt_crc_get(const unsigned char in[4])
{
	return rfb_get_le32(in);
}

void rfbi_cache_ckpt_crc_encode(unsigned char *rows, size_t len)
{
	rfbi_cache_ckpt_crc_put(rows + len, rfb_crc32c(0, rows, len));
}

int rfbi_cache_ckpt_crc_check(const unsigned char *rows, size_t len)
{
	return rfb_crc32c(0, rows, len) == rfbi_cache_ckpt_crc_get(rows + len)
	       ? 0 : RFB_ECHECKSUM;
}

/* ---- read position --------------------------------------------------- */

/*
 * read-position (64 bytes, rewritten in place with one pwrite):
 *
 *   Offset Size Type  Meaning
 *   0      8    bytes magic "RFBRPOS" + version byte 0x01
 *   8      8    u64   global step of the last batch whose records the
 *                     reader holds
 *   16     4    u32   epoch of the last batch written to the stream
 *   20     4    u32   step of that batch
 *   24     8    u64   its global step
 *   32     8    u64   updates so far
 *   40     4    u32   the reader's process id
 *   44     4    u32   flags: 1 a batch was written, 2 the stream ended
 *   48     4    u32   batches of an epoch (the plan's)
 *   52     8    -     reserved, 0
 *   60     4    u32   CRC-32C of bytes 0 to 59
 */
#define POSITION_MAGIC "RFBRPOS\x01"
enum {
	POS_READ = 8, POS_EPOCH = 16, POS_STEP = 20, POS_GLOBAL = 24,
	POS_UPDATES = 32, POS_PID = 40, POS_FLAGS = 44, POS_BATCHES = 48,
	POS_CRC = 60,
};
#define POS_WRITTEN 1u
#define POS_ENDED 2u

void rfbi_cache_position_encode(const struct rfb_cache_position *p,
				unsigned char out[POSITION_BYTES])
{
	memset(out, 0, POSITION_BYTES);
	memcpy(out, POSITION_MAGIC, 8);
	rfb_put_le64(out + POS_READ, p->read_global);
	rfb_put_le32(out + POS_EPOCH, p->written_epoch);
	rfb_put_le32(out + POS_STEP, p->written_step);
	rfb_put_le64(out + POS_GLOBAL, p->written_global);
	rfb_put_le64(out + POS_UPDATES, p->updates);
	rfb_put_le32(out + POS_PID, p->pid);
	rfb_put_le32(out + POS_FLAGS, (p->has_written ? POS_WRITTEN : 0) |
				      (p->ended ? POS_ENDED : 0));
	rfb_put_le32(out + POS_BATCHES, p->epoch_batches);
	rfb_put_le32(out + POS_CRC, rfb_crc32c(0, out, POS_CRC));
}

int rfbi_cache_position_decode(const unsigned char in[POSITION_BYTES],
			       struct rfb_cache_position *p)
{
	uint32_t flags;

	if (memcmp(in, POSITION_MAGIC, 8) != 0 ||
	    rfb_get_le32(in + POS_CRC) != rfb_crc32c(0, in, POS_CRC))
		return RFB_EFORMAT;
	flags = rfb_get_le32(in + POS_FLAGS);
	p->read_global = rfb_get_le64(in + POS_READ);
	p->written_epoch = rfb_get_le32(in + POS_EPOCH);
	p->written_step = rfb_get_le32(in + POS_STEP);
	p->written_global = rfb_get_le64(in + POS_GLOBAL);
	p->updates = rfb_get_le64(in + POS_UPDATES);
	p->pid = rfb_get_le32(in + POS_PID);
	p->has_written = (flags & POS_WRITTEN) != 0;
	p->ended = (flags & POS_ENDED) != 0;
	p->epoch_batches = rfb_get_le32(in + POS_BATCHES);
	return 0;
}

int rfbi_cache_position_is(const unsigned char in[POSITION_BYTES])
{
	return memcmp(in, POSITION_MAGIC, 8) == 0;
}
