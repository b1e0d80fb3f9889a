/*
 * cache_internal.h - the writer's state, shared by cache.c (appending,
 * eviction, compaction), cache_recover.c (checkpoint and recovery) and
 * cache_files.c (manifest, segment headers, listing).
 */
#ifndef REFURB_CACHE_INTERNAL_H
#define REFURB_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "refurb/cache.h"

#define SEGMENT_MAGIC "RFBSEG\0\x01"
#define CHECKPOINT_NAME "records"
#define MANIFEST_NAME "manifest"
#define LOCK_NAME "lock"
#define READERS_NAME "readers" /* readers hold a shared flock on it */
#define WRITE_BUFFER_FLUSH ((size_t)4 << 20)
#define DEAD_SINCE_UNKNOWN UINT64_MAX

struct seg {
	uint32_t id, death;
	int dead;              /* its records died; kept until grace passes */
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
	int have_epoch, dir_dirty;
	uint32_t epoch;
	uint64_t step;
	struct rfb_cache_stats st;
	uint64_t base_appended, base_written; /* by earlier runs */
	struct ckpt_job ck;
};

/* cache_files.c */
uint64_t cache_manifest_hash(const struct rfb_cache_manifest *m);
int cache_write_manifest(const char *dir, const struct rfb_cache_manifest *m,
			 rfb_err *err);
void cache_put_segment_header(unsigned char *h, uint32_t id, uint32_t death);
int cache_parse_segment_header(const unsigned char *h, uint32_t *id,
			       uint32_t *death);
/* Sorted ids of the DIR/XXXXXXXX.seg files; *ids malloc'ed. */
int cache_list_segments(const char *dir, uint32_t **ids, size_t *n,
			rfb_err *err);

/* Delete the temporary files of checkpoints and manifests that a writer
 * killed while writing them left (call with the lock held). */
void cache_remove_temporaries(const char *dir);

/* cache.c */
struct seg *cache_find_seg(rfb_cache *c, uint32_t id);
struct seg *cache_add_seg(rfb_cache *c, uint32_t id, uint32_t death,
			  rfb_err *err);
void cache_set_entry(rfb_cache *c, uint32_t sample, uint32_t seg,
		     uint64_t offset, uint32_t length, uint32_t write_epoch,
		     uint32_t death);

/* cache_recover.c */
int cache_recover(rfb_cache *c, struct rfb_cache_recovery *rec, rfb_err *err);
/* The checkpoint file of c as it is now: *data malloc'ed. */
int cache_build_checkpoint(const rfb_cache *c, unsigned char **data,
			   size_t *len, rfb_err *err);

#endif
