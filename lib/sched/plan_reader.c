/*
 * plan_reader.c - reading a plan stream: lines from a file descriptor
 * with a length limit, each parsed by plan_text.c, and the checks that
 * need the whole sequence (see rfb_plan_reader_next in plan.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/format.h"
#include "refurb/plan.h"

#define READ_CHUNK 65536u

struct rfb_plan_reader {
	int fd;
	char *name;
	char *buf;
	size_t cap, start, end;   /* unread bytes are buf[start, end) */
	int eof;
	const char *line;
	size_t line_len;
	uint64_t line_no;
	rfb_plan_header h;
	rfb_plan_sample *samples; /* batch_size */
	uint8_t *seen;            /* a bit per id of the index */
	uint32_t *epoch_ids;      /* ids seen this epoch, to clear seen */
	size_t epoch_ids_cap;     /* grows with the samples read */
	uint32_t epoch, step, epoch_samples, epoch_misses;
	uint32_t per_epoch;       /* m: samples per epoch (--even: n +- 1) */
	uint32_t repeats, repeats_left; /* one pad per epoch may repeat */
	int finished;             /* the last epoch's E line was read */
};

/* err = "NAME: line N: " + the parser's message. */
static int line_error(rfb_plan_reader *r, const rfb_err *why, rfb_err *err)
{
	return rfb_err_set(err, why->code, r->name, "line %" PRIu64 ": %s",
			   r->line_no, why->msg);
}

static int fill_buffer(rfb_plan_reader *r, size_t limit, rfb_err *err)
{
	ssize_t got;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end == r->cap) {
		size_t cap = r->cap * 2 > limit + 1 ? limit + 1 : r->cap * 2;
		char *nb;
		if (r->end > limit)
			return rfb_err_set(err, RFB_ELIMIT, r->name,
					   "line %" PRIu64 " is longer than %zu "
					   "bytes", r->line_no + 1, limit);
		if (!(nb = realloc(r->buf, cap)))
			return rfb_err_set(err, RFB_ENOMEM, r->name,
					   "out of memory");
		r->buf = nb;
		r->cap = cap;
	}
	do
		got = read(r->fd, r->buf + r->end, r->cap - r->end);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return rfb_err_sys(err, errno, r->name, "read");
	if (got == 0)
		r->eof = 1;
	r->end += (size_t)got;
	return 0;
}

/* Next line into r->line (without '\n').  Returns 1, 0 at the end of the
 * stream, or a negative code. */
static int next_line(rfb_plan_reader *r, size_t limit, rfb_err *err)
{
	size_t scanned = 0;
	int rc;

	for (;;) {
		char *nl = memchr(r->buf + r->start + scanned, '\n',
				  r->end - r->start - scanned);
		if (nl) {
			r->line = r->buf + r->start;
			r->line_len = (size_t)(nl - r->line);
			r->start += r->line_len + 1;
			r->line_no++;
			if (r->line_len > limit)
				return rfb_err_set(err, RFB_ELIMIT, r->name,
						   "line %" PRIu64 " is longer "
						   "than %zu bytes", r->line_no,
						   limit);
			return 1;
		}
		if (r->eof && r->start == r->end)
			return 0;
		if (r->eof)
			return rfb_err_set(err, RFB_ETRUNC, r->name,
					   "line %" PRIu64 " has no newline "
					   "(truncated stream)", r->line_no + 1);
		scanned = r->end - r->start;
		if ((rc = fill_buffer(r, limit, err)) < 0)
			return rc;
	}
}

static int read_header(rfb_plan_reader *r, rfb_err *err)
{
	rfb_err why = { 0 };
	int rc = next_line(r, RFB_PLAN_MAX_HEADER, &why);

	if (rc == 0)
		return rfb_err_set(err, RFB_ETRUNC, r->name,
				   "empty (no plan header line)");
	if (rc == RFB_ETRUNC && (r->end < sizeof RFB_PLAN_TAG - 1 ||
				 memcmp(r->buf, RFB_PLAN_TAG,
					sizeof RFB_PLAN_TAG - 1) != 0))
		rc = RFB_ELIMIT; /* a binary file, most likely */
	if (rc == RFB_ELIMIT)
		return rfb_err_set(err, RFB_EFORMAT, r->name,
				   "not a refurb plan (no header line)");
	if (rc < 0) {
		if (err)
			*err = why;
		return rc;
	}
	if (rfb_plan_parse_header(r->line, r->line_len, &r->h, &why) < 0)
		return line_error(r, &why, err);
	r->epoch = r->h.first_epoch;
	r->step = r->h.first_step;
	r->per_epoch = rfb_plan_epoch_samples(&r->h);
	r->repeats = r->per_epoch > r->h.samples ? r->per_epoch - r->h.samples
						  : 0;
	r->repeats_left = r->repeats;
	return 0;
}

/*
 * What the header alone makes the reader allocate: the batch (at most
 * RFB_PLAN_MAX_BATCH samples) and the bitmap of ids (at most 512 MiB of
 * zero pages that only the ids read bring into memory).  The list of the
 * epoch's ids is not sized by the header's n, which may be 4 billion
 * (16 GiB) in a header of 300 bytes: it grows with the samples read
 * (epoch_ids_reserve).
 */
static int alloc_state(rfb_plan_reader *r)
{
	const rfb_plan_header *h = &r->h;

	r->samples = malloc((size_t)h->batch_size * sizeof *r->samples);
	r->seen = calloc((size_t)h->total / 8 + 1, 1);
	return r->samples && r->seen ? 0 : -1;
}

/* Room for count more ids in epoch_ids (never more than the header's n,
 * which the sequence checks enforce). */
static int epoch_ids_reserve(rfb_plan_reader *r, uint32_t count)
{
	size_t need = (size_t)r->epoch_samples + count, cap = r->epoch_ids_cap;
	uint32_t *ids;

	if (need <= cap)
		return 0;
	cap = cap ? cap * 2 : 1024;
	if (cap < need)
		cap = need;
	if (cap > r->per_epoch)
		cap = r->per_epoch > need ? r->per_epoch : need;
	if (!(ids = realloc(r->epoch_ids, cap * sizeof *ids)))
		return -1;
	r->epoch_ids = ids;
	r->epoch_ids_cap = cap;
	return 0;
}

rfb_plan_reader *rfb_plan_reader_open(int fd, const char *name, rfb_err *err)
{
	rfb_plan_reader *r = calloc(1, sizeof *r);

	if (!r || !(r->name = strdup(name ? name : "(plan)")) ||
	    !(r->buf = malloc(READ_CHUNK))) {
		rfb_plan_reader_close(r);
		rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
		return NULL;
	}
	r->fd = fd;
	r->cap = READ_CHUNK;
	if (read_header(r, err) < 0)
		goto fail;
	if (alloc_state(r) < 0) {
		rfb_err_set(err, RFB_ENOMEM, r->name, "out of memory");
		goto fail;
	}
	return r;
fail:
	rfb_plan_reader_close(r);
	return NULL;
}

void rfb_plan_reader_close(rfb_plan_reader *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->buf);
	free(r->samples);
	free(r->seen);
	free(r->epoch_ids);
	free(r);
}

const rfb_plan_header *rfb_plan_reader_header(const rfb_plan_reader *r)
{
	return &r->h;
}

const char *rfb_plan_reader_line(const rfb_plan_reader *r, size_t *len)
{
	if (len)
		*len = r->line_len;
	return r->line;
}

uint64_t rfb_plan_reader_line_number(const rfb_plan_reader *r)
{
	return r->line_no;
}

/* ---- sequence checks ---- */

static uint32_t expected_size(const rfb_plan_reader *r, uint32_t step)
{
	const rfb_plan_header *h = &r->h;

	return step + 1 < h->batches ? h->batch_size
				     : r->per_epoch - (h->batches - 1) * h->batch_size;
}

static int check_batch_place(rfb_plan_reader *r, const rfb_plan_batch *b,
			     rfb_err *why)
{
	const rfb_plan_header *h = &r->h;
	uint32_t size;
	int dropped;

	if (r->step >= h->batches)
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "more than %u batches in epoch %u",
				   h->batches, r->epoch);
	if (b->epoch != r->epoch || b->step != r->step)
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "batch %u of epoch %u, expected batch %u of "
				   "epoch %u", b->step, b->epoch, r->step,
				   r->epoch);
	size = expected_size(r, r->step);
	dropped = h->drop_last && size < h->batch_size;
	if (b->global_step != (uint64_t)b->epoch * h->batches + b->step)
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "global step %" PRIu64 ", expected %" PRIu64,
				   b->global_step,
				   (uint64_t)b->epoch * h->batches + b->step);
	if (b->count != size)
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "batch of %u samples, expected %u",
				   b->count, size);
	if (b->dropped != dropped)
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   dropped ? "the incomplete last batch must be "
					     "a D line with drop-last=1"
					   : "a D line, but only the incomplete "
					     "last batch with drop-last=1 is");
	return 0;
}

/* A miss's death follows from the header (refurb-plan(5)); epoch 0 is all
 * misses and, with refcount, so is every epoch that is a multiple of r. */
static int check_mark(const rfb_plan_header *h, uint32_t epoch,
		      const rfb_plan_sample *s, rfb_err *why)
{
	uint64_t r = h->reuse;
	int must_miss = epoch == 0 ||
		(h->policy == RFB_EVICT_REFCOUNT && epoch % r == 0);
	int must_hit = h->policy == RFB_EVICT_REFCOUNT && epoch % r != 0;

	if ((must_miss && !s->miss) || (must_hit && s->miss))
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "sample %u is a %s, impossible in epoch %u "
				   "with policy=%s reuse=%u", s->id,
				   s->miss ? "miss" : "hit", epoch,
				   rfb_evict_policy_name(h->policy), h->reuse);
	if (s->miss && (epoch == 0 ? s->death > r
				   : s->death != epoch + r))
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "sample %u of epoch %u dies in epoch %" PRIu64
				   ", impossible with reuse=%u", s->id, epoch,
				   s->death, h->reuse);
	return 0;
}

static int check_samples(rfb_plan_reader *r, const rfb_plan_batch *b,
			 rfb_err *why)
{
	if (epoch_ids_reserve(r, b->count) < 0)
		return rfb_err_set(why, RFB_ENOMEM, NULL, "out of memory");
	for (uint32_t i = 0; i < b->count; i++) {
		const rfb_plan_sample *s = &b->samples[i];
		int rc;

		if (s->id >= r->h.total)
			return rfb_err_set(why, RFB_EFORMAT, NULL,
					   "sample id %u, the index has %u",
					   s->id, r->h.total);
		if ((r->seen[s->id / 8] & 1u << s->id % 8) &&
		    r->repeats_left == 0)
			return rfb_err_set(why, RFB_EFORMAT, NULL,
					   r->repeats ? "sample %u is the second "
					   "repeat in epoch %u (even=pad repeats "
					   "one sample)" : "sample %u appears "
					   "twice in epoch %u", s->id, b->epoch);
		if (r->seen[s->id / 8] & 1u << s->id % 8)
			r->repeats_left--;
		if ((rc = check_mark(&r->h, b->epoch, s, why)))
			return rc;
		r->seen[s->id / 8] |= (uint8_t)(1u << s->id % 8);
		r->epoch_ids[r->epoch_samples++] = s->id;
		r->epoch_misses += s->miss;
	}
	r->step++;
	return 0;
}

static int check_epoch_end(rfb_plan_reader *r, const rfb_plan_epoch_end *e,
			   rfb_err *why)
{
	const rfb_plan_header *h = &r->h;
	uint32_t lo = h->samples / h->reuse, hi = lo + (h->samples % h->reuse != 0);

	/* --even: the pad may be one more miss, the dropped one fewer */
	if (r->per_epoch > h->samples)
		hi++;
	if (r->per_epoch < h->samples && lo > 0)
		lo--;
	if (e->epoch != r->epoch || r->step != h->batches)
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "end of epoch %u after %u batches, expected "
				   "batch %u of epoch %u", e->epoch, r->step,
				   r->step, r->epoch);
	/* a resumed first epoch lacks the batches before its first step:
	 * its summary (the whole epoch's) is at least what was read */
	int resumed = e->epoch == h->first_epoch && h->first_step > 0;
	if (e->batches != h->batches ||
	    (resumed ? e->samples < r->epoch_samples || e->misses < r->epoch_misses
		     : e->samples != r->epoch_samples ||
		       e->misses != r->epoch_misses))
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "epoch summary says %u batches, %u samples, "
				   "%u misses; the batches had %u, %u, %u",
				   e->batches, e->samples, e->misses,
				   h->batches, r->epoch_samples,
				   r->epoch_misses);
	if (h->policy == RFB_EVICT_BALANCED && e->epoch > 0 &&
	    (e->misses < lo || e->misses > hi))
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "%u misses in epoch %u, balanced eviction "
				   "gives %u or %u", e->misses, e->epoch, lo, hi);
	for (uint32_t i = 0; i < r->epoch_samples; i++)
		r->seen[r->epoch_ids[i] / 8] = 0;
	r->epoch_samples = r->epoch_misses = 0;
	r->repeats_left = r->repeats;
	r->step = 0;
	if (r->epoch == h->last_epoch)
		r->finished = 1;
	else
		r->epoch++;
	return 0;
}

static int next_item(rfb_plan_reader *r, int type, rfb_plan_item *item,
		     rfb_err *why)
{
	rfb_plan_batch *b = &item->batch;
	int rc;

	if (r->finished)
		return rfb_err_set(why, RFB_EFORMAT, NULL,
				   "more after the last epoch (%u)",
				   r->h.last_epoch);
	item->type = type;
	if (type == RFB_PLAN_LINE_EPOCH) {
		if ((rc = rfb_plan_parse_epoch_end(r->line, r->line_len,
						   &item->epoch, why)))
			return rc;
		return check_epoch_end(r, &item->epoch, why);
	}
	b->samples = r->samples;
	if ((rc = rfb_plan_parse_batch(r->line, r->line_len, b,
				       r->h.batch_size, why)) ||
	    (rc = check_batch_place(r, b, why)))
		return rc;
	return check_samples(r, b, why);
}

int rfb_plan_reader_next(rfb_plan_reader *r, rfb_plan_item *item,
			 rfb_err *err)
{
	rfb_err why = { 0 };
	int rc, type;

	for (;;) {
		if ((rc = next_line(r, RFB_PLAN_MAX_LINE, err)) < 0)
			return rc;
		if (rc == 0 && r->finished)
			return 0;
		if (rc == 0)
			return rfb_err_set(err, RFB_ETRUNC, r->name,
					   "ends in epoch %u, batch %u (the "
					   "header promises epochs %u-%u)",
					   r->epoch, r->step, r->h.first_epoch,
					   r->h.last_epoch);
		type = rfb_plan_line_type(r->line, r->line_len);
		if (type == RFB_PLAN_LINE_COMMENT)
			continue;
		if (type == RFB_PLAN_LINE_BATCH || type == RFB_PLAN_LINE_EPOCH)
			break;
		rfb_err_set(&why, RFB_EFORMAT, NULL, type ? "a second header"
			    : "unknown line type (expected B, D, E or #)");
		return line_error(r, &why, err);
	}
	if (next_item(r, type, item, &why) < 0)
		return line_error(r, &why, err);
	return type;
}
