/*
 * stage_internal.h - what refurb-partial's and refurb-final's engines
 * (partial.c, final*.c) share.
 */
#ifndef REFURB_STAGE_INTERNAL_H
#define REFURB_STAGE_INTERNAL_H

#include <stdint.h>

#include "refurb/error.h"
#include "refurb/source.h"

/*
 * Before the first batch: the open-file limit must hold a shard per
 * thread (to decode misses, or to recompute bad records), the cache's
 * segments open at once (one per eviction phase or death epoch: those of
 * r + 1 epochs' records, each with a copy while a checkpoint syncs it) and
 * a few for the libraries; the shard files kept open get half of the rest
 * (refurb(7), RESOURCE LIMITS).  When that keeps fewer shards open than
 * the index has, on_note (NULL accepted) is told once.  Returns 0 or a
 * negative RFB_E* code with err filled (the limit to raise).
 */
int rfbi_stage_fit_fds(rfb_source *src, int threads, uint32_t reuse,
		       void (*on_note)(void *ctx, const rfb_err *note), void *ctx,
		       rfb_err *err) RFB_MUST_CHECK;

#endif
