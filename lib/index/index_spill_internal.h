/*
 * index_spill_internal.h - records that refurb-index keeps on temporary
 * files instead of in memory (index_spill.c): unlinked files in a
 * directory, records appended through a buffer and read back in order,
 * in memory only while they fit a budget.  The sorted kind is
 * index_runs_internal.h.
 */
#ifndef REFURB_SPILL_INTERNAL_H
#define REFURB_SPILL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"

/* A new file in dir, unlinked at once, so that it vanishes however the
 * process ends.  Returns its descriptor, or -1 with err naming dir and
 * the fix. */
int rfbi_temp_open(const char *dir, rfb_err *err);

/* Appending records (a 4-byte length, then the bytes) to a temporary
 * file, made at the first flush. */
struct rfbi_writer {
	char *dir;             /* malloc'ed */
	int fd;                /* -1 until the first flush */
	uint64_t size;         /* bytes in the file */
	unsigned char *buf;
	size_t len, cap;
};

/* Reading the records of bytes [pos, end) of fd, or of buf alone when
 * fd is -1. */
struct rfbi_reader {
	int fd;
	const char *dir;       /* fd's directory, for messages */
	uint64_t pos, end;     /* the file's bytes not yet in buf */
	unsigned char *buf;
	size_t len, at, cap;   /* buf[at..len) not yet read */
	int own;               /* buf is the reader's (freed with it) */
};

int rfbi_writer_init(struct rfbi_writer *w, const char *dir, rfb_err *err) RFB_MUST_CHECK;
/* Append a record; the buffer is written out first when the record would
 * take it past limit bytes. */
int rfbi_writer_put(struct rfbi_writer *w, const void *rec, size_t n,
		    size_t limit, rfb_err *err) RFB_MUST_CHECK;
int rfbi_writer_flush(struct rfbi_writer *w, rfb_err *err) RFB_MUST_CHECK;
void rfbi_writer_free(struct rfbi_writer *w);

/* Read [pos, end) of fd (a temporary file in dir, which must outlive
 * the reader) through a buffer of cap bytes (grown for a larger
 * record). */
int rfbi_reader_init(struct rfbi_reader *r, int fd, const char *dir,
		     uint64_t pos, uint64_t end, size_t cap,
		     rfb_err *err) RFB_MUST_CHECK;
/* The next record: 1 with *rec (valid until the next call) and *n, 0 at
 * the end, or a negative RFB_E* code. */
int rfbi_reader_next(struct rfbi_reader *r, const unsigned char **rec,
		     size_t *n, rfb_err *err) RFB_MUST_CHECK;
void rfbi_reader_free(struct rfbi_reader *r);

/*
 * Records kept in order: in memory up to memory bytes (0: no limit), in
 * blocks that are freed as they are read; past it all of them in a
 * temporary file in dir.  Put all, then rewind and get them back, once.
 */
struct rfbi_spill;
struct rfbi_spill *rfbi_spill_new(const char *dir, size_t memory, rfb_err *err);
int rfbi_spill_put(struct rfbi_spill *s, const void *rec, size_t n,
		   rfb_err *err) RFB_MUST_CHECK;
/* Start reading from the first record (no put after it). */
int rfbi_spill_rewind(struct rfbi_spill *s, rfb_err *err) RFB_MUST_CHECK;
/* As rfbi_reader_next. */
int rfbi_spill_get(struct rfbi_spill *s, const unsigned char **rec, size_t *n,
		   rfb_err *err) RFB_MUST_CHECK;
/* NULL accepted. */
void rfbi_spill_free(struct rfbi_spill *s);

#endif
