/*
 * test_aio.c - the batched AIO reader of cache records: buffered and
 * O_DIRECT batches compared byte for byte with pread, one io_submit per
 * batch, partial submissions and refused reads (io_submit and io_getevents
 * are interposed below to inject them), corrupt, truncated and missing
 * records, wrong sample ids, bad addresses, two batches in flight, the
 * fallback when O_DIRECT is refused, and API misuse.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "refurb/aio.h"
#include "refurb/cache.h"
#include "refurb/io.h"
#include "refurb/record.h"
#include "test.h"

#define NREC 120
#define TMPFS_MAGIC_NUMBER 0x01021994

/* ---- fault injection: this program's io_submit / io_getevents take
 * precedence over libaio's for the library linked into it ---- */

static long submit_cap;        /* > 0: take at most this many per call */
static int submit_refuse_at;   /* > 0: that call refuses its first iocb */
static int submit_eagain_at;   /* > 0: that call says EAGAIN */
static int submit_calls_seen;
static int getevents_eintr;    /* the next N calls fail with EINTR */
static int getevents_one;      /* return one event per call */

int io_submit(io_context_t ctx, long nr, struct iocb *ios[])
{
	long rc;

	submit_calls_seen++;
	if (submit_refuse_at && submit_calls_seen == submit_refuse_at)
		return -EBADF;
	if (submit_eagain_at && submit_calls_seen == submit_eagain_at)
		return -EAGAIN;
	if (submit_cap > 0 && nr > submit_cap)
		nr = submit_cap;
	rc = syscall(SYS_io_submit, ctx, nr, ios);
	return rc < 0 ? -errno : (int)rc;
}

int io_getevents(io_context_t ctx, long min_nr, long nr,
		 struct io_event *events, struct timespec *timeout)
{
	long rc;

	if (getevents_eintr > 0) {
		getevents_eintr--;
		return -EINTR;
	}
	if (getevents_one)
		min_nr = nr = 1;
	rc = syscall(SYS_io_getevents, ctx, min_nr, nr, events, timeout);
	return rc < 0 ? -errno : (int)rc;
}

static void reset_injection(void)
{
	submit_cap = 0;
	submit_refuse_at = submit_eagain_at = submit_calls_seen = 0;
	getevents_eintr = getevents_one = 0;
}

/* ---- a cache to read ---- */

struct fixture {
	char dir[512];
	struct rfb_cache_addr addr[NREC];
	uint32_t sample[NREC];
};

static rfb_codec_ctx *codec_ctx;
static char base_dir[400], direct_base[400], shm_base[400];
static int fixture_serial;

/* Record i: sizes from ~100 bytes to ~190 KB (every 10th is noise). */
static int encode_record(uint32_t i, rfb_imgbuf *ibuf, rfb_imgbuf *rbuf,
			 size_t *len)
{
	rfb_image img;
	struct rfb_codec codec = { RFB_CODEC_ZSTD, 1 };
	int w = i % 10 == 3 ? 300 : 8 + (int)(i * 37 % 120), h = w / 2 + 1;
	uint32_t x = i * 2654435761u + 1;

	if (rfb_image_alloc(&img, ibuf, w, h, 3, NULL))
		return -1;
	for (size_t k = 0; k < img.stride * img.height; k++) {
		x = x * 1103515245u + 12345u;
		img.data[k] = i % 10 == 3 ? (unsigned char)(x >> 24)
			      : (unsigned char)(k / 7 + ((x >> 28) & (i % 4)));
	}
	return rfb_record_encode(codec_ctx, &codec, &img, i, 0, 1 + i % 4, rbuf,
				 len, NULL);
}

/* A cache of NREC records in several segments under parent. */
static int make_fixture(struct fixture *f, const char *parent)
{
	struct rfb_cache_manifest m = { 0 };
	struct rfb_cache_recovery rec;
	rfb_imgbuf ibuf = { 0 }, rbuf = { 0 };
	rfb_err err = { 0 };
	rfb_cache *c;
	int rc = 0;

	snprintf(f->dir, sizeof f->dir, "%s/aio-%d-%d", parent, (int)getpid(),
		 fixture_serial++);
	m.index_identity = 1;
	m.samples = NREC;
	m.codec.kind = RFB_CODEC_ZSTD;
	m.codec.level = 1;
	m.segment_max = 256 << 10;
	snprintf(m.pipeline, sizeof m.pipeline, "resize=64");
	if (!(c = rfb_cache_open(f->dir, &m, RFB_CACHE_RESET, 2, &rec, &err)))
		return -1;
	for (uint32_t i = 0; rc == 0 && i < NREC; i++) {
		struct rfb_record_meta meta;
		size_t len;
		rc = encode_record(i, &ibuf, &rbuf, &len);
		if (rc == 0)
			rc = rfb_record_parse_header(rbuf.data, len, &meta, &err);
		if (rc == 0)
			rc = rfb_cache_append(c, rbuf.data, len, &meta, &f->addr[i], &err);
		if (rc == 0) /* the cache does not copy: write before reuse */
			rc = rfb_cache_flush(c, &err);
		f->sample[i] = i;
	}
	if (rc == 0)
		rc = rfb_cache_flush(c, &err);
	if (rfb_cache_close(c, &err))
		rc = -1;
	rfb_imgbuf_free(&ibuf);
	rfb_imgbuf_free(&rbuf);
	if (rc)
		printf("# fixture: %s\n", err.msg);
	return rc;
}

static void remove_fixture(const struct fixture *f)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", f->dir);
}

static void segment_path(const struct fixture *f, uint32_t seg, char *path)
{
	CHECK(rfb_cache_segment_path(f->dir, seg, path, 600) == 0);
}

/* The bytes of record i read with plain pread; malloc'ed. */
static unsigned char *reference(const struct fixture *f, size_t i)
{
	char path[600];
	unsigned char *b = malloc(f->addr[i].length);
	int fd;

	segment_path(f, f->addr[i].segment, path);
	fd = open(path, O_RDONLY);
	if (!b || fd < 0 ||
	    rfb_pread_full(fd, b, f->addr[i].length, (off_t)f->addr[i].offset) !=
		    (ssize_t)f->addr[i].length) {
		free(b);
		b = NULL;
	}
	if (fd >= 0)
		close(fd);
	return b;
}

/* ---- helpers ---- */

/* Submit records idx[0..k) of f and wait; returns wait's value. */
static int read_batch(rfb_batch_reader *r, const struct fixture *f,
		      const size_t *idx, size_t k,
		      const struct rfb_batch_record **out)
{
	struct rfb_cache_addr a[NREC];
	uint32_t s[NREC];
	rfb_err err = { 0 };
	int rc;

	for (size_t j = 0; j < k; j++) {
		a[j] = f->addr[idx[j]];
		s[j] = f->sample[idx[j]];
	}
	if ((rc = rfb_batch_reader_submit(r, a, s, k, &err))) {
		printf("# submit: %s\n", err.msg);
		return rc;
	}
	rc = rfb_batch_reader_wait(r, out, &err);
	if (rc < 0)
		printf("# wait: %s\n", err.msg);
	return rc;
}

/* Is result o record i of f, byte for byte? */
static int same_record(const struct fixture *f, size_t i,
		       const struct rfb_batch_record *o)
{
	unsigned char *ref = reference(f, i);
	int ok = ref && o->status == 0 && o->data &&
		 o->length == f->addr[i].length && o->meta.sample == i &&
		 memcmp(o->data, ref, o->length) == 0;

	if (!ok)
		printf("# record %zu: status %d (%s)\n", i, o->status, o->why.msg);
	free(ref);
	return ok;
}

static void shuffle(size_t *v, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		v[i] = i;
	for (size_t i = n; i > 1; i--) {
		seed = seed * 1664525u + 1013904223u;
		size_t j = (seed >> 8) % i, t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* Read all of f in shuffled batches of k; every record must be good. */
static void read_all(rfb_batch_reader *r, const struct fixture *f, size_t k,
		     uint32_t seed)
{
	size_t order[NREC];
	const struct rfb_batch_record *out;

	shuffle(order, NREC, seed);
	for (size_t b = 0; b < NREC; b += k) {
		size_t m = NREC - b < k ? NREC - b : k;
		CHECK(read_batch(r, f, order + b, m, &out) == 0);
		for (size_t j = 0; j < m; j++)
			CHECK(same_record(f, order[b + j], &out[j]));
	}
}

static uint64_t total_bytes(const struct fixture *f)
{
	uint64_t t = 0;

	for (size_t i = 0; i < NREC; i++)
		t += f->addr[i].length;
	return t;
}

/* The first batch of k records, in order, and the arena it leaves; its
 * record bytes. */
static size_t read_first(rfb_batch_reader *r, const struct fixture *f, size_t k)
{
	size_t order[NREC], bytes = 0;
	const struct rfb_batch_record *out;
	struct rfb_batch_stats st;

	for (size_t i = 0; i < k; i++) {
		order[i] = i;
		bytes += f->addr[i].length;
	}
	CHECK(read_batch(r, f, order, k, &out) == 0);
	rfb_batch_reader_get_stats(r, &st);
	CHECK(st.buffer_grows == 1);
	/* half as much again as the batch needs, for larger batches later */
	CHECKF(st.buffer_bytes >= bytes * 3 / 2, "arena %llu bytes for a "
	       "batch of %zu", (unsigned long long)st.buffer_bytes, bytes);
	return bytes;
}

/* Read all records in batches of k through a fresh view; checks stats. */
static void read_mode(const struct fixture *f, int direct, size_t k)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(f->dir, direct, &err);
	rfb_batch_reader *r = v ? rfb_batch_reader_new(v, k, &err) : NULL;
	struct rfb_batch_stats st;
	size_t batches = (NREC + k - 1) / k;

	CHECKF(r, "%s", err.msg);
	if (!r)
		goto out;
	size_t first = read_first(r, f, k);
	read_all(r, f, k, (uint32_t)k);
	rfb_batch_reader_get_stats(r, &st);
	uint64_t grows = st.buffer_grows;
	CHECK(grows >= 1 && st.buffer_bytes > 0);
	read_all(r, f, k, (uint32_t)k);   /* the same batches again: */
	rfb_batch_reader_get_stats(r, &st);
	CHECK(st.buffer_grows == grows);  /* no allocation */
	batches = 2 * batches + 1;
	CHECK(st.batches == batches);
	CHECKF(st.submit_calls == batches, "%llu calls for %zu batches",
	       (unsigned long long)st.submit_calls, batches);
	CHECK(st.records == 2 * NREC + k && st.bad_records == 0);
	CHECK(st.record_bytes == 2 * total_bytes(f) + first);
	if (direct) {
		CHECK(rfb_batch_reader_mode(r) == RFB_BATCH_DIRECT);
		CHECK(st.align >= 512 && (st.align & (st.align - 1)) == 0);
		CHECK(st.bytes_read > st.record_bytes); /* whole aligned blocks */
		CHECK(st.refused_segments == 0 && st.sync_rereads == 0);
	} else {
		CHECK(rfb_batch_reader_mode(r) == RFB_BATCH_BUFFERED);
		CHECK(st.bytes_read == st.record_bytes);
	}
out:
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

/* ---- tests ---- */

static struct fixture fx;     /* read-only fixture under base_dir */

static void test_buffered(void)
{
	read_mode(&fx, 0, 16);
	read_mode(&fx, 0, 1);     /* batches of 1 */
	read_mode(&fx, 0, NREC);  /* one batch of the maximum size */
}

static struct fixture dfx;    /* on a filesystem that does O_DIRECT */

static void test_direct(void)
{
	read_mode(&dfx, 1, 16);
	read_mode(&dfx, 1, 1);
	read_mode(&dfx, 1, NREC);
	read_mode(&dfx, 0, 7);
}

/* A cache on tmpfs read "direct": O_DIRECT works there (Linux >= 6.6) or
 * is refused (older): either way every record reads right. */
static void test_direct_on_tmpfs(void)
{
	struct fixture f;
	rfb_err err = { 0 };

	if (make_fixture(&f, shm_base)) {
		CHECK(0);
		return;
	}
	rfb_cache_view *v = rfb_cache_view_open(f.dir, 1, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, 32, &err);
	CHECK(r);
	if (r) {
		read_all(r, &f, 32, 5);
		int mode = rfb_batch_reader_mode(r);
		printf("# tmpfs direct mode: %s\n", mode == RFB_BATCH_DIRECT
		       ? "direct" : "refused, read buffered");
		CHECK(mode == RFB_BATCH_DIRECT || mode == RFB_BATCH_DIRECT_REFUSED);
	}
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
	remove_fixture(&f);
}

/* Reads the filesystem refuses (forced misalignment: EINVAL) are read
 * again buffered, reported, and the segments stay buffered after. */
static void test_direct_refused(void)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(dfx.dir, 1, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, NREC, &err);
	struct rfb_batch_stats st;
	size_t all[NREC];
	const struct rfb_batch_record *out;

	CHECK(r);
	if (!r)
		goto out;
	CHECK(rfb_batch_reader_set_align(r, 3, &err) == RFB_EINVAL);
	CHECK(rfb_batch_reader_set_align(r, 1, &err) == 0);
	shuffle(all, NREC, 9);
	CHECK(read_batch(r, &dfx, all, NREC, &out) == 0);
	for (size_t j = 0; j < NREC; j++)
		CHECK(same_record(&dfx, all[j], &out[j]));
	rfb_batch_reader_get_stats(r, &st);
	CHECK(rfb_batch_reader_mode(r) == RFB_BATCH_DIRECT_REFUSED);
	CHECK(st.refused_segments > 0 && st.sync_rereads > 0);
	int fd = rfb_cache_view_fd(v, dfx.addr[0].segment, &err);
	CHECK(fd >= 0 && !(fcntl(fd, F_GETFL) & O_DIRECT));
	uint64_t rereads = st.sync_rereads;
	read_all(r, &dfx, 40, 3);  /* now buffered AIO: no more rereads */
	rfb_batch_reader_get_stats(r, &st);
	CHECK(st.sync_rereads == rereads && st.bad_records == 0);
out:
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

/* A direct view whose segment came without O_DIRECT (the view's open was
 * refused, as on tmpfs before Linux 6.6): that segment reads buffered. */
static void test_direct_refused_at_open(void)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(dfx.dir, 1, &err);
	int fd = v ? rfb_cache_view_fd(v, dfx.addr[0].segment, &err) : -1;
	rfb_batch_reader *r = fd >= 0 ? rfb_batch_reader_new(v, 30, &err) : NULL;
	struct rfb_batch_stats st;

	CHECK(r && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT) == 0);
	if (!r)
		goto out;
	read_all(r, &dfx, 30, 8);
	rfb_batch_reader_get_stats(r, &st);
	CHECK(rfb_batch_reader_mode(r) == RFB_BATCH_DIRECT_REFUSED);
	CHECK(st.refused_segments == 1 && st.sync_rereads == 0);
	CHECK(st.bad_records == 0 && st.align >= 512);
out:
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

static void test_partial_submission(void)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(fx.dir, 0, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, 10, &err);
	struct rfb_batch_stats st;
	const struct rfb_batch_record *out;
	size_t idx[10];

	CHECK(r);
	if (!r)
		goto out;
	shuffle(idx, 10, 1);
	reset_injection();
	submit_cap = 3;            /* 3 + 3 + 3 + 1 */
	CHECK(read_batch(r, &fx, idx, 10, &out) == 0);
	for (size_t j = 0; j < 10; j++)
		CHECK(same_record(&fx, idx[j], &out[j]));
	rfb_batch_reader_get_stats(r, &st);
	CHECK(st.submit_calls == 4);

	reset_injection();
	submit_refuse_at = 2;      /* 3 taken, then the 4th read refused */
	submit_cap = 3;
	getevents_eintr = 2;
	getevents_one = 1;
	CHECK(read_batch(r, &fx, idx, 10, &out) == 1);
	for (size_t j = 0; j < 10; j++)
		CHECK(j == 3 ? out[j].status == RFB_EIO && !out[j].data
		      : same_record(&fx, idx[j], &out[j]));
	CHECK(strstr(out[3].why.msg, "Bad file descriptor") != NULL);

	reset_injection();
	submit_cap = 2;
	submit_eagain_at = 2;      /* ring full: reap, then go on */
	CHECK(read_batch(r, &fx, idx, 10, &out) == 0);
	for (size_t j = 0; j < 10; j++)
		CHECK(same_record(&fx, idx[j], &out[j]));
	rfb_batch_reader_get_stats(r, &st);
	CHECK(st.submit_calls == 4 + 4 + 6);
	reset_injection();
out:
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

/* Flip one byte of the segment file at off. */
static void flip_byte(const struct fixture *f, uint32_t seg, uint64_t off)
{
	char path[600];
	unsigned char b;
	int fd;

	segment_path(f, seg, path);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1);
	b ^= 0x20;
	CHECK(pwrite(fd, &b, 1, (off_t)off) == 1);
	close(fd);
}

static void corrupt_in(const char *parent, int direct)
{
	struct fixture f;
	rfb_err err = { 0 };
	const struct rfb_batch_record *out;
	size_t idx[12];

	if (make_fixture(&f, parent)) {
		CHECK(0);
		return;
	}
	shuffle(idx, 12, 4);
	/* a payload byte of idx[2], a header byte of idx[7] */
	flip_byte(&f, f.addr[idx[2]].segment, f.addr[idx[2]].offset +
		  RFB_RECORD_HEADER_SIZE + f.addr[idx[2]].length / 2 - 20);
	flip_byte(&f, f.addr[idx[7]].segment, f.addr[idx[7]].offset + 17);
	rfb_cache_view *v = rfb_cache_view_open(f.dir, direct, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, 12, &err);
	CHECK(r && read_batch(r, &f, idx, 12, &out) == 2);
	for (size_t j = 0; r && j < 12; j++) {
		if (j == 2 || j == 7) {
			CHECK(out[j].status == RFB_ECHECKSUM && !out[j].data);
			CHECK(strstr(out[j].why.msg, j == 2 ? "payload" : "header"));
		} else {
			CHECK(same_record(&f, idx[j], &out[j]));
		}
	}
	/* with the payload deferred to the caller: the header is still
	 * checked by the wait, the payload by rfb_batch_reader_check_payload,
	 * which marks the record bad as the wait would have */
	rfb_batch_reader_defer_payload(r, 1);
	CHECK(r && read_batch(r, &f, idx, 12, &out) == 1);
	for (size_t j = 0; r && j < 12; j++) {
		if (j == 7) {
			CHECK(out[j].status == RFB_ECHECKSUM && !out[j].data);
			CHECK(rfb_batch_reader_check_payload(r, j) == RFB_ECHECKSUM);
			continue;
		}
		CHECK(out[j].status == 0);
		CHECK(out[j].data != NULL);
		CHECK(rfb_batch_reader_check_payload(r, j) ==
		      (j == 2 ? RFB_ECHECKSUM : 0));
		if (j == 2) {
			CHECK(out[j].status == RFB_ECHECKSUM && !out[j].data);
			CHECK(strstr(out[j].why.msg, "record at segment"));
			CHECK(strstr(out[j].why.msg, "payload"));
		} else {
			CHECK(same_record(&f, idx[j], &out[j]));
		}
	}
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
	remove_fixture(&f);
}

static void test_corrupt_payload(void)
{
	corrupt_in(base_dir, 0);
	if (direct_base[0])
		corrupt_in(direct_base, 1);
}

/* The last record of the segment that holds the most records. */
static size_t last_of_busiest(const struct fixture *f)
{
	size_t best = 0, best_count = 0;

	for (size_t i = 0; i < NREC; i++) {
		size_t count = 0, last = i;
		for (size_t j = 0; j < NREC; j++)
			if (f->addr[j].segment == f->addr[i].segment) {
				count++;
				if (f->addr[j].offset > f->addr[last].offset)
					last = j;
			}
		if (count > best_count) {
			best_count = count;
			best = last;
		}
	}
	return best;
}

static void truncate_in(const char *parent, int direct)
{
	struct fixture f;
	rfb_err err = { 0 };
	const struct rfb_batch_record *out;
	char path[600];
	size_t idx[NREC], k;

	if (make_fixture(&f, parent)) {
		CHECK(0);
		return;
	}
	size_t victim = last_of_busiest(&f);
	for (k = 0; k < NREC; k++)
		idx[k] = k;
	idx[0] = victim;
	idx[victim] = 0;
	rfb_cache_view *v = rfb_cache_view_open(f.dir, direct, &err);
	rfb_batch_reader *warm = rfb_batch_reader_new(v, NREC, &err);
	CHECK(warm && read_batch(warm, &f, idx, NREC, &out) == 0);
	segment_path(&f, f.addr[victim].segment, path);
	CHECK(truncate(path, (off_t)(f.addr[victim].offset +
				     f.addr[victim].length - 10)) == 0);
	/* a reader that knew the longer file: the read comes back short */
	CHECK(read_batch(warm, &f, idx, NREC, &out) == 1);
	CHECK(out[0].status == RFB_ETRUNC && !out[0].data);
	CHECKF(strstr(out[0].why.msg, "short read"), "%s", out[0].why.msg);
	for (k = 1; k < NREC; k++)
		CHECK(same_record(&f, idx[k], &out[k]));
	/* a new reader sees the size first and reads nothing */
	rfb_batch_reader *cold = rfb_batch_reader_new(v, NREC, &err);
	CHECK(cold && read_batch(cold, &f, idx, NREC, &out) == 1);
	CHECK(out[0].status == RFB_ETRUNC && strstr(out[0].why.msg, "short read"));
	struct rfb_batch_stats st;
	rfb_batch_reader_get_stats(cold, &st);
	CHECK(st.records == NREC && st.bad_records == 1);
	rfb_batch_reader_free(warm);
	rfb_batch_reader_free(cold);
	rfb_cache_view_close(v);
	remove_fixture(&f);
}

static void test_truncated_segment(void)
{
	truncate_in(base_dir, 0);
	if (direct_base[0])
		truncate_in(direct_base, 1);
}

static void test_missing_segment(void)
{
	struct fixture f;
	rfb_err err = { 0 };
	const struct rfb_batch_record *out;
	char path[600];
	size_t idx[NREC], gone = 0;

	if (make_fixture(&f, base_dir)) {
		CHECK(0);
		return;
	}
	shuffle(idx, NREC, 77);
	/* a view that had the segment open keeps reading it (delayed
	 * deletion); a new view finds it gone */
	rfb_cache_view *old = rfb_cache_view_open(f.dir, 0, &err);
	CHECK(rfb_cache_view_fd(old, f.addr[idx[0]].segment, &err) >= 0);
	segment_path(&f, f.addr[idx[0]].segment, path);
	CHECK(unlink(path) == 0);
	rfb_cache_view *v = rfb_cache_view_open(f.dir, 0, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, NREC, &err);
	rfb_batch_reader *ro = rfb_batch_reader_new(old, NREC, &err);
	for (size_t i = 0; i < NREC; i++)
		gone += f.addr[i].segment == f.addr[idx[0]].segment;
	CHECK(r && ro && gone > 1 && gone < NREC);
	CHECK(read_batch(r, &f, idx, NREC, &out) == (int)gone);
	for (size_t j = 0; r && j < NREC; j++) {
		if (f.addr[idx[j]].segment == f.addr[idx[0]].segment)
			CHECK(out[j].status == RFB_ENOTFOUND && !out[j].data &&
			      strstr(out[j].why.path, ".seg"));
		else
			CHECK(same_record(&f, idx[j], &out[j]));
	}
	CHECK(read_batch(ro, &f, idx, NREC, &out) == 0);
	rfb_batch_reader_free(r);
	rfb_batch_reader_free(ro);
	rfb_cache_view_close(v);
	rfb_cache_view_close(old);
	remove_fixture(&f);
}

static void test_wrong_sample(void)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(fx.dir, 0, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, 8, &err);
	const struct rfb_batch_record *out;
	struct rfb_cache_addr a[4] = { fx.addr[5], fx.addr[6], fx.addr[7], fx.addr[8] };
	uint32_t s[4] = { 5, 7, RFB_BATCH_ANY_SAMPLE, 8 };

	CHECK(r);
	if (!r)
		goto out;
	CHECK(rfb_batch_reader_submit(r, a, s, 4, &err) == 0);
	CHECK(rfb_batch_reader_wait(r, &out, &err) == 1);
	CHECK(out[0].status == 0 && out[2].status == 0 && out[3].status == 0);
	CHECK(out[1].status == RFB_EMISMATCH && !out[1].data);
	CHECKF(strstr(out[1].why.msg, "sample 6, expected sample 7"), "%s",
	       out[1].why.msg);
	CHECK(rfb_batch_reader_submit(r, a, NULL, 4, &err) == 0);
	CHECK(rfb_batch_reader_wait(r, &out, &err) == 0);
	CHECK(out[1].meta.sample == 6);
out:
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

/* Addresses that do not point at a record fail alone. */
static void test_bad_addresses(void)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(fx.dir, 0, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, 8, &err);
	const struct rfb_batch_record *out;
	struct rfb_cache_addr a[8];
	int want[8] = { RFB_EINVAL, RFB_ELIMIT, RFB_EINVAL, RFB_ETRUNC,
			RFB_EFORMAT, RFB_EFORMAT, RFB_ENOTFOUND, 0 };

	for (int k = 0; k < 8; k++)
		a[k] = fx.addr[10];
	a[0].length = 39;                                   /* < header */
	a[1].length = RFB_RECORD_MAX_STORED + RFB_RECORD_HEADER_SIZE + 1;
	a[2].offset = 8;                                    /* segment header */
	a[3].offset = (uint64_t)1 << 40;                    /* past the end */
	a[4].offset += 1;                                   /* not a record */
	a[4].length -= 1;
	a[5].length -= 1;                                   /* wrong length */
	a[6].segment = 0x7ffffff0;                          /* no such file */
	CHECK(r);
	if (!r)
		goto out;
	CHECK(rfb_batch_reader_submit(r, a, NULL, 8, &err) == 0);
	CHECK(rfb_batch_reader_wait(r, &out, &err) == 7);
	for (int k = 0; k < 8; k++)
		CHECKF(out[k].status == want[k], "address %d: %d %s", k,
		       out[k].status, out[k].why.msg);
	CHECK(same_record(&fx, 10, &out[7]));
	/* a batch whose every address is bad issues no read */
	struct rfb_batch_stats before, after;
	rfb_batch_reader_get_stats(r, &before);
	CHECK(rfb_batch_reader_submit(r, a, NULL, 3, &err) == 0);
	CHECK(rfb_batch_reader_wait(r, &out, &err) == 3);
	rfb_batch_reader_get_stats(r, &after);
	CHECK(after.submit_calls == before.submit_calls);
out:
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

/* Two readers on one view: batch k+1 in flight while k is checked. */
static void test_two_in_flight(void)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(fx.dir, 0, &err);
	rfb_batch_reader *slot[2] = { rfb_batch_reader_new(v, 16, &err),
				      rfb_batch_reader_new(v, 16, &err) };
	size_t order[NREC], nb = (NREC + 15) / 16;
	struct rfb_cache_addr a[16];
	uint32_t s[16];
	const struct rfb_batch_record *out;

	CHECK(slot[0] && slot[1]);
	if (!slot[0] || !slot[1])
		goto out;
	shuffle(order, NREC, 21);
	for (size_t b = 0; b <= nb; b++) {
		if (b < nb) {          /* submit batch b */
			size_t m = NREC - b * 16 < 16 ? NREC - b * 16 : 16;
			for (size_t j = 0; j < m; j++) {
				a[j] = fx.addr[order[b * 16 + j]];
				s[j] = order[b * 16 + j];
			}
			CHECK(rfb_batch_reader_submit(slot[b % 2], a, s, m, &err) == 0);
		}
		if (b > 0) {           /* then collect batch b - 1 */
			size_t p = b - 1, m = NREC - p * 16 < 16 ? NREC - p * 16 : 16;
			CHECK(rfb_batch_reader_wait(slot[p % 2], &out, &err) == 0);
			for (size_t j = 0; j < m; j++)
				CHECK(same_record(&fx, order[p * 16 + j], &out[j]));
		}
	}
out:
	rfb_batch_reader_free(slot[0]);
	rfb_batch_reader_free(slot[1]);
	rfb_cache_view_close(v);
}

static void test_misuse(void)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(fx.dir, 0, &err);
	rfb_batch_reader *r = rfb_batch_reader_new(v, 4, &err);
	const struct rfb_batch_record *out;
	struct rfb_batch_stats st;

	CHECK(rfb_batch_reader_new(v, 0, &err) == NULL && err.code == RFB_EINVAL);
	CHECK(rfb_batch_reader_new(NULL, 4, &err) == NULL && err.code == RFB_EINVAL);
	CHECK(rfb_batch_reader_new(v, RFB_BATCH_MAX + 1, &err) == NULL &&
	      err.code == RFB_ELIMIT);
	rfb_batch_reader_free(NULL);
	CHECK(r);
	if (!r)
		goto out;
	CHECK(rfb_batch_reader_wait(r, &out, &err) == RFB_EINVAL);
	CHECK(rfb_batch_reader_submit(r, fx.addr, NULL, 5, &err) == RFB_EINVAL);
	CHECK(rfb_batch_reader_submit(r, fx.addr, NULL, 0, &err) == 0);
	CHECK(rfb_batch_reader_wait(r, &out, &err) == 0);
	rfb_batch_reader_get_stats(r, &st);
	CHECK(st.submit_calls == 0 && st.batches == 1);
	CHECK(rfb_batch_reader_submit(r, fx.addr, fx.sample, 4, &err) == 0);
	CHECK(rfb_batch_reader_submit(r, fx.addr, fx.sample, 4, &err) == RFB_EINVAL);
	CHECK(rfb_batch_reader_set_align(r, 512, &err) == RFB_EINVAL);
	CHECK(rfb_batch_reader_wait(r, &out, &err) == 0);
	CHECK(rfb_batch_reader_wait(r, &out, &err) == RFB_EINVAL);
	/* freeing with a batch in flight waits for it */
	CHECK(rfb_batch_reader_submit(r, fx.addr, fx.sample, 4, &err) == 0);
out:
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

/* ---- where to put the caches ---- */

/* Does dir's filesystem take O_DIRECT reads (and is it not tmpfs)? */
static int direct_capable(const char *dir)
{
	char path[600];
	struct statfs sf;
	unsigned char block[8192] = { 1 };
	void *buf = NULL;
	int fd, ok = 0;

	if (statfs(dir, &sf) != 0 || sf.f_type == TMPFS_MAGIC_NUMBER)
		return 0;
	snprintf(path, sizeof path, "%s/aio-probe-%d", dir, (int)getpid());
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
		return 0;
	ok = write(fd, block, sizeof block) == (ssize_t)sizeof block;
	close(fd);
	fd = open(path, O_RDONLY | O_DIRECT);
	ok = ok && fd >= 0 && posix_memalign(&buf, 4096, 4096) == 0 &&
	     pread(fd, buf, 4096, 4096) == 4096;
	if (fd >= 0)
		close(fd);
	free(buf);
	unlink(path);
	return ok;
}

static void pick_dirs(void)
{
	const char *build = getenv("REFURB_BUILD");
	const char *cand[] = { "/var/tmp", "/tmp", build ? build : "build" };

	snprintf(base_dir, sizeof base_dir, "/tmp");
	for (int i = 0; i < 3 && !direct_base[0]; i++)
		if (direct_capable(cand[i]))
			snprintf(direct_base, sizeof direct_base, "%s", cand[i]);
	snprintf(shm_base, sizeof shm_base, "%s",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
}

static void skip(const char *name, const char *why)
{
	printf("ok %d - %s # SKIP %s\n", ++test_count, name, why);
}

int main(void)
{
	codec_ctx = rfb_codec_ctx_new(NULL);
	pick_dirs();
	if (make_fixture(&fx, base_dir)) {
		printf("not ok 1 - cannot make a cache under %s\n1..1\n", base_dir);
		return 1;
	}
	if (direct_base[0] && make_fixture(&dfx, direct_base))
		direct_base[0] = '\0';
	printf("# caches under %s, O_DIRECT under %s\n", base_dir,
	       direct_base[0] ? direct_base : "(none)");
	RUN(test_buffered);
	if (direct_base[0]) {
		RUN(test_direct);
		RUN(test_direct_refused);
		RUN(test_direct_refused_at_open);
	} else {
		skip("test_direct", "no filesystem here takes O_DIRECT");
		skip("test_direct_refused", "no filesystem here takes O_DIRECT");
		skip("test_direct_refused_at_open", "no filesystem here takes O_DIRECT");
	}
	RUN(test_direct_on_tmpfs);
	RUN(test_partial_submission);
	RUN(test_corrupt_payload);
	RUN(test_truncated_segment);
	RUN(test_missing_segment);
	RUN(test_wrong_sample);
	RUN(test_bad_addresses);
	RUN(test_two_in_flight);
	RUN(test_misuse);
	remove_fixture(&fx);
	if (direct_base[0])
		remove_fixture(&dfx);
	rfb_codec_ctx_free(codec_ctx);
	return test_done();
}
