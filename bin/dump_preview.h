/*
 * dump_preview.h - refurb-dump --preview: a contact sheet of a pipeline's
 * augmentations of some images.  refurb-dump's main hands the whole
 * command line over when it contains --preview (or -P).
 */
#ifndef REFURB_DUMP_PREVIEW_H
#define REFURB_DUMP_PREVIEW_H

#include "cli.h"

/*
 * Parse argc/argv (as main received them; getopt restarts at argv[1])
 * with the options of bin/dump_preview.txt, write the sheet and return
 * the exit status (0).  Errors exit like every refurb program: 2 for
 * usage errors and bad pipeline specs, 1 for unreadable images or
 * output.  c is refurb-dump's cli (prog name, -q, -j ...); its usage and
 * help are replaced by the preview's.
 */
int dump_preview(struct cli *c, int argc, char **argv);

#endif
