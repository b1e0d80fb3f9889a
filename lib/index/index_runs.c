/*
 * index_runs.c - an external merge sort of byte records (see
 * index_runs_internal.h): runs sorted in memory, written one after the
 * other to one unlinked temporary file, merged k-way through a heap of
 * buffered readers, in passes of at most fan_in runs (each pass appends
 * its output to the file and gives the space of its input back).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index_runs_internal.h"
#include "index_spill_internal.h"

#define MIN_BUFFER 4096
#define MAX_BUFFER ((size_t)1 << 20)
#define MAX_FAN_IN 1024
#define NONE SIZE_MAX

struct entry {
	size_t off;       /* into arena */
	size_t len;
};

struct run {
	uint64_t start, end;  /* bytes of the run file */
};

struct rfbi_runs {
	size_t memory;
	rfbi_runs_cmp cmp;
	void *ctx;
	int unique;
	/* the run being gathered */
	unsigned char *arena;
	size_t arena_len, arena_cap;
	struct entry *e;
	size_t n, e_cap;
	/* the runs written */
	struct rfbi_writer w;
	struct run *runs;
	size_t run_count, run_cap, written;
	size_t buffer, fan_in;  /* each reader's buffer; readers at a time */
	/* reading */
	int started;
	size_t next;            /* in memory: the next entry */
	struct rfbi_reader *in; /* merging: a reader per run */
	const unsigned char **cur;
	size_t *cur_n, *heap, heap_n, pending;
	unsigned char *last;    /* unique: the record given last */
	size_t last_n, last_cap;
	int have_last;
};

struct rfbi_runs *rfbi_runs_new(const char *dir, size_t memory,
				rfbi_runs_cmp cmp, void *ctx, int unique,
				rfb_err *err)
{
	struct rfbi_runs *r = calloc(1, sizeof *r);

	if (!r) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	if (rfbi_writer_init(&r->w, dir, err)) {
		free(r);
		return NULL;
	}
	r->memory = memory ? memory : SIZE_MAX;
	r->cmp = cmp;
	r->ctx = ctx;
	r->unique = unique;
	r->buffer = r->memory / 16;
	r->buffer = r->buffer < MIN_BUFFER ? MIN_BUFFER : r->buffer > MAX_BUFFER
		    ? MAX_BUFFER : r->buffer;
	r->fan_in = r->memory / r->buffer;
	r->fan_in = r->fan_in < 2 ? 2 : r->fan_in > MAX_FAN_IN ? MAX_FAN_IN
		    : r->fan_in;
	r->pending = NONE;
	return r;
}

int rfbi_runs_cmp_bytes(const unsigned char *a, size_t an,
			const unsigned char *b, size_t bn, void *ctx)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	(void)ctx;
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static int cmp_entry(const void *a, const void *b, void *ctx)
{
	const struct rfbi_runs *r = ctx;
	const struct entry *x = a, *y = b;

	return r->cmp(r->arena + x->off, x->len, r->arena + y->off, y->len,
		      r->ctx);
}

/* Double *v (of *cap elements of size bytes) to hold need. */
static int reserve(void **v, size_t *cap, size_t need, size_t size,
		   rfb_err *err)
{
	size_t c = *cap ? *cap : 256;
	void *nv;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / size || !(nv = realloc(*v, c * size)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	*v = nv;
	*cap = c;
	return 0;
}

/* Sort the gathered records and write them as the next run. */
static int write_run(struct rfbi_runs *r, rfb_err *err)
{
	uint64_t start = r->w.size;
	int rc = 0;

	if (!r->n)
		return 0;
	qsort_r(r->e, r->n, sizeof *r->e, cmp_entry, r);
	for (size_t i = 0; rc == 0 && i < r->n; i++)
		if (!r->unique || i == 0 || cmp_entry(&r->e[i - 1], &r->e[i], r))
			rc = rfbi_writer_put(&r->w, r->arena + r->e[i].off,
					     r->e[i].len, r->buffer, err);
	if (rc || (rc = rfbi_writer_flush(&r->w, err)) ||
	    (rc = reserve((void **)&r->runs, &r->run_cap, r->run_count + 1,
			  sizeof *r->runs, err)))
		return rc;
	r->runs[r->run_count++] = (struct run){ start, r->w.size };
	r->written++;
	r->n = 0;
	r->arena_len = 0;
	return 0;
}

int rfbi_runs_put(struct rfbi_runs *r, const void *rec, size_t n,
		  rfb_err *err)
{
	size_t used = r->arena_len + (r->n + 1) * sizeof *r->e;
	int rc;

	if (r->started)
		return rfb_err_set(err, RFB_EINVAL, NULL, "sort added to after "
				   "it was read");
	if (r->n && (used > r->memory || r->memory - used < n) &&
	    (rc = write_run(r, err)))
		return rc;
	if ((rc = reserve((void **)&r->arena, &r->arena_cap, r->arena_len + n,
			  1, err)) ||
	    (rc = reserve((void **)&r->e, &r->e_cap, r->n + 1, sizeof *r->e,
			  err)))
		return rc;
	memcpy(r->arena + r->arena_len, rec, n);
	r->e[r->n++] = (struct entry){ r->arena_len, n };
	r->arena_len += n;
	return 0;
}

/* ---- merging ---- */

static int heap_less(const struct rfbi_runs *r, size_t a, size_t b)
{
	return r->cmp(r->cur[a], r->cur_n[a], r->cur[b], r->cur_n[b],
		      r->ctx) < 0;
}

static void sift_down(struct rfbi_runs *r, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;
		if (l < r->heap_n && heap_less(r, r->heap[l], r->heap[m]))
			m = l;
		if (l + 1 < r->heap_n && heap_less(r, r->heap[l + 1], r->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = t;
		i = m;
	}
}

static void merge_close(struct rfbi_runs *r)
{
	for (size_t i = 0; r->in && i < r->fan_in; i++)
		rfbi_reader_free(&r->in[i]);
	r->heap_n = 0;
	r->pending = NONE;
	r->have_last = 0;
}

/* Readers on runs[0..k), each at its first record, in the heap. */
static int merge_open(struct rfbi_runs *r, size_t k, rfb_err *err)
{
	int rc = 0;

	if (!r->in && (!(r->in = calloc(r->fan_in, sizeof *r->in)) ||
		       !(r->cur = calloc(r->fan_in, sizeof *r->cur)) ||
		       !(r->cur_n = calloc(r->fan_in, sizeof *r->cur_n)) ||
		       !(r->heap = calloc(r->fan_in, sizeof *r->heap))))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	for (size_t i = 0; rc == 0 && i < k; i++) {
		if ((rc = rfbi_reader_init(&r->in[i], r->w.fd, r->w.dir,
					   r->runs[i].start,
					   r->runs[i].end, r->buffer, err)))
			break;
		rc = rfbi_reader_next(&r->in[i], &r->cur[i], &r->cur_n[i], err);
		if (rc == 1)
			r->heap[r->heap_n++] = i;
		rc = rc < 0 ? rc : 0;
	}
	for (size_t i = r->heap_n; rc == 0 && i-- > 0;)
		sift_down(r, i);
	return rc;
}

/* The next record of the merge (as rfbi_runs_get). */
static int merge_next(struct rfbi_runs *r, const unsigned char **rec,
		      size_t *n, rfb_err *err)
{
	for (;;) {
		size_t p = r->pending;
		int rc;
		if (p != NONE) {   /* the reader whose record went out last */
			rc = rfbi_reader_next(&r->in[p], &r->cur[p], &r->cur_n[p],
					      err);
			if (rc < 0)
				return rc;
			if (rc == 0)
				r->heap[0] = r->heap[--r->heap_n];
			sift_down(r, 0);
			r->pending = NONE;
		}
		if (!r->heap_n)
			return 0;
		p = r->pending = r->heap[0];
		if (r->unique && r->have_last &&
		    !r->cmp(r->last, r->last_n, r->cur[p], r->cur_n[p], r->ctx))
			continue;
		if (r->unique) {
			if ((rc = reserve((void **)&r->last, &r->last_cap,
					  r->cur_n[p] + 1, 1, err)))
				return rc;
			memcpy(r->last, r->cur[p], r->cur_n[p]);
			r->last_n = r->cur_n[p];
			r->have_last = 1;
		}
		*rec = r->cur[p];
		*n = r->cur_n[p];
		return 1;
	}
}

/* Merge the first fan_in runs into one at the end of the file, and give
 * their space back. */
static int merge_pass(struct rfbi_runs *r, rfb_err *err)
{
	uint64_t start = r->w.size;
	const unsigned char *rec;
	size_t n, k = r->fan_in;
	int rc;

	if ((rc = merge_open(r, k, err)))
		return rc;
	while ((rc = merge_next(r, &rec, &n, err)) == 1)
		if ((rc = rfbi_writer_put(&r->w, rec, n, r->buffer, err)))
			break;
	merge_close(r);
	if (rc < 0 || (rc = rfbi_writer_flush(&r->w, err)))
		return rc;
	(void)fallocate(r->w.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)r->runs[0].start,
			(off_t)(r->runs[k - 1].end - r->runs[0].start));
	memmove(r->runs, r->runs + k, (r->run_count - k) * sizeof *r->runs);
	r->run_count -= k;
	r->runs[r->run_count++] = (struct run){ start, r->w.size };
	return 0;
}

/* The first get: the last run written, passes until one merge of all is
 * left, and that merge opened; or, with no run written, a sort in
 * memory. */
static int start_reading(struct rfbi_runs *r, rfb_err *err)
{
	int rc;

	r->started = 1;
	if (!r->run_count) {
		if (r->n)
			qsort_r(r->e, r->n, sizeof *r->e, cmp_entry, r);
		return 0;
	}
	if ((rc = write_run(r, err)))
		return rc;
	free(r->arena);
	free(r->e);
	r->arena = NULL;
	r->e = NULL;
	r->arena_cap = r->e_cap = 0;
	while (r->run_count > r->fan_in)
		if ((rc = merge_pass(r, err)))
			return rc;
	return merge_open(r, r->run_count, err);
}

int rfbi_runs_get(struct rfbi_runs *r, const unsigned char **rec, size_t *n,
		  rfb_err *err)
{
	int rc;

	if (!r->started && (rc = start_reading(r, err)))
		return rc;
	if (r->run_count)
		return merge_next(r, rec, n, err);
	while (r->next < r->n) {
		const struct entry *x = &r->e[r->next++];
		if (r->unique && r->next > 1 && !cmp_entry(x - 1, x, r))
			continue;
		*rec = r->arena + x->off;
		*n = x->len;
		return 1;
	}
	return 0;
}

size_t rfbi_runs_written(const struct rfbi_runs *r)
{
	return r->written;
}

void rfbi_runs_free(struct rfbi_runs *r)
{
	if (!r)
		return;
	merge_close(r);
	free(r->in);
	free(r->cur);
	free(r->cur_n);
	free(r->heap);
	free(r->last);
	free(r->arena);
	free(r->e);
	free(r->runs);
	rfbi_writer_free(&r->w);
	free(r);
}
