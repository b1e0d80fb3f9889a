/*
 * test_decode.c - the JPEG decoder and encoder against PIL's decodes
 * (tests/data/jpeg/, made by scripts/make-test-jpegs): every variant
 * bit-exact at scales 1, 1/2, 1/4, 1/8; regions equal to the same region
 * of a full decode; the colour modes; the header info; hostile input
 * (truncation at every byte, corrupt entropy data, absurd sizes, pixel
 * and scan limits, garbage, byte mutations) giving the right code without
 * printing anything; the scaling rule; encode -> decode round trips.
 */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "golden.h"
#include "refurb/decode.h"
#include "refurb/encode.h"
#include "refurb/io.h"
#include "refurb/rng.h"
#include "test.h"

#define DATA "tests/data/jpeg/"

static const char *const variants[] = {
	"rgb444", "rgb422", "rgb420", "rgb440", "rgb411", "prog420",
	"prog444", "restart420", "arith422", "gray", "gray-prog", "cmyk",
	"ycck", "tiny1x1",
};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])

static rfb_decoder *dec;
static rfb_imgbuf buf, buf2, gbuf;

struct file {
	unsigned char *data;
	size_t len;
};

static struct file load(const char *name)
{
	struct file f = { 0 };
	char path[256];
	rfb_err err = { 0 };

	snprintf(path, sizeof path, DATA "%s", name);
	if (rfb_file_load(path, 1 << 24, &f.data, &f.len, &err))
		printf("# cannot load %s: %s\n", path, err.msg);
	return f;
}

static int decode(const struct file *f, const struct rfb_decode_opts *o,
		  rfb_image *img, rfb_imgbuf *b)
{
	rfb_err err = { 0 };
	int rc = rfb_decode(dec, f->data, f->len, o, img, b, NULL, &err);

	CHECK(rc == err.code);
	CHECK(rc == 0 || err.msg[0] != '\0');
	return rc;
}

static int same(const rfb_image *a, const rfb_image *b)
{
	struct golden_diff d = golden_compare(a, b);

	return d.same_shape && d.exact == 1.0;
}

/* ---- goldens ----------------------------------------------------------- */

static void check_golden_line(char *line)
{
	char jpeg[64], mode[16], golden[64], path[160];
	int denom;
	struct file f;
	rfb_image img, want;
	struct rfb_decode_opts o = { 0 };

	if (line[0] == '#' ||
	    sscanf(line, "%63s %15s %d %63s", jpeg, mode, &denom, golden) != 4)
		return;
	f = load(jpeg);
	snprintf(path, sizeof path, DATA "%s", golden);
	CHECKF(golden_read_pnm(path, &want, &gbuf) == 0, "%s", path);
	o.scale_denom = denom;
	o.color = strcmp(mode, "gray") == 0 ? RFB_DECODE_GRAY : RFB_DECODE_RGB;
	CHECKF(decode(&f, &o, &img, &buf) == 0, "%s", jpeg);
	CHECKF(same(&img, &want), "%s 1/%d %s differs from PIL", jpeg, denom,
	       mode);
	free(f.data);
}

/* Every row of the manifest: full decodes and PIL draft() decodes. */
static void test_goldens_exact(void)
{
	FILE *m = fopen(DATA "manifest.tsv", "r");
	char line[512];
	int n = 0;

	CHECK(m != NULL);
	while (m && fgets(line, sizeof line, m)) {
		check_golden_line(line);
		n++;
	}
	CHECKF(n >= 1 + 4 * (NVARIANTS - 1) + 1 + 4, "%d manifest rows", n);
	if (m)
		fclose(m);
}

/* A grayscale JPEG kept at 1 channel holds the golden's R samples. */
static void test_keep_gray(void)
{
	const char *names[] = { "gray", "gray-prog", "rgb420" };

	for (int i = 0; i < 3; i++) {
		char jpeg[64], ppm[160];
		struct rfb_decode_opts o = { .color = RFB_DECODE_KEEP };
		rfb_image img, want;
		struct file f;
		int gray = i < 2, ok = 1;

		snprintf(jpeg, sizeof jpeg, "%s.jpg", names[i]);
		snprintf(ppm, sizeof ppm, DATA "%s.ppm", names[i]);
		f = load(jpeg);
		CHECK(golden_read_pnm(ppm, &want, &gbuf) == 0);
		CHECK(decode(&f, &o, &img, &buf) == 0);
		CHECKF(img.channels == (gray ? 1 : 3), "%s", jpeg);
		for (int y = 0; gray && y < img.height; y++)
			for (int x = 0; x < img.width; x++)
				ok &= *rfb_image_px(&img, x, y) ==
				      *rfb_image_px(&want, x, y);
		CHECK(ok);
		CHECK(gray || same(&img, &want));
		free(f.data);
	}
}

static void test_header_info(void)
{
	static const struct {
		const char *name;
		int components, colorspace, subsampling;
	} want[] = {
		{ "rgb444.jpg", 3, TJCS_YCbCr, TJSAMP_444 },
		{ "rgb422.jpg", 3, TJCS_YCbCr, TJSAMP_422 },
		{ "rgb420.jpg", 3, TJCS_YCbCr, TJSAMP_420 },
		{ "rgb440.jpg", 3, TJCS_YCbCr, TJSAMP_440 },
		{ "rgb411.jpg", 3, TJCS_YCbCr, TJSAMP_411 },
		{ "gray.jpg", 1, TJCS_GRAY, TJSAMP_GRAY },
		{ "cmyk.jpg", 4, TJCS_CMYK, TJSAMP_444 },
		{ "ycck.jpg", 4, TJCS_YCCK, TJSAMP_420 },
	};

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct file f = load(want[i].name);
		struct rfb_jpeg_info info = { 0 };
		rfb_err err = { 0 };

		CHECK(rfb_decode_header(dec, f.data, f.len, NULL, &info, &err) == 0);
		CHECK(info.width == 67 && info.height == 53);
		CHECKF(info.components == want[i].components &&
		       info.colorspace == want[i].colorspace &&
		       info.subsampling == want[i].subsampling,
		       "%s: %d %d %d", want[i].name, info.components,
		       info.colorspace, info.subsampling);
		free(f.data);
	}
}

/* ---- scaled sizes and regions ------------------------------------------ */

static void test_scaled_sizes(void)
{
	struct file f = load("rgb420.jpg");
	rfb_image img;

	for (int d = 1; d <= 8; d *= 2) {
		struct rfb_decode_opts o = { .scale_denom = d };
		CHECK(decode(&f, &o, &img, &buf) == 0);
		CHECKF(img.width == rfb_decode_scaled_size(67, d) &&
		       img.height == rfb_decode_scaled_size(53, d),
		       "1/%d: %dx%d", d, img.width, img.height);
		CHECK(img.stride == (size_t)img.width * 3);
	}
	CHECK(rfb_decode_scaled_size(67, 8) == 9 &&
	      rfb_decode_scaled_size(64, 8) == 8);
	free(f.data);
}

/* Region (x, y, w, h) of full against a region decode. */
static int region_matches(const struct file *f, struct rfb_decode_opts o,
			  const rfb_image *full)
{
	rfb_image img, want = *full;

	if (decode(f, &o, &img, &buf2))
		return 0;
	want.data = rfb_image_px(full, o.x, o.y);
	want.width = o.width;
	want.height = o.height;
	return same(&img, &want);
}

/* Edge-heavy positions plus pseudo-random regions, every scale. */
static void regions_of(const struct file *f, const char *name,
		       enum rfb_decode_color color)
{
	static const int pos[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 63 };
	rfb_rng rng;

	rfb_rng_init(&rng, 42, 0, 0, 0);
	for (int d = 1; d <= 8; d *= 2) {
		struct rfb_decode_opts o = { .scale_denom = d, .color = color };
		rfb_image full;
		int bad = 0, n = 0;

		CHECK(decode(f, &o, &full, &buf) == 0);
		for (int i = 0; i < 15 * 15 + 300; i++, n++) {
			if (i < 15 * 15) {
				o.x = pos[i % 15] % full.width;
				o.y = pos[i / 15] % full.height;
				o.width = full.width - o.x;
				o.height = 1 + (i % 3) * (full.height - o.y - 1) / 2;
			} else {
				o.x = (int)rfb_rng_below(&rng, (uint32_t)full.width);
				o.y = (int)rfb_rng_below(&rng, (uint32_t)full.height);
				o.width = 1 + (int)rfb_rng_below(&rng, (uint32_t)(full.width - o.x));
				o.height = 1 + (int)rfb_rng_below(&rng, (uint32_t)(full.height - o.y));
			}
			bad += !region_matches(f, o, &full);
		}
		CHECKF(bad == 0, "%s 1/%d: %d of %d regions differ", name, d, bad, n);
	}
}

static void test_regions_exact(void)
{
	for (int i = 0; i < NVARIANTS; i++) {
		char jpeg[64];
		struct file f;

		snprintf(jpeg, sizeof jpeg, "%s.jpg", variants[i]);
		f = load(jpeg);
		regions_of(&f, jpeg, RFB_DECODE_RGB);
		if (i == 11 || i == 9)  /* cmyk, gray: the other colour paths */
			regions_of(&f, jpeg, i == 9 ? RFB_DECODE_KEEP
						     : RFB_DECODE_GRAY);
		free(f.data);
	}
}

/* RFB_DECODE_VIEW: the region's pixels as a view into the rows libjpeg
 * decodes (stride of its iMCU-aligned width), the same pixels as the
 * copied region, for every variant (colour paths that convert still
 * copy), scale and pseudo-random region. */
static void test_regions_view(void)
{
	rfb_rng rng;
	int views = 0;

	rfb_rng_init(&rng, 7, 0, 0, 0);
	for (int i = 0; i < NVARIANTS; i++) {
		char jpeg[64];
		struct file f;
		int bad = 0;

		snprintf(jpeg, sizeof jpeg, "%s.jpg", variants[i]);
		f = load(jpeg);
		for (int d = 1; d <= 8; d *= 2) {
			struct rfb_decode_opts o = { .scale_denom = d };
			rfb_image full, img, want;
			CHECK(decode(&f, &o, &full, &buf) == 0);
			for (int k = 0; k < 60; k++) {
				o.x = (int)rfb_rng_below(&rng, (uint32_t)full.width);
				o.y = (int)rfb_rng_below(&rng, (uint32_t)full.height);
				o.width = 1 + (int)rfb_rng_below(&rng, (uint32_t)(full.width - o.x));
				o.height = 1 + (int)rfb_rng_below(&rng, (uint32_t)(full.height - o.y));
				o.flags = RFB_DECODE_VIEW;
				if (decode(&f, &o, &img, &buf2)) {
					bad++;
					continue;
				}
				want = full;
				want.data = rfb_image_px(&full, o.x, o.y);
				want.width = o.width;
				want.height = o.height;
				bad += !same(&img, &want) ||
				       img.stride < (size_t)img.width * img.channels;
				views += img.stride > (size_t)img.width * img.channels;
			}
		}
		CHECKF(bad == 0, "%s: %d views differ", jpeg, bad);
		free(f.data);
	}
	CHECK(views > 0);
}

static void test_bad_regions(void)
{
	struct file f = load("rgb420.jpg");
	rfb_image img;
	const struct rfb_decode_opts bad[] = {
		{ .x = -1, .width = 5, .height = 5 },
		{ .x = 63, .width = 5, .height = 5 },
		{ .y = 49, .width = 5, .height = 5 },
		{ .scale_denom = 2, .x = 30, .width = 5, .height = 5 },
		{ .scale_denom = 3 },
		{ .scale_denom = 16 },
		{ .color = 7 },
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECKF(decode(&f, &bad[i], &img, &buf) == RFB_EINVAL, "case %zu", i);
	/* the decoder is fine afterwards, and pixels need a header first */
	CHECK(decode(&f, NULL, &img, &buf) == 0);
	CHECK(rfb_decode_pixels(dec, NULL, &img, &buf, NULL) == RFB_EINVAL);
	free(f.data);
}

/* Decoding the same file again reuses the buffer: no allocation. */
static void test_buffer_reuse(void)
{
	struct file f = load("prog420.jpg");
	rfb_image img;
	unsigned char *p;

	CHECK(decode(&f, NULL, &img, &buf) == 0);
	p = buf.data;
	for (int i = 0; i < 5; i++)
		CHECK(decode(&f, NULL, &img, &buf) == 0 && buf.data == p);
	free(f.data);
}

/* ---- the scaling rule -------------------------------------------------- */

static void test_pick_scale(void)
{
	struct rfb_decode_target t = { .out_width = 224, .out_height = 224 };
	struct rfb_decode_opts o = { 0 };
	double box[4];

	/* 4000x3000 to short side 256: 1500 >= 4 * 256 at 1/2, 750 is not */
	CHECK(rfb_decode_pick_scale_short_side(4000, 3000, 256,
					       RFB_DECODE_MIN_RATIO) == 2);
	CHECK(rfb_decode_pick_scale_short_side(4000, 3000, 256, 1.0) == 8);
	CHECK(rfb_decode_pick_scale_short_side(3000, 4000, 256, 2.0) == 4);
	CHECK(rfb_decode_pick_scale_short_side(500, 375, 256, 1.0) == 1);
	CHECK(rfb_decode_pick_scale_short_side(8192, 8192, 256,
					       RFB_DECODE_MIN_RATIO) == 8);
	CHECK(rfb_decode_pick_scale(4000, 3000, &t, RFB_DECODE_MIN_RATIO) == 2);
	t.width = t.height = 1000;  /* a 1000x1000 crop resized to 224 */
	CHECK(rfb_decode_pick_scale(4000, 3000, &t, RFB_DECODE_MIN_RATIO) == 1);
	CHECK(rfb_decode_pick_scale(4000, 3000, &t, 2.0) == 2);
	t.out_width = t.out_height = 0;  /* kept at full resolution */
	CHECK(rfb_decode_pick_scale(4000, 3000, &t, 1.0) == 1);
	CHECK(rfb_decode_pick_scale(4000, 3000, NULL, 1.0) == 1);

	CHECK(rfb_decode_map_region(67, 53, 4, 10, 5, 30, 21, &o, box) == 0);
	CHECK(o.scale_denom == 4 && o.x == 2 && o.y == 1 && o.width == 8 &&
	      o.height == 6);
	CHECK(box[0] == 0.5 && box[1] == 0.25 && box[2] == 8.0 && box[3] == 5.5);
	CHECK(rfb_decode_map_region(67, 53, 8, 60, 0, 7, 53, &o, box) == 0);
	CHECK(o.x == 7 && o.width == 2 && o.height == 7);
	CHECK(rfb_decode_map_region(67, 53, 3, 0, 0, 5, 5, &o, box) == RFB_EINVAL);
	CHECK(rfb_decode_map_region(67, 53, 2, 60, 0, 8, 5, &o, box) == RFB_EINVAL);
	CHECK(rfb_decode_map_region(67, 53, 2, 0, 0, 0, 5, &o, box) == RFB_EINVAL);
}

/* ---- hostile input ----------------------------------------------------- */

static struct file copy_of(const struct file *f)
{
	struct file c = { malloc(f->len + 64), f->len };

	if (c.data)
		memcpy(c.data, f->data, f->len);
	return c;
}

/* Offset of the first byte after the marker 0xFF <marker>'s segment. */
static size_t after_segment(const struct file *f, int marker)
{
	for (size_t i = 2; i + 3 < f->len; i++)
		if (f->data[i] == 0xFF && f->data[i + 1] == marker)
			return i + 2 + (f->data[i + 2] << 8 | f->data[i + 3]);
	return 0;
}

static size_t find_marker(const struct file *f, int marker)
{
	for (size_t i = 2; i + 1 < f->len; i++)
		if (f->data[i] == 0xFF && f->data[i + 1] == marker)
			return i;
	return 0;
}

/* Cut everywhere: every prefix is RFB_ETRUNC, never grey padding. */
static void test_truncation(void)
{
	const char *names[] = { "rgb420.jpg", "prog420.jpg", "restart420.jpg",
				"arith422.jpg", "gray-prog.jpg", "ycck.jpg" };

	for (int i = 0; i < 6; i++) {
		struct file f = load(names[i]), cut;
		rfb_image img;
		int bad = 0;

		for (size_t len = 0; len < f.len; len++) {
			cut = copy_of(&f);
			cut.len = len;  /* a fresh allocation: ASan sees overreads */
			bad += decode(&cut, NULL, &img, &buf) != RFB_ETRUNC;
			free(cut.data);
		}
		CHECKF(bad == 0, "%s: %d cuts not reported as truncated",
		       names[i], bad);
		free(f.data);
	}
}

/* rfb_decode_pixels_bands: the bands, glued, are rfb_decode_pixels's
 * image (whole, regions, every scale, the three colour modes, every
 * variant), in order, each at most 16 rows and all 16 but the last. */
struct glue {
	rfb_image img;   /* the image the bands are copied into */
	int next;        /* the next row expected */
	int bad;         /* bands out of order, of a wrong shape or size */
	int stop_at;     /* >= 0: fail at the band starting at this row */
};

static int glue_band(void *arg, const rfb_image *rows, int y, rfb_err *err)
{
	struct glue *g = arg;

	if (g->stop_at >= 0 && y >= g->stop_at)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "stopped at %d", y);
	g->bad += y != g->next || rows->width != g->img.width ||
		  rows->channels != g->img.channels || rows->height < 1 ||
		  rows->height > 16 || rows->height > g->img.height - y ||
		  (rows->height < 16 && y + rows->height != g->img.height);
	for (int i = 0; !g->bad && i < rows->height; i++)
		memcpy(rfb_image_px(&g->img, 0, y + i),
		       rows->data + (size_t)i * rows->stride,
		       (size_t)rows->width * rows->channels);
	g->next = y + rows->height;
	return 0;
}

static int bands_match(const struct file *f, const struct rfb_decode_opts *o,
		       const rfb_image *want)
{
	struct glue g = { { 0 }, 0, 0, -1 };
	rfb_err err = { 0 };
	int ok;

	if (rfb_image_alloc(&g.img, &gbuf, want->width, want->height,
			    want->channels, NULL) ||
	    rfb_decode_header(dec, f->data, f->len, o, NULL, &err) ||
	    rfb_decode_pixels_bands(dec, o, glue_band, &g, &err))
		return 0;
	ok = !g.bad && g.next == want->height && same(&g.img, want);
	return ok;
}

static void test_bands(void)
{
	static const enum rfb_decode_color colors[] = {
		RFB_DECODE_RGB, RFB_DECODE_KEEP, RFB_DECODE_GRAY
	};
	rfb_rng rng;

	rfb_rng_init(&rng, 9, 0, 0, 0);
	for (int i = 0; i < NVARIANTS; i++) {
		char jpeg[64];
		struct file f;
		int bad = 0, n = 0;

		snprintf(jpeg, sizeof jpeg, "%s.jpg", variants[i]);
		f = load(jpeg);
		for (int d = 1; d <= 8; d *= 2)
			for (int c = 0; c < 3; c++) {
				struct rfb_decode_opts o = { .scale_denom = d,
							     .color = colors[c] };
				rfb_image full, want;
				CHECK(decode(&f, &o, &full, &buf) == 0);
				bad += !bands_match(&f, &o, &full), n++;
				for (int k = 0; k < 8; k++, n++) {
					o.x = (int)rfb_rng_below(&rng, (uint32_t)full.width);
					o.y = (int)rfb_rng_below(&rng, (uint32_t)full.height);
					o.width = 1 + (int)rfb_rng_below(&rng, (uint32_t)(full.width - o.x));
					o.height = 1 + (int)rfb_rng_below(&rng, (uint32_t)(full.height - o.y));
					o.flags = k & 1 ? RFB_DECODE_VIEW : 0;
					want = full;
					want.data = rfb_image_px(&full, o.x, o.y);
					want.width = o.width;
					want.height = o.height;
					bad += !bands_match(&f, &o, &want);
				}
			}
		CHECKF(bad == 0, "%s: %d of %d band decodes differ", jpeg, bad, n);
		free(f.data);
	}
}

/* A callback's error stops the decode and is returned; the decoder is
 * usable again; no callback is an error; truncation is RFB_ETRUNC. */
static void test_bands_errors(void)
{
	struct file f = load("rgb420.jpg"), cut;
	struct glue g = { { 0 }, 0, 0, 32 };
	rfb_err err = { 0 };
	rfb_image full;
	int bad = 0;

	CHECK(decode(&f, NULL, &full, &buf) == 0);
	CHECK(rfb_image_alloc(&g.img, &gbuf, full.width, full.height, 3, NULL) == 0);
	CHECK(rfb_decode_header(dec, f.data, f.len, NULL, NULL, &err) == 0);
	CHECK(rfb_decode_pixels_bands(dec, NULL, glue_band, &g, &err) == RFB_ELIMIT);
	CHECK(strcmp(err.msg, "stopped at 32") == 0);
	CHECK(g.next == 32 && g.bad == 0);
	CHECK(rfb_decode_pixels_bands(dec, NULL, glue_band, &g, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "header") != NULL);
	CHECK(rfb_decode_header(dec, f.data, f.len, NULL, NULL, &err) == 0);
	CHECK(rfb_decode_pixels_bands(dec, NULL, NULL, &g, &err) == RFB_EINVAL);
	CHECK(strstr(err.msg, "callback") != NULL);
	CHECK(bands_match(&f, &(struct rfb_decode_opts){ 0 }, &full));
	for (size_t len = 2; len < f.len; len += 7) {
		g.next = 0;
		g.stop_at = -1;
		cut = copy_of(&f);
		cut.len = len;
		if (rfb_decode_header(dec, cut.data, cut.len, NULL, NULL, &err) == 0)
			bad += rfb_decode_pixels_bands(dec, NULL, glue_band, &g,
						       &err) != RFB_ETRUNC;
		free(cut.data);
	}
	CHECKF(bad == 0, "%d cuts not reported as truncated", bad);
	free(f.data);
}

/* Rows above a cut of a baseline file still decode, exactly. */
static void test_region_above_cut(void)
{
	struct file f = load("rgb420.jpg"), cut = copy_of(&f);
	struct rfb_decode_opts o = { .x = 3, .y = 0, .width = 40, .height = 16 };
	rfb_image full, img;

	CHECK(decode(&f, NULL, &full, &buf) == 0);
	cut.len = f.len - f.len / 3;
	CHECK(decode(&cut, NULL, &img, &buf2) == RFB_ETRUNC);
	CHECK(region_matches(&cut, o, &full));
	free(cut.data);
	free(f.data);
}

static int decode_bytes(const void *data, size_t len)
{
	struct file f = { (unsigned char *)data, len };
	rfb_image img;

	return decode(&f, NULL, &img, &buf);
}

static void test_garbage(void)
{
	unsigned char junk[4096];
	rfb_rng rng;

	CHECK(decode_bytes("", 0) == RFB_ETRUNC);
	CHECK(decode_bytes("\xff", 1) == RFB_ETRUNC);
	CHECK(decode_bytes("\xff\xd8", 2) == RFB_ETRUNC);
	CHECK(decode_bytes("G", 1) == RFB_EDECODE);
	CHECK(decode_bytes("GIF89a\x01\x00\x01\x00", 10) == RFB_EDECODE);
	CHECK(decode_bytes("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16) == RFB_EDECODE);
	CHECK(decode_bytes("\xff\xd9", 2) == RFB_EDECODE);
	memset(junk, 0, sizeof junk);
	CHECK(decode_bytes(junk, sizeof junk) == RFB_EDECODE);
	rfb_rng_init(&rng, 7, 0, 0, 0);
	for (int i = 0; i < 200; i++) {
		size_t n = 2 + rfb_rng_below(&rng, sizeof junk - 2);
		int rc;

		for (size_t k = 0; k < n; k++)
			junk[k] = (unsigned char)rfb_rng_below(&rng, 256);
		junk[0] = 0xFF;
		junk[1] = 0xD8;  /* a JPEG start, then noise */
		rc = decode_bytes(junk, n);
		CHECKF(rc == RFB_EDECODE || rc == RFB_ETRUNC, "rc %d", rc);
	}
}

/* Overwrite the entropy-coded data of rgb420.jpg at its middle. */
static int corrupt_scan(const unsigned char *bytes, size_t n, unsigned flags)
{
	struct file f = load("rgb420.jpg"), c = copy_of(&f);
	size_t at = after_segment(&f, 0xDA);
	struct rfb_decode_opts o = { .flags = flags };
	rfb_image img;
	int rc;

	at += (f.len - at) / 2;
	memcpy(c.data + at, bytes, n);
	rc = decode(&c, &o, &img, &buf);
	free(c.data);
	free(f.data);
	return rc;
}

static void test_corrupt_data(void)
{
	struct file f = load("restart420.jpg"), c = copy_of(&f);
	size_t rst = find_marker(&f, 0xD1);
	rfb_image img;

	/* a marker inside the scan: "premature end of data segment" */
	CHECK(corrupt_scan((const unsigned char *)"\xff\xd0\xff\xd0", 4, 0) ==
	      RFB_EDECODE);
	/* all-ones bits are no Huffman code */
	CHECK(corrupt_scan((const unsigned char *)"\xff\x00\xff\x00\xff\x00", 6,
			   RFB_DECODE_LENIENT) == RFB_EDECODE);
	/* a restart marker out of sequence */
	CHECK(rst > 0);
	c.data[rst + 1] = 0xD5;
	CHECK(decode(&c, NULL, &img, &buf) == RFB_EDECODE);
	free(c.data);
	free(f.data);
}

/* Stray bytes before a marker: an error unless RFB_DECODE_LENIENT. */
static void test_lenient(void)
{
	struct file f = load("rgb420.jpg"), c = copy_of(&f);
	size_t at = after_segment(&f, 0xE0);
	struct rfb_decode_opts o = { .flags = RFB_DECODE_LENIENT };
	rfb_image img, want;

	CHECK(at > 0 && golden_read_pnm(DATA "rgb420.ppm", &want, &gbuf) == 0);
	memmove(c.data + at + 3, c.data + at, f.len - at);
	memcpy(c.data + at, "abc", 3);
	c.len += 3;
	CHECK(decode(&c, NULL, &img, &buf) == RFB_EDECODE);
	CHECK(decode(&c, &o, &img, &buf) == 0 && same(&img, &want));
	free(c.data);
	free(f.data);
}

static void set_size(struct file *f, int width, int height)
{
	size_t sof = find_marker(f, 0xC0);

	f->data[sof + 5] = (unsigned char)(height >> 8);
	f->data[sof + 6] = (unsigned char)height;
	f->data[sof + 7] = (unsigned char)(width >> 8);
	f->data[sof + 8] = (unsigned char)width;
}

static void test_sizes_and_limits(void)
{
	struct file f = load("rgb420.jpg"), c = copy_of(&f);
	struct rfb_decode_opts o = { .max_pixels = 67 * 53 };
	rfb_image img;

	CHECK(decode(&f, &o, &img, &buf) == 0);
	o.max_pixels = 67 * 53 - 1;
	CHECK(decode(&f, &o, &img, &buf) == RFB_ELIMIT);
	set_size(&c, 65535, 65535);
	CHECK(decode(&c, NULL, &img, &buf) == RFB_ELIMIT);
	set_size(&c, 65535, 2);  /* beyond libjpeg's 65500 */
	CHECK(decode(&c, NULL, &img, &buf) == RFB_ELIMIT);
	set_size(&c, 0, 53);
	CHECK(decode(&c, NULL, &img, &buf) == RFB_EDECODE);
	set_size(&c, 67, 0);
	CHECK(decode(&c, NULL, &img, &buf) == RFB_EDECODE);
	/* claims more than its data holds, before a genuine EOI: corrupt */
	set_size(&c, 1500, 1200);
	CHECK(decode(&c, NULL, &img, &buf) == RFB_EDECODE);
	free(c.data);
	free(f.data);
}

static void test_scan_limit(void)
{
	struct file bomb = load("bomb-883-scans.jpg"), prog = load("prog420.jpg");
	struct rfb_decode_opts o = { .color = RFB_DECODE_KEEP };
	rfb_image img;
	rfb_err err = { 0 };
	int flat = 1;

	CHECK(rfb_decode(dec, bomb.data, bomb.len, &o, &img, &buf, NULL, &err) ==
	      RFB_ELIMIT);
	CHECK(strstr(err.msg, "500 scans") != NULL);
	o.max_scans = 883;
	CHECK(decode(&bomb, &o, &img, &buf) == 0);
	CHECK(img.width == 8 && img.height == 8 && img.channels == 1);
	for (int i = 0; i < 64; i++)
		flat &= img.data[i] == 128;
	CHECK(flat);
	o.max_scans = 9;  /* prog420.jpg has 10 scans */
	CHECK(decode(&prog, &o, &img, &buf) == RFB_ELIMIT);
	o.max_scans = 10;
	CHECK(decode(&prog, &o, &img, &buf) == 0);
	free(bomb.data);
	free(prog.data);
}

/* Random byte changes: any outcome but a crash, a leak or a print. */
static void test_mutations(void)
{
	struct file good = load("rgb420.jpg");
	rfb_image want, img;
	rfb_rng rng;
	int counts[4] = { 0 };

	CHECK(golden_read_pnm(DATA "rgb420.ppm", &want, &gbuf) == 0);
	rfb_rng_init(&rng, 99, 0, 0, 0);
	for (int i = 0; i < 1500; i++) {
		static const char *const names[] = { "rgb420.jpg", "prog444.jpg",
						     "restart420.jpg" };
		struct file f = load(names[i % 3]);
		int n = 1 + (int)rfb_rng_below(&rng, 4), rc;

		for (int k = 0; k < n; k++)
			f.data[rfb_rng_below(&rng, (uint32_t)f.len)] =
				(unsigned char)rfb_rng_below(&rng, 256);
		rc = decode(&f, NULL, &img, &buf);
		counts[rc == 0 ? 0 : rc == RFB_EDECODE ? 1 : rc == RFB_ETRUNC ? 2 : 3]++;
		CHECKF(rc == 0 || rc == RFB_EDECODE || rc == RFB_ETRUNC ||
		       rc == RFB_ELIMIT, "rc %d", rc);
		free(f.data);
	}
	printf("# mutations: %d decoded, %d corrupt, %d truncated, %d limit\n",
	       counts[0], counts[1], counts[2], counts[3]);
	CHECK(counts[1] > 100);
	/* still a good decoder */
	CHECK(decode(&good, NULL, &img, &buf) == 0 && same(&img, &want));
	free(good.data);
}

/* ---- the encoder ------------------------------------------------------- */

static double psnr(const rfb_image *a, const rfb_image *b)
{
	double se = 0;
	size_t n = 0;

	for (int y = 0; y < a->height; y++)
		for (int x = 0; x < a->width * a->channels; x++, n++) {
			double d = (double)rfb_image_px(a, 0, y)[x] -
				   rfb_image_px(b, 0, y)[x];
			se += d * d;
		}
	return se == 0 ? 99.0 : 10 * log10(255.0 * 255.0 * n / se);
}

static void round_trip(rfb_encoder *enc, const char *golden, int quality,
		       enum rfb_encode_subsampling samp, double min_psnr)
{
	rfb_image src, img;
	rfb_imgbuf out = { 0 }, out2 = { 0 };
	size_t len = 0, len2 = 0;
	rfb_err err = { 0 };
	struct rfb_decode_opts o = { .color = RFB_DECODE_KEEP };
	struct file f;
	double p;

	CHECK(golden_read_pnm(golden, &src, &gbuf) == 0);
	CHECK(rfb_jpeg_encode(enc, &src, quality, samp, &out, &len, &err) == 0);
	CHECK(rfb_jpeg_encode(enc, &src, quality, samp, &out2, &len2, &err) == 0);
	CHECK(len > 0 && len == len2 && memcmp(out.data, out2.data, len) == 0);
	f.data = out.data;
	f.len = len;
	CHECK(decode(&f, &o, &img, &buf) == 0);
	CHECK(img.width == src.width && img.height == src.height &&
	      img.channels == src.channels);
	p = psnr(&src, &img);
	CHECKF(p >= min_psnr, "%s q%d: PSNR %.2f dB < %.1f", golden, quality, p,
	       min_psnr);
	printf("# encode %s q%d samp %d: %zu bytes, PSNR %.2f dB\n", golden,
	       quality, (int)samp, len, p);
	rfb_imgbuf_free(&out);
	rfb_imgbuf_free(&out2);
}

static void test_encode(void)
{
	rfb_encoder *enc = rfb_encoder_new(NULL);
	rfb_image src, view;
	rfb_imgbuf out = { 0 };
	size_t len;

	CHECK(enc != NULL);
	/* bounds a few dB under the measured values; the test picture's
	 * saturated, noisy chroma is what 4:2:0 loses */
	round_trip(enc, DATA "rgb444.ppm", 95, RFB_ENCODE_444, 40.0);
	round_trip(enc, DATA "rgb444.ppm", 90, RFB_ENCODE_420, 22.0);
	round_trip(enc, DATA "rgb444.ppm", 90, RFB_ENCODE_422, 22.0);
	round_trip(enc, DATA "gray.L.pgm", 90, RFB_ENCODE_420, 45.0);
	CHECK(golden_read_pnm(DATA "rgb444.ppm", &src, &gbuf) == 0);
	/* a view with a stride, as crops are */
	view = src;
	view.data = rfb_image_px(&src, 10, 5);
	view.width = 30;
	view.height = 20;
	CHECK(rfb_jpeg_encode(enc, &view, 80, RFB_ENCODE_420, &out, &len, NULL) == 0);
	CHECK(rfb_jpeg_encode(enc, &src, 0, RFB_ENCODE_420, &out, &len, NULL) ==
	      RFB_EINVAL);
	CHECK(rfb_jpeg_encode(enc, &src, 101, RFB_ENCODE_420, &out, &len, NULL) ==
	      RFB_EINVAL);
	CHECK(rfb_jpeg_encode(enc, &src, 90, 3, &out, &len, NULL) == RFB_EINVAL);
	view.channels = 2;
	CHECK(rfb_jpeg_encode(enc, &view, 90, RFB_ENCODE_420, &out, &len, NULL) ==
	      RFB_EINVAL);
	rfb_imgbuf_free(&out);
	rfb_encoder_free(enc);
	rfb_encoder_free(NULL);
}

/* ---- silence ----------------------------------------------------------- */

/*
 * Run a hostile-input test with stderr sent to a file that must stay
 * empty: the library never prints, whatever it is fed.
 */
static void (*silent_fn)(void);

static void silent_wrapper(void)
{
	char path[] = "/tmp/rfb-test-decode-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	struct stat st;

	CHECK(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	silent_fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	CHECKF(fstat(fd, &st) == 0 && st.st_size == 0,
	       "%lld bytes written to stderr", (long long)st.st_size);
	close(fd);
	unlink(path);
}

static void run_silently(const char *name, void (*fn)(void))
{
	silent_fn = fn;
	test_run(name, silent_wrapper);
}

int main(void)
{
	dec = rfb_decoder_new(NULL);
	if (!dec)
		return 1;
	RUN(test_goldens_exact);
	RUN(test_keep_gray);
	RUN(test_header_info);
	RUN(test_scaled_sizes);
	RUN(test_regions_exact);
	RUN(test_regions_view);
	RUN(test_bands);
	RUN(test_bands_errors);
	RUN(test_bad_regions);
	RUN(test_buffer_reuse);
	RUN(test_pick_scale);
	run_silently("test_truncation", test_truncation);
	run_silently("test_region_above_cut", test_region_above_cut);
	run_silently("test_garbage", test_garbage);
	run_silently("test_corrupt_data", test_corrupt_data);
	run_silently("test_lenient", test_lenient);
	run_silently("test_sizes_and_limits", test_sizes_and_limits);
	run_silently("test_scan_limit", test_scan_limit);
	run_silently("test_mutations", test_mutations);
	RUN(test_encode);
	rfb_decoder_free(dec);
	rfb_decoder_free(NULL);
	rfb_imgbuf_free(&buf);
	rfb_imgbuf_free(&buf2);
	rfb_imgbuf_free(&gbuf);
	return test_done();
}
