/*
 * bench_stream.c - what writing and reading a batch of the batch stream
 * costs, next to what moving the same bytes costs anyway.
 *
 *   bench_stream [-r RUNS] [-b BATCH] [-s SIDE] [-f]
 *
 * One batch of BATCH x SIDE x SIDE x 3 (default 256 x 224, uint8; -f:
 * float32), median milliseconds over RUNS (default 15) after a warm-up:
 *   memcpy         copy the pixels once (memory bandwidth)
 *   crc32c         checksum the pixels (rfb_crc32c)
 *   write /dev/null  rfb_stream_write_batch to /dev/null (CRC + framing)
 *   write pipe     rfb_stream_write_batch into a pipe a child drains
 *   raw pipe       plain write() of the same bytes into that pipe
 *   read pipe      rfb_stream_next of a batch from a pipe a child fills
 * Single thread on this side (the child runs on another core when there
 * is one).  Not a test: it prints numbers and asserts nothing.
 */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "refurb/checksum.h"
#include "refurb/io.h"
#include "refurb/stream.h"
#include "bench.h"

#define MAX_RUNS 101

static const char *const names[] = { "a", "b" };

static void die(const char *what, const rfb_err *err)
{
	fprintf(stderr, "bench_stream: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

struct bench {
	struct rfb_stream_info info;
	struct rfb_stream_batch b;
	unsigned char *px, *copy;
	uint32_t *labels, *ids;
	int runs;
};

/* A child that reads the pipe fds[0] to the end and exits. */
static pid_t drain(const int fds[2], size_t chunk)
{
	pid_t pid = fork();

	if (pid == 0) {
		char *buf = malloc(chunk);
		int fd = fds[0];
		close(fds[1]);
		while (read(fd, buf, chunk) > 0)
			;
		_exit(0);
	}
	return pid;
}

static void bench_memory(struct bench *B)
{
	double t[MAX_RUNS];
	uint32_t crc = 0;

	for (int i = -1; i < B->runs; i++) {
		double t0 = bench_now_ms();
		memcpy(B->copy, B->px, B->b.pixel_bytes);
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	printf("  memcpy            %8.2f ms\n", bench_median(t, B->runs));
	for (int i = -1; i < B->runs; i++) {
		double t0 = bench_now_ms();
		crc = rfb_crc32c(0, B->px, B->b.pixel_bytes);
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	printf("  crc32c            %8.2f ms   (%08x)\n", bench_median(t, B->runs), crc);
}

/* rfb_stream_write_batch of runs+1 batches to fd: median ms. */
static double time_writes(struct bench *B, int fd)
{
	double t[MAX_RUNS];
	rfb_err err = { 0 };
	rfb_stream_writer *w = rfb_stream_writer_new(fd, "bench", &err);

	if (!w || rfb_stream_write_header(w, &B->info, &err))
		die("header", &err);
	for (int i = -1; i < B->runs; i++) {
		B->b.step = (uint32_t)(i + 1);
		B->b.global_step = (uint64_t)(i + 1);
		double t0 = bench_now_ms();
		if (rfb_stream_write_batch(w, &B->b, &err))
			die("write", &err);
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	rfb_stream_writer_free(w);
	return bench_median(t, B->runs);
}

static void bench_write(struct bench *B)
{
	double t[MAX_RUNS];
	int null = open("/dev/null", O_WRONLY), fds[2];

	printf("  write /dev/null   %8.2f ms\n", time_writes(B, null));
	close(null);
	if (pipe(fds))
		die("pipe", NULL);
	fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	pid_t pid = drain(fds, 1 << 20);
	close(fds[0]);
	printf("  write pipe        %8.2f ms\n", time_writes(B, fds[1]));
	for (int i = -1; i < B->runs; i++) {
		double t0 = bench_now_ms();
		if (rfb_write_full(fds[1], B->px, B->b.pixel_bytes))
			die("write", NULL);
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	printf("  raw pipe          %8.2f ms\n", bench_median(t, B->runs));
	close(fds[1]);
	waitpid(pid, NULL, 0);
}

/* A child writes a stream of runs+1 batches (plus as many raw bytes) to
 * a pipe; time rfb_stream_next and read() of each. */
static void bench_read(struct bench *B)
{
	double t[MAX_RUNS];
	struct rfb_stream_frame f;
	rfb_err err = { 0 };
	int fds[2];

	if (pipe(fds))
		die("pipe", NULL);
	fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		time_writes(B, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	rfb_stream_reader *r = rfb_stream_reader_new_fd(fds[0], "pipe", NULL,
							&err);
	if (rfb_stream_next(r, &f, &err) != 1)
		die("read header", &err);
	for (int i = -1; i < B->runs; i++) {
		double t0 = bench_now_ms();
		if (rfb_stream_next(r, &f, &err) != 1)
			die("read", &err);
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	printf("  read pipe         %8.2f ms\n", bench_median(t, B->runs));
	rfb_stream_reader_free(r);
	close(fds[0]);
	waitpid(pid, NULL, 0);
}

static void setup(struct bench *B, uint32_t batch, uint32_t side, int f32)
{
	struct rfb_stream_info *in = &B->info;

	memset(in, 0, sizeof *in);
	in->dtype = f32 ? RFB_STREAM_F32 : RFB_STREAM_U8;
	in->layout = f32 ? RFB_STREAM_NCHW : RFB_STREAM_NHWC;
	in->height = in->width = side;
	in->channels = 3;
	in->batch_size = batch;
	in->class_count = 2;
	in->class_names = names;
	in->last_epoch = 0;
	in->shard_n = 1;
	B->labels = calloc(batch, sizeof *B->labels);
	B->ids = calloc(batch, sizeof *B->ids);
	size_t bytes = batch * rfb_stream_image_bytes(in);
	B->px = malloc(bytes);
	B->copy = malloc(bytes);
	if (!B->labels || !B->ids || !B->px || !B->copy)
		die("out of memory", NULL);
	for (size_t i = 0; i < bytes; i++)
		B->px[i] = (unsigned char)(i * 2654435761u >> 13);
	memset(B->copy, 1, bytes);
	B->b = (struct rfb_stream_batch){ .n = batch, .labels = B->labels,
					  .ids = B->ids, .pixels = B->px,
					  .pixel_bytes = bytes };
}

int main(int argc, char **argv)
{
	struct bench B = { .runs = 15 };
	uint32_t batch = 256, side = 224;
	int f32 = 0, opt;

	while ((opt = getopt(argc, argv, "r:b:s:f")) != -1) {
		switch (opt) {
		case 'r': B.runs = atoi(optarg); break;
		case 'b': batch = (uint32_t)atoi(optarg); break;
		case 's': side = (uint32_t)atoi(optarg); break;
		case 'f': f32 = 1; break;
		default:
			fprintf(stderr, "usage: bench_stream [-r RUNS] [-b BATCH] "
				"[-s SIDE] [-f]\n");
			return 2;
		}
	}
	if (B.runs < 1 || B.runs > MAX_RUNS - 1 || !batch || !side)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	setup(&B, batch, side, f32);
	printf("bench_stream: batch %u x %u x %u x 3 %s = %.1f MB, median of %d\n",
	       batch, side, side, f32 ? "float32" : "uint8",
	       B.b.pixel_bytes / 1e6, B.runs);
	bench_memory(&B);
	bench_write(&B);
	bench_read(&B);
	return 0;
}
