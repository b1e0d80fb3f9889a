/*
 * test_stream.c - the batch stream: round trips of every frame type in
 * every dtype and layout, from memory and through a pipe; every
 * truncation point and every corrupted byte of a small stream detected;
 * unknown frames skipped (critical ones refused); limits enforced before
 * allocation; the sequence rules on both sides; EPIPE.
 *
 * Frames that the writer refuses to produce are built here by hand from
 * refurb-stream(5), which also checks the documented layout.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/stream.h"
#include "test.h"

static const char *const names3[] = { "cat", "dog", "" };

/* What test streams contain. */
struct spec {
	enum rfb_stream_dtype dtype;
	enum rfb_stream_layout layout;
	uint32_t h, w, c, batch, classes;
	uint32_t first_epoch, last_epoch, first_step;
	uint32_t epoch_images;   /* images of a full epoch */
	int unknown;             /* an extension frame after the first batch */
	int end;                 /* write the END frame */
};

static const struct spec small = {
	RFB_STREAM_U8, RFB_STREAM_NHWC, 3, 2, 3, 4, 3, 0, 1, 0, 10, 1, 1
};

static void spec_info(const struct spec *s, struct rfb_stream_info *in)
{
	memset(in, 0, sizeof *in);
	in->dtype = s->dtype;
	in->layout = s->layout;
	in->height = s->h;
	in->width = s->w;
	in->channels = s->c;
	in->batch_size = s->batch;
	in->class_count = s->classes;
	in->class_names = names3;
	in->first_epoch = s->first_epoch;
	in->last_epoch = s->last_epoch;
	in->first_step = s->first_step;
	in->shard_k = 1;
	in->shard_n = 2;
	in->epoch_images = s->epoch_images;
	in->plan_seed = 0x1122334455667788ULL;
	in->augment_seed = 7;
	in->index_identity = 0xfedcba9876543210ULL;
	in->normalized = s->dtype == RFB_STREAM_F32;
	for (int c = 0; c < 3; c++) {
		in->mean[c] = 0.485f + 0.01f * c;
		in->std[c] = 0.229f + 0.01f * c;
	}
	in->partial_pipeline = "resize=256,randaug=n=2:m=9";
	in->final_pipeline = "crop=224,flip";
	in->extra = "writer=test\n";
}

static uint32_t sample_id(uint32_t epoch, uint32_t pos)
{
	return epoch * 1000 + pos * 7 % 1000;
}

/* The pixel data of image id: nb bytes. */
static void fill_image(const struct spec *s, uint32_t id, unsigned char *p,
		       size_t nb)
{
	if (s->dtype == RFB_STREAM_U8) {
		for (size_t i = 0; i < nb; i++)
			p[i] = (unsigned char)(id * 31 + i * 7);
		return;
	}
	for (size_t i = 0; i < nb / 4; i++)
		rfb_put_lef32(p + 4 * i, (float)(id % 100) + 0.25f * (float)i);
}

/* Write the stream of s to fd; returns 0 or the first error. */
static int write_spec(const struct spec *s, int fd)
{
	struct rfb_stream_info in;
	rfb_err err = { 0 };
	rfb_stream_writer *w = rfb_stream_writer_new(fd, "test", &err);
	size_t img;
	int rc;

	spec_info(s, &in);
	img = rfb_stream_image_bytes(&in);
	uint32_t labels[64], ids[64];
	unsigned char *px = malloc(img * s->batch);
	uint64_t global = 100;
	if ((rc = rfb_stream_write_header(w, &in, &err)))
		goto out;
	for (uint32_t e = s->first_epoch; e <= s->last_epoch; e++) {
		uint32_t start = e == s->first_epoch ? s->first_step : 0;
		for (uint32_t k = start * s->batch, step = start;
		     k < s->epoch_images; k += s->batch, step++) {
			uint32_t n = s->epoch_images - k < s->batch
				     ? s->epoch_images - k : s->batch;
			for (uint32_t j = 0; j < n; j++) {
				ids[j] = sample_id(e, k + j);
				labels[j] = ids[j] % s->classes;
				fill_image(s, ids[j], px + j * img, img);
			}
			struct rfb_stream_batch b = { e, step, global++, n,
				labels, ids, px, n * img, 0 };
			if ((rc = rfb_stream_write_batch(w, &b, &err)))
				goto out;
			if (s->unknown && e == s->first_epoch && step == start &&
			    (rc = rfb_stream_write_frame(w, 77, 0, "hello", 5,
							 &err)))
				goto out;
		}
		if ((rc = rfb_stream_write_epoch_end(w, e, &err)))
			goto out;
	}
	if (s->end)
		rc = rfb_stream_write_end(w, &err);
out:
	if (rc)
		printf("# write_spec: %s\n", err.msg);
	free(px);
	rfb_stream_writer_free(w);
	return rc;
}

/* The stream of s in memory (malloc'ed). */
static unsigned char *capture(const struct spec *s, size_t *len)
{
	FILE *f = tmpfile();
	unsigned char *data;

	CHECK(write_spec(s, fileno(f)) == 0);
	*len = (size_t)lseek(fileno(f), 0, SEEK_END);
	data = malloc(*len + 1);
	CHECK(pread(fileno(f), data, *len, 0) == (ssize_t)*len);
	fclose(f);
	return data;
}

static void check_info(const struct spec *s, const struct rfb_stream_info *got)
{
	struct rfb_stream_info want;

	spec_info(s, &want);
	CHECK(got->dtype == want.dtype && got->layout == want.layout);
	CHECK(got->height == want.height && got->width == want.width &&
	      got->channels == want.channels);
	CHECK(got->batch_size == want.batch_size);
	CHECK(got->class_count == want.class_count);
	for (uint32_t i = 0; i < got->class_count; i++)
		CHECK(strcmp(got->class_names[i], want.class_names[i]) == 0);
	CHECK(got->first_epoch == want.first_epoch &&
	      got->last_epoch == want.last_epoch &&
	      got->first_step == want.first_step);
	CHECK(got->shard_k == 1 && got->shard_n == 2);
	CHECK(got->epoch_images == want.epoch_images);
	CHECK(got->plan_seed == want.plan_seed &&
	      got->augment_seed == want.augment_seed &&
	      got->index_identity == want.index_identity);
	CHECK(got->normalized == want.normalized);
	for (int c = 0; c < 3 && want.normalized; c++)
		CHECK(got->mean[c] == want.mean[c] && got->std[c] == want.std[c]);
	CHECK(strcmp(got->partial_pipeline, want.partial_pipeline) == 0);
	CHECK(strcmp(got->final_pipeline, want.final_pipeline) == 0);
	CHECK(strcmp(got->extra, want.extra) == 0);
}

static void check_batch(const struct spec *s, const struct rfb_stream_info *in,
			const struct rfb_stream_batch *b, uint32_t epoch,
			uint32_t step, uint64_t global)
{
	size_t img = rfb_stream_image_bytes(in);
	unsigned char *want = malloc(img);

	CHECKF(b->epoch == epoch && b->step == step, "epoch %u step %u, "
	       "expected %u %u", b->epoch, b->step, epoch, step);
	CHECK(b->global_step == global);
	CHECK(b->pixel_bytes == b->n * img);
	for (uint32_t j = 0; j < b->n; j++) {
		uint32_t id = sample_id(epoch, step * s->batch + j);
		CHECK(b->ids[j] == id && b->labels[j] == id % s->classes);
		fill_image(s, id, want, img);
		CHECK(memcmp((const unsigned char *)b->pixels + j * img, want,
			     img) == 0);
	}
	free(want);
}

/* Read a whole stream of s and check every frame; returns the last code
 * of rfb_stream_next (0 clean end). */
static int read_spec(const struct spec *s, rfb_stream_reader *r, int aligned)
{
	struct rfb_stream_frame f;
	rfb_err err = { 0 };
	uint32_t epoch = s->first_epoch, step = s->first_step, epochs = 0;
	uint64_t global = 100, batches = 0, images = 0, seq = 0;
	int rc;

	while ((rc = rfb_stream_next(r, &f, &err)) == 1) {
		CHECK(f.seq >= seq);
		seq = f.seq;
		CHECK(f.offset % RFB_STREAM_ALIGN == 0);
		if (f.type == RFB_FRAME_HEADER) {
			check_info(s, f.info);
			CHECK(f.info == rfb_stream_reader_info(r));
		} else if (f.type == RFB_FRAME_BATCH) {
			check_batch(s, rfb_stream_reader_info(r), &f.batch,
				    epoch, step++, global++);
			if (aligned)
				CHECK((uintptr_t)f.batch.pixels % 64 == 0);
			batches++;
			images += f.batch.n;
		} else if (f.type == RFB_FRAME_EPOCH_END) {
			CHECK(f.epoch_end.epoch == epoch);
			epoch++;
			step = 0;
			epochs++;
		} else {
			CHECK(f.type == RFB_FRAME_END);
			CHECK(f.end.batches == batches && f.end.images == images &&
			      f.end.epochs == epochs);
			CHECK(f.end.frames == seq);
		}
	}
	if (rc == 0)
		CHECK(epoch == s->last_epoch + 1);
	return rc;
}

static void test_roundtrip_memory(void)
{
	struct spec s = small;
	size_t len;

	for (int d = RFB_STREAM_U8; d <= RFB_STREAM_F32; d++)
		for (int l = RFB_STREAM_NHWC; l <= RFB_STREAM_NCHW; l++)
			for (uint32_t c = 1; c <= 3; c += 2) {
				s.dtype = d;
				s.layout = l;
				s.c = c;
				unsigned char *data = capture(&s, &len);
				rfb_stream_reader *r = rfb_stream_reader_new_mem(
					data, len, "mem", NULL, NULL);
				CHECK(len % RFB_STREAM_ALIGN == 0);
				CHECK(read_spec(&s, r, 0) == 0);
				CHECK(rfb_stream_reader_skipped(r) == 1);
				struct rfb_stream_frame f;
				CHECK(rfb_stream_next(r, &f, NULL) == 0);
				rfb_stream_reader_free(r);
				free(data);
			}
}

/* The writer in a child process, the reader on the pipe: no seeking. */
static void test_roundtrip_pipe(void)
{
	struct spec s = small;
	int fds[2];

	s.dtype = RFB_STREAM_F32;
	s.layout = RFB_STREAM_NCHW;
	s.h = 64;
	s.w = 48;
	s.batch = 16;
	s.epoch_images = 100;
	s.last_epoch = 2;
	CHECK(pipe(fds) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(write_spec(&s, fds[1]) ? 1 : 0);
	}
	close(fds[1]);
	rfb_stream_reader *r = rfb_stream_reader_new_fd(fds[0], "pipe", NULL,
							NULL);
	CHECK(read_spec(&s, r, 1) == 0);
	rfb_stream_reader_free(r);
	close(fds[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
}

/* The bytes of the documented layout, checked on a written stream. */
static void test_layout(void)
{
	struct spec s = small;
	size_t len;

	s.unknown = 0;
	unsigned char *d = capture(&s, &len);
	CHECK(memcmp(d, "RFBSTRM\x01", 8) == 0);
	CHECK(rfb_get_le32(d + 8) == RFB_FRAME_HEADER);
	CHECK(rfb_get_le64(d + 24) == 0);
	CHECK(rfb_get_le32(d + 60) == rfb_crc32c(0, d, 60));
	uint64_t p = rfb_get_le64(d + 16);
	CHECK(rfb_get_le32(d + 64) == 1 && d[64 + 4] == 1 && d[64 + 5] == 1);
	CHECK(rfb_get_le32(d + 64 + 8) == 3 && rfb_get_le32(d + 64 + 12) == 2);
	CHECK(rfb_get_le64(d + 64 + 72) == 0xfedcba9876543210ULL);
	CHECK(rfb_get_le32(d + 40) == rfb_crc32c(0, d + 64, p));
	CHECK(memcmp(d + 64 + 128, "resize=256", 10) == 0);
	/* the first batch: 4 images of 3x2x3 */
	size_t b = 64 + (p + 63) / 64 * 64;
	CHECK(rfb_get_le32(d + b + 8) == RFB_FRAME_BATCH);
	CHECK(rfb_get_le64(d + b + 24) == 1);
	CHECK(rfb_get_le32(d + b + 32) == 128);  /* head: 64 + 8*4 -> 128 */
	CHECK(rfb_get_le64(d + b + 16) == 128 + 4 * 18);
	CHECK(rfb_get_le32(d + b + 36) == rfb_crc32c(0, d + b + 64, 128));
	CHECK(rfb_get_le32(d + b + 64 + 16) == 4);
	CHECK(rfb_get_le32(d + b + 64 + 64) == sample_id(0, 0) % 3);
	CHECK(rfb_get_le32(d + b + 64 + 64 + 16) == sample_id(0, 0));
	CHECK(d[b + 64 + 128 + 1] == (unsigned char)(sample_id(0, 0) * 31 + 7));
	free(d);
}

/* Frame boundaries of a stream in memory (offsets), count returned. */
static size_t frame_offsets(const unsigned char *d, size_t len, size_t *off,
			    uint32_t *type)
{
	size_t n = 0;

	for (size_t o = 0; o + 64 <= len; n++) {
		uint64_t p = rfb_get_le64(d + o + 16);
		off[n] = o;
		type[n] = rfb_get_le32(d + o + 8);
		o += 64 + (p + 63) / 64 * 64;
	}
	off[n] = len;
	return n;
}

static void test_every_truncation(void)
{
	size_t len, off[64];
	uint32_t type[64];
	unsigned char *d = capture(&small, &len);
	size_t frames = frame_offsets(d, len, off, type);

	CHECK(frames == 11); /* HEADER, 2 x (3 BATCH + EPOCH_END), ext, END */
	for (size_t cut = 0; cut < len; cut++) {
		rfb_stream_reader *r = rfb_stream_reader_new_mem(d, cut, "t",
								 NULL, NULL);
		struct rfb_stream_frame f;
		rfb_err err = { 0 };
		size_t batches = 0, complete = 0;
		int rc;
		while ((rc = rfb_stream_next(r, &f, &err)) == 1)
			batches += f.type == RFB_FRAME_BATCH;
		for (size_t i = 0; i < frames; i++)
			complete += type[i] == RFB_FRAME_BATCH && off[i + 1] <= cut;
		CHECKF(rc == RFB_ETRUNC, "cut at %zu: %d %s", cut, rc, err.msg);
		CHECKF(batches == complete, "cut at %zu: %zu batches read, %zu "
		       "complete", cut, batches, complete);
		CHECK(rfb_stream_next(r, &f, NULL) == rc); /* sticky */
		rfb_stream_reader_free(r);
	}
	free(d);
}

/* Read the whole stream; returns the final code (0 = clean end). */
static int read_all(const unsigned char *d, size_t len,
		    const struct rfb_stream_limits *lim, rfb_err *err)
{
	rfb_stream_reader *r = rfb_stream_reader_new_mem(d, len, "x", lim, err);
	struct rfb_stream_frame f;
	int rc;

	while ((rc = rfb_stream_next(r, &f, err)) == 1)
		;
	rfb_stream_reader_free(r);
	return rc;
}

static void test_every_corrupted_byte(void)
{
	size_t len;
	unsigned char *d = capture(&small, &len);
	static const unsigned char flips[] = { 0x01, 0x80, 0xff };

	CHECK(read_all(d, len, NULL, NULL) == 0);
	for (size_t i = 0; i < len; i++)
		for (size_t k = 0; k < sizeof flips; k++) {
			rfb_err err = { 0 };
			d[i] ^= flips[k];
			int rc = read_all(d, len, NULL, &err);
			d[i] ^= flips[k];
			CHECKF(rc < 0, "byte %zu ^ %#x not detected", i, flips[k]);
			/* in the first frame header: which error */
			if (i < 7)
				CHECK(rc == RFB_EFORMAT);
			else if (i == 7)
				CHECK(rc == RFB_EVERSION);
			else if (i < 64)
				CHECKF(rc == RFB_ECHECKSUM, "byte %zu: %s", i,
				       err.msg);
		}
	free(d);
}

/* A frame built by hand: header + payload + padding into out. */
static size_t craft(unsigned char *out, uint32_t type, uint32_t flags,
		    uint64_t seq, const void *payload, uint64_t len,
		    uint32_t head_len)
{
	unsigned char *h = out;

	memset(h, 0, 64);
	memcpy(h, "RFBSTRM\x01", 8);
	rfb_put_le32(h + 8, type);
	rfb_put_le32(h + 12, flags);
	rfb_put_le64(h + 16, len);
	rfb_put_le64(h + 24, seq);
	rfb_put_le32(h + 32, head_len);
	rfb_put_le32(h + 36, rfb_crc32c(0, payload, head_len));
	rfb_put_le32(h + 40, rfb_crc32c(0, payload, len));
	rfb_put_le32(h + 60, rfb_crc32c(0, h, 60));
	if (len)
		memcpy(out + 64, payload, len);
	size_t total = 64 + (len + 63) / 64 * 64;
	memset(out + 64 + len, 0, total - 64 - len);
	return total;
}

/* The first frame (HEADER) of the small stream copied to out. */
static size_t header_frame(unsigned char *out, const struct spec *s)
{
	size_t len, off[64];
	uint32_t type[64];
	unsigned char *d = capture(s, &len);

	frame_offsets(d, len, off, type);
	memcpy(out, d, off[1]);
	free(d);
	return off[1];
}

static void test_unknown_frames(void)
{
	unsigned char buf[4096], ep[16] = { 0 }, end[32] = { 0 };
	struct spec s = small;
	rfb_err err = { 0 };

	/* HEADER, ext, EPOCH_END(0) with 0 batches, ext, EPOCH_END(1), END */
	s.epoch_images = 0;
	size_t n = header_frame(buf, &s);
	n += craft(buf + n, 9, 0, 1, "abc", 3, 3);
	n += craft(buf + n, 1000, 0, 2, NULL, 0, 0);
	n += craft(buf + n, 5, 0, 3, ep, 16, 16);
	rfb_put_le32(ep, 1);
	n += craft(buf + n, 3, 0, 4, ep, 16, 16);
	rfb_put_le64(end, 5);
	rfb_put_le32(end + 24, 2);
	n += craft(buf + n, 4, 0, 5, end, 32, 32);
	CHECK(read_all(buf, n, NULL, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "EPOCH_END of epoch 1, expected epoch 0"));
	/* again with epoch 0's EPOCH_END as a real one */
	n = header_frame(buf, &s);
	n += craft(buf + n, 9, 0, 1, "abc", 3, 3);
	n += craft(buf + n, 1000, 0, 2, NULL, 0, 0);
	rfb_put_le32(ep, 0);
	n += craft(buf + n, 3, 0, 3, ep, 16, 16);
	rfb_put_le32(ep, 1);
	n += craft(buf + n, 3, 0, 4, ep, 16, 16);
	n += craft(buf + n, 4, 0, 5, end, 32, 32);
	rfb_stream_reader *r = rfb_stream_reader_new_mem(buf, n, "u", NULL, NULL);
	struct rfb_stream_frame f;
	int frames = 0, rc;
	while ((rc = rfb_stream_next(r, &f, &err)) == 1)
		frames++;
	CHECKF(rc == 0, "%s", err.msg);
	CHECK(frames == 4 && rfb_stream_reader_skipped(r) == 2);
	rfb_stream_reader_free(r);
	/* a critical unknown frame stops the reader */
	n = header_frame(buf, &s);
	n += craft(buf + n, 9, RFB_FRAME_CRITICAL, 1, "abc", 3, 3);
	CHECK(read_all(buf, n, NULL, &err) == RFB_EVERSION);
	/* an unknown frame first is not a stream */
	n = craft(buf, 9, 0, 0, "abc", 3, 3);
	CHECK(read_all(buf, n, NULL, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "does not start with a HEADER"));
}

/* HEADER payloads with one thing wrong, checksums right: refused. */
static void test_bad_header(void)
{
	static const struct { size_t at; uint32_t value; int width;
			      const char *why; } cases[] = {
		{ 0, 2, 4, "HEADER says version 2" },
		{ 4, 3, 1, "unknown dtype 3" },
		{ 5, 0, 1, "unknown layout 0" },
		{ 16, 2, 4, "2 channels" },
		{ 8, 0, 4, "must not be 0" },
		{ 24, 0, 4, "class section does not hold" },
		{ 24, 2, 4, "class section does not hold" },
		{ 28, 2, 4, "first epoch 2 after last epoch 1" },
		{ 40, 2, 4, "bad shard 2/2" },
		{ 104, 27, 4, "sections add up to" },
		{ 128, 0, 1, "NUL byte inside a HEADER text" },
		{ 128 + 26 + 13 + 3, 'x', 1, "class section does not hold" },
		{ 96, 0, 4, "bad mean/std of channel 1" },
		{ 128, 0xff, 1, "partial pipeline text is not UTF-8 (byte 0 is 0xff)" },
		{ 128 + 26 + 1, 0xc3, 1, "final pipeline text is not UTF-8 (byte 1 is 0xc3)" },
	};
	unsigned char buf[1024], p[512];
	struct spec s = small;
	rfb_err err = { 0 };

	s.dtype = RFB_STREAM_F32; /* normalized: mean and std are checked */
	size_t n = header_frame(buf, &s);
	size_t len = rfb_get_le64(buf + 16);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(p, buf + 64, len);
		if (cases[i].width == 4)
			rfb_put_le32(p + cases[i].at, cases[i].value);
		else
			p[cases[i].at] = (unsigned char)cases[i].value;
		unsigned char frame[1024];
		size_t fl = craft(frame, 1, 0, 0, p, len, (uint32_t)len);
		CHECKF(read_all(frame, fl, NULL, &err) == RFB_EFORMAT,
		       "case %zu", i);
		CHECKF(strstr(err.msg, cases[i].why), "case %zu: %s", i, err.msg);
	}
	CHECK(n == 64 + (len + 63) / 64 * 64);
	/* a head length other than the payload's */
	n = craft(buf, 1, 0, 0, p, len, (uint32_t)len - 1);
	CHECK(read_all(buf, n, NULL, &err) == RFB_EFORMAT);
}

/* A BATCH payload by hand: n images of s's shape (pixels zero). */
static size_t batch_payload(unsigned char *p, const struct spec *s,
			    uint32_t epoch, uint32_t step, uint64_t global,
			    uint32_t n, uint32_t label)
{
	size_t head = (64 + 8 * n + 63) / 64 * 64;
	size_t img = (size_t)s->h * s->w * s->c * (s->dtype == RFB_STREAM_F32 ? 4 : 1);

	memset(p, 0, head + n * img);
	rfb_put_le32(p, epoch);
	rfb_put_le32(p + 4, step);
	rfb_put_le64(p + 8, global);
	rfb_put_le32(p + 16, n);
	p[20] = (unsigned char)s->dtype;
	p[21] = (unsigned char)s->layout;
	rfb_put_le32(p + 24, s->h);
	rfb_put_le32(p + 28, s->w);
	rfb_put_le32(p + 32, s->c);
	for (uint32_t i = 0; i < n; i++) {
		rfb_put_le32(p + 64 + 4 * i, label);
		rfb_put_le32(p + 64 + 4 * (n + i), i);
	}
	return head + n * img;
}

/* HEADER then one hand-made batch frame; returns the read result. */
static int one_batch(const struct spec *s, uint32_t epoch, uint32_t step,
		     uint32_t n, uint32_t label, int tweak, rfb_err *err)
{
	unsigned char buf[8192], p[4096];
	size_t len = header_frame(buf, s);
	size_t pl = batch_payload(p, s, epoch, step, 0, n, label);
	size_t head = (64 + 8 * n + 63) / 64 * 64;

	if (tweak == 1)
		p[21] = 2; /* layout differs from the HEADER's */
	size_t at = len;
	len += craft(buf + len, 2, 0, 1, p, pl, (uint32_t)head);
	if (tweak == 2) { /* padding not zero (outside the checksums) */
		buf[len - 1] = 1;
	}
	if (tweak == 3) { /* frame number skips */
		rfb_put_le64(buf + at + 24, 2);
		rfb_put_le32(buf + at + 60, rfb_crc32c(0, buf + at, 60));
	}
	return read_all(buf, len, NULL, err);
}

static void test_reader_sequence(void)
{
	struct spec s = small;
	rfb_err err = { 0 };

	/* a good batch: the stream then ends without END */
	CHECK(one_batch(&s, 0, 0, 4, 2, 0, &err) == RFB_ETRUNC);
	CHECK(strstr(err.msg, "without an END frame"));
	CHECK(one_batch(&s, 1, 0, 4, 2, 0, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "batch of epoch 1, expected epoch 0"));
	CHECK(one_batch(&s, 0, 1, 4, 2, 0, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "step 1, expected step 0"));
	CHECK(one_batch(&s, 0, 0, 4, 3, 0, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "has label 3, the stream has 3 classes"));
	/* too long for a batch of this stream: refused before reading */
	CHECK(one_batch(&s, 0, 0, 5, 0, 0, &err) == RFB_ELIMIT);
	CHECK(strstr(err.msg, "a batch of this stream has 64 to 200"));
	CHECK(one_batch(&s, 0, 0, 4, 0, 1, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "shape differs"));
	CHECK(one_batch(&s, 0, 0, 3, 0, 2, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "nonzero padding"));
	CHECK(one_batch(&s, 0, 0, 4, 0, 3, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "frame number 2, expected 1"));
	CHECK(strstr(err.msg, "frame 1 at byte "));
}

/* Streams that end in ways the writer never produces. */
static void test_reader_endings(void)
{
	unsigned char buf[8192], p[4096], ep[17] = { 0 }, end[32] = { 0 };
	struct spec s = small;
	rfb_err err = { 0 };
	size_t n, pl;

	s.last_epoch = 0;
	s.epoch_images = 0;
	n = header_frame(buf, &s);
	pl = batch_payload(p, &s, 0, 0, 0, 2, 1);
	n += craft(buf + n, 2, 0, 1, p, pl, 128);
	pl = batch_payload(p, &s, 0, 1, 1, 2, 1);
	n += craft(buf + n, 2, 0, 2, p, pl, 128);
	CHECK(read_all(buf, n, NULL, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "after a short batch"));
	/* EPOCH_END miscounting, then END miscounting, then trailing data */
	n = header_frame(buf, &s);
	pl = batch_payload(p, &s, 0, 0, 0, 2, 1);
	n += craft(buf + n, 2, 0, 1, p, pl, 128);
	rfb_put_le32(ep + 4, 1);
	rfb_put_le64(ep + 8, 3);
	size_t at = n;
	CHECK(read_all(buf, n + craft(buf + n, 3, 0, 2, ep, 16, 16), NULL,
		       &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "counts 1 batches and 3 images, the stream has "
		     "1 and 2"));
	rfb_put_le64(ep + 8, 2);
	n = at + craft(buf + at, 3, 0, 2, ep, 16, 16);
	at = n;
	rfb_put_le64(end, 3);
	rfb_put_le64(end + 8, 1);
	rfb_put_le64(end + 16, 2);
	rfb_put_le32(end + 24, 2);
	CHECK(read_all(buf, n + craft(buf + n, 4, 0, 3, end, 32, 32), NULL,
		       &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "END frame counts"));
	rfb_put_le32(end + 24, 1);
	n = at + craft(buf + at, 4, 0, 3, end, 32, 32);
	CHECK(read_all(buf, n, NULL, &err) == 0);
	CHECK(read_all(buf, n + 1, NULL, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "data after the END frame"));
	/* EPOCH_END with a payload of the wrong size */
	n = at - 128 + craft(buf + at - 128, 3, 0, 2, ep, 17, 17);
	CHECK(read_all(buf, n, NULL, &err) == RFB_EFORMAT);
	/* the empty stream */
	CHECK(read_all(buf, 0, NULL, &err) == RFB_ETRUNC);
	CHECK(strstr(err.msg, "empty stream"));
	/* a second HEADER */
	n = header_frame(buf, &s);
	memcpy(buf + n, buf, n);
	rfb_put_le64(buf + n + 24, 1);
	rfb_put_le32(buf + n + 60, rfb_crc32c(0, buf + n, 60));
	CHECK(read_all(buf, 2 * n, NULL, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "second HEADER"));
}

/* Feed a pipe from a child so that the reader sees an fd. */
static int read_fd_bytes(const unsigned char *d, size_t len,
			 const struct rfb_stream_limits *lim, rfb_err *err)
{
	int fds[2], rc;
	struct rfb_stream_frame f;

	CHECK(pipe(fds) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(write(fds[1], d, len) == (ssize_t)len ? 0 : 1);
	}
	close(fds[1]);
	rfb_stream_reader *r = rfb_stream_reader_new_fd(fds[0], "fd", lim, err);
	while ((rc = rfb_stream_next(r, &f, err)) == 1)
		;
	rfb_stream_reader_free(r);
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return rc;
}

static void test_limits(void)
{
	unsigned char buf[8192], fh[64];
	struct spec s = small;
	struct rfb_stream_limits lim;
	rfb_err err = { 0 };
	size_t n = header_frame(buf, &s);

	rfb_stream_limits_default(&lim);
	lim.max_classes = 2;
	CHECK(read_all(buf, n, &lim, &err) == RFB_ELIMIT);
	CHECK(strstr(err.msg, "3 classes exceed the limit 2"));
	rfb_stream_limits_default(&lim);
	lim.max_batch = 3;
	CHECK(read_all(buf, n, &lim, &err) == RFB_ELIMIT);
	rfb_stream_limits_default(&lim);
	lim.max_side = 2;
	CHECK(read_all(buf, n, &lim, &err) == RFB_ELIMIT);
	rfb_stream_limits_default(&lim);
	lim.max_pixels = 5;
	CHECK(read_all(buf, n, &lim, &err) == RFB_ELIMIT);
	rfb_stream_limits_default(&lim);
	lim.max_text = 10;
	CHECK(read_all(buf, n, &lim, &err) == RFB_ELIMIT);
	/* frame headers claiming 1 TiB: refused from the header alone (a
	 * pipe holds only the header: anything else would block or fail) */
	static const uint32_t types[] = { 2, 3, 4, 99 };
	for (size_t t = 0; t < 4; t++) {
		memcpy(fh, "RFBSTRM\x01", 8);
		memset(fh + 8, 0, 56);
		rfb_put_le32(fh + 8, types[t]);
		rfb_put_le64(fh + 16, 1ULL << 40);
		rfb_put_le64(fh + 24, 1);
		rfb_put_le32(fh + 60, rfb_crc32c(0, fh, 60));
		memcpy(buf + n, fh, 64);
		int rc = read_fd_bytes(buf, n + 64, NULL, &err);
		CHECKF(rc == (types[t] == 2 || types[t] == 99 ? RFB_ELIMIT
			      : RFB_EFORMAT), "type %u: %d %s", types[t], rc,
		       err.msg);
	}
	/* a HEADER frame claiming 1 TiB */
	memcpy(buf, buf + n, 64);
	rfb_put_le32(buf + 8, 1);
	rfb_put_le64(buf + 24, 0);
	rfb_put_le32(buf + 60, rfb_crc32c(0, buf, 60));
	CHECK(read_fd_bytes(buf, 64, NULL, &err) == RFB_ELIMIT);
	/* a writer refuses what default readers would */
	struct rfb_stream_info in;
	spec_info(&s, &in);
	in.batch_size = 70000;
	rfb_stream_writer *w = rfb_stream_writer_new(-1, "w", NULL);
	CHECK(rfb_stream_write_header(w, &in, &err) == RFB_ELIMIT);
	spec_info(&s, &in);
	in.height = in.width = 60000;
	CHECK(rfb_stream_write_header(w, &in, &err) == RFB_ELIMIT);
	rfb_stream_writer_free(w);
}

static void test_writer_sequence(void)
{
	struct spec s = small;
	struct rfb_stream_info in;
	rfb_err err = { 0 };
	FILE *f = tmpfile();
	rfb_stream_writer *w = rfb_stream_writer_new(fileno(f), "w", NULL);
	uint32_t labels[5] = { 0, 1, 2, 0, 1 }, ids[5] = { 1, 2, 3, 4, 5 };
	unsigned char px[5 * 18] = { 0 };
	struct rfb_stream_batch b = { 0, 0, 0, 4, labels, ids, px, 4 * 18, 0 };

	spec_info(&s, &in);
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL);
	CHECK(rfb_stream_write_end(w, &err) == RFB_EINVAL);
	in.channels = 2;
	CHECK(rfb_stream_write_header(w, &in, &err) == RFB_EINVAL);
	in.channels = 3;
	in.shard_k = 2;
	CHECK(rfb_stream_write_header(w, &in, &err) == RFB_EINVAL);
	in.shard_k = 1;
	CHECK(rfb_stream_write_header(w, &in, &err) == 0);
	CHECK(rfb_stream_write_header(w, &in, &err) == RFB_EINVAL);
	uint64_t off = rfb_stream_writer_offset(w);
	b.step = 1;
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL);
	b.step = 0;
	b.epoch = 1;
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL);
	b.epoch = 0;
	b.pixel_bytes = 5;
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL);
	b.pixel_bytes = 4 * 18;
	labels[1] = 3;
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL);
	labels[1] = 1;
	b.n = 5;
	b.pixel_bytes = 5 * 18;
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL);
	CHECK(rfb_stream_write_frame(w, 2, 0, "x", 1, &err) == RFB_EINVAL);
	CHECK(rfb_stream_write_frame(w, 9, 2, "x", 1, &err) == RFB_EINVAL);
	CHECK(rfb_stream_writer_offset(w) == off); /* nothing written */
	b.n = 2;
	b.pixel_bytes = 2 * 18;
	CHECK(rfb_stream_write_batch(w, &b, &err) == 0);
	b.step = 1;
	b.global_step = 1;
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL); /* short */
	CHECK(strstr(err.msg, "short batch"));
	CHECK(rfb_stream_write_epoch_end(w, 1, &err) == RFB_EINVAL);
	CHECK(rfb_stream_write_epoch_end(w, 0, &err) == RFB_EINVAL); /* 2 != 10 */
	CHECK(strstr(err.msg, "the HEADER says 10 per epoch"));
	rfb_stream_writer_free(w);
	fclose(f);
}

/* Resumed first epoch, open-ended run: END after any EPOCH_END. */
static void test_resume_open_end(void)
{
	struct spec s = small;
	size_t len;

	s.first_epoch = 5;
	s.last_epoch = 6;
	s.first_step = 1;
	s.unknown = 0;
	unsigned char *d = capture(&s, &len);
	CHECK(read_all(d, len, NULL, NULL) == 0);
	rfb_stream_reader *r = rfb_stream_reader_new_mem(d, len, "m", NULL, NULL);
	CHECK(read_spec(&s, r, 0) == 0);
	rfb_stream_reader_free(r);
	free(d);

	struct rfb_stream_info in;
	rfb_err err = { 0 };
	FILE *f = tmpfile();
	rfb_stream_writer *w = rfb_stream_writer_new(fileno(f), "w", NULL);
	spec_info(&small, &in);
	in.last_epoch = RFB_STREAM_OPEN_END;
	in.epoch_images = 0;
	CHECK(rfb_stream_write_header(w, &in, &err) == 0);
	CHECK(rfb_stream_write_epoch_end(w, 0, &err) == 0);
	CHECK(rfb_stream_write_end(w, &err) == 0);
	CHECK(rfb_stream_write_end(w, &err) == RFB_EINVAL);
	CHECK(rfb_stream_write_frame(w, 9, 0, NULL, 0, &err) == RFB_EINVAL);
	len = (size_t)lseek(fileno(f), 0, SEEK_END);
	d = malloc(len);
	CHECK(pread(fileno(f), d, len, 0) == (ssize_t)len);
	CHECK(read_all(d, len, NULL, &err) == 0);
	free(d);
	rfb_stream_writer_free(w);
	fclose(f);
}

/* Batches that left samples out: shorter mid-epoch, or empty, and the
 * epoch's images plus the samples left out make up epoch_images. */
static void test_left_out(void)
{
	struct rfb_stream_info in;
	struct rfb_stream_frame fr;
	rfb_err err = { 0 };
	FILE *f = tmpfile();
	rfb_stream_writer *w = rfb_stream_writer_new(fileno(f), "w", NULL);
	uint32_t labels[4] = { 0, 1, 2, 0 }, ids[4] = { 1, 2, 3, 4 };
	unsigned char px[4 * 18] = { 0 };
	struct rfb_stream_batch b = { 0, 0, 0, 3, labels, ids, px, 3 * 18, 1 };
	uint32_t n_seen[4], left_seen[4], k = 0;
	int rc;

	spec_info(&small, &in);                 /* batch 4, 10 per epoch */
	in.last_epoch = 0;
	CHECK(rfb_stream_write_header(w, &in, &err) == 0);
	CHECK(rfb_stream_write_batch(w, &b, &err) == 0);  /* 3 + 1 left out */
	struct rfb_stream_batch none = { 0, 1, 1, 0, NULL, NULL, NULL, 0, 4 };
	CHECK(rfb_stream_write_batch(w, &none, &err) == 0); /* all left out */
	b.step = 2, b.global_step = 2, b.n = 2, b.pixel_bytes = 2 * 18;
	b.left_out = 3;                                     /* 5 > 4 */
	CHECK(rfb_stream_write_batch(w, &b, &err) == RFB_EINVAL);
	b.left_out = 0;
	CHECK(rfb_stream_write_batch(w, &b, &err) == 0);    /* last, short */
	CHECK(rfb_stream_write_epoch_end(w, 0, &err) == 0); /* 5 + 5 = 10 */
	CHECK(rfb_stream_write_end(w, &err) == 0);
	rfb_stream_writer_free(w);

	CHECK(lseek(fileno(f), 0, SEEK_SET) == 0);
	rfb_stream_reader *r = rfb_stream_reader_new_fd(fileno(f), "r", NULL, &err);
	while ((rc = rfb_stream_next(r, &fr, &err)) > 0)
		if (fr.type == RFB_FRAME_BATCH && k < 4) {
			n_seen[k] = fr.batch.n;
			left_seen[k++] = fr.batch.left_out;
		}
	CHECKF(rc == 0, "%s", err.msg);
	CHECK(k == 3 && n_seen[0] == 3 && left_seen[0] == 1 && n_seen[1] == 0 &&
	      left_seen[1] == 4 && n_seen[2] == 2 && left_seen[2] == 0);
	rfb_stream_reader_free(r);
	fclose(f);
}

static void test_epipe(void)
{
	struct rfb_stream_info in;
	rfb_err err = { 0 };
	int fds[2];

	signal(SIGPIPE, SIG_IGN);
	CHECK(pipe(fds) == 0);
	close(fds[0]);
	rfb_stream_writer *w = rfb_stream_writer_new(fds[1], "pipe", NULL);
	spec_info(&small, &in);
	CHECK(rfb_stream_write_header(w, &in, &err) == RFB_EPIPE);
	CHECK(err.sys_errno == EPIPE);
	CHECK(rfb_stream_write_epoch_end(w, 0, &err) == RFB_EPIPE);
	CHECK(strstr(err.msg, "earlier write failed"));
	rfb_stream_writer_free(w);
	close(fds[1]);
	signal(SIGPIPE, SIG_DFL);
}

/* Random damage (bytes changed, cut, duplicated): never a clean read,
 * never a crash (this is the fuzz target's job in miniature). */
static void test_random_damage(void)
{
	size_t len;
	unsigned char *d = capture(&small, &len);
	unsigned char *m = malloc(2 * len);
	uint64_t x = 12345;

	for (int iter = 0; iter < 3000; iter++) {
		size_t n = len;
		memcpy(m, d, len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t at = (size_t)(x >> 33) % n;
			switch ((x >> 20) % 3) {
			case 0: m[at] ^= (unsigned char)(1 + (x >> 8) % 255); break;
			case 1: n = at; break;
			default: /* duplicate a 64-byte block */
				if (n + 64 <= 2 * len && at + 64 <= n) {
					memmove(m + at + 64, m + at, n - at);
					n += 64;
				}
			}
			if (n == 0)
				break;
		}
		if (n == len && memcmp(m, d, len) == 0)
			continue;
		CHECKF(read_all(m, n, NULL, NULL) < 0, "iteration %d", iter);
	}
	free(m);
	free(d);
}

/* HEADER texts are UTF-8: the writer refuses others, the escape makes
 * any bytes (a path) such text. */
static void test_text_utf8(void)
{
	struct spec s = small;
	struct rfb_stream_info in;
	rfb_err err = { 0 };
	FILE *f = tmpfile();
	rfb_stream_writer *w = rfb_stream_writer_new(fileno(f), "w", NULL);
	char out[64];

	spec_info(&s, &in);
	in.extra = "cache=/tmp/cache_\xff\n";
	CHECK(rfb_stream_write_header(w, &in, &err) == RFB_EINVAL);
	CHECKF(strstr(err.msg, "the extra text is not UTF-8 (byte 17 is 0xff)"),
	       "%s", err.msg);
	in.extra = "cache=/tmp/caf\xc3\xa9\n"; /* UTF-8: written */
	CHECK(rfb_stream_write_header(w, &in, &err) == 0);
	CHECK(rfb_stream_text_escape(out, sizeof out, "a\xff%\n\xc3\xa9\xe9") == 15);
	CHECK(strcmp(out, "a%FF%25%0A\xc3\xa9%E9") == 0);
	/* cut like snprintf, never inside an escape */
	CHECK(rfb_stream_text_escape(out, 4, "ab\xff") == 5);
	CHECK(strcmp(out, "ab") == 0);
	CHECK(rfb_stream_text_escape(NULL, 0, "\xed\xa0\x80") == 9); /* a surrogate */
	rfb_stream_writer_free(w);
	fclose(f);
}

int main(void)
{
	RUN(test_roundtrip_memory);
	RUN(test_roundtrip_pipe);
	RUN(test_layout);
	RUN(test_every_truncation);
	RUN(test_every_corrupted_byte);
	RUN(test_unknown_frames);
	RUN(test_bad_header);
	RUN(test_reader_sequence);
	RUN(test_reader_endings);
	RUN(test_limits);
	RUN(test_writer_sequence);
	RUN(test_resume_open_end);
	RUN(test_left_out);
	RUN(test_epipe);
	RUN(test_random_damage);
	RUN(test_text_utf8);
	return test_done();
}
