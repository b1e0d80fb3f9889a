/*
 * bench_aio.c - batch read timings for scripts/bench-aio.
 *
 *   bench_aio --make DIR N
 *       write a cache of N records of 256x256x3 images under DIR (zstd:1,
 *       noisy content, about 150 KB a record), in 5 segment groups.
 *   bench_aio [-p PASSES] DIR
 *       read every record of DIR's cache PASSES times (default 5) in
 *       random batches of 64 and 256, with the batch reader (AIO: one
 *       io_submit per batch) and with a loop of pread, buffered on a warm
 *       page cache, buffered on a cold one (posix_fadvise DONTNEED before
 *       each pass) and O_DIRECT; both methods check every record (header,
 *       sample id, CRC-32C).  Prints one table row per case with medians
 *       over the full batches.  On the calling thread only.
 *
 * Not a test: it prints numbers, it asserts nothing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "refurb/aio.h"
#include "refurb/cache.h"
#include "refurb/io.h"
#include "refurb/record.h"
#include "bench.h"

#define MAX_SAMPLES 1000000
#define MAX_TIMES 100000

static void die(const char *what, const rfb_err *err)
{
	fprintf(stderr, "bench_aio: %s: %s%s%s\n", what, err->path,
		err->path[0] ? ": " : "", err->msg);
	exit(1);
}

/* ---- making the cache ---- */

/* A 256x256 RGB image: four bands plus noise whose amplitude varies
 * (zstd:1 makes about 150 KB of it). */
static void make_image(rfb_image *img, uint32_t sample)
{
	uint32_t x = sample * 2654435761u + 7;
	unsigned amp = 12 + sample % 48;

	for (int y = 0; y < 256; y++)
		for (int i = 0; i < 256 * 3; i++) {
			x = x * 1103515245u + 12345u;
			img->data[(size_t)y * img->stride + i] =
				(unsigned char)((y >> 6) * 40 + (x >> 16) % amp);
		}
}

static int make_cache(const char *dir, uint32_t n)
{
	struct rfb_cache_manifest m = { 0 };
	struct rfb_cache_recovery rec;
	struct rfb_codec codec = { RFB_CODEC_ZSTD, 1 };
	rfb_codec_ctx *x = rfb_codec_ctx_new(NULL);
	rfb_imgbuf ib = { 0 }, rb = { 0 };
	rfb_image img;
	rfb_err err = { 0 };
	uint64_t bytes = 0;
	rfb_cache *c;

	m.samples = n;
	m.codec = codec;
	m.segment_max = (uint64_t)64 << 20;
	snprintf(m.pipeline, sizeof m.pipeline, "bench");
	if (!x || !(c = rfb_cache_open(dir, &m, RFB_CACHE_RESET, 2, &rec, &err)))
		die(dir, &err);
	if (rfb_image_alloc(&img, &ib, 256, 256, 3, &err))
		die("image", &err);
	for (uint32_t s = 0; s < n; s++) {
		struct rfb_record_meta meta;
		struct rfb_cache_addr a;
		size_t len;
		make_image(&img, s);
		if (rfb_record_encode(x, &codec, &img, s, 0, 1 + s % 5, &rb, &len, &err) ||
		    rfb_record_parse_header(rb.data, len, &meta, &err) ||
		    rfb_cache_append(c, rb.data, len, &meta, &a, &err) ||
		    rfb_cache_flush(c, &err)) /* rb is reused: write it now */
			die(dir, &err);
		bytes += len;
	}
	if (rfb_cache_close(c, &err))
		die(dir, &err);
	printf("bench_aio: %u records, %.1f MB, %.1f KB a record\n", n,
	       bytes / 1e6, bytes / 1e3 / n);
	rfb_imgbuf_free(&ib);
	rfb_imgbuf_free(&rb);
	rfb_codec_ctx_free(x);
	return 0;
}

/* ---- reading ---- */

struct bench {
	const char *dir;
	struct rfb_cache_addr *addr;  /* by sample */
	uint32_t *samples;            /* the samples that have a record */
	size_t n;
	unsigned char *buf;           /* pread's buffer */
	size_t buf_cap;
};

static void on_entry(void *ctx, uint32_t sample, const struct rfb_cache_entry *e)
{
	struct bench *b = ctx;

	if (sample < MAX_SAMPLES) {
		b->addr[sample] = e->addr;
		b->samples[b->n++] = sample;
	}
}

static void shuffle(uint32_t *v, size_t n, uint32_t seed)
{
	for (size_t i = n; i > 1; i--) {
		seed = seed * 1664525u + 1013904223u;
		size_t j = ((uint64_t)seed << 16 ^ i * 40503u) % i;
		uint32_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* Drop dir's segments from the page cache. */
static void drop_cache(rfb_cache_view *v, const struct bench *b)
{
	for (size_t i = 0; i < b->n; i++) {
		rfb_err err = { 0 };
		int fd = rfb_cache_view_fd(v, b->addr[b->samples[i]].segment, &err);
		if (fd >= 0)
			(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
}

/* Check a record the way the batch reader does; 0 if good. */
static int check(const unsigned char *p, const struct rfb_cache_addr *a,
		 uint32_t sample)
{
	struct rfb_record_meta m;

	return rfb_record_parse_header(p, a->length, &m, NULL) ||
	       rfb_record_size(&m) != a->length || m.sample != sample ||
	       rfb_record_verify(p, a->length, &m, NULL);
}

/* One batch with a loop of pread (aligned windows when align > 0). */
static int pread_batch(struct bench *b, rfb_cache_view *v, const uint32_t *ids,
		       size_t k, uint32_t align, double *read_us)
{
	size_t pos[1024], skip[1024], total = 0;
	double t0 = bench_now_us();
	int bad = 0;

	for (size_t j = 0; j < k; j++) {
		const struct rfb_cache_addr *a = &b->addr[ids[j]];
		rfb_err err = { 0 };
		int fd = rfb_cache_view_fd(v, a->segment, &err);
		uint64_t off = align ? a->offset & ~(uint64_t)(align - 1) : a->offset;
		size_t len = a->length + (size_t)(a->offset - off);
		if (align)
			len = (len + align - 1) & ~(size_t)(align - 1);
		pos[j] = total;
		skip[j] = (size_t)(a->offset - off);
		total += (len + 4095) & ~(size_t)4095;
		if (total > b->buf_cap)
			return -1;
		if (fd < 0 || rfb_pread_full(fd, b->buf + pos[j], len, (off_t)off) <
				      (ssize_t)(skip[j] + a->length))
			bad++;
	}
	*read_us = bench_now_us() - t0;
	for (size_t j = 0; j < k; j++)
		bad += check(b->buf + pos[j] + skip[j], &b->addr[ids[j]], ids[j]);
	return bad;
}

/* One batch with the batch reader; *submit_us / *wait_us its parts. */
static int aio_batch(struct bench *b, rfb_batch_reader *r, const uint32_t *ids,
		     size_t k, double *submit_us, double *wait_us, double *calls)
{
	struct rfb_cache_addr a[1024];
	struct rfb_batch_stats s0, s1;
	const struct rfb_batch_record *out;
	rfb_err err = { 0 };
	int bad;

	for (size_t j = 0; j < k; j++)
		a[j] = b->addr[ids[j]];
	rfb_batch_reader_get_stats(r, &s0);
	if (rfb_batch_reader_submit(r, a, ids, k, &err))
		die("submit", &err);
	if ((bad = rfb_batch_reader_wait(r, &out, &err)) < 0)
		die("wait", &err);
	rfb_batch_reader_get_stats(r, &s1);
	*submit_us = (double)(s1.submit_us - s0.submit_us);
	*wait_us = (double)(s1.wait_us - s0.wait_us);
	*calls = (double)(s1.submit_calls - s0.submit_calls);
	return bad;
}

enum { WARM, COLD, DIRECT };
static const char *mode_name[] = { "buffered warm", "buffered cold", "O_DIRECT" };

struct times {
	double total[MAX_TIMES], part1[MAX_TIMES], part2[MAX_TIMES];
	double part3[MAX_TIMES], calls;
	size_t n;
	uint64_t bytes;
};

/* Run passes over all records in batches of k; fills t. */
static void run_case(struct bench *b, int use_aio, int mode, size_t k,
		     int passes, struct times *t)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(b->dir, mode == DIRECT, &err);
	rfb_batch_reader *r = v ? rfb_batch_reader_new(v, k, &err) : NULL;
	uint32_t *order = malloc(b->n * sizeof *order), align = 0;
	int bad = 0;

	if (!r || !order)
		die(b->dir, &err);
	memset(t, 0, sizeof *t);
	if (mode == DIRECT) {   /* pread reads the reader's aligned windows */
		struct rfb_batch_stats st;
		double p1, p2, calls;
		bad += aio_batch(b, r, b->samples, b->n < k ? b->n : k, &p1, &p2, &calls);
		rfb_batch_reader_get_stats(r, &st);
		align = st.align;
	}
	for (int p = -1; p < passes; p++) {     /* pass -1: warm-up */
		memcpy(order, b->samples, b->n * sizeof *order);
		shuffle(order, b->n, (uint32_t)(p + 2) * 7919u + (uint32_t)k);
		if (mode == COLD)
			drop_cache(v, b);
		for (size_t i = 0; i + k <= b->n; i += k) {
			double t0 = bench_now_us(), p1 = 0, p2 = 0, calls = 0;
			if (use_aio)
				bad += aio_batch(b, r, order + i, k, &p1, &p2, &calls);
			else
				bad += pread_batch(b, v, order + i, k, align, &p1);
			double dt = bench_now_us() - t0;
			if (p < 0 || t->n == MAX_TIMES)
				continue;
			t->total[t->n] = dt;
			t->part1[t->n] = p1;
			t->part2[t->n] = use_aio ? p2 : dt - p1;
			t->part3[t->n] = use_aio ? dt - p1 - p2 : 0;
			t->calls += calls;
			for (size_t j = 0; j < k; j++)
				t->bytes += b->addr[order[i + j]].length;
			t->n++;
		}
	}
	if (bad)
		fprintf(stderr, "bench_aio: %d bad records!\n", bad);
	if (mode == DIRECT && rfb_batch_reader_mode(r) != RFB_BATCH_DIRECT)
		fprintf(stderr, "bench_aio: O_DIRECT refused, read buffered\n");
	free(order);
	rfb_batch_reader_free(r);
	rfb_cache_view_close(v);
}

static void print_row(int use_aio, int mode, size_t k, struct times *t)
{
	double mb = (double)t->bytes / (double)t->n / 1e6, calls = t->calls / (double)t->n;
	double tot = bench_median(t->total, t->n), p1 = bench_median(t->part1, t->n);
	double p2 = bench_median(t->part2, t->n), p3 = bench_median(t->part3, t->n);

	printf("%-13s  %5s  %5zu  %9.2f  %8.0f  ", mode_name[mode],
	       use_aio ? "aio" : "pread", k, tot / 1e3, mb / (tot / 1e6));
	if (use_aio)
		printf("%5.2f  submit %7.2f  wait %7.2f  check %6.2f\n", calls,
		       p1 / 1e3, p2 / 1e3, p3 / 1e3);
	else
		printf("%5s  read   %7.2f  check %6.2f\n", "-", p1 / 1e3, p2 / 1e3);
	fflush(stdout);
}

static int bench(const char *dir, int passes)
{
	static struct times t;
	struct bench b = { dir, NULL, NULL, 0, NULL, 0 };
	rfb_err err = { 0 };
	size_t ks[2] = { 64, 256 };
	void *p;

	b.addr = calloc(MAX_SAMPLES, sizeof *b.addr);
	b.samples = calloc(MAX_SAMPLES, sizeof *b.samples);
	b.buf_cap = (size_t)256 * (256 << 10);
	if (!b.addr || !b.samples || posix_memalign(&p, 4096, b.buf_cap))
		return 1;
	b.buf = p;
	if (rfb_cache_read_checkpoint(dir, on_entry, &b, NULL, &err))
		die(dir, &err);
	printf("%zu records; medians over full batches of %d passes "
	       "(ms per batch; parts are medians too)\n", b.n, passes);
	printf("%-13s  %5s  %5s  %9s  %8s  %5s  %s\n", "mode", "how", "batch",
	       "ms/batch", "MB/s", "subm", "parts (ms)");
	for (int mode = WARM; mode <= DIRECT; mode++)
		for (int ki = 0; ki < 2; ki++)
			for (int use_aio = 1; use_aio >= 0; use_aio--) {
				run_case(&b, use_aio, mode, ks[ki], passes, &t);
				print_row(use_aio, mode, ks[ki], &t);
			}
	free(b.buf);
	free(b.addr);
	free(b.samples);
	return 0;
}

int main(int argc, char **argv)
{
	int passes = 5;

	if (argc == 4 && strcmp(argv[1], "--make") == 0)
		return make_cache(argv[2], (uint32_t)atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "-p") == 0)
		passes = atoi(argv[2]), argv += 2, argc -= 2;
	if (argc != 2 || passes < 1) {
		fprintf(stderr, "usage: bench_aio --make DIR N | bench_aio "
			"[-p PASSES] DIR\n");
		return 2;
	}
	return bench(argv[1], passes);
}
