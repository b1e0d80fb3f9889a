/*
 * aio.h - the batched reader of cache records (refurb-final's reads).
 *
 * An rfb_batch_reader reads the records of one mini-batch from a cache
 * view (cache.h) with Linux AIO: every read of the batch goes to the
 * kernel in one io_submit call, the completions are collected with
 * io_getevents, and every record is checked (short read, header, expected
 * sample id, payload CRC-32C).  The caller gets one result per address, in
 * the order given, and goes on with the good records; a bad one (corrupt,
 * truncated, its segment deleted) is reported, never fatal, so that it can
 * be recomputed from the original image.
 *
 * One reader holds one batch at a time: submit, then wait.  To overlap
 * batches (submit batch k+1 while batch k is being decoded), create one
 * reader per in-flight slot on the same view and alternate between them;
 * each has its own io_context, control blocks and buffers.  Readers that
 * share a view must be used from one thread (the view is not thread-safe);
 * a worker thread has its own view and its own readers.
 *
 * Buffered mode (view opened with direct = 0): each record is read exactly.
 * Linux performs buffered AIO reads synchronously inside io_submit (it
 * copies from the page cache, and waits for the disk if the data is not
 * cached), so io_submit may block; the batch is still one system call.
 *
 * Direct mode (view opened with direct = 1, segments opened with
 * O_DIRECT): records are packed without alignment, so the reader reads the
 * aligned window that covers each record (offset rounded down, end rounded
 * up to the direct-I/O alignment: statx's stx_dio_offset_align, else the
 * device's logical block size (BLKSSZGET), else 4096) into an aligned
 * buffer, and points at the record inside it.  A filesystem that refuses
 * O_DIRECT (the segment cannot be opened with it, statx says it is not
 * supported, or a read fails with EINVAL) is read buffered instead: the
 * reader's mode becomes RFB_BATCH_DIRECT_REFUSED so that the caller can
 * warn; nothing is printed.
 *
 * Memory: the control blocks and results are allocated at creation; the
 * read buffer (one arena per reader, so one per in-flight batch) grows to
 * the largest batch seen and never shrinks, so the steady state allocates
 * nothing.
 *
 * Internal to librefurb (its stages use it; tests too): not installed,
 * not in refurb.h.
 */
#ifndef REFURB_AIO_H
#define REFURB_AIO_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/cache.h"
#include "refurb/error.h"
#include "refurb/record.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_BATCH_MAX 65536u              /* largest max_batch accepted */
#define RFB_BATCH_ANY_SAMPLE 0xffffffffu  /* expected sample: do not check */
#define RFB_BATCH_DEFAULT_ALIGN 4096u     /* direct-I/O alignment fallback */

/* How a reader reads (rfb_batch_reader_mode). */
enum rfb_batch_mode {
	RFB_BATCH_BUFFERED = 0,        /* the view was opened without O_DIRECT */
	RFB_BATCH_DIRECT = 1,          /* O_DIRECT, aligned windows */
	RFB_BATCH_DIRECT_REFUSED = 2,  /* O_DIRECT asked for, but the
					* filesystem refused it for at least
					* one segment: read buffered there */
};

/* The outcome of one record of a batch. */
struct rfb_batch_record {
	const unsigned char *data;     /* the record (header + payload) inside
					* the reader's buffer when status is
					* 0, else NULL; valid until the next
					* submit on this reader or its free */
	size_t length;                 /* bytes at data (the address's length) */
	int status;                    /* 0 or a negative RFB_E* code */
	struct rfb_record_meta meta;   /* the parsed header when status is 0 */
	rfb_err why;                   /* what went wrong when status != 0 */
};

/* Counters since the reader was made (totals over all batches). */
struct rfb_batch_stats {
	uint64_t batches;              /* batches collected by wait */
	uint64_t submit_calls;         /* io_submit system calls, retries of
					* partial submissions included */
	uint64_t records;              /* records asked for */
	uint64_t bad_records;          /* of which status != 0 */
	uint64_t bytes_read;           /* bytes the reads transferred
					* (alignment padding included) */
	uint64_t record_bytes;         /* bytes of good records delivered */
	uint64_t submit_us;            /* microseconds inside io_submit */
	uint64_t wait_us;              /* microseconds inside io_getevents */
	uint64_t refused_segments;     /* segments read buffered because the
					* filesystem refused O_DIRECT */
	uint64_t sync_rereads;         /* records read again with pread after
					* an O_DIRECT read failed with EINVAL */
	uint64_t buffer_bytes;         /* size of the read buffer now */
	uint64_t buffer_grows;         /* times it was (re)allocated */
	uint32_t align;                /* direct-I/O alignment in use (0 until
					* the first direct segment is seen) */
};

typedef struct rfb_batch_reader rfb_batch_reader;

/*
 * Make a reader of batches of at most max_batch (1 .. RFB_BATCH_MAX)
 * records from view, with an io_context of max_batch events.  The reader
 * borrows view (free the reader before closing the view) and reads direct
 * when view was opened with direct = 1.  Returns the reader, or NULL with err filled
 * (RFB_EINVAL, RFB_ELIMIT, RFB_ENOMEM, or RFB_EIO when io_setup fails,
 * e.g. because /proc/sys/fs/aio-max-nr is exhausted).
 */
rfb_batch_reader *rfb_batch_reader_new(rfb_cache_view *view, size_t max_batch,
				       rfb_err *err) RFB_MUST_CHECK;

/*
 * Free the reader.  If a batch is still in flight, waits for its reads to
 * end first (io_destroy does).  NULL accepted.
 */
void rfb_batch_reader_free(rfb_batch_reader *r);

/*
 * Start reading the n records at addrs (n <= max_batch; n = 0 is an empty
 * batch).  samples[i] is the sample id record i must carry, or
 * RFB_BATCH_ANY_SAMPLE; samples may be NULL (no check).  All reads are
 * handed to the kernel with one io_submit call; if the kernel takes only
 * part of them, the rest is submitted again (each call counted in
 * submit_calls).  A record that cannot be read at all (its segment is
 * gone: RFB_ENOTFOUND; a malformed address: RFB_EINVAL / RFB_ELIMIT; the
 * kernel refused its read) gets that status in the results and costs no
 * I/O; the others are read.  Invalidates the previous batch's results.
 * Returns 0, or a negative RFB_E* code with err filled when the batch as a
 * whole cannot start: RFB_EINVAL (n too large, a batch already in flight,
 * the reader is broken), RFB_ENOMEM (the buffer cannot grow).
 */
int rfb_batch_reader_submit(rfb_batch_reader *r,
			    const struct rfb_cache_addr *addrs,
			    const uint32_t *samples, size_t n,
			    rfb_err *err) RFB_MUST_CHECK;

/*
 * Wait for every read of the submitted batch and check each record.
 * *records (records may be NULL) is set to the reader's array of n
 * results, in the order of the addresses (owned by the reader, valid
 * until the next submit on it or its free).  Returns
 * the number of records whose status is not 0 (0 when all are good), or a
 * negative RFB_E* code with err filled: RFB_EINVAL if no batch was
 * submitted, RFB_EIO if io_getevents failed (the reader is then broken:
 * free it).
 */
int rfb_batch_reader_wait(rfb_batch_reader *r,
			  const struct rfb_batch_record **records,
			  rfb_err *err) RFB_MUST_CHECK;

/*
 * Use align (a power of two, 1 .. 1 MiB) for direct reads instead of the
 * alignment detected from the filesystem, for the batches submitted from
 * now on; 0 returns to detection.  For filesystems whose requirement
 * cannot be detected; a read the filesystem then refuses (EINVAL) is read
 * again buffered, as above.  Returns 0, or RFB_EINVAL while a batch is in
 * flight or for a bad align.
 */
int rfb_batch_reader_set_align(rfb_batch_reader *r, uint32_t align,
			       rfb_err *err) RFB_MUST_CHECK;

/*
 * With on = 1, rfb_batch_reader_wait checks each record's read, header,
 * length and sample but not its payload checksum: the caller checks
 * each record it uses with rfb_batch_reader_check_payload before using
 * it, in the thread that uses it, so that the record's bytes are read
 * once while they are in that core's cache instead of once for the check
 * and again for the work (refurb-final does).  0 (the default) checks
 * everything.
 */
void rfb_batch_reader_defer_payload(rfb_batch_reader *r, int on);

/*
 * Check the payload checksum of record i of the waited batch when it was
 * deferred: returns the record's status, which a bad payload sets (with
 * its why and data NULL) as rfb_batch_reader_wait would have.  Records of
 * a batch may be checked from different threads at once.
 */
int rfb_batch_reader_check_payload(rfb_batch_reader *r, size_t i);

/* The reader's mode (enum rfb_batch_mode). */
int rfb_batch_reader_mode(const rfb_batch_reader *r);

/* Copy the reader's counters into *s. */
void rfb_batch_reader_get_stats(const rfb_batch_reader *r,
				struct rfb_batch_stats *s);

#ifdef __cplusplus
}
#endif

#endif
