/*
 * cache_table.c - the writer's table: its segments, sorted by id, and
 * one entry per sample with its record's address; each segment counts
 * the live bytes its entries point to.  The writer (cache_writer.c), the
 * checkpoint (cache_checkpoint.c) and recovery (rfbi_cache_recover.c) change
 * it only through here.
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

void rfbi_cache_set_entry(rfb_cache *c, uint32_t sample, uint32_t seg,
			  uint64_t offset, uint32_t length, uint32_t write_epoch,
			  uint32_t death)
{
	struct entry *e = &c->entries[sample];
	struct seg *s;

	if (e->seg != RFB_CACHE_NO_SEGMENT && (s = rfbi_cache_find_seg(c, e->seg)))
		s->live -= e->length;
	e->seg = seg;
	e->offset = offset;
	e->length = length;
	e->write_epoch = write_epoch;
	e->death = death;
	if (seg != RFB_CACHE_NO_SEGMENT && (s = rfbi_cache_find_seg(c, seg)))
		s->live += length;
}

size_t rfbi_cache_live_entries(const rfb_cache *c)
{
	size_t n = 0;

	for (uint32_t i = 0; i < c->man.samples; i++)
		n += c->entries[i].seg != RFB_CACHE_NO_SEGMENT;
	return n;
}
