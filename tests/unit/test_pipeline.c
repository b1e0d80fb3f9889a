/*
 * test_pipeline.c - the pipeline spec language and its executor: every
 * parse error with its column, the canonical text, layer counting,
 * output shapes (and the fixed-shape check of the final stage), split
 * and join, determinism of runs (same key, same output, whatever the
 * order or the thread), and no allocation in the steady state.
 */
#include <malloc.h>
#include <pthread.h>

#include "refurb/pipeline.h"
#include "refurb/resize.h"
#include "refurb/transform.h"
#include "dest_room.h"
#include "golden.h"
#include "test.h"

static rfb_pipeline *parse_ok(const char *spec)
{
	rfb_pipeline *p = NULL;
	rfb_err err = { 0 };

	CHECKF(rfb_pipeline_parse(spec, &p, &err) == 0, "%s: %s", spec, err.msg);
	return p;
}

static void test_parse_errors(void)
{
	static const struct {
		const char *spec;
		int column;
		const char *what;
	} bad[] = {
		{ "blur", 1, "unknown filter \"blur\"" },
		{ "resize=256,blur=3", 12, "unknown filter \"blur\"" },
		{ "resize=256,,flip", 12, "empty filter" },
		{ "flip,", 6, "empty filter" },
		{ ",flip", 1, "empty filter" },
		{ "resize", 1, "resize needs a size" },
		{ "resize=", 8, "missing argument" },
		{ "crop=224:", 10, "missing argument" },
		{ "crop=224:pad=", 14, "missing value for pad" },
		{ "resize=256x", 12, "is not an integer" },
		{ "resize=25a6", 8, "is not an integer" },
		{ "resize=0", 8, "out of range" },
		{ "resize=70000", 8, "out of range" },
		{ "resize=256:foo=1", 12, "resize has no argument \"foo\"" },
		{ "resize=256:interp=lanczos", 19, "unknown interpolation \"lanczos\"" },
		{ "resize=256:256", 12, "needs a key" },
		{ "resize=256:size=3", 12, "size given twice" },
		{ "resize=224x224:max_size=300", 1, "max_size needs resize=N" },
		{ "flip=p=1.5", 8, "out of range 0..1" },
		{ "resize=256:dct=0.5", 16, "dct 0.5 out of range 1..64" },
		{ "crop=224:dct=1", 10, "crop has no argument \"dct\"" },
		{ "flip=p=0.5x", 8, "is not a number" },
		{ "flip=p=nan", 8, "is not a number" },
		{ "flipx", 1, "unknown filter \"flipx\"" },
		{ "flip p=1", 5, "unexpected ' ' after flip" },
		{ "gray=1", 5, "gray takes no arguments" },
		{ "randaug=n=0", 11, "n 0 out of range 1..16" },
		{ "randaug=n=2:m=31", 1, "m < bins" },
		{ "randaug=n=2:m=5:bins=5", 1, "m < bins" },
		{ "rrcrop=224:scale=0.5-0.1", 18, "need 0 < low <= high <= 1" },
		{ "rrcrop=224:scale=0-1", 18, "need 0 < low" },
		{ "rrcrop=224:ratio=1-2-3", 18, "is not A-B" },
		{ "crop=224:pad=1/2/3", 14, "pad needs 1, 2 or 4 values" },
		{ "crop=224:fill=256", 15, "fill 256 out of range" },
		{ "crop=224:pad_if_needed=yes", 24, "unknown pad_if_needed value" },
		{ "autoaug=policy=foo", 16, "unknown policy \"foo\"" },
		{ "trivialaug=5", 12, "needs a key" },
		{ "normalize=mean=0.5/0.5", 16, "needs 1 or 3 values" },
		{ "normalize=std=1/0/1", 1, "std 0" },
		{ "normalize=imagenet:mean=0.5", 1, "not both" },
		{ "normalize,flip", 11, "normalize must be the last filter" },
		{ "resize=256,$", 12, "unexpected '$'" },
		{ "randaug=n=16,randaug=n=16,randaug=n=16,randaug=n=16,randaug=n=16",
		  53, "more than 64 layers" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rfb_pipeline *p = NULL;
		rfb_err err = { 0 };
		char col[48], caret[300];
		int rc = rfb_pipeline_parse(bad[i].spec, &p, &err);

		snprintf(col, sizeof col, "at column %d: ", bad[i].column);
		/* second line quotes the spec, third has the caret under it */
		snprintf(caret, sizeof caret, "\n  %s\n  %*s^", bad[i].spec,
			 bad[i].column - 1, "");
		CHECKF(rc == RFB_ESPEC && p == NULL, "%s: rc %d", bad[i].spec, rc);
		CHECKF(strstr(err.msg, col) && strstr(err.msg, bad[i].what) &&
			       strstr(err.msg, caret),
		       "%s: got \"%s\"", bad[i].spec, err.msg);
		rfb_pipeline_free(p);
	}
}

/* A range's ends may be written with an exponent (Python's repr of
 * 1e-06, which the converter writes): the dash in it is not the range's. */
static void test_range_exponent(void)
{
	rfb_pipeline *p = parse_ok("rrcrop=24:scale=1e-06-1:ratio=0.5-2E+00");
	rfb_pipeline *q = NULL;
	rfb_err err = { 0 };

	if (!p)
		return;
	CHECKF(strstr(rfb_pipeline_canonical(p), ":scale=1e-06-1:ratio=0.5-2:") != NULL,
	       "%s", rfb_pipeline_canonical(p));
	/* the canonical text (in the cache's manifest) reads back */
	CHECKF(rfb_pipeline_parse(rfb_pipeline_canonical(p), &q, &err) == 0, "%s", err.msg);
	rfb_pipeline_free(q);
	rfb_pipeline_free(p);
	p = NULL;
	CHECK(rfb_pipeline_parse("rrcrop=24:scale=1e-06-2e-06-1", &p, &err) == RFB_ESPEC);
	CHECKF(strstr(err.msg, "is not A-B") != NULL, "%s", err.msg);
}

static void test_long_spec_error(void)
{
	char spec[600];
	rfb_pipeline *p = NULL;
	rfb_err err = { 0 };

	strcpy(spec, "flip");
	for (int i = 0; i < 11; i++) /* 11 * 47 bytes */
		strcat(spec, ",crop=224:pad=1/2/3/4:fill=1/2/3:pad_if_needed=0");
	strcat(spec, ",oops");
	CHECK(rfb_pipeline_parse(spec, &p, &err) == RFB_ESPEC);
	CHECKF(strstr(err.msg, "at column 534: unknown filter \"oops\"") != NULL,
	       "%s", err.msg);
	CHECK(strstr(err.msg, "...") && strstr(err.msg, "if_needed=0,oops\n"));
	/* the caret is under the 'o' of the excerpt */
	const char *line2 = strchr(err.msg, '\n') + 1, *line3 = strchr(line2, '\n') + 1;
	CHECK(line2[strchr(line3, '^') - line3] == 'o');
	memset(spec, 'x', sizeof spec - 1);
	spec[sizeof spec - 1] = 0;
	char *big = malloc(RFB_PIPELINE_MAX_SPEC + 2);
	memset(big, 'a', RFB_PIPELINE_MAX_SPEC + 1);
	big[RFB_PIPELINE_MAX_SPEC + 1] = 0;
	CHECK(rfb_pipeline_parse(big, &p, &err) == RFB_ESPEC);
	free(big);
}

static void test_canonical(void)
{
	static const char *const groups[][4] = {
		{ "resize=256", "resize=256:interp=bilinear", " resize=size=256 ",
		  "resize=256:max_size=0:interp=bilinear" },
		{ "randaug=n=2:m=9", "randaug=m=9:n=2", "randaug=n=1,randaug=n=1",
		  "randaug" }, /* torchvision's defaults: num_ops 2, magnitude 9 */
		{ "crop=224:pad=4", "crop=224x224:pad=4/4:fill=0/0/0",
		  "crop=size=224x224:pad=4/4/4/4:pad_if_needed=0", "crop=224:pad=4" },
		{ "normalize=imagenet", "normalize=mean=0.485/0.456/0.406:std=0.229/0.224/0.225",
		  "normalize=imagenet", "normalize=preset=imagenet" },
		{ "flip", "flip=0.5", "flip=p=0.5", "flip=p=5e-1" },
		{ "resize=256:dct=1", "resize=256:dct=1.0", "resize=size=256:dct=1:interp=bilinear",
		  "resize=256:max_size=0:interp=bilinear:dct=1" },
		{ "rrcrop=224", "rrcrop=224x224:scale=0.08-1:ratio=0.75-1.3333333333333333",
		  "rrcrop=224:interp=bilinear", "rrcrop=224:scale=0.08-1.0" },
	};
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		rfb_pipeline *first = parse_ok(groups[g][0]);
		for (int i = 1; i < 4 && first; i++) {
			rfb_pipeline *p = parse_ok(groups[g][i]);
			if (p)
				CHECKF(strcmp(rfb_pipeline_canonical(p),
					      rfb_pipeline_canonical(first)) == 0,
				       "%s -> %s vs %s", groups[g][i],
				       rfb_pipeline_canonical(p),
				       rfb_pipeline_canonical(first));
			rfb_pipeline_free(p);
		}
		/* the canonical text parses back to itself */
		rfb_pipeline *again = first ? parse_ok(rfb_pipeline_canonical(first)) : NULL;
		if (again)
			CHECK(strcmp(rfb_pipeline_canonical(again),
				     rfb_pipeline_canonical(first)) == 0);
		rfb_pipeline_free(again);
		rfb_pipeline_free(first);
	}
	rfb_pipeline *p = parse_ok("resize=256,randaug=n=2:m=9,crop=224,flip");
	CHECK(p && strcmp(rfb_pipeline_canonical(p),
			  "resize=256:max_size=0:interp=bilinear,"
			  "randaug=n=2:m=9:bins=31:interp=nearest:fill=0/0/0,"
			  "crop=224x224:pad=0/0/0/0:fill=0/0/0:pad_if_needed=0,"
			  "flip=p=0.5") == 0);
	rfb_pipeline_free(p);
	p = parse_ok("randaug=n=1:m=9,randaug=n=1:m=5,randaug=n=1:m=5");
	CHECK(p && strstr(rfb_pipeline_canonical(p), "n=1:m=9") &&
	      strstr(rfb_pipeline_canonical(p), "n=2:m=5"));
	rfb_pipeline_free(p);
	p = parse_ok("");
	CHECK(p && strcmp(rfb_pipeline_canonical(p), "") == 0 &&
	      rfb_pipeline_layers(p) == 0);
	rfb_pipeline_free(p);
	/* a run of more equal layers than one randaug=n= takes is written as
	 * several filters, so that it parses back (found by fuzz_pipeline) */
	p = parse_ok("randaug=n=16,randaug=n=7");
	rfb_pipeline *q = p ? parse_ok(rfb_pipeline_canonical(p)) : NULL;
	CHECK(p && strstr(rfb_pipeline_canonical(p), "randaug=n=16:") &&
	      strstr(rfb_pipeline_canonical(p), ",randaug=n=7:"));
	CHECK(q && rfb_pipeline_layers(q) == 23 &&
	      strcmp(rfb_pipeline_canonical(q), rfb_pipeline_canonical(p)) == 0);
	rfb_pipeline_free(q);
	rfb_pipeline_free(p);
	/* a spec whose canonical text would not fit in a cache manifest (it
	 * was truncated there) is refused, by parse and by join */
	char spec[RFB_PIPELINE_MAX_SPEC + 1] = "";
	for (int i = 0; i < 64; i++)
		strcat(spec, i ? ",crop=65535:pad=65535:fill=255"
			       : "crop=65535:pad=65535:fill=255");
	rfb_err err = { 0 };
	CHECK(rfb_pipeline_parse(spec, &p, &err) == RFB_ESPEC && !p &&
	      strstr(err.msg, "canonical form"));
	spec[strlen(spec) / 2] = '\0'; /* 32 filters: 2496 bytes */
	p = parse_ok(spec);
	CHECK(p && rfb_pipeline_join(p, p, &q, &err) == RFB_ESPEC && !q);
	rfb_pipeline_free(p);
}

static void test_layers_and_types(void)
{
	rfb_pipeline *p = parse_ok("resize=256,randaug=n=2:m=9,crop=224,flip");

	CHECK(p && rfb_pipeline_layers(p) == 5);
	CHECK(p && rfb_pipeline_dtype(p) == RFB_DTYPE_U8 &&
	      rfb_pipeline_layout(p) == RFB_LAYOUT_HWC);
	rfb_pipeline_free(p);
	p = parse_ok("autoaug,trivialaug,randaug=n=3,gray,rgb,normalize");
	CHECK(p && rfb_pipeline_layers(p) == 8);
	CHECK(p && rfb_pipeline_dtype(p) == RFB_DTYPE_F32 &&
	      rfb_pipeline_layout(p) == RFB_LAYOUT_CHW);
	rfb_pipeline_free(p);
}

/* The gates are told by their kind (refurb-advise times a pipeline with
 * them open), not by their names. */
static void test_gates(void)
{
	static const int gate[] = { 0, 1, 0, 1, 0, 0, 1, 0, 0 };
	rfb_pipeline *p = parse_ok("resize=64,apply=0.3:n=1,gaussblur=9,"
				   "choice=2,invert,solarize=100,order=2,vflip,flip");
	int n = p ? rfb_pipeline_layers(p) : 0;

	CHECK(n == 9);
	for (int i = 0; i < n && i < 9; i++)
		CHECKF(rfb_pipeline_layer_is_gate(p, i) == gate[i], "layer %d (%s)",
		       i, rfb_pipeline_layer_name(p, i));
	CHECK(p && rfb_pipeline_layer_is_gate(p, -1) == 0);
	CHECK(p && rfb_pipeline_layer_is_gate(p, n) == 0);
	rfb_pipeline_free(p);
}

static void test_shapes(void)
{
	struct rfb_pipe_shape in = { 500, 375, 3 }, out;
	rfb_pipeline *p = parse_ok("resize=256,randaug=n=2:m=9,crop=224,flip");
	rfb_err err = { 0 };

	CHECK(rfb_pipeline_out_shape(p, &in, &out, NULL) == 0);
	CHECK(out.width == 224 && out.height == 224 && out.channels == 3);
	CHECK(rfb_pipeline_fixed_shape(p, 3, &out, NULL) == 0);
	CHECK(out.width == 224 && out.height == 224 && out.channels == 3);
	rfb_pipeline_free(p);

	p = parse_ok("resize=256,randaug=n=2:m=9");
	CHECK(rfb_pipeline_out_shape(p, &in, &out, NULL) == 0);
	CHECK(out.width == 341 && out.height == 256);
	CHECK(rfb_pipeline_fixed_shape(p, 3, &out, &err) == RFB_ESPEC);
	CHECK(strstr(err.msg, "output size depends on the input") != NULL);
	rfb_pipeline_free(p);

	p = parse_ok("centercrop=200,resize=100");
	CHECK(rfb_pipeline_fixed_shape(p, 3, &out, &err) == RFB_ESPEC);
	CHECK(strstr(err.msg, "layer 2 (resize=100)") != NULL);
	rfb_pipeline_free(p);

	p = parse_ok("rrcrop=32x48,gray,normalize=mean=0.5:std=0.25");
	CHECK(rfb_pipeline_fixed_shape(p, 3, &out, NULL) == 0);
	CHECK(out.width == 48 && out.height == 32 && out.channels == 1);
	rfb_pipeline_free(p);

	p = parse_ok("resize=64x32,normalize=imagenet");
	CHECK(rfb_pipeline_fixed_shape(p, 1, &out, &err) == RFB_ESPEC);
	CHECK(strstr(err.msg, "3 values for a 1-channel") != NULL);
	in.channels = 1;
	CHECK(rfb_pipeline_out_shape(p, &in, &out, NULL) == RFB_EINVAL);
	rfb_pipeline_free(p);

	p = parse_ok("crop=400");
	in = (struct rfb_pipe_shape){ 500, 375, 3 };
	CHECK(rfb_pipeline_out_shape(p, &in, &out, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "larger than") != NULL);
	rfb_pipeline_free(p);
	p = parse_ok("crop=400:pad_if_needed=1");
	CHECK(rfb_pipeline_out_shape(p, &in, &out, NULL) == 0 && out.height == 400);
	rfb_pipeline_free(p);
}

static void test_split_join(void)
{
	rfb_pipeline *p = parse_ok("resize=256,randaug=n=2:m=9,crop=224,flip,normalize");
	rfb_pipeline *head, *tail, *joined;
	rfb_err err = { 0 };

	CHECK(rfb_pipeline_split(p, 2, &head, &tail, NULL) == 0);
	CHECK(rfb_pipeline_layers(head) == 2 && rfb_pipeline_layers(tail) == 4);
	CHECK(strcmp(rfb_pipeline_canonical(head),
		     "resize=256:max_size=0:interp=bilinear,"
		     "randaug=n=1:m=9:bins=31:interp=nearest:fill=0/0/0") == 0);
	CHECK(strncmp(rfb_pipeline_canonical(tail), "randaug=n=1:m=9", 15) == 0);
	CHECK(rfb_pipeline_join(head, tail, &joined, NULL) == 0);
	CHECK(strcmp(rfb_pipeline_canonical(joined), rfb_pipeline_canonical(p)) == 0);
	rfb_pipeline_free(joined);
	CHECK(rfb_pipeline_join(tail, head, &joined, &err) == RFB_ESPEC && !joined);
	CHECK(strstr(err.msg, "normalize") != NULL);
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	CHECK(rfb_pipeline_split(p, 6, &head, &tail, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "normalize must stay") != NULL && !head && !tail);
	CHECK(rfb_pipeline_split(p, 7, &head, &tail, NULL) == RFB_EINVAL);
	CHECK(rfb_pipeline_split(p, 5, &head, &tail, NULL) == 0);
	CHECK(strcmp(rfb_pipeline_canonical(tail), "normalize=mean=0:std=1") == 0);
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	CHECK(rfb_pipeline_split(p, 0, &head, &tail, NULL) == 0);
	CHECK(rfb_pipeline_layers(head) == 0 && rfb_pipeline_layers(tail) == 6);
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	rfb_pipeline_free(p);
	rfb_pipeline_free(NULL);
}

/* A deterministic test photo-like image. */
static void make_image(rfb_image *img, rfb_imgbuf *buf, int w, int h, int c,
		       unsigned seed)
{
	CHECK(rfb_image_alloc(img, buf, w, h, c, NULL) == 0);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w * c; x++) {
			seed = seed * 1664525u + 1013904223u;
			img->data[(size_t)y * img->stride + x] =
				(unsigned char)(x / c * 255 / w ^ y * 3 ^ (seed >> 29));
		}
}

static int same_output(const struct rfb_pipe_out *a, const struct rfb_pipe_out *b)
{
	return a->size == b->size && a->dtype == b->dtype &&
	       memcmp(&a->shape, &b->shape, sizeof a->shape) == 0 &&
	       memcmp(a->data, b->data, a->size) == 0;
}

static const char *const det_spec =
	"resize=80,randaug=n=2:m=9,crop=64:pad=4,flip,normalize=imagenet";

static void test_determinism(void)
{
	rfb_pipeline *p = parse_ok(det_spec);
	rfb_pipe_ctx *c1 = rfb_pipe_ctx_new(NULL), *c2 = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf ib = { 0 };
	rfb_image in;
	struct rfb_pipe_out o1, o2;
	unsigned char *first = malloc(64 * 64 * 3 * 4);
	int differ = 0;

	make_image(&in, &ib, 120, 97, 3, 7);
	for (uint32_t s = 0; s < 20; s++) {
		struct rfb_pipe_key k = { 42, 3, s, RFB_STAGE_FINAL };
		CHECK(rfb_pipe_run(c1, p, &in, &k, &o1, NULL) == 0);
		CHECK(o1.shape.width == 64 && o1.shape.height == 64 &&
		      o1.dtype == RFB_DTYPE_F32 && o1.size == 64 * 64 * 3 * 4);
		if (s == 0)
			memcpy(first, o1.data, o1.size);
		else
			differ += memcmp(first, o1.data, o1.size) != 0;
		/* another context, after other samples: the same output */
		struct rfb_pipe_key k2 = { 42, 3, s + 1000, RFB_STAGE_FINAL };
		CHECK(rfb_pipe_run(c2, p, &in, &k2, &o2, NULL) == 0);
		CHECK(rfb_pipe_run(c2, p, &in, &k, &o2, NULL) == 0);
		CHECK(same_output(&o1, &o2));
	}
	CHECK(differ >= 15); /* the key matters */
	/* another epoch, seed or stage changes the draws */
	struct rfb_pipe_key k = { 42, 3, 0, RFB_STAGE_FINAL };
	CHECK(rfb_pipe_run(c1, p, &in, &k, &o1, NULL) == 0);
	memcpy(first, o1.data, o1.size);
	k.stage_base = RFB_STAGE_PARTIAL;
	CHECK(rfb_pipe_run(c1, p, &in, &k, &o1, NULL) == 0);
	k.stage_base = RFB_STAGE_FINAL;
	k.epoch = 4;
	CHECK(rfb_pipe_run(c2, p, &in, &k, &o2, NULL) == 0);
	CHECK(memcmp(first, o1.data, o1.size) != 0 || memcmp(first, o2.data, o2.size) != 0);
	free(first);
	rfb_imgbuf_free(&ib);
	rfb_pipe_ctx_free(c1);
	rfb_pipe_ctx_free(c2);
	rfb_pipeline_free(p);
}

struct worker {
	const rfb_pipeline *p;
	const rfb_image *in;
	uint32_t first, step, count;
	uint32_t sums[64];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_out o;

	for (uint32_t s = w->first; s < w->count; s += w->step) {
		struct rfb_pipe_key k = { 9, 1, s, RFB_STAGE_PARTIAL };
		uint32_t h = 2166136261u;
		if (rfb_pipe_run(ctx, w->p, w->in, &k, &o, NULL))
			continue;
		for (size_t i = 0; i < o.size; i++)
			h = (h ^ ((const unsigned char *)o.data)[i]) * 16777619u;
		w->sums[s] = h;
	}
	rfb_pipe_ctx_free(ctx);
	return NULL;
}

/* Two threads sharing one pipeline, samples interleaved, give the same
 * outputs as one thread in reverse order. */
static void test_threads(void)
{
	rfb_pipeline *p = parse_ok(det_spec);
	rfb_imgbuf ib = { 0 };
	rfb_image in;
	struct worker a = { p, &in, 0, 2, 64, { 0 } }, b = a, one = a;
	pthread_t ta, tb;

	make_image(&in, &ib, 90, 130, 3, 11);
	b.first = 1;
	CHECK(pthread_create(&ta, NULL, work, &a) == 0);
	CHECK(pthread_create(&tb, NULL, work, &b) == 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	one.step = 1;
	work(&one);
	for (int s = 0; s < 64; s++)
		CHECKF(one.sums[s] && one.sums[s] == (s % 2 ? b.sums[s] : a.sums[s]),
		       "sample %d", s);
	rfb_imgbuf_free(&ib);
	rfb_pipeline_free(p);
}

/* What each filter does, against the library calls it stands for. */
/* rgb on a gray image is the gray channel three times: the pipeline
 * keeps one channel (gray3) while it can, with the same output as the
 * replicated image gets. */
static void test_gray_as_rgb(void)
{
	static const char *const specs[] = {
		"resize=64,randaug=n=2:m=9,crop=48,flip",
		"randaug=n=2:m=25:interp=bilinear:fill=3/3/3,crop=40:pad=8:fill=0/9/0",
		"trivialaug=fill=4/5/6,normalize=imagenet",
		"autoaug=policy=svhn,gray,resize=30",
		"crop=70:pad=10:fill=1/2/3,resize=50,flip",
	};
	rfb_pipe_ctx *a = rfb_pipe_ctx_new(NULL), *b = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf gb = { 0 }, cb = { 0 };
	rfb_image gray, rgb;
	struct rfb_pipe_out oa, ob;
	char spec[256];

	make_image(&gray, &gb, 77, 51, 1, 9);
	CHECK(rfb_image_alloc(&rgb, &cb, 77, 51, 3, NULL) == 0);
	CHECK(rfb_to_rgb(&gray, &rgb, NULL) == 0);
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		rfb_pipeline *pg, *pc;
		snprintf(spec, sizeof spec, "rgb,%s", specs[i]);
		/* the same layers (the same random streams) for both; rgb is
		 * nothing on the RGB image */
		pg = parse_ok(spec);
		pc = parse_ok(spec);
		for (uint32_t s = 0; s < 20; s++) {
			struct rfb_pipe_key k = { 3, 0, s, RFB_STAGE_PARTIAL };
			CHECK(rfb_pipe_run(a, pg, &gray, &k, &oa, NULL) == 0);
			CHECK(rfb_pipe_run(b, pc, &rgb, &k, &ob, NULL) == 0);
			CHECKF(same_output(&oa, &ob), "%s sample %u", specs[i], s);
		}
		rfb_pipeline_free(pg);
		rfb_pipeline_free(pc);
	}
	rfb_imgbuf_free(&gb);
	rfb_imgbuf_free(&cb);
	rfb_pipe_ctx_free(a);
	rfb_pipe_ctx_free(b);
}

static void test_filter_semantics(void)
{
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	rfb_resizer *rz = rfb_resizer_new(NULL);
	rfb_imgbuf ib = { 0 }, wb = { 0 };
	rfb_image in, want;
	struct rfb_pipe_out o;
	struct rfb_pipe_key k = { 1, 0, 5, RFB_STAGE_PARTIAL };
	rfb_pipeline *p;

	make_image(&in, &ib, 77, 51, 3, 3);
	p = parse_ok("resize=40:interp=bicubic,centercrop=30x20");
	CHECK(rfb_pipe_run(ctx, p, &in, &k, &o, NULL) == 0);
	CHECK(rfb_image_alloc(&want, &wb, 60, 40, 3, NULL) == 0);
	CHECK(rfb_resize(rz, &in, &want, RFB_INTERP_BICUBIC, NULL) == 0);
	struct rfb_rect r = rfb_centercrop_rect(60, 40, 30, 20);
	rfb_image v = rfb_crop_view(&want, &r);
	struct golden_diff d = golden_compare(&o.img, &v);
	CHECK(d.same_shape && d.max_abs == 0);
	CHECK(o.img.stride == 20 * 3 && o.data == o.img.data && o.size == 20 * 30 * 3);
	rfb_pipeline_free(p);

	/* crop with padding: draws from the layer's own stream */
	p = parse_ok("gray,crop=60:pad=5:fill=200");
	CHECK(rfb_pipe_run(ctx, p, &in, &k, &o, NULL) == 0);
	rfb_rng rng;
	struct rfb_padding pad = { 5, 5, 5, 5 };
	rfb_rng_init(&rng, 1, 0, 5, RFB_STAGE_PARTIAL + 1);
	CHECK(rfb_randcrop_rect(&rng, 77, 51, 60, 60, &pad, 0, &r, NULL) == 0);
	CHECK(rfb_image_alloc(&want, &wb, 77, 51, 1, NULL) == 0);
	CHECK(rfb_to_gray(&in, &want, NULL) == 0);
	rfb_imgbuf cb = { 0 };
	rfb_image crop;
	unsigned char fill[3] = { 200, 200, 200 };
	CHECK(rfb_image_alloc(&crop, &cb, 60, 60, 1, NULL) == 0);
	CHECK(rfb_crop(&want, &r, fill, &crop, NULL) == 0);
	d = golden_compare(&o.img, &crop);
	CHECK(d.same_shape && d.max_abs == 0);
	rfb_imgbuf_free(&cb);
	rfb_pipeline_free(p);

	/* flip=p=1 always flips; the input is never modified */
	p = parse_ok("flip=1");
	unsigned char px0 = in.data[0];
	CHECK(rfb_pipe_run(ctx, p, &in, &k, &o, NULL) == 0);
	CHECK(o.img.data[0] == rfb_image_px(&in, 76, 0)[0] && in.data[0] == px0);
	rfb_pipeline_free(p);

	/* the empty pipeline copies */
	p = parse_ok("");
	CHECK(rfb_pipe_run(ctx, p, &in, &k, &o, NULL) == 0);
	CHECK(o.img.data != in.data && memcmp(o.img.data, in.data, 77 * 51 * 3) == 0);
	rfb_pipeline_free(p);

	/* a crop larger than the image is an error, not a crash */
	p = parse_ok("crop=100");
	rfb_err err = { 0 };
	CHECK(rfb_pipe_run(ctx, p, &in, &k, &o, &err) == RFB_EINVAL);
	rfb_pipeline_free(p);
	in.channels = 2;
	p = parse_ok("flip");
	CHECK(rfb_pipe_run(ctx, p, &in, &k, &o, &err) == RFB_EINVAL);
	rfb_pipeline_free(p);

	rfb_imgbuf_free(&ib);
	rfb_imgbuf_free(&wb);
	rfb_resizer_free(rz);
	rfb_pipe_ctx_free(ctx);
}

/* Same-sized inputs: after the first run, no heap growth at all.  (With
 * rrcrop the buffers grow until the largest crop has been seen.) */
static void test_steady_state(void)
{
	rfb_pipeline *p = parse_ok("resize=96,randaug=n=2:m=9,crop=64:pad=4,flip,"
				   "normalize=imagenet");
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf ib = { 0 };
	rfb_image in;
	struct rfb_pipe_out o;
	size_t before = 0;

	make_image(&in, &ib, 200, 150, 3, 1);
	for (uint32_t s = 0; s < 30; s++) {
		struct rfb_pipe_key k = { 5, 0, s, RFB_STAGE_PARTIAL };
		if (s == 10)
			before = mallinfo2().uordblks;
		CHECK(rfb_pipe_run(ctx, p, &in, &k, &o, NULL) == 0);
	}
	CHECKF(mallinfo2().uordblks == before, "heap %zu -> %zu", before,
	       mallinfo2().uordblks);
	rfb_imgbuf_free(&ib);
	rfb_pipe_ctx_free(ctx);
	rfb_pipeline_free(p);
}

/* rfb_pipe_run_into gives rfb_pipe_run's bytes; an 8-bit HWC output
 * lands in the caller's memory (also when the last layer is a view or
 * writes nothing), asked once with the output's shape; a float output
 * or one whose size is drawn never asks. */
static void test_run_into(void)
{
	static const char *const specs[] = {
		"crop=64,flip=p=1", "crop=64,flip=p=0", "centercrop=64",
		"crop=64:pad=4,flip", "flip=p=1,crop=64", "resize=64x64,flip",
		"crop=64,randaug=n=2:m=9,flip", "crop=64,gray,flip=p=1",
		"crop=64,rgb,flip=p=1", "crop=64,augmix", "crop=64,erasing=p=1",
		"crop=64,rgb,flip,normalize=imagenet", "resize=80,crop=48",
		"rotation=30:expand=1",
	};
	rfb_pipe_ctx *c1 = rfb_pipe_ctx_new(NULL), *c2 = rfb_pipe_ctx_new(NULL);
	rfb_imgbuf ib = { 0 }, gb = { 0 };
	rfb_image rgb, gray;

	make_image(&rgb, &ib, 120, 97, 3, 7);
	make_image(&gray, &gb, 90, 71, 1, 9);
	for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
		rfb_pipeline *p = parse_ok(specs[i]);
		for (int g = 0; g < 2; g++) {
			const rfb_image *in = g ? &gray : &rgb;
			for (uint32_t s = 0; s < 6; s++) {
				struct rfb_pipe_key k = { 42, 1, s, RFB_STAGE_FINAL };
				struct rfb_pipe_out a, b;
				struct room rm = { { 0 }, 0, 0, 0, 0 };
				struct rfb_pipe_dest d = { give_room, &rm };
				rfb_err e = { 0 };
				CHECKF(rfb_pipe_run(c1, p, in, &k, &a, &e) == 0, "%s: %s",
				       specs[i], e.msg);
				int fixed = a.dtype == RFB_DTYPE_U8 &&
					    !strstr(specs[i], "expand=1");
				/* room for any output, a guard before it */
				CHECK(rfb_imgbuf_reserve(&rm.buf, RFB_RECORD_HEADER_SIZE +
							 64 * 64 * 3, NULL) == 0);
				memset(rm.buf.data, 0xa5, rm.buf.cap);
				CHECK(rfb_pipe_run_into(c2, p, in, &k, &d, &b, NULL) == 0);
				CHECK(same_output(&a, &b));
				CHECKF(rm.calls == fixed, "%s: asked %d times",
				       specs[i], rm.calls);
				if (fixed)
					CHECK(room_holds(&rm, &b));
				CHECK(rm.buf.data[RFB_RECORD_HEADER_SIZE - 1] == 0xa5);
				rfb_imgbuf_free(&rm.buf);
			}
		}
		rfb_pipeline_free(p);
	}
	rfb_imgbuf_free(&ib);
	rfb_imgbuf_free(&gb);
	rfb_pipe_ctx_free(c1);
	rfb_pipe_ctx_free(c2);
}

/* rfb_pipeline_check_pixels: each layer's least size against the cap. */
static void test_pixel_cap(void)
{
	static const struct {
		const char *spec;
		uint64_t cap;
		const char *refused; /* NULL: accepted; else in the message */
	} cases[] = {
		{ "pad=30000,crop=56", 0, "layer 1 (pad) makes images of 60001x60001" },
		{ "pad=4000,crop=56", 0, NULL },
		{ "resize=10000x10001", 0, "layer 1 (resize) makes images of 10000x10001" },
		{ "resize=10000,crop=56", 0, NULL },            /* 10^8: the cap */
		{ "resize=10001,crop=56", 0, "10001x10001" },
		{ "resize=20000:max_size=30000,crop=56", 0, NULL }, /* 1x1 or more */
		{ "crop=40x80:pad_if_needed=1", 3199, "40x80 pixels or more (3200)" },
		{ "crop=40x80:pad_if_needed=1", 3200, NULL },
		{ "resize=60x60,rotation=degrees=0-90:expand=1,centercrop=50", 3599, "60x60" },
		{ "resize=60x40,rotation=degrees=0-90:expand=1,centercrop=30", 2400, NULL },
		/* every branch; after a gate, the least of its branches */
		{ "choice=2,flip,pad=100,crop=10", 10000, "layer 3 (pad) makes images of 201x201" },
		{ "apply=p=0.5,pad=40,pad=40,crop=10", 6561, NULL },
		{ "apply=p=0.5,pad=40,pad=40,crop=10", 6560, "layer 2 (pad) makes images of 81x81" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		rfb_pipeline *p;
		rfb_err err = { 0 };
		int rc;
		CHECKF(rfb_pipeline_parse(cases[i].spec, &p, &err) == 0, "%s: %s",
		       cases[i].spec, err.msg);
		rc = rfb_pipeline_check_pixels(p, cases[i].cap, &err);
		if (!cases[i].refused)
			CHECKF(rc == 0, "%s: %s", cases[i].spec, err.msg);
		else
			CHECKF(rc == RFB_ESPEC && strstr(err.msg, cases[i].refused),
			       "%s: rc %d, %s", cases[i].spec, rc, err.msg);
		rfb_pipeline_free(p);
	}
}

int main(void)
{
	RUN(test_parse_errors);
	RUN(test_range_exponent);
	RUN(test_long_spec_error);
	RUN(test_canonical);
	RUN(test_layers_and_types);
	RUN(test_gates);
	RUN(test_shapes);
	RUN(test_split_join);
	RUN(test_determinism);
	RUN(test_run_into);
	RUN(test_threads);
	RUN(test_filter_semantics);
	RUN(test_gray_as_rgb);
	RUN(test_steady_state);
	RUN(test_pixel_cap);
	return test_done();
}
