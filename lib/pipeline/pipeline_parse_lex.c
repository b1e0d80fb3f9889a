/*
 * pipeline_parse_lex.c - the spec's tokens and values for the parser
 * (pipeline_parse.c): numbers, ranges, lists and words, the error that
 * points at a column of the spec with a caret, and the suggestions ("did
 * you mean") its messages make.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_parse_internal.h"

int rfbi_spec_error(struct rfbi_parser *ps, size_t at, const char *fmt, ...)
{
	char what[300], view[200];
	size_t len = strlen(ps->spec), from = 0, caret;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	/* long specs: show 60 bytes either side of the error */
	if (len > 160 && at > 60)
		from = at - 60;
	snprintf(view, sizeof view, "%s%.*s%s", from ? "..." : "",
		 (int)(len - from > 120 && len > 160 ? 120 : len - from),
		 ps->spec + from, len > 160 && len - from > 120 ? "..." : "");
	caret = at - from + (from ? 3 : 0);
	return rfb_err_set(ps->err, RFB_ESPEC, NULL,
			   "bad pipeline spec at column %zu: %s\n  %s\n  %*s^%s%s",
			   at + 1, what, view, (int)caret, "",
			   ps->hint[0] ? "\n  " : "", ps->hint);
}

/* ---- suggestions ---- */

int rfbi_spec_distance(const char *a, size_t n, const char *b)
{
	size_t m = strlen(b);
	int d[40][40];

	if (n >= 40 || m >= 40)
		return 99;
	for (size_t i = 0; i <= n; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			int sub = tolower((unsigned char)a[i - 1]) !=
				  tolower((unsigned char)b[j - 1]);
			int v = d[i - 1][j - 1] + sub;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m];
}

const char *rfbi_spec_closest(const struct rfbi_tok *t, const char *const *names,
			      int count)
{
	const char *best = NULL;
	int best_d = (int)(t->n / 3 > 1 ? t->n / 3 : 1) + 1;

	for (int i = 0; i < count; i++) {
		int d = rfbi_spec_distance(t->s, t->n, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	return best;
}

const char *rfbi_spec_did_you_mean(char *buf, size_t size, const struct rfbi_tok *t,
				   const char *const *names, int count)
{
	const char *near = rfbi_spec_closest(t, names, count);

	if (!near)
		return "";
	snprintf(buf, size, " (did you mean \"%s\"?)", near);
	return buf;
}

void rfbi_spec_hint(struct rfbi_parser *ps, const char *what,
		    const char *const *names, int count)
{
	size_t len = (size_t)snprintf(ps->hint, sizeof ps->hint, "%s:", what);

	for (int i = 0; i < count && len < sizeof ps->hint; i++)
		len += (size_t)snprintf(ps->hint + len, sizeof ps->hint - len,
					"%s %s", i ? "," : "", names[i]);
}

/* ---- tokens ---- */

int rfbi_tok_is(const struct rfbi_tok *t, const char *word)
{
	return strlen(word) == t->n && memcmp(word, t->s, t->n) == 0;
}

int rfbi_tok_split(const struct rfbi_tok *t, char sep, struct rfbi_tok *parts,
		   int max)
{
	int n = 0;
	size_t start = 0;

	for (size_t i = 0; i <= t->n; i++) {
		if (i < t->n && t->s[i] != sep)
			continue;
		if (n == max)
			return -1;
		parts[n++] = (struct rfbi_tok){ t->s + start, i - start,
						t->at + start };
		start = i + 1;
	}
	return n;
}

/* ---- values ---- */

int rfbi_parse_int(struct rfbi_parser *ps, const struct rfbi_tok *t, long lo,
		   long hi, const char *what, int *out)
{
	long v = 0;

	if (t->n == 0 || t->n > 9)
		goto bad;
	for (size_t i = 0; i < t->n; i++) {
		if (!isdigit((unsigned char)t->s[i]))
			goto bad;
		v = v * 10 + (t->s[i] - '0');
	}
	if (v < lo || v > hi)
		return rfbi_spec_error(ps, t->at, "%s %ld out of range %ld..%ld",
				       what, v, lo, hi);
	*out = (int)v;
	return 0;
bad:
	return rfbi_spec_error(ps, t->at, "%s \"%.*s\" is not an integer", what,
			       (int)t->n, t->s);
}

int rfbi_parse_num(struct rfbi_parser *ps, const struct rfbi_tok *t,
		   const char *what, double *out)
{
	char buf[64];
	char *end;

	if (t->n == 0 || t->n >= sizeof buf ||
	    strspn(t->s, "0123456789.eE+-/") < t->n)
		goto bad;
	memcpy(buf, t->s, t->n);
	buf[t->n] = '\0';
	*out = strtod(buf, &end);
	if (*end == '/' && end > buf) {
		char *den_at = end + 1;
		double den = strtod(den_at, &end);
		if (end == den_at || den == 0.0)
			goto bad;
		*out /= den;
	}
	if (*end || !isfinite(*out))
		goto bad;
	return 0;
bad:
	return rfbi_spec_error(ps, t->at, "%s \"%.*s\" is not a number", what,
			       (int)t->n, t->s);
}

int rfbi_parse_bounded(struct rfbi_parser *ps, const struct rfbi_tok *v,
		       const char *what, double lo, double hi, double *out)
{
	if (rfbi_parse_num(ps, v, what, out))
		return RFB_ESPEC;
	if (*out < lo || *out > hi)
		return rfbi_spec_error(ps, v->at, "%s %g out of range %g..%g",
				       what, *out, lo, hi);
	return 0;
}

int rfbi_parse_range(struct rfbi_parser *ps, const struct rfbi_tok *t,
		     const char *what, double lo_min, double hi_max,
		     double out[2])
{
	/* the dash after a digit or a dot: not an exponent's (1e-06) */
	size_t dash = rfbi_range_dash(t);
	struct rfbi_tok part[2] = {
		{ t->s, dash, t->at },
		{ t->s + dash + 1, dash < t->n ? t->n - dash - 1 : 0,
		  t->at + dash + 1 },
	};
	int n = dash == t->n ? 1 : rfbi_range_dash(&part[1]) < part[1].n ? -1 : 2;

	if (n < 0 || rfbi_parse_num(ps, &part[0], what, &out[0]) ||
	    (n == 2 && rfbi_parse_num(ps, &part[1], what, &out[1])))
		return n < 0 ? rfbi_spec_error(ps, t->at, "%s \"%.*s\" is not A-B",
					       what, (int)t->n, t->s)
			     : RFB_ESPEC;
	if (n == 1)
		out[1] = out[0];
	if (!(out[0] > lo_min && out[0] <= out[1] && out[1] <= hi_max))
		return rfbi_spec_error(ps, t->at,
				       "%s %g-%g: need %g < low <= high <= %g",
				       what, out[0], out[1], lo_min, hi_max);
	return 0;
}

size_t rfbi_range_dash(const struct rfbi_tok *t)
{
	for (size_t i = 1; i < t->n; i++)
		if (t->s[i] == '-' && (isdigit((unsigned char)t->s[i - 1]) ||
				       t->s[i - 1] == '.'))
			return i;
	return t->n;
}

int rfbi_parse_srange(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      const char *what, int sym, double center, double out[2])
{
	size_t dash = rfbi_range_dash(t);
	struct rfbi_tok a = { t->s, dash, t->at };

	if (rfbi_parse_num(ps, &a, what, &out[0]))
		return RFB_ESPEC;
	if (dash < t->n) {
		struct rfbi_tok b = { t->s + dash + 1, t->n - dash - 1,
				      t->at + dash + 1 };
		if (rfbi_parse_num(ps, &b, what, &out[1]))
			return RFB_ESPEC;
		if (out[0] > out[1])
			return rfbi_spec_error(ps, t->at, "%s %g-%g: low > high",
					       what, out[0], out[1]);
		return 0;
	}
	if (!sym) {
		out[1] = out[0];
		return 0;
	}
	if (out[0] < 0)
		return rfbi_spec_error(ps, t->at,
				       "%s %g: a single value must be >= 0",
				       what, out[0]);
	out[1] = center + out[0];
	out[0] = center - out[0];
	return 0;
}

int rfbi_parse_triple(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      const char *what, double out[3], int *count)
{
	struct rfbi_tok part[3];
	int n = rfbi_tok_split(t, '/', part, 3);

	*count = 0;
	if (n != 1 && n != 3)
		return rfbi_spec_error(ps, t->at,
				       "%s needs 1 or 3 values separated by '/'",
				       what);
	for (int i = 0; i < n; i++)
		if (rfbi_parse_num(ps, &part[i], what, &out[i]))
			return RFB_ESPEC;
	for (int i = n; i < 3; i++)
		out[i] = out[0];
	*count = n;
	return 0;
}

int rfbi_parse_word(struct rfbi_parser *ps, const struct rfbi_tok *t,
		    const char *what, const char *const *names, int count,
		    int *out)
{
	char near[80];

	for (int i = 0; i < count; i++)
		if (rfbi_tok_is(t, names[i])) {
			*out = i;
			return 0;
		}
	rfbi_spec_hint(ps, what, names, count);
	return rfbi_spec_error(ps, t->at, "unknown %s \"%.*s\"%s", what,
			       (int)t->n, t->s,
			       rfbi_spec_did_you_mean(near, sizeof near, t,
						      names, count));
}

int rfbi_parse_enum(struct rfbi_parser *ps, const struct rfbi_tok *t,
		    const char *what, const struct rfb_enum_name *table,
		    int count, int *out)
{
	const char *names[RFBI_ENUM_MAX];
	int n = 0, i = 0, rc;

	while (n < count && n < RFBI_ENUM_MAX && table[n].name) {
		names[n] = table[n].name;
		n++;
	}
	rc = rfbi_parse_word(ps, t, what, names, n, &i);
	if (rc == 0)
		*out = table[i].value;
	return rc;
}

int rfbi_parse_bool(struct rfbi_parser *ps, const struct rfbi_tok *t,
		    const char *what, int *out)
{
	static const char *const bool_names[] = { "0", "1" };

	return rfbi_parse_word(ps, t, what, bool_names, 2, out);
}

int rfbi_parse_interp(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      int count)
{
	int v = RFB_INTERP_NEAREST, rc;

	rc = rfbi_parse_enum(ps, t, "interpolation", rfb_interp_names, count,
			     &v);
	ps->cur.interp = (enum rfb_interp)v;
	return rc;
}

int rfbi_parse_fill(struct rfbi_parser *ps, const struct rfbi_tok *t)
{
	struct rfbi_tok part[3];
	int n = rfbi_tok_split(t, '/', part, 3), v;

	if (n != 1 && n != 3)
		return rfbi_spec_error(ps, t->at,
				       "fill needs 1 or 3 values separated by '/'");
	for (int i = 0; i < n; i++) {
		if (rfbi_parse_int(ps, &part[i], 0, 255, "fill", &v))
			return RFB_ESPEC;
		ps->cur.fill[i] = (unsigned char)v;
	}
	if (n == 1)
		ps->cur.fill[1] = ps->cur.fill[2] = ps->cur.fill[0];
	return 0;
}
