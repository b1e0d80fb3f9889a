/*
 * dump_stream.h - refurb-dump on a batch stream (refurb-stream(5)).
 *
 * refurb-dump recognises a stream by its first 7 bytes, "RFBSTRM", and
 * calls dump_stream().  What it prints (always after "# key<TAB>value"
 * lines describing the HEADER):
 *
 *   (default)        one line per frame: frame, offset, type, epoch, step,
 *                    global step, images
 *   -S, --stats      per-epoch table (batches, images, short batches,
 *                    classes seen, images per class min/max, duplicate
 *                    sample ids) and the label histogram (per label: class,
 *                    images, min and max images per complete epoch)
 *   -b, --batch SEL  the batch SEL, "EPOCH:STEP" or a global step: one
 *                    line per image (index, sheet row and column, sample
 *                    id, label, class); reading stops there
 *       --sheet FILE with --batch: also write a contact sheet of the
 *                    batch's images to FILE (JPEG)
 *       --columns N  images per row of the sheet (default: a square grid)
 *       --quality Q  JPEG quality of the sheet, 1-100 (default 90)
 *
 * Options refurb-dump's main() must add for this: -b/--batch,
 * --sheet, --columns, --quality (long-only codes above 0x2000), filled
 * into struct dump_stream_opts; --sheet or --columns without --batch is a
 * usage error that dump_stream() reports itself.
 */
#ifndef REFURB_DUMP_STREAM_H
#define REFURB_DUMP_STREAM_H

#include <stdio.h>

#include "cli.h"
#include "dump.h"

struct dump_stream_opts {
	const char *batch;   /* --batch "E:S" or "G", NULL = none */
	const char *sheet;   /* --sheet FILE, NULL = none */
	int columns;         /* --columns, 0 = automatic */
	int quality;         /* --quality, 0 = 90 */
};

/*
 * Dump the stream at path to out as o (stats) and so (batch, sheet) say.
 * Returns the exit status: 0, or 1 after printing what could be read and
 * a message naming the file (truncated, corrupt, batch not found, sheet
 * not written).  Usage errors exit 2 through cli_usage_error().
 */
int dump_stream(struct cli *c, const char *path, const struct dump_opts *o,
		const struct dump_stream_opts *so, FILE *out);

#endif
