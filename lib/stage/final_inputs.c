/*
 * final_inputs.c - what refurb-final opens before its first batch: the
 * annotated plan's header, the index, the cache, refurb-partial's
 * handover ring and the final pipeline, checked against the plan; the
 * views' pipelines are final_groups.c's (final_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "final_internal.h"
#include "stage_internal.h"

/* What the header of the annotated plan says, with the options' overrides. */
int rfbi_final_read_annotation(struct final *F, const char *in_name, rfb_err *err)
{
	const struct rfb_final_opts *o = F->o;
	size_t len;
	const char *line = rfb_plan_reader_line(F->reader, &len);
	int rc = rfb_annot_parse_header(line, len, &F->annot, err);

	if (rc) {
		snprintf(err->path, sizeof err->path, "%s", in_name);
		return rc;
	}
	if (o->cache_dir)
		snprintf(F->annot.cache, sizeof F->annot.cache, "%s", o->cache_dir);
	if (o->index_path)
		snprintf(F->annot.index_file, sizeof F->annot.index_file, "%s",
			 o->index_path);
	if (o->root)
		snprintf(F->annot.root, sizeof F->annot.root, "%s", o->root);
	F->seed = o->have_seed ? o->seed : F->annot.aug_seed;
	return 0;
}

/* The size of a typical image of the index (the median pixel count of
 * up to 1000 samples spread over it) after the partial part: what the
 * final part draws its crops from. */
static int cmp_pixels(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x >> 32, b = *(const uint64_t *)y >> 32;
	return a < b ? -1 : a > b;
}

static struct rfb_pipe_shape final_input(const struct final *F)
{
	struct rfb_pipe_shape in = { 256, 256, 3 }, out;
	uint32_t n = rfb_index_count(F->idx), step = n > 1000 ? n / 1000 : 1;
	uint64_t key[1000]; /* pixel count << 32 | sample */
	rfb_sample_info info;
	rfb_err ignore = { 0 };
	int k = 0;

	for (uint32_t id = 0; id < n && k < 1000; id += step) {
		uint64_t px = rfb_index_pixels(F->idx, id);
		key[k++] = (px > UINT32_MAX ? UINT32_MAX : px) << 32 | id;
	}
	qsort(key, (size_t)k, sizeof *key, cmp_pixels);
	if (k && !rfb_index_get(F->idx, (uint32_t)key[k / 2], &info) &&
	    info.width > 0 && info.height > 0) {
		in.width = (int)info.width;
		in.height = (int)info.height;
	}
	if (rfb_pipeline_out_shape(F->partial_pipe, &in, &out, &ignore))
		return in;
	return out;
}

/* The names of p's layers that draw (those that could make views
 * differ), ", "-separated into buf; "" when none does. */
static void drawing_layers(const rfb_pipeline *p, int w, int h, char *buf,
			   size_t n)
{
	size_t at = 0;

	buf[0] = 0;
	for (int i = 0; i < rfb_pipeline_layers(p) && at < n; i++)
		if (rfb_pipeline_layer_draws(p, i, w, h))
			at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "",
					       rfb_pipeline_layer_name(p, i));
}

int rfbi_final_check_views(const rfb_pipeline *partial, const rfb_pipeline *final,
			   int views, int width, int height, rfb_err *err)
{
	double c = rfb_pipeline_views_collision(final, 0, width, height, views);
	char drawn[200];

	if (views < 2 || c <= RFB_VIEW_COLLISION_LIMIT)
		return 0;
	drawing_layers(partial, width, height, drawn, sizeof drawn);
	return rfb_err_set(err, RFB_ESPEC, NULL,
		"%d views of every sample run the final pipeline '%.300s', whose "
		"draws %s with probability %.3g%% (over the limit of %g%%): "
		"identical views teach a contrastive loss nothing; %s%s%s "
		"(refurb-advise --views %d chooses the split), or give "
		"--allow-view-collisions", views, rfb_pipeline_canonical(final),
		views > 2 ? "repeat for two of them" : "are the same for both",
		c * 100, RFB_VIEW_COLLISION_LIMIT * 100,
		drawn[0] ? "move random layers of the partial pipeline (" :
			   "give the final part layers that draw more (a crop)",
		drawn, drawn[0] ? ") into the final part" : "", views);
}

int rfbi_final_check_shared_draws(const rfb_pipeline *partial, int views,
				  int width, int height, rfb_err *err)
{
	char drawn[200];

	if (views < 2)
		return 0;
	drawing_layers(partial, width, height, drawn, sizeof drawn);
	if (!drawn[0])
		return 0;
	return rfb_err_set(err, RFB_ESPEC, NULL,
		"%d views of every sample are made from one cached record, whose "
		"partial pipeline '%.300s' has layers that draw (%s): the views "
		"of a sample would share their draws, where torchvision draws "
		"them per view; move them into the final part (refurb-advise "
		"--views %d chooses the split), or give --allow-shared-draws",
		views,
		rfb_pipeline_canonical(partial), drawn, views);
}

/* The views that run the same spec are one group: each group of two or
 * more views is checked for collisions (rfbi_final_check_views). */
static int check_collisions(struct final *F, struct rfb_pipe_shape in,
			    rfb_err *err)
{
	int rc = 0;

	if (!F->view_pipe)
		return rfbi_final_check_views(F->partial_pipe, F->final_pipe, F->views,
					      in.width, in.height, err);
	for (int v = 0; v < F->views && !rc; v++) {
		int same = 0, first = 1;
		const char *spec = rfb_pipeline_canonical(F->view_pipe[v]);
		for (int u = 0; u < F->views; u++) {
			int eq = !strcmp(spec, rfb_pipeline_canonical(F->view_pipe[u]));
			same += eq;
			first &= !(eq && u < v);
		}
		if (first && same > 1)
			rc = rfbi_final_check_views(F->partial_pipe, F->view_pipe[v],
						    same, in.width, in.height, err);
	}
	return rc;
}

/* Two or more views: their collisions, then the partial part's draws
 * that all the views, made from one record, would share. */
static int check_view_groups(struct final *F, rfb_err *err)
{
	struct rfb_pipe_shape in = final_input(F);
	int rc = 0;

	if (F->views < 2)
		return 0;
	if (!F->o->allow_view_collisions && (rc = check_collisions(F, in, err)))
		return rc;
	return F->o->allow_shared_draws ? 0 :
		rfbi_final_check_shared_draws(F->partial_pipe, F->views, in.width,
					      in.height, err);
}

/* The index, the cache and the two pipelines; check they belong together. */
int rfbi_final_open_inputs(struct final *F, const char *in_name, rfb_err *err)
{
	const struct rfb_cache_manifest *m;
	int rc;

	if (!(F->idx = rfb_index_open(F->annot.index_file, err)) ||
	    !(F->src = rfb_source_open(F->idx, F->annot.root[0] ? F->annot.root
				       : NULL, err)))
		return err->code;
	if (rfb_index_identity(F->idx) != F->h->index_identity)
		return rfb_err_set(err, RFB_EMISMATCH, in_name,
				   "plan was made for another index than %s: %s",
				   F->annot.index_file, F->o->index_path
				   ? "give --index the index the plan was made "
				     "from, or leave --index out (the plan names it)"
				   : "the index changed since; make the schedule "
				     "and the plan again from it (refurb-evict, "
				     "refurb-plan)");
	if (!(F->view = rfb_cache_view_open(F->annot.cache, F->o->direct, err)))
		return err->code;
	if (F->annot.handover[0]) {
		/* a plan recorded by tee says handover= but may have no ring
		 * address: only one of those is an error (prepare) */
		F->ho = rfb_handover_attach(F->annot.handover, &F->ho_err);
		F->rq_cap = (F->o->prefetch > 0 ? F->o->prefetch : 2) + 1;
		if (F->ho && (!(F->rq = calloc((size_t)F->rq_cap, sizeof *F->rq)) ||
			      pthread_mutex_init(&F->rq_mu, NULL)))
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	}
	/* without it (a read-only cache) the writer falls back on its grace */
	F->position = rfb_cache_position_writer_open(F->annot.cache, NULL);
	F->pos.epoch_batches = F->h->batches;
	m = rfb_cache_view_manifest(F->view);
	if (m->index_identity != F->h->index_identity ||
	    m->schedule_identity != F->h->schedule_identity ||
	    strcmp(m->pipeline, F->annot.partial) != 0)
		return rfb_err_set(err, RFB_EMISMATCH, F->annot.cache,
				   "the cache was made for another plan or pipeline");
	if ((rc = rfb_pipeline_parse(F->o->view_pipelines ? F->o->view_pipelines[0]
				     : F->o->pipeline, &F->final_pipe, err)) ||
	    (rc = rfb_pipeline_parse(F->annot.partial, &F->partial_pipe, err)) ||
	    (rc = rfb_pipeline_check_pixels(F->final_pipe, F->o->max_pixels, err)))
		return rc;
	/* only the channels: the partial part's size may vary per sample */
	if ((rc = rfb_pipeline_fixed_shape(F->final_pipe,
					   rfb_pipeline_out_channels(F->partial_pipe, 3),
					   &F->shape, err)))
		return rc;
	F->dtype = rfb_pipeline_dtype(F->final_pipe);
	F->layout = rfb_pipeline_layout(F->final_pipe);
	if ((rc = rfbi_final_open_groups(F, err)))
		return rc;
	return check_view_groups(F, err);
}

/* Before the first batch: the open-file budget (rfbi_stage_fit_fds). */
int rfbi_final_fit_fds(struct final *F, rfb_err *err)
{
	return rfbi_stage_fit_fds(F->src, F->o->threads, F->h->reuse,
				  F->o->on_note, F->o->ctx, err);
}
