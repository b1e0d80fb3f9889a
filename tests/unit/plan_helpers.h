/*
 * plan_helpers.h - what the plan's property tests (test_plan.c,
 * test_plan_even.c) share: random draws in a range, a schedule built
 * from a few parameters, the whole plan stream as refurb-plan writes it,
 * and reading a stream back through the plan reader.
 */
#ifndef REFURB_PLAN_HELPERS_H
#define REFURB_PLAN_HELPERS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/plan.h"
#include "refurb/refurb.h"
#include "refurb/evict.h"
#include "test.h"

static inline uint32_t draw(rfb_rng *g, uint32_t lo, uint32_t hi)
{
	return lo + rfb_rng_below(g, hi - lo + 1);
}

static inline rfb_evict *build(uint32_t total, uint32_t r, uint64_t seed,
			       int policy, uint32_t k, uint32_t shards)
{
	rfb_evict_params p = { 0xfeedULL + total, total, r, seed, policy, k,
			       shards };
	rfb_err err = { 0 };
	rfb_evict *s = rfb_evict_build(&p, &err);

	CHECKF(s != NULL, "%s", err.msg);
	return s;
}

/* A growing NUL-terminated text. */
struct text {
	char *data;
	size_t len, cap;
};

static inline void text_put(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->data = realloc(t->data, t->cap);
		if (!t->data)
			abort();
	}
	memcpy(t->data + t->len, s, n);
	t->len += n;
	t->data[t->len] = '\0';
}

/* The whole plan stream of (s, p, pixels), as refurb-plan writes it. */
static inline struct text plan_text(const rfb_evict *s,
				    const rfb_plan_params *p,
				    const uint32_t *pixels)
{
	struct text t = { 0 };
	rfb_plan *pl = rfb_plan_new(s, p, pixels, NULL);
	char *line = malloc(rfb_plan_batch_text_max(p->batch_size));
	rfb_plan_header h;
	rfb_plan_item it;
	char head[1024];

	rfb_plan_header_of(pl, &h);
	text_put(&t, head, rfb_plan_format_header(head, sizeof head, &h));
	while (rfb_plan_next(pl, &it) > 0) {
		if (it.type == RFB_PLAN_LINE_BATCH)
			text_put(&t, line, rfb_plan_format_batch(line, &it.batch));
		else
			text_put(&t, line, rfb_plan_format_epoch_end(
				line, 64, &it.epoch));
	}
	free(line);
	rfb_plan_free(pl);
	return t;
}

/* Read a whole plan stream from text through the plan reader: 0 or the
 * first error code, with the number of items read in *items. */
static inline int read_all(const char *text, size_t len, rfb_err *err,
			   int *items)
{
	FILE *f = tmpfile();
	rfb_plan_reader *r;
	rfb_plan_item it;
	int rc;

	*items = 0;
	if (len)
		fwrite(text, 1, len, f);
	fflush(f);
	lseek(fileno(f), 0, SEEK_SET);
	r = rfb_plan_reader_open(fileno(f), "p.plan", err);
	if (!r) {
		fclose(f);
		return err->code;
	}
	while ((rc = rfb_plan_reader_next(r, &it, err)) > 0)
		(*items)++;
	rfb_plan_reader_close(r);
	fclose(f);
	return rc;
}

#endif
