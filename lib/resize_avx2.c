/*
 * resize_avx2.c - the resize passes with AVX2, chosen at run time.  Same
 * integer arithmetic as the scalar kernels of resize_internal.h (the
 * reference, which tests compare them with): products of 8-bit samples
 * and 22-bit weights summed in int32, so the result does not depend on
 * the order of the sums and is bit-identical.
 */
#include "resize_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

int rfb_resize_have_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}

/* The vertical pass: the scalar block code, vectorised for AVX2. */
__attribute__((target("avx2"))) void
rfb_resize_vrow_avx2(const unsigned char *in, size_t stride, int n,
		     const int32_t *k, unsigned char *out, size_t len)
{
	rfb_resize_vrow(in, stride, n, k, out, len);
}

/* Clip the low three (or one) int32 lanes of s as the scalar code does. */
__attribute__((target("avx2"))) static inline __m128i clip_lanes(__m128i s)
{
	s = _mm_srai_epi32(_mm_add_epi32(s, _mm_set1_epi32(HALF)), PRECISION_BITS);
	s = _mm_packs_epi32(s, s);
	return _mm_packus_epi16(s, s);
}

static int grow16(int16_t **p, size_t *cap, size_t n)
{
	int16_t *q;

	if (n <= *cap)
		return 0;
	q = realloc(*p, n * sizeof *q);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

static int16_t hi(int32_t k)
{
	return (int16_t)(k >> 11); /* |k| < 2^23, so |hi| <= 4096 */
}

static int16_t lo(int32_t k)
{
	return (int16_t)(k & 2047);
}

int rfb_resize_split_weights(struct coeffs *c)
{
	size_t n3, n1;

	c->groups3 = (c->ksize + 3) / 4;
	c->groups1 = (c->ksize + 15) / 16;
	n3 = (size_t)c->out_size * c->groups3 * 64;
	n1 = (size_t)c->out_size * c->groups1 * 32;
	if (grow16(&c->kx3, &c->kx3_cap, n3) || grow16(&c->kx1, &c->kx1_cap, n1))
		return -1;
	for (int xx = 0; xx < c->out_size; xx++) {
		const int32_t *k = c->k + (size_t)xx * c->kstride;
		int n = c->bounds[2 * xx + 1];
		int16_t *x3 = c->kx3 + (size_t)xx * c->groups3 * 64;
		int16_t *x1 = c->kx1 + (size_t)xx * c->groups1 * 32;
		/* 3 channels: per group [hi 16 lanes][lo 16 lanes]; 128-bit
		 * half h holds taps 2h, 2h + 1 as a b a b a b 0 0 */
		for (int g = 0; g < c->groups3; g++)
			for (int part = 0; part < 2; part++)
				for (int lane = 0; lane < 16; lane++) {
					int t = 4 * g + 2 * (lane / 8) + (lane & 1);
					int32_t w = t < n && (lane & 7) < 6 ? k[t] : 0;
					x3[(g * 2 + part) * 16 + lane] = part ? lo(w) : hi(w);
				}
		/* 1 channel: per group [hi of 16 taps][lo of 16 taps] */
		for (int g = 0; g < c->groups1; g++)
			for (int lane = 0; lane < 16; lane++) {
				int t = 16 * g + lane;
				int32_t w = t < n ? k[t] : 0;
				x1[g * 32 + lane] = hi(w);
				x1[g * 32 + 16 + lane] = lo(w);
			}
	}
	return 0;
}

/* Sum of hi products * 2048 + lo products, lane-wise. */
__attribute__((target("avx2"))) static inline __m256i
join_parts(__m256i acc_hi, __m256i acc_lo)
{
	return _mm256_add_epi32(_mm256_slli_epi32(acc_hi, 11), acc_lo);
}

/* RGB: four taps per step, pmaddwd on 16-bit samples.  Reads 16 bytes
 * from each step's first pixel: the caller keeps this inside the row. */
__attribute__((target("avx2"))) static inline uint32_t px3(const unsigned char *p,
							    const int16_t *kx, int n)
{
	const __m256i shuf = _mm256_setr_epi8(
		0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
		6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
	__m256i acc_hi = _mm256_setzero_si256(), acc_lo = acc_hi;
	uint32_t v;

	for (int t = 0; t < n; t += 4, p += 12, kx += 32) {
		__m256i b = _mm256_broadcastsi128_si256(
			_mm_loadu_si128((const __m128i *)p));
		__m256i x = _mm256_shuffle_epi8(b, shuf);
		acc_hi = _mm256_add_epi32(acc_hi, _mm256_madd_epi16(
			x, _mm256_loadu_si256((const __m256i *)kx)));
		acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(
			x, _mm256_loadu_si256((const __m256i *)(kx + 16))));
	}
	__m256i acc = join_parts(acc_hi, acc_lo);
	v = (uint32_t)_mm_cvtsi128_si32(clip_lanes(_mm_add_epi32(
		_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1))));
	return v; /* R G B 0 */
}

/* Gray: sixteen taps per step.  Reads 16 bytes per step. */
__attribute__((target("avx2"))) static unsigned char px1(const unsigned char *p,
							 const int16_t *kx, int n)
{
	__m256i acc_hi = _mm256_setzero_si256(), acc_lo = acc_hi;
	__m128i s;

	for (int t = 0; t < n; t += 16, p += 16, kx += 32) {
		__m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p));
		acc_hi = _mm256_add_epi32(acc_hi, _mm256_madd_epi16(
			x, _mm256_loadu_si256((const __m256i *)kx)));
		acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(
			x, _mm256_loadu_si256((const __m256i *)(kx + 16))));
	}
	__m256i acc = join_parts(acc_hi, acc_lo);
	s = _mm_add_epi32(_mm256_castsi256_si128(acc),
			  _mm256_extracti128_si256(acc, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return (unsigned char)_mm_cvtsi128_si32(clip_lanes(s));
}

__attribute__((target("avx2"))) void
rfb_resize_hpass_avx2(const rfb_image *src, int y0, int rows,
		      const struct coeffs *c, rfb_image *dst)
{
	int ch = src->channels, w = src->width;

	for (int y = 0; y < rows; y++) {
		const unsigned char *in = src->data + (size_t)(y0 + y) * src->stride;
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		for (int xx = 0; xx < c->out_size; xx++) {
			int xmin = c->bounds[2 * xx], n = c->bounds[2 * xx + 1];
			/* the last step's 16-byte load must stay inside the
			 * row: near its end use the scalar kernel */
			if (ch == 3 && 3 * (xmin + ((n + 3) & ~3)) + 4 <= 3 * w) {
				uint32_t v = px3(in + 3 * (size_t)xmin,
						 c->kx3 + (size_t)xx * c->groups3 * 64, n);
				/* a 4-byte store; the next pixel overwrites the
				 * fourth byte, except after the last one */
				if (xx + 1 < c->out_size)
					memcpy(out + 3 * xx, &v, 4);
				else
					memcpy(out + 3 * xx, &v, 3);
			} else if (ch == 3)
				rfb_resize_px3(in, out + 3 * xx, c, xx);
			else if (xmin + ((n + 15) & ~15) <= w)
				out[xx] = px1(in + xmin,
					      c->kx1 + (size_t)xx * c->groups1 * 32, n);
			else
				out[xx] = rfb_resize_px1(in, c, xx);
		}
	}
}

#else

int rfb_resize_have_avx2(void)
{
	return 0;
}

int rfb_resize_split_weights(struct coeffs *c)
{
	(void)c;
	return 0;
}

void rfb_resize_hpass_avx2(const rfb_image *src, int y0, int rows,
			   const struct coeffs *c, rfb_image *dst)
{
	(void)src, (void)y0, (void)rows, (void)c, (void)dst;
}

void rfb_resize_vrow_avx2(const unsigned char *in, size_t stride, int n,
			  const int32_t *k, unsigned char *out, size_t len)
{
	rfb_resize_vrow(in, stride, n, k, out, len);
}

#endif
