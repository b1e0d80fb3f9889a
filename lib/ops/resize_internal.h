/*
 * resize_internal.h - what resize.c (tables, scalar passes) and
 * resize_avx2.c (the same passes with AVX2) share: the coefficient table
 * and the scalar per-pixel kernels, which are the reference the SIMD
 * kernels must match bit for bit (integer sums do not depend on order).
 */
#ifndef REFURB_RESIZE_INTERNAL_H
#define REFURB_RESIZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/image.h"

#define PRECISION_BITS (32 - 8 - 2)
#define HALF (1 << (PRECISION_BITS - 1))
#define BLOCK 64 /* samples per vertical-pass block (fixed trip count) */

/* One axis' coefficients, cached by the parameters that produced them. */
struct coeffs {
	int valid;
	int in_size, out_size, first, origin, interp;
	double offset, scale;
	int ksize;             /* taps at most: ceil(support) * 2 + 1 */
	int kstride;           /* ksize rounded up to 8, zero-padded */
	int *bounds;           /* [2k] = first source pixel, [2k+1] = count */
	int32_t *k;            /* out_size * kstride (+ 8) fixed-point weights */
	/* k split for pmaddwd (resize_avx2.c): for taps 2j and 2j + 1 of
	 * output pixel xx, kp[xx * kstride + 2j] holds their high parts
	 * (k >> 11, signed) and kp[... + 2j + 1] their low parts
	 * (k & 2047), each as two int16 (tap 2j in the low half); valid
	 * only when kp_valid (resize.c's split_weights, run when the kernel
	 * is first asked for) and madd is 1 (every high part fits in int16) */
	int32_t *kp;
	int kp_valid, madd;
	size_t bounds_cap, k_cap, kp_cap;
	unsigned long used;    /* LRU stamp */
};

static inline unsigned char resize_clip8(int32_t v)
{
	v >>= PRECISION_BITS;
	return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Output pixel xx of a 1-channel row. */
static inline unsigned char resize_px1(const unsigned char *in,
				       const struct coeffs *c, int xx)
{
	const unsigned char *p = in + c->bounds[2 * xx];
	const int32_t *k = c->k + (size_t)xx * c->kstride;
	int n = c->bounds[2 * xx + 1];
	int32_t s = HALF;

	for (int t = 0; t < n; t++)
		s += p[t] * k[t];
	return resize_clip8(s);
}

/* Output pixel xx of a 3-channel row, written to out[0..3). */
static inline void resize_px3(const unsigned char *in, unsigned char *out,
			      const struct coeffs *c, int xx)
{
	const unsigned char *p = in + 3 * (size_t)c->bounds[2 * xx];
	const int32_t *k = c->k + (size_t)xx * c->kstride;
	int n = c->bounds[2 * xx + 1];
	int32_t s0 = HALF, s1 = HALF, s2 = HALF;

	for (int t = 0; t < n; t++) {
		s0 += p[3 * t] * k[t];
		s1 += p[3 * t + 1] * k[t];
		s2 += p[3 * t + 2] * k[t];
	}
	out[0] = resize_clip8(s0);
	out[1] = resize_clip8(s1);
	out[2] = resize_clip8(s2);
}

/* One output row of the vertical pass: n taps k from the rows starting at
 * in (stride apart), len samples.  Fixed-size blocks so that the compiler
 * vectorises the inner loops. */
static inline void resize_vrow(const unsigned char *in, size_t stride,
			       int n, const int32_t *k, unsigned char *out,
			       size_t len)
{
	size_t x0 = 0;

	for (; x0 + BLOCK <= len; x0 += BLOCK) {
		int32_t acc[BLOCK];
		for (int i = 0; i < BLOCK; i++)
			acc[i] = HALF;
		for (int t = 0; t < n; t++) {
			const unsigned char *p = in + (size_t)t * stride + x0;
			const int32_t kt = k[t];
			for (int i = 0; i < BLOCK; i++)
				acc[i] += p[i] * kt;
		}
		for (int i = 0; i < BLOCK; i++)
			out[x0 + i] = resize_clip8(acc[i]);
	}
	for (; x0 < len; x0++) {
		int32_t s = HALF;
		for (int t = 0; t < n; t++)
			s += in[(size_t)t * stride + x0] * k[t];
		out[x0] = resize_clip8(s);
	}
}

/* 1 if the CPU runs the AVX2 kernels (always 0 off x86-64). */
int rfbi_resize_have_avx2(void);

/* Bits of a weight's low part in the pmaddwd split (k = kh 2^11 + kl). */
#define MADD_LOW_BITS 11

/* The AVX2 kernels (call only when rfbi_resize_have_avx2()).  The
 * horizontal pass needs rfbi_resize_hpass_scratch() bytes of scratch.
 * madd: 1 for the pmaddwd kernel (needs c->madd), 0 for the pmulld one. */
size_t rfbi_resize_hpass_scratch(int src_width, const struct coeffs *c,
				 int dst_width);
void rfbi_resize_hpass_avx2(const rfb_image *src, int y0, int rows,
			    const struct coeffs *c, int madd, rfb_image *dst,
			    unsigned char *scratch);
void rfbi_resize_vrow_avx2(const unsigned char *in, size_t stride, int n,
			   const int32_t *k, unsigned char *out, size_t len);

#endif
