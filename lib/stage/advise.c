/*
 * advise.c - the measuring half of the cost model (advise.h): time every
 * split point of a full pipeline on a seeded sample of the index, with
 * thread CPU time, per image the median of a few runs.  A pipeline with
 * gates (apply, choice, order) is timed with every gate open, and each
 * gated layer then counts for its cost times how often it runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "refurb/advise.h"
#include "refurb/checksum.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "refurb/pipeline.h"
#include "refurb/progress.h"
#include "refurb/rng.h"
#include "advise_internal.h"

#define MAX_IMAGE_FILE ((size_t)1 << 30)
/* The record file is emptied when it reaches this size: records go to
 * fresh pages, as in the cache's segments, and are dropped in bulk. */
#define RECORD_FILE_MAX ((uint64_t)64 << 20)

/* What one timing thread owns: its contexts and buffers, its record
 * file, its share of the sample; what it times goes to the shared bench,
 * in its own images' slots. */
struct bench_worker {
	struct bench *b;
	rfb_pipe_ctx *head_ctx, *tail_ctx;
	rfb_codec_ctx *codec;
	rfb_imgbuf rec, dec;
	unsigned char *file, *back;
	size_t file_cap, back_cap;
	int fd;                        /* the record file */
	uint64_t fd_end;               /* its length: records are appended */
	char tmp_path[4096];
	uint32_t slot;                 /* the image being timed */
	uint32_t lo, hi;               /* the thread's images */
	int thread, status;
	rfb_err err;
};

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return a < b ? -1 : a > b;
}

static int median_int(int *v, uint32_t n)
{
	qsort(v, n, sizeof *v, cmp_int);
	return n ? v[n / 2] : 1;
}

void rfb_advice_free(rfb_advice *a)
{
	if (!a)
		return;
	for (int k = 0; k < a->splits; k++) {
		free(a->split[k].partial_spec);
		free(a->split[k].final_spec);
	}
	free(a->split);
	free(a->layer);
	free(a->spec);
	free(a);
}

/* The pipelines of every split that can be cut: head = first k layers,
 * tail = the rest (the layers that must stay with normalize in the final
 * part are never in a head). */
static int make_splits(struct bench *b, rfb_err *err)
{
	rfb_advice *a = b->a;
	struct rfb_pipe_shape shape;
	int L = a->layers, rc;

	if ((rc = rfb_pipeline_fixed_shape(b->full, 3, &shape, err)))
		return rc;
	b->head = calloc((size_t)L, sizeof *b->head);
	b->tail = calloc((size_t)L, sizeof *b->tail);
	if (!b->head || !b->tail)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	for (b->cuts = 0; b->cuts < L && rfb_pipeline_splittable(b->full, b->cuts);)
		b->cuts++;
	for (int k = 0; k < b->cuts; k++) {
		struct rfb_advise_split *s = &a->split[k];
		if ((rc = rfb_pipeline_split(b->full, k, &b->head[k], &b->tail[k],
					     err)) ||
		    (rc = rfbi_advise_fix_tail(&b->tail[k], &shape, err)))
			return rc;
		s->final_layers = L - k;
		s->partial_spec = rfbi_advise_dup(rfb_pipeline_canonical(b->head[k]));
		s->final_spec = rfbi_advise_dup(rfb_pipeline_canonical(b->tail[k]));
		if (!s->partial_spec || !s->final_spec)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	}
	return 0;
}

/* Thread thread of n's contexts, buffers and record file, for its
 * share of the K images.  w->fd is -1 until the file is made, so that
 * worker_close may follow a failed open. */
static int worker_open(struct bench_worker *w, struct bench *b, int thread,
		       int n, uint32_t K, rfb_err *err)
{
	const struct rfb_advise_opts *o = b->o;

	w->b = b;
	w->fd = -1;
	w->thread = thread;
	w->lo = (uint32_t)((uint64_t)K * thread / n);
	w->hi = (uint32_t)((uint64_t)K * (thread + 1) / n);
	if (!(w->head_ctx = rfb_pipe_ctx_new(err)) ||
	    !(w->tail_ctx = rfb_pipe_ctx_new(err)) ||
	    !(w->codec = rfb_codec_ctx_new(err)))
		return err->code ? err->code : RFB_ENOMEM;
	snprintf(w->tmp_path, sizeof w->tmp_path, "%s/refurb-advise.XXXXXX",
		 o->tmp_dir ? o->tmp_dir : "/tmp");
	if ((w->fd = mkstemp(w->tmp_path)) < 0)
		return rfb_err_sys(err, errno, w->tmp_path,
				   "cannot create the record file");
	unlink(w->tmp_path);
	return 0;
}

static void worker_close(struct bench_worker *w)
{
	rfb_pipe_ctx_free(w->head_ctx);
	rfb_pipe_ctx_free(w->tail_ctx);
	rfb_codec_ctx_free(w->codec);
	rfb_imgbuf_free(&w->rec);
	rfb_imgbuf_free(&w->dec);
	free(w->file);
	free(w->back);
	if (w->fd >= 0)
		close(w->fd);
}

static int bench_open(struct bench *b, rfb_err *err)
{
	const struct rfb_advise_opts *o = b->o;
	rfb_advice *a;
	int rc, L;

	if (!(b->idx = rfb_index_open(o->index_path, err)))
		return err->code;
	if ((rc = rfb_pipeline_parse(o->spec, &b->full, err)))
		return rc;
	for (int i = 0; i < rfb_pipeline_layers(b->full); i++) {
		if (!rfb_pipeline_layer_is_gate(b->full, i))
			continue;
		b->gated = b->full;
		b->full = NULL;
		if ((rc = rfb_pipeline_ungated(b->gated, &b->full, b->weight,
					       b->position, err)))
			return rc;
		break;
	}
	if ((L = rfb_pipeline_layers(b->full)) < 1)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "the pipeline has no layer to split");
	if (!(a = b->a = calloc(1, sizeof *a)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	a->images = rfb_index_count(b->idx);
	b->L = L;
	a->layers = a->splits = L;
	a->layer = calloc((size_t)L, sizeof *a->layer);
	a->split = calloc((size_t)L, sizeof *a->split);
	a->spec = rfbi_advise_dup(rfb_pipeline_canonical(b->gated ? b->gated : b->full));
	b->width = malloc((size_t)L * (o->sample + 1) * sizeof *b->width);
	b->height = malloc((size_t)L * (o->sample + 1) * sizeof *b->height);
	b->out_bytes = calloc((size_t)L, sizeof *b->out_bytes);
	b->runs = malloc((size_t)o->repeat * sizeof *b->runs);
	if (!a->layer || !a->split || !a->spec || !b->width ||
	    !b->height || !b->out_bytes || !b->runs)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	return make_splits(b, err);
}

static void bench_close(struct bench *b)
{
	for (int k = 0; k < b->L; k++) {
		if (b->head)
			rfb_pipeline_free(b->head[k]);
		if (b->tail)
			rfb_pipeline_free(b->tail[k]);
	}
	free(b->head);
	free(b->tail);
	rfb_pipeline_free(b->full);
	rfb_pipeline_free(b->gated);
	rfb_index_close(b->idx);
	free(b->width);
	free(b->height);
	free(b->med);
	free(b->out_bytes);
	free(b->runs);
}

/* The first half of one run of split k on sample id: the partial part
 * (read the file, decode, run) and the record appended to the record
 * file at *at.  t[0], t[1] = partial, write seconds.  Returns 1 (nothing
 * done) when the record file is full, 0 when done, or an error. */
static int run_partial(struct bench_worker *w, int k, uint32_t id,
		       double t[4], size_t *rec_len, uint64_t *at, rfb_err *err)
{
	struct bench *b = w->b;
	struct rfb_pipe_key key = { b->o->seed, 0, id, RFB_STAGE_PARTIAL };
	struct rfb_pipe_out out;
	char path[8192];
	size_t len;
	double c0 = rfb_thread_cpu_now();
	int rc;

	if ((rc = rfb_index_full_path(b->idx, id, b->o->root, path, sizeof path)))
		return rfb_err_set(err, rc, NULL, "sample %u: path too long", id);
	if ((rc = rfb_file_read_into(path, MAX_IMAGE_FILE, &w->file,
				     &w->file_cap, &len, err)))
		return rc;
	if ((rc = rfb_pipe_run_jpeg(w->head_ctx, b->head[k], w->file, len, &key,
				    &out, err))) {
		if (!err->path[0])
			snprintf(err->path, sizeof err->path, "%.500s", path);
		return rc;
	}
	t[0] = rfb_thread_cpu_now() - c0;
	c0 = rfb_thread_cpu_now();
	if ((rc = rfb_record_encode(w->codec, &b->o->codec, &out.img, id, 0, 0,
				    &w->rec, rec_len, err)))
		return rc;
	if (w->fd_end && w->fd_end + *rec_len > RECORD_FILE_MAX)
		return 1;
	if (rfb_pwrite_full(w->fd, w->rec.data, *rec_len, (off_t)w->fd_end) < 0)
		return rfb_err_sys(err, errno, w->tmp_path,
				   "cannot write the record file");
	*at = w->fd_end;
	w->fd_end += *rec_len;
	t[1] = rfb_thread_cpu_now() - c0;
	b->width[(size_t)k * b->o->sample + w->slot] = out.img.width;
	b->height[(size_t)k * b->o->sample + w->slot] = out.img.height;
	return 0;
}

/* Read the records of a chunk back, each to its offset in w->back, all
 * of them before any is decoded: as refurb-final reads a batch's records
 * with one submission, then verifies and decodes them from memory, cold.
 * t[2] of each = its read. */
static int read_chunk(struct bench_worker *w, double *t,
		      const unsigned char *bad, const size_t *len,
		      const uint64_t *at, uint32_t n, rfb_err *err)
{
	if (w->fd_end > w->back_cap) {
		unsigned char *nb = realloc(w->back, w->fd_end);
		if (!nb)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		w->back = nb;
		w->back_cap = w->fd_end;
	}
	for (uint32_t x = 0; x < n; x++) {
		double c0 = rfb_thread_cpu_now();
		if (bad[x])
			continue;
		if (rfb_pread_full(w->fd, w->back + at[x], len[x], (off_t)at[x]) !=
		    (ssize_t)len[x])
			return rfb_err_sys(err, errno, w->tmp_path,
					   "cannot read the record file");
		t[x * 4 + 2] = rfb_thread_cpu_now() - c0;
	}
	return 0;
}

/* The second half: the record read at at decoded, the final part run on
 * it.  t[2] += decode, t[3] = final seconds. */
static int run_final(struct bench_worker *w, int k, uint32_t id,
		     double t[4], size_t rec_len, uint64_t at, size_t *out_size,
		     rfb_err *err)
{
	struct rfb_pipe_key key = { w->b->o->seed, 0, id, RFB_STAGE_FINAL };
	struct rfb_record_meta m;
	struct rfb_pipe_out out;
	rfb_image back;
	double c0 = rfb_thread_cpu_now();
	int rc;

	if ((rc = rfb_record_decode(w->codec, w->back + at, rec_len, &m, &back,
				    &w->dec, err)))
		return rc;
	t[2] += rfb_thread_cpu_now() - c0;
	c0 = rfb_thread_cpu_now();
	if ((rc = rfb_pipe_run(w->tail_ctx, w->b->tail[k], &back, &key, &out,
			       err)))
		return rc;
	t[3] = rfb_thread_cpu_now() - c0;
	*out_size = out.size;
	return 0;
}

/* Empty the record file (its cost spread over the records it held, as
 * deleting a dead segment is). */
static int empty_records(struct bench_worker *w, double *t, uint32_t n,
			 rfb_err *err)
{
	double c0 = rfb_thread_cpu_now(), each;

	if (ftruncate(w->fd, 0) < 0)
		return rfb_err_sys(err, errno, w->tmp_path,
				   "cannot empty the record file");
	w->fd_end = 0;
	each = n ? (rfb_thread_cpu_now() - c0) / n : 0;
	for (uint32_t i = 0; i < n; i++)
		t[i * 4 + 1] += each;
	return 0;
}

/* k distinct ids of n, drawn with seed (a partial Fisher-Yates). */
static uint32_t *draw_sample(uint32_t n, uint32_t k, uint64_t seed)
{
	uint32_t *ids = malloc((size_t)n * sizeof *ids + 1);
	rfb_rng rng;

	if (!ids)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		ids[i] = i;
	rfb_rng_init(&rng, seed, 0, 0, RFB_STAGE_ADVISE);
	for (uint32_t i = 0; i < k && i < n; i++) {
		uint32_t j = i + rfb_rng_below(&rng, n - i), t = ids[i];
		ids[i] = ids[j];
		ids[j] = t;
	}
	return ids;
}

/* The standard error of the mean over the measured images of split
 * k1's part q less split k2's (k2 < 0: nothing). */
static double diff_err(const struct bench *b, int k1, int k2, int q)
{
	uint32_t n = b->a->measured;
	double sum = 0, sum2 = 0, mean, var;

	if (n < 2)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		double d = b->med[((size_t)k1 * b->o->sample + i) * 4 + q] -
			   (k2 < 0 ? 0 : b->med[((size_t)k2 * b->o->sample + i) * 4 + q]);
		sum += d;
		sum2 += d * d;
	}
	mean = sum / n;
	var = (sum2 - n * mean * mean) / (n - 1);
	return var > 0 ? sqrt(var / n) : 0;
}

/* Layer j's costs as the difference of consecutive splits, with their
 * standard errors.  The layers that cannot be partial (from the first
 * that must stay with normalize, at C - 1, on) have no partial cost;
 * their final cost is timed as one, and put on the first of them. */
static void layer_costs(const struct bench *b, int C, int j,
			struct rfb_advise_layer *l)
{
	const rfb_advice *a = b->a;

	l->partial_s = j + 1 < C ? a->split[j + 1].partial_s -
				   a->split[j].partial_s : NAN;
	l->partial_err = j + 1 < C ? diff_err(b, j + 1, j, 0) : 0;
	if (j + 1 < C) {
		l->final_s = a->split[j].final_s - a->split[j + 1].final_s;
		l->final_err = diff_err(b, j, j + 1, 3);
	} else {
		l->final_s = j + 1 == C ? a->split[j].final_s : 0;
		l->final_err = j + 1 == C ? diff_err(b, j, -1, 3) : 0;
	}
}

/* Means, per-layer costs and choices from the sums; only the splits that
 * can be cut (b->cuts) stay. */
static void summarize(struct bench *b)
{
	rfb_advice *a = b->a;
	double n = a->measured, choices = 1;
	int L = a->layers, C = b->cuts;

	for (int k = 0; k < C; k++) {
		struct rfb_advise_split *s = &a->split[k];
		s->partial_s /= n;
		s->write_s /= n;
		s->read_s /= n;
		s->final_s /= n;
		s->record_bytes /= n;
		s->transfer_s = rfbi_advise_time_transfer((size_t)(b->out_bytes[k] / n + 0.5));
	}
	a->decode_s = a->split[0].partial_s;
	a->decode_err = diff_err(b, 0, -1, 0);
	for (int j = 0; j < L; j++) {
		struct rfb_advise_layer *l = &a->layer[j];
		/* the layers after C - 1 keep its input's size (normalize,
		 * erasing): they were never the first of a timed tail */
		size_t at = (size_t)(j < C ? j : C - 1) * b->o->sample;
		l->name = rfb_pipeline_layer_name(b->full, j);
		l->in_width = median_int(b->width + at, a->measured);
		l->in_height = median_int(b->height + at, a->measured);
		l->choices = rfb_pipeline_layer_choices(b->full, j, l->in_width,
							l->in_height);
		l->runs = 1.0;
		layer_costs(b, C, j, l);
	}
	for (int k = L - 1; k >= 0; k--) {
		choices *= a->layer[k].choices;
		if (k < C)
			a->split[k].final_choices = choices;
	}
	a->choices = choices;
	a->splits = C;
}

static int is_image_error(int rc)
{
	return rc == RFB_EIO || rc == RFB_EDECODE || rc == RFB_ETRUNC ||
	       rc == RFB_EFORMAT || rc == RFB_ELIMIT || rc == RFB_EINVAL;
}

/* An image that cannot go through is left out; why it failed is kept
 * (reported in sample order once the threads are done). */
static int image_failed(struct bench *b, uint32_t slot, int rc,
			unsigned char *bad, const rfb_err *why)
{
	if (!is_image_error(rc))
		return 0;
	*bad = 1;
	if ((b->why[slot] = malloc(sizeof *why)))
		*b->why[slot] = *why;
	return 1;
}

/* One pass of split k over images [i, K) as far as the record file holds
 * their records: all partial parts first, then all final parts, so that
 * every record is read back cold, as the chain reads it epochs later.
 * t points to the pass's times (4 per image), bytes to the split's.
 * Returns the next image, or an error. */
static int64_t pass_chunk(struct bench_worker *w, int k, const uint32_t *ids,
			  uint32_t i, uint32_t K, double *t, double *bytes,
			  unsigned char *bad, rfb_err *err)
{
	uint64_t at[256];
	size_t len[256];
	uint32_t j, first = i;
	rfb_err why = { 0 };
	int rc = 0;

	for (j = i; j < K && j - i < 256; j++) {
		if (bad[j])
			continue;
		w->slot = j;
		rc = run_partial(w, k, ids[j], t + (size_t)j * 4, &len[j - i],
				 &at[j - i], &why);
		if (rc == 1)
			break;
		if (rc && !image_failed(w->b, j, rc, &bad[j], &why))
			return *err = why, rc;
	}
	if ((rc = read_chunk(w, t + (size_t)i * 4, bad + i, len, at, j - i, err)))
		return rc;
	for (uint32_t x = i; x < j; x++) {
		size_t out_size = 0;
		if (bad[x])
			continue;
		rc = run_final(w, k, ids[x], t + (size_t)x * 4, len[x - i],
			       at[x - i], &out_size, &why);
		if (rc && !image_failed(w->b, x, rc, &bad[x], &why))
			return *err = why, rc;
		bytes[(size_t)x * 2] = (double)len[x - i];
		bytes[(size_t)x * 2 + 1] = (double)out_size;
	}
	if ((rc = empty_records(w, t + (size_t)first * 4, j - first, err)))
		return rc;
	return j;
}

/* A thread's images [lo, hi) of the K through every split, repeat
 * times; each pass goes over all of them before the next split or
 * repeat, so that no image is measured twice in a row with warm caches. */
static int sweep(struct bench_worker *w, const uint32_t *ids, uint32_t K,
		 double *t, double *bytes, unsigned char *bad, rfb_err *err)
{
	const struct bench *b = w->b;
	const struct rfb_advise_opts *o = b->o;
	int L = b->L, R = o->repeat;
	uint64_t done = 0, mine = w->hi - w->lo;

	for (int rep = 0; rep < R; rep++)
		for (int k = 0; k < b->cuts; k++)
			for (uint32_t i = w->lo; i < w->hi;) {
				int64_t next = pass_chunk(w, k, ids, i, w->hi,
					t + ((size_t)rep * L + k) * K * 4,
					bytes + (size_t)k * K * 2, bad, err);
				if (next < 0)
					return (int)next;
				done += (uint64_t)next - i;
				i = (uint32_t)next;
				/* the first thread speaks for all */
				if (o->on_progress && w->thread == 0 && mine)
					o->on_progress(o->ctx, done * K / mine,
						       (uint64_t)R * b->cuts * K);
			}
	return 0;
}

struct sweep_args {
	struct bench_worker *w;
	const uint32_t *ids;
	uint32_t K;
	double *t, *bytes;
	unsigned char *bad;
};

static void *sweep_thread(void *arg)
{
	struct sweep_args *s = arg;

	s->w->status = sweep(s->w, s->ids, s->K, s->t, s->bytes, s->bad,
			     &s->w->err);
	return NULL;
}

/* The sample split among o->threads threads timing at once (as the
 * chain's workers run at once: they share caches and memory bandwidth). */
static int sweep_all(struct bench *b, const uint32_t *ids, uint32_t K,
		     double *t, double *bytes, unsigned char *bad, rfb_err *err)
{
	int n = b->o->threads > 1 ? b->o->threads : 1, opened = 0, started = 0;
	int rc = 0;
	struct bench_worker *w = calloc((size_t)n, sizeof *w);
	struct sweep_args *args = calloc((size_t)n, sizeof *args);
	pthread_t *th = calloc((size_t)n, sizeof *th);

	if (!w || !args || !th) {
		rc = rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (; opened < n && !rc; opened++) {
		rc = worker_open(&w[opened], b, opened, n, K, err);
		args[opened] = (struct sweep_args){ &w[opened], ids, K, t, bytes,
						    bad };
	}
	for (int i = 0; i < n && !rc; i++, started++)
		if (pthread_create(&th[i], NULL, sweep_thread, &args[i]))
			rc = rfb_err_set(err, RFB_ENOMEM, NULL,
					 "cannot start a thread");
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < started && !rc; i++)
		if (w[i].status)
			*err = w[i].err, rc = w[i].status;
	for (int i = 0; i < opened; i++)
		worker_close(&w[i]);
out:
	free(w);
	free(args);
	free(th);
	return rc;
}

/* Per image and split the median of the repeats, summed over the good
 * images; the layers' input sizes of the good images moved to the front. */
static void add_up(struct bench *b, uint32_t K, double *t,
		   const double *bytes, const unsigned char *bad)
{
	rfb_advice *a = b->a;
	int L = b->L, R = b->o->repeat;
	double *v = b->runs;

	for (int k = 0; k < b->cuts; k++) {
		struct rfb_advise_split *s = &a->split[k];
		uint32_t good = 0;
		for (uint32_t i = 0; i < K; i++) {
			double m[4];
			if (bad[i])
				continue;
			for (int q = 0; q < 4; q++) {
				for (int rep = 0; rep < R; rep++)
					v[rep] = t[(((size_t)rep * L + k) * K + i) * 4 + q];
				m[q] = median(v, R);
			}
			memcpy(&b->med[((size_t)k * b->o->sample + good) * 4], m,
			       sizeof m);
			s->partial_s += m[0];
			s->write_s += m[1];
			s->read_s += m[2];
			s->final_s += m[3];
			s->record_bytes += bytes[((size_t)k * K + i) * 2];
			b->out_bytes[k] += bytes[((size_t)k * K + i) * 2 + 1];
			b->width[(size_t)k * b->o->sample + good] =
				b->width[(size_t)k * b->o->sample + i];
			b->height[(size_t)k * b->o->sample + good] =
				b->height[(size_t)k * b->o->sample + i];
			good++;
		}
		a->measured = good;
	}
}

static int measure_sample(struct bench *b, rfb_err *err)
{
	const struct rfb_advise_opts *o = b->o;
	uint32_t n = b->a->images, K = o->sample < n ? o->sample : n, *ids;
	double *t = NULL, *bytes = NULL;
	unsigned char *bad = NULL;
	int rc;

	ids = draw_sample(n, K, o->seed);
	t = malloc((size_t)o->repeat * b->L * K * 4 * sizeof *t + 1);
	bytes = calloc((size_t)b->L * K * 2 + 1, sizeof *bytes);
	bad = calloc((size_t)K + 1, 1);
	b->why = calloc((size_t)K + 1, sizeof *b->why);
	b->med = malloc((size_t)b->L * o->sample * 4 * sizeof *b->med + 1);
	if (!ids || !t || !bytes || !bad || !b->why || !b->med) {
		rc = rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (!(rc = sweep_all(b, ids, K, t, bytes, bad, err)))
		add_up(b, K, t, bytes, bad);
	for (uint32_t i = 0; i < K; i++) {
		b->a->failed += bad[i];
		if (b->why[i] && o->on_bad)
			o->on_bad(o->ctx, ids[i], b->why[i]);
		free(b->why[i]);
	}
	if (!rc && !b->a->measured)
		rc = rfb_err_set(err, RFB_EDECODE, o->index_path,
				 "none of the %u sampled images could be read",
				 K);
out:
	free(ids);
	free(t);
	free(bytes);
	free(bad);
	free(b->why);
	b->why = NULL;
	return rc;
}

/* The view collisions of every layer (and whether it draws) and of
 * every split's final part, at their median input sizes. */
static void collisions(const struct bench *b)
{
	const rfb_pipeline *p = b->gated ? b->gated : b->full;
	rfb_advice *a = b->a;

	for (int j = 0; j < a->layers; j++) {
		struct rfb_advise_layer *l = &a->layer[j];
		l->collision = rfb_pipeline_layer_collision(p, j, l->in_width,
							    l->in_height);
		l->draws = rfb_pipeline_layer_draws(p, j, l->in_width, l->in_height);
	}
	for (int k = 0; k < a->splits; k++) {
		struct rfb_advise_split *s = &a->split[k];
		const struct rfb_advise_layer *first = &a->layer[a->layers -
								 s->final_layers];
		s->collision = rfb_pipeline_collision(p, a->layers - s->final_layers,
						      first->in_width,
						      first->in_height);
	}
}

rfb_advice *rfb_advise_measure(const struct rfb_advise_opts *o, rfb_err *err)
{
	struct bench b = { .o = o };
	rfb_advice *a = NULL;

	if (o->repeat < 1 || o->sample < 1) {
		rfb_err_set(err, RFB_EINVAL, NULL, "sample and repeat must be >= 1");
		return NULL;
	}
	if (bench_open(&b, err) || measure_sample(&b, err))
		goto fail;
	summarize(&b);
	if (b.gated && rfbi_advise_regate(&b, err))
		goto fail;
	collisions(&b);
	a = b.a;
	b.a = NULL;
fail:
	bench_close(&b);
	rfb_advice_free(b.a);
	return a;
}
