/*
 * transform_ssse3.c - horizontal flips and gray to RGB expansion with
 * SSSE3 byte shuffles, chosen at run time: 16 gray pixels or 5 RGB
 * pixels (15 bytes) reversed by one pshufb, 16 gray pixels widened to 48
 * bytes by three.  A flip only moves bytes, so the result is the scalar loop's of
 * transform.c; these functions do the part of a row they can reach with
 * 16-byte loads and stores that stay inside it, and say how far they got.
 */
#include "transform_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define SSSE3 __attribute__((target("ssse3")))

int rfbi_transform_have_ssse3(void)
{
	return __builtin_cpu_supports("ssse3");
}

/* Bytes 1..15 of v hold 5 RGB pixels: put them in reverse order in
 * bytes 0..14 (byte 15 undefined). */
SSSE3 static inline __m128i reverse5(__m128i v)
{
	return _mm_shuffle_epi8(v, _mm_setr_epi8(13, 14, 15, 10, 11, 12, 7, 8, 9,
						 4, 5, 6, 1, 2, 3, -1));
}

/* The same 5 pixels in bytes 0..14: reversed into bytes 1..15. */
SSSE3 static inline __m128i reverse5_hi(__m128i v)
{
	return _mm_shuffle_epi8(v, _mm_setr_epi8(-1, 12, 13, 14, 9, 10, 11, 6, 7,
						 8, 3, 4, 5, 0, 1, 2));
}

SSSE3 static inline __m128i reverse16(__m128i v)
{
	return _mm_shuffle_epi8(v, _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7,
						 6, 5, 4, 3, 2, 1, 0));
}

SSSE3 static inline __m128i load16(const unsigned char *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

SSSE3 static inline void store16(unsigned char *p, __m128i v)
{
	_mm_storeu_si128((__m128i *)p, v);
}

SSSE3 int rfbi_flip_row_ssse3(const unsigned char *in, unsigned char *out,
			     int w, int ch)
{
	int x = 0;

	if (ch == 1) {
		for (; x + 16 <= w; x += 16)
			store16(out + x, reverse16(load16(in + w - x - 16)));
		return x;
	}
	/* output pixels x .. x + 4 are input pixels w - x - 5 .. w - x - 1,
	 * loaded with the byte before them; the store's 16th byte is the
	 * next block's first */
	for (; x + 6 <= w; x += 5)
		store16(out + 3 * x, reverse5(load16(in + 3 * (w - x - 5) - 1)));
	return x;
}

SSSE3 int rfbi_flip_inplace_ssse3(unsigned char *row, int w, int ch)
{
	int a = 0;

	if (ch == 1) {
		for (; 2 * (a + 16) <= w; a += 16) {
			unsigned char *r = row + w - a - 16;
			__m128i left = load16(row + a), right = load16(r);
			store16(row + a, reverse16(right));
			store16(r, reverse16(left));
		}
		return a;
	}
	/* left block: pixels a .. a + 4 and the first byte of pixel a + 5;
	 * right block: the last byte of pixel w - a - 6, then pixels
	 * w - a - 5 .. w - a - 1; the extra bytes (not swapped yet) are
	 * stored back unchanged */
	const __m128i last = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					   0, 0, 0, -1);
	const __m128i first = _mm_setr_epi8(-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					    0, 0, 0, 0, 0);
	for (; 2 * (a + 5) + 2 <= w; a += 5) {
		unsigned char *l = row + 3 * a, *r = row + 3 * (w - a - 5) - 1;
		__m128i left = load16(l), right = load16(r);
		store16(l, _mm_or_si128(reverse5(right), _mm_and_si128(left, last)));
		store16(r, _mm_or_si128(reverse5_hi(left), _mm_and_si128(right, first)));
	}
	return a;
}

SSSE3 int rfbi_gray_to_rgb_ssse3(const unsigned char *in, unsigned char *out,
				int w)
{
	const __m128i m0 = _mm_setr_epi8(0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4,
					 4, 5);
	const __m128i m1 = _mm_setr_epi8(5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9,
					 9, 10, 10);
	const __m128i m2 = _mm_setr_epi8(10, 11, 11, 11, 12, 12, 12, 13, 13, 13,
					 14, 14, 14, 15, 15, 15);
	int x = 0;

	for (; x + 16 <= w; x += 16) {
		__m128i g = load16(in + x);
		store16(out + 3 * x, _mm_shuffle_epi8(g, m0));
		store16(out + 3 * x + 16, _mm_shuffle_epi8(g, m1));
		store16(out + 3 * x + 32, _mm_shuffle_epi8(g, m2));
	}
	return x;
}

#else

int rfbi_gray_to_rgb_ssse3(const unsigned char *in, unsigned char *out, int w)
{
	(void)in, (void)out, (void)w;
	return 0;
}

int rfbi_transform_have_ssse3(void)
{
	return 0;
}

int rfbi_flip_row_ssse3(const unsigned char *in, unsigned char *out, int w,
			int ch)
{
	(void)in, (void)out, (void)w, (void)ch;
	return 0;
}

int rfbi_flip_inplace_ssse3(unsigned char *row, int w, int ch)
{
	(void)row, (void)w, (void)ch;
	return 0;
}

#endif
