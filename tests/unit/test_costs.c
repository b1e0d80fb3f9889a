/*
 * test_costs.c - the cost file (refurb-costs(5)) and the cost model.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/checksum.h"
#include "refurb/costs.h"
#include "refurb/index.h"
#include "refurb/pipeline.h"
#include "refurb/rng.h"
#include "test.h"

#define PIPE "resize=256:max_size=0:interp=bilinear,randaug=n=2:m=9:bins=31:interp=nearest:fill=0/0/0"

static char dir[64];

/* An index of n samples, sample i of (100 + i) x (200 + 3 i) pixels;
 * salt changes its identity. */
static rfb_index *make_index(uint32_t n, const char *salt)
{
	rfb_err err = { 0 };
	rfb_index_builder *b = rfb_index_builder_new("/data", &err);
	unsigned char *data = NULL;
	size_t len = 0;
	rfb_index *idx;
	char path[64];

	CHECK(rfb_index_builder_add_class(b, salt, &err) == 0);
	for (uint32_t i = 0; i < n; i++) {
		rfb_sample_info s = { 0 };
		snprintf(path, sizeof path, "c/%u.jpg", i);
		s.path = path;
		s.bytes = 1000 + 37 * i;
		s.width = 100 + i;
		s.height = 200 + 3 * i;
		s.channels = 3;
		s.subsampling = 2;
		CHECK(rfb_index_builder_add(b, &s, &err) == 0);
	}
	CHECK(rfb_index_builder_finish(b, &data, &len, &err) == 0);
	rfb_index_builder_free(b);
	idx = rfb_index_open_mem(data, len, "test.idx", &err);
	free(data);
	return idx;
}

static struct rfb_costs_header header(const rfb_index *idx, uint64_t seed)
{
	struct rfb_costs_header h = { 0 };

	h.version = RFB_COSTS_VERSION;
	h.index_identity = rfb_index_identity(idx);
	h.seed = seed;
	snprintf(h.pipeline, sizeof h.pipeline, "%s", PIPE);
	return h;
}

static void append_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	fputs(text, f);
	fclose(f);
}

static void test_file_round_trip(void)
{
	rfb_index *idx = make_index(10, "a"), *other = make_index(10, "b");
	struct rfb_costs_header h = header(idx, 7), bad;
	char path[128];
	rfb_err err = { 0 };
	rfb_costs_writer *w;
	rfb_costs *c;

	snprintf(path, sizeof path, "%s/a.costs", dir);
	for (int run = 0; run < 2; run++) {
		CHECK((w = rfb_costs_writer_open(path, &h, &err)) != NULL);
		rfb_costs_writer_add(w, 3, 0, 0.0012345);
		rfb_costs_writer_add(w, 9, 4, 5e-7);
		CHECK(rfb_costs_writer_close(w, &err) == 0);
	}
	CHECK((c = rfb_costs_open(path, &err)) != NULL);
	CHECK(rfb_costs_count(c) == 4);
	CHECK(rfb_costs_entries(c)[0].id == 3 && rfb_costs_entries(c)[0].cpu_us == 1235);
	CHECK(rfb_costs_entries(c)[3].id == 9 && rfb_costs_entries(c)[3].epoch == 4 &&
	      rfb_costs_entries(c)[3].cpu_us == 1);
	CHECK(rfb_costs_header_of(c)->seed == 7);
	CHECK(strcmp(rfb_costs_header_of(c)->pipeline, PIPE) == 0);
	rfb_costs_free(c);
	/* another index, seed or pipeline: refused, the file untouched */
	bad = header(other, 7);
	CHECK(rfb_costs_writer_open(path, &bad, &err) == NULL &&
	      err.code == RFB_EMISMATCH && strstr(err.msg, "another index"));
	bad = header(idx, 8);
	CHECK(rfb_costs_writer_open(path, &bad, &err) == NULL &&
	      err.code == RFB_EMISMATCH && strstr(err.msg, "seed"));
	bad = header(idx, 7);
	strcpy(bad.pipeline, "resize=128");
	CHECK(rfb_costs_writer_open(path, &bad, &err) == NULL &&
	      err.code == RFB_EMISMATCH && strstr(err.msg, "pipeline"));
	/* a torn last line is ignored; a bad line is named */
	append_text(path, "12\t3");
	CHECK((c = rfb_costs_open(path, &err)) != NULL && rfb_costs_count(c) == 4);
	rfb_costs_free(c);
	append_text(path, "\nx\t1\t2\n");
	CHECK(rfb_costs_open(path, &err) == NULL && err.code == RFB_EFORMAT);
	CHECKF(strstr(err.msg, "line 6") != NULL, "%s", err.msg);
	unlink(path);
	append_text(path, "#refurb-costs 2 index=0 seed=0 pipeline=\n");
	CHECK(rfb_costs_open(path, &err) == NULL && err.code == RFB_EVERSION);
	unlink(path);
	append_text(path, "id\tepoch\tus\n");
	CHECK(rfb_costs_open(path, &err) == NULL && err.code == RFB_EFORMAT &&
	      strstr(err.msg, "not a refurb cost file"));
	unlink(path);
	rfb_index_close(idx);
	rfb_index_close(other);
}

/* The example of refurb-costs(5): parsed into the page's fields, written
 * back byte for byte, and its identity over the page's IDENTITY bytes. */
static const char page_example[] =
	"#refurb-costs 1 index=59c567d025e300a1 seed=7 pipeline=" PIPE "\n"
	"208\t0\t1245\n"
	"68\t0\t1284\n";

static void test_file_from_page(void)
{
	static const unsigned char head[16] = {
		0xa1, 0x00, 0xe3, 0x25, 0xd0, 0x67, 0xc5, 0x59, /* index */
		7, 0, 0, 0, 0, 0, 0, 0,                         /* seed */
	};
	static const unsigned char rows[2][12] = {
		{ 208, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0x04, 0, 0 },
		{ 68, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x05, 0, 0 },
	};
	rfb_err err = { 0 };
	rfb_costs *c = rfb_costs_open_mem(page_example, strlen(page_example),
					  "page", &err);
	rfb_costs_writer *w;
	char path[128], back[sizeof page_example + 16] = { 0 };
	uint64_t id;
	FILE *f;

	CHECKF(c != NULL, "%s", err.msg);
	if (!c)
		return;
	CHECK(rfb_costs_header_of(c)->index_identity == 0x59c567d025e300a1ULL);
	CHECK(rfb_costs_header_of(c)->seed == 7);
	CHECK(strcmp(rfb_costs_header_of(c)->pipeline, PIPE) == 0);
	CHECK(rfb_costs_count(c) == 2);
	CHECK(rfb_costs_entries(c)[0].id == 208 && rfb_costs_entries(c)[0].epoch == 0 &&
	      rfb_costs_entries(c)[0].cpu_us == 1245);
	CHECK(rfb_costs_entries(c)[1].id == 68 && rfb_costs_entries(c)[1].cpu_us == 1284);
	id = rfb_hash64(head, sizeof head, 0x434f535453494452ULL);
	id = rfb_hash64(PIPE, strlen(PIPE), id);
	id = rfb_hash64(rows[0], 12, id);
	id = rfb_hash64(rows[1], 12, id);
	CHECK(rfb_costs_identity(c) == id);
	snprintf(path, sizeof path, "%s/page.costs", dir);
	CHECK((w = rfb_costs_writer_open(path, rfb_costs_header_of(c), &err)) != NULL);
	rfb_costs_writer_add(w, 208, 0, 1245e-6);
	rfb_costs_writer_add(w, 68, 0, 1284e-6);
	CHECK(rfb_costs_writer_close(w, &err) == 0);
	CHECK((f = fopen(path, "r")) != NULL);
	if (f) {
		CHECK(fread(back, 1, sizeof back, f) == strlen(page_example));
		fclose(f);
	}
	CHECK(strcmp(back, page_example) == 0);
	unlink(path);
	rfb_costs_free(c);
}

/* Truth: base = 2 ms per megapixel + 0.3 ms, op k costs 0.05 k ms. */
static double truth(const rfb_pipeline *p, const rfb_index *idx, uint32_t id,
		    uint32_t epoch, uint64_t seed)
{
	struct rfb_pipe_key key = { seed, epoch, id, RFB_STAGE_PARTIAL };
	double y = 2e-3 * rfb_index_pixels(idx, id) * 1e-6 + 3e-4;

	for (int l = 0; l < rfb_pipeline_layers(p); l++) {
		int op = rfb_pipeline_layer_op(p, l, &key);
		if (op >= 0)
			y += 5e-5 * op;
	}
	return y;
}

static void test_model(void)
{
	rfb_index *idx = make_index(400, "a"), *other = make_index(400, "b");
	struct rfb_costs_header h = header(idx, 7);
	struct rfb_cost_model_info info;
	rfb_pipeline *p = NULL;
	rfb_cost_model *m;
	rfb_costs_writer *w;
	rfb_costs *c;
	rfb_err err = { 0 };
	char path[128];
	double worst = 0, worst_new = 0;

	CHECK(rfb_pipeline_parse(PIPE, &p, &err) == 0);
	snprintf(path, sizeof path, "%s/m.costs", dir);
	CHECK((w = rfb_costs_writer_open(path, &h, &err)) != NULL);
	for (uint32_t e = 0; e < 6; e++)
		for (uint32_t id = 0; id < 300; id++)
			rfb_costs_writer_add(w, id, e, truth(p, idx, id, e, 7));
	CHECK(rfb_costs_writer_close(w, &err) == 0);
	CHECK((c = rfb_costs_open(path, &err)) != NULL);
	CHECK(rfb_cost_model_fit(c, other, &err) == NULL &&
	      err.code == RFB_EMISMATCH);
	CHECK((m = rfb_cost_model_fit(c, idx, &err)) != NULL);
	rfb_cost_model_info_of(m, &info);
	CHECK(info.measured == 300 && info.entries == 1800 &&
	      info.random_layers == 2);
	/* another seed and epoch: other ops, predicted from the op costs */
	for (uint32_t id = 0; id < 400; id++)
		for (uint32_t e = 10; e < 13; e++) {
			double t = truth(p, idx, id, e, 99);
			double d = fabs(rfb_cost_model_predict(m, id, e, 99) - t) / t;
			if (id < 300)
				worst = d > worst ? d : worst;
			else
				worst_new = d > worst_new ? d : worst_new;
		}
	printf("# worst relative error %.2g measured, %.2g never measured\n",
	       worst, worst_new);
	CHECK(worst < 0.01);      /* rounding to microseconds */
	CHECK(worst_new < 0.02);
	rfb_cost_model_free(m);
	rfb_costs_free(c);
	unlink(path);
	rfb_pipeline_free(p);
	rfb_index_close(idx);
	rfb_index_close(other);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_costs.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	RUN(test_file_round_trip);
	RUN(test_file_from_page);
	RUN(test_model);
	rmdir(dir);
	return test_done();
}
