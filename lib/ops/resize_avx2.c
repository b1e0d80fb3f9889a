/*
 * resize_avx2.c - the resize passes with AVX2, chosen at run time.  Same
 * integer arithmetic as the scalar kernels of resize_internal.h (the
 * reference, which tests compare them with): products of 8-bit samples
 * and 22-bit weights summed in int32, so the result does not depend on
 * the order of the sums and is bit-identical.
 */
#include "resize_internal.h"

size_t rfbi_resize_hpass_scratch(int src_width, const struct coeffs *c,
				 int dst_width)
{
	/* 3 channels (1 needs less): columns with ksize + 1 of padding, a
	 * pair for each of them but the last, the output, alignment */
	size_t ncols = (size_t)src_width + (size_t)c->ksize;

	return (ncols + 1) * 32 + ncols * 96 + (size_t)dst_width * 32 + 32;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

int rfbi_resize_have_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}

/* Samples 8j .. 8j + 7 at p times kt. */
#define ROW_TERM(p, j, kt)                                                  \
	_mm256_mullo_epi32(kt, _mm256_cvtepu8_epi32(_mm_loadl_epi64(         \
				       (const __m128i *)((p) + 8 * (j)))))

/* The vertical pass: 32 samples at a time in four registers. */
__attribute__((target("avx2"))) void
rfbi_resize_vrow_avx2(const unsigned char *in, size_t stride, int n,
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
		resize_vrow(in + x0, stride, n, k, out + x0, len - x0);
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

#pragma GCC unroll 8
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
		t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
	}
#pragma GCC unroll 8
	for (int i = 0; i < 8; i += 4) {
		u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
		u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
		u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
		u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
#pragma GCC unroll 8
	for (int j = 0; j < 4; j++) {
		v[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
		v[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
	}
}

/* R G B 0 R G B 0 ... -> R G B R G B ... in each 128-bit lane (12 bytes
 * of samples, then 4 zero bytes); and back. */
#define RGB_PACK 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1
#define RGB_UNPACK 0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1

/* cols[x] = pixel x of the 8 rows r[0..8): 24 bytes (row i's R G B at
 * 3i), then 8 unused bytes. */
__attribute__((target("avx2"))) static void strip_columns(
	const unsigned char *const r[8], int w, unsigned char *cols)
{
	const __m256i pack = _mm256_setr_epi8(RGB_PACK, RGB_PACK);
	const __m256i join = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
	int x = 0;

	for (; x + 10 <= w; x += 8) {
		__m256i v[8];
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++)
			v[i] = rgbx8(r[i] + 3 * (size_t)x);
		transpose8(v);
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			_mm256_store_si256((__m256i *)(cols + (size_t)(x + j) * 32),
					   _mm256_permutevar8x32_epi32(
						   _mm256_shuffle_epi8(v[j], pack), join));
	}
	for (; x < w; x++)
		for (int i = 0; i < 8; i++)
			memcpy(cols + (size_t)x * 32 + 3 * i, r[i] + 3 * (size_t)x, 3);
}

/* Samples 8j .. 8j + 7 of a column times kt. */
#define COL_TERM(cols, j, kt)                                               \
	_mm256_mullo_epi32(kt, _mm256_cvtepu8_epi32(_mm_loadl_epi64(         \
				       (const __m128i *)((cols) + 8 * (j)))))

/* The sums of samples 0-7, 8-15, 16-23 of a strip's output pixel
 * (sample 3i + c is row i's channel c) as 8 lanes R G B 0 (row i in lane
 * i) at out, 32-byte aligned. */
__attribute__((target("avx2"), always_inline)) static inline void store_pixel(
	__m256i a0, __m256i a1, __m256i a2, unsigned char *out)
{
	__m256i b;

	a0 = _mm256_srai_epi32(a0, PRECISION_BITS);
	a1 = _mm256_srai_epi32(a1, PRECISION_BITS);
	a2 = _mm256_srai_epi32(a2, PRECISION_BITS);
	/* dwords: a0[0..3] a1[0..3] a2[0..3] (dup) a0[4..7] a1[4..7]
	 * a2[4..7] (dup); gather bytes 0..15 of the 24 in the low lane,
	 * 12..27 in the high one, then widen each lane to R G B 0 */
	b = _mm256_packus_epi16(_mm256_packs_epi32(a0, a1),
				_mm256_packs_epi32(a2, a2));
	b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 5, 2, 6, 3));
	b = _mm256_shuffle_epi8(b, _mm256_setr_epi8(RGB_UNPACK, RGB_UNPACK));
	_mm256_store_si256((__m256i *)out, b);
}

/* Output pixel xx of the 8 rows, stored as 8 lanes R G B 0 (row i in
 * lane i) at out, 32-byte aligned. */
__attribute__((target("avx2"))) static inline void strip_pixel(
	const unsigned char *cols, const int32_t *k, int n, unsigned char *out)
{
	__m256i a0 = _mm256_set1_epi32(HALF), a1 = a0, a2 = a0;

	for (int t = 0; t < n; t++, cols += 32) {
		__m256i kt = _mm256_set1_epi32(k[t]);
		a0 = _mm256_add_epi32(a0, COL_TERM(cols, 0, kt));
		a1 = _mm256_add_epi32(a1, COL_TERM(cols, 1, kt));
		a2 = _mm256_add_epi32(a2, COL_TERM(cols, 2, kt));
	}
	store_pixel(a0, a1, a2, out);
}

/* Rows [0, m) of the transposed output strip px (32 bytes an output
 * pixel) into dst rows starting at out: 8 pixels at a time transposed
 * back and packed from R G B 0 to R G B. */
__attribute__((target("avx2"))) static void unstrip(const unsigned char *px,
						    int w, int m, unsigned char *out,
						    size_t stride)
{
	const __m128i pack = _mm_setr_epi8(RGB_PACK);
	int x = 0;

	for (; x + 8 <= w; x += 8) {
		__m256i v[8];
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			v[j] = _mm256_load_si256((const __m256i *)(px + (size_t)(x + j) * 32));
		transpose8(v);
		/* 16-byte stores write 4 bytes past each 12: the next group
		 * overwrites them; the row's last group stores exactly */
		int wide = 3 * x + 28 <= 3 * w;
		for (int i = 0; i < m; i++) {
			unsigned char *o = out + (size_t)i * stride + 3 * (size_t)x;
			__m128i lo = _mm_shuffle_epi8(_mm256_castsi256_si128(v[i]), pack);
			__m128i hi = _mm_shuffle_epi8(_mm256_extracti128_si256(v[i], 1), pack);
			if (wide) {
				_mm_storeu_si128((__m128i *)o, lo);
				_mm_storeu_si128((__m128i *)(o + 12), hi);
			} else {
				unsigned char tmp[32];
				_mm_storeu_si128((__m128i *)tmp, lo);
				_mm_storeu_si128((__m128i *)(tmp + 12), hi);
				memcpy(o, tmp, 24);
			}
		}
	}
	for (; x < w; x++)
		for (int i = 0; i < m; i++)
			memcpy(out + (size_t)i * stride + 3 * (size_t)x,
			       px + (size_t)x * 32 + 4 * i, 3);
}

/* The most taps any output pixel of c has (at most ksize). */
static int max_taps(const struct coeffs *c)
{
	int taps = 1;

	for (int xx = 0; xx < c->out_size; xx++)
		if (c->bounds[2 * xx + 1] > taps)
			taps = c->bounds[2 * xx + 1];
	return taps;
}

/* The output pixels of one strip with a fixed number of taps (a loop
 * whose trip count varies from pixel to pixel mispredicts its exit):
 * pixels with fewer taps read zero weights past their own.  A constant
 * taps lets the compiler unroll. */
__attribute__((target("avx2"), always_inline)) static inline void strip_row(
	const unsigned char *cols, const struct coeffs *c, int taps,
	unsigned char *px)
{
	for (int xx = 0; xx < c->out_size; xx++)
		strip_pixel(cols + (size_t)c->bounds[2 * xx] * 32,
			    c->k + (size_t)xx * c->kstride, taps,
			    px + (size_t)xx * 32);
}

__attribute__((target("avx2"))) static void strip_any(
	const unsigned char *cols, const struct coeffs *c, int taps,
	unsigned char *px)
{
	switch (taps) {
	case 2: strip_row(cols, c, 2, px); break;
	case 3: strip_row(cols, c, 3, px); break;
	case 4: strip_row(cols, c, 4, px); break;
	case 5: strip_row(cols, c, 5, px); break;
	case 6: strip_row(cols, c, 6, px); break;
	default: strip_row(cols, c, taps, px); break;
	}
}

/* ---- 3 channels with pmaddwd: tap pairs ----
 *
 * pairs[x] (96 bytes) holds the 24 samples of column x and those of
 * column x + 1 interleaved as int16: sample s of the strip (row s / 3,
 * channel s % 3) at int16 2s (column x) and 2s + 1 (column x + 1).  One
 * pmaddwd of 32 of those bytes with a broadcast pair of weights gives, in
 * each int32 lane, p_x w_t + p_(x+1) w_(t+1) for 8 samples; the high and
 * the low parts of the weights (resize.c's split_weights) go to two
 * accumulators, joined as (high << 11) + low at the end: exactly the
 * scalar kernel's int32 sum.  Two pmaddwd per tap pair and 8 samples:
 * as many multiplies as one pmulld per tap (each sample-tap product
 * needs two 16-bit products, pmaddwd's two per lane), but no
 * zero-extension per tap and one add per two taps.  The price is the
 * pairs: each column is stored twice, widened to int16 (strip_pairs).
 * With the 2 to 5 taps of a resize to 256 that costs more than it
 * saves: on an AMD Zen 4 (where pmulld is a single micro-op) a 500x375
 * RGB -> 341x256 bilinear resize takes 15% longer than with pmulld, and
 * 8% longer even with AVX512-VNNI's vpdpwssd folding the adds
 * (scripts/bench-resize).  Hence not the default (RFB_RESIZE_MADD);
 * kept, exact and tested, for cores where pmulld is two micro-ops of
 * 10 cycles (Intel's), to be measured there. */
#define PAIR_BYTES 96

__attribute__((target("avx2"))) static void strip_pairs(const unsigned char *cols,
							 int n, unsigned char *pairs)
{
	for (int x = 0; x < n; x++) {
		__m256i a = _mm256_load_si256((const __m256i *)(cols + (size_t)x * 32));
		__m256i b = _mm256_load_si256((const __m256i *)(cols + (size_t)x * 32 + 32));
		/* per 128-bit lane: samples 0-7 | 16-23, and 8-15 | unused */
		__m256i lo = _mm256_unpacklo_epi8(a, b), hi = _mm256_unpackhi_epi8(a, b);
		unsigned char *o = pairs + (size_t)x * PAIR_BYTES;
		_mm256_store_si256((__m256i *)o,
				   _mm256_cvtepu8_epi16(_mm256_castsi256_si128(lo)));
		_mm256_store_si256((__m256i *)(o + 32),
				   _mm256_cvtepu8_epi16(_mm256_castsi256_si128(hi)));
		_mm256_store_si256((__m256i *)(o + 64),
				   _mm256_cvtepu8_epi16(_mm256_extracti128_si256(lo, 1)));
	}
}

/* Output pixel of the 8 rows from npairs tap pairs at pp (pairs[first
 * source column]) and the split weights kp; stored like strip_pixel's. */
__attribute__((target("avx2"), always_inline)) static inline void strip_pixel_madd(
	const unsigned char *pp, const int32_t *kp, int npairs, unsigned char *out)
{
	__m256i h0 = _mm256_setzero_si256(), h1 = h0, h2 = h0;
	__m256i l0 = _mm256_set1_epi32(HALF), l1 = l0, l2 = l0;

	for (int j = 0; j < npairs; j++, pp += 2 * PAIR_BYTES) {
		__m256i wh = _mm256_set1_epi32(kp[2 * j]);
		__m256i wl = _mm256_set1_epi32(kp[2 * j + 1]);
		__m256i x0 = _mm256_load_si256((const __m256i *)pp);
		__m256i x1 = _mm256_load_si256((const __m256i *)(pp + 32));
		__m256i x2 = _mm256_load_si256((const __m256i *)(pp + 64));
		h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(x0, wh));
		l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(x0, wl));
		h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(x1, wh));
		l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(x1, wl));
		h2 = _mm256_add_epi32(h2, _mm256_madd_epi16(x2, wh));
		l2 = _mm256_add_epi32(l2, _mm256_madd_epi16(x2, wl));
	}
	/* int32 arithmetic wraps: the sum is exact whenever the scalar
	 * kernel's (which never overflows) is */
	h0 = _mm256_add_epi32(_mm256_slli_epi32(h0, MADD_LOW_BITS), l0);
	h1 = _mm256_add_epi32(_mm256_slli_epi32(h1, MADD_LOW_BITS), l1);
	h2 = _mm256_add_epi32(_mm256_slli_epi32(h2, MADD_LOW_BITS), l2);
	store_pixel(h0, h1, h2, out);
}

/* Output pixels [xx0, xx1); pairs holds the pairs from column lo on. */
__attribute__((target("avx2"), always_inline)) static inline void strip_row_madd(
	const unsigned char *pairs, int lo, const struct coeffs *c, int npairs,
	int xx0, int xx1, unsigned char *px)
{
	for (int xx = xx0; xx < xx1; xx++)
		strip_pixel_madd(pairs + (size_t)(c->bounds[2 * xx] - lo) * PAIR_BYTES,
				 c->kp + (size_t)xx * c->kstride, npairs,
				 px + (size_t)xx * 32);
}

/* A block of output pixels at a time, so that its pairs (96 bytes a
 * source column: a whole row's would not fit in L1) stay in L1 between
 * strip_pairs and their use; the source columns of a block start where
 * its first pixel's do (bounds only grow). */
#define MADD_BLOCK 32

__attribute__((target("avx2"))) static void strip_any_madd(
	const unsigned char *cols, const struct coeffs *c, int npairs,
	unsigned char *pairs, unsigned char *px)
{
	for (int xx0 = 0; xx0 < c->out_size; xx0 += MADD_BLOCK) {
		int xx1 = c->out_size - xx0 < MADD_BLOCK ? c->out_size : xx0 + MADD_BLOCK;
		int lo = c->bounds[2 * xx0];
		int hi = c->bounds[2 * (xx1 - 1)] + 2 * npairs - 1;
		strip_pairs(cols + (size_t)lo * 32, hi - lo, pairs);
		switch (npairs) {
		case 1: strip_row_madd(pairs, lo, c, 1, xx0, xx1, px); break;
		case 2: strip_row_madd(pairs, lo, c, 2, xx0, xx1, px); break;
		case 3: strip_row_madd(pairs, lo, c, 3, xx0, xx1, px); break;
		default: strip_row_madd(pairs, lo, c, npairs, xx0, xx1, px); break;
		}
	}
}

/* With pmaddwd (madd) or pmulld.  The scratch holds the columns (ksize
 * + 1 zero columns past the image: a pixel's last pair may read one
 * column past its last tap, with a zero weight), then the tap pairs
 * (madd only), then the output strip. */
__attribute__((target("avx2"))) static void hpass3(const rfb_image *src, int y0, int rows,
		   const struct coeffs *c, int madd, rfb_image *dst,
		   unsigned char *scratch)
{
	unsigned char *cols = scratch + (-(uintptr_t)scratch & 31);
	size_t ncols = (size_t)src->width + (size_t)c->ksize;
	unsigned char *pairs = cols + (ncols + 1) * 32;
	unsigned char *px = madd ? pairs + ncols * PAIR_BYTES : pairs;
	int taps = max_taps(c);

	/* weights past a pixel's count are zero (up to kstride > ksize
	 * when ksize is odd), and the columns past the image are zeros */
	memset(cols + (size_t)src->width * 32, 0, ((size_t)c->ksize + 1) * 32);
	for (int y = 0; y < rows; y += 8) {
		const unsigned char *r[8];
		int m = rows - y < 8 ? rows - y : 8;
		for (int i = 0; i < 8; i++) /* a short strip repeats a row */
			r[i] = src->data + (size_t)(y0 + y + (i < m ? i : 0)) * src->stride;
		strip_columns(r, src->width, cols);
		if (madd) {
			strip_any_madd(cols, c, (taps + 1) / 2, pairs, px);
		} else {
			strip_any(cols, c, taps, px);
		}
		unstrip(px, c->out_size, m, dst->data + (size_t)y * dst->stride,
			dst->stride);
	}
}

/* ---- 1 channel: strips of 8 rows, transposed ---- */

/* The 8 x 8 bytes of rows r[0..8) at x (8 bytes each) transposed: out
 * gets column x + j's 8 rows at out + 8 j. */
__attribute__((target("avx2"))) static inline void transpose8x8(
	const unsigned char *const r[8], size_t x, unsigned char *out)
{
	__m128i a[8], t[4], u[4];

	for (int i = 0; i < 8; i++)
		a[i] = _mm_loadl_epi64((const __m128i *)(r[i] + x));
	for (int i = 0; i < 4; i++)
		t[i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
	u[0] = _mm_unpacklo_epi16(t[0], t[1]);
	u[1] = _mm_unpackhi_epi16(t[0], t[1]);
	u[2] = _mm_unpacklo_epi16(t[2], t[3]);
	u[3] = _mm_unpackhi_epi16(t[2], t[3]);
	_mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi32(u[0], u[2]));
	_mm_storeu_si128((__m128i *)(out + 16), _mm_unpackhi_epi32(u[0], u[2]));
	_mm_storeu_si128((__m128i *)(out + 32), _mm_unpacklo_epi32(u[1], u[3]));
	_mm_storeu_si128((__m128i *)(out + 48), _mm_unpackhi_epi32(u[1], u[3]));
}

/* cols[x] = pixel x of the 8 rows r[0..8), 8 bytes. */
__attribute__((target("avx2"))) static void strip_columns1(
	const unsigned char *const r[8], int w, unsigned char *cols)
{
	int x = 0;

	for (; x + 8 <= w; x += 8)
		transpose8x8(r, (size_t)x, cols + (size_t)x * 8);
	for (; x < w; x++)
		for (int i = 0; i < 8; i++)
			cols[(size_t)x * 8 + i] = r[i][x];
}

/* The sums of the 8 rows' output pixel: 8 bytes (row i at i) at out. */
__attribute__((target("avx2"), always_inline)) static inline void store_pixel1(
	__m256i a, unsigned char *out)
{
	a = _mm256_srai_epi32(a, PRECISION_BITS);
	a = _mm256_packs_epi32(a, a);
	a = _mm256_packus_epi16(a, a); /* bytes 0-3 of each lane */
	a = _mm256_permutevar8x32_epi32(a, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
	_mm_storel_epi64((__m128i *)out, _mm256_castsi256_si128(a));
}

/* Output pixel of the 8 rows from n taps: 8 bytes (row i at i) at out. */
__attribute__((target("avx2"), always_inline)) static inline void strip_pixel1(
	const unsigned char *cols, const int32_t *k, int n, unsigned char *out)
{
	__m256i a = _mm256_set1_epi32(HALF);

	for (int t = 0; t < n; t++, cols += 8)
		a = _mm256_add_epi32(a, _mm256_mullo_epi32(
			_mm256_set1_epi32(k[t]),
			_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)cols))));
	store_pixel1(a, out);
}

__attribute__((target("avx2"), always_inline)) static inline void strip_row1(
	const unsigned char *cols, const struct coeffs *c, int taps,
	unsigned char *px)
{
	for (int xx = 0; xx < c->out_size; xx++)
		strip_pixel1(cols + (size_t)c->bounds[2 * xx] * 8,
			     c->k + (size_t)xx * c->kstride, taps, px + (size_t)xx * 8);
}

__attribute__((target("avx2"))) static void strip_any1(
	const unsigned char *cols, const struct coeffs *c, int taps,
	unsigned char *px)
{
	switch (taps) {
	case 2: strip_row1(cols, c, 2, px); break;
	case 3: strip_row1(cols, c, 3, px); break;
	case 4: strip_row1(cols, c, 4, px); break;
	case 5: strip_row1(cols, c, 5, px); break;
	case 6: strip_row1(cols, c, 6, px); break;
	default: strip_row1(cols, c, taps, px); break;
	}
}

/* Rows [0, m) of the output strip px (8 bytes an output pixel) into
 * dst rows starting at out. */
__attribute__((target("avx2"))) static void unstrip1(const unsigned char *px,
						     int w, int m, unsigned char *out,
						     size_t stride)
{
	unsigned char tmp[64];
	int x = 0;

	for (; x + 8 <= w; x += 8) {
		const unsigned char *cols[8];
		for (int j = 0; j < 8; j++)
			cols[j] = px + (size_t)(x + j) * 8;
		/* pixel-major to row-major: the same 8 x 8 transpose */
		transpose8x8(cols, 0, tmp);
		for (int i = 0; i < m; i++)
			memcpy(out + (size_t)i * stride + x, tmp + 8 * i, 8);
	}
	for (; x < w; x++)
		for (int i = 0; i < m; i++)
			out[(size_t)i * stride + x] = px[(size_t)x * 8 + i];
}

/* 1 channel with pmaddwd, as hpass3: pairs[x] (32 bytes) is column x's
 * 8 rows interleaved with column x + 1's as int16. */
__attribute__((target("avx2"))) static void strip_pairs1(const unsigned char *cols,
							  int n, unsigned char *pairs)
{
	for (int x = 0; x < n; x++) {
		__m128i a = _mm_loadl_epi64((const __m128i *)(cols + (size_t)x * 8));
		__m128i b = _mm_loadl_epi64((const __m128i *)(cols + (size_t)x * 8 + 8));
		_mm256_store_si256((__m256i *)(pairs + (size_t)x * 32),
				   _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)));
	}
}

__attribute__((target("avx2"), always_inline)) static inline void strip_row1_madd(
	const unsigned char *pairs, const struct coeffs *c, int npairs,
	unsigned char *px)
{
	for (int xx = 0; xx < c->out_size; xx++) {
		const unsigned char *pp = pairs + (size_t)c->bounds[2 * xx] * 32;
		const int32_t *kp = c->kp + (size_t)xx * c->kstride;
		__m256i h = _mm256_setzero_si256(), l = _mm256_set1_epi32(HALF);
		for (int j = 0; j < npairs; j++, pp += 64) {
			__m256i x = _mm256_load_si256((const __m256i *)pp);
			h = _mm256_add_epi32(h, _mm256_madd_epi16(
				x, _mm256_set1_epi32(kp[2 * j])));
			l = _mm256_add_epi32(l, _mm256_madd_epi16(
				x, _mm256_set1_epi32(kp[2 * j + 1])));
		}
		store_pixel1(_mm256_add_epi32(_mm256_slli_epi32(h, MADD_LOW_BITS), l),
			     px + (size_t)xx * 8);
	}
}

__attribute__((target("avx2"))) static void strip_any1_madd(
	const unsigned char *pairs, const struct coeffs *c, int npairs,
	unsigned char *px)
{
	switch (npairs) {
	case 1: strip_row1_madd(pairs, c, 1, px); break;
	case 2: strip_row1_madd(pairs, c, 2, px); break;
	case 3: strip_row1_madd(pairs, c, 3, px); break;
	default: strip_row1_madd(pairs, c, npairs, px); break;
	}
}

/* The scratch as hpass3's, with 8 bytes a column and 32 a pair. */
__attribute__((target("avx2"))) static void hpass1(const rfb_image *src, int y0,
						   int rows, const struct coeffs *c,
						   int madd, rfb_image *dst,
						   unsigned char *scratch)
{
	unsigned char *cols = scratch + (-(uintptr_t)scratch & 31);
	size_t ncols = (size_t)src->width + (size_t)c->ksize;
	unsigned char *pairs = cols + (((ncols + 1) * 8 + 31) & ~(size_t)31);
	unsigned char *px = madd ? pairs + ncols * 32 : pairs;
	int taps = max_taps(c);

	memset(cols + (size_t)src->width * 8, 0, ((size_t)c->ksize + 1) * 8);
	for (int y = 0; y < rows; y += 8) {
		const unsigned char *r[8];
		int m = rows - y < 8 ? rows - y : 8;
		for (int i = 0; i < 8; i++) /* a short strip repeats a row */
			r[i] = src->data + (size_t)(y0 + y + (i < m ? i : 0)) * src->stride;
		strip_columns1(r, src->width, cols);
		if (madd) {
			strip_pairs1(cols, (int)ncols, pairs);
			strip_any1_madd(pairs, c, (taps + 1) / 2, px);
		} else {
			strip_any1(cols, c, taps, px);
		}
		unstrip1(px, c->out_size, m, dst->data + (size_t)y * dst->stride,
			 dst->stride);
	}
}

__attribute__((target("avx2"))) void
rfbi_resize_hpass_avx2(const rfb_image *src, int y0, int rows,
		       const struct coeffs *c, int madd, rfb_image *dst,
		       unsigned char *scratch)
{
	if (src->channels == 3)
		hpass3(src, y0, rows, c, madd, dst, scratch);
	else
		hpass1(src, y0, rows, c, madd, dst, scratch);
}

#else

int rfbi_resize_have_avx2(void)
{
	return 0;
}

void rfbi_resize_hpass_avx2(const rfb_image *src, int y0, int rows,
			    const struct coeffs *c, int madd, rfb_image *dst,
			    unsigned char *scratch)
{
	(void)src, (void)y0, (void)rows, (void)c, (void)madd, (void)dst,
		(void)scratch;
}

void rfbi_resize_vrow_avx2(const unsigned char *in, size_t stride, int n,
			   const int32_t *k, unsigned char *out, size_t len)
{
	resize_vrow(in, stride, n, k, out, len);
}

#endif
