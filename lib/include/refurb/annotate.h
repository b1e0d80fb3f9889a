/*
 * annotate.h - what refurb-partial adds to the plan stream for
 * refurb-final: the address of every sample's cached record, and, in the
 * header line, what the records were made from (refurb-plan(5), "Cache
 * addresses"; refurb-partial(1)).
 *
 * Per sample: "@SEGMENT.OFFSET.LENGTH.WRITE-EPOCH" (hex) for a record, or
 * "@0" for a sample refurb-partial could not produce (its image is
 * unreadable now): consumers leave it out of the batch.  SEGMENT
 * ffffffff (RFB_HANDOVER_SEGMENT, never a cache segment's id): the record
 * is in the handover ring at byte position OFFSET (handover.h).
 *
 * Header keys added: cache= index-file= root= partial= aug-seed= codec=,
 * and handover= when there is one; values percent-encoded (bytes outside
 * '!'..'~' and '%' become %XX).
 *
 * Internal to librefurb (its stages use it; tests too): not installed,
 * not in refurb.h.
 */
#ifndef REFURB_ANNOTATE_H
#define REFURB_ANNOTATE_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/cache.h"
#include "refurb/error.h"
#include "refurb/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_ANNOT_MAX_VALUE 8192

/* What the annotated header says beyond the plan header. */
struct rfb_annot_header {
	char cache[RFB_ANNOT_MAX_VALUE];      /* cache directory, absolute */
	char index_file[RFB_ANNOT_MAX_VALUE]; /* the index, absolute path */
	char root[RFB_ANNOT_MAX_VALUE];       /* dataset root used ("" = index's) */
	char partial[RFB_ANNOT_MAX_VALUE];    /* canonical partial pipeline */
	char codec[64];
	char handover[128];                   /* the ring's path, "" if none */
	uint64_t aug_seed;
	uint64_t max_pixels; /* refurb-partial's pixel cap (--max-pixels):
				an image over it is left out; 0 when the
				annotation does not say (an older writer) */
};

/* Set s's annotation to the record at a written in write_epoch. */
void rfb_annot_set(rfb_plan_sample *s, const struct rfb_cache_addr *a,
		   uint32_t write_epoch);

/* Mark s as left out (its image could not be read). */
void rfb_annot_set_skipped(rfb_plan_sample *s);

/*
 * Read s's annotation: returns 1 and fills *a and *write_epoch for a
 * record in the cache, 2 for a record in the handover ring (a->segment
 * is RFB_HANDOVER_SEGMENT, a->offset its position), 0 for a skipped
 * sample, or RFB_EFORMAT when s has no annotation or one of another
 * shape.
 */
int rfb_annot_get(const rfb_plan_sample *s, struct rfb_cache_addr *a,
		  uint32_t *write_epoch) RFB_MUST_CHECK;

/*
 * Format the annotated header line: the plan header h with a's keys
 * appended, '\n' at the end.  Returns the length needed, like snprintf.
 */
size_t rfb_annot_format_header(char *buf, size_t n, const rfb_plan_header *h,
			       const struct rfb_annot_header *a);

/*
 * Find a's keys in the raw header line (len bytes, no '\n').  Returns 0,
 * or RFB_EFORMAT naming the missing or malformed key (a plan that did not
 * go through refurb-partial has none of them).
 */
int rfb_annot_parse_header(const char *line, size_t len,
			   struct rfb_annot_header *a,
			   rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
