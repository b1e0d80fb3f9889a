/*
 * handover.h - records handed from refurb-partial to refurb-final in
 * shared memory instead of through the cache's files (refurb-plan(5),
 * "Handover"; refurb-partial(1) --handover).
 *
 * A record that no later epoch reads (every miss at r = 1) is written
 * into a ring in an anonymous shared memory file (memfd) that
 * refurb-partial creates and names in the annotated plan's header
 * (handover=/proc/PID/fd/N); its sample gets the address
 * @ffffffff.POSITION.LENGTH.WRITE-EPOCH: POSITION is a byte position in
 * the ring's stream, which only grows (its offset in the ring is POSITION
 * mod the ring's size).  refurb-final maps the same file, reads the
 * record in place (no write into the page cache, no read back) and, when
 * a batch is written, publishes the position below which it is done
 * (consumed); the writer reuses ring space only below it.  Records are the
 * cache's records byte for byte (refurb-cache(5)): same header, same
 * checksum.
 *
 * The ring's first 4096 bytes (all little-endian):
 *   0   8  magic "RFBHOVR1" (version 1)
 *   8   8  u64 ring bytes (after the header; a multiple of 64)
 *   16  4  u32 pid of the writer
 *   64  8  u64 consumed: written by the reader (atomic, only grows)
 *   128 4  u32 attached: set to 1 by the reader once it has mapped it
 * then the ring.  Nothing is on disk: the file goes away with the last
 * process that has it open or mapped.
 *
 * Internal to librefurb (refurb-partial's and refurb-final's engines
 * use it): not installed, not in refurb.h.
 */
#ifndef REFURB_HANDOVER_H
#define REFURB_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_HANDOVER_HEADER 4096
#define RFB_HANDOVER_MAGIC "RFBHOVR1"
/* The segment id of a handover address (no cache segment has it). */
#define RFB_HANDOVER_SEGMENT 0xffffffffu

typedef struct rfb_handover rfb_handover;

/*
 * Create a handover ring of ring_bytes (rounded up to 64) in a new memfd.
 * NULL with err filled on failure.  Free with rfb_handover_free().
 */
rfb_handover *rfb_handover_create(uint64_t ring_bytes, rfb_err *err);

/* Open the ring another process created at path (its handover= value)
 * and mark it attached.  NULL with err filled (path named) on failure. */
rfb_handover *rfb_handover_attach(const char *path, rfb_err *err);

/* Unmap and close.  NULL accepted. */
void rfb_handover_free(rfb_handover *h);

/* The path another process of this user opens the ring by
 * (/proc/PID/fd/N). */
const char *rfb_handover_path(const rfb_handover *h);

/*
 * Writer: copy rec[0..len) into the ring; *pos gets its position.
 * batch_start is the position of the first record of the batch being
 * written (rfb_handover_position() before it): records of a batch are
 * released together, so a batch must fit whole.  Waits while the reader
 * still uses the space, watching watch_fd (the pipe to the reader; -1:
 * none): RFB_EPIPE when the reader has gone.  RFB_ELIMIT, nothing
 * written, when the record and the rest of its batch do not fit in the
 * ring (the caller then writes it to the cache).
 */
int rfb_handover_put(rfb_handover *h, const unsigned char *rec, size_t len,
		     uint64_t batch_start, int watch_fd, uint64_t *pos,
		     rfb_err *err) RFB_MUST_CHECK;

/* Writer: the position the next record would start at, at the earliest. */
uint64_t rfb_handover_position(const rfb_handover *h);

/*
 * Writer: wait until a reader has attached (it opens the ring through
 * this process's /proc entry, so it must do so while this process runs),
 * watching watch_fd, for at most timeout_ms.  Returns 0, RFB_EPIPE when
 * the reader went away, RFB_ENOTFOUND when nobody attached in time (the
 * reader is no refurb-final: use the cache).
 */
int rfb_handover_wait_attached(rfb_handover *h, int watch_fd, int timeout_ms);

/* Writer: 1 if a reader has attached (at any time so far), else 0; does
 * not wait. */
int rfb_handover_attached(const rfb_handover *h);

/*
 * Reader: the record at pos, len bytes, in place, or NULL with err
 * filled when the address cannot be in the ring (the caller heals).
 * Valid until rfb_handover_release() passes it.
 */
const unsigned char *rfb_handover_get(const rfb_handover *h, uint64_t pos,
				      size_t len, rfb_err *err);

/* Reader: done with every record that ends at or below end. */
void rfb_handover_release(rfb_handover *h, uint64_t end);

#ifdef __cplusplus
}
#endif

#endif
