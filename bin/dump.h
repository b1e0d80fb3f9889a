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
};

/* Each part returns the program's exit status (0 ok, 1 error). */
int dump_index(struct cli *c, const char *path, const struct dump_opts *o,
	       FILE *out);

#endif
