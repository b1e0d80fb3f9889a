/*
 * pipeline_window.c - running augment layers on windows: when a crop
 * inside the image follows them (resize=256,randaug=n=2:m=9,crop=224),
 * every op computes only the part of its output that the crop keeps,
 * from the part of its input that this part reads, and the resize (and
 * the decode under it, pipeline_jpeg.c) only the window the first op
 * reads.
 *
 * The plan is made before any pixel is computed: the sizes do not change
 * through the augment layers, and every layer draws its parameters from
 * its own random stream with the full image's size, so the crop's
 * rectangle and every op are known.  Going backwards from the crop, each
 * op's output window gives its input window (rfb_op_window_need: the
 * same pixels for point ops, one more around for Sharpness, the whole
 * image for Contrast, AutoContrast and Equalize, the source pixels for
 * the geometry).  The ops then run forwards on windows placed in the
 * full image (rfb_op_apply_window), giving the bytes of the whole run.
 */
#include <string.h>

#include "refurb/ops.h"
#include "pipeline_run_internal.h"

static int is_augment(const struct rfb_layer *l)
{
	return l->kind == RFB_F_RANDAUG || l->kind == RFB_F_AUTOAUG ||
	       l->kind == RFB_F_TRIVIALAUG;
}

int rfbi_run_draw_ops(const struct rfb_run *r, const struct rfb_layer *l,
		      int position, int w, int h, struct rfb_aug_op ops[2])
{
	rfb_rng rng;

	rfbi_layer_rng(r->key, position, &rng);
	if (l->kind == RFB_F_RANDAUG) {
		rfb_randaug_draw(&rng, l->magnitude, l->bins, w, h, &ops[0]);
		return 1;
	}
	if (l->kind == RFB_F_TRIVIALAUG) {
		rfb_trivialaug_draw(&rng, l->bins, w, h, &ops[0]);
		return 1;
	}
	return rfb_autoaug_draw(&rng, l->policy, w, h, ops);
}

static int smaller(const struct rfb_rect *r, int w, int h)
{
	return r->width < w || r->height < h;
}

/* Walk back from the crop through the ops of layers [first, crop). */
static int plan_ops(const rfb_pipeline *p, const struct rfb_run *r,
		    struct rfb_win_plan *pl)
{
	struct rfb_aug_op ops[RFB_WIN_MAX_OPS];
	int layer_of[RFB_WIN_MAX_OPS], n = 0, gain = 0;
	struct rfb_rect win = pl->rect;

	for (int i = pl->first; i < pl->crop; i++) {
		int k = rfbi_run_draw_ops(r, &p->layers[i], i, pl->full_w,
					 pl->full_h, ops + n);
		for (int j = 0; j < k; j++)
			layer_of[n + j] = i;
		n += k;
	}
	for (int k = n - 1; k >= 0; k--) {
		const struct rfb_layer *l = &p->layers[layer_of[k]];
		struct rfb_rect need;
		pl->out[k] = win;
		gain |= smaller(&win, pl->full_w, pl->full_h);
		if (!rfb_op_window_need(ops[k].op, ops[k].magnitude, l->interp,
				       pl->full_w, pl->full_h, &win, &need))
			return 0;
		win = need;
	}
	pl->in = win;
	pl->nops = n;
	return gain;
}

int rfbi_win_plan_make(const rfb_pipeline *p, int first, int w, int h,
		       const struct rfb_pipe_key *key, struct rfb_win_plan *pl)
{
	struct rfb_run r = { NULL, key, { 0 }, -1, 0, NULL, 0, 0, 0, 0, { 0 }, NULL, 0 };
	int c = first;

	while (c < p->nlayers && is_augment(&p->layers[c]))
		c++;
	if (c == first || c == p->nlayers || w < 1 || h < 1)
		return 0;
	memset(pl, 0, sizeof *pl);
	pl->first = first;
	pl->crop = c;
	pl->full_w = w;
	pl->full_h = h;
	if (!rfbi_layer_crop_rect(&p->layers[c], c, w, h, key, &pl->rect))
		return 0;
	return plan_ops(p, &r, pl);
}

int rfbi_win_augment(struct rfb_run *r, const struct rfb_layer *l, int position,
		     rfb_err *err)
{
	const struct rfb_win_plan *pl = r->win;
	struct rfb_aug_op ops[2];
	int n = rfbi_run_draw_ops(r, l, position, pl->full_w, pl->full_h, ops);

	for (int i = 0; i < n; i++) {
		const struct rfb_rect *o = &pl->out[r->win_op++];
		struct rfb_place sp = { r->win_x, r->win_y, pl->full_w, pl->full_h };
		struct rfb_place dp = { o->left, o->top, pl->full_w, pl->full_h };
		rfb_image dst;
		int slot, rc;

		if (ops[i].op == RFB_OP_IDENTITY)
			continue; /* its window is the one before */
		rc = rfbi_run_target(r, o->width, o->height, r->cur.channels, &dst,
				    &slot, err);
		if (!rc)
			rc = rfb_op_apply_window(ops[i].op, ops[i].magnitude,
						l->interp, l->fill, &r->cur, &sp,
						&dst, &dp, err);
		if (rc)
			return rc;
		rfbi_run_take(r, &dst, slot);
		r->win_x = o->left;
		r->win_y = o->top;
	}
	return 0;
}

void rfbi_win_crop(struct rfb_run *r)
{
	struct rfb_rect local = r->win->rect;

	local.left -= r->win_x;
	local.top -= r->win_y;
	r->cur = rfb_crop_view(&r->cur, &local);
	r->win = NULL;
}
