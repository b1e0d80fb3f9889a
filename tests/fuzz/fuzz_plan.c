/*
 * fuzz_plan.c - the plan's text (refurb-plan(5)) on any bytes: every line
 * through the three line parsers, then the whole input as a stream
 * through rfb_plan_reader (from a memfd).  The parsers accept only the
 * canonical form, so a batch or epoch line that parses must format back
 * to the same bytes, and a header that parses must survive a format and
 * parse round trip; every item the stream reader returns must be the line
 * it read.  refurb-partial's annotations (annotate.h) are read from every
 * header and sample too: an annotated header must format back to the
 * same values (aug-seed in the same canonical decimal), a sample's
 * address must come back from rfb_annot_set unchanged.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "refurb/annotate.h"
#include "refurb/plan.h"

static int plan_same_header(const rfb_plan_header *a, const rfb_plan_header *b)
{
	return a->version == b->version &&
	       a->schedule_identity == b->schedule_identity &&
	       a->index_identity == b->index_identity &&
	       a->samples == b->samples && a->total == b->total &&
	       a->reuse == b->reuse && a->policy == b->policy &&
	       a->evict_seed == b->evict_seed && a->seed == b->seed &&
	       a->batch_size == b->batch_size && a->batches == b->batches &&
	       a->first_epoch == b->first_epoch &&
	       a->last_epoch == b->last_epoch && a->shuffle == b->shuffle &&
	       a->balance == b->balance && a->drop_last == b->drop_last &&
	       a->shard_index == b->shard_index &&
	       a->shard_count == b->shard_count;
}

/* The text of " key=" in line (up to the next space), or NULL. */
static const char *plan_key(const char *line, size_t len, const char *key,
			    size_t *vlen)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i + klen + 2 <= len; i++)
		if (line[i] == ' ' && !memcmp(line + i + 1, key, klen) &&
		    line[i + 1 + klen] == '=') {
			const char *v = line + i + klen + 2, *e = v;
			while (e < line + len && *e != ' ')
				e++;
			*vlen = (size_t)(e - v);
			return v;
		}
	return NULL;
}

/* An annotated header formats back to the same values. */
static void plan_annot_header(const char *line, size_t len,
			      const rfb_plan_header *h)
{
	static struct rfb_annot_header a, again;
	rfb_plan_header h2;
	rfb_err err = { 0 };
	size_t n, vlen, wlen;
	const char *v, *w;
	char *text;

	if (rfb_annot_parse_header(line, len, &a, &err))
		return;
	n = rfb_annot_format_header(NULL, 0, h, &a);
	FUZZ_ASSERT((text = malloc(n + 1)) != NULL);
	FUZZ_ASSERT(rfb_annot_format_header(text, n + 1, h, &a) == n);
	FUZZ_ASSERT(rfb_plan_parse_header(text, n - 1, &h2, &err) == 0);
	FUZZ_ASSERT(rfb_annot_parse_header(text, n - 1, &again, &err) == 0);
	FUZZ_ASSERT(!strcmp(a.cache, again.cache) &&
		    !strcmp(a.index_file, again.index_file) &&
		    !strcmp(a.root, again.root) &&
		    !strcmp(a.partial, again.partial) &&
		    !strcmp(a.codec, again.codec) &&
		    a.aug_seed == again.aug_seed);
	v = plan_key(line, len, "aug-seed", &vlen);
	w = plan_key(text, n - 1, "aug-seed", &wlen);
	FUZZ_ASSERT(v && w && vlen == wlen && !memcmp(v, w, vlen));
	free(text);
}

static void plan_header_line(const char *line, size_t len)
{
	rfb_plan_header h, again;
	rfb_err err = { 0 };
	char text[1024];
	size_t n;

	if (rfb_plan_parse_header(line, len, &h, &err)) {
		FUZZ_REJECTED(&err, err.code);
		return;
	}
	n = rfb_plan_format_header(text, sizeof text, &h);
	FUZZ_ASSERT(n > 1 && n < sizeof text && text[n - 1] == '\n');
	FUZZ_ASSERT(rfb_plan_parse_header(text, n - 1, &again, &err) == 0);
	FUZZ_ASSERT(plan_same_header(&h, &again));
	plan_annot_header(line, len, &h);
}

/* Format b and compare with the line it came from. */
static void plan_batch_matches(const rfb_plan_batch *b, const char *line,
			       size_t len)
{
	char *text = malloc(rfb_plan_batch_text_max(b->count));
	size_t n;

	FUZZ_ASSERT(text != NULL);
	n = rfb_plan_format_batch(text, b);
	FUZZ_ASSERT(n == len + 1 && memcmp(text, line, len) == 0);
	free(text);
}

static void plan_batch_line(const char *line, size_t len,
			    rfb_plan_sample *samples, uint32_t capacity)
{
	rfb_plan_batch b = { 0 };
	rfb_err err = { 0 };

	b.samples = samples;
	if (rfb_plan_parse_batch(line, len, &b, capacity, &err)) {
		FUZZ_REJECTED(&err, err.code);
		return;
	}
	FUZZ_ASSERT(b.count >= 1 && b.count <= capacity);
	plan_batch_matches(&b, line, len);
	for (uint32_t i = 0; i < b.count; i++) {
		struct rfb_cache_addr a;
		rfb_plan_sample again = samples[i];
		uint32_t we;
		int rc = rfb_annot_get(&samples[i], &a, &we);

		FUZZ_ASSERT(rc == 0 || rc == 1 || rc == 2 || rc == RFB_EFORMAT);
		if (rc != 1)
			continue;
		FUZZ_ASSERT(a.segment != RFB_CACHE_NO_SEGMENT &&
			    a.offset >= RFB_CACHE_SEGMENT_HEADER &&
			    a.length >= RFB_RECORD_HEADER_SIZE);
		rfb_annot_set(&again, &a, we);
		FUZZ_ASSERT(again.addr_count == samples[i].addr_count &&
			    !memcmp(again.addr, samples[i].addr,
				    sizeof again.addr[0] * again.addr_count));
	}
}

static void plan_epoch_line(const char *line, size_t len)
{
	rfb_plan_epoch_end e;
	rfb_err err = { 0 };
	char text[128];

	if (rfb_plan_parse_epoch_end(line, len, &e, &err)) {
		FUZZ_REJECTED(&err, err.code);
		return;
	}
	FUZZ_ASSERT(rfb_plan_format_epoch_end(text, sizeof text, &e) ==
		    len + 1);
	FUZZ_ASSERT(memcmp(text, line, len) == 0);
}

/* Every line through every parser (not only the one its type names:
 * the others must refuse it cleanly). */
static void plan_lines(const char *d, size_t size)
{
	const char *p = d, *end = d + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		uint32_t capacity = 1;
		rfb_plan_sample *samples;

		for (size_t i = 0; i < len; i++)
			capacity += p[i] == ' ' && capacity < RFB_PLAN_MAX_BATCH;
		samples = malloc(capacity * sizeof *samples);
		FUZZ_ASSERT(samples != NULL);
		(void)rfb_plan_line_type(p, len);
		plan_header_line(p, len);
		plan_batch_line(p, len, samples, capacity);
		plan_epoch_line(p, len);
		free(samples);
		p += len + 1;
	}
}

/* 1 if the stream was read to its end without an error. */
static int plan_stream(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-plan", MFD_CLOEXEC);
	rfb_err err = { 0 };
	rfb_plan_reader *r;
	rfb_plan_item item;
	int rc = 0, ok;

	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(size == 0 || write(fd, data, size) == (ssize_t)size);
	FUZZ_ASSERT(lseek(fd, 0, SEEK_SET) == 0);
	r = rfb_plan_reader_open(fd, "fuzz", &err);
	if (!r)
		FUZZ_REJECTED(&err, err.code);
	while (r && (rc = rfb_plan_reader_next(r, &item, &err)) > 0) {
		const rfb_plan_header *h = rfb_plan_reader_header(r);
		size_t len;
		const char *line = rfb_plan_reader_line(r, &len);

		FUZZ_ASSERT(rc == item.type);
		if (rc == RFB_PLAN_LINE_BATCH) {
			FUZZ_ASSERT(item.batch.count <= h->batch_size);
			FUZZ_ASSERT(item.batch.epoch >= h->first_epoch &&
				    item.batch.epoch <= h->last_epoch);
			plan_batch_matches(&item.batch, line, len);
		}
	}
	ok = r && rc == 0;
	if (r && rc < 0)
		FUZZ_REJECTED(&err, rc);
	rfb_plan_reader_close(r);
	close(fd);
	return ok;
}

FUZZ_TARGET(plan)
{
	plan_lines((const char *)data, size);
	return plan_stream(data, size);
}
