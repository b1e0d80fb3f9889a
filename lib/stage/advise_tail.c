/*
 * advise_tail.c - the final part of one of refurb-advise's splits made
 * runnable on its own: a centercrop to the stream's shape added where the
 * tail alone does not fix the size (before any normalize), and the string
 * copies the splits keep.  Used by advise.c and advise_gates.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/pipeline.h"
#include "advise_internal.h"

char *rfbi_advise_dup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

/* tail, and a centercrop to shape before any normalize when the tail
 * alone does not fix the output size (refurb-final needs one: a final
 * flip after a partial crop=224 runs as flip,centercrop=224, which
 * leaves its 224x224 input as it is). */
int rfbi_advise_fix_tail(rfb_pipeline **tail, const struct rfb_pipe_shape *shape,
		    rfb_err *err)
{
	rfb_pipeline *cc = NULL, *body = NULL, *norm = NULL, *t = NULL;
	struct rfb_pipe_shape s;
	rfb_err ignore = { 0 };
	char spec[64];
	float mean[3], std[3];
	int n = rfb_pipeline_layers(*tail), rc;

	if (!rfb_pipeline_fixed_shape(*tail, 3, &s, &ignore))
		return 0;
	snprintf(spec, sizeof spec, "centercrop=%dx%d", shape->height,
		 shape->width);
	if ((rc = rfb_pipeline_parse(spec, &cc, err)))
		return rc;
	if (rfb_pipeline_normalization(*tail, mean, std)) {
		/* before the layers that stay with normalize (it, an
		 * erasing value=random before it, erasings after it) */
		int m = 0;
		while (m < n && rfb_pipeline_splittable(*tail, m + 1))
			m++;
		if (!(rc = rfb_pipeline_split(*tail, m, &body, &norm, err)) &&
		    !(rc = rfb_pipeline_join(body, cc, &t, err))) {
			rfb_pipeline_free(body);
			body = t;
			rc = rfb_pipeline_join(body, norm, &t, err);
		}
	} else {
		rc = rfb_pipeline_join(*tail, cc, &t, err);
	}
	rfb_pipeline_free(cc);
	rfb_pipeline_free(body);
	rfb_pipeline_free(norm);
	if (rc)
		return rc;
	rfb_pipeline_free(*tail);
	*tail = t;
	return 0;
}

int rfbi_advise_split_specs(const rfb_pipeline *p, int k,
			    const struct rfb_pipe_shape *shape,
			    struct rfb_advise_split *s, rfb_err *err)
{
	rfb_pipeline *head = NULL, *tail = NULL;
	int rc;

	if ((rc = rfb_pipeline_split(p, k, &head, &tail, err)) ||
	    (rc = rfbi_advise_fix_tail(&tail, shape, err)))
		goto out;
	s->partial_spec = rfbi_advise_dup(rfb_pipeline_canonical(head));
	s->final_spec = rfbi_advise_dup(rfb_pipeline_canonical(tail));
	if (!s->partial_spec || !s->final_spec)
		rc = rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
out:
	rfb_pipeline_free(head);
	rfb_pipeline_free(tail);
	return rc;
}
