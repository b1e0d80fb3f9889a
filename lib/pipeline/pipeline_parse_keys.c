/*
 * pipeline_parse_keys.c - the keys of the filters' arguments: their
 * names and torchvision's aliases, which filter takes which (and which
 * one a bare value sets), the errors for a key a filter has not, and the
 * values of the keys several filter families share.
 */
#include <stdint.h>
#include <string.h>

#include "pipeline_parse_internal.h"

const char *const rfbi_key_names[K_COUNT] = {
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

const int rfbi_filter_keys[RFB_F_COUNT][RFBI_MAX_KEYS] = {
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

int rfbi_needs_first_key(int kind)
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

int rfbi_find_key(int kind, const struct rfbi_tok *k)
{
	int key = K_NONE;

	for (int i = 0; i < K_COUNT && key == K_NONE; i++)
		if (rfbi_tok_is(k, rfbi_key_names[i]))
			key = i;
	for (size_t i = 0; i < sizeof key_aliases / sizeof *key_aliases; i++)
		if (rfbi_tok_is(k, key_aliases[i].name))
			key = key_aliases[i].key;
	for (int i = 0; i < RFBI_MAX_KEYS && key != K_NONE; i++) {
		if (rfbi_filter_keys[kind][i] == K_NONE && i > 0)
			break;
		if (rfbi_filter_keys[kind][i] == key)
			return key;
	}
	return K_NONE;
}

/* The names of kind's keys into names[], returns their number. */
static int keys_of(int kind, const char **names)
{
	int n = 0;

	for (int i = 0; i < RFBI_MAX_KEYS; i++) {
		int key = rfbi_filter_keys[kind][i];
		if (key == K_NONE && i > 0)
			break;
		if (key != K_NONE)
			names[n++] = rfbi_key_names[key];
	}
	return n;
}

int rfbi_unknown_key(struct rfbi_parser *ps, const struct rfbi_tok *a,
		     const struct rfbi_tok *k)
{
	const char *names[RFBI_MAX_KEYS];
	const char *kind = rfbi_filter_names[ps->cur.kind];
	char near[80];
	int n = keys_of(ps->cur.kind, names);

	rfbi_spec_hint(ps, "its arguments", names, n);
	return rfbi_spec_error(ps, a->at, "%s has no argument \"%.*s\"%s", kind,
			       (int)k->n, k->s,
			       rfbi_spec_did_you_mean(near, sizeof near, k,
						      names, n));
}

int rfbi_bare_value(struct rfbi_parser *ps, const struct rfbi_tok *a, int index)
{
	int key = index < RFBI_MAX_KEYS ? rfbi_filter_keys[ps->cur.kind][index]
					: K_NONE;

	if (key == K_NONE)
		return rfbi_spec_error(ps, a->at, "\"%.*s\" needs a key (key=value)",
				       (int)a->n, a->s);
	return rfbi_spec_error(ps, a->at,
			       "\"%.*s\" needs a key (key=value): did you mean %s=%.*s?",
			       (int)a->n, a->s, rfbi_key_names[key], (int)a->n,
			       a->s);
}

int rfbi_parse_shared_value(struct rfbi_parser *ps, int key,
			    const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;

	switch (key) {
	case K_INTERP:
		return rfbi_parse_interp(ps, v, 3);
	case K_FILL:
		return rfbi_parse_fill(ps, v);
	case K_P:
		return rfbi_parse_bounded(ps, v, "p", 0.0, 1.0, &l->p);
	case K_SCALE:
		return rfbi_parse_range(ps, v, "scale", 0.0, 1.0, l->scale);
	case K_RATIO:
		return rfbi_parse_range(ps, v, "ratio", 0.0, 1e6, l->ratio);
	}
	return rfbi_spec_error(ps, v->at, "internal: unknown key");
}
