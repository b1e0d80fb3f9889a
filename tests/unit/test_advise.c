/*
 * test_advise.c - the cost model of refurb-advise: the layers' parameter
 * spaces, the prediction formula, the Pareto front and the choice.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/advise.h"
#include "refurb/pipeline.h"
#include "refurb/evict.h"
#include "refurb/transform.h"
#include "test.h"

static void test_choices(void)
{
	rfb_pipeline *p = NULL;
	rfb_err err = { 0 };

	CHECK(rfb_pipeline_parse("resize=256,randaug=n=2:m=9,crop=224,flip,"
				 "crop=32:pad=4,rrcrop=8,randaug=n=1:m=0",
				 &p, &err) == 0);
	CHECK(rfb_pipeline_layers(p) == 8);
	CHECK(strcmp(rfb_pipeline_layer_name(p, 1), "randaug") == 0);
	CHECK(rfb_pipeline_layer_name(p, 8) == NULL);
	CHECK(rfb_pipeline_layer_choices(p, 0, 640, 480) == 1);
	/* 14 ops, the 9 signed ones (ShearX .. Sharpness) with two signs */
	CHECK(rfb_pipeline_layer_choices(p, 1, 341, 256) == 23);
	/* magnitude 0: no sign to draw */
	CHECK(rfb_pipeline_layer_choices(p, 7, 8, 8) == 14);
	CHECK(rfb_pipeline_layer_choices(p, 3, 341, 256) == 33.0 * 118);
	CHECK(rfb_pipeline_layer_choices(p, 4, 224, 224) == 2);
	/* padding 4 around 224: (232 - 32 + 1)^2 */
	CHECK(rfb_pipeline_layer_choices(p, 5, 224, 224) == 201.0 * 201);
	/* rrcrop of a 2x2 image, scale 0.08-1, ratio 3/4-4/3: 1x1 (4
	 * places), 2x2 (1) */
	CHECK(rfb_pipeline_layer_choices(p, 6, 2, 2) == 5);
	rfb_pipeline_free(p);
}

static void test_ops_drawn(void)
{
	rfb_pipeline *p = NULL;
	rfb_err err = { 0 };
	struct rfb_pipe_key key = { 7, 0, 0, RFB_STAGE_PARTIAL };
	int seen[16] = { 0 }, kinds = 0;

	CHECK(rfb_pipeline_parse("resize=64,randaug=n=2:m=9", &p, &err) == 0);
	CHECK(rfb_pipeline_layer_op(p, 0, &key) == -1);
	for (key.sample = 0; key.sample < 500; key.sample++) {
		int op = rfb_pipeline_layer_op(p, 1, &key);
		CHECK(op >= 0 && op < 14);
		if (op >= 0 && op < 16 && !seen[op]++)
			kinds++;
	}
	CHECK(kinds == 14);
	rfb_pipeline_free(p);
}

/* A hand-made advice of two splits. */
static rfb_advice *fake(void)
{
	rfb_advice *a = calloc(1, sizeof *a);

	a->images = 1000;
	a->splits = a->layers = 2;
	a->split = calloc(2, sizeof *a->split);
	a->layer = calloc(2, sizeof *a->layer);
	a->choices = 1e6;
	/* k = 0: everything final */
	a->split[0] = (struct rfb_advise_split){ 2, NULL, NULL, 1e-3, 0, 0,
		4e-3, 0, 1e6, 1e6, 0 };
	/* k = 1: 4 ms partial, 1 ms per use, 100 final choices */
	a->split[1] = (struct rfb_advise_split){ 1, NULL, NULL, 3e-3, 5e-4,
		2e-4, 3e-4, 0, 1.5e5, 100, 0 };
	return a;
}

static void test_predict(void)
{
	rfb_advice *a = fake();
	struct rfb_advise_target steady = { 90, 1, 2, 0, 0, 0 }, whole = { 10, 0, 2, 0, 0, 0 };
	struct rfb_advise_target views = { 90, 1, 2, 3, 0.05, 0 };
	struct rfb_advise_row row[4];
	unsigned char front[4];

	rfb_advise_predict(a, 1, 3, &steady, &row[0]);
	/* (3 + 0.5) / 3 + 0.2 + 0.3 ms per image */
	CHECK(fabs(row[0].img_per_cpu_s - 1 / (3.5e-3 / 3 + 5e-4)) < 1e-6);
	CHECK(fabs(row[0].img_per_s - 2 * row[0].img_per_cpu_s) < 1e-6);
	CHECK(fabs(row[0].cache_bytes - 1.5e8 * 4 / 3) < 1 && row[0].final_layers == 1);
	CHECK(fabs(row[0].unique_fraction -
		   rfb_evict_diversity(1e6, 100, 3, 90) / 90) < 1e-12);
	/* over 10 epochs: 1 + 9/3 = 4 computations per 10 uses */
	rfb_advise_predict(a, 1, 3, &whole, &row[1]);
	CHECK(fabs(row[1].miss_fraction - 0.4) < 1e-12);
	CHECK(fabs(row[1].img_per_cpu_s - 1 / (0.4 * 3.5e-3 + 5e-4)) < 1e-6);
	rfb_advise_predict(a, 0, 1, &steady, &row[2]);
	CHECK(fabs(row[2].img_per_cpu_s - 200) < 1e-9);
	CHECK(row[2].unique_fraction > 0.99);
	rfb_advise_predict(a, 1, 1, &steady, &row[3]);
	/* with r = 1 both splits give every use a fresh augmentation: the
	 * cheaper one (row 3) beats row 2; row 0 is the fastest */
	CHECK(fabs(row[3].unique_fraction - row[2].unique_fraction) < 1e-12);
	row[1] = row[3];
	rfb_advise_pareto(row, 3, front);
	CHECK(front[0] && front[1] && !front[2]);
	/* the most diverse row that sustains the rate */
	CHECK(rfb_advise_recommend(row, 3, 100) == 1);
	CHECK(rfb_advise_recommend(row, 3, 600) == 0);
	CHECK(rfb_advise_recommend(row, 3, 1e9) == -1);
	/* 3 views: the final part and transfer three times, the read once;
	 * collisions 3 x the pair's */
	a->split[1].collision = 0.01;
	rfb_advise_predict(a, 1, 3, &views, &row[0]);
	CHECK(fabs(row[0].img_per_cpu_s - 1 / (3.5e-3 / 3 + 2e-4 + 3 * 3e-4)) < 1e-6);
	CHECK(fabs(row[0].view_collision - 0.03) < 1e-12 && !row[0].ruled_out);
	a->split[1].collision = 0.02;
	rfb_advise_predict(a, 1, 3, &views, &row[0]);
	CHECK(row[0].ruled_out);
	rfb_advise_pareto(row, 3, front);
	CHECK(!front[0]);
	CHECK(rfb_advise_recommend(row, 1, 1) == -1);
	CHECK(row[0].ruled_out == RFB_ADVISE_COLLISIONS);
	rfb_advice_free(a);
}

/* Which layers draw: not a deterministic one, not a gate (its layers
 * are named), not a flip that always runs. */
static void test_layer_draws(void)
{
	rfb_err err = { 0 };
	/* a gate draws when no layer it holds does (apply's p around a
	 * grayscale that always runs); else those layers are named */
	rfb_advice *a = rfb_advise_space("resize=64,rrcrop=48,apply=0.5,grayscale=p=1,"
					 "flip,flip=p=1,colorjitter=0.4,apply=0.5,flip",
					 500, 375, 100, &err);
	static const int want[] = { 0, 1, 1, 0, 1, 0, 1, 0, 1 };

	CHECK(a && a->layers == 9);
	for (int j = 0; a && j < 9; j++)
		CHECKF(a->layer[j].draws == want[j], "layer %d", j);
	rfb_advice_free(a);
}

/* Views made from one record share the draws of its partial part: a
 * split whose partial layer draws is ruled out for it with K > 1 views,
 * after the collisions, unless the target keeps shared draws. */
static void test_shared_draws(void)
{
	rfb_advice *a = fake();
	struct rfb_advise_target views = { 90, 1, 2, 2, 0.05, 0 }, one = { 90, 1, 2, 1, 0.05, 0 };
	struct rfb_advise_row row[2];
	unsigned char front[2];

	a->layer[0].draws = 1; /* the partial layer of split 1 */
	rfb_advise_predict(a, 1, 2, &views, &row[0]);
	CHECK(row[0].ruled_out == RFB_ADVISE_SHARED_DRAWS);
	rfb_advise_predict(a, 0, 2, &views, &row[1]); /* nothing partial */
	CHECK(row[1].ruled_out == RFB_ADVISE_KEPT);
	rfb_advise_pareto(row, 2, front);
	CHECK(!front[0] && front[1]);
	CHECK(rfb_advise_recommend(row, 2, 1) == 1);
	/* one view shares nothing */
	rfb_advise_predict(a, 1, 2, &one, &row[0]);
	CHECK(row[0].ruled_out == RFB_ADVISE_KEPT);
	/* the collisions, when over the limit too, are the reason given */
	a->split[1].collision = 0.5;
	rfb_advise_predict(a, 1, 2, &views, &row[0]);
	CHECK(row[0].ruled_out == RFB_ADVISE_COLLISIONS);
	/* kept on demand; the collision rule still applies */
	views.shared_draws = 1;
	rfb_advise_predict(a, 1, 2, &views, &row[0]);
	CHECK(row[0].ruled_out == RFB_ADVISE_COLLISIONS);
	a->split[1].collision = 0;
	rfb_advise_predict(a, 1, 2, &views, &row[0]);
	CHECK(row[0].ruled_out == RFB_ADVISE_KEPT);
	rfb_advice_free(a);
}

/* Near the rate, a row within the timing noise of it is named: the one
 * another run, its rates 10% higher or lower, would recommend. */
static void test_rival(void)
{
	struct rfb_advise_row row[3] = {
		{ .img_per_s = 1000, .unique_fraction = 0.70 },
		{ .img_per_s = 690, .unique_fraction = 0.83 },
		{ .img_per_s = 200, .unique_fraction = 1.00 },
	};

	CHECK(rfb_advise_recommend(row, 3, 700) == 0);
	/* 690 falls short of 700 by 1.4%: a faster run takes the more diverse row */
	CHECK(rfb_advise_rival(row, 3, 700, 0.1) == 1);
	/* 690 sustains 650 by 6%: a slower run falls back to the faster row */
	CHECK(rfb_advise_recommend(row, 3, 650) == 1);
	CHECK(rfb_advise_rival(row, 3, 650, 0.1) == 0);
	/* far from every row's rate: stable */
	CHECK(rfb_advise_rival(row, 3, 300, 0.1) == -2);
	/* 1000 sustains 950 by 5%, nothing sustains 1045: maybe none */
	CHECK(rfb_advise_rival(row, 3, 950, 0.1) == -1);
	/* a row ruled out is no rival */
	row[1].ruled_out = 1;
	CHECK(rfb_advise_rival(row, 3, 700, 0.1) == -2);
	CHECK(rfb_advise_rival(row, 3, 300, 0) == -2);
}

static double collision_of(const char *spec, int from, int w, int h)
{
	rfb_pipeline *p = NULL;
	rfb_err err = { 0 };
	double c;

	if (rfb_pipeline_parse(spec, &p, &err))
		return -1;
	c = rfb_pipeline_collision(p, from, w, h);
	rfb_pipeline_free(p);
	return c;
}

#define NEAR(x, y) (fabs((x) - (y)) < 1e-12)

static void test_collisions(void)
{
	double c;

	CHECK(NEAR(collision_of("flip", 0, 64, 64), 0.5));
	CHECK(NEAR(collision_of("resize=64,flip,grayscale=p=0.2", 0, 99, 77),
		   0.5 * (0.04 + 0.64)));
	/* the first layers are not counted */
	CHECK(NEAR(collision_of("flip,grayscale=p=0.2", 1, 64, 64), 0.68));
	/* 9 x 9 positions, two flips */
	CHECK(NEAR(collision_of("crop=56,flip", 0, 64, 64), 0.5 / 81));
	/* continuous draws never repeat; a gate that may skip them does */
	CHECK(collision_of("colorjitter=0.4", 0, 64, 64) == 0);
	CHECK(NEAR(collision_of("apply=0.8,colorjitter=0.4,flip", 0, 64, 64),
		   0.04 * 0.5));
	CHECK(NEAR(collision_of("apply=0.5,gaussblur=23,flip", 0, 64, 64),
		   0.25 * 0.5));
	CHECK(collision_of("colorjitter=brightness=0.5-0.5", 0, 64, 64) == 1);
	/* choice: squared weights (1/4, 3/4) times the option's; order:
	 * 1 / K! */
	CHECK(NEAR(collision_of("choice=2:p=1/3,invert,vflip", 0, 64, 64),
		   (1.0 / 16 + 9.0 / 16) * 0.5));
	CHECK(NEAR(collision_of("order=2,invert=p=1,vflip=p=1", 0, 64, 64), 0.5));
	/* RandAugment m=9: Identity and 4 unsigned ops at 1/14, 9 signed
	 * ones at 1/28 per sign */
	c = collision_of("randaug=n=1:m=9", 0, 224, 224);
	CHECKF(NEAR(c, 5 / 196.0 + 18 / 784.0), "%g", c);
	/* m=0: the identity and every signed op at 0 are one outcome, and
	 * posterize keeps 8 bits */
	c = collision_of("randaug=n=1:m=0", 0, 224, 224);
	CHECKF(NEAR(c, (11 / 14.0) * (11 / 14.0) + 3 / 196.0), "%g", c);
	/* rrcrop of 224 over 256: well under one in a million */
	c = collision_of("rrcrop=224,flip", 0, 341, 256);
	CHECKF(c > 0 && c < 1e-6, "%g", c);
	CHECK(collision_of("resize=256,rrcrop=224", 1, 341, 256) == c * 2);
}

/* rrcrop's collision against the boxes rfb_rrcrop_rect draws: a small
 * image, where boxes repeat often. */
static void test_rrcrop_collision(void)
{
	enum { W = 6, H = 5, N = 200000 };
	static unsigned count[W + 1][H + 1][W][H];
	double predicted = collision_of("rrcrop=4:scale=0.2-1", 0, W, H), sum = 0;
	rfb_rng rng;

	rfb_rng_init(&rng, 3, 0, 0, RFB_STAGE_FINAL);
	for (int i = 0; i < N; i++) {
		struct rfb_rect r;
		rfb_rrcrop_rect(&rng, W, H, 0.2, 1, 3.0 / 4, 4.0 / 3, &r);
		count[r.width][r.height][r.left][r.top]++;
	}
	for (int a = 0; a <= W; a++)
		for (int b = 0; b <= H; b++)
			for (int x = 0; x < W; x++)
				for (int y = 0; y < H; y++)
					sum += (double)count[a][b][x][y] / N *
					       count[a][b][x][y] / N;
	CHECKF(fabs(sum - predicted) < 0.05 * predicted, "drawn %g, predicted %g",
	       sum, predicted);
}

static void test_merge(void)
{
	/* the grayscale -0.409 ms and flip 0.877 ms, both within
	 * their noise: one figure; a gate (0 by construction) alone */
	double cost[] = { 5e-3, 0, -0.409e-3, 0.877e-3, 2e-3 };
	double spread[] = { 1e-4, 0, 0.5e-3, 0.5e-3, 1e-4 };
	struct rfb_advise_cost g[5];
	int n = rfb_advise_merge(cost, spread, 1, 5, g);

	CHECK(n == 3);
	CHECK(g[0].first == 1 && g[0].last == 1 && g[0].cost_s == 5e-3);
	CHECK(g[1].first == 2 && g[1].last == 2 && g[1].cost_s == 0);
	/* grayscale, flip and the next layer: -0.409 + 0.877 is within
	 * 2 x sqrt(0.5^2 + 0.5^2) */
	CHECKF(g[2].first == 3 && g[2].last == 5 &&
	       fabs(g[2].cost_s - 2.468e-3) < 1e-12, "%d-%d %g", g[2].first,
	       g[2].last, g[2].cost_s);
	CHECK(fabs(g[2].spread_s - sqrt(0.5e-6 + 1e-8)) < 1e-12);
	/* a last group within noise joins the one before; none is below 0 */
	double c2[] = { 3e-3, -1e-3 }, s2[] = { 1e-4, 2e-3 };
	n = rfb_advise_merge(c2, s2, 0, 2, g);
	CHECK(n == 1 && g[0].first == 0 && g[0].last == 1 &&
	      fabs(g[0].cost_s - 2e-3) < 1e-12);
	/* a saving at the end (a crop's region decode) joins the groups
	 * before until their sum stands out */
	double c4[] = { 2e-3, 0.6e-3, 0.2e-3, -0.5e-3 }, s4[] = { 1e-4, 5e-5, 5e-5, 5e-5 };
	n = rfb_advise_merge(c4, s4, 0, 4, g);
	CHECKF(n == 2 && g[1].first == 1 && g[1].last == 3 &&
	       fabs(g[1].cost_s - 0.3e-3) < 1e-12, "%d %d-%d %g", n, g[1].first,
	       g[1].last, g[1].cost_s);
	double c3[] = { -1e-3 }, s3[] = { 2e-3 };
	n = rfb_advise_merge(c3, s3, 0, 1, g);
	CHECK(n == 1 && g[0].cost_s == 0);
}

int main(void)
{
	RUN(test_merge);
	RUN(test_collisions);
	RUN(test_rrcrop_collision);
	RUN(test_choices);
	RUN(test_ops_drawn);
	RUN(test_predict);
	RUN(test_shared_draws);
	RUN(test_layer_draws);
	RUN(test_rival);
	return test_done();
}
