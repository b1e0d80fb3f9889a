/*
 * ops_color_avx2.c - the float-blend ops of ops_color.c (Sharpness,
 * Color, and the constant-level blend of Brightness and Contrast), the
 * luma sum of Contrast and AutoContrast with AVX2, chosen at run time.
 *
 * Every sample goes through the same IEEE single-precision operations in
 * the same order as in the scalar kernels of ops_color.c (the reference,
 * which tests compare these with byte for byte): products, sums and the
 * blend are computed lane by lane, no reassociation, no fused
 * multiply-add (the target is "avx2" only, and GCC does not contract
 * intrinsics into FMA without it).  Integer parts (luma) are exact.
 * Samples the vector loops do not reach (row ends) go through the scalar
 * per-sample helpers of ops_internal.h.
 */
#include <string.h>

#include "ops_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

int rfbi_ops_have_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}

static const unsigned char *row_in(const rfb_image *img, int y)
{
	return img->data + (size_t)y * img->stride;
}

static unsigned char *row_out(rfb_image *img, int y)
{
	return img->data + (size_t)y * img->stride;
}

/* 8 samples at p as int32 lanes; as floats. */
AVX2 static inline __m256i load8_epi32(const unsigned char *p)
{
	return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

AVX2 static inline __m256 load8_ps(const unsigned char *p)
{
	return _mm256_cvtepi32_ps(load8_epi32(p));
}

/* pil_blend of int32 lanes in1, in2 (float in1f = in1 given). */
AVX2 static inline __m256i blend8(__m256i in1, __m256 in1f, __m256i in2,
				  __m256 alpha)
{
	__m256 v = _mm256_add_ps(in1f, _mm256_mul_ps(alpha, _mm256_cvtepi32_ps(
						  _mm256_sub_epi32(in2, in1))));

	v = _mm256_max_ps(v, _mm256_setzero_ps());
	v = _mm256_min_ps(v, _mm256_set1_ps(255.0f));
	return _mm256_cvttps_epi32(v);
}

/* Four vectors of int32 in 0..255 (samples 0-7, 8-15, 16-23, 24-31) as
 * 32 bytes in order. */
AVX2 static inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d)
{
	__m256i v = _mm256_packus_epi16(_mm256_packs_epi32(a, b),
					_mm256_packs_epi32(c, d));

	return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* ---- blend with a constant level (Brightness, Contrast) ---- */

AVX2 void rfbi_ops_blend_level_avx2(const rfb_image *src, rfb_image *dst, int level,
				    float factor)
{
	const __m256i lv = _mm256_set1_epi32(level);
	const __m256 lvf = _mm256_set1_ps((float)level), a = _mm256_set1_ps(factor);
	size_t n = (size_t)src->width * (size_t)src->channels;

	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = row_in(src, y);
		unsigned char *out = row_out(dst, y);
		if (n < 32) {
			for (size_t i = 0; i < n; i++)
				out[i] = pil_blend(level, in[i], factor);
			continue;
		}
		/* the last block ends the row, overlapping the one before
		 * (the same values written twice) */
		for (size_t i = 0;; i += 32) {
			__m256i r[4];
			i = i + 32 > n ? n - 32 : i;
			for (int j = 0; j < 4; j++)
				r[j] = blend8(lv, lvf, load8_epi32(in + i + 8 * j), a);
			_mm256_storeu_si256((__m256i *)(out + i),
					    pack32(r[0], r[1], r[2], r[3]));
			if (i + 32 == n)
				break;
		}
	}
}

/* ---- luma ---- */

/* Pixels p[0..3] in the low lane and p[4..7] in the high lane (reads 28
 * bytes). */
AVX2 static inline __m256i load_rgb8(const unsigned char *p)
{
	return _mm256_inserti128_si256(
		_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
		_mm_loadu_si128((const __m128i *)(p + 12)), 1);
}

#define LANES(...) _mm256_setr_epi8(__VA_ARGS__, __VA_ARGS__)

/*
 * rgb2l of the 8 pixels of v (from load_rgb8) as int32 lanes:
 * (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16, exactly.  pmaddwd
 * multiplies signed 16-bit pairs: 38470 does not fit, so g is weighted
 * 38470 - 65536 and g << 16 added back; 0x8000 is 128 * 256.
 */
AVX2 static inline __m256i luma8(__m256i v)
{
	const __m256i rg = LANES(0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9,
				 -1, 10, -1);
	const __m256i b1 = LANES(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1,
				 11, -1, -1, -1);
	const __m256i g16 = LANES(-1, -1, 1, -1, -1, -1, 4, -1, -1, -1, 7, -1,
				  -1, -1, 10, -1);
	__m256i s = _mm256_madd_epi16(_mm256_shuffle_epi8(v, rg),
				      _mm256_set1_epi32((int)(38470u << 16 | 19595u)));
	__m256i t = _mm256_madd_epi16(
		_mm256_or_si256(_mm256_shuffle_epi8(v, b1), _mm256_set1_epi32(128 << 16)),
		_mm256_set1_epi32(256 << 16 | 7471));

	s = _mm256_add_epi32(_mm256_add_epi32(s, t), _mm256_shuffle_epi8(v, g16));
	return _mm256_srli_epi32(s, 16);
}

AVX2 uint64_t rfbi_ops_luma_sum_avx2(const rfb_image *img)
{
	uint64_t sum = 0;

	for (int y = 0; y < img->height; y++) {
		const unsigned char *p = row_in(img, y);
		__m256i acc = _mm256_setzero_si256();
		int x = 0;
		if (img->channels == 1) {
			/* psadbw: sums of 8 bytes in 64-bit lanes */
			for (; x + 32 <= img->width; x += 32)
				acc = _mm256_add_epi64(acc, _mm256_sad_epu8(
					_mm256_loadu_si256((const __m256i *)(p + x)),
					_mm256_setzero_si256()));
			for (; x < img->width; x++)
				sum += p[x];
		} else {
			/* a row has at most 65535 pixels: 8 lanes of luma <= 255
			 * fit in int32 lanes; widened to 64 bits per row */
			for (; 3 * x + 28 <= 3 * img->width; x += 8)
				acc = _mm256_add_epi32(acc, luma8(load_rgb8(p + 3 * x)));
			acc = _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(acc)),
					       _mm256_cvtepu32_epi64(_mm256_extracti128_si256(acc, 1)));
			for (; x < img->width; x++)
				sum += (uint64_t)pil_luma(p + 3 * x);
		}
		__m128i h = _mm_add_epi64(_mm256_castsi256_si128(acc),
					  _mm256_extracti128_si256(acc, 1));
		sum += (uint64_t)_mm_cvtsi128_si64(h) + (uint64_t)_mm_extract_epi64(h, 1);
	}
	return sum;
}

/* ---- Color ---- */

/* Blend of 8 pixels v (from load_rgb8) with their gray; returns them
 * packed: 24 bytes, then 8 undefined. */
AVX2 static inline __m256i color8(__m256i v, __m256 alpha)
{
	const __m256i r = LANES(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9,
				-1, -1, -1);
	const __m256i g = LANES(1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10,
				-1, -1, -1);
	const __m256i b = LANES(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11,
				-1, -1, -1);
	__m256i gray = luma8(v);
	__m256 grayf = _mm256_cvtepi32_ps(gray);
	__m256i ro = blend8(gray, grayf, _mm256_shuffle_epi8(v, r), alpha);
	__m256i go = blend8(gray, grayf, _mm256_shuffle_epi8(v, g), alpha);
	__m256i bo = blend8(gray, grayf, _mm256_shuffle_epi8(v, b), alpha);
	__m256i px = _mm256_or_si256(ro, _mm256_or_si256(_mm256_slli_epi32(go, 8),
							 _mm256_slli_epi32(bo, 16)));

	/* R G B 0 per pixel -> R G B: 12 bytes a lane, then join the lanes */
	px = _mm256_shuffle_epi8(px, LANES(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13,
					   14, -1, -1, -1, -1));
	return _mm256_permutevar8x32_epi32(px, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
}

AVX2 void rfbi_ops_color_avx2(const rfb_image *src, rfb_image *dst, float factor)
{
	const __m256 a = _mm256_set1_ps(factor);
	int w = src->width;

	if (src->channels == 1) {
		rfb_image_copy(dst, src); /* an L image converts to itself */
		return;
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = row_in(src, y);
		unsigned char *out = row_out(dst, y);
		int x = 0;
		/* 32-byte stores while they stay in the row (the next block
		 * overwrites the 8 extra bytes), then one exact block */
		for (; 3 * x + 32 <= 3 * w; x += 8)
			_mm256_storeu_si256((__m256i *)(out + 3 * x),
					    color8(load_rgb8(in + 3 * x), a));
		for (; 3 * x + 28 <= 3 * w; x += 8) {
			unsigned char tmp[32];
			_mm256_storeu_si256((__m256i *)tmp,
					    color8(load_rgb8(in + 3 * x), a));
			memcpy(out + 3 * x, tmp, 24);
		}
		for (; x < w; x++) {
			const unsigned char *p = in + 3 * x;
			int gray = pil_luma(p);
			for (int c = 0; c < 3; c++)
				out[3 * x + c] = pil_blend(gray, p[c], factor);
		}
	}
}

/* ---- AutoContrast ---- */

/* Min and max of the 96 samples at p into mn[0..3), mx[0..3). */
AVX2 static inline void range96(const unsigned char *p, __m256i mn[3],
				__m256i mx[3])
{
	for (int j = 0; j < 3; j++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(p + 32 * j));
		mn[j] = _mm256_min_epu8(mn[j], v);
		mx[j] = _mm256_max_epu8(mx[j], v);
	}
}

/* Per-channel minimum and maximum of img (channels 1 or 3). */
AVX2 static void channel_range(const rfb_image *img, int lo[3], int hi[3])
{
	const int c = img->channels;
	size_t n = (size_t)img->width * (size_t)c;
	/* 96 bytes (a multiple of 3) per step, so that byte b of vector j
	 * always holds channel (32 j + b) % 3; a row's last step starts at
	 * n - 96 (also a multiple of 3), overlapping the one before, which
	 * does not change a minimum or a maximum */
	__m256i mn[3], mx[3];
	unsigned char vmin[96], vmax[96];

	for (int j = 0; j < 3; j++) {
		mn[j] = _mm256_set1_epi8(-1);
		mx[j] = _mm256_setzero_si256();
	}
	for (int k = 0; k < 3; k++)
		lo[k] = 255, hi[k] = 0;
	for (int y = 0; y < img->height; y++) {
		const unsigned char *p = row_in(img, y);
		if (n < 96) {
			for (size_t i = 0; i < n; i++) {
				int k = c == 1 ? 0 : (int)(i % 3);
				lo[k] = p[i] < lo[k] ? p[i] : lo[k];
				hi[k] = p[i] > hi[k] ? p[i] : hi[k];
			}
			continue;
		}
		for (size_t i = 0; i + 96 <= n; i += 96)
			range96(p + i, mn, mx);
		range96(p + n - 96, mn, mx);
	}
	for (int j = 0; j < 3; j++) {
		_mm256_storeu_si256((__m256i *)(vmin + 32 * j), mn[j]);
		_mm256_storeu_si256((__m256i *)(vmax + 32 * j), mx[j]);
	}
	for (int b = 0; b < 96; b++) {
		int k = b % c;
		lo[k] = vmin[b] < lo[k] ? vmin[b] : lo[k];
		hi[k] = vmax[b] > hi[k] ? vmax[b] : hi[k];
	}
}

/* int(x * scale + offset) for the 4 samples at in, as int32. */
AVX2 static inline __m128i stretch4(const unsigned char *in, __m256d scale,
				    __m256d offset)
{
	int32_t four;
	__m256d x;

	memcpy(&four, in, 4);
	x = _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(four)));
	/* truncation toward zero, like int() */
	return _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_mul_pd(x, scale), offset));
}

/* 48 samples (16 pixels: 12 groups of 4) at in to out; group g uses
 * sc[g % 3] and of[g % 3], whose lanes hold channels (g + l) % 3. */
AVX2 static inline void stretch48(const unsigned char *in, unsigned char *out,
				  const __m256d sc[3], const __m256d of[3])
{
#pragma GCC unroll 3
	for (int q = 0; q < 3; q++) {
		__m128i r[4];
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			r[v] = stretch4(in + 16 * q + 4 * v, sc[(4 * q + v) % 3],
					of[(4 * q + v) % 3]);
		/* saturating packs clip to 0..255 (|value| < 2^17 here) */
		_mm_storeu_si128((__m128i *)(out + 16 * q),
				 _mm_packus_epi16(_mm_packs_epi32(r[0], r[1]),
						  _mm_packs_epi32(r[2], r[3])));
	}
}

AVX2 void rfbi_ops_autocontrast_avx2(const rfb_image *stats,
				     const rfb_image *src, rfb_image *dst)
{
	const int c = src->channels;
	size_t n = (size_t)src->width * (size_t)c;
	unsigned char lut[3][256];
	double scale[3], offset[3];
	int lo[3], hi[3], flat = 1;
	__m256d sc[3], of[3];

	channel_range(stats, lo, hi);
	for (int k = 0; k < c; k++) {
		/* ImageOps.autocontrast: an identity table when hi <= lo */
		scale[k] = hi[k] <= lo[k] ? 1.0 : 255.0 / (hi[k] - lo[k]);
		offset[k] = hi[k] <= lo[k] ? 0.0 : -lo[k] * scale[k];
		flat &= hi[k] <= lo[k];
		for (int i = 0; i < 256; i++) {
			double v = i * scale[k] + offset[k];
			lut[k][i] = v < 0.0 ? 0 : v >= 255.0 ? 255 : (unsigned char)(int)v;
		}
	}
	if (flat) {
		rfb_image_copy(dst, src);
		return;
	}
	for (int j = 0; j < 3; j++) {
		int k0 = (c == 3) ? j : 0, k1 = (c == 3) ? (j + 1) % 3 : 0,
		    k2 = (c == 3) ? (j + 2) % 3 : 0;
		sc[j] = _mm256_setr_pd(scale[k0], scale[k1], scale[k2], scale[k0]);
		of[j] = _mm256_setr_pd(offset[k0], offset[k1], offset[k2], offset[k0]);
	}
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = row_in(src, y);
		unsigned char *out = row_out(dst, y);
		/* 48 samples (a multiple of 3 and of 16) per step, the last
		 * one at n - 48 (overlapping: same values written twice) */
		if (n < 48) {
			for (size_t i = 0; i < n; i++)
				out[i] = lut[c == 1 ? 0 : i % 3][in[i]];
			continue;
		}
		for (size_t i = 0; i + 48 <= n; i += 48)
			stretch48(in + i, out + i, sc, of);
		stretch48(in + n - 48, out + n - 48, sc, of);
	}
}

/* ---- Sharpness ---- */

#define SHARP_CHUNK 256 /* samples of a column strip (a multiple of 8) */

/* Row sums of 8 samples at p (d apart): h = (p[-d] k1 + p[0] k1) +
 * p[d] k1 (the above/below rows' term) and c = (p[-d] k1 + p[0] k5) +
 * p[d] k1 (the centre row's term), stored at h and c. */
AVX2 static inline void row_terms(const unsigned char *p, size_t d, float *h,
				  float *c)
{
	const __m256 k1 = _mm256_set1_ps(1.0f / 13.0f);
	const __m256 k5 = _mm256_set1_ps(5.0f / 13.0f);
	__m256 left = _mm256_mul_ps(load8_ps(p - d), k1);
	__m256 mid = load8_ps(p);
	__m256 right = _mm256_mul_ps(load8_ps(p + d), k1);

	_mm256_storeu_ps(h, _mm256_add_ps(_mm256_add_ps(left, _mm256_mul_ps(mid, k1)),
					  right));
	_mm256_storeu_ps(c, _mm256_add_ps(_mm256_add_ps(left, _mm256_mul_ps(mid, k5)),
					  right));
}

/* row_terms of the m samples at p into slot (the row's index + 1) % 3. */
AVX2 static void strip_terms(const unsigned char *p, int slot, size_t m,
			     size_t d, float h[3][SHARP_CHUNK],
			     float c[3][SHARP_CHUNK])
{
	for (size_t i = 0; i < m; i += 8)
		row_terms(p + i, d, h[slot] + i, c[slot] + i);
}

/* Output row r (m samples from out) from the terms of rows r - 1 .. r + 1
 * (slots r % 3 .. (r + 2) % 3) and the samples at in. */
AVX2 static void strip_out(const unsigned char *in, unsigned char *out, int r,
			   size_t m, float h[3][SHARP_CHUNK],
			   float c[3][SHARP_CHUNK], __m256 alpha)
{
	const float *above = h[r % 3], *mid = c[(r + 1) % 3], *below = h[(r + 2) % 3];

	for (size_t i = 0; i < m; i += 8) {
		/* ss = ((0.5 + below) + centre) + above, as Filter.c adds */
		__m256 ss = _mm256_add_ps(_mm256_set1_ps(0.5f), _mm256_loadu_ps(below + i));
		ss = _mm256_add_ps(ss, _mm256_loadu_ps(mid + i));
		ss = _mm256_add_ps(ss, _mm256_loadu_ps(above + i));
		__m256i sm = _mm256_cvttps_epi32(ss);
		__m256i o = blend8(sm, _mm256_cvtepi32_ps(sm), load8_epi32(in + i), alpha);
		o = _mm256_packs_epi32(o, o);
		o = _mm256_packus_epi16(o, o); /* bytes 0-3 of each lane */
		o = _mm256_permutevar8x32_epi32(o, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
		_mm_storel_epi64((__m128i *)(out + i), _mm256_castsi256_si128(o));
	}
}

/* m samples (a multiple of 8, at most SHARP_CHUNK) of every row. */
AVX2 static void sharpen_strip(const unsigned char *in, size_t in_stride,
			       unsigned char *out, size_t out_stride, int rows,
			       size_t m, size_t d, __m256 alpha)
{
	float h[3][SHARP_CHUNK], c[3][SHARP_CHUNK];

	strip_terms(in - in_stride, 0, m, d, h, c);
	strip_terms(in, 1, m, d, h, c);
	for (int r = 0; r < rows; r++) {
		strip_terms(in + (size_t)(r + 1) * in_stride, (r + 2) % 3, m, d, h, c);
		strip_out(in + (size_t)r * in_stride, out + (size_t)r * out_stride, r,
			  m, h, c, alpha);
	}
}

AVX2 void rfbi_ops_sharpen_block_avx2(const unsigned char *in, size_t in_stride,
				      unsigned char *out, size_t out_stride,
				      int rows, size_t m, size_t d, float factor)
{
	const __m256 alpha = _mm256_set1_ps(factor);
	size_t vec = m & ~(size_t)7, i;

	for (i = 0; i < vec; i += SHARP_CHUNK)
		sharpen_strip(in + i, in_stride, out + i, out_stride, rows,
			      vec - i < SHARP_CHUNK ? vec - i : SHARP_CHUNK, d, alpha);
	if (vec < m)
		ops_sharpen_block_scalar(in + vec, in_stride, out + vec,
					 out_stride, rows, m - vec, d, factor);
}

#else

/* Without x86-64 there is no AVX2: ops_color.c asks rfbi_ops_have_avx2()
 * first and never calls the kernels below, which exist only so that it
 * links.  They do not fall back to the scalar kernels of ops_color.c,
 * which would make the two files call each other. */
#include <stdlib.h>

int rfbi_ops_have_avx2(void)
{
	return 0;
}

void rfbi_ops_blend_level_avx2(const rfb_image *src, rfb_image *dst, int level,
			       float factor)
{
	(void)src, (void)dst, (void)level, (void)factor;
	abort();
}

uint64_t rfbi_ops_luma_sum_avx2(const rfb_image *img)
{
	(void)img;
	abort();
}

void rfbi_ops_color_avx2(const rfb_image *src, rfb_image *dst, float factor)
{
	(void)src, (void)dst, (void)factor;
	abort();
}

void rfbi_ops_sharpen_block_avx2(const unsigned char *in, size_t in_stride,
				 unsigned char *out, size_t out_stride, int rows,
				 size_t m, size_t d, float factor)
{
	(void)in, (void)in_stride, (void)out, (void)out_stride, (void)rows;
	(void)m, (void)d, (void)factor;
	abort();
}

void rfbi_ops_autocontrast_avx2(const rfb_image *stats, const rfb_image *src,
				rfb_image *dst)
{
	(void)stats, (void)src, (void)dst;
	abort();
}

#endif
