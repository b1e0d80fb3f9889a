/*
 * test_index.c - the index format: build, serialize, open, and refuse
 * every kind of damage.
 */
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/index.h"
#include "test.h"

static unsigned char *build_sample(size_t *len, uint32_t n)
{
	rfb_err err = { 0 };
	rfb_index_builder *b = rfb_index_builder_new("/data/set", &err);
	unsigned char *data = NULL;
	char path[64];

	CHECK(b != NULL);
	CHECK(rfb_index_builder_add_class(b, "cat", &err) == 0);
	CHECK(rfb_index_builder_add_class(b, "dog", &err) == 0);
	CHECK(rfb_index_builder_add_class(b, "", &err) == 0); /* allowed */
	for (uint32_t i = 0; i < n; i++) {
		rfb_sample_info s = { .label = i % 2, .bytes = 1000 + i,
				      .width = 100 + i, .height = 50 + i,
				      .channels = i % 3 ? 3 : 1, .path = path };
		snprintf(path, sizeof path, "%s/%u.jpg", i % 2 ? "dog" : "cat", i);
		CHECK(rfb_index_builder_add(b, &s, &err) == 0);
	}
	CHECK(rfb_index_builder_count(b) == n);
	CHECK(rfb_index_builder_finish(b, &data, len, &err) == 0);
	rfb_index_builder_free(b);
	return data;
}

static void test_round_trip(void)
{
	size_t len;
	unsigned char *d = build_sample(&len, 25);
	rfb_err err = { 0 };
	rfb_index *x = rfb_index_open_mem(d, len, "mem", &err);
	rfb_sample_info s;
	char full[256];

	CHECKF(x != NULL, "%s", err.msg);
	if (!x)
		return;
	CHECK(rfb_index_count(x) == 25 && rfb_index_class_count(x) == 3);
	CHECK(strcmp(rfb_index_class_name(x, 1), "dog") == 0);
	CHECK(strcmp(rfb_index_class_name(x, 2), "") == 0);
	CHECK(rfb_index_class_name(x, 3) == NULL);
	CHECK(strcmp(rfb_index_root(x), "/data/set") == 0);
	CHECK(rfb_index_get(x, 7, &s) == 0);
	CHECK(s.id == 7 && s.label == 1 && s.bytes == 1007 && s.width == 107 &&
	      s.height == 57 && s.channels == 3 && strcmp(s.path, "dog/7.jpg") == 0);
	CHECK(rfb_index_label(x, 8) == 0 && rfb_index_pixels(x, 8) == 108 * 58);
	CHECK(rfb_index_get(x, 25, &s) == RFB_ENOTFOUND);
	CHECK(rfb_index_full_path(x, 3, NULL, full, sizeof full) == 0 &&
	      strcmp(full, "/data/set/dog/3.jpg") == 0);
	CHECK(rfb_index_full_path(x, 3, "/moved", full, sizeof full) == 0 &&
	      strcmp(full, "/moved/dog/3.jpg") == 0);
	CHECK(rfb_index_full_path(x, 3, NULL, full, 5) == RFB_ELIMIT);
	/* identity: content hash, equal for equal content */
	size_t len2;
	unsigned char *d2 = build_sample(&len2, 25);
	CHECK(len2 == len && memcmp(d, d2, len) == 0);
	free(d2);
	d2 = build_sample(&len2, 24);
	rfb_index *y = rfb_index_open_mem(d2, len2, "mem", &err);
	CHECK(y && rfb_index_identity(y) != rfb_index_identity(x));
	rfb_index_close(y);
	free(d2);
	rfb_index_close(x);
	free(d);
}

static void test_empty_index(void)
{
	rfb_err err = { 0 };
	rfb_index_builder *b = rfb_index_builder_new("/", &err);
	unsigned char *d;
	size_t len;

	CHECK(rfb_index_builder_finish(b, &d, &len, &err) == 0);
	rfb_index *x = rfb_index_open_mem(d, len, "mem", &err);
	CHECK(x && rfb_index_count(x) == 0 && rfb_index_class_count(x) == 0);
	rfb_index_close(x);
	rfb_index_builder_free(b);
	free(d);
}

/* Every truncation is refused, never crashes. */
static void test_truncations(void)
{
	size_t len;
	unsigned char *d = build_sample(&len, 10);
	rfb_err err;
	int refused = 0;

	for (size_t n = 0; n < len; n++) {
		rfb_index *x = rfb_index_open_mem(d, n, "mem", &err);
		refused += x == NULL;
		CHECK(x == NULL || n == len);
		rfb_index_close(x);
	}
	CHECK(refused == (int)len);
	free(d);
}

/* Every single-byte corruption is detected (checksums, identity). */
static void test_corruptions(void)
{
	size_t len;
	unsigned char *d = build_sample(&len, 10);
	rfb_err err;

	for (size_t i = 0; i < len; i++) {
		d[i] ^= 0x5a;
		rfb_index *x = rfb_index_open_mem(d, len, "mem", &err);
		CHECKF(x == NULL, "byte %zu", i);
		rfb_index_close(x);
		d[i] ^= 0x5a;
	}
	free(d);
}

/* A forged header with valid checksums but absurd counts: refused before
 * anything is allocated from them. */
static void test_forged_counts(void)
{
	size_t len;
	unsigned char *d = build_sample(&len, 3);
	rfb_err err = { 0 };

	rfb_put_le64(d + 8, (uint64_t)1 << 40);  /* sample count */
	rfb_put_le32(d + 76, rfb_crc32c(0, d, 76));
	CHECK(rfb_index_open_mem(d, len, "mem", &err) == NULL);
	CHECK(err.code == RFB_ELIMIT);
	rfb_put_le64(d + 8, 4);                  /* one more than present */
	rfb_put_le32(d + 76, rfb_crc32c(0, d, 76));
	CHECK(rfb_index_open_mem(d, len, "mem", &err) == NULL);
	CHECK(err.code == RFB_ETRUNC);
	rfb_put_le32(d + 28, 2000000);           /* shard count */
	rfb_put_le64(d + 8, 3);
	rfb_put_le32(d + 76, rfb_crc32c(0, d, 76));
	CHECK(rfb_index_open_mem(d, len, "mem", &err) == NULL);
	CHECK(err.code == RFB_ELIMIT);
	rfb_put_le32(d + 28, 0);
	d[7] = 3;
	CHECK(rfb_index_open_mem(d, len, "mem", &err) == NULL);
	CHECK(err.code == RFB_EVERSION);
	free(d);
}

static void test_builder_limits(void)
{
	rfb_err err = { 0 };
	rfb_index_builder *b = rfb_index_builder_new("/x", &err);
	rfb_sample_info s = { .label = 0, .path = "a.jpg" };
	char long_name[RFB_INDEX_MAX_CLASS_NAME + 2];

	CHECK(rfb_index_builder_add(b, &s, &err) == RFB_EINVAL); /* no class */
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = 0;
	CHECK(rfb_index_builder_add_class(b, long_name, &err) == RFB_ELIMIT);
	CHECK(rfb_index_builder_add_class(b, "c", &err) == 0);
	s.path = "";
	CHECK(rfb_index_builder_add(b, &s, &err) == RFB_ELIMIT);
	rfb_index_builder_free(b);
	rfb_index_builder_free(NULL);
	rfb_index_close(NULL);
}

/* Shard samples: the shard table and each sample's shard and byte
 * range survive the round trip; ranges outside a shard are refused. */
static void test_shards(void)
{
	rfb_err err = { 0 };
	rfb_index_builder *b = rfb_index_builder_new("/data", &err);
	rfb_sample_info s = { .label = 0, .bytes = 100, .width = 8,
			      .height = 8, .channels = 3, .path = "k1.jpg",
			      .shard = 2, .offset = 512 };
	rfb_shard_info sh;
	unsigned char *d;
	size_t len;
	char full[64];

	CHECK(rfb_index_builder_add_class(b, "0", &err) == 0);
	CHECK(rfb_index_builder_add(b, &s, &err) == RFB_EINVAL); /* no shard 2 */
	CHECK(rfb_index_builder_add_shard(b, "a.tar", 10240, 7, &err) == 0);
	CHECK(rfb_index_builder_add_shard(b, "/abs/b.tar", 2048, -5, &err) == 0);
	CHECK(rfb_index_builder_add(b, &s, &err) == 0);
	s.offset = 2000;                      /* 2000 + 100 > 2048 */
	CHECK(rfb_index_builder_add(b, &s, &err) == RFB_EINVAL);
	s.shard = RFB_INDEX_NO_SHARD;         /* a file has offset 0 */
	CHECK(rfb_index_builder_add(b, &s, &err) == RFB_EINVAL);
	s.offset = 0;
	s.path = "file.jpg";
	CHECK(rfb_index_builder_add(b, &s, &err) == 0);
	CHECK(rfb_index_builder_finish(b, &d, &len, &err) == 0);
	rfb_index_builder_free(b);
	rfb_index *x = rfb_index_open_mem(d, len, "mem", &err);
	CHECK(x != NULL);
	CHECK(rfb_index_version(x) == 2);
	CHECK(rfb_index_shard_count(x) == 2);
	CHECK(rfb_index_shard(x, 0, &sh) == RFB_ENOTFOUND);
	CHECK(rfb_index_shard(x, 3, &sh) == RFB_ENOTFOUND);
	CHECK(rfb_index_shard(x, 2, &sh) == 0);
	CHECK(strcmp(sh.path, "/abs/b.tar") == 0);
	CHECK(sh.size == 2048 && sh.mtime_ns == -5);
	CHECK(rfb_index_get(x, 0, &s) == 0);
	CHECK(s.shard == 2 && s.offset == 512 && s.bytes == 100);
	CHECK(strcmp(s.path, "k1.jpg") == 0);
	CHECK(rfb_index_full_path(x, 0, NULL, full, sizeof full) == 0);
	CHECK(strcmp(full, "/abs/b.tar") == 0);
	CHECK(rfb_index_shard_path(x, 1, "/moved", full, sizeof full) == 0);
	CHECK(strcmp(full, "/moved/a.tar") == 0);
	CHECK(rfb_index_get(x, 1, &s) == 0);
	CHECK(s.shard == RFB_INDEX_NO_SHARD && s.offset == 0);
	rfb_index_close(x);
	free(d);
}

/* Version 1 files (written before shards) are still read. */
static void test_version1(void)
{
	rfb_err err = { 0 };
	rfb_index *x = rfb_index_open("tests/fuzz/corpus/index/tree.idx",
				      &err);
	rfb_sample_info s;

	CHECKF(x != NULL, "%s", err.msg);
	if (!x)
		return;
	CHECK(rfb_index_version(x) == 1);
	CHECK(rfb_index_count(x) > 0);
	CHECK(rfb_index_shard_count(x) == 0);
	CHECK(rfb_index_get(x, 0, &s) == 0);
	CHECK(s.shard == RFB_INDEX_NO_SHARD && s.offset == 0 && s.width > 0);
	rfb_index_close(x);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_empty_index);
	RUN(test_truncations);
	RUN(test_corruptions);
	RUN(test_forged_counts);
	RUN(test_builder_limits);
	RUN(test_shards);
	RUN(test_version1);
	return test_done();
}
