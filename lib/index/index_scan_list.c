/*
 * index_scan_list.c - the candidates of a list of files ("path<TAB>label"
 * lines, or the TSV refurb-dump prints), in bounded memory (see scan.h).
 * The list is read once, a line at a time, its lines kept on a spill
 * (index_spill.c) and the label texts sorted (index_runs.c) for the class
 * table; then the lines are checked against the classes onto a second
 * spill, which feeds the prober half the budget of candidates at a time.
 * Nothing here grows with the number of lines but the temporary files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/io.h"
#include "index_runs_internal.h"
#include "index_scan_internal.h"
#include "index_spill_internal.h"

/* One parsed list line: path and label text point into the line. */
struct list_line {
	char *path, *label, *class_name; /* class_name: TSV form only */
	size_t lineno;
};

/* A line on the first spill (this file's own layout): line number u64,
 * has_class u8, (3 zero bytes), path_len u32, label_len u32, class_len
 * u32, then the three texts.  On the second: label u32, then the path. */
#define LINE_HEAD 24

/* Reading the list. */
struct list_read {
	const char *name;          /* for messages: the file or "(stdin)" */
	struct rfbi_spill *lines;  /* the lines with a path */
	struct rfbi_runs *labels;  /* their label texts, unique */
	size_t count;
	uint64_t text_bytes;       /* their paths, with a NUL each */
	int numeric;               /* every label a number */
	unsigned long max;         /* the largest */
	unsigned char *buf;
	size_t buf_cap;
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

/* Line lineno (its newline cut off): 1 with *out filled for a line with a
 * path, 0 for a blank or comment line, or a negative RFB_E* code. */
static int parse_line(char *line, size_t lineno, struct cand_list *l,
		      const char *name, struct list_line *out, rfb_err *err)
{
	char *f[9];
	int nf;

	line[strcspn(line, "\r")] = '\0';
	if (line[0] == '#')
		return parse_comment(line, l, name, lineno, err);
	if (!line[0])
		return 0;
	nf = split_tabs(line, f, 8);
	if (nf != 2 && nf != 8)
		return rfb_err_set(err, RFB_EFORMAT, name,
			"line %zu: expected PATH<TAB>LABEL or refurb-dump's "
			"8-column TSV, got %d fields", lineno, nf);
	out->lineno = lineno;
	out->path = nf == 2 ? f[0] : f[7];
	out->label = f[1];
	out->class_name = nf == 8 ? f[2] : NULL;
	if (!out->path[0])
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "line %zu: empty path", lineno);
	return 1;
}

static int reserve(unsigned char **buf, size_t *cap, size_t need,
		   rfb_err *err)
{
	unsigned char *nb;

	if (need <= *cap)
		return 0;
	if (!(nb = realloc(*buf, need)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	*buf = nb;
	*cap = need;
	return 0;
}

/* Keep a line with a path: on the spill, its label counted and sorted
 * (unless the list names its classes). */
static int keep_line(struct list_read *r, const struct cand_list *l,
		     const struct list_line *x, rfb_err *err)
{
	size_t pl = strlen(x->path), ll = strlen(x->label);
	size_t cl = x->class_name ? strlen(x->class_name) : 0;
	unsigned char *b;
	int rc;

	if (!is_number(x->label))
		r->numeric = 0;
	else if (strtoul(x->label, NULL, 10) > r->max)
		r->max = strtoul(x->label, NULL, 10);
	if (!l->class_count && (rc = rfbi_runs_put(r->labels, x->label, ll, err)))
		return rc;
	if ((rc = reserve(&r->buf, &r->buf_cap, LINE_HEAD + pl + ll + cl, err)))
		return rc;
	b = r->buf;
	memset(b, 0, LINE_HEAD);
	rfb_put_le64(b, x->lineno);
	b[8] = x->class_name != NULL;
	rfb_put_le32(b + 12, (uint32_t)pl);
	rfb_put_le32(b + 16, (uint32_t)ll);
	rfb_put_le32(b + 20, (uint32_t)cl);
	memcpy(b + LINE_HEAD, x->path, pl);
	memcpy(b + LINE_HEAD + pl, x->label, ll);
	if (cl)
		memcpy(b + LINE_HEAD + pl + ll, x->class_name, cl);
	r->count++;
	r->text_bytes += pl + 1;
	return rfbi_spill_put(r->lines, b, LINE_HEAD + pl + ll + cl, err);
}

/* The list as a stream, with rfb_file_load's checks and messages. */
static FILE *open_list(const char *list, rfb_err *err)
{
	struct stat st;
	FILE *f;
	int fd;

	if (strcmp(list, "-") == 0)
		return stdin;
	if ((fd = open(list, O_RDONLY | O_CLOEXEC)) < 0) {
		rfb_err_sys(err, errno, list, "cannot open");
		return NULL;
	}
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			rfb_err_set(err, RFB_EINVAL, list, "is a directory, not "
				    "a file");
		else
			rfb_err_sys(err, errno, list, "cannot stat");
		close(fd);
		return NULL;
	}
	if (!(f = fdopen(fd, "r"))) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		close(fd);
	}
	return f;
}

/* Every line of f: the first bad line stops the parse, but the rest is
 * still read, since a NUL anywhere makes the file binary data, which is
 * the message then. */
static int read_lines(struct list_read *r, FILE *f, struct cand_list *l,
		      rfb_err *err)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0, binary = 0;

	while (!binary && (len = getline(&line, &cap, f)) >= 0) {
		struct list_line x = { 0 };
		binary = memchr(line, 0, (size_t)len) != NULL;
		if (rc || binary)
			continue;
		lineno++;
		if (len && line[len - 1] == '\n')
			line[len - 1] = '\0';
		if ((rc = parse_line(line, lineno, l, r->name, &x, err)) == 1)
			rc = keep_line(r, l, &x, err);
		if (rc == RFB_ENOMEM)
			break;
	}
	if (!binary && ferror(f))
		rc = rfb_err_sys(err, errno, r->name, "read failed");
	free(line);
	if (binary)
		return rfb_err_set(err, RFB_EFORMAT, r->name,
				   "binary data, not a list of paths");
	return rc;
}

/* Labels that are all numbers name classes "0".."max"; otherwise the
 * distinct label texts, sorted, are the classes. */
static int derive_classes(struct list_read *r, struct cand_list *l,
			  rfb_err *err)
{
	const unsigned char *t;
	size_t n;
	int rc = 0;

	if (r->numeric) {
		if (r->max >= RFB_INDEX_MAX_CLASSES)
			return rfb_err_set(err, RFB_ELIMIT, NULL,
					   "label %lu: more than %u classes",
					   r->max, RFB_INDEX_MAX_CLASSES);
		for (unsigned long c = 0; rc == 0 && c <= r->max && r->count; c++) {
			char buf[16];
			snprintf(buf, sizeof buf, "%lu", c);
			rc = rfbi_cand_add_class(l, buf, err);
		}
		return rc;
	}
	while ((rc = rfbi_runs_get(r->labels, &t, &n, err)) == 1) {
		if ((rc = reserve(&r->buf, &r->buf_cap, n + 1, err)))
			return rc;
		memcpy(r->buf, t, n);
		r->buf[n] = 0;
		if ((rc = rfbi_cand_add_class(l, (char *)r->buf, err)))
			return rc;
	}
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

/* A spilled line back, its texts NUL-terminated in buf. */
static int unpack_line(const unsigned char *b, size_t n, unsigned char **buf,
		       size_t *cap, struct list_line *x, rfb_err *err)
{
	size_t pl, ll, cl;
	char *t;
	int rc;

	if (n < LINE_HEAD || (pl = rfb_get_le32(b + 12)) + (ll = rfb_get_le32(
	    b + 16)) + (cl = rfb_get_le32(b + 20)) != n - LINE_HEAD)
		return rfb_err_set(err, RFB_EIO, NULL, "a temporary file of "
				   "the list is damaged");
	if ((rc = reserve(buf, cap, pl + ll + cl + 3, err)))
		return rc;
	t = (char *)*buf;
	x->lineno = (size_t)rfb_get_le64(b);
	x->path = memcpy(t, b + LINE_HEAD, pl);
	x->path[pl] = 0;
	x->label = memcpy(t + pl + 1, b + LINE_HEAD + pl, ll);
	x->label[ll] = 0;
	x->class_name = b[8] ? memcpy(t + pl + ll + 2, b + LINE_HEAD + pl + ll,
				      cl) : NULL;
	if (x->class_name)
		x->class_name[cl] = 0;
	return 0;
}

/* Every line's class, found before any header is read (an unknown one
 * stops the scan): the path and the label onto the spill out. */
static int label_lines(struct list_read *r, const struct cand_list *l,
		       struct rfbi_spill *out, rfb_err *err)
{
	const unsigned char *b;
	unsigned char *text = NULL;
	size_t n, cap = 0;
	int rc;

	if ((rc = rfbi_spill_rewind(r->lines, err)))
		return rc;
	while ((rc = rfbi_spill_get(r->lines, &b, &n, err)) == 1) {
		struct list_line x = { 0 };
		int c;
		size_t pl;
		if ((rc = unpack_line(b, n, &text, &cap, &x, err)))
			break;
		if ((c = find_class(l, x.label, x.class_name)) < 0) {
			rc = rfb_err_set(err, RFB_EFORMAT, r->name,
					 "line %zu: unknown class '%s'", x.lineno,
					 x.class_name ? x.class_name : x.label);
			break;
		}
		pl = strlen(x.path);
		if ((rc = reserve(&r->buf, &r->buf_cap, 4 + pl, err)))
			break;
		rfb_put_le32(r->buf, (uint32_t)c);
		memcpy(r->buf + 4, x.path, pl);
		if ((rc = rfbi_spill_put(out, r->buf, 4 + pl, err)))
			break;
	}
	free(text);
	return rc < 0 ? rc : 0;
}

/* The labelled lines to the prober, half the budget at a time. */
static int feed_lines(struct rfbi_spill *in, uint64_t count,
		      uint64_t text_bytes, struct cand_list *l,
		      const struct rfb_scan_opts *o, struct rfbi_prober *p,
		      rfb_err *err)
{
	const unsigned char *b;
	size_t n;
	int rc;

	if ((rc = rfbi_cand_reserve(l, o->memory, count, text_bytes, err)) ||
	    (rc = rfbi_spill_rewind(in, err)))
		return rc;
	while ((rc = rfbi_spill_get(in, &b, &n, err)) == 1) {
		if (n < 4)
			return rfb_err_set(err, RFB_EIO, NULL, "a temporary file "
					   "of the list is damaged");
		if ((rc = rfbi_cand_add(l, (const char *)b + 4, n - 4,
					rfb_get_le32(b), err)))
			return rc;
		if (!rfbi_cand_full(l, o->memory))
			continue;
		rc = rfbi_probe_feed(p, l, err);
		rfbi_cand_clear(l);
		if (rc)
			return rc;
	}
	if (rc == 0 && l->n) {
		rc = rfbi_probe_feed(p, l, err);
		rfbi_cand_clear(l);
	}
	return rc;
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

/* Read, classify and label the lines of the list, onto *labelled. */
static int read_list(const char *list, const struct rfb_scan_opts *o,
		     struct cand_list *l, struct rfbi_spill **labelled,
		     size_t *count, uint64_t *text_bytes, rfb_err *err)
{
	size_t quarter = o->memory / 4;
	struct list_read r = { .name = strcmp(list, "-") ? list : "(stdin)",
			       .numeric = 1 };
	FILE *f = NULL;
	int rc;

	if (!(r.lines = rfbi_spill_new(o->temp_dir, quarter, err)) ||
	    !(r.labels = rfbi_runs_new(o->temp_dir, quarter, rfbi_runs_cmp_bytes,
				       NULL, 1, err)) ||
	    !(f = open_list(list, err))) {
		rc = err->code;
		goto fail;
	}
	if ((rc = read_lines(&r, f, l, err)) ||
	    (l->class_count == 0 && (rc = derive_classes(&r, l, err))))
		goto fail;
	rfbi_runs_free(r.labels);   /* not held while the lines are labelled */
	r.labels = NULL;
	if (!(*labelled = rfbi_spill_new(o->temp_dir, quarter, err)))
		rc = err->code;
	else
		rc = label_lines(&r, l, *labelled, err);
	*count = r.count;
	*text_bytes = r.text_bytes;
fail:
	if (f && f != stdin)
		fclose(f);
	rfbi_spill_free(r.lines);
	rfbi_runs_free(r.labels);
	free(r.buf);
	return rc;
}

int rfb_scan_list(const char *list, const struct rfb_scan_opts *o,
		  rfb_index_builder **out, struct rfb_scan_stats *st,
		  rfb_err *err)
{
	struct cand_list l = { 0 };
	struct rfbi_spill *labelled = NULL;
	struct rfbi_prober *p = NULL;
	size_t n = 0;
	uint64_t text_bytes = 0;
	int rc;

	memset(st, 0, sizeof *st);
	if ((rc = read_list(list, o, &l, &labelled, &n, &text_bytes, err)))
		goto fail;
	if (n == 0) {
		rc = rfb_err_set(err, RFB_ENOTFOUND, strcmp(list, "-") ? list
				 : "(stdin)", "no images listed");
		goto fail;
	}
	if ((rc = set_list_root(&l, o, err)) ||
	    (rc = rfbi_probe_begin(&l, o, n, st, &p, err)) ||
	    (rc = feed_lines(labelled, n, text_bytes, &l, o, p, err)))
		goto fail;
	rc = rfbi_probe_end(p, &l, out, err);
	p = NULL;   /* rfbi_probe_end freed it */
fail:
	rfbi_probe_free(p);
	rfbi_spill_free(labelled);
	rfbi_cand_free(&l);
	return rc;
}
