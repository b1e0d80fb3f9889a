/*
 * test_enum.c - the names of enum values (enum.h): the shared lookup
 * (rfb_enum_name, rfb_enum_parse, rfb_enum_count) on a table of its own,
 * then every table of the library: each value of its enum has a name,
 * no entry lies outside the enum, no name is given to two values, the
 * names round-trip through the table and through the enum's own namer
 * and parser, and the namer says NULL (the parser -1) for what the enum
 * does not have.
 */
#include "refurb/refurb.h"
#include "test.h"

/* 2 has an alias after its canonical name; 0 is a value like the others */
static const struct rfb_enum_name colours[] = {
	{ 2, "red" },
	{ 5, "green" },
	{ 2, "rouge" },
	{ 0, "black" },
	{ 0, NULL },
};

static const struct rfb_enum_name no_names[] = { { 0, NULL } };

static void test_lookup(void)
{
	CHECK(rfb_enum_count(colours) == 4);
	CHECK(strcmp(rfb_enum_name(colours, 2), "red") == 0);
	CHECK(strcmp(rfb_enum_name(colours, 5), "green") == 0);
	CHECK(strcmp(rfb_enum_name(colours, 0), "black") == 0);
	CHECK(rfb_enum_name(colours, 1) == NULL);
	CHECK(rfb_enum_name(colours, -1) == NULL);
	CHECK(rfb_enum_parse(colours, "red") == 2);
	CHECK(rfb_enum_parse(colours, "rouge") == 2);
	CHECK(rfb_enum_parse(colours, "green") == 5);
	CHECK(rfb_enum_parse(colours, "black") == 0);
	CHECK(rfb_enum_parse(colours, "gree") == -1);
	CHECK(rfb_enum_parse(colours, "greens") == -1);
	CHECK(rfb_enum_parse(colours, "Green") == -1);
	CHECK(rfb_enum_parse(colours, "") == -1);
	CHECK(rfb_enum_parse(colours, NULL) == -1);
	CHECK(rfb_enum_count(no_names) == 0);
	CHECK(rfb_enum_name(no_names, 0) == NULL);
	CHECK(rfb_enum_parse(no_names, "black") == -1);
}

/* The table of an enum of the values first..last. */
static void check_table(const char *what, const struct rfb_enum_name *t,
			int first, int last)
{
	for (int v = first; v <= last; v++) {
		const char *name = rfb_enum_name(t, v);

		CHECKF(name && *name, "%s: value %d has no name", what, v);
		if (name)
			CHECKF(rfb_enum_parse(t, name) == v, "%s: %s is not %d",
			       what, name, v);
	}
	for (const struct rfb_enum_name *e = t; e->name; e++) {
		CHECKF(e->value >= first && e->value <= last,
		       "%s: %s has the value %d outside the enum", what,
		       e->name, e->value);
		CHECKF(rfb_enum_parse(t, e->name) == e->value,
		       "%s: %s names two values", what, e->name);
	}
	CHECKF(rfb_enum_name(t, first - 1) == NULL, "%s: %d", what, first - 1);
	CHECKF(rfb_enum_name(t, last + 1) == NULL, "%s: %d", what, last + 1);
}

/* The enum's namer gives the table's canonical names, NULL outside. */
#define CHECK_NAMER(t, first, last, namer)                                  \
	do {                                                                \
		check_table(#t, t, first, last);                            \
		for (int v_ = (first) - 1; v_ <= (last) + 1; v_++)          \
			CHECKF(namer(v_) == rfb_enum_name(t, v_), "%s(%d)", \
			       #namer, v_);                                 \
	} while (0)

/* The enum's parser takes every name of the table, -1 for others. */
#define CHECK_PARSER(t, parser)                                             \
	do {                                                                \
		for (const struct rfb_enum_name *e_ = t; e_->name; e_++)    \
			CHECKF(parser(e_->name) == e_->value, "%s(%s)",     \
			       #parser, e_->name);                          \
		CHECK(parser("no such name") == -1);                        \
		CHECK(parser("") == -1);                                    \
		CHECK(parser(NULL) == -1);                                  \
	} while (0)

static void test_evict_and_plan(void)
{
	CHECK_NAMER(rfb_evict_policy_names, RFB_EVICT_BALANCED,
		    RFB_EVICT_REFCOUNT, rfb_evict_policy_name);
	CHECK_PARSER(rfb_evict_policy_names, rfb_evict_policy_parse);
	CHECK_NAMER(rfb_plan_shuffle_names, RFB_PLAN_CACHE_AWARE,
		    RFB_PLAN_SEQUENTIAL, rfb_plan_shuffle_name);
	CHECK_PARSER(rfb_plan_shuffle_names, rfb_plan_shuffle_parse);
	CHECK_NAMER(rfb_plan_balance_names, RFB_PLAN_BALANCE_NONE,
		    RFB_PLAN_BALANCE_COST, rfb_plan_balance_name);
	CHECK_PARSER(rfb_plan_balance_names, rfb_plan_balance_parse);
	CHECK_NAMER(rfb_plan_even_names, RFB_PLAN_EVEN_NONE, RFB_PLAN_EVEN_DROP,
		    rfb_plan_even_name);
	CHECK_PARSER(rfb_plan_even_names, rfb_plan_even_parse);
	/* the plan files record these names: "none" is the canonical one */
	CHECK(strcmp(rfb_plan_shuffle_name(RFB_PLAN_SEQUENTIAL), "none") == 0);
	CHECK(rfb_plan_shuffle_parse("sequential") == RFB_PLAN_SEQUENTIAL);
}

static void test_ops_and_images(void)
{
	CHECK_NAMER(rfb_op_names, RFB_OP_IDENTITY, RFB_OP_COUNT - 1, rfb_op_name);
	CHECK_PARSER(rfb_op_names, rfb_op_parse);
	CHECK_NAMER(rfb_interp_names, RFB_INTERP_NEAREST, RFB_INTERP_BICUBIC,
		    rfb_interp_name);
	CHECK_PARSER(rfb_interp_names, rfb_interp_parse);
	CHECK_NAMER(rfb_pad_mode_names, RFB_PAD_CONSTANT, RFB_PAD_SYMMETRIC,
		    rfb_pad_mode_name);
	CHECK_NAMER(rfb_dtype_names, RFB_DTYPE_U8, RFB_DTYPE_F32, rfb_dtype_name);
	CHECK_NAMER(rfb_layout_names, RFB_LAYOUT_HWC, RFB_LAYOUT_CHW,
		    rfb_layout_name);
	CHECK_NAMER(rfb_autoaug_policy_names, RFB_AUTOAUG_IMAGENET,
		    RFB_AUTOAUG_SVHN, rfb_autoaug_policy_name);
	/* torchvision's spelling, which the golden files and specs use */
	CHECK(strcmp(rfb_op_name(RFB_OP_AUTOCONTRAST), "AutoContrast") == 0);
	CHECK(rfb_op_parse("autocontrast") == -1);
}

static void test_stream_and_cache(void)
{
	CHECK_NAMER(rfb_stream_dtype_names, RFB_STREAM_U8, RFB_STREAM_F32,
		    rfb_stream_dtype_name);
	CHECK_NAMER(rfb_stream_layout_names, RFB_STREAM_NHWC, RFB_STREAM_NCHW,
		    rfb_stream_layout_name);
	CHECK_NAMER(rfb_codec_kind_names, RFB_CODEC_RAW, RFB_CODEC_JPEG,
		    rfb_codec_kind_name);
}

/* rfb_codec_parse reads the kind through the table; rfb_codec_text
 * writes it back. */
static void test_codec_text(void)
{
	static const char *const texts[] = { "raw", "zstd:1", "zstd:19",
					     "jpeg:90", "jpeg:1" };
	struct rfb_codec c;
	rfb_err err = { 0 };
	char buf[32];

	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		CHECKF(rfb_codec_parse(texts[i], &c, &err) == 0, "%s", texts[i]);
		CHECKF(strcmp(rfb_codec_text(&c, buf, sizeof buf), texts[i]) == 0,
		       "%s gave %s", texts[i], buf);
	}
	CHECK(rfb_codec_parse("zstd", &c, &err) == 0);
	CHECK(c.kind == RFB_CODEC_ZSTD && c.level == RFB_CODEC_ZSTD_DEFAULT_LEVEL);
	CHECK(rfb_codec_parse("jpeg", &c, &err) == 0);
	CHECK(c.kind == RFB_CODEC_JPEG && c.level == RFB_CODEC_JPEG_DEFAULT_QUALITY);
	CHECK(rfb_codec_parse("raw:3", &c, &err) == RFB_EINVAL);
	CHECK(rfb_codec_parse("zst", &c, &err) == RFB_EINVAL);
	CHECK(rfb_codec_parse("zstdzstd:3", &c, &err) == RFB_EINVAL);
	CHECK(rfb_codec_parse("", &c, &err) == RFB_EINVAL);
	CHECK(rfb_codec_parse("zstd:20", &c, &err) == RFB_EINVAL);
	c.kind = 9;
	CHECK(strcmp(rfb_codec_text(&c, buf, sizeof buf), "?") == 0);
}

int main(void)
{
	RUN(test_lookup);
	RUN(test_evict_and_plan);
	RUN(test_ops_and_images);
	RUN(test_stream_and_cache);
	RUN(test_codec_text);
	return test_done();
}
