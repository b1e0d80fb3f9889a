/*
 * advise_internal.h - what refurb-advise's measurement (advise.c) takes
 * from the other files of its concept.
 */
#ifndef REFURB_ADVISE_INTERNAL_H
#define REFURB_ADVISE_INTERNAL_H

#include <stddef.h>

/* CPU seconds (both ends) to pass one image of bytes through the batch
 * stream: copied into a frame, checksummed, written to a pipe, read into
 * a fresh buffer, checksummed again; NAN when the pipe or a thread cannot
 * be had (advise_transfer.c). */
double rfbi_advise_time_transfer(size_t bytes);

#endif
