/*
 * pipeline_run.c - the run primitives the executor (pipeline_exec.c), the
 * window runner (pipeline_window.c) and the JPEG planner
 * (pipeline_jpeg.c) share: the current image and the context's two
 * buffers, crops, and each layer's random stream.
 */
#include "pipeline_run_internal.h"

/* RFB_ELIMIT naming the side cap: no side may pass RFB_IMAGE_MAX_SIDE,
 * whatever the pixel cap (a long, thin image under it). */
static int side_error(const struct rfb_run *r, int w, int h, const char *what,
		      rfb_err *err)
{
	if (!r->layer)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "the decode's resize "
				   "would make a %dx%d %s, more than the %d pixels "
				   "a side an image may have", h, w, what,
				   RFB_IMAGE_MAX_SIDE);
	return rfb_err_set(err, RFB_ELIMIT, NULL, "layer %d (%s) would make a "
			   "%dx%d %s of this %dx%d input, more than the %d "
			   "pixels a side an image may have: make it smaller",
			   r->layer_pos + 1, rfbi_filter_names[r->layer->kind], h,
			   w, what, r->cur.height, r->cur.width,
			   RFB_IMAGE_MAX_SIDE);
}

int rfbi_run_check_pixels(const struct rfb_run *r, int w, int h,
			  const char *what, rfb_err *err)
{
	uint64_t n = (uint64_t)w * (uint64_t)h;

	if (w > RFB_IMAGE_MAX_SIDE || h > RFB_IMAGE_MAX_SIDE)
		return side_error(r, w, h, what, err);
	if (n <= r->ctx->max_pixels)
		return 0;
	if (!r->layer)
		return rfb_err_set(err, RFB_ELIMIT, NULL, "the decode's resize "
				   "would make a %dx%d %s (%llu pixels), more than "
				   "the cap of %llu pixels (--max-pixels)", h, w,
				   what, (unsigned long long)n,
				   (unsigned long long)r->ctx->max_pixels);
	return rfb_err_set(err, RFB_ELIMIT, NULL, "layer %d (%s) would make a "
			   "%dx%d %s (%llu pixels) of this %dx%d input, more "
			   "than the cap of %llu pixels (--max-pixels)",
			   r->layer_pos + 1, rfbi_filter_names[r->layer->kind], h,
			   w, what, (unsigned long long)n, r->cur.height,
			   r->cur.width, (unsigned long long)r->ctx->max_pixels);
}

/* A fresh w x h x c image in a buffer that does not hold the current one:
 * the caller's output memory when it has that shape. */
int rfbi_run_target(struct rfb_run *r, int w, int h, int c, rfb_image *dst,
		    int *slot, rfb_err *err)
{
	int i = 0, rc;

	if ((rc = rfbi_run_check_pixels(r, w, h, "image", err)))
		return rc;

	if (r->dest.data && r->cur_buf != RFBI_RUN_DEST && w == r->dest.width &&
	    h == r->dest.height && c == r->dest.channels) {
		*dst = r->dest;
		*slot = RFBI_RUN_DEST;
		return 0;
	}
	if (i == r->cur_buf)
		i++;
	*slot = i;
	return rfb_image_alloc(dst, &r->ctx->buf[i], w, h, c, err);
}

void rfbi_run_ask_dest(struct rfb_run *r, const rfb_pipeline *p, int w, int h,
		       int c, const struct rfb_pipe_dest *dest)
{
	struct rfb_pipe_shape in = { w, h, c }, o;
	unsigned char *m;

	if (!dest || rfb_pipeline_dtype(p) != RFB_DTYPE_U8 ||
	    rfb_pipeline_layout(p) != RFB_LAYOUT_HWC ||
	    rfb_pipeline_out_shape(p, &in, &o, NULL) ||
	    !(m = dest->get(dest->arg, o.width, o.height, o.channels)))
		return;
	r->dest = (rfb_image){ m, (size_t)o.width * o.channels, o.width,
			       o.height, o.channels };
}

void rfbi_run_take(struct rfb_run *r, const rfb_image *img, int slot)
{
	r->cur = *img;
	r->cur_buf = slot;
}

int rfbi_run_expand(struct rfb_run *r, rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (!r->gray3)
		return 0;
	rc = rfbi_run_target(r, r->cur.width, r->cur.height, 3, &dst, &slot, err);
	if (!rc)
		rc = rfb_to_rgb(&r->cur, &dst, err);
	if (!rc) {
		rfbi_run_take(r, &dst, slot);
		r->gray3 = 0;
	}
	return rc;
}

/* Crop the current image to rect: a view when inside, else a padded copy. */
int rfbi_run_crop(struct rfb_run *r, const struct rfb_rect *rect,
		  const unsigned char *fill, rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (rfb_rect_inside(rect, r->cur.width, r->cur.height)) {
		r->cur = rfb_crop_view(&r->cur, rect);
		return 0;
	}
	if (!run_gray_fill(fill) && (rc = rfbi_run_expand(r, err)))
		return rc;
	rc = rfbi_run_target(r, rect->width, rect->height, r->cur.channels, &dst,
			    &slot, err);
	if (!rc)
		rc = rfb_crop(&r->cur, rect, fill, &dst, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

int rfbi_run_crop_padded(struct rfb_run *r, const struct rfb_rect *rect,
			 const struct rfb_layer *l, rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (l->pad_mode == RFB_PAD_CONSTANT ||
	    rfb_rect_inside(rect, r->cur.width, r->cur.height))
		return rfbi_run_crop(r, rect, l->fill, err);
	/* the padding repeats the image's own pixels: a gray3 image stays
	 * gray */
	rc = rfbi_run_target(r, rect->width, rect->height, r->cur.channels, &dst,
			    &slot, err);
	if (!rc)
		rc = rfb_crop_padded(&r->cur, rect, &l->pad, l->pad_mode, NULL,
				     &dst, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

void rfbi_layer_rng(const struct rfb_pipe_key *k, int position, rfb_rng *rng)
{
	rfb_rng_init(rng, k->seed, k->epoch, k->sample,
		     k->stage_base + (uint32_t)position);
}

int rfbi_layer_crop_rect(const struct rfb_layer *l, int position, int w, int h,
			 const struct rfb_pipe_key *key, struct rfb_rect *r)
{
	rfb_rng rng;

	if (l->kind == RFB_F_CENTERCROP) {
		*r = rfb_centercrop_rect(w, h, l->height, l->width);
	} else if (l->kind == RFB_F_CROP) {
		rfbi_layer_rng(key, position, &rng);
		if (rfb_randcrop_rect(&rng, w, h, l->height, l->width, &l->pad,
				      l->pad_if_needed, r, NULL))
			return 0;
	} else {
		return 0;
	}
	return rfb_rect_inside(r, w, h);
}
