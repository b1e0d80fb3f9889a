/*
 * advise.h - the cost model behind refurb-advise: time every split point
 * of a full augmentation pipeline on a sample of the index, then predict
 * for every (split, r) the chain's images per CPU-second and the expected
 * fraction of unique samples (Theorem 1), and pick a configuration.
 *
 * Measuring (rfb_advise_measure) splits the sample among `threads`
 * threads timing at once (the chain's workers run at once too, sharing
 * caches and memory bandwidth) and reads thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID), so other load on the machine changes little.  For every sampled image and every split point
 * k (the first k layers partial, the other L - k final; k = 0 .. L-1) it
 * takes the median of `repeat` runs of:
 *   partial  reading the file and rfb_pipe_run_jpeg with the first k
 *            layers (decode included, with its decode-time shortcuts, as
 *            refurb-partial does)
 *   write    encoding the result as a cache record with the codec and
 *            writing it to a file in tmp_dir
 *   read     reading that record back and decoding it
 *   final    rfb_pipe_run of the last L - k layers on it
 * and once per split the transfer of its output through a pipe (the
 * batch stream, both ends).  The model (rfb_advise_predict) then adds
 * these up per image: misses pay partial + write, every use pays read +
 * final + transfer.
 *
 * A pipeline with gates (apply, choice, order) is timed with every gate
 * open (rfb_pipeline_ungated: every gated layer runs); each gated layer
 * then costs its timed cost times how often it runs, a gate nothing, and
 * the splits are those that keep every gate with its layers
 * (rfb_pipeline_splittable): split partial and final times are the timed
 * ones less what the gated layers do not run.
 */
#ifndef REFURB_ADVISE_H
#define REFURB_ADVISE_H

#include <stdint.h>

#include "refurb/error.h"
#include "refurb/record.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_advise_opts {
	const char *index_path;
	const char *root;          /* dataset root override, or NULL */
	const char *spec;          /* the full pipeline */
	struct rfb_codec codec;    /* of the cache */
	uint32_t sample;           /* images to time (at most the index's) */
	int repeat;                /* runs per image and split (>= 1) */
	uint64_t seed;             /* draws the sample and the augmentations */
	const char *tmp_dir;       /* where the record files are written */
	int threads;               /* timing at once (>= 1), like the chain's
				    * workers: they share caches and memory */
	/* Called after every image (may be NULL). */
	void (*on_progress)(void *ctx, uint64_t done, uint64_t total);
	/* Called for each image that cannot be read or decoded (may be
	 * NULL); the image is left out of the sample. */
	void (*on_bad)(void *ctx, uint32_t sample, const rfb_err *why);
	void *ctx;
};

/* One layer of the full pipeline. */
struct rfb_advise_layer {
	const char *name;          /* filter name; owned by the advice */
	double partial_s;          /* what adding it to the partial part costs
				    * per miss (may be < 0: a resize folded
				    * into the decode saves time) */
	double final_s;            /* what it costs per use in the final part */
	double choices;            /* distinct outcomes (|A| factor) */
	int in_width, in_height;   /* median input size */
	double runs;               /* how often it runs: 1, or for a layer
				    * gated by apply, choice or order its
				    * probability (apply's p, the option's
				    * weight over their total, 1); its costs
				    * are then its cost when it runs (timed
				    * with the gates open) times runs */
	double partial_err, final_err; /* standard errors of partial_s and
				    * final_s: of the mean over the timed
				    * images of the per-image difference
				    * (each image's time the median of its
				    * repeats); 0 for a cost that is 0 by
				    * construction (a gate, a layer that
				    * never runs) */
	double collision;          /* its view-collision probability
				    * (rfb_pipeline_layer_collision) */
	int draws;                 /* 1 if it draws (rfb_pipeline_layer_draws):
				    * cached, views would share its draws */
};

/* One split point: the first layers partial, the last final_layers final.
 * Times are means over the sampled images of per-image medians, seconds
 * of thread CPU time. */
struct rfb_advise_split {
	int final_layers;          /* 1 .. L */
	char *partial_spec;        /* canonical text ("" when empty) */
	char *final_spec;
	double partial_s;          /* read the file, decode, partial layers */
	double write_s;            /* encode the record, write it */
	double read_s;             /* read the record, decode it */
	double final_s;            /* final layers */
	double transfer_s;         /* the output through a pipe, both ends */
	double record_bytes;       /* mean record size */
	double final_choices;      /* |A_F| */
	double collision;          /* two runs of the final part on one
				    * record identical: rfb_pipeline_collision
				    * of its layers at their input size */
};

typedef struct rfb_advice {
	uint32_t images;           /* samples in the index */
	uint32_t measured;         /* images timed */
	uint32_t failed;           /* sampled images left out */
	int layers;                /* L */
	struct rfb_advise_layer *layer;   /* L */
	int splits;                /* L: final_layers = L - k for k = 0 .. L-1
				    * (fewer with gates: only the splits
				    * rfb_pipeline_splittable takes) */
	struct rfb_advise_split *split;   /* by k */
	double decode_s;           /* read + decode alone (k = 0's partial) */
	double decode_err;         /* its standard error */
	double choices;            /* |A| */
	char *spec;                /* canonical full pipeline */
} rfb_advice;

/*
 * Measure.  Returns the advice (free with rfb_advice_free) or NULL with
 * err filled: a bad spec (RFB_ESPEC), an unreadable index, no image of
 * the sample readable, a pipeline that cannot give one output size
 * (RFB_ESPEC: a batch needs it), tmp_dir not writable (RFB_EIO).
 */
rfb_advice *rfb_advise_measure(const struct rfb_advise_opts *o, rfb_err *err) RFB_MUST_CHECK;

/*
 * The model without timing, for images of width x height: every layer's
 * input size, choices and collisions, every split's specs, |A_F| and
 * collisions (as rfb_advise_measure gives them), |A|; the times are 0
 * and the layers' costs NAN (measured 0: nothing was timed); images is
 * the dataset's size (for cache_bytes).  NULL with err filled for a bad
 * spec (RFB_ESPEC), one without a fixed output size, or a bad size.
 */
rfb_advice *rfb_advise_space(const char *spec, int width, int height,
			     uint32_t images, rfb_err *err) RFB_MUST_CHECK;

/* Free an advice.  NULL accepted. */
void rfb_advice_free(rfb_advice *a);

/* What to predict for. */
struct rfb_advise_target {
	double epochs;             /* E (>= 1) */
	int steady;                /* 1: rates of the steady state (epochs >=
				    * r: misses 1/r); 0: means over E epochs
				    * (epoch 0 all misses) */
	double cores;              /* CPUs for the chain (> 0) */
	int views;                 /* final runs per sample (0 taken as 1):
				    * the record is read once, the final
				    * part and the transfer run views times */
	double max_collision;      /* with views > 1, a row whose
				    * view_collision is above it is ruled
				    * out (0: RFB_VIEW_COLLISION_LIMIT) */
	int shared_draws;          /* with views > 1: 0 rules out a row whose
				    * partial part has a layer that draws
				    * (the views, made from one record, would
				    * share its draws); 1 keeps it */
};

/* Why a row is ruled out (0: it is not). */
enum rfb_advise_ruling {
	RFB_ADVISE_KEPT = 0,
	RFB_ADVISE_COLLISIONS,     /* view_collision above max_collision */
	RFB_ADVISE_SHARED_DRAWS    /* a layer of the partial part draws */
};

/* One row of the table. */
struct rfb_advise_row {
	int split;                 /* index into advice->split */
	int final_layers;
	int reuse;                 /* r */
	double img_per_cpu_s;
	double img_per_s;          /* img_per_cpu_s * cores */
	double unique_fraction;    /* E(U) / E, Theorem 1 */
	double cache_bytes;        /* images * record bytes * (1 + 1/r) */
	double miss_fraction;      /* misses per use */
	double view_collision;     /* some two of the views identical
				    * (rfb_pipeline_views_collision's bound);
				    * 0 for one view */
	enum rfb_advise_ruling ruled_out; /* with views > 1: view_collision
				    * above the target's max_collision, else
				    * without shared_draws a partial layer
				    * that draws; 0 (kept) otherwise */
};

/*
 * The prediction for split k (0 .. splits-1) and reuse factor r (>= 1):
 * misses per use m = 1/r (steady) or (1 + (E - 1)/r) / E; CPU seconds
 * per sample = m (partial + write) + read + V (final + transfer) with V
 * the views; images are samples (of V views each).
 */
void rfb_advise_predict(const rfb_advice *a, int k, int r,
			const struct rfb_advise_target *t,
			struct rfb_advise_row *row);

/*
 * Rows on the Pareto front of (img_per_cpu_s, unique_fraction): no other
 * row is at least as good in both and better in one (unique fractions
 * within 1e-9 count as equal).  A row ruled out is never on it and
 * beats none.  Sets on_front[i] to 1 or 0 for each of the n rows.
 */
void rfb_advise_pareto(const struct rfb_advise_row *rows, int n,
		       unsigned char *on_front);

/*
 * The row with the highest unique fraction whose img_per_s sustains rate
 * (ties, within 1e-9: the higher img_per_cpu_s), or -1 when none does;
 * rows ruled out are never taken.
 */
int rfb_advise_recommend(const struct rfb_advise_row *rows, int n,
			 double rate);

/*
 * The row another run may recommend for rate when the rates it measures
 * differ by the fraction margin (timing noise): rfb_advise_recommend for
 * rate / (1 + margin) (a more diverse row) or else for rate * (1 + margin)
 * (a faster one), whichever is not the recommendation for rate; -1 when
 * none might sustain it, -2 when both agree with the recommendation.
 */
int rfb_advise_rival(const struct rfb_advise_row *rows, int n, double rate,
		     double margin);

/* Consecutive layers whose cost is one figure. */
struct rfb_advise_cost {
	int first, last;           /* layers first .. last */
	double cost_s, spread_s;   /* their summed cost, its standard error */
};

/*
 * Costs within noise merged: layers first .. first+n-1 with cost[i] and
 * spread[i] (standard errors) are grouped from the first on, a group
 * closing as soon as its summed cost is over twice its spread (the
 * square root of the summed squares: an upper bound, the layers'
 * differences being anticorrelated); a layer whose cost and spread are
 * both 0 (0 by construction) stands alone.  A last group still within
 * noise, or below 0 (a saving), joins the ones before until it stands
 * out; a group alone that stays below 0 is given as 0.  Fills out[] (n at most) and returns the number of groups.
 */
int rfb_advise_merge(const double *cost, const double *spread, int first,
		     int n, struct rfb_advise_cost *out);
#ifdef __cplusplus
}
#endif

#endif
