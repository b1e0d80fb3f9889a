/*
 * format.h - which refurb file is this: the magics of the four file
 * formats, defined once here (their readers and writers use them), and
 * the test refurb-dump picks a reader with.
 */
#ifndef REFURB_FORMAT_H
#define REFURB_FORMAT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The first bytes of each format; a version follows each binary magic
 * (one byte) and the plan's tag (" VERSION", text).  Layouts in
 * refurb-index(5), refurb-evict(5), refurb-stream(5), refurb-plan(5). */
#define RFB_INDEX_MAGIC "RFBINDX"
#define RFB_EVICT_MAGIC "RFBSCHD"
#define RFB_STREAM_MAGIC "RFBSTRM"
#define RFB_PLAN_TAG "#refurb-plan"

/* Bytes of a file's start that rfb_format_detect needs at most. */
#define RFB_FORMAT_SNIFF 16

enum rfb_format {
	RFB_FORMAT_UNKNOWN,
	RFB_FORMAT_INDEX,     /* refurb-index(5) */
	RFB_FORMAT_EVICT,  /* refurb-evict(5) */
	RFB_FORMAT_PLAN,      /* refurb-plan(5), annotated or not */
	RFB_FORMAT_STREAM,    /* refurb-stream(5) */
};

/* The format of a file that starts with the len bytes at head (fewer
 * than RFB_FORMAT_SNIFF when the file is shorter), by its magic alone:
 * the version and the rest are its reader's to check.  A cache is a
 * directory (refurb-cache(5)), not told from bytes. */
enum rfb_format rfb_format_detect(const void *head, size_t len);

#ifdef __cplusplus
}
#endif

#endif
