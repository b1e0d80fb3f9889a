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
	uint32_t write_epoch;  /* of every record in it (the schedule gives
				* one per death: e + r, or phase + 1 at 0) */
	int epoch_known;       /* not yet for a segment of a checkpoint's
				* table before its first entry */
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

/* One slot of the record index: 12 bytes, the most memory per sample a
 * writer holds (refurb(7), RESOURCE LIMITS).  The record was written in
 * its segment's write epoch and dies with it (seg's death); offsets fit
 * 32 bits because a segment takes no record past RFB_CACHE_MAX_SEGMENT
 * bytes. */
struct entry {
	uint32_t seg;          /* RFB_CACHE_NO_SEGMENT: no record */
	uint32_t length;
	uint32_t offset;
};

/* A checkpoint written in the background (rfb_cache_checkpoint_start):
 * the thread owns everything here until it is joined. */
struct ckpt_job {
	int running;
	pthread_t thread;
	const rfb_cache *c;    /* its ids and its manifest (fixed) */
	int *fds;              /* dup'ed descriptors of segments to fsync */
	uint32_t *ids;         /* their segment ids, for messages */
	size_t nfds;
	int sync_dir;          /* fsync the directory first */
	char *dir;
	unsigned char *head;   /* the checkpoint's header and segment table */
	size_t head_len;
	struct entry *entries; /* a copy of the record index, its slots */
	uint32_t *seg_ids, *seg_epochs; /* the segments' write epochs */
	size_t nsegs;
	size_t live;           /* how many of them hold a record */
	int rc;
	rfb_err err;
};

struct rfb_cache {
	char *dir;
	int lockfd;
	struct rfb_cache_manifest man;
	uint64_t manifest_hash;
	struct entry *entries;       /* one per slot: sample ids[slot] */
	const uint32_t *ids;         /* the samples it keeps records of
				      * (ascending, the caller's); NULL:
				      * every sample, slot = sample id */
	size_t nslots;
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
/* Size c's record index (c->man is set): a slot per sample of ids (n,
 * ascending: RFB_EINVAL if not), or of the index when ids is NULL. */
int rfbi_cache_make_slots(rfb_cache *c, const uint32_t *ids, uint32_t n,
			  rfb_err *err) RFB_MUST_CHECK;
/* The slot of sample's entry, or -1 when c keeps no record of it. */
int64_t rfbi_cache_slot(const rfb_cache *c, uint32_t sample);
/* The sample of a slot. */
uint32_t rfbi_cache_slot_sample(const rfb_cache *c, size_t slot);
/* Point slot at a record (seg RFB_CACHE_NO_SEGMENT: none), keeping the
 * segments' live bytes.  0, or -1 (nothing changed) when seg holds
 * records of another write epoch. */
int rfbi_cache_set_entry(rfb_cache *c, size_t slot, uint32_t seg,
			 uint64_t offset, uint32_t length, uint32_t write_epoch);
/* The write epoch of e's record (e has one). */
uint32_t rfbi_cache_entry_epoch(rfb_cache *c, const struct entry *e);
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
	int fd;                 /* rfbi_cache_ckpt_open's */
	uint32_t crc;           /* of the segment table, to go on with */
	char path[4200];
};

/* Load DIR's checkpoint into *k: 0, RFB_ENOTFOUND when there is none, or
 * a negative RFB_E* code with err filled (k->data freed by the caller). */
int rfbi_cache_ckpt_load(const char *dir, struct ckpt *k, rfb_err *err) RFB_MUST_CHECK;
/* Row i (< k->h.segments, < k->h.entries) of a loaded checkpoint. */
void rfbi_cache_ckpt_seg(const struct ckpt *k, uint32_t i, struct ckpt_seg *s);
void rfbi_cache_ckpt_entry(const struct ckpt *k, uint32_t i,
			   struct ckpt_entry *e);
/* Open DIR's checkpoint to read it a chunk at a time (a writer's
 * recovery: no file image in memory): its header checked and its
 * segment table read into k (k->entry_table NULL); 0, RFB_ENOTFOUND when
 * there is none, or a negative RFB_E* code with err filled.  Close with
 * rfbi_cache_ckpt_close whatever it returns. */
int rfbi_cache_ckpt_open(const char *dir, struct ckpt *k, rfb_err *err) RFB_MUST_CHECK;
/* Call fn for every row of the entry table of k, then check the
 * checksum: RFB_ECHECKSUM when it fails, after the calls (the caller
 * undoes what they did).  0 or a negative RFB_E* code. */
int rfbi_cache_ckpt_entries(struct ckpt *k,
			    void (*fn)(void *ctx, const struct ckpt_entry *e),
			    void *ctx, rfb_err *err) RFB_MUST_CHECK;
void rfbi_cache_ckpt_close(struct ckpt *k);
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
