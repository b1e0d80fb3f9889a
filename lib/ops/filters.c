/*
 * filters.c - hue, Gaussian blur, vertical flip and erasing as
 * torchvision 0.14 computes them (filters.h).  The colour space
 * conversions are PIL 9.4's Convert.c rgb2hsv_row and hsv2rgb, operation
 * for operation, with their mix of float and double.
 */
#include <math.h>
#include <string.h>

#include "refurb/filters.h"

static unsigned char clip8(int v)
{
	return v <= 0 ? 0 : v >= 255 ? 255 : (unsigned char)v;
}

/* Convert.c rgb2hsv_row (following colorsys.py). */
static void rgb2hsv(const unsigned char *in, unsigned char *out)
{
	int r = in[0], g = in[1], b = in[2];
	int maxc = r > g ? (r > b ? r : b) : (g > b ? g : b);
	int minc = r < g ? (r < b ? r : b) : (g < b ? g : b);
	float h, s, rc, gc, bc, cr;

	out[2] = (unsigned char)maxc;
	if (minc == maxc) {
		out[0] = out[1] = 0;
		return;
	}
	cr = (float)(maxc - minc);
	s = cr / (float)maxc;
	rc = (float)(maxc - r) / cr;
	gc = (float)(maxc - g) / cr;
	bc = (float)(maxc - b) / cr;
	if (r == maxc)
		h = bc - gc;
	else if (g == maxc)
		h = 2.0f + rc - bc;
	else
		h = 4.0f + gc - rc;
	/* h / 6.0 is a double in C: the fmod is in double, then stored */
	h = (float)fmod(h / 6.0 + 1.0, 1.0);
	out[0] = clip8((int)(h * 255.0));
	out[1] = clip8((int)(s * 255.0));
}

/* Convert.c hsv2rgb. */
static void hsv2rgb(const unsigned char *in, unsigned char *out)
{
	int h = in[0], s = in[1], v = in[2], i;
	float f, fs;
	unsigned char up, uq, ut;

	if (s == 0) {
		out[0] = out[1] = out[2] = (unsigned char)v;
		return;
	}
	i = (int)floor((float)h * 6.0 / 255.0);
	f = (float)((float)h * 6.0 / 255.0 - (float)i);
	fs = (float)((float)s / 255.0);
	up = clip8((int)round((float)v * (1.0 - fs)));
	uq = clip8((int)round((float)v * (1.0 - fs * f)));
	ut = clip8((int)round((float)v * (1.0 - fs * (1.0 - f))));
	switch (i % 6) {
	case 0: out[0] = (unsigned char)v; out[1] = ut; out[2] = up; break;
	case 1: out[0] = uq; out[1] = (unsigned char)v; out[2] = up; break;
	case 2: out[0] = up; out[1] = (unsigned char)v; out[2] = ut; break;
	case 3: out[0] = up; out[1] = uq; out[2] = (unsigned char)v; break;
	case 4: out[0] = ut; out[1] = up; out[2] = (unsigned char)v; break;
	default: out[0] = (unsigned char)v; out[1] = up; out[2] = uq; break;
	}
}

void rfb_hue(const rfb_image *src, rfb_image *dst, double hue_factor)
{
	/* np.uint8(hue_factor * 255): truncation, then modulo 256 */
	unsigned char shift = (unsigned char)(int)(hue_factor * 255.0);

	if (src->channels != 3) {
		rfb_image_copy(dst, src);
		return;
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		unsigned char *out = rfb_image_px(dst, 0, y), hsv[3];

		for (int x = 0; x < src->width; x++, in += 3, out += 3) {
			rgb2hsv(in, hsv);
			hsv[0] = (unsigned char)(hsv[0] + shift);
			hsv2rgb(hsv, out);
		}
	}
}

/* ---- Gaussian blur ---- */

void rfb_blur_kernel(int size, double sigma, float *k)
{
	float half = (float)(size - 1) * 0.5f, sum = 0.0f;
	float s = (float)sigma;

	for (int i = 0; i < size; i++) {
		/* linspace(-half, half, size): whole or half numbers, exact */
		float x = -half + (float)i;
		float t = x / s;
		k[i] = expf(-0.5f * (t * t));
		sum += k[i];
	}
	for (int i = 0; i < size; i++)
		k[i] /= sum;
}

/* torch's reflect padding: -1 -> 1, n -> n - 2 (n > half). */
static int reflect(int i, int n)
{
	if (i < 0)
		return -i;
	if (i >= n)
		return 2 * n - 2 - i;
	return i;
}

/* One row of n samples (c a pixel) into out, convolved with k[0..size)
 * along the row: pad holds the row with half = size / 2 reflected pixels
 * on each side.  Each output sums k[j] * sample in j order, from 0. */
static void blur_row(const float *restrict pad, float *restrict out, size_t n,
		     size_t c, const float *k, int size)
{
	for (size_t i = 0; i < n; i++)
		out[i] = 0.0f;
	for (int j = 0; j < size; j++) {
		const float *in = pad + (size_t)j * c;
		float kj = k[j];
		for (size_t i = 0; i < n; i++)
			out[i] += kj * in[i];
	}
}

size_t rfb_blur_scratch(int w, int h, int c, int kw)
{
	return ((size_t)h + 1) * (size_t)w * c + ((size_t)w + 2 * (size_t)(kw / 2)) * c;
}

int rfb_gaussian_blur(const rfb_image *src, rfb_image *dst, int kw, int kh,
		      double sigma_x, double sigma_y, float *tmp, rfb_err *err)
{
	float kx[RFB_BLUR_MAX_KERNEL], ky[RFB_BLUR_MAX_KERNEL];
	int w = src->width, h = src->height, c = src->channels;
	int hw = kw / 2, hh = kh / 2;
	size_t row = (size_t)w * c;
	/* after the rows of the first pass: a padded row, a row of sums */
	float *pad = tmp + (size_t)h * row;
	float *acc = pad + ((size_t)w + 2 * (size_t)hw) * c;

	if (kw < 1 || kh < 1 || kw % 2 == 0 || kh % 2 == 0 ||
	    kw > RFB_BLUR_MAX_KERNEL || kh > RFB_BLUR_MAX_KERNEL ||
	    !(sigma_x > 0.0) || !(sigma_y > 0.0))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "gaussblur: kernel %dx%d sigma %g/%g: need odd "
				   "sizes up to %d and sigma > 0", kh, kw, sigma_y,
				   sigma_x, RFB_BLUR_MAX_KERNEL);
	if (hw >= w || hh >= h)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "gaussblur: kernel %dx%d too large for a %dx%d "
				   "image (half the kernel must be smaller than "
				   "the image, as torch's reflect padding needs)",
				   kh, kw, h, w);
	rfb_blur_kernel(kw, sigma_x, kx);
	rfb_blur_kernel(kh, sigma_y, ky);
	for (int y = 0; y < h; y++) {
		const unsigned char *in = rfb_image_px(src, 0, y);
		for (int x = -hw; x < w + hw; x++)
			for (int b = 0; b < c; b++)
				pad[(size_t)(x + hw) * c + b] =
					(float)in[(size_t)reflect(x, w) * c + b];
		blur_row(pad, tmp + (size_t)y * row, row, (size_t)c, kx, kw);
	}
	for (int y = 0; y < h; y++) {
		unsigned char *out = rfb_image_px(dst, 0, y);
		for (size_t i = 0; i < row; i++)
			acc[i] = 0.0f;
		for (int k = 0; k < kh; k++) {
			const float *t = tmp + (size_t)reflect(y + k - hh, h) * row;
			float kk = ky[k];
			for (size_t i = 0; i < row; i++)
				acc[i] += kk * t[i];
		}
		for (size_t i = 0; i < row; i++) {
			float s = nearbyintf(acc[i]); /* torch.round: half to even */
			out[i] = s <= 0.0f ? 0 : s >= 255.0f ? 255 : (unsigned char)s;
		}
	}
	return 0;
}

/* ---- flips and erasing ---- */

void rfb_vflip(const rfb_image *src, rfb_image *dst)
{
	size_t row = (size_t)src->width * src->channels;

	for (int y = 0; y < src->height; y++)
		memcpy(rfb_image_px(dst, 0, y),
		       rfb_image_px(src, 0, src->height - 1 - y), row);
}

void rfb_erase(rfb_image *img, const struct rfb_rect *r,
	       const unsigned char *value)
{
	int c = img->channels;

	for (int y = r->top; y < r->top + r->height; y++) {
		unsigned char *p = rfb_image_px(img, r->left, y);
		if (c == 1) {
			memset(p, value[0], (size_t)r->width);
			continue;
		}
		for (int x = 0; x < r->width; x++, p += 3)
			memcpy(p, value, 3);
	}
}
