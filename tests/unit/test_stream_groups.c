/*
 * test_stream_groups.c - view groups of a version 3 batch stream: a round
 * trip of groups of two sizes (each group's images where the reader says,
 * padded to 64 bytes), the documented bytes of the VIEW_GROUPS frame,
 * every corrupted byte detected, a writer that refuses bad group tables,
 * and a reader that refuses a version 3 stream without its VIEW_GROUPS
 * frame.
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/stream.h"
#include "test.h"

static const char *const names2[] = { "a", "b" };

#define BATCH 4
#define SAMPLES 6     /* batches of 4 and 2 */

/* Two groups: 2 views of 4x3 and 3 views of 2x2, RGB uint8. */
static void groups_info(struct rfb_stream_info *in)
{
	memset(in, 0, sizeof *in);
	in->dtype = RFB_STREAM_U8;
	in->layout = RFB_STREAM_NHWC;
	in->height = 4;
	in->width = 3;
	in->channels = 3;
	in->views = 5;
	in->groups = 2;
	in->group[0] = (struct rfb_stream_group){ 2, 4, 3 };
	in->group[1] = (struct rfb_stream_group){ 3, 2, 2 };
	in->batch_size = BATCH;
	in->class_count = 2;
	in->class_names = names2;
	in->first_epoch = in->last_epoch = 0;
	in->shard_n = 1;
	in->epoch_images = SAMPLES;
	in->final_pipeline = "a;a;b;b;b";
}

/* Byte k of group g's images of sample id. */
static unsigned char px(uint32_t id, uint32_t g, size_t k)
{
	return (unsigned char)(id * 31 + g * 101 + k * 7);
}

static size_t write_groups(unsigned char *out, size_t cap)
{
	struct rfb_stream_info in;
	rfb_err err = { 0 };
	int fds[2];
	size_t len = 0;
	ssize_t got;

	groups_info(&in);
	if (pipe(fds))
		return 0;
	rfb_stream_writer *w = rfb_stream_writer_new(fds[1], "t", &err);
	CHECK(w && rfb_stream_write_header(w, &in, &err) == 0);
	for (uint32_t k = 0, step = 0; k < SAMPLES; k += BATCH, step++) {
		uint32_t n = SAMPLES - k < BATCH ? SAMPLES - k : BATCH;
		uint32_t labels[BATCH], ids[BATCH];
		unsigned char g0[BATCH * 72], g1[BATCH * 36];
		for (uint32_t j = 0; j < n; j++) {
			ids[j] = k + j;
			labels[j] = (k + j) % 2;
			for (size_t b = 0; b < 72; b++)
				g0[j * 72 + b] = px(ids[j], 0, b);
			for (size_t b = 0; b < 36; b++)
				g1[j * 36 + b] = px(ids[j], 1, b);
		}
		struct rfb_stream_batch b = { 0, step, step, n, labels, ids, NULL, 0,
					      0, { g0, g1 } };
		CHECKF(rfb_stream_write_batch(w, &b, &err) == 0, "%s", err.msg);
	}
	CHECK(rfb_stream_write_epoch_end(w, 0, &err) == 0);
	CHECK(rfb_stream_write_end(w, &err) == 0);
	rfb_stream_writer_free(w);
	close(fds[1]);
	while ((got = read(fds[0], out + len, cap - len)) > 0)
		len += (size_t)got;
	close(fds[0]);
	return len;
}

static int read_all(const unsigned char *d, size_t len, rfb_err *err)
{
	rfb_stream_reader *r = rfb_stream_reader_new_mem(d, len, "m", NULL, err);
	struct rfb_stream_frame f;
	int rc;

	while ((rc = rfb_stream_next(r, &f, err)) == 1)
		;
	rfb_stream_reader_free(r);
	return rc;
}

static unsigned char stream[16384];

static void test_roundtrip(void)
{
	size_t len = write_groups(stream, sizeof stream);
	rfb_err err = { 0 };
	rfb_stream_reader *r = rfb_stream_reader_new_mem(stream, len, "m", NULL, &err);
	struct rfb_stream_frame f;
	int batches = 0;

	CHECK(rfb_stream_next(r, &f, &err) == 1 && f.type == RFB_FRAME_HEADER);
	CHECK(rfb_stream_next(r, &f, &err) == 1 && f.type == RFB_FRAME_VIEW_GROUPS);
	CHECK(f.info->groups == 2 && f.info->views == 5);
	CHECK(f.info->group[1].views == 3 && f.info->group[1].height == 2 &&
	      f.info->group[1].width == 2);
	CHECK(rfb_stream_info_version(f.info) == 3);
	CHECK(rfb_stream_sample_bytes(f.info) == 72 + 36);
	/* group 1 starts after group 0's 4 x 72 bytes, padded to 320 */
	CHECK(rfb_stream_group_offset(f.info, 4, 1) == 320);
	CHECK(rfb_stream_pixel_bytes(f.info, 4) == 320 + 192);
	while (rfb_stream_next(r, &f, &err) == 1) {
		if (f.type != RFB_FRAME_BATCH)
			continue;
		const unsigned char *g0 = f.batch.group_pixels[0];
		const unsigned char *g1 = f.batch.group_pixels[1];
		for (uint32_t j = 0; j < f.batch.n; j++) {
			for (size_t b = 0; b < 72; b++)
				CHECK(g0[j * 72 + b] == px(f.batch.ids[j], 0, b));
			for (size_t b = 0; b < 36; b++)
				CHECK(g1[j * 36 + b] == px(f.batch.ids[j], 1, b));
		}
		CHECK(g0 == f.batch.pixels);
		batches++;
	}
	CHECKF(err.code == 0, "%s", err.msg);
	CHECK(batches == 2);
	rfb_stream_reader_free(r);
}

/* The VIEW_GROUPS frame as refurb-stream(5) lays it out. */
static void test_layout(void)
{
	size_t len = write_groups(stream, sizeof stream);
	size_t at = 64 + rfb_get_le64(stream + 16);

	at = (at + 63) / 64 * 64;
	CHECK(len > at + 64);
	CHECK(stream[7] == 3 && stream[at + 7] == 3);
	CHECK(rfb_get_le32(stream + at + 8) == RFB_FRAME_VIEW_GROUPS);
	CHECK(rfb_get_le32(stream + at + 12) == RFB_FRAME_CRITICAL);
	CHECK(rfb_get_le64(stream + at + 16) == 8 + 2 * 16);
	CHECK(rfb_get_le64(stream + at + 24) == 1);
	const unsigned char *p = stream + at + 64;
	CHECK(rfb_get_le32(p) == 2 && rfb_get_le32(p + 4) == 0);
	CHECK(rfb_get_le32(p + 8) == 2 && rfb_get_le32(p + 12) == 4 &&
	      rfb_get_le32(p + 16) == 3 && rfb_get_le32(p + 20) == 0);
	CHECK(rfb_get_le32(p + 24) == 3 && rfb_get_le32(p + 28) == 2 &&
	      rfb_get_le32(p + 32) == 2);
	/* the HEADER payload says version 3 and 5 views */
	CHECK(rfb_get_le32(stream + 64) == 3 && rfb_get_le32(stream + 64 + 120) == 5);
}

static void test_every_corrupted_byte(void)
{
	size_t len = write_groups(stream, sizeof stream);
	rfb_err err;
	int missed = 0;

	for (size_t i = 0; i < len; i++) {
		stream[i] ^= 0x41;
		memset(&err, 0, sizeof err);
		if (read_all(stream, len, &err) >= 0)
			missed++;
		stream[i] ^= 0x41;
	}
	CHECKF(missed == 0, "%d corrupted bytes read as a valid stream", missed);
}

/* Frame 1 (VIEW_GROUPS) cut out, the later frames renumbered. */
static void test_groups_missing(void)
{
	size_t len = write_groups(stream, sizeof stream);
	size_t one = (64 + rfb_get_le64(stream + 16) + 63) / 64 * 64, two = one + 128;
	rfb_err err = { 0 };

	memmove(stream + one, stream + two, len - two);
	len -= two - one;
	for (size_t at = one; at < len;) {
		unsigned char *h = stream + at;
		rfb_put_le64(h + 24, rfb_get_le64(h + 24) - 1);
		rfb_put_le32(h + 60, rfb_crc32c(0, h, 60));
		at += (64 + rfb_get_le64(h + 16) + 63) / 64 * 64;
	}
	CHECK(read_all(stream, len, &err) == RFB_EFORMAT);
	CHECKF(strstr(err.msg, "frame 1 at byte 256: frame type 2 where the VIEW_GROUPS frame belongs"),
	       "%s", err.msg);
}

static int header_refused(struct rfb_stream_info *in, const char *want)
{
	rfb_err err = { 0 };
	int fd = open("/dev/null", O_WRONLY), rc;
	rfb_stream_writer *w = rfb_stream_writer_new(fd, "t", &err);

	rc = rfb_stream_write_header(w, in, &err);
	rfb_stream_writer_free(w);
	close(fd);
	if (rc == 0 || !strstr(err.msg, want))
		printf("# got %d: %s\n", rc, err.msg);
	return rc != 0 && strstr(err.msg, want) != NULL;
}

static void test_writer_refuses(void)
{
	struct rfb_stream_info in;

	groups_info(&in);
	in.views = 6;
	CHECK(header_refused(&in, "view groups of 5 views in all, the HEADER says 6"));
	groups_info(&in);
	in.group[0].height = 5;
	CHECK(header_refused(&in, "view group 0 of 5x3, the HEADER says 4x3"));
	groups_info(&in);
	in.group[1].views = 0;
	CHECK(header_refused(&in, "view group 1 has 0 views"));
	groups_info(&in);
	in.groups = 9;
	CHECK(header_refused(&in, "9 view groups (2 to 8)"));
}

int main(void)
{
	RUN(test_roundtrip);
	RUN(test_layout);
	RUN(test_every_corrupted_byte);
	RUN(test_groups_missing);
	RUN(test_writer_refuses);
	return test_done();
}
