/*
 * dump_evict.c - refurb-dump on an eviction schedule: the TSV listing
 * (sample id, phase) and the --stats summary with the phase histogram.
 */
#include <stdlib.h>

#include "dump.h"
#include "refurb/evict.h"

static void print_tsv(const rfb_evict *s, FILE *out)
{
	const uint32_t *ids = rfb_evict_ids(s);
	const uint16_t *phases = rfb_evict_phases(s);

	for (uint32_t i = 0; i < rfb_evict_count(s); i++)
		fprintf(out, "%u\t%u\n", ids[i], phases[i]);
}

/* "1, 4, 7, ..." : the first epochs in which phase p is evicted. */
static void print_evictions(FILE *out, uint32_t p, uint32_t r)
{
	uint64_t e = (uint64_t)p + 1;

	for (int i = 0; i < 3; i++, e += r)
		fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)e);
	fputs(", ...\n", out);
}

static int print_stats(const rfb_evict *s, FILE *out)
{
	const rfb_evict_params *p = rfb_evict_params_of(s);
	uint32_t n = rfb_evict_count(s), r = p->reuse;
	uint32_t lo = n / r, hi = lo + (n % r != 0);
	uint32_t *hist = calloc(r, sizeof *hist);

	if (!hist)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		hist[rfb_evict_phases(s)[i]]++;
	fprintf(out, "schedule     %016llx\nindex        %016llx (%u samples)\n"
		"shard        %u/%u\nsamples      %u\nreuse        %u\n"
		"policy       %s\nseed         %llu\n",
		(unsigned long long)rfb_evict_identity(s),
		(unsigned long long)p->index_identity, p->total, p->shard_index,
		p->shard_count, n, r, rfb_evict_policy_name(p->policy),
		(unsigned long long)p->seed);
	if (p->policy == RFB_EVICT_REFCOUNT)
		fprintf(out, "misses       %u in epochs 0, %u, %u, ..., none in "
			"the others\n", n, r, 2 * r);
	else if (lo == hi)
		fprintf(out, "misses       %u in epoch 0, then %u in every "
			"epoch\n", n, lo);
	else
		fprintf(out, "misses       %u in epoch 0, then %u or %u in every "
			"epoch\n", n, lo, hi);
	fprintf(out, "# phase\tsamples\tevicted at the start of epochs\n");
	for (uint32_t c = 0; c < r; c++) {
		if (!hist[c])
			continue;
		fprintf(out, "%u\t%u\t", c, hist[c]);
		print_evictions(out, c, r);
	}
	free(hist);
	return 0;
}

int dump_evict(struct cli *c, const char *path, const struct dump_opts *o,
		  FILE *out)
{
	rfb_err err = { 0 };
	rfb_evict *s = rfb_evict_open(path, &err);
	int rc = 0;

	if (!s)
		cli_die_err(c, &err);
	if (o->stats)
		rc = print_stats(s, out);
	else
		print_tsv(s, out);
	rfb_evict_free(s);
	if (rc)
		cli_die(c, "%s: out of memory", path);
	return 0;
}
