/*
 * pipeline_parse_policy.c - the spec parser's augmentation policies:
 * randaug, autoaug, trivialaug and augmix (refurb-pipeline(7)): their
 * defaults (torchvision's), the values of their keys and their checks.
 */
#include <string.h>

#include "pipeline_parse_internal.h"
#include "refurb/augment.h"
#include "refurb/augmix.h"

static void policy_defaults(struct rfb_layer *l)
{
	switch (l->kind) {
	case RFB_F_RANDAUG:
		l->magnitude = 9;
		/* fall through */
	case RFB_F_TRIVIALAUG:
	case RFB_F_AUTOAUG:
		l->bins = l->kind == RFB_F_AUTOAUG ? 0 : 31;
		l->interp = RFB_INTERP_NEAREST;
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

/* augmix depth: 1..16, or 0 or a negative number (torchvision's
 * chain_depth <= 0: 1..3 drawn per chain), kept as -1. */
static int parse_depth(struct rfbi_parser *ps, const struct rfbi_tok *v)
{
	struct rfbi_tok t = *v;
	int neg = t.n > 1 && t.s[0] == '-', d;

	if (neg) {
		t.s++;
		t.n--;
		t.at++;
	}
	if (rfbi_parse_int(ps, &t, 0, neg ? 1000000 : RFB_AUGMIX_MAX_DEPTH,
			   "depth", &d))
		return RFB_ESPEC;
	ps->cur.mix_depth = neg || d == 0 ? -1 : d;
	return 0;
}

static int policy_value(struct rfbi_parser *ps, int key,
			const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int augmix = l->kind == RFB_F_AUGMIX, i = 0, rc;

	switch (key) {
	case K_INTERP:
		/* AugMix runs on a tensor: nearest or bilinear only */
		return augmix ? rfbi_parse_interp(ps, v, 2) : RFBI_KEY_SHARED;
	case K_FILL:
		if (augmix) {
			l->has_fill = !(v->n == 4 && memcmp(v->s, "none", 4) == 0);
			if (!l->has_fill)
				return 0;
		}
		return RFBI_KEY_SHARED;
	case K_N:
		return rfbi_parse_int(ps, v, 1, RFB_RANDAUG_MAX_N, "n", &ps->repeat);
	case K_M:
		return rfbi_parse_int(ps, v, 0, 1000, "m", &l->magnitude);
	case K_BINS:
		return rfbi_parse_int(ps, v, 2, 1001, "bins", &l->bins);
	case K_POLICY:
		i = RFB_AUTOAUG_IMAGENET;
		rc = rfbi_parse_enum(ps, v, "policy", rfb_autoaug_policy_names,
				     (int)rfb_enum_count(rfb_autoaug_policy_names), &i);
		l->policy = (enum rfb_autoaug_policy)i;
		return rc;
	case K_SEVERITY:
		return rfbi_parse_int(ps, v, 1, RFB_AUGMIX_MAX_SEVERITY,
				      "severity", &l->magnitude);
	case K_WIDTH:
		return rfbi_parse_int(ps, v, 1, RFB_AUGMIX_MAX_WIDTH, "width",
				      &l->mix_width);
	case K_DEPTH:
		return parse_depth(ps, v);
	case K_ALPHA:
		if (rfbi_parse_num(ps, v, "alpha", &l->alpha))
			return RFB_ESPEC;
		return l->alpha > 0.0 && l->alpha <= 1e6 ? 0 :
		       rfbi_spec_error(ps, v->at, "alpha %g out of range: need "
				       "0 < alpha <= 1e+06", l->alpha);
	case K_ALL_OPS:
		return rfbi_parse_bool(ps, v, "all_ops value", &l->all_ops);
	default:
		return RFBI_KEY_SHARED;
	}
}

static int policy_check(struct rfbi_parser *ps)
{
	const struct rfb_layer *l = &ps->cur;

	if (l->kind == RFB_F_RANDAUG && l->magnitude >= l->bins)
		return rfbi_spec_error(ps, ps->name_at,
				       "randaug m=%d needs m < bins (%d)",
				       l->magnitude, l->bins);
	return 0;
}

const struct rfbi_parse_family rfbi_parse_policy = {
	policy_defaults, policy_value, policy_check
};
