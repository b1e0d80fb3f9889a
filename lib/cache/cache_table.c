/*
 * cache_table.c - the writer's table: its segments, sorted by id, and
 * one entry per slot with its record's address (a slot per sample the
 * writer keeps records of: its shard's, found by binary search in their
 * sorted ids, or every sample of the index); each segment counts
 * the live bytes its entries point to.  The writer (cache_writer.c), the
 * checkpoint (cache_checkpoint.c) and recovery (rfbi_cache_recover.c) change
 * it only through here; rfb_cache_lookup and rfb_cache_forget (cache.h)
 * are its public face.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"

struct seg *rfbi_cache_find_seg(rfb_cache *c, uint32_t id)
{
	size_t lo = 0, hi = c->nsegs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->segs[mid].id == id)
			return &c->segs[mid];
		if (c->segs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Insert a segment in id order (ids are usually appended in order). */
struct seg *rfbi_cache_add_seg(rfb_cache *c, uint32_t id, uint32_t death,
			       rfb_err *err)
{
	size_t pos = c->nsegs;
	struct seg *s;

	if (c->nsegs == c->cap_segs) {
		size_t cap = c->cap_segs ? c->cap_segs * 2 : 16;
		struct seg *ns = realloc(c->segs, cap * sizeof *ns);
		if (!ns) {
			rfb_err_set(err, RFB_ENOMEM, c->dir, "out of memory");
			return NULL;
		}
		c->segs = ns;
		c->cap_segs = cap;
	}
	while (pos > 0 && c->segs[pos - 1].id > id)
		pos--;
	memmove(c->segs + pos + 1, c->segs + pos,
		(c->nsegs - pos) * sizeof *c->segs);
	s = &c->segs[pos];
	memset(s, 0, sizeof *s);
	s->id = id;
	s->death = death;
	s->fd = -1;
	s->dead_since = DEAD_SINCE_UNKNOWN;
	c->nsegs++;
	if (id >= c->next_id)
		c->next_id = id + 1;
	return s;
}

/* The slots of c's record index: one per sample of ids (checked: the
 * slots are found by binary search), else per sample of the index. */
int rfbi_cache_make_slots(rfb_cache *c, const uint32_t *ids, uint32_t n,
			  rfb_err *err)
{
	c->ids = ids;
	c->nslots = ids ? n : c->man.samples;
	for (uint32_t i = 0; ids && i < n; i++)
		if (ids[i] >= c->man.samples || (i && ids[i] <= ids[i - 1]))
			return rfb_err_set(err, RFB_EINVAL, c->dir, "the shard's "
					   "sample ids are not ascending below "
					   "%u", c->man.samples);
	if (c->man.segment_max > RFB_CACHE_MAX_SEGMENT)
		return rfb_err_set(err, RFB_EINVAL, c->dir, "segment size above "
				   "%llu MiB", (unsigned long long)
				   (RFB_CACHE_MAX_SEGMENT >> 20));
	c->entries = malloc((c->nslots + 1) * sizeof *c->entries);
	if (!c->entries)
		return rfb_err_set(err, RFB_ENOMEM, c->dir,
				   "out of memory for the record index");
	for (size_t i = 0; i < c->nslots; i++)
		c->entries[i].seg = RFB_CACHE_NO_SEGMENT;
	return 0;
}

int64_t rfbi_cache_slot(const rfb_cache *c, uint32_t sample)
{
	size_t lo = 0, hi = c->nslots;

	if (!c->ids)
		return sample < c->nslots ? (int64_t)sample : -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->ids[mid] == sample)
			return (int64_t)mid;
		if (c->ids[mid] < sample)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

uint32_t rfbi_cache_slot_sample(const rfb_cache *c, size_t slot)
{
	return c->ids ? c->ids[slot] : (uint32_t)slot;
}

int rfbi_cache_set_entry(rfb_cache *c, size_t slot, uint32_t seg,
			 uint64_t offset, uint32_t length, uint32_t write_epoch)
{
	struct entry *e = &c->entries[slot];
	struct seg *to = seg == RFB_CACHE_NO_SEGMENT ? NULL
						    : rfbi_cache_find_seg(c, seg);
	struct seg *s;

	if (to && to->epoch_known && to->write_epoch != write_epoch)
		return -1;
	if (to && !to->epoch_known) {
		to->write_epoch = write_epoch;
		to->epoch_known = 1;
	}
	if (e->seg != RFB_CACHE_NO_SEGMENT && (s = rfbi_cache_find_seg(c, e->seg)))
		s->live -= e->length;
	e->seg = to ? seg : RFB_CACHE_NO_SEGMENT;
	e->offset = (uint32_t)offset; /* < RFB_CACHE_MAX_SEGMENT */
	e->length = length;
	if (to)
		to->live += length;
	return 0;
}

uint32_t rfbi_cache_entry_epoch(rfb_cache *c, const struct entry *e)
{
	const struct seg *s = rfbi_cache_find_seg(c, e->seg);

	return s ? s->write_epoch : 0;
}

size_t rfbi_cache_live_entries(const rfb_cache *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nslots; i++)
		n += c->entries[i].seg != RFB_CACHE_NO_SEGMENT;
	return n;
}

/* ---- what callers see of it ---- */

int rfb_cache_lookup(const rfb_cache *c, uint32_t sample,
		     struct rfb_cache_entry *out)
{
	int64_t slot = rfbi_cache_slot(c, sample);
	const struct entry *e;
	const struct seg *s;

	if (slot < 0)
		return RFB_ENOTFOUND;
	e = &c->entries[slot];
	if (e->seg == RFB_CACHE_NO_SEGMENT ||
	    !(s = rfbi_cache_find_seg((rfb_cache *)c, e->seg)))
		return RFB_ENOTFOUND;
	out->addr.segment = e->seg;
	out->addr.offset = e->offset;
	out->addr.length = e->length;
	out->write_epoch = s->write_epoch;  /* a record is of its segment's */
	out->death_epoch = s->death;        /* epochs */
	return 0;
}

void rfb_cache_forget(rfb_cache *c, uint32_t sample)
{
	int64_t slot = rfbi_cache_slot(c, sample);

	if (slot >= 0)
		rfbi_cache_set_entry(c, (size_t)slot, RFB_CACHE_NO_SEGMENT, 0, 0, 0);
}
