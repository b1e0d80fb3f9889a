/*
 * pipeline_parse_colour.c - the spec parser's colour and photometric
 * filters: gray, rgb, grayscale, colorjitter, gaussblur, solarize,
 * posterize, equalize, autocontrast, sharpness and invert
 * (refurb-pipeline(7)): their defaults and the values of their keys.
 */
#include <math.h>

#include "pipeline_parse_internal.h"
#include "refurb/filters.h"

static void colour_defaults(struct rfb_layer *l)
{
	switch (l->kind) {
	case RFB_F_SOLARIZE: case RFB_F_POSTERIZE: case RFB_F_EQUALIZE:
	case RFB_F_AUTOCONTRAST: case RFB_F_SHARPNESS: case RFB_F_INVERT:
		l->p = 0.5;
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
	default:
		break;
	}
}

/* ColorJitter's factor i (brightness, contrast, saturation: around 1,
 * >= 0; hue: around 0, within -0.5..0.5), torchvision's _check_input:
 * a factor whose range is just its centre is not drawn. */
static int parse_jitter(struct rfbi_parser *ps, int i, const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	double *r = l->jitter[i], center = i == 3 ? 0.0 : 1.0;
	double lo = i == 3 ? -0.5 : 0.0, hi = i == 3 ? 0.5 : 1e9;
	const char *what = rfbi_key_names[K_BRIGHTNESS + i];

	if (rfbi_parse_srange(ps, v, what, 1, center, r))
		return RFB_ESPEC;
	if (i < 3 && rfbi_range_dash(v) == v->n && r[0] < 0.0)
		r[0] = 0.0; /* [max(0, 1 - x), 1 + x] */
	if (r[0] < lo || r[1] > hi)
		return rfbi_spec_error(ps, v->at, "%s %g-%g out of range %g..%g",
				       what, r[0], r[1], lo,
				       hi == 1e9 ? INFINITY : hi);
	if (r[0] == center && r[1] == center)
		l->jitter_on &= ~(1u << i);
	else
		l->jitter_on |= 1u << i;
	return 0;
}

/* gaussblur kernel_size: K or HxW, odd */
static int parse_kernel(struct rfbi_parser *ps, const struct rfbi_tok *t)
{
	struct rfbi_tok part[2];
	int n = rfbi_tok_split(t, 'x', part, 2);

	if (n < 0)
		return rfbi_spec_error(ps, t->at,
				       "kernel_size \"%.*s\" is not K or HxW",
				       (int)t->n, t->s);
	for (int i = 0; i < n; i++)
		if (rfbi_parse_int(ps, &part[i], 1, RFB_BLUR_MAX_KERNEL,
				   "kernel_size", &ps->cur.kernel[i]))
			return RFB_ESPEC;
	if (n == 1)
		ps->cur.kernel[1] = ps->cur.kernel[0];
	if (ps->cur.kernel[0] % 2 == 0 || ps->cur.kernel[1] % 2 == 0)
		return rfbi_spec_error(ps, t->at, "kernel_size %dx%d: must be odd",
				       ps->cur.kernel[0], ps->cur.kernel[1]);
	return 0;
}

static int colour_value(struct rfbi_parser *ps, int key,
			const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int rc;

	switch (key) {
	case K_BRIGHTNESS:
	case K_CONTRAST:
	case K_SATURATION:
	case K_HUE:
		return parse_jitter(ps, key - K_BRIGHTNESS, v);
	case K_KERNEL:
		return parse_kernel(ps, v);
	case K_SIGMA:
		rc = rfbi_parse_srange(ps, v, "sigma", 0, 0.0, l->sigma);
		if (!rc && !(l->sigma[0] > 0.0))
			rc = rfbi_spec_error(ps, v->at, "sigma must be > 0");
		return rc;
	case K_THRESHOLD:
		return rfbi_parse_bounded(ps, v, "threshold", 0.0, 1e9,
					  &l->amount);
	case K_BITS:
		return rfbi_parse_int(ps, v, 0, 8, "bits", &l->magnitude);
	case K_FACTOR:
		return rfbi_parse_bounded(ps, v, "factor", 0.0, 1e9, &l->amount);
	default:
		return RFBI_KEY_SHARED;
	}
}

const struct rfbi_parse_family rfbi_parse_colour = {
	colour_defaults, colour_value, NULL
};
