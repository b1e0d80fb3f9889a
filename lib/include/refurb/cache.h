/*
 * cache.h - the on-disk log cache of partially augmented samples.
 *
 * A cache directory holds a manifest (what produced the cache), segment
 * files of records (record.h) appended in plan order, and a checkpoint of
 * the record index (which record serves which sample).  Records that die
 * in the same epoch are written to the same segments, so that eviction is
 * the deletion of whole segments and compaction normally copies nothing.
 * Layout, durability rules and recovery are in refurb-cache(5).
 *
 * rfb_cache is the single writer (refurb-partial): it holds an exclusive
 * lock on the directory.  rfb_cache_view is a reader's view (refurb-final,
 * refurb-dump): no lock, segments opened on demand.
 */
#ifndef REFURB_CACHE_H
#define REFURB_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"
#include "refurb/record.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_CACHE_MAX_SPEC 4096
#define RFB_CACHE_SEGMENT_HEADER 64
#define RFB_CACHE_DEFAULT_SEGMENT_MAX ((uint64_t)256 << 20)
/* the largest segment_max: record offsets in memory take 32 bits */
#define RFB_CACHE_MAX_SEGMENT ((uint64_t)4095 << 20)
#define RFB_CACHE_NO_SEGMENT 0xffffffffu

/* What produced a cache; a cache refuses to serve different inputs. */
struct rfb_cache_manifest {
	uint64_t index_identity;
	uint64_t schedule_identity;
	uint64_t seed;            /* augmentation seed */
	uint32_t samples;         /* samples in the index: record ids < this */
	struct rfb_codec codec;
	uint64_t segment_max;     /* bytes after which a segment is full
				   * (at most RFB_CACHE_MAX_SEGMENT) */
	char pipeline[RFB_CACHE_MAX_SPEC]; /* canonical partial pipeline */
};

/* Where a record is: what plan annotations carry (@segment.offset.length). */
struct rfb_cache_addr {
	uint32_t segment;
	uint32_t length;          /* header + payload */
	uint64_t offset;          /* from the start of the segment file */
};

/* A record index entry. */
struct rfb_cache_entry {
	struct rfb_cache_addr addr;
	uint32_t write_epoch;
	uint32_t death_epoch;
};

/* What opening (recovery) found and did. */
struct rfb_cache_recovery {
	int created;              /* a new, empty cache */
	int from_checkpoint;      /* the record index came from a checkpoint */
	uint64_t segments;        /* segment files found */
	uint64_t records;         /* records known after recovery */
	uint64_t scanned;         /* records read to recover them */
	uint64_t torn_bytes;      /* bytes cut from torn segment tails */
	uint64_t lost;            /* entries dropped (segment missing/short) */
};

struct rfb_cache_stats {
	uint64_t live_records, live_bytes;
	uint64_t segments, dead_segments, dead_bytes;
	uint64_t appended_records, appended_bytes; /* by this process */
	uint64_t written_bytes;   /* to segment files by this process,
				   * compaction copies included */
	uint64_t compacted_records, deleted_segments;
	/* over the cache's life, earlier runs included (from checkpoints) */
	uint64_t lifetime_appended, lifetime_written;
};

/* What a checkpoint says about the cache's history. */
struct rfb_cache_checkpoint_info {
	uint32_t epoch;           /* epoch when it was written */
	uint64_t global_step;
	uint64_t entries;
	uint64_t appended_bytes;  /* record bytes appended, cache lifetime */
	uint64_t written_bytes;   /* bytes written to segments, lifetime */
	uint64_t segments;        /* in its segment table */
	uint64_t dead_segments;   /* of them, whose records had died */
};

typedef struct rfb_cache rfb_cache;

enum {
	RFB_CACHE_RESET = 1,      /* empty a cache made for other inputs */
};

/*
 * Open (creating it if needed) the cache directory dir as its only
 * writer: take the lock (RFB_ELOCKED naming the holder's pid), check the
 * manifest against want (RFB_EMISMATCH saying what differs, unless
 * RFB_CACHE_RESET, which empties the cache), and recover: load the last
 * checkpoint, scan what was appended after it, cut torn tails.  grace is
 * how many batches a dead segment is kept after it dies (readers may still
 * be reading it).  Returns the handle or NULL with err filled.
 */
rfb_cache *rfb_cache_open(const char *dir, const struct rfb_cache_manifest *want,
			  unsigned flags, uint64_t grace,
			  struct rfb_cache_recovery *rec, rfb_err *err) RFB_MUST_CHECK;

/*
 * The same for a writer that keeps records of the n samples ids only (a
 * node's shard: rfb_sched_ids), ascending and below want->samples: its
 * record index then takes 12 bytes per sample of ids, not of the whole
 * index (refurb(7), RESOURCE LIMITS).  A record of another sample is
 * refused by rfb_cache_append and ignored by recovery; the files are
 * those rfb_cache_open writes.  ids is borrowed: it must stay valid and
 * unchanged until rfb_cache_close.  ids NULL: every sample (n ignored).
 * RFB_EINVAL when ids is not ascending or not below want->samples.
 */
rfb_cache *rfb_cache_open_shard(const char *dir,
				const struct rfb_cache_manifest *want,
				const uint32_t *ids, uint32_t n, unsigned flags,
				uint64_t grace, struct rfb_cache_recovery *rec,
				rfb_err *err) RFB_MUST_CHECK;

/*
 * Tell the cache that a run whose plan starts at epoch first_epoch opens
 * it, before any of its batches: the records that run cannot serve (of
 * epochs after first_epoch, or dying by it) are forgotten, sparse
 * segments compacted, and the segments left without a live record die;
 * with no reader, they are deleted at once (else they wait like evicted
 * ones).  So a plan run again and again, resumed or replaced by another
 * on one cache keeps the disk bound of refurb-cache(5).  Returns 0 or a
 * negative RFB_E* code.
 */
int rfb_cache_begin_run(rfb_cache *c, uint32_t first_epoch,
			rfb_err *err) RFB_MUST_CHECK;

/*
 * Flush, checkpoint and unlock.  Returns 0 or a negative RFB_E* code (the
 * handle is freed either way).  NULL accepted.
 */
int rfb_cache_close(rfb_cache *c, rfb_err *err) RFB_MUST_CHECK;

/* Change the grace (batches) given to rfb_cache_open: the writer's
 * downstream lag changed before any batch was passed on (refurb-partial
 * shrank its output pipe). */
void rfb_cache_set_grace(rfb_cache *c, uint64_t grace);

/* The record serving sample, if any: 0 or RFB_ENOTFOUND. */
int rfb_cache_lookup(const rfb_cache *c, uint32_t sample,
		     struct rfb_cache_entry *e) RFB_MUST_CHECK;

/*
 * Forget sample's record (it was found bad).  The bytes stay until their
 * segment goes.
 */
void rfb_cache_forget(rfb_cache *c, uint32_t sample);

/*
 * Append the complete record rec (len bytes, header m) to the segment of
 * records dying in m->death_epoch and make it the sample's record.  *addr
 * is where it will be once written.  rec is not copied: it is written
 * with the others of its segment in one pwritev by the next
 * rfb_cache_flush (or sooner, when 4 MiB are queued), and must stay valid
 * and unchanged until then.  Returns 0 or a negative RFB_E* code
 * (RFB_ENOSPC ...).
 */
int rfb_cache_append(rfb_cache *c, const unsigned char *rec, size_t len,
		     const struct rfb_record_meta *m, struct rfb_cache_addr *addr,
		     rfb_err *err) RFB_MUST_CHECK;

/*
 * Write the buffered records to their segment files, so that readers can
 * read every address handed out so far.  Call before emitting a batch.
 */
int rfb_cache_flush(rfb_cache *c, rfb_err *err) RFB_MUST_CHECK;

/*
 * Tell the cache where the plan is: batch global_step of epoch.  At a new
 * epoch the segments whose records die in it become dead (their samples
 * are misses now) and sparse segments are compacted; dead segments whose
 * grace has passed are deleted.  Returns 0 or a negative RFB_E* code.
 */
int rfb_cache_advance(rfb_cache *c, uint32_t epoch, uint64_t global_step,
		      rfb_err *err) RFB_MUST_CHECK;

/*
 * Make everything appended so far durable: flush, fsync the segments that
 * changed, write the record index checkpoint atomically.
 */
int rfb_cache_checkpoint(rfb_cache *c, rfb_err *err) RFB_MUST_CHECK;

/*
 * The same in the background: flush and take the record index as it is
 * now, then return while a thread fsyncs the segments and writes the
 * checkpoint, so that appending goes on meanwhile.  The checkpoint is
 * complete when the next rfb_cache_checkpoint(_start) or rfb_cache_close
 * returns; an error of the background work is returned by that call.
 */
int rfb_cache_checkpoint_start(rfb_cache *c, rfb_err *err) RFB_MUST_CHECK;

void rfb_cache_get_stats(const rfb_cache *c, struct rfb_cache_stats *s);

/* ---- manifest ---- */

/*
 * Compare two manifests; returns NULL if they match, else a static
 * description of the first difference ("index", "schedule", "pipeline",
 * "seed", "codec", "sample count").
 */
const char *rfb_cache_manifest_diff(const struct rfb_cache_manifest *a,
				    const struct rfb_cache_manifest *b);

/* Read dir's manifest into *m.  0 or a negative RFB_E* code. */
int rfb_cache_read_manifest(const char *dir, struct rfb_cache_manifest *m,
			    rfb_err *err) RFB_MUST_CHECK;

/*
 * Parse a manifest image of len bytes at data (not kept) into *m; name is
 * used in error messages.  rfb_cache_read_manifest() is this on the file.
 * Returns 0 or RFB_EFORMAT / RFB_EVERSION / RFB_ECHECKSUM with err filled.
 */
int rfb_cache_parse_manifest(const void *data, size_t len, const char *name,
			     struct rfb_cache_manifest *m,
			     rfb_err *err) RFB_MUST_CHECK;

/* ---- reading ---- */

/*
 * "DIR/SSSSSSSS.seg" for segment id into buf of size n.  Returns 0, or
 * RFB_ELIMIT when it does not fit (buf then holds a cut path: use it for
 * nothing, not even a message).
 */
int rfb_cache_segment_path(const char *dir, uint32_t segment, char *buf,
			   size_t n) RFB_MUST_CHECK;

/* ---- the reader's position (DIR/read-position, refurb-cache(5)) ---- */

struct rfb_cache_position {
	uint64_t read_global;     /* the last batch whose records the reader
				   * holds (plan global step) */
	uint32_t written_epoch, written_step; /* the last batch it wrote */
	uint64_t written_global;
	int has_written;          /* a batch was written */
	int ended;                /* the stream was written to its end */
	uint32_t epoch_batches;   /* batches of an epoch (the plan's) */
	uint64_t updates;         /* (read) updates so far */
	uint32_t pid;             /* (read) the reader's process */
};

/* The slack of the disk bound, in bytes, for a cache of n samples: the
 * record index (twice while a checkpoint replaces it), the small files,
 * page rounding.  The bound: on disk <= (1 + 1/r) x live + slack. */
#define RFB_CACHE_BOUND_SLACK(n) (((uint64_t)1 << 20) + 64 * (uint64_t)(n))

typedef struct rfb_cache_position_writer rfb_cache_position_writer;

/* Open (create) dir's position file for a reader; NULL with err filled. */
rfb_cache_position_writer *rfb_cache_position_writer_open(const char *dir,
							  rfb_err *err);
/* Rewrite the position (one pwrite).  0 or a negative RFB_E* code. */
int rfb_cache_position_put(rfb_cache_position_writer *w,
			   const struct rfb_cache_position *p,
			   rfb_err *err) RFB_MUST_CHECK;
/* NULL accepted. */
void rfb_cache_position_writer_close(rfb_cache_position_writer *w);
/* Read dir's position into *p (mtime: when the file was last written,
 * NULL accepted).  Returns 1; -1 when the file is there (mtime filled)
 * but holds no position yet (a reader that has just opened it); 0 when
 * there is none. */
int rfb_cache_position_read(const char *dir, struct rfb_cache_position *p,
			    double *mtime);

typedef struct rfb_cache_view rfb_cache_view;

/*
 * A reader's view of dir: the manifest is read and kept; segment files
 * are opened on first use (with O_DIRECT when direct is set) and kept
 * open, so a segment deleted later stays readable through the view until
 * rfb_cache_view_release() lets it go.
 */
rfb_cache_view *rfb_cache_view_open(const char *dir, int direct, rfb_err *err) RFB_MUST_CHECK;

void rfb_cache_view_close(rfb_cache_view *v);

const struct rfb_cache_manifest *rfb_cache_view_manifest(const rfb_cache_view *v);

/*
 * Close the segments that the writer has deleted (their file has no link
 * left) and that were not asked for in the last idle calls of this
 * function, so that their disk space goes back to the file system (a
 * reader that kept every deleted segment open would hold the space of
 * every record ever written).  Call it once per batch; idle = a plan
 * epoch's batches is safe, since a segment whose records are alive is
 * read from in every epoch.  A record of a closed segment is gone for the
 * view (RFB_ENOTFOUND) and is recomputed.  Returns the segments closed.
 */
size_t rfb_cache_view_release(rfb_cache_view *v, uint64_t idle);

/*
 * Close every segment not asked for since the previous call (deleted or
 * not): a segment the next batches need is opened again, one the writer
 * deleted gives its space back at once.  refurb-final calls it after each
 * batch's reads, so that it never holds the space of a segment the writer
 * deleted once it read past it (the disk bound, refurb-cache(5)).
 * Returns the segments closed.
 */
size_t rfb_cache_view_close_unused(rfb_cache_view *v);

/* How many segments rfb_cache_view_release() has closed so far: when the
 * count changes, file descriptor numbers the view handed out before may
 * have been reused for other segments. */
uint64_t rfb_cache_view_closed(const rfb_cache_view *v);

/* Whether the view was opened with direct set. */
int rfb_cache_view_direct(const rfb_cache_view *v);

/* File descriptor of segment (owned by the view), or a negative RFB_E*
 * code with err filled (the file is gone: RFB_ENOTFOUND).  In a direct
 * view the fd has O_DIRECT, unless the filesystem refused it at open
 * (EINVAL, e.g. tmpfs before Linux 6.6): then it is a buffered fd. */
int rfb_cache_view_fd(rfb_cache_view *v, uint32_t segment, rfb_err *err) RFB_MUST_CHECK;

/*
 * Visit every record of every segment of dir in order, checking each
 * (header, payload checksum).  fn gets the segment, the record's address,
 * its header (NULL when the record is bad, with why filled) and returns 0
 * to go on.  After a record whose payload is bad the scan goes on with
 * the next one; after a bad header or a torn end it goes to the next
 * segment (nothing tells where the next record starts).  Used by refurb-dump's listing and --verify.  Returns 0 or
 * the first non-zero value of fn, or a negative RFB_E* code.
 */
typedef int (*rfb_cache_visit_fn)(void *ctx, uint32_t segment,
				  uint32_t death_epoch,
				  const struct rfb_cache_addr *addr,
				  const struct rfb_record_meta *m,
				  const rfb_err *why);
int rfb_cache_scan(const char *dir, rfb_cache_visit_fn fn, void *ctx,
		   rfb_err *err) RFB_MUST_CHECK;

/*
 * Visit every segment file of dir in id order, reading only its header,
 * its size and the checkpoint's segment table: fn gets the id, the death
 * epoch (UINT32_MAX when the header is bad or cut short), the file's size
 * in bytes and how many of them the checkpoint covers (all of one it names
 * dead, 0 of one it does not name: the rest was appended after it, by a
 * writer stopped before its next checkpoint), and returns 0 to
 * go on.  Time and memory do not grow with the records (refurb-dump
 * --stats).  Returns 0, the first non-zero value of fn, or a negative
 * RFB_E* code.
 */
typedef int (*rfb_cache_segment_fn)(void *ctx, uint32_t segment,
				    uint32_t death_epoch, uint64_t file_bytes,
				    uint64_t checkpointed_bytes);
int rfb_cache_list(const char *dir, rfb_cache_segment_fn fn, void *ctx,
		   rfb_err *err) RFB_MUST_CHECK;

/*
 * Load dir's record index checkpoint: fills *info (NULL accepted) first,
 * then calls fn (NULL accepted) for every entry, with its segment's death
 * epoch.  Returns 0, RFB_ENOTFOUND if
 * there is no checkpoint, or a negative RFB_E* code if it is corrupt.
 */
int rfb_cache_read_checkpoint(const char *dir,
			      void (*fn)(void *ctx, uint32_t sample,
					 const struct rfb_cache_entry *e),
			      void *ctx, struct rfb_cache_checkpoint_info *info,
			      rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
