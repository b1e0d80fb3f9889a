/*
 * plan_text.c - the plan's line format (refurb-plan(5)): writing the
 * header, batch and epoch lines, and a strict parser for each of them.
 *
 * The parser works on one line in memory, never reads past len, needs no
 * NUL terminator and accepts only the canonical form the writer produces
 * (single spaces, decimal numbers without leading zeros), so that a line
 * that parses is also a line that formats back to the same bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "refurb/format.h"
#include "refurb/plan.h"


/* ---- writing ---- */

/* Decimal digits of v at p; returns the end. */
static char *put_dec(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

size_t rfb_plan_format_header(char *buf, size_t n, const rfb_plan_header *h)
{
	char start[64] = "";
	int len;

	/* only a plan balanced by cost has costs=, only a resumed one
	 * start=: other plans stay as they were */
	if (h->balance == RFB_PLAN_BALANCE_COST && h->cost_identity)
		snprintf(start, sizeof start, " costs=%016" PRIx64,
			 h->cost_identity);
	if (h->first_step > 0)
		snprintf(start + strlen(start), sizeof start - strlen(start),
			 " start=%u", h->first_step);
	len = snprintf(buf, n,
		RFB_PLAN_TAG " %u schedule=%016" PRIx64 " index=%016" PRIx64
		" samples=%u total=%u reuse=%u policy=%s evict-seed=%" PRIu64
		" seed=%" PRIu64 " batch=%u batches=%u epochs=%u-%u shuffle=%s"
		" balance=%s drop-last=%d shard=%u/%u%s\n",
		h->version, h->schedule_identity, h->index_identity,
		h->samples, h->total, h->reuse, rfb_evict_policy_name(h->policy),
		h->evict_seed, h->seed, h->batch_size, h->batches,
		h->first_epoch, h->last_epoch, rfb_plan_shuffle_name(h->shuffle),
		rfb_plan_balance_name(h->balance), h->drop_last ? 1 : 0,
		h->shard_index, h->shard_count, "");
	if (len >= 0 && h->version >= 2) {
		/* version 2: the even= key, before the line's end */
		size_t at = (size_t)len - 1;
		int more = snprintf(at < n ? buf + at : NULL, at < n ? n - at : 0,
				    " even=%s\n", rfb_plan_even_name(h->even));
		len = more < 0 ? -1 : (int)at + more;
	}
	if (len >= 0 && start[0]) {
		/* costs= and start=, before the line's end */
		size_t at = (size_t)len - 1;
		int more = snprintf(at < n ? buf + at : NULL, at < n ? n - at : 0,
				    "%s\n", start);
		len = more < 0 ? -1 : (int)at + more;
	}
	return len < 0 ? 0 : (size_t)len;
}

size_t rfb_plan_batch_text_max(uint32_t count)
{
	return 2 + 4 * 21 + (size_t)count * (RFB_PLAN_MAX_TOKEN + 1) + 1;
}

static char *put_sample(char *p, const rfb_plan_sample *s)
{
	*p++ = ' ';
	p = put_dec(p, s->id);
	*p++ = ':';
	if (s->miss) {
		*p++ = 'm';
		p = put_dec(p, s->death);
	} else {
		*p++ = 'h';
	}
	for (unsigned i = 0; i < s->addr_count && i < RFB_PLAN_MAX_ADDR; i++) {
		*p++ = i ? '.' : '@';
		p = put_hex(p, s->addr[i]);
	}
	return p;
}

size_t rfb_plan_format_batch(char *buf, const rfb_plan_batch *b)
{
	char *p = buf;

	*p++ = b->dropped ? 'D' : 'B';
	*p++ = ' ';
	p = put_dec(p, b->epoch);
	*p++ = ' ';
	p = put_dec(p, b->step);
	*p++ = ' ';
	p = put_dec(p, b->global_step);
	*p++ = ' ';
	p = put_dec(p, b->count);
	for (uint32_t i = 0; i < b->count; i++)
		p = put_sample(p, &b->samples[i]);
	*p++ = '\n';
	return (size_t)(p - buf);
}

size_t rfb_plan_format_epoch_end(char *buf, size_t n,
				 const rfb_plan_epoch_end *e)
{
	int len = snprintf(buf, n, "E %u %u %u %u\n", e->epoch, e->batches,
			   e->samples, e->misses);
	return len < 0 ? 0 : (size_t)len;
}

/* ---- parsing ---- */

struct cursor {
	const char *line, *p, *end;
	rfb_err *err;
};

static int fail(struct cursor *c, int code, const char *what)
{
	size_t col = (size_t)(c->p - c->line) + 1;

	if (c->p >= c->end)
		return rfb_err_set(c->err, code, NULL,
				   "column %zu: line ends, expected %s", col, what);
	return rfb_err_set(c->err, code, NULL,
			   "column %zu: expected %s, found '%c'", col, what,
			   (unsigned char)*c->p >= 0x20 &&
			   (unsigned char)*c->p < 0x7f ? *c->p : '?');
}

static int at_end(const struct cursor *c)
{
	return c->p >= c->end;
}

static int expect(struct cursor *c, char ch, const char *what)
{
	if (at_end(c) || *c->p != ch)
		return fail(c, RFB_EFORMAT, what);
	c->p++;
	return 0;
}

/* Canonical decimal (no sign, no leading zero) in [0, max]. */
static int parse_dec(struct cursor *c, uint64_t max, uint64_t *v,
		     const char *what)
{
	const char *start = c->p;
	uint64_t x = 0;

	while (!at_end(c) && *c->p >= '0' && *c->p <= '9') {
		unsigned d = (unsigned)(*c->p - '0');
		/* d > max first: max - d must not wrap (max = 1 for 0/1) */
		if (d > max || x > (max - d) / 10) {
			c->p = start;
			return fail(c, RFB_EFORMAT, what);
		}
		x = x * 10 + d;
		c->p++;
	}
	if (c->p == start || (*start == '0' && c->p - start > 1)) {
		c->p = start;
		return fail(c, RFB_EFORMAT, what);
	}
	*v = x;
	return 0;
}

static int parse_u32(struct cursor *c, uint32_t max, uint32_t *v,
		     const char *what)
{
	uint64_t x;
	int rc = parse_dec(c, max, &x, what);

	if (rc == 0)
		*v = (uint32_t)x;
	return rc;
}

/* 1 to 16 lowercase hex digits. */
static int parse_hex(struct cursor *c, uint64_t *v, const char *what)
{
	const char *start = c->p;
	uint64_t x = 0;

	while (!at_end(c) && c->p - start < 17) {
		char ch = *c->p;
		unsigned d;
		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else
			break;
		x = x << 4 | d;
		c->p++;
	}
	if (c->p == start || c->p - start > 16) {
		c->p = start;
		return fail(c, RFB_EFORMAT, what);
	}
	*v = x;
	return 0;
}

static int parse_address(struct cursor *c, rfb_plan_sample *s)
{
	int rc;

	s->addr_count = 0;
	if (at_end(c) || *c->p != '@')
		return 0;
	for (;;) {
		const char *start = ++c->p; /* past the '@' or the '.' */
		if (s->addr_count == RFB_PLAN_MAX_ADDR)
			return fail(c, RFB_ELIMIT, "at most 6 address fields");
		if ((rc = parse_hex(c, &s->addr[s->addr_count++],
				    "a hex address field")))
			return rc;
		/* canonical, as the writer puts it: "0", else no leading 0 */
		if (*start == '0' && c->p - start > 1) {
			c->p = start;
			return fail(c, RFB_EFORMAT, "a hex address field without "
				    "leading zeros");
		}
		if (at_end(c) || *c->p != '.')
			return 0;
	}
}

static int parse_sample(struct cursor *c, uint32_t epoch, rfb_plan_sample *s)
{
	int rc;

	if ((rc = parse_u32(c, RFB_EVICT_MAX_SAMPLES, &s->id, "a sample id")) ||
	    (rc = expect(c, ':', "':' after the sample id")))
		return rc;
	if (!at_end(c) && *c->p == 'h') {
		c->p++;
		s->miss = 0;
		s->death = 0;
	} else if (!at_end(c) && *c->p == 'm') {
		c->p++;
		s->miss = 1;
		if ((rc = parse_dec(c, UINT64_MAX, &s->death,
				    "the death epoch after 'm'")))
			return rc;
		if (s->death <= epoch)
			return rfb_err_set(c->err, RFB_EFORMAT, NULL,
					   "column %zu: sample %u dies in epoch "
					   "%" PRIu64 ", not after epoch %u",
					   (size_t)(c->p - c->line), s->id,
					   s->death, epoch);
	} else {
		return fail(c, RFB_EFORMAT, "'h' or 'm' after ':'");
	}
	if ((rc = parse_address(c, s)))
		return rc;
	if (!at_end(c) && *c->p != ' ')
		return fail(c, RFB_EFORMAT, "' ' or the end of the line");
	return 0;
}

int rfb_plan_line_type(const char *line, size_t len)
{
	size_t tag = sizeof RFB_PLAN_TAG - 1;

	if (len >= 1 && line[0] == '#')
		return len > tag && memcmp(line, RFB_PLAN_TAG, tag) == 0 &&
		       line[tag] == ' ' ? RFB_PLAN_LINE_HEADER
					: RFB_PLAN_LINE_COMMENT;
	if (len >= 2 && (line[0] == 'B' || line[0] == 'D') && line[1] == ' ')
		return RFB_PLAN_LINE_BATCH;
	if (len >= 2 && line[0] == 'E' && line[1] == ' ')
		return RFB_PLAN_LINE_EPOCH;
	return 0;
}

static int parse_batch_head(struct cursor *c, rfb_plan_batch *b,
			    uint32_t capacity)
{
	int rc;

	if (rfb_plan_line_type(c->line, (size_t)(c->end - c->line)) !=
	    RFB_PLAN_LINE_BATCH)
		return fail(c, RFB_EFORMAT, "'B ' or 'D ' (a batch line)");
	b->dropped = *c->p == 'D';
	c->p += 2;
	if ((rc = parse_u32(c, UINT32_MAX, &b->epoch, "the epoch")) ||
	    (rc = expect(c, ' ', "' ' after the epoch")) ||
	    (rc = parse_u32(c, UINT32_MAX, &b->step, "the step")) ||
	    (rc = expect(c, ' ', "' ' after the step")) ||
	    (rc = parse_dec(c, UINT64_MAX, &b->global_step, "the global step")) ||
	    (rc = expect(c, ' ', "' ' after the global step")) ||
	    (rc = parse_u32(c, UINT32_MAX, &b->count, "the sample count")))
		return rc;
	if (b->count == 0)
		return rfb_err_set(c->err, RFB_EFORMAT, NULL,
				   "empty batch (count 0)");
	if (b->count > capacity || b->count > RFB_PLAN_MAX_BATCH)
		return rfb_err_set(c->err, RFB_ELIMIT, NULL,
				   "batch of %u samples, the limit is %u",
				   b->count, capacity < RFB_PLAN_MAX_BATCH ?
				   capacity : RFB_PLAN_MAX_BATCH);
	return 0;
}

int rfb_plan_parse_batch(const char *line, size_t len, rfb_plan_batch *b,
			 uint32_t capacity, rfb_err *err)
{
	struct cursor c = { line, line, line + len, err };
	int rc;

	if ((rc = parse_batch_head(&c, b, capacity)))
		return rc;
	for (uint32_t i = 0; i < b->count; i++) {
		if ((rc = expect(&c, ' ', "' ' and a sample")) ||
		    (rc = parse_sample(&c, b->epoch, &b->samples[i])))
			return rc;
	}
	if (!at_end(&c))
		return fail(&c, RFB_EFORMAT, "the end of the line (more "
			    "samples than the count says)");
	return 0;
}

int rfb_plan_parse_epoch_end(const char *line, size_t len,
			     rfb_plan_epoch_end *e, rfb_err *err)
{
	struct cursor c = { line, line, line + len, err };
	int rc;

	if (rfb_plan_line_type(line, len) != RFB_PLAN_LINE_EPOCH)
		return fail(&c, RFB_EFORMAT, "'E ' (an epoch line)");
	c.p += 2;
	if ((rc = parse_u32(&c, UINT32_MAX, &e->epoch, "the epoch")) ||
	    (rc = expect(&c, ' ', "' ' after the epoch")) ||
	    (rc = parse_u32(&c, UINT32_MAX, &e->batches, "the batch count")) ||
	    (rc = expect(&c, ' ', "' ' after the batch count")) ||
	    (rc = parse_u32(&c, UINT32_MAX, &e->samples, "the sample count")) ||
	    (rc = expect(&c, ' ', "' ' after the sample count")) ||
	    (rc = parse_u32(&c, UINT32_MAX, &e->misses, "the miss count")))
		return rc;
	if (!at_end(&c))
		return fail(&c, RFB_EFORMAT, "the end of the line");
	if (e->misses > e->samples)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "%u misses among %u samples", e->misses,
				   e->samples);
	return 0;
}

/* ---- the header line ---- */

enum header_key {
	K_SCHEDULE, K_INDEX, K_SAMPLES, K_TOTAL, K_REUSE, K_POLICY,
	K_EVICT_SEED, K_SEED, K_BATCH, K_BATCHES, K_EPOCHS, K_SHUFFLE,
	K_BALANCE, K_DROP_LAST, K_SHARD, K_EVEN, K_START, K_COSTS, K_COUNT
};

#define K_VERSION2_ONLY (1u << K_EVEN) /* keys version 1 does not have */

static const char *const header_keys[K_COUNT] = {
	"schedule", "index", "samples", "total", "reuse", "policy",
	"evict-seed", "seed", "batch", "batches", "epochs", "shuffle",
	"balance", "drop-last", "shard", "even", "start", "costs",
};

/* A value word (up to the next space) into buf of size n. */
static int parse_word(struct cursor *c, char *buf, size_t n, const char *what)
{
	size_t len = 0;

	while (!at_end(c) && *c->p != ' ') {
		if (len + 1 >= n)
			return fail(c, RFB_EFORMAT, what);
		buf[len++] = *c->p++;
	}
	buf[len] = '\0';
	return 0;
}

static int parse_named(struct cursor *c, int key, rfb_plan_header *h)
{
	char word[32];
	int rc, v;

	if ((rc = parse_word(c, word, sizeof word, "a shorter name")))
		return rc;
	if (key == K_POLICY)
		v = h->policy = rfb_evict_policy_parse(word);
	else if (key == K_SHUFFLE)
		v = h->shuffle = rfb_plan_shuffle_parse(word);
	else if (key == K_EVEN)
		v = h->even = rfb_plan_even_parse(word);
	else
		v = h->balance = rfb_plan_balance_parse(word);
	if (v < 0)
		return rfb_err_set(c->err, RFB_EFORMAT, NULL,
				   "unknown %s '%s'", header_keys[key], word);
	return 0;
}

static int parse_identity(struct cursor *c, uint64_t *v, const char *what)
{
	const char *start = c->p;
	int rc = parse_hex(c, v, what);

	if (rc == 0 && c->p - start != 16) {
		c->p = start;
		return fail(c, RFB_EFORMAT, what);
	}
	return rc;
}

static int parse_value(struct cursor *c, int key, rfb_plan_header *h)
{
	uint32_t drop = 0;
	int rc;

	switch (key) {
	case K_SCHEDULE: return parse_identity(c, &h->schedule_identity,
					       "16 hex digits");
	case K_INDEX: return parse_identity(c, &h->index_identity,
					    "16 hex digits");
	case K_SAMPLES: return parse_u32(c, RFB_EVICT_MAX_SAMPLES, &h->samples,
					 "the sample count");
	case K_TOTAL: return parse_u32(c, RFB_EVICT_MAX_SAMPLES, &h->total,
				       "the index size");
	case K_REUSE: return parse_u32(c, RFB_EVICT_MAX_REUSE, &h->reuse,
				       "the reuse factor");
	case K_EVICT_SEED: return parse_dec(c, UINT64_MAX, &h->evict_seed,
					    "a seed");
	case K_SEED: return parse_dec(c, UINT64_MAX, &h->seed, "a seed");
	case K_BATCH: return parse_u32(c, RFB_PLAN_MAX_BATCH, &h->batch_size,
				       "the batch size");
	case K_BATCHES: return parse_u32(c, UINT32_MAX, &h->batches,
					 "the batch count");
	case K_EPOCHS:
		if ((rc = parse_u32(c, UINT32_MAX, &h->first_epoch, "an epoch")) ||
		    (rc = expect(c, '-', "'-' in the epoch range")))
			return rc;
		return parse_u32(c, UINT32_MAX, &h->last_epoch, "an epoch");
	case K_DROP_LAST:
		rc = parse_u32(c, 1, &drop, "0 or 1");
		h->drop_last = (int)drop;
		return rc;
	case K_SHARD:
		if ((rc = parse_u32(c, UINT32_MAX, &h->shard_index, "a shard")) ||
		    (rc = expect(c, '/', "'/' in the shard")))
			return rc;
		return parse_u32(c, UINT32_MAX, &h->shard_count, "a shard count");
	case K_START:
		return parse_u32(c, UINT32_MAX, &h->first_step, "a step");
	case K_COSTS:
		return parse_identity(c, &h->cost_identity, "16 hex digits");
	}
	return parse_named(c, key, h);
}

/* One "key=value" field; unknown keys are skipped. */
static int parse_field(struct cursor *c, rfb_plan_header *h, unsigned *seen)
{
	const char *key = c->p;
	size_t klen;
	int rc, known = 0;

	while (!at_end(c) && ((*c->p >= 'a' && *c->p <= 'z') ||
			      (*c->p >= '0' && *c->p <= '9') || *c->p == '-'))
		c->p++;
	klen = (size_t)(c->p - key);
	if (klen == 0 || (rc = expect(c, '=', "'=' after a key")) != 0)
		return klen ? rc : fail(c, RFB_EFORMAT, "a key (a-z, 0-9, -)");
	for (int k = 0; k < K_COUNT; k++) {
		if (strlen(header_keys[k]) != klen ||
		    memcmp(header_keys[k], key, klen) != 0)
			continue;
		if (*seen & 1u << k)
			return rfb_err_set(c->err, RFB_EFORMAT, NULL,
					   "key '%s' given twice", header_keys[k]);
		*seen |= 1u << k;
		if ((rc = parse_value(c, k, h)))
			return rc;
		known = 1;
		break;
	}
	while (!known && !at_end(c) && *c->p > ' ' && *c->p < 0x7f)
		c->p++; /* the value of an unknown key */
	if (!at_end(c) && *c->p != ' ')
		return fail(c, RFB_EFORMAT, "' ' or the end of the line");
	return 0;
}

static int check_header(const rfb_plan_header *h, rfb_err *err)
{
	uint64_t batches, m;

	if (h->samples < 1 || h->total < h->samples || h->reuse < 1 ||
	    h->batch_size < 1)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "samples %u, total %u, reuse %u, batch %u: "
				   "all must be >= 1, samples <= total",
				   h->samples, h->total, h->reuse, h->batch_size);
	if (h->shard_count < 1 || h->shard_index >= h->shard_count ||
	    h->shard_count > h->total ||
	    rfb_evict_shard_size(h->total, h->shard_count, h->shard_index) !=
	    h->samples)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "shard %u/%u of %u samples cannot have %u",
				   h->shard_index, h->shard_count, h->total,
				   h->samples);
	/* only now: batch=0 would divide by zero; m needs a valid shard */
	m = rfb_plan_epoch_samples(h);
	batches = (m + h->batch_size - 1) / h->batch_size;
	if (h->batches != batches)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "batches=%u, but %" PRIu64 " samples per "
				   "epoch in batches of %u make %" PRIu64,
				   h->batches, m, h->batch_size, batches);
	if (h->first_epoch > h->last_epoch)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "epoch range %u-%u is reversed",
				   h->first_epoch, h->last_epoch);
	if (h->first_step >= h->batches)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "start=%u, but an epoch has %u batches",
				   h->first_step, h->batches);
	if (h->cost_identity && h->balance != RFB_PLAN_BALANCE_COST)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "costs= in a plan with balance=%s (only "
				   "balance=cost has a cost file)",
				   rfb_plan_balance_name(h->balance));
	if (h->balance != RFB_PLAN_BALANCE_NONE &&
	    h->shuffle != RFB_PLAN_CACHE_AWARE)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "balance=%s needs shuffle=cache-aware",
				   rfb_plan_balance_name(h->balance));
	return 0;
}

int rfb_plan_parse_header(const char *line, size_t len, rfb_plan_header *h,
			  rfb_err *err)
{
	struct cursor c = { line, line, line + len, err };
	unsigned seen = 0;
	int rc;

	memset(h, 0, sizeof *h);
	if (len > RFB_PLAN_MAX_HEADER)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "header line longer than %u bytes",
				   RFB_PLAN_MAX_HEADER);
	if (rfb_plan_line_type(line, len) != RFB_PLAN_LINE_HEADER)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "not a refurb plan (the first line does not "
				   "start with '" RFB_PLAN_TAG " ')");
	c.p += sizeof RFB_PLAN_TAG;
	if ((rc = parse_u32(&c, UINT32_MAX, &h->version, "the format version")))
		return rc;
	if (h->version < 1 || h->version > RFB_PLAN_VERSION)
		return rfb_err_set(err, RFB_EVERSION, NULL,
				   "plan format version %u (this build reads "
				   "versions 1 to %u)", h->version,
				   RFB_PLAN_VERSION);
	while (!at_end(&c)) {
		if ((rc = expect(&c, ' ', "' '")) || (rc = parse_field(&c, h, &seen)))
			return rc;
	}
	if (h->version == 1 && (seen & K_VERSION2_ONLY))
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "key 'even' in a version 1 header (even= "
				   "came with version 2)");
	if (h->version == 1)
		seen |= K_VERSION2_ONLY;
	/* optional: only resumed plans have start=, only plans balanced by
	 * cost have costs= (and older ones not) */
	seen |= 1u << K_START | 1u << K_COSTS;
	for (int k = 0; k < K_COUNT; k++)
		if (!(seen & 1u << k))
			return rfb_err_set(err, RFB_EFORMAT, NULL,
					   "header lacks the key '%s'",
					   header_keys[k]);
	return check_header(h, err);
}
