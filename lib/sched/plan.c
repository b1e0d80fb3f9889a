/*
 * plan.c - the plan generator: for every epoch, the order of the shard's
 * samples cut into mini-batches, each marked hit or miss (see plan.h and
 * refurb-plan(5) for the exact rules).
 *
 * One epoch is computed at a time into an order array of positions into
 * the schedule; nothing is allocated per epoch or per batch.
 */
#include <stdlib.h>
#include <string.h>

#include "refurb/plan.h"
#include "refurb/rng.h"

struct rfb_plan {
	const rfb_evict *s;
	rfb_plan_params p;
	uint32_t n, reuse, batches;
	uint32_t m;        /* samples per epoch: n, n+1 (pad) or n-1 (drop) */
	int pad, drop;     /* --even changes this shard's epochs */
	const uint32_t *ids;
	const uint16_t *phases;
	uint32_t *order;   /* the current epoch: m positions, batch after batch */
	uint32_t *work;    /* misses then hits, each shuffled (n+1 entries) */
	/* balance = pixels only */
	uint32_t *pixels;  /* by position */
	uint64_t *keys;    /* misses sorted by pixels */
	uint32_t *heap;    /* batches with free miss slots, by miss pixels */
	uint64_t *sum;     /* miss pixels per batch */
	uint32_t *tie;     /* random tie-break per batch */
	uint32_t *fill;    /* misses placed per batch */
	rfb_plan_sample *batch;
	/* iteration state */
	uint32_t epoch, step, epoch_misses;
	int started, done;
};

const struct rfb_enum_name rfb_plan_shuffle_names[] = {
	{ RFB_PLAN_CACHE_AWARE, "cache-aware" },
	{ RFB_PLAN_RANDOM, "random" },
	{ RFB_PLAN_SEQUENTIAL, "none" },
	{ RFB_PLAN_SEQUENTIAL, "sequential" },
	{ 0, NULL },
};

const struct rfb_enum_name rfb_plan_balance_names[] = {
	{ RFB_PLAN_BALANCE_NONE, "none" },
	{ RFB_PLAN_BALANCE_PIXELS, "pixels" },
	{ RFB_PLAN_BALANCE_COST, "cost" },
	{ 0, NULL },
};

const struct rfb_enum_name rfb_plan_even_names[] = {
	{ RFB_PLAN_EVEN_NONE, "none" },
	{ RFB_PLAN_EVEN_PAD, "pad" },
	{ RFB_PLAN_EVEN_DROP, "drop" },
	{ 0, NULL },
};

const char *rfb_plan_shuffle_name(enum rfb_plan_shuffle shuffle)
{
	return rfb_enum_name(rfb_plan_shuffle_names, (int)shuffle);
}

int rfb_plan_shuffle_parse(const char *name)
{
	return rfb_enum_parse(rfb_plan_shuffle_names, name);
}

const char *rfb_plan_balance_name(enum rfb_plan_balance balance)
{
	return rfb_enum_name(rfb_plan_balance_names, (int)balance);
}

int rfb_plan_balance_parse(const char *name)
{
	return rfb_enum_parse(rfb_plan_balance_names, name);
}

const char *rfb_plan_even_name(enum rfb_plan_even even)
{
	return rfb_enum_name(rfb_plan_even_names, (int)even);
}

int rfb_plan_even_parse(const char *name)
{
	return rfb_enum_parse(rfb_plan_even_names, name);
}

uint32_t rfb_plan_epoch_samples(const rfb_plan_header *h)
{
	uint32_t n_shards = h->shard_count ? h->shard_count : 1;

	if (h->even == RFB_PLAN_EVEN_PAD)
		return (uint32_t)(((uint64_t)h->total + n_shards - 1) / n_shards);
	if (h->even == RFB_PLAN_EVEN_DROP)
		return h->total / n_shards;
	return h->samples;
}

static int check_params(const rfb_plan_params *p, const uint32_t *pixels,
			rfb_err *err)
{
	if (p->batch_size < 1 || p->batch_size > RFB_PLAN_MAX_BATCH)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "batch size %u out of range (1 to %u)",
				   p->batch_size, RFB_PLAN_MAX_BATCH);
	if (p->first_epoch > p->last_epoch)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "epoch range %u-%u is reversed",
				   p->first_epoch, p->last_epoch);
	if (!rfb_plan_shuffle_name(p->shuffle))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "unknown shuffle mode %d", p->shuffle);
	if (!rfb_plan_balance_name(p->balance))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "unknown balance mode %d", p->balance);
	if (!rfb_plan_even_name(p->even))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "unknown --even mode %d", p->even);
	if (p->balance == RFB_PLAN_BALANCE_COST &&
	    (p->shuffle != RFB_PLAN_CACHE_AWARE || !p->miss_cost))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "balancing costs needs the cache-aware "
				   "shuffle and a cost model");
	if (p->balance == RFB_PLAN_BALANCE_PIXELS &&
	    (p->shuffle != RFB_PLAN_CACHE_AWARE || !pixels))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "balancing pixels needs the cache-aware "
				   "shuffle and the index's pixel sizes");
	return 0;
}

static int alloc_pixel_state(rfb_plan *pl, const uint32_t *pixels)
{
	size_t n = pl->n, nb = pl->batches;

	pl->pixels = malloc(n * sizeof *pl->pixels);
	pl->keys = malloc((n + 1) * sizeof *pl->keys); /* + a pad */
	pl->heap = malloc(nb * sizeof *pl->heap);
	pl->sum = malloc(nb * sizeof *pl->sum);
	pl->tie = malloc(nb * sizeof *pl->tie);
	pl->fill = malloc(nb * sizeof *pl->fill);
	if (!pl->pixels || !pl->keys || !pl->heap || !pl->sum || !pl->tie ||
	    !pl->fill)
		return -1;
	if (pixels)
		memcpy(pl->pixels, pixels, n * sizeof *pl->pixels);
	return 0;
}

/* m, and whether this shard pads or drops: the shards of N have floor or
 * ceil(T/N) samples; pad lifts the smaller ones, drop cuts the larger. */
static void set_epoch_size(rfb_plan *pl)
{
	const rfb_evict_params *sp = rfb_evict_params_of(pl->s);
	uint32_t lo = sp->total / sp->shard_count;
	uint32_t hi = lo + (sp->total % sp->shard_count != 0);

	pl->pad = pl->p.even == RFB_PLAN_EVEN_PAD && pl->n < hi;
	pl->drop = pl->p.even == RFB_PLAN_EVEN_DROP && pl->n > lo;
	pl->m = pl->n + (uint32_t)pl->pad - (uint32_t)pl->drop;
}

rfb_plan *rfb_plan_new(const rfb_evict *s, const rfb_plan_params *p,
		       const uint32_t *pixels, rfb_err *err)
{
	rfb_plan *pl;

	if (check_params(p, pixels, err) < 0)
		return NULL;
	if (p->first_step > 0 && (uint64_t)p->first_step * p->batch_size >=
	    rfb_evict_count(s)) {
		rfb_err_set(err, RFB_EINVAL, NULL, "step %u: an epoch of %u "
			    "samples in batches of %u has steps 0 to %u",
			    p->first_step, rfb_evict_count(s), p->batch_size,
			    (rfb_evict_count(s) - 1) / p->batch_size);
		return NULL;
	}
	if (!(pl = calloc(1, sizeof *pl)))
		goto nomem;
	pl->s = s;
	pl->p = *p;
	pl->n = rfb_evict_count(s);
	pl->reuse = rfb_evict_params_of(s)->reuse;
	set_epoch_size(pl);
	pl->batches = (uint32_t)(((uint64_t)pl->m + p->batch_size - 1) /
				 p->batch_size);
	pl->ids = rfb_evict_ids(s);
	pl->phases = rfb_evict_phases(s);
	pl->epoch = p->first_epoch;
	pl->order = malloc(((size_t)pl->n + 1) * sizeof *pl->order);
	pl->work = malloc(((size_t)pl->n + 1) * sizeof *pl->work);
	pl->batch = malloc((size_t)p->batch_size * sizeof *pl->batch);
	if (!pl->order || !pl->work || !pl->batch)
		goto nomem;
	if (p->balance != RFB_PLAN_BALANCE_NONE &&
	    alloc_pixel_state(pl, p->balance == RFB_PLAN_BALANCE_PIXELS ?
			      pixels : NULL) < 0)
		goto nomem;
	return pl;
nomem:
	rfb_plan_free(pl);
	rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	return NULL;
}

void rfb_plan_free(rfb_plan *pl)
{
	if (!pl)
		return;
	free(pl->order);
	free(pl->work);
	free(pl->pixels);
	free(pl->keys);
	free(pl->heap);
	free(pl->sum);
	free(pl->tie);
	free(pl->fill);
	free(pl->batch);
	free(pl);
}

void rfb_plan_header_of(const rfb_plan *pl, rfb_plan_header *h)
{
	const rfb_evict_params *sp = rfb_evict_params_of(pl->s);

	memset(h, 0, sizeof *h);
	h->version = pl->p.even ? 2 : 1; /* plans without --even stay 1 */
	h->schedule_identity = rfb_evict_identity(pl->s);
	h->index_identity = sp->index_identity;
	h->samples = pl->n;
	h->total = sp->total;
	h->reuse = sp->reuse;
	h->policy = sp->policy;
	h->evict_seed = sp->seed;
	h->seed = pl->p.seed;
	h->batch_size = pl->p.batch_size;
	h->batches = pl->batches;
	h->first_epoch = pl->p.first_epoch;
	h->last_epoch = pl->p.last_epoch;
	h->first_step = pl->p.first_step;
	h->shuffle = pl->p.shuffle;
	h->balance = pl->p.balance;
	h->drop_last = pl->p.drop_last;
	h->shard_index = sp->shard_index;
	h->shard_count = sp->shard_count;
	h->even = pl->p.even;
	if (pl->p.balance == RFB_PLAN_BALANCE_COST)
		h->cost_identity = pl->p.cost_identity;
}

/* ---- one epoch ---- */

static uint32_t batch_start(const rfb_plan *pl, uint32_t b)
{
	return b * pl->p.batch_size;
}

static uint32_t batch_end(const rfb_plan *pl, uint32_t b)
{
	uint64_t end = (uint64_t)(b + 1) * pl->p.batch_size;
	return end < pl->m ? (uint32_t)end : pl->m;
}

/* Misses of batch b: its share of the epoch's misses, proportional to
 * its size, so full batches get floor or ceil(misses * B / m). */
static uint32_t batch_misses(const rfb_plan *pl, uint32_t misses, uint32_t b)
{
	return (uint32_t)((uint64_t)misses * batch_end(pl, b) / pl->m -
			  (uint64_t)misses * batch_start(pl, b) / pl->m);
}

/* Can epoch leave a sample of this phase out at no cost?  A hit, or a
 * miss whose record would serve this epoch only. */
static int free_to_drop(uint32_t epoch, uint32_t phase, uint32_t reuse)
{
	return !rfb_evict_is_miss(epoch, phase, reuse) ||
	       rfb_evict_death(epoch, phase, reuse) == (uint64_t)epoch + 1;
}

uint32_t rfb_plan_drop_position(const rfb_evict *s, uint32_t epoch)
{
	const uint16_t *phases = rfb_evict_phases(s);
	uint32_t n = rfb_evict_count(s), r = rfb_evict_params_of(s)->reuse;
	uint32_t q = epoch % r, in_phase = 0, k, start = epoch % n;

	/* Phase e mod r: a hit in epoch e >= 1 when r >= 2, and otherwise a
	 * miss that dies at e+1; its samples take turns, one per r epochs. */
	for (uint32_t i = 0; i < n; i++)
		in_phase += phases[i] == q;
	if (in_phase && free_to_drop(epoch, q, r)) {
		k = epoch / r % in_phase;
		for (uint32_t i = 0; i < n; i++)
			if (phases[i] == q && k-- == 0)
				return i;
	}
	/* Fewer samples than phases, or refcount: the next free sample from
	 * position e mod n; if none is free, that one (its record is then
	 * recomputed when it is next used: the cache's recovery rule). */
	for (uint32_t i = 0; i < n; i++)
		if (free_to_drop(epoch, phases[(start + i) % n], r))
			return (start + i) % n;
	return start;
}

/* work = the epoch's misses (positions, ascending) then its hits, without
 * the dropped position (UINT32_MAX: none).  *len = entries in work.
 * Returns the number of misses. */
static uint32_t split_misses(rfb_plan *pl, uint32_t epoch, uint32_t dropped,
			     uint32_t *len)
{
	uint32_t m = 0, h;

	for (uint32_t i = 0; i < pl->n; i++)
		if (i != dropped &&
		    rfb_evict_is_miss(epoch, pl->phases[i], pl->reuse))
			m++;
	h = m;
	for (uint32_t i = 0, mi = 0; i < pl->n; i++) {
		if (i == dropped)
			continue;
		if (rfb_evict_is_miss(epoch, pl->phases[i], pl->reuse))
			pl->work[mi++] = i;
		else
			pl->work[h++] = i;
	}
	*len = h;
	return m;
}

/* Cache-aware: batch b takes its share of the (shuffled) misses and fills
 * up with (shuffled) hits; then the batch itself is shuffled so that the
 * misses are not all at its front. */
static void interleave(rfb_plan *pl, uint32_t misses, uint32_t *order,
		       rfb_rng *rng)
{
	const uint32_t *miss = pl->work, *hit = pl->work + misses;

	for (uint32_t b = 0; b < pl->batches; b++) {
		uint32_t start = batch_start(pl, b), size = batch_end(pl, b) - start;
		uint32_t m = batch_misses(pl, misses, b);

		memcpy(order + start, miss, (size_t)m * sizeof *order);
		memcpy(order + start + m, hit, (size_t)(size - m) * sizeof *order);
		miss += m;
		hit += size - m;
		rfb_rng_shuffle_u32(rng, order + start, size);
	}
}

static int heap_less(const rfb_plan *pl, uint32_t a, uint32_t b)
{
	return pl->sum[a] != pl->sum[b] ? pl->sum[a] < pl->sum[b]
					: pl->tie[a] < pl->tie[b];
}

static void heap_sift_down(rfb_plan *pl, uint32_t len, uint32_t i)
{
	uint32_t *h = pl->heap;

	for (;;) {
		uint64_t l = 2 * (uint64_t)i + 1, r = l + 1, m = i;
		if (l < len && heap_less(pl, h[l], h[m]))
			m = l;
		if (r < len && heap_less(pl, h[r], h[m]))
			m = r;
		if (m == i)
			return;
		uint32_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = (uint32_t)m;
	}
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Balance pixels: each batch keeps its miss count (as cache-aware), but
 * the misses are dealt largest first, each to the batch with the fewest
 * miss pixels that still has a free miss slot (LPT with capacities).
 * Equal pixel counts keep their shuffled order, batch ties are random. */
static void deal_by_pixels(rfb_plan *pl, uint32_t misses, uint32_t *order,
			   rfb_rng *rng)
{
	uint32_t len = 0;

	for (uint32_t i = 0; i < misses; i++)
		pl->keys[i] = (uint64_t)(UINT32_MAX - pl->pixels[pl->work[i]])
				      << 32 | i;
	qsort(pl->keys, misses, sizeof *pl->keys, key_cmp);
	for (uint32_t b = 0; b < pl->batches; b++) {
		pl->sum[b] = 0;
		pl->fill[b] = 0;
		pl->tie[b] = rfb_rng_u32(rng);
		if (batch_misses(pl, misses, b))
			pl->heap[len++] = b;
	}
	for (uint32_t i = len / 2; i-- > 0;)
		heap_sift_down(pl, len, i);
	for (uint32_t k = 0; k < misses; k++) {
		uint32_t pos = pl->work[(uint32_t)pl->keys[k]], b = pl->heap[0];
		order[batch_start(pl, b) + pl->fill[b]++] = pos;
		pl->sum[b] += pl->pixels[pos];
		if (pl->fill[b] == batch_misses(pl, misses, b))
			pl->heap[0] = pl->heap[--len];
		heap_sift_down(pl, len, 0);
	}
}

/* Balance cost: this epoch's weight of every miss is its predicted cost
 * in nanoseconds (saturated), dealt as pixels are. */
static void cost_weights(rfb_plan *pl, uint32_t misses, uint32_t epoch)
{
	for (uint32_t i = 0; i < misses; i++) {
		uint32_t pos = pl->work[i];
		double ns = pl->p.miss_cost(pl->p.cost_ctx, pl->ids[pos], epoch) * 1e9;
		pl->pixels[pos] = !(ns > 0) ? 0 : ns >= UINT32_MAX ? UINT32_MAX
				  : (uint32_t)(ns + 0.5);
	}
}

static void fill_hits(rfb_plan *pl, uint32_t misses, uint32_t *order,
		      rfb_rng *rng)
{
	const uint32_t *hit = pl->work + misses;

	for (uint32_t b = 0; b < pl->batches; b++) {
		uint32_t start = batch_start(pl, b), size = batch_end(pl, b) - start;
		uint32_t m = batch_misses(pl, misses, b);

		memcpy(order + start + m, hit, (size_t)(size - m) * sizeof *order);
		hit += size - m;
		rfb_rng_shuffle_u32(rng, order + start, size);
	}
}

/* random and none: the positions (without the dropped one), shuffled
 * for random; the pad repeats the first hit of them (the first of them
 * if the epoch has no hit) at the end. */
static void plain_order(rfb_plan *pl, uint32_t epoch, uint32_t dropped,
			uint32_t *order, rfb_rng *rng)
{
	uint32_t len = 0;

	for (uint32_t i = 0; i < pl->n; i++)
		if (i != dropped)
			order[len++] = i;
	if (pl->p.shuffle == RFB_PLAN_RANDOM)
		rfb_rng_shuffle_u32(rng, order, len);
	if (!pl->pad)
		return;
	order[len] = order[0];
	for (uint32_t i = 0; i < len; i++) {
		if (!rfb_evict_is_miss(epoch, pl->phases[order[i]], pl->reuse)) {
			order[len] = order[i];
			break;
		}
	}
}

void rfb_plan_epoch_order(rfb_plan *pl, uint32_t epoch, uint32_t *order)
{
	uint32_t dropped = pl->drop ? rfb_plan_drop_position(pl->s, epoch)
				    : UINT32_MAX;
	uint32_t misses, len;
	rfb_rng rng;

	rfb_rng_init(&rng, pl->p.seed, epoch, 0, RFB_STAGE_PLAN);
	if (pl->p.shuffle != RFB_PLAN_CACHE_AWARE) {
		plain_order(pl, epoch, dropped, order, &rng);
		return;
	}
	misses = split_misses(pl, epoch, dropped, &len);
	rfb_rng_shuffle_u32(&rng, pl->work, misses);
	rfb_rng_shuffle_u32(&rng, pl->work + misses, len - misses);
	if (pl->pad) {
		/* the first hit drawn (a cached record; if the epoch has no
		 * hit, the first miss) is used again as the last of its kind,
		 * so the repeat falls in the epoch's last batches */
		int no_hits = len == misses;
		pl->work[len] = pl->work[no_hits ? 0 : misses];
		misses += (uint32_t)no_hits;
	}
	if (pl->p.balance == RFB_PLAN_BALANCE_COST)
		cost_weights(pl, misses, epoch);
	if (pl->p.balance != RFB_PLAN_BALANCE_NONE) {
		deal_by_pixels(pl, misses, order, &rng);
		fill_hits(pl, misses, order, &rng);
	} else {
		interleave(pl, misses, order, &rng);
	}
}

/* ---- walking the plan ---- */

static void fill_batch(rfb_plan *pl, rfb_plan_batch *b)
{
	uint32_t start = batch_start(pl, pl->step), end = batch_end(pl, pl->step);

	b->epoch = pl->epoch;
	b->step = pl->step;
	b->global_step = (uint64_t)pl->epoch * pl->batches + pl->step;
	b->count = end - start;
	b->dropped = pl->p.drop_last && b->count < pl->p.batch_size;
	b->samples = pl->batch;
	for (uint32_t i = 0; i < b->count; i++) {
		uint32_t pos = pl->order[start + i];
		rfb_plan_sample *smp = &pl->batch[i];
		uint16_t phase = pl->phases[pos];

		smp->id = pl->ids[pos];
		smp->miss = (uint8_t)rfb_evict_is_miss(pl->epoch, phase,
							pl->reuse);
		smp->death = smp->miss ? rfb_evict_death(pl->epoch, phase,
							  pl->reuse) : 0;
		smp->addr_count = 0;
		pl->epoch_misses += smp->miss;
	}
}

int rfb_plan_next(rfb_plan *pl, rfb_plan_item *item)
{
	if (pl->done)
		return 0;
	if (!pl->started) {
		rfb_plan_epoch_order(pl, pl->epoch, pl->order);
		pl->started = 1;
		pl->step = 0;
		pl->epoch_misses = 0;
		/* a resumed plan: the batches before the first step are not
		 * written, but the epoch's summary counts them */
		while (pl->epoch == pl->p.first_epoch &&
		       pl->step < pl->p.first_step) {
			fill_batch(pl, &item->batch);
			pl->step++;
		}
	}
	if (pl->step < pl->batches) {
		item->type = RFB_PLAN_LINE_BATCH;
		fill_batch(pl, &item->batch);
		pl->step++;
		return item->type;
	}
	item->type = RFB_PLAN_LINE_EPOCH;
	item->epoch.epoch = pl->epoch;
	item->epoch.batches = pl->batches;
	item->epoch.samples = pl->m;
	item->epoch.misses = pl->epoch_misses;
	if (pl->epoch == pl->p.last_epoch)
		pl->done = 1;
	else
		pl->epoch++;
	pl->started = 0;
	return item->type;
}

uint32_t *rfb_plan_pixel_table(const rfb_evict *s,
			       uint64_t (*pixels_of)(const void *ctx,
						     uint32_t id),
			       const void *ctx)
{
	uint32_t n = rfb_evict_count(s);
	const uint32_t *ids = rfb_evict_ids(s);
	uint32_t *t = malloc((size_t)n * sizeof *t + 1);

	if (!t)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t px = pixels_of(ctx, ids[i]);
		t[i] = px > UINT32_MAX ? UINT32_MAX : (uint32_t)px;
	}
	return t;
}
