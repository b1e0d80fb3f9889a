/*
 * pipeline_shape.c - the output shape of a parsed pipeline (pipeline.h):
 * for a given input (rfb_pipeline_out_shape), and the fixed one a
 * batching stage needs (rfb_pipeline_fixed_shape).  A size may be drawn
 * per sample - rotation expand=1's angle, which option of a gate runs -
 * until a later layer fixes it again.  Also the pixel cap's check of
 * every layer's least size (rfb_pipeline_check_pixels).
 */
#include <math.h>

#include "pipeline_internal.h"
#include "refurb/filters.h"

static int crop_shape(const struct rfb_layer *l, struct rfb_pipe_shape *s,
		      rfb_err *err)
{
	int w = s->width + l->pad.left + l->pad.right;
	int h = s->height + l->pad.top + l->pad.bottom;

	if (!l->pad_if_needed && (w < l->width || h < l->height))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "crop %dx%d larger than the %s image %dx%d "
				   "(use pad= or pad_if_needed=1)", l->height,
				   l->width, l->pad.left + l->pad.top +
				   l->pad.right + l->pad.bottom ? "padded" : "",
				   h, w);
	s->width = l->width;
	s->height = l->height;
	return 0;
}

/* Output size of one layer for a w x h x c input (no randomness needed:
 * every filter's output size depends only on its input's).  0 or a
 * negative code with err filled. */
static int layer_out_shape(const struct rfb_layer *l, struct rfb_pipe_shape *s,
			   rfb_err *err)
{
	switch (l->kind) {
	case RFB_F_RESIZE:
		if (l->shorter)
			return rfb_resize_shorter(s->width, s->height, l->shorter,
						  l->max_size, &s->width,
						  &s->height, err);
		/* fall through */
	case RFB_F_CENTERCROP:
	case RFB_F_RRCROP:
		s->width = l->width;
		s->height = l->height;
		return 0;
	case RFB_F_CROP:
		return crop_shape(l, s, err);
	case RFB_F_PAD:
		s->width += l->pad.left + l->pad.right;
		s->height += l->pad.top + l->pad.bottom;
		return 0;
	case RFB_F_ROTATION:
		/* expand with one angle (the float32 torchvision draws) */
		rfb_rotate_size(s->width, s->height, (float)l->degrees[0],
				l->expand, l->has_center ? l->center : NULL,
				&s->width, &s->height);
		return 0;
	case RFB_F_GRAY:
		s->channels = 1;
		return 0;
	case RFB_F_RGB:
		s->channels = 3;
		return 0;
	case RFB_F_NORMALIZE:
		if (l->norm_channels > s->channels)
			return rfb_err_set(err, RFB_EINVAL, NULL,
					   "normalize has %d values for a "
					   "%d-channel image", l->norm_channels,
					   s->channels);
		return 0;
	default:
		return 0;
	}
}

int rfbi_layer_out_shape(const struct rfb_layer *l, struct rfb_pipe_shape *s,
			 rfb_err *err)
{
	return layer_out_shape(l, s, err);
}

/* 1 if layer l's output size depends on its random draw (rotation with
 * expand=1 and a range of angles). */
static int size_is_drawn(const struct rfb_layer *l)
{
	return l->kind == RFB_F_ROTATION && l->expand &&
	       (float)l->degrees[0] != (float)l->degrees[1];
}

/* w |cos a| + h |sin a|: the width of a w x h box rotated by a degrees. */
static double turned(double w, double h, double deg)
{
	double a = deg * (M_PI / 180.0);

	return w * fabs(cos(a)) + h * fabs(sin(a));
}

/* The smallest side lengths expanding rotation l can give a w x h image
 * (*lo_w, *lo_h): the box width is concave between quarter turns, so its
 * least is at an end of the range or at a quarter turn inside it. */
static void drawn_min_size(const struct rfb_layer *l, int w, int h, int *lo_w,
			   int *lo_h)
{
	double a0 = (float)l->degrees[0], a1 = (float)l->degrees[1];
	double mw = fmin(turned(w, h, a0), turned(w, h, a1));
	double mh = fmin(turned(h, w, a0), turned(h, w, a1));

	if (a1 - a0 >= 360.0) {
		mw = mh = w < h ? w : h;
	} else {
		for (double q = ceil(a0 / 90.0) * 90.0; q <= a1; q += 90.0) {
			mw = fmin(mw, turned(w, h, q));
			mh = fmin(mh, turned(h, w, q));
		}
	}
	/* PIL's box is ceil(max) - floor(min) of the corners: never less */
	*lo_w = (int)ceil(mw - 1e-6);
	*lo_h = (int)ceil(mh - 1e-6);
}

/* What a drawn size comes from, for messages. */
static const char *drawn_by(const rfb_pipeline *p, int layer)
{
	return p->layers[layer].kind == RFB_F_ROTATION ? "rotation expand=1"
						       : rfbi_filter_names[p->layers[layer].kind];
}

/* The layer after a drawn size (drawn at layer varies): its output size
 * when it fixes the size again (1), 0 when the size still varies (s:
 * the least it can be), or a negative code. */
static int after_drawn(const rfb_pipeline *p, const struct rfb_layer *l,
		       int varies, struct rfb_pipe_shape *s, rfb_err *err)
{
	switch (l->kind) {
	case RFB_F_RESIZE:
		if (l->shorter) {
			s->width = s->height = 1; /* any size */
			return 0;
		}
		/* fall through */
	case RFB_F_CENTERCROP:
	case RFB_F_RRCROP:
		return layer_out_shape(l, s, err) ? RFB_EINVAL : 1;
	case RFB_F_CROP:
		if (!l->pad_if_needed &&
		    (s->width + l->pad.left + l->pad.right < l->width ||
		     s->height + l->pad.top + l->pad.bottom < l->height))
			return rfb_err_set(err, RFB_ESPEC, NULL,
					   "crop %dx%d may be larger than the image "
					   "layer %d (%s) makes, %dx%d or more: use "
					   "pad_if_needed=1", l->height, l->width,
					   varies + 1, drawn_by(p, varies), s->height,
					   s->width);
		s->width = l->width;
		s->height = l->height;
		return 1;
	case RFB_F_ROTATION:
		if (l->expand)
			s->width = s->height = 1;
		return 0;
	default:
		return layer_out_shape(l, s, err) ? RFB_EINVAL : 0;
	}
}

/* A branch of a gate: its layers [from, to) that run (none when from ==
 * to: apply's not applied). */
struct gate_branch {
	int from, to;
};

/* The branches gate i (apply, choice or order) lets samples take, in
 * order, into br[] (RFB_CHOICE_MAX + 1 of them at the most), for both
 * walks (shape_gate, fixed_gate); returns their number: apply's not
 * applied (p < 1) and applied (p > 0), each option of a choice of
 * weight > 0, each option of an order. */
static int gate_branches(const rfb_pipeline *p, int i, struct gate_branch *br)
{
	const struct rfb_layer *g = &p->layers[i];
	int n = 0, at = i + 1;

	if (g->kind == RFB_F_APPLY) {
		if (g->p < 1)
			br[n++] = (struct gate_branch){ at, at };
		if (g->p > 0)
			br[n++] = (struct gate_branch){ at, at + g->count };
		return n;
	}
	for (int o = 0; o < g->options; o++) {
		int len = g->option_layers[o];
		if (g->kind == RFB_F_ORDER || g->weights[o] > 0)
			br[n++] = (struct gate_branch){ at, at + len };
		at += len;
	}
	return n;
}

/* The size so far: s (the least it can be while varies >= 0, the layer
 * whose draw it depends on). */
struct size_state {
	struct rfb_pipe_shape s;
	int varies;
};

static int shape_layers(const rfb_pipeline *p, int from, int to,
			struct size_state *st, rfb_err *err);

/* Gate i (apply, choice or order) on st: the size each of its branches
 * (gate_branches) gives, one size when they agree, else drawn by the
 * gate with the least of them.  An error of any branch is the gate's
 * (some samples would fail). */
static int shape_gate(const rfb_pipeline *p, int i, struct size_state *st,
		      rfb_err *err)
{
	struct gate_branch br[RFB_CHOICE_MAX + 1];
	struct size_state out[RFB_CHOICE_MAX + 1];
	int n = gate_branches(p, i, br), rc, same = 1;

	for (int k = 0; k < n; k++) {
		out[k] = *st;
		if ((rc = shape_layers(p, br[k].from, br[k].to, &out[k], err)))
			return rc;
	}
	/* an order's options keep the size (the parser sees to it) */
	for (int k = 1; k < n; k++)
		same &= out[k].varies < 0 && out[0].varies < 0 &&
			out[k].s.width == out[0].s.width &&
			out[k].s.height == out[0].s.height;
	*st = out[0];
	if (same)
		return 0;
	for (int k = 1; k < n; k++) {
		if (out[k].s.width < st->s.width)
			st->s.width = out[k].s.width;
		if (out[k].s.height < st->s.height)
			st->s.height = out[k].s.height;
	}
	st->varies = i;
	return 0;
}

/* Layers [from, to) of p on st (a gate takes its layers with it). */
static int shape_layers(const rfb_pipeline *p, int from, int to,
			struct size_state *st, rfb_err *err)
{
	for (int i = from; i < to; i++) {
		const struct rfb_layer *l = &p->layers[i];
		int rc = 0;
		if (layer_is_gate(l)) {
			rc = shape_gate(p, i, st, err);
			i += l->count;
		} else if (st->varies >= 0) {
			if ((rc = after_drawn(p, l, st->varies, &st->s, err)) == 1)
				st->varies = -1;
		} else if (size_is_drawn(l)) {
			drawn_min_size(l, st->s.width, st->s.height, &st->s.width,
				       &st->s.height);
			st->varies = i;
		} else {
			rc = layer_out_shape(l, &st->s, err);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int rfb_pipeline_out_shape(const rfb_pipeline *p, const struct rfb_pipe_shape *in,
			   struct rfb_pipe_shape *out, rfb_err *err)
{
	struct size_state st = { *in, -1 };
	int rc;

	if (in->width < 1 || in->height < 1 ||
	    (in->channels != 1 && in->channels != 3))
		return rfb_err_set(err, RFB_EINVAL, NULL, "bad input shape %dx%dx%d",
				   in->width, in->height, in->channels);
	if ((rc = shape_layers(p, 0, p->nlayers, &st, err)))
		return rc;
	if (st.varies >= 0 && p->layers[st.varies].kind == RFB_F_ROTATION)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "angle layer %d (rotation expand=1) draws: "
				   "follow it with a crop, centercrop, rrcrop or "
				   "resize=HxW", p->canonical, st.varies + 1);
	if (st.varies >= 0)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on "
				   "what layer %d (%s) draws: give its options one "
				   "size, or follow it with a crop, centercrop, "
				   "rrcrop or resize=HxW", p->canonical,
				   st.varies + 1, drawn_by(p, st.varies));
	*out = st.s;
	return 0;
}

int rfb_pipeline_out_channels(const rfb_pipeline *p, int in_channels)
{
	int c = in_channels;

	for (int i = 0; i < p->nlayers; i++)
		if (p->layers[i].kind == RFB_F_GRAY)
			c = 1;
		else if (p->layers[i].kind == RFB_F_RGB)
			c = 3;
	return c;
}

/* The fixed size so far: s when fixed, else culprit is the last layer
 * that made it depend on the input or a draw (-1: none, the input's). */
struct fixed_state {
	struct rfb_pipe_shape s;
	int fixed, culprit;
};

static int fixed_layers(const rfb_pipeline *p, int from, int to,
			struct fixed_state *st, rfb_err *err);

/* Gate i: its branches (gate_branches) must agree on a fixed size, or
 * all leave it open; otherwise the gate is the culprit. */
static int fixed_gate(const rfb_pipeline *p, int i, struct fixed_state *st,
		      rfb_err *err)
{
	struct gate_branch br[RFB_CHOICE_MAX + 1];
	struct fixed_state out[RFB_CHOICE_MAX + 1];
	int n = gate_branches(p, i, br), rc, same = 1;

	for (int k = 0; k < n; k++) {
		out[k] = *st;
		if ((rc = fixed_layers(p, br[k].from, br[k].to, &out[k], err)))
			return rc;
	}
	for (int k = 1; k < n; k++)
		same &= out[k].fixed == out[0].fixed &&
			(!out[0].fixed || (out[k].s.width == out[0].s.width &&
					   out[k].s.height == out[0].s.height));
	*st = out[0];
	if (!same) {
		st->fixed = 0;
		st->culprit = i;
	}
	return 0;
}

static int fixed_layers(const rfb_pipeline *p, int from, int to,
			struct fixed_state *st, rfb_err *err)
{
	for (int i = from; i < to; i++) {
		const struct rfb_layer *l = &p->layers[i];
		int rc;
		if (layer_is_gate(l)) {
			if ((rc = fixed_gate(p, i, st, err)))
				return rc;
			i += l->count;
		} else if ((l->kind == RFB_F_RESIZE && l->shorter) ||
			   (!st->fixed && l->kind == RFB_F_ROTATION && l->expand) ||
			   size_is_drawn(l)) {
			st->fixed = 0;
			st->culprit = i;
		} else if (l->kind == RFB_F_RESIZE || l->kind == RFB_F_CENTERCROP ||
			   l->kind == RFB_F_RRCROP || l->kind == RFB_F_CROP) {
			st->fixed = 1;
			st->s.width = l->width;
			st->s.height = l->height;
		} else if (layer_out_shape(l, &st->s, err)) {
			if (err)
				err->code = RFB_ESPEC;
			return RFB_ESPEC;
		}
	}
	return 0;
}

int rfb_pipeline_fixed_shape(const rfb_pipeline *p, int in_channels,
			     struct rfb_pipe_shape *out, rfb_err *err)
{
	struct fixed_state st = { { 0, 0, in_channels }, 0, -1 };
	const struct rfb_layer *c;
	int rc;

	if ((rc = fixed_layers(p, 0, p->nlayers, &st, err)))
		return rc;
	c = st.culprit >= 0 ? &p->layers[st.culprit] : NULL;
	if (!st.fixed && c && c->kind == RFB_F_ROTATION)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "angle layer %d (rotation expand=1) draws: "
				   "follow it with a crop, centercrop, rrcrop or "
				   "resize=HxW", p->canonical, st.culprit + 1);
	if (!st.fixed && c && c->kind != RFB_F_RESIZE)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on "
				   "what layer %d (%s) draws: give its options one "
				   "size, or follow it with a crop, centercrop, "
				   "rrcrop or resize=HxW", p->canonical,
				   st.culprit + 1, rfbi_filter_names[c->kind]);
	if (!st.fixed && c)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "input: layer %d (resize=%d) comes after the "
				   "last crop or fixed-size resize", p->canonical,
				   st.culprit + 1, c->shorter);
	if (!st.fixed)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "input: end it with a crop, centercrop, rrcrop "
				   "or resize=HxW", p->canonical);
	*out = st.s;
	return 0;
}

/* ---- the pixel cap ---- */

/* The least size (s) layer l makes of an input of at least s: exact
 * after a layer that sets the size, else a lower bound. */
static void least_after(const struct rfb_layer *l, struct rfb_pipe_shape *s)
{
	switch (l->kind) {
	case RFB_F_RESIZE:
		if (l->shorter) {
			/* max_size may shrink the shorter side below N */
			s->width = s->height = l->max_size ? 1 : l->shorter;
			return;
		}
		/* fall through */
	case RFB_F_CENTERCROP:
	case RFB_F_RRCROP:
	case RFB_F_CROP:
		s->width = l->width;
		s->height = l->height;
		return;
	case RFB_F_PAD:
		s->width += l->pad.left + l->pad.right;
		s->height += l->pad.top + l->pad.bottom;
		return;
	case RFB_F_ROTATION:
		/* a turned w x h box is at least min(w, h) a side */
		if (l->expand && s->width != s->height)
			s->width = s->height = s->width < s->height ? s->width
								    : s->height;
		return;
	default:
		return;
	}
}

static int least_layers(const rfb_pipeline *p, int from, int to,
			uint64_t max_pixels, struct rfb_pipe_shape *s,
			rfb_err *err);

/* Gate i: each branch it may take is checked; the least size after it is
 * the least of theirs, side by side. */
static int least_gate(const rfb_pipeline *p, int i, uint64_t max_pixels,
		      struct rfb_pipe_shape *s, rfb_err *err)
{
	struct gate_branch br[RFB_CHOICE_MAX + 1];
	struct rfb_pipe_shape out, least = { 0, 0, s->channels };
	int n = gate_branches(p, i, br), rc;

	for (int k = 0; k < n; k++) {
		out = *s;
		if ((rc = least_layers(p, br[k].from, br[k].to, max_pixels, &out,
				       err)))
			return rc;
		if (k == 0 || out.width < least.width)
			least.width = out.width;
		if (k == 0 || out.height < least.height)
			least.height = out.height;
	}
	if (n > 0)
		*s = least;
	return 0;
}

static int least_layers(const rfb_pipeline *p, int from, int to,
			uint64_t max_pixels, struct rfb_pipe_shape *s,
			rfb_err *err)
{
	for (int i = from; i < to; i++) {
		const struct rfb_layer *l = &p->layers[i];
		uint64_t n;
		int rc;
		if (layer_is_gate(l)) {
			if ((rc = least_gate(p, i, max_pixels, s, err)))
				return rc;
			i += l->count;
			continue;
		}
		least_after(l, s);
		if (s->width > RFB_IMAGE_MAX_SIDE || s->height > RFB_IMAGE_MAX_SIDE)
			return rfb_err_set(err, RFB_ESPEC, NULL,
					   "pipeline \"%s\": layer %d (%s) makes "
					   "images of %dx%d pixels or more, more "
					   "than the %d pixels a side an image may "
					   "have: make it smaller", p->canonical,
					   i + 1, rfbi_filter_names[l->kind],
					   s->height, s->width, RFB_IMAGE_MAX_SIDE);
		if ((n = (uint64_t)s->width * (uint64_t)s->height) > max_pixels)
			return rfb_err_set(err, RFB_ESPEC, NULL,
					   "pipeline \"%s\": layer %d (%s) makes "
					   "images of %dx%d pixels or more (%llu), "
					   "more than the cap of %llu pixels: make "
					   "it smaller, or raise --max-pixels",
					   p->canonical, i + 1,
					   rfbi_filter_names[l->kind], s->height,
					   s->width, (unsigned long long)n,
					   (unsigned long long)max_pixels);
	}
	return 0;
}

int rfb_pipeline_check_pixels(const rfb_pipeline *p, uint64_t max_pixels,
			      rfb_err *err)
{
	struct rfb_pipe_shape s = { 1, 1, 3 };

	return least_layers(p, 0, p->nlayers, max_pixels ? max_pixels
				 : RFB_IMAGE_DEFAULT_MAX_PIXELS, &s, err);
}
