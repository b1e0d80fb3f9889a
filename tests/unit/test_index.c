/*
 * test_index.c - the index format: build, serialize, open, and refuse
 * every kind of damage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/fdlimit.h"
#include "refurb/index.h"
#include "refurb/source.h"
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

#define SOURCE_SHARDS 300

/* An index of SOURCE_SHARDS files in dir, each a "shard" of one 64-byte
 * sample whose bytes are its shard's number. */
static rfb_index *many_shards(const char *dir)
{
	rfb_err err = { 0 };
	rfb_index_builder *b = rfb_index_builder_new(dir, &err);
	rfb_sample_info s = { .bytes = 64, .width = 8, .height = 8,
			      .channels = 3, .path = "k.jpg" };
	unsigned char *d, bytes[64];
	size_t len;
	char path[512], name[32];
	struct stat st;

	CHECK(b && rfb_index_builder_add_class(b, "0", &err) == 0);
	for (uint32_t k = 1; k <= SOURCE_SHARDS; k++) {
		FILE *f;
		snprintf(name, sizeof name, "s%03u.tar", k);
		snprintf(path, sizeof path, "%s/%s", dir, name);
		memset(bytes, (int)(k % 251), sizeof bytes);
		CHECK((f = fopen(path, "wb")) && fwrite(bytes, 1, 64, f) == 64 &&
		      fclose(f) == 0);
		CHECK(stat(path, &st) == 0);
		CHECK(rfb_index_builder_add_shard(b, name, 64,
			(int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
			&err) == 0);
		s.shard = k;
		CHECK(rfb_index_builder_add(b, &s, &err) == 0);
	}
	CHECK(rfb_index_builder_finish(b, &d, &len, &err) == 0);
	rfb_index_builder_free(b);
	rfb_index *x = rfb_index_open_mem(d, len, "mem", &err);
	free(d);
	return x;
}

/* Read sample id; 0 when its bytes are its shard's. */
static int read_ok(rfb_source *src, uint32_t id, unsigned char **buf,
		   size_t *cap, rfb_err *err)
{
	size_t len = 0;
	int rc = rfb_source_read(src, id, 1 << 20, buf, cap, &len, err);

	if (rc)
		return rc;
	return len == 64 && (*buf)[0] == (id + 1) % 251 &&
	       (*buf)[63] == (id + 1) % 251 ? 0 : -100;
}

static void set_limit(rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };

	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
}

/* In a child process, whose limits may come down for good. */
static void source_fds_child(rfb_index *x)
{
	struct rfb_source_fds f;
	struct rlimit now;
	rfb_err err = { 0 };
	unsigned char *buf = NULL;
	size_t cap = 0;
	uint32_t base, lowered, most = 0, r = 12345;
	rfb_source *src;

	/* descriptors numbered from 3 up: the limit bounds numbers */
	for (int fd = 3; fd < 4096; fd++)
		close(fd);
	CHECK((src = rfb_source_open(x, NULL, &err)) != NULL);
	base = rfb_fd_count_open(UINT64_MAX);
	set_limit(base + 40, base + 40);
	CHECK(rfb_source_fit_fds(src, 4, "the test", &f, &err) == 0);
	CHECK(f.cap == 18 && f.shards == SOURCE_SHARDS && f.want == SOURCE_SHARDS);
	CHECK(rfb_source_fds_note(&f, &err) == 1);
	CHECK(strstr(err.msg, "18 of the 300 shard files are kept open") != NULL);
	for (int i = 0; i < 3000; i++) {
		uint32_t n;
		r = r * 1103515245u + 12345u;
		CHECK(read_ok(src, (r >> 8) % SOURCE_SHARDS, &buf, &cap, &err) == 0);
		n = rfb_fd_count_open(UINT64_MAX);
		most = n > most ? n : most;
	}
	CHECK(most <= base + 18);
	/* the limit comes down under what is open: idle ones are closed */
	set_limit(base + 6, base + 40);
	for (uint32_t id = 0; id < 40; id++)
		CHECK(read_ok(src, id, &buf, &cap, &err) == 0);
	CHECK(rfb_source_fd_cap(src, &lowered) <= 6 && lowered > 0);
	CHECKF(rfb_fd_count_open(UINT64_MAX) <= base + 6, "%u open, base %u, cap %u", rfb_fd_count_open(UINT64_MAX), base, rfb_source_fd_cap(src, NULL));
	/* none left to open one: the error is the system's */
	set_limit(base - 1, base + 40);
	CHECK(read_ok(src, 100, &buf, &cap, &err) == RFB_ERESOURCE);
	CHECK(err.sys_errno == EMFILE && rfb_err_is_system(&err));
	/* a soft limit too low for the need is raised toward the hard one */
	set_limit(base + 3, base + 40);
	CHECK(rfb_source_fit_fds(src, 10, "ten things", &f, &err) == 0);
	CHECK(f.raised && getrlimit(RLIMIT_NOFILE, &now) == 0 &&
	      now.rlim_cur == base + 40);
	CHECK(read_ok(src, 100, &buf, &cap, &err) == 0);
	/* past the hard one: said before any read */
	CHECK(rfb_source_fit_fds(src, 60, "sixty things", &f, &err) ==
	      RFB_ERESOURCE);
	CHECK(strstr(err.msg, "sixty things need 60 more") != NULL);
	rfb_source_close(src);
	free(buf);
}

/* More shards than descriptors: the least recently used are closed (the
 * cap holds), EMFILE closes idle ones and lowers the cap, and with none
 * left to close it is a system error, not a bad sample (issue 33). */
static void test_source_fds(void)
{
	char dir[] = "/tmp/refurb-test-source.XXXXXX";
	rfb_index *x;
	pid_t pid;
	int status = -1;

	CHECK(mkdtemp(dir) != NULL);
	CHECK((x = many_shards(dir)) != NULL);
	fflush(stdout);
	if ((pid = fork()) == 0) {
		source_fds_child(x);
		fflush(stdout);
		_exit(test_current_failed);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	rfb_index_close(x);
	for (uint32_t k = 1; k <= SOURCE_SHARDS; k++) {
		char path[512];
		snprintf(path, sizeof path, "%s/s%03u.tar", dir, k);
		unlink(path);
	}
	rmdir(dir);
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
	RUN(test_source_fds);
	return test_done();
}
