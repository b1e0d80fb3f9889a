/*
 * slot_ring_internal.h - the in-order ring of batch slots that both
 * engines (partial.c, final.c) keep: batches are prepared into the slot
 * at the tail while earlier ones are computed by the pool, and finished
 * (waited for, then written) strictly from the head, so the output keeps
 * the plan's order whatever the threads do.  The slots themselves are
 * the engine's; the ring only numbers them.
 */
#ifndef REFURB_SLOT_RING_INTERNAL_H
#define REFURB_SLOT_RING_INTERNAL_H

#include "refurb/error.h"

struct rfbi_ring {
	int size;  /* slots, >= 1 */
	int head;  /* the oldest batch's slot */
	int count; /* batches in the ring */
};

/* Finish the batch in slot (the ring's oldest): 0 or a negative RFB_E*
 * code with err filled. */
typedef int (*rfbi_ring_finish_fn)(void *engine, int slot, rfb_err *err);

static inline int rfbi_ring_full(const struct rfbi_ring *r)
{
	return r->count == r->size;
}

/* The slot the next batch goes in (the ring is not full). */
static inline int rfbi_ring_tail(const struct rfbi_ring *r)
{
	return (r->head + r->count) % r->size;
}

/* The batch in the tail slot is in the ring. */
static inline void rfbi_ring_push(struct rfbi_ring *r)
{
	r->count++;
}

/* Take the oldest batch out of the ring and finish it. */
static inline int rfbi_ring_finish_oldest(struct rfbi_ring *r,
					  rfbi_ring_finish_fn finish,
					  void *engine, rfb_err *err)
{
	int slot = r->head;

	r->head = (r->head + 1) % r->size;
	r->count--;
	return finish(engine, slot, err);
}

/* Make room for one more batch: finish the oldest if the ring is full. */
static inline int rfbi_ring_make_room(struct rfbi_ring *r,
				      rfbi_ring_finish_fn finish, void *engine,
				      rfb_err *err)
{
	return rfbi_ring_full(r) ? rfbi_ring_finish_oldest(r, finish, engine, err)
				 : 0;
}

/* Finish every batch in the ring, oldest first; stop at the first error. */
static inline int rfbi_ring_finish_all(struct rfbi_ring *r,
				       rfbi_ring_finish_fn finish,
				       void *engine, rfb_err *err)
{
	int rc;

	while (r->count > 0)
		if ((rc = rfbi_ring_finish_oldest(r, finish, engine, err)))
			return rc;
	return 0;
}

#endif
