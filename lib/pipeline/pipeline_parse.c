/*
 * pipeline_parse.c - the pipeline spec parser (grammar in
 * refurb-pipeline(7)):
 *
 *   spec   := "" | filter ("," filter)*
 *   filter := name ["=" arg (":" arg)*]
 *   arg    := key "=" value | value      (a bare value only first)
 *
 * Every error is RFB_ESPEC with the 1-based column of the offending
 * character and the spec with a caret under it.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

enum key {
	K_SIZE, K_MAX_SIZE, K_INTERP, K_PAD, K_FILL, K_PAD_IF_NEEDED, K_SCALE,
	K_RATIO, K_P, K_N, K_M, K_BINS, K_POLICY, K_MEAN, K_STD, K_PRESET,
	K_COUNT, K_NONE = -1
};

static const char *const key_names[K_COUNT] = {
	"size", "max_size", "interp", "pad", "fill", "pad_if_needed", "scale",
	"ratio", "p", "n", "m", "bins", "policy", "mean", "std", "preset",
};

/* Keys of each filter; the first is the one a bare value sets (K_NONE:
 * no bare value). */
static const int filter_keys[RFB_F_COUNT][6] = {
	[RFB_F_RESIZE] = { K_SIZE, K_MAX_SIZE, K_INTERP, K_NONE },
	[RFB_F_CENTERCROP] = { K_SIZE, K_NONE },
	[RFB_F_CROP] = { K_SIZE, K_PAD, K_FILL, K_PAD_IF_NEEDED, K_NONE },
	[RFB_F_RRCROP] = { K_SIZE, K_SCALE, K_RATIO, K_INTERP, K_NONE },
	[RFB_F_FLIP] = { K_P, K_NONE },
	[RFB_F_RANDAUG] = { K_N, K_M, K_BINS, K_INTERP, K_FILL, K_NONE },
	[RFB_F_AUTOAUG] = { K_POLICY, K_INTERP, K_FILL, K_NONE },
	[RFB_F_TRIVIALAUG] = { K_NONE, K_BINS, K_INTERP, K_FILL, K_NONE },
	[RFB_F_NORMALIZE] = { K_PRESET, K_MEAN, K_STD, K_NONE },
	[RFB_F_GRAY] = { K_NONE, K_NONE },
	[RFB_F_RGB] = { K_NONE, K_NONE },
};

struct parser {
	const char *spec;
	rfb_err *err;
	struct rfb_layer layers[RFB_PIPELINE_MAX_LAYERS];
	int n;
	/* the filter being parsed */
	struct rfb_layer cur;
	int repeat;            /* randaug n */
	unsigned seen;         /* keys given, bit per enum key */
	size_t name_at;        /* column (0-based) of its name */
};

/* RFB_ESPEC pointing at byte at of the spec. */
static int spec_error(struct parser *ps, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int spec_error(struct parser *ps, size_t at, const char *fmt, ...)
{
	char what[256], view[200];
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
			   "bad pipeline spec at column %zu: %s\n  %s\n  %*s^",
			   at + 1, what, view, (int)caret, "");
}

/* ---- values ---- */

/* A token [s, s + n) of the spec. */
struct tok {
	const char *s;
	size_t n;
	size_t at; /* its column, 0-based */
};

static int parse_int(struct parser *ps, const struct tok *t, long lo, long hi,
		     const char *what, int *out)
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
		return spec_error(ps, t->at, "%s %ld out of range %ld..%ld", what,
				  v, lo, hi);
	*out = (int)v;
	return 0;
bad:
	return spec_error(ps, t->at, "%s \"%.*s\" is not an integer", what,
			  (int)t->n, t->s);
}

static int parse_num(struct parser *ps, const struct tok *t, const char *what,
		     double *out)
{
	char buf[64];
	char *end;

	if (t->n == 0 || t->n >= sizeof buf ||
	    strspn(t->s, "0123456789.eE+-") < t->n)
		goto bad;
	memcpy(buf, t->s, t->n);
	buf[t->n] = '\0';
	*out = strtod(buf, &end);
	if (*end || !isfinite(*out))
		goto bad;
	return 0;
bad:
	return spec_error(ps, t->at, "%s \"%.*s\" is not a number", what,
			  (int)t->n, t->s);
}

/* Split t at sep into up to max parts; returns the count or -1. */
static int split(const struct tok *t, char sep, struct tok *parts, int max)
{
	int n = 0;
	size_t start = 0;

	for (size_t i = 0; i <= t->n; i++) {
		if (i < t->n && t->s[i] != sep)
			continue;
		if (n == max)
			return -1;
		parts[n++] = (struct tok){ t->s + start, i - start, t->at + start };
		start = i + 1;
	}
	return n;
}

/* size: N or HxW */
static int parse_size(struct parser *ps, const struct tok *t, int allow_short)
{
	struct tok part[2];
	int n = split(t, 'x', part, 2), rc;

	if (n < 0)
		return spec_error(ps, t->at, "size \"%.*s\" is not N or HxW",
				  (int)t->n, t->s);
	rc = parse_int(ps, &part[0], 1, RFB_IMAGE_MAX_SIDE, "size", &ps->cur.height);
	if (!rc && n == 2)
		rc = parse_int(ps, &part[1], 1, RFB_IMAGE_MAX_SIDE, "width",
			       &ps->cur.width);
	if (rc)
		return rc;
	if (n == 1 && allow_short) {
		ps->cur.shorter = ps->cur.height;
		ps->cur.height = 0;
	} else if (n == 1) {
		ps->cur.width = ps->cur.height;
	}
	return 0;
}

/* a-b (or a: both); lo_min < a <= b <= hi_max */
static int parse_range(struct parser *ps, const struct tok *t, const char *what,
		       double lo_min, double hi_max, double out[2])
{
	struct tok part[2];
	int n = split(t, '-', part, 2);

	if (n < 0 || parse_num(ps, &part[0], what, &out[0]) ||
	    (n == 2 && parse_num(ps, &part[1], what, &out[1])))
		return n < 0 ? spec_error(ps, t->at, "%s \"%.*s\" is not A-B", what,
					  (int)t->n, t->s)
			     : RFB_ESPEC;
	if (n == 1)
		out[1] = out[0];
	if (!(out[0] > lo_min && out[0] <= out[1] && out[1] <= hi_max))
		return spec_error(ps, t->at,
				  "%s %g-%g: need %g < low <= high <= %g", what,
				  out[0], out[1], lo_min, hi_max);
	return 0;
}

/* 1 or 3 numbers separated by '/' */
static int parse_triple(struct parser *ps, const struct tok *t, const char *what,
			double out[3], int *count)
{
	struct tok part[3];
	int n = split(t, '/', part, 3);

	*count = 0;
	if (n != 1 && n != 3)
		return spec_error(ps, t->at, "%s needs 1 or 3 values separated by '/'",
				  what);
	for (int i = 0; i < n; i++)
		if (parse_num(ps, &part[i], what, &out[i]))
			return RFB_ESPEC;
	for (int i = n; i < 3; i++)
		out[i] = out[0];
	*count = n;
	return 0;
}

static int parse_fill(struct parser *ps, const struct tok *t)
{
	struct tok part[3];
	int n = split(t, '/', part, 3), v;

	if (n != 1 && n != 3)
		return spec_error(ps, t->at, "fill needs 1 or 3 values separated by '/'");
	for (int i = 0; i < n; i++) {
		if (parse_int(ps, &part[i], 0, 255, "fill", &v))
			return RFB_ESPEC;
		ps->cur.fill[i] = (unsigned char)v;
	}
	if (n == 1)
		ps->cur.fill[1] = ps->cur.fill[2] = ps->cur.fill[0];
	return 0;
}

/* pad: N, LR/TB or L/T/R/B (torchvision's padding forms) */
static int parse_pad(struct parser *ps, const struct tok *t)
{
	struct tok part[4];
	int n = split(t, '/', part, 4), v[4];

	if (n != 1 && n != 2 && n != 4)
		return spec_error(ps, t->at, "pad needs 1, 2 or 4 values separated by '/'");
	for (int i = 0; i < n; i++)
		if (parse_int(ps, &part[i], 0, RFB_IMAGE_MAX_SIDE, "pad", &v[i]))
			return RFB_ESPEC;
	if (n == 1)
		v[1] = v[2] = v[3] = v[0];
	if (n == 2) {
		v[2] = v[0];
		v[3] = v[1];
	}
	ps->cur.pad = (struct rfb_padding){ v[0], v[1], v[2], v[3] };
	return 0;
}

static int parse_word(struct parser *ps, const struct tok *t, const char *what,
		      const char *const *names, int count, int *out)
{
	for (int i = 0; i < count; i++)
		if (strlen(names[i]) == t->n && memcmp(names[i], t->s, t->n) == 0) {
			*out = i;
			return 0;
		}
	return spec_error(ps, t->at, "unknown %s \"%.*s\"", what, (int)t->n, t->s);
}

static const char *const interp_names[] = { "nearest", "bilinear", "bicubic" };
static const char *const policy_names[] = { "imagenet", "cifar10", "svhn" };
static const char *const preset_names[] = { "imagenet" };
static const char *const bool_names[] = { "0", "1" };

static int set_value(struct parser *ps, int key, const struct tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int i = 0, rc;

	switch (key) {
	case K_SIZE:
		return parse_size(ps, v, l->kind == RFB_F_RESIZE);
	case K_MAX_SIZE:
		return parse_int(ps, v, 0, RFB_IMAGE_MAX_SIDE, "max_size", &l->max_size);
	case K_INTERP:
		rc = parse_word(ps, v, "interpolation", interp_names, 3, &i);
		l->interp = (enum rfb_interp)i;
		return rc;
	case K_PAD:
		return parse_pad(ps, v);
	case K_FILL:
		return parse_fill(ps, v);
	case K_PAD_IF_NEEDED:
		return parse_word(ps, v, "pad_if_needed value", bool_names, 2,
				  &l->pad_if_needed);
	case K_SCALE:
		return parse_range(ps, v, "scale", 0.0, 1.0, l->scale);
	case K_RATIO:
		return parse_range(ps, v, "ratio", 0.0, 1e6, l->ratio);
	case K_P:
		if (parse_num(ps, v, "p", &l->p))
			return RFB_ESPEC;
		return l->p >= 0.0 && l->p <= 1.0
			       ? 0 : spec_error(ps, v->at, "p %g out of range 0..1", l->p);
	case K_N:
		return parse_int(ps, v, 1, RFB_RANDAUG_MAX_N, "n", &ps->repeat);
	case K_M:
		return parse_int(ps, v, 0, 1000, "m", &l->magnitude);
	case K_BINS:
		return parse_int(ps, v, 2, 1001, "bins", &l->bins);
	case K_POLICY:
		rc = parse_word(ps, v, "policy", policy_names, 3, &i);
		l->policy = (enum rfb_autoaug_policy)i;
		return rc;
	case K_MEAN:
	case K_STD:
		rc = parse_triple(ps, v, key_names[key],
				  key == K_MEAN ? l->mean : l->std, &i);
		if (i > l->norm_channels)
			l->norm_channels = i; /* 3 values, or 1 for every channel */
		return rc;
	case K_PRESET:
		return parse_word(ps, v, "normalize preset", preset_names, 1, &i);
	}
	return spec_error(ps, v->at, "internal: unknown key");
}

/* ---- filters ---- */

static void set_defaults(struct rfb_layer *l, enum rfb_filter kind)
{
	memset(l, 0, sizeof *l);
	l->kind = kind;
	l->interp = RFB_INTERP_BILINEAR;
	switch (kind) {
	case RFB_F_RRCROP:
		l->scale[0] = 0.08;
		l->scale[1] = 1.0;
		l->ratio[0] = 3.0 / 4.0;
		l->ratio[1] = 4.0 / 3.0;
		break;
	case RFB_F_FLIP:
		l->p = 0.5;
		break;
	case RFB_F_RANDAUG:
		l->magnitude = 9;
		/* fall through */
	case RFB_F_TRIVIALAUG:
	case RFB_F_AUTOAUG:
		l->bins = kind == RFB_F_AUTOAUG ? 0 : 31;
		l->interp = RFB_INTERP_NEAREST;
		break;
	case RFB_F_NORMALIZE:
		l->norm_channels = 1;
		l->std[0] = l->std[1] = l->std[2] = 1.0;
		break;
	default:
		break;
	}
}

static int find_key(int kind, const struct tok *k)
{
	for (int i = 0; i < 6; i++) {
		int key = filter_keys[kind][i];
		if (key == K_NONE && i > 0)
			break;
		if (key != K_NONE && strlen(key_names[key]) == k->n &&
		    memcmp(key_names[key], k->s, k->n) == 0)
			return key;
	}
	return K_NONE;
}

/* One argument token (no ':' or ','); first says it is the first. */
static int parse_arg(struct parser *ps, const struct tok *a, int first)
{
	const char *eq = memchr(a->s, '=', a->n);
	struct tok k = *a, v;
	int key;

	if (a->n == 0)
		return spec_error(ps, a->at, "missing argument");
	if (!eq) {
		key = filter_keys[ps->cur.kind][0];
		if (!first || key == K_NONE)
			return spec_error(ps, a->at, "\"%.*s\" needs a key (key=value)",
					  (int)a->n, a->s);
		v = *a;
	} else {
		k.n = (size_t)(eq - a->s);
		v = (struct tok){ eq + 1, a->n - k.n - 1, a->at + k.n + 1 };
		key = find_key(ps->cur.kind, &k);
		if (key == K_NONE)
			return spec_error(ps, a->at, "%s has no argument \"%.*s\"",
					  rfb_filter_names[ps->cur.kind], (int)k.n, k.s);
		if (v.n == 0)
			return spec_error(ps, v.at, "missing value for %s",
					  key_names[key]);
	}
	if (ps->seen & (1u << key))
		return spec_error(ps, a->at, "%s given twice", key_names[key]);
	ps->seen |= 1u << key;
	return set_value(ps, key, &v);
}

/* Checks that need the whole filter. */
static int check_filter(struct parser *ps)
{
	struct rfb_layer *l = &ps->cur;
	const char *name = rfb_filter_names[l->kind];

	if (filter_keys[l->kind][0] == K_SIZE && !(ps->seen & (1u << K_SIZE)))
		return spec_error(ps, ps->name_at, "%s needs a size", name);
	if (l->max_size && (!l->shorter || l->max_size <= l->shorter))
		return spec_error(ps, ps->name_at,
				  "max_size needs resize=N with N < max_size");
	if (l->kind == RFB_F_RANDAUG && l->magnitude >= l->bins)
		return spec_error(ps, ps->name_at, "randaug m=%d needs m < bins (%d)",
				  l->magnitude, l->bins);
	if (l->kind == RFB_F_NORMALIZE) {
		int m = ps->seen & (1u << K_MEAN), s = ps->seen & (1u << K_STD);
		if ((ps->seen & (1u << K_PRESET)) && (m || s))
			return spec_error(ps, ps->name_at,
					  "normalize: give a preset or mean/std, not both");
		if (ps->seen & (1u << K_PRESET)) {
			l->norm_channels = 3;
			const double mean[3] = { 0.485, 0.456, 0.406 };
			const double std[3] = { 0.229, 0.224, 0.225 };
			memcpy(l->mean, mean, sizeof mean);
			memcpy(l->std, std, sizeof std);
		}
		for (int c = 0; c < 3; c++)
			if (l->std[c] == 0.0)
				return spec_error(ps, ps->name_at, "normalize: std 0");
	}
	return 0;
}

static int lookup_filter(struct parser *ps, const struct tok *name)
{
	for (int i = 0; i < RFB_F_COUNT; i++)
		if (strlen(rfb_filter_names[i]) == name->n &&
		    memcmp(rfb_filter_names[i], name->s, name->n) == 0)
			return i;
	if (name->n == 0)
		return spec_error(ps, name->at, "empty filter");
	return spec_error(ps, name->at, "unknown filter \"%.*s\"", (int)name->n,
			  name->s);
}

static int add_layers(struct parser *ps)
{
	int count = ps->cur.kind == RFB_F_RANDAUG ? ps->repeat : 1;

	if (ps->n > 0 && ps->layers[ps->n - 1].kind == RFB_F_NORMALIZE)
		return spec_error(ps, ps->name_at,
				  "normalize must be the last filter");
	if (ps->n + count > RFB_PIPELINE_MAX_LAYERS)
		return spec_error(ps, ps->name_at, "more than %d layers",
				  RFB_PIPELINE_MAX_LAYERS);
	for (int i = 0; i < count; i++)
		ps->layers[ps->n++] = ps->cur;
	return 0;
}

/* One filter [at, end) of the spec (end: its ',' or the NUL). */
static int parse_filter(struct parser *ps, size_t at, size_t end)
{
	const char *s = ps->spec;
	struct tok name = { s + at, 0, at };
	int kind, rc;

	while (name.n < end - at && (isalnum((unsigned char)name.s[name.n]) ||
				     name.s[name.n] == '_'))
		name.n++;
	if (name.n == 0 && at < end)
		return spec_error(ps, at, "unexpected '%c'", s[at]);
	kind = lookup_filter(ps, &name);
	if (kind < 0)
		return kind;
	set_defaults(&ps->cur, (enum rfb_filter)kind);
	/* torchvision's RandAugment applies num_ops = 2 by default */
	ps->repeat = kind == RFB_F_RANDAUG ? 2 : 1;
	ps->seen = 0;
	ps->name_at = at;
	at += name.n;
	if (at < end && s[at] != '=')
		return spec_error(ps, at, "unexpected '%c' after %s", s[at],
				  rfb_filter_names[kind]);
	if (at < end) {
		if (filter_keys[kind][0] == K_NONE && filter_keys[kind][1] == K_NONE)
			return spec_error(ps, at, "%s takes no arguments",
					  rfb_filter_names[kind]);
		struct tok args = { s + at + 1, end - at - 1, at + 1 }, a[12];
		int n = split(&args, ':', a, 12);
		if (n < 0)
			return spec_error(ps, at + 1, "too many arguments");
		for (int i = 0; i < n; i++)
			if ((rc = parse_arg(ps, &a[i], i == 0)))
				return rc;
	}
	rc = check_filter(ps);
	return rc ? rc : add_layers(ps);
}

int rfb_pipeline_parse(const char *spec, rfb_pipeline **out, rfb_err *err)
{
	struct parser *ps;
	size_t len = spec ? strlen(spec) : 0, at = 0;
	int rc = 0;

	*out = NULL;
	if (len > RFB_PIPELINE_MAX_SPEC)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline spec longer than %d bytes",
				   RFB_PIPELINE_MAX_SPEC);
	ps = calloc(1, sizeof *ps);
	if (!ps)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	ps->spec = spec ? spec : "";
	ps->err = err;
	while (len && (spec[len - 1] == ' ' || spec[len - 1] == '\t'))
		len--; /* trailing blanks are not a filter */
	while (!rc && len > 0 && at <= len) {
		size_t end = at;
		while (end < len && spec[end] != ',')
			end++;
		while (at < end && (spec[at] == ' ' || spec[at] == '\t'))
			at++;
		size_t stop = end;
		while (stop > at && (spec[stop - 1] == ' ' || spec[stop - 1] == '\t'))
			stop--;
		rc = parse_filter(ps, at, stop);
		at = end + 1;
	}
	if (!rc)
		rc = rfb_pipeline_make(ps->layers, ps->n, out, err);
	free(ps);
	return rc;
}
