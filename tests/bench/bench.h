/*
 * bench.h - what the micro-benchmarks share: a monotonic clock and the
 * median of repeated timings (sorted in place).
 */
#ifndef REFURB_BENCH_H
#define REFURB_BENCH_H

#include <stdlib.h>
#include <time.h>

#include "refurb/progress.h"

static inline double bench_now_us(void)
{
	return rfb_now() * 1e6;
}

static inline double bench_now_ms(void)
{
	return rfb_now() * 1e3;
}

/* Seconds of CPU time of the calling thread: on a machine shared with
 * other jobs it measures what one dedicated core would take, unlike wall
 * time. */
static inline double bench_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sort v[0..n) and return its median (0 for none). */
static inline double bench_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
