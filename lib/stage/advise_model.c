/*
 * advise_model.c - the predicting half of the cost model (advise.h):
 * from the measured costs of every split, the images per CPU-second of
 * the chain for any r, Theorem 1's unique fraction, the Pareto front and
 * the recommendation.
 */
#include <math.h>

#include "refurb/advise.h"
#include "refurb/sched.h"

void rfb_advise_predict(const rfb_advice *a, int k, int r,
			const struct rfb_advise_target *t,
			struct rfb_advise_row *row)
{
	const struct rfb_advise_split *s = &a->split[k];
	double e = t->epochs, miss, per_image;

	/* balanced eviction: epoch 0 computes every sample, each later
	 * epoch N/r of them */
	miss = t->steady ? 1.0 / r : (1.0 + (e - 1) / r) / e;
	per_image = miss * (s->partial_s + s->write_s) + s->read_s +
		    s->final_s + s->transfer_s;
	row->split = k;
	row->final_layers = s->final_layers;
	row->reuse = r;
	row->miss_fraction = miss;
	row->img_per_cpu_s = per_image > 0 ? 1.0 / per_image : INFINITY;
	row->img_per_s = row->img_per_cpu_s * t->cores;
	row->unique_fraction = rfb_sched_diversity(a->choices, s->final_choices,
						   r, e) / e;
	/* live records, and the dead ones of the last epoch that refurb-
	 * partial keeps for its default grace: (1 + 1/r) times (its man page) */
	row->cache_bytes = s->record_bytes * a->images * (1.0 + 1.0 / r);
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
		on_front[i] = 1;
		for (int j = 0; j < n && on_front[i]; j++)
			if (j != i && dominates(&rows[j], &rows[i]))
				on_front[i] = 0;
	}
}

int rfb_advise_recommend(const struct rfb_advise_row *rows, int n,
			 double rate)
{
	int best = -1;

	for (int i = 0; i < n; i++) {
		if (!(rows[i].img_per_s >= rate))
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
