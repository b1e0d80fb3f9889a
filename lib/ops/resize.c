/*
 * resize.c - PIL-exact resizing (see resize.h).
 *
 * Bilinear/bicubic follow Pillow 9.4 src/libImaging/Resample.c: for each
 * output pixel a run of source pixels [xmin, xmin + n) and weights
 * filter((x - center + 0.5) / filterscale) normalised to sum 1, rounded
 * to PRECISION_BITS fixed point (half away from zero); the horizontal
 * pass runs first on the rows the vertical pass needs, each pass adds
 * 1 << (PRECISION_BITS - 1) and clips (sum >> PRECISION_BITS) to 0..255.
 * Nearest follows Geometry.c's ImagingScaleAffine: the source coordinate
 * starts at offset + scale / 2 and is accumulated in double, then
 * truncated.  Same operations in the same order give the same bits.
 *
 * The horizontal pass works row by row, so it can run on the source in
 * bands as they arrive (rfb_resize_bands_*, used by the JPEG decode to
 * resize rows while they are in the cache) with the same result.  The
 * AVX2 kernels (resize_avx2.c) are chosen at run time; the scalar ones
 * here and in resize_internal.h are the reference they are tested with.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/resize.h"
#include "resize_internal.h"

#define CACHE_SLOTS 6

struct rfb_resizer {
	struct coeffs slot[CACHE_SLOTS];
	unsigned long clock;
	double *pre;           /* one output pixel's weights before rounding */
	size_t pre_cap;
	rfb_imgbuf tmp;        /* horizontally resampled rows */
	rfb_imgbuf strip;      /* the AVX2 horizontal pass's transposed rows */
	int simd;              /* enum rfb_resize_kernels */
	struct bands {         /* rfb_resize_bands_*: a resize under way */
		int active;
		const struct coeffs *cx, *cy;
		int need_h, need_v;
		int src_w, src_h, channels;
		int row0, row1;    /* source rows the vertical pass reads */
		int next;          /* the next source row expected */
		rfb_image dst, tmp;/* tmp: rows [row0, row1) after the
				    * horizontal pass (dst when there is
				    * no vertical pass) */
	} bands;
};

rfb_resizer *rfb_resizer_new(rfb_err *err)
{
	rfb_resizer *rz = calloc(1, sizeof *rz);

	if (!rz)
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory for a resizer");
	else
		rz->simd = rfbi_resize_have_avx2();
	return rz;
}

int rfb_resizer_set_simd(rfb_resizer *rz, int on)
{
	if (!on || !rfbi_resize_have_avx2())
		rz->simd = RFB_RESIZE_SCALAR;
	else
		rz->simd = on == RFB_RESIZE_MADD ? RFB_RESIZE_MADD : RFB_RESIZE_AVX2;
	return rz->simd; /* all kernels use the same tables */
}

void rfb_resizer_free(rfb_resizer *rz)
{
	if (!rz)
		return;
	for (int i = 0; i < CACHE_SLOTS; i++) {
		free(rz->slot[i].bounds);
		free(rz->slot[i].k);
		free(rz->slot[i].kp);
	}
	free(rz->pre);
	rfb_imgbuf_free(&rz->tmp);
	rfb_imgbuf_free(&rz->strip);
	free(rz);
}

const struct rfb_enum_name rfb_interp_names[] = {
	{ RFB_INTERP_NEAREST, "nearest" },
	{ RFB_INTERP_BILINEAR, "bilinear" },
	{ RFB_INTERP_BICUBIC, "bicubic" },
	{ 0, NULL },
};

const char *rfb_interp_name(enum rfb_interp interp)
{
	return rfb_enum_name(rfb_interp_names, (int)interp);
}

int rfb_interp_parse(const char *name)
{
	return rfb_enum_parse(rfb_interp_names, name);
}

/* ---- filters (Resample.c) ---- */

static double bilinear_filter(double x)
{
	if (x < 0.0)
		x = -x;
	if (x < 1.0)
		return 1.0 - x;
	return 0.0;
}

static double bicubic_filter(double x)
{
	const double a = -0.5;

	if (x < 0.0)
		x = -x;
	if (x < 1.0)
		return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
	if (x < 2.0)
		return (((x - 5) * x + 8) * x - 4) * a;
	return 0.0;
}

static double filter_support(enum rfb_interp interp)
{
	return interp == RFB_INTERP_BICUBIC ? 2.0 : 1.0;
}

double rfb_resize_support(enum rfb_interp interp, double scale)
{
	if (interp == RFB_INTERP_NEAREST)
		return 0.5 * (scale > 1.0 ? scale : 1.0);
	return filter_support(interp) * (scale > 1.0 ? scale : 1.0);
}

/* ---- coefficient tables ---- */

static int grow(void **p, size_t *cap, size_t n, size_t elem, rfb_err *err)
{
	size_t bytes;
	void *q;

	if (n <= *cap)
		return 0;
	if (rfb_mul_size(n, elem, &bytes))
		return rfb_err_set(err, RFB_ELIMIT, NULL, "resize table too large");
	q = realloc(*p, bytes);
	if (!q)
		return rfb_err_set(err, RFB_ENOMEM, NULL,
				   "out of memory for a resize table");
	*p = q;
	*cap = n;
	return 0;
}

/* Weights of one output pixel centred on center (Resample.c's
 * precompute_coeffs loop body), rounded into k[0..ksize). */
static void pixel_weights(struct coeffs *c, int xx, double center,
			  double support, double filterscale, double *pre)
{
	double (*filter)(double) = c->interp == RFB_INTERP_BICUBIC
					   ? bicubic_filter : bilinear_filter;
	double ww = 0.0, ss = 1.0 / filterscale;
	int xmin = (int)(center - support + 0.5);
	int xmax = (int)(center + support + 0.5);
	int32_t *k = c->k + (size_t)xx * c->kstride;

	/* like PIL's (int) casts, truncation toward zero; then the source
	 * pixels that exist are [origin, origin + in_size) */
	if (xmin < c->origin)
		xmin = c->origin;
	if (xmax > c->origin + c->in_size)
		xmax = c->origin + c->in_size;
	xmax -= xmin;
	if (xmax < 0)
		xmax = 0;
	for (int x = 0; x < xmax; x++) {
		double w = filter((x + xmin - center + 0.5) * ss);
		pre[x] = w;
		ww += w;
	}
	for (int x = 0; x < c->kstride; x++) {
		double v = x < xmax ? pre[x] : 0.0;
		if (x < xmax && ww != 0.0)
			v /= ww;
		k[x] = v < 0 ? (int32_t)(-0.5 + v * (1 << PRECISION_BITS))
			     : (int32_t)(0.5 + v * (1 << PRECISION_BITS));
	}
	c->bounds[2 * xx] = xmin - c->origin;
	c->bounds[2 * xx + 1] = xmax;
}

/*
 * The weights in the form the pmaddwd kernel takes: each 22-bit weight
 * k = kh 2^11 + kl with kh = k >> 11 (signed, floor) and kl = k & 2047
 * (0 .. 2047), both int16, so that for samples p, q of taps t, t + 1
 *   p k_t + q k_(t+1) = 2^11 (p kh_t + q kh_(t+1)) + (p kl_t + q kl_(t+1))
 * exactly; pmaddwd forms each bracket from int16 pairs (p, q) in int32
 * (|p kh| <= 255 * 32767: no overflow, no saturation).  Normalised
 * weights stay well inside int16 after >> 11 (a PIL weight is at most
 * about 1.13 x 2^22, bicubic at an edge), but a table where one would
 * not gets madd = 0 and the pmulld kernel.  (The pmaddwd kernel is not
 * the default: see resize_avx2.c.)
 */
static int split_weights(struct coeffs *c, rfb_err *err)
{
	size_t nk = (size_t)c->out_size * (size_t)c->kstride + 8; /* as k */
	int rc = grow((void **)&c->kp, &c->kp_cap, nk, sizeof *c->kp, err);

	if (rc)
		return rc;
	c->kp_valid = 1;
	c->madd = 1;
	for (size_t i = 0; i + 1 < nk; i += 2) {
		int32_t h0 = c->k[i] >> MADD_LOW_BITS, h1 = c->k[i + 1] >> MADD_LOW_BITS;
		uint32_t l0 = (uint32_t)c->k[i] & ((1u << MADD_LOW_BITS) - 1);
		uint32_t l1 = (uint32_t)c->k[i + 1] & ((1u << MADD_LOW_BITS) - 1);
		if (h0 < INT16_MIN || h0 > INT16_MAX || h1 < INT16_MIN ||
		    h1 > INT16_MAX)
			c->madd = 0;
		c->kp[i] = (int32_t)(((uint32_t)h0 & 0xffffu) | ((uint32_t)h1 << 16));
		c->kp[i + 1] = (int32_t)(l0 | l1 << 16);
	}
	return 0;
}

static int compute_filter_coeffs(rfb_resizer *rz, struct coeffs *c,
				 rfb_err *err)
{
	double filterscale = c->scale < 1.0 ? 1.0 : c->scale;
	double support = filter_support(c->interp) * filterscale;
	double ks = ceil(support) * 2 + 1;
	size_t nk;
	int rc;

	if (ks > 1e6)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "resize factor %g too large", c->scale);
	c->ksize = (int)ks;
	c->kstride = (c->ksize + 7) & ~7; /* zero-padded for 8-lane loads */
	if (rfb_mul_size((size_t)c->out_size, (size_t)c->kstride, &nk) ||
	    rfb_add_size(nk, 8, &nk)) /* the last pixel's loads may run over */
		return rfb_err_set(err, RFB_ELIMIT, NULL, "resize table too large");
	rc = grow((void **)&c->k, &c->k_cap, nk, sizeof *c->k, err);
	if (!rc)
		rc = grow((void **)&c->bounds, &c->bounds_cap,
			  2 * (size_t)c->out_size, sizeof *c->bounds, err);
	if (!rc)
		rc = grow((void **)&rz->pre, &rz->pre_cap, (size_t)c->kstride,
			  sizeof *rz->pre, err);
	if (rc)
		return rc;
	memset(c->k + nk - 8, 0, 8 * sizeof *c->k);
	for (int xx = 0; xx < c->out_size; xx++) {
		double center = c->offset + (xx + c->first + 0.5) * c->scale;
		pixel_weights(c, xx, center, support, filterscale, rz->pre);
	}
	c->kp_valid = 0; /* split_weights() when the pmaddwd kernel needs it */
	return 0;
}

/* Nearest: bounds[2k] = source index (-1 when outside), accumulated the
 * way ImagingScaleAffine does. */
static int compute_nearest(struct coeffs *c, rfb_err *err)
{
	double pos = c->offset + c->scale * 0.5;
	int rc = grow((void **)&c->bounds, &c->bounds_cap,
		      2 * (size_t)c->out_size, sizeof *c->bounds, err);

	if (rc)
		return rc;
	c->ksize = c->kstride = 0;
	for (int i = 0; i < c->first + c->out_size; i++) {
		if (i >= c->first) {
			int x = pos < 0.0 ? -1 : (int)pos - c->origin;
			c->bounds[2 * (i - c->first)] =
				x >= 0 && x < c->in_size ? x : -1;
			c->bounds[2 * (i - c->first) + 1] = 1;
		}
		pos += c->scale;
	}
	return 0;
}

static int same_key(const struct coeffs *c, int in_size, int out_size,
		    const struct rfb_resize_axis *a, int interp)
{
	return c->valid && c->in_size == in_size && c->out_size == out_size &&
	       c->first == a->first && c->origin == a->origin &&
	       c->interp == interp &&
	       c->offset == a->offset && c->scale == a->scale;
}

/* The cached table for these parameters, computing it into the least
 * recently used slot on a miss.  NULL with err filled on failure. */
static struct coeffs *get_coeffs(rfb_resizer *rz, int in_size, int out_size,
				 const struct rfb_resize_axis *a, int interp,
				 rfb_err *err)
{
	struct coeffs *c = &rz->slot[0];
	int rc;

	for (int i = 0; i < CACHE_SLOTS; i++) {
		if (same_key(&rz->slot[i], in_size, out_size, a, interp)) {
			rz->slot[i].used = ++rz->clock;
			return &rz->slot[i];
		}
		if (rz->slot[i].used < c->used)
			c = &rz->slot[i];
	}
	c->valid = 0;
	c->kp_valid = 0;
	c->in_size = in_size;
	c->out_size = out_size;
	c->first = a->first;
	c->origin = a->origin;
	c->interp = interp;
	c->offset = a->offset;
	c->scale = a->scale;
	rc = interp == RFB_INTERP_NEAREST ? compute_nearest(c, err)
					  : compute_filter_coeffs(rz, c, err);
	if (rc)
		return NULL;
	c->valid = 1;
	c->used = ++rz->clock;
	return c;
}

/* ---- passes ---- */

/* Horizontal pass over source rows [y0, y0 + rows) into dst's rows. */
static int hpass(rfb_resizer *rz, const rfb_image *src, int y0, int rows,
		 const struct coeffs *c, rfb_image *dst, rfb_err *err)
{
	if (rz->simd) {
		size_t need = rfbi_resize_hpass_scratch(src->width, c, dst->width);
		int rc = rfb_imgbuf_reserve(&rz->strip, need, err);
		if (rc)
			return rc;
		rfbi_resize_hpass_avx2(src, y0, rows, c,
				       rz->simd == RFB_RESIZE_MADD && c->madd, dst,
				       rz->strip.data);
		return 0;
	}
	for (int y = 0; y < rows; y++) {
		const unsigned char *in = src->data + (size_t)(y0 + y) * src->stride;
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		if (src->channels == 3)
			for (int xx = 0; xx < c->out_size; xx++)
				resize_px3(in, out + 3 * xx, c, xx);
		else
			for (int xx = 0; xx < c->out_size; xx++)
				out[xx] = resize_px1(in, c, xx);
	}
	return 0;
}

/* Vertical pass; src row 0 is source row row0 of the table's bounds. */
static void vpass(const rfb_resizer *rz, const rfb_image *src, int row0,
		  const struct coeffs *c, rfb_image *dst)
{
	size_t len = (size_t)dst->width * dst->channels;

	for (int yy = 0; yy < c->out_size; yy++) {
		const unsigned char *in = src->data +
			(size_t)(c->bounds[2 * yy] - row0) * src->stride;
		const int32_t *k = c->k + (size_t)yy * c->kstride;
		unsigned char *out = dst->data + (size_t)yy * dst->stride;
		int n = c->bounds[2 * yy + 1];
		if (rz->simd)
			rfbi_resize_vrow_avx2(in, src->stride, n, k, out, len);
		else
			resize_vrow(in, src->stride, n, k, out, len);
	}
}

static void nearest_pass(const rfb_image *src, const struct coeffs *cx,
			 const struct coeffs *cy, rfb_image *dst)
{
	int ch = src->channels;

	for (int yy = 0; yy < dst->height; yy++) {
		unsigned char *out = dst->data + (size_t)yy * dst->stride;
		int sy = cy->bounds[2 * yy];
		if (sy < 0) {
			memset(out, 0, (size_t)dst->width * ch);
			continue;
		}
		const unsigned char *in = src->data + (size_t)sy * src->stride;
		for (int xx = 0; xx < dst->width; xx++) {
			int sx = cx->bounds[2 * xx];
			for (int k = 0; k < ch; k++)
				out[xx * ch + k] = sx < 0 ? 0 : in[sx * ch + k];
		}
	}
}

/* ---- entry points ---- */

static int identity(const struct rfb_resize_axis *a, int in, int out)
{
	return in == out && a->offset == 0.0 && a->scale == 1.0 &&
	       a->first == 0 && a->origin == 0;
}

static int check_shapes(const rfb_image *src, const rfb_image *dst,
			enum rfb_interp interp, rfb_err *err)
{
	if (!rfb_interp_name(interp))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "unknown interpolation %d", (int)interp);
	if (src->channels != dst->channels ||
	    (src->channels != 1 && src->channels != 3) || src->width < 1 ||
	    src->height < 1 || dst->width < 1 || dst->height < 1)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "resize: bad shapes %dx%dx%d -> %dx%dx%d",
				   src->width, src->height, src->channels,
				   dst->width, dst->height, dst->channels);
	return 0;
}

static int filter_resize(rfb_resizer *rz, const rfb_image *src,
			 const struct coeffs *cx, const struct coeffs *cy,
			 int need_h, int need_v, rfb_image *dst, rfb_err *err)
{
	int row0 = cy->bounds[0];
	int row1 = cy->bounds[2 * (cy->out_size - 1)] +
		   cy->bounds[2 * (cy->out_size - 1) + 1];
	rfb_image tmp;
	int rc;

	if (!need_h) {
		if (need_v)
			vpass(rz, src, 0, cy, dst);
		else
			rfb_image_copy(dst, src);
		return 0;
	}
	if (!need_v)
		return hpass(rz, src, 0, dst->height, cx, dst, err);
	rc = rfb_image_alloc(&tmp, &rz->tmp, dst->width, row1 - row0,
			     src->channels, err);
	if (!rc)
		rc = hpass(rz, src, row0, row1 - row0, cx, &tmp, err);
	if (!rc)
		vpass(rz, &tmp, row0, cy, dst);
	return rc;
}

/* Check a mapped resize of src (its size and channels) into dst and get
 * its tables. */
static int mapped_tables(rfb_resizer *rz, const rfb_image *src,
			 const struct rfb_resize_axis *ax,
			 const struct rfb_resize_axis *ay, const rfb_image *dst,
			 enum rfb_interp interp, const struct coeffs **cx,
			 const struct coeffs **cy, rfb_err *err)
{
	struct coeffs *x;
	int rc = check_shapes(src, dst, interp, err);

	if (rc)
		return rc;
	if (!(ax->scale > 0.0) || !(ay->scale > 0.0) || !isfinite(ax->offset) ||
	    !isfinite(ay->offset) || !isfinite(ax->scale) || !isfinite(ay->scale))
		return rfb_err_set(err, RFB_EINVAL, NULL, "resize: bad mapping");
	x = get_coeffs(rz, src->width, dst->width, ax, interp, err);
	if (!x)
		return err ? err->code : RFB_ENOMEM;
	x->used = ++rz->clock;
	*cx = x;
	*cy = get_coeffs(rz, src->height, dst->height, ay, interp, err);
	if (!*cy)
		return err ? err->code : RFB_ENOMEM;
	/* only the horizontal pass has a pmaddwd kernel */
	if (rz->simd == RFB_RESIZE_MADD && interp != RFB_INTERP_NEAREST &&
	    !x->kp_valid)
		return split_weights(x, err);
	return 0;
}

int rfb_resize_mapped(rfb_resizer *rz, const rfb_image *src,
		      const struct rfb_resize_axis *ax,
		      const struct rfb_resize_axis *ay, rfb_image *dst,
		      enum rfb_interp interp, rfb_err *err)
{
	const struct coeffs *cx, *cy;
	int rc = mapped_tables(rz, src, ax, ay, dst, interp, &cx, &cy, err);

	if (rc)
		return rc;
	if (interp == RFB_INTERP_NEAREST) {
		nearest_pass(src, cx, cy, dst);
		return 0;
	}
	return filter_resize(rz, src, cx, cy,
			     !identity(ax, src->width, dst->width),
			     !identity(ay, src->height, dst->height), dst, err);
}

int rfb_resize(rfb_resizer *rz, const rfb_image *src, rfb_image *dst,
	       enum rfb_interp interp, rfb_err *err)
{
	return rfb_resize_window(rz, src, dst->width, dst->height, 0, 0, dst,
				 interp, err);
}

int rfb_resize_window(rfb_resizer *rz, const rfb_image *src, int full_w,
		      int full_h, int left, int top, rfb_image *dst,
		      enum rfb_interp interp, rfb_err *err)
{
	struct rfb_resize_axis ax = { 0.0, 0.0, left, 0 }, ay = { 0.0, 0.0, top, 0 };

	if (full_w < 1 || full_h < 1 || left < 0 || top < 0 ||
	    left > full_w - dst->width || top > full_h - dst->height)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "resize window %dx%d+%d+%d outside %dx%d",
				   dst->width, dst->height, left, top, full_w,
				   full_h);
	ax.scale = (double)src->width / full_w;
	ay.scale = (double)src->height / full_h;
	return rfb_resize_mapped(rz, src, &ax, &ay, dst, interp, err);
}

/* The mapping of a box resize of a src_w x src_h source into dst. */
static int box_axes(const struct rfb_resize_box *box, int src_w, int src_h,
		    const rfb_image *dst, struct rfb_resize_axis *ax,
		    struct rfb_resize_axis *ay, rfb_err *err)
{
	if (!(box->x0 >= 0.0 && box->y0 >= 0.0 && box->x1 > box->x0 &&
	      box->y1 > box->y0 && box->x1 <= src_w && box->y1 <= src_h))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "resize box (%g,%g)-(%g,%g) outside %dx%d",
				   box->x0, box->y0, box->x1, box->y1, src_w,
				   src_h);
	*ax = (struct rfb_resize_axis){ box->x0, (box->x1 - box->x0) / dst->width, 0, 0 };
	*ay = (struct rfb_resize_axis){ box->y0, (box->y1 - box->y0) / dst->height, 0, 0 };
	return 0;
}

int rfb_resize_box(rfb_resizer *rz, const rfb_image *src,
		   const struct rfb_resize_box *box, rfb_image *dst,
		   enum rfb_interp interp, rfb_err *err)
{
	struct rfb_resize_axis ax, ay;
	int rc = box_axes(box, src->width, src->height, dst, &ax, &ay, err);

	return rc ? rc : rfb_resize_mapped(rz, src, &ax, &ay, dst, interp, err);
}

/* ---- bands ---- */

int rfb_resize_bands_begin(rfb_resizer *rz, int src_w, int src_h,
			   int channels, const struct rfb_resize_axis *ax,
			   const struct rfb_resize_axis *ay, rfb_image *dst,
			   enum rfb_interp interp, rfb_err *err)
{
	struct bands *b = &rz->bands;
	rfb_image src = { NULL, 0, src_w, src_h, channels };
	int rc;

	b->active = 0;
	if (interp == RFB_INTERP_NEAREST)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "resize: nearest has no band form");
	rc = mapped_tables(rz, &src, ax, ay, dst, interp, &b->cx, &b->cy, err);
	if (rc)
		return rc;
	b->need_h = !identity(ax, src_w, dst->width);
	b->need_v = !identity(ay, src_h, dst->height);
	b->src_w = src_w, b->src_h = src_h, b->channels = channels;
	b->next = 0;
	b->dst = *dst;
	if (!b->need_v) {
		/* the horizontal pass (or a copy) writes dst's rows */
		b->row0 = 0;
		b->row1 = dst->height;
		b->tmp = *dst;
	} else {
		b->row0 = b->cy->bounds[0];
		b->row1 = b->cy->bounds[2 * (b->cy->out_size - 1)] +
			  b->cy->bounds[2 * (b->cy->out_size - 1) + 1];
		rc = rfb_image_alloc(&b->tmp, &rz->tmp, dst->width,
				     b->row1 - b->row0, channels, err);
		if (rc)
			return rc;
	}
	b->active = 1;
	return 0;
}

int rfb_resize_bands_begin_box(rfb_resizer *rz, int src_w, int src_h,
			       int channels, const struct rfb_resize_box *box,
			       rfb_image *dst, enum rfb_interp interp,
			       rfb_err *err)
{
	struct rfb_resize_axis ax, ay;
	int rc = box_axes(box, src_w, src_h, dst, &ax, &ay, err);

	rz->bands.active = 0;
	return rc ? rc : rfb_resize_bands_begin(rz, src_w, src_h, channels, &ax,
						&ay, dst, interp, err);
}

int rfb_resize_bands_rows(rfb_resizer *rz, const rfb_image *rows, int y,
			  rfb_err *err)
{
	struct bands *b = &rz->bands;
	int lo, hi;
	rfb_image out;

	if (!b->active || y != b->next || rows->width != b->src_w ||
	    rows->channels != b->channels || rows->height < 1 ||
	    rows->height > b->src_h - y)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "resize: band of %d rows at %d out of order",
				   rows->height, y);
	b->next += rows->height;
	/* the rows of this band the vertical pass reads */
	lo = y > b->row0 ? y : b->row0;
	hi = b->next < b->row1 ? b->next : b->row1;
	if (lo >= hi)
		return 0;
	out = b->tmp;
	out.data += (size_t)(lo - b->row0) * out.stride;
	out.height = hi - lo;
	if (b->need_h)
		return hpass(rz, rows, lo - y, hi - lo, b->cx, &out, err);
	for (int i = 0; i < hi - lo; i++)
		memcpy(out.data + (size_t)i * out.stride,
		       rows->data + (size_t)(lo - y + i) * rows->stride,
		       (size_t)rows->width * rows->channels);
	return 0;
}

int rfb_resize_bands_end(rfb_resizer *rz, rfb_err *err)
{
	struct bands *b = &rz->bands;

	if (!b->active || b->next != b->src_h)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "resize: bands end at row %d of %d",
				   b->active ? b->next : 0, b->src_h);
	b->active = 0;
	if (b->need_v)
		vpass(rz, &b->tmp, b->row0, b->cy, &b->dst);
	return 0;
}

int rfb_resize_shorter(int in_w, int in_h, int size, int max_size,
		       int *out_w, int *out_h, rfb_err *err)
{
	int64_t shorter = in_w <= in_h ? in_w : in_h;
	int64_t longer = in_w <= in_h ? in_h : in_w;
	int64_t new_short = size, new_long;

	if (in_w < 1 || in_h < 1 || size < 1)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "resize %dx%d to %d: bad size", in_w, in_h,
				   size);
	if (max_size && max_size <= size)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "max_size %d must be greater than size %d",
				   max_size, size);
	/* Python's int(size * long / short): exact integer division here */
	new_long = (int64_t)size * longer / shorter;
	if (max_size && new_long > max_size) {
		new_short = (int64_t)max_size * new_short / new_long;
		new_long = max_size;
	}
	if (new_short < 1)
		new_short = 1;
	if (new_long < 1)
		new_long = 1;
	if (new_long > INT_MAX)
		new_long = INT_MAX;
	/* the size is given back even when too large: the caller names it */
	*out_w = (int)(in_w <= in_h ? new_short : new_long);
	*out_h = (int)(in_w <= in_h ? new_long : new_short);
	if (new_long > RFB_IMAGE_MAX_SIDE || new_short > RFB_IMAGE_MAX_SIDE)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "resize %dx%d to %d: result too large", in_w,
				   in_h, size);
	return 0;
}
