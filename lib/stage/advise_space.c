/*
 * advise_space.c - refurb-advise's model without timing (advise.h): for
 * an image of a given size, every layer's input size, parameter space
 * and view collisions, and every split's |A_F| and view collisions, so
 * that Theorem 1's unique fraction and the views' collisions can be
 * predicted before any image is read (the converter's split proposal).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/advise.h"
#include "refurb/pipeline.h"
#include "advise_internal.h"

/* The input size of layer k of p: what its first k layers make of in;
 * before: layer k - 1's, taken when p cannot be cut there (inside a
 * gate, whose layers keep the size) or its head cannot run on in. */
static struct rfb_pipe_shape input_of(const rfb_pipeline *p, int k,
				      const struct rfb_pipe_shape *in,
				      const struct rfb_pipe_shape *before)
{
	rfb_pipeline *head = NULL, *tail = NULL;
	struct rfb_pipe_shape out = k > 0 ? *before : *in;
	rfb_err ignore = { 0 };

	if (k > 0 && (rfb_pipeline_split(p, k, &head, &tail, &ignore) ||
		      rfb_pipeline_out_shape(head, in, &out, &ignore)))
		out = *before;
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	return out;
}

/* Split k of p (its specs, |A_F|, collisions) into s. */
static int space_split(const rfb_pipeline *p, int k, const rfb_advice *a,
		       const struct rfb_pipe_shape *shape,
		       struct rfb_advise_split *s, rfb_err *err)
{
	const struct rfb_advise_layer *first = &a->layer[k];

	s->final_layers = a->layers - k;
	s->final_choices = 1;
	for (int j = k; j < a->layers; j++)
		s->final_choices *= a->layer[j].choices;
	s->collision = rfb_pipeline_collision(p, k, first->in_width,
					      first->in_height);
	return rfbi_advise_split_specs(p, k, shape, s, err);
}

/* How often each layer runs (the layers gated by apply, choice or
 * order: rfb_pipeline_ungated's weights). */
static void gated_runs(const rfb_pipeline *p, rfb_advice *a)
{
	double weight[RFB_PIPELINE_MAX_LAYERS];
	int position[RFB_PIPELINE_MAX_LAYERS];
	rfb_pipeline *open = NULL;
	rfb_err ignore = { 0 };

	if (rfb_pipeline_ungated(p, &open, weight, position, &ignore))
		return;
	for (int i = 0; i < rfb_pipeline_layers(open); i++)
		a->layer[position[i]].runs = weight[i];
	rfb_pipeline_free(open);
}

static int space_fill(rfb_advice *a, const rfb_pipeline *p,
		      const struct rfb_pipe_shape *in, rfb_err *err)
{
	struct rfb_pipe_shape shape, before = *in;
	int L = rfb_pipeline_layers(p), rc;

	if ((rc = rfb_pipeline_fixed_shape(p, 3, &shape, err)))
		return rc;
	a->layers = L;
	a->layer = calloc((size_t)L, sizeof *a->layer);
	a->split = calloc((size_t)L, sizeof *a->split);
	a->spec = rfbi_advise_dup(rfb_pipeline_canonical(p));
	if (!a->layer || !a->split || !a->spec)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	a->choices = 1;
	for (int j = 0; j < L; j++) {
		struct rfb_advise_layer *l = &a->layer[j];
		struct rfb_pipe_shape s = input_of(p, j, in, &before);
		before = s;
		l->name = rfb_pipeline_layer_name(p, j);
		l->in_width = s.width;
		l->in_height = s.height;
		l->choices = rfb_pipeline_layer_choices(p, j, s.width, s.height);
		l->collision = rfb_pipeline_layer_collision(p, j, s.width, s.height);
		l->draws = rfb_pipeline_layer_draws(p, j, s.width, s.height);
		l->runs = 1;
		l->partial_s = l->final_s = NAN;
		a->choices *= l->choices;
	}
	gated_runs(p, a);
	for (int k = L - 1; k >= 0; k--)
		if (rfb_pipeline_splittable(p, k) &&
		    (rc = space_split(p, k, a, &shape, &a->split[a->splits++], err)))
			return rc;
	/* by k, as rfb_advise_measure gives them */
	for (int i = 0, j = a->splits - 1; i < j; i++, j--) {
		struct rfb_advise_split t = a->split[i];
		a->split[i] = a->split[j];
		a->split[j] = t;
	}
	return 0;
}

rfb_advice *rfb_advise_space(const char *spec, int width, int height,
			     uint32_t images, rfb_err *err)
{
	struct rfb_pipe_shape in = { width, height, 3 };
	rfb_pipeline *p = NULL;
	rfb_advice *a = NULL;

	if (width < 1 || height < 1) {
		rfb_err_set(err, RFB_EINVAL, NULL, "bad image size %dx%d", width,
			    height);
		return NULL;
	}
	if (rfb_pipeline_parse(spec, &p, err))
		return NULL;
	if (rfb_pipeline_layers(p) < 1) {
		rfb_err_set(err, RFB_ESPEC, NULL, "the pipeline has no layer to split");
	} else if ((a = calloc(1, sizeof *a)) == NULL) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	} else {
		a->images = images;
		if (space_fill(a, p, &in, err)) {
			rfb_advice_free(a);
			a = NULL;
		}
	}
	rfb_pipeline_free(p);
	return a;
}
