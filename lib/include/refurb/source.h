/*
 * source.h - reading the bytes of an index's samples: a file of its own
 * (one open and read) or a member of a tar shard (one pread at the offset
 * the index recorded, on a descriptor opened once per shard).
 *
 * A shard is opened the first time one of its samples is read, and is
 * refused (RFB_EMISMATCH) when it vanished or its size or mtime differ
 * from what the index recorded: its offsets would no longer be right.
 * At most half of RLIMIT_NOFILE shard descriptors (4096 at most) are
 * kept open, or what rfb_source_fit_fds leaves room for: past that the
 * least recently used one no read is using is closed (found in constant
 * time, whatever the number of shards), so a dataset of more shards than
 * the descriptor limit reads too.  A shard that cannot be opened for want
 * of descriptors (EMFILE, ENFILE) closes idle ones until it opens, and
 * the cap comes down to what fits; with none idle, the error is the
 * caller's (a system error, rfb_err_is_system, never a bad image).  One rfb_source is shared by all threads; a short lock guards the
 * descriptor table, not the read.
 */
#ifndef REFURB_SOURCE_H
#define REFURB_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"
#include "refurb/index.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rfb_source rfb_source;

/*
 * A reader of idx's samples (idx must outlive it).  root_override, when
 * not NULL, replaces the index's root (the dataset was moved).  Returns
 * the handle (free with rfb_source_close) or NULL with err filled.
 */
rfb_source *rfb_source_open(const rfb_index *idx, const char *root_override,
			    rfb_err *err) RFB_MUST_CHECK;

/* What rfb_source_fit_fds found. */
struct rfb_source_fds {
	uint64_t limit;     /* the open-file limit (soft, after any raise) */
	uint32_t shards;    /* shard files of the index */
	uint32_t want;      /* shard files it would keep open (<= 4096) */
	uint32_t cap;       /* shard files it keeps open, from now on */
	uint64_t suggest;   /* a limit under which cap would be want */
	int raised;         /* the soft limit was raised toward the hard one */
};

/*
 * Check the open-file limit before the first read (rfb_fd_budget_check):
 * need descriptors, named by what, must fit beside those open now; of
 * what is left, half goes to the shard files (the other half is left for
 * files the caller opens as it runs, such as cache segments).  Fills out;
 * returns 0, or RFB_ERESOURCE with err saying the limit to set.
 */
int rfb_source_fit_fds(rfb_source *src, uint32_t need, const char *what,
		       struct rfb_source_fds *out, rfb_err *err) RFB_MUST_CHECK;

/* Whether f keeps fewer shard files open than it would under a higher
 * limit: then 1, with note (code RFB_ERESOURCE) saying so and the limit
 * that would keep them; else 0 and note untouched. */
int rfb_source_fds_note(const struct rfb_source_fds *f, rfb_err *note);

/* The number of shard files kept open now, and (lowered, NULL accepted)
 * how often EMFILE or ENFILE brought it down. */
uint32_t rfb_source_fd_cap(rfb_source *src, uint32_t *lowered);

/* Close every shard descriptor and free.  NULL accepted. */
void rfb_source_close(rfb_source *src);

/*
 * Read the bytes of sample id into *buf, which grows (realloc) when *cap
 * is too small and never shrinks; one more byte than the data is
 * allocated.  Samples over max_len bytes are refused (RFB_ELIMIT).
 * Returns 0 with *len set, or a negative RFB_E* code with err naming the
 * file (a shard sample: the shard, and the member in the message):
 * RFB_EMISMATCH for a shard that vanished or changed since indexing,
 * RFB_ETRUNC for a shard now shorter than the sample's range, RFB_EIO,
 * RFB_EINVAL, RFB_ELIMIT, RFB_ENOMEM.
 */
int rfb_source_read(rfb_source *src, uint32_t id, size_t max_len,
		    unsigned char **buf, size_t *cap, size_t *len,
		    rfb_err *err) RFB_MUST_CHECK;

/*
 * Make err name sample id: its file, or its shard with "member NAME: "
 * before the message.  For errors found after reading (a bad JPEG).
 */
void rfb_source_blame(const rfb_source *src, uint32_t id, rfb_err *err);

#ifdef __cplusplus
}
#endif

#endif
