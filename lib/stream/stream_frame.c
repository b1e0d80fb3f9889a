/*
 * stream_frame.c - the parts of the batch stream that the writer
 * (stream_write.c) and the reader (stream_read.c) share: frame headers,
 * the HEADER payload, limits, and the sequence rules.  Layout in
 * refurb-stream(5).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "stream_internal.h"

#define INFO_NORMALIZED 1u /* HEADER flags bit 0 */

void rfb_stream_limits_default(struct rfb_stream_limits *lim)
{
	lim->max_payload = 1ULL << 32;
	lim->max_classes = 1000000;
	lim->max_batch = 65536;
	lim->max_side = 65535;
	lim->max_pixels = 100000000;
	lim->max_text = 1 << 20;
}

const struct rfb_enum_name rfb_stream_dtype_names[] = {
	{ RFB_STREAM_U8, "uint8" },
	{ RFB_STREAM_F32, "float32" },
	{ 0, NULL },
};

const struct rfb_enum_name rfb_stream_layout_names[] = {
	{ RFB_STREAM_NHWC, "NHWC" },
	{ RFB_STREAM_NCHW, "NCHW" },
	{ 0, NULL },
};

const char *rfb_stream_dtype_name(enum rfb_stream_dtype d)
{
	return rfb_enum_name(rfb_stream_dtype_names, (int)d);
}

const char *rfb_stream_layout_name(enum rfb_stream_layout l)
{
	return rfb_enum_name(rfb_stream_layout_names, (int)l);
}

int rfb_stream_info_version(const struct rfb_stream_info *info)
{
	return info->groups > 1 ? 3 : info->views > 1 ? 2 : 1;
}

/* ---- frame headers --------------------------------------------------- */

void rfbi_stream_head_encode(unsigned char out[RFB_STREAM_FRAME_HEADER],
			     const struct frame_head *h)
{
	memset(out, 0, RFB_STREAM_FRAME_HEADER);
	memcpy(out, RFB_STREAM_MAGIC, 7);
	out[7] = (unsigned char)(h->version ? h->version : 1);
	rfb_put_le32(out + 8, h->type);
	rfb_put_le32(out + 12, h->flags);
	rfb_put_le64(out + 16, h->payload_len);
	rfb_put_le64(out + 24, h->seq);
	rfb_put_le32(out + 32, h->head_len);
	rfb_put_le32(out + 36, h->head_crc);
	rfb_put_le32(out + 40, h->payload_crc);
	rfb_put_le32(out + 60, rfb_crc32c(0, out, 60));
}

int rfbi_stream_head_decode(const unsigned char in[RFB_STREAM_FRAME_HEADER],
			    struct frame_head *h, const char *name,
			    const char *where, rfb_err *err)
{
	if (memcmp(in, RFB_STREAM_MAGIC, 7) != 0)
		return rfb_err_set(err, RFB_EFORMAT, name, "%sbad magic (not "
				   "a refurb batch stream frame)", where);
	if (in[7] < 1 || in[7] > RFB_STREAM_VERSION)
		return rfb_err_set(err, RFB_EVERSION, name, "%sbatch stream "
				   "format version %u, this refurb reads "
				   "versions 1 to %u", where, in[7],
				   RFB_STREAM_VERSION);
	h->version = in[7];
	if (rfb_get_le32(in + 60) != rfb_crc32c(0, in, 60))
		return rfb_err_set(err, RFB_ECHECKSUM, name, "%sframe header "
				   "checksum mismatch", where);
	h->type = rfb_get_le32(in + 8);
	h->flags = rfb_get_le32(in + 12);
	h->payload_len = rfb_get_le64(in + 16);
	h->seq = rfb_get_le64(in + 24);
	h->head_len = rfb_get_le32(in + 32);
	h->head_crc = rfb_get_le32(in + 36);
	h->payload_crc = rfb_get_le32(in + 40);
	if (h->head_len > h->payload_len)
		return rfb_err_set(err, RFB_EFORMAT, name, "%shead length %u "
				   "exceeds payload length %llu", where,
				   h->head_len,
				   (unsigned long long)h->payload_len);
	return 0;
}

/* ---- BATCH, EPOCH_END and END payloads ------------------------------ */

/*
 * BATCH payload, for n images of which the writer left out l more:
 *
 *   Offset Size   Type      Meaning
 *   0      4      u32       epoch
 *   4      4      u32       step within the epoch
 *   8      8      u64       global step
 *   16     4      u32       n, images in this batch
 *   20     1      u8        dtype (as in the HEADER)
 *   21     1      u8        layout (as in the HEADER)
 *   22     2      -         reserved, 0
 *   24     4      u32       H
 *   28     4      u32       W
 *   32     4      u32       C
 *   36     4      u32       l, samples left out by the writer
 *   40     24     -         reserved, 0
 *   64     4n     n x u32   labels
 *   64+4n  4n     n x u32   sample ids
 *   64+8n  D-64-8n -        zero bytes up to D (stream_pixel_offset)
 *   D      ...    pixels    pixel data (written and read by the callers)
 */
enum {
	BATCH_EPOCH = 0, BATCH_STEP = 4, BATCH_GLOBAL = 8, BATCH_N = 16,
	BATCH_DTYPE = 20, BATCH_LAYOUT = 21, BATCH_H = 24, BATCH_W = 28,
	BATCH_C = 32, BATCH_LEFT_OUT = 36,
};

void rfbi_stream_batch_encode(const struct batch_fixed *f,
			      const uint32_t *labels, const uint32_t *ids,
			      unsigned char *out)
{
	unsigned char *lists = out + STREAM_BATCH_FIXED;

	memset(out, 0, (size_t)stream_pixel_offset(f->n));
	rfb_put_le32(out + BATCH_EPOCH, f->epoch);
	rfb_put_le32(out + BATCH_STEP, f->step);
	rfb_put_le64(out + BATCH_GLOBAL, f->global_step);
	rfb_put_le32(out + BATCH_N, f->n);
	out[BATCH_DTYPE] = f->dtype;
	out[BATCH_LAYOUT] = f->layout;
	rfb_put_le32(out + BATCH_H, f->height);
	rfb_put_le32(out + BATCH_W, f->width);
	rfb_put_le32(out + BATCH_C, f->channels);
	rfb_put_le32(out + BATCH_LEFT_OUT, f->left_out);
	for (uint32_t i = 0; i < f->n; i++) {
		rfb_put_le32(lists + 4 * (size_t)i, labels[i]);
		rfb_put_le32(lists + 4 * ((size_t)f->n + i), ids[i]);
	}
}

void rfbi_stream_batch_decode(const unsigned char *in, struct batch_fixed *f)
{
	f->epoch = rfb_get_le32(in + BATCH_EPOCH);
	f->step = rfb_get_le32(in + BATCH_STEP);
	f->global_step = rfb_get_le64(in + BATCH_GLOBAL);
	f->n = rfb_get_le32(in + BATCH_N);
	f->dtype = in[BATCH_DTYPE];
	f->layout = in[BATCH_LAYOUT];
	f->height = rfb_get_le32(in + BATCH_H);
	f->width = rfb_get_le32(in + BATCH_W);
	f->channels = rfb_get_le32(in + BATCH_C);
	f->left_out = rfb_get_le32(in + BATCH_LEFT_OUT);
}

void rfbi_stream_batch_lists_decode(const unsigned char *in, uint32_t n,
				    uint32_t *labels, uint32_t *ids)
{
	const unsigned char *lists = in + STREAM_BATCH_FIXED;

	for (uint32_t i = 0; i < n; i++) {
		labels[i] = rfb_get_le32(lists + 4 * (size_t)i);
		ids[i] = rfb_get_le32(lists + 4 * ((size_t)n + i));
	}
}

/*
 * EPOCH_END payload (16 bytes):
 *
 *   Offset Size Type Meaning
 *   0      4    u32  epoch
 *   4      4    u32  batches of this epoch in this stream
 *   8      8    u64  images of this epoch in this stream
 */
enum { EPOCH_END_EPOCH = 0, EPOCH_END_BATCHES = 4, EPOCH_END_IMAGES = 8 };

void rfbi_stream_epoch_end_encode(const struct rfb_stream_epoch_end *e,
				  unsigned char out[STREAM_EPOCH_END_LEN])
{
	rfb_put_le32(out + EPOCH_END_EPOCH, e->epoch);
	rfb_put_le32(out + EPOCH_END_BATCHES, e->batches);
	rfb_put_le64(out + EPOCH_END_IMAGES, e->images);
}

void rfbi_stream_epoch_end_decode(const unsigned char in[STREAM_EPOCH_END_LEN],
				  struct rfb_stream_epoch_end *e)
{
	e->epoch = rfb_get_le32(in + EPOCH_END_EPOCH);
	e->batches = rfb_get_le32(in + EPOCH_END_BATCHES);
	e->images = rfb_get_le64(in + EPOCH_END_IMAGES);
}

/*
 * END payload (32 bytes):
 *
 *   Offset Size Type Meaning
 *   0      8    u64  frames before this one
 *   8      8    u64  batches in the stream
 *   16     8    u64  images in the stream
 *   24     4    u32  EPOCH_END frames in the stream
 *   28     4    -    reserved, 0
 */
enum { END_FRAMES = 0, END_BATCHES = 8, END_IMAGES = 16, END_EPOCHS = 24 };

void rfbi_stream_end_encode(const struct rfb_stream_end *e,
			    unsigned char out[STREAM_END_LEN])
{
	memset(out, 0, STREAM_END_LEN);
	rfb_put_le64(out + END_FRAMES, e->frames);
	rfb_put_le64(out + END_BATCHES, e->batches);
	rfb_put_le64(out + END_IMAGES, e->images);
	rfb_put_le32(out + END_EPOCHS, e->epochs);
}

void rfbi_stream_end_decode(const unsigned char in[STREAM_END_LEN],
			    struct rfb_stream_end *e)
{
	e->frames = rfb_get_le64(in + END_FRAMES);
	e->batches = rfb_get_le64(in + END_BATCHES);
	e->images = rfb_get_le64(in + END_IMAGES);
	e->epochs = rfb_get_le32(in + END_EPOCHS);
}

/* ---- the HEADER payload ---------------------------------------------- */

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

uint64_t rfbi_stream_info_max_payload(const struct rfb_stream_limits *lim)
{
	return STREAM_INFO_FIXED + 3ULL * lim->max_text +
	       (uint64_t)lim->max_classes * (RFB_STREAM_MAX_NAME + 1);
}

static int check_shape(const struct rfb_stream_info *in,
		       const struct rfb_stream_limits *lim, int code,
		       const char *name, const char *where, rfb_err *err)
{
	if (!rfb_stream_dtype_name(in->dtype))
		return rfb_err_set(err, code, name, "%sunknown dtype %d",
				   where, (int)in->dtype);
	if (!rfb_stream_layout_name(in->layout))
		return rfb_err_set(err, code, name, "%sunknown layout %d",
				   where, (int)in->layout);
	if (in->channels != 1 && in->channels != 3)
		return rfb_err_set(err, code, name, "%s%u channels (1 or 3)",
				   where, in->channels);
	if (!in->height || !in->width || !in->batch_size)
		return rfb_err_set(err, code, name, "%sheight, width and "
				   "batch size must not be 0", where);
	if (in->height > lim->max_side || in->width > lim->max_side ||
	    (uint64_t)in->height * in->width > lim->max_pixels)
		return rfb_err_set(err, RFB_ELIMIT, name, "%simages of %ux%u "
				   "exceed the limit", where, in->width,
				   in->height);
	if (in->batch_size > lim->max_batch)
		return rfb_err_set(err, RFB_ELIMIT, name, "%sbatch size %u "
				   "exceeds the limit %u", where,
				   in->batch_size, lim->max_batch);
	if (rfbi_stream_batch_max_payload(in) > lim->max_payload)
		return rfb_err_set(err, RFB_ELIMIT, name, "%sa batch of %u "
				   "images would exceed the frame limit of "
				   "%llu bytes", where, in->batch_size,
				   (unsigned long long)lim->max_payload);
	return 0;
}

static int check_classes(const struct rfb_stream_info *in,
			 const struct rfb_stream_limits *lim, int code,
			 const char *name, const char *where, rfb_err *err)
{
	if (!in->class_count || !in->class_names)
		return rfb_err_set(err, code, name, "%sno classes", where);
	if (in->class_count > lim->max_classes)
		return rfb_err_set(err, RFB_ELIMIT, name, "%s%u classes exceed "
				   "the limit %u", where, in->class_count,
				   lim->max_classes);
	for (uint32_t i = 0; i < in->class_count; i++) {
		if (!in->class_names[i])
			return rfb_err_set(err, code, name, "%sclass %u has "
					   "no name", where, i);
		if (strlen(in->class_names[i]) > RFB_STREAM_MAX_NAME)
			return rfb_err_set(err, RFB_ELIMIT, name, "%sname of "
					   "class %u longer than %u bytes",
					   where, i, RFB_STREAM_MAX_NAME);
	}
	return 0;
}

static const char *const text_names[3] = { "partial pipeline",
					    "final pipeline", "extra" };

static int check_run(const struct rfb_stream_info *in,
		     const struct rfb_stream_limits *lim, int code,
		     const char *name, const char *where, rfb_err *err)
{
	const char *texts[3] = { in->partial_pipeline, in->final_pipeline,
				 in->extra };

	if (in->first_epoch > in->last_epoch)
		return rfb_err_set(err, code, name, "%sfirst epoch %u after "
				   "last epoch %u", where, in->first_epoch,
				   in->last_epoch);
	if (!in->shard_n || in->shard_k >= in->shard_n)
		return rfb_err_set(err, code, name, "%sbad shard %u/%u", where,
				   in->shard_k, in->shard_n);
	for (int c = 0; in->normalized && c < (int)in->channels; c++)
		if (!isfinite(in->mean[c]) || !isfinite(in->std[c]) ||
		    in->std[c] == 0)
			return rfb_err_set(err, code, name, "%sbad mean/std of "
					   "channel %d", where, c);
	for (int i = 0; i < 3; i++) {
		const char *t = str_or_empty(texts[i]);
		size_t len = strlen(t), bad;
		if (len > lim->max_text)
			return rfb_err_set(err, RFB_ELIMIT, name, "%stext of "
					   "%zu bytes exceeds the limit %u",
					   where, len, lim->max_text);
		if ((bad = rfbi_stream_utf8_error(t, len)) < len)
			return rfb_err_set(err, code, name, "%sthe %s text is "
					   "not UTF-8 (byte %zu is 0x%02x)",
					   where, text_names[i], bad,
					   (unsigned char)t[bad]);
	}
	return 0;
}

int rfbi_stream_info_check(const struct rfb_stream_info *info,
			   const struct rfb_stream_limits *lim, int code,
			   const char *name, const char *where, rfb_err *err)
{
	int rc;

	if ((rc = check_shape(info, lim, code, name, where, err)) ||
	    (rc = rfbi_stream_groups_check(info, lim, code, name, where, err)) ||
	    (rc = check_classes(info, lim, code, name, where, err)) ||
	    (rc = check_run(info, lim, code, name, where, err)))
		return rc;
	return 0;
}

size_t rfbi_stream_info_size(const struct rfb_stream_info *info)
{
	size_t n = STREAM_INFO_FIXED + strlen(str_or_empty(info->partial_pipeline)) +
		   strlen(str_or_empty(info->final_pipeline)) +
		   strlen(str_or_empty(info->extra));

	for (uint32_t i = 0; i < info->class_count; i++)
		n += strlen(info->class_names[i]) + 1;
	return n;
}

void rfbi_stream_info_encode(const struct rfb_stream_info *in, unsigned char *out)
{
	const char *texts[3] = { str_or_empty(in->partial_pipeline),
				 str_or_empty(in->final_pipeline),
				 str_or_empty(in->extra) };
	unsigned char *p = out + STREAM_INFO_FIXED, *names;

	memset(out, 0, STREAM_INFO_FIXED);
	rfb_put_le32(out, (uint32_t)rfb_stream_info_version(in));
	if (in->views > 1)
		rfb_put_le32(out + 120, in->views);
	out[4] = (unsigned char)in->dtype;
	out[5] = (unsigned char)in->layout;
	rfb_put_le16(out + 6, in->normalized ? INFO_NORMALIZED : 0);
	const uint32_t u32s[10] = { in->height, in->width, in->channels,
		in->batch_size, in->class_count, in->first_epoch,
		in->last_epoch, in->first_step, in->shard_k, in->shard_n };
	for (int i = 0; i < 10; i++)
		rfb_put_le32(out + 8 + 4 * i, u32s[i]);
	rfb_put_le64(out + 48, in->epoch_images);
	rfb_put_le64(out + 56, in->plan_seed);
	rfb_put_le64(out + 64, in->augment_seed);
	rfb_put_le64(out + 72, in->index_identity);
	for (int c = 0; c < 3 && in->normalized; c++) {
		rfb_put_lef32(out + 80 + 4 * c, in->mean[c]);
		rfb_put_lef32(out + 92 + 4 * c, in->std[c]);
	}
	for (int i = 0; i < 2; i++) {
		size_t len = strlen(texts[i]);
		rfb_put_le32(out + 104 + 4 * i, (uint32_t)len);
		memcpy(p, texts[i], len);
		p += len;
	}
	names = p;
	for (uint32_t i = 0; i < in->class_count; i++) {
		size_t len = strlen(in->class_names[i]) + 1;
		memcpy(p, in->class_names[i], len);
		p += len;
	}
	rfb_put_le32(out + 112, (uint32_t)(p - names));
	rfb_put_le32(out + 116, (uint32_t)strlen(texts[2]));
	memcpy(p, texts[2], strlen(texts[2]));
}

void rfbi_stream_info_copy_free(struct stream_info_copy *c)
{
	if (!c)
		return;
	free(c->blob);
	free(c->names);
	memset(c, 0, sizeof *c);
}

/* The fixed fields of a HEADER payload (after the checks of the caller). */
static void info_decode_fixed(const unsigned char *p, struct rfb_stream_info *in)
{
	uint32_t *u32s[10] = { &in->height, &in->width, &in->channels,
		&in->batch_size, &in->class_count, &in->first_epoch,
		&in->last_epoch, &in->first_step, &in->shard_k, &in->shard_n };

	in->dtype = (enum rfb_stream_dtype)p[4];
	in->layout = (enum rfb_stream_layout)p[5];
	in->normalized = (rfb_get_le16(p + 6) & INFO_NORMALIZED) != 0;
	for (int i = 0; i < 10; i++)
		*u32s[i] = rfb_get_le32(p + 8 + 4 * i);
	in->epoch_images = rfb_get_le64(p + 48);
	in->plan_seed = rfb_get_le64(p + 56);
	in->augment_seed = rfb_get_le64(p + 64);
	in->index_identity = rfb_get_le64(p + 72);
	for (int c = 0; c < 3; c++) {
		in->mean[c] = rfb_get_lef32(p + 80 + 4 * c);
		in->std[c] = rfb_get_lef32(p + 92 + 4 * c);
	}
}

/* Split the class section (K names, each followed by a NUL) into names. */
static int info_decode_names(const char *sec, uint32_t len, uint32_t k,
			     const char **names)
{
	uint32_t i = 0;

	if (len == 0 || sec[len - 1] != '\0')
		return -1;
	for (const char *p = sec, *end = sec + len; p < end && i <= k; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		if (i < k)
			names[i] = p;
		p = nul + 1;
	}
	return i == k ? 0 : -1;
}

/*
 * Copy the four sections after the fixed part into c->blob (texts
 * NUL-terminated, the class section as it is) and point info at them.
 * Returns 0, or the message of what is wrong.
 */
static const char *info_copy_sections(struct stream_info_copy *c,
				      const unsigned char *src,
				      const uint32_t l[4])
{
	struct rfb_stream_info *in = &c->info;
	const char **texts[4] = { &in->partial_pipeline, &in->final_pipeline,
				  NULL, &in->extra };
	char *b = c->blob;

	for (int i = 0; i < 4; i++) {
		memcpy(b, src, l[i]);
		if (i != 2 && memchr(b, '\0', l[i]))
			return "NUL byte inside a HEADER text";
		if (i == 2 && info_decode_names(b, l[i], in->class_count,
						c->names))
			return "class section does not hold K NUL-terminated "
			       "names";
		if (texts[i])
			*texts[i] = b;
		b += l[i];
		if (i != 2)
			*b++ = '\0';
		src += l[i];
	}
	in->class_names = c->names;
	return NULL;
}

int rfbi_stream_info_decode(const unsigned char *p, uint64_t len,
		       uint32_t version, const struct rfb_stream_limits *lim,
		       struct stream_info_copy *c, const char *name,
		       const char *where, rfb_err *err)
{
	struct rfb_stream_info *in = &c->info;
	uint32_t l[4]; /* partial, final, class section, extra */
	uint64_t sum = STREAM_INFO_FIXED;
	const char *why;
	int rc;

	memset(c, 0, sizeof *c);
	if (len < STREAM_INFO_FIXED)
		return rfb_err_set(err, RFB_EFORMAT, name, "%sHEADER payload "
				   "of %llu bytes is too short", where,
				   (unsigned long long)len);
	if (rfb_get_le32(p) != version)
		return rfb_err_set(err, RFB_EFORMAT, name, "%sHEADER says "
				   "version %u in a version %u frame", where,
				   rfb_get_le32(p), version);
	for (int i = 0; i < 4; i++)
		sum += l[i] = rfb_get_le32(p + 104 + 4 * i);
	if (sum != len)
		return rfb_err_set(err, RFB_EFORMAT, name, "%sHEADER sections "
				   "add up to %llu bytes, the payload has %llu",
				   where, (unsigned long long)sum,
				   (unsigned long long)len);
	info_decode_fixed(p, in);
	in->views = version >= 2 ? rfb_get_le32(p + 120) : 1;
	if (in->views < (version >= 2 ? 2u : 1u) || in->views > RFB_STREAM_MAX_VIEWS)
		return rfb_err_set(err, RFB_EFORMAT, name, "%sHEADER of version "
				   "%u with %u views (%s)", where, version,
				   in->views, version >= 2 ? "2 to 64" : "1");
	if (in->class_count > lim->max_classes)
		return rfb_err_set(err, RFB_ELIMIT, name, "%s%u classes exceed "
				   "the limit %u", where, in->class_count,
				   lim->max_classes);
	c->blob = malloc(len - STREAM_INFO_FIXED + 3);
	c->names = malloc(((size_t)in->class_count + 1) * sizeof *c->names);
	if (!c->blob || !c->names) {
		rfbi_stream_info_copy_free(c);
		return rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
	}
	if ((why = info_copy_sections(c, p + STREAM_INFO_FIXED, l))) {
		rfbi_stream_info_copy_free(c);
		return rfb_err_set(err, RFB_EFORMAT, name, "%s%s", where, why);
	}
	if ((rc = rfbi_stream_info_check(in, lim, RFB_EFORMAT, name, where, err)))
		rfbi_stream_info_copy_free(c);
	return rc;
}

int rfbi_stream_info_dup(const struct rfb_stream_info *info,
			 struct stream_info_copy *c, rfb_err *err)
{
	struct rfb_stream_limits lim;
	size_t len = rfbi_stream_info_size(info);
	unsigned char *tmp = malloc(len);
	int rc;

	if (!tmp)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	rfb_stream_limits_default(&lim);
	rfbi_stream_info_encode(info, tmp);
	rc = rfbi_stream_info_decode(tmp, len, (uint32_t)rfb_stream_info_version(info),
				&lim, c, NULL, "", err);
	free(tmp);
	if (rc == 0 && info->groups > 1) { /* not in the HEADER's bytes */
		c->info.groups = info->groups;
		memcpy(c->info.group, info->group, sizeof c->info.group);
	}
	return rc;
}

/* ---- sequence rules -------------------------------------------------- */

#define WHY(...) (snprintf(why, n, __VA_ARGS__), -1)

/* What every frame after the HEADER and before the END needs. */
static int seq_open(const struct stream_seq *s, const char *what, char *why,
		    size_t n)
{
	if (!s->info)
		return WHY("%s frame before the HEADER frame", what);
	if (s->ended)
		return WHY("%s frame after the END frame", what);
	if (s->groups_pending)
		return WHY("%s frame where the VIEW_GROUPS frame belongs (a "
			   "version 3 stream has it right after the HEADER)", what);
	return 0;
}

int rfbi_stream_seq_header(struct stream_seq *s, const struct rfb_stream_info *info,
			   char *why, size_t n)
{
	if (s->info || s->frames)
		return WHY("HEADER frame that is not the first frame");
	memset(s, 0, sizeof *s);
	s->info = info;
	s->version = rfb_stream_info_version(info); /* the reader's: the frame's */
	s->groups_pending = s->version >= 3;
	s->next_epoch = info->first_epoch;
	s->next_step = info->first_step;
	s->frames = 1;
	return 0;
}

/* Whether epoch (the next one) is one the HEADER announced. */
static int seq_epoch_ok(const struct stream_seq *s, const char *what,
			uint32_t epoch, char *why, size_t n)
{
	if (s->next_epoch > s->info->last_epoch)
		return WHY("%s of epoch %u after the last epoch %u", what,
			   epoch, s->info->last_epoch);
	if (epoch != s->next_epoch)
		return WHY("%s of epoch %u, expected epoch %llu (every epoch "
			   "ends with an EPOCH_END frame)", what, epoch,
			   (unsigned long long)s->next_epoch);
	return 0;
}

int rfbi_stream_seq_batch(struct stream_seq *s, const struct rfb_stream_batch *b,
			  char *why, size_t n)
{
	const struct rfb_stream_info *in = s->info;

	if (seq_open(s, "BATCH", why, n) ||
	    seq_epoch_ok(s, "batch", b->epoch, why, n))
		return -1;
	if (b->step != s->next_step)
		return WHY("epoch %u: step %u, expected step %u", b->epoch,
			   b->step, s->next_step);
	if (s->short_seen)
		return WHY("epoch %u: batch after a short batch (only the last "
			   "batch of an epoch may be short)", b->epoch);
	if (b->n > in->batch_size || b->left_out > in->batch_size - b->n ||
	    b->n + b->left_out == 0)
		return WHY("batch of %u images and %u left out, the batch size "
			   "is %u", b->n, b->left_out, in->batch_size);
	if (s->have_batch && b->global_step != s->next_global)
		return WHY("global step %llu, expected %llu",
			   (unsigned long long)b->global_step,
			   (unsigned long long)s->next_global);
	for (uint32_t i = 0; i < b->n; i++)
		if (b->labels[i] >= in->class_count)
			return WHY("image %u (sample %u) has label %u, the "
				   "stream has %u classes", i, b->ids[i],
				   b->labels[i], in->class_count);
	s->next_step++;
	s->short_seen = b->n + b->left_out < in->batch_size;
	s->have_batch = 1;
	s->next_global = b->global_step + 1;
	s->epoch_batches++;
	s->epoch_images += b->n;
	s->epoch_left_out += b->left_out;
	s->batches++;
	s->images += b->n;
	s->frames++;
	return 0;
}

int rfbi_stream_seq_epoch_end(struct stream_seq *s,
			      const struct rfb_stream_epoch_end *e, char *why,
			      size_t n)
{
	const struct rfb_stream_info *in = s->info;

	if (seq_open(s, "EPOCH_END", why, n) ||
	    seq_epoch_ok(s, "EPOCH_END", e->epoch, why, n))
		return -1;
	if (e->batches != s->epoch_batches || e->images != s->epoch_images)
		return WHY("EPOCH_END of epoch %u counts %u batches and %llu "
			   "images, the stream has %u and %llu", e->epoch,
			   e->batches, (unsigned long long)e->images,
			   s->epoch_batches,
			   (unsigned long long)s->epoch_images);
	/* a resumed first epoch lacks the batches before first_step; the
	 * samples left out are accounted for */
	int resumed = e->epoch == in->first_epoch && in->first_step > 0;
	uint64_t planned = e->images + s->epoch_left_out;
	if (in->epoch_images && (resumed ? planned > in->epoch_images
				 : planned != in->epoch_images))
		return WHY("epoch %u has %llu images and %llu left out, the "
			   "HEADER says %llu per epoch", e->epoch,
			   (unsigned long long)e->images,
			   (unsigned long long)s->epoch_left_out,
			   (unsigned long long)in->epoch_images);
	s->next_epoch++;
	s->next_step = 0;
	s->short_seen = 0;
	s->epoch_batches = 0;
	s->epoch_images = 0;
	s->epoch_left_out = 0;
	s->epochs++;
	s->frames++;
	return 0;
}

int rfbi_stream_seq_end(struct stream_seq *s, const struct rfb_stream_end *e,
			char *why, size_t n)
{
	const struct rfb_stream_info *in = s->info;

	if (seq_open(s, "END", why, n))
		return -1;
	if (s->epoch_batches ||
	    (in->last_epoch != RFB_STREAM_OPEN_END &&
	     s->next_epoch <= in->last_epoch))
		return WHY("END frame before the end of epoch %llu (the HEADER "
			   "announces epochs %u to %u)",
			   (unsigned long long)s->next_epoch, in->first_epoch,
			   in->last_epoch);
	if (e->frames != s->frames || e->batches != s->batches ||
	    e->images != s->images || e->epochs != s->epochs)
		return WHY("END frame counts %llu frames, %llu batches, %llu "
			   "images, %u epochs; the stream has %llu, %llu, %llu, "
			   "%u", (unsigned long long)e->frames,
			   (unsigned long long)e->batches,
			   (unsigned long long)e->images, e->epochs,
			   (unsigned long long)s->frames,
			   (unsigned long long)s->batches,
			   (unsigned long long)s->images, s->epochs);
	s->ended = 1;
	s->frames++;
	return 0;
}

int rfbi_stream_seq_groups(struct stream_seq *s, char *why, size_t n)
{
	if (!s->info)
		return WHY("VIEW_GROUPS frame before the HEADER frame");
	if (!s->groups_pending)
		return WHY(s->version < 3 ? "VIEW_GROUPS frame in a version %d "
			   "stream" : "VIEW_GROUPS frame that is not right after "
			   "the HEADER (version %d)", s->version);
	s->groups_pending = 0;
	s->frames++;
	return 0;
}

int rfbi_stream_seq_other(struct stream_seq *s, char *why, size_t n)
{
	if (seq_open(s, "extension", why, n))
		return -1;
	s->frames++;
	return 0;
}
