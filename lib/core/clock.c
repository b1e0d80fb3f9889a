/*
 * clock.c - the clocks the stages time themselves with and the progress
 * meter's text (see progress.h).
 */
#include <stdio.h>
#include <time.h>

#include "refurb/progress.h"

static void format_duration(char *buf, size_t n, double seconds)
{
	unsigned long s = seconds < 0 ? 0 : (unsigned long)(seconds + 0.5);

	snprintf(buf, n, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
}

const char *rfb_progress_format(char *buf, size_t n, uint64_t count,
				uint64_t total, double elapsed,
				const char *unit)
{
	double rate = elapsed > 0 ? (double)count / elapsed : 0;
	char eta[32];

	if (total == 0) {
		snprintf(buf, n, "%llu %s  %.0f %s/s", (unsigned long long)count,
			 unit, rate, unit);
		return buf;
	}
	if (rate > 0 && count <= total)
		format_duration(eta, sizeof eta, (double)(total - count) / rate);
	else
		snprintf(eta, sizeof eta, "?");
	snprintf(buf, n, "%llu/%llu %s  %.0f %s/s  ETA %s",
		 (unsigned long long)count, (unsigned long long)total, unit,
		 rate, unit, eta);
	return buf;
}

double rfb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double rfb_thread_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
