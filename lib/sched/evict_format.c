/*
 * evict_format.c - the records of refurb-evict(5), each as one encoder
 * and one decoder: the header and the body (ids, then phases).  The
 * writer and the reader of evict.c know the byte layout only through
 * these; the tables below are the man page's.  The header decoder checks
 * what the header says about itself (magic, length, version, checksum,
 * size, flags, reserved); evict.c checks the parameters and the body.
 */
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/format.h"
#include "evict_internal.h"

/*
 * Header (64 bytes):
 *
 *   Offset Size Type  Meaning
 *   0      8    bytes magic "RFBSCHD" + version byte (2; 1 for one shard)
 *   8      4    u32   header size, 64
 *   12     4    u32   flags, 0
 *   16     8    u64   identity of the index
 *   24     4    u32   T, samples in the index
 *   28     4    u32   n, samples in the shard
 *   32     4    u32   r, reuse factor
 *   36     2    u16   policy: 1 balanced, 2 refcount
 *   38     2    u16   reserved, 0
 *   40     8    u64   seed
 *   48     4    u32   K, shard index
 *   52     4    u32   N, shard count
 *   56     4    u32   CRC-32C of the body
 *   60     4    u32   CRC-32C of header bytes 0 to 59
 */
enum {
	HDR_SIZE = 8, HDR_FLAGS = 12, HDR_INDEX = 16, HDR_TOTAL = 24,
	HDR_N = 28, HDR_REUSE = 32, HDR_POLICY = 36, HDR_RESERVED = 38,
	HDR_SEED = 40, HDR_SHARD = 48, HDR_SHARDS = 52, HDR_BODY_CRC = 56,
	HDR_CRC = 60,
};

void rfbi_evict_header_encode(const struct evict_header *h,
			      unsigned char out[RFB_EVICT_HEADER_SIZE])
{
	memset(out, 0, RFB_EVICT_HEADER_SIZE);
	memcpy(out, RFB_EVICT_MAGIC, 7);
	out[7] = (unsigned char)h->version;
	rfb_put_le32(out + HDR_SIZE, RFB_EVICT_HEADER_SIZE);
	rfb_put_le64(out + HDR_INDEX, h->p.index_identity);
	rfb_put_le32(out + HDR_TOTAL, h->p.total);
	rfb_put_le32(out + HDR_N, h->n);
	rfb_put_le32(out + HDR_REUSE, h->p.reuse);
	rfb_put_le16(out + HDR_POLICY, (uint16_t)h->p.policy);
	rfb_put_le64(out + HDR_SEED, h->p.seed);
	rfb_put_le32(out + HDR_SHARD, h->p.shard_index);
	rfb_put_le32(out + HDR_SHARDS, h->p.shard_count);
	rfb_put_le32(out + HDR_BODY_CRC, h->body_crc);
	rfb_put_le32(out + HDR_CRC, rfb_crc32c(0, out, HDR_CRC));
}

/* Magic, length, version and checksum: what any header must pass. */
static int check_frame(const unsigned char *in, size_t len, const char *name,
		       rfb_err *err)
{
	size_t cmp = len < 7 ? len : 7;

	if (memcmp(in, RFB_EVICT_MAGIC, cmp) != 0)
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "bad magic (not a refurb schedule)");
	if (len < RFB_EVICT_HEADER_SIZE)
		return rfb_err_set(err, RFB_ETRUNC, name,
				   "truncated: %zu bytes, a schedule header "
				   "has %u", len, RFB_EVICT_HEADER_SIZE);
	if (in[7] < 1 || in[7] > EVICT_VERSION)
		return rfb_err_set(err, RFB_EVERSION, name,
				   "schedule format version %u (this build "
				   "reads versions 1 to %u)", in[7], EVICT_VERSION);
	if (rfb_get_le32(in + HDR_CRC) != rfb_crc32c(0, in, HDR_CRC))
		return rfb_err_set(err, RFB_ECHECKSUM, name,
				   "header checksum mismatch");
	return 0;
}

int rfbi_evict_header_decode(const unsigned char *in, size_t len,
			     struct evict_header *h, const char *name,
			     rfb_err *err)
{
	int rc = check_frame(in, len, name, err);

	if (rc)
		return rc;
	if (rfb_get_le32(in + HDR_SIZE) != RFB_EVICT_HEADER_SIZE ||
	    rfb_get_le32(in + HDR_FLAGS) != 0 ||
	    rfb_get_le16(in + HDR_RESERVED) != 0)
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "unknown header size, flags or reserved "
				   "field (corrupt or from a newer refurb)");
	h->version = in[7];
	h->p.index_identity = rfb_get_le64(in + HDR_INDEX);
	h->p.total = rfb_get_le32(in + HDR_TOTAL);
	h->n = rfb_get_le32(in + HDR_N);
	h->p.reuse = rfb_get_le32(in + HDR_REUSE);
	h->p.policy = rfb_get_le16(in + HDR_POLICY);
	h->p.seed = rfb_get_le64(in + HDR_SEED);
	h->p.shard_index = rfb_get_le32(in + HDR_SHARD);
	h->p.shard_count = rfb_get_le32(in + HDR_SHARDS);
	h->body_crc = rfb_get_le32(in + HDR_BODY_CRC);
	return 0;
}

/*
 * Body (6n bytes after the header):
 *
 *   Offset Size Type    Meaning
 *   0      4n   u32[n]  sample ids of the shard, strictly increasing
 *   4n     2n   u16[n]  phase of the sample at the same position
 */
void rfbi_evict_body_encode(const uint32_t *ids, const uint16_t *phases,
			    uint32_t n, unsigned char *out)
{
	unsigned char *ph = out + (size_t)n * 4;

	for (uint32_t i = 0; i < n; i++) {
		rfb_put_le32(out + (size_t)i * 4, ids[i]);
		rfb_put_le16(ph + (size_t)i * 2, phases[i]);
	}
}

void rfbi_evict_body_decode(const unsigned char *in, uint32_t n,
			    uint32_t *ids, uint16_t *phases)
{
	const unsigned char *ph = in + (size_t)n * 4;

	for (uint32_t i = 0; i < n; i++) {
		ids[i] = rfb_get_le32(in + (size_t)i * 4);
		phases[i] = rfb_get_le16(ph + (size_t)i * 2);
	}
}
