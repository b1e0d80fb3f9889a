/*
 * evict.c - the eviction schedule: the shard partition, the balanced and
 * reference-count policies, and the refurb-evict(5) file (see evict.h;
 * the bytes of its records are evict_format.c's).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/checksum.h"
#include "refurb/io.h"
#include "refurb/rng.h"
#include "refurb/evict.h"
#include "evict_internal.h"

#define EVICT_IDENTITY_SEED 0x5343484544554c45ULL /* "SCHEDULE" */

struct rfb_evict {
	rfb_evict_params p;
	uint32_t n;        /* samples in the shard */
	uint32_t *ids;     /* ascending */
	uint16_t *phases;
	uint64_t identity;
};

const struct rfb_enum_name rfb_evict_policy_names[] = {
	{ RFB_EVICT_BALANCED, "balanced" },
	{ RFB_EVICT_REFCOUNT, "refcount" },
	{ 0, NULL },
};

const char *rfb_evict_policy_name(enum rfb_evict_policy policy)
{
	return rfb_enum_name(rfb_evict_policy_names, (int)policy);
}

int rfb_evict_policy_parse(const char *name)
{
	return rfb_enum_parse(rfb_evict_policy_names, name);
}

uint32_t rfb_evict_shard_size(uint32_t total, uint32_t n_shards, uint32_t k)
{
	if (n_shards == 0 || k >= n_shards)
		return 0;
	return (uint32_t)((uint64_t)(k + 1) * total / n_shards -
			  (uint64_t)k * total / n_shards);
}

/* The permutation 0..n-1 shuffled by the stream (seed, 0, 0, stage). */
static uint32_t *seeded_permutation(uint32_t n, uint64_t seed, uint32_t stage)
{
	uint32_t *perm = malloc(((size_t)n ? n : 1) * sizeof *perm);
	rfb_rng rng;

	if (!perm)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	rfb_rng_init(&rng, seed, 0, 0, stage);
	rfb_rng_shuffle_u32(&rng, perm, n);
	return perm;
}

/* The shard partition's permutation of 0..total-1, evaluated one
 * position at a time, so that a shard costs memory of its own size only:
 * a balanced Feistel network of PARTITION_ROUNDS rounds over the numbers
 * of 2 x half bits (the smallest even width that holds total - 1; round
 * function Philox with key seed, counter (x, stage 1, round + 1, 0)),
 * walked again until it lands below total (cycle walking keeps it a
 * permutation).  refurb-evict(5), Shards. */
#define PARTITION_ROUNDS 6

struct partition {
	uint32_t key[2];
	unsigned half;         /* bits of each half */
	uint32_t mask;
	uint32_t total;
};

static uint64_t feistel(const struct partition *p, uint64_t x)
{
	uint32_t l = (uint32_t)(x >> p->half), r = (uint32_t)x & p->mask;

	for (uint32_t round = 0; round < PARTITION_ROUNDS; round++) {
		uint32_t ctr[4] = { r, RFB_STAGE_SHARD, round + 1, 0 }, out[4];
		rfb_philox4x32(ctr, p->key, out);
		uint32_t t = l ^ (out[0] & p->mask);
		l = r;
		r = t;
	}
	return ((uint64_t)l << p->half) | r;
}

static uint32_t partition_at(const struct partition *p, uint32_t i)
{
	uint64_t x = i;

	do
		x = feistel(p, x);
	while (x >= p->total);
	return (uint32_t)x;
}

static int id_order(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int rfb_evict_shard_members(uint32_t total, uint64_t seed, uint32_t k,
			    uint32_t n_shards, uint32_t *out, rfb_err *err)
{
	struct partition p = { { (uint32_t)seed, (uint32_t)(seed >> 32) },
			       1, 1, total };
	uint64_t lo, hi;
	unsigned bits = 0;

	if (n_shards == 0 || k >= n_shards || n_shards > total)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "shard %u/%u of %u samples: need K < N <= "
				   "the sample count", k, n_shards, total);
	if (n_shards == 1) {
		for (uint32_t i = 0; i < total; i++)
			out[i] = i;
		return 0;
	}
	while (((uint64_t)1 << bits) < total)
		bits++;
	if (bits > 2) {
		p.half = (bits + 1) / 2;
		p.mask = (uint32_t)(((uint64_t)1 << p.half) - 1);
	}
	/* members are a slice of the permutation, sorted */
	lo = (uint64_t)k * total / n_shards;
	hi = (uint64_t)(k + 1) * total / n_shards;
	for (uint64_t i = lo; i < hi; i++)
		out[i - lo] = partition_at(&p, (uint32_t)i);
	qsort(out, (size_t)(hi - lo), sizeof *out, id_order);
	return 0;
}

static int check_params(const rfb_evict_params *p, rfb_err *err)
{
	if (p->total < 1 || p->total > RFB_EVICT_MAX_SAMPLES)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "sample count %u out of range (1 to %u)",
				   p->total, RFB_EVICT_MAX_SAMPLES);
	if (p->reuse < 1 || p->reuse > RFB_EVICT_MAX_REUSE)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "reuse factor %u out of range (1 to %u)",
				   p->reuse, RFB_EVICT_MAX_REUSE);
	if (!rfb_evict_policy_name(p->policy))
		return rfb_err_set(err, RFB_EINVAL, NULL, "unknown policy %d",
				   p->policy);
	if (p->shard_count < 1 || p->shard_index >= p->shard_count)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "shard %u/%u: K must be less than N",
				   p->shard_index, p->shard_count);
	if (p->shard_count > p->total)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "%u shards for %u samples: every shard needs "
				   "at least one sample", p->shard_count,
				   p->total);
	return 0;
}

static rfb_evict *evict_alloc(const rfb_evict_params *p, uint32_t n,
			      rfb_err *err)
{
	rfb_evict *s = calloc(1, sizeof *s);

	if (s) {
		s->p = *p;
		s->n = n;
		s->ids = malloc((size_t)n * sizeof *s->ids);
		s->phases = malloc((size_t)n * sizeof *s->phases);
	}
	if (!s || !s->ids || !s->phases) {
		rfb_evict_free(s);
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	return s;
}

/* Phases of the balanced policy: a permutation of the shard cut into r
 * chunks; the sample at permutation position i gets phase floor(i*r/n)'s
 * chunk, i.e. chunk c covers positions [c*n/r, (c+1)*n/r). */
static int assign_balanced(rfb_evict *s, rfb_err *err)
{
	uint32_t r = s->p.reuse, n = s->n;
	uint32_t *perm = seeded_permutation(n, s->p.seed, RFB_STAGE_EVICT);

	if (!perm)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	for (uint32_t c = 0; c < r; c++) {
		uint64_t lo = (uint64_t)c * n / r, hi = (uint64_t)(c + 1) * n / r;
		for (uint64_t i = lo; i < hi; i++)
			s->phases[perm[i]] = (uint16_t)c;
	}
	free(perm);
	return 0;
}

static int compute_identity(rfb_evict *s, rfb_err *err)
{
	unsigned char *data;
	size_t len;
	int rc = rfb_evict_serialize(s, &data, &len, err);

	if (rc < 0)
		return rc;
	s->identity = rfb_hash64(data, len, EVICT_IDENTITY_SEED);
	free(data);
	return 0;
}

rfb_evict *rfb_evict_build(const rfb_evict_params *p, rfb_err *err)
{
	rfb_evict *s;
	uint32_t n;

	if (check_params(p, err) < 0)
		return NULL;
	n = rfb_evict_shard_size(p->total, p->shard_count, p->shard_index);
	if (!(s = evict_alloc(p, n, err)))
		return NULL;
	if (rfb_evict_shard_members(p->total, p->seed, p->shard_index,
				    p->shard_count, s->ids, err) < 0)
		goto fail;
	if (p->policy == RFB_EVICT_REFCOUNT) {
		for (uint32_t i = 0; i < n; i++)
			s->phases[i] = (uint16_t)(p->reuse - 1);
	} else if (assign_balanced(s, err) < 0) {
		goto fail;
	}
	if (compute_identity(s, err) < 0)
		goto fail;
	return s;
fail:
	rfb_evict_free(s);
	return NULL;
}

void rfb_evict_free(rfb_evict *s)
{
	if (!s)
		return;
	free(s->ids);
	free(s->phases);
	free(s);
}

int rfb_evict_serialize(const rfb_evict *s, unsigned char **data, size_t *len,
			rfb_err *err)
{
	size_t body = (size_t)s->n * EVICT_ENTRY_BYTES;
	size_t total = RFB_EVICT_HEADER_SIZE + body;
	unsigned char *buf = malloc(total);
	/* one shard: the same in both versions, written as version 1 (its
	 * identity, and what was made with it, stays) */
	struct evict_header h = { .version = s->p.shard_count > 1 ?
				  EVICT_VERSION : EVICT_VERSION_ONE_SHARD,
				  .p = s->p, .n = s->n };

	if (!buf)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	rfbi_evict_body_encode(s->ids, s->phases, s->n,
			       buf + RFB_EVICT_HEADER_SIZE);
	h.body_crc = rfb_crc32c(0, buf + RFB_EVICT_HEADER_SIZE, body);
	rfbi_evict_header_encode(&h, buf);
	*data = buf;
	*len = total;
	return 0;
}

/* ---- reading ---- */

/* The header's parameters and sizes against each other and len. */
static int check_header(const unsigned char *d, size_t len, const char *name,
			const struct evict_header *h, rfb_err *err)
{
	const rfb_evict_params *p = &h->p;
	uint64_t want;
	rfb_err why = { 0 };

	if (check_params(p, &why) < 0)
		return rfb_err_set(err, RFB_EFORMAT, name, "bad header: %s",
				   why.msg);
	if (h->version != (p->shard_count > 1 ? EVICT_VERSION
					      : EVICT_VERSION_ONE_SHARD))
		return rfb_err_set(err, RFB_EVERSION, name, "shard %u/%u in "
				   "schedule format version %u: %s", p->shard_index,
				   p->shard_count, h->version, h->version == 1 ?
				   "made by an older refurb-evict, whose shards "
				   "were another partition; make it again with "
				   "refurb-evict (and the plan with refurb-plan)"
				   : "corrupt (version 2 is for several shards)");
	if (h->n != rfb_evict_shard_size(p->total, p->shard_count,
					 p->shard_index))
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "shard %u/%u of %u samples cannot have %u",
				   p->shard_index, p->shard_count, p->total, h->n);
	want = RFB_EVICT_HEADER_SIZE + (uint64_t)h->n * EVICT_ENTRY_BYTES;
	if (len < want)
		return rfb_err_set(err, RFB_ETRUNC, name,
				   "truncated: %zu bytes, expected %llu", len,
				   (unsigned long long)want);
	if (len > want)
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "%llu bytes of garbage after the schedule",
				   (unsigned long long)(len - want));
	if (h->body_crc !=
	    rfb_crc32c(0, d + RFB_EVICT_HEADER_SIZE, len - RFB_EVICT_HEADER_SIZE))
		return rfb_err_set(err, RFB_ECHECKSUM, name,
				   "body checksum mismatch");
	return 0;
}

/* Ids strictly increasing and below total, phases below r. */
static int load_body(rfb_evict *s, const unsigned char *d, const char *name,
		     rfb_err *err)
{
	rfbi_evict_body_decode(d + RFB_EVICT_HEADER_SIZE, s->n, s->ids,
			       s->phases);
	for (uint32_t i = 0; i < s->n; i++) {
		if (s->ids[i] >= s->p.total || (i && s->ids[i] <= s->ids[i - 1]))
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample id %u at position %u out of "
					   "order or out of range", s->ids[i], i);
		if (s->phases[i] >= s->p.reuse)
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample %u has phase %u, r is %u",
					   s->ids[i], s->phases[i], s->p.reuse);
	}
	return 0;
}

/* The phase histogram the policy promises: balanced chunks of floor or
 * ceil(n/r) samples, or every phase r-1 for refcount. */
static int check_histogram(const rfb_evict *s, const char *name, rfb_err *err)
{
	uint32_t r = s->p.reuse, lo = s->n / r, hi = lo + (s->n % r != 0);
	uint32_t *count = calloc(r, sizeof *count);
	int rc = 0;

	if (!count)
		return rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
	for (uint32_t i = 0; i < s->n; i++)
		count[s->phases[i]]++;
	for (uint32_t c = 0; c < r && rc == 0; c++) {
		if (s->p.policy == RFB_EVICT_REFCOUNT && c != r - 1 && count[c])
			rc = rfb_err_set(err, RFB_EFORMAT, name,
					 "refcount schedule with phase %u "
					 "(all must be r-1)", c);
		if (s->p.policy == RFB_EVICT_BALANCED &&
		    (count[c] < lo || count[c] > hi))
			rc = rfb_err_set(err, RFB_EFORMAT, name,
					 "unbalanced: phase %u has %u samples, "
					 "expected %u or %u", c, count[c], lo, hi);
	}
	free(count);
	return rc;
}

rfb_evict *rfb_evict_open_mem(const void *data, size_t len, const char *name,
			      rfb_err *err)
{
	const unsigned char *d = data;
	struct evict_header h;
	rfb_evict *s;

	if (!name)
		name = "(memory)";
	if (rfbi_evict_header_decode(d, len, &h, name, err) < 0 ||
	    check_header(d, len, name, &h, err) < 0)
		return NULL;
	if (!(s = evict_alloc(&h.p, h.n, err)))
		return NULL;
	if (load_body(s, d, name, err) < 0 || check_histogram(s, name, err) < 0) {
		rfb_evict_free(s);
		return NULL;
	}
	s->identity = rfb_hash64(d, len, EVICT_IDENTITY_SEED);
	return s;
}

rfb_evict *rfb_evict_open(const char *path, rfb_err *err)
{
	size_t max = RFB_EVICT_HEADER_SIZE +
		     (size_t)RFB_EVICT_MAX_SAMPLES * EVICT_ENTRY_BYTES;
	unsigned char *data;
	size_t len;
	rfb_evict *s;

	if (rfb_file_load(path, max, &data, &len, err) < 0)
		return NULL;
	s = rfb_evict_open_mem(data, len, strcmp(path, "-") ? path : "(stdin)",
			       err);
	free(data);
	return s;
}

/* ---- accessors ---- */

const rfb_evict_params *rfb_evict_params_of(const rfb_evict *s)
{
	return &s->p;
}

uint32_t rfb_evict_count(const rfb_evict *s)
{
	return s->n;
}

const uint32_t *rfb_evict_ids(const rfb_evict *s)
{
	return s->ids;
}

const uint16_t *rfb_evict_phases(const rfb_evict *s)
{
	return s->phases;
}

uint64_t rfb_evict_identity(const rfb_evict *s)
{
	return s->identity;
}

int rfb_evict_check_index(const rfb_evict *s, uint64_t index_identity,
			  uint32_t index_count, const char *name, rfb_err *err)
{
	if (s->p.index_identity != index_identity || s->p.total != index_count)
		return rfb_err_set(err, RFB_EMISMATCH, name,
				   "schedule made for another index (index "
				   "%016llx of %u samples, schedule is for "
				   "%016llx of %u)",
				   (unsigned long long)index_identity,
				   index_count,
				   (unsigned long long)s->p.index_identity,
				   s->p.total);
	return 0;
}

int64_t rfb_evict_find(const rfb_evict *s, uint32_t id)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n && s->ids[lo] == id ? (int64_t)lo : -1;
}

/* ---- Theorem 1 ---- */

double rfb_evict_diversity(double aug, double final, double reuse,
			   double epochs)
{
	double fresh, q_log;

	if (!isfinite(aug) || !isfinite(final) || !isfinite(reuse) ||
	    !isfinite(epochs) || final < 1 || aug < final || reuse < 1 ||
	    epochs < 1)
		return NAN;
	/* A given full augmentation a is produced in one refurbishing round
	 * (one partial draw, r final draws) when the partial draw matches
	 * a's partial part (probability |A_F|/|A|) and one of the r final
	 * draws matches its final part (probability fresh). */
	fresh = -expm1(reuse * log1p(-1.0 / final));
	/* q = P(a not produced in a round); k/r rounds; E(U) = |A| (1 - q^(k/r)) */
	q_log = log1p(-(final / aug) * fresh);
	return aug * -expm1(epochs / reuse * q_log);
}
