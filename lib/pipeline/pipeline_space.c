/*
 * pipeline_space.c - what the layers of a pipeline can draw: the number
 * of distinct outcomes of each layer (its parameter space, for Theorem
 * 1's |A| and |A_F|), the RandAugment op a layer draws for a key (for
 * predicting a sample's cost), and the gates (apply, choice, order)
 * opened, with how often each gated layer runs (for its expected cost).
 * See pipeline.h.
 */
#include <math.h>
#include <stdlib.h>

#include "pipeline_internal.h"

const char *rfb_pipeline_layer_name(const rfb_pipeline *p, int layer)
{
	if (layer < 0 || layer >= p->nlayers)
		return NULL;
	return rfbi_filter_names[p->layers[layer].kind];
}

/* Distinct signed magnitudes of an op over a space's bins. */
static double op_outcomes(enum rfb_aug_space space, enum rfb_op op, int bins,
			  int w, int h)
{
	double n = 1, prev = rfb_aug_magnitude(space, op, 0, bins, w, h);

	for (int b = 1; b < bins; b++) {
		double m = rfb_aug_magnitude(space, op, b, bins, w, h);
		n += m != prev;
		prev = m;
	}
	return n * (rfb_aug_op_signed(op) && (n > 1 || prev != 0) ? 2 : 1);
}

/* RandAugment: 14 ops at one magnitude, signed ones with two signs. */
static double randaug_choices(const struct rfb_layer *l, int w, int h)
{
	double n = 0;

	for (int op = 0; op < RFB_OP_INVERT; op++)
		n += rfb_aug_op_signed(op) &&
		     rfb_aug_magnitude(RFB_AUG_SPACE_RANDAUG, op, l->magnitude,
				       l->bins, w, h) != 0 ? 2 : 1;
	return n;
}

static double trivialaug_choices(const struct rfb_layer *l, int w, int h)
{
	double n = 0;

	for (int op = 0; op < RFB_OP_INVERT; op++)
		n += op_outcomes(RFB_AUG_SPACE_TRIVIALAUG, op, l->bins, w, h);
	return n;
}

/* AutoAugment: each sub-policy's two steps, each applied or not, signed
 * ones with two signs (outcomes shared between sub-policies are counted
 * once per sub-policy: an upper bound). */
static double autoaug_choices(const struct rfb_layer *l)
{
	int count = rfb_autoaug_count(l->policy);
	double n = 0;

	for (int i = 0; i < count; i++) {
		const struct rfb_autoaug_step *s = rfb_autoaug_subpolicy(l->policy, i);
		n += (1.0 + (rfb_aug_op_signed(s[0].op) ? 2 : 1)) *
		     (1.0 + (rfb_aug_op_signed(s[1].op) ? 2 : 1));
	}
	return n;
}

/* RandomResizedCrop: the integer boxes whose area fraction and aspect
 * ratio are in range, at every position. */
static double rrcrop_choices(const struct rfb_layer *l, int w, int h)
{
	double n = 0, area = (double)w * h;

	for (int cw = 1; cw <= w; cw++)
		for (int ch = 1; ch <= h; ch++) {
			double a = (double)cw * ch / area, q = (double)cw / ch;
			if (a >= l->scale[0] && a <= l->scale[1] &&
			    q >= l->ratio[0] && q <= l->ratio[1])
				n += (double)(w - cw + 1) * (h - ch + 1);
		}
	return n > 1 ? n : 1;
}

double rfb_pipeline_layer_choices(const rfb_pipeline *p, int layer, int width,
				  int height)
{
	const struct rfb_layer *l;
	double pw, ph;

	if (layer < 0 || layer >= p->nlayers)
		return 1;
	l = &p->layers[layer];
	switch (l->kind) {
	case RFB_F_CROP:
		pw = width + l->pad.left + l->pad.right;
		ph = height + l->pad.top + l->pad.bottom;
		if (l->pad_if_needed) {
			pw = fmax(pw, l->width);
			ph = fmax(ph, l->height);
		}
		return fmax(1, (pw - l->width + 1)) * fmax(1, (ph - l->height + 1));
	case RFB_F_RRCROP:
		return rrcrop_choices(l, width, height);
	case RFB_F_FLIP:
		return l->p > 0 && l->p < 1 ? 2 : 1;
	case RFB_F_RANDAUG:
		return randaug_choices(l, width, height);
	case RFB_F_TRIVIALAUG:
		return trivialaug_choices(l, width, height);
	case RFB_F_AUTOAUG:
		return autoaug_choices(l);
	case RFB_F_APPLY:
		return l->p > 0 && l->p < 1 ? 2 : 1;
	case RFB_F_CHOICE: {
		int n = 0; /* the options that can be drawn */
		for (int i = 0; i < l->options; i++)
			n += l->weights[i] > 0;
		return n;
	}
	case RFB_F_ORDER: {
		double n = 1; /* the orders */
		for (int i = 2; i <= l->options; i++)
			n *= i;
		return n;
	}
	default:
		return 1;
	}
}

int rfb_pipeline_layer_op(const rfb_pipeline *p, int layer,
			  const struct rfb_pipe_key *key)
{
	const struct rfb_layer *l;
	struct rfb_aug_op op;
	rfb_rng rng;

	if (layer < 0 || layer >= p->nlayers)
		return -1;
	l = &p->layers[layer];
	rfbi_layer_rng(key, layer, &rng);
	/* the op is the first draw; the image size only scales magnitudes */
	if (l->kind == RFB_F_RANDAUG)
		rfb_randaug_draw(&rng, l->magnitude, l->bins, 256, 256, &op);
	else if (l->kind == RFB_F_TRIVIALAUG)
		rfb_trivialaug_draw(&rng, l->bins, 256, 256, &op);
	else
		return -1;
	return (int)op.op;
}

static int is_gate(const struct rfb_layer *l)
{
	return l->kind == RFB_F_APPLY || l->kind == RFB_F_CHOICE ||
	       l->kind == RFB_F_ORDER;
}

int rfb_pipeline_splittable(const rfb_pipeline *p, int k)
{
	if (k < 0 || k > p->nlayers)
		return 0;
	for (int i = 0; i < k; i++)
		if (p->layers[i].deferred ||
		    (is_gate(&p->layers[i]) && i + p->layers[i].count >= k))
			return 0;
	return rfbi_pipeline_norm_at(p) < 0 || k <= rfbi_pipeline_norm_at(p);
}

/* How often the layers gated by gate l (at i) run, into weight[]
 * (indexed by position in p). */
static void gate_weights(const struct rfb_layer *l, int i, double *weight)
{
	double total = 0.0;
	int at = i + 1;

	if (l->kind == RFB_F_APPLY) {
		for (int k = at; k < at + l->count; k++)
			weight[k] = l->p;
		return;
	}
	for (int o = 0; o < l->options; o++)
		total += l->weights[o];
	for (int o = 0; o < l->options; o++) {
		for (int k = at; k < at + l->option_layers[o]; k++)
			weight[k] = l->kind == RFB_F_ORDER ? 1.0
							   : l->weights[o] / total;
		at += l->option_layers[o];
	}
}

int rfb_pipeline_ungated(const rfb_pipeline *p, rfb_pipeline **out,
			 double *weight, int *position, rfb_err *err)
{
	struct rfb_layer *layers = calloc((size_t)p->nlayers + 1, sizeof *layers);
	double w[RFB_PIPELINE_MAX_LAYERS];
	int n = 0, rc;

	*out = NULL;
	if (!layers)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < p->nlayers; i++)
		w[i] = 1.0;
	for (int i = 0; i < p->nlayers; i++)
		if (is_gate(&p->layers[i]))
			gate_weights(&p->layers[i], i, w);
	for (int i = 0; i < p->nlayers; i++) {
		if (is_gate(&p->layers[i]))
			continue;
		layers[n] = p->layers[i];
		weight[n] = w[i];
		position[n++] = i;
	}
	rc = rfbi_pipeline_make(layers, n, out, err);
	free(layers);
	return rc;
}
