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

/* RGB: two taps per vector, lanes R G B 0 | R G B 0.  Reads 8 bytes from
 * each pair's first pixel: the caller keeps this inside the row. */
__attribute__((target("avx2"))) static void px3(const unsigned char *p,
						const int32_t *k, int n,
						unsigned char *out)
{
	const __m128i shuf = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1,
					   -1, -1, -1, -1, -1);
	const __m256i pick = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
	__m256i acc = _mm256_setzero_si256();
	uint32_t v;

	for (int t = 0; t < n; t += 2) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(p + 3 * t));
		__m256i x = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(b, shuf));
		__m256i w = _mm256_permutevar8x32_epi32(
			_mm256_loadu_si256((const __m256i *)(k + t)), pick);
		acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(x, w));
	}
	v = (uint32_t)_mm_cvtsi128_si32(clip_lanes(_mm_add_epi32(
		_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1))));
	memcpy(out, &v, 3);
}

/* Gray: eight taps per vector.  Reads 8 bytes per step. */
__attribute__((target("avx2"))) static unsigned char px1(const unsigned char *p,
							 const int32_t *k, int n)
{
	__m256i acc = _mm256_setzero_si256();
	__m128i s;

	for (int t = 0; t < n; t += 8) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(p + t));
		acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(
			_mm256_cvtepu8_epi32(b),
			_mm256_loadu_si256((const __m256i *)(k + t))));
	}
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
			const int32_t *k = c->k + (size_t)xx * c->kstride;
			/* loads run up to 8 bytes past the last tap's start:
			 * near the row's end use the scalar kernel */
			if (ch == 3 && xmin + n + 2 <= w)
				px3(in + 3 * (size_t)xmin, k, n, out + 3 * xx);
			else if (ch == 3)
				rfb_resize_px3(in, out + 3 * xx, c, xx);
			else if (xmin + ((n + 7) & ~7) <= w)
				out[xx] = px1(in + xmin, k, n);
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
