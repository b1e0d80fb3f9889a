/*
 * final_extra.c - the extra text of the stream HEADER refurb-final writes
 * (refurb-stream(5), "Extra text"): the cache it read and, as the plan
 * identity a checkpoint is checked against, everything of the schedule,
 * the plan and the partial stage that changes the batches but has no
 * field of its own in the HEADER.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "final_internal.h"

/* The identity lines of plan header h and annotation a (n bytes of out,
 * may be 0); returns the length needed, like snprintf. */
static size_t identity_lines(char *out, size_t n, const rfb_plan_header *h,
			     const struct rfb_annot_header *a)
{
	char costs[32] = "", cap[48] = "";
	int len;

	if (h->balance == RFB_PLAN_BALANCE_COST) /* 0: an older plan's */
		snprintf(costs, sizeof costs, "costs=%016" PRIx64 "\n",
			 h->cost_identity);
	if (a->max_pixels) /* 0: an older refurb-partial's annotation */
		snprintf(cap, sizeof cap, "partial-max-pixels=%" PRIu64 "\n",
			 a->max_pixels);
	len = snprintf(out, n,
		"schedule=%016" PRIx64 "\nreuse=%u\npolicy=%s\nevict-seed=%"
		PRIu64 "\nshuffle=%s\nbalance=%s\n%sdrop-last=%d\neven=%s\n"
		"partial-seed=%" PRIu64 "\n%s",
		h->schedule_identity, h->reuse, rfb_evict_policy_name(h->policy),
		h->evict_seed, rfb_plan_shuffle_name(h->shuffle),
		rfb_plan_balance_name(h->balance), costs, h->drop_last ? 1 : 0,
		rfb_plan_even_name(h->even), a->aug_seed, cap);
	return len < 0 ? 0 : (size_t)len;
}

char *rfbi_final_stream_extra(const struct final *F)
{
	size_t cache = rfb_stream_text_escape(NULL, 0, F->annot.cache);
	size_t ident = identity_lines(NULL, 0, F->h, &F->annot);
	size_t n = sizeof "cache=\ncodec=\n" + cache + strlen(F->annot.codec) + ident;
	char *out = malloc(n);
	size_t len;

	if (!out)
		return NULL;
	len = (size_t)snprintf(out, n, "cache=");
	len += rfb_stream_text_escape(out + len, n - len, F->annot.cache);
	len += (size_t)snprintf(out + len, n - len, "\ncodec=%s\n", F->annot.codec);
	identity_lines(out + len, n - len, F->h, &F->annot);
	return out;
}
