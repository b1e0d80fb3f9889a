/*
 * pool.c - worker threads with per-thread contexts and a FIFO task queue
 * (see pool.h).
 */
#include <stdlib.h>

#include "refurb/pool.h"

struct rfb_pool {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct rfb_task *head, *tail;
	int stopping;
	int threads, started, ctx_failed;
	pthread_t *tid;
	void *(*ctx_new)(void *arg);
	void (*ctx_free)(void *ctx);
	void *arg;
	pthread_mutex_t start_lock;
	pthread_cond_t started_cv;
	int ready;
};

static struct rfb_task *take(rfb_pool *p)
{
	struct rfb_task *t;

	pthread_mutex_lock(&p->lock);
	while (!p->head && !p->stopping)
		pthread_cond_wait(&p->wake, &p->lock);
	t = p->head;
	if (t) {
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	return t;
}

static void group_done(struct rfb_group *g)
{
	pthread_mutex_lock(&g->lock);
	if (--g->pending == 0)
		pthread_cond_broadcast(&g->done);
	pthread_mutex_unlock(&g->lock);
}

static void *worker(void *arg)
{
	rfb_pool *p = arg;
	void *ctx = p->ctx_new ? p->ctx_new(p->arg) : NULL;
	struct rfb_task *t;

	pthread_mutex_lock(&p->start_lock);
	p->ready++;
	if (p->ctx_new && !ctx)
		p->ctx_failed = 1;
	pthread_cond_signal(&p->started_cv);
	pthread_mutex_unlock(&p->start_lock);
	if (p->ctx_new && !ctx)
		return NULL;
	while ((t = take(p))) {
		struct rfb_group *g = t->group;
		t->run(ctx, t);
		if (g)
			group_done(g);
	}
	if (p->ctx_free)
		p->ctx_free(ctx);
	return NULL;
}

rfb_pool *rfb_pool_new(int threads, void *(*ctx_new)(void *arg),
		       void (*ctx_free)(void *ctx), void *arg, rfb_err *err)
{
	rfb_pool *p = calloc(1, sizeof *p);

	if (!p || threads < 1 || !(p->tid = calloc((size_t)threads, sizeof *p->tid))) {
		free(p);
		rfb_err_set(err, RFB_ENOMEM, NULL, "cannot start workers");
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_mutex_init(&p->start_lock, NULL);
	pthread_cond_init(&p->started_cv, NULL);
	p->ctx_new = ctx_new;
	p->ctx_free = ctx_free;
	p->arg = arg;
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&p->tid[i], NULL, worker, p) != 0)
			break;
		p->started++;
	}
	pthread_mutex_lock(&p->start_lock);
	while (p->ready < p->started)
		pthread_cond_wait(&p->started_cv, &p->start_lock);
	pthread_mutex_unlock(&p->start_lock);
	if (p->started < threads || p->ctx_failed) {
		rfb_pool_free(p);
		rfb_err_set(err, RFB_ENOMEM, NULL, "cannot start %d workers",
			    threads);
		return NULL;
	}
	p->threads = threads;
	return p;
}

void rfb_pool_free(rfb_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->tid[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->start_lock);
	pthread_cond_destroy(&p->started_cv);
	free(p->tid);
	free(p);
}

void rfb_pool_submit(rfb_pool *p, struct rfb_task *t)
{
	t->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

int rfb_group_init(struct rfb_group *g)
{
	g->pending = 0;
	if (pthread_mutex_init(&g->lock, NULL))
		return RFB_ENOMEM;
	if (pthread_cond_init(&g->done, NULL)) {
		pthread_mutex_destroy(&g->lock);
		return RFB_ENOMEM;
	}
	return 0;
}

void rfb_group_destroy(struct rfb_group *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->done);
}

void rfb_group_add(struct rfb_group *g, int n)
{
	pthread_mutex_lock(&g->lock);
	g->pending += n;
	pthread_mutex_unlock(&g->lock);
}

void rfb_group_wait(struct rfb_group *g)
{
	pthread_mutex_lock(&g->lock);
	while (g->pending > 0)
		pthread_cond_wait(&g->done, &g->lock);
	pthread_mutex_unlock(&g->lock);
}
