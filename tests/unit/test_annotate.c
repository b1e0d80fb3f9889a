/*
 * test_annotate.c - the cache annotations of the plan stream: per-sample
 * addresses and the header keys (percent-encoding), and the worker pool.
 */
#include <stdatomic.h>

#include "refurb/annotate.h"
#include "refurb/partial.h"
#include "refurb/pool.h"
#include "test.h"

static void test_sample_annotation(void)
{
	rfb_plan_sample s = { 0 };
	struct rfb_cache_addr a = { 7, 1234, 0x100000 }, b;
	uint32_t w;

	CHECK(rfb_annot_get(&s, &b, &w) == RFB_EFORMAT); /* none */
	rfb_annot_set(&s, &a, 5);
	CHECK(rfb_annot_get(&s, &b, &w) == 1);
	CHECK(b.segment == 7 && b.length == 1234 && b.offset == 0x100000 && w == 5);
	rfb_annot_set_skipped(&s);
	CHECK(rfb_annot_get(&s, &b, &w) == 0);
	/* shapes that are no address */
	s.addr_count = 4;
	s.addr[0] = 1, s.addr[1] = 10, s.addr[2] = 100, s.addr[3] = 0; /* offset in header */
	CHECK(rfb_annot_get(&s, &b, &w) == RFB_EFORMAT);
	s.addr[1] = 64, s.addr[2] = 3; /* shorter than a record header */
	CHECK(rfb_annot_get(&s, &b, &w) == RFB_EFORMAT);
	s.addr[2] = 100, s.addr[3] = (uint64_t)1 << 33;
	CHECK(rfb_annot_get(&s, &b, &w) == RFB_EFORMAT);
	s.addr_count = 2;
	CHECK(rfb_annot_get(&s, &b, &w) == RFB_EFORMAT);
}

/* A header whose key has each of values (then tail) is refused. */
static void refused(const char *key, const char *const *values, size_t n,
		    const char *tail)
{
	static struct rfb_annot_header back;
	rfb_err err = { 0 };

	for (size_t i = 0; i < n; i++) {
		char text[200];
		snprintf(text, sizeof text, "#refurb-plan 1 cache=c index-file=i "
			 "root= partial=p codec=raw %s=%s%s", key, values[i], tail);
		CHECKF(rfb_annot_parse_header(text, strlen(text), &back, &err) ==
		       RFB_EFORMAT, "%s", text);
	}
}

static void test_header_keys(void)
{
	rfb_plan_header h = { 0 };
	static struct rfb_annot_header a, back;
	rfb_err err = { 0 };
	char line[20000];

	h.version = 1;
	h.samples = h.total = 10;
	h.reuse = 2;
	h.policy = 1;
	h.batch_size = 4;
	h.batches = 3;
	h.shuffle = 1;
	h.shard_count = 1;
	snprintf(a.cache, sizeof a.cache, "/scratch/my cache/100%%");
	snprintf(a.index_file, sizeof a.index_file, "/d/train.idx");
	snprintf(a.partial, sizeof a.partial, "resize=256,randaug=n=2:m=9");
	snprintf(a.codec, sizeof a.codec, "zstd:1");
	a.aug_seed = 18446744073709551615ULL;
	size_t n = rfb_annot_format_header(line, sizeof line, &h, &a);
	CHECK(n < sizeof line && line[n - 1] == '\n');
	CHECK(strstr(line, " cache=/scratch/my%20cache/100%25 ") != NULL);
	CHECK(strstr(line, " root= ") != NULL);
	/* the plan header parser still reads it */
	rfb_plan_header h2;
	CHECKF(rfb_plan_parse_header(line, n - 1, &h2, &err) == 0, "%s", err.msg);
	CHECK(rfb_annot_parse_header(line, n - 1, &back, &err) == 0);
	CHECK(strcmp(back.cache, a.cache) == 0 && strcmp(back.root, "") == 0);
	CHECK(strcmp(back.partial, a.partial) == 0 && back.aug_seed == a.aug_seed);
	/* measuring first, as the callers do */
	CHECK(rfb_annot_format_header(NULL, 0, &h, &a) == n);
	/* a plain plan has none of the keys */
	n = rfb_plan_format_header(line, sizeof line, &h);
	CHECK(rfb_annot_parse_header(line, n - 1, &back, &err) == RFB_EFORMAT);
	CHECK(strstr(err.msg, "cache=") != NULL);
	/* bad escapes */
	const char *bad = "#refurb-plan 1 cache=%2 index-file=x root= partial=x "
			  "codec=raw aug-seed=1";
	CHECK(rfb_annot_parse_header(bad, strlen(bad), &back, &err) == RFB_EFORMAT);
	/* aug-seed as the writer prints it: no sign, no leading zero, no
	 * overflow (found by fuzz_plan: strtoull took all three) */
	const char *seeds[] = { "+1", "-1", "01", "18446744073709551616", "1x" };
	refused("aug-seed", seeds, sizeof seeds / sizeof seeds[0], "");
	const char *max = "#refurb-plan 1 cache=c index-file=i root= partial=p "
			  "codec=raw aug-seed=18446744073709551615";
	CHECK(rfb_annot_parse_header(max, strlen(max), &back, &err) == 0 &&
	      back.aug_seed == UINT64_MAX);
	/* max-pixels: optional (0 when absent), else a canonical positive
	 * number, written when set and read back */
	CHECK(back.max_pixels == 0);
	a.max_pixels = 100000000;
	n = rfb_annot_format_header(line, sizeof line, &h, &a);
	CHECK(strstr(line, " max-pixels=100000000 ") != NULL);
	CHECK(rfb_annot_parse_header(line, n - 1, &back, &err) == 0 &&
	      back.max_pixels == 100000000);
	const char *caps[] = { "0", "", "+5", "07", "1e6" };
	refused("max-pixels", caps, sizeof caps / sizeof caps[0], " aug-seed=1");
}

static void test_write_epoch(void)
{
	/* r = 3, phase 1: misses at 0, 2, 5, 8 ... */
	uint32_t want[] = { 0, 0, 2, 2, 2, 5, 5, 5, 8 };
	for (uint32_t e = 0; e < 9; e++)
		CHECKF(rfb_partial_write_epoch(e, 1, 3) == want[e], "epoch %u", e);
	/* r = 1: every epoch is a miss */
	for (uint32_t e = 0; e < 5; e++)
		CHECK(rfb_partial_write_epoch(e, 0, 1) == e);
}

struct counter {
	struct rfb_task task;
	atomic_int *sum;
	int value;
};

static void add(void *ctx, struct rfb_task *t)
{
	struct counter *c = (struct counter *)t;
	(void)ctx;
	atomic_fetch_add(c->sum, c->value);
}

static void *ctx_new(void *arg)
{
	return arg;
}

static void test_pool(void)
{
	atomic_int sum = 0;
	struct counter tasks[1000];
	struct rfb_group g;
	rfb_err err = { 0 };
	static int dummy;
	rfb_pool *p = rfb_pool_new(3, ctx_new, NULL, &dummy, &err);

	CHECK(p != NULL && rfb_group_init(&g) == 0);
	rfb_group_add(&g, 1000);
	for (int i = 0; i < 1000; i++) {
		tasks[i].task.run = add;
		tasks[i].task.group = &g;
		tasks[i].sum = &sum;
		tasks[i].value = i;
		rfb_pool_submit(p, &tasks[i].task);
	}
	rfb_group_wait(&g);
	CHECK(atomic_load(&sum) == 999 * 1000 / 2);
	rfb_group_destroy(&g);
	rfb_pool_free(p);
	rfb_pool_free(NULL);
	/* a worker context that cannot be made fails the pool */
	CHECK(rfb_pool_new(2, ctx_new, NULL, NULL, &err) == NULL);
}

int main(void)
{
	RUN(test_sample_annotation);
	RUN(test_header_keys);
	RUN(test_write_epoch);
	RUN(test_pool);
	return test_done();
}
