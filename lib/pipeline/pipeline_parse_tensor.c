/*
 * pipeline_parse_tensor.c - the spec parser's tensor tail: normalize
 * (the float tensor a trainer takes) and erasing, before it on uint8
 * pixels or after it on floats (refurb-pipeline(7)): their defaults,
 * keys and checks, and once the whole spec is parsed, erasing
 * value=random before normalize, deferred to it.
 */
#include <string.h>

#include "pipeline_parse_internal.h"

static const char *const preset_names[] = { "imagenet" };

static void tensor_defaults(struct rfb_layer *l)
{
	switch (l->kind) {
	case RFB_F_NORMALIZE:
		l->norm_channels = 1;
		l->std[0] = l->std[1] = l->std[2] = 1.0;
		break;
	case RFB_F_ERASING:
		l->p = 0.5;
		l->scale[0] = 0.02;
		l->scale[1] = 0.33;
		l->ratio[0] = 0.3;
		l->ratio[1] = 3.3;
		break;
	default:
		break;
	}
}

/* erasing's value: "random", or 1 or 3 numbers (whole pixel values
 * 0..255 before normalize; any after it, where they are float values);
 * check_erasing decides which. */
static int parse_erase_value(struct rfbi_parser *ps, const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int n;

	if (v->n == 6 && memcmp(v->s, "random", 6) == 0) {
		l->erase_random = 1;
		return 0;
	}
	if (rfbi_parse_triple(ps, v, "value", l->evalue, &n))
		return RFB_ESPEC;
	for (int c = 0; c < 3; c++) {
		double x = l->evalue[c];
		l->fill[c] = x >= 0 && x <= 255 && x == (int)x ? (unsigned char)x : 0;
	}
	return 0;
}

static int tensor_value(struct rfbi_parser *ps, int key,
			const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int i = 0, rc;

	switch (key) {
	case K_MEAN:
	case K_STD:
		rc = rfbi_parse_triple(ps, v, rfbi_key_names[key],
				       key == K_MEAN ? l->mean : l->std, &i);
		if (i > l->norm_channels)
			l->norm_channels = i; /* 3 values, or 1 for every channel */
		return rc;
	case K_PRESET:
		return rfbi_parse_word(ps, v, "normalize preset", preset_names, 1,
				       &i);
	case K_VALUE:
		return parse_erase_value(ps, v);
	default:
		return RFBI_KEY_SHARED;
	}
}

/* erasing before normalize erases uint8 pixels with whole values; after
 * it, float values (torchvision's RandomErasing after Normalize). */
static int check_erasing(struct rfbi_parser *ps)
{
	struct rfb_layer *l = &ps->cur;

	for (int i = 0; i < ps->n; i++)
		if (ps->layers[i].kind == RFB_F_NORMALIZE)
			l->after_norm = 1;
	if (l->after_norm)
		return 0;
	if (l->erase_random) {
		l->deferred = 1; /* rfbi_parse_check_deferred sees what follows */
		return 0;
	}
	for (int c = 0; c < 3; c++)
		if (l->evalue[c] != l->fill[c])
			return rfbi_spec_error(ps, ps->name_at, "erasing value %g: "
					       "before normalize a value is a "
					       "whole pixel value 0..255",
					       l->evalue[c]);
	memset(l->evalue, 0, sizeof l->evalue);
	return 0;
}

/* normalize: a preset or mean/std, and no std 0. */
static int check_normalize(struct rfbi_parser *ps)
{
	struct rfb_layer *l = &ps->cur;
	int m = rfbi_parse_seen(ps, K_MEAN), s = rfbi_parse_seen(ps, K_STD);

	if (rfbi_parse_seen(ps, K_PRESET) && (m || s))
		return rfbi_spec_error(ps, ps->name_at, "normalize: give a "
				       "preset or mean/std, not both");
	if (rfbi_parse_seen(ps, K_PRESET)) {
		const double mean[3] = { 0.485, 0.456, 0.406 };
		const double std[3] = { 0.229, 0.224, 0.225 };
		l->norm_channels = 3;
		memcpy(l->mean, mean, sizeof mean);
		memcpy(l->std, std, sizeof std);
	}
	for (int c = 0; c < 3; c++)
		if (l->std[c] == 0.0)
			return rfbi_spec_error(ps, ps->name_at, "normalize: std 0");
	return 0;
}

static int tensor_check(struct rfbi_parser *ps)
{
	return ps->cur.kind == RFB_F_ERASING ? check_erasing(ps)
					     : check_normalize(ps);
}

const struct rfbi_parse_family rfbi_parse_tensor = {
	tensor_defaults, tensor_value, tensor_check
};

/*
 * erasing value=random before normalize (torchvision's ToTensor,
 * RandomErasing(value='random'), Normalize): the normal values are drawn
 * on the float tensor, so the layer runs at normalize; every layer up to
 * normalize must then be erasing too (deferred with it, in order).
 */
int rfbi_parse_check_deferred(struct rfbi_parser *ps, const size_t *name_at)
{
	int norm = -1;

	for (int i = 0; i < ps->n; i++)
		if (ps->layers[i].kind == RFB_F_NORMALIZE)
			norm = i;
	for (int i = 0; i < ps->n; i++) {
		if (!ps->layers[i].deferred || ps->layers[i].after_norm)
			continue;
		if (norm < 0)
			return rfbi_spec_error(ps, name_at[i], "erasing "
					       "value=random draws float values: "
					       "put a normalize after it "
					       "(torchvision's ToTensor alone is "
					       "normalize=mean=0:std=1)");
		for (int k = i + 1; k < norm; k++) {
			if (ps->layers[k].kind != RFB_F_ERASING)
				return rfbi_spec_error(ps, name_at[k],
						       "only erasing may come "
						       "between erasing "
						       "value=random and normalize "
						       "(its values are drawn at "
						       "normalize): move %s before it",
						       rfbi_filter_names[ps->layers[k].kind]);
			ps->layers[k].deferred = 1;
		}
		break;
	}
	return 0;
}
