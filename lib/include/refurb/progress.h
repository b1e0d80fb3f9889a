/*
 * progress.h - the progress meter's arithmetic and text, and the clocks
 * the stages time themselves with.
 *
 * The library only formats; the programs decide whether and where to show
 * it (stderr, when it is a terminal or --progress is given).
 */
#ifndef REFURB_PROGRESS_H
#define REFURB_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Format one progress line into buf (size n, always NUL-terminated):
 * "COUNT/TOTAL UNIT  RATE UNIT/s  ETA H:MM:SS" (or "COUNT UNIT  RATE
 * UNIT/s" when total is 0, i.e. unknown).  elapsed is in seconds.
 * Returns buf.
 */
const char *rfb_progress_format(char *buf, size_t n, uint64_t count,
				uint64_t total, double elapsed,
				const char *unit);

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double rfb_now(void);

/* CPU seconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID). */
double rfb_thread_cpu_now(void);

#ifdef __cplusplus
}
#endif

#endif
