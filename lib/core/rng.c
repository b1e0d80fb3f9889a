/*
 * rng.c - Philox4x32-10 counter-based generator (see rng.h).
 */
#include "refurb/rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t *hi)
{
	uint64_t p = (uint64_t)a * b;
	*hi = (uint32_t)(p >> 32);
	return (uint32_t)p;
}

void rfb_philox4x32(const uint32_t ctr[4], const uint32_t key[2],
		    uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];

	for (int round = 0; round < 10; round++) {
		uint32_t hi0, hi1;
		uint32_t lo0 = mulhilo(PHILOX_M0, c0, &hi0);
		uint32_t lo1 = mulhilo(PHILOX_M1, c2, &hi1);
		uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
		c0 = n0;
		c1 = lo1;
		c2 = n2;
		c3 = lo0;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

void rfb_rng_init(rfb_rng *r, uint64_t seed, uint32_t epoch, uint32_t sample,
		  uint32_t stage)
{
	r->key[0] = (uint32_t)seed;
	r->key[1] = (uint32_t)(seed >> 32);
	r->ctr[0] = 0;
	r->ctr[1] = stage;
	r->ctr[2] = epoch;
	r->ctr[3] = sample;
	r->left = 0;
}

uint32_t rfb_rng_u32(rfb_rng *r)
{
	if (r->left == 0) {
		rfb_philox4x32(r->ctr, r->key, r->out);
		r->ctr[0]++;
		r->left = 4;
	}
	return r->out[4 - r->left--];
}

uint64_t rfb_rng_u64(rfb_rng *r)
{
	uint64_t hi = rfb_rng_u32(r);
	return hi << 32 | rfb_rng_u32(r);
}

double rfb_rng_uniform(rfb_rng *r)
{
	return (double)(rfb_rng_u64(r) >> 11) * 0x1.0p-53;
}

double rfb_rng_range(rfb_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rfb_rng_uniform(r);
}

uint32_t rfb_rng_below(rfb_rng *r, uint32_t n)
{
	/* Lemire's multiply-and-reject: exact, usually one draw */
	uint64_t m = (uint64_t)rfb_rng_u32(r) * n;
	uint32_t low = (uint32_t)m;

	if (low < n) {
		uint32_t threshold = (0u - n) % n;
		while (low < threshold) {
			m = (uint64_t)rfb_rng_u32(r) * n;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

void rfb_rng_shuffle_u32(rfb_rng *r, uint32_t *a, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		uint32_t j = rfb_rng_below(r, (uint32_t)i);
		uint32_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}
