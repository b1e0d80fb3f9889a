/*
 * checksum.c - CRC-32C (hardware on x86-64 with SSE4.2, three
 * interleaved streams on long buffers; table otherwise) and the 64-bit
 * content hash (see checksum.h).
 */
#include <pthread.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"

#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t rfb_crc32c_sw(uint32_t crc, const void *data, size_t n)
{
	const unsigned char *p = data;

	pthread_once(&crc_once, crc_table_init);
	crc = ~crc;
	/* slicing-by-8: eight table lookups per 8-byte word */
	while (n >= 8) {
		uint32_t lo = crc ^ rfb_get_le32(p);
		uint32_t hi = rfb_get_le32(p + 4);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
/*
 * The crc32 instruction has a latency of 3 cycles and a throughput of 1,
 * so one dependent chain runs at a third of its speed.  Buffers of 3 *
 * STRIDE bytes or more are cut into three streams checksummed side by
 * side, the first continuing from crc, the other two from 0; since the
 * CRC register is linear, the CRC of a followed by b is the register of
 * a "shifted" over len(b) zero bytes xor the register of b from 0.  The
 * shift is a multiplication by x^(8 * STRIDE) modulo the polynomial,
 * linear in the register, done with four 256-entry tables (one per
 * byte) computed once.
 */
#define STRIDE_LONG 8192
#define STRIDE_SHORT 256

static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* a * b modulo the polynomial, in the reflected representation (bit 31
 * is x^0). */
static uint32_t mul_mod_poly(uint32_t a, uint32_t b)
{
	uint32_t product = 0;

	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			product ^= b;
		b = (b >> 1) ^ (CRC32C_POLY & (0u - (b & 1))); /* b *= x */
	}
	return product;
}

/* Tables of the operator "append n zero bytes". */
static void shift_tables(uint32_t table[4][256], size_t n)
{
	uint32_t xn = 1u << 31; /* x^0 */

	for (size_t i = 0; i < n; i++)
		xn = mul_mod_poly(xn, 1u << 23); /* times x^8 */
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			table[k][b] = mul_mod_poly(xn, b << (8 * k));
}

static void shift_init(void)
{
	shift_tables(shift_long, STRIDE_LONG);
	shift_tables(shift_short, STRIDE_SHORT);
}

static uint32_t shift(const uint32_t table[4][256], uint32_t crc)
{
	return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^
	       table[2][(crc >> 16) & 0xff] ^ table[3][crc >> 24];
}

__attribute__((target("sse4.2"))) static inline uint64_t
crc_word(uint64_t c, const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return __builtin_ia32_crc32di(c, w);
}

/* Three streams of stride bytes each from *p, combined into crc. */
__attribute__((target("sse4.2"))) static uint64_t
crc_three(uint64_t crc, const unsigned char **p, size_t stride,
	  const uint32_t table[4][256])
{
	const unsigned char *a = *p, *end = a + stride;
	uint64_t c1 = 0, c2 = 0;

	for (; a < end; a += 8) {
		crc = crc_word(crc, a);
		c1 = crc_word(c1, a + stride);
		c2 = crc_word(c2, a + 2 * stride);
	}
	crc = shift(table, (uint32_t)crc) ^ (uint32_t)c1;
	crc = shift(table, (uint32_t)crc) ^ (uint32_t)c2;
	*p += 3 * stride;
	return crc;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t c = ~crc;

	if (n >= 3 * STRIDE_SHORT) {
		pthread_once(&shift_once, shift_init);
		for (; n >= 3 * STRIDE_LONG; n -= 3 * STRIDE_LONG)
			c = crc_three(c, &p, STRIDE_LONG, shift_long);
		for (; n >= 3 * STRIDE_SHORT; n -= 3 * STRIDE_SHORT)
			c = crc_three(c, &p, STRIDE_SHORT, shift_short);
	}
	for (; n >= 8; n -= 8, p += 8)
		c = crc_word(c, p);
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

uint32_t rfb_crc32c(uint32_t crc, const void *data, size_t n)
{
	if (__builtin_cpu_supports("sse4.2"))
		return crc32c_hw(crc, data, n);
	return rfb_crc32c_sw(crc, data, n);
}
#else
uint32_t rfb_crc32c(uint32_t crc, const void *data, size_t n)
{
	return rfb_crc32c_sw(crc, data, n);
}
#endif

uint64_t rfb_hash64(const void *data, size_t n, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = rfb_mix64(seed ^ (0x9e3779b97f4a7c15ULL * (n + 1)));
	unsigned char tail[8] = { 0 };

	while (n >= 8) {
		h = rfb_mix64(h ^ rfb_mix64(rfb_get_le64(p) + 0x632be59bd9b4e019ULL));
		p += 8;
		n -= 8;
	}
	memcpy(tail, p, n);
	h = rfb_mix64(h ^ rfb_mix64(rfb_get_le64(tail) + n));
	return h;
}
