/*
 * fuzz_pipeline.c - the pipeline spec parser (rfb_pipeline_parse) on any
 * text, and the parsed pipeline run on tiny images.
 *
 * The input is the spec (up to its first NUL).  A spec that parses must:
 *   - have a canonical text that parses to the same canonical text;
 *   - split at any point rfb_pipeline_splittable takes into two
 *     pipelines that join back to it;
 *   - on a 13x9 RGB and an 11x6 gray image, give the shape
 *     rfb_pipeline_out_shape predicts (and fail where it says it fails);
 *   - run on the bytes of a 21x15 JPEG with region decoding (no DCT
 *     scaling) to exactly what it gives on the fully decoded image.
 * A pipeline is only run when no layer's output has more than 2^16
 * pixels (resize=60000 parses, and would take its time), which the shapes
 * of its prefixes (rfb_pipeline_split) tell.  Seed, epoch and sample of
 * the random draws come from a hash of the input.
 */
#include "fuzz.h"
#include "refurb/decode.h"
#include "refurb/encode.h"
#include "refurb/pipeline.h"

#define PIPE_MAX_PIXELS (1 << 16)

/* Layers after which p may be split: all but a final normalize, which
 * stays in the tail. */
static int pipe_splittable(const rfb_pipeline *p)
{
	float mean[3], std[3];

	return rfb_pipeline_layers(p) - rfb_pipeline_normalization(p, mean, std);
}

/* Canonical text, and split + join, give the pipeline back. */
static void pipe_round_trips(const rfb_pipeline *p, uint64_t h)
{
	const char *canon = rfb_pipeline_canonical(p);
	rfb_pipeline *again = NULL, *head = NULL, *tail = NULL, *joined = NULL;
	rfb_err err = { 0 };
	int k = (int)(h % (uint64_t)(pipe_splittable(p) + 1));

	/* not inside a gate's layers (apply, choice, order): 0 always is */
	while (!rfb_pipeline_splittable(p, k))
		k--;

	FUZZ_ASSERT(rfb_pipeline_parse(canon, &again, &err) == 0);
	FUZZ_ASSERT(strcmp(rfb_pipeline_canonical(again), canon) == 0);
	FUZZ_ASSERT(rfb_pipeline_layers(again) == rfb_pipeline_layers(p));
	FUZZ_ASSERT(rfb_pipeline_split(p, k, &head, &tail, &err) == 0);
	FUZZ_ASSERT(rfb_pipeline_layers(head) + rfb_pipeline_layers(tail) ==
		    rfb_pipeline_layers(p));
	FUZZ_ASSERT(rfb_pipeline_join(head, tail, &joined, &err) == 0);
	FUZZ_ASSERT(strcmp(rfb_pipeline_canonical(joined), canon) == 0);
	rfb_pipeline_free(again);
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	rfb_pipeline_free(joined);
}

/* 1 if no layer makes an image of more than PIPE_MAX_PIXELS from in
 * (normalize, last if there, keeps the size). */
static int pipe_small(const rfb_pipeline *p, const struct rfb_pipe_shape *in)
{
	int layers = pipe_splittable(p), ok = 1;

	for (int k = 1; ok && k <= layers; k++) {
		rfb_pipeline *head, *tail;
		struct rfb_pipe_shape s;
		rfb_err err = { 0 };
		int rc;

		if (!rfb_pipeline_splittable(p, k))
			continue; /* inside a gate: its layers keep the size */
		FUZZ_ASSERT(rfb_pipeline_split(p, k, &head, &tail, &err) == 0);
		rc = rfb_pipeline_out_shape(head, in, &s, &err);
		if (rc == 0)
			ok = (int64_t)s.width * s.height <= PIPE_MAX_PIXELS;
		else if (rc == RFB_ESPEC)
			ok = 0; /* a drawn size (rotation expand=1): unbounded */
		rfb_pipeline_free(head);
		rfb_pipeline_free(tail);
		if (rc)
			break; /* the run stops at this layer */
	}
	return ok;
}

static void pipe_fill(rfb_image *img, rfb_imgbuf *buf, int w, int h, int c)
{
	FUZZ_ASSERT(rfb_image_alloc(img, buf, w, h, c, NULL) == 0);
	for (size_t i = 0; i < (size_t)w * h * c; i++)
		img->data[i] = (unsigned char)(i * 37 + (i / 7) * 11);
}

/* Run on a w x h x c image: the shape is the predicted one. */
static void pipe_run_image(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
			   const struct rfb_pipe_key *key, int w, int h, int c)
{
	struct rfb_pipe_shape in = { w, h, c }, want;
	struct rfb_pipe_out out;
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	rfb_err err = { 0 }, why = { 0 };
	int shape_rc, rc;

	if (!pipe_small(p, &in))
		return;
	shape_rc = rfb_pipeline_out_shape(p, &in, &want, &why);
	pipe_fill(&img, &buf, w, h, c);
	rc = rfb_pipe_run(ctx, p, &img, key, &out, &err);
	if (rc == 0 && shape_rc == RFB_ESPEC)
		; /* the size depends on a draw: not predicted */
	else if (rc == 0) {
		FUZZ_ASSERT(shape_rc == 0);
		FUZZ_ASSERT(out.shape.width == want.width &&
			    out.shape.height == want.height &&
			    out.shape.channels == want.channels);
		FUZZ_ASSERT(out.size == (size_t)want.width * want.height *
			    want.channels * (out.dtype == RFB_DTYPE_F32 ? 4 : 1));
	} else {
		FUZZ_REJECTED(&err, rc);
		FUZZ_ASSERT(shape_rc != 0);
	}
	rfb_imgbuf_free(&buf);
}

/* A 21x15 RGB JPEG, made once. */
static const unsigned char *pipe_jpeg(size_t *len)
{
	static rfb_imgbuf jpeg;
	static size_t jpeg_len;
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	rfb_encoder *e;

	if (!jpeg_len) {
		pipe_fill(&img, &buf, 21, 15, 3);
		FUZZ_ASSERT((e = rfb_encoder_new(NULL)) != NULL);
		FUZZ_ASSERT(rfb_jpeg_encode(e, &img, 90, RFB_ENCODE_420, &jpeg,
					    &jpeg_len, NULL) == 0);
		rfb_encoder_free(e);
		rfb_imgbuf_free(&buf);
	}
	*len = jpeg_len;
	return jpeg.data;
}

/* The JPEG through rfb_pipe_run_jpeg with region decoding only, and
 * through rfb_pipe_run on its full decode: the same output. */
static void pipe_run_jpeg(const rfb_pipeline *p,
			  const struct rfb_pipe_key *key, int gray_first)
{
	struct rfb_pipe_shape in = { 21, 15, gray_first ? 1 : 3 };
	struct rfb_decode_opts o = { 0 };
	struct rfb_pipe_out a, b;
	rfb_pipe_ctx *fast = rfb_pipe_ctx_new(NULL), *full = rfb_pipe_ctx_new(NULL);
	rfb_decoder *dec = rfb_decoder_new(NULL);
	rfb_imgbuf buf = { 0 };
	rfb_image img;
	rfb_err err = { 0 };
	size_t len;
	const unsigned char *jpeg = pipe_jpeg(&len);
	int ra, rb;

	FUZZ_ASSERT(fast && full && dec);
	if (!pipe_small(p, &in))
		goto out;
	rfb_pipe_ctx_set_scale_ratio(fast, 0);
	o.color = gray_first ? RFB_DECODE_GRAY : RFB_DECODE_RGB;
	FUZZ_ASSERT(rfb_decode(dec, jpeg, len, &o, &img, &buf, NULL, &err) == 0);
	ra = rfb_pipe_run_jpeg(fast, p, jpeg, len, key, &a, &err);
	rb = rfb_pipe_run(full, p, &img, key, &b, &err);
	FUZZ_ASSERT((ra == 0) == (rb == 0));
	if (ra == 0) {
		FUZZ_ASSERT(a.size == b.size && a.dtype == b.dtype);
		FUZZ_ASSERT(memcmp(a.data, b.data, a.size) == 0);
	}
out:
	rfb_imgbuf_free(&buf);
	rfb_decoder_free(dec);
	rfb_pipe_ctx_free(fast);
	rfb_pipe_ctx_free(full);
}

FUZZ_TARGET(pipeline)
{
	char *spec = malloc(size + 1);
	uint64_t h = rfb_hash64(data, size, 0);
	struct rfb_pipe_key key = { h, (uint32_t)(h >> 32) % 100,
				    (uint32_t)h % 1000, RFB_STAGE_PARTIAL };
	rfb_pipeline *p = NULL;
	rfb_pipe_ctx *ctx;
	rfb_err err = { 0 };
	int rc;

	FUZZ_ASSERT(spec != NULL);
	memcpy(spec, data, size);
	spec[size] = '\0';
	rc = rfb_pipeline_parse(spec, &p, &err);
	if (rc) {
		FUZZ_REJECTED(&err, rc);
		free(spec);
		return 0;
	}
	pipe_round_trips(p, h);
	FUZZ_ASSERT((ctx = rfb_pipe_ctx_new(NULL)) != NULL);
	pipe_run_image(ctx, p, &key, 13, 9, 3);
	pipe_run_image(ctx, p, &key, 11, 6, 1);
	rfb_pipe_ctx_free(ctx);
	pipe_run_jpeg(p, &key, strncmp(rfb_pipeline_canonical(p), "gray", 4) == 0);
	rfb_pipeline_free(p);
	free(spec);
	return 1;
}
