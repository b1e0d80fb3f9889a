/*
 * fuzz_stream.c - the batch stream reader (refurb-stream(5)) on any
 * bytes, every frame's three checksums repaired first: from memory
 * (rfb_stream_reader_new_mem) with the default limits, from a memfd
 * (rfb_stream_reader_new_fd: its own buffering) with the same limits,
 * and from memory again with tiny limits.  Both readers must agree frame
 * by frame and end with the same code; every frame must be what the
 * reader promises (batches of the HEADER's shape, labels below K, n
 * within the batch size, pixel bytes n times an image's).
 */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "refurb/stream.h"

/* Walk the frames by their lengths, repairing head, payload and
 * frame-header CRCs. */
static void stream_fix(unsigned char *d, size_t len)
{
	size_t off = 0;

	/* off may pass len by the padding of a frame cut short */
	while (off <= len && len - off >= RFB_STREAM_FRAME_HEADER) {
		unsigned char *h = d + off;
		uint64_t p = rfb_get_le64(h + 16), q = rfb_get_le32(h + 32);
		size_t room = len - off - RFB_STREAM_FRAME_HEADER;

		if (p <= room) {
			const unsigned char *pl = h + RFB_STREAM_FRAME_HEADER;
			if (q <= p)
				rfb_put_le32(h + 36, rfb_crc32c(0, pl, q));
			rfb_put_le32(h + 40, rfb_crc32c(0, pl, p));
		}
		rfb_put_le32(h + 60, rfb_crc32c(0, h, 60));
		if (p > room)
			break;
		off += RFB_STREAM_FRAME_HEADER + p + (64 - p % 64) % 64;
	}
}

struct frame_summary {
	int type;
	uint64_t seq, offset;
	uint32_t epoch, n;
};

static void stream_check_frame(const rfb_stream_reader *r,
			       const struct rfb_stream_frame *f)
{
	const struct rfb_stream_info *info = rfb_stream_reader_info(r);

	FUZZ_ASSERT(info != NULL);
	if (f->type == RFB_FRAME_HEADER) {
		FUZZ_ASSERT(f->info == info && f->seq == 0);
		FUZZ_ASSERT(info->channels == 1 || info->channels == 3);
		for (uint32_t k = 0; k < info->class_count; k++)
			FUZZ_ASSERT(strlen(info->class_names[k]) <=
				    RFB_STREAM_MAX_NAME);
	} else if (f->type == RFB_FRAME_VIEW_GROUPS) {
		FUZZ_ASSERT(f->seq == 1 && info->groups >= 2 &&
			    info->groups <= RFB_STREAM_MAX_GROUPS);
	} else if (f->type == RFB_FRAME_BATCH) {
		const struct rfb_stream_batch *b = &f->batch;
		FUZZ_ASSERT(b->n >= 1 && b->n <= info->batch_size);
		FUZZ_ASSERT(b->pixel_bytes ==
			    rfb_stream_pixel_bytes(info, b->n));
		/* version 3: each view group's images inside the pixels */
		for (uint32_t g = 0; g < info->groups; g++)
			FUZZ_ASSERT((const unsigned char *)b->group_pixels[g] +
				    (size_t)b->n * rfb_stream_group_bytes(info, g) <=
				    (const unsigned char *)b->pixels + b->pixel_bytes);
		uint64_t sum = 0;
		for (uint32_t i = 0; i < b->n; i++) {
			FUZZ_ASSERT(b->labels[i] < info->class_count);
			sum += b->ids[i];
		}
		/* every id and pixel byte is readable (ASan checks) */
		sum += rfb_crc32c(0, b->pixels, b->pixel_bytes);
		FUZZ_ASSERT(sum != UINT64_MAX);
	}
}

/* Read r to its end; the frames go to out (up to cap), *count = how
 * many.  Returns the final code (0 or negative). */
static int stream_read(rfb_stream_reader *r, struct frame_summary *out,
		       size_t cap, size_t *count)
{
	struct rfb_stream_frame f;
	rfb_err err = { 0 };
	int rc;

	*count = 0;
	while ((rc = rfb_stream_next(r, &f, &err)) == 1) {
		stream_check_frame(r, &f);
		if (*count < cap) {
			struct frame_summary *s = &out[*count];
			s->type = f.type;
			s->seq = f.seq;
			s->offset = f.offset;
			s->epoch = f.type == RFB_FRAME_BATCH ? f.batch.epoch : 0;
			s->n = f.type == RFB_FRAME_BATCH ? f.batch.n : 0;
		}
		(*count)++;
	}
	if (rc < 0)
		FUZZ_REJECTED(&err, rc);
	else
		FUZZ_ASSERT(rc == 0);
	FUZZ_ASSERT(rfb_stream_next(r, &f, &err) == (rc < 0 ? rc : 0));
	return rc;
}

static rfb_stream_reader *stream_fd_reader(const unsigned char *d, size_t len,
					   int *fd)
{
	rfb_err err = { 0 };
	rfb_stream_reader *r;

	*fd = memfd_create("fuzz-stream", MFD_CLOEXEC);
	FUZZ_ASSERT(*fd >= 0);
	FUZZ_ASSERT(len == 0 || write(*fd, d, len) == (ssize_t)len);
	FUZZ_ASSERT(lseek(*fd, 0, SEEK_SET) == 0);
	r = rfb_stream_reader_new_fd(*fd, "fuzz", NULL, &err);
	FUZZ_ASSERT(r != NULL);
	return r;
}

FUZZ_TARGET(stream)
{
	enum { CAP = 64 };
	struct frame_summary a[CAP], b[CAP];
	struct rfb_stream_limits tiny;
	unsigned char *d = fuzz_copy(data, size);
	rfb_stream_reader *r;
	rfb_err err = { 0 };
	size_t na, nb;
	int ra, rb, fd;

	stream_fix(d, size);
	FUZZ_ASSERT((r = rfb_stream_reader_new_mem(d, size, "fuzz", NULL,
						   &err)) != NULL);
	ra = stream_read(r, a, CAP, &na);
	rfb_stream_reader_free(r);

	r = stream_fd_reader(d, size, &fd);
	rb = stream_read(r, b, CAP, &nb);
	rfb_stream_reader_free(r);
	close(fd);
	FUZZ_ASSERT(ra == rb && na == nb);
	for (size_t i = 0; i < na && i < CAP; i++)
		FUZZ_ASSERT(a[i].type == b[i].type && a[i].seq == b[i].seq &&
			    a[i].offset == b[i].offset &&
			    a[i].epoch == b[i].epoch && a[i].n == b[i].n);

	rfb_stream_limits_default(&tiny);
	tiny.max_payload = 512;
	tiny.max_classes = 2;
	tiny.max_batch = 2;
	tiny.max_side = 4;
	tiny.max_pixels = 12;
	tiny.max_text = 16;
	FUZZ_ASSERT((r = rfb_stream_reader_new_mem(d, size, "fuzz", &tiny,
						   &err)) != NULL);
	(void)stream_read(r, b, CAP, &nb);
	rfb_stream_reader_free(r);
	free(d);
	return ra == 0;
}
