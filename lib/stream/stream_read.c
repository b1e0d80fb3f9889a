/*
 * stream_read.c - the batch-stream reader (see stream.h; layout in
 * refurb-stream(5)).  Input comes from an fd, read strictly in order (a
 * pipe or FIFO works), or from memory (fuzzing, tests).  Every length is
 * checked against the limits and the HEADER before a buffer is sized for
 * it; every byte is checksummed; the sequence rules are stream_frame.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/io.h"
#include "stream_internal.h"

#define SKIP_CHUNK (1u << 20) /* unknown frames are read in pieces */

struct rfb_stream_reader {
	int fd;                    /* -1: read from mem */
	const unsigned char *mem;
	size_t mem_len, mem_pos;
	char *name;
	struct rfb_stream_limits lim;
	uint64_t offset;           /* bytes consumed */
	uint64_t skipped;
	int failed;                /* sticky error code, and its context */
	rfb_err failure;
	int done;                  /* clean end reached */
	struct stream_info_copy info;
	struct stream_seq seq;
	unsigned char *buf;        /* payloads from fd, 64-byte aligned */
	size_t cap;
	uint32_t *labels, *ids;    /* batch_size each, decoded */
};

static rfb_stream_reader *reader_new(const char *name,
				     const struct rfb_stream_limits *lim,
				     rfb_err *err)
{
	rfb_stream_reader *r = calloc(1, sizeof *r);

	if (!r || !(r->name = strdup(name ? name : "(stream)"))) {
		free(r);
		rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
		return NULL;
	}
	if (lim)
		r->lim = *lim;
	else
		rfb_stream_limits_default(&r->lim);
	return r;
}

rfb_stream_reader *rfb_stream_reader_new_fd(int fd, const char *name,
					    const struct rfb_stream_limits *lim,
					    rfb_err *err)
{
	rfb_stream_reader *r = reader_new(name, lim, err);

	if (r)
		r->fd = fd;
	return r;
}

rfb_stream_reader *rfb_stream_reader_new_mem(const void *data, size_t len,
					     const char *name,
					     const struct rfb_stream_limits *lim,
					     rfb_err *err)
{
	rfb_stream_reader *r = reader_new(name, lim, err);

	if (r) {
		r->fd = -1;
		r->mem = data;
		r->mem_len = data ? len : 0;
	}
	return r;
}

void rfb_stream_reader_free(rfb_stream_reader *r)
{
	if (!r)
		return;
	rfbi_stream_info_copy_free(&r->info);
	free(r->buf);
	free(r->labels);
	free(r->ids);
	free(r->name);
	free(r);
}

const struct rfb_stream_info *rfb_stream_reader_info(const rfb_stream_reader *r)
{
	return r->seq.info;
}

uint64_t rfb_stream_reader_skipped(const rfb_stream_reader *r)
{
	return r->skipped;
}

/* ---- input ----------------------------------------------------------- */

/*
 * Make the next n bytes of input available at *p (r's buffer, or the
 * memory itself).  Returns how many there are (< n only at the end of
 * the input), or -1 with errno set.  n has been checked by the caller.
 */
static ssize_t src_read(rfb_stream_reader *r, size_t n,
			const unsigned char **p)
{
	ssize_t got;

	if (r->fd < 0) {
		got = (ssize_t)(n < r->mem_len - r->mem_pos ? n
				: r->mem_len - r->mem_pos);
		*p = r->mem + r->mem_pos;
		r->mem_pos += (size_t)got;
	} else {
		if (n > r->cap) {
			size_t cap = (n + RFB_STREAM_ALIGN - 1) &
				     ~(size_t)(RFB_STREAM_ALIGN - 1);
			void *b = NULL;
			free(r->buf);
			r->buf = NULL;
			r->cap = 0;
			if (posix_memalign(&b, RFB_STREAM_ALIGN, cap)) {
				errno = ENOMEM;
				return -1;
			}
			r->buf = b;
			r->cap = cap;
		}
		got = rfb_read_full(r->fd, r->buf, n);
		*p = r->buf;
	}
	if (got > 0)
		r->offset += (uint64_t)got;
	return got;
}

static int read_failed(rfb_stream_reader *r, rfb_err *err)
{
	if (errno == ENOMEM)
		return rfb_err_set(err, RFB_ENOMEM, r->name, "out of memory");
	return rfb_err_sys(err, errno, r->name, "read failed");
}

/* Running checks over a payload and its padding, fed in pieces. */
struct span {
	const struct frame_head *h;
	uint64_t pos;              /* bytes of payload + padding seen */
	uint32_t crc, head_crc;
	int bad_pad;
};

static void span_feed(struct span *s, const unsigned char *p, size_t len)
{
	uint64_t head = s->h->head_len, all = s->h->payload_len;
	uint64_t a = s->pos, b = s->pos + len;

	if (a < head) {
		uint64_t e = b < head ? b : head;
		s->crc = rfb_crc32c(s->crc, p, (size_t)(e - a));
		if (e == head)
			s->head_crc = s->crc;
	}
	if (b > head && a < all) {
		uint64_t from = a > head ? a : head, to = b < all ? b : all;
		s->crc = rfb_crc32c(s->crc, p + (from - a), (size_t)(to - from));
	}
	for (uint64_t i = a > all ? a : all; i < b; i++)
		s->bad_pad |= p[i - a] != 0;
	s->pos = b;
}

/*
 * Read a frame's payload and padding and check them.  With keep, the
 * payload ends up in one piece at *out; without, it is read in chunks
 * and dropped (skipped frames).
 */
static int read_payload(rfb_stream_reader *r, const struct frame_head *h,
			const char *where, int keep, const unsigned char **out,
			rfb_err *err)
{
	uint64_t total = h->payload_len + stream_pad(h->payload_len);
	struct span s = { .h = h };
	const unsigned char *p = NULL;

	while (s.pos < total) {
		uint64_t want = total - s.pos;
		if (!keep && want > SKIP_CHUNK)
			want = SKIP_CHUNK;
		ssize_t got = src_read(r, (size_t)want, &p);
		if (got < 0)
			return read_failed(r, err);
		if (keep && s.pos == 0)
			*out = p;
		span_feed(&s, p, (size_t)got);
		if ((uint64_t)got < want)
			return rfb_err_set(err, RFB_ETRUNC, r->name, "%sstream "
					   "ends inside the frame (%llu of "
					   "%llu payload bytes)", where,
					   (unsigned long long)(s.pos < h->payload_len
					   ? s.pos : h->payload_len),
					   (unsigned long long)h->payload_len);
	}
	if (s.bad_pad)
		return rfb_err_set(err, RFB_EFORMAT, r->name, "%snonzero "
				   "padding after the payload", where);
	if (s.head_crc != h->head_crc || s.crc != h->payload_crc)
		return rfb_err_set(err, RFB_ECHECKSUM, r->name, "%s%s checksum "
				   "mismatch", where, s.head_crc != h->head_crc
				   ? "frame head" : "payload");
	return 0;
}

/* ---- frames ---------------------------------------------------------- */

static int bad_sequence(rfb_stream_reader *r, const char *where,
			const char *why, rfb_err *err)
{
	return rfb_err_set(err, RFB_EFORMAT, r->name, "%s%s", where, why);
}

static int fixed_length(rfb_stream_reader *r, const struct frame_head *h,
			uint64_t len, const char *what, const char *where,
			rfb_err *err)
{
	if (h->payload_len != len || h->head_len != len)
		return rfb_err_set(err, RFB_EFORMAT, r->name, "%s%s frame with "
				   "a payload of %llu bytes (head %u), expected "
				   "%llu", where, what,
				   (unsigned long long)h->payload_len,
				   h->head_len, (unsigned long long)len);
	return 0;
}

static int on_header(rfb_stream_reader *r, const struct frame_head *h,
		     const char *where, struct rfb_stream_frame *f,
		     rfb_err *err)
{
	const unsigned char *p;
	char why[256];
	int rc;

	if (r->seq.info)
		return bad_sequence(r, where, "second HEADER frame", err);
	if (h->payload_len > rfbi_stream_info_max_payload(&r->lim) ||
	    h->payload_len > r->lim.max_payload)
		return rfb_err_set(err, RFB_ELIMIT, r->name, "%sHEADER frame of "
				   "%llu bytes exceeds the limits", where,
				   (unsigned long long)h->payload_len);
	if ((rc = fixed_length(r, h, h->payload_len, "HEADER", where, err)) ||
	    (rc = read_payload(r, h, where, 1, &p, err)) ||
	    (rc = rfbi_stream_info_decode(p, h->payload_len, h->version, &r->lim,
				     &r->info, r->name, where, err)))
		return rc;
	if (rfbi_stream_seq_header(&r->seq, &r->info.info, why, sizeof why))
		return bad_sequence(r, where, why, err);
	/* version 3: the view groups come in the next frame */
	r->seq.version = (int)h->version;
	r->seq.groups_pending = h->version >= 3;
	size_t n = r->info.info.batch_size;
	if (!(r->labels = malloc(n * sizeof *r->labels)) ||
	    !(r->ids = malloc(n * sizeof *r->ids)))
		return rfb_err_set(err, RFB_ENOMEM, r->name, "out of memory");
	f->info = &r->info.info;
	return 0;
}

/* A batch frame's own description of its shape must be the HEADER's. */
static int batch_shape(rfb_stream_reader *r, const struct frame_head *h,
		       const struct batch_fixed *f, const char *where,
		       rfb_err *err)
{
	const struct rfb_stream_info *in = r->seq.info;
	uint32_t n = f->n, left = f->left_out;
	uint64_t q = stream_pixel_offset(n);

	if (n > in->batch_size || left > in->batch_size - n || n + left == 0)
		return rfb_err_set(err, RFB_EFORMAT, r->name, "%sbatch of %u "
				   "images and %u left out, the batch size is "
				   "%u", where, n, left, in->batch_size);
	if (h->head_len != q ||
	    h->payload_len != q + rfb_stream_pixel_bytes(in, n))
		return rfb_err_set(err, RFB_EFORMAT, r->name, "%sbatch of %u "
				   "images in a payload of %llu bytes (head %u)",
				   where, n, (unsigned long long)h->payload_len,
				   h->head_len);
	if (f->dtype != in->dtype || f->layout != in->layout ||
	    f->height != in->height || f->width != in->width ||
	    f->channels != in->channels)
		return rfb_err_set(err, RFB_EFORMAT, r->name, "%sbatch shape "
				   "differs from the HEADER's", where);
	return 0;
}

/* Version 3: where each view group's images are, and the padding after
 * each group's block is zero. */
static int group_pixels(rfb_stream_reader *r, struct rfb_stream_batch *b,
			const char *where, rfb_err *err)
{
	const struct rfb_stream_info *in = r->seq.info;
	const unsigned char *px = b->pixels;

	for (uint32_t g = 0; g < in->groups; g++) {
		uint64_t at = rfb_stream_group_offset(in, b->n, g);
		uint64_t end = at + (uint64_t)b->n * rfb_stream_group_bytes(in, g);
		uint64_t next = rfb_stream_group_offset(in, b->n, g + 1);
		b->group_pixels[g] = px + at;
		for (uint64_t i = end; i < next; i++)
			if (px[i])
				return rfb_err_set(err, RFB_EFORMAT, r->name, "%s"
						   "nonzero padding after view "
						   "group %u's images", where, g);
	}
	return 0;
}

static int on_batch(rfb_stream_reader *r, const struct frame_head *h,
		    const char *where, struct rfb_stream_frame *f,
		    rfb_err *err)
{
	uint64_t max = rfbi_stream_batch_max_payload(r->seq.info);
	struct rfb_stream_batch *b = &f->batch;
	struct batch_fixed fixed;
	const unsigned char *p;
	char why[256];
	int rc;

	if (h->payload_len > max || h->payload_len < STREAM_BATCH_FIXED)
		return rfb_err_set(err, h->payload_len > max ? RFB_ELIMIT
				   : RFB_EFORMAT, r->name, "%sBATCH frame of "
				   "%llu bytes, a batch of this stream has "
				   "%u to %llu", where,
				   (unsigned long long)h->payload_len,
				   STREAM_BATCH_FIXED, (unsigned long long)max);
	if ((rc = read_payload(r, h, where, 1, &p, err)))
		return rc;
	rfbi_stream_batch_decode(p, &fixed);
	if ((rc = batch_shape(r, h, &fixed, where, err)))
		return rc;
	b->epoch = fixed.epoch;
	b->step = fixed.step;
	b->global_step = fixed.global_step;
	b->n = fixed.n;
	b->left_out = fixed.left_out;
	rfbi_stream_batch_lists_decode(p, b->n, r->labels, r->ids);
	b->labels = r->labels;
	b->ids = r->ids;
	b->pixels = p + h->head_len;
	b->pixel_bytes = (size_t)(h->payload_len - h->head_len);
	if ((rc = group_pixels(r, b, where, err)))
		return rc;
	if (rfbi_stream_seq_batch(&r->seq, b, why, sizeof why))
		return bad_sequence(r, where, why, err);
	return 0;
}

static int on_epoch_end(rfb_stream_reader *r, const struct frame_head *h,
			const char *where, struct rfb_stream_frame *f,
			rfb_err *err)
{
	struct rfb_stream_epoch_end *e = &f->epoch_end;
	const unsigned char *p;
	char why[256];
	int rc;

	if ((rc = fixed_length(r, h, STREAM_EPOCH_END_LEN, "EPOCH_END", where,
			       err)) ||
	    (rc = read_payload(r, h, where, 1, &p, err)))
		return rc;
	rfbi_stream_epoch_end_decode(p, e);
	if (rfbi_stream_seq_epoch_end(&r->seq, e, why, sizeof why))
		return bad_sequence(r, where, why, err);
	return 0;
}

static int on_end(rfb_stream_reader *r, const struct frame_head *h,
		  const char *where, struct rfb_stream_frame *f, rfb_err *err)
{
	struct rfb_stream_end *e = &f->end;
	const unsigned char *p;
	char why[256];
	int rc;

	if ((rc = fixed_length(r, h, STREAM_END_LEN, "END", where, err)) ||
	    (rc = read_payload(r, h, where, 1, &p, err)))
		return rc;
	rfbi_stream_end_decode(p, e);
	if (rfbi_stream_seq_end(&r->seq, e, why, sizeof why))
		return bad_sequence(r, where, why, err);
	return 0;
}

/* Version 3: the view groups, right after the HEADER. */
static int on_groups(rfb_stream_reader *r, const struct frame_head *h,
		     const char *where, struct rfb_stream_frame *f,
		     rfb_err *err)
{
	const unsigned char *p;
	char why[256];
	int rc;

	if (rfbi_stream_seq_groups(&r->seq, why, sizeof why))
		return bad_sequence(r, where, why, err);
	if (h->payload_len > 8 + 16 * RFB_STREAM_MAX_GROUPS)
		return rfb_err_set(err, RFB_EFORMAT, r->name, "%sVIEW_GROUPS "
				   "frame of %llu bytes (at most %d groups)",
				   where, (unsigned long long)h->payload_len,
				   RFB_STREAM_MAX_GROUPS);
	if ((rc = fixed_length(r, h, h->payload_len, "VIEW_GROUPS", where, err)) ||
	    (rc = read_payload(r, h, where, 1, &p, err)) ||
	    (rc = rfbi_stream_groups_decode(p, h->payload_len, &r->info.info,
					    &r->lim, r->name, where, err)))
		return rc;
	f->info = &r->info.info;
	return 0;
}

/* A frame type this reader does not know: skip it, unless critical. */
static int on_unknown(rfb_stream_reader *r, const struct frame_head *h,
		      const char *where, rfb_err *err)
{
	char why[256];
	int rc;

	if (h->flags & RFB_FRAME_CRITICAL)
		return rfb_err_set(err, RFB_EVERSION, r->name, "%sframe type %u "
				   "is unknown to this reader and marked "
				   "critical (written by a newer refurb?)",
				   where, h->type);
	if (h->payload_len > r->lim.max_payload)
		return rfb_err_set(err, RFB_ELIMIT, r->name, "%sframe of %llu "
				   "bytes exceeds the limit of %llu", where,
				   (unsigned long long)h->payload_len,
				   (unsigned long long)r->lim.max_payload);
	if ((rc = read_payload(r, h, where, 0, NULL, err)))
		return rc;
	if (rfbi_stream_seq_other(&r->seq, why, sizeof why))
		return bad_sequence(r, where, why, err);
	r->skipped++;
	return 0;
}

/* End of input before a frame header: fine only after the END frame. */
static int at_eof(rfb_stream_reader *r, const char *where, rfb_err *err)
{
	if (r->seq.ended) {
		r->done = 1;
		return 0;
	}
	if (!r->seq.info)
		return rfb_err_set(err, RFB_ETRUNC, r->name, "empty stream (no "
				   "HEADER frame)");
	return rfb_err_set(err, RFB_ETRUNC, r->name, "%sstream ends without "
			   "an END frame (cut short, or its writer died)",
			   where);
}

static int dispatch(rfb_stream_reader *r, const struct frame_head *h,
		    const char *where, struct rfb_stream_frame *f,
		    rfb_err *err)
{
	switch (h->type) {
	case RFB_FRAME_HEADER: return on_header(r, h, where, f, err);
	case RFB_FRAME_BATCH: return on_batch(r, h, where, f, err);
	case RFB_FRAME_EPOCH_END: return on_epoch_end(r, h, where, f, err);
	case RFB_FRAME_END: return on_end(r, h, where, f, err);
	case RFB_FRAME_VIEW_GROUPS: /* an extension's number before version 3 */
		if (r->seq.version >= 3)
			return on_groups(r, h, where, f, err);
		return on_unknown(r, h, where, err);
	default: return on_unknown(r, h, where, err);
	}
}

static int next_frame(rfb_stream_reader *r, struct rfb_stream_frame *f,
		      rfb_err *err)
{
	for (;;) {
		uint64_t at = r->offset, seq = r->seq.frames;
		const unsigned char *p;
		struct frame_head h;
		char where[80];
		int rc;

		snprintf(where, sizeof where, "frame %llu at byte %llu: ",
			 (unsigned long long)seq, (unsigned long long)at);
		ssize_t got = src_read(r, RFB_STREAM_FRAME_HEADER, &p);
		if (got < 0)
			return read_failed(r, err);
		if (got == 0)
			return at_eof(r, where, err);
		if (r->seq.ended)
			return rfb_err_set(err, RFB_EFORMAT, r->name, "%sdata "
					   "after the END frame", where);
		if (got < RFB_STREAM_FRAME_HEADER)
			return rfb_err_set(err, RFB_ETRUNC, r->name, "%sstream "
					   "ends inside a frame header (%zd of "
					   "%d bytes)", where, got,
					   RFB_STREAM_FRAME_HEADER);
		if ((rc = rfbi_stream_head_decode(p, &h, r->name, where, err)))
			return rc;
		if (h.seq != seq)
			return rfb_err_set(err, RFB_EFORMAT, r->name, "%sframe "
					   "number %llu, expected %llu", where,
					   (unsigned long long)h.seq,
					   (unsigned long long)seq);
		if (r->seq.info && h.version != (uint32_t)r->seq.version)
			return rfb_err_set(err, RFB_EFORMAT, r->name, "%sa "
					   "version %u frame in a version %d "
					   "stream", where, h.version,
					   r->seq.version);
		if (!r->seq.info && h.type != RFB_FRAME_HEADER)
			return rfb_err_set(err, RFB_EFORMAT, r->name, "%sthe "
					   "stream does not start with a HEADER "
					   "frame", where);
		if (r->seq.groups_pending && h.type != RFB_FRAME_VIEW_GROUPS)
			return rfb_err_set(err, RFB_EFORMAT, r->name, "%sframe "
					   "type %u where the VIEW_GROUPS frame "
					   "belongs (a version 3 stream has it "
					   "right after the HEADER)", where, h.type);
		memset(f, 0, sizeof *f);
		f->type = (enum rfb_stream_frame_type)h.type;
		f->seq = seq;
		f->offset = at;
		if ((rc = dispatch(r, &h, where, f, err)))
			return rc;
		if ((h.type >= RFB_FRAME_HEADER && h.type <= RFB_FRAME_END) ||
		    (h.type == RFB_FRAME_VIEW_GROUPS && r->seq.version >= 3))
			return 1;
	}
}

int rfb_stream_next(rfb_stream_reader *r, struct rfb_stream_frame *f,
		    rfb_err *err)
{
	rfb_err e = { 0 };
	int rc;

	if (r->failed) {
		if (err)
			*err = r->failure;
		return r->failed;
	}
	if (r->done)
		return 0;
	rc = next_frame(r, f, &e);
	if (rc < 0) {
		r->failed = rc;
		r->failure = e;
		if (err)
			*err = e;
	}
	return rc;
}
