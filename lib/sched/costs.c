/*
 * costs.c - the cost file (refurb-costs(5)): loading, checking and
 * appending.  The model fitted on it is in cost_model.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/costs.h"
#include "refurb/io.h"

struct rfb_costs {
	struct rfb_costs_header h;
	struct rfb_cost_entry *e;
	size_t n;
};

struct rfb_costs_writer {
	FILE *f;
	char path[4096];
};

static int parse_u64(const char **p, int base, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (**p < '0' || **p > 'f')
		return -1;
	errno = 0;
	x = strtoull(*p, &end, base);
	if (end == *p || errno || x > max)
		return -1;
	*p = end;
	*v = x;
	return 0;
}

/* "#refurb-costs 1 index=HEX seed=N pipeline=SPEC" (len bytes). */
static int parse_header(const char *line, size_t len,
			struct rfb_costs_header *h, const char *path,
			rfb_err *err)
{
	const char *p = line;
	uint64_t v;
	size_t ml = strlen(RFB_COSTS_MAGIC);

	memset(h, 0, sizeof *h);
	if (len < ml + 2 || memcmp(p, RFB_COSTS_MAGIC " ", ml + 1))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "bad magic (not a refurb cost file)");
	p += ml + 1;
	if (parse_u64(&p, 10, 1000, &v) || *p != ' ')
		return rfb_err_set(err, RFB_EFORMAT, path, "line 1: bad version");
	if (v != RFB_COSTS_VERSION)
		return rfb_err_set(err, RFB_EVERSION, path,
				   "cost file version %" PRIu64 ", this build reads %d",
				   v, RFB_COSTS_VERSION);
	h->version = (unsigned)v;
	if (strncmp(p, " index=", 7) || (p += 7, parse_u64(&p, 16, UINT64_MAX,
							   &h->index_identity)) ||
	    strncmp(p, " seed=", 6) || (p += 6, parse_u64(&p, 10, UINT64_MAX,
							  &h->seed)) ||
	    strncmp(p, " pipeline=", 10))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "line 1: expected index=HEX seed=N pipeline=SPEC");
	p += 10;
	if ((size_t)(line + len - p) >= sizeof h->pipeline)
		return rfb_err_set(err, RFB_ELIMIT, path, "line 1: pipeline too long");
	memcpy(h->pipeline, p, (size_t)(line + len - p));
	return 0;
}

static int parse_entry(const char *p, const char *end,
		       struct rfb_cost_entry *e)
{
	uint64_t id, epoch, us;

	if (parse_u64(&p, 10, UINT32_MAX, &id) || *p++ != '\t' ||
	    parse_u64(&p, 10, UINT32_MAX, &epoch) || *p++ != '\t' ||
	    parse_u64(&p, 10, UINT32_MAX, &us) || p != end)
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

rfb_costs *rfb_costs_open(const char *path, rfb_err *err)
{
	unsigned char *data = NULL;
	const char *text, *nl;
	size_t len;
	rfb_costs *c = NULL;

	if (rfb_file_load(path, RFB_COSTS_MAX_FILE, &data, &len, err))
		return NULL;
	text = (const char *)data;
	if (!(c = calloc(1, sizeof *c))) {
		rfb_err_set(err, RFB_ENOMEM, path, "out of memory");
		goto fail;
	}
	if (!(nl = memchr(text, '\n', len))) {
		rfb_err_set(err, len ? RFB_EFORMAT : RFB_ETRUNC, path, len ?
			    "bad magic (not a refurb cost file)" : "empty file");
		goto fail;
	}
	if (parse_header(text, (size_t)(nl - text), &c->h, path, err) ||
	    parse_body(c, nl + 1, text + len, path, err))
		goto fail;
	free(data);
	return c;
fail:
	free(data);
	rfb_costs_free(c);
	return NULL;
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
		fprintf(w->f, "%s %d index=%016" PRIx64 " seed=%" PRIu64
			" pipeline=%s\n", RFB_COSTS_MAGIC, RFB_COSTS_VERSION,
			h->index_identity, h->seed, h->pipeline);
	return w;
}

void rfb_costs_writer_add(rfb_costs_writer *w, uint32_t id, uint32_t epoch,
			  double seconds)
{
	double us = seconds * 1e6 + 0.5;

	fprintf(w->f, "%u\t%u\t%u\n", id, epoch,
		us < 0 ? 0u : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us);
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
