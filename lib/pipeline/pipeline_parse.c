/*
 * pipeline_parse.c - the pipeline spec parser (grammar in
 * refurb-pipeline(7)):
 *
 *   spec   := "" | filter ("," filter)*
 *   filter := name ["=" arg (":" arg)*]
 *   arg    := key "=" value | value      (a bare value only first)
 *
 * Every error is RFB_ESPEC with the 1-based column of the offending
 * character and the spec with a caret under it.  This file splits the
 * spec into filters and arguments and runs the checks; each filter
 * family's defaults, values and checks are in pipeline_parse_<family>.c,
 * tokens and values in pipeline_parse_lex.c, keys in
 * pipeline_parse_keys.c.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_parse_internal.h"

/* The family of each filter. */
static const struct rfbi_parse_family *const families[RFB_F_COUNT] = {
	[RFB_F_RESIZE] = &rfbi_parse_geometry,
	[RFB_F_CENTERCROP] = &rfbi_parse_geometry,
	[RFB_F_CROP] = &rfbi_parse_geometry,
	[RFB_F_RRCROP] = &rfbi_parse_geometry,
	[RFB_F_FLIP] = &rfbi_parse_geometry,
	[RFB_F_VFLIP] = &rfbi_parse_geometry,
	[RFB_F_ROTATION] = &rfbi_parse_geometry,
	[RFB_F_AFFINE] = &rfbi_parse_geometry,
	[RFB_F_PERSPECTIVE] = &rfbi_parse_geometry,
	[RFB_F_PAD] = &rfbi_parse_geometry,
	[RFB_F_GRAY] = &rfbi_parse_colour,
	[RFB_F_RGB] = &rfbi_parse_colour,
	[RFB_F_GRAYSCALE] = &rfbi_parse_colour,
	[RFB_F_COLORJITTER] = &rfbi_parse_colour,
	[RFB_F_GAUSSBLUR] = &rfbi_parse_colour,
	[RFB_F_SOLARIZE] = &rfbi_parse_colour,
	[RFB_F_POSTERIZE] = &rfbi_parse_colour,
	[RFB_F_EQUALIZE] = &rfbi_parse_colour,
	[RFB_F_AUTOCONTRAST] = &rfbi_parse_colour,
	[RFB_F_SHARPNESS] = &rfbi_parse_colour,
	[RFB_F_INVERT] = &rfbi_parse_colour,
	[RFB_F_RANDAUG] = &rfbi_parse_policy,
	[RFB_F_AUTOAUG] = &rfbi_parse_policy,
	[RFB_F_TRIVIALAUG] = &rfbi_parse_policy,
	[RFB_F_AUGMIX] = &rfbi_parse_policy,
	[RFB_F_APPLY] = &rfbi_parse_gate,
	[RFB_F_CHOICE] = &rfbi_parse_gate,
	[RFB_F_ORDER] = &rfbi_parse_gate,
	[RFB_F_NORMALIZE] = &rfbi_parse_tensor,
	[RFB_F_ERASING] = &rfbi_parse_tensor,
};

static void set_defaults(struct rfb_layer *l, enum rfb_filter kind)
{
	memset(l, 0, sizeof *l);
	l->kind = kind;
	l->interp = RFB_INTERP_BILINEAR;
	families[kind]->defaults(l);
}

/* The value v of key: its family's, or a shared key's. */
static int set_value(struct rfbi_parser *ps, int key, const struct rfbi_tok *v)
{
	int rc = families[ps->cur.kind]->value(ps, key, v);

	return rc == RFBI_KEY_SHARED ? rfbi_parse_shared_value(ps, key, v) : rc;
}

/* One argument token (no ':' or ','), number index of its filter. */
static int parse_arg(struct rfbi_parser *ps, const struct rfbi_tok *a, int index)
{
	int first = index == 0;
	const char *eq = memchr(a->s, '=', a->n);
	struct rfbi_tok k = *a, v;
	int key;

	if (a->n == 0)
		return rfbi_spec_error(ps, a->at, "missing argument");
	if (!eq) {
		key = rfbi_filter_keys[ps->cur.kind][0];
		if (!first || key == K_NONE)
			return rfbi_bare_value(ps, a, index);
		v = *a;
	} else {
		k.n = (size_t)(eq - a->s);
		v = (struct rfbi_tok){ eq + 1, a->n - k.n - 1, a->at + k.n + 1 };
		key = rfbi_find_key(ps->cur.kind, &k);
		if (key == K_NONE)
			return rfbi_unknown_key(ps, a, &k);
		if (v.n == 0)
			return rfbi_spec_error(ps, v.at, "missing value for %s",
					       rfbi_key_names[key]);
	}
	if (rfbi_parse_seen(ps, key))
		return rfbi_spec_error(ps, a->at, "%s given twice",
				       rfbi_key_names[key]);
	ps->seen |= UINT64_C(1) << key;
	return set_value(ps, key, &v);
}

/* Checks that need the whole filter. */
static int check_filter(struct rfbi_parser *ps)
{
	struct rfb_layer *l = &ps->cur;
	const struct rfbi_parse_family *family = families[l->kind];
	int first = rfbi_filter_keys[l->kind][0], rc;

	if (rfbi_needs_first_key(l->kind) && !rfbi_parse_seen(ps, first))
		return rfbi_spec_error(ps, ps->name_at, "%s needs %s %s",
				       rfbi_filter_names[l->kind],
				       l->kind <= RFB_F_RRCROP ? "a" : "its",
				       rfbi_key_names[first]);
	if (family->check && (rc = family->check(ps)))
		return rc;
	if (l->pad_mode != RFB_PAD_CONSTANT)
		memset(l->fill, 0, sizeof l->fill); /* torchvision ignores it */
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

static int unknown_filter(struct rfbi_parser *ps, const struct rfbi_tok *name)
{
	const char *near = rfbi_spec_closest(name, rfbi_filter_names, RFB_F_COUNT);
	int best = 99;

	/* a torchvision name (any case) or one a letter or two off */
	for (size_t i = 0; i < sizeof tv_names / sizeof *tv_names; i++) {
		int d = rfbi_spec_distance(name->s, name->n, tv_names[i].tv);
		if (d < best && d <= 2) {
			best = d;
			near = rfbi_filter_names[tv_names[i].kind];
		}
	}
	rfbi_spec_hint(ps, "filters", rfbi_filter_names, RFB_F_COUNT);
	if (near)
		return rfbi_spec_error(ps, name->at,
				       "unknown filter \"%.*s\" (did you mean \"%s\"?)",
				       (int)name->n, name->s, near);
	return rfbi_spec_error(ps, name->at, "unknown filter \"%.*s\"",
			       (int)name->n, name->s);
}

static int lookup_filter(struct rfbi_parser *ps, const struct rfbi_tok *name)
{
	for (int i = 0; i < RFB_F_COUNT; i++)
		if (rfbi_tok_is(name, rfbi_filter_names[i]))
			return i;
	if (name->n == 0)
		return rfbi_spec_error(ps, name->at, "empty filter");
	return unknown_filter(ps, name);
}

static int add_layers(struct rfbi_parser *ps)
{
	int count = ps->cur.kind == RFB_F_RANDAUG ? ps->repeat : 1;

	for (int i = 0; i < ps->n; i++)
		if (ps->layers[i].kind == RFB_F_NORMALIZE &&
		    ps->cur.kind != RFB_F_ERASING)
			return rfbi_spec_error(ps, ps->name_at,
					       "normalize must be the last filter "
					       "(only erasing may follow it)");
	if (ps->n + count > RFB_PIPELINE_MAX_LAYERS)
		return rfbi_spec_error(ps, ps->name_at, "more than %d layers",
				       RFB_PIPELINE_MAX_LAYERS);
	for (int i = 0; i < count; i++)
		ps->layers[ps->n++] = ps->cur;
	return 0;
}

/* One filter [at, end) of the spec (end: its ',' or the NUL). */
static int parse_filter(struct rfbi_parser *ps, size_t at, size_t end)
{
	const char *s = ps->spec;
	struct rfbi_tok name = { s + at, 0, at };
	int kind, rc;

	while (name.n < end - at && (isalnum((unsigned char)name.s[name.n]) ||
				     name.s[name.n] == '_'))
		name.n++;
	if (name.n == 0 && at < end)
		return rfbi_spec_error(ps, at, "unexpected '%c'", s[at]);
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
		return rfbi_spec_error(ps, at, "unexpected '%c' after %s", s[at],
				       rfbi_filter_names[kind]);
	if (at < end) {
		if (rfbi_filter_keys[kind][0] == K_NONE &&
		    rfbi_filter_keys[kind][1] == K_NONE)
			return rfbi_spec_error(ps, at, "%s takes no arguments",
					       rfbi_filter_names[kind]);
		struct rfbi_tok args = { s + at + 1, end - at - 1, at + 1 }, a[12];
		int n = rfbi_tok_split(&args, ':', a, 12);
		if (n < 0)
			return rfbi_spec_error(ps, at + 1, "too many arguments");
		for (int i = 0; i < n; i++)
			if ((rc = parse_arg(ps, &a[i], i)))
				return rc;
	}
	rc = check_filter(ps);
	return rc ? rc : add_layers(ps);
}

int rfb_pipeline_parse(const char *spec, rfb_pipeline **out, rfb_err *err)
{
	struct rfbi_parser *ps;
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
		rc = rfbi_parse_check_deferred(ps, name_at);
	if (!rc)
		rc = rfbi_parse_check_gates(ps, name_at);
	if (!rc)
		rc = rfbi_pipeline_make(ps->layers, ps->n, out, err);
	free(ps);
	return rc;
}
