/*
 * rng.h - the counter-based random number generator.
 *
 * Every random choice in refurb (shard membership, the eviction
 * permutation, the batch shuffle, every augmentation parameter) is a pure
 * function of (seed, epoch, sample id, stage, draw number), computed with
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11).  There is no hidden state: the same sample in the same epoch
 * gets the same numbers whatever the thread count, the processing order,
 * the restart point or the machine.
 *
 * Mapping: key = seed (low word, high word); counter = (draw block, stage,
 * epoch, sample id).  Each block gives four 32-bit words.
 */
#ifndef REFURB_RNG_H
#define REFURB_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stage numbers: which part of refurb is drawing.  Part of the file
 * formats' meaning (a change changes every output): never renumber. */
enum {
	RFB_STAGE_SHARD = 1,       /* shard membership (sample = 0) */
	RFB_STAGE_EVICT = 2,       /* eviction permutation (sample = 0) */
	RFB_STAGE_PLAN = 3,        /* per-epoch batch shuffle (sample = 0) */
	RFB_STAGE_ADVISE = 4,      /* refurb-advise's sample (sample = 0) */
	RFB_STAGE_PARTIAL = 0x10000, /* + filter position in the partial spec */
	RFB_STAGE_FINAL = 0x20000,   /* + filter position in the final spec */
	RFB_STAGE_VIEW = 0x100,      /* + view * this in the final spec (view
				      * 0 is the stage itself; layers < 64) */
};

typedef struct rfb_rng {
	uint32_t key[2];
	uint32_t ctr[4];
	uint32_t out[4];
	unsigned left; /* unused words in out, taken from the end */
} rfb_rng;

/* One Philox4x32-10 block: out = philox(ctr, key).  For tests. */
void rfb_philox4x32(const uint32_t ctr[4], const uint32_t key[2],
		    uint32_t out[4]);

/* Position r at draw 0 of the stream (seed, epoch, sample, stage). */
void rfb_rng_init(rfb_rng *r, uint64_t seed, uint32_t epoch, uint32_t sample,
		  uint32_t stage);

/* Next 32 random bits. */
uint32_t rfb_rng_u32(rfb_rng *r);

/* Next 64 random bits (two words, high word first). */
uint64_t rfb_rng_u64(rfb_rng *r);

/* Uniform double in [0, 1) with 53 random bits. */
double rfb_rng_uniform(rfb_rng *r);

/* Uniform double in [lo, hi). */
double rfb_rng_range(rfb_rng *r, double lo, double hi);

/* Uniform integer in [0, n), without modulo bias; n must be > 0. */
uint32_t rfb_rng_below(rfb_rng *r, uint32_t n);

/* Fisher-Yates shuffle of a[0..n) (n < 2^32). */
void rfb_rng_shuffle_u32(rfb_rng *r, uint32_t *a, size_t n);

#ifdef __cplusplus
}
#endif

#endif
