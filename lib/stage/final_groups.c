/*
 * final_groups.c - the views of refurb-final and their groups: the final
 * pipeline of every view (view 0's is final_pipe), the view groups they
 * form (refurb-final --view-group: views of one size each, DINO's global
 * and local crops; without it one group of every view), each checked
 * against the others, and where every group's images lie in a batch
 * slot (final_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "final_internal.h"

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* The stream header's final pipeline text: the views' specs joined by ';'. */
static int join_view_specs(struct final *F, rfb_err *err)
{
	size_t len = 0;

	for (int v = 0; v < F->views; v++)
		len += strlen(rfb_pipeline_canonical(F->view_pipe[v])) + 1;
	if (!(F->final_text = malloc(len)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	F->final_text[0] = 0;
	for (int v = 0; v < F->views; v++) {
		if (v)
			strcat(F->final_text, ";");
		strcat(F->final_text, rfb_pipeline_canonical(F->view_pipe[v]));
	}
	return 0;
}

/* View v's pipeline ends as view 0's: the same dtype, layout and
 * normalization (or none), which the stream has one of. */
static int same_ending(const struct final *F, int v, rfb_err *err)
{
	float mean0[3] = { 0 }, std0[3] = { 0 }; /* unused channels stay 0 */
	float mean[3] = { 0 }, std[3] = { 0 };
	const rfb_pipeline *p = F->view_pipe[v];
	int norm0 = rfb_pipeline_normalization(F->final_pipe, mean0, std0);

	if ((int)rfb_pipeline_dtype(p) != F->dtype ||
	    (int)rfb_pipeline_layout(p) != F->layout ||
	    rfb_pipeline_normalization(p, mean, std) != norm0 ||
	    (norm0 && (memcmp(mean, mean0, sizeof mean) ||
		       memcmp(std, std0, sizeof std))))
		return rfb_err_set(err, RFB_ESPEC, NULL,
			"view %d's pipeline does not end as view 0's (the "
			"same normalize, or none, in every view)", v);
	return 0;
}

/* View v (of group g) makes the images of its group's first view. */
static int same_size(const struct final *F, int v, const struct fgroup *g,
		     const struct rfb_pipe_shape *shape, rfb_err *err)
{
	if (shape->width == g->shape.width && shape->height == g->shape.height &&
	    shape->channels == g->shape.channels)
		return 0;
	if (F->ngroups == 1 && !F->o->group_views)
		return rfb_err_set(err, RFB_ESPEC, NULL,
			"view %d's pipeline makes %dx%dx%d images, view 0's "
			"%dx%dx%d: the views of a group have one size (give "
			"views of another size their own --view-group)", v,
			shape->height, shape->width, shape->channels,
			g->shape.height, g->shape.width, g->shape.channels);
	return rfb_err_set(err, RFB_ESPEC, NULL,
		"view %d's pipeline makes %dx%dx%d images, view %d's (the "
		"first of its --view-group) %dx%dx%d: the views of a group "
		"have one size", v, shape->height, shape->width,
		shape->channels, g->first, g->shape.height, g->shape.width,
		g->shape.channels);
}

/* Parse view v's pipeline (v > 0) and check it against its group. */
static int open_view(struct final *F, int v, struct fgroup *g, rfb_err *err)
{
	struct rfb_pipe_shape shape;
	int rc, in_channels = rfb_pipeline_out_channels(F->partial_pipe, 3);

	if ((rc = rfb_pipeline_parse(F->o->view_pipelines[v], &F->view_pipe[v],
				     err)) ||
	    (rc = rfb_pipeline_check_pixels(F->view_pipe[v], F->o->max_pixels,
					    err)) ||
	    (rc = rfb_pipeline_fixed_shape(F->view_pipe[v], in_channels, &shape,
					   err)) ||
	    (rc = same_ending(F, v, err)))
		return rc;
	if (v == g->first) {
		if (shape.channels != F->shape.channels)
			return rfb_err_set(err, RFB_ESPEC, NULL,
				"view %d's pipeline makes %d channels, view "
				"0's %d: a stream has one channel count", v,
				shape.channels, F->shape.channels);
		g->shape = shape;
		return 0;
	}
	return same_size(F, v, g, &shape, err);
}

/* The groups' sizes in the options (or one group of every view). */
static int lay_out_groups(struct final *F, rfb_err *err)
{
	const struct rfb_final_opts *o = F->o;
	int first = 0;

	F->ngroups = o->group_views ? o->groups : 1;
	if (F->ngroups < 1 || F->ngroups > RFB_STREAM_MAX_GROUPS)
		return rfb_err_set(err, RFB_ESPEC, NULL, "%d view groups (1 to %d)",
				   F->ngroups, RFB_STREAM_MAX_GROUPS);
	for (int i = 0; i < F->ngroups; i++) {
		struct fgroup *g = &F->group[i];
		g->views = o->group_views ? o->group_views[i] : F->views;
		g->first = first;
		g->shape = F->shape;
		first += g->views;
	}
	if (first != F->views)
		return rfb_err_set(err, RFB_ESPEC, NULL, "view groups of %d views "
				   "in all, %d pipelines", first, F->views);
	return 0;
}

/* Where each group's images go in a batch slot of batch_size samples. */
static void place_groups(struct final *F, uint32_t batch_size)
{
	size_t at = 0;

	F->sample_bytes = 0;
	for (int i = 0; i < F->ngroups; i++) {
		struct fgroup *g = &F->group[i];
		g->image_bytes = (size_t)g->shape.width * g->shape.height *
				 g->shape.channels * (F->dtype == RFB_DTYPE_F32 ? 4 : 1);
		g->sample_bytes = g->image_bytes * (size_t)g->views;
		g->offset = at;
		at += round64(g->sample_bytes * batch_size);
		F->sample_bytes += g->sample_bytes;
	}
	F->slot_bytes = at;
}

int rfbi_final_open_groups(struct final *F, rfb_err *err)
{
	const struct rfb_final_opts *o = F->o;
	int rc;

	F->views = o->views > 1 ? o->views : 1;
	if ((rc = lay_out_groups(F, err)))
		return rc;
	if (o->view_pipelines) {
		if (!(F->view_pipe = calloc((size_t)F->views, sizeof *F->view_pipe)))
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		F->view_pipe[0] = F->final_pipe;
		for (int i = 0; i < F->ngroups; i++)
			for (int v = F->group[i].first;
			     v < F->group[i].first + F->group[i].views; v++)
				if (v > 0 && (rc = open_view(F, v, &F->group[i], err)))
					return rc;
	}
	/* the views' collisions are checked per spec, hence per group
	 * (final_inputs.c's check_view_groups) */
	place_groups(F, F->h->batch_size);
	return o->view_pipelines ? join_view_specs(F, err) : 0;
}

void rfbi_final_close_groups(struct final *F)
{
	for (int v = 1; F->view_pipe && v < F->views; v++)
		rfb_pipeline_free(F->view_pipe[v]);
	free(F->view_pipe);
	free(F->final_text);
}

int rfbi_final_group_of(const struct final *F, int v)
{
	int i = 0;

	while (i + 1 < F->ngroups && v >= F->group[i + 1].first)
		i++;
	return i;
}

/* Where view v of the sample at place j of slot s goes. */
unsigned char *rfbi_final_view_pixels(const struct final *F,
				      const struct fslot *s, uint32_t j, int v)
{
	const struct fgroup *g = &F->group[rfbi_final_group_of(F, v)];

	return s->pixels + g->offset + (size_t)j * g->sample_bytes +
	       (size_t)(v - g->first) * g->image_bytes;
}

/* Copy the images of the sample at place from to place to, every group. */
void rfbi_final_copy_sample(const struct final *F, struct fslot *s,
			    uint32_t to, uint32_t from)
{
	for (int i = 0; i < F->ngroups; i++) {
		const struct fgroup *g = &F->group[i];
		memcpy(s->pixels + g->offset + (size_t)to * g->sample_bytes,
		       s->pixels + g->offset + (size_t)from * g->sample_bytes,
		       g->sample_bytes);
	}
}
