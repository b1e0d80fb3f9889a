/*
 * index_shard_samples.c - the candidates of all the tar shards of an index,
 * in bounded memory (see index_shards_internal.h).  Each shard's candidates
 * are appended to a spill (index_spill.c) in sample order, and the keys of
 * the good ones to an external sort (index_runs.c).  Then: the sorted keys
 * give the duplicates (a key seen in an earlier shard), sorted again by
 * position; one pass over the candidates applies them and counts the
 * labels (numbers or names, the names sorted for the class table); a
 * second pass assigns the labels and feeds the prober half the budget of
 * candidates at a time.  Nothing here grows with the number of samples
 * but the temporary files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/io.h"
#include "index_runs_internal.h"
#include "index_shards_internal.h"
#include "index_spill_internal.h"

/* A candidate on the spill (this file's own layout, little-endian):
 * shard u32, code i32, whole u8, has_name u8, (2 zero bytes), number
 * i64, offset u64, bytes u64, path_len u32, why_len u32, name_len u32,
 * then the path, the reason and the label's name. */
#define CAND_HEAD 52

struct sample {
	uint32_t shard;
	int code, whole, has_name;
	long number;
	uint64_t offset, bytes;
	const char *path, *why, *name;
	size_t path_len, why_len, name_len;
};

/* A duplicate: the position of the candidate and the (1-based) shard
 * where its key came first. */
#define DUP_SIZE 12
/* A good candidate's key to sort, with its label: position u64, shard
 * u32, has_name u8, (3 zero bytes), number i64, key_len u32, then the key
 * and the label's name. */
#define KEY_HEAD 28

struct key {
	const unsigned char *rec;  /* position, shard */
	int has_name;
	long number;
	const char *key, *name;
	size_t key_len, name_len;
};

struct rfbi_samples {
	const struct rfb_scan_opts *o;
	size_t quarter;              /* a quarter of the budget, 0: none */
	struct rfbi_spill *cands;    /* every candidate, in order */
	struct rfbi_runs *keys;      /* the good ones' keys */
	struct rfbi_spill *dups;     /* the duplicates, in order */
	struct rfbi_runs *names;     /* the label names, unique */
	uint64_t count;
	uint64_t text_bytes;         /* their paths, with a NUL each */
	long max_number;
	uint64_t names_seen, numbers_seen;
	unsigned char *buf;          /* an encoded candidate */
	size_t buf_cap;
	char *scratch;               /* a label name, NUL-terminated */
	size_t scratch_cap;
};

static void get_key(const unsigned char *b, size_t n, struct key *k)
{
	k->rec = b;
	k->has_name = b[12];
	k->number = (long)rfb_get_le64(b + 16);
	k->key_len = rfb_get_le32(b + 24);
	k->key = (const char *)b + KEY_HEAD;
	k->name = k->key + k->key_len;
	k->name_len = n - KEY_HEAD - k->key_len;
}

static int cmp_keys(const unsigned char *a, size_t an, const unsigned char *b,
		    size_t bn, void *ctx)
{
	uint64_t x = rfb_get_le64(a), y = rfb_get_le64(b);
	int c = rfbi_shard_cmp_key((const char *)a + KEY_HEAD,
				   rfb_get_le32(a + 24),
				   (const char *)b + KEY_HEAD,
				   rfb_get_le32(b + 24));

	(void)an, (void)bn, (void)ctx;
	if (c)
		return c;
	return x < y ? -1 : x > y;
}

static int cmp_positions(const unsigned char *a, size_t an,
			 const unsigned char *b, size_t bn, void *ctx)
{
	uint64_t x = rfb_get_le64(a), y = rfb_get_le64(b);

	(void)an, (void)bn, (void)ctx;
	return x < y ? -1 : x > y;
}

struct rfbi_samples *rfbi_samples_new(const struct rfb_scan_opts *o,
				      rfb_err *err)
{
	struct rfbi_samples *s = calloc(1, sizeof *s);

	if (!s) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	s->o = o;
	s->max_number = -1;
	s->quarter = o->memory / 4;
	if (!(s->cands = rfbi_spill_new(o->temp_dir, s->quarter, err)) ||
	    !(s->keys = rfbi_runs_new(o->temp_dir, s->quarter, cmp_keys, NULL,
				      0, err))) {
		rfbi_samples_free(s);
		return NULL;
	}
	return s;
}

void rfbi_samples_free(struct rfbi_samples *s)
{
	if (!s)
		return;
	rfbi_spill_free(s->cands);
	rfbi_runs_free(s->keys);
	rfbi_spill_free(s->dups);
	rfbi_runs_free(s->names);
	free(s->buf);
	free(s->scratch);
	free(s);
}

uint64_t rfbi_samples_count(const struct rfbi_samples *s)
{
	return s->count;
}

/* ---- the candidates' records ---- */

static int reserve(char **buf, size_t *cap, size_t need, rfb_err *err)
{
	char *nb;

	if (need <= *cap)
		return 0;
	if (!(nb = realloc(*buf, need)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	*buf = nb;
	*cap = need;
	return 0;
}

static int put_sample(struct rfbi_samples *s, const struct cand_list *l,
		      size_t i, const struct raw_label *raw, rfb_err *err)
{
	const struct candidate *c = &l->v[i];
	const char *path = cand_path(l, i), *why = c->why ? c->why : "";
	size_t pl = strlen(path), wl = strlen(why);
	size_t nl = raw->name ? strlen(raw->name) : 0;
	unsigned char *b;
	int rc;

	if ((rc = reserve((char **)&s->buf, &s->buf_cap, CAND_HEAD + pl + wl +
			  nl, err)))
		return rc;
	b = s->buf;
	memset(b, 0, CAND_HEAD);
	rfb_put_le32(b, c->shard);
	rfb_put_le32(b + 4, (uint32_t)c->code);
	b[8] = (unsigned char)c->whole;
	b[9] = raw->name != NULL;
	rfb_put_le64(b + 16, (uint64_t)raw->number);
	rfb_put_le64(b + 24, c->offset);
	rfb_put_le64(b + 32, c->bytes);
	rfb_put_le32(b + 40, (uint32_t)pl);
	rfb_put_le32(b + 44, (uint32_t)wl);
	rfb_put_le32(b + 48, (uint32_t)nl);
	memcpy(b + CAND_HEAD, path, pl);
	memcpy(b + CAND_HEAD + pl, why, wl);
	if (nl)
		memcpy(b + CAND_HEAD + pl + wl, raw->name, nl);
	return rfbi_spill_put(s->cands, b, CAND_HEAD + pl + wl + nl, err);
}

static int get_sample(const unsigned char *b, size_t n, struct sample *x,
		      rfb_err *err)
{
	if (n < CAND_HEAD)
		goto bad;
	x->shard = rfb_get_le32(b);
	x->code = (int)rfb_get_le32(b + 4);
	x->whole = b[8];
	x->has_name = b[9];
	x->number = (long)rfb_get_le64(b + 16);
	x->offset = rfb_get_le64(b + 24);
	x->bytes = rfb_get_le64(b + 32);
	x->path_len = rfb_get_le32(b + 40);
	x->why_len = rfb_get_le32(b + 44);
	x->name_len = rfb_get_le32(b + 48);
	if (x->path_len + x->why_len + x->name_len != n - CAND_HEAD)
		goto bad;
	x->path = (const char *)b + CAND_HEAD;
	x->why = x->path + x->path_len;
	x->name = x->why + x->why_len;
	return 0;
bad:
	return rfb_err_set(err, RFB_EIO, NULL, "a temporary file of candidates "
			   "is damaged");
}

/* The key of a good candidate, to find it in earlier shards, and its
 * label, counted if it is not found there. */
static int put_key(struct rfbi_samples *s, const struct cand_list *l,
		   size_t i, const struct raw_label *raw, rfb_err *err)
{
	const char *path = cand_path(l, i);
	size_t kl, nl = raw->name ? strlen(raw->name) : 0;
	unsigned char *b;
	int rc;

	(void)rfbi_shard_key(path, &kl);
	if ((rc = reserve((char **)&s->buf, &s->buf_cap, KEY_HEAD + kl + nl,
			  err)))
		return rc;
	b = s->buf;
	memset(b, 0, KEY_HEAD);
	rfb_put_le64(b, s->count);
	rfb_put_le32(b + 8, l->v[i].shard);
	b[12] = raw->name != NULL;
	rfb_put_le64(b + 16, (uint64_t)raw->number);
	rfb_put_le32(b + 24, (uint32_t)kl);
	memcpy(b + KEY_HEAD, path, kl);
	if (nl)
		memcpy(b + KEY_HEAD + kl, raw->name, nl);
	return rfbi_runs_put(s->keys, b, KEY_HEAD + kl + nl, err);
}

int rfbi_samples_add(struct rfbi_samples *s, struct cand_list *l,
		     struct raw_label *raw, size_t raw_count, rfb_err *err)
{
	const struct raw_label none = { -1, NULL };
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < l->n; i++) {
		const struct raw_label *r = i < raw_count ? &raw[i] : &none;
		if (!(rc = put_sample(s, l, i, r, err)) && !l->v[i].code)
			rc = put_key(s, l, i, r, err);
		s->count++;
		s->text_bytes += strlen(cand_path(l, i)) + 1;
	}
	for (size_t i = 0; i < raw_count; i++) {
		free(raw[i].name);
		raw[i] = none;
	}
	rfbi_cand_clear(l);
	return rc;
}

/* ---- across shards ---- */

/* A good candidate whose key came first: count its label (numbers or
 * names: the majority decides), the largest number, the names to sort. */
static int count_label(struct rfbi_samples *s, const struct key *k,
		       rfb_err *err)
{
	s->names_seen += k->has_name;
	s->numbers_seen += !k->has_name;
	if (!k->has_name && k->number > s->max_number)
		s->max_number = k->number;
	if (k->has_name && s->names)
		return rfbi_runs_put(s->names, k->name, k->name_len, err);
	return 0;
}

/* The keys in order: the later candidates of each key go, by position,
 * to by_pos; the first are counted.  The first's key is copied: the
 * merge moves its buffers. */
static int sift_keys(struct rfbi_samples *s, struct rfbi_runs *by_pos,
		     rfb_err *err)
{
	unsigned char first[DUP_SIZE], dup[DUP_SIZE];
	char *key = NULL;
	size_t key_cap = 0, key_len = 0, n;
	const unsigned char *rec;
	int rc, have = 0;

	while ((rc = rfbi_runs_get(s->keys, &rec, &n, err)) == 1) {
		struct key k;
		get_key(rec, n, &k);
		if (have && !rfbi_shard_cmp_key(key, key_len, k.key, k.key_len)) {
			memcpy(dup, rec, 8);
			memcpy(dup + 8, first + 8, 4);
			if ((rc = rfbi_runs_put(by_pos, dup, DUP_SIZE, err)))
				break;
			continue;
		}
		if ((rc = reserve(&key, &key_cap, k.key_len + 1, err)) ||
		    (rc = count_label(s, &k, err)))
			break;
		memcpy(key, k.key, k.key_len);
		key_len = k.key_len;
		memcpy(first, rec, DUP_SIZE);
		have = 1;
	}
	free(key);
	return rc < 0 ? rc : 0;
}

/* The later candidates of each key, by position, into s->dups; the
 * labels of the others counted. */
static int find_duplicates(struct rfbi_samples *s, rfb_err *err)
{
	struct rfbi_runs *by_pos = rfbi_runs_new(s->o->temp_dir, s->quarter,
						 cmp_positions, NULL, 0, err);
	const unsigned char *d;
	size_t dn;
	int rc;

	if (!by_pos)
		return err->code;
	if (!s->o->classes && !(s->names = rfbi_runs_new(s->o->temp_dir,
			s->quarter, rfbi_runs_cmp_bytes, NULL, 1, err))) {
		rfbi_runs_free(by_pos);
		return err->code;
	}
	rc = sift_keys(s, by_pos, err);
	rfbi_runs_free(s->keys);
	s->keys = NULL;
	if (rc == 0 && !(s->dups = rfbi_spill_new(s->o->temp_dir,
						  s->quarter / 4, err)))
		rc = err->code;
	while (rc == 0 && (rc = rfbi_runs_get(by_pos, &d, &dn, err)) == 1)
		rc = rfbi_spill_put(s->dups, d, dn, err);
	rfbi_runs_free(by_pos);
	if (rc == 0)
		rc = rfbi_spill_rewind(s->dups, err);
	return rc < 0 ? rc : 0;
}

/* The next duplicate's position (UINT64_MAX after the last) and shard. */
static int next_dup(struct rfbi_samples *s, uint64_t *pos, uint32_t *shard,
		    rfb_err *err)
{
	const unsigned char *d;
	size_t n;
	int rc = rfbi_spill_get(s->dups, &d, &n, err);

	if (rc < 0)
		return rc;
	*pos = rc ? rfb_get_le64(d) : UINT64_MAX;
	*shard = rc ? rfb_get_le32(d + 8) : 0;
	return 0;
}

/* The class table of --classes: one name a line, in label order. */
static int load_classes(struct cand_list *l, const char *path, rfb_err *err)
{
	unsigned char *text;
	size_t len;
	int rc;

	if ((rc = rfb_file_load(path, (size_t)1 << 30, &text, &len, err)))
		return rc;
	for (char *line = (char *)text, *end; rc == 0 && *line; line = end) {
		size_t n = strcspn(line, "\n");
		end = line + n + (line[n] == '\n');
		line[n] = 0;
		if (n && line[n - 1] == '\r')
			line[n - 1] = 0;
		if (!*line)
			rc = rfb_err_set(err, RFB_EFORMAT, path, "class %u: empty "
					 "name", l->class_count);
		else
			rc = rfbi_cand_add_class(l, line, err);
	}
	if (rc == 0 && l->class_count == 0)
		rc = rfb_err_set(err, RFB_EFORMAT, path, "no class names");
	free(text);
	return rc;
}

/* Classes from --classes, or from the labels: numbers 0 .. max, or names
 * sorted as ImageFolder sorts them. */
static int make_classes(struct rfbi_samples *s, struct cand_list *l,
			int by_name, rfb_err *err)
{
	const unsigned char *name;
	size_t n;
	char buf[24];
	int rc = 0;

	if (s->o->classes)
		return load_classes(l, s->o->classes, err);
	while (by_name && (rc = rfbi_runs_get(s->names, &name, &n, err)) == 1) {
		if ((rc = reserve(&s->scratch, &s->scratch_cap, n + 1, err)))
			return rc;
		memcpy(s->scratch, name, n);
		s->scratch[n] = 0;
		if ((rc = rfbi_cand_add_class(l, s->scratch, err)))
			return rc;
	}
	for (long c = 0; rc == 0 && !by_name && c <= s->max_number; c++) {
		snprintf(buf, sizeof buf, "%ld", c);
		rc = rfbi_cand_add_class(l, buf, err);
	}
	return rc < 0 ? rc : 0;
}

/* The label of candidate i in the class table, or bad. */
static int assign_label(const struct rfbi_samples *s, struct cand_list *l,
			size_t i, const struct sample *x, const char *name,
			int by_name)
{
	const char *classes = s->o->classes;

	if (name && !by_name && !classes)
		return rfbi_cand_set_bad(l, i, RFB_EFORMAT, "bad label: the class "
				    "name '%s' where most samples have class "
				    "numbers", name);
	if (name) {
		for (uint32_t c = 0; c < l->class_count; c++)
			if (strcmp(l->classes[c], name) == 0)
				return l->v[i].label = c, 0;
		return rfbi_cand_set_bad(l, i, RFB_EFORMAT, "bad label: class '%s' is "
				    "not in --classes %s", name, classes);
	}
	if (by_name)
		return rfbi_cand_set_bad(l, i, RFB_EFORMAT, "bad label: the number %ld "
				    "where most samples have class names",
				    x->number);
	if ((uint64_t)x->number >= l->class_count)
		return rfbi_cand_set_bad(l, i, RFB_EFORMAT, "bad label: class %ld, but "
				    "--classes %s names %u classes", x->number,
				    classes, l->class_count);
	l->v[i].label = (uint32_t)x->number;
	return 0;
}

/* Candidate x back into l, bad if it was or is a duplicate (of a key
 * first in shard dup_shard, else 0), else with its label. */
static int restore(struct rfbi_samples *s, struct cand_list *l,
		   const struct sample *x, uint32_t dup_shard, int by_name,
		   rfb_err *err)
{
	struct candidate *c;
	size_t i = l->n, kl;
	int rc;

	if ((rc = rfbi_cand_add(l, x->path, x->path_len, 0, err)))
		return rc;
	c = &l->v[i];
	c->shard = x->shard;
	c->offset = x->offset;
	c->bytes = x->bytes;
	c->whole = x->whole;
	if (x->code)
		rc = rfbi_cand_set_bad(l, i, x->code, "%.*s", (int)x->why_len,
				       x->why);
	else if (dup_shard) {
		(void)rfbi_shard_key(cand_path(l, i), &kl);
		c->code = RFB_EFORMAT;
		if (asprintf(&c->why, "duplicate key %.*s (also in shard %s)",
			     (int)kl, cand_path(l, i),
			     l->shards[dup_shard - 1].full) < 0)
			c->why = NULL, rc = RFB_ENOMEM;
	} else {
		if ((rc = reserve(&s->scratch, &s->scratch_cap, x->name_len + 1,
				  err)))
			return rc;
		memcpy(s->scratch, x->name, x->name_len);
		s->scratch[x->name_len] = 0;
		rc = assign_label(s, l, i, x, x->has_name ? s->scratch : NULL,
				  by_name);
	}
	return rc ? rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory") : 0;
}

/* Every candidate, labelled, to the prober, half the budget at a time. */
static int feed(struct rfbi_samples *s, struct cand_list *l,
		struct rfbi_prober *p, int by_name, rfb_err *err)
{
	const unsigned char *b;
	size_t n;
	uint64_t pos = 0, dup_pos;
	uint32_t dup_shard;
	int rc;

	if ((rc = rfbi_cand_reserve(l, s->o->memory, s->count, s->text_bytes,
				    err)) ||
	    (rc = rfbi_spill_rewind(s->cands, err)) ||
	    (rc = next_dup(s, &dup_pos, &dup_shard, err)))
		return rc;
	while ((rc = rfbi_spill_get(s->cands, &b, &n, err)) == 1) {
		struct sample x = { 0 };
		int dup = pos++ == dup_pos;
		if ((rc = get_sample(b, n, &x, err)) ||
		    (rc = restore(s, l, &x, dup ? dup_shard : 0, by_name, err)) ||
		    (dup && (rc = next_dup(s, &dup_pos, &dup_shard, err))))
			break;
		if (!rfbi_cand_full(l, s->o->memory))
			continue;
		rc = rfbi_probe_feed(p, l, err);
		rfbi_cand_clear(l);
		if (rc)
			break;
	}
	if (rc == 0 && l->n) {
		rc = rfbi_probe_feed(p, l, err);
		rfbi_cand_clear(l);
	}
	return rc;
}

int rfbi_samples_build(struct rfbi_samples *s, struct cand_list *l,
		       rfb_index_builder **out, struct rfb_scan_stats *st,
		       rfb_err *err)
{
	struct rfbi_prober *p = NULL;
	int rc, by_name;

	if ((rc = find_duplicates(s, err)))
		return rc;
	by_name = s->names_seen > s->numbers_seen;  /* the majority decides */
	rc = make_classes(s, l, by_name, err);
	rfbi_runs_free(s->names);  /* not held while probing */
	s->names = NULL;
	if (rc)
		return rc;
	if (s->count == 0)
		return rfb_err_set(err, RFB_ENOTFOUND, l->shards[0].full, "no "
				   "KEY.jpg or KEY.png members in the %u shard%s",
				   l->shard_count, l->shard_count == 1 ? "" : "s");
	if ((rc = rfbi_probe_begin(l, s->o, s->count, st, &p, err)) ||
	    (rc = feed(s, l, p, by_name, err))) {
		rfbi_probe_free(p);
		return rc;
	}
	return rfbi_probe_end(p, l, out, err);
}
