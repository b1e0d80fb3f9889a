/*
 * checksum.h - record checksums and content identities.
 *
 * Records and headers are protected by CRC-32C (Castagnoli): it detects
 * every burst error up to 32 bits and all odd bit counts, it is the
 * checksum of iSCSI, ext4 and Btrfs metadata, and x86-64 computes it in
 * hardware (SSE4.2 crc32 instruction, >10 GB/s) so verifying every record
 * on every read costs next to nothing.  A software table implementation is
 * used where the instruction is missing; both give the same values.
 *
 * Identities (of an index, a schedule, a pipeline) are 64-bit hashes, so
 * that two different inputs are practically never taken for the same one.
 */
#ifndef REFURB_CHECKSUM_H
#define REFURB_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * CRC-32C of n bytes, continuing from crc (pass 0 to start).  Chaining
 * rfb_crc32c(rfb_crc32c(0, a, na), b, nb) equals the CRC of a followed by b.
 */
uint32_t rfb_crc32c(uint32_t crc, const void *data, size_t n);

/* The portable table implementation, exposed for tests. */
uint32_t rfb_crc32c_sw(uint32_t crc, const void *data, size_t n);

/* 64-bit non-cryptographic hash of n bytes with a seed. */
uint64_t rfb_hash64(const void *data, size_t n, uint64_t seed);

/* Mix a 64-bit value into a well-distributed one (SplitMix64 finalizer). */
static inline uint64_t rfb_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#ifdef __cplusplus
}
#endif

#endif
