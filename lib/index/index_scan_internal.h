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
	uint32_t shard;   /* 1-based shard, or RFB_INDEX_NO_SHARD */
	uint64_t offset, bytes;  /* a shard member's data */
	int code;         /* found bad before probing: its RFB_E* code */
	int whole;        /* why names no member (a damaged shard header) */
	char *why;        /* and the reason (malloc'ed), else NULL */
};

/* A tar shard of the list (index_scan_shards.c). */
struct cand_shard {
	char *path;       /* as stored: relative to root, or absolute */
	char *full;       /* to open */
	uint64_t size;
	int64_t mtime_ns;
};

struct cand_list {
	char *root;           /* absolute or as given; malloc'ed */
	char **classes;       /* class names, label order */
	uint32_t class_count, class_cap;
	struct candidate *v;
	size_t n, cap;
	char *text;           /* NUL-terminated paths, back to back */
	size_t text_len, text_cap;
	struct cand_shard *shards;  /* shard k is shards[k - 1] */
	uint32_t shard_count;
};

int rfbi_cand_add_class(struct cand_list *l, const char *name, rfb_err *err) RFB_MUST_CHECK;
int rfbi_cand_add(struct cand_list *l, const char *path, size_t len,
		  uint32_t label, rfb_err *err) RFB_MUST_CHECK;
void rfbi_cand_free(struct cand_list *l);
/* Room for the most candidates fed at a time (until rfbi_cand_full) of
 * count candidates whose paths take text bytes with their NULs, under a
 * budget of memory bytes (0: none), allocated at once: arrays that
 * double leave the heap holding what they grew from. */
int rfbi_cand_reserve(struct cand_list *l, size_t memory, uint64_t count,
		      uint64_t text, rfb_err *err) RFB_MUST_CHECK;
/* The candidates gathered take half the budget (0: none): feed them. */
static inline int rfbi_cand_full(const struct cand_list *l, size_t memory)
{
	return memory && l->n * sizeof *l->v + l->text_len >= memory / 2;
}
/* Forget the candidates (their memory is kept), not the classes, the
 * shards or the root. */
void rfbi_cand_clear(struct cand_list *l);

/* Mark candidate i bad before probing (reported in order). */
int rfbi_cand_set_bad(struct cand_list *l, size_t i, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The top-level field of the JSON object text: a non-negative integer
 * (*number, *name = NULL) or a non-empty string (*name malloc'ed, *number
 * = -1; \u escapes decoded to UTF-8).  Returns 0; RFBI_JSON_MALFORMED
 * when text is not valid JSON; -1 when it is not an object, has no such
 * field, or the value is neither; a field given twice counts with its
 * last value, as in Python's json (index_json.c). */
#define RFBI_JSON_MALFORMED (-2)
int rfbi_json_field(const char *text, const char *field, long *number,
		    char **name);

static inline const char *cand_path(const struct cand_list *l, size_t i)
{
	return l->text + l->v[i].path_off;
}

/* Read every candidate's header (o->threads threads), in windows of
 * 65536, and add the good ones to an index, in candidate order, reporting
 * the bad ones: begin (the classes and shards of l must all be known;
 * total: the candidates in all, for progress, 0 if unknown), feed the
 * candidates of l as often as l is refilled (rfbi_cand_clear), end (the
 * index, or RFB_ENOTFOUND when no candidate was good).  end and free
 * free the prober (NULL accepted). */
struct rfbi_prober;
int rfbi_probe_begin(const struct cand_list *l, const struct rfb_scan_opts *o,
		     uint64_t total, struct rfb_scan_stats *st,
		     struct rfbi_prober **out, rfb_err *err) RFB_MUST_CHECK;
int rfbi_probe_feed(struct rfbi_prober *p, const struct cand_list *l,
		    rfb_err *err) RFB_MUST_CHECK;
int rfbi_probe_end(struct rfbi_prober *p, const struct cand_list *l,
		   rfb_index_builder **out, rfb_err *err) RFB_MUST_CHECK;
void rfbi_probe_free(struct rfbi_prober *p);
/* The candidates in all, once known (progress shows the count and the
 * time left). */
void rfbi_probe_set_total(struct rfbi_prober *p, uint64_t total);

/* All of it at once (begin, feed, end). */
int rfbi_probe_and_build(const struct cand_list *l, const struct rfb_scan_opts *o,
			 rfb_index_builder **out, struct rfb_scan_stats *st,
			 rfb_err *err) RFB_MUST_CHECK;

#endif
