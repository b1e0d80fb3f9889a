/*
 * geometry_cases.h - reading tests/data/golden/geometry/manifest.tsv
 * (written by scripts/golden-geometry.py) for test_resize.c and
 * test_transform.c.  Each row: case, input, op, params (k=v:k=v or -),
 * output.
 */
#ifndef REFURB_GEOMETRY_CASES_H
#define REFURB_GEOMETRY_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEOMETRY_DIR "tests/data/golden/geometry"

struct gcase {
	char name[128], input[128], op[32], params[256], output[160];
};

/* Read the manifest's rows; returns the count (0 if unreadable).
 * *out is malloc'ed (caller frees). */
static inline int gcase_load(struct gcase **out)
{
	FILE *f = fopen(GEOMETRY_DIR "/manifest.tsv", "r");
	char line[1024];
	int n = 0, cap = 0;
	struct gcase *v = NULL;

	*out = NULL;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		struct gcase c;
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%127[^\t]\t%127[^\t]\t%31[^\t]\t%255[^\t]\t%159[^\t\n]",
			   c.name, c.input, c.op, c.params, c.output) != 5)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			v = realloc(v, (size_t)cap * sizeof *v);
			if (!v)
				break;
		}
		v[n++] = c;
	}
	fclose(f);
	*out = v;
	return v ? n : 0;
}

/* The value of key in params ("a=1:b=x"), copied to buf; NULL if absent. */
static inline const char *gcase_param(const struct gcase *c, const char *key,
				      char *buf, size_t n)
{
	size_t kl = strlen(key);
	const char *p = c->params;

	while (*p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > kl && p[kl] == '=' && strncmp(p, key, kl) == 0) {
			size_t vl = len - kl - 1 < n - 1 ? len - kl - 1 : n - 1;
			memcpy(buf, p + kl + 1, vl);
			buf[vl] = '\0';
			return buf;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return NULL;
}

static inline int gcase_int(const struct gcase *c, const char *key)
{
	char buf[64];
	return gcase_param(c, key, buf, sizeof buf) ? atoi(buf) : -1;
}

static inline int gcase_path(char *buf, size_t n, const char *file)
{
	return snprintf(buf, n, "%s/%s", GEOMETRY_DIR, file) < (int)n ? 0 : -1;
}

#endif
