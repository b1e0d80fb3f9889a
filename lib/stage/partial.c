/*
 * partial.c - the engine of refurb-partial (see partial.h).
 *
 * The calling thread reads the plan, decides per sample (hit served from
 * the cache, miss to compute, record reused from a stopped run, hit to
 * heal), queues the computations of a batch on the worker pool, and, in
 * plan order, appends each finished batch's records to the cache, flushes
 * them and writes the annotated line.  Up to `inflight` batches are being
 * computed at once, so memory is bounded by inflight x batch x record.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "refurb/annotate.h"
#include "refurb/cache.h"
#include "refurb/handover.h"
#include "refurb/costs.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "refurb/partial.h"
#include "refurb/pipeline.h"
#include "refurb/plan.h"
#include "refurb/pool.h"
#include "refurb/progress.h"
#include "slot_ring_internal.h"
#include "stage_internal.h"
#include "refurb/rng.h"
#include "refurb/evict.h"
#include "refurb/source.h"

#define MAX_IMAGE_FILE ((size_t)1 << 30)

struct partial;

struct job {
	struct rfb_task task;
	struct partial *P;
	uint32_t sample, write_epoch, death;
	int status;
	rfb_err why;
	rfb_imgbuf rec;
	size_t rec_len;
	uint64_t file_bytes;
	double seconds, cpu_seconds;
};

struct slot {
	rfb_plan_batch batch;
	rfb_plan_sample *samples;  /* batch_size */
	struct job *jobs;          /* batch_size, one per sample */
	unsigned char *has_job;    /* batch_size */
	struct rfb_group group;
	struct rfb_partial_batch_stats bs;
};

struct worker {
	rfb_pipe_ctx *pipe;
	rfb_codec_ctx *codec;
	unsigned char *file;
	size_t file_cap;
};

struct partial {
	const struct rfb_partial_opts *o;
	struct rfb_partial_stats *st;
	rfb_index *idx;
	rfb_source *src;         /* reads the images (files or shard members) */
	rfb_evict *sched;
	rfb_pipeline *pipe;
	rfb_cache *cache;
	rfb_handover *ho;         /* --handover, or NULL */
	int ho_live;              /* a reader opened it: records go there */
	int pipe_settled;         /* settle_pipe() ran */
	uint64_t batch_start;     /* ring position of the batch being settled */
	rfb_costs_writer *costs;   /* --costs, or NULL */
	rfb_plan_reader *reader;
	const rfb_plan_header *h;
	uint64_t seed;
	rfb_pool *pool;
	struct slot *slots;
	int nslots;
	struct rfbi_ring ring; /* slots in plan order */
	char *line;
	size_t line_cap;
	int out_fd;
	double start;
	uint8_t *bad_seen;        /* a bit per id: its image failed this run */
	int first_batch_seen;     /* the first batch that read images is done */
};

static void settle_pipe(struct partial *P);

uint32_t rfb_partial_write_epoch(uint32_t epoch, uint32_t phase,
				 uint32_t reuse)
{
	/* misses: epoch 0 and epochs 1 + phase + k * reuse */
	if (epoch == 0 || epoch < 1 + phase)
		return 0;
	return epoch - (epoch - 1 - phase) % reuse;
}

static uint32_t death32(uint64_t death)
{
	return death >= RFB_RECORD_NO_DEATH ? RFB_RECORD_NO_DEATH
					    : (uint32_t)death;
}

/* ---- workers ---- */

static void *worker_new(void *arg)
{
	const struct partial *P = arg;
	struct worker *w = calloc(1, sizeof *w);

	if (!w || !(w->pipe = rfb_pipe_ctx_new(NULL)) ||
	    !(w->codec = rfb_codec_ctx_new(NULL))) {
		if (w) {
			rfb_pipe_ctx_free(w->pipe);
			free(w);
		}
		return NULL;
	}
	if (P->o->max_pixels)
		rfb_pipe_ctx_set_max_pixels(w->pipe, P->o->max_pixels);
	return w;
}

static void worker_free(void *arg)
{
	struct worker *w = arg;

	rfb_pipe_ctx_free(w->pipe);
	rfb_codec_ctx_free(w->codec);
	free(w->file);
	free(w);
}

/* The raw codec's record payload as the pipeline's output memory. */
static unsigned char *record_room(void *arg, int width, int height,
				  int channels)
{
	return rfb_record_raw_room(arg, width, height, channels);
}

static void run_job(void *ctx, struct rfb_task *t)
{
	struct job *j = (struct job *)t;
	struct worker *w = ctx;
	const struct partial *P = j->P;
	struct rfb_pipe_key key = { P->seed, j->write_epoch, j->sample,
				    RFB_STAGE_PARTIAL };
	struct rfb_pipe_out out;
	/* raw records: the pipeline writes the record's pixels (no copy) */
	struct rfb_pipe_dest room = { record_room, &j->rec };
	size_t len = 0;
	double t0 = rfb_now(), c0 = rfb_thread_cpu_now();

	rfb_err_clear(&j->why);
	j->status = rfb_source_read(P->src, j->sample, MAX_IMAGE_FILE, &w->file,
				    &w->file_cap, &len, &j->why);
	if (!j->status) {
		j->status = rfb_pipe_run_jpeg_into(
			w->pipe, P->pipe, w->file, len, &key,
			P->o->codec.kind == RFB_CODEC_RAW ? &room : NULL, &out,
			&j->why);
		if (j->status && !j->why.path[0])
			rfb_source_blame(P->src, j->sample, &j->why);
	}
	if (!j->status) {
		j->status = rfb_record_encode(w->codec, &P->o->codec, &out.img,
					      j->sample, j->write_epoch, j->death,
					      &j->rec, &j->rec_len, &j->why);
		if (j->status)
			rfb_source_blame(P->src, j->sample, &j->why);
	}
	j->file_bytes = len;
	j->seconds = rfb_now() - t0;
	j->cpu_seconds = rfb_thread_cpu_now() - c0;
}

/* ---- batches ---- */

static void queue_job(struct partial *P, struct slot *s, uint32_t i,
		      uint32_t write_epoch, uint32_t death)
{
	struct job *j = &s->jobs[i];

	j->task.run = run_job;
	j->task.group = &s->group;
	j->P = P;
	j->sample = s->samples[i].id;
	j->write_epoch = write_epoch;
	j->death = death;
	s->has_job[i] = 1;
	rfb_group_add(&s->group, 1);
	rfb_pool_submit(P->pool, &j->task);
}

/* Hit: serve the record of the epoch the schedule says, or heal it. */
static int prepare_hit(struct partial *P, struct slot *s, uint32_t i,
		       rfb_err *err)
{
	rfb_plan_sample *x = &s->samples[i];
	int64_t pos = rfb_evict_find(P->sched, x->id);
	struct rfb_cache_entry e;
	uint32_t phase, w;

	if (pos < 0)
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "sample %u is not in the schedule's shard", x->id);
	phase = rfb_evict_phases(P->sched)[pos];
	w = rfb_partial_write_epoch(s->batch.epoch, phase, P->h->reuse);
	if (rfb_cache_lookup(P->cache, x->id, &e) == 0 && e.write_epoch == w) {
		rfb_annot_set(x, &e.addr, w);
		P->st->hits++;
		return 0;
	}
	P->st->healed++;
	queue_job(P, s, i, w, death32(rfb_evict_death(w, phase, P->h->reuse)));
	return 0;
}

static int prepare(struct partial *P, const rfb_plan_batch *b, rfb_err *err)
{
	struct slot *s = &P->slots[rfbi_ring_tail(&P->ring)];
	int rc;

	if ((rc = rfb_cache_advance(P->cache, b->epoch, b->global_step, err)))
		return rc;
	s->batch = *b;
	memcpy(s->samples, b->samples, b->count * sizeof *b->samples);
	s->batch.samples = s->samples;
	memset(s->has_job, 0, b->count);
	memset(&s->bs, 0, sizeof s->bs);
	rfbi_ring_push(&P->ring);
	for (uint32_t i = 0; i < b->count; i++) {
		rfb_plan_sample *x = &s->samples[i];
		struct rfb_cache_entry e;
		if (!x->miss) {
			if ((rc = prepare_hit(P, s, i, err)))
				return rc;
		} else if (rfb_cache_lookup(P->cache, x->id, &e) == 0 &&
			   e.write_epoch == b->epoch) {
			rfb_annot_set(x, &e.addr, b->epoch); /* a stopped run made it */
			P->st->reused++;
			s->bs.reused++;
		} else {
			queue_job(P, s, i, b->epoch, death32(x->death));
		}
	}
	return 0;
}

static int is_image_error(int code)
{
	return code == RFB_EIO || code == RFB_EDECODE || code == RFB_ETRUNC ||
	       code == RFB_EFORMAT || code == RFB_ELIMIT || code == RFB_EINVAL;
}

static int write_out(struct partial *P, const char *buf, size_t len,
		     rfb_err *err)
{
	if (rfb_write_full(P->out_fd, buf, len) < 0)
		return rfb_err_sys(err, errno, P->o->out_name ? P->o->out_name
				   : "(output)", "cannot write the plan");
	return 0;
}

/* An image that failed: reported and counted once per sample and run. */
static void note_bad(struct partial *P, const struct job *j)
{
	uint8_t bit = (uint8_t)(1u << j->sample % 8);

	if (P->bad_seen[j->sample / 8] & bit)
		return;
	P->bad_seen[j->sample / 8] |= bit;
	if (P->st->bad_images++ == 0)
		P->st->first_bad = j->why;
	/* the first batch's are named only if it read something */
	if (P->o->on_bad && P->first_batch_seen)
		P->o->on_bad(P->o->ctx, j->sample, &j->why);
}

static void report_first_batch(struct partial *P, const struct slot *s)
{
	for (uint32_t i = 0; P->o->on_bad && i < s->batch.count; i++)
		if (s->has_job[i] && s->jobs[i].status)
			P->o->on_bad(P->o->ctx, s->jobs[i].sample, &s->jobs[i].why);
}

/* Nothing read is an error: the first batch that reads images must read
 * one, unless one of them was found and is bad (a corrupt image alone in
 * a batch whose other samples are hits says nothing of where the dataset
 * is); and no more than the --max-bad limit may fail (partial.h). */
static int check_bad(struct partial *P, const struct slot *s, rfb_err *err)
{
	uint32_t jobs = 0, found_bad = 0;

	for (uint32_t i = 0; i < s->batch.count; i++) {
		jobs += s->has_job[i];
		/* an error without errno: the file was read, its bytes are bad */
		found_bad += s->has_job[i] && s->jobs[i].status &&
			     s->jobs[i].why.sys_errno == 0;
	}
	if (!P->first_batch_seen && jobs > 0) {
		P->first_batch_seen = 1;
		P->st->first_batch_jobs = jobs;
		if (s->bs.skipped == jobs && found_bad == 0) {
			P->st->bad_stop = RFB_PARTIAL_NOTHING_READ;
			*err = P->st->first_bad;
			return RFB_ELIMIT;
		}
		report_first_batch(P, s);
	}
	if (P->st->bad_images > P->st->bad_allowed) {
		P->st->bad_stop = RFB_PARTIAL_TOO_MANY_BAD;
		*err = P->st->first_bad;
		return RFB_ELIMIT;
	}
	return 0;
}

/* Append a finished job's record, or report its image. */
static int settle_job(struct partial *P, struct slot *s, uint32_t i,
		      rfb_err *err)
{
	struct job *j = &s->jobs[i];
	struct rfb_record_meta m;
	struct rfb_cache_addr a;
	int rc;

	P->st->worker_seconds += j->seconds;
	P->st->worker_cpu_seconds += j->cpu_seconds;
	P->st->image_bytes += j->file_bytes;
	s->bs.worker_seconds += j->seconds;
	s->bs.cpu_seconds += j->cpu_seconds;
	s->bs.healed += !s->samples[i].miss;
	if (j->status) {
		/* out of descriptors, memory or I/O says nothing of the image:
		 * never a bad sample, the run stops (and can resume) */
		if (rfb_err_is_system(&j->why) || !is_image_error(j->status) ||
		    P->o->strict) {
			*err = j->why;
			return j->status;
		}
		note_bad(P, j);
		rfb_annot_set_skipped(&s->samples[i]);
		P->st->skipped++;
		s->bs.skipped++;
		return 0;
	}
	if ((rc = rfb_record_parse_header(j->rec.data, j->rec_len, &m, err)))
		return rc;
	rc = RFB_ELIMIT;
	/* a record no later epoch reads goes to the reader in memory */
	if (P->ho_live && j->death <= s->batch.epoch + 1) {
		rfb_err why = { 0 };
		rc = rfb_handover_put(P->ho, j->rec.data, j->rec_len, P->batch_start,
				      P->out_fd, &a.offset, &why);
		if (rc && rc != RFB_ELIMIT) {
			*err = why;
			return rc;
		}
		a.segment = RFB_HANDOVER_SEGMENT;
		a.length = (uint32_t)j->rec_len;
		P->st->handover_records += rc == 0;
	}
	if (rc && (rc = rfb_cache_append(P->cache, j->rec.data, j->rec_len, &m,
					 &a, err)))
		return rc;
	rfb_annot_set(&s->samples[i], &a, j->write_epoch);
	if (P->costs)
		rfb_costs_writer_add(P->costs, j->sample, j->write_epoch,
				     j->cpu_seconds);
	if (a.segment != RFB_HANDOVER_SEGMENT)
		P->st->record_bytes += j->rec_len;
	P->st->computed += s->samples[i].miss;
	s->bs.computed += s->samples[i].miss;
	return 0;
}

static void report_batch(struct partial *P, struct slot *s)
{
	s->bs.epoch = s->batch.epoch;
	s->bs.step = s->batch.step;
	s->bs.samples = s->batch.count;
	for (uint32_t i = 0; i < s->batch.count; i++)
		s->bs.misses += s->samples[i].miss;
	P->o->on_batch(P->o->ctx, &s->bs);
}

/* Finish the oldest batch (in slot): wait, append, flush, write its
 * line (an rfbi_ring_finish_fn). */
static int finish_batch(void *engine, int slot, rfb_err *err)
{
	struct partial *P = engine;
	struct slot *s = &P->slots[slot];
	size_t need = rfb_plan_batch_text_max(s->batch.count), len;
	int rc;

	rfb_group_wait(&s->group);
	/* without waiting for the reader, the ring is used from the first
	 * batch placed after it opened it */
	if (P->ho && !P->ho_live)
		P->ho_live = rfb_handover_attached(P->ho);
	if (P->ho_live)
		P->batch_start = rfb_handover_position(P->ho);
	settle_pipe(P);
	for (uint32_t i = 0; i < s->batch.count; i++)
		if (s->has_job[i] && (rc = settle_job(P, s, i, err)))
			return rc;
	if ((rc = check_bad(P, s, err)) || (rc = rfb_cache_flush(P->cache, err)) ||
	    (P->costs && (rc = rfb_costs_writer_flush(P->costs, err))))
		return rc;
	if (need > P->line_cap) {
		char *nl = realloc(P->line, need);
		if (!nl)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		P->line = nl;
		P->line_cap = need;
	}
	len = rfb_plan_format_batch(P->line, &s->batch);
	if ((rc = write_out(P, P->line, len, err)))
		return rc;
	P->st->batches++;
	P->st->samples += s->batch.count;
	P->st->epoch = s->batch.epoch;
	P->st->global_step = s->batch.global_step;
	if (P->o->on_batch)
		report_batch(P, s);
	if (P->o->on_progress)
		P->o->on_progress(P->o->ctx, P->st,
				  (uint64_t)P->h->batches *
				  (P->h->last_epoch - P->h->first_epoch + 1));
	return 0;
}

static int finish_all(struct partial *P, rfb_err *err)
{
	return rfbi_ring_finish_all(&P->ring, finish_batch, P, err);
}

/* ---- setting up ---- */

/* The schedule the plan was made from, rebuilt from its header, checked
 * against the identities the header carries and against the index. */
static int rebuild_schedule(struct partial *P, const char *in_name,
			    rfb_err *err)
{
	const rfb_plan_header *h = P->h;
	rfb_evict_params sp = { 0 };

	if (h->index_identity != rfb_index_identity(P->idx) ||
	    h->total != rfb_index_count(P->idx))
		return rfb_err_set(err, RFB_EMISMATCH, in_name,
				   "plan was made for another index than %s: give "
				   "the index the schedule was made from "
				   "(refurb-evict INDEX), or make the schedule and "
				   "the plan again from this one", P->o->index_path);
	sp.index_identity = h->index_identity;
	sp.total = h->total;
	sp.reuse = h->reuse;
	sp.seed = h->evict_seed;
	sp.policy = h->policy;
	sp.shard_index = h->shard_index;
	sp.shard_count = h->shard_count;
	if (!(P->sched = rfb_evict_build(&sp, err)))
		return err ? err->code : RFB_ENOMEM;
	if (rfb_evict_identity(P->sched) != h->schedule_identity)
		return rfb_err_set(err, RFB_EMISMATCH, in_name,
				   "the plan's header does not match its schedule "
				   "(identity %016" PRIx64 ", rebuilt %016" PRIx64 ")%s",
				   h->schedule_identity, rfb_evict_identity(P->sched),
				   h->shard_count > 1 ? ": a plan of a shard made "
				   "before the shards' partition changed (schedule "
				   "version 2)? make the schedule and the plan again "
				   "with refurb-evict and refurb-plan" : "");
	return 0;
}

/* Batches this refurb-partial can run ahead of its reader when the
 * output is a pipe: the lines the pipe holds (an annotated sample takes
 * at least 12 bytes) and the batches in flight on both sides; 0 when the
 * output is not a pipe.  A dead segment must outlive the lines that point
 * into it, and a reader slower than the chain (a trainer) keeps the pipe
 * full.  With shrink, the pipe is first shrunk to one page: at 64 KiB,
 * batches of 8 would let refurb-partial run some 600 batches ahead, and
 * keeping their dead segments would cost many epochs of disk. */
static uint64_t pipe_lag_batches(const struct partial *P, int shrink)
{
	int cap = fcntl(P->out_fd, F_GETPIPE_SZ);

	if (cap <= 0)
		return 0;
	if (shrink && cap > 4096 && fcntl(P->out_fd, F_SETPIPE_SZ, 4096) > 0)
		cap = fcntl(P->out_fd, F_GETPIPE_SZ);
	return (uint64_t)cap / (12u * P->h->batch_size) + (uint64_t)P->nslots + 8;
}

/* The default grace: one epoch's batches, at least 64, and the pipe's. */
static uint64_t default_grace(const struct partial *P, int shrink)
{
	return (P->h->batches > 64 ? P->h->batches : 64) +
	       pipe_lag_batches(P, shrink);
}

/* Before the first batch is passed on: a reader that opened the handover
 * is a refurb-final, which tells the cache its read position (refurb-
 * cache(5)): dead segments then go by that position, the pipe's lag
 * does not matter and the pipe keeps its size.  Any other reader (or
 * none known) gets the pipe shrunk to a page, and the grace that counts
 * it.  An explicit --grace is left alone, and so is the pipe. */
static void settle_pipe(struct partial *P)
{
	if (P->pipe_settled)
		return;
	P->pipe_settled = 1;
	if (P->o->grace || P->ho_live)
		return;
	rfb_cache_set_grace(P->cache, default_grace(P, 1));
}

static int open_cache(struct partial *P, rfb_err *err)
{
	const struct rfb_partial_opts *o = P->o;
	struct rfb_cache_manifest m = { 0 };
	struct rfb_cache_recovery rec;
	int rc;
	/* the pipe at its size for now: settle_pipe() may shrink it */
	uint64_t grace = o->grace ? o->grace : default_grace(P, 0);

	m.index_identity = P->h->index_identity;
	m.schedule_identity = P->h->schedule_identity;
	m.seed = P->seed;
	m.samples = P->h->total;
	m.codec = o->codec;
	m.segment_max = o->segment_max;
	snprintf(m.pipeline, sizeof m.pipeline, "%s", rfb_pipeline_canonical(P->pipe));
	/* a node's cache keeps a slot per sample of its shard only */
	P->cache = rfb_cache_open_shard(o->cache_dir, &m,
					P->h->shard_count > 1 ?
					rfb_evict_ids(P->sched) : NULL,
					rfb_evict_count(P->sched),
					o->reset ? RFB_CACHE_RESET : 0, grace,
					&rec, err);
	if (!P->cache)
		return err ? err->code : RFB_EIO;
	/* what earlier runs left that this plan cannot use goes now */
	if ((rc = rfb_cache_begin_run(P->cache, P->h->first_epoch, err)))
		return rc;
	P->st->created = rec.created;
	P->st->recovered_records = rec.records;
	P->st->torn_bytes = rec.torn_bytes;
	P->st->lost_records = rec.lost;
	return 0;
}

/* The absolute form of path into out (size n); "" if it has none. */
static void absolute(char *out, size_t n, const char *path)
{
	char *abs = path ? rfb_path_absolute(path, 1) : NULL;

	snprintf(out, n, "%s", abs ? abs : "");
	free(abs);
}

static int write_header(struct partial *P, rfb_err *err)
{
	/* large (paths): on the heap, one per call, so that runs in
	 * several threads do not share it */
	struct rfb_annot_header *a = calloc(1, sizeof *a);
	size_t n;
	int rc = 0;

	if (!a)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	absolute(a->cache, sizeof a->cache, P->o->cache_dir);
	absolute(a->index_file, sizeof a->index_file, P->o->index_path);
	absolute(a->root, sizeof a->root, P->o->root);
	snprintf(a->partial, sizeof a->partial, "%s", rfb_pipeline_canonical(P->pipe));
	if (P->ho)
		snprintf(a->handover, sizeof a->handover, "%s", rfb_handover_path(P->ho));
	rfb_codec_text(&P->o->codec, a->codec, sizeof a->codec);
	a->aug_seed = P->seed;
	a->max_pixels = P->o->max_pixels ? P->o->max_pixels
					 : RFB_IMAGE_DEFAULT_MAX_PIXELS;
	n = rfb_annot_format_header(NULL, 0, P->h, a) + 1;
	if (n > P->line_cap) {
		char *nl = realloc(P->line, n);
		if (!nl) {
			rc = rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
			goto fail;
		}
		P->line = nl;
		P->line_cap = n;
	}
	n = rfb_annot_format_header(P->line, P->line_cap, P->h, a);
	rc = write_out(P, P->line, n, err);
fail:
	free(a);
	return rc;
}

/* --costs: append to the cost file, made (or checked) for this index,
 * seed and pipeline. */
static int open_costs(struct partial *P, rfb_err *err)
{
	struct rfb_costs_header h = { 0 };

	if (!P->o->costs_path)
		return 0;
	h.version = RFB_COSTS_VERSION;
	h.index_identity = P->h->index_identity;
	h.seed = P->seed;
	snprintf(h.pipeline, sizeof h.pipeline, "%s",
		 rfb_pipeline_canonical(P->pipe));
	if (!(P->costs = rfb_costs_writer_open(P->o->costs_path, &h, err)))
		return err->code;
	return 0;
}

static int make_slots(struct partial *P, rfb_err *err)
{
	uint32_t bs = P->h->batch_size;

	P->nslots = P->o->inflight > 0 ? P->o->inflight : 2;
	P->ring = (struct rfbi_ring){ P->nslots, 0, 0 };
	if (!(P->slots = calloc((size_t)P->nslots, sizeof *P->slots)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < P->nslots; i++) {
		struct slot *s = &P->slots[i];
		s->samples = calloc(bs, sizeof *s->samples);
		s->jobs = calloc(bs, sizeof *s->jobs);
		s->has_job = calloc(bs, 1);
		if (!s->samples || !s->jobs || !s->has_job ||
		    rfb_group_init(&s->group))
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	}
	return 0;
}

static void free_slots(struct partial *P)
{
	for (int i = 0; P->slots && i < P->nslots; i++) {
		struct slot *s = &P->slots[i];
		for (uint32_t k = 0; s->jobs && k < P->h->batch_size; k++)
			rfb_imgbuf_free(&s->jobs[k].rec);
		if (s->samples)
			rfb_group_destroy(&s->group);
		free(s->samples);
		free(s->jobs);
		free(s->has_job);
	}
	free(P->slots);
}

/* The ring is used only once refurb-final has opened it (through this
 * process's /proc entry): wait for it before the first record, so that
 * which records go where does not depend on timing; a reader that is no
 * refurb-final (tee, a file behind a FIFO) gets the cache instead. */
static int wait_reader(struct partial *P, rfb_err *err)
{
	int rc = rfb_handover_wait_attached(P->ho, P->out_fd,
					    RFB_PARTIAL_HANDOVER_WAIT_MS);

	if (rc == RFB_EPIPE)
		return rfb_err_set(err, rc, NULL, "the reader closed the stream");
	if (rc) {
		rfb_handover_free(P->ho);
		P->ho = NULL;
		P->st->handover_unused = 1;
	}
	P->ho_live = P->ho != NULL;
	return 0;
}

static uint64_t handover_bytes(const struct partial *P)
{
	uint64_t b = (uint64_t)P->h->batch_size * (512 << 10);

	if (P->o->handover != RFB_PARTIAL_HANDOVER_AUTO)
		return P->o->handover;
	return b < (16 << 20) ? 16 << 20 : b > (1 << 30) ? 1 << 30 : b;
}

/* Before the first batch: the open-file budget (rfbi_stage_fit_fds). */
static int fit_fds(struct partial *P, rfb_err *err)
{
	return rfbi_stage_fit_fds(P->src, P->o->threads, P->h->reuse,
				  P->o->on_note, P->o->ctx, err);
}

static int setup(struct partial *P, int in_fd, const char *in_name,
		 rfb_err *err)
{
	const struct rfb_partial_opts *o = P->o;
	int rc;

	if (!(P->idx = rfb_index_open(o->index_path, err)) ||
	    !(P->src = rfb_source_open(P->idx, o->root, err)))
		return err ? err->code : RFB_EIO;
	if ((rc = rfb_pipeline_parse(o->pipeline, &P->pipe, err)) ||
	    (rc = rfb_pipeline_check_pixels(P->pipe, o->max_pixels, err)))
		return rc;
	if (rfb_pipeline_dtype(P->pipe) != RFB_DTYPE_U8)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "the partial pipeline must produce 8-bit images: "
				   "normalize belongs in the final pipeline");
	if (!(P->reader = rfb_plan_reader_open(in_fd, in_name, err)))
		return err ? err->code : RFB_EIO;
	P->h = rfb_plan_reader_header(P->reader);
	P->seed = o->have_seed ? o->seed : P->h->seed;
	snprintf(P->st->index_root, sizeof P->st->index_root, "%s",
		 rfb_index_root(P->idx));
	P->st->samples_planned = P->h->samples;
	P->st->bad_allowed = o->max_bad_is_count ? o->max_bad_count
		: (uint64_t)(o->max_bad_fraction * P->h->samples);
	if (!(P->bad_seen = calloc((size_t)P->h->total / 8 + 1, 1)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if ((rc = rebuild_schedule(P, in_name, err)) ||
	    (rc = make_slots(P, err)) || (rc = open_cache(P, err)) ||
	    (rc = open_costs(P, err)))
		return rc;
	if (o->handover && !(P->ho = rfb_handover_create(handover_bytes(P), err)))
		return err->code;
	if (!(P->pool = rfb_pool_new(o->threads > 0 ? o->threads : 1, worker_new,
				     worker_free, P, err)))
		return err ? err->code : RFB_ENOMEM;
	if ((rc = fit_fds(P, err)) || (rc = write_header(P, err)))
		return rc;
	P->st->partial_spec = rfb_pipeline_canonical(P->pipe);
	P->st->reuse = P->h->reuse;
	if (o->on_progress) /* its first line: the split */
		o->on_progress(o->ctx, P->st, (uint64_t)P->h->batches *
			       (P->h->last_epoch - P->h->first_epoch + 1));
	return P->ho && !o->handover_nowait ? wait_reader(P, err) : 0;
}

/* The stream: batches are queued and finished in order; an epoch's end
 * finishes everything, starts a checkpoint of the cache in the background
 * and passes the line on. */
static int run(struct partial *P, rfb_err *err)
{
	rfb_plan_item item;
	char line[128];
	int rc;

	while ((rc = rfb_plan_reader_next(P->reader, &item, err)) > 0) {
		if (P->o->stop && *P->o->stop) {
			P->st->stopped_by_signal = *P->o->stop;
			return finish_all(P, err);
		}
		if (item.type == RFB_PLAN_LINE_BATCH) {
			if ((rc = rfbi_ring_make_room(&P->ring, finish_batch, P, err)))
				return rc;
			if ((rc = prepare(P, &item.batch, err)))
				return rc;
			continue;
		}
		/* the fsyncs overlap the next epoch's first batches */
		if ((rc = finish_all(P, err)) ||
		    (rc = rfb_cache_checkpoint_start(P->cache, err)))
			return rc;
		size_t n = rfb_plan_format_epoch_end(line, sizeof line, &item.epoch);
		settle_pipe(P);
		if ((rc = write_out(P, line, n, err)))
			return rc;
	}
	if (rc == RFB_ETRUNC && P->o->stop && *P->o->stop) {
		/* the same signal stopped the plan's writer first */
		P->st->stopped_by_signal = *P->o->stop;
		rc = 0;
	}
	if (rc == 0)
		rc = finish_all(P, err);
	return rc;
}

static void collect_stats(struct partial *P)
{
	struct rfb_cache_stats cs;

	rfb_cache_get_stats(P->cache, &cs);
	P->st->written_bytes = cs.written_bytes;
	P->st->compacted = cs.compacted_records;
	P->st->deleted_segments = cs.deleted_segments;
	P->st->live_records = cs.live_records;
	P->st->live_bytes = cs.live_bytes;
	P->st->seconds = rfb_now() - P->start;
}

int rfb_partial_run(const struct rfb_partial_opts *o, int in_fd,
		    const char *in_name, int out_fd,
		    struct rfb_partial_stats *st, rfb_err *err)
{
	struct partial P = { .o = o, .st = st, .out_fd = out_fd };
	rfb_err close_err = { 0 };
	int rc;

	memset(st, 0, sizeof *st);
	P.start = rfb_now();
	rc = setup(&P, in_fd, in_name, err);
	if (rc == 0)
		rc = run(&P, err);
	if (rc == RFB_EPIPE) {
		st->stopped_by_reader = 1;
		rc = 0;
	}
	rfb_pool_free(P.pool); /* lets queued jobs finish before slots go */
	/* the shards' descriptors go first: out of descriptors, the
	 * checkpoint needs some */
	rfb_source_close(P.src);
	P.src = NULL;
	if (P.cache) {
		collect_stats(&P);
		int crc = rfb_cache_close(P.cache, &close_err);
		st->checkpointed = crc == 0;
		if (crc && rc == 0) {
			*err = close_err;
			rc = crc;
		}
	}
	if (P.costs) {
		int crc = rfb_costs_writer_close(P.costs, &close_err);
		if (crc && rc == 0) {
			*err = close_err;
			rc = crc;
		}
	}
	free_slots(&P);
	rfb_handover_free(P.ho);
	free(P.bad_seen);
	free(P.line);
	rfb_plan_reader_close(P.reader);
	rfb_pipeline_free(P.pipe);
	rfb_evict_free(P.sched);
	rfb_source_close(P.src);
	rfb_index_close(P.idx);
	return rc;
}
