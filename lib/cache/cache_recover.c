/*
 * cache_recover.c - the record index checkpoint and recovery after a
 * crash (refurb-cache(5), "Durability"): load the last checkpoint, scan
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
#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/io.h"

#define CKPT_MAGIC "RFBCREC\x01"
#define CKPT_HEADER 64
#define CKPT_SEG 40
#define CKPT_ENTRY 24
#define SCAN_BUF ((size_t)4 << 20)

/* ---- writing the checkpoint ---- */

static size_t live_entries(const rfb_cache *c)
{
	size_t n = 0;

	for (uint32_t i = 0; i < c->man.samples; i++)
		n += c->entries[i].seg != RFB_CACHE_NO_SEGMENT;
	return n;
}

int cache_build_checkpoint(const rfb_cache *c, unsigned char **data,
			   size_t *len_out, rfb_err *err)
{
	size_t ne = live_entries(c), len;
	unsigned char *b, *p;

	len = CKPT_HEADER + c->nsegs * CKPT_SEG + ne * CKPT_ENTRY + 4;
	if (!(b = calloc(1, len)))
		return rfb_err_set(err, RFB_ENOMEM, c->dir, "out of memory");
	memcpy(b, CKPT_MAGIC, 8);
	rfb_put_le64(b + 8, c->manifest_hash);
	rfb_put_le32(b + 16, c->man.samples);
	rfb_put_le32(b + 20, (uint32_t)ne);
	rfb_put_le32(b + 24, (uint32_t)c->nsegs);
	rfb_put_le32(b + 28, c->next_id);
	rfb_put_le64(b + 32, c->step);
	rfb_put_le32(b + 40, c->epoch);
	rfb_put_le64(b + 44, c->base_appended + c->st.appended_bytes);
	rfb_put_le64(b + 52, c->base_written + c->st.written_bytes);
	rfb_put_le32(b + 60, rfb_crc32c(0, b, 60));
	p = b + CKPT_HEADER;
	for (size_t i = 0; i < c->nsegs; i++, p += CKPT_SEG) {
		const struct seg *s = &c->segs[i];
		rfb_put_le32(p, s->id);
		rfb_put_le32(p + 4, s->death);
		rfb_put_le32(p + 8, (uint32_t)s->dead);
		rfb_put_le64(p + 16, s->durable);
		rfb_put_le64(p + 24, s->dead_since);
	}
	for (uint32_t i = 0; i < c->man.samples; i++) {
		const struct entry *e = &c->entries[i];
		if (e->seg == RFB_CACHE_NO_SEGMENT)
			continue;
		rfb_put_le32(p, i);
		rfb_put_le32(p + 4, e->seg);
		rfb_put_le64(p + 8, e->offset);
		rfb_put_le32(p + 16, e->length);
		rfb_put_le32(p + 20, e->write_epoch);
		p += CKPT_ENTRY;
	}
	rfb_put_le32(p, rfb_crc32c(0, b + CKPT_HEADER, len - CKPT_HEADER - 4));
	*data = b;
	*len_out = len;
	return 0;
}

/* ---- reading it ---- */

struct ckpt {
	unsigned char *data;
	size_t len;
	uint64_t manifest_hash;
	uint32_t samples, entries, segments, next_id, epoch;
	uint64_t step, appended, written;
	const unsigned char *seg_table, *entry_table;
};

static int ckpt_load(const char *dir, struct ckpt *k, rfb_err *err)
{
	char path[4200];
	unsigned char *b;
	int rc;

	snprintf(path, sizeof path, "%s/" CHECKPOINT_NAME, dir);
	memset(k, 0, sizeof *k);
	rc = rfb_file_load(path, (size_t)1 << 40, &k->data, &k->len, err);
	if (rc == RFB_EIO && err && err->sys_errno == ENOENT)
		return RFB_ENOTFOUND;
	if (rc)
		return rc;
	b = k->data;
	if (k->len < CKPT_HEADER + 4 || memcmp(b, CKPT_MAGIC, 8) != 0 ||
	    rfb_crc32c(0, b, 60) != rfb_get_le32(b + 60))
		return rfb_err_set(err, RFB_EFORMAT, path,
				   "record index checkpoint is corrupt");
	k->manifest_hash = rfb_get_le64(b + 8);
	k->samples = rfb_get_le32(b + 16);
	k->entries = rfb_get_le32(b + 20);
	k->segments = rfb_get_le32(b + 24);
	k->next_id = rfb_get_le32(b + 28);
	k->step = rfb_get_le64(b + 32);
	k->epoch = rfb_get_le32(b + 40);
	k->appended = rfb_get_le64(b + 44);
	k->written = rfb_get_le64(b + 52);
	if (CKPT_HEADER + (uint64_t)k->segments * CKPT_SEG +
		    (uint64_t)k->entries * CKPT_ENTRY + 4 != k->len ||
	    rfb_crc32c(0, b + CKPT_HEADER, k->len - CKPT_HEADER - 4) !=
		    rfb_get_le32(b + k->len - 4))
		return rfb_err_set(err, RFB_ECHECKSUM, path,
				   "record index checkpoint is corrupt");
	k->seg_table = b + CKPT_HEADER;
	k->entry_table = k->seg_table + (size_t)k->segments * CKPT_SEG;
	/* the writer's table is sorted and has no duplicate; an id equal to
	 * RFB_CACHE_NO_SEGMENT would be taken for "no record" */
	for (uint32_t i = 0, prev = 0; i < k->segments; i++) {
		uint32_t id = rfb_get_le32(k->seg_table + (size_t)i * CKPT_SEG);
		if (id == RFB_CACHE_NO_SEGMENT || (i && id <= prev))
			return rfb_err_set(err, RFB_EFORMAT, path,
					   "record index checkpoint is corrupt "
					   "(segment table)");
		prev = id;
	}
	return 0;
}

int rfb_cache_read_checkpoint(const char *dir,
			      void (*fn)(void *ctx, uint32_t sample,
					 const struct rfb_cache_entry *e),
			      void *ctx, struct rfb_cache_checkpoint_info *info,
			      rfb_err *err)
{
	struct ckpt k;
	int rc = ckpt_load(dir, &k, err);

	if (rc == 0 && info) {
		info->epoch = k.epoch;
		info->global_step = k.step;
		info->entries = k.entries;
		info->appended_bytes = k.appended;
		info->written_bytes = k.written;
	}
	for (uint32_t i = 0; rc == 0 && fn && i < k.entries; i++) {
		const unsigned char *p = k.entry_table + (size_t)i * CKPT_ENTRY;
		struct rfb_cache_entry e = { { rfb_get_le32(p + 4),
					       rfb_get_le32(p + 16),
					       rfb_get_le64(p + 8) },
					     rfb_get_le32(p + 20), 0 };
		fn(ctx, rfb_get_le32(p), &e);
	}
	free(k.data);
	return rc;
}

/* Take segments and entries from a checkpoint that belongs to this cache.
 * Entries shorter than a record header or not inside their segment's
 * checkpointed length are ignored. */
static int adopt_checkpoint(rfb_cache *c, const struct ckpt *k, rfb_err *err)
{
	for (uint32_t i = 0; i < k->segments; i++) {
		const unsigned char *p = k->seg_table + (size_t)i * CKPT_SEG;
		struct seg *s = cache_add_seg(c, rfb_get_le32(p),
					      rfb_get_le32(p + 4), err);
		if (!s)
			return RFB_ENOMEM;
		s->dead = rfb_get_le32(p + 8) != 0;
		s->size = s->durable = s->synced = rfb_get_le64(p + 16);
		s->dead_since = s->dead ? DEAD_SINCE_UNKNOWN : 0;
	}
	for (uint32_t i = 0; i < k->entries; i++) {
		const unsigned char *p = k->entry_table + (size_t)i * CKPT_ENTRY;
		uint32_t sample = rfb_get_le32(p), sid = rfb_get_le32(p + 4);
		uint64_t off = rfb_get_le64(p + 8);
		uint32_t len = rfb_get_le32(p + 16);
		struct seg *s = cache_find_seg(c, sid);
		/* off + len could wrap: compare without adding */
		if (sample >= c->man.samples || !s || s->dead ||
		    off < RFB_CACHE_SEGMENT_HEADER ||
		    len < RFB_RECORD_HEADER_SIZE || len > s->durable ||
		    off > s->durable - len)
			continue;
		cache_set_entry(c, sample, sid, off, len, rfb_get_le32(p + 20),
				s->death);
	}
	if (k->next_id > c->next_id)
		c->next_id = k->next_id;
	c->step = k->step;
	c->base_appended = k->appended;
	c->base_written = k->written;
	return 0;
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
		const struct entry *e = &c->entries[m.sample];
		if (e->seg == RFB_CACHE_NO_SEGMENT || e->write_epoch <= m.write_epoch)
			cache_set_entry(c, m.sample, s->id, off, (uint32_t)len,
					m.write_epoch, m.death_epoch);
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
	for (uint32_t i = 0; i < c->man.samples; i++) {
		const struct entry *e = &c->entries[i];
		if (e->seg == sid && e->offset + e->length > beyond) {
			cache_set_entry(c, i, RFB_CACHE_NO_SEGMENT, 0, 0, 0, 0);
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
	struct seg *s = cache_find_seg(c, id);
	int fd, rc = 0;

	rfb_cache_segment_path(c->dir, id, path, sizeof path);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		rc = rfb_err_sys(err, errno, path, "cannot open segment");
		goto out;
	}
	if (rfb_pread_full(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    cache_parse_segment_header(h, &hid, &death) || hid != id ||
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
	if (!s && !(s = cache_add_seg(c, id, death, err))) {
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

int cache_recover(rfb_cache *c, struct rfb_cache_recovery *rec, rfb_err *err)
{
	struct ckpt k;
	rfb_err why = { 0 };
	uint32_t *ids = NULL;
	size_t n = 0, j = 0;
	int rc = ckpt_load(c->dir, &k, &why);

	if (rc == 0 && k.manifest_hash == c->manifest_hash &&
	    k.samples == c->man.samples) {
		if ((rc = adopt_checkpoint(c, &k, err)))
			goto out;
		rec->from_checkpoint = 1;
	}
	/* no, foreign or corrupt checkpoint: every segment is scanned whole */
	if ((rc = cache_list_segments(c->dir, &ids, &n, err)))
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
	rec->records = live_entries(c);
out:
	free(ids);
	free(k.data);
	return rc;
}
