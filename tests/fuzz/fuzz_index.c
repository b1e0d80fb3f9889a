/*
 * fuzz_index.c - the dataset index reader (rfb_index_open_mem) on any
 * bytes, refurb-index(5) checksums and identity repaired first.  An index
 * that opens must answer every accessor for every sample without reading
 * outside the file.
 */
#include "fuzz.h"
#include "refurb/index.h"
#include "../../lib/index/index_internal.h"

/* Version 2: the identity (classes, then the content of each record) when
 * the sections it covers are inside the file, then the two CRCs. */
static void index_fix_v2(unsigned char *d, size_t len)
{
	uint64_t root = rfb_get_le32(d + 24), classes = rfb_get_le64(d + 32);
	uint64_t n = rfb_get_le64(d + 8);

	if (root <= len - 80 && classes <= len - 80 - root &&
	    n <= (len - 80 - root - classes) / INDEX_RECORD_SIZE)
		rfb_put_le64(d + 56, rfbi_index_identity_v2(d + 80 + root, classes,
						       d + 80 + root + classes,
						       (uint32_t)n));
	fuzz_fix_crc(d, len, 64, 80, len - 80);
	fuzz_fix_crc(d, len, 76, 0, 76);
}

/* Identity (version 1: hash of everything after the root), body CRC,
 * header CRC: in that order, since each covers the one before. */
static void index_fix(unsigned char *d, size_t len)
{
	size_t root;

	if (len >= 80 && d[7] == 2) {
		index_fix_v2(d, len);
		return;
	}
	if (len < 64)
		return;
	root = rfb_get_le32(d + 24);
	if (root <= len - 64)
		rfb_put_le64(d + 48, rfb_hash64(d + 64 + root, len - 64 - root,
						(uint32_t)rfb_get_le64(d + 8)));
	fuzz_fix_crc(d, len, 56, 64, len - 64);
	fuzz_fix_crc(d, len, 60, 0, 60);
}

/* Every shard entry, and every shard sample's byte range inside it. */
static void shard_walk(const rfb_index *idx, const rfb_sample_info *s)
{
	rfb_shard_info sh;
	char path[2 * RFB_INDEX_MAX_PATH + 2];

	if (s->shard == RFB_INDEX_NO_SHARD) {
		FUZZ_ASSERT(s->offset == 0);
		return;
	}
	FUZZ_ASSERT(rfb_index_shard(idx, s->shard, &sh) == 0);
	FUZZ_ASSERT(s->offset <= sh.size && s->bytes <= sh.size - s->offset);
	FUZZ_ASSERT(strlen(sh.path) >= 1 && strlen(sh.path) <= RFB_INDEX_MAX_PATH);
	(void)rfb_index_shard_path(idx, s->shard, "/x", path, sizeof path);
}

static void index_walk(const rfb_index *idx)
{
	uint32_t n = rfb_index_count(idx), classes = rfb_index_class_count(idx);
	char path[2 * RFB_INDEX_MAX_PATH + 2];
	rfb_sample_info s;

	FUZZ_ASSERT(rfb_index_root(idx) != NULL);
	for (uint32_t c = 0; c < classes; c++)
		FUZZ_ASSERT(strlen(rfb_index_class_name(idx, c)) <=
			    RFB_INDEX_MAX_CLASS_NAME);
	FUZZ_ASSERT(rfb_index_class_name(idx, classes) == NULL);
	for (uint32_t i = 0; i < n; i++) {
		FUZZ_ASSERT(rfb_index_get(idx, i, &s) == 0);
		FUZZ_ASSERT(s.id == i && s.label < classes);
		FUZZ_ASSERT(rfb_index_label(idx, i) == s.label);
		FUZZ_ASSERT(rfb_index_pixels(idx, i) ==
			    (uint64_t)s.width * s.height);
		FUZZ_ASSERT(strlen(s.path) >= 1 &&
			    strlen(s.path) <= RFB_INDEX_MAX_PATH);
		int prc = rfb_index_full_path(idx, i, NULL, path, sizeof path);
		FUZZ_ASSERT(prc == 0 || prc == RFB_ELIMIT);
		prc = rfb_index_full_path(idx, i, "/x", path, 8);
		FUZZ_ASSERT(prc == 0 || prc == RFB_ELIMIT);
		shard_walk(idx, &s);
	}
	FUZZ_ASSERT(rfb_index_get(idx, n, &s) == RFB_ENOTFOUND);
	FUZZ_ASSERT(rfb_index_shard(idx, 0, NULL) == RFB_ENOTFOUND);
	FUZZ_ASSERT(rfb_index_shard(idx, rfb_index_shard_count(idx) + 1, NULL) ==
		    RFB_ENOTFOUND);
}

FUZZ_TARGET(index)
{
	unsigned char *d = fuzz_copy(data, size);
	rfb_err err = { 0 };
	rfb_index *idx;
	int ok;

	index_fix(d, size);
	idx = rfb_index_open_mem(d, size, "fuzz", &err);
	ok = idx != NULL;
	if (ok)
		index_walk(idx);
	else
		FUZZ_REJECTED(&err, err.code);
	rfb_index_close(idx);
	free(d);
	return ok;
}
