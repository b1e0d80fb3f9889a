/*
 * cache_internal.h - the writer's state, shared by cache_writer.c (appending,
 * eviction, compaction), cache_table.c (segments and entries),
 * cache_checkpoint.c (the checkpoint), rfbi_cache_recover.c (recovery),
 * cache_files.c (manifest, segment headers, listing) and cache_summary.c
 * (segment sizes against the checkpoint).
 */
#ifndef REFURB_CACHE_INTERNAL_H
#define REFURB_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "refurb/cache.h"
#include "cache_format_internal.h"

#define CHECKPOINT_NAME "records"
#define MANIFEST_NAME "manifest"
#define LOCK_NAME "lock"
#define READERS_NAME "readers" /* readers hold a shared flock on it */
#define POSITION_NAME "read-position" /* how far the reader has read */
#define WRITE_BUFFER_FLUSH ((size_t)4 << 20)
#define DEAD_SINCE_UNKNOWN UINT64_MAX

struct seg {
	uint32_t id, death;
	int dead;              /* its records died; kept until grace passes */
	int sealed;            /* takes no more records (being compacted) */
	uint64_t dead_since;   /* global step it died at */
	int fd;                /* -1 when not open */
	uint64_t size;         /* bytes, buffered ones included */
	uint64_t durable;      /* bytes written to the file */
	uint64_t synced;       /* bytes known to be on stable storage */
	uint64_t live;         /* bytes of records the index points to */
	struct iovec *pending; /* records appended since the last flush, in
				* order: bytes durable..size, not copied */
	size_t npending, cap_pending;
};

struct entry {
	uint32_t seg;          /* RFB_CACHE_NO_SEGMENT: no record */
	uint32_t length;
	uint64_t offset;
	uint32_t write_epoch;
	uint32_t death;
};

/* A checkpoint written in the background (rfb_cache_checkpoint_start):
 * the thread owns everything here until it is joined. */
struct ckpt_job {
	int running;
	pthread_t thread;
	int *fds;              /* dup'ed descriptors of segments to fsync */
	uint32_t *ids;         /* their segment ids, for messages */
	size_t nfds;
	int sync_dir;          /* fsync the directory first */
	char *dir;
	unsigned char *data;   /* the checkpoint file */
	size_t len;
	int rc;
	rfb_err err;
};

struct rfb_cache {
	char *dir;
	int lockfd;
	struct rfb_cache_manifest man;
	uint64_t manifest_hash;
	struct entry *entries;       /* one per sample id */
	struct seg *segs;            /* sorted by id */
	size_t nsegs, cap_segs;
	uint32_t next_id;
	uint64_t grace;
	double opened_at;            /* wall time at open: older positions
				      * are another run's */
	int stale_known;             /* the position file at open, from */
	uint32_t stale_pid;          /* another run: never trusted, even */
	uint64_t stale_updates;      /* when written less than 1 s before */
	int held_known;              /* a reader of this run told held */
	uint64_t held;               /* the most it has told it holds */
	int have_epoch, dir_dirty;
	uint32_t epoch;
	uint64_t step;
	struct rfb_cache_stats st;
	uint64_t base_appended, base_written; /* by earlier runs */
	struct ckpt_job ck;
};

/* cache_files.c */
uint64_t rfbi_cache_manifest_hash(const struct rfb_cache_manifest *m);
int rfbi_cache_write_manifest(const char *dir, const struct rfb_cache_manifest *m,
			      rfb_err *err) RFB_MUST_CHECK;
/* What makes the manifest part diff (rfb_cache_manifest_diff) differ, as
 * " (...)" for a message, or "". */
const char *rfbi_cache_manifest_hint(const char *diff);
/* Sorted ids of the DIR/XXXXXXXX.seg files; *ids malloc'ed. */
int rfbi_cache_list_segments(const char *dir, uint32_t **ids, size_t *n,
			     rfb_err *err) RFB_MUST_CHECK;

/* Delete the temporary files of checkpoints and manifests that a writer
 * killed while writing them left (call with the lock held). */
void rfbi_cache_remove_temporaries(const char *dir);

/* cache_table.c */
struct seg *rfbi_cache_find_seg(rfb_cache *c, uint32_t id);
struct seg *rfbi_cache_add_seg(rfb_cache *c, uint32_t id, uint32_t death,
			       rfb_err *err) RFB_MUST_CHECK;
void rfbi_cache_set_entry(rfb_cache *c, uint32_t sample, uint32_t seg,
			  uint64_t offset, uint32_t length, uint32_t write_epoch,
			  uint32_t death);
/* How many samples have a record. */
size_t rfbi_cache_live_entries(const rfb_cache *c);

/* cache_checkpoint.c */

/* A checkpoint file loaded and checked (its magic, sizes, checksums and
 * segment table); the tables point into data (malloc'ed, the caller's). */
struct ckpt {
	unsigned char *data;
	size_t len;
	struct ckpt_header h;
	const unsigned char *seg_table, *entry_table;
};

/* Load DIR's checkpoint into *k: 0, RFB_ENOTFOUND when there is none, or
 * a negative RFB_E* code with err filled (k->data freed by the caller). */
int rfbi_cache_ckpt_load(const char *dir, struct ckpt *k, rfb_err *err) RFB_MUST_CHECK;
/* Row i (< k->h.segments, < k->h.entries) of a loaded checkpoint. */
void rfbi_cache_ckpt_seg(const struct ckpt *k, uint32_t i, struct ckpt_seg *s);
void rfbi_cache_ckpt_entry(const struct ckpt *k, uint32_t i,
			   struct ckpt_entry *e);
/* The segment table of DIR's checkpoint as it is (its header checked,
 * not the table's checksum: for summaries): *table malloc'ed, *n rows
 * sorted by id; *n = 0 and NULL when there is none.  Returns 0. */
int rfbi_cache_ckpt_segments(const char *dir, struct ckpt_seg **table,
			     uint32_t *n);
/* Wait for the background checkpoint job, if any; its result. */
int rfbi_cache_ckpt_join(rfb_cache *c, rfb_err *err) RFB_MUST_CHECK;
/* Hand the fsyncs and the checkpoint of c as it is now to a job (run by
 * a thread when background, else here); c is flushed and has no job. */
int rfbi_cache_ckpt_begin(rfb_cache *c, int background, rfb_err *err) RFB_MUST_CHECK;

/* rfbi_cache_recover.c */
int rfbi_cache_recover(rfb_cache *c, struct rfb_cache_recovery *rec, rfb_err *err) RFB_MUST_CHECK;

#endif
