/*
 * index_scan.c - finding the candidate files of an index: the ImageFolder walk
 * with torchvision's ordering, and list/TSV parsing (see scan.h).  Reading
 * their headers is index_probe.c's job.
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
#define LIST_MAX_BYTES ((size_t)1 << 36)

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

int rfbi_cand_reserve(struct cand_list *l, size_t n, size_t text,
		      rfb_err *err)
{
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
		if ((!o->memory || l->n * sizeof *l->v + l->text_len <
		     o->memory / 2) && c + 1 < l->class_count)
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

/* ---- lists and TSV ---- */

/* One parsed list line: path and label text point into the loaded list. */
struct list_line {
	char *path, *label, *class_name; /* class_name: TSV form only */
	size_t lineno;
};

static int is_number(const char *s)
{
	if (!*s || strlen(s) > 9)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Undo refurb-dump's escapes in place: \t \n \r \\ are a tab, a
 * newline, a carriage return and a backslash; any other backslash is
 * itself. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		char c = *s;
		if (c == '\\' && s[1]) {
			switch (s[1]) {
			case 't': c = '\t'; s++; break;
			case 'n': c = '\n'; s++; break;
			case 'r': c = '\r'; s++; break;
			case '\\': s++; break;
			}
		}
		*o++ = c;
	}
	*o = '\0';
}

/* Split line at tabs into at most max fields, each unescaped; returns
 * the field count. */
static int split_tabs(char *line, char **f, int max)
{
	int n = 0;

	f[n++] = line;
	for (char *p = line; *p; p++)
		if (*p == '\t') {
			*p = '\0';
			if (n == max)
				return max + 1;
			f[n++] = p + 1;
		}
	for (int i = 0; i < n; i++)
		unescape(f[i]);
	return n;
}

/* "# root<TAB>DIR" and "# class<TAB>LABEL<TAB>NAME" lines of the TSV. */
static int parse_comment(char *line, struct cand_list *l, const char *name,
			 size_t lineno, rfb_err *err)
{
	char *f[4];
	int n = split_tabs(line, f, 3);

	if (n == 2 && strcmp(f[0], "# root") == 0 && !l->root) {
		l->root = strdup(f[1]);
		return l->root ? 0 : rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	}
	if (n == 3 && strcmp(f[0], "# class") == 0) {
		if (!is_number(f[1]) || strtoul(f[1], NULL, 10) != l->class_count)
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "line %zu: class %s out of order", lineno,
					   f[1]);
		return rfbi_cand_add_class(l, f[2], err);
	}
	return 0;
}

static int parse_list_lines(char *text, struct cand_list *l, const char *name,
			    struct list_line **out, size_t *count, rfb_err *err)
{
	size_t n = 0, cap = 0, lineno = 0;
	struct list_line *v = NULL;
	char *next = text;

	/* not strtok_r: it would skip blank lines and so miscount them */
	while (next && *next) {
		char *line = next, *nl = strchr(line, '\n');
		char *f[9];
		int nf;
		next = nl ? nl + 1 : NULL;
		if (nl)
			*nl = '\0';
		lineno++;
		line[strcspn(line, "\r")] = '\0';
		if (line[0] == '#') {
			int rc = parse_comment(line, l, name, lineno, err);
			if (rc) {
				free(v);
				return rc;
			}
			continue;
		}
		if (!line[0])
			continue;
		nf = split_tabs(line, f, 8);
		if (nf != 2 && nf != 8) {
			free(v);
			return rfb_err_set(err, RFB_EFORMAT, name,
				"line %zu: expected PATH<TAB>LABEL or refurb-dump's "
				"8-column TSV, got %d fields", lineno, nf);
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct list_line *nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				free(v);
				return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
			}
			v = nv;
		}
		v[n].lineno = lineno;
		v[n].path = nf == 2 ? f[0] : f[7];
		v[n].label = f[1];
		v[n].class_name = nf == 8 ? f[2] : NULL;
		if (!v[n].path[0]) {
			free(v);
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "line %zu: empty path", lineno);
		}
		n++;
	}
	*out = v;
	*count = n;
	return 0;
}

/* Labels that are all numbers name classes "0".."max"; otherwise the
 * distinct label texts, sorted, are the classes. */
static int derive_classes(struct cand_list *l, struct list_line *v, size_t n,
			  rfb_err *err)
{
	int numeric = 1, rc = 0;
	unsigned long max = 0;
	struct strvec names = { 0 };

	for (size_t i = 0; i < n; i++)
		if (!is_number(v[i].label))
			numeric = 0;
		else if (strtoul(v[i].label, NULL, 10) > max)
			max = strtoul(v[i].label, NULL, 10);
	if (numeric) {
		if (max >= RFB_INDEX_MAX_CLASSES)
			return rfb_err_set(err, RFB_ELIMIT, NULL,
					   "label %lu: more than %u classes", max,
					   RFB_INDEX_MAX_CLASSES);
		for (unsigned long c = 0; rc == 0 && c <= max && n; c++) {
			char buf[16];
			snprintf(buf, sizeof buf, "%lu", c);
			rc = rfbi_cand_add_class(l, buf, err);
		}
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		if (strvec_push(&names, strdup(v[i].label)))
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if (names.n)
		qsort(names.v, names.n, sizeof *names.v, cmp_str);
	for (size_t i = 0; rc == 0 && i < names.n; i++)
		if (i == 0 || strcmp(names.v[i], names.v[i - 1]))
			rc = rfbi_cand_add_class(l, names.v[i], err);
	strvec_free(&names);
	return rc;
}

static int find_class(const struct cand_list *l, const char *label,
		      const char *class_name)
{
	if (class_name || is_number(label)) {
		unsigned long c = is_number(label) ? strtoul(label, NULL, 10)
						   : l->class_count;
		if (c < l->class_count &&
		    (!class_name || strcmp(l->classes[c], class_name) == 0))
			return (int)c;
		if (class_name)
			return -1;
	}
	/* class names are sorted: binary search */
	size_t lo = 0, hi = l->class_count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(l->classes[mid], label);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int set_list_root(struct cand_list *l, const struct rfb_scan_opts *o,
			 rfb_err *err)
{
	char cwd[PATH_MAX];
	const char *base = o->root ? o->root : l->root;

	if (!base) {
		if (!getcwd(cwd, sizeof cwd))
			return rfb_err_sys(err, errno, ".", "cannot get cwd");
		base = cwd;
	}
	char *abs = rfb_path_absolute(base, 1);
	if (!abs)
		return rfb_err_sys(err, errno, base, "root directory");
	free(l->root);
	l->root = abs;
	return 0;
}

int rfb_scan_list(const char *list, const struct rfb_scan_opts *o,
		  rfb_index_builder **out, struct rfb_scan_stats *st,
		  rfb_err *err)
{
	struct cand_list l = { 0 };
	struct list_line *v = NULL;
	unsigned char *text = NULL;
	size_t n = 0, len;
	const char *name = strcmp(list, "-") ? list : "(stdin)";
	int rc;

	if ((rc = rfb_file_load(list, LIST_MAX_BYTES, &text, &len, err)))
		return rc;
	if (memchr(text, 0, len)) {
		rc = rfb_err_set(err, RFB_EFORMAT, name,
				 "binary data, not a list of paths");
		goto fail;
	}
	if ((rc = parse_list_lines((char *)text, &l, name, &v, &n, err)))
		goto fail;
	if (l.class_count == 0 && (rc = derive_classes(&l, v, n, err)))
		goto fail;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int c = find_class(&l, v[i].label, v[i].class_name);
		if (c < 0)
			rc = rfb_err_set(err, RFB_EFORMAT, name,
					 "line %zu: unknown class '%s'", v[i].lineno,
					 v[i].class_name ? v[i].class_name : v[i].label);
		else
			rc = rfbi_cand_add(&l, v[i].path, strlen(v[i].path),
				      (uint32_t)c, err);
	}
	if (rc == 0 && l.n == 0)
		rc = rfb_err_set(err, RFB_ENOTFOUND, name, "no images listed");
	free(v);     /* the candidates hold copies: not kept while probing */
	free(text);
	v = NULL;
	text = NULL;
	if (rc == 0 && (rc = set_list_root(&l, o, err)) == 0)
		rc = rfbi_probe_and_build(&l, o, out, st, err);
fail:
	free(v);
	free(text);
	rfbi_cand_free(&l);
	return rc;
}
