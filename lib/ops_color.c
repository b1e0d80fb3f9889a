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
 * stack); ops with a closed form (posterize, solarize, invert) are flat
 * loops the compiler vectorizes.
 */
#include <stdint.h>
#include <string.h>

#include "ops_internal.h"

/* Blend.c for one sample: in1 + alpha * (in2 - in1), clamped, truncated. */
static inline unsigned char pil_blend(int in1, int in2, float alpha)
{
	float v = (float)in1 + alpha * (float)(in2 - in1);

	v = v < 0.0f ? 0.0f : v;
	v = v > 255.0f ? 255.0f : v;
	return (unsigned char)(int)v;
}

/* Convert.c's rgb2l: ITU-R 601-2 luma in 16.16 fixed point, rounded. */
static inline int pil_luma(const unsigned char *p)
{
	return (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16;
}

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

/* Per-channel histograms (Image.histogram()). */
static void histogram(const rfb_image *img, uint32_t hist[][256])
{
	memset(hist, 0, sizeof(uint32_t) * 256 * (size_t)img->channels);
	for (int y = 0; y < img->height; y++) {
		const unsigned char *p = src_row(img, y);
		if (img->channels == 1) {
			for (int x = 0; x < img->width; x++)
				hist[0][p[x]]++;
			continue;
		}
		for (int x = 0; x < img->width; x++, p += 3) {
			hist[0][p[0]]++;
			hist[1][p[1]]++;
			hist[2][p[2]]++;
		}
	}
}

static void identity_lut(unsigned char lut[256])
{
	for (int i = 0; i < 256; i++)
		lut[i] = (unsigned char)i;
}

/* ---- ImageEnhance ---- */

void rfb_ops_brightness(const rfb_image *src, rfb_image *dst, float factor)
{
	unsigned char lut[256];

	/* degenerate: a black image */
	for (int i = 0; i < 256; i++)
		lut[i] = pil_blend(0, i, factor);
	apply_lut(src, dst, lut);
}

/* Mean of the L image, rounded as ImageEnhance.Contrast does:
 * int(ImageStat.Stat(image.convert("L")).mean[0] + 0.5). */
static int luma_mean(const rfb_image *img)
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
	/* exact below 2^53; Python divides the same two numbers */
	return (int)((double)sum / ((double)img->width * img->height) + 0.5);
}

void rfb_ops_contrast(const rfb_image *src, rfb_image *dst, float factor)
{
	unsigned char lut[256];
	int mean = luma_mean(src);

	for (int i = 0; i < 256; i++)
		lut[i] = pil_blend(mean, i, factor);
	apply_lut(src, dst, lut);
}

void rfb_ops_color(const rfb_image *src, rfb_image *dst, float factor)
{
	/* an L image converts to itself: blend(img, img) is img */
	if (src->channels == 1) {
		rfb_image_copy(dst, src);
		return;
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src_row(src, y);
		unsigned char *out = dst_row(dst, y);
		for (int x = 0; x < src->width; x++, in += 3, out += 3) {
			int gray = pil_luma(in);
			out[0] = pil_blend(gray, in[0], factor);
			out[1] = pil_blend(gray, in[1], factor);
			out[2] = pil_blend(gray, in[2], factor);
		}
	}
}

/* One interior row of Filter.c's 3x3 SMOOTH (kernel 1 1 1 / 1 5 1 /
 * 1 1 1, divided by 13 in float) blended with the original. */
static void sharpen_row(const unsigned char *restrict above,
			const unsigned char *restrict in,
			const unsigned char *restrict below,
			unsigned char *restrict out, size_t n, size_t d,
			float factor)
{
	const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;

	memcpy(out, in, d);
	for (size_t i = d; i < n - d; i++) {
		/* Filter.c sums the row below first, then this one, then
		 * the one above, each left to right, from 0.5 (rounding) */
		float ss = 0.5f;
		ss += (float)below[i - d] * k1 + (float)below[i] * k1 +
		      (float)below[i + d] * k1;
		ss += (float)in[i - d] * k1 + (float)in[i] * k5 +
		      (float)in[i + d] * k1;
		ss += (float)above[i - d] * k1 + (float)above[i] * k1 +
		      (float)above[i + d] * k1;
		ss = ss < 0.0f ? 0.0f : ss;
		ss = ss > 255.0f ? 255.0f : ss;
		out[i] = pil_blend((int)ss, in[i], factor);
	}
	memcpy(out + n - d, in + n - d, d);
}

void rfb_ops_sharpness(const rfb_image *src, rfb_image *dst, float factor)
{
	size_t n = row_len(src), d = (size_t)src->channels;
	int h = src->height;

	/* Filter.c copies images under 3x3, and the border of the others:
	 * there the blend is of a sample with itself, the identity */
	if (src->width < 3 || h < 3) {
		rfb_image_copy(dst, src);
		return;
	}
	memcpy(dst_row(dst, 0), src_row(src, 0), n);
	for (int y = 1; y < h - 1; y++)
		sharpen_row(src_row(src, y - 1), src_row(src, y),
			    src_row(src, y + 1), dst_row(dst, y), n, d, factor);
	memcpy(dst_row(dst, h - 1), src_row(src, h - 1), n);
}

/* ---- ImageOps ---- */

void rfb_ops_posterize(const rfb_image *src, rfb_image *dst, int bits)
{
	/* ImageOps.posterize: lut[i] = i & ~(2 ** (8 - bits) - 1) */
	unsigned char mask = (unsigned char)(0xff00u >> bits);
	size_t n = row_len(src);

	for (int y = 0; y < src->height; y++) {
		const unsigned char *restrict in = src_row(src, y);
		unsigned char *restrict out = dst_row(dst, y);
		for (size_t i = 0; i < n; i++)
			out[i] = in[i] & mask;
	}
}

void rfb_ops_solarize(const rfb_image *src, rfb_image *dst, double threshold)
{
	/* ImageOps.solarize keeps i where i < threshold (a float here):
	 * find the first integer that is inverted */
	int first = 0;
	size_t n = row_len(src);

	while (first < 256 && (double)first < threshold)
		first++;
	for (int y = 0; y < src->height; y++) {
		const unsigned char *restrict in = src_row(src, y);
		unsigned char *restrict out = dst_row(dst, y);
		for (size_t i = 0; i < n; i++)
			out[i] = in[i] >= first ? (unsigned char)(255 - in[i]) : in[i];
	}
}

void rfb_ops_invert(const rfb_image *src, rfb_image *dst)
{
	size_t n = row_len(src);

	for (int y = 0; y < src->height; y++) {
		const unsigned char *restrict in = src_row(src, y);
		unsigned char *restrict out = dst_row(dst, y);
		for (size_t i = 0; i < n; i++)
			out[i] = (unsigned char)(255 - in[i]);
	}
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

void rfb_ops_autocontrast(const rfb_image *src, rfb_image *dst)
{
	uint32_t hist[3][256];
	unsigned char lut[3][256];

	histogram(src, hist);
	for (int c = 0; c < src->channels; c++)
		autocontrast_lut(hist[c], lut[c]);
	apply_lut3(src, dst, lut);
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

void rfb_ops_equalize(const rfb_image *src, rfb_image *dst)
{
	uint32_t hist[3][256];
	unsigned char lut[3][256];

	histogram(src, hist);
	for (int c = 0; c < src->channels; c++)
		equalize_lut(hist[c], lut[c]);
	apply_lut3(src, dst, lut);
}
