/*
 * index_scan.c - finding the candidate files of an index: the candidate list
 * and the ImageFolder walk with torchvision's ordering (see scan.h); lists
 * are index_scan_list.c's, tar shards index_scan_shards.c's.  Reading their
 * headers is index_probe.c's job.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refurb/io.h"
#include "index_scan_internal.h"

/* torchvision.datasets.folder.IMG_EXTENSIONS */
static const char *const image_ext[] = { ".jpg", ".jpeg", ".png", ".ppm",
	".bmp", ".pgm", ".tif", ".tiff", ".webp" };

#define MAX_DEPTH 64

/* ---- candidate list ---- */

int rfbi_cand_add_class(struct cand_list *l, const char *name, rfb_err *err)
{
	char **nc;

	if (l->class_count >= RFB_INDEX_MAX_CLASSES)
		return rfb_err_set(err, RFB_ELIMIT, name, "more than %u classes",
				   RFB_INDEX_MAX_CLASSES);
	if (l->class_count == l->class_cap) {
		/* doubling: a shard's .cls of 999999 adds a million classes */
		uint32_t cap = l->class_cap ? l->class_cap * 2 : 64;
		if (!(nc = realloc(l->classes, cap * sizeof *nc)))
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		l->classes = nc;
		l->class_cap = cap;
	}
	nc = l->classes;
	if (!(nc[l->class_count] = strdup(name)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	l->class_count++;
	return 0;
}

int rfbi_cand_add(struct cand_list *l, const char *path, size_t len,
		  uint32_t label, rfb_err *err)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct candidate *nv = realloc(l->v, cap * sizeof *nv);
		if (!nv)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		l->v = nv;
		l->cap = cap;
	}
	while (l->text_cap - l->text_len < len + 1) {
		size_t cap = l->text_cap ? l->text_cap * 2 : 65536;
		char *nt = realloc(l->text, cap);
		if (!nt)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		l->text = nt;
		l->text_cap = cap;
	}
	memcpy(l->text + l->text_len, path, len);
	l->text[l->text_len + len] = '\0';
	memset(&l->v[l->n], 0, sizeof l->v[l->n]);
	l->v[l->n].path_off = l->text_len;
	l->v[l->n].label = label;
	l->text_len += len + 1;
	l->n++;
	return 0;
}

int rfbi_cand_reserve(struct cand_list *l, size_t memory, uint64_t count,
		      uint64_t text_bytes, rfb_err *err)
{
	size_t half = memory ? memory / 2 : SIZE_MAX;
	size_t n = half / sizeof *l->v + 1;
	size_t text = half > SIZE_MAX - RFB_INDEX_MAX_PATH - 1 ? half
		      : half + RFB_INDEX_MAX_PATH + 1;

	if (n > count)
		n = (size_t)count;
	if (text > text_bytes)
		text = (size_t)text_bytes;
	if (n > l->cap) {
		struct candidate *nv = realloc(l->v, n * sizeof *nv);
		if (!nv)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		l->v = nv;
		l->cap = n;
	}
	if (text > l->text_cap) {
		char *nt = realloc(l->text, text);
		if (!nt)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		l->text = nt;
		l->text_cap = text;
	}
	return 0;
}

int rfbi_cand_set_bad(struct cand_list *l, size_t i, int code, const char *fmt, ...)
{
	struct candidate *c = &l->v[i];
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	c->code = code;
	free(c->why);
	if (!(c->why = strdup(msg)))
		return RFB_ENOMEM;
	return 0;
}

void rfbi_cand_clear(struct cand_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].why);
	l->n = 0;
	l->text_len = 0;
}

void rfbi_cand_free(struct cand_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].why);
	for (uint32_t k = 0; k < l->shard_count; k++) {
		free(l->shards[k].path);
		free(l->shards[k].full);
	}
	free(l->shards);
	for (uint32_t c = 0; c < l->class_count; c++)
		free(l->classes[c]);
	free(l->classes);
	free(l->v);
	free(l->text);
	free(l->root);
	memset(l, 0, sizeof *l);
}

/* ---- ImageFolder walk ---- */

static int has_image_ext(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof image_ext / sizeof image_ext[0]; i++) {
		size_t e = strlen(image_ext[i]);
		if (n >= e && strcasecmp(name + n - e, image_ext[i]) == 0)
			return 1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A vector of malloc'ed strings. */
struct strvec {
	char **v;
	size_t n, cap;
};

static int strvec_push(struct strvec *s, char *str)
{
	if (!str)
		return -1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char **nv = realloc(s->v, cap * sizeof *nv);
		if (!nv) {
			free(str);
			return -1;
		}
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	return 0;
}

static void strvec_free(struct strvec *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof *s);
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s/%s", a, b);
	return s;
}

/* The directories on the path from the class dir down to here, to stop
 * at symlink cycles (which would make os.walk loop forever). */
struct ancestry {
	dev_t dev[MAX_DEPTH];
	ino_t ino[MAX_DEPTH];
	int depth;
};

/*
 * Collect the directory rel (relative to root) and everything below it:
 * subdirectories into dirs, files with an image extension into files as
 * "dir\x01name" keys, so that sorting the keys sorts by (dir, name) the
 * way Python sorts os.walk's tuples.
 */
static int walk(int rootfd, const char *rel, struct ancestry *up,
		struct strvec *files, rfb_err *err)
{
	DIR *d;
	struct dirent *e;
	struct stat st;
	int fd, rc = 0;

	fd = openat(rootfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0; /* like os.walk: unreadable subdirectories are skipped */
	}
	for (int i = 0; i < up->depth; i++)
		if (up->dev[i] == st.st_dev && up->ino[i] == st.st_ino)
			goto out; /* symlink cycle */
	if (up->depth == MAX_DEPTH)
		goto out;
	up->dev[up->depth] = st.st_dev;
	up->ino[up->depth++] = st.st_ino;
	while (rc == 0 && (e = readdir(d))) {
		struct stat es;
		char *child;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		child = join(rel, e->d_name);
		if (!child)
			rc = rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		else if (fstatat(rootfd, child, &es, 0) == 0 && S_ISDIR(es.st_mode))
			rc = walk(rootfd, child, up, files, err);
		else if (has_image_ext(e->d_name)) {
			char *key = malloc(strlen(child) + 2);
			if (key)
				snprintf(key, strlen(child) + 2, "%s\x01%s", rel,
					 e->d_name);
			if (strvec_push(files, key))
				rc = rfb_err_set(err, RFB_ENOMEM, NULL,
						 "out of memory");
		}
		free(child);
	}
	up->depth--;
out:
	closedir(d);
	return rc;
}

/* Sorted names of the subdirectories of root (following symlinks). */
static int list_classes(int rootfd, const char *root, struct strvec *out,
			rfb_err *err)
{
	int fd = dup(rootfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return rfb_err_sys(err, errno, root, "cannot read directory");
	}
	while ((e = readdir(d))) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(rootfd, e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode) &&
		    strvec_push(out, strdup(e->d_name))) {
			closedir(d);
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		}
	}
	closedir(d);
	if (out->n)
		qsort(out->v, out->n, sizeof *out->v, cmp_str);
	return 0;
}

/* Files of one class, in torchvision's order, appended to l. */
static int add_class_files(int rootfd, struct cand_list *l, uint32_t label,
			   rfb_err *err)
{
	struct strvec files = { 0 };
	struct ancestry up = { .depth = 0 };
	int rc = walk(rootfd, l->classes[label], &up, &files, err);

	if (files.n)
		qsort(files.v, files.n, sizeof *files.v, cmp_str);
	for (size_t i = 0; rc == 0 && i < files.n; i++) {
		char *sep = strchr(files.v[i], '\x01');
		*sep = '/';
		rc = rfbi_cand_add(l, files.v[i], strlen(files.v[i]), label, err);
	}
	strvec_free(&files);
	return rc;
}

/* The files of every class, fed to the prober whenever the candidates
 * gathered take half the memory budget (with none: all at once), so that
 * a tree's candidates take at most that or one class's; *found counts
 * them. */
static int feed_classes(int rootfd, struct cand_list *l,
			const struct rfb_scan_opts *o, struct rfbi_prober *p,
			uint64_t *found, rfb_err *err)
{
	int rc = 0;

	for (uint32_t c = 0; rc == 0 && c < l->class_count; c++) {
		if ((rc = add_class_files(rootfd, l, c, err)))
			break;
		if (!rfbi_cand_full(l, o->memory) && c + 1 < l->class_count)
			continue;
		if (*found == 0 && c + 1 == l->class_count)
			rfbi_probe_set_total(p, l->n);  /* all in one feed */
		*found += l->n;
		rc = rfbi_probe_feed(p, l, err);
		rfbi_cand_clear(l);
	}
	return rc;
}

int rfb_scan_folder(const char *dir, const struct rfb_scan_opts *o,
		    rfb_index_builder **out, struct rfb_scan_stats *st,
		    rfb_err *err)
{
	struct cand_list l = { 0 };
	struct strvec classes = { 0 };
	struct rfbi_prober *p = NULL;
	struct stat sb;
	uint64_t found = 0;
	int rc = 0, rootfd;

	memset(st, 0, sizeof *st);
	if (stat(dir, &sb) < 0)
		return rfb_err_sys(err, errno, dir, "cannot open dataset directory");
	if (!S_ISDIR(sb.st_mode))
		return rfb_err_set(err, RFB_EINVAL, dir, "not a directory");
	rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return rfb_err_sys(err, errno, dir, "cannot open dataset directory");
	if (!(l.root = rfb_path_absolute(dir, 1))) {
		rc = rfb_err_sys(err, errno, dir, "cannot resolve path");
		goto fail;
	}
	if ((rc = list_classes(rootfd, dir, &classes, err)))
		goto fail;
	for (size_t c = 0; rc == 0 && c < classes.n; c++)
		rc = rfbi_cand_add_class(&l, classes.v[c], err);
	if (rc || (rc = rfbi_probe_begin(&l, o, 0, st, &p, err)) ||
	    (rc = feed_classes(rootfd, &l, o, p, &found, err)))
		goto fail;
	if (found == 0)
		rc = rfb_err_set(err, RFB_ENOTFOUND, dir,
				 classes.n ? "no image files in the class "
				 "directories" : "no class directories (expected "
				 "ImageFolder layout: DIR/CLASS/IMAGE.jpg)");
	else {
		rc = rfbi_probe_end(p, &l, out, err);
		p = NULL;   /* rfbi_probe_end freed it */
	}
fail:
	rfbi_probe_free(p);
	close(rootfd);
	strvec_free(&classes);
	rfbi_cand_free(&l);
	return rc;
}
