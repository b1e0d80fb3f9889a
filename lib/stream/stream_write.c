/*
 * stream_write.c - the batch-stream writer (see stream.h; layout in
 * refurb-stream(5)).  Every frame goes out with one writev() of its frame
 * header, its small head (built in a buffer sized once from the HEADER)
 * and the caller's bulk data, so pixels are read once for the checksum
 * and once by the kernel, never copied here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "stream_internal.h"

struct rfb_stream_writer {
	int fd;
	char *name;
	uint64_t offset;         /* bytes written */
	int failed;              /* code of a failed write: the stream is cut */
	struct stream_info_copy info;
	struct stream_seq seq;
	unsigned char *buf;      /* head of the frame being written */
	size_t cap;
};

rfb_stream_writer *rfb_stream_writer_new(int fd, const char *name,
					 rfb_err *err)
{
	rfb_stream_writer *w = calloc(1, sizeof *w);

	if (!w || !(w->name = strdup(name ? name : "(stream)"))) {
		free(w);
		rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
		return NULL;
	}
	w->fd = fd;
	return w;
}

void rfb_stream_writer_free(rfb_stream_writer *w)
{
	if (!w)
		return;
	rfbi_stream_info_copy_free(&w->info);
	free(w->buf);
	free(w->name);
	free(w);
}

uint64_t rfb_stream_writer_offset(const rfb_stream_writer *w)
{
	return w->offset;
}

static int reserve(rfb_stream_writer *w, size_t n, rfb_err *err)
{
	if (n <= w->cap)
		return 0;
	unsigned char *p = realloc(w->buf, n);
	if (!p)
		return rfb_err_set(err, RFB_ENOMEM, w->name, "out of memory");
	w->buf = p;
	w->cap = n;
	return 0;
}

/* writev() all of iov (entries of length 0 are not allowed). */
static int writev_full(int fd, struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		ssize_t done = writev(fd, iov, cnt);
		if (done < 0 && errno == EINTR)
			continue;
		if (done < 0)
			return -1;
		if (done == 0) {
			errno = EIO;
			return -1;
		}
		while (cnt > 0 && (size_t)done >= iov->iov_len) {
			done -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + done;
			iov->iov_len -= (size_t)done;
		}
	}
	return 0;
}

/* Write one frame: payload = head (its checksummed head) then the nbulk
 * pieces of bulk data (at most 2 RFB_STREAM_MAX_GROUPS). */
static int write_frame_v(rfb_stream_writer *w, uint32_t type, uint32_t flags,
			 const void *head, size_t head_len,
			 const struct iovec *bulk, int nbulk, rfb_err *err)
{
	static const unsigned char zeros[RFB_STREAM_ALIGN];
	unsigned char fh[RFB_STREAM_FRAME_HEADER];
	struct frame_head h = { .type = type, .flags = flags,
		.version = (uint32_t)w->seq.version,
		.payload_len = head_len, .seq = w->seq.frames - 1,
		.head_len = (uint32_t)head_len };
	struct iovec iov[3 + 2 * RFB_STREAM_MAX_GROUPS];
	int cnt = 0;

	h.head_crc = rfb_crc32c(0, head, head_len);
	h.payload_crc = h.head_crc;
	iov[cnt++] = (struct iovec){ fh, sizeof fh };
	if (head_len)
		iov[cnt++] = (struct iovec){ (void *)head, head_len };
	for (int i = 0; i < nbulk; i++) {
		h.payload_crc = rfb_crc32c(h.payload_crc, bulk[i].iov_base,
					   bulk[i].iov_len);
		h.payload_len += bulk[i].iov_len;
		if (bulk[i].iov_len)
			iov[cnt++] = bulk[i];
	}
	rfbi_stream_head_encode(fh, &h);
	if (stream_pad(h.payload_len))
		iov[cnt++] = (struct iovec){ (void *)zeros,
					     stream_pad(h.payload_len) };
	if (writev_full(w->fd, iov, cnt) < 0) {
		w->failed = rfb_err_sys(err, errno, w->name, "write failed");
		return w->failed;
	}
	w->offset += sizeof fh + h.payload_len + stream_pad(h.payload_len);
	return 0;
}

static int write_frame(rfb_stream_writer *w, uint32_t type, uint32_t flags,
		       const void *head, size_t head_len, const void *bulk,
		       size_t bulk_len, rfb_err *err)
{
	struct iovec piece = { (void *)bulk, bulk_len };

	return write_frame_v(w, type, flags, head, head_len, &piece,
			     bulk_len ? 1 : 0, err);
}

/* Refuse to go on after a failed write, and before the HEADER. */
static int writable(const rfb_stream_writer *w, int need_header, rfb_err *err)
{
	if (w->failed)
		return rfb_err_set(err, w->failed, w->name, "an earlier write "
				   "failed: the stream is cut");
	if (need_header && !w->seq.info)
		return rfb_err_set(err, RFB_EINVAL, w->name, "no HEADER frame "
				   "written yet");
	return 0;
}

static int out_of_sequence(const rfb_stream_writer *w, const char *why,
			   rfb_err *err)
{
	return rfb_err_set(err, RFB_EINVAL, w->name, "refusing to write: %s",
			   why);
}

int rfb_stream_write_header(rfb_stream_writer *w,
			    const struct rfb_stream_info *info, rfb_err *err)
{
	struct rfb_stream_limits lim;
	char why[256];
	int rc;

	rfb_stream_limits_default(&lim);
	if ((rc = writable(w, 0, err)) ||
	    (rc = rfbi_stream_info_check(info, &lim, RFB_EINVAL, w->name, "", err)))
		return rc;
	if (w->seq.info)
		return out_of_sequence(w, "a second HEADER frame", err);
	size_t len = rfbi_stream_info_size(info);
	if ((rc = reserve(w, len > stream_pixel_offset(info->batch_size) ? len
			  : stream_pixel_offset(info->batch_size), err)) ||
	    (rc = rfbi_stream_info_dup(info, &w->info, err)))
		return rc;
	if (rfbi_stream_seq_header(&w->seq, &w->info.info, why, sizeof why))
		return out_of_sequence(w, why, err);
	rfbi_stream_info_encode(info, w->buf);
	if ((rc = write_frame(w, RFB_FRAME_HEADER, 0, w->buf, len, NULL, 0, err)) ||
	    w->info.info.groups < 2)
		return rc;
	/* version 3: the view groups, critical (older readers stop) */
	if (rfbi_stream_seq_groups(&w->seq, why, sizeof why))
		return out_of_sequence(w, why, err);
	rfbi_stream_groups_encode(&w->info.info, w->buf);
	return write_frame(w, RFB_FRAME_VIEW_GROUPS, RFB_FRAME_CRITICAL, w->buf,
			   rfbi_stream_groups_size(&w->info.info), NULL, 0, err);
}

/* The arguments of a batch that the sequence rules do not cover. */
static int batch_args_ok(const rfb_stream_writer *w,
			 const struct rfb_stream_batch *b, rfb_err *err)
{
	const struct rfb_stream_info *in = &w->info.info;

	if (b->n > 0 && (!b->labels || !b->ids ||
			 (in->groups < 2 ? !b->pixels : !b->group_pixels[0])))
		return rfb_err_set(err, RFB_EINVAL, w->name, "batch without "
				   "labels, ids or pixels");
	for (uint32_t g = 1; b->n > 0 && g < in->groups; g++)
		if (!b->group_pixels[g])
			return rfb_err_set(err, RFB_EINVAL, w->name, "batch "
					   "without the pixels of view group %u", g);
	if (in->groups < 2 && b->n >= 1 && b->n <= in->batch_size &&
	    b->pixel_bytes != b->n * rfb_stream_sample_bytes(in))
		return rfb_err_set(err, RFB_EINVAL, w->name, "batch of %u "
				   "images with %zu bytes of pixels, expected "
				   "%zu", b->n, b->pixel_bytes,
				   b->n * rfb_stream_sample_bytes(in));
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	if (in->dtype == RFB_STREAM_F32)
		return rfb_err_set(err, RFB_EINVAL, w->name, "float32 pixels "
				   "need a little-endian host");
#endif
	return 0;
}

/* The BATCH frame of b with the head at p: its pixels, or in version 3
 * each view group's images and their padding. */
static int write_batch_pixels(rfb_stream_writer *w,
			      const struct rfb_stream_batch *b,
			      const unsigned char *p, size_t head_len,
			      rfb_err *err)
{
	static const unsigned char zeros[RFB_STREAM_ALIGN];
	const struct rfb_stream_info *in = &w->info.info;
	struct iovec bulk[2 * RFB_STREAM_MAX_GROUPS];
	int n = 0;

	if (in->groups < 2)
		return write_frame(w, RFB_FRAME_BATCH, 0, p, head_len, b->pixels,
				   b->pixel_bytes, err);
	for (uint32_t g = 0; g < in->groups && b->n; g++) {
		size_t len = (size_t)b->n * rfb_stream_group_bytes(in, g);
		bulk[n++] = (struct iovec){ (void *)b->group_pixels[g], len };
		bulk[n++] = (struct iovec){ (void *)zeros, stream_pad(len) };
	}
	return write_frame_v(w, RFB_FRAME_BATCH, 0, p, head_len, bulk, n, err);
}

int rfb_stream_write_batch(rfb_stream_writer *w,
			   const struct rfb_stream_batch *b, rfb_err *err)
{
	const struct rfb_stream_info *in = &w->info.info;
	unsigned char *p = w->buf;
	char why[256];
	int rc;

	if ((rc = writable(w, 1, err)) || (rc = batch_args_ok(w, b, err)))
		return rc;
	if (rfbi_stream_seq_batch(&w->seq, b, why, sizeof why))
		return out_of_sequence(w, why, err);
	size_t head_len = stream_pixel_offset(b->n);
	const struct batch_fixed f = {
		.epoch = b->epoch, .step = b->step, .global_step = b->global_step,
		.n = b->n, .dtype = (uint8_t)in->dtype,
		.layout = (uint8_t)in->layout, .height = in->height,
		.width = in->width, .channels = in->channels,
		.left_out = b->left_out,
	};
	rfbi_stream_batch_encode(&f, b->labels, b->ids, p);
	return write_batch_pixels(w, b, p, head_len, err);
}

int rfb_stream_write_epoch_end(rfb_stream_writer *w, uint32_t epoch,
			       rfb_err *err)
{
	struct rfb_stream_epoch_end e = { epoch, w->seq.epoch_batches,
					  w->seq.epoch_images };
	unsigned char p[STREAM_EPOCH_END_LEN];
	char why[256];
	int rc;

	if ((rc = writable(w, 1, err)))
		return rc;
	if (rfbi_stream_seq_epoch_end(&w->seq, &e, why, sizeof why))
		return out_of_sequence(w, why, err);
	rfbi_stream_epoch_end_encode(&e, p);
	return write_frame(w, RFB_FRAME_EPOCH_END, 0, p, sizeof p, NULL, 0, err);
}

int rfb_stream_write_end(rfb_stream_writer *w, rfb_err *err)
{
	struct rfb_stream_end e = { w->seq.frames, w->seq.batches,
				    w->seq.images, w->seq.epochs };
	unsigned char p[STREAM_END_LEN];
	char why[256];
	int rc;

	if ((rc = writable(w, 1, err)))
		return rc;
	if (rfbi_stream_seq_end(&w->seq, &e, why, sizeof why))
		return out_of_sequence(w, why, err);
	rfbi_stream_end_encode(&e, p);
	return write_frame(w, RFB_FRAME_END, 0, p, sizeof p, NULL, 0, err);
}

int rfb_stream_write_frame(rfb_stream_writer *w, uint32_t type,
			   uint32_t flags, const void *payload, size_t len,
			   rfb_err *err)
{
	char why[256];
	int rc;

	if ((rc = writable(w, 1, err)))
		return rc;
	if (type <= RFB_FRAME_END || (flags & ~RFB_FRAME_CRITICAL) ||
	    len > UINT32_MAX || (len && !payload))
		return rfb_err_set(err, RFB_EINVAL, w->name, "bad extension "
				   "frame (type %u, flags %#x, %zu bytes)",
				   type, flags, len);
	if (rfbi_stream_seq_other(&w->seq, why, sizeof why))
		return out_of_sequence(w, why, err);
	return write_frame(w, type, flags, payload, len, NULL, 0, err);
}
