/*
 * index_scan_shards.c - finding the samples of WebDataset tar shards in place:
 * walk each shard's headers (index_tar.c), group members by key, take the
 * label from KEY.cls, KEY.json or the member's directory, and hand each
 * shard's KEY.jpg members (shard, offset, size) to index_shard_samples.c,
 * which checks keys across shards, makes the classes and feeds the
 * prober (see scan.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refurb/io.h"
#include "index_shards_internal.h"
#include "index_tar_internal.h"

#define MAX_LABEL_FILE ((uint64_t)1 << 20)  /* .cls and .json members */

/* K_DOTTED: a name that ends in an image extension but whose key has a
 * dot ("img 1.v2.jpg": key "img 1", field "v2.jpg"); a field of a key that
 * has an image (KEY.seg.png) is left alone, one of a key without an image
 * is a sample the user meant and is reported instead of vanishing. */
enum kind { K_OTHER, K_IMAGE, K_LABEL, K_DOTTED };

/* One member of a shard that matters: an image or its label file. */
struct member {
	char *name;         /* malloc'ed */
	size_t key_len;     /* name[0..key_len) is the key */
	enum kind kind;
	uint64_t off, size;
	char *text;         /* a label member's content when it fit in the
			     * header's read, malloc'ed; else NULL */
	uint64_t order;     /* position in the shard, for stable sorting */
};

struct members {
	struct member *v;
	size_t n, cap;
};

struct scan {
	const struct rfb_scan_opts *o;
	struct cand_list *l;
	const char *label_ext;      /* "cls" or "json" or NULL (dir) */
	struct raw_label *raw;      /* per candidate of the shard */
	size_t raw_cap;
};

/* ---- keys ---- */

static int image_ext(const char *ext)
{
	return !strcasecmp(ext, "jpg") || !strcasecmp(ext, "jpeg") ||
	       !strcasecmp(ext, "png");  /* the content decides, as in a tree */
}

static enum kind member_kind(const char *ext, const char *label_ext)
{
	const char *last;

	if (!ext)
		return K_OTHER;
	if (image_ext(ext))
		return K_IMAGE;
	if (label_ext && !strcasecmp(ext, label_ext))
		return K_LABEL;
	last = strrchr(ext, '.');
	return last && image_ext(last + 1) ? K_DOTTED : K_OTHER;
}

static int cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int c = rfbi_shard_cmp_key(x->name, x->key_len, y->name, y->key_len);

	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int same_key(const struct member *x, const struct member *y)
{
	return x->key_len == y->key_len &&
	       memcmp(x->name, y->name, x->key_len) == 0;
}

static void members_free(struct members *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].name);
		free(m->v[i].text);
	}
	free(m->v);
	memset(m, 0, sizeof *m);
}

static int members_add(struct members *m, const struct tar_member *t,
		       enum kind kind, size_t key_len, rfb_err *err)
{
	struct member *x;

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct member *nv = realloc(m->v, cap * sizeof *nv);
		if (!nv)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		m->v = nv;
		m->cap = cap;
	}
	x = &m->v[m->n];
	memset(x, 0, sizeof *x);
	x->name = strdup(t->name);
	x->kind = kind;
	x->key_len = key_len;
	x->off = t->data_off;
	x->size = t->size;
	x->order = m->n;
	if (kind == K_LABEL && t->head_len == t->size &&
	    (x->text = malloc(t->size + 1))) {
		memcpy(x->text, t->head, t->head_len);
		x->text[t->size] = 0;
	}
	if (!x->name)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	m->n++;
	return 0;
}

/* ---- shards ---- */

/* Check the kind of the open shard: a tar, not compressed, not other. */
static int check_tar(int fd, const char *path, rfb_err *err)
{
	unsigned char b[2 * TAR_BLOCK];
	ssize_t got = rfb_pread_full(fd, b, sizeof b, 0);

	if (got < 0)
		return rfb_err_sys(err, errno, path, "cannot read the shard");
	return rfbi_tar_check_kind(rfbi_tar_sniff(b, (size_t)got), path, err);
}

/* Where the index keeps shard k: relative to the root when inside it. */
static int add_shard(struct cand_list *l, const char *path,
		     const struct stat *st, rfb_err *err)
{
	struct cand_shard *ns = realloc(l->shards,
					(l->shard_count + 1) * sizeof *ns);
	struct cand_shard *s;
	char *abs = rfb_path_absolute(path, 1);
	size_t rl = strlen(l->root);

	if (!ns || !abs) {
		free(abs);
		if (ns)
			l->shards = ns;
		return rfb_err_sys(err, ns ? errno : ENOMEM, path,
				   "cannot resolve the shard's path");
	}
	l->shards = ns;
	s = &ns[l->shard_count];
	memset(s, 0, sizeof *s);
	if (strncmp(abs, l->root, rl) == 0 && abs[rl] == '/')
		memmove(abs, abs + rl + 1, strlen(abs + rl + 1) + 1);
	s->path = abs;
	s->full = strdup(path);
	s->size = (uint64_t)st->st_size;
	s->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
		      st->st_mtim.tv_nsec;
	l->shard_count++;
	if (!s->full)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if (l->shard_count > RFB_INDEX_MAX_SHARDS)
		return rfb_err_set(err, RFB_ELIMIT, path, "more than %u shards",
				   RFB_INDEX_MAX_SHARDS);
	return 0;
}

/* A candidate for a walk error: the rest of the shard is lost.  A
 * truncated member is named; a damaged header names no member. */
static int add_walk_error(struct scan *sc, const struct tar_reader *r,
			  const rfb_err *why)
{
	struct cand_list *l = sc->l;
	const char *msg = why->msg;
	char shown[RFBI_TAR_SHOWN];
	const char *name = r->name ? rfbi_tar_shown(r->name, shown) : NULL;
	size_t len = name ? strlen(name) : 0;
	int named = name && strncmp(msg, "member ", 7) == 0 &&
		    strncmp(msg + 7, name, len) == 0 && msg[7 + len] == ':', rc;
	const char *what = named ? name : "(tar header)";

	if (named)  /* index_tar.c names the member: keep one "member X: " */
		msg += 7 + len + 2;
	if ((rc = rfbi_cand_add(l, what, strlen(what), 0, NULL)))
		return rc;
	l->v[l->n - 1].shard = l->shard_count;
	l->v[l->n - 1].whole = !named;
	return rfbi_cand_set_bad(l, l->n - 1, why->code, "%s%s", msg, named ? ""
			    : ": the rest of the shard is left out");
}

/* Walk shard k's headers into m (image and label members). */
static int walk_shard(struct scan *sc, int fd, const char *path,
		      uint64_t size, struct members *m, rfb_err *err)
{
	struct tar_reader r;
	struct tar_member t;
	rfb_err why = { 0 };
	int rc;

	rfbi_tar_open(&r, fd, path, size);
	while ((rc = rfbi_tar_next(&r, &t, &why)) == 1) {
		size_t key_len;
		const char *ext;
		enum kind kind;
		if (t.type != '0' && t.type != '7')
			continue;          /* directories, links, devices */
		ext = rfbi_shard_key(t.name, &key_len);
		kind = member_kind(ext, sc->label_ext);
		if (kind != K_OTHER && (rc = members_add(m, &t, kind, key_len,
							 err)))
			break;
	}
	if (rc < 0 && why.code)  /* the shard is damaged from here on */
		rc = why.code == RFB_ENOMEM ? (*err = why, why.code)
					    : add_walk_error(sc, &r, &why);
	rfbi_tar_close(&r);
	return rc < 0 ? rc : 0;
}

/* ---- labels ---- */

/* The content of a label member (read when it did not fit). */
static int member_text(int fd, const struct member *x, char **out,
		       rfb_err *why)
{
	ssize_t got;

	if (x->text) {
		*out = x->text;
		return 0;
	}
	if (x->size > MAX_LABEL_FILE)
		return rfb_err_set(why, RFB_ELIMIT, NULL, "label member %s is "
				   "%llu bytes, more than refurb reads", x->name,
				   (unsigned long long)x->size);
	if (!(*out = malloc(x->size + 1)))
		return rfb_err_set(why, RFB_ENOMEM, NULL, "out of memory");
	got = rfb_pread_full(fd, *out, (size_t)x->size, (off_t)x->off);
	if (got < 0 || (uint64_t)got != x->size) {
		free(*out);
		return rfb_err_sys(why, got < 0 ? errno : EIO, NULL,
				   "cannot read label member %s", x->name);
	}
	(*out)[x->size] = 0;
	return 0;
}

/* A decimal class number: digits with surrounding white space. */
static long parse_cls(const char *s)
{
	long v = 0;
	int digits = 0;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	for (; *s >= '0' && *s <= '9'; s++, digits++)
		if ((v = v * 10 + (*s - '0')) >= (long)RFB_INDEX_MAX_CLASSES)
			return -1;
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return digits && !*s ? v : -1;
}

/* The label of the image whose group of members is g[0..n). */
static int group_label(struct scan *sc, int fd, const struct member *img,
		       const struct member *lab, struct raw_label *out,
		       rfb_err *why)
{
	char *text = NULL, shown[40];
	int rc = 0;

	out->number = -1;
	out->name = NULL;
	if (!sc->label_ext) {                       /* --label dir */
		const char *name = img->name, *slash;
		while (strncmp(name, "./", 2) == 0)    /* tar's "./" prefix */
			name += 2;
		slash = strchr(name, '/');
		if (!slash || slash == name)
			return rfb_err_set(why, RFB_EFORMAT, NULL, "no label: the "
					   "member is in no directory (--label dir)");
		out->name = strndup(name, (size_t)(slash - name));
		return out->name ? 0 : rfb_err_set(why, RFB_ENOMEM, NULL,
						   "out of memory");
	}
	if (!lab)
		return rfb_err_set(why, RFB_EFORMAT, NULL, "no label: %.*s.%s is "
				   "missing", (int)img->key_len, img->name,
				   sc->label_ext);
	if ((rc = member_text(fd, lab, &text, why)))
		return rc;
	if (sc->o->label_from == RFB_LABEL_CLS) {
		if ((out->number = parse_cls(text)) < 0) {
			snprintf(shown, sizeof shown, "%s", text);
			shown[strcspn(shown, "\n")] = 0;
			rc = rfb_err_set(why, RFB_EFORMAT, NULL, "bad label in %s: "
					 "'%s' is not a class number", lab->name,
					 shown);
		}
	} else if ((rc = rfbi_json_field(text, sc->o->label_field,
					 &out->number, &out->name))) {
		if (rc == RFBI_JSON_MALFORMED)
			rc = rfb_err_set(why, RFB_EFORMAT, NULL, "bad label in "
					 "%s: not valid JSON", lab->name);
		else
			rc = rfb_err_set(why, RFB_EFORMAT, NULL, "bad label in "
					 "%s: no field \"%s\" holding a class "
					 "number or name", lab->name,
					 sc->o->label_field);
	}
	if (text != lab->text)
		free(text);
	return rc;
}

static int raw_push(struct scan *sc, const struct raw_label *r, rfb_err *err)
{
	if (sc->l->n > sc->raw_cap) {
		size_t cap = sc->raw_cap ? sc->raw_cap * 2 : 1024;
		struct raw_label *nr;
		while (cap < sc->l->n)
			cap *= 2;
		if (!(nr = realloc(sc->raw, cap * sizeof *nr)))
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		memset(nr + sc->raw_cap, 0, (cap - sc->raw_cap) * sizeof *nr);
		sc->raw = nr;
		sc->raw_cap = cap;
	}
	sc->raw[sc->l->n - 1] = *r;
	return 0;
}

/* A candidate for member name of the shard being scanned, named as
 * messages show it (rfbi_tar_shown) when its name is longer than an index
 * keeps: such a candidate is bad (add_group), never indexed. */
static int add_member(struct scan *sc, const char *name, rfb_err *err)
{
	char shown[RFBI_TAR_SHOWN];
	int rc;

	if (strlen(name) > RFB_INDEX_MAX_PATH)
		name = rfbi_tar_shown(name, shown);
	if ((rc = rfbi_cand_add(sc->l, name, strlen(name), 0, err)))
		return rc;
	sc->l->v[sc->l->n - 1].shard = sc->l->shard_count;
	return 0;
}

/* Report the image-like members of a key group that has no image: each
 * is a bad candidate, so that it is counted and named, not lost. */
static int add_dotted(struct scan *sc, const struct member *g, size_t n,
		      rfb_err *err)
{
	struct raw_label raw = { -1, NULL };
	int rc;

	for (size_t i = 0; i < n; i++)
		if (g[i].kind == K_IMAGE)
			return 0;
	for (size_t i = 0; i < n; i++) {
		if (g[i].kind != K_DOTTED)
			continue;
		if ((rc = add_member(sc, g[i].name, err)))
			return rc;
		if ((rc = rfbi_cand_set_bad(sc->l, sc->l->n - 1, RFB_EFORMAT,
			"key '%.*s' has no image: a WebDataset key ends at the "
			"first dot of the name, so this member is its field '%s' "
			"(rename it without a dot before the extension)",
			(int)g[i].key_len, g[i].name, g[i].name + g[i].key_len + 1)) ||
		    (rc = raw_push(sc, &raw, err)))
			return rc;
	}
	return 0;
}

/* Candidates of the key group g[0..n): its first image, the later ones as
 * duplicates. */
static int add_group(struct scan *sc, int fd, const struct member *g,
		     size_t n, rfb_err *err)
{
	const struct member *lab = NULL;
	int images = 0, rc;

	for (size_t i = 0; i < n; i++)
		if (g[i].kind == K_LABEL && !lab)
			lab = &g[i];
	for (size_t i = 0; i < n; i++) {
		struct raw_label raw = { -1, NULL };
		struct candidate *c;
		rfb_err why = { 0 };
		if (g[i].kind != K_IMAGE)
			continue;
		if ((rc = add_member(sc, g[i].name, err)))
			return rc;
		c = &sc->l->v[sc->l->n - 1];
		c->offset = g[i].off;
		c->bytes = g[i].size;
		if (strlen(g[i].name) > RFB_INDEX_MAX_PATH)
			rfb_err_set(&why, RFB_ELIMIT, NULL, "member name of %zu "
				    "bytes, more than the %u an index keeps "
				    "(rename it shorter)", strlen(g[i].name),
				    RFB_INDEX_MAX_PATH);
		else if (images++)
			rfb_err_set(&why, RFB_EFORMAT, NULL, "duplicate key %.*s "
				    "(an image of that key came before it in this "
				    "shard)", (int)g[i].key_len, g[i].name);
		else
			(void)group_label(sc, fd, &g[i], lab, &raw, &why);
		if (why.code == RFB_ENOMEM)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		if (why.code && (rc = rfbi_cand_set_bad(sc->l, sc->l->n - 1, why.code,
						   "%s", why.msg)))
			return rc;
		if ((rc = raw_push(sc, &raw, err)))
			return rc;
	}
	return 0;
}

static int scan_one(struct scan *sc, const char *path, rfb_err *err)
{
	struct members m = { 0 };
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc;

	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open the shard");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return rfb_err_set(err, RFB_EINVAL, path, "shard is not a "
				   "regular file");
	}
	if ((rc = check_tar(fd, path, err)) ||
	    (rc = add_shard(sc->l, path, &st, err)) ||
	    (rc = walk_shard(sc, fd, path, (uint64_t)st.st_size, &m, err)))
		goto out;
	if (m.n)
		qsort(m.v, m.n, sizeof *m.v, cmp_member);
	for (size_t i = 0, j; rc == 0 && i < m.n; i = j) {
		for (j = i + 1; j < m.n && same_key(&m.v[i], &m.v[j]); j++)
			;
		if (!(rc = add_group(sc, fd, &m.v[i], j - i, err)))
			rc = add_dotted(sc, &m.v[i], j - i, err);
	}
out:
	members_free(&m);
	close(fd);
	return rc;
}

int rfb_scan_shards(char *const *paths, size_t n,
		    const struct rfb_scan_opts *o, rfb_index_builder **out,
		    struct rfb_scan_stats *st, rfb_err *err)
{
	struct cand_list l = { 0 };
	struct scan sc = { .o = o, .l = &l };
	struct rfbi_samples *samples = NULL;
	char *dir;
	int rc = 0;

	memset(st, 0, sizeof *st);
	if (n == 0)
		return rfb_err_set(err, RFB_EINVAL, NULL, "no shards given");
	sc.label_ext = o->label_from == RFB_LABEL_CLS ? "cls"
		       : o->label_from == RFB_LABEL_JSON ? "json" : NULL;
	if (!(dir = rfb_path_absolute(paths[0], 1)))
		return rfb_err_sys(err, errno, paths[0], "cannot open the shard");
	*strrchr(dir, '/') = 0;
	l.root = dir[0] ? dir : (free(dir), strdup("/"));
	if (!l.root)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if (!(samples = rfbi_samples_new(o, err)))
		rc = err->code;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if ((rc = scan_one(&sc, paths[i], err)) == 0)
			rc = rfbi_samples_add(samples, &l, sc.raw, sc.raw_cap,
					      err);
	if (rc == 0)
		rc = rfbi_samples_build(samples, &l, out, st, err);
	rfbi_samples_free(samples);
	for (size_t i = 0; i < sc.raw_cap; i++)
		free(sc.raw[i].name);
	free(sc.raw);
	rfbi_cand_free(&l);
	return rc;
}
