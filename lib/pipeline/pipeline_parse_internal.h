/*
 * pipeline_parse_internal.h - the spec parser's own, shared by its files:
 * the driver (pipeline_parse.c: filters, arguments, whole-filter checks),
 * tokens, values and errors with the caret (pipeline_parse_lex.c), the
 * keys each filter takes (pipeline_parse_keys.c), and one file a filter
 * family: geometry, colour, policies, gates and the tensor tail
 * (pipeline_parse_geometry.c, _colour.c, _policy.c, _gate.c, _tensor.c).
 */
#ifndef REFURB_PIPELINE_PARSE_INTERNAL_H
#define REFURB_PIPELINE_PARSE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline_internal.h"
#include "refurb/enum.h"

/* The keys of the filters' arguments (names in rfbi_key_names). */
enum rfbi_key {
	K_SIZE, K_MAX_SIZE, K_INTERP, K_PAD, K_FILL, K_PAD_IF_NEEDED, K_SCALE,
	K_RATIO, K_P, K_N, K_M, K_BINS, K_POLICY, K_MEAN, K_STD, K_PRESET,
	K_BRIGHTNESS, K_CONTRAST, K_SATURATION, K_HUE, K_KERNEL, K_SIGMA,
	K_VALUE, K_THRESHOLD, K_BITS, K_FACTOR, K_DEGREES, K_TRANSLATE,
	K_SHEAR, K_DISTORTION, K_DCT, K_SEVERITY, K_WIDTH, K_DEPTH, K_ALPHA,
	K_ALL_OPS, K_PAD_MODE, K_EXPAND, K_CENTER, K_LAYERS,
	K_COUNT, K_NONE = -1
};

/* Most keys of one filter. */
#define RFBI_MAX_KEYS 8
#define RFBI_ENUM_MAX 16   /* names rfbi_parse_enum offers at most */

/* A token [s, s + n) of the spec. */
struct rfbi_tok {
	const char *s;
	size_t n;
	size_t at; /* its column, 0-based */
};

struct rfbi_parser {
	const char *spec;
	rfb_err *err;
	struct rfb_layer layers[RFB_PIPELINE_MAX_LAYERS];
	int n;
	/* the filter being parsed */
	struct rfb_layer cur;
	int repeat;            /* randaug n */
	uint64_t seen;         /* keys given, bit per enum rfbi_key */
	size_t name_at;        /* column (0-based) of its name */
	int weights_given;     /* choice: the values of p */
	int layers_given;      /* choice, order: the values of layers */
	char hint[400];        /* a line after the caret: the valid choices */
};

/* 1 if key was given in the filter being parsed. */
static inline int rfbi_parse_seen(const struct rfbi_parser *ps, int key)
{
	return !!(ps->seen & (UINT64_C(1) << key));
}

/* ---- tokens, values and errors (pipeline_parse_lex.c) ---- */

/* RFB_ESPEC pointing at byte at of the spec, with the spec and a caret
 * under it (and ps->hint, when set, on a line after it). */
int rfbi_spec_error(struct rfbi_parser *ps, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Edit distance of a[0..n) and b (Levenshtein, with transpositions;
 * 99 for words of 40 letters or more). */
int rfbi_spec_distance(const char *a, size_t n, const char *b);

/* The closest of names[0..count) to t, or NULL when none is close (at
 * most a third of the word's letters wrong, at least one). */
const char *rfbi_spec_closest(const struct rfbi_tok *t, const char *const *names,
			      int count);

/* " (did you mean \"x\"?)" (written in buf) when x is close to t, else "". */
const char *rfbi_spec_did_you_mean(char *buf, size_t size, const struct rfbi_tok *t,
				   const char *const *names, int count);

/* ps->hint = "what: a, b, c" */
void rfbi_spec_hint(struct rfbi_parser *ps, const char *what,
		    const char *const *names, int count);

/* 1 if t is word. */
int rfbi_tok_is(const struct rfbi_tok *t, const char *word);

/* Split t at sep into up to max parts; returns the count or -1. */
int rfbi_tok_split(const struct rfbi_tok *t, char sep, struct rfbi_tok *parts,
		   int max);

/* The value parsers: 0, or RFB_ESPEC with the error set ("what" names
 * the value in it). */

/* A whole number in lo..hi. */
int rfbi_parse_int(struct rfbi_parser *ps, const struct rfbi_tok *t, long lo,
		   long hi, const char *what, int *out);

/* A number, or a fraction A/B of two (torchvision's floats written as
 * 3/4); callers that split lists at '/' pass single numbers. */
int rfbi_parse_num(struct rfbi_parser *ps, const struct rfbi_tok *t,
		   const char *what, double *out);

/* A number in lo..hi. */
int rfbi_parse_bounded(struct rfbi_parser *ps, const struct rfbi_tok *v,
		       const char *what, double lo, double hi, double *out);

/* a-b (or a: both); lo_min < a <= b <= hi_max */
int rfbi_parse_range(struct rfbi_parser *ps, const struct rfbi_tok *t,
		     const char *what, double lo_min, double hi_max,
		     double out[2]);

/* The '-' that separates two signed numbers in t: the first one after
 * a digit or a '.' (not an exponent's sign); t->n when there is none. */
size_t rfbi_range_dash(const struct rfbi_tok *t);

/*
 * A range of signed numbers, torchvision's (lo, hi): "A-B" (either may be
 * negative: -10-10, -0.2--0.1), or one number X, which means
 * (center - X, center + X) for X >= 0 when sym is set, else (X, X).
 * lo <= hi.
 */
int rfbi_parse_srange(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      const char *what, int sym, double center, double out[2]);

/* 1 or 3 numbers separated by '/' (*count of them; one fills all 3). */
int rfbi_parse_triple(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      const char *what, double out[3], int *count);

/* One of names[0..count) into *out (its index); else the error lists
 * them in the hint. */
int rfbi_parse_word(struct rfbi_parser *ps, const struct rfbi_tok *t,
		    const char *what, const char *const *names, int count,
		    int *out);

/* The value of one of the first count names of table (enum.h) into *out
 * (untouched on error); else the error lists them in the hint. */
int rfbi_parse_enum(struct rfbi_parser *ps, const struct rfbi_tok *t,
		    const char *what, const struct rfb_enum_name *table,
		    int count, int *out);

/* 0 or 1 into *out. */
int rfbi_parse_bool(struct rfbi_parser *ps, const struct rfbi_tok *t,
		    const char *what, int *out);

/* The current layer's interp: one of the first count of nearest,
 * bilinear, bicubic. */
int rfbi_parse_interp(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      int count);

/* The current layer's fill: 1 or 3 pixel values 0..255 separated by
 * '/'. */
int rfbi_parse_fill(struct rfbi_parser *ps, const struct rfbi_tok *t);

/* ---- keys (pipeline_parse_keys.c) ---- */

/* Key names, indexed by enum rfbi_key. */
extern const char *const rfbi_key_names[K_COUNT];

/* Keys of each filter; the first is the one a bare value sets (K_NONE:
 * no bare value), K_NONE after the last. */
extern const int rfbi_filter_keys[RFB_F_COUNT][RFBI_MAX_KEYS];

/* 1 if filter kind's first key must be given. */
int rfbi_needs_first_key(int kind);

/* The key named k (or its torchvision alias) among kind's keys, or
 * K_NONE. */
int rfbi_find_key(int kind, const struct rfbi_tok *k);

/* The error for argument a whose key k the current filter has not
 * (RFB_ESPEC), suggesting the closest of its keys. */
int rfbi_unknown_key(struct rfbi_parser *ps, const struct rfbi_tok *a,
		     const struct rfbi_tok *k);

/* The error for a bare value a, argument number index (RFB_ESPEC):
 * suggests the key of its position. */
int rfbi_bare_value(struct rfbi_parser *ps, const struct rfbi_tok *a, int index);

/* The value v of a key several families share (interp, fill, p, scale,
 * ratio) into the current layer: 0 or RFB_ESPEC. */
int rfbi_parse_shared_value(struct rfbi_parser *ps, int key,
			    const struct rfbi_tok *v);

/* ---- the filter families ---- */

/* A family's value parser returns this for a key it leaves to
 * rfbi_parse_shared_value. */
#define RFBI_KEY_SHARED 1

struct rfbi_parse_family {
	/* The current layer's defaults, on a zeroed layer of its kind with
	 * interp bilinear. */
	void (*defaults)(struct rfb_layer *l);
	/* The value v of key: 0, RFB_ESPEC, or RFBI_KEY_SHARED. */
	int (*value)(struct rfbi_parser *ps, int key, const struct rfbi_tok *v);
	/* Checks that need the whole filter (NULL: none): 0 or RFB_ESPEC. */
	int (*check)(struct rfbi_parser *ps);
};

/* resize, centercrop, crop, rrcrop, flip, vflip, rotation, affine,
 * perspective, pad (pipeline_parse_geometry.c) */
extern const struct rfbi_parse_family rfbi_parse_geometry;

/* gray, rgb, grayscale, colorjitter, gaussblur, solarize, posterize,
 * equalize, autocontrast, sharpness, invert (pipeline_parse_colour.c) */
extern const struct rfbi_parse_family rfbi_parse_colour;

/* randaug, autoaug, trivialaug, augmix (pipeline_parse_policy.c) */
extern const struct rfbi_parse_family rfbi_parse_policy;

/* apply, choice, order (pipeline_parse_gate.c) */
extern const struct rfbi_parse_family rfbi_parse_gate;

/* normalize, erasing (pipeline_parse_tensor.c) */
extern const struct rfbi_parse_family rfbi_parse_tensor;

/* Checks of the whole pipeline, once every filter is parsed (name_at[i]:
 * the column of layer i's filter): 0 or RFB_ESPEC. */

/* erasing value=random before normalize: only erasing up to normalize
 * (marked deferred with it). */
int rfbi_parse_check_deferred(struct rfbi_parser *ps, const size_t *name_at);

/* Every apply, choice and order gates layers that follow it and that it
 * may gate (a choice's or order's options resolved into their layers). */
int rfbi_parse_check_gates(struct rfbi_parser *ps, const size_t *name_at);

#endif
