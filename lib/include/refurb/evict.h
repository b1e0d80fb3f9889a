/*
 * evict.h - the eviction schedule: which samples belong to this shard, and
 * in which epochs each of them is recomputed (a cache miss).
 *
 * A schedule is a pure function of (index identity, sample count, reuse
 * factor r, seed, policy, shard K/N).  Every sample of the shard gets an
 * eviction phase p in [0, r), and the one rule below says when it is a
 * miss; the policies differ only in how they hand out the phases:
 *
 *   miss(e, p) = (e == 0) || (e >= 1 && (e - 1 - p) % r == 0)
 *
 * balanced  one random permutation of the shard (keyed by (seed, 0, 0,
 *           RFB_STAGE_EVICT)) cut into r chunks of floor or ceil(n/r)
 *           samples; chunk c gets phase c, so it is evicted at the start
 *           of epochs c+1, c+1+r, c+1+2r, ...  Every epoch after the first
 *           has floor(n/r) or ceil(n/r) misses.
 * refcount  every sample has phase r-1: every record expires after r
 *           uses, so epochs 0, r, 2r, ... are all misses, the others none.
 *
 * r = 1 is standard augmentation: every sample is a miss in every epoch.
 * Epochs are numbered from 0.  The byte layout is in refurb-evict(5).
 */
#ifndef REFURB_EVICT_H
#define REFURB_EVICT_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/enum.h"
#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_EVICT_MAX_REUSE 65535u      /* phases are stored in 16 bits */
#define RFB_EVICT_MAX_SAMPLES 0xfffffffeu
#define RFB_EVICT_HEADER_SIZE 64u

enum rfb_evict_policy {
	RFB_EVICT_BALANCED = 1,
	RFB_EVICT_REFCOUNT = 2,
};

/* Everything a schedule is a function of. */
typedef struct rfb_evict_params {
	uint64_t index_identity; /* rfb_index_identity() of the index */
	uint32_t total;          /* samples in the whole index (>= 1) */
	uint32_t reuse;          /* r, 1 .. RFB_EVICT_MAX_REUSE */
	uint64_t seed;
	int policy;              /* enum rfb_evict_policy */
	uint32_t shard_index;    /* K, 0 <= K < shard_count */
	uint32_t shard_count;    /* N, 1 .. total */
} rfb_evict_params;

typedef struct rfb_evict rfb_evict;

/*
 * Build the schedule for p.  Returns a handle (free with rfb_evict_free)
 * or NULL with err filled: RFB_EINVAL for a bad parameter, RFB_ENOMEM.
 * Memory: 6 bytes per sample of the shard, and as much again while it
 * runs; none per sample of the rest of the index.
 */
rfb_evict *rfb_evict_build(const rfb_evict_params *p, rfb_err *err) RFB_MUST_CHECK;

/*
 * Serialize s in refurb-evict(5) format into a malloc'ed buffer
 * (*data, caller frees) of *len bytes.  Returns 0 or RFB_ENOMEM.
 */
int rfb_evict_serialize(const rfb_evict *s, unsigned char **data, size_t *len,
			rfb_err *err) RFB_MUST_CHECK;

/*
 * Open and verify a schedule file (path "-" is stdin): magic, version,
 * checksums, exact length, ids strictly increasing and below the index
 * size, phases below r and distributed as the policy requires.  Returns
 * the handle or NULL with err filled (RFB_EFORMAT, RFB_EVERSION,
 * RFB_ETRUNC, RFB_ECHECKSUM, RFB_ELIMIT, RFB_EIO, RFB_ENOMEM).
 */
rfb_evict *rfb_evict_open(const char *path, rfb_err *err) RFB_MUST_CHECK;

/* Same, from a schedule image in memory (not kept).  name is used in
 * error messages (NULL: "(memory)"). */
rfb_evict *rfb_evict_open_mem(const void *data, size_t len, const char *name,
			      rfb_err *err) RFB_MUST_CHECK;

/* Release a schedule.  NULL accepted. */
void rfb_evict_free(rfb_evict *s);

/* The parameters the schedule was made with. */
const rfb_evict_params *rfb_evict_params_of(const rfb_evict *s);

/* Number of samples in the shard (n). */
uint32_t rfb_evict_count(const rfb_evict *s);

/* The shard's sample ids, ascending, and their phases (both n long, owned
 * by the schedule). */
const uint32_t *rfb_evict_ids(const rfb_evict *s);
const uint16_t *rfb_evict_phases(const rfb_evict *s);

/*
 * 64-bit identity of the schedule: a hash of its serialized bytes.  Plans
 * record it so that later stages can refuse a plan of another schedule.
 */
uint64_t rfb_evict_identity(const rfb_evict *s);

/*
 * Check that s was made for the index with this identity and sample
 * count.  Returns 0, or RFB_EMISMATCH with err filled (path = name).
 */
int rfb_evict_check_index(const rfb_evict *s, uint64_t index_identity,
			  uint32_t index_count, const char *name,
			  rfb_err *err) RFB_MUST_CHECK;

/* Position of sample id in the shard (index into rfb_evict_ids), or -1 if
 * id is not in the shard.  O(log n). */
int64_t rfb_evict_find(const rfb_evict *s, uint32_t id);

/* The policies' names ("balanced", "refcount"; enum.h) and their namer
 * and parser: NULL for an unknown value, -1 for an unknown name. */
extern const struct rfb_enum_name rfb_evict_policy_names[];
const char *rfb_evict_policy_name(enum rfb_evict_policy policy);
int rfb_evict_policy_parse(const char *name);

/*
 * The shard partition: write the ids of shard k of n_shards (ascending)
 * into out, which must hold rfb_evict_shard_size(total, n_shards, k)
 * entries.  The partition is a seeded permutation of 0..total-1 (a
 * Feistel network keyed by seed, refurb-evict(5)) cut into n_shards
 * parts of floor or ceil(total/n_shards) ids: the same for every epoch
 * and every r.  The permutation is computed one position at a time: no
 * memory but out's.  Returns 0 or RFB_EINVAL for bad arguments.
 */
int rfb_evict_shard_members(uint32_t total, uint64_t seed, uint32_t k,
			    uint32_t n_shards, uint32_t *out,
			    rfb_err *err) RFB_MUST_CHECK;

/* Number of samples in shard k of n_shards (0 if k >= n_shards). */
uint32_t rfb_evict_shard_size(uint32_t total, uint32_t n_shards, uint32_t k);

/* Is a sample of this phase a miss in epoch e?  (phase < r) */
static inline int rfb_evict_is_miss(uint32_t epoch, uint32_t phase,
				    uint32_t reuse)
{
	return epoch == 0 ||
	       ((uint64_t)epoch - 1 + reuse - phase) % reuse == 0;
}

/*
 * The epoch in which a record written in epoch e (a miss) dies: the next
 * epoch in which its sample is a miss again, i.e. the record serves the
 * epochs e .. death-1 and may be deleted once epoch death-1 has been
 * consumed.  For e = 0 that is p+1; for later misses e+r.
 */
static inline uint64_t rfb_evict_death(uint32_t epoch, uint32_t phase,
				       uint32_t reuse)
{
	return epoch == 0 ? (uint64_t)phase + 1 : (uint64_t)epoch + reuse;
}

/*
 * Theorem 1 of the refurbishing paper: the expected number of unique
 * training samples E(U) seen in k epochs when a sample has |A| = aug
 * distinct full augmentations, |A_F| = final of its final part, and each
 * partial result is reused r times:
 *
 *   E(U) = |A| (1 - (1 - |A_F|/|A| + |A_F|/|A| (1 - 1/|A_F|)^r)^(k/r))
 *
 * computed with log1p/expm1 so that |A| up to 1e300 keeps full precision.
 * r = 1 gives E(U*) of standard augmentation.  Returns NAN unless
 * 1 <= final <= aug, reuse >= 1 and epochs >= 1 (all finite).
 */
double rfb_evict_diversity(double aug, double final, double reuse,
			   double epochs);

#ifdef __cplusplus
}
#endif

#endif
