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

int rfb_pipeline_layer_is_gate(const rfb_pipeline *p, int layer)
{
	return layer >= 0 && layer < p->nlayers &&
	       layer_is_gate(&p->layers[layer]);
}

int rfb_pipeline_splittable(const rfb_pipeline *p, int k)
{
	if (k < 0 || k > p->nlayers)
		return 0;
	for (int i = 0; i < k; i++)
		if (p->layers[i].deferred ||
		    (layer_is_gate(&p->layers[i]) && i + p->layers[i].count >= k))
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
		if (layer_is_gate(&p->layers[i]))
			gate_weights(&p->layers[i], i, w);
	for (int i = 0; i < p->nlayers; i++) {
		if (layer_is_gate(&p->layers[i]))
			continue;
		layers[n] = p->layers[i];
		weight[n] = w[i];
		position[n++] = i;
	}
	rc = rfbi_pipeline_make(layers, n, out, err);
	free(layers);
	return rc;
}

/* ---- view collisions: two independent draws of the same layers ---- */

/* sum of p^2 of an event of probability p and its complement */
static double two_way(double p)
{
	return p * p + (1 - p) * (1 - p);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Grid of the (area, log ratio) draws of one attempt at a box. */
#define BOX_GRID 384

/*
 * The boxes torchvision's RandomResizedCrop (erasing 0) or RandomErasing
 * (erasing 1) draws on a w x h image, integrated numerically over a
 * BOX_GRID^2 grid of (area, log ratio): returns sum over boxes of
 * P(box)^2 (a box is a size and a position, positions uniform) and sets
 * *fallback to the probability that the 10 attempts all fail (the
 * central crop, or no erasing).
 */
static double box_collision(int w, int h, const double scale[2],
			    const double ratio[2], int erasing, double *fallback)
{
	uint64_t *key = malloc(sizeof *key * BOX_GRID * BOX_GRID);
	double area = (double)w * h, lr0 = log(ratio[0]), lr1 = log(ratio[1]);
	double cell = 1.0 / ((double)BOX_GRID * BOX_GRID), fail = 0, sum = 0;
	double q, hits;
	size_t n = 0;

	*fallback = 0;
	if (!key)
		return 0; /* no memory: count it as never colliding */
	for (int a = 0; a < BOX_GRID; a++)
		for (int r = 0; r < BOX_GRID; r++) {
			double t = area * (scale[0] + (scale[1] - scale[0]) *
					   (a + 0.5) / BOX_GRID);
			double q_ = exp(lr0 + (lr1 - lr0) * (r + 0.5) / BOX_GRID);
			double cw = nearbyint(sqrt(t * q_)), ch = nearbyint(sqrt(t / q_));
			int ok = erasing ? cw < w && ch < h && cw > 0 && ch > 0
					 : cw > 0 && ch > 0 && cw <= w && ch <= h;
			if (ok)
				key[n++] = (uint64_t)cw << 32 | (uint64_t)ch;
			else
				fail += cell;
		}
	q = fail;
	/* an attempt's box comes after k failed ones: sum of q^k, k < 10 */
	hits = q < 1 ? (1 - pow(q, 10)) / (1 - q) : 0;
	qsort(key, n, sizeof *key, cmp_u64);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && key[j] == key[i])
			j++;
		double cw = (double)(key[i] >> 32), ch = (double)(key[i] & 0xffffffffu);
		double pbox = (double)(j - i) * cell * hits;
		sum += pbox * pbox / ((w - cw + 1) * (h - ch + 1));
		i = j;
	}
	free(key);
	*fallback = pow(q, 10);
	return sum;
}

/* An outcome of an augment op: the op and its signed magnitude (every
 * op that leaves the image as it is counts as one outcome). */
struct op_outcome {
	int op;
	double value, value2, mass;
};

static int op_identity(int op, double m)
{
	return op == RFB_OP_IDENTITY || (rfb_aug_op_signed(op) && m == 0) ||
	       (op == RFB_OP_POSTERIZE && m >= 8);
}

/* sum of squares of op outcomes, equal ones (same op and value, or
 * both the identity) merged first. */
static double outcome_collision(struct op_outcome *o, int n)
{
	double sum = 0;

	for (int i = 0; i < n; i++) {
		if (o[i].mass == 0)
			continue;
		for (int j = i + 1; j < n; j++)
			if (o[j].mass > 0 && o[j].op == o[i].op &&
			    o[j].value == o[i].value && o[j].value2 == o[i].value2) {
				o[i].mass += o[j].mass;
				o[j].mass = 0;
			}
		sum += o[i].mass * o[i].mass;
	}
	return sum;
}

/* Add op at magnitude m with probability mass (both signs of a signed
 * op, half each) to o[*n]. */
static void add_op(struct op_outcome *o, int *n, int op, double m, double mass)
{
	if (op_identity(op, m)) {
		o[(*n)++] = (struct op_outcome){ -1, 0, 0, mass };
		return;
	}
	if (rfb_aug_op_signed(op)) {
		o[(*n)++] = (struct op_outcome){ op, m, 0, mass / 2 };
		o[(*n)++] = (struct op_outcome){ op, -m, 0, mass / 2 };
		return;
	}
	o[(*n)++] = (struct op_outcome){ op, m, 0, mass };
}

/* RandAugment and TrivialAugmentWide: one op of the 14, at the layer's
 * magnitude bin or at a bin drawn uniformly (consecutive bins of equal
 * magnitude are one outcome). */
static double augment_collision(const struct rfb_layer *l, int w, int h)
{
	int trivial = l->kind == RFB_F_TRIVIALAUG, n = 0;
	enum rfb_aug_space space = trivial ? RFB_AUG_SPACE_TRIVIALAUG
					   : RFB_AUG_SPACE_RANDAUG;
	struct op_outcome o[RFB_OP_INVERT * 2 * 2 + 2];
	double sum = 0;

	for (int op = 0; op < RFB_OP_INVERT; op++) {
		if (!trivial) {
			add_op(o, &n, op, rfb_aug_magnitude(space, op, l->magnitude,
							    l->bins, w, h), 1.0 / 14);
			continue;
		}
		/* bins of one op: equal magnitudes are consecutive */
		struct op_outcome bin[2];
		double prev = NAN, mass = 0;
		for (int b = 0; b <= l->bins; b++) {
			double m = b < l->bins ? rfb_aug_magnitude(space, op, b, l->bins,
								   w, h) : NAN;
			if (b > 0 && m != prev) {
				int k = 0;
				add_op(bin, &k, op, prev, mass);
				for (int i = 0; i < k; i++)
					sum += bin[i].op < 0 ? 0 : bin[i].mass * bin[i].mass;
				for (int i = 0; i < k; i++)
					if (bin[i].op < 0) /* identities merge below */
						o[n++] = bin[i];
				mass = 0;
			}
			prev = m;
			mass += 1.0 / (14.0 * l->bins);
		}
	}
	return sum + outcome_collision(o, n);
}

/* Outcome (a, b) of a sub-policy's steps s (0: not applied, 1 and 2:
 * applied, with the first or second sign; an unsigned op has no 2) of
 * magnitudes m, into *o: op and value the first applied op (that is no
 * identity) and its signed magnitude, value2 the second's; mass 0 for
 * an outcome that cannot happen. */
static void autoaug_outcome(const struct rfb_autoaug_step *s, const double m[2],
			    int a, int b, double share, struct op_outcome *o)
{
	int pick[2] = { a, b }, ops[2] = { -1, -1 }, n = 0;
	double v[2] = { 0, 0 }, mass = share;

	for (int k = 0; k < 2; k++) {
		int sgn = rfb_aug_op_signed(s[k].op);
		mass *= pick[k] == 0 ? 1 - s[k].prob
				     : s[k].prob * (sgn ? 0.5 : pick[k] == 1);
		if (pick[k] && !op_identity(s[k].op, m[k])) {
			ops[n] = (int)s[k].op;
			v[n++] = pick[k] == 2 ? -m[k] : m[k];
		}
	}
	*o = (struct op_outcome){ (ops[0] + 1) * 64 + ops[1] + 1, v[0], v[1], mass };
}

/* AutoAugment: a sub-policy of n, each of its two steps applied or not
 * (signed ones with a sign); the same applied ops in the same order are
 * one outcome, whatever the sub-policy. */
static double autoaug_collision(const struct rfb_layer *l, int w, int h)
{
	int count = rfb_autoaug_count(l->policy), n = 0;
	struct op_outcome *o = calloc((size_t)count * 9 + 1, sizeof *o);
	double sum;

	if (!o)
		return 0;
	for (int i = 0; i < count; i++) {
		const struct rfb_autoaug_step *s = rfb_autoaug_subpolicy(l->policy, i);
		double m[2];
		for (int k = 0; k < 2; k++)
			m[k] = s[k].bin < 0 ? 0 : rfb_aug_magnitude(RFB_AUG_SPACE_AUTOAUG,
					s[k].op, s[k].bin, 10, w, h);
		for (int a = 0; a < 3; a++)
			for (int b = 0; b < 3; b++)
				autoaug_outcome(s, m, a, b, 1.0 / count, &o[n++]);
	}
	sum = outcome_collision(o, n);
	free(o);
	return sum;
}

/* RandomErasing: not applied, or its box failed to fit (the same image);
 * a box of a fixed value (a box of random values never repeats). */
static double erasing_collision(const struct rfb_layer *l, int w, int h)
{
	double fallback, boxes = box_collision(w, h, l->scale, l->ratio, 1,
					       &fallback);
	double same = 1 - l->p + l->p * fallback;

	return same * same + (l->erase_random ? 0 : l->p * l->p * boxes);
}

/* RandomPerspective applied: 8 corner offsets, each uniform over
 * int(distortion * half side) + 1 integers. */
static double perspective_collision(const struct rfb_layer *l, int w, int h)
{
	double nw = floor(l->amount * (w / 2)) + 1, nh = floor(l->amount * (h / 2)) + 1;

	return (1 - l->p) * (1 - l->p) + l->p * l->p / pow(nw * nh, 4);
}

/* RandomAffine: any angle, scale or shear range is continuous; a
 * translation alone is a whole number of pixels, uniform over
 * 2 round(t * side) + 1 of them. */
static double affine_collision(const struct rfb_layer *l, int w, int h)
{
	double c = 1;

	if (l->degrees[0] != l->degrees[1] ||
	    (l->has_scale && l->scale[0] != l->scale[1]))
		return 0;
	for (int i = 0; i < l->shear_n; i += 2)
		if (l->shear[i] != l->shear[i + 1])
			return 0;
	if (l->has_translate)
		c /= (2 * nearbyint(l->translate[0] * w) + 1) *
		     (2 * nearbyint(l->translate[1] * h) + 1);
	return c;
}

static double jitter_collision(const struct rfb_layer *l)
{
	for (int i = 0; i < 4; i++)
		if ((l->jitter_on >> i & 1) && l->jitter[i][0] != l->jitter[i][1])
			return 0; /* a factor drawn from a range */
	return 1;
}

double rfb_pipeline_layer_collision(const rfb_pipeline *p, int layer, int width,
				    int height)
{
	const struct rfb_layer *l;
	double fallback, c, n;

	if (layer < 0 || layer >= p->nlayers)
		return 1;
	l = &p->layers[layer];
	switch (l->kind) {
	case RFB_F_CROP:
		return 1 / rfb_pipeline_layer_choices(p, layer, width, height);
	case RFB_F_RRCROP:
		c = box_collision(width, height, l->scale, l->ratio, 0, &fallback);
		return c + fallback * fallback;
	case RFB_F_FLIP: case RFB_F_VFLIP: case RFB_F_GRAYSCALE:
	case RFB_F_SOLARIZE: case RFB_F_POSTERIZE: case RFB_F_EQUALIZE:
	case RFB_F_AUTOCONTRAST: case RFB_F_SHARPNESS: case RFB_F_INVERT:
	case RFB_F_APPLY:
		return two_way(l->p);
	case RFB_F_RANDAUG: case RFB_F_TRIVIALAUG:
		return augment_collision(l, width, height);
	case RFB_F_AUTOAUG:
		return autoaug_collision(l, width, height);
	case RFB_F_COLORJITTER:
		return jitter_collision(l);
	case RFB_F_GAUSSBLUR: case RFB_F_ROTATION:
		return l->kind == RFB_F_GAUSSBLUR ? l->sigma[0] == l->sigma[1]
						  : l->degrees[0] == l->degrees[1];
	case RFB_F_AFFINE:
		return affine_collision(l, width, height);
	case RFB_F_PERSPECTIVE:
		return perspective_collision(l, width, height);
	case RFB_F_ERASING:
		return erasing_collision(l, width, height);
	case RFB_F_AUGMIX:
		return 0; /* Dirichlet and Beta weights */
	case RFB_F_CHOICE:
		c = n = 0;
		for (int i = 0; i < l->options; i++)
			n += l->weights[i];
		for (int i = 0; i < l->options; i++)
			c += (l->weights[i] / n) * (l->weights[i] / n);
		return c;
	case RFB_F_ORDER:
		return 1 / rfb_pipeline_layer_choices(p, layer, width, height);
	default:
		return 1;
	}
}

int rfb_pipeline_layer_draws(const rfb_pipeline *p, int layer, int width,
			     int height)
{
	if (layer < 0 || layer >= p->nlayers ||
	    rfb_pipeline_layer_collision(p, layer, width, height) >= 1)
		return 0;
	if (!rfb_pipeline_layer_is_gate(p, layer))
		return 1;
	/* a gate's own draw (apply's p, a choice's option, an order) counts
	 * when no layer it holds draws; else those layers are the ones */
	for (int k = layer + 1; k <= layer + p->layers[layer].count; k++)
		if (!rfb_pipeline_layer_is_gate(p, k) &&
		    rfb_pipeline_layer_collision(p, k, width, height) < 1)
			return 0;
	return 1;
}

static double layers_collision(const rfb_pipeline *p, int from, int to,
			       struct rfb_pipe_shape *s);

/* Gate i and its layers: the same branch (apply's p, a choice's option,
 * an order's order) with the same draws inside it.  s goes through the
 * branch that runs (apply's layers, a choice's first option). */
static double gate_collision(const rfb_pipeline *p, int i, struct rfb_pipe_shape *s)
{
	const struct rfb_layer *g = &p->layers[i];
	struct rfb_pipe_shape first = *s, each;
	double gate = rfb_pipeline_layer_collision(p, i, s->width, s->height);
	double c = 0, total = 0, inner = 1;
	int at = i + 1;

	if (g->kind == RFB_F_APPLY) {
		inner = layers_collision(p, at, at + g->count, &first);
		if (g->p > 0)
			*s = first;
		return (1 - g->p) * (1 - g->p) + g->p * g->p * inner;
	}
	for (int o = 0; o < g->options; o++)
		total += g->weights[o];
	for (int o = 0; o < g->options; o++) {
		each = *s;
		inner = layers_collision(p, at, at + g->option_layers[o], &each);
		if (o == 0)
			first = each;
		at += g->option_layers[o];
		if (g->kind == RFB_F_ORDER)
			c = (o ? c : gate) * inner; /* 1/K! times every option's */
		else
			c += (g->weights[o] / total) * (g->weights[o] / total) * inner;
	}
	*s = first;
	return c;
}

/* Layers [from, to) of p on an s-sized input (s follows them). */
static double layers_collision(const rfb_pipeline *p, int from, int to,
			       struct rfb_pipe_shape *s)
{
	double c = 1;
	rfb_err ignore = { 0 };

	for (int i = from; i < to && c > 0; i++) {
		const struct rfb_layer *l = &p->layers[i];
		if (layer_is_gate(l)) {
			c *= gate_collision(p, i, s);
			i += l->count;
			continue;
		}
		c *= rfb_pipeline_layer_collision(p, i, s->width, s->height);
		if (rfbi_layer_out_shape(l, s, &ignore))
			break; /* cannot run: what it drew so far */
	}
	return c;
}

double rfb_pipeline_collision(const rfb_pipeline *p, int from, int width,
			      int height)
{
	struct rfb_pipe_shape s = { width, height, 3 };

	if (from < 0)
		from = 0;
	return layers_collision(p, from, p->nlayers, &s);
}

double rfb_views_collision(double pair, int views)
{
	double c = (double)views * (views - 1) / 2 * pair;

	return views < 2 ? 0 : c < 1 ? c : 1;
}

double rfb_pipeline_views_collision(const rfb_pipeline *p, int from, int width,
				    int height, int views)
{
	return rfb_views_collision(views < 2 ? 0 : rfb_pipeline_collision(p, from,
					width, height), views);
}
