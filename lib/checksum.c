/*
 * checksum.c - CRC-32C (hardware on x86-64 with SSE4.2, table otherwise)
 * and the 64-bit content hash (see checksum.h).
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
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t c = ~crc;

	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		n -= 8;
	}
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
