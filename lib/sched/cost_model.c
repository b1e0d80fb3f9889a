/*
 * cost_model.c - predict the cost of any miss from a cost file (costs.h
 * gives the model): op costs by least squares on each sample's own
 * variations, a base cost per measured sample, and a linear fit on the
 * index's fields for the samples never measured.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/costs.h"
#include "refurb/ops.h"
#include "refurb/pipeline.h"
#include "refurb/rng.h"

#define NOPS RFB_OP_COUNT
#define NFEAT 6

struct rfb_cost_model {
	rfb_pipeline *pipe;
	int layer[RFB_PIPELINE_MAX_LAYERS]; /* positions of the random layers */
	int nlayers;
	double op_cost[NOPS];
	double *base;                       /* by id */
	struct rfb_cost_model_info info;
};

/* Solve (A + ridge) x = b in place (n <= 16) by Gaussian elimination with
 * partial pivoting; a direction without data gets 0. */
static void solve(double *a, double *b, double *x, int n)
{
	double trace = 0;

	for (int i = 0; i < n; i++)
		trace += a[i * n + i];
	for (int i = 0; i < n; i++)
		a[i * n + i] += 1e-9 * (trace > 0 ? trace / n : 1) + 1e-30;
	for (int c = 0; c < n; c++) {
		int p = c;
		for (int r = c + 1; r < n; r++)
			if (fabs(a[r * n + c]) > fabs(a[p * n + c]))
				p = r;
		for (int k = 0; k < n; k++) {
			double t = a[c * n + k];
			a[c * n + k] = a[p * n + k];
			a[p * n + k] = t;
		}
		double t = b[c];
		b[c] = b[p];
		b[p] = t;
		for (int r = c + 1; r < n; r++) {
			double f = a[r * n + c] / a[c * n + c];
			for (int k = c; k < n; k++)
				a[r * n + k] -= f * a[c * n + k];
			b[r] -= f * b[c];
		}
	}
	for (int c = n - 1; c >= 0; c--) {
		double s = b[c];
		for (int k = c + 1; k < n; k++)
			s -= a[c * n + k] * x[k];
		x[c] = s / a[c * n + c];
	}
}

/* How many times each op is drawn by the random layers for (id, epoch). */
static void op_counts(const rfb_cost_model *m, uint32_t id, uint32_t epoch,
		      uint64_t seed, double *n)
{
	struct rfb_pipe_key key = { seed, epoch, id, RFB_STAGE_PARTIAL };

	memset(n, 0, NOPS * sizeof *n);
	for (int i = 0; i < m->nlayers; i++) {
		int op = rfb_pipeline_layer_op(m->pipe, m->layer[i], &key);
		if (op >= 0 && op < NOPS)
			n[op] += 1;
	}
}

static int cmp_entry(const void *x, const void *y)
{
	const struct rfb_cost_entry *a = x, *b = y;
	return a->id != b->id ? (a->id < b->id ? -1 : 1)
			      : (a->epoch < b->epoch ? -1 : a->epoch > b->epoch);
}

/* Op costs from the within-sample variations, then each measured
 * sample's base.  e is sorted by id.  Returns the measured count. */
static uint32_t fit_ops(rfb_cost_model *m, const struct rfb_cost_entry *e,
			size_t n, uint64_t seed, unsigned char *known)
{
	double A[NOPS * NOPS] = { 0 }, b[NOPS] = { 0 }, cnt[NOPS], mean[NOPS];
	uint32_t measured = 0;

	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0, j; i < n; i = j) {
			double y = 0;
			for (j = i; j < n && e[j].id == e[i].id; j++)
				y += e[j].cpu_us * 1e-6;
			y /= (double)(j - i);
			memset(mean, 0, sizeof mean);
			for (size_t k = i; k < j; k++) {
				op_counts(m, e[k].id, e[k].epoch, seed, cnt);
				for (int o = 0; o < NOPS; o++)
					mean[o] += cnt[o] / (double)(j - i);
			}
			if (pass == 1) {
				double ops = 0;
				for (int o = 0; o < NOPS; o++)
					ops += mean[o] * m->op_cost[o];
				m->base[e[i].id] = y - ops;
				known[e[i].id] = 1;
				measured++;
				continue;
			}
			for (size_t k = i; k < j; k++) {
				double d = e[k].cpu_us * 1e-6 - y;
				op_counts(m, e[k].id, e[k].epoch, seed, cnt);
				for (int o = 0; o < NOPS; o++)
					cnt[o] -= mean[o];
				for (int r = 0; r < NOPS; r++) {
					b[r] += cnt[r] * d;
					for (int c = 0; c < NOPS; c++)
						A[r * NOPS + c] += cnt[r] * cnt[c];
				}
			}
			if (pass == 0 && j == n)
				solve(A, b, m->op_cost, NOPS);
		}
	return measured;
}

static void features(const rfb_index *idx, uint32_t id, double *f)
{
	rfb_sample_info s;

	memset(f, 0, NFEAT * sizeof *f);
	if (rfb_index_get(idx, id, &s))
		return;
	f[0] = 1;
	f[1] = (double)s.width * s.height * 1e-6;
	f[2] = (double)s.bytes * 1e-6;
	f[3] = s.channels == 1;
	f[4] = s.subsampling == 2; /* TJSAMP_420 */
	f[5] = s.subsampling == 1; /* TJSAMP_422 */
}

/* Bases of the samples never measured: linear in the index's fields,
 * fitted on the measured ones. */
static void fit_unmeasured(rfb_cost_model *m, const rfb_index *idx,
			   const unsigned char *known)
{
	uint32_t n = rfb_index_count(idx);
	double A[NFEAT * NFEAT] = { 0 }, b[NFEAT] = { 0 }, beta[NFEAT], f[NFEAT];

	for (uint32_t id = 0; id < n; id++) {
		if (!known[id])
			continue;
		features(idx, id, f);
		for (int r = 0; r < NFEAT; r++) {
			b[r] += f[r] * m->base[id];
			for (int c = 0; c < NFEAT; c++)
				A[r * NFEAT + c] += f[r] * f[c];
		}
	}
	solve(A, b, beta, NFEAT);
	for (uint32_t id = 0; id < n; id++) {
		double y = 0;
		if (known[id])
			continue;
		features(idx, id, f);
		for (int r = 0; r < NFEAT; r++)
			y += beta[r] * f[r];
		m->base[id] = y > 0 ? y : m->info.base_mean;
	}
}

static int find_layers(rfb_cost_model *m, const char *spec, rfb_err *err)
{
	struct rfb_pipe_key key = { 0, 0, 0, RFB_STAGE_PARTIAL };
	int rc;

	if ((rc = rfb_pipeline_parse(spec, &m->pipe, err)))
		return rc;
	for (int l = 0; l < rfb_pipeline_layers(m->pipe); l++)
		if (rfb_pipeline_layer_op(m->pipe, l, &key) >= 0)
			m->layer[m->nlayers++] = l;
	m->info.random_layers = m->nlayers;
	return 0;
}

static int check_input(const rfb_costs *c, const rfb_index *idx, rfb_err *err)
{
	const struct rfb_costs_header *h = rfb_costs_header_of(c);
	const struct rfb_cost_entry *e = rfb_costs_entries(c);
	uint32_t n = rfb_index_count(idx);

	if (h->index_identity != rfb_index_identity(idx))
		return rfb_err_set(err, RFB_EMISMATCH, NULL,
				   "cost file made for another index");
	if (!rfb_costs_count(c))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "cost file has no measurement");
	for (size_t i = 0; i < rfb_costs_count(c); i++)
		if (e[i].id >= n)
			return rfb_err_set(err, RFB_EFORMAT, NULL,
					   "sample %u beyond the index's %u",
					   e[i].id, n);
	return 0;
}

rfb_cost_model *rfb_cost_model_fit(const rfb_costs *c, const rfb_index *idx,
				   rfb_err *err)
{
	uint32_t n = rfb_index_count(idx);
	size_t count = rfb_costs_count(c);
	struct rfb_cost_entry *e = NULL;
	unsigned char *known = NULL;
	rfb_cost_model *m = NULL;
	double sum = 0;

	if (check_input(c, idx, err))
		return NULL;
	if (!(m = calloc(1, sizeof *m)) ||
	    !(m->base = calloc((size_t)n + 1, sizeof *m->base)) ||
	    !(known = calloc((size_t)n + 1, 1)) ||
	    !(e = malloc(count * sizeof *e))) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	if (find_layers(m, rfb_costs_header_of(c)->pipeline, err))
		goto fail;
	memcpy(e, rfb_costs_entries(c), count * sizeof *e);
	qsort(e, count, sizeof *e, cmp_entry);
	m->info.samples = n;
	m->info.entries = count;
	m->info.measured = fit_ops(m, e, count, rfb_costs_header_of(c)->seed,
				   known);
	for (uint32_t id = 0; id < n; id++)
		sum += known[id] ? m->base[id] : 0;
	m->info.base_mean = sum / m->info.measured;
	fit_unmeasured(m, idx, known);
	memcpy(m->info.op_cost, m->op_cost, sizeof m->op_cost);
	free(e);
	free(known);
	return m;
fail:
	free(e);
	free(known);
	rfb_cost_model_free(m);
	return NULL;
}

void rfb_cost_model_free(rfb_cost_model *m)
{
	if (!m)
		return;
	rfb_pipeline_free(m->pipe);
	free(m->base);
	free(m);
}

void rfb_cost_model_info_of(const rfb_cost_model *m,
			    struct rfb_cost_model_info *info)
{
	*info = m->info;
}

double rfb_cost_model_predict(const rfb_cost_model *m, uint32_t id,
			      uint32_t epoch, uint64_t seed)
{
	struct rfb_pipe_key key = { seed, epoch, id, RFB_STAGE_PARTIAL };
	double y;

	if (id >= m->info.samples)
		return 0;
	y = m->base[id];
	for (int i = 0; i < m->nlayers; i++) {
		int op = rfb_pipeline_layer_op(m->pipe, m->layer[i], &key);
		if (op >= 0 && op < NOPS)
			y += m->op_cost[op];
	}
	return y > 0 ? y : 0;
}
