/*
 * fdlimit.h - the open-file limit (RLIMIT_NOFILE) measured against what
 * a run needs, before its first batch.
 *
 * A program that keeps files open (shards, cache segments) checks at
 * start that the descriptors it needs fit under the limit, raises the
 * soft limit toward the hard one when that helps, and learns how many
 * are left for a cache of open files that can make do with fewer (the
 * shards of rfb_source).  A run that cannot fit stops there, with the
 * limit to set, rather than failing with EMFILE batches later.
 */
#ifndef REFURB_FDLIMIT_H
#define REFURB_FDLIMIT_H

#include <stdint.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_fd_budget {
	uint64_t limit;   /* the soft RLIMIT_NOFILE after the check */
	uint64_t hard;    /* the hard one (UINT64_MAX: unlimited) */
	uint32_t open;    /* descriptors open at the check, below limit */
	uint32_t spare;   /* limit - open - need: left for want */
	int raised;       /* the soft limit was raised toward the hard one */
};

/*
 * Check that need more descriptors fit under the open-file limit, beside
 * those open now (below it); what (e.g. "3 threads and the cache's segments") names
 * them in the message.  When the soft limit is below open + need + want
 * and the hard one allows, the soft one is raised (to at most open + need
 * + want).  Fills b and returns 0, or RFB_ERESOURCE with err saying the
 * limit, the need and the ulimit -n that suffices.  b is filled either way.
 */
int rfb_fd_budget_check(uint32_t need, uint32_t want, const char *what,
			struct rfb_fd_budget *b, rfb_err *err) RFB_MUST_CHECK;

/* The number of descriptors this process has open now whose numbers are
 * below below (the open-file limit bounds numbers, not a count; UINT64_MAX
 * counts them all). */
uint32_t rfb_fd_count_open(uint64_t below);

#ifdef __cplusplus
}
#endif

#endif
