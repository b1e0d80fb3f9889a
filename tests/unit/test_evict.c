/*
 * test_evict.c - the eviction schedule: shard partition, the balanced and
 * refcount policies as properties over many random parameters, the file
 * format (round trip, and every kind of bad file), Theorem 1.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "refurb/refurb.h"
#include "refurb/evict.h"
#include "test.h"

static rfb_evict_params params(uint32_t total, uint32_t r, uint64_t seed,
			       int policy, uint32_t k, uint32_t shards)
{
	rfb_evict_params p = { 0x1234abcd5678ef00ULL ^ total, total, r, seed,
			       policy, k, shards };
	return p;
}

static rfb_evict *build(uint32_t total, uint32_t r, uint64_t seed,
			int policy, uint32_t k, uint32_t shards)
{
	rfb_evict_params p = params(total, r, seed, policy, k, shards);
	rfb_err err = { 0 };
	rfb_evict *s = rfb_evict_build(&p, &err);

	CHECKF(s != NULL, "build(%u, r=%u, %u/%u): %s", total, r, k, shards,
	       err.msg);
	return s;
}

/* A small random draw for the property loops (test-local stream). */
static uint32_t draw(rfb_rng *g, uint32_t lo, uint32_t hi)
{
	return lo + rfb_rng_below(g, hi - lo + 1);
}

static void test_shards_partition(void)
{
	rfb_rng g;

	rfb_rng_init(&g, 1, 0, 0, 99);
	for (int iter = 0; iter < 200; iter++) {
		uint32_t total = draw(&g, 1, 3000), shards = draw(&g, 1, 9);
		uint64_t seed = rfb_rng_u64(&g);
		uint8_t *owner = calloc(total, 1);
		uint32_t lo = total / shards, covered = 0;

		if (shards > total)
			shards = total;
		for (uint32_t k = 0; k < shards; k++) {
			uint32_t size = rfb_evict_shard_size(total, shards, k);
			uint32_t *ids = malloc((size_t)size * 4 + 4);
			CHECK(size == lo || size == lo + 1);
			CHECK(rfb_evict_shard_members(total, seed, k, shards, ids,
						      NULL) == 0);
			for (uint32_t i = 0; i < size; i++) {
				CHECK(ids[i] < total && owner[ids[i]] == 0);
				CHECK(i == 0 || ids[i] > ids[i - 1]);
				owner[ids[i]] = 1;
			}
			covered += size;
			free(ids);
		}
		CHECKF(covered == total, "%u shards of %u cover %u", shards,
		       total, covered);
		free(owner);
	}
}

/* A shard is spread over the whole index (a random part, not a range),
 * and the partition is the one refurb-schedule(5) defines: pinned on a
 * small case (a change to it changes every sharded schedule). */
static void test_shards_spread(void)
{
	static const uint32_t known[5] = { 2, 6, 7, 8, 9 };
	uint32_t total = 80000, size = rfb_evict_shard_size(total, 8, 3);
	uint32_t *ids = malloc((size_t)size * 4), got[5], per[8] = { 0 };

	CHECK(ids && rfb_evict_shard_members(total, 7, 3, 8, ids, NULL) == 0);
	for (uint32_t i = 0; ids && i < size; i++)
		per[ids[i] / (total / 8)]++;
	for (int e = 0; e < 8; e++)
		CHECKF(per[e] > size / 8 * 8 / 10 && per[e] < size / 8 * 12 / 10,
		       "eighth %d of the index holds %u of the shard's %u",
		       e, per[e], size);
	free(ids);
	CHECK(rfb_evict_shard_members(10, 7, 0, 2, got, NULL) == 0);
	CHECKF(memcmp(got, known, sizeof got) == 0, "shard 0/2 of 10, seed 7: "
	       "%u %u %u %u %u", got[0], got[1], got[2], got[3], got[4]);
}

/* Shard membership depends on the seed and N only, never on r/policy. */
static void test_shards_independent_of_r(void)
{
	rfb_evict *a = build(1000, 2, 7, RFB_EVICT_BALANCED, 1, 3);
	rfb_evict *b = build(1000, 5, 7, RFB_EVICT_REFCOUNT, 1, 3);
	rfb_evict *c = build(1000, 2, 8, RFB_EVICT_BALANCED, 1, 3);

	CHECK(rfb_evict_count(a) == rfb_evict_count(b));
	CHECK(memcmp(rfb_evict_ids(a), rfb_evict_ids(b),
		     rfb_evict_count(a) * 4) == 0);
	CHECK(memcmp(rfb_evict_ids(a), rfb_evict_ids(c),
		     rfb_evict_count(a) * 4) != 0);
	rfb_evict_free(a);
	rfb_evict_free(b);
	rfb_evict_free(c);
}

/* Misses per epoch counted straight from the phases and the rule. */
static uint32_t misses_in(const rfb_evict *s, uint32_t epoch)
{
	uint32_t m = 0, r = rfb_evict_params_of(s)->reuse;

	for (uint32_t i = 0; i < rfb_evict_count(s); i++)
		m += (uint32_t)rfb_evict_is_miss(epoch, rfb_evict_phases(s)[i], r);
	return m;
}

static void test_balanced_property(void)
{
	rfb_rng g;

	rfb_rng_init(&g, 2, 0, 0, 99);
	for (int iter = 0; iter < 300; iter++) {
		uint32_t total = draw(&g, 1, 2000), r = draw(&g, 1, 12);
		uint32_t shards = draw(&g, 1, 4), k;
		rfb_evict *s;
		uint32_t n, lo, hi;

		shards = shards > total ? total : shards;
		k = draw(&g, 0, shards - 1);
		if (!(s = build(total, r, rfb_rng_u64(&g), RFB_EVICT_BALANCED, k,
				shards)))
			return;
		n = rfb_evict_count(s);
		lo = n / r;
		hi = lo + (n % r != 0);
		CHECK(misses_in(s, 0) == n);
		for (uint32_t e = 1; e < 3 * r + 2; e++) {
			uint32_t m = misses_in(s, e);
			CHECKF(m == lo || m == hi, "n=%u r=%u epoch %u: %u misses",
			       n, r, e, m);
		}
		/* each sample is a miss exactly once in any r consecutive
		 * epochs after the first: its record serves r uses */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t count = 0, p = rfb_evict_phases(s)[i];
			for (uint32_t e = 1; e <= r; e++)
				count += (uint32_t)rfb_evict_is_miss(e, p, r);
			CHECK(count == 1);
			CHECK(rfb_evict_death(0, p, r) == p + 1);
			CHECK(rfb_evict_is_miss(p + 1, p, r));
		}
		rfb_evict_free(s);
	}
}

static void test_refcount_and_r1(void)
{
	rfb_evict *s = build(101, 4, 3, RFB_EVICT_REFCOUNT, 0, 1);
	rfb_evict *one = build(57, 1, 3, RFB_EVICT_BALANCED, 0, 1);

	for (uint32_t e = 0; e < 20; e++) {
		CHECKF(misses_in(s, e) == (e % 4 == 0 ? 101u : 0u),
		       "refcount epoch %u: %u misses", e, misses_in(s, e));
		CHECK(misses_in(one, e) == 57);
		CHECK(rfb_evict_death(e, 0, 1) == e + 1u);
	}
	CHECK(rfb_evict_death(0, 3, 4) == 4 && rfb_evict_death(4, 3, 4) == 8);
	rfb_evict_free(s);
	rfb_evict_free(one);
}

static void test_bad_params(void)
{
	rfb_err err = { 0 };
	rfb_evict_params p = params(10, 0, 1, RFB_EVICT_BALANCED, 0, 1);

	CHECK(rfb_evict_build(&p, &err) == NULL && err.code == RFB_EINVAL);
	p = params(10, 2, 1, RFB_EVICT_BALANCED, 3, 2);
	CHECK(rfb_evict_build(&p, &err) == NULL && err.code == RFB_EINVAL);
	p = params(10, 2, 1, RFB_EVICT_BALANCED, 0, 11);
	CHECK(rfb_evict_build(&p, &err) == NULL && err.code == RFB_EINVAL);
	p = params(10, 2, 1, 7, 0, 1);
	CHECK(rfb_evict_build(&p, &err) == NULL && err.code == RFB_EINVAL);
	p = params(0, 2, 1, RFB_EVICT_BALANCED, 0, 1);
	CHECK(rfb_evict_build(&p, &err) == NULL && err.code == RFB_EINVAL);
	p = params(10, RFB_EVICT_MAX_REUSE + 1, 1, RFB_EVICT_BALANCED, 0, 1);
	CHECK(rfb_evict_build(&p, &err) == NULL && err.code == RFB_EINVAL);
}

static void test_round_trip(void)
{
	rfb_evict *s = build(777, 3, 42, RFB_EVICT_BALANCED, 2, 5), *t, *u;
	unsigned char *a, *b;
	size_t alen, blen;
	rfb_err err = { 0 };

	CHECK(rfb_evict_serialize(s, &a, &alen, &err) == 0);
	CHECK(alen == RFB_EVICT_HEADER_SIZE + 6 * (size_t)rfb_evict_count(s));
	CHECK(memcmp(a, "RFBSCHD\x02", 8) == 0);  /* 2/5: version 2 */
	t = rfb_evict_open_mem(a, alen, "t", &err);
	CHECKF(t != NULL, "%s", err.msg);
	if (!t)
		return;
	CHECK(rfb_evict_identity(t) == rfb_evict_identity(s));
	{
		const rfb_evict_params *pt = rfb_evict_params_of(t);
		const rfb_evict_params *ps = rfb_evict_params_of(s);
		CHECK(pt->index_identity == ps->index_identity &&
		      pt->total == ps->total && pt->reuse == ps->reuse &&
		      pt->seed == ps->seed && pt->policy == ps->policy &&
		      pt->shard_index == ps->shard_index &&
		      pt->shard_count == ps->shard_count);
	}
	CHECK(rfb_evict_serialize(t, &b, &blen, &err) == 0);
	CHECK(blen == alen && memcmp(a, b, alen) == 0);
	/* same inputs, same bytes; another seed, another identity */
	u = build(777, 3, 43, RFB_EVICT_BALANCED, 2, 5);
	CHECK(rfb_evict_identity(u) != rfb_evict_identity(s));
	CHECK(rfb_evict_check_index(t, rfb_evict_params_of(s)->index_identity,
				    777, "x", &err) == 0);
	CHECK(rfb_evict_check_index(t, 5, 777, "x.idx", &err) ==
	      RFB_EMISMATCH && strstr(err.msg, "another index"));
	CHECK(rfb_evict_check_index(t, rfb_evict_params_of(s)->index_identity,
				    778, "x", &err) == RFB_EMISMATCH);
	for (uint32_t i = 0; i < rfb_evict_count(t); i++)
		CHECK(rfb_evict_find(t, rfb_evict_ids(t)[i]) == (int64_t)i);
	CHECK(rfb_evict_find(t, 777) == -1);
	free(a);
	free(b);
	rfb_evict_free(s);
	rfb_evict_free(t);
	rfb_evict_free(u);
}

static int open_code(const unsigned char *d, size_t len)
{
	rfb_err err = { 0 };
	rfb_evict *s = rfb_evict_open_mem(d, len, "bad", &err);

	if (s) {
		rfb_evict_free(s);
		return 0;
	}
	CHECK(err.code < 0 && err.msg[0] && strcmp(err.path, "bad") == 0);
	return err.code;
}

/* Rewrite both checksums so that only the field under test is wrong. */
static void reseal(unsigned char *d, size_t len)
{
	rfb_put_le32(d + 56, rfb_crc32c(0, d + 64, len - 64));
	rfb_put_le32(d + 60, rfb_crc32c(0, d, 60));
}

/* A schedule of several shards in version 1 (an older refurb-evict, whose
 * partition was another) is refused, saying to make it again. */
static void test_old_shard_version(void)
{
	rfb_evict *s = build(100, 3, 1, RFB_EVICT_BALANCED, 1, 4);
	unsigned char *d;
	size_t len;
	rfb_err err = { 0 };

	CHECK(rfb_evict_serialize(s, &d, &len, NULL) == 0);
	CHECK(d[7] == 2);
	d[7] = 1;
	reseal(d, len);
	CHECK(rfb_evict_open_mem(d, len, "old.evict", &err) == NULL);
	CHECKF(err.code == RFB_EVERSION && strstr(err.msg, "shard 1/4") &&
	       strstr(err.msg, "make it again with refurb-evict"), "%s",
	       err.msg);
	free(d);
	rfb_evict_free(s);
}

static void test_bad_files(void)
{
	rfb_evict *s = build(50, 3, 1, RFB_EVICT_BALANCED, 0, 1);
	unsigned char *d, *x;
	size_t len;

	CHECK(rfb_evict_serialize(s, &d, &len, NULL) == 0);
	x = malloc(len + 8);
	for (size_t cut = 0; cut < len; cut++) {
		int rc = open_code(d, cut);
		CHECKF(rc == RFB_ETRUNC, "cut at %zu: %d", cut, rc);
	}
	for (size_t i = 0; i < len; i++) { /* every single-byte change */
		memcpy(x, d, len);
		x[i] ^= 0x20;
		CHECKF(open_code(x, len) < 0, "flip at %zu accepted", i);
	}
	memcpy(x, d, len);
	memcpy(x, "RFBINDX", 7);
	CHECK(open_code(x, len) == RFB_EFORMAT);
	memcpy(x, d, len);
	x[7] = 3;
	CHECK(open_code(x, len) == RFB_EVERSION);
	memcpy(x, d, len); /* version 2 is for several shards */
	x[7] = 2;
	reseal(x, len);
	CHECK(open_code(x, len) == RFB_EVERSION);
	memcpy(x, d, len);
	x[len] = 0;
	CHECK(open_code(x, len + 1) == RFB_EFORMAT); /* trailing garbage */
	memcpy(x, d, len); /* r = 0 */
	rfb_put_le32(x + 32, 0);
	reseal(x, len);
	CHECK(open_code(x, len) == RFB_EFORMAT);
	memcpy(x, d, len); /* shard 1/1 */
	rfb_put_le32(x + 48, 1);
	reseal(x, len);
	CHECK(open_code(x, len) == RFB_EFORMAT);
	memcpy(x, d, len); /* ids out of order */
	rfb_put_le32(x + 64, 5);
	reseal(x, len);
	CHECK(open_code(x, len) == RFB_EFORMAT);
	memcpy(x, d, len); /* a phase >= r */
	rfb_put_le16(x + 64 + 200, 3);
	reseal(x, len);
	CHECK(open_code(x, len) == RFB_EFORMAT);
	memcpy(x, d, len); /* unbalanced: every phase 0 */
	for (size_t i = 0; i < 50; i++)
		rfb_put_le16(x + 64 + 200 + 2 * i, 0);
	reseal(x, len);
	CHECK(open_code(x, len) == RFB_EFORMAT);
	memcpy(x, d, len); /* refcount with the balanced phases */
	rfb_put_le16(x + 36, RFB_EVICT_REFCOUNT);
	reseal(x, len);
	CHECK(open_code(x, len) == RFB_EFORMAT);
	free(x);
	free(d);
	rfb_evict_free(s);
}

static void test_open_file(void)
{
	rfb_err err = { 0 };

	CHECK(rfb_evict_open("/nonexistent/x.evict", &err) == NULL);
	CHECK(err.code == RFB_EIO &&
	      strcmp(err.path, "/nonexistent/x.evict") == 0);
	CHECK(strcmp(rfb_evict_policy_name(RFB_EVICT_REFCOUNT), "refcount") == 0);
	CHECK(rfb_evict_policy_parse("balanced") == RFB_EVICT_BALANCED);
	CHECK(rfb_evict_policy_parse("lru") == -1);
}

/* Theorem 1 by the naive formula, for moderate sizes. */
static double diversity_naive(double a, double af, double r, double k)
{
	double q = 1 - af / a + af / a * pow(1 - 1 / af, r);
	return a * (1 - pow(q, k / r));
}

static void test_diversity(void)
{
	double u, star;

	for (double r = 1; r <= 5; r++) {
		u = rfb_evict_diversity(1000, 20, r, 90);
		CHECKF(fabs(u - diversity_naive(1000, 20, r, 90)) < 1e-9 * u,
		       "r=%g: %.17g", r, u);
	}
	/* r = 1 is standard augmentation: |A| (1 - (1 - 1/|A|)^k) */
	CHECK(fabs(rfb_evict_diversity(500, 7, 1, 30) -
		   500 * (1 - pow(1 - 1.0 / 500, 30))) < 1e-9);
	/* |A| = 1e30: every use is unique for standard augmentation, and
	 * the naive formula rounds 1 - 1e-27 to 1 and gives 0 */
	star = rfb_evict_diversity(1e30, 1e3, 1, 90);
	CHECKF(fabs(star - 90) < 1e-9, "%.17g", star);
	u = rfb_evict_diversity(1e30, 1e3, 3, 90);
	/* 30 rounds of 3 final draws among 1000: 30 * 1000 (1 - 0.999^3) */
	CHECKF(fabs(u - 30 * 1000 * (1 - pow(0.999, 3))) < 1e-9,
	       "%.17g", u);
	CHECK(diversity_naive(1e30, 1e3, 3, 90) == 0);
	/* a single final augmentation: reuse gives no new samples */
	CHECK(fabs(rfb_evict_diversity(1e6, 1, 4, 8) - 2) < 1e-5);
	CHECK(rfb_evict_diversity(1e6, 100, 2, 10) <
	      rfb_evict_diversity(1e6, 100, 1, 10));
	CHECK(isnan(rfb_evict_diversity(10, 20, 1, 1)));
	CHECK(isnan(rfb_evict_diversity(10, 0, 1, 1)));
	CHECK(isnan(rfb_evict_diversity(10, 2, 0, 1)));
	CHECK(isnan(rfb_evict_diversity(10, 2, 1, 0)));
	CHECK(isnan(rfb_evict_diversity(INFINITY, 2, 1, 1)));
}

int main(void)
{
	RUN(test_shards_partition);
	RUN(test_shards_independent_of_r);
	RUN(test_shards_spread);
	RUN(test_balanced_property);
	RUN(test_refcount_and_r1);
	RUN(test_bad_params);
	RUN(test_round_trip);
	RUN(test_bad_files);
	RUN(test_old_shard_version);
	RUN(test_open_file);
	RUN(test_diversity);
	return test_done();
}
