/*
 * pipeline_shape.c - the output shape of a parsed pipeline (pipeline.h):
 * for a given input (rfb_pipeline_out_shape), and the fixed one a
 * batching stage needs (rfb_pipeline_fixed_shape).  A size may be drawn
 * per sample - rotation expand=1's angle, which option of a gate runs -
 * until a later layer fixes it again.
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

/* The layer after an expanding rotation (drawn at layer varies): its
 * output size when it fixes the size again (1), 0 when the size still
 * varies (s: the least it can be), or a negative code. */
static int after_drawn(const struct rfb_layer *l, int varies,
		       struct rfb_pipe_shape *s, rfb_err *err)
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
					   "layer %d (rotation expand=1) makes, %dx%d "
					   "or more: use pad_if_needed=1", l->height,
					   l->width, varies + 1, s->height, s->width);
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

int rfb_pipeline_out_shape(const rfb_pipeline *p, const struct rfb_pipe_shape *in,
			   struct rfb_pipe_shape *out, rfb_err *err)
{
	struct rfb_pipe_shape s = *in;
	int varies = -1; /* the layer whose draw the size depends on */

	if (s.width < 1 || s.height < 1 || (s.channels != 1 && s.channels != 3))
		return rfb_err_set(err, RFB_EINVAL, NULL, "bad input shape %dx%dx%d",
				   s.width, s.height, s.channels);
	for (int i = 0; i < p->nlayers; i++) {
		const struct rfb_layer *l = &p->layers[i];
		int rc;
		if (varies >= 0) {
			if ((rc = after_drawn(l, varies, &s, err)) < 0)
				return rc;
			if (rc == 1)
				varies = -1;
		} else if (size_is_drawn(l)) {
			drawn_min_size(l, s.width, s.height, &s.width, &s.height);
			varies = i;
		} else if ((rc = layer_out_shape(l, &s, err))) {
			return rc;
		}
	}
	if (varies >= 0)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "angle layer %d (rotation expand=1) draws: "
				   "follow it with a crop, centercrop, rrcrop or "
				   "resize=HxW", p->canonical, varies + 1);
	*out = s;
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

int rfb_pipeline_fixed_shape(const rfb_pipeline *p, int in_channels,
			     struct rfb_pipe_shape *out, rfb_err *err)
{
	struct rfb_pipe_shape s = { 0, 0, in_channels };
	int fixed = 0, culprit = -1;

	for (int i = 0; i < p->nlayers; i++) {
		const struct rfb_layer *l = &p->layers[i];
		if ((l->kind == RFB_F_RESIZE && l->shorter) ||
		    (!fixed && l->kind == RFB_F_ROTATION && l->expand) ||
		    size_is_drawn(l)) {
			fixed = 0;
			culprit = i;
		} else if (l->kind == RFB_F_RESIZE || l->kind == RFB_F_CENTERCROP ||
			   l->kind == RFB_F_RRCROP || l->kind == RFB_F_CROP) {
			fixed = 1;
			s.width = l->width;
			s.height = l->height;
		} else if (layer_out_shape(l, &s, err)) {
			if (err)
				err->code = RFB_ESPEC;
			return RFB_ESPEC;
		}
	}
	if (!fixed && culprit >= 0 && p->layers[culprit].kind == RFB_F_ROTATION)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "angle layer %d (rotation expand=1) draws: "
				   "follow it with a crop, centercrop, rrcrop or "
				   "resize=HxW", p->canonical, culprit + 1);
	if (!fixed && culprit >= 0)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "input: layer %d (resize=%d) comes after the "
				   "last crop or fixed-size resize", p->canonical,
				   culprit + 1, p->layers[culprit].shorter);
	if (!fixed)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "pipeline \"%s\": output size depends on the "
				   "input: end it with a crop, centercrop, rrcrop "
				   "or resize=HxW", p->canonical);
	*out = s;
	return 0;
}
