/*
 * bench_plan.c - timings of the schedule and the plan for scripts/bench-plan.
 *
 *   bench_plan [-n N] [-b B] [-r R] [-k RUNS]
 *       median milliseconds (over RUNS runs, default 7, after a warm-up)
 *       of building a schedule of N samples (default 1281167, ImageNet's
 *       training set), of one epoch's order with every shuffle, of one
 *       epoch as plan text, and of parsing that text back.
 *   bench_plan --write-schedule FILE [-n N] [-r R]
 *       write a schedule of N samples (of a made-up index) to FILE, for
 *       the script to time refurb-plan itself.
 *
 * Single-threaded.  Not a test: it prints numbers, it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "refurb/io.h"
#include "refurb/plan.h"
#include "refurb/rng.h"
#include "refurb/evict.h"
#include "bench.h"

#define MAX_RUNS 51

struct args {
	uint32_t n, batch, reuse;
	int runs;
	const char *schedule_out;
};

static rfb_evict *make_schedule(const struct args *a)
{
	rfb_evict_params p = { 0x1281167ULL, a->n, a->reuse, 7,
			       RFB_EVICT_BALANCED, 0, 1 };
	rfb_err err = { 0 };
	rfb_evict *s = rfb_evict_build(&p, &err);

	if (!s) {
		fprintf(stderr, "bench_plan: %s\n", err.msg);
		exit(1);
	}
	return s;
}

static double time_build(const struct args *a)
{
	double t[MAX_RUNS];

	for (int i = -1; i < a->runs; i++) {
		double t0 = bench_now_ms();
		rfb_evict_free(make_schedule(a));
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	return bench_median(t, a->runs);
}

static double time_order(const struct args *a, const rfb_evict *s,
			 int shuffle, const uint32_t *pixels)
{
	rfb_plan_params p = { .batch_size = a->batch, .first_epoch = 1,
			      .last_epoch = 1, .seed = 3, .shuffle = shuffle,
			      .balance = pixels ? RFB_PLAN_BALANCE_PIXELS : 0 };
	rfb_plan *pl = rfb_plan_new(s, &p, pixels, NULL);
	uint32_t *order = malloc((size_t)a->n * sizeof *order);
	double t[MAX_RUNS];

	for (int i = -1; i < a->runs; i++) {
		double t0 = bench_now_ms();
		rfb_plan_epoch_order(pl, 1 + (uint32_t)(i + 1) % a->reuse, order);
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	free(order);
	rfb_plan_free(pl);
	return bench_median(t, a->runs);
}

/* One epoch (epoch 1) as text into f (NULL: formatted and dropped);
 * returns the bytes. */
static size_t epoch_text(const struct args *a, const rfb_evict *s, FILE *f)
{
	rfb_plan_params p = { .batch_size = a->batch, .first_epoch = 1,
			      .last_epoch = 1, .seed = 3,
			      .shuffle = RFB_PLAN_CACHE_AWARE };
	rfb_plan *pl = rfb_plan_new(s, &p, NULL, NULL);
	char *line = malloc(rfb_plan_batch_text_max(a->batch)), head[1024];
	rfb_plan_header h;
	rfb_plan_item it;
	size_t bytes, len;

	rfb_plan_header_of(pl, &h);
	bytes = rfb_plan_format_header(head, sizeof head, &h);
	if (f)
		fputs(head, f);
	while (rfb_plan_next(pl, &it) > 0) {
		len = it.type == RFB_PLAN_LINE_BATCH
			? rfb_plan_format_batch(line, &it.batch)
			: rfb_plan_format_epoch_end(line, 64, &it.epoch);
		bytes += len;
		if (f)
			fwrite(line, 1, len, f);
	}
	free(line);
	rfb_plan_free(pl);
	return bytes;
}

static double time_text(const struct args *a, const rfb_evict *s,
			size_t *bytes)
{
	double t[MAX_RUNS];

	for (int i = -1; i < a->runs; i++) {
		double t0 = bench_now_ms();
		*bytes = epoch_text(a, s, NULL);
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	return bench_median(t, a->runs);
}

static double time_parse(const struct args *a, const rfb_evict *s)
{
	FILE *f = tmpfile();
	double t[MAX_RUNS];
	rfb_err err = { 0 };

	epoch_text(a, s, f);
	fflush(f);
	for (int i = -1; i < a->runs; i++) {
		double t0 = bench_now_ms();
		rfb_plan_reader *r;
		rfb_plan_item it;
		int rc;
		lseek(fileno(f), 0, SEEK_SET);
		if (!(r = rfb_plan_reader_open(fileno(f), "bench", &err)))
			break;
		while ((rc = rfb_plan_reader_next(r, &it, &err)) > 0)
			;
		rfb_plan_reader_close(r);
		if (rc < 0)
			break;
		if (i >= 0)
			t[i] = bench_now_ms() - t0;
	}
	fclose(f);
	if (err.code) {
		fprintf(stderr, "bench_plan: %s\n", err.msg);
		exit(1);
	}
	return bench_median(t, a->runs);
}

static uint32_t *random_pixels(uint32_t n)
{
	uint32_t *px = malloc((size_t)n * sizeof *px);
	rfb_rng g;

	rfb_rng_init(&g, 1, 0, 0, 0);
	for (uint32_t i = 0; i < n; i++) /* 0.05 to 1 Mpx, like ImageNet */
		px[i] = 50000 + rfb_rng_below(&g, 950000);
	return px;
}

static void parse_args(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : "";
		if (strcmp(argv[i], "-n") == 0)
			a->n = (uint32_t)strtoul(v, NULL, 10), i++;
		else if (strcmp(argv[i], "-b") == 0)
			a->batch = (uint32_t)strtoul(v, NULL, 10), i++;
		else if (strcmp(argv[i], "-r") == 0)
			a->reuse = (uint32_t)strtoul(v, NULL, 10), i++;
		else if (strcmp(argv[i], "-k") == 0)
			a->runs = atoi(v), i++;
		else if (strcmp(argv[i], "--write-schedule") == 0)
			a->schedule_out = v, i++;
		else {
			fprintf(stderr, "usage: bench_plan [-n N] [-b B] [-r R] "
				"[-k RUNS] [--write-schedule FILE]\n");
			exit(2);
		}
	}
	if (a->runs < 1 || a->runs > MAX_RUNS || !a->n || !a->batch || !a->reuse) {
		fprintf(stderr, "bench_plan: bad arguments\n");
		exit(2);
	}
}

static int write_schedule(const struct args *a)
{
	rfb_evict *s = make_schedule(a);
	unsigned char *d;
	size_t len;
	rfb_err err = { 0 };

	if (rfb_evict_serialize(s, &d, &len, &err) < 0 ||
	    rfb_file_replace(a->schedule_out, d, len, &err) < 0) {
		fprintf(stderr, "bench_plan: %s\n", err.msg);
		return 1;
	}
	free(d);
	rfb_evict_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = { 1281167, 256, 3, 7, NULL };
	rfb_evict *s;
	uint32_t *px;
	size_t bytes = 0;

	parse_args(argc, argv, &a);
	if (a.schedule_out)
		return write_schedule(&a);
	s = make_schedule(&a);
	px = random_pixels(a.n);
	printf("bench_plan: N=%u batch=%u r=%u, median of %d runs, 1 thread\n",
	       a.n, a.batch, a.reuse, a.runs);
	printf("  %-34s %8.1f ms\n", "schedule build (balanced)", time_build(&a));
	printf("  %-34s %8.1f ms\n", "epoch order, cache-aware",
	       time_order(&a, s, RFB_PLAN_CACHE_AWARE, NULL));
	printf("  %-34s %8.1f ms\n", "epoch order, random",
	       time_order(&a, s, RFB_PLAN_RANDOM, NULL));
	printf("  %-34s %8.1f ms\n", "epoch order, none",
	       time_order(&a, s, RFB_PLAN_SEQUENTIAL, NULL));
	printf("  %-34s %8.1f ms\n", "epoch order, cache-aware + pixels",
	       time_order(&a, s, RFB_PLAN_CACHE_AWARE, px));
	printf("  %-34s %8.1f ms\n", "epoch as plan text (cache-aware)",
	       time_text(&a, s, &bytes));
	printf("  %-34s %8.1f ms  (%.1f MB of text)\n", "parse the epoch's text",
	       time_parse(&a, s), bytes / 1e6);
	free(px);
	rfb_evict_free(s);
	return 0;
}
