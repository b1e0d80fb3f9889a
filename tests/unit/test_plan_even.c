/*
 * test_plan_even.c - refurb-plan --even pad|drop: properties over many
 * random (T, N, r, batch size, seed, policy, shuffle, balance, epochs),
 * checked across all N shards at once (same samples and batches per
 * epoch everywhere, coverage of every id, the pad a cached sample, the
 * dropped one free to leave out and a different one every epoch, the
 * schedule's marks and the cache-aware spread kept), the epoch-range
 * tail property, and the plan reader on version 2 plans.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "refurb/plan.h"
#include "refurb/refurb.h"
#include "refurb/evict.h"
#include "plan_helpers.h"

#define MAX_SHARDS 7

/* ---- one case: all N shards of (T, r, seed, policy) with plan p ---- */

struct even_case {
	uint32_t total, shards, r;
	uint64_t evict_seed;
	int policy;
	rfb_plan_params p;
	int pixels;            /* balance pixels with a random pixel table */
};

/* One shard's epoch as the plan gives it. */
struct shard_epoch {
	uint32_t count, misses, batches, full_min, full_max;
	uint32_t repeated, dropped; /* positions; UINT32_MAX: none */
	uint32_t first_use_batch, repeat_batch; /* of the repeated one */
};

static int free_to_drop(uint32_t e, uint32_t phase, uint32_t r)
{
	return !rfb_evict_is_miss(e, phase, r) ||
	       rfb_evict_death(e, phase, r) == (uint64_t)e + 1;
}

/* The counts of a shard's epoch e: uses per position into seen (n long,
 * zeroed by the caller), and per id into ids_seen (T long). */
static void take_epoch(rfb_plan *pl, const rfb_evict *s, uint32_t e,
		       uint32_t batch, uint8_t *seen, uint32_t *ids_seen,
		       uint32_t *first_batch, struct shard_epoch *out)
{
	uint32_t r = rfb_evict_params_of(s)->reuse, n = rfb_evict_count(s);
	rfb_plan_item it;

	memset(out, 0, sizeof *out);
	out->full_min = UINT32_MAX;
	out->repeated = out->dropped = UINT32_MAX;
	while (rfb_plan_next(pl, &it) == RFB_PLAN_LINE_BATCH) {
		uint32_t misses = 0;
		CHECK(it.batch.epoch == e);
		for (uint32_t i = 0; i < it.batch.count; i++) {
			const rfb_plan_sample *x = &it.batch.samples[i];
			int64_t pos = rfb_evict_find(s, x->id);
			uint32_t phase;
			CHECKF(pos >= 0, "id %u not in the shard", x->id);
			if (pos < 0)
				return;
			phase = rfb_evict_phases(s)[pos];
			CHECK(x->miss == rfb_evict_is_miss(e, phase, r));
			CHECK(!x->miss || x->death == rfb_evict_death(e, phase, r));
			if (seen[pos]++) {
				out->repeated = (uint32_t)pos;
				out->first_use_batch = first_batch[pos];
				out->repeat_batch = out->batches;
			}
			first_batch[pos] = out->batches;
			ids_seen[x->id]++;
			misses += x->miss;
		}
		if (it.batch.count == batch) {
			out->full_min = misses < out->full_min ? misses
							       : out->full_min;
			out->full_max = misses > out->full_max ? misses
							       : out->full_max;
		}
		out->misses += misses;
		out->count += it.batch.count;
		out->batches++;
	}
	CHECK(it.type == RFB_PLAN_LINE_EPOCH && it.epoch.epoch == e);
	CHECK(it.epoch.samples == out->count && it.epoch.misses == out->misses);
	for (uint32_t i = 0; i < n; i++) {
		CHECKF(seen[i] <= 2, "position %u used %u times", i, seen[i]);
		if (!seen[i]) {
			CHECKF(out->dropped == UINT32_MAX, "two left out");
			out->dropped = i;
		}
	}
}

/* What the schedule alone says of epoch e of shard s. */
static uint32_t evict_misses(const rfb_evict *s, uint32_t e)
{
	uint32_t m = 0, r = rfb_evict_params_of(s)->reuse;

	for (uint32_t i = 0; i < rfb_evict_count(s); i++)
		m += (uint32_t)rfb_evict_is_miss(e, rfb_evict_phases(s)[i], r);
	return m;
}

static void check_shard_epoch(const struct even_case *c, const rfb_evict *s,
			      uint32_t e, uint32_t m,
			      const struct shard_epoch *x,
			      uint32_t *last_dropped)
{
	uint32_t n = rfb_evict_count(s), sm = evict_misses(s, e);
	const uint16_t *ph = rfb_evict_phases(s);
	int pads = c->p.even == RFB_PLAN_EVEN_PAD && n < m;
	int drops = c->p.even == RFB_PLAN_EVEN_DROP && n > m;
	int hits = sm < n;

	CHECKF(x->count == m, "shard of %u: epoch %u has %u samples, not %u",
	       n, e, x->count, m);
	CHECK((x->repeated != UINT32_MAX) == pads);
	CHECK((x->dropped != UINT32_MAX) == drops);
	if (pads) {
		/* a cached sample whenever the epoch has one */
		int pad_miss = rfb_evict_is_miss(e, ph[x->repeated], c->r);
		CHECKF(!hits || !pad_miss, "epoch %u pads with a miss", e);
		CHECK(x->misses == sm + (uint32_t)pad_miss);
		/* no hit to repeat: the first miss drawn, repeated last, so
		 * that refurb-partial finds its record already written (the
		 * balance modes deal misses by weight: not there) */
		if (!hits && c->p.shuffle == RFB_PLAN_CACHE_AWARE &&
		    c->p.balance == RFB_PLAN_BALANCE_NONE)
			CHECKF(x->first_use_batch == 0 &&
			       x->repeat_batch == x->batches - 1,
			       "epoch %u: pad of a miss in batches %u and %u",
			       e, x->first_use_batch, x->repeat_batch);
	}
	if (drops) {
		int drop_miss = rfb_evict_is_miss(e, ph[x->dropped], c->r);
		CHECK(x->misses == sm - (uint32_t)drop_miss);
		if (c->policy == RFB_EVICT_BALANCED && n >= c->r) {
			CHECKF(free_to_drop(e, ph[x->dropped], c->r),
			       "epoch %u drops a record later epochs need", e);
			if (e > c->p.first_epoch)
				CHECKF(x->dropped != *last_dropped,
				       "epoch %u drops %u again", e, x->dropped);
		}
		*last_dropped = x->dropped;
	}
	if (!pads && !drops)
		CHECK(x->misses == sm);
	if (c->p.shuffle == RFB_PLAN_CACHE_AWARE && x->full_max >= x->full_min)
		CHECKF(x->full_max - x->full_min <= 1, "epoch %u: full batches "
		       "have %u to %u misses", e, x->full_min, x->full_max);
}

static void check_case(const struct even_case *c)
{
	rfb_evict *s[MAX_SHARDS];
	rfb_plan *pl[MAX_SHARDS];
	uint32_t *px[MAX_SHARDS], last_dropped[MAX_SHARDS];
	uint32_t *ids_seen = calloc(c->total, sizeof *ids_seen), m = 0, nb = 0;
	uint8_t *seen = malloc(c->total);
	uint32_t *first_batch = malloc(c->total * sizeof *first_batch);
	rfb_rng g;

	rfb_rng_init(&g, c->evict_seed, 1, 0, 98);
	for (uint32_t k = 0; k < c->shards; k++) {
		rfb_plan_header h;
		s[k] = build(c->total, c->r, c->evict_seed, c->policy, k,
			     c->shards);
		px[k] = malloc((rfb_evict_count(s[k]) + 1) * sizeof *px[k]);
		for (uint32_t i = 0; i < rfb_evict_count(s[k]); i++)
			px[k][i] = draw(&g, 1, 5000);
		pl[k] = rfb_plan_new(s[k], &c->p, c->pixels ? px[k] : NULL, NULL);
		CHECK(pl[k] != NULL);
		rfb_plan_header_of(pl[k], &h);
		CHECK(h.version == 2 && h.even == c->p.even);
		if (k == 0) {
			m = rfb_plan_epoch_samples(&h);
			nb = h.batches;
		}
		/* the point: the same samples and batches in every shard */
		CHECK(rfb_plan_epoch_samples(&h) == m && h.batches == nb);
	}
	CHECK(m == (c->p.even == RFB_PLAN_EVEN_PAD
		    ? (c->total + c->shards - 1) / c->shards
		    : c->total / c->shards));
	for (uint32_t e = c->p.first_epoch; e <= c->p.last_epoch; e++) {
		uint32_t covered = 0, uses = 0;
		memset(ids_seen, 0, c->total * sizeof *ids_seen);
		for (uint32_t k = 0; k < c->shards; k++) {
			struct shard_epoch x;
			memset(seen, 0, c->total);
			take_epoch(pl[k], s[k], e, c->p.batch_size, seen, ids_seen,
				   first_batch, &x);
			CHECK(x.batches == nb);
			check_shard_epoch(c, s[k], e, m, &x, &last_dropped[k]);
		}
		for (uint32_t id = 0; id < c->total; id++) {
			covered += ids_seen[id] > 0;
			uses += ids_seen[id];
		}
		CHECK(uses == m * c->shards);
		/* pad: every id; drop: all but one per larger shard */
		CHECKF(covered == (c->p.even == RFB_PLAN_EVEN_PAD ? c->total
				   : m * c->shards), "epoch %u covers %u of %u",
		       e, covered, c->total);
	}
	for (uint32_t k = 0; k < c->shards; k++) {
		rfb_plan_item it;
		CHECK(rfb_plan_next(pl[k], &it) == 0);
		rfb_plan_free(pl[k]);
		free(px[k]);
		rfb_evict_free(s[k]);
	}
	free(ids_seen);
	free(seen);
	free(first_batch);
}

/* A miss cost for balance=cost: a function of (id, epoch) alone. */
static double even_cost(const void *ctx, uint32_t id, uint32_t epoch)
{
	uint32_t h = (id * 2654435761u) ^ (epoch * 40503u);

	(void)ctx;
	h ^= h >> 15;
	return (1 + h % 1000) * 1e-6;
}

static void test_even_properties(void)
{
	rfb_rng g;

	rfb_rng_init(&g, 21, 0, 0, 99);
	for (int iter = 0; iter < 600 && !test_current_failed; iter++) {
		struct even_case c = { 0 };
		c.total = draw(&g, 1, iter % 5 ? 300 : 12);
		c.shards = draw(&g, 1, MAX_SHARDS);
		c.shards = c.shards > c.total ? c.total : c.shards;
		c.r = draw(&g, 1, 6);
		c.evict_seed = rfb_rng_u64(&g);
		c.policy = draw(&g, 1, 5) == 1 ? RFB_EVICT_REFCOUNT
					       : RFB_EVICT_BALANCED;
		c.p.batch_size = draw(&g, 1, iter % 3 ? 64 : 4);
		c.p.last_epoch = draw(&g, 0, 3 * c.r + 2);
		c.p.first_epoch = draw(&g, 0, 2) ? 0 : draw(&g, 0, c.p.last_epoch);
		c.p.seed = rfb_rng_u64(&g);
		c.p.shuffle = (int)draw(&g, 1, 3);
		c.p.drop_last = (int)draw(&g, 0, 1);
		c.p.even = draw(&g, 0, 1) ? RFB_PLAN_EVEN_PAD : RFB_PLAN_EVEN_DROP;
		c.pixels = c.p.shuffle == RFB_PLAN_CACHE_AWARE && draw(&g, 0, 2) == 0;
		c.p.balance = c.pixels ? RFB_PLAN_BALANCE_PIXELS
				       : RFB_PLAN_BALANCE_NONE;
		if (c.p.shuffle == RFB_PLAN_CACHE_AWARE && !c.pixels &&
		    draw(&g, 0, 1)) {
			c.p.balance = RFB_PLAN_BALANCE_COST;
			c.p.miss_cost = even_cost;
		}
		check_case(&c);
		if (test_current_failed)
			printf("# failed for T=%u N=%u r=%u policy=%d batch=%u "
			       "epochs %u-%u shuffle=%d balance=%s even=%s\n",
			       c.total, c.shards, c.r, c.policy, c.p.batch_size,
			       c.p.first_epoch, c.p.last_epoch, c.p.shuffle,
			       rfb_plan_balance_name(c.p.balance),
			       rfb_plan_even_name(c.p.even));
	}
}

/* No sample is left out of every epoch: over 2r epochs with drop, the
 * union of a larger shard's epochs is the whole shard, and each of its
 * samples is left out about equally often. */
static void test_drop_takes_turns(void)
{
	rfb_evict *s = build(101, 3, 9, RFB_EVICT_BALANCED, 0, 4); /* 25/26 */
	uint32_t n = rfb_evict_count(s), left_out[32] = { 0 }, max = 0;

	CHECK(n == 25 || n == 26);
	for (uint32_t k = 0; k < 4; k++) {
		rfb_evict_free(s);
		s = build(101, 3, 9, RFB_EVICT_BALANCED, k, 4);
		if (rfb_evict_count(s) == 26)
			break;
	}
	n = rfb_evict_count(s);
	CHECK(n == 26);
	for (uint32_t e = 0; e < 26 * 3; e++)
		left_out[rfb_plan_drop_position(s, e)]++;
	for (uint32_t i = 0; i < n; i++) {
		CHECKF(left_out[i] >= 2, "position %u left out %u times", i,
		       left_out[i]);
		max = left_out[i] > max ? left_out[i] : max;
	}
	CHECK(max <= 4); /* 78 epochs over 26 samples: 3 each, +-1 */
	rfb_evict_free(s);
}

/* The plan of epochs a-b is the tail of 0-b with --even too, and it reads
 * back through the stream reader. */
static void test_even_tail_and_reader(void)
{
	rfb_rng g;

	rfb_rng_init(&g, 22, 0, 0, 99);
	for (int iter = 0; iter < 80; iter++) {
		uint32_t total = draw(&g, 2, 400), shards = draw(&g, 2, 5);
		uint32_t last = draw(&g, 0, 9), first = draw(&g, 0, last);
		rfb_plan_params full = { .batch_size = draw(&g, 1, 40),
					 .first_epoch = 0, .last_epoch = last,
					 .seed = iter,
					 .shuffle = (int)draw(&g, 1, 3),
					 .balance = 0,
					 .drop_last = (int)draw(&g, 0, 1),
					 .even = (int)draw(&g, 1, 2) };
		rfb_plan_params tail = full;
		rfb_evict *s;
		struct text a, c;
		const char *at, *body;
		char mark[32];
		rfb_err err = { 0 };
		int items;

		shards = shards > total ? total : shards;
		s = build(total, draw(&g, 1, 5), iter, RFB_EVICT_BALANCED,
			  draw(&g, 0, shards - 1), shards);
		tail.first_epoch = first;
		a = plan_text(s, &full, NULL);
		c = plan_text(s, &tail, NULL);
		snprintf(mark, sizeof mark, "\nB %u 0 ", first);
		if (!(at = strstr(a.data, mark))) {
			mark[1] = 'D'; /* drop-last, one incomplete batch */
			at = strstr(a.data, mark);
		}
		body = strchr(c.data, '\n');
		CHECKF(at && body && strcmp(at, body) == 0,
		       "epochs %u-%u are not the tail of 0-%u:\n%.300s\n%.300s",
		       first, last, last, at ? at : "-", body ? body : "-");
		CHECKF(read_all(a.data, a.len, &err, &items) == 0, "%s", err.msg);
		CHECK(strstr(a.data, full.even == RFB_PLAN_EVEN_PAD
			      ? " even=pad\n" : " even=drop\n") != NULL);
		free(a.data);
		free(c.data);
		rfb_evict_free(s);
	}
}

/* Shard 0/2 of 5 samples has 2, shard 1/2 has 3: pad makes 3 of both. */
#define HEAD_PAD "#refurb-plan 2 schedule=0123456789abcdef " \
	"index=fedcba9876543210 samples=2 total=5 reuse=1 policy=balanced " \
	"evict-seed=7 seed=8 batch=2 batches=2 epochs=0-0 " \
	"shuffle=cache-aware balance=none drop-last=0 shard=0/2 even=pad\n"
#define HEAD_DROP "#refurb-plan 2 schedule=0123456789abcdef " \
	"index=fedcba9876543210 samples=3 total=5 reuse=1 policy=balanced " \
	"evict-seed=7 seed=8 batch=2 batches=1 epochs=0-0 " \
	"shuffle=cache-aware balance=none drop-last=0 shard=1/2 even=drop\n"

static void test_reader_version2(void)
{
	static const struct {
		const char *text;
		int code;
		const char *says;
	} cases[] = {
		{ HEAD_PAD "B 0 0 0 2 0:m1 3:m1\nB 0 1 1 1 0:m1\nE 0 2 3 3\n",
		  0, "" },
		{ HEAD_PAD "B 0 0 0 2 0:m1 3:m1\nB 0 1 1 1 5:m1\nE 0 2 3 3\n",
		  RFB_EFORMAT, "the index has 5" },
		{ HEAD_PAD "B 0 0 0 2 0:m1 0:m1\nB 0 1 1 1 0:m1\n",
		  RFB_EFORMAT, "second repeat" },
		{ HEAD_PAD "B 0 0 0 2 0:m1 3:m1\nB 0 1 1 1 0:m1\nE 0 2 3 2\n",
		  RFB_EFORMAT, "summary" },
		{ HEAD_PAD "B 0 0 0 2 0:m1 3:m1\nE 0 1 2 2\n",
		  RFB_EFORMAT, "end of epoch 0 after 1" },
		{ HEAD_DROP "B 0 0 0 2 1:m1 2:m1\nE 0 1 2 2\n", 0, "" },
		{ HEAD_DROP "B 0 0 0 2 1:m1 1:m1\n", RFB_EFORMAT,
		  "appears twice" },
		{ HEAD_DROP "B 0 0 0 3 1:m1 2:m1 4:m1\n", RFB_ELIMIT, "" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		rfb_err err = { 0 };
		int items;
		int rc = read_all(cases[i].text, strlen(cases[i].text), &err,
				  &items);
		CHECKF(rc == cases[i].code && strstr(err.msg, cases[i].says),
		       "case %zu: %d '%s'", i, rc, err.msg);
	}
}

static void test_header_version2(void)
{
	rfb_plan_header h;
	rfb_err err = { 0 };
	char text[1024];
	const char *v1 = strstr(HEAD_PAD, " schedule=");

	snprintf(text, sizeof text, "%s", HEAD_PAD);
	text[strlen(text) - 1] = '\0';
	CHECKF(rfb_plan_parse_header(text, strlen(text), &h, &err) == 0, "%s",
	       err.msg);
	CHECK(h.version == 2 && h.even == RFB_PLAN_EVEN_PAD &&
	      rfb_plan_epoch_samples(&h) == 3 && h.samples == 2);
	/* written back the same */
	{
		char again[1024];
		rfb_plan_format_header(again, sizeof again, &h);
		CHECK(strcmp(again, HEAD_PAD) == 0);
	}
	/* version 1 does not know even= */
	snprintf(text, sizeof text, "#refurb-plan 1%.*s", (int)strlen(v1) - 1,
		 v1);
	CHECK(rfb_plan_parse_header(text, strlen(text), &h, &err) ==
	      RFB_EFORMAT && strstr(err.msg, "version 1"));
	snprintf(text, sizeof text, "%s", HEAD_PAD);
	memcpy(strstr(text, "even=pad"), "even=pud", 8);
	text[strlen(text) - 1] = '\0';
	CHECK(rfb_plan_parse_header(text, strlen(text), &h, &err) ==
	      RFB_EFORMAT && strstr(err.msg, "unknown even 'pud'"));
	snprintf(text, sizeof text, "%s", HEAD_PAD);
	memcpy(strstr(text, "batches=2"), "batches=1", 9);
	text[strlen(text) - 1] = '\0';
	CHECK(rfb_plan_parse_header(text, strlen(text), &h, &err) ==
	      RFB_EFORMAT && strstr(err.msg, "3 samples per epoch"));
}

/* Without --even, nothing changes: version 1, the same bytes as before
 * (even=none is the default), and one shard is never padded. */
static void test_even_none_and_one_shard(void)
{
	rfb_evict *s = build(50, 2, 4, RFB_EVICT_BALANCED, 0, 1);
	rfb_plan_params p = { .batch_size = 8, .first_epoch = 0,
			      .last_epoch = 3, .seed = 5,
			      .shuffle = RFB_PLAN_CACHE_AWARE,
			      .even = RFB_PLAN_EVEN_NONE };
	struct text a = plan_text(s, &p, NULL), b;

	CHECK(strncmp(a.data, "#refurb-plan 1 ", 15) == 0);
	CHECK(strstr(a.data, "even=") == NULL);
	p.even = RFB_PLAN_EVEN_PAD;
	b = plan_text(s, &p, NULL);
	CHECK(strncmp(b.data, "#refurb-plan 2 ", 15) == 0);
	/* one shard: nothing to even out, the same batches */
	CHECK(strcmp(strchr(a.data, '\n'), strchr(b.data, '\n')) == 0);
	free(a.data);
	free(b.data);
	rfb_evict_free(s);
}

int main(void)
{
	RUN(test_even_properties);
	RUN(test_drop_takes_turns);
	RUN(test_even_tail_and_reader);
	RUN(test_reader_version2);
	RUN(test_header_version2);
	RUN(test_even_none_and_one_shard);
	return test_done();
}
