/*
 * rfbi_cache_recover.c - recovery after a crash (refurb-cache(5),
 * "Durability"): load the last checkpoint (cache_checkpoint.c), scan
 * what segments gained after it, cut torn tails, drop what is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "refurb/checksum.h"
#include "refurb/io.h"

#define SCAN_BUF ((size_t)4 << 20)

/* rfbi_cache_ckpt_entries: take a checkpoint's entry.  Entries of no
 * slot, shorter than a record header or not inside their segment's
 * checkpointed length are ignored. */
static void adopt_entry(void *ctx, const struct ckpt_entry *e)
{
	rfb_cache *c = ctx;
	uint32_t sid = e->seg, len = e->length;
	uint64_t off = e->offset;
	struct seg *s = rfbi_cache_find_seg(c, sid);
	int64_t slot = rfbi_cache_slot(c, e->sample);

	/* off + len could wrap: compare without adding */
	if (slot < 0 || !s || s->dead || off > RFB_CACHE_MAX_SEGMENT ||
	    off < RFB_CACHE_SEGMENT_HEADER ||
	    len < RFB_RECORD_HEADER_SIZE || len > s->durable ||
	    off > s->durable - len)
		return;
	/* an entry of another write epoch than its segment's is left out */
	(void)rfbi_cache_set_entry(c, (size_t)slot, sid, off, len,
				   e->write_epoch);
}

/* Take the segments, then the entries, of a checkpoint that belongs to
 * this cache, read a chunk at a time; a checksum that fails at the end
 * undoes it all (the segments are then scanned whole).  1 when adopted,
 * 0 when not, or a negative RFB_E* code. */
static int adopt_checkpoint(rfb_cache *c, struct ckpt *k, rfb_err *err)
{
	rfb_err why = { 0 };

	for (uint32_t i = 0; i < k->h.segments; i++) {
		struct ckpt_seg row;
		rfbi_cache_ckpt_seg(k, i, &row);
		struct seg *s = rfbi_cache_add_seg(c, row.id, row.death, err);
		if (!s)
			return RFB_ENOMEM;
		s->dead = row.dead != 0;
		s->size = s->durable = s->synced = row.durable;
		s->dead_since = s->dead ? DEAD_SINCE_UNKNOWN : 0;
	}
	if (rfbi_cache_ckpt_entries(k, adopt_entry, c, &why)) {
		for (size_t i = 0; i < c->nslots; i++)
			c->entries[i].seg = RFB_CACHE_NO_SEGMENT;
		c->nsegs = 0;
		c->next_id = 0;
		return 0;
	}
	if (k->h.next_id > c->next_id)
		c->next_id = k->h.next_id;
	c->step = k->h.step;
	c->base_appended = k->h.appended;
	c->base_written = k->h.written;
	return 1;
}

/* ---- scanning segment tails ---- */

/* Read records of s from byte from on, adopting the good ones; cut the
 * file at the first bad one. */
static int scan_tail(rfb_cache *c, struct seg *s, int fd, uint64_t from,
		     uint64_t file_len, struct rfb_cache_recovery *rec,
		     rfb_err *err)
{
	rfb_imgbuf buf = { 0 };
	uint64_t off = from;
	int rc = 0;

	while (off < file_len) {
		struct rfb_record_meta m;
		size_t len;
		if (file_len - off < RFB_RECORD_HEADER_SIZE ||
		    (rc = rfb_imgbuf_reserve(&buf, RFB_RECORD_HEADER_SIZE, err)))
			break;
		if (rfb_pread_full(fd, buf.data, RFB_RECORD_HEADER_SIZE, (off_t)off) !=
			    RFB_RECORD_HEADER_SIZE ||
		    rfb_record_parse_header(buf.data, RFB_RECORD_HEADER_SIZE, &m, NULL))
			break;
		len = rfb_record_size(&m);
		/* a record dies with its segment: another death epoch means
		 * the segment is damaged from here on */
		if (len > file_len - off || m.sample >= c->man.samples ||
		    m.death_epoch != s->death ||
		    (rc = rfb_imgbuf_reserve(&buf, len, err)))
			break;
		if (rfb_pread_full(fd, buf.data, len, (off_t)off) != (ssize_t)len ||
		    rfb_record_verify(buf.data, len, &m, NULL))
			break;
		int64_t slot = rfbi_cache_slot(c, m.sample);
		/* another shard's record (not this writer's): left alone */
		const struct entry *e = slot < 0 ? NULL : &c->entries[slot];
		if (e && off <= RFB_CACHE_MAX_SEGMENT &&
		    (e->seg == RFB_CACHE_NO_SEGMENT ||
		     rfbi_cache_entry_epoch(c, e) <= m.write_epoch))
			(void)rfbi_cache_set_entry(c, (size_t)slot, s->id, off,
						   (uint32_t)len, m.write_epoch);
		rec->scanned++;
		off += len;
	}
	rfb_imgbuf_free(&buf);
	if (rc)
		return rc;
	if (off < file_len) {
		rec->torn_bytes += file_len - off;
		if (ftruncate(fd, (off_t)off) < 0)
			return rfb_err_sys(err, errno, c->dir,
					   "cannot cut a torn segment tail");
	}
	s->size = s->durable = s->synced = off;
	return 0;
}

/* Drop the entries of a segment that is gone or shorter than recorded. */
static void drop_entries(rfb_cache *c, uint32_t sid, uint64_t beyond,
			 struct rfb_cache_recovery *rec)
{
	for (size_t i = 0; i < c->nslots; i++) {
		const struct entry *e = &c->entries[i];
		if (e->seg == sid && (uint64_t)e->offset + e->length > beyond) {
			rfbi_cache_set_entry(c, i, RFB_CACHE_NO_SEGMENT, 0, 0, 0);
			rec->lost++;
		}
	}
}

/* Bring one segment file in line with the record index. */
static int recover_segment(rfb_cache *c, uint32_t id,
			   struct rfb_cache_recovery *rec, rfb_err *err)
{
	unsigned char h[RFB_CACHE_SEGMENT_HEADER];
	char path[4200];
	struct stat st;
	uint32_t hid, death;
	struct seg *s = rfbi_cache_find_seg(c, id);
	int fd = -1, rc = 0;

	if (rfb_cache_segment_path(c->dir, id, path, sizeof path)) {
		rc = rfb_err_set(err, RFB_ELIMIT, c->dir, "path too long");
		goto out;
	}
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		rc = rfb_err_sys(err, errno, path, "cannot open segment");
		goto out;
	}
	if (rfb_pread_full(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    rfbi_cache_parse_segment_header(h, &hid, &death) || hid != id ||
	    (s && s->death != death)) {
		/* torn at creation or damaged: nothing in it can be trusted */
		if (s)
			drop_entries(c, id, RFB_CACHE_SEGMENT_HEADER, rec);
		if (unlink(path) < 0)
			rc = rfb_err_sys(err, errno, path, "cannot delete");
		if (s)
			s->dead = 1, s->size = s->durable = 0;
		goto out;
	}
	rec->segments++;
	if (!s && !(s = rfbi_cache_add_seg(c, id, death, err))) {
		rc = RFB_ENOMEM;
		goto out;
	}
	uint64_t from = s->durable ? s->durable : RFB_CACHE_SEGMENT_HEADER;
	if ((uint64_t)st.st_size < from) {
		drop_entries(c, id, RFB_CACHE_SEGMENT_HEADER, rec);
		from = RFB_CACHE_SEGMENT_HEADER;
	}
	if (!s->dead)
		rc = scan_tail(c, s, fd, from, (uint64_t)st.st_size, rec, err);
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int rfbi_cache_recover(rfb_cache *c, struct rfb_cache_recovery *rec, rfb_err *err)
{
	struct ckpt k;
	rfb_err why = { 0 };
	uint32_t *ids = NULL;
	size_t n = 0, j = 0;
	int rc = rfbi_cache_ckpt_open(c->dir, &k, &why);

	if (rc == 0 && k.h.manifest_hash == c->manifest_hash &&
	    k.h.samples == c->man.samples) {
		if ((rc = adopt_checkpoint(c, &k, err)) < 0)
			goto out;
		rec->from_checkpoint = rc;
	}
	rc = 0;
	/* no, foreign or corrupt checkpoint: every segment is scanned whole */
	if ((rc = rfbi_cache_list_segments(c->dir, &ids, &n, err)))
		goto out;
	for (size_t i = 0; i < c->nsegs; i++) {
		struct seg *s = &c->segs[i];
		while (j < n && ids[j] < s->id)
			j++;
		if (j == n || ids[j] != s->id) {
			drop_entries(c, s->id, RFB_CACHE_SEGMENT_HEADER, rec);
			s->dead = 1;
			s->size = s->durable = 0;
		}
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = recover_segment(c, ids[i], rec, err);
	rec->records = rfbi_cache_live_entries(c);
out:
	free(ids);
	rfbi_cache_ckpt_close(&k);
	return rc;
}
