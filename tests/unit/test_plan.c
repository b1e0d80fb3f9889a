/*
 * test_plan.c - the plan: the invariants of refurb(7) as properties over
 * many random (N, r, batch size, seed, shards, shuffle, epochs), the
 * epoch-range tail property, pixel balancing, the line format and its
 * parser (good and bad lines), the stream reader's sequence checks, and
 * a mutation fuzz of the reader.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "refurb/plan.h"
#include "refurb/refurb.h"
#include "refurb/evict.h"
#include "plan_helpers.h"

static rfb_plan_params pparams(uint32_t batch, uint32_t first, uint32_t last,
			       uint64_t seed, int shuffle, int drop_last)
{
	rfb_plan_params p = { 0 };

	p.batch_size = batch;
	p.first_epoch = first;
	p.last_epoch = last;
	p.seed = seed;
	p.shuffle = shuffle;
	p.balance = RFB_PLAN_BALANCE_NONE;
	p.drop_last = drop_last;
	return p;
}

/* ---- the plan as text ---- */

/* ---- the invariants, checked while walking a generated plan ---- */

struct walk {
	const rfb_evict *s;
	uint32_t n, r, batch;
	int policy, shuffle;
	int32_t *written;      /* epoch of the live record, -1 if none */
	uint32_t *uses;        /* uses of the live record */
	uint64_t *death;       /* its announced death */
	uint32_t *seen_epoch;  /* last epoch a position was seen, +1 */
	uint32_t full_min, full_max, epoch_misses, epoch_count;
	int first_epoch;
};

static void walk_record_use(struct walk *w, uint32_t pos, uint32_t e,
			    const rfb_plan_sample *smp)
{
	uint32_t phase = rfb_evict_phases(w->s)[pos];

	CHECK(smp->miss == rfb_evict_is_miss(e, phase, w->r));
	if (!smp->miss) {
		CHECKF(w->written[pos] >= 0, "hit of %u without a record",
		       smp->id);
		CHECK(e < w->death[pos]);
		w->uses[pos]++;
		return;
	}
	CHECK(smp->death == rfb_evict_death(e, phase, w->r));
	if (w->written[pos] >= 0) {
		/* the old record dies now: it served its r uses (phase+1
		 * for the records of epoch 0) */
		uint32_t want = w->written[pos] == 0 ? phase + 1 : w->r;
		CHECKF(w->uses[pos] == want, "record of %u from epoch %d "
		       "served %u uses, expected %u", smp->id,
		       w->written[pos], w->uses[pos], want);
		CHECK(w->death[pos] == e);
	}
	w->written[pos] = (int32_t)e;
	w->uses[pos] = 1;
	w->death[pos] = smp->death;
}

static void walk_batch(struct walk *w, const rfb_plan_batch *b)
{
	uint32_t misses = 0;

	CHECK(b->step == 0 || w->epoch_count > 0);
	for (uint32_t i = 0; i < b->count; i++) {
		int64_t pos = rfb_evict_find(w->s, b->samples[i].id);
		CHECKF(pos >= 0, "id %u not in the shard", b->samples[i].id);
		if (pos < 0)
			continue;
		CHECKF(w->seen_epoch[pos] != b->epoch + 1,
		       "id %u twice in epoch %u", b->samples[i].id, b->epoch);
		w->seen_epoch[pos] = b->epoch + 1;
		walk_record_use(w, (uint32_t)pos, b->epoch, &b->samples[i]);
		misses += b->samples[i].miss;
	}
	if (b->count == w->batch) {
		w->full_min = misses < w->full_min ? misses : w->full_min;
		w->full_max = misses > w->full_max ? misses : w->full_max;
	}
	w->epoch_misses += misses;
	w->epoch_count += b->count;
}

static void walk_epoch_end(struct walk *w, const rfb_plan_epoch_end *e)
{
	uint32_t lo = w->n / w->r, hi = lo + (w->n % w->r != 0);

	CHECKF(w->epoch_count == w->n, "epoch %u has %u of %u samples",
	       e->epoch, w->epoch_count, w->n);
	CHECK(e->samples == w->n && e->misses == w->epoch_misses);
	if (e->epoch == 0)
		CHECK(e->misses == w->n);
	else if (w->policy == RFB_EVICT_BALANCED)
		CHECKF(e->misses == lo || e->misses == hi,
		       "n=%u r=%u epoch %u: %u misses", w->n, w->r, e->epoch,
		       e->misses);
	else
		CHECK(e->misses == (e->epoch % w->r == 0 ? w->n : 0));
	if (w->shuffle == RFB_PLAN_CACHE_AWARE && w->full_max >= w->full_min)
		CHECKF(w->full_max - w->full_min <= 1,
		       "epoch %u: full batches have %u to %u misses",
		       e->epoch, w->full_min, w->full_max);
	w->full_min = UINT32_MAX;
	w->full_max = 0;
	w->epoch_misses = w->epoch_count = 0;
}

static void check_plan(const rfb_evict *s, const rfb_plan_params *p,
		       const uint32_t *pixels)
{
	struct walk w = { 0 };
	rfb_plan *pl = rfb_plan_new(s, p, pixels, NULL);
	rfb_plan_item it;
	uint32_t epochs = 0;

	w.s = s;
	w.n = rfb_evict_count(s);
	w.r = rfb_evict_params_of(s)->reuse;
	w.policy = rfb_evict_params_of(s)->policy;
	w.batch = p->batch_size;
	w.shuffle = p->shuffle;
	w.written = malloc(w.n * sizeof *w.written);
	w.uses = calloc(w.n, sizeof *w.uses);
	w.death = calloc(w.n, sizeof *w.death);
	w.seen_epoch = calloc(w.n, sizeof *w.seen_epoch);
	w.full_min = UINT32_MAX;
	for (uint32_t i = 0; i < w.n; i++)
		w.written[i] = -1;
	while (rfb_plan_next(pl, &it) > 0) {
		if (it.type == RFB_PLAN_LINE_BATCH)
			walk_batch(&w, &it.batch);
		else
			walk_epoch_end(&w, &it.epoch), epochs++;
	}
	CHECK(epochs == p->last_epoch - p->first_epoch + 1);
	free(w.written);
	free(w.uses);
	free(w.death);
	free(w.seen_epoch);
	rfb_plan_free(pl);
}

static void test_invariants(void)
{
	rfb_rng g;

	rfb_rng_init(&g, 11, 0, 0, 99);
	for (int iter = 0; iter < 400; iter++) {
		uint32_t total = draw(&g, 1, 600), r = draw(&g, 1, 7);
		uint32_t shards = draw(&g, 1, 3), k, batch = draw(&g, 1, 200);
		int policy = draw(&g, 1, 4) == 1 ? RFB_EVICT_REFCOUNT
						 : RFB_EVICT_BALANCED;
		rfb_plan_params p = pparams(batch, 0, draw(&g, 0, 3 * r + 1),
					    rfb_rng_u64(&g), (int)draw(&g, 1, 3),
					    (int)draw(&g, 0, 1));
		rfb_evict *s;

		shards = shards > total ? total : shards;
		k = draw(&g, 0, shards - 1);
		if (!(s = build(total, r, rfb_rng_u64(&g), policy, k, shards)))
			return;
		check_plan(s, &p, NULL);
		rfb_evict_free(s);
		if (test_current_failed) {
			printf("# failed for total=%u r=%u shard=%u/%u batch=%u "
			       "epochs 0-%u shuffle=%d\n", total, r, k, shards,
			       batch, p.last_epoch, p.shuffle);
			return;
		}
	}
}

/* Same inputs, same bytes; the plan of epochs a-b is the tail of 0-b. */
static void test_determinism_and_tail(void)
{
	rfb_rng g;

	rfb_rng_init(&g, 12, 0, 0, 99);
	for (int iter = 0; iter < 60; iter++) {
		uint32_t total = draw(&g, 1, 500), r = draw(&g, 1, 5);
		uint32_t last = draw(&g, 0, 9), first = draw(&g, 0, last);
		rfb_evict *s = build(total, r, iter, RFB_EVICT_BALANCED, 0, 1);
		rfb_plan_params full = pparams(draw(&g, 1, 64), 0, last, iter,
					       (int)draw(&g, 1, 3),
					       (int)draw(&g, 0, 1));
		rfb_plan_params tail = full;
		struct text a, b, c;
		const char *at, *body;
		char mark[32];

		tail.first_epoch = first;
		a = plan_text(s, &full, NULL);
		b = plan_text(s, &full, NULL);
		c = plan_text(s, &tail, NULL);
		CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
		snprintf(mark, sizeof mark, "\nB %u 0 ", first);
		at = strstr(a.data, mark);
		body = strchr(c.data, '\n');
		CHECKF(at && body && strcmp(at, body) == 0,
		       "epochs %u-%u are not the tail of 0-%u", first, last,
		       last);
		free(a.data);
		free(b.data);
		free(c.data);
		rfb_evict_free(s);
	}
}

/* Seeds matter: another plan seed gives another order. */
static void test_seed_changes_order(void)
{
	rfb_evict *s = build(1000, 3, 1, RFB_EVICT_BALANCED, 0, 1);
	rfb_plan_params p = pparams(32, 0, 1, 5, RFB_PLAN_CACHE_AWARE, 0);
	struct text a = plan_text(s, &p, NULL), b;

	p.seed = 6;
	b = plan_text(s, &p, NULL);
	CHECK(strcmp(strchr(a.data, '\n'), strchr(b.data, '\n')) != 0);
	free(a.data);
	free(b.data);
	p.shuffle = RFB_PLAN_SEQUENTIAL;
	a = plan_text(s, &p, NULL);
	CHECK(strstr(a.data, "\nB 0 0 0 32 0:m") != NULL);
	CHECK(strstr(a.data, " shuffle=none ") != NULL);
	free(a.data);
	rfb_evict_free(s);
}

/* Miss pixels per full batch of one epoch: max - min, and the mean. */
static void pixel_spread(const rfb_evict *s, const rfb_plan_params *p,
			 const uint32_t *px, uint32_t epoch, double *spread,
			 double *mean)
{
	rfb_plan *pl = rfb_plan_new(s, p, px, NULL);
	uint32_t n = rfb_evict_count(s), *order = malloc(n * 4);
	uint32_t r = rfb_evict_params_of(s)->reuse;
	uint64_t lo = UINT64_MAX, hi = 0, sum = 0, full = n / p->batch_size;

	rfb_plan_epoch_order(pl, epoch, order);
	for (uint64_t b = 0; b < full; b++) {
		uint64_t t = 0;
		for (uint32_t i = 0; i < p->batch_size; i++) {
			uint32_t pos = order[b * p->batch_size + i];
			if (rfb_evict_is_miss(epoch, rfb_evict_phases(s)[pos], r))
				t += px[pos];
		}
		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
		sum += t;
	}
	*spread = (double)(hi - lo);
	*mean = (double)sum / (double)full;
	free(order);
	rfb_plan_free(pl);
}

static void test_balance_pixels(void)
{
	rfb_evict *s = build(6000, 3, 9, RFB_EVICT_BALANCED, 0, 1);
	uint32_t *px = malloc(6000 * 4);
	rfb_plan_params p = pparams(100, 0, 6, 4, RFB_PLAN_CACHE_AWARE, 0);
	double plain, plain_mean, bal, bal_mean;
	rfb_rng g;
	rfb_err err = { 0 };

	rfb_rng_init(&g, 13, 0, 0, 99);
	for (int i = 0; i < 6000; i++) /* 60k to 600k pixels: ten-fold */
		px[i] = draw(&g, 60000, 600000);
	p.balance = RFB_PLAN_BALANCE_PIXELS;
	check_plan(s, &p, px);
	for (uint32_t e = 0; e < 3; e++) {
		p.balance = RFB_PLAN_BALANCE_NONE;
		pixel_spread(s, &p, px, e, &plain, &plain_mean);
		p.balance = RFB_PLAN_BALANCE_PIXELS;
		pixel_spread(s, &p, px, e, &bal, &bal_mean);
		printf("# epoch %u: miss pixels per batch vary by %.0f "
		       "(mean %.0f), without balancing by %.0f\n", e, bal,
		       bal_mean, plain);
		CHECKF(bal < plain / 20 && bal < 0.02 * bal_mean,
		       "epoch %u: miss pixels per batch vary by %.0f (mean "
		       "%.0f), without balancing %.0f", e, bal, bal_mean, plain);
	}
	/* pixels without cache-aware, or without a table, is refused */
	p.shuffle = RFB_PLAN_RANDOM;
	CHECK(rfb_plan_new(s, &p, px, &err) == NULL && err.code == RFB_EINVAL);
	p.shuffle = RFB_PLAN_CACHE_AWARE;
	CHECK(rfb_plan_new(s, &p, NULL, &err) == NULL && err.code == RFB_EINVAL);
	free(px);
	rfb_evict_free(s);
}

/* A cost that depends on the sample and the epoch: a base of 0.5 to 5 ms
 * per sample, times 1 to 3 by (id, epoch) - what the ops drawn do. */
struct fake_costs {
	double *base;
	uint32_t salt;
};

static double fake_cost(const void *ctx, uint32_t id, uint32_t epoch)
{
	const struct fake_costs *f = ctx;
	uint32_t h = (id * 2654435761u) ^ (epoch * 40503u) ^ f->salt;

	h ^= h >> 13;
	h *= 0x5bd1e995u;
	h ^= h >> 15;
	return f->base[id] * (1 + h % 3);
}

/* Predicted miss cost per full batch of one epoch: max - min, and mean. */
static void cost_spread(const rfb_evict *s, const rfb_plan_params *p,
			uint32_t epoch, double *spread, double *mean)
{
	rfb_plan *pl = rfb_plan_new(s, p, NULL, NULL);
	uint32_t n = rfb_evict_count(s), *order = malloc(n * 4);
	uint32_t r = rfb_evict_params_of(s)->reuse;
	uint64_t full = n / p->batch_size;
	double lo = 1e300, hi = 0, sum = 0;

	rfb_plan_epoch_order(pl, epoch, order);
	for (uint64_t b = 0; b < full; b++) {
		double t = 0;
		for (uint32_t i = 0; i < p->batch_size; i++) {
			uint32_t pos = order[b * p->batch_size + i];
			if (rfb_evict_is_miss(epoch, rfb_evict_phases(s)[pos], r))
				t += p->miss_cost(p->cost_ctx,
						  rfb_evict_ids(s)[pos], epoch);
		}
		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
		sum += t;
	}
	*spread = hi - lo;
	*mean = sum / (double)full;
	free(order);
	rfb_plan_free(pl);
}

static void test_balance_cost(void)
{
	rfb_evict *s = build(6000, 3, 9, RFB_EVICT_BALANCED, 0, 1);
	struct fake_costs f = { malloc(6000 * sizeof(double)), 0 };
	rfb_plan_params p = pparams(64, 0, 6, 4, RFB_PLAN_CACHE_AWARE, 0);
	double plain, plain_mean, bal, bal_mean;
	rfb_rng g;
	rfb_err err = { 0 };

	rfb_rng_init(&g, 14, 0, 0, 99);
	for (int i = 0; i < 6000; i++)
		f.base[i] = draw(&g, 500, 5000) * 1e-6;
	p.miss_cost = fake_cost;
	p.cost_ctx = &f;
	p.balance = RFB_PLAN_BALANCE_COST;
	check_plan(s, &p, NULL);
	for (uint32_t e = 0; e < 4; e++) {
		p.balance = RFB_PLAN_BALANCE_NONE;
		cost_spread(s, &p, e, &plain, &plain_mean);
		p.balance = RFB_PLAN_BALANCE_COST;
		cost_spread(s, &p, e, &bal, &bal_mean);
		printf("# epoch %u: miss cost per batch varies by %.3f ms "
		       "(mean %.1f ms), without balancing by %.1f ms\n", e,
		       bal * 1e3, bal_mean * 1e3, plain * 1e3);
		CHECKF(bal < plain / 20 && bal < 0.02 * bal_mean,
		       "epoch %u: miss cost per batch varies by %g (mean %g), "
		       "without balancing %g", e, bal, bal_mean, plain);
	}
	/* cost without cache-aware, or without a cost function, is refused */
	p.shuffle = RFB_PLAN_RANDOM;
	CHECK(rfb_plan_new(s, &p, NULL, &err) == NULL && err.code == RFB_EINVAL);
	p.shuffle = RFB_PLAN_CACHE_AWARE;
	p.miss_cost = NULL;
	CHECK(rfb_plan_new(s, &p, NULL, &err) == NULL && err.code == RFB_EINVAL);
	free(f.base);
	rfb_evict_free(s);
}

/* The invariants hold under cost balance for any (N, r, batch, seed);
 * the same costs give the same plan, other costs another one. */
static void test_balance_cost_properties(void)
{
	rfb_rng g;

	rfb_rng_init(&g, 15, 0, 0, 99);
	for (int iter = 0; iter < 150; iter++) {
		uint32_t total = draw(&g, 1, 700), r = draw(&g, 1, 6);
		uint32_t batch = draw(&g, 1, 150);
		struct fake_costs f = { malloc((total + 1) * sizeof(double)),
					rfb_rng_u32(&g) };
		rfb_plan_params p = pparams(batch, 0, draw(&g, 0, 2 * r + 1),
					    rfb_rng_u64(&g), RFB_PLAN_CACHE_AWARE,
					    (int)draw(&g, 0, 1));
		rfb_evict *s = build(total, r, rfb_rng_u64(&g),
				     RFB_EVICT_BALANCED, 0, 1);
		struct text a, b, c;

		for (uint32_t i = 0; i < total; i++)
			f.base[i] = draw(&g, 1, 1000) * 1e-5;
		p.balance = RFB_PLAN_BALANCE_COST;
		p.miss_cost = fake_cost;
		p.cost_ctx = &f;
		check_plan(s, &p, NULL);
		a = plan_text(s, &p, NULL);
		b = plan_text(s, &p, NULL);
		CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
		CHECK(strstr(a.data, " balance=cost ") != NULL);
		if (total >= 200 && r > 1 && batch * 4 < total) {
			f.salt ^= 0x9e3779b9u;
			c = plan_text(s, &p, NULL);
			CHECKF(strcmp(a.data, c.data) != 0,
			       "other costs, same plan (N %u r %u batch %u)",
			       total, r, batch);
			free(c.data);
		}
		free(a.data);
		free(b.data);
		free(f.base);
		rfb_evict_free(s);
		if (test_current_failed) {
			printf("# failed for total=%u r=%u batch=%u epochs 0-%u\n",
			       total, r, batch, p.last_epoch);
			return;
		}
	}
}

static void test_bad_params(void)
{
	rfb_evict *s = build(10, 2, 1, RFB_EVICT_BALANCED, 0, 1);
	rfb_plan_params p = pparams(0, 0, 0, 1, RFB_PLAN_CACHE_AWARE, 0);
	rfb_err err = { 0 };

	CHECK(rfb_plan_new(s, &p, NULL, &err) == NULL && err.code == RFB_EINVAL);
	p = pparams(RFB_PLAN_MAX_BATCH + 1, 0, 0, 1, RFB_PLAN_CACHE_AWARE, 0);
	CHECK(rfb_plan_new(s, &p, NULL, &err) == NULL);
	p = pparams(4, 3, 2, 1, RFB_PLAN_CACHE_AWARE, 0);
	CHECK(rfb_plan_new(s, &p, NULL, &err) == NULL && err.code == RFB_EINVAL);
	p = pparams(4, 0, 2, 1, 9, 0);
	CHECK(rfb_plan_new(s, &p, NULL, &err) == NULL && err.code == RFB_EINVAL);
	rfb_evict_free(s);
}

/* ---- the line parser ---- */

/* Parse line from an exactly sized heap copy, so that ASan sees any read
 * past its end. */
static int parse_batch(const char *line, rfb_plan_batch *b,
		       rfb_plan_sample *smp, uint32_t cap, rfb_err *err)
{
	size_t len = strlen(line);
	char *copy = malloc(len ? len : 1);
	int rc;

	memcpy(copy, line, len);
	b->samples = smp;
	rc = rfb_plan_parse_batch(copy, len, b, cap, err);
	free(copy);
	return rc;
}

static void test_parse_batch_good(void)
{
	rfb_plan_sample smp[4];
	rfb_plan_batch b;
	rfb_err err = { 0 };
	char out[1024];
	const char *line = "B 3 1 7 3 5:h 9:m6 12:m6@1f.0.4a0.deadbeef";

	CHECKF(parse_batch(line, &b, smp, 4, &err) == 0, "%s", err.msg);
	CHECK(b.epoch == 3 && b.step == 1 && b.global_step == 7 &&
	      b.count == 3 && !b.dropped);
	CHECK(smp[0].id == 5 && !smp[0].miss && smp[0].addr_count == 0);
	CHECK(smp[1].id == 9 && smp[1].miss && smp[1].death == 6);
	CHECK(smp[2].addr_count == 4 && smp[2].addr[0] == 0x1f &&
	      smp[2].addr[1] == 0 && smp[2].addr[2] == 0x4a0 &&
	      smp[2].addr[3] == 0xdeadbeef);
	out[rfb_plan_format_batch(out, &b)] = '\0';
	CHECK(strcmp(out, "B 3 1 7 3 5:h 9:m6 12:m6@1f.0.4a0.deadbeef\n") == 0);
	CHECK(parse_batch("D 0 4 4 1 0:m1", &b, smp, 4, &err) == 0 &&
	      b.dropped);
	/* the line ends where len says, whatever follows in memory */
	b.samples = smp;
	CHECK(rfb_plan_parse_batch("B 0 0 0 1 4:m12", 14, &b, 4, &err) == 0 &&
	      smp[0].death == 1);
	CHECK(rfb_plan_parse_batch("B 0 0 0 1 4:m12", 13, &b, 4, &err) ==
	      RFB_EFORMAT);
}

static void test_parse_batch_bad(void)
{
	static const struct {
		const char *line;
		int code;
		const char *says;
	} bad[] = {
		{ "B 0 0 0 1 5:h ", RFB_EFORMAT, "column 14" },
		{ "B 0 0 0 1  5:h", RFB_EFORMAT, "sample id" },
		{ "B 00 0 0 1 5:h", RFB_EFORMAT, "the epoch" },
		{ "B 0 0 0 2 5:h", RFB_EFORMAT, "line ends" },
		{ "B 0 0 0 1 5:h 6:h", RFB_EFORMAT, "more samples" },
		{ "B 0 0 0 1 5:x", RFB_EFORMAT, "'h' or 'm'" },
		{ "B 0 0 0 1 5:m", RFB_EFORMAT, "death epoch" },
		{ "B 3 0 0 1 5:m3", RFB_EFORMAT, "not after epoch 3" },
		{ "B 0 0 0 1 5h", RFB_EFORMAT, "':'" },
		{ "B 0 0 0 1 4294967295:h", RFB_EFORMAT, "sample id" },
		{ "B 0 0 0 1 -5:h", RFB_EFORMAT, "sample id" },
		{ "B 0 0 0 1 5:h@", RFB_EFORMAT, "hex address" },
		{ "B 0 0 0 1 5:h@1.2.3.4.5.6.7", RFB_ELIMIT, "at most 6" },
		{ "B 0 0 0 1 5:h@1.", RFB_EFORMAT, "hex address" },
		{ "B 0 0 0 1 5:h@AB", RFB_EFORMAT, "hex address" },
		{ "B 0 0 0 1 5:h@1.0e", RFB_EFORMAT, "leading zeros" },
		{ "B 0 0 0 1 5:h@00", RFB_EFORMAT, "leading zeros" },
		{ "B 0 0 0 1 5:h@12345678901234567", RFB_EFORMAT, "hex" },
		{ "B 0 0 0 1 5:hx", RFB_EFORMAT, "' ' or the end" },
		{ "B 0 0 0 0", RFB_EFORMAT, "empty batch" },
		{ "B 0 0 0 5 1:h 2:h 3:h 4:h 5:h", RFB_ELIMIT, "limit is 4" },
		{ "B 0 0 0 99999999 1:h", RFB_ELIMIT, "limit" },
		{ "B 4294967296 0 0 1 5:h", RFB_EFORMAT, "the epoch" },
		{ "B 0 0 18446744073709551616 1 5:h", RFB_EFORMAT, "global" },
		{ "X 0 0 0 1 5:h", RFB_EFORMAT, "batch line" },
		{ "B 0 0 0 1 5:h\r", RFB_EFORMAT, "' ' or the end" },
		{ "B", RFB_EFORMAT, "batch line" },
		{ "", RFB_EFORMAT, "batch line" },
	};
	rfb_plan_sample smp[4];
	rfb_plan_batch b;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rfb_err err = { 0 };
		int rc = parse_batch(bad[i].line, &b, smp, 4, &err);
		CHECKF(rc == bad[i].code && strstr(err.msg, bad[i].says),
		       "'%s': %d '%s'", bad[i].line, rc, err.msg);
	}
}

static void test_parse_epoch_end(void)
{
	rfb_plan_epoch_end e;
	rfb_err err = { 0 };
	char out[64];

	CHECK(rfb_plan_parse_epoch_end("E 2 5 300 100", 13, &e, &err) == 0);
	CHECK(e.epoch == 2 && e.batches == 5 && e.samples == 300 &&
	      e.misses == 100);
	rfb_plan_format_epoch_end(out, sizeof out, &e);
	CHECK(strcmp(out, "E 2 5 300 100\n") == 0);
	CHECK(rfb_plan_parse_epoch_end("E 2 5 300 301", 13, &e, &err) ==
	      RFB_EFORMAT);
	CHECK(rfb_plan_parse_epoch_end("E 2 5 300", 9, &e, &err) == RFB_EFORMAT);
	CHECK(rfb_plan_parse_epoch_end("E 2 5 300 1 ", 12, &e, &err) ==
	      RFB_EFORMAT);
}

static rfb_plan_header sample_header(void)
{
	rfb_plan_header h = { 0 };

	h.version = 1;
	h.schedule_identity = 0x0123456789abcdefULL;
	h.index_identity = 0xfedcba9876543210ULL;
	h.samples = 4;
	h.total = 4;
	h.reuse = 2;
	h.policy = RFB_EVICT_BALANCED;
	h.evict_seed = 7;
	h.seed = 8;
	h.batch_size = 2;
	h.batches = 2;
	h.first_epoch = 0;
	h.last_epoch = 0;
	h.shuffle = RFB_PLAN_CACHE_AWARE;
	h.shard_count = 1;
	return h;
}

static int parse_header_text(const char *text, rfb_plan_header *h,
			     rfb_err *err)
{
	size_t len = strlen(text);
	char *copy = malloc(len + 1);
	int rc;

	memcpy(copy, text, len);
	rc = rfb_plan_parse_header(copy, len, h, err);
	free(copy);
	return rc;
}

/* Header text of h with one "key=value" replaced by repl ("" drops it). */
static void header_with(const rfb_plan_header *h, const char *key,
			const char *repl, char *out, size_t n)
{
	char line[1024], *at, *end;

	rfb_plan_format_header(line, sizeof line, h);
	line[strlen(line) - 1] = '\0';
	at = strstr(line, key);
	end = strchr(at, ' ');
	snprintf(out, n, "%.*s%s%s", (int)(at - line), line, repl,
		 end ? (*repl ? end : end + 1) : "");
}

static void test_parse_header(void)
{
	rfb_plan_header h = sample_header(), g;
	rfb_err err = { 0 };
	char text[1200];

	rfb_plan_format_header(text, sizeof text, &h);
	CHECK(strncmp(text, "#refurb-plan 1 schedule=0123456789abcdef index="
		      "fedcba9876543210 samples=4 ", 60) == 0);
	text[strlen(text) - 1] = '\0';
	CHECKF(parse_header_text(text, &g, &err) == 0, "%s", err.msg);
	CHECK(g.schedule_identity == h.schedule_identity &&
	      g.index_identity == h.index_identity && g.samples == 4 &&
	      g.reuse == 2 && g.seed == 8 && g.evict_seed == 7 &&
	      g.batch_size == 2 && g.batches == 2 &&
	      g.shuffle == RFB_PLAN_CACHE_AWARE && g.shard_count == 1);
	strcat(text, " cache=/scratch/c future-key=1");
	CHECK(parse_header_text(text, &g, &err) == 0); /* unknown keys */
	rfb_plan_format_header(text, sizeof text, &h);
	text[13] = '3';
	CHECK(parse_header_text(text, &g, &err) == RFB_EVERSION &&
	      strstr(err.msg, "version 3"));
	text[13] = '2'; /* version 2 has the key even= */
	text[strlen(text) - 1] = '\0';
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "lacks the key 'even'"));
	header_with(&h, "shuffle=", "", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "lacks the key 'shuffle'"));
	header_with(&h, "seed=8", "seed=8 seed=9", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "twice"));
	header_with(&h, "batches=", "batches=3", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT);
	header_with(&h, "batch=", "batch=2x", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT);
	header_with(&h, "drop-last=", "drop-last=5", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "0 or 1")); /* found by fuzz_plan */
	header_with(&h, "drop-last=", "drop-last=10", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT);
	header_with(&h, "drop-last=", "drop-last=1", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == 0 && g.drop_last == 1);
	header_with(&h, "batch=", "batch=0", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "batch 0")); /* found by fuzz_plan: SIGFPE */
	header_with(&h, "shard=", "shard=1/1", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT);
	header_with(&h, "epochs=", "epochs=3-2", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT);
	header_with(&h, "policy=", "policy=lru", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "unknown policy"));
	header_with(&h, "schedule=", "schedule=123", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT);
	header_with(&h, "balance=", "balance=pixels", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == 0);
	header_with(&h, "shuffle=", "shuffle=random balance=pixels", text,
		    sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT);
	/* balance=cost: the cost file's identity (refurb-plan(5) costs=) */
	h.balance = RFB_PLAN_BALANCE_COST;
	h.cost_identity = 0x00c0ffee00c0ffeeULL;
	rfb_plan_format_header(text, sizeof text, &h);
	CHECKF(strstr(text, " shard=0/1 costs=00c0ffee00c0ffee\n"), "%s", text);
	text[strlen(text) - 1] = '\0';
	CHECKF(parse_header_text(text, &g, &err) == 0, "%s", err.msg);
	CHECK(g.cost_identity == h.cost_identity);
	h.cost_identity = 0; /* not known (an older plan): no key */
	rfb_plan_format_header(text, sizeof text, &h);
	CHECK(!strstr(text, "costs="));
	text[strlen(text) - 1] = '\0';
	CHECK(parse_header_text(text, &g, &err) == 0 && g.cost_identity == 0);
	h.cost_identity = 0x00c0ffee00c0ffeeULL;
	header_with(&h, "balance=", "balance=none", text, sizeof text);
	CHECK(parse_header_text(text, &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "costs= in a plan with balance=none"));
	h.balance = RFB_PLAN_BALANCE_NONE; /* other plans have no costs= */
	rfb_plan_format_header(text, sizeof text, &h);
	CHECK(!strstr(text, "costs="));
	CHECK(parse_header_text("#refurb-plan", &g, &err) == RFB_EFORMAT);
	CHECK(parse_header_text("#refurb-plan 1", &g, &err) == RFB_EFORMAT);
	CHECK(parse_header_text("\x7f" "ELF", &g, &err) == RFB_EFORMAT &&
	      strstr(err.msg, "not a refurb plan"));
}

/* ---- the stream reader ---- */

static void test_reader_round_trip(void)
{
	rfb_evict *s = build(300, 3, 2, RFB_EVICT_BALANCED, 1, 2);
	rfb_plan_params p = pparams(16, 2, 7, 3, RFB_PLAN_CACHE_AWARE, 1);
	struct text t = plan_text(s, &p, NULL);
	FILE *f = tmpfile();
	rfb_plan *pl = rfb_plan_new(s, &p, NULL, NULL);
	rfb_plan_reader *r;
	rfb_plan_item a, b;
	rfb_err err = { 0 };
	int rc, items = 0;

	fwrite(t.data, 1, t.len, f);
	fflush(f);
	lseek(fileno(f), 0, SEEK_SET);
	r = rfb_plan_reader_open(fileno(f), "p", &err);
	CHECKF(r != NULL, "%s", err.msg);
	CHECK(rfb_plan_reader_header(r)->schedule_identity ==
	      rfb_evict_identity(s));
	CHECK(rfb_plan_reader_line_number(r) == 1); /* the header line */
	while ((rc = rfb_plan_reader_next(r, &a, &err)) > 0) {
		CHECK(rfb_plan_next(pl, &b) == rc);
		items++;
		/* one line per item after the header */
		CHECK(rfb_plan_reader_line_number(r) == 1 + (uint64_t)items);
		if (rc == RFB_PLAN_LINE_EPOCH) {
			CHECK(memcmp(&a.epoch, &b.epoch, sizeof a.epoch) == 0);
			continue;
		}
		CHECK(a.batch.count == b.batch.count &&
		      a.batch.global_step == b.batch.global_step &&
		      a.batch.dropped == b.batch.dropped);
		{ /* a parsed line formats back to the same bytes */
			char again[4096];
			size_t len, n = rfb_plan_format_batch(again, &a.batch);
			const char *raw = rfb_plan_reader_line(r, &len);
			CHECK(n == len + 1 && memcmp(again, raw, len) == 0);
		}
		for (uint32_t i = 0; i < a.batch.count; i++)
			CHECK(a.batch.samples[i].id == b.batch.samples[i].id &&
			      a.batch.samples[i].miss == b.batch.samples[i].miss &&
			      a.batch.samples[i].death == b.batch.samples[i].death);
	}
	CHECKF(rc == 0, "%s", err.msg);
	CHECK(items == 6 * (1 + 10) && rfb_plan_next(pl, &b) == 0);
	CHECK(strstr(t.data, "\nD 2 9 29 6 ") != NULL);
	rfb_plan_reader_close(r);
	rfb_plan_free(pl);
	fclose(f);
	free(t.data);
	rfb_evict_free(s);
}

#define HEAD4 "#refurb-plan 1 schedule=0123456789abcdef index=fedcba9876543210 " \
	"samples=4 total=4 reuse=2 policy=balanced evict-seed=7 seed=8 "   \
	"batch=2 batches=2 epochs=0-1 shuffle=cache-aware balance=none "   \
	"drop-last=0 shard=0/1\n"

static void test_reader_sequence(void)
{
	static const struct {
		const char *body;
		int code;
		const char *says;
	} cases[] = {
		{ "B 0 0 0 2 0:m1 1:m2\nB 0 1 1 2 2:m1 3:m2\nE 0 2 4 4\n"
		  "# a comment\nB 1 0 2 2 0:m3 3:h\nB 1 1 3 2 2:m3 1:h\n"
		  "E 1 2 4 2\n", 0, "" },
		{ "B 0 0 0 2 0:m1 1:m2\nB 0 1 1 2 2:m1 3:m2\nE 0 2 4 4\n",
		  RFB_ETRUNC, "ends in epoch 1" },
		{ "B 0 0 0 2 0:m1 1:m2\nB 0 1 1 2 2:m1 3:m2\nE 0 2 4 4\n"
		  "B 1 0 2 2 0:m3 3:h\nB 1 1 3 2 2:m3 1:h\nE 1 2 4 2",
		  RFB_ETRUNC, "no newline" },
		{ "B 0 0 0 2 0:m1 1:m2\nB 0 1 1 2 2:m1 0:m2\n", RFB_EFORMAT,
		  "line 3: sample 0 appears twice" },
		{ "B 0 0 0 2 0:m1 1:h\n", RFB_EFORMAT, "impossible in epoch 0" },
		{ "B 0 0 0 2 0:m1 1:m3\n", RFB_EFORMAT, "dies in epoch 3" },
		{ "B 0 1 1 2 0:m1 1:m2\n", RFB_EFORMAT, "expected batch 0" },
		{ "B 0 0 5 2 0:m1 1:m2\n", RFB_EFORMAT, "global step 5" },
		{ "B 0 0 0 1 0:m1\n", RFB_EFORMAT, "expected 2" },
		{ "D 0 0 0 2 0:m1 1:m2\n", RFB_EFORMAT, "D line" },
		{ "B 0 0 0 2 0:m1 7:m2\n", RFB_EFORMAT, "the index has 4" },
		{ "B 0 0 0 2 0:m1 1:m2\nE 0 1 2 2\n", RFB_EFORMAT,
		  "end of epoch 0 after 1" },
		{ "B 0 0 0 2 0:m1 1:m2\nB 0 1 1 2 2:m1 3:m2\nE 0 2 4 3\n",
		  RFB_EFORMAT, "summary" },
		{ "B 0 0 0 2 0:m1 1:m2\nB 0 1 1 2 2:m1 3:m2\nE 0 2 4 4\n"
		  "B 1 0 2 2 0:m3 3:m3\nB 1 1 3 2 2:m3 1:h\nE 1 2 4 3\n",
		  RFB_EFORMAT, "balanced eviction gives 2" },
		{ "B 0 0 0 2 0:m1 1:m2\nB 0 1 1 2 2:m1 3:m2\nE 0 2 4 4\n"
		  "B 1 0 2 2 0:m3 3:h\nB 1 1 3 2 2:m3 1:h\nE 1 2 4 2\n"
		  "B 2 0 4 2 0:h 1:h\n", RFB_EFORMAT, "more after the last" },
		{ "B 0 0 0 2 0:m1 1:m2\n\n", RFB_EFORMAT, "unknown line type" },
		{ "B 0 0 0 2 0:m1 1:m2\r\n", RFB_EFORMAT, "line 2" },
		{ HEAD4, RFB_EFORMAT, "a second header" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct text t = { 0 };
		rfb_err err = { 0 };
		int items, rc;

		text_put(&t, HEAD4, strlen(HEAD4));
		text_put(&t, cases[i].body, strlen(cases[i].body));
		rc = read_all(t.data, t.len, &err, &items);
		CHECKF(rc == cases[i].code && strstr(err.msg, cases[i].says) &&
		       (rc == 0 || strcmp(err.path, "p.plan") == 0),
		       "case %zu: %d '%s'", i, rc, err.msg);
		free(t.data);
	}
}

static void test_reader_bad_streams(void)
{
	rfb_err err = { 0 };
	int items;
	char *big = malloc(RFB_PLAN_MAX_HEADER + 10);

	CHECK(read_all("", 0, &err, &items) == RFB_ETRUNC &&
	      strstr(err.msg, "empty"));
	CHECK(read_all("RFBSCHD\x01\0\0", 10, &err, &items) == RFB_EFORMAT &&
	      strstr(err.msg, "not a refurb plan"));
	CHECK(read_all("#refurb-plan 1 sch", 18, &err, &items) == RFB_ETRUNC);
	CHECK(read_all("RFBSCHD\x01\0\0\n", 11, &err, &items) == RFB_EFORMAT &&
	      strstr(err.msg, "not a refurb plan"));
	memset(big, 'x', RFB_PLAN_MAX_HEADER + 10);
	CHECK(read_all(big, RFB_PLAN_MAX_HEADER + 10, &err, &items) ==
	      RFB_EFORMAT && strstr(err.msg, "not a refurb plan"));
	free(big);
}

/* Random damage to a valid stream: the reader must end cleanly, with an
 * error or not, and never read out of bounds (run under ASan). */
static void test_reader_fuzz(void)
{
	rfb_evict *s = build(40, 2, 5, RFB_EVICT_BALANCED, 0, 1);
	rfb_plan_params p = pparams(8, 0, 3, 3, RFB_PLAN_CACHE_AWARE, 1);
	struct text t = plan_text(s, &p, NULL);
	char *m = malloc(t.len + 16);
	rfb_rng g;
	int ok = 0, failed = 0, items;
	rfb_err err = { 0 };

	CHECK(read_all(t.data, t.len, &err, &items) == 0 && items == 4 * 6);
	rfb_rng_init(&g, 14, 0, 0, 99);
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = t.len;
		memcpy(m, t.data, t.len);
		for (uint32_t k = draw(&g, 1, 3); k > 0; k--) {
			size_t at = rfb_rng_below(&g, (uint32_t)len);
			switch (draw(&g, 0, 3)) {
			case 0: m[at] = (char)rfb_rng_u32(&g); break;
			case 1: m[at] = "0123456789 :hm@.\nBDE#-"[draw(&g, 0, 21)];
				break;
			case 2: len = at + 1; break; /* truncate */
			case 3: memmove(m + at, m + at + 1, len - at - 1);
				len--;
				break;
			}
		}
		if (read_all(m, len, &err, &items) == 0)
			ok++;
		else {
			failed++;
			CHECK(err.code < 0 && err.msg[0]);
		}
	}
	CHECK(failed > 2500); /* almost any damage is caught */
	printf("# fuzz: %d accepted, %d rejected\n", ok, failed);
	free(m);
	free(t.data);
	rfb_evict_free(s);
}

/* Every enum parser of the plan and the schedule: a name back to its
 * value, and -1 (never a valid value, never 0) for an unknown name. */
static void test_names_parse(void)
{
	for (int v = RFB_PLAN_CACHE_AWARE; v <= RFB_PLAN_SEQUENTIAL; v++)
		CHECK(rfb_plan_shuffle_parse(rfb_plan_shuffle_name(v)) == v);
	for (int v = RFB_PLAN_BALANCE_NONE; v <= RFB_PLAN_BALANCE_COST; v++)
		CHECK(rfb_plan_balance_parse(rfb_plan_balance_name(v)) == v);
	for (int v = RFB_PLAN_EVEN_NONE; v <= RFB_PLAN_EVEN_DROP; v++)
		CHECK(rfb_plan_even_parse(rfb_plan_even_name(v)) == v);
	for (int v = RFB_EVICT_BALANCED; v <= RFB_EVICT_REFCOUNT; v++)
		CHECK(rfb_evict_policy_parse(rfb_evict_policy_name(v)) == v);
	CHECK(rfb_plan_shuffle_parse("lru") == -1);
	CHECK(rfb_plan_balance_parse("lru") == -1);
	CHECK(rfb_plan_even_parse("lru") == -1);
	CHECK(rfb_evict_policy_parse("lru") == -1);
	CHECK(rfb_plan_shuffle_parse("?") == -1);
}

int main(void)
{
	RUN(test_invariants);
	RUN(test_determinism_and_tail);
	RUN(test_seed_changes_order);
	RUN(test_balance_pixels);
	RUN(test_balance_cost);
	RUN(test_balance_cost_properties);
	RUN(test_bad_params);
	RUN(test_parse_batch_good);
	RUN(test_parse_batch_bad);
	RUN(test_parse_epoch_end);
	RUN(test_parse_header);
	RUN(test_reader_round_trip);
	RUN(test_reader_sequence);
	RUN(test_reader_bad_streams);
	RUN(test_reader_fuzz);
	RUN(test_names_parse);
	return test_done();
}
