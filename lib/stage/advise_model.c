/*
 * advise_model.c - the predicting half of the cost model (advise.h):
 * from the measured costs of every split, the images per CPU-second of
 * the chain for any r, Theorem 1's unique fraction, the Pareto front and
 * the recommendation.
 */
#include <math.h>

#include "refurb/advise.h"
#include "refurb/pipeline.h"
#include "refurb/evict.h"

/* 1 if a layer of split k's partial part draws. */
static int partial_draws(const rfb_advice *a, int k)
{
	for (int j = 0; j < a->layers - a->split[k].final_layers; j++)
		if (a->layer[j].draws)
			return 1;
	return 0;
}

void rfb_advise_predict(const rfb_advice *a, int k, int r,
			const struct rfb_advise_target *t,
			struct rfb_advise_row *row)
{
	const struct rfb_advise_split *s = &a->split[k];
	double e = t->epochs, miss, per_image, limit = t->max_collision > 0 ?
		t->max_collision : RFB_VIEW_COLLISION_LIMIT;
	int views = t->views > 1 ? t->views : 1;

	/* balanced eviction: epoch 0 computes every sample, each later
	 * epoch N/r of them */
	miss = t->steady ? 1.0 / r : (1.0 + (e - 1) / r) / e;
	/* every view reads the one record: the final part runs per view */
	per_image = miss * (s->partial_s + s->write_s) + s->read_s +
		    views * (s->final_s + s->transfer_s);
	row->split = k;
	row->final_layers = s->final_layers;
	row->reuse = r;
	row->miss_fraction = miss;
	row->img_per_cpu_s = per_image > 0 ? 1.0 / per_image : INFINITY;
	row->img_per_s = row->img_per_cpu_s * t->cores;
	row->unique_fraction = rfb_evict_diversity(a->choices, s->final_choices,
						   r, e) / e;
	/* live records, and the dead ones of the last epoch that refurb-
	 * partial keeps for its default grace: (1 + 1/r) times (its man page) */
	row->cache_bytes = s->record_bytes * a->images * (1.0 + 1.0 / r);
	row->view_collision = rfb_views_collision(s->collision, views);
	row->ruled_out = views < 2 ? RFB_ADVISE_KEPT :
		row->view_collision > limit ? RFB_ADVISE_COLLISIONS :
		!t->shared_draws && partial_draws(a, k) ? RFB_ADVISE_SHARED_DRAWS :
		RFB_ADVISE_KEPT;
}

/* Unique fractions that differ by less than this are equal (r = 1 gives
 * the same fraction for every split, up to rounding). */
#define SAME_FRACTION 1e-9

static int dominates(const struct rfb_advise_row *x,
		     const struct rfb_advise_row *y)
{
	double du = x->unique_fraction - y->unique_fraction;

	return x->img_per_cpu_s >= y->img_per_cpu_s && du > -SAME_FRACTION &&
	       (x->img_per_cpu_s > y->img_per_cpu_s || du > SAME_FRACTION);
}

void rfb_advise_pareto(const struct rfb_advise_row *rows, int n,
		       unsigned char *on_front)
{
	for (int i = 0; i < n; i++) {
		on_front[i] = !rows[i].ruled_out;
		for (int j = 0; j < n && on_front[i]; j++)
			if (j != i && !rows[j].ruled_out &&
			    dominates(&rows[j], &rows[i]))
				on_front[i] = 0;
	}
}

int rfb_advise_recommend(const struct rfb_advise_row *rows, int n,
			 double rate)
{
	int best = -1;

	for (int i = 0; i < n; i++) {
		if (!(rows[i].img_per_s >= rate) || rows[i].ruled_out)
			continue;
		double du = best < 0 ? 1 : rows[i].unique_fraction -
					     rows[best].unique_fraction;
		if (du > SAME_FRACTION ||
		    (du > -SAME_FRACTION &&
		     rows[i].img_per_cpu_s > rows[best].img_per_cpu_s))
			best = i;
	}
	return best;
}

int rfb_advise_rival(const struct rfb_advise_row *rows, int n, double rate,
		     double margin)
{
	int best = rfb_advise_recommend(rows, n, rate);
	int diverse = rfb_advise_recommend(rows, n, rate / (1 + margin));
	int faster = rfb_advise_recommend(rows, n, rate * (1 + margin));

	if (diverse != best)
		return diverse;
	return faster != best ? faster : -2;
}

/* A group's cost is a figure when it is over twice its spread. */
static int resolved(double cost, double spread)
{
	return cost > 2 * spread;
}

int rfb_advise_merge(const double *cost, const double *spread, int first,
		     int n, struct rfb_advise_cost *out)
{
	int groups = 0, open = 0;
	double var = 0;

	for (int i = 0; i < n; i++) {
		struct rfb_advise_cost *g = &out[groups];
		if (cost[i] == 0 && spread[i] == 0 && !open) {
			*g = (struct rfb_advise_cost){ first + i, first + i, 0, 0 };
			groups++;
			continue;
		}
		if (!open) {
			*g = (struct rfb_advise_cost){ first + i, first + i, 0, 0 };
			var = 0;
			open = 1;
		}
		g->last = first + i;
		g->cost_s += cost[i];
		var += spread[i] * spread[i];
		g->spread_s = sqrt(var);
		if (resolved(g->cost_s, g->spread_s)) {
			groups++;
			open = 0;
		}
	}
	if (open)
		groups++;
	/* a last group still within noise (or below 0: a saving) joins the
	 * ones before until it stands out */
	while (groups > 1 && !resolved(out[groups - 1].cost_s,
				       out[groups - 1].spread_s) &&
	       (out[groups - 1].cost_s != 0 || out[groups - 1].spread_s != 0)) {
		struct rfb_advise_cost *prev = &out[groups - 2], *g = &out[groups - 1];
		prev->last = g->last;
		prev->cost_s += g->cost_s;
		prev->spread_s = sqrt(prev->spread_s * prev->spread_s +
				      g->spread_s * g->spread_s);
		groups--;
	}
	for (int i = 0; i < groups; i++)
		if (out[i].cost_s < 0)
			out[i].cost_s = 0;
	return groups;
}
