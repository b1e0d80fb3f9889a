/*
 * stream_digest.c - one line per batch of a batch stream, with a 64-bit
 * hash of its content, so that the fault tests (tests/faults.bats) can
 * compare the batches of a killed, resumed or stressed run with those of
 * an uninterrupted one without caring about frame numbers or where the
 * stream started.
 *
 *   stream_digest [-s USEC] [FILE]   (default: stdin)
 *
 * -s USEC sleeps USEC microseconds after every frame: a slow trainer, so
 * that the writer and everything upstream run ahead of the reader.
 *
 * Output, one line per frame the library reads:
 *
 *   B EPOCH STEP GLOBAL N HASH    a batch: HASH covers its labels, sample
 *                                 ids and pixel data (16 hex digits)
 *   E EPOCH BATCHES IMAGES        an epoch's end
 *   END BATCHES IMAGES            the END frame
 *
 * Every frame is checked by the library's reader (checksums, sequence).
 * Exit status: 0 for a stream that ended cleanly, 1 for one that is cut
 * short or bad (the complete frames before the problem are printed, the
 * problem goes to stderr as "stream_digest: NAME: reason"), 2 for a usage
 * error.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/stream.h"

/* The hash of a batch: labels and ids as little-endian u32, then pixels. */
static uint64_t batch_hash(const struct rfb_stream_batch *b)
{
	uint64_t h = rfb_hash64(b->pixels, b->pixel_bytes, b->n);
	unsigned char v[4];

	for (uint32_t i = 0; i < b->n; i++) {
		rfb_put_le32(v, b->labels[i]);
		h = rfb_hash64(v, sizeof v, h);
		rfb_put_le32(v, b->ids[i]);
		h = rfb_hash64(v, sizeof v, h);
	}
	return h;
}

static void print_frame(const struct rfb_stream_frame *f)
{
	switch (f->type) {
	case RFB_FRAME_BATCH:
		printf("B %u %u %" PRIu64 " %u %016" PRIx64 "\n", f->batch.epoch,
		       f->batch.step, f->batch.global_step, f->batch.n,
		       batch_hash(&f->batch));
		break;
	case RFB_FRAME_EPOCH_END:
		printf("E %u %u %" PRIu64 "\n", f->epoch_end.epoch,
		       f->epoch_end.batches, f->epoch_end.images);
		break;
	case RFB_FRAME_END:
		printf("END %" PRIu64 " %" PRIu64 "\n", f->end.batches,
		       f->end.images);
		break;
	default:
		break;
	}
}

int main(int argc, char **argv)
{
	const char *name = "(stdin)";
	struct rfb_stream_frame f;
	rfb_stream_reader *r;
	rfb_err err = { 0 };
	char text[1100];
	unsigned long delay_us = 0;
	int fd = STDIN_FILENO, rc, opt;

	while ((opt = getopt(argc, argv, "s:")) != -1) {
		if (opt != 's')
			goto usage;
		delay_us = strtoul(optarg, NULL, 10);
	}
	if (argc - optind > 1)
		goto usage;
	if (optind < argc && strcmp(argv[optind], "-") != 0) {
		name = argv[optind];
		if ((fd = open(name, O_RDONLY | O_CLOEXEC)) < 0) {
			perror(name);
			return 1;
		}
	}
	if (!(r = rfb_stream_reader_new_fd(fd, name, NULL, &err))) {
		fprintf(stderr, "stream_digest: %s\n",
			rfb_err_text(&err, text, sizeof text));
		return 1;
	}
	while ((rc = rfb_stream_next(r, &f, &err)) > 0) {
		print_frame(&f);
		if (delay_us)
			usleep((useconds_t)delay_us);
	}
	if (rc < 0)
		fprintf(stderr, "stream_digest: %s\n",
			rfb_err_text(&err, text, sizeof text));
	rfb_stream_reader_free(r);
	if (fd != STDIN_FILENO)
		close(fd);
	return fflush(stdout) == 0 && rc == 0 ? 0 : 1;
usage:
	fprintf(stderr, "usage: stream_digest [-s USEC] [FILE]\n");
	return 2;
}
