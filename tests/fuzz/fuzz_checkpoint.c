/*
 * fuzz_checkpoint.c - cache recovery (rfb_cache_open) on any record index
 * checkpoint and segment contents (refurb-cache(5)).
 *
 * The input is a checkpoint image (as long as its header says, or all of
 * it) followed by the bytes every segment file gets after its header.  In
 * a cache directory made once per process (under $TMPDIR, default
 * /dev/shm), each input becomes the "records" file - its checksums, its
 * manifest hash and sample count repaired so that the cache adopts it -
 * and one segment file for each of the first segments of its table (with
 * a valid header, unless bit 0 of the entry's reserved word says "no
 * file" or bit 1 "a damaged header"), the records in that tail with their
 * checksums repaired.  Then the cache is opened (recovery), checked,
 * closed (a new checkpoint) and opened again:
 *   - every record the index points to lies inside its segment file,
 *     after the segment header, at least a record header long;
 *   - the live statistics agree with the entries;
 *   - the checkpoint the close writes has a sorted table of segments
 *     without duplicates nor the id that means "no segment";
 *   - recovery is idempotent: the second open finds the checkpoint the
 *     first close wrote and gives back exactly the same entries.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "refurb/cache.h"
#include "refurb/io.h"
#include "refurb/record.h"

#define CKPT_SAMPLES 64u
#define CKPT_MAX_SEGMENTS 4u

struct ckpt_state {
	char dir[256];
	struct rfb_cache_manifest want;
	uint64_t manifest_hash;
};

static struct ckpt_state ckpt_st;

/* Remove every file of the cache directory but the manifest and lock. */
static void ckpt_clean(void)
{
	DIR *d = opendir(ckpt_st.dir);
	struct dirent *e;
	char path[600];

	FUZZ_ASSERT(d != NULL);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "manifest") ||
		    !strcmp(e->d_name, "lock"))
			continue;
		snprintf(path, sizeof path, "%s/%s", ckpt_st.dir, e->d_name);
		unlink(path);
	}
	closedir(d);
}

static void ckpt_remove_dir(void)
{
	char path[600];

	ckpt_clean();
	snprintf(path, sizeof path, "%s/manifest", ckpt_st.dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/lock", ckpt_st.dir);
	unlink(path);
	rmdir(ckpt_st.dir);
}

/* The cache directory with its manifest, made on the first input. */
static void ckpt_init(void)
{
	const char *tmp = getenv("TMPDIR");
	struct rfb_cache_recovery rec;
	rfb_err err = { 0 };
	unsigned char *man;
	size_t len;
	char path[600];
	rfb_cache *c;

	if (ckpt_st.dir[0])
		return;
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(ckpt_st.dir, sizeof ckpt_st.dir, "%s/refurb-fuzz-ckpt.XXXXXX",
		 tmp);
	FUZZ_ASSERT(mkdtemp(ckpt_st.dir) != NULL);
	atexit(ckpt_remove_dir);
	ckpt_st.want.index_identity = 1;
	ckpt_st.want.schedule_identity = 2;
	ckpt_st.want.samples = CKPT_SAMPLES;
	ckpt_st.want.codec.kind = RFB_CODEC_RAW;
	ckpt_st.want.segment_max = 1 << 20;
	c = rfb_cache_open(ckpt_st.dir, &ckpt_st.want, 0, 0, &rec, &err);
	FUZZ_ASSERT(c != NULL && rfb_cache_close(c, &err) == 0);
	snprintf(path, sizeof path, "%s/manifest", ckpt_st.dir);
	FUZZ_ASSERT(rfb_file_load(path, 1 << 16, &man, &len, &err) == 0);
	ckpt_st.manifest_hash = rfb_hash64(man, len, 0);
	free(man);
}

static void ckpt_write(const char *name, const unsigned char *a, size_t alen,
		       const unsigned char *b, size_t blen)
{
	char path[600];
	int fd;

	snprintf(path, sizeof path, "%s/%s", ckpt_st.dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(rfb_write_full(fd, a, alen) == 0);
	FUZZ_ASSERT(blen == 0 || rfb_write_full(fd, b, blen) == 0);
	close(fd);
}

/* Length of the checkpoint at the start of the input, per its header. */
static size_t ckpt_length(const unsigned char *d, size_t len)
{
	uint64_t n;

	if (len < 68)
		return len;
	n = 64 + (uint64_t)rfb_get_le32(d + 24) * 40 +
	    (uint64_t)rfb_get_le32(d + 20) * 24 + 4;
	return n <= len ? (size_t)n : len;
}

/* Repair the records of a segment tail in place: header and payload CRC
 * of each one, walking by their stored lengths. */
static void ckpt_fix_records(unsigned char *t, size_t len)
{
	size_t off = 0;

	while (len - off >= RFB_RECORD_HEADER_SIZE) {
		size_t stored = rfb_get_le32(t + off + 16);
		fuzz_fix_crc(t + off, len - off, 32, RFB_RECORD_HEADER_SIZE,
			     stored);
		fuzz_fix_crc(t + off, len - off, 36, 0, 36);
		if (stored > len - off - RFB_RECORD_HEADER_SIZE)
			break;
		off += RFB_RECORD_HEADER_SIZE + stored;
	}
}

/* The segment files named by the first entries of the segment table. */
static void ckpt_segments(const unsigned char *k, size_t klen,
			  const unsigned char *tail, size_t tlen)
{
	uint32_t count = klen >= 68 ? rfb_get_le32(k + 24) : 0;

	for (uint32_t i = 0; i < count && i < CKPT_MAX_SEGMENTS; i++) {
		const unsigned char *p = k + 64 + (size_t)i * 40;
		unsigned char h[RFB_CACHE_SEGMENT_HEADER] = "RFBSEG\0\x01";
		uint32_t how;
		char name[600];

		if ((size_t)(p - k) + 40 > klen)
			break;
		how = rfb_get_le32(p + 12);
		if (how & 1)
			continue;
		rfb_put_le32(h + 8, rfb_get_le32(p));
		rfb_put_le32(h + 12, rfb_get_le32(p + 4));
		rfb_put_le32(h + 60, rfb_crc32c(0, h, 60) ^ (how & 2));
		FUZZ_ASSERT(rfb_cache_segment_path(".", rfb_get_le32(p), name,
						   sizeof name) == 0);
		ckpt_write(name + 2, h, sizeof h, tail, tlen);
	}
}

/* Checksums, manifest hash and sample count that make the cache adopt
 * the checkpoint. */
static void ckpt_fix(unsigned char *k, size_t len)
{
	if (len < 68)
		return;
	rfb_put_le64(k + 8, ckpt_st.manifest_hash);
	rfb_put_le32(k + 16, CKPT_SAMPLES);
	fuzz_fix_crc(k, len, 60, 0, 60);
	fuzz_fix_crc(k, len, len - 4, 64, len - 68);
}

/* Check every entry against its file; fill table[sample]. */
static void ckpt_check(rfb_cache *c, struct rfb_cache_entry *table,
		       int *found)
{
	struct rfb_cache_stats st;
	uint64_t records = 0, bytes = 0;

	for (uint32_t s = 0; s < CKPT_SAMPLES; s++) {
		struct rfb_cache_entry *e = &table[s];
		char path[600];
		struct stat sb;

		found[s] = rfb_cache_lookup(c, s, e) == 0;
		if (!found[s])
			continue;
		records++;
		bytes += e->addr.length;
		FUZZ_ASSERT(rfb_cache_segment_path(ckpt_st.dir, e->addr.segment,
						   path, sizeof path) == 0);
		FUZZ_ASSERT(stat(path, &sb) == 0);
		FUZZ_ASSERT(e->addr.offset >= RFB_CACHE_SEGMENT_HEADER &&
			    e->addr.length >= RFB_RECORD_HEADER_SIZE);
		FUZZ_ASSERT(e->addr.offset <= (uint64_t)sb.st_size &&
			    e->addr.length <= (uint64_t)sb.st_size - e->addr.offset);
	}
	rfb_cache_get_stats(c, &st);
	FUZZ_ASSERT(st.live_records == records && st.live_bytes == bytes);
}

/* The checkpoint a close wrote: its segment table is sorted, without
 * duplicates, and no id is RFB_CACHE_NO_SEGMENT (the "no record" mark). */
static void ckpt_check_written(void)
{
	unsigned char *k;
	size_t len;
	char path[600];
	rfb_err err = { 0 };

	snprintf(path, sizeof path, "%s/records", ckpt_st.dir);
	FUZZ_ASSERT(rfb_file_load(path, (size_t)1 << 30, &k, &len, &err) == 0);
	FUZZ_ASSERT(len >= 68);
	for (uint32_t i = 0, n = rfb_get_le32(k + 24); i < n; i++) {
		uint32_t id = rfb_get_le32(k + 64 + (size_t)i * 40);
		FUZZ_ASSERT(id != RFB_CACHE_NO_SEGMENT);
		FUZZ_ASSERT(i == 0 || id > rfb_get_le32(k + 64 + (size_t)(i - 1) * 40));
	}
	free(k);
}

/* 1 if the cache opened and adopted the checkpoint. */
static int ckpt_recover(void)
{
	struct rfb_cache_entry first[CKPT_SAMPLES], again[CKPT_SAMPLES];
	int found1[CKPT_SAMPLES], found2[CKPT_SAMPLES];
	struct rfb_cache_recovery rec;
	rfb_err err = { 0 };
	rfb_cache *c = rfb_cache_open(ckpt_st.dir, &ckpt_st.want, 0, 0, &rec,
				      &err);
	int adopted = rec.from_checkpoint; /* rec is filled even on failure */

	if (!c) {
		FUZZ_REJECTED(&err, err.code);
		return 0;
	}
	ckpt_check(c, first, found1);
	FUZZ_ASSERT(rfb_cache_close(c, &err) == 0);
	ckpt_check_written();
	c = rfb_cache_open(ckpt_st.dir, &ckpt_st.want, 0, 0, &rec, &err);
	FUZZ_ASSERT(c != NULL && rec.from_checkpoint);
	FUZZ_ASSERT(rec.scanned == 0 && rec.torn_bytes == 0 && rec.lost == 0);
	ckpt_check(c, again, found2);
	for (uint32_t s = 0; s < CKPT_SAMPLES; s++) {
		FUZZ_ASSERT(found1[s] == found2[s]);
		FUZZ_ASSERT(!found1[s] ||
			    (first[s].addr.segment == again[s].addr.segment &&
			     first[s].addr.offset == again[s].addr.offset &&
			     first[s].addr.length == again[s].addr.length &&
			     first[s].write_epoch == again[s].write_epoch &&
			     first[s].death_epoch == again[s].death_epoch));
	}
	FUZZ_ASSERT(rfb_cache_close(c, &err) == 0);
	return adopted;
}

FUZZ_TARGET(checkpoint)
{
	unsigned char *d = fuzz_copy(data, size);
	size_t klen = ckpt_length(d, size);
	int ok;

	ckpt_init();
	ckpt_clean();
	ckpt_fix(d, klen);
	ckpt_fix_records(d + klen, size - klen);
	ckpt_write("records", d, klen, NULL, 0);
	ckpt_segments(d, klen, d + klen, size - klen);
	ok = ckpt_recover();
	free(d);
	return ok;
}
