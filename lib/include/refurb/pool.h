/*
 * pool.h - a fixed pool of worker threads taking tasks in FIFO order, and
 * task groups to wait for (all the samples of a batch).
 *
 * Each worker owns a context made by the caller's ctx_new (decoder,
 * pipeline buffers, codec ...), so tasks reuse per-thread buffers and
 * allocate nothing in the steady state.  Tasks are intrusive: the caller
 * embeds struct rfb_task in its own job and owns its memory.
 *
 * Internal to librefurb (its stages use it; tests too): not installed,
 * not in refurb.h.
 */
#ifndef REFURB_POOL_H
#define REFURB_POOL_H

#include <pthread.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_group {
	pthread_mutex_t lock;
	pthread_cond_t done;
	int pending;
};

struct rfb_task {
	void (*run)(void *worker_ctx, struct rfb_task *task);
	struct rfb_group *group;   /* told when run returns; may be NULL */
	struct rfb_task *next;     /* queue link, owned by the pool */
};

typedef struct rfb_pool rfb_pool;

/*
 * Start threads workers.  Each calls ctx_new(arg) once (NULL means it
 * could not: rfb_pool_new fails) and ctx_free(ctx) when the pool ends.
 * Returns the pool or NULL with err filled.
 */
rfb_pool *rfb_pool_new(int threads, void *(*ctx_new)(void *arg),
		       void (*ctx_free)(void *ctx), void *arg, rfb_err *err) RFB_MUST_CHECK;

/* Finish the queued tasks, stop the workers, free the pool.  NULL ok. */
void rfb_pool_free(rfb_pool *p);

/* Queue task (FIFO); its group's pending count must already include it. */
void rfb_pool_submit(rfb_pool *p, struct rfb_task *task);

int rfb_group_init(struct rfb_group *g);
void rfb_group_destroy(struct rfb_group *g);
/* Count n more tasks as pending in g (before submitting them). */
void rfb_group_add(struct rfb_group *g, int n);
/* Wait until every pending task of g has run. */
void rfb_group_wait(struct rfb_group *g);

#ifdef __cplusplus
}
#endif

#endif
