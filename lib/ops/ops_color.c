/*
 * ops_color.c - the photometric ops of RandAugment/AutoAugment as
 * torchvision 0.14 runs them on PIL 9.4 images: ImageEnhance's
 * Brightness, Color, Contrast and Sharpness, ImageOps' posterize,
 * solarize, autocontrast, equalize and invert.
 *
 * ImageEnhance.enhance(f) is Image.blend(degenerate, image, f), and
 * Blend.c computes in1 + alpha * (in2 - in1) in float, clamps to [0, 255]
 * and truncates; every blend here does exactly that, so results are
 * bit-identical.  Point ops are per-channel tables (histograms on the
 * stack); ops with a closed form (posterize, solarize, invert) and the
 * float blends run over flat spans of samples in blocks of BLOCK with a
 * constant trip count, which GCC vectorizes at -O2 (its "very cheap" cost
 * model refuses loops that would need a remainder loop).  Vectorizing
 * does not change results: each sample keeps its own operation order.
 * Sharpness, Color, the constant blends and Contrast's luma sum have
 * hand-written AVX2 twins in ops_color_avx2.c, used when the CPU has
 * AVX2; the *_scalar functions here are their reference.
 */
#include <stdint.h>
#include <string.h>

#include "ops_internal.h"

#define BLOCK 32 /* samples per vectorized block */

static size_t row_len(const rfb_image *img)
{
	return (size_t)img->width * (size_t)img->channels;
}

static const unsigned char *src_row(const rfb_image *img, int y)
{
	return img->data + (size_t)y * img->stride;
}

static unsigned char *dst_row(rfb_image *img, int y)
{
	return img->data + (size_t)y * img->stride;
}

/* ---- tables ---- */

/* Apply one table to every sample. */
static void apply_lut(const rfb_image *src, rfb_image *dst,
		      const unsigned char lut[256])
{
	size_t n = row_len(src);

	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src_row(src, y);
		unsigned char *out = dst_row(dst, y);
		for (size_t i = 0; i < n; i++)
			out[i] = lut[in[i]];
	}
}

/* Apply table lut[c] to channel c. */
static void apply_lut3(const rfb_image *src, rfb_image *dst,
		       unsigned char lut[][256])
{
	if (src->channels == 1) {
		apply_lut(src, dst, lut[0]);
		return;
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src_row(src, y);
		unsigned char *out = dst_row(dst, y);
		for (int x = 0; x < src->width; x++, in += 3, out += 3) {
			out[0] = lut[0][in[0]];
			out[1] = lut[1][in[1]];
			out[2] = lut[2][in[2]];
		}
	}
}

/* Per-channel histograms (Image.histogram()).  Even and odd pixels count
 * into separate tables, so that runs of equal values do not serialize on
 * one counter; hist holds 2 * channels tables, summed at the end. */
static void histogram(const rfb_image *img, uint32_t hist[][256])
{
	int c = img->channels;

	memset(hist, 0, sizeof(uint32_t) * 256 * 2 * (size_t)c);
	for (int y = 0; y < img->height; y++) {
		const unsigned char *p = src_row(img, y);
		size_t n = row_len(img), i = 0;
		if (c == 1) {
			for (; i + 2 <= n; i += 2) {
				hist[0][p[i]]++;
				hist[1][p[i + 1]]++;
			}
		} else {
			for (; i + 6 <= n; i += 6) {
				hist[0][p[i]]++;
				hist[1][p[i + 1]]++;
				hist[2][p[i + 2]]++;
				hist[3][p[i + 3]]++;
				hist[4][p[i + 4]]++;
				hist[5][p[i + 5]]++;
			}
		}
		for (; i < n; i++)
			hist[i % (size_t)c][p[i]]++;
	}
	for (int b = 0; b < c; b++)
		for (int v = 0; v < 256; v++)
			hist[b][v] += hist[b + c][v];
}

static void identity_lut(unsigned char lut[256])
{
	for (int i = 0; i < 256; i++)
		lut[i] = (unsigned char)i;
}

/* ---- ImageEnhance ---- */

/* Blend of a constant degenerate image (level) with src: one value per
 * input level, so a 256-entry table (measured faster than the vectorized
 * float blend of every sample). */
void rfbi_ops_blend_level_scalar(const rfb_image *src, rfb_image *dst,
				 int level, float factor)
{
	unsigned char lut[256];

	for (int i = 0; i < 256; i++)
		lut[i] = pil_blend(level, i, factor);
	apply_lut(src, dst, lut);
}

static void blend_level(const rfb_image *src, rfb_image *dst, int level,
			float factor)
{
	if (rfbi_ops_have_avx2())
		rfbi_ops_blend_level_avx2(src, dst, level, factor);
	else
		rfbi_ops_blend_level_scalar(src, dst, level, factor);
}

void rfbi_ops_brightness(const rfb_image *src, rfb_image *dst, float factor)
{
	blend_level(src, dst, 0, factor); /* degenerate: a black image */
}

/* Mean of the L image, rounded as ImageEnhance.Contrast does:
 * int(ImageStat.Stat(image.convert("L")).mean[0] + 0.5). */
uint64_t rfbi_ops_luma_sum_scalar(const rfb_image *img)
{
	uint64_t sum = 0;

	for (int y = 0; y < img->height; y++) {
		const unsigned char *p = src_row(img, y);
		if (img->channels == 1) {
			for (int x = 0; x < img->width; x++)
				sum += p[x];
			continue;
		}
		for (int x = 0; x < img->width; x++, p += 3)
			sum += (uint64_t)pil_luma(p);
	}
	return sum;
}

static int luma_mean(const rfb_image *img)
{
	uint64_t sum = rfbi_ops_have_avx2() ? rfbi_ops_luma_sum_avx2(img)
					   : rfbi_ops_luma_sum_scalar(img);

	/* exact below 2^53; Python divides the same two numbers */
	return (int)((double)sum / ((double)img->width * img->height) + 0.5);
}

void rfbi_ops_contrast(const rfb_image *src, rfb_image *dst, float factor)
{
	/* degenerate: Image.new("L", size, mean).convert(mode) */
	blend_level(src, dst, luma_mean(src), factor);
}

/* out[i] = blend(in1[i], in2[i]) over n samples. */
static void blend_span(unsigned char *restrict out,
		       const unsigned char *restrict in1,
		       const unsigned char *restrict in2, size_t n, float alpha)
{
	size_t i = 0;

	for (; i + BLOCK <= n; i += BLOCK)
		for (size_t k = 0; k < BLOCK; k++)
			out[i + k] = pil_blend(in1[i + k], in2[i + k], alpha);
	for (; i < n; i++)
		out[i] = pil_blend(in1[i], in2[i], alpha);
}

#define COLOR_CHUNK 256 /* pixels of gray kept on the stack */

void rfbi_ops_color_scalar(const rfb_image *src, rfb_image *dst, float factor)
{
	unsigned char gray3[3 * COLOR_CHUNK];

	/* an L image converts to itself: blend(img, img) is img */
	if (src->channels == 1) {
		rfb_image_copy(dst, src);
		return;
	}
	/* the degenerate image is convert("L").convert("RGB"): gray in
	 * all three channels, so a flat blend over the samples follows */
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src_row(src, y);
		unsigned char *out = dst_row(dst, y);
		for (int x0 = 0; x0 < src->width; x0 += COLOR_CHUNK) {
			int n = src->width - x0 < COLOR_CHUNK ? src->width - x0 :
								 COLOR_CHUNK;
			const unsigned char *p = in + (size_t)x0 * 3;
			for (int x = 0; x < n; x++) {
				unsigned char g = (unsigned char)pil_luma(p + 3 * x);
				gray3[3 * x] = gray3[3 * x + 1] = gray3[3 * x + 2] = g;
			}
			blend_span(out + (size_t)x0 * 3, gray3, p, (size_t)n * 3,
				   factor);
		}
	}
}

/* The rows [y0, y1) x columns [x0, x1) (image coordinates) of src, placed
 * at sp, into dst, placed at dp. */
static void copy_part(const rfb_image *src, const struct rfb_place *sp,
		      rfb_image *dst, const struct rfb_place *dp, int x0, int x1,
		      int y0, int y1)
{
	size_t c = (size_t)dst->channels;

	if (x0 >= x1)
		return;
	for (int y = y0; y < y1; y++)
		memcpy(rfb_image_px(dst, x0 - dp->x, y - dp->y),
		       rfb_image_px(src, x0 - sp->x, y - sp->y),
		       (size_t)(x1 - x0) * c);
}

typedef void (*sharpen_block_fn)(const unsigned char *, size_t, unsigned char *,
				 size_t, int, size_t, size_t, float);

static void sharpness_window(const rfb_image *src, const struct rfb_place *sp,
			     rfb_image *dst, const struct rfb_place *dp,
			     float factor, sharpen_block_fn block)
{
	int fw = dp->full_w, fh = dp->full_h;
	int l = dp->x, r = dp->x + dst->width, t = dp->y, b = dp->y + dst->height;
	/* the interior: Filter.c copies images under 3x3, and the border
	 * of the others (there the blend is of a sample with itself) */
	int x0 = l > 1 ? l : 1, x1 = r < fw - 1 ? r : fw - 1;
	int y0 = t > 1 ? t : 1, y1 = b < fh - 1 ? b : fh - 1;

	if (fw < 3 || fh < 3 || x0 >= x1 || y0 >= y1) {
		copy_part(src, sp, dst, dp, l, r, t, b);
		return;
	}
	copy_part(src, sp, dst, dp, l, r, t, y0);
	copy_part(src, sp, dst, dp, l, x0, y0, y1);
	copy_part(src, sp, dst, dp, x1, r, y0, y1);
	copy_part(src, sp, dst, dp, l, r, y1, b);
	block(rfb_image_px(src, x0 - sp->x, y0 - sp->y), src->stride,
	      rfb_image_px(dst, x0 - dp->x, y0 - dp->y), dst->stride, y1 - y0,
	      (size_t)(x1 - x0) * (size_t)dst->channels, (size_t)dst->channels,
	      factor);
}

static void whole(const rfb_image *img, struct rfb_place *p)
{
	*p = (struct rfb_place){ 0, 0, img->width, img->height };
}

void rfbi_ops_sharpness_scalar(const rfb_image *src, rfb_image *dst,
			       float factor)
{
	struct rfb_place p;

	whole(src, &p);
	sharpness_window(src, &p, dst, &p, factor, ops_sharpen_block_scalar);
}

void rfbi_ops_sharpness_avx2(const rfb_image *src, rfb_image *dst, float factor)
{
	struct rfb_place p;

	whole(src, &p);
	sharpness_window(src, &p, dst, &p, factor, rfbi_ops_sharpen_block_avx2);
}

void rfbi_ops_sharpness_window(const rfb_image *src, const struct rfb_place *sp,
			       rfb_image *dst, const struct rfb_place *dp,
			       float factor)
{
	sharpness_window(src, sp, dst, dp, factor,
			 rfbi_ops_have_avx2() ? rfbi_ops_sharpen_block_avx2
					     : ops_sharpen_block_scalar);
}

void rfbi_ops_color(const rfb_image *src, rfb_image *dst, float factor)
{
	if (rfbi_ops_have_avx2())
		rfbi_ops_color_avx2(src, dst, factor);
	else
		rfbi_ops_color_scalar(src, dst, factor);
}

void rfbi_ops_sharpness(const rfb_image *src, rfb_image *dst, float factor)
{
	struct rfb_place p;

	whole(src, &p);
	rfbi_ops_sharpness_window(src, &p, dst, &p, factor);
}

/* ---- ImageOps ---- */

static void posterize_span(unsigned char *restrict out,
			   const unsigned char *restrict in, size_t n,
			   unsigned char mask)
{
	size_t i = 0;

	for (; i + BLOCK <= n; i += BLOCK)
		for (size_t k = 0; k < BLOCK; k++)
			out[i + k] = in[i + k] & mask;
	for (; i < n; i++)
		out[i] = in[i] & mask;
}

void rfbi_ops_posterize(const rfb_image *src, rfb_image *dst, int bits)
{
	/* ImageOps.posterize: lut[i] = i & ~(2 ** (8 - bits) - 1) */
	unsigned char mask = (unsigned char)(0xff00u >> bits);

	for (int y = 0; y < src->height; y++)
		posterize_span(dst_row(dst, y), src_row(src, y), row_len(src), mask);
}

static inline unsigned char solarize_px(unsigned char v, unsigned char first)
{
	return v >= first ? (unsigned char)(255 - v) : v;
}

static void solarize_span(unsigned char *restrict out,
			  const unsigned char *restrict in, size_t n,
			  unsigned char first)
{
	size_t i = 0;

	for (; i + BLOCK <= n; i += BLOCK)
		for (size_t k = 0; k < BLOCK; k++)
			out[i + k] = solarize_px(in[i + k], first);
	for (; i < n; i++)
		out[i] = solarize_px(in[i], first);
}

void rfbi_ops_solarize(const rfb_image *src, rfb_image *dst, double threshold)
{
	/* ImageOps.solarize keeps i where i < threshold (a float here):
	 * find the first integer that is inverted */
	int first = 0;

	while (first < 256 && (double)first < threshold)
		first++;
	if (first == 256) {
		rfb_image_copy(dst, src);
		return;
	}
	for (int y = 0; y < src->height; y++)
		solarize_span(dst_row(dst, y), src_row(src, y), row_len(src),
			      (unsigned char)first);
}

static void invert_span(unsigned char *restrict out,
			const unsigned char *restrict in, size_t n)
{
	size_t i = 0;

	for (; i + BLOCK <= n; i += BLOCK)
		for (size_t k = 0; k < BLOCK; k++)
			out[i + k] = (unsigned char)(255 - in[i + k]);
	for (; i < n; i++)
		out[i] = (unsigned char)(255 - in[i]);
}

void rfbi_ops_invert(const rfb_image *src, rfb_image *dst)
{
	for (int y = 0; y < src->height; y++)
		invert_span(dst_row(dst, y), src_row(src, y), row_len(src));
}

/* ImageOps.autocontrast's table for one channel (cutoff 0, no ignore). */
static void autocontrast_lut(const uint32_t hist[256], unsigned char lut[256])
{
	int lo = 0, hi = 255;
	double scale, offset;

	while (lo < 255 && !hist[lo])
		lo++;
	while (hi > 0 && !hist[hi])
		hi--;
	if (hi <= lo) {
		identity_lut(lut);
		return;
	}
	scale = 255.0 / (hi - lo);
	offset = -lo * scale;
	for (int i = 0; i < 256; i++) {
		double v = i * scale + offset;
		/* int() truncates toward zero, then the clip */
		lut[i] = v < 0.0 ? 0 : v >= 255.0 ? 255 : (unsigned char)(int)v;
	}
}

void rfbi_ops_autocontrast_scalar(const rfb_image *stats, const rfb_image *src,
				  rfb_image *dst)
{
	uint32_t hist[6][256];
	unsigned char lut[3][256];

	histogram(stats, hist);
	for (int c = 0; c < src->channels; c++)
		autocontrast_lut(hist[c], lut[c]);
	apply_lut3(src, dst, lut);
}

static void autocontrast(const rfb_image *stats, const rfb_image *src,
			 rfb_image *dst)
{
	if (rfbi_ops_have_avx2())
		rfbi_ops_autocontrast_avx2(stats, src, dst);
	else
		rfbi_ops_autocontrast_scalar(stats, src, dst);
}

void rfbi_ops_autocontrast(const rfb_image *src, rfb_image *dst)
{
	autocontrast(src, src, dst);
}

/* ImageOps.equalize's table for one channel; Image.point clips to 255. */
static void equalize_lut(const uint32_t hist[256], unsigned char lut[256])
{
	uint64_t total = 0, last = 0, step, n;
	int used = 0;

	for (int i = 0; i < 256; i++) {
		if (hist[i]) {
			used++;
			last = hist[i];
			total += hist[i];
		}
	}
	step = used > 1 ? (total - last) / 255 : 0;
	if (!step) {
		identity_lut(lut);
		return;
	}
	n = step / 2;
	for (int i = 0; i < 256; i++) {
		uint64_t v = n / step;
		lut[i] = v > 255 ? 255 : (unsigned char)v;
		n += hist[i];
	}
}

static void equalize(const rfb_image *stats, const rfb_image *src,
		     rfb_image *dst)
{
	uint32_t hist[6][256];
	unsigned char lut[3][256];

	histogram(stats, hist);
	for (int c = 0; c < src->channels; c++)
		equalize_lut(hist[c], lut[c]);
	apply_lut3(src, dst, lut);
}

void rfbi_ops_equalize(const rfb_image *src, rfb_image *dst)
{
	equalize(src, src, dst);
}

void rfbi_ops_stat_window(enum rfb_op op, float factor, const rfb_image *stats,
			  const rfb_image *src, rfb_image *dst)
{
	if (op == RFB_OP_CONTRAST)
		blend_level(src, dst, luma_mean(stats), factor);
	else if (op == RFB_OP_AUTOCONTRAST)
		autocontrast(stats, src, dst);
	else
		equalize(stats, src, dst);
}
