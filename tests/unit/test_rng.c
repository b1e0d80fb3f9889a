/*
 * test_rng.c - the counter-based generator: Philox known answers, golden
 * values of refurb's key mapping, and basic uniformity.
 */
#include <math.h>

#include "refurb/rng.h"
#include "test.h"

static void test_philox_known_answers(void)
{
	/* Random123 kat_vectors for philox4x32_10 */
	static const struct {
		uint32_t ctr[4], key[2], out[4];
	} kat[] = {
		{ { 0, 0, 0, 0 }, { 0, 0 },
		  { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
		{ { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff },
		  { 0xffffffff, 0xffffffff },
		  { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
		{ { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 },
		  { 0xa4093822, 0x299f31d0 },
		  { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
	};
	for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
		uint32_t out[4];
		rfb_philox4x32(kat[i].ctr, kat[i].key, out);
		for (int w = 0; w < 4; w++)
			CHECKF(out[w] == kat[i].out[w], "vector %zu word %d: %08x",
			       i, w, out[w]);
	}
}

static void test_stream_golden(void)
{
	/* refurb's mapping of (seed, epoch, sample, stage, draw): golden */
	rfb_rng r;
	uint32_t first[6];

	rfb_rng_init(&r, 7, 3, 12345, RFB_STAGE_PLAN);
	for (int i = 0; i < 6; i++)
		first[i] = rfb_rng_u32(&r);
	/* draws 0-3 are block 0, draws 4-5 start block 1 */
	uint32_t ctr[4] = { 0, RFB_STAGE_PLAN, 3, 12345 }, key[2] = { 7, 0 };
	uint32_t out[4];
	rfb_philox4x32(ctr, key, out);
	CHECK(first[0] == out[0] && first[3] == out[3]);
	ctr[0] = 1;
	rfb_philox4x32(ctr, key, out);
	CHECK(first[4] == out[0] && first[5] == out[1]);
	CHECKF(first[0] == 0x58c0b1e4u, "%08x", first[0]);

	rfb_rng_init(&r, 0x123456789abcdefULL, 0, 0, RFB_STAGE_EVICT);
	uint32_t v = rfb_rng_below(&r, 1000);
	CHECKF(v == 754, "%u", v);
}

static void test_same_key_same_numbers(void)
{
	rfb_rng a, b;

	rfb_rng_init(&a, 42, 1, 2, 3);
	rfb_rng_init(&b, 42, 1, 2, 3);
	for (int i = 0; i < 100; i++)
		CHECK(rfb_rng_u64(&a) == rfb_rng_u64(&b));
	rfb_rng_init(&a, 42, 1, 2, 3);
	rfb_rng_init(&b, 42, 1, 3, 3);
	CHECK(rfb_rng_u64(&a) != rfb_rng_u64(&b));
}

static void test_uniformity(void)
{
	rfb_rng r;
	int counts[10] = { 0 };
	double sum = 0, chi2 = 0;
	const int n = 100000;

	rfb_rng_init(&r, 1, 0, 0, 99);
	for (int i = 0; i < n; i++) {
		double u = rfb_rng_uniform(&r);
		CHECK(u >= 0 && u < 1);
		sum += u;
		counts[rfb_rng_below(&r, 10)]++;
	}
	CHECK(fabs(sum / n - 0.5) < 0.01);
	for (int i = 0; i < 1000; i++) {
		double v = rfb_rng_range(&r, -3.0, 5.0);
		CHECK(v >= -3.0 && v < 5.0);
	}
	for (int k = 0; k < 10; k++)
		chi2 += (counts[k] - n / 10.0) * (counts[k] - n / 10.0) / (n / 10.0);
	/* 9 degrees of freedom, p = 0.001 critical value 27.88 */
	CHECKF(chi2 < 27.88, "chi2 %.2f", chi2);
}

static void test_shuffle_is_permutation(void)
{
	rfb_rng r;
	uint32_t a[1000];
	int seen[1000] = { 0 }, moved = 0;

	for (uint32_t i = 0; i < 1000; i++)
		a[i] = i;
	rfb_rng_init(&r, 5, 0, 0, RFB_STAGE_EVICT);
	rfb_rng_shuffle_u32(&r, a, 1000);
	for (uint32_t i = 0; i < 1000; i++) {
		seen[a[i]]++;
		moved += a[i] != i;
	}
	for (int i = 0; i < 1000; i++)
		CHECK(seen[i] == 1);
	CHECK(moved > 900);
}

int main(void)
{
	RUN(test_philox_known_answers);
	RUN(test_stream_golden);
	RUN(test_same_key_same_numbers);
	RUN(test_uniformity);
	RUN(test_shuffle_is_permutation);
	return test_done();
}
