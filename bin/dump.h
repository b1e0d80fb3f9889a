/*
 * dump.h - the parts of refurb-dump, one per kind of file it reads.
 * refurb-dump.c parses the options and picks the part by the file's magic.
 */
#ifndef REFURB_DUMP_H
#define REFURB_DUMP_H

#include <stdio.h>

#include "cli.h"

struct dump_opts {
	int stats;            /* --stats: a summary instead of the listing */
	const char *output;   /* -o FILE, "-" = stdout */
	const char *index;    /* -i FILE: the index, for the plan's miss
			       * pixels per batch; NULL if not given */
	int verify;           /* --verify: check every checksum */
	long long extract;    /* --extract ID: a cached sample as an image;
			       * -1 if not given */
};

/* s as a TSV field: tab, newline, carriage return and backslash escaped
 * as \t \n \r \\ (refurb-index --list unescapes them). */
void dump_tsv_field(FILE *out, const char *s);

/* Each part returns the program's exit status (0 ok, 1 error). */
int dump_index(struct cli *c, const char *path, const struct dump_opts *o,
	       FILE *out);

/* An eviction schedule (starts with the magic "RFBSCHD" + version byte):
 * TSV "sample_id<TAB>phase", or with --stats the parameters and the phase
 * histogram. */
int dump_evict(struct cli *c, const char *path, const struct dump_opts *o,
		  FILE *out);

/* A plan stream (text, starts with "#refurb-plan "; path "-" = stdin):
 * TSV "epoch<TAB>step<TAB>sample_id<TAB>hit|miss" per sample in plan
 * order, or with --stats the per-epoch table (misses per batch; miss
 * pixels per batch when o->index is set) and the uses per cached record. */
int dump_plan(struct cli *c, const char *path, const struct dump_opts *o,
	      FILE *out);

/* A cache directory (holds "manifest"): the record listing (TSV), with
 * --stats the summary, with --verify every record and checkpoint entry
 * checked (problems listed, status 1), with --extract ID the sample's
 * record as an image on out (PPM/PGM, JPEG if o->output ends in .jpg). */
int dump_cache(struct cli *c, const char *dir, const struct dump_opts *o,
	       FILE *out);
int dump_cache_extract(struct cli *c, const char *dir, uint32_t sample,
		       const struct dump_opts *o, FILE *out);

#endif
