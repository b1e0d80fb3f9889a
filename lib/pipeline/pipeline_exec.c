/*
 * pipeline_exec.c - running a parsed pipeline on a decoded image (see
 * pipeline.h).  Layers write into two ping-pong buffers of the context;
 * crops that stay inside the image are views (no copy), a flip is the
 * copy out of such a view, so a typical pipeline copies each image only
 * where a filter really computes new pixels.
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline_run_internal.h"

rfb_pipe_ctx *rfb_pipe_ctx_new(rfb_err *err)
{
	rfb_pipe_ctx *ctx = calloc(1, sizeof *ctx);

	if (!ctx) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory for a pipeline context");
		return NULL;
	}
	ctx->rz = rfb_resizer_new(err);
	if (!ctx->rz) {
		free(ctx);
		return NULL;
	}
	ctx->fast_decode = 1;
	ctx->scale_ratio = -1.0;
	ctx->max_pixels = RFB_IMAGE_DEFAULT_MAX_PIXELS;
	return ctx;
}

void rfb_pipe_ctx_free(rfb_pipe_ctx *ctx)
{
	if (!ctx)
		return;
	for (int i = 0; i < 2; i++)
		rfb_imgbuf_free(&ctx->buf[i]);
	rfb_resizer_free(ctx->rz);
	free(ctx->tensor);
	free(ctx->scratch);
	rfb_decoder_free(ctx->dec);
	rfb_augmix_scratch_free(&ctx->augmix);
	free(ctx);
}

void rfb_pipe_ctx_set_fast_decode(rfb_pipe_ctx *ctx, int on)
{
	ctx->fast_decode = on != 0;
}

void rfb_pipe_ctx_set_max_pixels(rfb_pipe_ctx *ctx, uint64_t max_pixels)
{
	ctx->max_pixels = max_pixels;
}

/* ---- layers ---- */

/* A resize from in_w x in_h to width w first resizes the rows (PIL's
 * order): an intermediate of w x in_h, which the pixel cap bounds too. */
static int check_resize_pass(const struct rfb_run *r, int w, int in_w,
			     int in_h, rfb_err *err)
{
	if (w == in_w)
		return 0;
	return rfbi_run_check_pixels(r, w, in_h, "resize intermediate", err);
}

static int run_resize(struct rfb_run *r, const struct rfb_layer *l, rfb_err *err)
{
	int w = l->width, h = l->height, slot, rc;
	rfb_image dst;

	if (l->shorter) {
		rc = rfb_resize_shorter(r->cur.width, r->cur.height, l->shorter,
					l->max_size, &w, &h, err);
		if (rc == RFB_ELIMIT) /* a side too long: named with the layer */
			rc = rfbi_run_check_pixels(r, w, h, "image", err);
		if (rc)
			return rc;
	}
	if (w == r->cur.width && h == r->cur.height)
		return 0; /* torchvision returns the image unchanged */
	if ((rc = check_resize_pass(r, w, r->cur.width, r->cur.height, err)))
		return rc;
	rc = rfbi_run_target(r, w, h, r->cur.channels, &dst, &slot, err);
	if (!rc)
		rc = rfb_resize(r->ctx->rz, &r->cur, &dst, l->interp, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

static int run_rrcrop(struct rfb_run *r, const struct rfb_layer *l,
		      rfb_rng *rng, rfb_err *err)
{
	struct rfb_rect rect;
	rfb_image view, dst;
	int slot, rc;

	rfb_rrcrop_rect(rng, r->cur.width, r->cur.height, l->scale[0],
			l->scale[1], l->ratio[0], l->ratio[1], &rect);
	view = rfb_crop_view(&r->cur, &rect);
	if ((rc = check_resize_pass(r, l->width, view.width, view.height, err)))
		return rc;
	rc = rfbi_run_target(r, l->width, l->height, r->cur.channels, &dst, &slot,
			    err);
	if (!rc)
		rc = rfb_resize(r->ctx->rz, &view, &dst, l->interp, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

static int run_flip(struct rfb_run *r, const struct rfb_layer *l, rfb_rng *rng,
		    rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (!rfb_flip_draw(rng, l->p))
		return 0;
	/* into the other buffer, also for a whole buffer: the mirrored copy
	 * (SSSE3) is several times faster than swapping in place, and a view
	 * (a crop) is copied out by the output anyway */
	rc = rfbi_run_target(r, r->cur.width, r->cur.height, r->cur.channels, &dst,
			    &slot, err);
	if (!rc) {
		rfb_hflip(&r->cur, &dst);
		rfbi_run_take(r, &dst, slot);
	}
	return rc;
}

static int apply_op(struct rfb_run *r, const struct rfb_layer *l,
		    const struct rfb_aug_op *op, rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (op->op == RFB_OP_IDENTITY)
		return 0;
	rc = rfbi_run_target(r, r->cur.width, r->cur.height, r->cur.channels, &dst,
			    &slot, err);
	if (!rc)
		rc = rfb_op_apply(op->op, op->magnitude, l->interp, l->fill, &r->cur,
				  &dst, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

static int run_augment(struct rfb_run *r, const struct rfb_layer *l,
		       int position, rfb_err *err)
{
	struct rfb_aug_op ops[2];
	int n, rc = 0;

	if (!run_gray_fill(l->fill) && (rc = rfbi_run_expand(r, err)))
		return rc;
	if (r->win && position >= r->win->first && position < r->win->crop)
		return rfbi_win_augment(r, l, position, err);
	n = rfbi_run_draw_ops(r, l, position, r->cur.width, r->cur.height, ops);
	for (int i = 0; i < n && !rc; i++)
		rc = apply_op(r, l, &ops[i], err);
	return rc;
}

static int run_channels(struct rfb_run *r, int channels, rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	/* the L image of a gray3 image is its one channel; the RGB image of
	 * a gray one is a gray3 image */
	if (channels == 1 && r->gray3) {
		r->gray3 = 0;
		return 0;
	}
	if (channels == 3 && r->cur.channels == 1) {
		r->gray3 = 1;
		return 0;
	}
	if (r->cur.channels == channels)
		return 0;
	rc = rfbi_run_target(r, r->cur.width, r->cur.height, channels, &dst, &slot,
			    err);
	if (!rc)
		rc = channels == 1 ? rfb_to_gray(&r->cur, &dst, err)
				   : rfb_to_rgb(&r->cur, &dst, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

/* Run layer l as layer number position (its RNG stream). */
static int run_layer(struct rfb_run *r, const struct rfb_layer *l, int position,
		     rfb_err *err)
{
	const struct rfb_pipe_key *k = r->key;
	struct rfb_rect rect;
	rfb_rng rng;
	int rc;

	rfbi_layer_rng(k, position, &rng);
	r->layer = l;
	r->layer_pos = position;
	switch (l->kind) {
	case RFB_F_RESIZE:
		return run_resize(r, l, err);
	case RFB_F_CENTERCROP:
		if (r->win && position == r->win->crop) {
			rfbi_win_crop(r);
			return 0;
		}
		rect = rfb_centercrop_rect(r->cur.width, r->cur.height, l->height,
					   l->width);
		return rfbi_run_crop(r, &rect, NULL, err);
	case RFB_F_CROP:
		if (r->win && position == r->win->crop) {
			rfbi_win_crop(r);
			return 0;
		}
		rc = rfb_randcrop_rect(&rng, r->cur.width, r->cur.height, l->height,
				       l->width, &l->pad, l->pad_if_needed, &rect,
				       err);
		return rc ? rc : rfbi_run_crop_padded(r, &rect, l, err);
	case RFB_F_PAD:
		rect = (struct rfb_rect){ -l->pad.top, -l->pad.left,
					  r->cur.height + l->pad.top + l->pad.bottom,
					  r->cur.width + l->pad.left + l->pad.right };
		return rfbi_run_crop_padded(r, &rect, l, err);
	case RFB_F_RRCROP:
		return run_rrcrop(r, l, &rng, err);
	case RFB_F_FLIP:
		return run_flip(r, l, &rng, err);
	case RFB_F_RANDAUG:
	case RFB_F_AUTOAUG:
	case RFB_F_TRIVIALAUG:
		return run_augment(r, l, position, err);
	case RFB_F_GRAY:
		return run_channels(r, 1, err);
	case RFB_F_RGB:
		return run_channels(r, 3, err);
	case RFB_F_NORMALIZE:
	case RFB_F_APPLY:
	case RFB_F_CHOICE:
	case RFB_F_ORDER:
	case RFB_F_COUNT:
		break;
	default:
		return rfbi_run_single(r, l, &rng, err);
	}
	return 0; /* normalize is applied to the output, apply by the loop */
}

int rfb_pipeline_normalization(const rfb_pipeline *p, float mean[3],
			       float std[3])
{
	const struct rfb_layer *l;

	if (rfbi_pipeline_norm_at(p) < 0)
		return 0;
	l = &p->layers[rfbi_pipeline_norm_at(p)];
	for (int c = 0; c < 3; c++) {
		int k = l->norm_channels == 1 ? 0 : c;
		mean[c] = (float)l->mean[k];
		std[c] = (float)l->std[k];
	}
	return 1;
}

/* ---- output ---- */

static int normalize_output(rfb_pipe_ctx *ctx, const struct rfb_layer *l,
			    struct rfb_pipe_out *out, rfb_err *err)
{
	const rfb_image *img = &out->img;
	size_t n = (size_t)img->width * img->height * img->channels;
	int rc;

	if (l->norm_channels > img->channels)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "normalize has %d values for a %d-channel image",
				   l->norm_channels, img->channels);
	if (!ctx->norm_valid || ctx->norm.channels != img->channels ||
	    memcmp(ctx->norm_mean, l->mean, sizeof l->mean) ||
	    memcmp(ctx->norm_std, l->std, sizeof l->std)) {
		ctx->norm_valid = 0;
		rc = rfb_norm_init(&ctx->norm, img->channels, l->mean, l->std, err);
		if (rc)
			return rc;
		memcpy(ctx->norm_mean, l->mean, sizeof l->mean);
		memcpy(ctx->norm_std, l->std, sizeof l->std);
		ctx->norm_valid = 1;
	}
	if (n > ctx->tensor_cap) {
		float *t = realloc(ctx->tensor, n * sizeof *t);
		if (!t)
			return rfb_err_set(err, RFB_ENOMEM, NULL,
					   "out of memory for a %zu-float tensor", n);
		ctx->tensor = t;
		ctx->tensor_cap = n;
	}
	rc = rfb_tensor_normalize(img, &ctx->norm, RFB_LAYOUT_CHW, ctx->tensor, err);
	out->dtype = RFB_DTYPE_F32;
	out->layout = RFB_LAYOUT_CHW;
	out->data = ctx->tensor;
	out->size = n * sizeof(float);
	return rc;
}

/* Make cur contiguous in a context buffer and fill out (normalising if p
 * ends in normalize). */
static int run_finish(struct rfb_run *r, const rfb_pipeline *p,
		      struct rfb_pipe_out *out, rfb_err *err)
{
	size_t row;
	rfb_image dst;
	int slot, rc;

	rc = rfbi_run_expand(r, err); /* also the copy out of a view */
	if (rc)
		return rc;
	row = (size_t)r->cur.width * r->cur.channels;
	if (r->dest.data && r->cur.width == r->dest.width &&
	    r->cur.height == r->dest.height && r->cur.channels == r->dest.channels) {
		if (r->cur.data != r->dest.data) { /* a view, or another buffer */
			rfb_image_copy(&r->dest, &r->cur);
			rfbi_run_take(r, &r->dest, RFBI_RUN_DEST);
		}
	} else if (r->cur_buf < 0 || r->cur_buf == RFBI_RUN_DEST ||
		   r->cur.stride != row ||
		   r->cur.data != r->ctx->buf[r->cur_buf].data) {
		rc = rfbi_run_target(r, r->cur.width, r->cur.height, r->cur.channels,
				    &dst, &slot, err);
		if (rc)
			return rc;
		rfb_image_copy(&dst, &r->cur);
		rfbi_run_take(r, &dst, slot);
	}
	memset(out, 0, sizeof *out);
	out->img = r->cur;
	out->shape = (struct rfb_pipe_shape){ r->cur.width, r->cur.height,
					      r->cur.channels };
	out->dtype = RFB_DTYPE_U8;
	out->layout = RFB_LAYOUT_HWC;
	out->data = r->cur.data;
	out->size = row * r->cur.height;
	if (rfb_pipeline_dtype(p) == RFB_DTYPE_F32) {
		int at = rfbi_pipeline_norm_at(p);
		rc = normalize_output(r->ctx, &p->layers[at], out, err);
		/* deferred erasing, then erasing after normalize, on the
		 * float CHW tensor */
		for (int i = 0; i < at && !rc; i++) {
			rfb_rng rng;
			if (!p->layers[i].deferred || !(r->deferred_on >> i & 1))
				continue;
			rfbi_layer_rng(r->key, i, &rng);
			rfbi_run_erase_deferred(&p->layers[i], &rng, &p->layers[at],
						&r->ctx->norm, out);
		}
		for (int i = at + 1; i < p->nlayers && !rc; i++) {
			rfb_rng rng;
			rfbi_layer_rng(r->key, i, &rng);
			rfbi_run_erase_float(&p->layers[i], &rng, out);
		}
		return rc;
	}
	return 0;
}

/* Run the n layers of p from first (an option of a choice or order). */
static int run_option(struct rfb_run *r, const rfb_pipeline *p, int first,
		      int n, rfb_err *err)
{
	int rc = 0;

	for (int k = first; k < first + n && !rc; k++)
		rc = run_layer(r, &p->layers[k], k, err);
	return rc;
}

/* RandomChoice (choice at position i): random.choices(weights=p), i.e.
 * the first option whose cumulative weight exceeds one uniform times
 * their total, then its layers. */
static int run_choice(struct rfb_run *r, const rfb_pipeline *p, int i,
		      rfb_err *err)
{
	const struct rfb_layer *l = &p->layers[i];
	double total = 0.0, x, cum = 0.0;
	int first = i + 1, k = 0;
	rfb_rng rng;

	for (int o = 0; o < l->options; o++)
		total += l->weights[o];
	rfbi_layer_rng(r->key, i, &rng);
	x = rfb_rng_uniform(&rng) * total;
	for (k = 0; k < l->options - 1; k++) {
		cum += l->weights[k];
		if (x < cum)
			break;
		first += l->option_layers[k];
	}
	/* the last option only when x passed every other (or rounding) */
	while (k > 0 && l->weights[k] == 0.0) {
		k--;
		first -= l->option_layers[k];
	}
	return run_option(r, p, first, l->option_layers[k], err);
}

/* RandomOrder (order at position i): random.shuffle of the options
 * (Fisher-Yates from the last), then each option's layers in that order;
 * every layer keeps its own random stream. */
static int run_order(struct rfb_run *r, const rfb_pipeline *p, int i,
		     rfb_err *err)
{
	const struct rfb_layer *l = &p->layers[i];
	int order[RFB_CHOICE_MAX], start[RFB_CHOICE_MAX], rc = 0;
	rfb_rng rng;

	rfbi_layer_rng(r->key, i, &rng);
	for (int o = 0, at = i + 1; o < l->options; o++) {
		order[o] = o;
		start[o] = at;
		at += l->option_layers[o];
	}
	for (int o = l->options - 1; o > 0; o--) {
		int j = (int)rfb_rng_below(&rng, (uint32_t)o + 1), t = order[o];
		order[o] = order[j];
		order[j] = t;
	}
	for (int o = 0; o < l->options && !rc; o++)
		rc = run_option(r, p, start[order[o]],
				l->option_layers[order[o]], err);
	return rc;
}

int rfbi_run_layers(struct rfb_run *r, const rfb_pipeline *p, int from,
		    struct rfb_pipe_out *out, rfb_err *err)
{
	for (int i = from; i < p->nlayers; i++) {
		const struct rfb_layer *l = &p->layers[i];
		int rc = 0;
		if (l->kind == RFB_F_APPLY) {
			/* RandomApply: skip its layers when p < torch.rand(1) */
			rfb_rng rng;
			rfbi_layer_rng(r->key, i, &rng);
			if (l->p < rfb_rng_uniform(&rng))
				i += l->count;
			continue;
		}
		if (l->deferred)
			r->deferred_on |= UINT64_C(1) << i;
		if (l->kind == RFB_F_CHOICE || l->kind == RFB_F_ORDER) {
			rc = l->kind == RFB_F_CHOICE ? run_choice(r, p, i, err)
						     : run_order(r, p, i, err);
			i += l->count;
		} else {
			rc = run_layer(r, l, i, err);
		}
		if (rc)
			return rc;
	}
	return run_finish(r, p, out, err);
}

int rfb_pipe_run_into(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
		      const rfb_image *in, const struct rfb_pipe_key *key,
		      const struct rfb_pipe_dest *dest, struct rfb_pipe_out *out,
		      rfb_err *err)
{
	struct rfb_run r = { ctx, key, *in, -1, 0, NULL, 0, 0, 0, 0, { 0 }, NULL, 0 };

	if (in->width < 1 || in->height < 1 ||
	    (in->channels != 1 && in->channels != 3))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "pipeline input %dx%dx%d: need 1 or 3 channels",
				   in->width, in->height, in->channels);
	rfbi_run_ask_dest(&r, p, in->width, in->height, in->channels, dest);
	return rfbi_run_layers(&r, p, 0, out, err);
}

int rfb_pipe_run(rfb_pipe_ctx *ctx, const rfb_pipeline *p, const rfb_image *in,
		 const struct rfb_pipe_key *key, struct rfb_pipe_out *out,
		 rfb_err *err)
{
	return rfb_pipe_run_into(ctx, p, in, key, NULL, out, err);
}
