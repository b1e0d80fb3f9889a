/*
 * pipeline_parse_geometry.c - the spec parser's geometry filters: resize,
 * centercrop, crop, rrcrop, flip, vflip, rotation, affine, perspective
 * and pad (refurb-pipeline(7)): their defaults, the values of their keys
 * (sizes, padding, angles, shifts, centres) and their checks.
 */
#include <math.h>
#include <string.h>

#include "pipeline_parse_internal.h"
#include "refurb/filters.h"


static void geometry_defaults(struct rfb_layer *l)
{
	switch (l->kind) {
	case RFB_F_RRCROP:
		l->scale[0] = 0.08;
		l->scale[1] = 1.0;
		l->ratio[0] = 3.0 / 4.0;
		l->ratio[1] = 4.0 / 3.0;
		break;
	case RFB_F_FLIP:
	case RFB_F_VFLIP:
		l->p = 0.5;
		break;
	case RFB_F_ROTATION:
	case RFB_F_AFFINE:
		l->interp = RFB_INTERP_NEAREST;
		l->scale[0] = l->scale[1] = l->kind == RFB_F_AFFINE ? 1.0 : 0.0;
		break;
	case RFB_F_PERSPECTIVE:
		l->amount = 0.5;
		l->p = 0.5;
		break;
	default:
		break;
	}
}

/* size: N or HxW (N: the shorter side when allow_short, else NxN) */
static int parse_size(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      int allow_short)
{
	struct rfbi_tok part[2];
	int n = rfbi_tok_split(t, 'x', part, 2), rc;

	if (n < 0)
		return rfbi_spec_error(ps, t->at, "size \"%.*s\" is not N or HxW",
				       (int)t->n, t->s);
	rc = rfbi_parse_int(ps, &part[0], 1, RFB_IMAGE_MAX_SIDE, "size",
			    &ps->cur.height);
	if (!rc && n == 2)
		rc = rfbi_parse_int(ps, &part[1], 1, RFB_IMAGE_MAX_SIDE, "width",
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

/* pad: N, LR/TB or L/T/R/B (torchvision's padding forms) */
static int parse_pad(struct rfbi_parser *ps, const struct rfbi_tok *t)
{
	struct rfbi_tok part[4];
	int n = rfbi_tok_split(t, '/', part, 4), v[4];

	if (n != 1 && n != 2 && n != 4)
		return rfbi_spec_error(ps, t->at,
				       "pad needs 1, 2 or 4 values separated by '/'");
	for (int i = 0; i < n; i++)
		if (rfbi_parse_int(ps, &part[i], 0, RFB_IMAGE_MAX_SIDE, "pad",
				   &v[i]))
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

/* affine shear: X-range, or X-range/Y-range */
static int parse_shear(struct rfbi_parser *ps, const struct rfbi_tok *t)
{
	struct rfbi_tok part[2];
	int n = rfbi_tok_split(t, '/', part, 2);

	if (n < 0)
		return rfbi_spec_error(ps, t->at,
				       "shear needs 1 or 2 ranges separated by '/'");
	for (int i = 0; i < n; i++)
		if (rfbi_parse_srange(ps, &part[i], "shear", 1, 0.0,
				      ps->cur.shear + 2 * i))
			return RFB_ESPEC;
	ps->cur.shear_n = 2 * n;
	return 0;
}

/* Two numbers A/B in lo..hi into out[] (form: "A/B" in the message). */
static int parse_pair(struct rfbi_parser *ps, const struct rfbi_tok *t,
		      const char *what, const char *form, double lo, double hi,
		      double out[2])
{
	struct rfbi_tok part[2];
	int n = rfbi_tok_split(t, '/', part, 2);

	if (n != 2)
		return rfbi_spec_error(ps, t->at, "%s needs 2 values %s", what,
				       form);
	for (int i = 0; i < 2; i++)
		if (rfbi_parse_bounded(ps, &part[i], what, lo, hi, &out[i]))
			return RFB_ESPEC;
	return 0;
}

/* affine translate: A/B, the largest shifts as fractions of w and h */
static int parse_translate(struct rfbi_parser *ps, const struct rfbi_tok *t)
{
	if (parse_pair(ps, t, "translate", "A/B", 0.0, 1.0, ps->cur.translate))
		return RFB_ESPEC;
	ps->cur.has_translate = 1;
	return 0;
}

/* rotation, affine center: X/Y in pixels (torchvision's [x, y]) */
static int parse_center(struct rfbi_parser *ps, const struct rfbi_tok *t)
{
	if (parse_pair(ps, t, "center", "X/Y", -HUGE_VAL, HUGE_VAL,
		       ps->cur.center))
		return RFB_ESPEC;
	ps->cur.has_center = 1;
	return 0;
}

/* affine scale: a range of factors > 0 (rrcrop's is a shared range) */
static int parse_affine_scale(struct rfbi_parser *ps, const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int rc;

	l->has_scale = 1;
	rc = rfbi_parse_srange(ps, v, "scale", 0, 0.0, l->scale);
	if (!rc && !(l->scale[0] > 0.0))
		rc = rfbi_spec_error(ps, v->at, "scale must be > 0");
	return rc;
}

static int geometry_value(struct rfbi_parser *ps, int key,
			  const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int i = 0, rc;

	switch (key) {
	case K_SIZE:
		return parse_size(ps, v, l->kind == RFB_F_RESIZE);
	case K_MAX_SIZE:
		return rfbi_parse_int(ps, v, 0, RFB_IMAGE_MAX_SIDE, "max_size",
				      &l->max_size);
	case K_DCT:
		if (rfbi_parse_num(ps, v, "dct", &l->dct))
			return RFB_ESPEC;
		return l->dct >= 1.0 && l->dct <= 64.0
			       ? 0 : rfbi_spec_error(ps, v->at,
						     "dct %g out of range 1..64",
						     l->dct);
	case K_PAD:
		return parse_pad(ps, v);
	case K_PAD_MODE:
		i = RFB_PAD_CONSTANT;
		rc = rfbi_parse_enum(ps, v, "padding_mode", rfb_pad_mode_names,
				     (int)rfb_enum_count(rfb_pad_mode_names), &i);
		l->pad_mode = (enum rfb_pad_mode)i;
		return rc;
	case K_PAD_IF_NEEDED:
		return rfbi_parse_bool(ps, v, "pad_if_needed value",
				       &l->pad_if_needed);
	case K_EXPAND:
		return rfbi_parse_bool(ps, v, "expand value", &l->expand);
	case K_CENTER:
		return parse_center(ps, v);
	case K_DEGREES:
		return rfbi_parse_srange(ps, v, "degrees", 1, 0.0, l->degrees);
	case K_TRANSLATE:
		return parse_translate(ps, v);
	case K_SHEAR:
		return parse_shear(ps, v);
	case K_DISTORTION:
		return rfbi_parse_bounded(ps, v, "distortion_scale", 0.0, 1.0,
					  &l->amount);
	case K_SCALE:
		if (l->kind == RFB_F_AFFINE)
			return parse_affine_scale(ps, v);
		return RFBI_KEY_SHARED;
	default:
		return RFBI_KEY_SHARED;
	}
}

static int geometry_check(struct rfbi_parser *ps)
{
	const struct rfb_layer *l = &ps->cur;

	if (l->max_size && (!l->shorter || l->max_size <= l->shorter))
		return rfbi_spec_error(ps, ps->name_at,
				       "max_size needs resize=N with N < max_size");
	return 0;
}

const struct rfbi_parse_family rfbi_parse_geometry = {
	geometry_defaults, geometry_value, geometry_check
};
