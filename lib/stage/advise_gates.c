/*
 * advise_gates.c - refurb-advise's pipelines with gates (apply, choice,
 * order): they are timed with every gate open (advise.c), then each
 * gated layer counts for its cost times how often it runs, a gate for
 * nothing, and only the splits that keep every gate with its layers
 * stay (advise.h).
 */
#include <stdlib.h>

#include "refurb/advise.h"
#include "refurb/pipeline.h"
#include "advise_internal.h"

/* The cost of gated layer g (its measured cost, times how often it runs)
 * and of a gate (nothing: its one draw) into out[], gated's layers. */
static void gated_layers(const struct bench *b, struct rfb_advise_layer *out)
{
	const rfb_advice *a = b->a;
	int G = rfb_pipeline_layers(b->gated);

	for (int g = 0, u = 0; g < G; g++) {
		struct rfb_advise_layer *l = &out[g];
		/* a gate takes the input size of the layer after it */
		const struct rfb_advise_layer *m = &a->layer[u < a->layers ? u
							     : a->layers - 1];
		l->name = rfb_pipeline_layer_name(b->gated, g);
		l->in_width = m->in_width;
		l->in_height = m->in_height;
		l->choices = rfb_pipeline_layer_choices(b->gated, g, m->in_width,
							m->in_height);
		l->runs = 1.0;
		if (u < a->layers && b->position[u] == g) {
			l->runs = b->weight[u];
			/* a layer that never runs costs 0, not -0 */
			l->partial_s = b->weight[u] > 0 ? m->partial_s * b->weight[u] : 0;
			l->final_s = b->weight[u] > 0 ? m->final_s * b->weight[u] : 0;
			l->partial_err = m->partial_err * b->weight[u];
			l->final_err = m->final_err * b->weight[u];
			u++;
		}
	}
}

/* The split of gated at k, from the timed one at u: what the gated
 * layers do not run comes off (their cost times 1 - weight). */
static int gated_split(const struct bench *b, int k, int u,
		       const struct rfb_advise_layer *layer,
		       struct rfb_advise_split *s, rfb_err *err)
{
	const rfb_advice *a = b->a;
	struct rfb_pipe_shape shape;
	int G = rfb_pipeline_layers(b->gated), rc;

	*s = a->split[u];
	s->partial_spec = s->final_spec = NULL;
	for (int v = 0; v < a->layers; v++) {
		double off = 1.0 - b->weight[v];
		if (v < u)
			s->partial_s -= off * a->layer[v].partial_s;
		else
			s->final_s -= off * a->layer[v].final_s;
	}
	s->final_layers = G - k;
	s->final_choices = 1;
	for (int g = k; g < G; g++)
		s->final_choices *= layer[g].choices;
	if ((rc = rfb_pipeline_fixed_shape(b->gated, 3, &shape, err)))
		return rc;
	return rfbi_advise_split_specs(b->gated, k, &shape, s, err);
}

/*
 * The advice of the spec with gates from the one timed with them open:
 * its layers (gated ones at their expected cost, gates free), and the
 * splits that keep every gate with its layers.  The timed split u
 * matching gated's split k has the same layers partial, so k - u gates
 * are before it.
 */
int rfbi_advise_regate(struct bench *b, rfb_err *err)
{
	rfb_advice *a = b->a;
	int G = rfb_pipeline_layers(b->gated), n = 0, rc = 0;
	struct rfb_advise_layer *layer = calloc((size_t)G, sizeof *layer);
	struct rfb_advise_split *split = calloc((size_t)G, sizeof *split);

	if (!layer || !split) {
		rc = rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		goto out;
	}
	gated_layers(b, layer);
	for (int k = 0, u = 0; k < G && !rc; k++) {
		if (u < a->layers && b->position[u] < k)
			u++;
		if (!rfb_pipeline_splittable(b->gated, k))
			continue;
		rc = gated_split(b, k, u, layer, &split[n++], err);
	}
	a->choices = 1;
	for (int g = 0; g < G; g++)
		a->choices *= layer[g].choices;
out:
	for (int k = 0; k < a->splits; k++) {
		free(a->split[k].partial_spec);
		free(a->split[k].final_spec);
	}
	free(a->layer);
	free(a->split);
	a->layer = layer;
	a->split = split;
	a->layers = G;
	a->splits = n;
	return rc;
}
