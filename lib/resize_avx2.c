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

/* Samples 8j .. 8j + 7 at p times kt. */
#define ROW_TERM(p, j, kt)                                                  \
	_mm256_mullo_epi32(kt, _mm256_cvtepu8_epi32(_mm_loadl_epi64(         \
				       (const __m128i *)((p) + 8 * (j)))))

/* The vertical pass: 32 samples at a time in four registers. */
__attribute__((target("avx2"))) void
rfb_resize_vrow_avx2(const unsigned char *in, size_t stride, int n,
		     const int32_t *k, unsigned char *out, size_t len)
{
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	size_t x0 = 0;

	for (; x0 + 32 <= len; x0 += 32) {
		__m256i a0 = _mm256_set1_epi32(HALF), a1 = a0, a2 = a0, a3 = a0, b;
		const unsigned char *p = in + x0;
		for (int t = 0; t < n; t++, p += stride) {
			__m256i kt = _mm256_set1_epi32(k[t]);
			a0 = _mm256_add_epi32(a0, ROW_TERM(p, 0, kt));
			a1 = _mm256_add_epi32(a1, ROW_TERM(p, 1, kt));
			a2 = _mm256_add_epi32(a2, ROW_TERM(p, 2, kt));
			a3 = _mm256_add_epi32(a3, ROW_TERM(p, 3, kt));
		}
		a0 = _mm256_srai_epi32(a0, PRECISION_BITS);
		a1 = _mm256_srai_epi32(a1, PRECISION_BITS);
		a2 = _mm256_srai_epi32(a2, PRECISION_BITS);
		a3 = _mm256_srai_epi32(a3, PRECISION_BITS);
		b = _mm256_packus_epi16(_mm256_packs_epi32(a0, a1),
					_mm256_packs_epi32(a2, a3));
		/* packs work per 128-bit lane: put the 8 groups back in order */
		b = _mm256_permutevar8x32_epi32(b, order);
		_mm256_storeu_si256((__m256i *)(out + x0), b);
	}
	if (x0 < len)
		rfb_resize_vrow(in + x0, stride, n, k, out + x0, len - x0);
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
	size_t n1;

	c->groups1 = (c->ksize + 15) / 16;
	n1 = (size_t)c->out_size * c->groups1 * 32;
	if (grow16(&c->kx1, &c->kx1_cap, n1))
		return -1;
	for (int xx = 0; xx < c->out_size; xx++) {
		const int32_t *k = c->k + (size_t)xx * c->kstride;
		int n = c->bounds[2 * xx + 1];
		int16_t *x1 = c->kx1 + (size_t)xx * c->groups1 * 32;
		/* per group of 16 taps: [hi of the 16][lo of the 16] */
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

/* ---- 3 channels: strips of 8 rows, transposed ---- */

/* Pixels x .. x + 7 of row q (RGB) as 8 lanes R G B 0.  Reads 28 bytes. */
__attribute__((target("avx2"))) static inline __m256i rgbx8(const unsigned char *q)
{
	const __m128i shuf = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1,
					   9, 10, 11, -1);
	__m128i lo = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)q), shuf);
	__m128i hi = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(q + 12)), shuf);
	return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* Transpose the 8 x 8 32-bit elements of v in place: v[j] = column j. */
__attribute__((target("avx2"))) static inline void transpose8(__m256i v[8])
{
	__m256i t[8], u[8];

	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
		t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
	}
	for (int i = 0; i < 8; i += 4) {
		u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
		u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
		u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
		u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	for (int j = 0; j < 4; j++) {
		v[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
		v[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
	}
}

/* cols[x] = pixel x of the 8 rows r[0..8), 4 bytes (R G B 0) each. */
__attribute__((target("avx2"))) static void strip_columns(
	const unsigned char *const r[8], int w, unsigned char *cols)
{
	int x = 0;

	for (; x + 10 <= w; x += 8) {
		__m256i v[8];
		for (int i = 0; i < 8; i++)
			v[i] = rgbx8(r[i] + 3 * (size_t)x);
		transpose8(v);
		for (int j = 0; j < 8; j++)
			_mm256_storeu_si256((__m256i *)(cols + (size_t)(x + j) * 32), v[j]);
	}
	for (; x < w; x++)
		for (int i = 0; i < 8; i++) {
			unsigned char *d = cols + (size_t)x * 32 + 4 * i;
			memcpy(d, r[i] + 3 * (size_t)x, 3);
			d[3] = 0;
		}
}

/* Samples 8j .. 8j + 7 of a column (rows 2j, 2j + 1) times kt. */
#define COL_TERM(cols, j, kt)                                               \
	_mm256_mullo_epi32(kt, _mm256_cvtepu8_epi32(_mm_loadl_epi64(         \
				       (const __m128i *)((cols) + 8 * (j)))))

/* Output pixel xx of the 8 rows: out[i] = row i's R G B 0. */
__attribute__((target("avx2"))) static inline void strip_pixel(
	const unsigned char *cols, const int32_t *k, int n, uint32_t out[8])
{
	__m256i a0 = _mm256_set1_epi32(HALF), a1 = a0, a2 = a0, a3 = a0, b;

	for (int t = 0; t < n; t++, cols += 32) {
		__m256i kt = _mm256_set1_epi32(k[t]);
		a0 = _mm256_add_epi32(a0, COL_TERM(cols, 0, kt));
		a1 = _mm256_add_epi32(a1, COL_TERM(cols, 1, kt));
		a2 = _mm256_add_epi32(a2, COL_TERM(cols, 2, kt));
		a3 = _mm256_add_epi32(a3, COL_TERM(cols, 3, kt));
	}
	a0 = _mm256_srai_epi32(a0, PRECISION_BITS);
	a1 = _mm256_srai_epi32(a1, PRECISION_BITS);
	a2 = _mm256_srai_epi32(a2, PRECISION_BITS);
	a3 = _mm256_srai_epi32(a3, PRECISION_BITS);
	/* lanes: low halves rows 0 2 4 6, high halves rows 1 3 5 7 */
	b = _mm256_packus_epi16(_mm256_packs_epi32(a0, a1),
				_mm256_packs_epi32(a2, a3));
	b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	_mm256_storeu_si256((__m256i *)out, b);
}

__attribute__((target("avx2"))) static void hpass3(const rfb_image *src, int y0, int rows,
		   const struct coeffs *c, rfb_image *dst, unsigned char *cols)
{
	for (int y = 0; y < rows; y += 8) {
		const unsigned char *r[8];
		int m = rows - y < 8 ? rows - y : 8;
		for (int i = 0; i < 8; i++) /* a short strip repeats a row */
			r[i] = src->data + (size_t)(y0 + y + (i < m ? i : 0)) * src->stride;
		strip_columns(r, src->width, cols);
		for (int xx = 0; xx < c->out_size; xx++) {
			uint32_t px[8];
			strip_pixel(cols + (size_t)c->bounds[2 * xx] * 32,
				    c->k + (size_t)xx * c->kstride,
				    c->bounds[2 * xx + 1], px);
			/* 4-byte stores: the next pixel overwrites the 4th */
			unsigned char *o = dst->data + (size_t)y * dst->stride + 3 * xx;
			if (xx + 1 < c->out_size)
				for (int i = 0; i < m; i++)
					memcpy(o + (size_t)i * dst->stride, &px[i], 4);
			else
				for (int i = 0; i < m; i++)
					memcpy(o + (size_t)i * dst->stride, &px[i], 3);
		}
	}
}

__attribute__((target("avx2"))) void
rfb_resize_hpass_avx2(const rfb_image *src, int y0, int rows,
		      const struct coeffs *c, rfb_image *dst,
		      unsigned char *scratch)
{
	int w = src->width;

	if (src->channels == 3) {
		hpass3(src, y0, rows, c, dst, scratch);
		return;
	}
	for (int y = 0; y < rows; y++) {
		const unsigned char *in = src->data + (size_t)(y0 + y) * src->stride;
		unsigned char *out = dst->data + (size_t)y * dst->stride;
		for (int xx = 0; xx < c->out_size; xx++) {
			int xmin = c->bounds[2 * xx], n = c->bounds[2 * xx + 1];
			/* the last step's 16-byte load must stay inside the
			 * row: near its end use the scalar kernel */
			if (xmin + ((n + 15) & ~15) <= w)
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
			   const struct coeffs *c, rfb_image *dst,
			   unsigned char *scratch)
{
	(void)src, (void)y0, (void)rows, (void)c, (void)dst, (void)scratch;
}

void rfb_resize_vrow_avx2(const unsigned char *in, size_t stride, int n,
			  const int32_t *k, unsigned char *out, size_t len)
{
	rfb_resize_vrow(in, stride, n, k, out, len);
}

#endif
