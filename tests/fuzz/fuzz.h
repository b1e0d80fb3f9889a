/*
 * fuzz.h - what the fuzz targets share.
 *
 * Each tests/fuzz/fuzz_NAME.c defines its body with FUZZ_TARGET(NAME): a
 * function fuzz_NAME(data, size) that feeds one input to a reader of
 * librefurb, checks what the reader promises (FUZZ_ASSERT aborts, which
 * libFuzzer reports as a crash), frees everything and returns 1 if the
 * reader accepted the input as a whole (a seed of the corpus must), 0 if
 * it rejected it.  Built by
 * tests/fuzz/fuzz.mk, the same file also defines LLVMFuzzerTestOneInput;
 * with FUZZ_NO_MAIN defined it defines only fuzz_NAME, so that
 * tests/unit/test_fuzz_regressions.c can include every target and replay
 * the saved inputs with the normal build.
 *
 * Most formats carry checksums that a mutated input almost never
 * matches, which would keep the fuzzer in front of the first CRC check.
 * The targets therefore repair the checksums of their copy of the input
 * (fuzz_fix_* below) before handing it to the reader: the fuzzer then
 * explores the parsing behind them.  The checksum tests themselves are
 * in the unit tests.
 */
#ifndef REFURB_FUZZ_H
#define REFURB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/error.h"

/* An invariant of the reader under test: abort (a finding) if false. */
#define FUZZ_ASSERT(cond)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: invariant failed: %s\n",   \
				__FILE__, __LINE__, #cond);                \
			abort();                                           \
		}                                                          \
	} while (0)

/*
 * A reader's refusal: a negative code (rc, when the function returns one)
 * and a message.  Never RFB_ENOMEM: the inputs are small, so a reader
 * that runs out of memory allocated what the input claims instead of what
 * it holds (tests/unit/test_fuzz_regressions.c caps the address space so
 * that such an allocation fails there too).
 */
#define FUZZ_REJECTED(err, rc)                                             \
	FUZZ_ASSERT((err)->code < 0 && (err)->code == (rc) &&               \
		    (err)->code != RFB_ENOMEM && (err)->msg[0])

#ifdef FUZZ_NO_MAIN
#define FUZZ_TARGET(name)                                                  \
	int fuzz_##name(const uint8_t *data, size_t size)
#else
#define FUZZ_TARGET(name)                                                  \
	int fuzz_##name(const uint8_t *data, size_t size);                 \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);      \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)       \
	{                                                                  \
		(void)fuzz_##name(data, size);                             \
		return 0;                                                  \
	}                                                                  \
	int fuzz_##name(const uint8_t *data, size_t size)
#endif

/* A malloc'ed copy of the input (at least 1 byte allocated), or abort:
 * running out of memory for the input itself is not a finding. */
static inline unsigned char *fuzz_copy(const uint8_t *data, size_t size)
{
	unsigned char *p = malloc(size ? size : 1);

	if (!p)
		abort();
	if (size)
		memcpy(p, data, size);
	return p;
}

/* Store at p the CRC-32C of n bytes at q, if both lie inside [b, b+len). */
static inline void fuzz_fix_crc(unsigned char *b, size_t len, size_t p,
				size_t q, size_t n)
{
	if (p <= len && len - p >= 4 && q <= len && len - q >= n)
		rfb_put_le32(b + p, rfb_crc32c(0, b + q, n));
}

#endif
