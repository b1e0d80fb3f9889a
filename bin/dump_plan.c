/*
 * dump_plan.c - refurb-dump on a plan stream: the TSV listing (one line
 * per sample: epoch, step, sample id, hit|miss) and the --stats summary:
 * per epoch, the misses per batch (and miss pixels per batch with the
 * index), then how many uses each cached record served.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"
#include "refurb/index.h"
#include "refurb/plan.h"

/* Running min/max/mean/stddev of one quantity per full batch. */
struct spread {
	double n, sum, sumsq, min, max;
};

static void spread_add(struct spread *s, double v)
{
	if (s->n == 0 || v < s->min)
		s->min = v;
	if (s->n == 0 || v > s->max)
		s->max = v;
	s->n++;
	s->sum += v;
	s->sumsq += v * v;
}

static double spread_mean(const struct spread *s)
{
	return s->n ? s->sum / s->n : 0;
}

static double spread_sd(const struct spread *s)
{
	double m = spread_mean(s), var = s->n ? s->sumsq / s->n - m * m : 0;

	return var > 0 ? sqrt(var) : 0;
}

struct plan_stats {
	const rfb_plan_header *h;
	const rfb_index *idx;   /* NULL: no pixel columns */
	struct spread misses, pixels;
	uint32_t *uses;         /* uses of the live record, by id; 0 none */
	uint64_t *died, *alive; /* records by uses, [r+1] = more than r */
	uint64_t hits_before;   /* hits of records written before the plan */
};

static void stats_batch(struct plan_stats *st, const rfb_plan_batch *b)
{
	uint32_t r = st->h->reuse, misses = 0;
	uint64_t pixels = 0;

	for (uint32_t i = 0; i < b->count; i++) {
		const rfb_plan_sample *s = &b->samples[i];
		uint32_t *u = &st->uses[s->id];
		if (!s->miss) {
			st->hits_before += *u == 0;
			*u += *u != 0;
			continue;
		}
		if (*u)
			st->died[*u > r ? r + 1 : *u]++;
		*u = 1;
		misses++;
		if (st->idx)
			pixels += rfb_index_pixels(st->idx, s->id);
	}
	if (b->count == st->h->batch_size) {
		spread_add(&st->misses, misses);
		spread_add(&st->pixels, (double)pixels);
	}
}

static void stats_epoch(struct plan_stats *st, const rfb_plan_epoch_end *e,
			FILE *out)
{
	const struct spread *m = &st->misses, *p = &st->pixels;

	fprintf(out, "%u\t%u\t%u\t%u\t%.0f\t%.0f\t%.2f", e->epoch, e->batches,
		e->samples, e->misses, m->min, m->max, spread_sd(m));
	if (st->idx)
		fprintf(out, "\t%.0f\t%.0f\t%.0f\t%.4f", p->min, p->max,
			spread_mean(p),
			spread_mean(p) > 0 ? spread_sd(p) / spread_mean(p) : 0);
	fputc('\n', out);
	memset(&st->misses, 0, sizeof st->misses);
	memset(&st->pixels, 0, sizeof st->pixels);
}

static void print_header(const rfb_plan_header *h, const rfb_index *idx,
			 FILE *out)
{
	fprintf(out, "schedule     %016llx\nindex        %016llx\n"
		"samples      %u (shard %u/%u of %u)\n"
		"reuse        %u (%s, eviction seed %llu)\n"
		"batch        %u (%u batches per epoch%s)\n"
		"epochs       %u-%u\nshuffle      %s (seed %llu, balance %s)\n",
		(unsigned long long)h->schedule_identity,
		(unsigned long long)h->index_identity, h->samples,
		h->shard_index, h->shard_count, h->total, h->reuse,
		rfb_evict_policy_name(h->policy),
		(unsigned long long)h->evict_seed, h->batch_size, h->batches,
		h->drop_last ? ", the incomplete last one dropped" : "",
		h->first_epoch, h->last_epoch, rfb_plan_shuffle_name(h->shuffle),
		(unsigned long long)h->seed, rfb_plan_balance_name(h->balance));
	if (h->even)
		fprintf(out, "even         %s (%u samples per epoch in every shard "
			"of %u)\n", rfb_plan_even_name(h->even),
			rfb_plan_epoch_samples(h), h->shard_count);
	fprintf(out, "# misses per full batch (miss_*) and miss pixels per full "
		"batch (px_*)\n# epoch\tbatches\tsamples\tmisses\tmiss_min\t"
		"miss_max\tmiss_sd%s\n",
		idx ? "\tpx_min\tpx_max\tpx_mean\tpx_cv" : "");
}

static void print_uses(const struct plan_stats *st, FILE *out)
{
	uint32_t r = st->h->reuse;

	fprintf(out, "# uses\trecords\tdied in the plan\talive at its end\n");
	for (uint32_t u = 1; u <= r + 1; u++) {
		if (!st->died[u] && !st->alive[u])
			continue;
		fprintf(out, "%s%u\t%llu\t%llu\t%llu\n", u > r ? ">" : "",
			u > r ? r : u,
			(unsigned long long)(st->died[u] + st->alive[u]),
			(unsigned long long)st->died[u],
			(unsigned long long)st->alive[u]);
	}
	if (st->hits_before)
		fprintf(out, "# %llu hits of records written before epoch %u "
			"are not counted\n", (unsigned long long)st->hits_before,
			st->h->first_epoch);
}

/* The uses histogram of the records still alive at the end. */
static void close_records(struct plan_stats *st)
{
	uint32_t r = st->h->reuse;

	for (uint32_t id = 0; id < st->h->total; id++)
		if (st->uses[id])
			st->alive[st->uses[id] > r ? r + 1 : st->uses[id]]++;
}

static int print_stats(struct cli *c, rfb_plan_reader *rd,
		       const rfb_index *idx, FILE *out)
{
	struct plan_stats st = { .h = rfb_plan_reader_header(rd), .idx = idx };
	rfb_plan_item it;
	rfb_err err = { 0 };
	int rc;

	st.uses = calloc((size_t)st.h->total, sizeof *st.uses);
	st.died = calloc((size_t)st.h->reuse + 2, sizeof *st.died);
	st.alive = calloc((size_t)st.h->reuse + 2, sizeof *st.alive);
	if (!st.uses || !st.died || !st.alive)
		cli_die(c, "out of memory");
	print_header(st.h, idx, out);
	while ((rc = rfb_plan_reader_next(rd, &it, &err)) > 0) {
		if (it.type == RFB_PLAN_LINE_BATCH)
			stats_batch(&st, &it.batch);
		else
			stats_epoch(&st, &it.epoch, out);
	}
	if (rc < 0)
		cli_die_err(c, &err);
	close_records(&st);
	print_uses(&st, out);
	free(st.uses);
	free(st.died);
	free(st.alive);
	return 0;
}

/* "epoch\tstep\tid\thit|miss\n" per sample, formatted without printf
 * (a plan has a line per sample and epoch). */
static char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static void print_tsv(struct cli *c, rfb_plan_reader *rd, FILE *out)
{
	const rfb_plan_header *h = rfb_plan_reader_header(rd);
	char *buf = malloc((size_t)h->batch_size * 48 + 1);
	rfb_plan_item it;
	rfb_err err = { 0 };
	int rc;

	if (!buf)
		cli_die(c, "out of memory");
	while ((rc = rfb_plan_reader_next(rd, &it, &err)) > 0) {
		const rfb_plan_batch *b = &it.batch;
		char *p = buf;
		if (it.type != RFB_PLAN_LINE_BATCH)
			continue;
		for (uint32_t i = 0; i < b->count; i++) {
			p = put_u64(p, b->epoch);
			*p++ = '\t';
			p = put_u64(p, b->step);
			*p++ = '\t';
			p = put_u64(p, b->samples[i].id);
			memcpy(p, b->samples[i].miss ? "\tmiss\n" : "\thit\n",
			       b->samples[i].miss ? 6 : 5);
			p += b->samples[i].miss ? 6 : 5;
		}
		fwrite(buf, 1, (size_t)(p - buf), out);
	}
	free(buf);
	if (rc < 0)
		cli_die_err(c, &err);
}

static rfb_index *open_index(struct cli *c, const char *path,
			     const rfb_plan_header *h)
{
	rfb_err err = { 0 };
	rfb_index *idx = rfb_index_open(path, &err);

	if (!idx)
		cli_die_err(c, &err);
	if (rfb_index_identity(idx) != h->index_identity ||
	    rfb_index_count(idx) != h->total)
		cli_die(c, "%s: not the index of this plan (index %016llx, the "
			"plan's is %016llx)", path,
			(unsigned long long)rfb_index_identity(idx),
			(unsigned long long)h->index_identity);
	return idx;
}

int dump_plan(struct cli *c, const char *path, const struct dump_opts *o,
	      FILE *out)
{
	int is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	rfb_err err = { 0 };
	rfb_plan_reader *rd;
	rfb_index *idx = NULL;

	if (fd < 0)
		cli_die(c, "%s: cannot open: %s", path, strerror(errno));
	if (!(rd = rfb_plan_reader_open(fd, is_stdin ? "(stdin)" : path, &err)))
		cli_die_err(c, &err);
	if (o->stats && o->index)
		idx = open_index(c, o->index, rfb_plan_reader_header(rd));
	if (o->stats)
		print_stats(c, rd, idx, out);
	else
		print_tsv(c, rd, out);
	rfb_index_close(idx);
	rfb_plan_reader_close(rd);
	if (!is_stdin)
		close(fd);
	return 0;
}
