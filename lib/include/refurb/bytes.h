/*
 * bytes.h - fixed-width little-endian field helpers.
 *
 * Every on-disk and on-wire field of refurb goes through these, never
 * through fwrite() of a struct, so files are identical on every machine.
 * They also provide overflow-checked size arithmetic for lengths read from
 * untrusted headers.
 */
#ifndef REFURB_BYTES_H
#define REFURB_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline void rfb_put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void rfb_put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void rfb_put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t rfb_get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t rfb_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t rfb_get_le64(const unsigned char *p)
{
	return (uint64_t)rfb_get_le32(p) | (uint64_t)rfb_get_le32(p + 4) << 32;
}

/* IEEE-754 binary32/binary64 stored as their little-endian bit patterns. */
static inline void rfb_put_lef32(unsigned char *p, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	rfb_put_le32(p, u);
}

static inline float rfb_get_lef32(const unsigned char *p)
{
	uint32_t u = rfb_get_le32(p);
	float v;
	memcpy(&v, &u, 4);
	return v;
}

static inline void rfb_put_lef64(unsigned char *p, double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	rfb_put_le64(p, u);
}

static inline double rfb_get_lef64(const unsigned char *p)
{
	uint64_t u = rfb_get_le64(p);
	double v;
	memcpy(&v, &u, 8);
	return v;
}

/* *out = a * b; returns 0, or -1 (and leaves *out alone) on overflow. */
static inline int rfb_mul_size(size_t a, size_t b, size_t *out)
{
	size_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return -1;
	*out = r;
	return 0;
}

/* *out = a + b; returns 0, or -1 (and leaves *out alone) on overflow. */
static inline int rfb_add_size(size_t a, size_t b, size_t *out)
{
	size_t r;
	if (__builtin_add_overflow(a, b, &r))
		return -1;
	*out = r;
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif
