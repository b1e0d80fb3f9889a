/*
 * cache_writer.c - the cache writer: lock, manifest check, appending through
 * write queues (one pwritev per segment, no copy) into segments grouped
 * by death epoch, eviction by segment death, delayed deletion and
 * compaction (see cache.h, refurb-cache(5)).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_internal.h"
#include "refurb/io.h"

#define COMPACT_LIVE_RATIO 0.5 /* compact segments less than half live */

/* ---- writing ---- */

static int seg_open_fd(rfb_cache *c, struct seg *s, rfb_err *err)
{
	char path[4200];

	if (s->fd >= 0)
		return 0;
	if (rfb_cache_segment_path(c->dir, s->id, path, sizeof path))
		return rfb_err_set(err, RFB_ELIMIT, c->dir, "path too long");
	s->fd = open(path, O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open segment");
	return 0;
}

/* Write s's buffer to its file. */
static int seg_flush(rfb_cache *c, struct seg *s, rfb_err *err)
{
	char path[4200];
	int rc;

	if (s->npending == 0)
		return 0;
	if ((rc = seg_open_fd(c, s, err)))
		return rc;
	if (rfb_pwritev_full(s->fd, s->pending, s->npending,
			     (off_t)s->durable) < 0) {
		int e = errno;
		/* a path too long for the message names the cache */
		const char *name = rfb_cache_segment_path(c->dir, s->id, path,
							  sizeof path)
				   ? c->dir : path;
		/* cut what may have been half written: the file stays valid */
		if (ftruncate(s->fd, (off_t)s->durable) < 0) {
			/* the torn tail is cut at the next open instead */
		}
		return rfb_err_sys(err, e, name, "cannot write segment");
	}
	c->st.written_bytes += s->size - s->durable;
	s->durable = s->size;
	s->npending = 0;
	return 0;
}

/* A new, empty segment file for records written in epoch write_epoch,
 * dying in epoch death. */
static struct seg *seg_create(rfb_cache *c, uint32_t death,
			      uint32_t write_epoch, rfb_err *err)
{
	unsigned char h[RFB_CACHE_SEGMENT_HEADER];
	char path[4200];
	struct seg *s;
	int fd;

	if (c->next_id == RFB_CACHE_NO_SEGMENT) { /* the sentinel is no id */
		rfb_err_set(err, RFB_ELIMIT, c->dir, "no segment id left");
		return NULL;
	}
	if (rfb_cache_segment_path(c->dir, c->next_id, path, sizeof path)) {
		rfb_err_set(err, RFB_ELIMIT, c->dir, "path too long");
		return NULL;
	}
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rfb_err_sys(err, errno, path, "cannot create segment");
		return NULL;
	}
	rfbi_cache_put_segment_header(h, c->next_id, death);
	if (rfb_write_full(fd, h, sizeof h) < 0) {
		rfb_err_sys(err, errno, path, "cannot write segment");
		close(fd);
		unlink(path);
		return NULL;
	}
	if (!(s = rfbi_cache_add_seg(c, c->next_id, death, err))) {
		close(fd);
		unlink(path);
		return NULL;
	}
	s->fd = fd;
	s->write_epoch = write_epoch;
	s->epoch_known = 1;
	s->size = s->durable = sizeof h;
	c->dir_dirty = 1;
	return s;
}

/* The segment records of write_epoch dying in death go to: the newest live
 * one of those epochs that has room, else a new one.  (The schedule gives
 * one write epoch per death: the check keeps a segment's records of one.) */
static struct seg *seg_for(rfb_cache *c, uint32_t death, uint32_t write_epoch,
			   size_t len, rfb_err *err)
{
	for (size_t i = c->nsegs; i-- > 0;) {
		struct seg *s = &c->segs[i];
		if (s->death != death || s->dead || s->sealed ||
		    (s->epoch_known && s->write_epoch != write_epoch))
			continue;
		if (s->size + len <= c->man.segment_max ||
		    s->size == RFB_CACHE_SEGMENT_HEADER)
			return s;
		break; /* the newest is full */
	}
	return seg_create(c, death, write_epoch, err);
}

/* Queue rec (not copied) for the next flush of s. */
static int seg_queue(struct seg *s, const unsigned char *rec, size_t len,
		     rfb_err *err)
{
	if (s->npending == s->cap_pending) {
		size_t cap = s->cap_pending ? s->cap_pending * 2 : 256;
		struct iovec *np = realloc(s->pending, cap * sizeof *np);
		if (!np)
			return rfb_err_set(err, RFB_ENOMEM, NULL,
					   "out of memory for the write queue");
		s->pending = np;
		s->cap_pending = cap;
	}
	s->pending[s->npending].iov_base = (void *)rec;
	s->pending[s->npending++].iov_len = len;
	s->size += len;
	return 0;
}

/* Append without counting it as new data (compaction copies). */
static int append_record(rfb_cache *c, const unsigned char *rec, size_t len,
			 const struct rfb_record_meta *m,
			 struct rfb_cache_addr *addr, rfb_err *err)
{
	int64_t slot = rfbi_cache_slot(c, m->sample);
	struct seg *s;
	uint64_t off;
	int rc;

	if (m->sample >= c->man.samples)
		return rfb_err_set(err, RFB_EINVAL, c->dir,
				   "sample %u is beyond the index (%u samples)",
				   m->sample, c->man.samples);
	if (slot < 0)
		return rfb_err_set(err, RFB_EINVAL, c->dir,
				   "sample %u is not in the cache's shard",
				   m->sample);
	if (!(s = seg_for(c, m->death_epoch, m->write_epoch, len, err)))
		return err ? err->code : RFB_EIO;
	off = s->size;
	if ((rc = seg_queue(s, rec, len, err)))
		return rc;
	/* seg_for chose a segment of m's write epoch: this cannot fail */
	(void)rfbi_cache_set_entry(c, (size_t)slot, s->id, off, (uint32_t)len,
				   m->write_epoch);
	addr->segment = s->id;
	addr->offset = off;
	addr->length = (uint32_t)len;
	if (s->size - s->durable >= WRITE_BUFFER_FLUSH)
		return seg_flush(c, s, err);
	return 0;
}

int rfb_cache_append(rfb_cache *c, const unsigned char *rec, size_t len,
		     const struct rfb_record_meta *m, struct rfb_cache_addr *addr,
		     rfb_err *err)
{
	int rc = append_record(c, rec, len, m, addr, err);

	if (rc == 0) {
		c->st.appended_records++;
		c->st.appended_bytes += len;
	}
	return rc;
}

void rfb_cache_set_grace(rfb_cache *c, uint64_t grace)
{
	c->grace = grace;
}

int rfb_cache_flush(rfb_cache *c, rfb_err *err)
{
	int rc;

	for (size_t i = 0; i < c->nsegs; i++)
		if ((rc = seg_flush(c, &c->segs[i], err)))
			return rc;
	return 0;
}

/* ---- eviction, deletion, compaction ---- */

static void seg_close(struct seg *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->pending);
	s->pending = NULL;
	s->npending = s->cap_pending = 0;
}

/* Segments whose records die in epoch become dead: forget their entries. */
static void kill_segments(rfb_cache *c, uint32_t epoch, uint64_t step)
{
	int any = 0;

	for (size_t i = 0; i < c->nsegs; i++) {
		struct seg *s = &c->segs[i];
		if (!s->dead && s->death <= epoch) {
			s->dead = 1;
			s->dead_since = step;
			seg_close(s); /* flushed already; nothing more goes in */
			any = 1;
		}
		if (s->dead && s->dead_since == DEAD_SINCE_UNKNOWN)
			s->dead_since = step;
	}
	if (!any)
		return;
	for (size_t i = 0; i < c->nslots; i++) {
		struct entry *e = &c->entries[i];
		struct seg *s;
		if (e->seg != RFB_CACHE_NO_SEGMENT &&
		    (s = rfbi_cache_find_seg(c, e->seg)) && s->dead)
			rfbi_cache_set_entry(c, i, RFB_CACHE_NO_SEGMENT, 0, 0, 0);
	}
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The reader's position (cache_position.c) when a reader of this run
 * wrote it: 1 and *held = the last batch whose records it holds; -1 when
 * a reader of this run opened the file but has read nothing yet; 0 when
 * no reader of this run tells its position. */
static int reader_position(rfb_cache *c, uint64_t *held)
{
	struct rfb_cache_position p;
	double mtime = 0;
	int rc = rfb_cache_position_read(c->dir, &p, &mtime);

	/* the slack of 1 s (coarse timestamps) would let in the position of
	 * a run that ended just before: recover() restores that run's step,
	 * and its reader would seem to hold every batch */
	int stale = rc > 0 && c->stale_known && p.pid == c->stale_pid &&
		    p.updates == c->stale_updates;

	if (rc > 0 && !stale && mtime + 1.0 >= c->opened_at &&
	    p.read_global <= c->step &&
	    (!c->held_known || p.read_global > c->held)) {
		c->held = p.read_global;  /* positions only grow in a run */
		c->held_known = 1;
	}
	if (c->held_known) {
		*held = c->held;
		return 1;
	}
	return rc == 0 || stale || mtime + 1.0 < c->opened_at ? 0 : -1;
}

/* Remember the position an earlier run's reader left, not to trust it. */
static void note_stale_position(rfb_cache *c)
{
	struct rfb_cache_position p;

	if (rfb_cache_position_read(c->dir, &p, NULL) > 0) {
		c->stale_known = 1;
		c->stale_pid = p.pid;
		c->stale_updates = p.updates;
	}
}

/* Someone holds the shared lock of the readers file: a reader is there. */
static int reader_present(rfb_cache *c)
{
	char path[4200];
	int fd, alone;

	snprintf(path, sizeof path, "%s/" READERS_NAME, c->dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	alone = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return !alone;
}

/* Delete the dead segments no batch left to read can refer to: those
 * that died before the reader's position (every batch before dead_since
 * is held by the reader; later ones never refer to them; and once it
 * holds batch dead_since, which does not refer to it, it has closed it:
 * the space comes back at once), or, when no reader tells its position,
 * whose grace has passed. */
static int delete_segments(rfb_cache *c, uint64_t step, rfb_err *err)
{
	char path[4200];
	size_t j = 0;
	uint64_t held = 0;
	int known = reader_position(c, &held) > 0;

	for (size_t i = 0; i < c->nsegs; i++) {
		struct seg *s = &c->segs[i];
		if (s->dead && (step >= s->dead_since + c->grace ||
				(known && held >= s->dead_since))) {
			seg_close(s);
			if (rfb_cache_segment_path(c->dir, s->id, path,
						   sizeof path))
				return rfb_err_set(err, RFB_ELIMIT, c->dir,
						   "path too long");
			if (unlink(path) < 0 && errno != ENOENT)
				return rfb_err_sys(err, errno, path,
						   "cannot delete segment");
			c->st.deleted_segments++;
			c->dir_dirty = 1;
			continue;
		}
		c->segs[j++] = *s;
	}
	c->nsegs = j;
	return 0;
}

/* Copy the live records of sparse segment s to the open segment of its
 * death epoch (a new one: s takes no more records from now on), then let
 * s die like an evicted one. */
static int compact_segment(rfb_cache *c, uint32_t sid, uint64_t step,
			   rfb_err *err)
{
	rfb_imgbuf buf = { 0 };
	int rc = 0;

	rfbi_cache_find_seg(c, sid)->sealed = 1;
	if (rfbi_cache_find_seg(c, sid)->live == 0)
		goto out; /* nothing to copy: no entry to look for */
	for (size_t i = 0; rc == 0 && i < c->nslots; i++) {
		struct entry e = c->entries[i];
		struct rfb_record_meta m;
		struct rfb_cache_addr a;
		struct seg *s = rfbi_cache_find_seg(c, sid);
		if (e.seg != sid)
			continue;
		if ((rc = seg_open_fd(c, s, err)) ||
		    (rc = rfb_imgbuf_reserve(&buf, e.length, err)))
			break;
		if (rfb_pread_full(s->fd, buf.data, e.length, (off_t)e.offset) !=
			    (ssize_t)e.length ||
		    rfb_record_parse_header(buf.data, e.length, &m, NULL) ||
		    rfb_record_verify(buf.data, e.length, &m, NULL) ||
		    m.sample != rfbi_cache_slot_sample(c, i)) {
			/* unreadable: recomputed later */
			rfbi_cache_set_entry(c, i, RFB_CACHE_NO_SEGMENT, 0, 0, 0);
			continue;
		}
		/* the cache does not copy: write it before buf is reused */
		if ((rc = append_record(c, buf.data, e.length, &m, &a, err)) == 0)
			rc = rfb_cache_flush(c, err);
		c->st.compacted_records++;
	}
out:
	rfb_imgbuf_free(&buf);
	struct seg *s = rfbi_cache_find_seg(c, sid);
	if (rc == 0 && s) {
		s->dead = 1;
		s->dead_since = step;
	}
	return rc;
}

/* A segment is sparse when less than half its record bytes are live
 * (records superseded by a later run's, or recomputed): it is compacted,
 * the segment records of its death epoch are appended to included, which
 * a new segment then replaces.  Else a segment that a run after run keeps
 * appending to would never be reclaimed (refurb-cache(5), WRITING). */
static int compact_sparse(rfb_cache *c, uint64_t step, rfb_err *err)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < c->nsegs; i++) {
		struct seg *s = &c->segs[i];
		uint64_t bytes = s->size - RFB_CACHE_SEGMENT_HEADER;
		if (s->dead || bytes == 0 ||
		    (double)s->live >= COMPACT_LIVE_RATIO * (double)bytes)
			continue;
		rc = compact_segment(c, s->id, step, err);
	}
	return rc;
}

/* Forget the records a run that starts at epoch first cannot serve: those
 * written for a later epoch (an earlier run's last epochs, a stopped run
 * that ran ahead).  The run visits every sample in epoch first and would
 * replace them there (a hit's record must be of the write epoch the
 * schedule gives at first, a miss's of first itself). */
static void forget_later(rfb_cache *c, uint32_t first)
{
	for (size_t i = 0; i < c->nslots; i++) {
		const struct entry *e = &c->entries[i];
		if (e->seg != RFB_CACHE_NO_SEGMENT &&
		    rfbi_cache_entry_epoch(c, e) > first)
			rfbi_cache_set_entry(c, i, RFB_CACHE_NO_SEGMENT, 0, 0, 0);
	}
}

/* The disk bound (refurb-cache(5)): before a new epoch kills its
 * segments, wait until a reader that tells its position holds every batch
 * of the epochs before, so that the segments that died before are
 * deleted.  The writer then runs at most one epoch ahead of its reader,
 * and the cache holds at most its live records and one eviction group
 * more.  No reader, or one that does not tell: no wait (the grace). */
static void wait_for_reader(rfb_cache *c, uint64_t step)
{
	uint64_t before = 0, held = 0;

	for (size_t i = 0; i < c->nsegs; i++)
		if (c->segs[i].dead && c->segs[i].dead_since < step &&
		    c->segs[i].dead_since > before)
			before = c->segs[i].dead_since;
	int told = 0;

	while (before > 0 && reader_present(c)) {
		int k = reader_position(c, &held);
		if (k > 0 && held >= before)
			break;
		if (k == 0 && !told)
			break;  /* a reader that does not tell: the grace */
		told |= k != 0;
		usleep(2000);
	}
}

int rfb_cache_advance(rfb_cache *c, uint32_t epoch, uint64_t global_step,
		      rfb_err *err)
{
	int rc;

	if (!c->have_epoch || epoch != c->epoch) {
		if ((rc = rfb_cache_flush(c, err)))
			return rc;
		c->step = global_step;
		wait_for_reader(c, global_step);
		kill_segments(c, epoch, global_step);
		if ((rc = compact_sparse(c, global_step, err)))
			return rc;
		c->have_epoch = 1;
		c->epoch = epoch;
	}
	c->step = global_step;
	return delete_segments(c, global_step, err);
}

void rfb_cache_get_stats(const rfb_cache *c, struct rfb_cache_stats *out)
{
	struct rfb_cache_stats st = c->st;

	st.live_records = st.live_bytes = 0;
	for (size_t i = 0; i < c->nslots; i++)
		if (c->entries[i].seg != RFB_CACHE_NO_SEGMENT) {
			st.live_records++;
			st.live_bytes += c->entries[i].length;
		}
	st.lifetime_appended = c->base_appended + c->st.appended_bytes;
	st.lifetime_written = c->base_written + c->st.written_bytes;
	st.segments = c->nsegs;
	st.dead_segments = st.dead_bytes = 0;
	for (size_t i = 0; i < c->nsegs; i++)
		if (c->segs[i].dead) {
			st.dead_segments++;
			st.dead_bytes += c->segs[i].size;
		}
	*out = st;
}

/* ---- opening and closing ---- */

static int take_lock(rfb_cache *c, rfb_err *err)
{
	char path[4200], pid[32];
	ssize_t n;

	snprintf(path, sizeof path, "%s/" LOCK_NAME, c->dir);
	c->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (c->lockfd < 0)
		return rfb_err_sys(err, errno, path, "cannot open lock file");
	if (flock(c->lockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return rfb_err_sys(err, errno, path, "cannot lock");
		n = rfb_pread_full(c->lockfd, pid, sizeof pid - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		return rfb_err_set(err, RFB_ELOCKED, c->dir,
				   "cache is locked by process %s (another "
				   "refurb-partial writes it)", pid[0] ? pid : "?");
	}
	n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(c->lockfd, 0) < 0 ||
	    rfb_pwrite_full(c->lockfd, pid, (size_t)n, 0) < 0)
		return rfb_err_sys(err, errno, path, "cannot write lock file");
	return 0;
}

/* Segments that died under an earlier writer wait out their grace only
 * while someone reads the cache: with no reader (no shared lock on the
 * readers file), nothing can still be reading them, and they go now.
 * Else a run shorter than the grace would leave them behind for good. */
static int delete_inherited(rfb_cache *c, rfb_err *err)
{
	char path[4200];
	int fd, alone;

	snprintf(path, sizeof path, "%s/" READERS_NAME, c->dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return rfb_err_sys(err, errno, path, "cannot create");
	alone = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);  /* a reader may come now: it reads only what is live */
	if (!alone)
		return 0;
	for (size_t i = 0; i < c->nsegs; i++)
		if (c->segs[i].dead)
			c->segs[i].dead_since = 0;
	return delete_segments(c, c->grace, err);
}

int rfb_cache_begin_run(rfb_cache *c, uint32_t first_epoch, rfb_err *err)
{
	int rc;

	/* their death step is the first batch's, unless nobody reads */
	forget_later(c, first_epoch);
	kill_segments(c, first_epoch, DEAD_SINCE_UNKNOWN);
	if ((rc = compact_sparse(c, DEAD_SINCE_UNKNOWN, err)) ||
	    (rc = rfb_cache_flush(c, err)) || (rc = delete_inherited(c, err)))
		return rc;
	/* the tables on disk say what this run starts from: a run stopped
	 * before its first epoch's end is not measured by an older one */
	c->epoch = first_epoch;
	return rfb_cache_checkpoint(c, err);
}

/* Remove every cache file (for --reset): segments, checkpoint, manifest. */
static int empty_cache(rfb_cache *c, rfb_err *err)
{
	uint32_t *ids;
	size_t n;
	char path[4200];
	int rc = rfbi_cache_list_segments(c->dir, &ids, &n, err);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (rfb_cache_segment_path(c->dir, ids[i], path, sizeof path))
			rc = rfb_err_set(err, RFB_ELIMIT, c->dir,
					 "path too long");
		else if (unlink(path) < 0 && errno != ENOENT)
			rc = rfb_err_sys(err, errno, path, "cannot delete");
	}
	free(ids);
	snprintf(path, sizeof path, "%s/" CHECKPOINT_NAME, c->dir);
	if (rc == 0 && unlink(path) < 0 && errno != ENOENT)
		rc = rfb_err_sys(err, errno, path, "cannot delete");
	return rc;
}

/* Does dir hold anything but cache files?  (Then it is not a cache and
 * refurb will not write into it.) */
static int has_foreign_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int foreign = 0;

	if (!d)
		return 0;
	while (!foreign && (e = readdir(d))) {
		const char *n = e->d_name;
		size_t len = strlen(n);
		foreign = strcmp(n, ".") && strcmp(n, "..") &&
			  strcmp(n, LOCK_NAME) && strcmp(n, CHECKPOINT_NAME) &&
			  strcmp(n, READERS_NAME) &&
			  strncmp(n, MANIFEST_NAME, strlen(MANIFEST_NAME)) &&
			  strncmp(n, CHECKPOINT_NAME ".tmp.", 12) &&
			  !(len == 12 && strcmp(n + 8, ".seg") == 0);
	}
	closedir(d);
	return foreign;
}

/* A directory without a manifest that holds other files is not a cache:
 * refuse it before the lock file is created in it (even with --reset,
 * which empties caches, not other directories).  Cache files alone (a
 * writer creating the cache right now) are not foreign. */
static int refuse_foreign(rfb_cache *c, rfb_err *err)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof path, "%s/" MANIFEST_NAME, c->dir);
	if (stat(path, &st) == 0 || errno != ENOENT || !has_foreign_files(c->dir))
		return 0;
	return rfb_err_set(err, RFB_EINVAL, c->dir, "not a refurb cache and not "
			   "empty; give a new or empty directory");
}

/* Compare the manifest on disk with want; start a new cache (writing the
 * manifest) when there is none, or when reset is asked for. */
static int check_manifest(rfb_cache *c, const struct rfb_cache_manifest *want,
			  unsigned flags, struct rfb_cache_recovery *rec,
			  rfb_err *err)
{
	struct rfb_cache_manifest have;
	rfb_err why = { 0 };
	const char *diff;
	int rc = rfb_cache_read_manifest(c->dir, &have, &why);
	int missing = rc == RFB_EIO && why.sys_errno == ENOENT;

	if (rc == 0 && !(diff = rfb_cache_manifest_diff(&have, want)))
		return 0;
	if (!(flags & RFB_CACHE_RESET)) {
		if (rc == 0)
			return rfb_err_set(err, RFB_EMISMATCH, c->dir,
				"cache was made with a different %s%s (use --reset "
				"to empty it and start again, or give this plan a "
				"cache of its own)", diff, rfbi_cache_manifest_hint(diff));
		if (rc == RFB_ECHECKSUM)
			return rfb_err_set(err, rc, why.path, "%s (use --reset to "
					   "empty the cache and start again)",
					   why.msg);
		if (!missing) {
			*err = why;
			return rc;
		}
		if (has_foreign_files(c->dir))
			return rfb_err_set(err, RFB_EINVAL, c->dir,
				"not a refurb cache and not empty; give a new "
				"or empty directory");
	}
	rec->created = 1;
	if ((rc = empty_cache(c, err)))
		return rc;
	return rfbi_cache_write_manifest(c->dir, want, err);
}

/* mkdir -p: dir and the parents it lacks.  0, or -1 with errno set. */
static int make_dirs(const char *dir)
{
	char path[4200];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof path) {
		errno = n ? ENAMETOOLONG : ENOENT;
		return -1;
	}
	memcpy(path, dir, n + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

rfb_cache *rfb_cache_open(const char *dir, const struct rfb_cache_manifest *want,
			  unsigned flags, uint64_t grace,
			  struct rfb_cache_recovery *rec, rfb_err *err)
{
	return rfb_cache_open_shard(dir, want, NULL, 0, flags, grace, rec, err);
}

rfb_cache *rfb_cache_open_shard(const char *dir,
				const struct rfb_cache_manifest *want,
				const uint32_t *ids, uint32_t n, unsigned flags,
				uint64_t grace, struct rfb_cache_recovery *rec,
				rfb_err *err)
{
	rfb_cache *c = calloc(1, sizeof *c);

	memset(rec, 0, sizeof *rec);
	if (!c || !(c->dir = strdup(dir))) {
		free(c);
		rfb_err_set(err, RFB_ENOMEM, dir, "out of memory");
		return NULL;
	}
	c->lockfd = -1;
	c->man = *want;
	if (!c->man.segment_max)
		c->man.segment_max = RFB_CACHE_DEFAULT_SEGMENT_MAX;
	c->grace = grace;
	c->opened_at = wall_now();
	if (rfbi_cache_make_slots(c, ids, n, err))
		goto fail;
	if (make_dirs(dir) < 0) {
		rfb_err_sys(err, errno, dir, "cannot create cache directory");
		goto fail;
	}
	if (refuse_foreign(c, err) || take_lock(c, err))
		goto fail;
	rfbi_cache_remove_temporaries(c->dir);
	if (check_manifest(c, &c->man, flags, rec, err))
		goto fail;
	c->manifest_hash = rfbi_cache_manifest_hash(&c->man);
	note_stale_position(c);
	if (rfbi_cache_recover(c, rec, err) || delete_inherited(c, err))
		goto fail;
	return c;
fail:
	for (size_t i = 0; i < c->nsegs; i++)
		seg_close(&c->segs[i]);
	if (c->lockfd >= 0)
		close(c->lockfd);
	free(c->segs);
	free(c->entries);
	free(c->dir);
	free(c);
	return NULL;
}

/* ---- checkpoints (cache_checkpoint.c) ---- */

/* Wait for the background checkpoint, flush, and hand the fsyncs and the
 * checkpoint of the cache as it is now to a job. */
static int checkpoint(rfb_cache *c, int background, rfb_err *err)
{
	int rc;

	if ((rc = rfbi_cache_ckpt_join(c, err)) || (rc = rfb_cache_flush(c, err)))
		return rc;
	return rfbi_cache_ckpt_begin(c, background, err);
}

int rfb_cache_checkpoint_start(rfb_cache *c, rfb_err *err)
{
	return checkpoint(c, 1, err);
}

int rfb_cache_checkpoint(rfb_cache *c, rfb_err *err)
{
	return checkpoint(c, 0, err);
}

int rfb_cache_close(rfb_cache *c, rfb_err *err)
{
	int rc;

	if (!c)
		return 0;
	rc = rfb_cache_checkpoint(c, err);
	/* a reader of this run opened its position file (told a position or
	 * not yet: killed before its first batch) and has gone (a trainer
	 * killed, the stream closed): nothing reads the dead segments any
	 * more, which would else stay until the next run (refurb-cache(5),
	 * DISK SPACE).  Without one (a plan written to a file for later),
	 * they wait for the next writer. */
	uint64_t held;
	if (rc == 0 && (c->held_known || reader_position(c, &held) != 0))
		rc = delete_inherited(c, err);
	for (size_t i = 0; i < c->nsegs; i++)
		seg_close(&c->segs[i]);
	close(c->lockfd);
	free(c->segs);
	free(c->entries);
	free(c->dir);
	free(c);
	return rc;
}
