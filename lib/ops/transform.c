/*
 * transform.c - crops with padding, flips, channel conversion and the
 * random rectangle draws of torchvision's RandomCrop, RandomResizedCrop
 * and RandomHorizontalFlip (see transform.h).
 */
#include <math.h>
#include <string.h>

#include "refurb/transform.h"
#include "transform_internal.h"

/* Fill n pixels at p with the per-channel value fill (NULL = 0). */
static void fill_pixels(unsigned char *p, int n, int ch,
			const unsigned char *fill)
{
	if (n <= 0)
		return;
	if (!fill || ch == 1 || (fill[0] == fill[1] && fill[1] == fill[2])) {
		memset(p, fill ? fill[0] : 0, (size_t)n * ch);
		return;
	}
	for (int i = 0; i < n; i++)
		memcpy(p + (size_t)i * ch, fill, (size_t)ch);
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* 0 when dst is r's size with ch channels, else RFB_EINVAL. */
static int check_dst(const rfb_image *dst, const struct rfb_rect *r, int ch,
		     rfb_err *err)
{
	if (dst->width != r->width || dst->height != r->height ||
	    dst->channels != ch)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "crop: destination is %dx%dx%d, not %dx%dx%d",
				   dst->width, dst->height, dst->channels,
				   r->width, r->height, ch);
	return 0;
}

int rfb_crop(const rfb_image *src, const struct rfb_rect *r,
	     const unsigned char *fill, rfb_image *dst, rfb_err *err)
{
	int ch = src->channels, rc;
	/* the columns of r that exist in src, in dst coordinates */
	int x0 = clampi(-r->left, 0, r->width);
	int x1 = clampi(src->width - r->left, x0, r->width);

	if ((rc = check_dst(dst, r, ch, err)))
		return rc;
	for (int y = 0; y < r->height; y++) {
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		int sy = r->top + y;
		if (sy < 0 || sy >= src->height) {
			fill_pixels(out, r->width, ch, fill);
			continue;
		}
		fill_pixels(out, x0, ch, fill);
		if (x1 > x0)
			memcpy(out + (size_t)x0 * ch,
			       rfb_image_px(src, r->left + x0, sy),
			       (size_t)(x1 - x0) * ch);
		fill_pixels(out + (size_t)x1 * ch, r->width - x1, ch, fill);
	}
	return 0;
}

const struct rfb_enum_name rfb_pad_mode_names[] = {
	{ RFB_PAD_CONSTANT, "constant" },
	{ RFB_PAD_EDGE, "edge" },
	{ RFB_PAD_REFLECT, "reflect" },
	{ RFB_PAD_SYMMETRIC, "symmetric" },
	{ 0, NULL },
};

const char *rfb_pad_mode_name(enum rfb_pad_mode mode)
{
	return rfb_enum_name(rfb_pad_mode_names, (int)mode);
}

/*
 * np.pad's source index for position q of an axis of n samples padded
 * by lo and hi (q in [0, lo + n + hi)).  Reflections longer than the
 * image are not periodic: np.pad fills both sides in rounds, each
 * mirroring the part filled so far (a right chunk can repeat values of
 * the left pad), so the rounds are replayed: their number grows with
 * the log of pad / n (the filled part at least doubles every round).
 */
static int np_index(long q, int n, long lo, long hi, enum rfb_pad_mode mode)
{
	long round[64][4], L = lo, R = hi, P = n + lo + hi;
	int rounds = 0, eo = mode == RFB_PAD_SYMMETRIC;

	if (mode == RFB_PAD_EDGE || (mode == RFB_PAD_REFLECT && n == 1))
		return q < lo ? 0 : q >= lo + n ? n - 1 : (int)(q - lo);
	while ((L > 0 || R > 0) && rounds < 64) {
		long E = P - R, old = E - L - (1 - eo);
		long cl = old < L ? old : L, cr = old < R ? old : R;
		round[rounds][0] = L;
		round[rounds][1] = E;
		round[rounds][2] = cl;
		round[rounds][3] = cr;
		rounds++;
		L -= cl;
		R -= cr;
	}
	while (q < lo || q >= lo + n) {
		int t = 0;
		for (; t < rounds; t++) {
			long Lt = round[t][0], Et = round[t][1];
			if (q >= Lt - round[t][2] && q < Lt) {
				q = 2 * Lt - eo - q;
				break;
			}
			if (q >= Et && q < Et + round[t][3]) {
				q = 2 * Et - 2 + eo - q;
				break;
			}
		}
		if (t == rounds)
			return 0; /* not reached: every padded position is filled */
	}
	return (int)(q - lo);
}

/*
 * Source index of coordinate i (src's coordinates) of an axis of n
 * samples padded by lo and hi, of a crop of size t: where the padded
 * axis is shorter than t, RandomCrop's pad_if_needed pads it again by
 * t - padded on both sides (np.pad of the padded image).
 */
static int pad_index(long i, int n, int lo, int hi, int t,
		     enum rfb_pad_mode mode)
{
	long padded = (long)n + lo + hi, ip = i + lo;

	if (ip < 0 || ip >= padded) {
		long d = t > padded ? t - padded : 0;
		ip = np_index(ip + d, (int)padded, d, d, mode);
	}
	return np_index(ip, n, lo, hi, mode);
}

int rfb_crop_padded(const rfb_image *src, const struct rfb_rect *r,
		    const struct rfb_padding *pad, enum rfb_pad_mode mode,
		    const unsigned char *fill, rfb_image *dst, rfb_err *err)
{
	static const struct rfb_padding none = { 0, 0, 0, 0 };
	int ch = src->channels, rc;
	int x0 = clampi(-r->left, 0, r->width);
	int x1 = clampi(src->width - r->left, x0, r->width);

	if (mode == RFB_PAD_CONSTANT)
		return rfb_crop(src, r, fill, dst, err);
	if ((rc = check_dst(dst, r, ch, err)))
		return rc;
	if (!pad)
		pad = &none;
	for (int y = 0; y < r->height; y++) {
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		int sy = pad_index((long)r->top + y, src->height, pad->top,
				   pad->bottom, r->height, mode);
		const unsigned char *row = rfb_image_px(src, 0, sy);
		/* the middle is a copy, only the padded columns are mapped */
		for (int x = 0; x < r->width; x++) {
			if (x == x0 && x1 > x0) {
				memcpy(out + (size_t)x0 * ch,
				       row + (size_t)(r->left + x0) * ch,
				       (size_t)(x1 - x0) * ch);
				x = x1 - 1;
				continue;
			}
			int sx = pad_index((long)r->left + x, src->width,
					   pad->left, pad->right, r->width, mode);
			memcpy(out + (size_t)x * ch, row + (size_t)sx * ch,
			       (size_t)ch);
		}
	}
	return 0;
}

int rfb_rect_inside(const struct rfb_rect *r, int w, int h)
{
	return r->top >= 0 && r->left >= 0 && r->height > 0 && r->width > 0 &&
	       r->top <= h - r->height && r->left <= w - r->width;
}

rfb_image rfb_crop_view(const rfb_image *src, const struct rfb_rect *r)
{
	rfb_image v = *src;

	v.data = rfb_image_px(src, r->left, r->top);
	v.width = r->width;
	v.height = r->height;
	return v;
}

/* One axis of CenterCrop: offset of a crop of t from size. */
static int center_offset(int size, int t)
{
	if (t > size)
		return -((t - size) / 2);
	/* Python's round() rounds half to even, as rint() does by default */
	return (int)rint((size - t) / 2.0);
}

struct rfb_rect rfb_centercrop_rect(int w, int h, int th, int tw)
{
	struct rfb_rect r = { center_offset(h, th), center_offset(w, tw), th, tw };
	return r;
}

int rfb_randcrop_rect(rfb_rng *rng, int w, int h, int th, int tw,
		      const struct rfb_padding *pad, int pad_if_needed,
		      struct rfb_rect *out, rfb_err *err)
{
	long pl = pad ? pad->left : 0, pt = pad ? pad->top : 0;
	long W = (long)w + pl + (pad ? pad->right : 0);
	long H = (long)h + pt + (pad ? pad->bottom : 0);
	long i = 0, j = 0;

	if (pad_if_needed && W < tw) {
		pl += tw - W; /* F.pad(img, [tw - W, 0]): both sides */
		W += 2 * (tw - W);
	}
	if (pad_if_needed && H < th) {
		pt += th - H;
		H += 2 * (th - H);
	}
	if (H < th || W < tw)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "crop %dx%d larger than the (padded) image "
				   "%ldx%ld (resize to at least the crop size "
				   "first, or give the crop pad_if_needed=1)",
				   tw, th, W, H);
	if (H != th || W != tw) {
		i = (long)rfb_rng_below(rng, (uint32_t)(H - th + 1));
		j = (long)rfb_rng_below(rng, (uint32_t)(W - tw + 1));
	}
	out->top = (int)(i - pt);
	out->left = (int)(j - pl);
	out->height = th;
	out->width = tw;
	return 0;
}

static void rrcrop_fallback(int w, int h, double ratio_lo, double ratio_hi,
			    struct rfb_rect *out)
{
	double in_ratio = (double)w / (double)h;
	int cw = w, ch = h;

	if (in_ratio < ratio_lo)
		ch = (int)rint(cw / ratio_lo);
	else if (in_ratio > ratio_hi)
		cw = (int)rint(ch * ratio_hi);
	/* a ratio range far from the image's rounds a side to 0, where
	 * torchvision fails: keep one row or column instead */
	if (ch < 1)
		ch = 1;
	if (cw < 1)
		cw = 1;
	out->top = (h - ch) / 2;
	out->left = (w - cw) / 2;
	out->height = ch;
	out->width = cw;
}

int rfb_rrcrop_rect(rfb_rng *rng, int w, int h, double scale_lo,
		    double scale_hi, double ratio_lo, double ratio_hi,
		    struct rfb_rect *out)
{
	double area = (double)w * (double)h;
	/* torchvision draws in float32 tensors: mimic their rounding */
	float log_lo = logf((float)ratio_lo), log_hi = logf((float)ratio_hi);

	for (int attempt = 0; attempt < 10; attempt++) {
		float s = (float)scale_lo +
			  ((float)scale_hi - (float)scale_lo) *
				  (float)rfb_rng_uniform(rng);
		float lr = log_lo + (log_hi - log_lo) * (float)rfb_rng_uniform(rng);
		double target = area * (double)s, aspect = (double)expf(lr);
		double cw = rint(sqrt(target * aspect));
		double ch = rint(sqrt(target / aspect));

		if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
			out->width = (int)cw;
			out->height = (int)ch;
			out->top = (int)rfb_rng_below(rng, (uint32_t)(h - ch + 1));
			out->left = (int)rfb_rng_below(rng, (uint32_t)(w - cw + 1));
			return 1;
		}
	}
	rrcrop_fallback(w, h, ratio_lo, ratio_hi, out);
	return 0;
}

/* Output pixels [x0, w) of a mirrored row (transform_ssse3.c does a
 * prefix when it can). */
static void flip_row(const unsigned char *in, unsigned char *out, int w, int ch,
		     int x0)
{
	if (ch == 1) {
		for (int x = x0; x < w; x++)
			out[x] = in[w - 1 - x];
		return;
	}
	for (int x = x0; x < w; x++) {
		const unsigned char *p = in + (size_t)(w - 1 - x) * 3;
		out[3 * x] = p[0];
		out[3 * x + 1] = p[1];
		out[3 * x + 2] = p[2];
	}
}

void rfb_hflip(const rfb_image *src, rfb_image *dst)
{
	int simd = rfbi_transform_have_ssse3();

	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src->data + (size_t)y * src->stride;
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		int done = simd ? rfbi_flip_row_ssse3(in, out, src->width,
						     src->channels) : 0;
		flip_row(in, out, src->width, src->channels, done);
	}
}

void rfb_hflip_inplace(rfb_image *img)
{
	int ch = img->channels, simd = rfbi_transform_have_ssse3();

	for (int y = 0; y < img->height; y++) {
		unsigned char *row = img->data + (size_t)y * img->stride, t[3];
		int a = simd ? rfbi_flip_inplace_ssse3(row, img->width, ch) : 0;
		for (int b = img->width - 1 - a; a < b; a++, b--) {
			memcpy(t, row + a * ch, ch == 3 ? 3 : 1);
			memcpy(row + a * ch, row + b * ch, ch == 3 ? 3 : 1);
			memcpy(row + b * ch, t, ch == 3 ? 3 : 1);
		}
	}
}

int rfb_flip_draw(rfb_rng *rng, double p)
{
	return rfb_rng_uniform(rng) < p;
}

static int check_same_size(const rfb_image *src, const rfb_image *dst,
			   int channels, rfb_err *err)
{
	if (src->width != dst->width || src->height != dst->height ||
	    dst->channels != channels)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "channel conversion: %dx%d to %dx%dx%d",
				   src->width, src->height, dst->width,
				   dst->height, dst->channels);
	return 0;
}

int rfb_to_gray(const rfb_image *src, rfb_image *dst, rfb_err *err)
{
	int rc = check_same_size(src, dst, 1, err);

	if (rc)
		return rc;
	if (src->channels == 1) {
		rfb_image_copy(dst, src);
		return 0;
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src->data + (size_t)y * src->stride;
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		for (int x = 0; x < src->width; x++, in += 3)
			out[x] = (unsigned char)((in[0] * 19595 + in[1] * 38470 +
						  in[2] * 7471 + 0x8000) >> 16);
	}
	return 0;
}

int rfb_to_rgb(const rfb_image *src, rfb_image *dst, rfb_err *err)
{
	int rc = check_same_size(src, dst, 3, err);
	int simd = rfbi_transform_have_ssse3();

	if (rc)
		return rc;
	if (src->channels == 3) {
		rfb_image_copy(dst, src);
		return 0;
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src->data + (size_t)y * src->stride;
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		int x = simd ? rfbi_gray_to_rgb_ssse3(in, out, src->width) : 0;
		for (; x < src->width; x++)
			out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[x];
	}
	return 0;
}
