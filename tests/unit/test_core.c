/*
 * test_core.c - error context, byte helpers, full I/O, checksums, the
 * progress text.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/refurb.h"
#include "test.h"

static void test_error_context(void)
{
	rfb_err err = { 0 };
	char text[1200];

	CHECK(rfb_err_set(&err, RFB_EFORMAT, "a.idx", "bad magic %d", 7) ==
	      RFB_EFORMAT);
	CHECK(err.code == RFB_EFORMAT);
	CHECK(strcmp(rfb_err_text(&err, text, sizeof text),
		     "a.idx: bad magic 7") == 0);
	CHECK(rfb_err_sys(&err, ENOSPC, "x", "write") == RFB_ENOSPC);
	CHECK(strcmp(err.msg, "write: No space left on device") == 0);
	CHECK(rfb_err_sys(&err, EPIPE, NULL, "w") == RFB_EPIPE);
	CHECK(rfb_err_sys(&err, ENOENT, "f", "open") == RFB_EIO);
	CHECK(err.sys_errno == ENOENT);
	CHECK(rfb_err_set(NULL, RFB_EIO, NULL, "ignored") == RFB_EIO);
	for (int c = 0; c >= -16; c--)
		CHECK(strcmp(rfb_strerror(c), "unknown error") != 0);
	CHECK(strcmp(rfb_strerror(-999), "unknown error") == 0);
	rfb_err_clear(&err);
	CHECK(err.code == 0 && err.path[0] == 0);
}

/* System errors (issue 33) are told from the data's, and say the fix. */
static void test_system_errors(void)
{
	rfb_err err = { 0 };
	struct rfb_fd_budget b;

	CHECK(rfb_err_sys(&err, EMFILE, "s.tar", "open") == RFB_ERESOURCE);
	CHECK(rfb_err_is_system(&err));
	CHECK(strstr(err.msg, "open: Too many open files (") == err.msg);
	CHECK(strstr(err.msg, "ulimit -n") != NULL);
	CHECK(rfb_err_sys(&err, ENFILE, "s.tar", "open") == RFB_ERESOURCE);
	CHECK(strstr(err.msg, "fs.file-max") != NULL);
	CHECK(rfb_err_sys(&err, ENOMEM, "s.tar", "open") == RFB_ENOMEM);
	CHECK(strstr(err.msg, "free memory") != NULL);
	CHECK(rfb_err_sys(&err, EIO, "s.tar", "read") == RFB_EIO);
	CHECK(rfb_err_is_system(&err));
	CHECK(strstr(err.msg, "dmesg") != NULL);
	CHECK(rfb_err_sys(&err, EAGAIN, "s.tar", "read") == RFB_EIO);
	CHECK(rfb_err_is_system(&err));
	/* the data's: a file not there, not readable, not an image */
	CHECK(rfb_err_sys(&err, ENOENT, "a.jpg", "open") == RFB_EIO);
	CHECK(!rfb_err_is_system(&err));
	CHECK(strcmp(err.msg, "open: No such file or directory") == 0);
	CHECK(rfb_err_sys(&err, EACCES, "a.jpg", "open") == RFB_EIO);
	CHECK(!rfb_err_is_system(&err));
	rfb_err_set(&err, RFB_EDECODE, "a.jpg", "not a JPEG");
	CHECK(!rfb_err_is_system(&err));
	rfb_err_set(&err, RFB_ENOMEM, NULL, "out of memory");
	CHECK(rfb_err_is_system(&err));
	CHECK(!rfb_err_is_system(NULL));
	/* the open-file limit: a need past it is refused, saying the limit */
	CHECK(rfb_fd_budget_check(4, 0, "x", &b, &err) == 0);
	CHECK(b.open >= 3 && b.limit >= b.open + 4);
	CHECK(b.open == rfb_fd_count_open(b.limit));
	CHECK(rfb_fd_count_open(3) <= 3);
	CHECK(b.spare == b.limit - b.open - 4 || b.spare == UINT32_MAX);
	if (b.hard != UINT64_MAX && b.hard < 0x7fffffffu) {
		CHECK(rfb_fd_budget_check((uint32_t)b.hard, 0, "many things", &b,
					  &err) == RFB_ERESOURCE);
		CHECK(strstr(err.msg, "many things need") != NULL);
	}
}

static void test_le_fields(void)
{
	unsigned char b[8];

	rfb_put_le16(b, 0x1234);
	CHECK(b[0] == 0x34 && b[1] == 0x12 && rfb_get_le16(b) == 0x1234);
	rfb_put_le32(b, 0xdeadbeef);
	CHECK(b[0] == 0xef && b[3] == 0xde && rfb_get_le32(b) == 0xdeadbeef);
	rfb_put_le64(b, 0x0102030405060708ULL);
	CHECK(b[0] == 8 && b[7] == 1);
	CHECK(rfb_get_le64(b) == 0x0102030405060708ULL);
	rfb_put_lef32(b, 1.5f);
	CHECK(rfb_get_le32(b) == 0x3fc00000 && rfb_get_lef32(b) == 1.5f);
	rfb_put_lef64(b, -2.0);
	CHECK(rfb_get_le64(b) == 0xc000000000000000ULL);

	size_t r = 0;
	CHECK(rfb_mul_size(SIZE_MAX / 2 + 1, 2, &r) == -1 && r == 0);
	CHECK(rfb_mul_size(3, 4, &r) == 0 && r == 12);
	CHECK(rfb_add_size(SIZE_MAX, 1, &r) == -1 && r == 12);
}

static void test_full_io(void)
{
	int fds[2];
	unsigned char out[100000], in[100001];
	rfb_err err = { 0 };
	unsigned char *data = NULL;
	size_t len = 0;
	char path[] = "/tmp/rfb-test-XXXXXX";
	int fd;

	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (unsigned char)(i * 7);
	CHECK(pipe(fds) == 0);
	if (fork() == 0) {
		close(fds[0]);
		/* a pipe holds 64 KiB: the writer must loop */
		_exit(rfb_write_full(fds[1], out, sizeof out) ? 1 : 0);
	}
	close(fds[1]);
	CHECK(rfb_read_full(fds[0], in, sizeof in) == (ssize_t)sizeof out);
	CHECK(memcmp(in, out, sizeof out) == 0);
	close(fds[0]);

	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(rfb_write_full(fd, out, 1000) == 0);
	CHECK(rfb_pread_full(fd, in, 10, 990) == 10 && in[0] == out[990]);
	CHECK(rfb_pread_full(fd, in, 10, 995) == 5);
	close(fd);
	CHECK(rfb_file_load(path, 1000, &data, &len, &err) == 0);
	CHECK(len == 1000 && data[1000] == 0 && memcmp(data, out, 1000) == 0);
	free(data);
	CHECK(rfb_file_load(path, 999, &data, &len, &err) == RFB_ELIMIT);
	CHECK(rfb_file_replace(path, "new", 3, &err) == 0);
	CHECK(rfb_file_load(path, 100, &data, &len, &err) == 0);
	CHECK(len == 3 && memcmp(data, "new", 3) == 0);
	free(data);
	unlink(path);
	CHECK(rfb_file_load(path, 100, &data, &len, &err) == RFB_EIO);
	CHECK(err.sys_errno == ENOENT && strcmp(err.path, path) == 0);
	CHECK(rfb_file_load("/tmp", 100, &data, &len, &err) == RFB_EINVAL);
}

/* A fill that writes some bytes and then fails, or succeeds. */
static int fill_some(void *ctx, int fd, rfb_err *err)
{
	const int *fail = ctx;

	if (rfb_write_full(fd, "partial", 7) < 0)
		return rfb_err_sys(err, errno, NULL, "write failed");
	return *fail ? rfb_err_set(err, RFB_EIO, NULL, "injected") : 0;
}

/* Names in dir, counted. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* A failed fill keeps the old file and leaves no temporary one; a good
 * one replaces it, also over a stale "path.tmp.PID". */
static void test_replace_with(void)
{
	char dir[] = "/tmp/test_core.XXXXXX", path[64], stale[96];
	rfb_err err = { 0 };
	unsigned char *data = NULL;
	size_t len;
	int fail = 1;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/out", dir);
	CHECK(rfb_file_replace(path, "old", 3, &err) == 0);
	CHECK(rfb_file_replace_with(path, fill_some, &fail, &err) == RFB_EIO);
	CHECK(entries(dir) == 1);
	CHECK(rfb_file_load(path, 100, &data, &len, &err) == 0);
	CHECK(len == 3 && memcmp(data, "old", 3) == 0);
	free(data);
	snprintf(stale, sizeof stale, "%s.tmp.%ld", path, (long)getpid());
	CHECK(rfb_file_replace(stale, "stale", 5, &err) == 0);
	fail = 0;
	CHECK(rfb_file_replace_with(path, fill_some, &fail, &err) == 0);
	CHECK(rfb_file_load(path, 100, &data, &len, &err) == 0);
	CHECK(len == 7 && memcmp(data, "partial", 7) == 0);
	free(data);
	unlink(stale);
	CHECK(entries(dir) == 1);
	unlink(path);
	CHECK(rmdir(dir) == 0);
}

static void test_crc32c(void)
{
	unsigned char buf[1000];

	/* standard check value of CRC-32C */
	CHECK(rfb_crc32c(0, "123456789", 9) == 0xe3069283);
	CHECK(rfb_crc32c_sw(0, "123456789", 9) == 0xe3069283);
	CHECK(rfb_crc32c(0, "", 0) == 0);
	/* RFC 3720 B.4: 32 bytes of zeros */
	memset(buf, 0, 32);
	CHECK(rfb_crc32c(0, buf, 32) == 0x8a9136aa);
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)(i * 31 + 7);
	for (size_t n = 0; n < 40; n++)
		CHECK(rfb_crc32c(0, buf + 3, n) == rfb_crc32c_sw(0, buf + 3, n));
	CHECK(rfb_crc32c(rfb_crc32c(0, buf, 333), buf + 333, 667) ==
	      rfb_crc32c(0, buf, 1000));
}

/* The interleaved hardware CRC (three streams of 256 or 8192 bytes,
 * combined through the zero-byte shift tables) agrees with the table
 * implementation at every length around its block sizes, any alignment,
 * and when chained. */
static void test_crc32c_long(void)
{
	static const size_t lens[] = { 767, 768, 769, 775, 776, 1000, 1536,
				       3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1,
				       3 * 8192 + 768, 6 * 8192 + 777,
				       150528, 200003 };
	size_t cap = 200003 + 64;
	unsigned char *buf = malloc(cap);
	unsigned seed = 1;

	CHECK(buf != NULL);
	if (!buf)
		return;
	for (size_t i = 0; i < cap; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (unsigned char)(seed >> 16);
	}
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
		for (size_t off = 0; off < 8; off += 3) {
			uint32_t want = rfb_crc32c_sw(0x12345678u, buf + off, lens[i]);
			CHECKF(rfb_crc32c(0x12345678u, buf + off, lens[i]) == want,
			       "length %zu offset %zu", lens[i], off);
		}
	for (size_t n = 700; n < 2000; n += 13)
		CHECKF(rfb_crc32c(0, buf + 1, n) == rfb_crc32c_sw(0, buf + 1, n),
		       "length %zu", n);
	CHECK(rfb_crc32c(rfb_crc32c(0, buf, 30000), buf + 30000, 170003) ==
	      rfb_crc32c_sw(0, buf, 200003));
	memset(buf, 0, 3 * 8192);
	CHECK(rfb_crc32c(0, buf, 3 * 8192) == rfb_crc32c_sw(0, buf, 3 * 8192));
	free(buf);
}

static void test_hash64(void)
{
	/* golden values: the hash is part of file identities, never change */
	CHECKF(rfb_hash64("", 0, 0) == 0x48218226ff3cd4bfULL, "%016llx",
	       (unsigned long long)rfb_hash64("", 0, 0));
	CHECKF(rfb_hash64("refurb", 6, 1) == 0xfbf0e1a5ae33012bULL, "%016llx",
	       (unsigned long long)rfb_hash64("refurb", 6, 1));
	CHECK(rfb_hash64("refurb", 6, 1) != rfb_hash64("refurb", 6, 2));
	CHECK(rfb_hash64("a\0", 2, 0) != rfb_hash64("a", 1, 0));
}

static void test_progress_text(void)
{
	char b[200];

	CHECK(strcmp(rfb_progress_format(b, sizeof b, 50, 100, 10.0, "files"),
		     "50/100 files  5 files/s  ETA 0:00:10") == 0);
	CHECK(strcmp(rfb_progress_format(b, sizeof b, 7, 0, 2.0, "batches"),
		     "7 batches  4 batches/s") == 0);
	CHECK(strcmp(rfb_progress_format(b, sizeof b, 0, 10, 0.0, "x"),
		     "0/10 x  0 x/s  ETA ?") == 0);
	CHECK(strcmp(rfb_progress_format(b, sizeof b, 1, 7201, 1.0, "f"),
		     "1/7201 f  1 f/s  ETA 2:00:00") == 0);
}

/* rfb_format_detect: each magic, a short file, text that is no plan,
 * the thread CPU clock (rfb_thread_cpu_now) moving forward, and the
 * names of the tensor dtypes and layouts. */
static void test_format_detect(void)
{
	static const unsigned char schedule[] = "RFBSCHD\x01rest";
	volatile double sink = 0;
	double c0 = rfb_thread_cpu_now();

	CHECK(rfb_format_detect("RFBINDX\x02", 8) == RFB_FORMAT_INDEX);
	CHECK(rfb_format_detect(schedule, sizeof schedule) == RFB_FORMAT_EVICT);
	CHECK(rfb_format_detect("RFBSTRM\x01", 8) == RFB_FORMAT_STREAM);
	CHECK(rfb_format_detect("#refurb-plan 2 schedule=", 24) == RFB_FORMAT_PLAN);
	CHECK(rfb_format_detect("#refurb-planet", 14) == RFB_FORMAT_UNKNOWN);
	CHECK(rfb_format_detect("RFBIND", 6) == RFB_FORMAT_UNKNOWN);
	CHECK(rfb_format_detect("", 0) == RFB_FORMAT_UNKNOWN);
	CHECK(rfb_format_detect("\xff\xd8\xff\xe0", 4) == RFB_FORMAT_UNKNOWN);
	CHECK(strcmp(rfb_dtype_name(RFB_DTYPE_U8), "uint8") == 0);
	CHECK(strcmp(rfb_dtype_name(RFB_DTYPE_F32), "float32") == 0);
	CHECK(strcmp(rfb_layout_name(RFB_LAYOUT_HWC), "HWC") == 0);
	CHECK(strcmp(rfb_layout_name(RFB_LAYOUT_CHW), "CHW") == 0);
	for (int i = 0; i < 2000000; i++)
		sink += i * 0.5;
	CHECK(rfb_thread_cpu_now() > c0);
}

int main(void)
{
	RUN(test_error_context);
	RUN(test_system_errors);
	RUN(test_le_fields);
	RUN(test_full_io);
	RUN(test_replace_with);
	RUN(test_crc32c);
	RUN(test_crc32c_long);
	RUN(test_hash64);
	RUN(test_progress_text);
	RUN(test_format_detect);
	return test_done();
}
