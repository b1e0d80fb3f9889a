/*
 * index_shard_names.c - naming shards: WebDataset's brace patterns and telling
 * a tar shard from other files by its first bytes (see scan.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/io.h"
#include "refurb/scan.h"
#include "index_tar_internal.h"

#define MAX_NAMES 10000000u

struct names {
	char **v;
	size_t n, cap;
};

static int push(struct names *s, char *str, rfb_err *err)
{
	if (!str)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if (s->n >= MAX_NAMES) {
		free(str);
		return rfb_err_set(err, RFB_ELIMIT, NULL, "the pattern names "
				   "more than %u shards", MAX_NAMES);
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **nv = realloc(s->v, cap * sizeof *nv);
		if (!nv) {
			free(str);
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		}
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	return 0;
}

/* The alternatives of the brace body b[0..n): a range or a list. */
static int alternatives(const char *b, size_t n, const char *pattern,
			struct names *out, rfb_err *err)
{
	char body[256], *dots, *end1, *end2;
	unsigned long long lo, hi;
	int rc = 0;

	if (n == 0 || n >= sizeof body)
		return rfb_err_set(err, RFB_EINVAL, NULL, "'%s': empty or too long "
				   "brace", pattern);
	memcpy(body, b, n);
	body[n] = 0;
	if ((dots = strstr(body, "..")) && !strchr(body, ',')) {
		int width = (int)(dots - body);
		errno = 0;
		lo = strtoull(body, &end1, 10);
		hi = strtoull(dots + 2, &end2, 10);
		if (end1 != dots || *end2 || end1 == body || !dots[2] || errno ||
		    hi < lo || hi - lo >= MAX_NAMES)
			return rfb_err_set(err, RFB_EINVAL, NULL, "'%s': bad range "
					   "{%s} (expected {FIRST..LAST}, FIRST <= "
					   "LAST)", pattern, body);
		for (unsigned long long v = lo; rc == 0 && v <= hi; v++) {
			char *s;
			rc = asprintf(&s, "%0*llu", body[0] == '0' ? width : 0,
				      v) < 0 ? push(out, NULL, err)
					     : push(out, s, err);
		}
		return rc;
	}
	for (char *tok = body, *comma; rc == 0; tok = comma + 1) {
		comma = strchr(tok, ',');
		if (comma)
			*comma = 0;
		rc = push(out, strdup(tok), err);
		if (!comma)
			break;
	}
	return rc;
}

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof *s);
}

int rfb_shard_expand(const char *pattern, char ***names, size_t *n,
		     rfb_err *err)
{
	struct names cur = { 0 }, next = { 0 }, alt = { 0 };
	const char *p = pattern;
	int rc = push(&cur, strdup(""), err);

	while (rc == 0 && *p) {
		const char *open = strchr(p, '{'), *close;
		size_t lit = open ? (size_t)(open - p) : strlen(p);
		if (strchr(p, '}') && (!open || strchr(p, '}') < open)) {
			rc = rfb_err_set(err, RFB_EINVAL, NULL, "'%s': '}' without "
					 "'{'", pattern);
			break;
		}
		close = open ? strchr(open, '}') : NULL;
		if (open && !close) {
			rc = rfb_err_set(err, RFB_EINVAL, NULL, "'%s': '{' without "
					 "'}'", pattern);
			break;
		}
		if (open && (rc = alternatives(open + 1, (size_t)(close - open - 1),
					       pattern, &alt, err)))
			break;
		for (size_t i = 0; rc == 0 && i < cur.n; i++)
			for (size_t j = 0; rc == 0 && j < (open ? alt.n : 1); j++) {
				char *s;
				if (asprintf(&s, "%s%.*s%s", cur.v[i], (int)lit, p,
					     open ? alt.v[j] : "") < 0)
					s = NULL;
				rc = push(&next, s, err);
			}
		names_free(&cur);
		names_free(&alt);
		cur = next;
		memset(&next, 0, sizeof next);
		p = open ? close + 1 : p + lit;
	}
	names_free(&next);
	names_free(&alt);
	if (rc) {
		names_free(&cur);
		return rc;
	}
	*names = cur.v;
	*n = cur.n;
	return 0;
}

int rfb_shard_sniff(const char *path, rfb_err *err)
{
	unsigned char b[2 * TAR_BLOCK];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t got;
	enum tar_kind k;
	int rc;

	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open");
	got = rfb_read_full(fd, b, sizeof b);
	close(fd);
	if (got < 0)
		return rfb_err_sys(err, errno, path, "cannot read");
	k = rfbi_tar_sniff(b, (size_t)got);
	if (k == TAR_NOT)
		return 0;
	rc = rfbi_tar_check_kind(k, path, err);
	return rc ? rc : 1;
}
