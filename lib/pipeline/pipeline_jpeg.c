/*
 * pipeline_jpeg.c - running a pipeline on JPEG bytes, folding its first
 * geometric layers into the decode (see rfb_pipe_run_jpeg in pipeline.h).
 *
 * The plan is made from the header alone: the first layer's random
 * rectangle (if any) is drawn on the full image's size with the layer's
 * own RNG stream, the source pixels that survive are decoded (a region,
 * possibly DCT-scaled), and the folded layers are finished on that
 * decode by a resize whose sampling positions are those the full-size
 * resize would use (rfb_resize_mapped) or, for a resized crop, from the
 * crop's exact box.  That resize can run on the decoder's bands of rows
 * as they come (decode_bands; rfb_pipe_ctx_set_band_resize says when).
 * Then the remaining layers run as usual.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/decode.h"
#include "pipeline_run_internal.h"
#include "refurb/png.h"

/* How the decoded pixels become the folded layers' output. */
enum finish { FIN_NONE, FIN_MAPPED, FIN_BOX };

struct plan {
	int folded;                   /* layers done by decode + finish */
	int windowed;                 /* win holds a window plan */
	struct rfb_win_plan win;      /* (pipeline_window.c) */
	int win_x, win_y;             /* where the decode + finish put the
				       * image the window plan starts on */
	struct rfb_decode_opts opts;  /* scale and region */
	enum finish finish;
	int out_w, out_h;
	enum rfb_interp interp;
	struct rfb_resize_axis ax, ay;/* FIN_MAPPED */
	struct rfb_resize_box box;    /* FIN_BOX, in decoded pixels */
};

/* The context's decoder, created on first use. */
static rfb_decoder *decoder(rfb_pipe_ctx *ctx, rfb_err *err)
{
	if (!ctx->dec)
		ctx->dec = rfb_decoder_new(err);
	return ctx->dec;
}

void rfb_pipe_ctx_set_scale_ratio(rfb_pipe_ctx *ctx, double min_ratio)
{
	ctx->scale_ratio = min_ratio;
}

void rfb_pipe_ctx_set_band_resize(rfb_pipe_ctx *ctx, enum rfb_pipe_band mode)
{
	ctx->band_mode = (int)mode + 1;
}

/* Whether a folded resize of a w x h decode runs on its bands. */
static int band_worth(const rfb_pipe_ctx *ctx, int w, int h)
{
	enum rfb_pipe_band mode = ctx->band_mode ? (enum rfb_pipe_band)(ctx->band_mode - 1)
						 : RFB_PIPE_BAND_AUTO;

	if (mode == RFB_PIPE_BAND_AUTO)
		return (uint64_t)w * (uint64_t)h * 3 > RFB_PIPE_BAND_MIN_BYTES;
	return mode == RFB_PIPE_BAND_ON;
}

void rfb_pipe_ctx_last_decode(const rfb_pipe_ctx *ctx, struct rfb_pipe_decode *d)
{
	*d = ctx->last;
}

/* ---- planning ---- */

/* Source span [*lo, *hi) that output pixels [first, first + n) of a
 * resize with this scale read (with a pixel of margin for rounding). */
static void source_span(double scale, enum rfb_interp interp, int first, int n,
			int size, int *lo, int *hi)
{
	double sup = rfb_resize_support(interp, scale) + 1.0;
	double a = floor(first * scale - sup), b = ceil((first + n) * scale + sup);

	*lo = a < 0 ? 0 : (int)a;
	*hi = b > size ? size : (int)b;
}

/* The caller's ratio (rfb_pipe_ctx_set_scale_ratio) wins, then the
 * resize's dct=R, then the default. */
static int pick_denom(rfb_pipe_ctx *ctx, const struct rfb_layer *l, int w,
		      int h, int rw, int rh, int out_w, int out_h)
{
	struct rfb_decode_target t = { 0, 0, rw, rh, out_w, out_h };
	double ratio = ctx->scale_ratio >= 0 ? ctx->scale_ratio
		       : l->dct > 0 ? l->dct : RFB_PIPE_SCALE_RATIO;

	/* a scaled decode's last partial row and column weigh too much in
	 * a small output: keep those at full resolution */
	if (!(ratio > 0) || out_w < RFB_PIPE_SCALE_MIN_OUT ||
	    out_h < RFB_PIPE_SCALE_MIN_OUT)
		return 1;
	return rfb_decode_pick_scale(w, h, &t, ratio);
}

/* resize [, crop]: decode what the (windowed) resize reads.  resize,
 * augment layers, crop: the resize computes the window the first
 * augment op reads (pipeline_window.c). */
static void plan_resize(rfb_pipe_ctx *ctx, const rfb_pipeline *p, int s, int w,
			int h, const struct rfb_pipe_key *key, struct plan *pl)
{
	const struct rfb_layer *l = &p->layers[s];
	struct rfb_rect win = { 0, 0, l->height, l->width }, crop;
	int x0, x1, y0, y1, d, folded = 1, out_w, out_h;
	double sx, sy, box[4];

	if (l->shorter && rfb_resize_shorter(w, h, l->shorter, l->max_size,
					     &win.width, &win.height, NULL))
		return;
	if (win.width == w && win.height == h)
		return; /* an identity resize: nothing to fold */
	out_w = win.width;
	out_h = win.height;
	/* rfbi_layer_crop_rect fills its rectangle even when it says "outside":
	 * win must not get a crop that pads */
	if (s + 1 < p->nlayers &&
	    rfbi_layer_crop_rect(&p->layers[s + 1], s + 1, out_w, out_h, key, &crop))
		folded = 2, win = crop;
	else if (rfbi_win_plan_make(p, s + 1, out_w, out_h, key, &pl->win))
		pl->windowed = 1, win = pl->win.in;
	sx = (double)w / out_w;
	sy = (double)h / out_h;
	source_span(sx, l->interp, win.left, win.width, w, &x0, &x1);
	source_span(sy, l->interp, win.top, win.height, h, &y0, &y1);
	d = pick_denom(ctx, l, w, h, x1 - x0, y1 - y0, win.width, win.height);
	/* the whole image at full size: nothing to gain from a region, but
	 * a band resize still saves storing the decoded image whole */
	if (d == 1 && folded == 1 && win.width == out_w && win.height == out_h &&
	    (!band_worth(ctx, w, h) || l->interp == RFB_INTERP_NEAREST))
		return;
	if (rfb_decode_map_region(w, h, d, x0, y0, x1 - x0, y1 - y0, &pl->opts, box))
		return;
	pl->folded = folded;
	pl->finish = FIN_MAPPED;
	pl->interp = l->interp;
	pl->ax = (struct rfb_resize_axis){ 0.0, sx / d, win.left, pl->opts.x };
	pl->ay = (struct rfb_resize_axis){ 0.0, sy / d, win.top, pl->opts.y };
	pl->out_w = win.width;
	pl->out_h = win.height;
	pl->win_x = win.left;
	pl->win_y = win.top;
}

/* rrcrop: decode the drawn rectangle, resize it from its exact box. */
static void plan_rrcrop(rfb_pipe_ctx *ctx, const struct rfb_layer *l, int s,
		       int w, int h, const struct rfb_pipe_key *key,
		       struct plan *pl)
{
	struct rfb_rect r;
	rfb_rng rng;
	double box[4];
	int d;

	rfbi_layer_rng(key, s, &rng);
	rfb_rrcrop_rect(&rng, w, h, l->scale[0], l->scale[1], l->ratio[0],
			l->ratio[1], &r);
	d = pick_denom(ctx, l, w, h, r.width, r.height, l->width, l->height);
	if (rfb_decode_map_region(w, h, d, r.left, r.top, r.width, r.height,
				  &pl->opts, box))
		return;
	pl->folded = 1;
	pl->finish = FIN_BOX;
	pl->box = (struct rfb_resize_box){ box[0], box[1], box[2], box[3] };
	pl->out_w = l->width;
	pl->out_h = l->height;
	pl->interp = l->interp;
}

/* Fill pl for the layers from s on; pl->folded stays 0 when nothing
 * can be folded (then the whole image is decoded at full size). */
static void make_plan(rfb_pipe_ctx *ctx, const rfb_pipeline *p, int s, int w,
		      int h, const struct rfb_pipe_key *key, struct plan *pl)
{
	const struct rfb_layer *l = s < p->nlayers ? &p->layers[s] : NULL;
	struct rfb_rect r;

	if (!l || !ctx->fast_decode)
		return;
	if (l->kind == RFB_F_RESIZE) {
		plan_resize(ctx, p, s, w, h, key, pl);
	} else if (l->kind == RFB_F_RRCROP) {
		plan_rrcrop(ctx, l, s, w, h, key, pl);
	} else if (rfbi_layer_crop_rect(l, s, w, h, key, &r)) {
		double box[4];
		if (rfb_decode_map_region(w, h, 1, r.left, r.top, r.width,
					  r.height, &pl->opts, box) == 0)
			pl->folded = 1;
	} else if (rfbi_win_plan_make(p, s, w, h, key, &pl->win)) {
		/* augment layers first: decode the window they read */
		double box[4];
		r = pl->win.in;
		pl->windowed = 1;
		if (rfb_decode_map_region(w, h, 1, r.left, r.top, r.width,
					  r.height, &pl->opts, box) == 0) {
			pl->win_x = r.left;
			pl->win_y = r.top;
		}
	}
}

/* ---- running ---- */

static int finish_plan(struct rfb_run *r, const struct plan *pl, rfb_err *err)
{
	rfb_image dst;
	int slot, rc;

	if (pl->finish == FIN_NONE)
		return 0;
	/* its rows are resized first: an intermediate of out_w x the rows */
	if (pl->out_w != r->cur.width &&
	    (rc = rfbi_run_check_pixels(r, pl->out_w, r->cur.height,
					"resize intermediate", err)))
		return rc;
	rc = rfbi_run_target(r, pl->out_w, pl->out_h, r->cur.channels, &dst, &slot,
			    err);
	if (rc)
		return rc;
	if (pl->finish == FIN_MAPPED)
		rc = rfb_resize_mapped(r->ctx->rz, &r->cur, &pl->ax, &pl->ay, &dst,
				       pl->interp, err);
	else
		rc = rfb_resize_box(r->ctx->rz, &r->cur, &pl->box, &dst,
				    pl->interp, err);
	if (!rc)
		rfbi_run_take(r, &dst, slot);
	return rc;
}

/* Decoding in bands straight into the folded resize. */
struct band_job {
	struct rfb_run *r;
	const struct plan *pl;
	rfb_image dst;
	int slot;
	int started;
};

/* The decoder's callback: the first band starts the resize (its channel
 * count is the decode's), every band goes through its horizontal pass. */
static int on_band(void *arg, const rfb_image *rows, int y, rfb_err *err)
{
	struct band_job *j = arg;
	const struct plan *pl = j->pl;
	rfb_resizer *rz = j->r->ctx->rz;
	int rc;

	if (!j->started) {
		rc = rfbi_run_target(j->r, pl->out_w, pl->out_h, rows->channels,
				    &j->dst, &j->slot, err);
		if (!rc && pl->finish == FIN_MAPPED)
			rc = rfb_resize_bands_begin(rz, pl->opts.width, pl->opts.height,
						    rows->channels, &pl->ax, &pl->ay,
						    &j->dst, pl->interp, err);
		else if (!rc)
			rc = rfb_resize_bands_begin_box(rz, pl->opts.width,
							pl->opts.height, rows->channels,
							&pl->box, &j->dst, pl->interp,
							err);
		if (rc)
			return rc;
		j->started = 1;
	}
	return rfb_resize_bands_rows(rz, rows, y, err);
}

/* Decode and finish the plan in one go (pl->finish set, a region, not
 * nearest): the decoded image is never stored whole.  cur becomes the
 * folded layers' output; *decoded gets the decode's size and channels. */
static int decode_bands(rfb_decoder *dec, struct rfb_run *r,
			const struct plan *pl, rfb_image *decoded, rfb_err *err)
{
	struct band_job j = { r, pl, { 0 }, 0, 0 };
	int rc = rfb_decode_pixels_bands(dec, &pl->opts, on_band, &j, err);

	if (!rc)
		rc = rfb_resize_bands_end(r->ctx->rz, err);
	if (rc)
		return rc;
	*decoded = (rfb_image){ NULL, 0, pl->opts.width, pl->opts.height,
				j.dst.channels };
	rfbi_run_take(r, &j.dst, j.slot);
	return 0;
}

static int can_band(const rfb_pipe_ctx *ctx, const struct plan *pl)
{
	return pl->finish != FIN_NONE && pl->interp != RFB_INTERP_NEAREST &&
	       pl->opts.width > 0 && pl->opts.height > 0 &&
	       band_worth(ctx, pl->opts.width, pl->opts.height);
}

static void record(struct rfb_pipe_decode *last, const struct rfb_jpeg_info *info,
		   const struct plan *pl, const rfb_image *img)
{
	last->image_width = info->width;
	last->image_height = info->height;
	last->scale_denom = pl->opts.scale_denom ? pl->opts.scale_denom : 1;
	last->x = pl->opts.x;
	last->y = pl->opts.y;
	last->width = img->width;
	last->height = img->height;
	last->layers_folded = pl->folded;
}

/* A PNG: decoded whole (libpng has no region or scaled decoding), gray
 * kept as one channel standing for RGB, then every layer. */
static int run_png(rfb_pipe_ctx *ctx, const rfb_pipeline *p, const void *data,
		   size_t len, const struct rfb_pipe_key *key,
		   const struct rfb_pipe_dest *dest, struct rfb_pipe_out *out,
		   rfb_err *err)
{
	struct rfb_run r = { ctx, key, { 0 }, 0, 0, NULL, 0, 0, 0, 0, { 0 }, NULL, 0 };
	int rc = rfb_png_decode(data, len, ctx->max_pixels, &r.cur, &ctx->buf[0],
				err);

	if (rc)
		return rc;
	r.gray3 = r.cur.channels == 1;
	rfbi_run_ask_dest(&r, p, r.cur.width, r.cur.height, 3, dest);
	return rfbi_run_layers(&r, p, 0, out, err);
}

static int run_jpeg(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
		    const void *data, size_t len,
		    const struct rfb_pipe_key *key,
		    const struct rfb_pipe_dest *dest, struct rfb_pipe_out *out,
		    rfb_err *err)
{
	rfb_decoder *dec = decoder(ctx, err);
	struct rfb_run r = { ctx, key, { 0 }, 0, 0, NULL, 0, 0, 0, 0, { 0 }, NULL, 0 };
	struct rfb_jpeg_info info;
	struct plan pl;
	int start = 0, rc;

	if (!dec)
		return err ? err->code : RFB_ENOMEM;
	memset(&pl, 0, sizeof pl);
	pl.opts.max_pixels = ctx->max_pixels;
	/* torchvision's loader gives RGB; a leading gray filter is PIL's
	 * convert("L") of that, which the decoder produces directly.  A
	 * grayscale JPEG's RGB is its gray channel three times: it stays one
	 * channel (gray3) until the output. */
	pl.opts.color = RFB_DECODE_KEEP;
	pl.opts.flags = RFB_DECODE_VIEW; /* a region is used where decoded */
	if (p->nlayers > 0 && (p->layers[0].kind == RFB_F_GRAY ||
			       p->layers[0].kind == RFB_F_RGB)) {
		start = 1;
		if (p->layers[0].kind == RFB_F_GRAY)
			pl.opts.color = RFB_DECODE_GRAY;
	}
	rc = rfb_decode_header(dec, data, len, &pl.opts, &info, err);
	if (rc)
		return rc;
	rfbi_run_ask_dest(&r, p, info.width, info.height, 3, dest);
	make_plan(ctx, p, start, info.width, info.height, key, &pl);
	if (can_band(ctx, &pl)) {
		rfb_image decoded;
		rc = decode_bands(dec, &r, &pl, &decoded, err);
		if (rc)
			return rc;
		record(&ctx->last, &info, &pl, &decoded);
	} else {
		rc = rfb_decode_pixels(dec, &pl.opts, &r.cur, &ctx->buf[0], err);
		if (rc)
			return rc;
		record(&ctx->last, &info, &pl, &r.cur);
		rc = finish_plan(&r, &pl, err);
	}
	r.gray3 = pl.opts.color == RFB_DECODE_KEEP && r.cur.channels == 1;
	if (pl.windowed) {
		/* the window plan starts on what the plan made: the window
		 * when the resize was folded, else the whole image */
		r.win = &pl.win;
		r.win_x = pl.win_x;
		r.win_y = pl.win_y;
	}
	return rc ? rc : rfbi_run_layers(&r, p, start + pl.folded, out, err);
}

int rfb_pipe_run_jpeg_into(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
			   const void *data, size_t len,
			   const struct rfb_pipe_key *key,
			   const struct rfb_pipe_dest *dest,
			   struct rfb_pipe_out *out, rfb_err *err)
{
	if (rfb_png_sniff(data, len))
		return run_png(ctx, p, data, len, key, dest, out, err);
	return run_jpeg(ctx, p, data, len, key, dest, out, err);
}

int rfb_pipe_run_jpeg(rfb_pipe_ctx *ctx, const rfb_pipeline *p,
		      const void *data, size_t len,
		      const struct rfb_pipe_key *key, struct rfb_pipe_out *out,
		      rfb_err *err)
{
	return rfb_pipe_run_jpeg_into(ctx, p, data, len, key, NULL, out, err);
}
