/*
 * index_runs_internal.h - sorting more records than memory holds, for
 * refurb-index (index_runs.c): records are gathered in runs of at most a
 * budget of bytes, each run sorted and written to a temporary file, and
 * the runs merged on disk (k-way, in passes when there are more runs than
 * the budget has read buffers for), so that memory is bounded by the
 * budget whatever the number of records.  A sort whose records fit the
 * budget makes no file.
 */
#ifndef REFURB_RUNS_INTERNAL_H
#define REFURB_RUNS_INTERNAL_H

#include <stddef.h>

#include "refurb/error.h"

/* The order: negative, 0 or positive as a sorts before, with or after b. */
typedef int (*rfbi_runs_cmp)(const unsigned char *a, size_t an,
			     const unsigned char *b, size_t bn, void *ctx);

/* Byte strings in strcmp's order (a shorter prefix first), as
 * ImageFolder sorts class names. */
int rfbi_runs_cmp_bytes(const unsigned char *a, size_t an,
			const unsigned char *b, size_t bn, void *ctx);

struct rfbi_runs;

/* A sort by cmp (with ctx) in memory bytes (0: no limit, never a file),
 * its files in dir (NULL: /tmp); unique: of records that compare equal
 * only the first is kept.  NULL on error. */
struct rfbi_runs *rfbi_runs_new(const char *dir, size_t memory,
				rfbi_runs_cmp cmp, void *ctx, int unique,
				rfb_err *err);

/* Add a record (copied). */
int rfbi_runs_put(struct rfbi_runs *r, const void *rec, size_t n,
		  rfb_err *err) RFB_MUST_CHECK;

/* The records in order, once: 1 with *rec (valid until the next call)
 * and *n, 0 after the last, or a negative RFB_E* code.  No put after the
 * first get. */
int rfbi_runs_get(struct rfbi_runs *r, const unsigned char **rec, size_t *n,
		  rfb_err *err) RFB_MUST_CHECK;

/* The runs written to the file so far (for tests). */
size_t rfbi_runs_written(const struct rfbi_runs *r);

/* NULL accepted. */
void rfbi_runs_free(struct rfbi_runs *r);

#endif
