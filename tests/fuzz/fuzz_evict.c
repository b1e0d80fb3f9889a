/*
 * fuzz_evict.c - the eviction schedule reader (rfb_evict_open_mem) on
 * any bytes, refurb-evict(5) checksums repaired first.  Every byte of
 * a schedule is checked on open, so one that opens must serialize back
 * to exactly the same bytes, find each of its ids, and have the identity
 * of those bytes.
 */
#include "fuzz.h"
#include "refurb/evict.h"

static void evict_fix(unsigned char *d, size_t len)
{
	if (len < RFB_EVICT_HEADER_SIZE)
		return;
	fuzz_fix_crc(d, len, 56, RFB_EVICT_HEADER_SIZE,
		     len - RFB_EVICT_HEADER_SIZE);
	fuzz_fix_crc(d, len, 60, 0, 60);
}

static void evict_check(const rfb_evict *s, const unsigned char *d,
			   size_t len)
{
	const rfb_evict_params *p = rfb_evict_params_of(s);
	uint32_t n = rfb_evict_count(s);
	const uint32_t *ids = rfb_evict_ids(s);
	const uint16_t *phases = rfb_evict_phases(s);
	unsigned char *out = NULL;
	size_t out_len = 0;
	rfb_err err = { 0 };

	FUZZ_ASSERT(rfb_evict_serialize(s, &out, &out_len, &err) == 0);
	FUZZ_ASSERT(out_len == len && memcmp(out, d, len) == 0);
	free(out);
	FUZZ_ASSERT(n == rfb_evict_shard_size(p->total, p->shard_count,
					      p->shard_index));
	for (uint32_t i = 0; i < n; i++) {
		FUZZ_ASSERT(rfb_evict_find(s, ids[i]) == (int64_t)i);
		FUZZ_ASSERT(phases[i] < p->reuse);
	}
	FUZZ_ASSERT(rfb_evict_check_index(s, p->index_identity, p->total,
					  "fuzz", &err) == 0);
	FUZZ_ASSERT(rfb_evict_check_index(s, p->index_identity + 1, p->total,
					  "fuzz", &err) == RFB_EMISMATCH);
}

FUZZ_TARGET(evict)
{
	unsigned char *d = fuzz_copy(data, size);
	rfb_err err = { 0 };
	rfb_evict *s;
	int ok;

	evict_fix(d, size);
	s = rfb_evict_open_mem(d, size, "fuzz", &err);
	ok = s != NULL;
	if (ok)
		evict_check(s, d, size);
	else
		FUZZ_REJECTED(&err, err.code);
	rfb_evict_free(s);
	free(d);
	return ok;
}
