/*
 * index_shards_internal.h - what the two halves of indexing tar shards
 * share: index_scan_shards.c finds each shard's candidates and their labels
 * as found; index_shard_samples.c keeps them on temporary files and, once
 * every shard is scanned, finds the keys seen in an earlier shard, makes
 * the class table and the labels, and feeds the candidates to the prober,
 * all in memory bounded by the budget.
 */
#ifndef REFURB_SHARDS_INTERNAL_H
#define REFURB_SHARDS_INTERNAL_H

#include <string.h>

#include "index_scan_internal.h"

/* A label before classes are known: a number or a name. */
struct raw_label {
	long number;        /* >= 0, or -1 for a name */
	char *name;         /* malloc'ed, or NULL */
};

/* WebDataset's split: the key runs to the first dot of the last path
 * component; returns the extension (the rest) or NULL. */
static inline const char *rfbi_shard_key(const char *name, size_t *key_len)
{
	const char *base = strrchr(name, '/');
	const char *dot = strchr(base ? base + 1 : name, '.');

	if (!dot) {
		*key_len = strlen(name);
		return NULL;
	}
	*key_len = (size_t)(dot - name);
	return dot + 1;
}

/* Keys (not NUL-terminated) in byte order, a shorter prefix first. */
static inline int rfbi_shard_cmp_key(const char *x, size_t xl, const char *y,
				     size_t yl)
{
	int c = memcmp(x, y, xl < yl ? xl : yl);

	if (c)
		return c;
	return xl < yl ? -1 : xl > yl;
}

struct rfbi_samples;

/* Candidates of shards in o->memory (0: no limit), the files in
 * o->temp_dir.  NULL on error. */
struct rfbi_samples *rfbi_samples_new(const struct rfb_scan_opts *o,
				      rfb_err *err);

/* Take the candidates of l (one shard's, in order) and their labels as
 * found, raw[i] for i < raw_count (none for the others): they are
 * written out, l is cleared (its classes and shards kept) and raw
 * emptied (the names freed). */
int rfbi_samples_add(struct rfbi_samples *s, struct cand_list *l,
		     struct raw_label *raw, size_t raw_count,
		     rfb_err *err) RFB_MUST_CHECK;

/* The candidates taken so far. */
uint64_t rfbi_samples_count(const struct rfbi_samples *s);

/* After the last shard: duplicate keys across shards, the class table
 * (into l: --classes, the numbers 0 .. max, or the names sorted), then
 * the index (as rfbi_probe_end), the candidates fed to the prober half
 * the budget at a time.  RFB_ENOTFOUND naming the first shard when no
 * shard had a candidate. */
int rfbi_samples_build(struct rfbi_samples *s, struct cand_list *l,
		       rfb_index_builder **out, struct rfb_scan_stats *st,
		       rfb_err *err) RFB_MUST_CHECK;

/* NULL accepted. */
void rfbi_samples_free(struct rfbi_samples *s);

#endif
