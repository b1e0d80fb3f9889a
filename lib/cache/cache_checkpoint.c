/*
 * cache_checkpoint.c - the record index checkpoint (refurb-cache(5),
 * "Durability"): its encoder, the job that fsyncs the segments and
 * replaces the file (in a thread or in place), and its reader, which
 * recovery (rfbi_cache_recover.c) and rfb_cache_read_checkpoint use.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/io.h"

/* ---- writing the checkpoint ---- */

/* The header and segment table of c's checkpoint as it is now, with
 * live entries (*head malloc'ed, *len bytes); the entry table follows
 * them in the file (write_checkpoint), then the checksum of both tables. */
static int build_head(const rfb_cache *c, size_t live, unsigned char **head,
		      size_t *len_out, rfb_err *err)
{
	size_t len = CKPT_HEADER + c->nsegs * CKPT_SEG;
	const struct ckpt_header h = {
		.manifest_hash = c->manifest_hash, .samples = c->man.samples,
		.entries = (uint32_t)live, .segments = (uint32_t)c->nsegs,
		.next_id = c->next_id, .step = c->step, .epoch = c->epoch,
		.appended = c->base_appended + c->st.appended_bytes,
		.written = c->base_written + c->st.written_bytes,
	};
	unsigned char *b, *p;

	if (!(b = calloc(1, len)))
		return rfb_err_set(err, RFB_ENOMEM, c->dir, "out of memory");
	rfbi_cache_ckpt_header_encode(&h, b);
	p = b + CKPT_HEADER;
	for (size_t i = 0; i < c->nsegs; i++, p += CKPT_SEG) {
		const struct seg *s = &c->segs[i];
		const struct ckpt_seg row = { s->id, s->death, (uint32_t)s->dead,
					      s->durable, s->dead_since };
		rfbi_cache_ckpt_seg_encode(&row, p);
	}
	*head = b;
	*len_out = len;
	return 0;
}

#define CKPT_CHUNK ((size_t)CKPT_ENTRY * 1024)

/* The write epoch of segment sid's records as k was taken (its segments
 * are sorted by id, as the writer's). */
static uint32_t job_epoch(const struct ckpt_job *k, uint32_t sid)
{
	size_t lo = 0, hi = k->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k->seg_ids[mid] == sid)
			return k->seg_epochs[mid];
		if (k->seg_ids[mid] < sid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* rfb_fill_fn: the checkpoint file from k, its entry table written a
 * chunk at a time from the copy of the record index (no file image in
 * memory: a copy at 12 bytes a slot is all a checkpoint costs). */
static int write_checkpoint(void *ctx, int fd, rfb_err *err)
{
	const struct ckpt_job *k = ctx;
	unsigned char chunk[CKPT_CHUNK], *p = chunk, sum[4];
	uint32_t crc = rfb_crc32c(0, k->head + CKPT_HEADER,
				  k->head_len - CKPT_HEADER);

	if (rfb_write_full(fd, k->head, k->head_len) < 0)
		goto fail;
	for (size_t i = 0; i < k->c->nslots; i++) {
		const struct entry *e = &k->entries[i];
		if (e->seg == RFB_CACHE_NO_SEGMENT)
			continue;
		const struct ckpt_entry row = { rfbi_cache_slot_sample(k->c, i),
						e->seg, e->offset, e->length,
						job_epoch(k, e->seg) };
		rfbi_cache_ckpt_entry_encode(&row, p);
		p += CKPT_ENTRY;
		if (p == chunk + sizeof chunk) {
			crc = rfb_crc32c(crc, chunk, sizeof chunk);
			if (rfb_write_full(fd, chunk, sizeof chunk) < 0)
				goto fail;
			p = chunk;
		}
	}
	crc = rfb_crc32c(crc, chunk, (size_t)(p - chunk)); /* the rest */
	if (p > chunk && rfb_write_full(fd, chunk, (size_t)(p - chunk)) < 0)
		goto fail;
	rfbi_cache_ckpt_crc_put(sum, crc);
	if (rfb_write_full(fd, sum, sizeof sum) < 0)
		goto fail;
	return 0;
fail:
	return rfb_err_sys(err, errno, k->dir, "cannot write the checkpoint");
}

/* ---- reading it ---- */

void rfbi_cache_ckpt_seg(const struct ckpt *k, uint32_t i, struct ckpt_seg *s)
{
	rfbi_cache_ckpt_seg_decode(k->seg_table + (size_t)i * CKPT_SEG, s);
}

void rfbi_cache_ckpt_entry(const struct ckpt *k, uint32_t i,
			   struct ckpt_entry *e)
{
	rfbi_cache_ckpt_entry_decode(k->entry_table + (size_t)i * CKPT_ENTRY, e);
}

/* The writer's segment table is sorted and has no duplicate; an id equal
 * to RFB_CACHE_NO_SEGMENT would be taken for "no record". */
static int check_segments(const struct ckpt *k)
{
	struct ckpt_seg s;

	for (uint32_t i = 0, prev = 0; i < k->h.segments; i++, prev = s.id) {
		rfbi_cache_ckpt_seg(k, i, &s);
		if (s.id == RFB_CACHE_NO_SEGMENT || (i && s.id <= prev))
			return -1;
	}
	return 0;
}

int rfbi_cache_ckpt_load(const char *dir, struct ckpt *k, rfb_err *err)
{
	char path[4200];
	int rc;

	snprintf(path, sizeof path, "%s/" CHECKPOINT_NAME, dir);
	memset(k, 0, sizeof *k);
	k->fd = -1;
	rc = rfb_file_load(path, (size_t)1 << 40, &k->data, &k->len, err);
	if (rc == RFB_EIO && err && err->sys_errno == ENOENT)
		return RFB_ENOTFOUND;
	if (rc)
		return rc;
	if (k->len < CKPT_HEADER + 4 ||
	    rfbi_cache_ckpt_header_decode(k->data, &k->h))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "record index checkpoint is corrupt");
	if (CKPT_HEADER + (uint64_t)k->h.segments * CKPT_SEG +
		    (uint64_t)k->h.entries * CKPT_ENTRY + 4 != k->len ||
	    rfbi_cache_ckpt_crc_check(k->data + CKPT_HEADER,
				      k->len - CKPT_HEADER - 4))
		return rfb_err_set(err, RFB_ECHECKSUM, path,
				   "record index checkpoint is corrupt");
	k->seg_table = k->data + CKPT_HEADER;
	k->entry_table = k->seg_table + (size_t)k->h.segments * CKPT_SEG;
	if (check_segments(k))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "record index checkpoint is corrupt "
				   "(segment table)");
	return 0;
}

int rfbi_cache_ckpt_open(const char *dir, struct ckpt *k, rfb_err *err)
{
	unsigned char h[CKPT_HEADER];
	struct stat st;
	size_t segs;

	memset(k, 0, sizeof *k);
	snprintf(k->path, sizeof k->path, "%s/" CHECKPOINT_NAME, dir);
	if ((k->fd = open(k->path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? RFB_ENOTFOUND
				       : rfb_err_sys(err, errno, k->path,
						     "cannot open");
	if (fstat(k->fd, &st) < 0)
		return rfb_err_sys(err, errno, k->path, "cannot read");
	if (rfb_pread_full(k->fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    (uint64_t)st.st_size < CKPT_HEADER + 4 ||
	    rfbi_cache_ckpt_header_decode(h, &k->h))
		return rfb_err_set(err, RFB_EFORMAT, k->path,
				   "record index checkpoint is corrupt");
	if (CKPT_HEADER + (uint64_t)k->h.segments * CKPT_SEG +
		    (uint64_t)k->h.entries * CKPT_ENTRY + 4 != (uint64_t)st.st_size)
		return rfb_err_set(err, RFB_ECHECKSUM, k->path,
				   "record index checkpoint is corrupt");
	/* the size was checked against the file's: these bytes are there */
	segs = (size_t)k->h.segments * CKPT_SEG;
	k->len = CKPT_HEADER + segs;
	if (!(k->data = malloc(k->len)))
		return rfb_err_set(err, RFB_ENOMEM, k->path, "out of memory");
	memcpy(k->data, h, sizeof h);
	if (rfb_pread_full(k->fd, k->data + CKPT_HEADER, segs, CKPT_HEADER) !=
	    (ssize_t)segs)
		return rfb_err_set(err, RFB_EFORMAT, k->path,
				   "record index checkpoint is corrupt");
	k->seg_table = k->data + CKPT_HEADER;
	k->crc = rfb_crc32c(0, k->seg_table, segs);
	if (check_segments(k))
		return rfb_err_set(err, RFB_EFORMAT, k->path,
				   "record index checkpoint is corrupt "
				   "(segment table)");
	return 0;
}

int rfbi_cache_ckpt_entries(struct ckpt *k,
			    void (*fn)(void *ctx, const struct ckpt_entry *e),
			    void *ctx, rfb_err *err)
{
	unsigned char chunk[CKPT_CHUNK], sum[4];
	uint64_t off = k->len, left = (uint64_t)k->h.entries * CKPT_ENTRY;
	uint32_t crc = k->crc;

	while (left > 0) {
		size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
		if (rfb_pread_full(k->fd, chunk, n, (off_t)off) != (ssize_t)n)
			return rfb_err_set(err, RFB_ECHECKSUM, k->path,
					   "record index checkpoint is corrupt");
		crc = rfb_crc32c(crc, chunk, n);
		for (size_t i = 0; i < n; i += CKPT_ENTRY) {
			struct ckpt_entry e;
			rfbi_cache_ckpt_entry_decode(chunk + i, &e);
			fn(ctx, &e);
		}
		off += n;
		left -= n;
	}
	if (rfb_pread_full(k->fd, sum, sizeof sum, (off_t)off) != 4 ||
	    rfbi_cache_ckpt_crc_get(sum) != crc)
		return rfb_err_set(err, RFB_ECHECKSUM, k->path,
				   "record index checkpoint is corrupt");
	return 0;
}

void rfbi_cache_ckpt_close(struct ckpt *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	free(k->data);
	k->data = NULL;
}

int rfbi_cache_ckpt_segments(const char *dir, struct ckpt_seg **table,
			     uint32_t *n)
{
	char path[4200];
	unsigned char h[CKPT_HEADER], *rows = NULL;
	struct ckpt_header k;
	struct stat st;
	size_t len;
	int fd;

	*table = NULL;
	*n = 0;
	snprintf(path, sizeof path, "%s/" CHECKPOINT_NAME, dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (fstat(fd, &st) < 0 ||
	    rfb_pread_full(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    rfbi_cache_ckpt_header_decode(h, &k))
		goto done;
	len = (size_t)k.segments * CKPT_SEG;
	/* checked against the file's size before it is allocated */
	if (CKPT_HEADER + (uint64_t)len + 4 > (uint64_t)st.st_size ||
	    !(rows = malloc(len ? len : 1)) ||
	    !(*table = calloc(k.segments ? k.segments : 1, sizeof **table)) ||
	    rfb_pread_full(fd, rows, len, CKPT_HEADER) != (ssize_t)len)
		goto done;
	for (uint32_t i = 0; i < k.segments; i++)
		rfbi_cache_ckpt_seg_decode(rows + (size_t)i * CKPT_SEG,
					   &(*table)[i]);
	*n = k.segments;
done:
	close(fd);
	free(rows);
	if (*n == 0) {
		free(*table);
		*table = NULL;
	}
	return 0;
}

/* The death epoch of segment id in k's table (sorted by id: a binary
 * search, so that reading the entries stays linear); 0 if absent. */
static uint32_t seg_death(const struct ckpt *k, uint32_t id)
{
	size_t lo = 0, hi = k->h.segments;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct ckpt_seg g;
		rfbi_cache_ckpt_seg(k, (uint32_t)mid, &g);
		if (g.id == id)
			return g.death;
		if (g.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static void checkpoint_info(const struct ckpt *k,
			    struct rfb_cache_checkpoint_info *info)
{
	info->epoch = k->h.epoch;
	info->global_step = k->h.step;
	info->entries = k->h.entries;
	info->appended_bytes = k->h.appended;
	info->written_bytes = k->h.written;
	info->segments = k->h.segments;
	info->dead_segments = 0;
	for (uint32_t j = 0; j < k->h.segments; j++) {
		struct ckpt_seg s;
		rfbi_cache_ckpt_seg(k, j, &s);
		info->dead_segments += s.dead != 0;
	}
}

int rfb_cache_read_checkpoint(const char *dir,
			      void (*fn)(void *ctx, uint32_t sample,
					 const struct rfb_cache_entry *e),
			      void *ctx, struct rfb_cache_checkpoint_info *info,
			      rfb_err *err)
{
	struct ckpt k;
	int rc = rfbi_cache_ckpt_load(dir, &k, err);

	if (rc == 0 && info)
		checkpoint_info(&k, info);
	for (uint32_t i = 0; rc == 0 && fn && i < k.h.entries; i++) {
		struct ckpt_entry row;
		rfbi_cache_ckpt_entry(&k, i, &row);
		struct rfb_cache_entry e = { { row.seg, row.length, row.offset },
					     row.write_epoch, 0 };
		e.death_epoch = seg_death(&k, e.addr.segment);
		fn(ctx, row.sample, &e);
	}
	free(k.data);
	return rc;
}

/* ---- writing it in the background ---- */

static void *ckpt_main(void *arg)
{
	struct ckpt_job *k = arg;
	char path[4200];

	k->rc = 0;
	for (size_t i = 0; i < k->nfds && !k->rc; i++)
		if (fsync(k->fds[i]) < 0) {
			int e = errno;
			/* a path too long for the message names the cache */
			if (rfb_cache_segment_path(k->dir, k->ids[i], path,
						   sizeof path))
				snprintf(path, sizeof path, "%s", k->dir);
			k->rc = rfb_err_sys(&k->err, e, path, "fsync failed");
		}
	/* close the copies now, not when the job is collected (the next
	 * epoch's end): a segment deleted meanwhile gives its space back */
	for (size_t i = 0; i < k->nfds; i++) {
		close(k->fds[i]);
		k->fds[i] = -1;
	}
	snprintf(path, sizeof path, "%s/" CHECKPOINT_NAME, k->dir);
	if (!k->rc && k->sync_dir)
		k->rc = rfb_fsync_parent(path, &k->err);
	/* segments first: the checkpoint names only durable records */
	if (!k->rc)
		k->rc = rfb_file_replace_with(path, write_checkpoint, k,
					      &k->err);
	return NULL;
}

static void ckpt_release(struct ckpt_job *k)
{
	for (size_t i = 0; i < k->nfds; i++)
		if (k->fds[i] >= 0)
			close(k->fds[i]);
	free(k->fds);
	free(k->ids);
	free(k->head);
	free(k->entries);
	free(k->seg_ids);
	free(k->seg_epochs);
	k->fds = NULL;
	k->ids = NULL;
	k->head = NULL;
	k->entries = NULL;
	k->seg_ids = k->seg_epochs = NULL;
	k->nfds = 0;
}

/* The job's result, once it has run.  On failure its segments are not
 * known to be synced after all: the next checkpoint fsyncs them again. */
static int ckpt_finish(rfb_cache *c, rfb_err *err)
{
	struct ckpt_job *k = &c->ck;
	struct seg *s;
	int rc = k->rc;

	k->running = 0;
	for (size_t i = 0; rc && i < k->nfds; i++)
		if ((s = rfbi_cache_find_seg(c, k->ids[i])))
			s->synced = 0;
	ckpt_release(k);
	if (rc && err)
		*err = k->err;
	return rc;
}

int rfbi_cache_ckpt_join(rfb_cache *c, rfb_err *err)
{
	if (!c->ck.running)
		return 0;
	pthread_join(c->ck.thread, NULL);
	return ckpt_finish(c, err);
}

int rfbi_cache_ckpt_begin(rfb_cache *c, int background, rfb_err *err)
{
	struct ckpt_job *k = &c->ck;
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < c->nsegs; i++)
		n += c->segs[i].durable != c->segs[i].synced && c->segs[i].fd >= 0;
	k->fds = malloc((n ? n : 1) * sizeof *k->fds);
	k->ids = malloc((n ? n : 1) * sizeof *k->ids);
	if (!k->fds || !k->ids) {
		ckpt_release(k);
		return rfb_err_set(err, RFB_ENOMEM, c->dir, "out of memory");
	}
	for (size_t i = 0; i < c->nsegs; i++) {
		struct seg *s = &c->segs[i];
		if (s->durable == s->synced || s->fd < 0)
			continue;
		/* a copy: the segment may be closed or deleted meanwhile */
		if ((k->fds[k->nfds] = dup(s->fd)) < 0) {
			ckpt_release(k);
			return rfb_err_sys(err, errno, c->dir, "cannot dup a segment");
		}
		k->ids[k->nfds++] = s->id;
		s->synced = s->durable;
	}
	k->sync_dir = c->dir_dirty;
	c->dir_dirty = 0;
	k->dir = c->dir;
	k->c = c;
	k->live = rfbi_cache_live_entries(c);
	/* the copy the job writes while c goes on changing */
	k->entries = malloc((c->nslots ? c->nslots : 1) * sizeof *k->entries);
	k->nsegs = c->nsegs;
	k->seg_ids = malloc((c->nsegs ? c->nsegs : 1) * sizeof *k->seg_ids);
	k->seg_epochs = malloc((c->nsegs ? c->nsegs : 1) * sizeof *k->seg_epochs);
	if (!k->entries || !k->seg_ids || !k->seg_epochs) {
		ckpt_release(k);
		return rfb_err_set(err, RFB_ENOMEM, c->dir, "out of memory");
	}
	memcpy(k->entries, c->entries, c->nslots * sizeof *k->entries);
	for (size_t i = 0; i < c->nsegs; i++) {
		k->seg_ids[i] = c->segs[i].id;
		k->seg_epochs[i] = c->segs[i].write_epoch;
	}
	if ((rc = build_head(c, k->live, &k->head, &k->head_len, err))) {
		ckpt_release(k);
		return rc;
	}
	k->running = 1;
	if (!background || pthread_create(&k->thread, NULL, ckpt_main, k) != 0) {
		ckpt_main(k);
		return ckpt_finish(c, err);
	}
	return 0;
}
