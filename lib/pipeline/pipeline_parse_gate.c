/*
 * pipeline_parse_gate.c - the spec parser's gates: apply, choice and
 * order (refurb-pipeline(7)), which run the layers after them with a
 * probability, one option of them, or all in a random order.  Their
 * defaults, keys and checks, and once the whole spec is parsed, which
 * layers each gates and whether it may gate them.
 */
#include "pipeline_parse_internal.h"

static void gate_defaults(struct rfb_layer *l)
{
	if (l->kind == RFB_F_APPLY) {
		l->p = 0.5;
		l->count = 1;
	}
}

/* choice p (weights, one an option) or layers (layers of each option):
 * numbers separated by '/', into out[] (*count of them). */
static int parse_option_list(struct rfbi_parser *ps, const struct rfbi_tok *t,
			     const char *what, int ints, double *out, int *count)
{
	struct rfbi_tok part[RFB_CHOICE_MAX];
	int n = rfbi_tok_split(t, '/', part, RFB_CHOICE_MAX), v;

	if (n < 0)
		return rfbi_spec_error(ps, t->at, "%s: more than %d values", what,
				       RFB_CHOICE_MAX);
	for (int i = 0; i < n; i++) {
		if (ints && rfbi_parse_int(ps, &part[i], 1,
					   RFB_PIPELINE_MAX_LAYERS, what, &v))
			return RFB_ESPEC;
		if (!ints && rfbi_parse_bounded(ps, &part[i], what, 0.0, 1e9,
						&out[i]))
			return RFB_ESPEC;
		if (ints)
			out[i] = v;
	}
	*count = n;
	return 0;
}

static int gate_value(struct rfbi_parser *ps, int key, const struct rfbi_tok *v)
{
	struct rfb_layer *l = &ps->cur;
	int i = 0, rc;

	switch (key) {
	case K_N:
		if (l->kind == RFB_F_APPLY)
			return rfbi_parse_int(ps, v, 1, RFB_PIPELINE_MAX_LAYERS,
					      "n", &l->count);
		return rfbi_parse_int(ps, v, 1, RFB_CHOICE_MAX, "n", &l->options);
	case K_P:
		if (l->kind != RFB_F_CHOICE)
			return RFBI_KEY_SHARED;
		rc = parse_option_list(ps, v, "p", 0, l->weights, &i);
		ps->weights_given = i;
		return rc;
	case K_LAYERS: {
		double n[RFB_CHOICE_MAX];
		rc = parse_option_list(ps, v, "layers", 1, n, &i);
		for (int k = 0; k < i; k++)
			l->option_layers[k] = (int)n[k];
		ps->layers_given = i;
		return rc;
	}
	default:
		return RFBI_KEY_SHARED;
	}
}

/* choice and order: p has a weight an option (default: all 1, as
 * random.choices without weights), layers a count an option. */
static int gate_check(struct rfbi_parser *ps)
{
	struct rfb_layer *l = &ps->cur;
	const char *name = rfbi_filter_names[l->kind];
	double total = 0.0;

	if (l->kind == RFB_F_APPLY)
		return 0;
	if (ps->weights_given && ps->weights_given != l->options)
		return rfbi_spec_error(ps, ps->name_at, "%s n=%d needs %d weights "
				       "in p, not %d", name, l->options,
				       l->options, ps->weights_given);
	if (ps->layers_given && ps->layers_given != l->options)
		return rfbi_spec_error(ps, ps->name_at, "%s n=%d needs %d counts "
				       "in layers, not %d", name, l->options,
				       l->options, ps->layers_given);
	for (int i = 0; i < l->options; i++) {
		if (!ps->weights_given)
			l->weights[i] = 1.0;
		total += l->weights[i];
	}
	if (!(total > 0.0))
		return rfbi_spec_error(ps, ps->name_at,
				       "%s p: the weights are all 0", name);
	return 0;
}

const struct rfbi_parse_family rfbi_parse_gate = {
	gate_defaults, gate_value, gate_check
};

/* ---- the whole pipeline ---- */

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
static int resolve_options(struct rfbi_parser *ps, struct rfb_layer *l, int i,
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
				return rfbi_spec_error(ps, name_at[i],
						       "%s n=%d: only %d filters "
						       "follow it", name,
						       l->options, o);
			l->option_layers[o] = n;
		}
		at += l->option_layers[o];
	}
	l->count = at - i - 1;
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

/* The layers gate l at position i gates, one by one: 0 or RFB_ESPEC. */
static int check_gated(struct rfbi_parser *ps, const struct rfb_layer *l, int i,
		       const size_t *name_at)
{
	const char *name = rfbi_filter_names[l->kind];

	for (int k = i + 1; k <= i + l->count; k++)
		if (ps->layers[k].deferred && l->kind != RFB_F_APPLY)
			return rfbi_spec_error(ps, name_at[k],
					       "%s cannot gate erasing before "
					       "normalize after value=random",
					       name);
	for (int k = i + 1; k <= i + l->count; k++)
		if (!gateable(l, &ps->layers[k]) && l->kind == RFB_F_ORDER)
			return rfbi_spec_error(ps, name_at[k],
					       "order cannot gate %s%s (only "
					       "filters that keep the image's "
					       "size and channels)",
					       rfbi_filter_names[ps->layers[k].kind],
					       ps->layers[k].expand ? " expand=1" : "");
		else if (!gateable(l, &ps->layers[k]))
			return rfbi_spec_error(ps, name_at[k],
					       "%s cannot gate %s (only filters "
					       "that keep the image's channels, "
					       "and no normalize or other gate)",
					       name,
					       rfbi_filter_names[ps->layers[k].kind]);
	return 0;
}

int rfbi_parse_check_gates(struct rfbi_parser *ps, const size_t *name_at)
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
			return rfbi_spec_error(ps, name_at[i],
					       "apply n=%d: only %d layers follow it",
					       l->count, ps->n - i - 1);
		if (i + l->count >= ps->n)
			return rfbi_spec_error(ps, name_at[i],
					       "%s n=%d: its options have %d "
					       "layers, only %d follow it", name,
					       l->options, l->count,
					       ps->n - i - 1);
		if ((rc = check_gated(ps, l, i, name_at)))
			return rc;
	}
	return 0;
}
