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
				   "plan was made for another index than %s",
				   F->annot.index_file);
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
	    (rc = rfb_pipeline_parse(F->annot.partial, &F->partial_pipe, err)))
		return rc;
	/* only the channels: the partial part's size may vary per sample */
	if ((rc = rfb_pipeline_fixed_shape(F->final_pipe,
					   rfb_pipeline_out_channels(F->partial_pipe, 3),
					   &F->shape, err)))
		return rc;
	F->dtype = rfb_pipeline_dtype(F->final_pipe);
	F->layout = rfb_pipeline_layout(F->final_pipe);
	return rfbi_final_open_groups(F, err);
}
