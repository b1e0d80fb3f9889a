/*
 * stream_internal.h - what the batch-stream writer and reader share:
 * frame headers, the HEADER payload, and the sequence rules (one state
 * machine, so that the writer can only write what the reader accepts).
 */
#ifndef REFURB_STREAM_INTERNAL_H
#define REFURB_STREAM_INTERNAL_H

#include "refurb/format.h"
#include "refurb/stream.h"

#define STREAM_INFO_FIXED 128       /* fixed part of the HEADER payload */
#define STREAM_BATCH_FIXED 64       /* fixed part of a BATCH payload */
#define STREAM_EPOCH_END_LEN 16
#define STREAM_END_LEN 32

/* A decoded frame header. */
struct frame_head {
	uint32_t version;            /* the magic's version byte */
	uint32_t type, flags;
	uint64_t payload_len, seq;
	uint32_t head_len;           /* payload bytes covered by head_crc */
	uint32_t head_crc, payload_crc;
};

/* The fixed part of a BATCH payload (refurb-stream(5), BATCH payload). */
struct batch_fixed {
	uint32_t epoch, step;
	uint64_t global_step;
	uint32_t n;                  /* images in the batch */
	uint8_t dtype, layout;
	uint32_t height, width, channels;
	uint32_t left_out;
};

/* Zero bytes after a payload of len bytes up to the next frame. */
static inline size_t stream_pad(uint64_t len)
{
	return (size_t)((RFB_STREAM_ALIGN - len % RFB_STREAM_ALIGN) %
			RFB_STREAM_ALIGN);
}

/* Offset of the pixel data in the payload of a batch of n images (also
 * the batch's head length). */
static inline uint64_t stream_pixel_offset(uint64_t n)
{
	uint64_t end = STREAM_BATCH_FIXED + 8 * n;
	return end + stream_pad(end);
}

void rfbi_stream_head_encode(unsigned char out[RFB_STREAM_FRAME_HEADER],
			     const struct frame_head *h);

/* Decode a frame header: RFB_EFORMAT (magic, head_len > payload_len),
 * RFB_EVERSION, RFB_ECHECKSUM; messages start with "where". */
int rfbi_stream_head_decode(const unsigned char in[RFB_STREAM_FRAME_HEADER],
			    struct frame_head *h, const char *name,
			    const char *where, rfb_err *err) RFB_MUST_CHECK;

/* A BATCH payload's head: stream_pixel_offset(f->n) bytes at out, the
 * fixed part, the n labels and the n ids, zero up to the pixels. */
void rfbi_stream_batch_encode(const struct batch_fixed *f,
			      const uint32_t *labels, const uint32_t *ids,
			      unsigned char *out);
/* Its fixed part (STREAM_BATCH_FIXED bytes at in); then, once f->n is
 * checked against the payload, its labels and ids (n each). */
void rfbi_stream_batch_decode(const unsigned char *in, struct batch_fixed *f);
void rfbi_stream_batch_lists_decode(const unsigned char *in, uint32_t n,
				    uint32_t *labels, uint32_t *ids);
/* EPOCH_END and END payloads (STREAM_EPOCH_END_LEN, STREAM_END_LEN). */
void rfbi_stream_epoch_end_encode(const struct rfb_stream_epoch_end *e,
				  unsigned char out[STREAM_EPOCH_END_LEN]);
void rfbi_stream_epoch_end_decode(const unsigned char in[STREAM_EPOCH_END_LEN],
				  struct rfb_stream_epoch_end *e);
void rfbi_stream_end_encode(const struct rfb_stream_end *e,
			    unsigned char out[STREAM_END_LEN]);
void rfbi_stream_end_decode(const unsigned char in[STREAM_END_LEN],
			    struct rfb_stream_end *e);

/* An rfb_stream_info that owns its strings (one block). */
struct stream_info_copy {
	struct rfb_stream_info info;
	char *blob;             /* the texts, NUL-terminated, and ... */
	const char **names;     /* ... the class name pointers into it */
};

void rfbi_stream_info_copy_free(struct stream_info_copy *c);

/*
 * Check info against lim (bad values: code, RFB_EINVAL for the writer and
 * RFB_EFORMAT for the reader; sizes over a limit: RFB_ELIMIT).
 */
int rfbi_stream_info_check(const struct rfb_stream_info *info,
			   const struct rfb_stream_limits *lim, int code,
			   const char *name, const char *where, rfb_err *err) RFB_MUST_CHECK;

/* Bytes of the largest BATCH payload info allows (saturates). */
uint64_t rfbi_stream_batch_max_payload(const struct rfb_stream_info *info);

/* Largest HEADER payload lim allows. */
uint64_t rfbi_stream_info_max_payload(const struct rfb_stream_limits *lim);

/* HEADER payload of info: its size, and its bytes into out (which has
 * room for rfbi_stream_info_size(info) bytes). */
size_t rfbi_stream_info_size(const struct rfb_stream_info *info);
void rfbi_stream_info_encode(const struct rfb_stream_info *info,
			     unsigned char *out);

/* Parse and check a HEADER payload into *c (owned; free with
 * rfbi_stream_info_copy_free).  RFB_EFORMAT, RFB_ELIMIT, RFB_ENOMEM. */
int rfbi_stream_info_decode(const unsigned char *p, uint64_t len,
		       uint32_t version, const struct rfb_stream_limits *lim,
		       struct stream_info_copy *c, const char *name,
		       const char *where, rfb_err *err) RFB_MUST_CHECK;

/* Deep copy of info into *c.  RFB_ENOMEM. */
int rfbi_stream_info_dup(const struct rfb_stream_info *info,
			 struct stream_info_copy *c, rfb_err *err) RFB_MUST_CHECK;

/* ---- view groups (stream_groups.c) ---- */

/* Check info's view groups (none: 0) against lim and its views. */
int rfbi_stream_groups_check(const struct rfb_stream_info *info,
			     const struct rfb_stream_limits *lim, int code,
			     const char *name, const char *where,
			     rfb_err *err) RFB_MUST_CHECK;

/* The VIEW_GROUPS payload of info: its size, its bytes into out. */
size_t rfbi_stream_groups_size(const struct rfb_stream_info *info);
void rfbi_stream_groups_encode(const struct rfb_stream_info *info,
			       unsigned char *out);

/* Parse and check a VIEW_GROUPS payload into info (whose HEADER fields
 * are read).  RFB_EFORMAT, RFB_ELIMIT. */
int rfbi_stream_groups_decode(const unsigned char *p, uint64_t len,
			      struct rfb_stream_info *info,
			      const struct rfb_stream_limits *lim,
			      const char *name, const char *where,
			      rfb_err *err) RFB_MUST_CHECK;
/* Offset of the first byte of text[0..n) that is not part of a UTF-8
 * sequence (refurb-stream(5): HEADER texts are UTF-8), n if none. */
size_t rfbi_stream_utf8_error(const char *text, size_t n);

/* Where a stream stands: what may come next. */
struct stream_seq {
	const struct rfb_stream_info *info; /* NULL before the HEADER */
	int version;                /* the HEADER's */
	int groups_pending;         /* version 3: VIEW_GROUPS not yet seen */
	int ended;                  /* END seen */
	uint64_t next_epoch;        /* epoch of the next batch / EPOCH_END */
	uint32_t next_step;
	int short_seen;             /* this epoch's last batch was short */
	int have_batch;
	uint64_t next_global;       /* global step of the next batch */
	uint32_t epoch_batches;     /* of the current epoch */
	uint64_t epoch_images;
	uint64_t epoch_left_out;    /* samples its batches left out */
	uint64_t frames, batches, images;
	uint32_t epochs;
};

/*
 * The sequence rules of refurb-stream(5), one per frame kind.  Each
 * returns 0 and advances s, or returns -1 with the reason in why (and
 * leaves s alone).  Every frame, skipped ones too, goes through one.
 */
int rfbi_stream_seq_header(struct stream_seq *s, const struct rfb_stream_info *info,
			   char *why, size_t n);
int rfbi_stream_seq_batch(struct stream_seq *s, const struct rfb_stream_batch *b,
			  char *why, size_t n);
int rfbi_stream_seq_epoch_end(struct stream_seq *s,
			      const struct rfb_stream_epoch_end *e, char *why,
			      size_t n);
int rfbi_stream_seq_end(struct stream_seq *s, const struct rfb_stream_end *e,
			char *why, size_t n);
int rfbi_stream_seq_groups(struct stream_seq *s, char *why, size_t n);
int rfbi_stream_seq_other(struct stream_seq *s, char *why, size_t n);

#endif
