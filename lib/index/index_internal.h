/*
 * index_internal.h - what the writing (index_build.c) and the reading
 * (index_read.c) of refurb-index(5) share.
 */
#ifndef REFURB_INDEX_INTERNAL_H
#define REFURB_INDEX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define INDEX_HEADER_SIZE 80      /* version 2 */
#define INDEX_RECORD_SIZE 48
#define INDEX_RECORD_CONTENT 24   /* label .. bytes: what a sample is */

/*
 * The identity of a version 2 index: a hash of the class section and of
 * the first INDEX_RECORD_CONTENT bytes of each of the n records (what the
 * samples are, not where they are stored), seeded with n.
 */
uint64_t rfbi_index_identity_v2(const unsigned char *classes, size_t classes_len,
				const unsigned char *records, uint32_t n);

#endif
