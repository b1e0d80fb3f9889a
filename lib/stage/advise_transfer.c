/*
 * advise_transfer.c - what refurb-advise charges for moving a sample from
 * refurb-final to the trainer: the batch stream's copy into a frame, its
 * checksum, the pipe and the reader's copy and check, timed on this
 * machine (advise_internal.h).
 */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/checksum.h"
#include "refurb/io.h"
#include "refurb/progress.h"
#include "advise_internal.h"

struct drain {
	int fd;
	size_t chunk;
	double cpu;
};

/* The reading end: each frame into a fresh buffer (as the Python reader
 * does), its checksum checked. */
static void *drain_pipe(void *arg)
{
	struct drain *d = arg;
	double c0 = rfb_thread_cpu_now();
	uint32_t crc = 0;

	for (;;) {
		unsigned char *buf = malloc(d->chunk);
		ssize_t got;
		if (!buf)
			break;
		got = rfb_read_full(d->fd, buf, d->chunk);
		if (got > 0)
			crc ^= rfb_crc32c(0, buf, (size_t)got);
		free(buf);
		if (got <= 0)
			break;
	}
	d->cpu = rfb_thread_cpu_now() - c0 + (crc == 1) * 1e-12;
	return NULL;
}

/* CPU seconds (both ends) to pass one image of bytes through the batch
 * stream: copied into a frame, checksummed, written to a pipe, read
 * into a fresh buffer, checksummed again. */
double rfbi_advise_time_transfer(size_t bytes)
{
	enum { FRAME = 64 };
	size_t chunk = bytes * FRAME, rounds = 8;
	unsigned char *src = calloc(1, bytes), *frame = calloc(1, chunk);
	struct drain d = { -1, chunk, 0 };
	pthread_t th;
	int fds[2];
	double c0, cpu = NAN;
	uint32_t crc = 0;

	if (!src || !frame || pipe(fds) < 0)
		goto out;
	d.fd = fds[0];
	(void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	if (pthread_create(&th, NULL, drain_pipe, &d)) {
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	c0 = rfb_thread_cpu_now();
	for (size_t r = 0; r < rounds; r++) {
		for (size_t i = 0; i < FRAME; i++)
			memcpy(frame + i * bytes, src, bytes);
		crc ^= rfb_crc32c(0, frame, chunk);
		if (rfb_write_full(fds[1], frame, chunk) < 0)
			break;
	}
	cpu = rfb_thread_cpu_now() - c0 + (crc == 1) * 1e-12;
	close(fds[1]);
	pthread_join(th, NULL);
	close(fds[0]);
	cpu = (cpu + d.cpu) / (double)(rounds * FRAME);
out:
	free(src);
	free(frame);
	return cpu;
}
