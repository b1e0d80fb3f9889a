/*
 * index_scan_internal.h - what the two halves of scanning share: the list of
 * candidate files (index_scan.c finds them) and the header reading that turns
 * them into an index (index_probe.c).
 */
#ifndef REFURB_SCAN_INTERNAL_H
#define REFURB_SCAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/scan.h"

struct candidate {
	size_t path_off;  /* into cand_list.text */
	uint32_t label;
};

struct cand_list {
	char *root;           /* absolute or as given; malloc'ed */
	char **classes;       /* class names, label order */
	uint32_t class_count;
	struct candidate *v;
	size_t n, cap;
	char *text;           /* NUL-terminated paths, back to back */
	size_t text_len, text_cap;
};

int cand_add_class(struct cand_list *l, const char *name, rfb_err *err);
int cand_add(struct cand_list *l, const char *path, size_t len,
	     uint32_t label, rfb_err *err);
void cand_free(struct cand_list *l);

static inline const char *cand_path(const struct cand_list *l, size_t i)
{
	return l->text + l->v[i].path_off;
}

/* Read every candidate's header (o->threads threads) and build the index
 * from the good ones, in candidate order. */
int probe_and_build(const struct cand_list *l, const struct rfb_scan_opts *o,
		    rfb_index_builder **out, struct rfb_scan_stats *st,
		    rfb_err *err);

#endif
