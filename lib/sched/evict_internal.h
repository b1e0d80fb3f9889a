/*
 * evict_internal.h - the records of refurb-evict(5), each with one
 * encoder and one decoder (evict_format.c), for evict.c.
 */
#ifndef REFURB_EVICT_INTERNAL_H
#define REFURB_EVICT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/evict.h"

#define EVICT_VERSION 2           /* the newest version, read and written:
				   * the shards' Feistel partition */
#define EVICT_VERSION_ONE_SHARD 1 /* what a schedule of one shard, the same
				   * in both, is still written as */
#define EVICT_ENTRY_BYTES 6      /* a sample's id and phase in the body */

/* The header's fields (refurb-evict(5), Header). */
struct evict_header {
	unsigned version;        /* 1 to EVICT_VERSION */
	rfb_evict_params p;      /* what the schedule is a function of */
	uint32_t n;              /* samples in the shard */
	uint32_t body_crc;       /* CRC-32C of the body */
};

/* The 64-byte header of h (its version byte h->version), its checksum
 * computed. */
void rfbi_evict_header_encode(const struct evict_header *h,
			      unsigned char out[RFB_EVICT_HEADER_SIZE]);
/* The header at in (len bytes of file): 0, or RFB_EFORMAT (bad magic, or
 * unknown header size, flags or reserved field), RFB_ETRUNC, RFB_EVERSION
 * (a version above EVICT_VERSION) or RFB_ECHECKSUM with err filled (name for messages).  The parameters
 * are not checked. */
int rfbi_evict_header_decode(const unsigned char *in, size_t len,
			     struct evict_header *h, const char *name,
			     rfb_err *err) RFB_MUST_CHECK;

/* The body of n samples: EVICT_ENTRY_BYTES * n bytes at out / in. */
void rfbi_evict_body_encode(const uint32_t *ids, const uint16_t *phases,
			    uint32_t n, unsigned char *out);
void rfbi_evict_body_decode(const unsigned char *in, uint32_t n,
			    uint32_t *ids, uint16_t *phases);

#endif
