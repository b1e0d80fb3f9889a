/*
 * stream.h - the batch stream: the frames refurb-final writes and a
 * trainer reads (byte layout in refurb-stream(5)).
 *
 * A stream is a HEADER frame (shape, dtype, layout, classes, epochs,
 * seeds, pipelines), then for every epoch its BATCH frames and an
 * EPOCH_END frame, then an END frame written on clean completion.  Every
 * frame has a 64-byte frame header (magic with the version, type, payload
 * length, checksums) and starts on a multiple of 64 bytes, so pixel data
 * can be used in place.  Readers skip frame types they do not know.
 *
 * The writer checks the sequence it is asked to write with the same rules
 * the reader enforces, so everything it writes is readable.  The reader
 * works from an fd (pipes and FIFOs: it never seeks) or from memory (for
 * fuzzing), checks every length against limits before allocating, every
 * checksum, and the whole sequence (epochs, steps, counts), and reports a
 * stream that stops before its END frame as truncated.
 */
#ifndef REFURB_STREAM_H
#define REFURB_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/enum.h"
#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest format version this refurb reads and writes.  A stream is
 * written as version 1 when it has one view of every sample, as version 2
 * when it has several of one size (refurb-final --views), and as version
 * 3 when its views form groups of different sizes (refurb-final
 * --view-group: a VIEW_GROUPS frame follows the HEADER); older readers
 * refuse a newer stream by the version byte. */
#define RFB_STREAM_VERSION 3
#define RFB_STREAM_MAX_VIEWS 64
#define RFB_STREAM_MAX_GROUPS 8    /* view groups of a version 3 stream */
#define RFB_STREAM_ALIGN 64        /* frames and pixel data start here */
#define RFB_STREAM_FRAME_HEADER 64 /* bytes of a frame header */
#define RFB_STREAM_OPEN_END UINT32_MAX /* last_epoch: no last epoch */
#define RFB_STREAM_MAX_NAME 1024   /* bytes of a class name */
/* The id of a sample that repeats another of its batch in place of one
 * whose image could not be read (never a sample id: ids end at 2^32-2) */
#define RFB_STREAM_REPEAT_ID UINT32_MAX

enum rfb_stream_frame_type {
	RFB_FRAME_HEADER = 1,
	RFB_FRAME_BATCH = 2,
	RFB_FRAME_EPOCH_END = 3,
	RFB_FRAME_END = 4,
	RFB_FRAME_VIEW_GROUPS = 5,  /* version 3: right after the HEADER */
};

enum rfb_stream_dtype { RFB_STREAM_U8 = 1, RFB_STREAM_F32 = 2 };
enum rfb_stream_layout { RFB_STREAM_NHWC = 1, RFB_STREAM_NCHW = 2 };

/* Frame-header flag: a reader that does not know this frame's type must
 * stop (RFB_EVERSION) instead of skipping it. */
#define RFB_FRAME_CRITICAL 1u

/* One view group: views images of height x width (the stream's channels,
 * dtype and layout) per sample. */
struct rfb_stream_group {
	uint32_t views, height, width;
};

/* What the HEADER frame says (and, in version 3, the VIEW_GROUPS frame).
 * Strings are UTF-8 without NUL bytes. */
struct rfb_stream_info {
	enum rfb_stream_dtype dtype;
	enum rfb_stream_layout layout;
	uint32_t height, width, channels; /* channels 1 or 3 */
	uint32_t views;                   /* images per sample (0 = 1);
					   * > 1: a version 2 stream */
	/* 0 or 1: every view has the shape above.  2 to
	 * RFB_STREAM_MAX_GROUPS: a version 3 stream whose views are these
	 * groups in order (their views add up to views; group 0 has the
	 * height and width above) */
	uint32_t groups;
	struct rfb_stream_group group[RFB_STREAM_MAX_GROUPS];
	uint32_t batch_size;              /* images of a full batch */
	uint32_t class_count;
	const char *const *class_names;   /* class_count names (<= 1024 bytes) */
	uint32_t first_epoch, last_epoch; /* inclusive; last may be OPEN_END */
	uint32_t first_step;              /* step of the first batch (resume) */
	uint32_t shard_k, shard_n;        /* this stream is shard k of n */
	uint64_t epoch_images;            /* images per epoch, 0 = unknown */
	uint64_t plan_seed, augment_seed;
	uint64_t index_identity;
	int normalized;                   /* f32 = (pixel/255 - mean) / std */
	float mean[3], std[3];            /* per channel, if normalized */
	const char *partial_pipeline;     /* pipeline specs; NULL = "" */
	const char *final_pipeline;
	const char *extra;                /* free "key=value\n" lines; NULL = "" */
};

/* One batch: n images of the stream's shape, in its dtype and layout.
 * left_out counts the samples of the batch that its writer could not
 * deliver (refurb-final: an image that cannot be read), so that readers
 * can still account for every sample of an epoch. */
struct rfb_stream_batch {
	uint32_t epoch, step;  /* step counts from 0 in every epoch */
	uint64_t global_step;  /* +1 from one batch to the next */
	uint32_t n;            /* 0..batch_size images in this frame */
	const uint32_t *labels, *ids; /* n each */
	const void *pixels;    /* n*V*H*W*C samples (V views each), LE */
	size_t pixel_bytes;
	uint32_t left_out;     /* n + left_out is 1..batch_size; only an
				* epoch's last batch has n + left_out less */
	/* version 3 (info->groups > 1): group g's n * views images, in
	 * place of pixels (the writer reads these; the reader sets both,
	 * pixels and pixel_bytes then spanning every group and its padding) */
	const void *group_pixels[RFB_STREAM_MAX_GROUPS];
};

struct rfb_stream_epoch_end {
	uint32_t epoch, batches;
	uint64_t images;
};

struct rfb_stream_end {
	uint64_t frames;       /* frames before END, skipped ones included */
	uint64_t batches, images;
	uint32_t epochs;       /* EPOCH_END frames */
};

/* A frame as read.  Only the member of its type is meaningful. */
struct rfb_stream_frame {
	enum rfb_stream_frame_type type;
	uint64_t seq;          /* frame number, HEADER = 0 */
	uint64_t offset;       /* byte offset of the frame in the stream */
	const struct rfb_stream_info *info;      /* HEADER */
	struct rfb_stream_batch batch;           /* BATCH */
	struct rfb_stream_epoch_end epoch_end;   /* EPOCH_END */
	struct rfb_stream_end end;               /* END */
};

/* Sizes a reader accepts; anything larger is RFB_ELIMIT before allocation. */
struct rfb_stream_limits {
	uint64_t max_payload;   /* bytes of any frame's payload */
	uint32_t max_classes;
	uint32_t max_batch;     /* batch_size */
	uint32_t max_side;      /* height, width */
	uint64_t max_pixels;    /* height * width of one image */
	uint32_t max_text;      /* bytes of each pipeline spec and the extra text */
};

/* The defaults: 4 GiB payload, 1000000 classes, batch 65536, side 65535,
 * 100 Mpx per image, 1 MiB texts. */
void rfb_stream_limits_default(struct rfb_stream_limits *lim);

/* Bytes of one image's pixel data for info's shape and dtype. */
size_t rfb_stream_image_bytes(const struct rfb_stream_info *info);

/* Bytes of one sample's pixel data: its views' images, one after the
 * other. */
size_t rfb_stream_sample_bytes(const struct rfb_stream_info *info);

/* The format version of a stream of info: 1, 2 with several views of
 * one size, 3 with view groups. */
int rfb_stream_info_version(const struct rfb_stream_info *info);

/* Bytes of one sample's images of view group g (g 0 when info has no
 * groups: every view); 0 for a g past the groups. */
size_t rfb_stream_group_bytes(const struct rfb_stream_info *info, uint32_t g);

/* Offset of group g's images in the pixel data of a batch of n samples
 * (version 3: every group's block padded to 64 bytes; 0 for g 0). */
uint64_t rfb_stream_group_offset(const struct rfb_stream_info *info,
				 uint64_t n, uint32_t g);

/* Bytes of the pixel data of a batch of n samples (saturates). */
uint64_t rfb_stream_pixel_bytes(const struct rfb_stream_info *info,
				uint64_t n);

/* The names of the dtypes ("uint8", "float32") and layouts ("NHWC",
 * "NCHW"; enum.h), and their namers: NULL for an unknown value. */
extern const struct rfb_enum_name rfb_stream_dtype_names[];
extern const struct rfb_enum_name rfb_stream_layout_names[];
const char *rfb_stream_dtype_name(enum rfb_stream_dtype d);
const char *rfb_stream_layout_name(enum rfb_stream_layout l);

/*
 * Write value (NUL-terminated bytes, UTF-8 or not: a path) into out (n
 * bytes, may be 0) as HEADER text, which must be UTF-8: its UTF-8
 * sequences as they are; '%', control bytes (below 0x20 and 0x7f) and
 * bytes that are not part of a UTF-8 sequence as %XX (two uppercase hex
 * digits), so a newline cannot end a key=value line of the extra text.
 * Returns the escaped length (out is cut to n - 1 bytes when shorter),
 * like snprintf.
 */
size_t rfb_stream_text_escape(char *out, size_t n, const char *value);

/* ---- writer ---------------------------------------------------------- */

typedef struct rfb_stream_writer rfb_stream_writer;

/*
 * A writer of frames to fd (not closed by the writer; name is used in
 * messages, NULL = "(stream)").  Nothing is written yet.  Returns NULL
 * with err filled when out of memory.  A process writing to a pipe should
 * ignore SIGPIPE: a reader that went away is then RFB_EPIPE.
 */
rfb_stream_writer *rfb_stream_writer_new(int fd, const char *name,
					 rfb_err *err) RFB_MUST_CHECK;

/* Free w (the fd stays open).  Writes nothing: a stream freed before
 * rfb_stream_write_end() reads as truncated.  NULL accepted. */
void rfb_stream_writer_free(rfb_stream_writer *w);

/*
 * Write the HEADER frame, the first frame, and in version 3 (view groups)
 * the VIEW_GROUPS frame after it.  info is copied (the caller keeps its
 * strings).  Returns 0, RFB_EINVAL or RFB_ELIMIT for an info
 * a reader with default limits would refuse, RFB_EPIPE / RFB_ENOSPC /
 * RFB_EIO for a failed write, with err filled.
 */
int rfb_stream_write_header(rfb_stream_writer *w,
			    const struct rfb_stream_info *info,
			    rfb_err *err) RFB_MUST_CHECK;

/*
 * Write a BATCH frame from b's arrays, without copying the pixels (they
 * are checksummed, then written with the frame header in one writev).
 * pixel_bytes must be n * rfb_stream_sample_bytes() (version 3: the
 * group_pixels are written instead, each group's block padded); the arrays may be
 * NULL when n is 0 (every sample of the batch was left out).  The batch must come
 * next in the sequence (see refurb-stream(5)): RFB_EINVAL otherwise, and
 * nothing is written.  Returns 0 or a negative RFB_E* code.
 */
int rfb_stream_write_batch(rfb_stream_writer *w,
			   const struct rfb_stream_batch *b,
			   rfb_err *err) RFB_MUST_CHECK;

/* Write the EPOCH_END frame of epoch (the current one; the writer counts
 * its batches and images).  Returns 0 or a negative RFB_E* code. */
int rfb_stream_write_epoch_end(rfb_stream_writer *w, uint32_t epoch,
			       rfb_err *err) RFB_MUST_CHECK;

/* Write the END frame: every epoch up to last_epoch has ended (RFB_EINVAL
 * otherwise).  Returns 0 or a negative RFB_E* code. */
int rfb_stream_write_end(rfb_stream_writer *w, rfb_err *err) RFB_MUST_CHECK;

/*
 * Write a frame of a type this library does not define (5 and above;
 * for extensions and tests), with flags (RFB_FRAME_CRITICAL or 0) and
 * len bytes of payload (NULL if len is 0).  Allowed between the HEADER and
 * the END frame.  Returns 0 or a negative RFB_E* code.
 */
int rfb_stream_write_frame(rfb_stream_writer *w, uint32_t type,
			   uint32_t flags, const void *payload, size_t len,
			   rfb_err *err) RFB_MUST_CHECK;

/* Bytes written so far. */
uint64_t rfb_stream_writer_offset(const rfb_stream_writer *w);

/* ---- reader ---------------------------------------------------------- */

typedef struct rfb_stream_reader rfb_stream_reader;

/*
 * A reader of the stream on fd (read sequentially, never seeked; not
 * closed by the reader), or of the len bytes at data (which must stay
 * valid and unchanged while the reader is used).  name is used in
 * messages (NULL = "(stream)"); lim NULL = the defaults.  Returns NULL with
 * err filled when out of memory.
 */
rfb_stream_reader *rfb_stream_reader_new_fd(int fd, const char *name,
					    const struct rfb_stream_limits *lim,
					    rfb_err *err) RFB_MUST_CHECK;
rfb_stream_reader *rfb_stream_reader_new_mem(const void *data, size_t len,
					     const char *name,
					     const struct rfb_stream_limits *lim,
					     rfb_err *err) RFB_MUST_CHECK;

/* Free r.  NULL accepted. */
void rfb_stream_reader_free(rfb_stream_reader *r);

/*
 * Read the next frame into *f, skipping frame types this library does not
 * know.  Returns 1 for a frame, 0 at the end of a stream that ended
 * cleanly (END frame, then end of input), or a negative RFB_E* code with
 * err filled: RFB_ETRUNC (input ends inside a frame, or before the END
 * frame), RFB_ECHECKSUM, RFB_EVERSION (another format version, or an
 * unknown critical frame), RFB_ELIMIT, RFB_EFORMAT (bad magic, bad
 * content, frames out of sequence), RFB_ENOMEM, RFB_EIO.  After an error
 * every further call returns the same error.  Pointers in *f (batch
 * arrays and pixels) stay valid until the next call; f->info until the
 * reader is freed.  Pixel data read from an fd is 64-byte aligned.
 */
int rfb_stream_next(rfb_stream_reader *r, struct rfb_stream_frame *f,
		    rfb_err *err) RFB_MUST_CHECK;

/* The HEADER's content, NULL before it has been read.  Owned by r. */
const struct rfb_stream_info *rfb_stream_reader_info(const rfb_stream_reader *r);

/* Frames skipped so far (unknown, non-critical types). */
uint64_t rfb_stream_reader_skipped(const rfb_stream_reader *r);

#ifdef __cplusplus
}
#endif

#endif
