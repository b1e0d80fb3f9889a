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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"
#include "refurb/augmix.h"
#include "refurb/filters.h"

enum key {
	K_SIZE, K_MAX_SIZE, K_INTERP, K_PAD, K_FILL, K_PAD_IF_NEEDED, K_SCALE,
	K_RATIO, K_P, K_N, K_M, K_BINS, K_POLICY, K_MEAN, K_STD, K_PRESET,
	K_BRIGHTNESS, K_CONTRAST, K_SATURATION, K_HUE, K_KERNEL, K_SIGMA,
	K_VALUE, K_THRESHOLD, K_BITS, K_FACTOR, K_DEGREES, K_TRANSLATE,
	K_SHEAR, K_DISTORTION, K_DCT, K_SEVERITY, K_WIDTH, K_DEPTH, K_ALPHA,
	K_ALL_OPS, K_PAD_MODE, K_EXPAND, K_CENTER, K_LAYERS,
	K_COUNT, K_NONE = -1
};

static const char *const key_names[K_COUNT] = {
	"size", "max_size", "interp", "pad", "fill", "pad_if_needed", "scale",
	"ratio", "p", "n", "m", "bins", "policy", "mean", "std", "preset",
	"brightness", "contrast", "saturation", "hue", "kernel_size", "sigma",
	"value", "threshold", "bits", "factor", "degrees", "translate",
	"shear", "distortion_scale", "dct", "severity", "width", "depth",
	"alpha", "all_ops", "padding_mode", "expand", "center", "layers",
};

/* torchvision's argument names, accepted beside the short ones. */
static const struct {
	const char *name;
	int key;
} key_aliases[] = {
	{ "interpolation", K_INTERP }, { "num_ops", K_N },
	{ "magnitude", K_M }, { "num_magnitude_bins", K_BINS },
	{ "sharpness_factor", K_FACTOR }, { "padding", K_PAD },
	{ "mixture_width", K_WIDTH }, { "chain_depth", K_DEPTH },
	{ "mode", K_PAD_MODE },
};

#define MAX_KEYS 8

/* Keys of each filter; the first is the one a bare value sets (K_NONE:
 * no bare value). */
static const int filter_keys[RFB_F_COUNT][MAX_KEYS] = {
	[RFB_F_RESIZE] = { K_SIZE, K_MAX_SIZE, K_INTERP, K_DCT, K_NONE },
	[RFB_F_CENTERCROP] = { K_SIZE, K_NONE },
	[RFB_F_CROP] = { K_SIZE, K_PAD, K_FILL, K_PAD_IF_NEEDED, K_PAD_MODE,
			 K_NONE },
	[RFB_F_RRCROP] = { K_SIZE, K_SCALE, K_RATIO, K_INTERP, K_NONE },
	[RFB_F_FLIP] = { K_P, K_NONE },
	[RFB_F_RANDAUG] = { K_N, K_M, K_BINS, K_INTERP, K_FILL, K_NONE },
	[RFB_F_AUTOAUG] = { K_POLICY, K_INTERP, K_FILL, K_NONE },
	[RFB_F_TRIVIALAUG] = { K_NONE, K_BINS, K_INTERP, K_FILL, K_NONE },
	[RFB_F_NORMALIZE] = { K_PRESET, K_MEAN, K_STD, K_NONE },
	[RFB_F_GRAY] = { K_NONE, K_NONE },
	[RFB_F_RGB] = { K_NONE, K_NONE },
	[RFB_F_VFLIP] = { K_P, K_NONE },
	[RFB_F_GRAYSCALE] = { K_P, K_NONE },
	[RFB_F_COLORJITTER] = { K_BRIGHTNESS, K_CONTRAST, K_SATURATION, K_HUE,
				K_NONE },
	[RFB_F_GAUSSBLUR] = { K_KERNEL, K_SIGMA, K_NONE },
	[RFB_F_ERASING] = { K_P, K_SCALE, K_RATIO, K_VALUE, K_NONE },
	[RFB_F_SOLARIZE] = { K_THRESHOLD, K_P, K_NONE },
	[RFB_F_POSTERIZE] = { K_BITS, K_P, K_NONE },
	[RFB_F_EQUALIZE] = { K_P, K_NONE },
	[RFB_F_AUTOCONTRAST] = { K_P, K_NONE },
	[RFB_F_SHARPNESS] = { K_FACTOR, K_P, K_NONE },
	[RFB_F_INVERT] = { K_P, K_NONE },
	[RFB_F_ROTATION] = { K_DEGREES, K_INTERP, K_FILL, K_EXPAND, K_CENTER,
			     K_NONE },
	[RFB_F_AFFINE] = { K_DEGREES, K_TRANSLATE, K_SCALE, K_SHEAR, K_INTERP,
			   K_FILL, K_CENTER, K_NONE },
	[RFB_F_PERSPECTIVE] = { K_DISTORTION, K_P, K_INTERP, K_FILL, K_NONE },
	[RFB_F_APPLY] = { K_P, K_N, K_NONE },
	[RFB_F_AUGMIX] = { K_SEVERITY, K_WIDTH, K_DEPTH, K_ALPHA, K_ALL_OPS,
			   K_INTERP, K_FILL, K_NONE },
	[RFB_F_PAD] = { K_PAD, K_FILL, K_PAD_MODE, K_NONE },
	[RFB_F_CHOICE] = { K_N, K_P, K_LAYERS, K_NONE },
	[RFB_F_ORDER] = { K_N, K_LAYERS, K_NONE },
};

/* Filters whose first key must be given. */
static int needs_first_key(int kind)
{
	switch (kind) {
	case RFB_F_RESIZE: case RFB_F_CENTERCROP: case RFB_F_CROP:
	case RFB_F_RRCROP: case RFB_F_GAUSSBLUR: case RFB_F_SOLARIZE:
	case RFB_F_POSTERIZE: case RFB_F_SHARPNESS: case RFB_F_ROTATION:
	case RFB_F_AFFINE: case RFB_F_PAD: case RFB_F_CHOICE: case RFB_F_ORDER:
		return 1;
	default:
		return 0;
	}
}

/* A token [s, s + n) of the spec. */
struct tok {
	const char *s;
	size_t n;
	size_t at; /* its column, 0-based */
};

struct parser {
	const char *spec;
	rfb_err *err;
	struct rfb_layer layers[RFB_PIPELINE_MAX_LAYERS];
	int n;
	/* the filter being parsed */
	struct rfb_layer cur;
	int repeat;            /* randaug n */
	uint64_t seen;         /* keys given, bit per enum key */
	size_t name_at;        /* column (0-based) of its name */
	int weights_given;     /* choice: the values of p */
	int layers_given;      /* choice, order: the values of layers */
	char hint[400];        /* a line after the caret: the valid choices */
};

/* RFB_ESPEC pointing at byte at of the spec. */
static int spec_error(struct parser *ps, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int spec_error(struct parser *ps, size_t at, const char *fmt, ...)
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

/* Edit distance of a[0..n) and b (Levenshtein, with transpositions). */
static int distance(const char *a, size_t n, const char *b)
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

/* The closest of names[0..count) to t, or NULL when none is close (at
 * most a third of the word's letters wrong, at least one). */
static const char *closest(const struct tok *t, const char *const *names,
			   int count)
{
	const char *best = NULL;
	int best_d = (int)(t->n / 3 > 1 ? t->n / 3 : 1) + 1;

	for (int i = 0; i < count; i++) {
		int d = distance(t->s, t->n, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	return best;
}

/* " (did you mean \"x\"?)" when x is close to t, else "". */
static const char *did_you_mean(char *buf, size_t size, const struct tok *t,
				const char *const *names, int count)
{
	const char *near = closest(t, names, count);

	if (!near)
		return "";
	snprintf(buf, size, " (did you mean \"%s\"?)", near);
	return buf;
}

/* ps->hint = "what: a, b, c" */
static void set_hint(struct parser *ps, const char *what,
		     const char *const *names, int count)
{
	size_t len = (size_t)snprintf(ps->hint, sizeof ps->hint, "%s:", what);

	for (int i = 0; i < count && len < sizeof ps->hint; i++)
		len += (size_t)snprintf(ps->hint + len, sizeof ps->hint - len,
					"%s %s", i ? "," : "", names[i]);
}

/* ---- values ---- */

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

/* A number, or a fraction A/B of two (torchvision's floats written as
 * 3/4); callers that split lists at '/' pass single numbers. */
static int parse_num(struct parser *ps, const struct tok *t, const char *what,
		     double *out)
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

/* The '-' that separates two signed numbers in t: the first one after
 * a digit or a '.' (not an exponent's sign); t->n when there is none. */
static size_t range_dash(const struct tok *t)
{
	for (size_t i = 1; i < t->n; i++)
		if (t->s[i] == '-' && (isdigit((unsigned char)t->s[i - 1]) ||
				       t->s[i - 1] == '.'))
			return i;
	return t->n;
}

/*
 * A range of signed numbers, torchvision's (lo, hi): "A-B" (either may be
 * negative: -10-10, -0.2--0.1), or one number X, which means
 * (center - X, center + X) for X >= 0 when sym is set, else (X, X).
 * lo <= hi.
 */
static int parse_srange(struct parser *ps, const struct tok *t, const char *what,
			int sym, double center, double out[2])
{
	size_t dash = range_dash(t);
	struct tok a = { t->s, dash, t->at };

	if (parse_num(ps, &a, what, &out[0]))
		return RFB_ESPEC;
	if (dash < t->n) {
		struct tok b = { t->s + dash + 1, t->n - dash - 1, t->at + dash + 1 };
		if (parse_num(ps, &b, what, &out[1]))
			return RFB_ESPEC;
		if (out[0] > out[1])
			return spec_error(ps, t->at, "%s %g-%g: low > high", what,
					  out[0], out[1]);
		return 0;
	}
	if (!sym) {
		out[1] = out[0];
		return 0;
	}
	if (out[0] < 0)
		return spec_error(ps, t->at, "%s %g: a single value must be >= 0",
				  what, out[0]);
	out[1] = center + out[0];
	out[0] = center - out[0];
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
	char near[80];

	for (int i = 0; i < count; i++)
		if (strlen(names[i]) == t->n && memcmp(names[i], t->s, t->n) == 0) {
			*out = i;
			return 0;
		}
	set_hint(ps, what, names, count);
	return spec_error(ps, t->at, "unknown %s \"%.*s\"%s", what, (int)t->n,
			  t->s, did_you_mean(near, sizeof near, t, names, count));
}

static const char *const interp_names[] = { "nearest", "bilinear", "bicubic" };
static const char *const policy_names[] = { "imagenet", "cifar10", "svhn" };
static const char *const preset_names[] = { "imagenet" };
static const char *const bool_names[] = { "0", "1" };
static const char *const pad_mode_names[] = { "constant", "edge", "reflect",
					      "symmetric" };

/* ColorJitter's factor i (brightness, contrast, saturation: around 1,
 * >= 0; hue: around 0, within -0.5..0.5), torchvision's _check_input:
 * a factor whose range is just its centre is not drawn. */
static int parse_jitter(struct parser *ps, int i, const struct tok *v)
{
	struct rfb_layer *l = &ps->cur;
	double *r = l->jitter[i], center = i == 3 ? 0.0 : 1.0;
	double lo = i == 3 ? -0.5 : 0.0, hi = i == 3 ? 0.5 : 1e9;
	const char *what = key_names[K_BRIGHTNESS + i];

	if (parse_srange(ps, v, what, 1, center, r))
		return RFB_ESPEC;
	if (i < 3 && range_dash(v) == v->n && r[0] < 0.0)
		r[0] = 0.0; /* [max(0, 1 - x), 1 + x] */
	if (r[0] < lo || r[1] > hi)
		return spec_error(ps, v->at, "%s %g-%g out of range %g..%g", what,
				  r[0], r[1], lo, hi == 1e9 ? INFINITY : hi);
	if (r[0] == center && r[1] == center)
		l->jitter_on &= ~(1u << i);
	else
		l->jitter_on |= 1u << i;
	return 0;
}

/* gaussblur kernel_size: K or HxW, odd */
static int parse_kernel(struct parser *ps, const struct tok *t)
{
	struct tok part[2];
	int n = split(t, 'x', part, 2);

	if (n < 0)
		return spec_error(ps, t->at, "kernel_size \"%.*s\" is not K or HxW",
				  (int)t->n, t->s);
	for (int i = 0; i < n; i++)
		if (parse_int(ps, &part[i], 1, RFB_BLUR_MAX_KERNEL, "kernel_size",
			      &ps->cur.kernel[i]))
			return RFB_ESPEC;
	if (n == 1)
		ps->cur.kernel[1] = ps->cur.kernel[0];
	if (ps->cur.kernel[0] % 2 == 0 || ps->cur.kernel[1] % 2 == 0)
		return spec_error(ps, t->at, "kernel_size %dx%d: must be odd",
				  ps->cur.kernel[0], ps->cur.kernel[1]);
	return 0;
}

/* affine shear: X-range, or X-range/Y-range */
static int parse_shear(struct parser *ps, const struct tok *t)
{
	struct tok part[2];
	int n = split(t, '/', part, 2);

	if (n < 0)
		return spec_error(ps, t->at, "shear needs 1 or 2 ranges separated by '/'");
	for (int i = 0; i < n; i++)
		if (parse_srange(ps, &part[i], "shear", 1, 0.0, ps->cur.shear + 2 * i))
			return RFB_ESPEC;
	ps->cur.shear_n = 2 * n;
	return 0;
}

/* affine translate: A/B, the largest shifts as fractions of w and h */
static int parse_translate(struct parser *ps, const struct tok *t)
{
	struct tok part[2];
	int n = split(t, '/', part, 2);

	if (n != 2)
		return spec_error(ps, t->at, "translate needs 2 values A/B");
	for (int i = 0; i < 2; i++) {
		double *v = &ps->cur.translate[i];
		if (parse_num(ps, &part[i], "translate", v))
			return RFB_ESPEC;
		if (*v < 0.0 || *v > 1.0)
			return spec_error(ps, part[i].at,
					  "translate %g out of range 0..1", *v);
	}
	ps->cur.has_translate = 1;
	return 0;
}

/* rotation, affine center: X/Y in pixels (torchvision's [x, y]) */
static int parse_center(struct parser *ps, const struct tok *t)
{
	struct tok part[2];
	int n = split(t, '/', part, 2);

	if (n != 2)
		return spec_error(ps, t->at, "center needs 2 values X/Y");
	for (int i = 0; i < 2; i++)
		if (parse_num(ps, &part[i], "center", &ps->cur.center[i]))
			return RFB_ESPEC;
	ps->cur.has_center = 1;
	return 0;
}

static int parse_bounded(struct parser *ps, const struct tok *v,
			 const char *what, double lo, double hi, double *out);

/* choice p (weights, one an option) or layers (layers of each option):
 * numbers separated by '/', into out[] (*count of them). */
static int parse_option_list(struct parser *ps, const struct tok *t,
			     const char *what, int ints, double *out, int *count)
{
	struct tok part[RFB_CHOICE_MAX];
	int n = split(t, '/', part, RFB_CHOICE_MAX), v;

	if (n < 0)
		return spec_error(ps, t->at, "%s: more than %d values", what,
				  RFB_CHOICE_MAX);
	for (int i = 0; i < n; i++) {
		if (ints && parse_int(ps, &part[i], 1, RFB_PIPELINE_MAX_LAYERS,
				      what, &v))
			return RFB_ESPEC;
		if (!ints && parse_bounded(ps, &part[i], what, 0.0, 1e9, &out[i]))
			return RFB_ESPEC;
		if (ints)
			out[i] = v;
	}
	*count = n;
	return 0;
}

/* erasing's value: "random", or 1 or 3 numbers (whole pixel values
 * 0..255 before normalize; any after it, where they are float values);
 * check_filter decides which. */
static int parse_erase_value(struct parser *ps, const struct tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int n;

	if (v->n == 6 && memcmp(v->s, "random", 6) == 0) {
		l->erase_random = 1;
		return 0;
	}
	if (parse_triple(ps, v, "value", l->evalue, &n))
		return RFB_ESPEC;
	for (int c = 0; c < 3; c++) {
		double x = l->evalue[c];
		l->fill[c] = x >= 0 && x <= 255 && x == (int)x ? (unsigned char)x : 0;
	}
	return 0;
}

/* augmix depth: 1..16, or 0 or a negative number (torchvision's
 * chain_depth <= 0: 1..3 drawn per chain), kept as -1. */
static int parse_depth(struct parser *ps, const struct tok *v)
{
	struct tok t = *v;
	int neg = t.n > 1 && t.s[0] == '-', d;

	if (neg) {
		t.s++;
		t.n--;
		t.at++;
	}
	if (parse_int(ps, &t, 0, neg ? 1000000 : RFB_AUGMIX_MAX_DEPTH, "depth", &d))
		return RFB_ESPEC;
	ps->cur.mix_depth = neg || d == 0 ? -1 : d;
	return 0;
}

/* A number in lo..hi. */
static int parse_bounded(struct parser *ps, const struct tok *v,
			 const char *what, double lo, double hi, double *out)
{
	if (parse_num(ps, v, what, out))
		return RFB_ESPEC;
	if (*out < lo || *out > hi)
		return spec_error(ps, v->at, "%s %g out of range %g..%g", what,
				  *out, lo, hi);
	return 0;
}

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
		/* AugMix runs on a tensor: nearest or bilinear only */
		rc = parse_word(ps, v, "interpolation", interp_names,
				l->kind == RFB_F_AUGMIX ? 2 : 3, &i);
		l->interp = (enum rfb_interp)i;
		return rc;
	case K_PAD:
		return parse_pad(ps, v);
	case K_FILL:
		if (l->kind == RFB_F_AUGMIX) {
			l->has_fill = !(v->n == 4 && memcmp(v->s, "none", 4) == 0);
			if (!l->has_fill)
				return 0;
		}
		return parse_fill(ps, v);
	case K_EXPAND:
		return parse_word(ps, v, "expand value", bool_names, 2, &l->expand);
	case K_CENTER:
		return parse_center(ps, v);
	case K_PAD_MODE:
		rc = parse_word(ps, v, "padding_mode", pad_mode_names, 4, &i);
		l->pad_mode = (enum rfb_pad_mode)i;
		return rc;
	case K_PAD_IF_NEEDED:
		return parse_word(ps, v, "pad_if_needed value", bool_names, 2,
				  &l->pad_if_needed);
	case K_SCALE:
		if (l->kind == RFB_F_AFFINE) {
			l->has_scale = 1;
			rc = parse_srange(ps, v, "scale", 0, 0.0, l->scale);
			if (!rc && !(l->scale[0] > 0.0))
				rc = spec_error(ps, v->at, "scale must be > 0");
			return rc;
		}
		return parse_range(ps, v, "scale", 0.0, 1.0, l->scale);
	case K_RATIO:
		return parse_range(ps, v, "ratio", 0.0, 1e6, l->ratio);
	case K_P:
		if (l->kind == RFB_F_CHOICE) {
			rc = parse_option_list(ps, v, "p", 0, l->weights, &i);
			ps->weights_given = i;
			return rc;
		}
		return parse_bounded(ps, v, "p", 0.0, 1.0, &l->p);
	case K_LAYERS: {
		double n[RFB_CHOICE_MAX];
		rc = parse_option_list(ps, v, "layers", 1, n, &i);
		for (int k = 0; k < i; k++)
			l->option_layers[k] = (int)n[k];
		ps->layers_given = i;
		return rc;
	}
	case K_N:
		if (l->kind == RFB_F_CHOICE || l->kind == RFB_F_ORDER)
			return parse_int(ps, v, 1, RFB_CHOICE_MAX, "n", &l->options);
		if (l->kind == RFB_F_APPLY)
			return parse_int(ps, v, 1, RFB_PIPELINE_MAX_LAYERS, "n",
					 &l->count);
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
	case K_DCT:
		if (parse_num(ps, v, "dct", &l->dct))
			return RFB_ESPEC;
		return l->dct >= 1.0 && l->dct <= 64.0
			       ? 0 : spec_error(ps, v->at, "dct %g out of range 1..64",
						l->dct);
	case K_BRIGHTNESS:
	case K_CONTRAST:
	case K_SATURATION:
	case K_HUE:
		return parse_jitter(ps, key - K_BRIGHTNESS, v);
	case K_KERNEL:
		return parse_kernel(ps, v);
	case K_SIGMA:
		rc = parse_srange(ps, v, "sigma", 0, 0.0, l->sigma);
		if (!rc && !(l->sigma[0] > 0.0))
			rc = spec_error(ps, v->at, "sigma must be > 0");
		return rc;
	case K_VALUE:
		return parse_erase_value(ps, v);
	case K_THRESHOLD:
		return parse_bounded(ps, v, "threshold", 0.0, 1e9, &l->amount);
	case K_BITS:
		return parse_int(ps, v, 0, 8, "bits", &l->magnitude);
	case K_FACTOR:
		return parse_bounded(ps, v, "factor", 0.0, 1e9, &l->amount);
	case K_DEGREES:
		return parse_srange(ps, v, "degrees", 1, 0.0, l->degrees);
	case K_TRANSLATE:
		return parse_translate(ps, v);
	case K_SHEAR:
		return parse_shear(ps, v);
	case K_DISTORTION:
		return parse_bounded(ps, v, "distortion_scale", 0.0, 1.0, &l->amount);
	case K_SEVERITY:
		return parse_int(ps, v, 1, RFB_AUGMIX_MAX_SEVERITY, "severity",
				 &l->magnitude);
	case K_WIDTH:
		return parse_int(ps, v, 1, RFB_AUGMIX_MAX_WIDTH, "width",
				 &l->mix_width);
	case K_DEPTH:
		return parse_depth(ps, v);
	case K_ALPHA:
		if (parse_num(ps, v, "alpha", &l->alpha))
			return RFB_ESPEC;
		return l->alpha > 0.0 && l->alpha <= 1e6 ? 0 :
		       spec_error(ps, v->at, "alpha %g out of range: need 0 < "
				  "alpha <= 1e+06", l->alpha);
	case K_ALL_OPS:
		return parse_word(ps, v, "all_ops value", bool_names, 2, &l->all_ops);
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
	case RFB_F_VFLIP: case RFB_F_SOLARIZE: case RFB_F_POSTERIZE:
	case RFB_F_EQUALIZE: case RFB_F_AUTOCONTRAST: case RFB_F_SHARPNESS:
	case RFB_F_INVERT: case RFB_F_APPLY:
		l->p = 0.5;
		l->count = kind == RFB_F_APPLY ? 1 : 0;
		break;
	case RFB_F_GRAYSCALE:
		l->p = 0.1;
		break;
	case RFB_F_COLORJITTER:
		for (int i = 0; i < 3; i++)
			l->jitter[i][0] = l->jitter[i][1] = 1.0;
		break;
	case RFB_F_GAUSSBLUR:
		l->sigma[0] = 0.1;
		l->sigma[1] = 2.0;
		break;
	case RFB_F_ERASING:
		l->p = 0.5;
		l->scale[0] = 0.02;
		l->scale[1] = 0.33;
		l->ratio[0] = 0.3;
		l->ratio[1] = 3.3;
		break;
	case RFB_F_ROTATION:
	case RFB_F_AFFINE:
		l->interp = RFB_INTERP_NEAREST;
		l->scale[0] = l->scale[1] = kind == RFB_F_AFFINE ? 1.0 : 0.0;
		break;
	case RFB_F_PERSPECTIVE:
		l->amount = 0.5;
		l->p = 0.5;
		break;
	case RFB_F_AUGMIX: /* torchvision's defaults */
		l->magnitude = 3;
		l->mix_width = 3;
		l->mix_depth = -1;
		l->alpha = 1.0;
		l->all_ops = 1;
		break;
	default:
		break;
	}
}

static int tok_is(const struct tok *t, const char *word)
{
	return strlen(word) == t->n && memcmp(word, t->s, t->n) == 0;
}

/* The key named k (or its torchvision alias) among kind's keys. */
static int find_key(int kind, const struct tok *k)
{
	int key = K_NONE;

	for (int i = 0; i < K_COUNT && key == K_NONE; i++)
		if (tok_is(k, key_names[i]))
			key = i;
	for (size_t i = 0; i < sizeof key_aliases / sizeof *key_aliases; i++)
		if (tok_is(k, key_aliases[i].name))
			key = key_aliases[i].key;
	for (int i = 0; i < MAX_KEYS && key != K_NONE; i++) {
		if (filter_keys[kind][i] == K_NONE && i > 0)
			break;
		if (filter_keys[kind][i] == key)
			return key;
	}
	return K_NONE;
}

/* The names of kind's keys into names[], returns their number. */
static int keys_of(int kind, const char **names)
{
	int n = 0;

	for (int i = 0; i < MAX_KEYS; i++) {
		int key = filter_keys[kind][i];
		if (key == K_NONE && i > 0)
			break;
		if (key != K_NONE)
			names[n++] = key_names[key];
	}
	return n;
}

static int unknown_key(struct parser *ps, const struct tok *a, const struct tok *k)
{
	const char *names[MAX_KEYS];
	const char *kind = rfbi_filter_names[ps->cur.kind];
	char near[80];
	int n = keys_of(ps->cur.kind, names);

	set_hint(ps, "its arguments", names, n);
	return spec_error(ps, a->at, "%s has no argument \"%.*s\"%s", kind,
			  (int)k->n, k->s, did_you_mean(near, sizeof near, k,
							names, n));
}

/* A bare value after the first: suggest the key of its position. */
static int bare_value(struct parser *ps, const struct tok *a, int index)
{
	int key = index < MAX_KEYS ? filter_keys[ps->cur.kind][index] : K_NONE;

	if (key == K_NONE)
		return spec_error(ps, a->at, "\"%.*s\" needs a key (key=value)",
				  (int)a->n, a->s);
	return spec_error(ps, a->at,
			  "\"%.*s\" needs a key (key=value): did you mean %s=%.*s?",
			  (int)a->n, a->s, key_names[key], (int)a->n, a->s);
}

/* One argument token (no ':' or ','), number index of its filter. */
static int parse_arg(struct parser *ps, const struct tok *a, int index)
{
	int first = index == 0;
	const char *eq = memchr(a->s, '=', a->n);
	struct tok k = *a, v;
	int key;

	if (a->n == 0)
		return spec_error(ps, a->at, "missing argument");
	if (!eq) {
		key = filter_keys[ps->cur.kind][0];
		if (!first || key == K_NONE)
			return bare_value(ps, a, index);
		v = *a;
	} else {
		k.n = (size_t)(eq - a->s);
		v = (struct tok){ eq + 1, a->n - k.n - 1, a->at + k.n + 1 };
		key = find_key(ps->cur.kind, &k);
		if (key == K_NONE)
			return unknown_key(ps, a, &k);
		if (v.n == 0)
			return spec_error(ps, v.at, "missing value for %s",
					  key_names[key]);
	}
	if (ps->seen & (UINT64_C(1) << key))
		return spec_error(ps, a->at, "%s given twice", key_names[key]);
	ps->seen |= UINT64_C(1) << key;
	return set_value(ps, key, &v);
}

/* erasing before normalize erases uint8 pixels with whole values; after
 * it, float values (torchvision's RandomErasing after Normalize). */
static int check_erasing(struct parser *ps)
{
	struct rfb_layer *l = &ps->cur;

	for (int i = 0; i < ps->n; i++)
		if (ps->layers[i].kind == RFB_F_NORMALIZE)
			l->after_norm = 1;
	if (l->after_norm)
		return 0;
	if (l->erase_random) {
		l->deferred = 1; /* check_deferred sees what follows */
		return 0;
	}
	for (int c = 0; c < 3; c++)
		if (l->evalue[c] != l->fill[c])
			return spec_error(ps, ps->name_at, "erasing value %g: "
					  "before normalize a value is a whole "
					  "pixel value 0..255", l->evalue[c]);
	memset(l->evalue, 0, sizeof l->evalue);
	return 0;
}

/* choice and order: p has a weight an option (default: all 1, as
 * random.choices without weights), layers a count an option. */
static int check_options(struct parser *ps)
{
	struct rfb_layer *l = &ps->cur;
	const char *name = rfbi_filter_names[l->kind];
	double total = 0.0;

	if (ps->weights_given && ps->weights_given != l->options)
		return spec_error(ps, ps->name_at, "%s n=%d needs %d weights in p, "
				  "not %d", name, l->options, l->options,
				  ps->weights_given);
	if (ps->layers_given && ps->layers_given != l->options)
		return spec_error(ps, ps->name_at, "%s n=%d needs %d counts in "
				  "layers, not %d", name, l->options,
				  l->options, ps->layers_given);
	for (int i = 0; i < l->options; i++) {
		if (!ps->weights_given)
			l->weights[i] = 1.0;
		total += l->weights[i];
	}
	if (!(total > 0.0))
		return spec_error(ps, ps->name_at, "%s p: the weights are all 0",
				  name);
	return 0;
}

/* Checks that need the whole filter. */
static int check_filter(struct parser *ps)
{
	struct rfb_layer *l = &ps->cur;
	const char *name = rfbi_filter_names[l->kind];
	int rc;

	if (needs_first_key(l->kind) &&
	    !(ps->seen & (UINT64_C(1) << filter_keys[l->kind][0])))
		return spec_error(ps, ps->name_at, "%s needs %s %s", name,
				  l->kind <= RFB_F_RRCROP ? "a" : "its",
				  key_names[filter_keys[l->kind][0]]);
	if (l->max_size && (!l->shorter || l->max_size <= l->shorter))
		return spec_error(ps, ps->name_at,
				  "max_size needs resize=N with N < max_size");
	if (l->kind == RFB_F_RANDAUG && l->magnitude >= l->bins)
		return spec_error(ps, ps->name_at, "randaug m=%d needs m < bins (%d)",
				  l->magnitude, l->bins);
	if (l->kind == RFB_F_ERASING && (rc = check_erasing(ps)))
		return rc;
	if ((l->kind == RFB_F_CHOICE || l->kind == RFB_F_ORDER) &&
	    (rc = check_options(ps)))
		return rc;
	if (l->pad_mode != RFB_PAD_CONSTANT)
		memset(l->fill, 0, sizeof l->fill); /* torchvision ignores it */
	if (l->kind == RFB_F_NORMALIZE) {
		int m = !!(ps->seen & (UINT64_C(1) << K_MEAN));
		int s = !!(ps->seen & (UINT64_C(1) << K_STD));
		if ((ps->seen & (UINT64_C(1) << K_PRESET)) && (m || s))
			return spec_error(ps, ps->name_at,
					  "normalize: give a preset or mean/std, not both");
		if (ps->seen & (UINT64_C(1) << K_PRESET)) {
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

/* torchvision's class names, for suggestions: the filter of each. */
static const struct {
	const char *tv;
	int kind;
} tv_names[] = {
	{ "Resize", RFB_F_RESIZE }, { "CenterCrop", RFB_F_CENTERCROP },
	{ "RandomCrop", RFB_F_CROP }, { "RandomResizedCrop", RFB_F_RRCROP },
	{ "RandomHorizontalFlip", RFB_F_FLIP }, { "RandAugment", RFB_F_RANDAUG },
	{ "AutoAugment", RFB_F_AUTOAUG },
	{ "TrivialAugmentWide", RFB_F_TRIVIALAUG },
	{ "Normalize", RFB_F_NORMALIZE }, { "Grayscale", RFB_F_GRAY },
	{ "RandomVerticalFlip", RFB_F_VFLIP },
	{ "RandomGrayscale", RFB_F_GRAYSCALE },
	{ "ColorJitter", RFB_F_COLORJITTER }, { "GaussianBlur", RFB_F_GAUSSBLUR },
	{ "RandomErasing", RFB_F_ERASING },
	{ "RandomSolarize", RFB_F_SOLARIZE },
	{ "RandomPosterize", RFB_F_POSTERIZE },
	{ "RandomEqualize", RFB_F_EQUALIZE },
	{ "RandomAutocontrast", RFB_F_AUTOCONTRAST },
	{ "RandomAdjustSharpness", RFB_F_SHARPNESS },
	{ "RandomInvert", RFB_F_INVERT }, { "RandomRotation", RFB_F_ROTATION },
	{ "RandomAffine", RFB_F_AFFINE },
	{ "RandomPerspective", RFB_F_PERSPECTIVE },
	{ "RandomApply", RFB_F_APPLY }, { "AugMix", RFB_F_AUGMIX },
	{ "Pad", RFB_F_PAD }, { "RandomChoice", RFB_F_CHOICE },
	{ "RandomOrder", RFB_F_ORDER },
};

static int unknown_filter(struct parser *ps, const struct tok *name)
{
	const char *near = closest(name, rfbi_filter_names, RFB_F_COUNT);
	int best = 99;

	/* a torchvision name (any case) or one a letter or two off */
	for (size_t i = 0; i < sizeof tv_names / sizeof *tv_names; i++) {
		int d = distance(name->s, name->n, tv_names[i].tv);
		if (d < best && d <= 2) {
			best = d;
			near = rfbi_filter_names[tv_names[i].kind];
		}
	}
	set_hint(ps, "filters", rfbi_filter_names, RFB_F_COUNT);
	if (near)
		return spec_error(ps, name->at,
				  "unknown filter \"%.*s\" (did you mean \"%s\"?)",
				  (int)name->n, name->s, near);
	return spec_error(ps, name->at, "unknown filter \"%.*s\"", (int)name->n,
			  name->s);
}

static int lookup_filter(struct parser *ps, const struct tok *name)
{
	for (int i = 0; i < RFB_F_COUNT; i++)
		if (tok_is(name, rfbi_filter_names[i]))
			return i;
	if (name->n == 0)
		return spec_error(ps, name->at, "empty filter");
	return unknown_filter(ps, name);
}

static int add_layers(struct parser *ps)
{
	int count = ps->cur.kind == RFB_F_RANDAUG ? ps->repeat : 1;

	for (int i = 0; i < ps->n; i++)
		if (ps->layers[i].kind == RFB_F_NORMALIZE &&
		    ps->cur.kind != RFB_F_ERASING)
			return spec_error(ps, ps->name_at,
					  "normalize must be the last filter "
					  "(only erasing may follow it)");
	if (ps->n + count > RFB_PIPELINE_MAX_LAYERS)
		return spec_error(ps, ps->name_at, "more than %d layers",
				  RFB_PIPELINE_MAX_LAYERS);
	for (int i = 0; i < count; i++)
		ps->layers[ps->n++] = ps->cur;
	return 0;
}

/* 1 if layer l keeps the image's size and channels. */
static int keeps_shape(const struct rfb_layer *l)
{
	int kind = l->kind;

	if (kind == RFB_F_ROTATION && l->expand)
		return 0;
	return kind != RFB_F_RESIZE && kind != RFB_F_CENTERCROP &&
	       kind != RFB_F_CROP && kind != RFB_F_RRCROP &&
	       kind != RFB_F_GRAY && kind != RFB_F_RGB &&
	       kind != RFB_F_NORMALIZE && kind != RFB_F_APPLY &&
	       kind != RFB_F_PAD && kind != RFB_F_CHOICE &&
	       kind != RFB_F_ORDER;
}

/* The layers of choice or order l at position i: each option, when not
 * given in layers=, is the next filter (the layers of one filter share
 * its column). */
static int resolve_options(struct parser *ps, struct rfb_layer *l, int i,
			   const size_t *name_at)
{
	const char *name = rfbi_filter_names[l->kind];
	int at = i + 1;

	for (int o = 0; o < l->options; o++) {
		if (!l->option_layers[o]) {
			int n = 0;
			while (at + n < ps->n && name_at[at + n] == name_at[at])
				n++;
			if (n == 0)
				return spec_error(ps, name_at[i],
						  "%s n=%d: only %d filters follow "
						  "it", name, l->options, o);
			l->option_layers[o] = n;
		}
		at += l->option_layers[o];
	}
	l->count = at - i - 1;
	return 0;
}

/*
 * erasing value=random before normalize (torchvision's ToTensor,
 * RandomErasing(value='random'), Normalize): the normal values are drawn
 * on the float tensor, so the layer runs at normalize; every layer up to
 * normalize must then be erasing too (deferred with it, in order).
 */
static int check_deferred(struct parser *ps, const size_t *name_at)
{
	int norm = -1;

	for (int i = 0; i < ps->n; i++)
		if (ps->layers[i].kind == RFB_F_NORMALIZE)
			norm = i;
	for (int i = 0; i < ps->n; i++) {
		if (!ps->layers[i].deferred || ps->layers[i].after_norm)
			continue;
		if (norm < 0)
			return spec_error(ps, name_at[i], "erasing value=random "
					  "draws float values: put a normalize "
					  "after it (torchvision's ToTensor alone "
					  "is normalize=mean=0:std=1)");
		for (int k = i + 1; k < norm; k++) {
			if (ps->layers[k].kind != RFB_F_ERASING)
				return spec_error(ps, name_at[k],
						  "only erasing may come between "
						  "erasing value=random and normalize "
						  "(its values are drawn at "
						  "normalize): move %s before it",
						  rfbi_filter_names[ps->layers[k].kind]);
			ps->layers[k].deferred = 1;
		}
		break;
	}
	return 0;
}

/* 1 if layer l may be gated by gate (apply, choice or order): an order's
 * layers keep the image's size and channels; apply and choice may hold
 * layers that change the size (the size is then drawn with the gate,
 * pipeline_shape.c), never the channels, normalize or another gate. */
static int gateable(const struct rfb_layer *gate, const struct rfb_layer *l)
{
	if (keeps_shape(l))
		return 1;
	if (gate->kind == RFB_F_ORDER)
		return 0;
	return l->kind == RFB_F_RESIZE || l->kind == RFB_F_CENTERCROP ||
	       l->kind == RFB_F_CROP || l->kind == RFB_F_RRCROP ||
	       l->kind == RFB_F_PAD || l->kind == RFB_F_ROTATION;
}

/* Every apply, choice and order gates layers that follow it (gateable). */
static int check_groups(struct parser *ps, const size_t *name_at)
{
	for (int i = 0; i < ps->n; i++) {
		struct rfb_layer *l = &ps->layers[i];
		const char *name = rfbi_filter_names[l->kind];
		int rc;
		if (l->kind != RFB_F_APPLY && l->kind != RFB_F_CHOICE &&
		    l->kind != RFB_F_ORDER)
			continue;
		if (l->kind != RFB_F_APPLY &&
		    (rc = resolve_options(ps, l, i, name_at)))
			return rc;
		if (i + l->count >= ps->n && l->kind == RFB_F_APPLY)
			return spec_error(ps, name_at[i],
					  "apply n=%d: only %d layers follow it",
					  l->count, ps->n - i - 1);
		if (i + l->count >= ps->n)
			return spec_error(ps, name_at[i],
					  "%s n=%d: its options have %d layers, "
					  "only %d follow it", name, l->options,
					  l->count, ps->n - i - 1);
		for (int k = i + 1; k <= i + l->count; k++)
			if (ps->layers[k].deferred && l->kind != RFB_F_APPLY)
				return spec_error(ps, name_at[k],
						  "%s cannot gate erasing before "
						  "normalize after value=random", name);
		for (int k = i + 1; k <= i + l->count; k++)
			if (!gateable(l, &ps->layers[k]) && l->kind == RFB_F_ORDER)
				return spec_error(ps, name_at[k],
						  "order cannot gate %s%s (only "
						  "filters that keep the image's "
						  "size and channels)",
						  rfbi_filter_names[ps->layers[k].kind],
						  ps->layers[k].expand ? " expand=1" : "");
			else if (!gateable(l, &ps->layers[k]))
				return spec_error(ps, name_at[k],
						  "%s cannot gate %s (only filters "
						  "that keep the image's channels, "
						  "and no normalize or other gate)",
						  name, rfbi_filter_names[ps->layers[k].kind]);
	}
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
	ps->weights_given = ps->layers_given = 0;
	ps->name_at = at;
	at += name.n;
	if (at < end && s[at] != '=')
		return spec_error(ps, at, "unexpected '%c' after %s", s[at],
				  rfbi_filter_names[kind]);
	if (at < end) {
		if (filter_keys[kind][0] == K_NONE && filter_keys[kind][1] == K_NONE)
			return spec_error(ps, at, "%s takes no arguments",
					  rfbi_filter_names[kind]);
		struct tok args = { s + at + 1, end - at - 1, at + 1 }, a[12];
		int n = split(&args, ':', a, 12);
		if (n < 0)
			return spec_error(ps, at + 1, "too many arguments");
		for (int i = 0; i < n; i++)
			if ((rc = parse_arg(ps, &a[i], i)))
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
	size_t name_at[RFB_PIPELINE_MAX_LAYERS];
	while (!rc && len > 0 && at <= len) {
		size_t end = at;
		while (end < len && spec[end] != ',')
			end++;
		while (at < end && (spec[at] == ' ' || spec[at] == '\t'))
			at++;
		size_t stop = end;
		while (stop > at && (spec[stop - 1] == ' ' || spec[stop - 1] == '\t'))
			stop--;
		int before = ps->n;
		rc = parse_filter(ps, at, stop);
		for (int i = before; i < ps->n; i++)
			name_at[i] = at;
		at = end + 1;
	}
	if (!rc)
		rc = check_deferred(ps, name_at);
	if (!rc)
		rc = check_groups(ps, name_at);
	if (!rc)
		rc = rfbi_pipeline_make(ps->layers, ps->n, out, err);
	free(ps);
	return rc;
}
