/*
 * stage_fds.c - the open-file budget of a chain's stage (refurb-partial,
 * refurb-final), checked and shared out before the first batch.
 */
#include <stdio.h>

#include "stage_internal.h"

int rfbi_stage_fit_fds(rfb_source *src, int threads, uint32_t reuse,
		       void (*on_note)(void *ctx, const rfb_err *note), void *ctx,
		       rfb_err *err)
{
	uint32_t n = threads > 0 ? (uint32_t)threads : 1;
	uint32_t need = n + 4 * (reuse + 1) + 8;
	struct rfb_source_fds f;
	rfb_err note = { 0 };
	char what[128];
	int rc;

	snprintf(what, sizeof what, "%u thread%s, the cache's segments and the "
		 "libraries", n, n == 1 ? "" : "s");
	if ((rc = rfb_source_fit_fds(src, need, what, &f, err)))
		return rc;
	if (on_note && rfb_source_fds_note(&f, &note))
		on_note(ctx, &note);
	return 0;
}
