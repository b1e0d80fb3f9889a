/*
 * costs.c - the cost file (refurb-costs(5)): loading, checking and
 * appending.  The model fitted on it is in cost_model.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/costs.h"
#include "refurb/io.h"

#define COSTS_IDENTITY_SEED 0x434f535453494452ULL /* "COSTSIDR" */

struct rfb_costs {
	struct rfb_costs_header h;
	struct rfb_cost_entry *e;
	size_t n;
};

struct rfb_costs_writer {
	FILE *f;
	char path[4096];
};

/* An unsigned number in base 10 or 16 (lowercase) at *p, before end,
 * at most max: at least one digit, no sign, no overflow. */
static int parse_u64(const char **p, const char *end, int base, uint64_t max,
		     uint64_t *v)
{
	const char *q = *p;
	uint64_t x = 0;

	for (; q < end; q++) {
		unsigned d;
		if (*q >= '0' && *q <= '9')
			d = (unsigned)(*q - '0');
		else if (base == 16 && *q >= 'a' && *q <= 'f')
			d = (unsigned)(*q - 'a' + 10);
		else
			break;
		if (x > (max - d) / (unsigned)base)
			return -1;
		x = x * (unsigned)base + d;
	}
	if (q == *p)
		return -1;
	*p = q;
	*v = x;
	return 0;
}

/* Skip the literal word at *p, or fail. */
static int expect(const char **p, const char *end, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(end - *p) < n || memcmp(*p, word, n))
		return -1;
	*p += n;
	return 0;
}

/*
 * The header line (refurb-costs(5), Header), fields separated by one
 * space, in this order:
 *
 *   field          meaning
 *   #refurb-costs  the magic
 *   1              the format version (decimal)
 *   index=         identity of the index, 16 lowercase hex digits
 *   seed=          the augmentation seed (decimal, 64 bits)
 *   pipeline=      the canonical partial pipeline, to the end of the line
 *
 * encode_header writes it with its newline; parse_header reads len bytes
 * without it.
 */
static void encode_header(FILE *f, const struct rfb_costs_header *h)
{
	fprintf(f, "%s %d index=%016" PRIx64 " seed=%" PRIu64 " pipeline=%s\n",
		RFB_COSTS_MAGIC, RFB_COSTS_VERSION, h->index_identity, h->seed,
		h->pipeline);
}

static int parse_header(const char *line, size_t len,
			struct rfb_costs_header *h, const char *path,
			rfb_err *err)
{
	const char *p = line, *end = line + len;
	uint64_t v;

	memset(h, 0, sizeof *h);
	if (expect(&p, end, RFB_COSTS_MAGIC " "))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "bad magic (not a refurb cost file)");
	if (parse_u64(&p, end, 10, 1000, &v) || p == end || *p != ' ')
		return rfb_err_set(err, RFB_EFORMAT, path, "line 1: bad version");
	if (v != RFB_COSTS_VERSION)
		return rfb_err_set(err, RFB_EVERSION, path,
				   "cost file version %" PRIu64 ", this build reads %d",
				   v, RFB_COSTS_VERSION);
	h->version = (unsigned)v;
	if (expect(&p, end, " index=") ||
	    parse_u64(&p, end, 16, UINT64_MAX, &h->index_identity) ||
	    expect(&p, end, " seed=") ||
	    parse_u64(&p, end, 10, UINT64_MAX, &h->seed) ||
	    expect(&p, end, " pipeline="))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "line 1: expected index=HEX seed=N pipeline=SPEC");
	if ((size_t)(end - p) >= sizeof h->pipeline)
		return rfb_err_set(err, RFB_ELIMIT, path, "line 1: pipeline too long");
	if (memchr(p, 0, (size_t)(end - p)))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "line 1: a NUL byte in the pipeline");
	memcpy(h->pipeline, p, (size_t)(end - p));
	return 0;
}

/*
 * A measurement line (refurb-costs(5), Measurements), unsigned decimal
 * numbers of at most 32 bits:
 *
 *   ID<TAB>EPOCH<TAB>MICROSECONDS<LF>
 *
 * the sample id, the write epoch of its record, the worker's thread CPU
 * time on it.  parse_entry reads the line from p to end, without its LF.
 */
static void encode_entry(FILE *f, const struct rfb_cost_entry *e)
{
	fprintf(f, "%u\t%u\t%u\n", e->id, e->epoch, e->cpu_us);
}

static int parse_entry(const char *p, const char *end,
		       struct rfb_cost_entry *e)
{
	uint64_t id, epoch, us;

	if (parse_u64(&p, end, 10, UINT32_MAX, &id) || expect(&p, end, "\t") ||
	    parse_u64(&p, end, 10, UINT32_MAX, &epoch) || expect(&p, end, "\t") ||
	    parse_u64(&p, end, 10, UINT32_MAX, &us) || p != end)
		return -1;
	e->id = (uint32_t)id;
	e->epoch = (uint32_t)epoch;
	e->cpu_us = (uint32_t)us;
	return 0;
}

static int parse_body(rfb_costs *c, const char *p, const char *end,
		      const char *path, rfb_err *err)
{
	size_t cap = 0, lineno = 1;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		lineno++;
		if (!nl)
			break; /* torn last line */
		if (c->n == cap) {
			size_t nc = cap ? cap * 2 : 1024;
			struct rfb_cost_entry *ne = realloc(c->e, nc * sizeof *ne);
			if (!ne)
				return rfb_err_set(err, RFB_ENOMEM, path, "out of memory");
			c->e = ne;
			cap = nc;
		}
		if (parse_entry(p, nl, &c->e[c->n]))
			return rfb_err_set(err, RFB_EFORMAT, path,
					   "line %zu: expected ID<TAB>EPOCH<TAB>"
					   "MICROSECONDS", lineno);
		c->n++;
		p = nl + 1;
	}
	return 0;
}

rfb_costs *rfb_costs_open_mem(const void *data, size_t len, const char *name,
			      rfb_err *err)
{
	const char *text = data, *nl = len ? memchr(text, '\n', len) : NULL;
	rfb_costs *c = calloc(1, sizeof *c);

	if (!c) {
		rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
		return NULL;
	}
	if (!nl) {
		rfb_err_set(err, len ? RFB_EFORMAT : RFB_ETRUNC, name, len ?
			    "bad magic (not a refurb cost file)" : "empty file");
		goto fail;
	}
	if (parse_header(text, (size_t)(nl - text), &c->h, name, err) ||
	    parse_body(c, nl + 1, text + len, name, err))
		goto fail;
	return c;
fail:
	rfb_costs_free(c);
	return NULL;
}

rfb_costs *rfb_costs_open(const char *path, rfb_err *err)
{
	unsigned char *data = NULL;
	size_t len;
	rfb_costs *c;

	if (rfb_file_load(path, RFB_COSTS_MAX_FILE, &data, &len, err))
		return NULL;
	c = rfb_costs_open_mem(data, len, path, err);
	free(data);
	return c;
}

void rfb_costs_free(rfb_costs *c)
{
	if (!c)
		return;
	free(c->e);
	free(c);
}

const struct rfb_costs_header *rfb_costs_header_of(const rfb_costs *c)
{
	return &c->h;
}

size_t rfb_costs_count(const rfb_costs *c)
{
	return c->n;
}

const struct rfb_cost_entry *rfb_costs_entries(const rfb_costs *c)
{
	return c->e;
}

/* What the identity hashes (refurb-costs(5), IDENTITY): the index
 * identity and the seed as two u64, then the pipeline text, then each
 * entry as three u32 (id, epoch, microseconds), all little-endian. */
static void identity_head_encode(const struct rfb_costs_header *h,
				 unsigned char out[16])
{
	rfb_put_le64(out, h->index_identity);
	rfb_put_le64(out + 8, h->seed);
}

static void identity_entry_encode(const struct rfb_cost_entry *e,
				  unsigned char out[12])
{
	rfb_put_le32(out, e->id);
	rfb_put_le32(out + 4, e->epoch);
	rfb_put_le32(out + 8, e->cpu_us);
}

uint64_t rfb_costs_identity(const rfb_costs *c)
{
	unsigned char head[16], e[12];
	uint64_t h;

	identity_head_encode(&c->h, head);
	h = rfb_hash64(head, sizeof head, COSTS_IDENTITY_SEED);
	h = rfb_hash64(c->h.pipeline, strlen(c->h.pipeline), h);
	for (size_t i = 0; i < c->n; i++) {
		identity_entry_encode(&c->e[i], e);
		h = rfb_hash64(e, sizeof e, h);
	}
	return h;
}

/* ---- writing ---- */

/* The header of an existing non-empty file, checked against h. */
static int check_existing(FILE *f, const char *path,
			  const struct rfb_costs_header *h, rfb_err *err)
{
	char line[8192];
	struct rfb_costs_header old;
	size_t len;
	int rc;

	rewind(f);
	if (!fgets(line, sizeof line, f))
		return 1; /* empty: a new file */
	len = strlen(line);
	if (len && line[len - 1] == '\n')
		line[--len] = 0;
	if ((rc = parse_header(line, len, &old, path, err)))
		return rc;
	if (old.index_identity != h->index_identity)
		return rfb_err_set(err, RFB_EMISMATCH, path,
				   "cost file made for another index");
	if (old.seed != h->seed)
		return rfb_err_set(err, RFB_EMISMATCH, path,
				   "cost file made with seed %" PRIu64 ", not %"
				   PRIu64, old.seed, h->seed);
	if (strcmp(old.pipeline, h->pipeline))
		return rfb_err_set(err, RFB_EMISMATCH, path,
				   "cost file made for pipeline '%s', not '%s'",
				   old.pipeline, h->pipeline);
	return 0;
}

rfb_costs_writer *rfb_costs_writer_open(const char *path,
					const struct rfb_costs_header *h,
					rfb_err *err)
{
	rfb_costs_writer *w = calloc(1, sizeof *w);
	int rc;

	if (!w) {
		rfb_err_set(err, RFB_ENOMEM, path, "out of memory");
		return NULL;
	}
	snprintf(w->path, sizeof w->path, "%s", path);
	if (!(w->f = fopen(path, "a+"))) {
		rfb_err_sys(err, errno, path, "cannot open the cost file");
		free(w);
		return NULL;
	}
	rc = check_existing(w->f, path, h, err);
	if (rc < 0) {
		fclose(w->f);
		free(w);
		return NULL;
	}
	if (rc == 1)
		encode_header(w->f, h);
	return w;
}

void rfb_costs_writer_add(rfb_costs_writer *w, uint32_t id, uint32_t epoch,
			  double seconds)
{
	double us = seconds * 1e6 + 0.5;
	const struct rfb_cost_entry e = {
		id, epoch, us < 0 ? 0u : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us
	};

	encode_entry(w->f, &e);
}

int rfb_costs_writer_flush(rfb_costs_writer *w, rfb_err *err)
{
	if (fflush(w->f) || ferror(w->f))
		return rfb_err_sys(err, errno, w->path,
				   "cannot write the cost file");
	return 0;
}

int rfb_costs_writer_close(rfb_costs_writer *w, rfb_err *err)
{
	int rc = 0;

	if (!w)
		return 0;
	rc = rfb_costs_writer_flush(w, err);
	if (fclose(w->f) && !rc)
		rc = rfb_err_sys(err, errno, w->path, "cannot write the cost file");
	free(w);
	return rc;
}
