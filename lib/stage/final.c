/*
 * final.c - the engine of refurb-final (see final.h).
 *
 * The calling thread reads the annotated plan; for each batch it submits
 * all record reads at once (one io_submit), collects them, and queues one
 * task per sample on the worker pool: decompress the record (or recompute
 * it from the image when it is bad), run the final pipeline, copy the
 * result into the batch's slot.  Batches are written in plan order; up to
 * `prefetch` are in flight, so memory does not grow with the dataset.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "refurb/aio.h"
#include "refurb/annotate.h"
#include "refurb/cache.h"
#include "refurb/final.h"
#include "refurb/handover.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "refurb/pipeline.h"
#include "refurb/plan.h"
#include "refurb/pool.h"
#include "refurb/progress.h"
#include "slot_ring_internal.h"
#include "refurb/record.h"
#include "refurb/rng.h"
#include "refurb/source.h"
#include "refurb/stream.h"

#include "final_internal.h"

/* ---- workers ---- */

static void *fworker_new(void *arg)
{
	const struct final *F = arg;
	struct fworker *w = calloc(1, sizeof *w);

	if (!w)
		return NULL;
	w->final = rfb_pipe_ctx_new(NULL);
	w->heal = rfb_pipe_ctx_new(NULL);
	w->codec = rfb_codec_ctx_new(NULL);
	if (!w->final || !w->heal || !w->codec) {
		rfb_pipe_ctx_free(w->final);
		rfb_pipe_ctx_free(w->heal);
		rfb_codec_ctx_free(w->codec);
		free(w);
		return NULL;
	}
	if (F->o->max_pixels) {
		rfb_pipe_ctx_set_max_pixels(w->final, F->o->max_pixels);
		rfb_pipe_ctx_set_max_pixels(w->heal, F->o->max_pixels);
	}
	return w;
}

static void fworker_free(void *arg)
{
	struct fworker *w = arg;

	rfb_pipe_ctx_free(w->final);
	rfb_pipe_ctx_free(w->heal);
	rfb_codec_ctx_free(w->codec);
	rfb_imgbuf_free(&w->record_img);
	free(w->file);
	free(w);
}

/* The partially augmented image of t: its record, or recomputed. */
static int source_image(struct fworker *w, struct ftask *t, rfb_image *img)
{
	const struct final *F = t->F;
	struct rfb_record_meta m;
	struct rfb_pipe_key key = { F->annot.aug_seed, t->write_epoch, t->sample,
				    RFB_STAGE_PARTIAL };
	struct rfb_pipe_out out;
	size_t len = 0;
	double t0 = rfb_now();
	int rc;

	/* a record from the cache was checked by the batch reader but for
	 * its payload's checksum (rfb_batch_reader_defer_payload), checked
	 * here, where the final pipeline then finds it in this core's cache,
	 * and decoded without a second pass; one from the handover ring is
	 * checked here as a whole */
	int ring = t->slot->addrs[t->out].segment == RFB_HANDOVER_SEGMENT;

	if (!ring)
		(void)rfb_batch_reader_check_payload(t->slot->reader, t->aio);
	if (t->rec->status == 0 &&
	    (ring ? rfb_record_decode(w->codec, t->rec->data, t->rec->length,
				      &m, img, &w->record_img, &t->why)
		  : rfb_record_decode_checked(w->codec, t->rec->data,
					      &t->rec->meta, img,
					      &w->record_img, &t->why)) == 0) {
		t->decode_s = rfb_now() - t0;
		return 0;
	}
	/* the record is bad: recompute it (unless strict) */
	if (t->rec->status)
		t->why = t->rec->why;
	if (!t->why.path[0] && t->slot->addrs[t->out].segment == RFB_HANDOVER_SEGMENT)
		snprintf(t->why.path, sizeof t->why.path, "%s", F->annot.handover);
	else if (!t->why.path[0] &&   /* name the segment file, else the cache */
		 rfb_cache_segment_path(F->annot.cache,
					t->slot->addrs[t->out].segment,
					t->why.path, sizeof t->why.path))
		snprintf(t->why.path, sizeof t->why.path, "%.*s",
			 (int)sizeof t->why.path - 1, F->annot.cache);
	/* out of descriptors, memory or I/O: the record may be fine, and
	 * the image would fail the same way; the run stops */
	if (F->o->strict || rfb_err_is_system(&t->why))
		return t->rec->status ? t->rec->status
			: t->why.code ? t->why.code : RFB_EFORMAT;
	t->healed = 1;
	if ((rc = rfb_source_read(F->src, t->sample, MAX_IMAGE_FILE, &w->file,
				  &w->file_cap, &len, &t->why)) ||
	    (rc = rfb_pipe_run_jpeg(w->heal, F->partial_pipe, w->file, len, &key,
				    &out, &t->why))) {
		if (!t->why.path[0])
			rfb_source_blame(F->src, t->sample, &t->why);
		return rc ? rc : RFB_EIO;
	}
	*img = out.img;
	t->heal_s = rfb_now() - t0;
	return 0;
}

/* Put the path of t's image into t->why (messages name the file). */
static void name_image(const struct final *F, struct ftask *t)
{
	rfb_source_blame(F->src, t->sample, &t->why);
}

/* n ring records of the batch at rq entry pos are no longer used:
 * release the ring up to the newest batch all of whose elders are done. */
static void ring_done(struct final *F, int pos, uint32_t n)
{
	uint64_t end = 0;

	pthread_mutex_lock(&F->rq_mu);
	F->rq[pos].pending -= n;
	while (F->rq_count > 0 && F->rq[F->rq_head].pending == 0) {
		if (F->rq[F->rq_head].end > end)
			end = F->rq[F->rq_head].end;
		F->rq_head = (F->rq_head + 1) % F->rq_cap;
		F->rq_count--;
	}
	if (end)
		rfb_handover_release(F->ho, end);
	pthread_mutex_unlock(&F->rq_mu);
}

/* Queue the ring records of s (prepared) behind those of older batches. */
static void ring_queue(struct final *F, struct fslot *s)
{
	pthread_mutex_lock(&F->rq_mu);
	s->rq_pos = (F->rq_head + F->rq_count) % F->rq_cap;
	F->rq[s->rq_pos].end = s->ring_end;
	F->rq[s->rq_pos].pending = s->ring_count + 1; /* + 1: this call's */
	F->rq_count++;
	pthread_mutex_unlock(&F->rq_mu);
	ring_done(F, s->rq_pos, 1);
}

/* A view's place in the batch, for an output of the stream's shape. */
struct view_room {
	unsigned char *px;
	const struct rfb_pipe_shape *shape;
};

static unsigned char *view_room(void *arg, int width, int height, int channels)
{
	const struct view_room *v = arg;

	return width == v->shape->width && height == v->shape->height &&
	       channels == v->shape->channels ? v->px : NULL;
}

/* The final pipeline's view v of img into the slot; 0 or an error. */
static int run_view(struct fworker *w, struct ftask *t, const rfb_image *img,
		    int v)
{
	const struct final *F = t->F;
	/* view 0 is the stream without views; view v draws from its own
	 * streams, RFB_STAGE_VIEW apart */
	struct rfb_pipe_key key = { F->seed, t->slot->batch.epoch, t->sample,
				    RFB_STAGE_FINAL + (uint32_t)v * RFB_STAGE_VIEW };
	struct rfb_pipe_out out;
	const rfb_pipeline *pipe = F->view_pipe ? F->view_pipe[v] : F->final_pipe;
	unsigned char *px = t->slot->pixels + (size_t)t->out * F->sample_bytes +
			    (size_t)v * F->image_bytes;
	/* an 8-bit HWC view is written straight into the batch (the last
	 * layer's target, or one copy out of a crop): no copy after */
	struct view_room room = { px, &F->shape };
	struct rfb_pipe_dest dest = { view_room, &room };
	int rc = rfb_pipe_run_into(w->final, pipe, img, &key, &dest, &out,
				   &t->why);

	if (!rc && (out.size != F->image_bytes ||
		    out.shape.width != F->shape.width ||
		    out.shape.height != F->shape.height ||
		    out.shape.channels != F->shape.channels))
		rc = rfb_err_set(&t->why, RFB_EINVAL, NULL,
			"sample %u: the final pipeline made %dx%dx%d, the stream "
			"holds %dx%dx%d", t->sample, out.shape.width,
			out.shape.height, out.shape.channels, F->shape.width,
			F->shape.height, F->shape.channels);
	if (!rc && out.data != px)
		memcpy(px, out.data, F->image_bytes);
	return rc;
}

static void run_task(void *ctx, struct rfb_task *task)
{
	struct ftask *t = (struct ftask *)task;
	struct fworker *w = ctx;
	const struct final *F = t->F;
	rfb_image img;
	double t0, c0 = rfb_thread_cpu_now();

	rfb_err_clear(&t->why);
	t->healed = t->unreadable = 0;
	t->decode_s = t->augment_s = t->heal_s = t->cpu_s = 0;
	if ((t->status = source_image(w, t, &img))) {
		t->unreadable = 1;
		t->cpu_s = rfb_thread_cpu_now() - c0;
		if (t->slot->addrs[t->out].segment == RFB_HANDOVER_SEGMENT)
			ring_done(t->F, t->slot->rq_pos, 1);
		return;
	}
	t0 = rfb_now();
	/* the record is read and decoded once for all its views */
	for (int v = 0; v < F->views && !t->status; v++)
		t->status = run_view(w, t, &img, v);
	if (t->status && !t->why.path[0])
		name_image(F, t);
	t->augment_s = rfb_now() - t0;
	t->cpu_s = rfb_thread_cpu_now() - c0;
	if (t->slot->addrs[t->out].segment == RFB_HANDOVER_SEGMENT)
		ring_done(t->F, t->slot->rq_pos, 1);
}

/* ---- batches ---- */

/* Record j of s is in the handover ring: point its batch record there,
 * or say why it cannot be read (it is healed then). */
static void ring_record(struct final *F, struct fslot *s, uint32_t j)
{
	struct rfb_batch_record *r = &s->ring_recs[j];
	const struct rfb_cache_addr *a = &s->addrs[j];

	memset(r, 0, sizeof *r);
	r->length = a->length;
	r->data = rfb_handover_get(F->ho, a->offset, a->length, &r->why);
	r->status = r->data ? 0 : r->why.code;
	if (r->data && a->offset + a->length > s->ring_end)
		s->ring_end = a->offset + a->length;
	s->ring_count++;
	F->st->handover_records++;
}

/* Read the batch's records (one io_submit) and queue its tasks. */
static int prepare(struct final *F, const rfb_plan_batch *b, rfb_err *err)
{
	struct fslot *s = &F->slots[rfbi_ring_tail(&F->ring)];
	const struct rfb_batch_record *recs;
	struct rfb_batch_stats before, after;
	double t0 = rfb_now();
	int rc;

	s->batch = *b;
	memcpy(s->samples, b->samples, b->count * sizeof *b->samples);
	s->batch.samples = s->samples;
	s->nread = s->naio = 0;
	s->misses = 0;
	s->ring_end = 0;
	s->ring_count = 0;
	for (uint32_t i = 0; i < b->count; i++) {
		const rfb_plan_sample *x = &s->samples[i];
		int k = rfb_annot_get(x, &s->addrs[s->nread], &s->write_epochs[s->nread]);
		if (k == 2 && !F->ho && F->ho_err.code) {
			*err = F->ho_err;
			return err->code;
		}
		if (k < 0 || (k == 2 && !F->ho))
			return rfb_err_set(err, RFB_EFORMAT, F->in_name,
				"batch %u of epoch %u: sample %u has no %s "
				"(is this plan annotated by refurb-partial?)",
				b->step, b->epoch, x->id,
				k == 2 ? "handover= in the header for its handover "
					 "address" : "cache address");
		s->misses += x->miss;
		if (k == 0) {
			F->st->skipped++;
			continue;
		}
		if (k == 2)
			ring_record(F, s, s->nread);
		else {
			s->aio_addrs[s->naio] = s->addrs[s->nread];
			s->aio_sample[s->naio] = x->id;
			s->aio_index[s->naio++] = s->nread;
		}
		s->addr_sample[s->nread++] = x->id;
	}
	rfb_batch_reader_get_stats(s->reader, &before);
	/* wait returns how many records are bad: those are healed, only a
	 * negative code (the batch as a whole failed) stops the run */
	if ((rc = rfb_batch_reader_submit(s->reader, s->aio_addrs, s->aio_sample,
					  s->naio, err)) ||
	    (rc = rfb_batch_reader_wait(s->reader, &recs, err)) < 0)
		return rc;
	rfb_batch_reader_get_stats(s->reader, &after);
	/* the batch is in memory: let go of the segments the writer deleted
	 * that no batch of the last epoch read (their disk space) */
	rfb_cache_view_close_unused(F->view);
	/* every batch up to this one is in memory: tell the writer, which
	 * then deletes the segments no later batch refers to */
	F->pos.read_global = b->global_step;
	if (F->position && rfb_cache_position_put(F->position, &F->pos, NULL))
		rfb_cache_position_writer_close(F->position), F->position = NULL;
	s->bytes_read = after.bytes_read - before.bytes_read;
	F->st->submit_calls += after.submit_calls - before.submit_calls;
	F->st->bytes_read += s->bytes_read;
	if (rfb_batch_reader_mode(s->reader) == RFB_BATCH_DIRECT_REFUSED)
		F->st->direct_refused = 1;
	s->read_s = rfb_now() - t0;
	F->st->read_s += s->read_s;
	rfbi_ring_push(&F->ring);
	s->n = s->nread;
	for (uint32_t j = 0; j < s->nread; j++) {
		struct ftask *t = &s->tasks[j];
		t->task.run = run_task;
		t->task.group = &s->group;
		t->F = F;
		t->slot = s;
		t->out = j;
		t->sample = s->addr_sample[j];
		t->write_epoch = s->write_epochs[j];
		if (s->addrs[j].segment == RFB_HANDOVER_SEGMENT)
			t->rec = &s->ring_recs[j];
		s->ids[j] = t->sample;
		s->labels[j] = rfb_index_label(F->idx, t->sample);
	}
	for (uint32_t i = 0; i < s->naio; i++) {
		s->tasks[s->aio_index[i]].rec = &recs[i];
		s->tasks[s->aio_index[i]].aio = i;
	}
	if (F->ho)
		ring_queue(F, s);
	rfb_group_add(&s->group, (int)s->nread);
	for (uint32_t j = 0; j < s->nread; j++)
		rfb_pool_submit(F->pool, &s->tasks[j].task);
	return 0;
}

/* Keep the batch size constant: the places of the samples that could not
 * be read (here or by refurb-partial) go to repeats of the batch's kept
 * samples, in order, each with the id RFB_STREAM_REPEAT_ID and the label
 * of the sample it repeats (refurb-stream(5)).  A batch that kept nothing
 * stays empty. */
static void fill_with_repeats(struct final *F, struct fslot *s)
{
	uint32_t kept = s->n;

	if (kept == 0)
		return;
	for (uint32_t j = kept; j < s->batch.count; j++) {
		uint32_t from = (j - kept) % kept;
		memcpy(s->pixels + (size_t)j * F->image_bytes,
		       s->pixels + (size_t)from * F->image_bytes, F->image_bytes);
		s->ids[j] = RFB_STREAM_REPEAT_ID;
		s->labels[j] = s->labels[from];
		F->st->repeats++;
	}
	s->n = s->batch.count;
}

/* Check the tasks of a finished batch; drop the images that failed. */
static int settle(struct final *F, struct fslot *s, double *decode,
		  double *augment, double *heal, double *cpu, uint64_t *healed,
		  rfb_err *err)
{
	uint32_t kept = 0;

	for (uint32_t j = 0; j < s->n; j++) {
		struct ftask *t = &s->tasks[j];
		*decode += t->decode_s;
		*augment += t->augment_s;
		*heal += t->heal_s;
		*cpu += t->cpu_s;
		if (t->status) {
			/* a final pipeline that fails on a good image is
			 * misconfigured; an unreadable sample is left out */
			int fatal = F->o->strict || t->status == RFB_ENOMEM ||
				    rfb_err_is_system(&t->why) || !t->unreadable;
			if (fatal) {
				*err = t->why;
				return t->status;
			}
			/* record bad and image unreadable */
			if (F->o->on_bad)
				F->o->on_bad(F->o->ctx, t->sample, &t->why);
			F->st->skipped++;
			continue;
		}
		if (t->healed && F->o->on_heal)
			F->o->on_heal(F->o->ctx, t->sample, &t->why);
		*healed += t->healed;
		if (kept != j) {
			memcpy(s->pixels + (size_t)kept * F->sample_bytes,
			       s->pixels + (size_t)j * F->sample_bytes, F->sample_bytes);
			s->ids[kept] = s->ids[j];
			s->labels[kept] = s->labels[j];
		}
		kept++;
	}
	s->n = kept;
	fill_with_repeats(F, s);
	return 0;
}

static void report_batch(struct final *F, const struct fslot *s,
			 double decode, double augment, double heal, double cpu,
			 uint64_t healed, double out_wait, double interval)
{
	struct rfb_final_batch_stats b = {
		s->batch.epoch, s->batch.step, s->n, s->misses, healed,
		s->bytes_read, s->read_s, decode, augment, heal, out_wait,
		interval, cpu
	};

	F->o->on_batch(F->o->ctx, &b);
}

/* The batch's global step in the stream: the plan's, less the dropped
 * batches before it (--drop-last drops the last batch of every epoch;
 * the stream's global steps have no gaps).  A function of the epoch and
 * step alone, so a resumed stream numbers its batches like a whole one. */
static uint64_t stream_global_step(const struct final *F,
				   const rfb_plan_batch *b)
{
	int dropping = F->h->drop_last &&
		       rfb_plan_epoch_samples(F->h) % F->h->batch_size;

	return b->global_step - (dropping ? b->epoch : 0);
}

/* Finish the oldest batch (in slot): wait for its tasks, write its
 * frame (an rfbi_ring_finish_fn). */
static int finish_batch(void *engine, int slot, rfb_err *err)
{
	struct final *F = engine;
	struct fslot *s = &F->slots[slot];
	struct rfb_stream_batch b = { 0 };
	double decode = 0, augment = 0, heal = 0, cpu = 0, t0, now, interval = 0;
	uint64_t healed = 0;
	int rc;

	rfb_group_wait(&s->group);
	if ((rc = settle(F, s, &decode, &augment, &heal, &cpu, &healed, err)))
		return rc;
	F->st->decode_s += decode;
	F->st->augment_s += augment;
	F->st->heal_s += heal;
	F->st->healed += healed;
	b.epoch = s->batch.epoch;
	b.step = s->batch.step;
	b.global_step = stream_global_step(F, &s->batch);
	b.n = s->n;
	b.left_out = s->batch.count - s->n; /* left out by partial or here */
	b.labels = s->labels;
	b.ids = s->ids;
	b.pixels = s->pixels;
	b.pixel_bytes = (size_t)s->n * F->sample_bytes;
	t0 = rfb_now();
	if ((rc = rfb_stream_write_batch(F->writer, &b, err)))
		return rc;
	now = rfb_now();
	F->st->output_wait_s += now - t0;
	if (F->last_write > 0) {
		interval = now - F->last_write;
		F->sum_iv += interval;
		F->sum_iv2 += interval * interval;
		F->intervals++;
	}
	F->last_write = now;
	if (F->o->on_batch)
		report_batch(F, s, decode, augment, heal, cpu, healed, now - t0,
			     interval);
	F->st->batches++;
	F->st->images += s->n;
	F->st->epoch = s->batch.epoch;
	F->st->global_step = s->batch.global_step;
	F->st->last_epoch = s->batch.epoch;
	F->st->last_step = s->batch.step;
	F->st->wrote_batch = 1;
	F->pos.written_epoch = s->batch.epoch;
	F->pos.written_step = s->batch.step;
	F->pos.written_global = s->batch.global_step;
	F->pos.has_written = 1;
	if (F->position && rfb_cache_position_put(F->position, &F->pos, NULL))
		rfb_cache_position_writer_close(F->position), F->position = NULL;
	if (F->o->on_written)
		F->o->on_written(F->o->ctx, F->st);
	if (F->o->on_progress)
		F->o->on_progress(F->o->ctx, F->st, (uint64_t)F->h->batches *
				  (F->h->last_epoch - F->h->first_epoch + 1));
	return 0;
}

static int finish_all(struct final *F, rfb_err *err)
{
	return rfbi_ring_finish_all(&F->ring, finish_batch, F, err);
}

/* ---- setting up ---- */

/* A batch's pixels, 64-aligned; NULL when out of memory.  From 2 MiB on,
 * aligned to 2 MiB and asked for transparent huge pages (Debian's
 * "madvise" mode): a page fault and a TLB entry per 2 MiB, not per 4 KiB
 * (refurb-final's page faults at r = 3 fell from 22,100 to 5,100 with
 * the batch reader's arena done the same way). */
static unsigned char *batch_buffer(size_t n)
{
	const size_t huge = (size_t)2 << 20;
	void *p;

	if (n < huge)
		return posix_memalign(&p, 64, n) ? NULL : p;
	n = (n + huge - 1) & ~(huge - 1);
	if (posix_memalign(&p, huge, n))
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, n, MADV_HUGEPAGE); /* advice: may be refused */
#endif
	return p;
}

static int make_slots(struct final *F, rfb_err *err)
{
	uint32_t bs = F->h->batch_size;

	F->nslots = F->o->prefetch > 0 ? F->o->prefetch : 2;
	F->ring = (struct rfbi_ring){ F->nslots, 0, 0 };
	if (!(F->slots = calloc((size_t)F->nslots, sizeof *F->slots)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < F->nslots; i++) {
		struct fslot *s = &F->slots[i];
		s->samples = calloc(bs, sizeof *s->samples);
		s->addrs = calloc(bs, sizeof *s->addrs);
		s->addr_sample = calloc(bs, sizeof *s->addr_sample);
		s->write_epochs = calloc(bs, sizeof *s->write_epochs);
		s->aio_addrs = calloc(bs, sizeof *s->aio_addrs);
		s->aio_sample = calloc(bs, sizeof *s->aio_sample);
		s->aio_index = calloc(bs, sizeof *s->aio_index);
		s->ring_recs = calloc(bs, sizeof *s->ring_recs);
		s->tasks = calloc(bs, sizeof *s->tasks);
		s->labels = calloc(bs, sizeof *s->labels);
		s->ids = calloc(bs, sizeof *s->ids);
		s->pixels = batch_buffer((size_t)bs * F->sample_bytes);
		if (!s->samples || !s->addrs || !s->addr_sample || !s->write_epochs ||
		    !s->aio_addrs || !s->aio_sample || !s->aio_index || !s->ring_recs ||
		    !s->tasks || !s->labels || !s->ids || !s->pixels ||
		    rfb_group_init(&s->group))
			return rfb_err_set(err, RFB_ENOMEM, NULL,
					   "out of memory for %d batches in flight",
					   F->nslots);
		if (!(s->reader = rfb_batch_reader_new(F->view, bs, err)))
			return err->code;
		rfb_batch_reader_defer_payload(s->reader, 1);
	}
	return 0;
}

static void free_slots(struct final *F)
{
	for (int i = 0; F->slots && i < F->nslots; i++) {
		struct fslot *s = &F->slots[i];
		if (s->samples)
			rfb_group_destroy(&s->group);
		rfb_batch_reader_free(s->reader);
		free(s->samples);
		free(s->addrs);
		free(s->addr_sample);
		free(s->write_epochs);
		free(s->aio_addrs);
		free(s->aio_sample);
		free(s->aio_index);
		free(s->ring_recs);
		free(s->tasks);
		free(s->labels);
		free(s->ids);
		free(s->pixels);
	}
	free(F->slots);
}

static int write_stream_header(struct final *F, rfb_err *err)
{
	struct rfb_stream_info info = { 0 };
	uint32_t nc = rfb_index_class_count(F->idx);
	const char **names = calloc(nc ? nc : 1, sizeof *names);
	char *extra = rfbi_final_stream_extra(F);
	uint32_t per_epoch;
	int rc;

	if (!names || !extra) {
		free(names);
		free(extra);
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	}
	for (uint32_t c = 0; c < nc; c++)
		names[c] = rfb_index_class_name(F->idx, c);
	info.dtype = F->dtype == RFB_DTYPE_F32 ? RFB_STREAM_F32 : RFB_STREAM_U8;
	info.layout = F->layout == RFB_LAYOUT_CHW ? RFB_STREAM_NCHW : RFB_STREAM_NHWC;
	info.height = (uint32_t)F->shape.height;
	info.width = (uint32_t)F->shape.width;
	info.channels = (uint32_t)F->shape.channels;
	info.views = (uint32_t)F->views;
	info.batch_size = F->h->batch_size;
	info.class_count = nc;
	info.class_names = names;
	info.first_epoch = F->h->first_epoch;
	info.first_step = F->h->first_step;
	info.last_epoch = F->h->last_epoch;
	info.shard_k = F->h->shard_index;
	info.shard_n = F->h->shard_count;
	/* with --drop-last the incomplete last batch is not trained on */
	per_epoch = rfb_plan_epoch_samples(F->h);
	info.epoch_images = F->h->drop_last
		? per_epoch - per_epoch % F->h->batch_size : per_epoch;
	info.plan_seed = F->h->seed;
	info.augment_seed = F->seed;
	info.index_identity = F->h->index_identity;
	info.normalized = rfb_pipeline_normalization(F->final_pipe, info.mean,
						     info.std);
	info.partial_pipeline = F->annot.partial;
	info.final_pipeline = F->final_text ? F->final_text
					    : rfb_pipeline_canonical(F->final_pipe);
	info.extra = extra;
	rc = rfb_stream_write_header(F->writer, &info, err);
	free(names);
	free(extra);
	return rc;
}

static int setup(struct final *F, int in_fd, const char *in_name, int out_fd,
		 rfb_err *err)
{
	int rc;

	if (!(F->reader = rfb_plan_reader_open(in_fd, in_name, err)))
		return err->code;
	F->h = rfb_plan_reader_header(F->reader);
	F->st->epoch_batches = F->h->batches;
	snprintf(F->st->plan_options, sizeof F->st->plan_options,
		 "-b %u -e %u-%u -s %" PRIu64 "%s%s%s%s", F->h->batch_size,
		 F->h->first_epoch, F->h->last_epoch, F->h->seed,
		 F->h->shuffle == RFB_PLAN_CACHE_AWARE ? "" :
		 F->h->shuffle == RFB_PLAN_RANDOM ? " --shuffle random"
						  : " --shuffle none",
		 F->h->balance == RFB_PLAN_BALANCE_PIXELS ? " --balance pixels" : "",
		 F->h->drop_last ? " --drop-last" : "",
		 F->h->shard_count > 1 ? " --shard K/N" : "");
	if ((rc = rfbi_final_read_annotation(F, in_name, err)) ||
	    (rc = rfbi_final_open_inputs(F, in_name, err)) || (rc = make_slots(F, err)))
		return rc;
	if (!(F->pool = rfb_pool_new(F->o->threads > 0 ? F->o->threads : 1,
				     fworker_new, fworker_free, F, err)))
		return err->code;
	if ((rc = rfbi_final_fit_fds(F, err)))
		return rc;
	if (!(F->writer = rfb_stream_writer_new(out_fd, F->o->out_name ?
						 F->o->out_name : "(output)", err)))
		return err->code;
	F->st->partial_spec = F->annot.partial;
	F->st->final_spec = F->final_text ? F->final_text
					  : rfb_pipeline_canonical(F->final_pipe);
	F->st->reuse = F->h->reuse;
	F->st->views = F->views;
	if (F->o->on_progress) /* its first line: the split */
		F->o->on_progress(F->o->ctx, F->st, (uint64_t)F->h->batches *
				  (F->h->last_epoch - F->h->first_epoch + 1));
	return write_stream_header(F, err);
}

static int run(struct final *F, rfb_err *err)
{
	rfb_plan_item item;
	int rc;

	for (;;) {
		double t0 = rfb_now();
		if (F->o->stop && *F->o->stop) {
			F->st->stopped_by_signal = *F->o->stop;
			return finish_all(F, err);
		}
		rc = rfb_plan_reader_next(F->reader, &item, err);
		F->st->input_wait_s += rfb_now() - t0;
		if (rc <= 0)
			break;
		if (item.type == RFB_PLAN_LINE_BATCH) {
			if (item.batch.dropped)
				continue; /* cached for later hits, not trained on */
			if ((rc = rfbi_ring_make_room(&F->ring, finish_batch, F, err)))
				return rc;
			if ((rc = prepare(F, &item.batch, err)))
				return rc;
			continue;
		}
		if ((rc = finish_all(F, err)) ||
		    (rc = rfb_stream_write_epoch_end(F->writer, item.epoch.epoch, err)))
			return rc;
	}
	if (rc == RFB_ETRUNC && F->o->stop && *F->o->stop) {
		/* the same signal stopped the plan's writer first */
		F->st->stopped_by_signal = *F->o->stop;
		return finish_all(F, err);
	}
	if (rc == RFB_ETRUNC && err) {
		/* the plan stopped early: the batches read are passed on, the
		 * stream gets no END frame, so its reader knows too */
		rfb_err flush_err = { 0 };
		if ((rc = finish_all(F, &flush_err)) != 0) {
			*err = flush_err;
			return rc;
		}
		rc = RFB_ETRUNC;
		size_t n = strlen(err->msg);
		snprintf(err->msg + n, sizeof err->msg - n, "; the program "
			 "writing the plan stopped early (see its message), the "
			 "stream is left without its END frame");
	}
	if (rc == 0 && (rc = finish_all(F, err)) == 0 &&
	    (rc = rfb_stream_write_end(F->writer, err)) == 0 && F->position) {
		F->pos.ended = 1;
		if (rfb_cache_position_put(F->position, &F->pos, NULL)) {
			/* the position is advice: the stream is complete */
		}
	}
	return rc;
}

int rfb_final_run(const struct rfb_final_opts *o, int in_fd,
		  const char *in_name, int out_fd, struct rfb_final_stats *st,
		  rfb_err *err)
{
	struct final F = { .o = o, .st = st, .in_name = in_name };
	int rc;

	memset(st, 0, sizeof *st);
	F.start = rfb_now();
	rc = setup(&F, in_fd, in_name, out_fd, err);
	if (rc == 0)
		rc = run(&F, err);
	if (rc == RFB_EPIPE) {
		st->stopped_by_reader = 1;
		rc = 0;
	}
	rfb_pool_free(F.pool); /* queued tasks finish before the slots go */
	st->seconds = rfb_now() - F.start;
	if (F.intervals) {
		double mean = F.sum_iv / (double)F.intervals;
		double var = F.sum_iv2 / (double)F.intervals - mean * mean;
		st->interval_mean_s = mean;
		st->interval_cv = mean > 0 && var > 0 ? sqrt(var) / mean : 0;
	}
	free_slots(&F);
	rfb_stream_writer_free(F.writer);
	rfb_plan_reader_close(F.reader);
	for (int v = 1; F.view_pipe && v < F.views; v++)
		rfb_pipeline_free(F.view_pipe[v]);
	free(F.view_pipe);
	free(F.final_text);
	rfb_pipeline_free(F.final_pipe);
	rfb_pipeline_free(F.partial_pipe);
	rfb_cache_view_close(F.view);
	if (F.rq)
		pthread_mutex_destroy(&F.rq_mu);
	free(F.rq);
	rfb_handover_free(F.ho);
	rfb_cache_position_writer_close(F.position);
	rfb_source_close(F.src);
	rfb_index_close(F.idx);
	return rc;
}
