/*
 * index_spill.c - temporary files of records for refurb-index (see
 * index_spill_internal.h): the unlinked file, a buffered writer of
 * length-prefixed records, a buffered reader of a byte range of them, and
 * the spill (records in order, in memory until a budget is full).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/io.h"
#include "index_internal.h"
#include "index_spill_internal.h"

#define FRAME RFBI_SPILL_FRAME   /* the length before each record */

int rfbi_temp_open(const char *dir, rfb_err *err)
{
	size_t n = strlen(dir) + 32;
	char *name = malloc(n);
	int fd;

	if (!name) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return -1;
	}
	snprintf(name, n, "%s/.refurb-index.XXXXXX", dir);
	fd = mkostemp(name, O_CLOEXEC);
	if (fd < 0)
		rfb_err_sys(err, errno, dir, "cannot create a temporary file "
			    "(write the index to a writable directory, or for "
			    "-o - set TMPDIR to one)");
	else
		unlink(name);
	free(name);
	return fd;
}

/* ---- writer ---- */

int rfbi_writer_init(struct rfbi_writer *w, const char *dir, rfb_err *err)
{
	memset(w, 0, sizeof *w);
	w->fd = -1;
	if (!(w->dir = strdup(dir ? dir : "/tmp")))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	return 0;
}

int rfbi_writer_flush(struct rfbi_writer *w, rfb_err *err)
{
	if (!w->len)
		return 0;
	if (w->fd < 0 && (w->fd = rfbi_temp_open(w->dir, err)) < 0)
		return err->code;
	if (rfb_write_full(w->fd, w->buf, w->len) < 0)
		return rfb_err_sys(err, errno, w->dir, "cannot write a temporary "
				   "file of candidates (free space there, write "
				   "the index elsewhere, or raise -M)");
	w->size += w->len;
	w->len = 0;
	return 0;
}

/* Room for need bytes in buf, doubling it, but to no more than most
 * (or need). */
static int grow(unsigned char **buf, size_t *cap, size_t need, size_t most,
		rfb_err *err)
{
	size_t c = *cap ? *cap : 4096;
	unsigned char *nb;

	if (need <= *cap)
		return 0;
	while (c < need)
		c = c > SIZE_MAX / 2 ? need : c * 2;
	if (c > most)
		c = most > need ? most : need;
	if (!(nb = realloc(*buf, c)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	*buf = nb;
	*cap = c;
	return 0;
}

int rfbi_writer_put(struct rfbi_writer *w, const void *rec, size_t n,
		    size_t limit, rfb_err *err)
{
	int rc;

	if (n > UINT32_MAX - FRAME)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "record too large");
	if (w->len && (limit < FRAME + n || w->len > limit - FRAME - n) &&
	    (rc = rfbi_writer_flush(w, err)))
		return rc;
	if ((rc = grow(&w->buf, &w->cap, w->len + FRAME + n, limit, err)))
		return rc;
	rfbi_spill_frame_encode(w->buf + w->len, (uint32_t)n);
	if (n)
		memcpy(w->buf + w->len + FRAME, rec, n);
	w->len += FRAME + n;
	return 0;
}

void rfbi_writer_free(struct rfbi_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->buf);
	free(w->dir);
	memset(w, 0, sizeof *w);
	w->fd = -1;
}

/* ---- reader ---- */

int rfbi_reader_init(struct rfbi_reader *r, int fd, const char *dir,
		     uint64_t pos, uint64_t end, size_t cap, rfb_err *err)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->dir = dir;
	r->pos = pos;
	r->end = end;
	r->own = 1;
	return grow(&r->buf, &r->cap, cap < 64 ? 64 : cap, SIZE_MAX, err);
}

/* At least need bytes at buf + at, unless the range ends first. */
static int fill(struct rfbi_reader *r, size_t need, rfb_err *err)
{
	size_t want;
	ssize_t got;
	int rc;

	if (r->len - r->at >= need || r->pos >= r->end)
		return 0;
	memmove(r->buf, r->buf + r->at, r->len - r->at);
	r->len -= r->at;
	r->at = 0;
	if ((rc = grow(&r->buf, &r->cap, need, SIZE_MAX, err)))
		return rc;
	want = r->cap - r->len;
	if (want > r->end - r->pos)
		want = (size_t)(r->end - r->pos);
	got = rfb_pread_full(r->fd, r->buf + r->len, want, (off_t)r->pos);
	if (got < 0 || (size_t)got != want)
		return rfb_err_sys(err, got < 0 ? errno : EIO, r->dir, "cannot "
				   "read back a temporary file of candidates");
	r->len += want;
	r->pos += want;
	return 0;
}

int rfbi_reader_next(struct rfbi_reader *r, const unsigned char **rec,
		     size_t *n, rfb_err *err)
{
	int rc;

	if ((rc = fill(r, FRAME, err)))
		return rc;
	if (r->len == r->at)
		return 0;
	if (r->len - r->at < FRAME)
		goto torn;
	*n = rfbi_spill_frame_decode(r->buf + r->at);
	if ((rc = fill(r, FRAME + *n, err)))
		return rc;
	if (r->len - r->at < FRAME + *n)
		goto torn;
	*rec = r->buf + r->at + FRAME;
	r->at += FRAME + *n;
	return 1;
torn:
	return rfb_err_set(err, RFB_EIO, r->dir, "a temporary file of "
			   "candidates ends inside a record (was it truncated?)");
}

void rfbi_reader_free(struct rfbi_reader *r)
{
	if (r->own)
		free(r->buf);
	memset(r, 0, sizeof *r);
}

/* ---- spill ---- */

#define BLOCK ((size_t)1 << 20)

/* Records held in memory: blocks of framed records, unmapped as they
 * are read, so that what the spill holds shrinks as its reader's use
 * grows (mapped, not malloc'ed: freed heap blocks would stay resident). */
struct block {
	struct block *next;
	size_t len, cap, size;   /* size: of the mapping */
	unsigned char data[];
};

struct rfbi_spill {
	struct block *head, *tail;
	size_t held;             /* bytes in the blocks */
	size_t memory;           /* their most */
	struct rfbi_writer w;    /* past it: all of them, then the rest */
	struct rfbi_reader r;
	int reading;
};

struct rfbi_spill *rfbi_spill_new(const char *dir, size_t memory, rfb_err *err)
{
	struct rfbi_spill *s = calloc(1, sizeof *s);

	if (!s) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	if (rfbi_writer_init(&s->w, dir, err)) {
		free(s);
		return NULL;
	}
	s->memory = memory ? memory : SIZE_MAX;
	return s;
}

/* Free the first block. */
static void drop_block(struct rfbi_spill *s)
{
	struct block *b = s->head;

	s->head = b->next;
	if (!s->head)
		s->tail = NULL;
	s->held -= b->len;
	munmap(b, b->size);
}

/* The blocks to the file, in order: from now on records go there. */
static int blocks_to_file(struct rfbi_spill *s, rfb_err *err)
{
	int rc = 0;

	while (rc == 0 && s->head) {
		if ((rc = rfbi_writer_flush(&s->w, err)))
			break;
		free(s->w.buf);   /* lend the block to the writer */
		s->w.buf = s->head->data;
		s->w.len = s->head->len;
		rc = rfbi_writer_flush(&s->w, err);
		s->w.buf = NULL;
		s->w.len = 0;
		s->w.cap = 0;
		drop_block(s);
	}
	return rc;
}

static int put_block(struct rfbi_spill *s, const void *rec, size_t n,
		     rfb_err *err)
{
	struct block *b = s->tail;

	if (!b || b->cap - b->len < FRAME + n) {
		size_t most = s->memory < BLOCK ? s->memory : BLOCK;
		size_t cap = FRAME + n > most ? FRAME + n : most;
		size_t size = sizeof *b + cap;
		void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			       MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		b = m;
		b->next = NULL;
		b->len = 0;
		b->cap = cap;
		b->size = size;
		if (s->tail)
			s->tail->next = b;
		else
			s->head = b;
		s->tail = b;
	}
	rfbi_spill_frame_encode(b->data + b->len, (uint32_t)n);
	if (n)
		memcpy(b->data + b->len + FRAME, rec, n);
	b->len += FRAME + n;
	s->held += FRAME + n;
	return 0;
}

int rfbi_spill_put(struct rfbi_spill *s, const void *rec, size_t n,
		   rfb_err *err)
{
	size_t limit = s->memory < BLOCK ? s->memory : BLOCK;
	int rc;

	if (s->reading)
		return rfb_err_set(err, RFB_EINVAL, NULL, "spill written after "
				   "it was read");
	if (n > UINT32_MAX - FRAME)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "record too large");
	if (s->w.fd < 0 && !s->w.len && s->held <= s->memory &&
	    FRAME + n <= s->memory - s->held)
		return put_block(s, rec, n, err);
	if ((rc = blocks_to_file(s, err)))
		return rc;
	return rfbi_writer_put(&s->w, rec, n, limit, err);
}

int rfbi_spill_rewind(struct rfbi_spill *s, rfb_err *err)
{
	size_t cap = s->memory < BLOCK ? s->memory : BLOCK;
	int rc;

	if (s->reading)
		return rfb_err_set(err, RFB_EINVAL, NULL, "spill read twice");
	s->reading = 1;
	if (!s->w.len && s->w.fd < 0)
		return 0;    /* all in the blocks */
	if ((rc = rfbi_writer_flush(&s->w, err)))
		return rc;
	free(s->w.buf);  /* the reader's buffer takes its place */
	s->w.buf = NULL;
	s->w.cap = 0;
	return rfbi_reader_init(&s->r, s->w.fd, s->w.dir, 0, s->w.size, cap,
				err);
}

int rfbi_spill_get(struct rfbi_spill *s, const unsigned char **rec, size_t *n,
		   rfb_err *err)
{
	int rc;

	if (!s->reading)
		return rfb_err_set(err, RFB_EINVAL, NULL, "spill read before it "
				   "was rewound");
	if (s->w.fd >= 0)
		return rfbi_reader_next(&s->r, rec, n, err);
	for (;;) {
		if ((rc = rfbi_reader_next(&s->r, rec, n, err)))
			return rc;
		if (s->r.buf && s->head)   /* the block just read */
			drop_block(s);
		s->r.buf = NULL;
		if (!s->head)
			return 0;
		s->r.fd = -1;
		s->r.buf = s->head->data;
		s->r.len = s->head->len;
		s->r.at = 0;
		s->r.cap = s->head->cap;
	}
}

void rfbi_spill_free(struct rfbi_spill *s)
{
	if (!s)
		return;
	while (s->head)
		drop_block(s);
	rfbi_reader_free(&s->r);
	rfbi_writer_free(&s->w);
	free(s);
}
