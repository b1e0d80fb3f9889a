/*
 * test_pipeline_jpeg.c - running pipelines on JPEG bytes: folding the
 * first layers into region and DCT-scaled decoding must give what a full
 * decode followed by the same pipeline gives - bit for bit without DCT
 * scaling, within the augmentation tolerance with it - and must draw the
 * same random parameters.  Bad JPEGs are errors, never crashes.
 */
#include <math.h>

#include "refurb/decode.h"
#include "refurb/encode.h"
#include "refurb/pipeline.h"
#include "dest_room.h"
#include "golden.h"
#include "test.h"

/* A photo-like w x h RGB picture: smooth shading, edges and texture. */
static void make_photo(rfb_image *img, rfb_imgbuf *buf, int w, int h)
{
	unsigned seed = 12345;

	CHECK(rfb_image_alloc(img, buf, w, h, 3, NULL) == 0);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			for (int c = 0; c < 3; c++) {
				double v = 128 + 70 * sin(x / (23.0 + 9 * c)) *
							 cos(y / 31.0) +
					   40 * sin((x + 2 * y) / 7.0 + c);
				seed = seed * 1664525u + 1013904223u;
				v += (int)(seed >> 28) - 8;
				if ((x / 97 + y / 61) % 5 == c)
					v = 40 + 80 * c;
				rfb_image_px(img, x, y)[c] =
					(unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
			}
}

struct jpeg {
	rfb_imgbuf bytes;
	size_t len;
};

static void encode_photo(struct jpeg *j, int w, int h, int gray)
{
	rfb_imgbuf pb = { 0 }, gb = { 0 };
	rfb_image photo, g;
	rfb_encoder *e = rfb_encoder_new(NULL);

	make_photo(&photo, &pb, w, h);
	if (gray) {
		CHECK(rfb_image_alloc(&g, &gb, w, h, 1, NULL) == 0);
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
				rfb_image_px(&g, x, y)[0] = rfb_image_px(&photo, x, y)[1];
		photo = g;
	}
	CHECK(rfb_jpeg_encode(e, &photo, 90, RFB_ENCODE_420, &j->bytes, &j->len,
			      NULL) == 0);
	rfb_encoder_free(e);
	rfb_imgbuf_free(&pb);
	rfb_imgbuf_free(&gb);
}

/* The reference: full decode (RGB, like torchvision's loader), then the
 * pipeline on the decoded image. */
static int reference(rfb_pipe_ctx *ctx, const rfb_pipeline *p, const struct jpeg *j,
		     const struct rfb_pipe_key *k, struct rfb_pipe_out *o)
{
	static rfb_decoder *dec;
	static rfb_imgbuf buf;
	rfb_image img;

	if (!dec)
		dec = rfb_decoder_new(NULL);
	if (rfb_decode(dec, j->bytes.data, j->len, NULL, &img, &buf, NULL, NULL))
		return -1;
	return rfb_pipe_run(ctx, p, &img, k, o, NULL);
}

static struct golden_diff compare_out(const struct rfb_pipe_out *a,
				      const struct rfb_pipe_out *b)
{
	return golden_compare(&a->img, &b->img);
}

struct jcase {
	const char *spec;
	int folded;      /* layers the plan folds into the decode */
	int scaled;      /* 1 if DCT scaling is expected at the default ratio */
};

static void run_cases(const struct jpeg *j, const struct jcase *cases, int n)
{
	rfb_pipe_ctx *fast = rfb_pipe_ctx_new(NULL), *exact = rfb_pipe_ctx_new(NULL);
	rfb_pipe_ctx *ref = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_out of, oe, orf;
	struct rfb_pipe_decode dd;

	rfb_pipe_ctx_set_scale_ratio(exact, 0); /* regions only */
	for (int c = 0; c < n; c++) {
		rfb_pipeline *p = NULL;
		int folded = 0, scaled = 0;
		CHECK(rfb_pipeline_parse(cases[c].spec, &p, NULL) == 0);
		for (uint32_t s = 0; s < 4 && p; s++) {
			struct rfb_pipe_key k = { 77, 2, s, RFB_STAGE_PARTIAL };
			CHECK(reference(ref, p, j, &k, &orf) == 0);
			CHECK(rfb_pipe_run_jpeg(exact, p, j->bytes.data, j->len, &k,
						&oe, NULL) == 0);
			struct golden_diff d = compare_out(&oe, &orf);
			CHECKF(d.same_shape && d.max_abs == 0,
			       "%s sample %u: region decode differs (max %d)",
			       cases[c].spec, s, d.max_abs);
			rfb_pipe_ctx_last_decode(exact, &dd);
			CHECK(dd.scale_denom == 1);
			CHECK(rfb_pipe_run_jpeg(fast, p, j->bytes.data, j->len, &k,
						&of, NULL) == 0);
			d = compare_out(&of, &orf);
			CHECKF(golden_ok_color(&d), "%s sample %u: within1 %.4f mae %.3f",
			       cases[c].spec, s, d.within1, d.mean_abs);
			rfb_pipe_ctx_last_decode(fast, &dd);
			folded |= dd.layers_folded;
			scaled |= dd.scale_denom > 1;
			if (of.dtype == RFB_DTYPE_F32)
				CHECK(of.size == orf.size);
		}
		CHECKF(folded == cases[c].folded && scaled == cases[c].scaled,
		       "%s: folded %d scaled %d", cases[c].spec, folded, scaled);
		rfb_pipeline_free(p);
	}
	rfb_pipe_ctx_free(fast);
	rfb_pipe_ctx_free(exact);
	rfb_pipe_ctx_free(ref);
}

static void test_rgb_photo(void)
{
	static const struct jcase cases[] = {
		{ "resize=80,flip", 1, 1 },
		{ "resize=256,centercrop=224", 2, 0 },
		/* a centercrop that pads is not folded (found by fuzz_pipeline:
		 * its outside rectangle became the resize's window, read past
		 * the decoded rows) */
		{ "resize=200,centercrop=300", 1, 0 }, /* the resize alone,
						       * banded */
		{ "resize=90x120:interp=bicubic,crop=64,flip,normalize=imagenet", 2, 1 },
		{ "rrcrop=64", 1, 1 },
		{ "rrcrop=200:scale=0.5-1", 1, 0 },
		{ "rrcrop=32", 1, 0 }, /* too small to scale */
		{ "centercrop=300,flip", 1, 0 },
		{ "crop=256,resize=64", 1, 0 },
		{ "crop=1400:pad=8", 1, 0 }, /* folded when inside */
		{ "crop=1500x2000:pad=8", 0, 0 },
		{ "flip,resize=64", 0, 0 },
		{ "resize=1600", 1, 0 }, /* an upscale reads everything:
					  * folded for the band resize only */
		{ "gray,resize=80,crop=64", 2, 1 },
		{ "", 0, 0 },
	};
	struct jpeg j = { { 0 }, 0 };

	encode_photo(&j, 2000, 1500, 0);
	run_cases(&j, cases, (int)(sizeof cases / sizeof cases[0]));
	rfb_imgbuf_free(&j.bytes);
}

static void test_gray_photo(void)
{
	static const struct jcase cases[] = {
		{ "resize=64", 1, 1 },
		{ "gray,rrcrop=64:scale=0.6-1", 1, 1 },
		{ "rgb,centercrop=100", 1, 0 },
		{ "resize=200", 1, 0 }, /* the band resize */
	};
	struct jpeg j = { { 0 }, 0 };

	encode_photo(&j, 2000, 1500, 1);
	run_cases(&j, cases, (int)(sizeof cases / sizeof cases[0]));
	rfb_imgbuf_free(&j.bytes);
}

/* A grayscale JPEG runs as one channel (gray3) up to the output or to
 * the first layer filling with a colour that is not gray: bit for bit
 * what the RGB decode gives, with fast decode (regions only) and
 * without, for every augment policy, crops with gray and coloured
 * padding, gray and rgb filters and normalize. */
static void test_gray_jpeg_stays_gray(void)
{
	static const char *const specs[] = {
		"resize=256,randaug=n=2:m=9,crop=224,flip",
		"resize=120,randaug=n=3:m=20:interp=bilinear,crop=96:pad=6,flip",
		"resize=100,autoaug=policy=imagenet:fill=9/9/9,crop=64:pad=4:fill=10/20/30,flip",
		"trivialaug=fill=1/2/3,resize=64",
		"rrcrop=80,randaug=n=2:m=30,normalize=imagenet",
		"resize=70,gray,randaug=n=2:m=9,crop=48",
		"rgb,resize=64,randaug=n=1:m=12:interp=bicubic,gray,flip",
		"crop=270:pad=20:fill=5/5/5,resize=90",
		"resize=64,augmix=width=2:depth=2:fill=4/5/6,crop=48",
	};
	struct jpeg j = { { 0 }, 0 };
	rfb_pipe_ctx *exact = rfb_pipe_ctx_new(NULL), *full = rfb_pipe_ctx_new(NULL);
	rfb_pipe_ctx *ref = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_out oe, of, orf;

	encode_photo(&j, 333, 251, 1);
	rfb_pipe_ctx_set_scale_ratio(exact, 0);
	rfb_pipe_ctx_set_fast_decode(full, 0);
	for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
		rfb_pipeline *p = NULL;
		CHECKF(rfb_pipeline_parse(specs[c], &p, NULL) == 0, "%s", specs[c]);
		for (uint32_t s = 0; s < 25 && p; s++) {
			struct rfb_pipe_key k = { 5, 1, s, RFB_STAGE_PARTIAL };
			CHECK(reference(ref, p, &j, &k, &orf) == 0);
			CHECK(rfb_pipe_run_jpeg(exact, p, j.bytes.data, j.len, &k, &oe,
						NULL) == 0);
			CHECK(rfb_pipe_run_jpeg(full, p, j.bytes.data, j.len, &k, &of,
						NULL) == 0);
			CHECKF(oe.size == orf.size && of.size == orf.size &&
			       oe.dtype == orf.dtype &&
			       memcmp(oe.data, orf.data, orf.size) == 0 &&
			       memcmp(of.data, orf.data, orf.size) == 0,
			       "%s sample %u", specs[c], s);
			CHECK(oe.img.channels == orf.img.channels);
		}
		rfb_pipeline_free(p);
	}
	rfb_pipe_ctx_free(exact);
	rfb_pipe_ctx_free(full);
	rfb_pipe_ctx_free(ref);
	rfb_imgbuf_free(&j.bytes);
}

/* Augment layers followed by a crop run on windows (only what the crop
 * keeps, from what that reads; the resize and the decode only the first
 * window): bit for bit the full run, for every policy, both signs of
 * every op, crops on the borders, fills, gray JPEGs, ops that cannot run
 * on windows (bilinear geometry), augmix before the crop and crops with
 * padding (no windows). */
static void test_windows(void)
{
	static const char *const specs[] = {
		"resize=256,randaug=n=2:m=9,crop=224,flip",
		"resize=100,randaug=n=3:m=20,centercrop=64",
		"resize=90,autoaug=policy=imagenet,crop=80,flip",
		"resize=150,trivialaug=fill=3/4/5,crop=149",
		"resize=120,trivialaug,crop=100:pad=4",
		"randaug=n=2:m=15,crop=200,resize=64",
		"resize=128,randaug=n=2:m=9:interp=bilinear,crop=96",
		"resize=64,randaug=n=2:m=9:fill=10/20/30,crop=48,normalize=imagenet",
		"resize=70x90,randaug=n=4:m=30,autoaug=policy=svhn,crop=33x41,flip",
		/* augmix: its chains' geometry reads outside any window, so
		 * the windows stop before it (augmix.c) */
		"resize=100,augmix,centercrop=64",
		"resize=90,randaug=n=2:m=9,augmix=severity=5:interp=nearest,crop=80,flip",
	};
	rfb_pipe_ctx *exact = rfb_pipe_ctx_new(NULL), *ref = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_out oe, orf;
	struct rfb_pipe_decode dd;

	rfb_pipe_ctx_set_scale_ratio(exact, 0);
	for (int gray = 0; gray <= 1; gray++) {
		struct jpeg j = { { 0 }, 0 };
		int regions = 0, runs = 0;
		encode_photo(&j, 420, 300, gray);
		for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
			rfb_pipeline *p = NULL;
			CHECKF(rfb_pipeline_parse(specs[c], &p, NULL) == 0, "%s", specs[c]);
			for (uint32_t s = 0; s < 40 && p; s++) {
				struct rfb_pipe_key k = { 11, 3, s, RFB_STAGE_PARTIAL };
				CHECK(reference(ref, p, &j, &k, &orf) == 0);
				CHECK(rfb_pipe_run_jpeg(exact, p, j.bytes.data, j.len,
							&k, &oe, NULL) == 0);
				CHECKF(oe.size == orf.size && oe.dtype == orf.dtype &&
				       memcmp(oe.data, orf.data, orf.size) == 0,
				       "%s gray %d sample %u", specs[c], gray, s);
				rfb_pipe_ctx_last_decode(exact, &dd);
				regions += dd.width < 420 || dd.height < 300;
				runs++;
			}
			rfb_pipeline_free(p);
		}
		printf("# gray %d: %d of %d runs decoded a region\n", gray, regions, runs);
		CHECK(regions > runs / 4);
		rfb_imgbuf_free(&j.bytes);
	}
	rfb_pipe_ctx_free(exact);
	rfb_pipe_ctx_free(ref);
}

/* The folded crop draws exactly what the layer draws after a full
 * decode: identical outputs, so identical rectangles. */
static void test_fast_decode_off(void)
{
	struct jpeg j = { { 0 }, 0 };
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL), *ref = rfb_pipe_ctx_new(NULL);
	rfb_pipeline *p = NULL;
	struct rfb_pipe_out o, orf;
	struct rfb_pipe_decode dd;
	struct rfb_pipe_key k = { 1, 0, 3, RFB_STAGE_PARTIAL };

	encode_photo(&j, 400, 300, 0);
	CHECK(rfb_pipeline_parse("rrcrop=64", &p, NULL) == 0);
	rfb_pipe_ctx_set_fast_decode(ctx, 0);
	CHECK(rfb_pipe_run_jpeg(ctx, p, j.bytes.data, j.len, &k, &o, NULL) == 0);
	rfb_pipe_ctx_last_decode(ctx, &dd);
	CHECK(dd.layers_folded == 0 && dd.width == 400 && dd.height == 300 &&
	      dd.image_width == 400);
	CHECK(reference(ref, p, &j, &k, &orf) == 0);
	struct golden_diff d = compare_out(&o, &orf);
	CHECK(d.same_shape && d.max_abs == 0);
	rfb_pipeline_free(p);
	rfb_pipe_ctx_free(ctx);
	rfb_pipe_ctx_free(ref);
	rfb_imgbuf_free(&j.bytes);
}

/* Largest two-sample Kolmogorov-Smirnov distance between the sample
 * values of a and b (same size), channel by channel. */
static double ks_distance(const rfb_image *a, const rfb_image *b)
{
	double worst = 0;

	for (int c = 0; c < a->channels; c++) {
		long ha[256] = { 0 }, hb[256] = { 0 }, ca = 0, cb = 0;
		double n = (double)a->width * a->height;
		for (int y = 0; y < a->height; y++)
			for (int x = 0; x < a->width; x++) {
				ha[rfb_image_px((rfb_image *)a, x, y)[c]]++;
				hb[rfb_image_px((rfb_image *)b, x, y)[c]]++;
			}
		for (int v = 0; v < 256; v++) {
			ca += ha[v];
			cb += hb[v];
			double d = (ca > cb ? ca - cb : cb - ca) / n;
			worst = d > worst ? d : worst;
		}
	}
	return worst;
}

/* resize=S:dct=1 decodes at the smallest DCT scale that keeps the
 * target: not bit-exact with PIL's full decode + resize, but the same
 * shape and the same distribution of values (KS distance per channel),
 * where the default ratio (4) does not scale at all. */
static void test_dct_ratio(void)
{
	static const struct { const char *spec; int denom; } cases[] = {
		{ "resize=512", 1 },
		{ "resize=512:dct=1", 2 },
		{ "resize=300:dct=1", 4 },
		{ "resize=300:dct=2", 2 },
		{ "resize=256:dct=1,randaug=n=2:m=9,crop=224,flip", 4 },
	};
	struct jpeg j = { { 0 }, 0 };
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL), *ref = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_out o, orf;
	struct rfb_pipe_decode dd;

	encode_photo(&j, 2000, 1500, 0);
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		rfb_pipeline *p = NULL;
		CHECK(rfb_pipeline_parse(cases[c].spec, &p, NULL) == 0);
		for (uint32_t s = 0; s < 3 && p; s++) {
			struct rfb_pipe_key k = { 5, 1, s, RFB_STAGE_PARTIAL };
			CHECK(rfb_pipe_run_jpeg(ctx, p, j.bytes.data, j.len, &k, &o,
						NULL) == 0);
			rfb_pipe_ctx_last_decode(ctx, &dd);
			CHECKF(dd.scale_denom == cases[c].denom, "%s: 1/%d",
			       cases[c].spec, dd.scale_denom);
			CHECK(reference(ref, p, &j, &k, &orf) == 0);
			struct golden_diff d = compare_out(&o, &orf);
			CHECK(d.same_shape);
			double ks = ks_distance(&o.img, &orf.img);
			CHECKF(ks <= 0.02 && d.mean_abs <= 3.0,
			       "%s sample %u: KS %.4f mae %.3f", cases[c].spec, s,
			       ks, d.mean_abs);
			if (getenv("REFURB_TEST_VERBOSE"))
				printf("# %s sample %u: 1/%d KS %.4f mae %.3f within1 %.3f\n",
				       cases[c].spec, s, dd.scale_denom, ks,
				       d.mean_abs, d.within1);
		}
		rfb_pipeline_free(p);
	}
	rfb_pipe_ctx_free(ctx);
	rfb_pipe_ctx_free(ref);
	rfb_imgbuf_free(&j.bytes);
}

/* Band resize (the default: the folded resize's horizontal pass on each
 * band of decoded rows) against decoding whole then resizing: the same
 * bytes and the same decode for every way a resize is folded
 * (resize alone, with a crop, with a window plan, rrcrop's box, DCT
 * scaling, bicubic, a gray filter converting in the bands, a gray JPEG
 * staying one channel), and nearest (never banded). */
static void test_band_resize(void)
{
	static const char *const specs[] = {
		"resize=256,randaug=n=2:m=9,crop=224,flip",
		"resize=256,randaug=n=2:m=9",
		"resize=90x120:interp=bicubic,crop=64,flip",
		"resize=300:dct=1",
		"resize=64",
		"rrcrop=64",
		"rrcrop=200:scale=0.5-1:interp=bicubic",
		"gray,resize=80,crop=64",
		"resize=77:interp=nearest,flip",
		"resize=256,centercrop=224",
	};
	struct jpeg js[3] = { { { 0 }, 0 }, { { 0 }, 0 }, { { 0 }, 0 } };
	rfb_pipe_ctx *band = rfb_pipe_ctx_new(NULL), *whole = rfb_pipe_ctx_new(NULL);
	struct rfb_pipe_out ob, ow;
	struct rfb_pipe_decode db, dw;
	int banded = 0;

	encode_photo(&js[0], 500, 375, 0);
	encode_photo(&js[1], 1203, 997, 0);
	encode_photo(&js[2], 375, 500, 1);
	rfb_pipe_ctx_set_band_resize(band, RFB_PIPE_BAND_ON);
	rfb_pipe_ctx_set_band_resize(whole, RFB_PIPE_BAND_OFF);
	for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
		rfb_pipeline *p = NULL;
		CHECKF(rfb_pipeline_parse(specs[c], &p, NULL) == 0, "%s", specs[c]);
		for (uint32_t s = 0; s < 12 && p; s++) {
			const struct jpeg *j = &js[s % 3];
			struct rfb_pipe_key k = { 3, 1, s, RFB_STAGE_PARTIAL };
			CHECK(rfb_pipe_run_jpeg(band, p, j->bytes.data, j->len, &k, &ob,
						NULL) == 0);
			CHECK(rfb_pipe_run_jpeg(whole, p, j->bytes.data, j->len, &k, &ow,
						NULL) == 0);
			rfb_pipe_ctx_last_decode(band, &db);
			rfb_pipe_ctx_last_decode(whole, &dw);
			CHECKF(ob.size == ow.size && ob.dtype == ow.dtype &&
			       memcmp(ob.data, ow.data, ow.size) == 0,
			       "%s sample %u", specs[c], s);
			/* the same decode; a whole-image resize is folded
			 * only for the band resize */
			dw.layers_folded += db.layers_folded == 1 && dw.layers_folded == 0 &&
					    db.width == db.image_width &&
					    db.height == db.image_height;
			CHECKF(memcmp(&db, &dw, sizeof db) == 0, "%s sample %u: record",
			       specs[c], s);
			banded += db.layers_folded > 0 && !strstr(specs[c], "nearest");
		}
		rfb_pipeline_free(p);
	}
	CHECK(banded > 50);
	/* auto: a whole-image resize is banded above 1 MiB decoded only */
	rfb_pipe_ctx_set_band_resize(band, RFB_PIPE_BAND_AUTO);
	rfb_pipeline *p = NULL;
	CHECK(rfb_pipeline_parse("resize=256,randaug=n=2:m=9", &p, NULL) == 0);
	for (int i = 0; i < 3 && p; i++) {
		struct rfb_pipe_key k = { 3, 1, 0, RFB_STAGE_PARTIAL };
		CHECK(rfb_pipe_run_jpeg(band, p, js[i].bytes.data, js[i].len, &k, &ob,
					NULL) == 0);
		rfb_pipe_ctx_last_decode(band, &db);
		CHECKF(db.layers_folded == (i == 1), "image %d: folded %d", i,
		       db.layers_folded);
	}
	rfb_pipeline_free(p);
	rfb_pipe_ctx_free(band);
	rfb_pipe_ctx_free(whole);
	for (int i = 0; i < 3; i++)
		rfb_imgbuf_free(&js[i].bytes);
}

static void test_bad_jpeg(void)
{
	struct jpeg j = { { 0 }, 0 };
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	rfb_pipeline *p = NULL;
	struct rfb_pipe_out o;
	struct rfb_pipe_key k = { 1, 0, 0, RFB_STAGE_PARTIAL };
	rfb_err err = { 0 };

	encode_photo(&j, 300, 200, 0);
	CHECK(rfb_pipeline_parse("resize=64,flip", &p, NULL) == 0);
	CHECK(rfb_pipe_run_jpeg(ctx, p, j.bytes.data, 100, &k, &o, &err) < 0);
	CHECK(rfb_pipe_run_jpeg(ctx, p, "not a jpeg", 10, &k, &o, &err) < 0);
	CHECK(err.msg[0] != '\0');
	rfb_pipe_ctx_set_max_pixels(ctx, 1000);
	CHECK(rfb_pipe_run_jpeg(ctx, p, j.bytes.data, j.len, &k, &o, &err) == RFB_ELIMIT);
	rfb_pipe_ctx_set_max_pixels(ctx, RFB_IMAGE_DEFAULT_MAX_PIXELS);
	CHECK(rfb_pipe_run_jpeg(ctx, p, j.bytes.data, j.len, &k, &o, NULL) == 0);
	CHECK(o.shape.height == 64 && o.shape.width == 96);
	rfb_pipeline_free(p);
	rfb_pipe_ctx_free(ctx);
	rfb_imgbuf_free(&j.bytes);
}

/* rfb_pipe_run_jpeg_into gives rfb_pipe_run_jpeg's bytes, in the
 * caller's memory when the output is 8-bit HWC of a size the image's
 * fixes (asked once, with that shape), in the context otherwise; a raw
 * record encoded from it is the same record (no copy made). */
static void test_run_into(void)
{
	static const struct {
		const char *spec;
		int asks; /* dest->get is called */
	} cases[] = {
		{ "resize=256,randaug=n=2:m=9", 1 },
		{ "resize=256,randaug=n=1:m=9", 1 },
		{ "resize=120,trivialaug,crop=100", 1 },
		{ "resize=200x150,flip=p=1", 1 },
		{ "gray,resize=100,autoaug", 1 },
		{ "centercrop=300,resize=128", 1 },
		{ "rrcrop=96,flip", 1 },
		{ "resize=256", 1 },
		{ "resize=128,normalize=imagenet", 0 },
		{ "rotation=30:expand=1", 0 },
	};
	struct jpeg jr = { { 0 }, 0 }, jg = { { 0 }, 0 };
	rfb_pipe_ctx *a = rfb_pipe_ctx_new(NULL), *b = rfb_pipe_ctx_new(NULL);
	rfb_codec_ctx *cx = rfb_codec_ctx_new(NULL);
	struct rfb_codec raw = { RFB_CODEC_RAW, 0 };
	rfb_imgbuf ra = { 0 };
	size_t la, lb;

	encode_photo(&jr, 613, 411, 0);
	encode_photo(&jg, 333, 517, 1);
	for (int band = 0; band < 2; band++) {
		rfb_pipe_ctx_set_band_resize(b, band ? RFB_PIPE_BAND_ON : RFB_PIPE_BAND_OFF);
		for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
			rfb_pipeline *p = NULL;
			CHECK(rfb_pipeline_parse(cases[i].spec, &p, NULL) == 0);
			for (uint32_t s = 0; s < 8 && p; s++) {
				const struct jpeg *j = s % 2 ? &jg : &jr;
				struct rfb_pipe_key k = { 5, 1, s, RFB_STAGE_PARTIAL };
				struct room rm = { { 0 }, 0, 0, 0, 0 };
				struct rfb_pipe_dest d = { give_room, &rm };
				struct rfb_pipe_out oa, ob;
				CHECK(rfb_pipe_run_jpeg(a, p, j->bytes.data, j->len, &k,
							&oa, NULL) == 0);
				CHECK(rfb_pipe_run_jpeg_into(b, p, j->bytes.data, j->len,
							     &k, &d, &ob, NULL) == 0);
				CHECK(oa.size == ob.size);
				CHECK(oa.dtype == ob.dtype);
				CHECKF(memcmp(oa.data, ob.data, oa.size) == 0,
				       "%s sample %u band %d: other bytes",
				       cases[i].spec, s, band);
				CHECKF(rm.calls == cases[i].asks, "%s: asked %d times",
				       cases[i].spec, rm.calls);
				if (!rm.calls) {
					rfb_imgbuf_free(&rm.buf);
					continue;
				}
				CHECK(room_holds(&rm, &ob));
				/* the record made in place is the record */
				CHECK(rfb_record_encode(cx, &raw, &oa.img, s, 1, 2, &ra,
							&la, NULL) == 0);
				CHECK(rfb_record_encode(cx, &raw, &ob.img, s, 1, 2,
							&rm.buf, &lb, NULL) == 0);
				CHECK(la == lb);
				CHECK(memcmp(ra.data, rm.buf.data, la) == 0);
				rfb_imgbuf_free(&rm.buf);
			}
			rfb_pipeline_free(p);
		}
	}
	rfb_imgbuf_free(&ra);
	rfb_imgbuf_free(&jr.bytes);
	rfb_imgbuf_free(&jg.bytes);
	rfb_codec_ctx_free(cx);
	rfb_pipe_ctx_free(a);
	rfb_pipe_ctx_free(b);
}

int main(void)
{
	RUN(test_rgb_photo);
	RUN(test_gray_photo);
	RUN(test_fast_decode_off);
	RUN(test_gray_jpeg_stays_gray);
	RUN(test_windows);
	RUN(test_dct_ratio);
	RUN(test_band_resize);
	RUN(test_bad_jpeg);
	RUN(test_run_into);
	return test_done();
}
