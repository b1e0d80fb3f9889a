/*
 * dump_index.c - refurb-dump on an index: the TSV listing (which
 * refurb-index --from-tsv reads back) and the --stats summary.
 */
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "refurb/index.h"
#include "refurb/source.h"

#define MAX_EXTRACT ((size_t)1 << 30)

static void print_tsv(const rfb_index *idx, FILE *out)
{
	uint32_t n = rfb_index_count(idx), shards = rfb_index_shard_count(idx);

	fputs("# root\t", out);
	dump_tsv_field(out, rfb_index_root(idx));
	for (uint32_t c = 0; c < rfb_index_class_count(idx); c++) {
		fprintf(out, "\n# class\t%u\t", c);
		dump_tsv_field(out, rfb_index_class_name(idx, c));
	}
	for (uint32_t k = 1; k <= shards; k++) {
		rfb_shard_info sh;
		(void)rfb_index_shard(idx, k, &sh);
		fprintf(out, "\n# shard\t%u\t%llu\t%lld\t", k,
			(unsigned long long)sh.size, (long long)sh.mtime_ns);
		dump_tsv_field(out, sh.path);
	}
	fputs("\n", out);
	fprintf(out, "# id\tlabel\tclass\tbytes\twidth\theight\tchannels\tpath%s\n",
		shards ? "\tshard\toffset" : "");
	for (uint32_t i = 0; i < n; i++) {
		rfb_sample_info s;
		if (rfb_index_get(idx, i, &s))
			continue; /* i < n: never */
		fprintf(out, "%u\t%u\t", i, s.label);
		dump_tsv_field(out, rfb_index_class_name(idx, s.label));
		fprintf(out, "\t%llu\t%u\t%u\t%u\t", (unsigned long long)s.bytes,
			s.width, s.height, s.channels);
		dump_tsv_field(out, s.path);
		if (shards)
			fprintf(out, "\t%u\t%llu", s.shard,
				(unsigned long long)s.offset);
		putc('\n', out);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One line of distribution: min, quartiles, p90, max, mean. */
static void print_distribution(FILE *out, const char *what, uint64_t *v,
			       size_t n, double scale, const char *unit)
{
	double sum = 0;

	qsort(v, n, sizeof *v, cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	fprintf(out, "%-12s min %.4g  p25 %.4g  median %.4g  p75 %.4g  p90 %.4g"
		"  max %.4g  mean %.4g %s\n", what, v[0] * scale,
		v[n / 4] * scale, v[n / 2] * scale, v[n * 3 / 4] * scale,
		v[n * 9 / 10] * scale, v[n - 1] * scale, sum / n * scale, unit);
}

/* Samples per class: the table, then its distribution (which sorts). */
static void print_classes(const rfb_index *idx, uint64_t *per_class,
			  FILE *out)
{
	uint32_t nc = rfb_index_class_count(idx);

	fprintf(out, "# label\tclass\tsamples\n");
	for (uint32_t c = 0; c < nc; c++) {
		fprintf(out, "%u\t", c);
		dump_tsv_field(out, rfb_index_class_name(idx, c));
		fprintf(out, "\t%llu\n", (unsigned long long)per_class[c]);
	}
	if (nc)
		print_distribution(out, "per class", per_class, nc, 1, "samples");
}

static int print_stats(const rfb_index *idx, FILE *out)
{
	uint32_t n = rfb_index_count(idx), nc = rfb_index_class_count(idx);
	uint64_t *bytes = malloc((n ? n : 1) * sizeof *bytes);
	uint64_t *pixels = malloc((n ? n : 1) * sizeof *pixels);
	uint64_t *per_class = calloc(nc ? nc : 1, sizeof *per_class);
	uint64_t chans[5] = { 0 };
	int rc = -1;

	if (!bytes || !pixels || !per_class)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		rfb_sample_info s;
		if (rfb_index_get(idx, i, &s))
			goto fail; /* i < n: never */
		bytes[i] = s.bytes;
		pixels[i] = (uint64_t)s.width * s.height;
		per_class[s.label]++;
		chans[s.channels <= 4 ? s.channels : 0]++;
	}
	fprintf(out, "samples      %u\nclasses      %u\nidentity     %016llx\n"
		"root         %s\nversion      %u\nshards       %u\n", n, nc,
		(unsigned long long)rfb_index_identity(idx), rfb_index_root(idx),
		rfb_index_version(idx), rfb_index_shard_count(idx));
	fprintf(out, "channels     gray %llu  color %llu  cmyk %llu\n",
		(unsigned long long)chans[1], (unsigned long long)chans[3],
		(unsigned long long)chans[4]);
	if (n) {
		print_distribution(out, "bytes", bytes, n, 1.0 / 1024, "KiB");
		print_distribution(out, "pixels", pixels, n, 1e-6, "Mpx");
	}
	print_classes(idx, per_class, out);
	rc = 0;
fail:
	free(bytes);
	free(pixels);
	free(per_class);
	return rc;
}

/* --extract ID: the sample's bytes as stored (its file, or its range of
 * its shard: one pread). */
static void extract(struct cli *c, const rfb_index *idx, uint32_t id, FILE *out)
{
	rfb_err err = { 0 };
	rfb_source *src = rfb_source_open(idx, NULL, &err);
	unsigned char *buf = NULL;
	size_t cap = 0, len = 0;

	if (!src || rfb_source_read(src, id, MAX_EXTRACT, &buf, &cap, &len, &err))
		cli_die_err(c, &err);
	cli_refuse_tty(c, fileno(out), 0);
	if (fwrite(buf, 1, len, out) != len)
		cli_die(c, "write failed");
	free(buf);
	rfb_source_close(src);
}

int dump_index(struct cli *c, const char *path, const struct dump_opts *o,
	       FILE *out)
{
	rfb_err err = { 0 };
	rfb_index *idx = rfb_index_open(path, &err);
	int rc = 0;

	if (!idx)
		cli_die_err(c, &err);
	if (o->extract >= 0 && o->extract >= rfb_index_count(idx))
		cli_die(c, "%s: no sample %lld (the index has %u)", path,
			o->extract, rfb_index_count(idx));
	if (o->extract >= 0)
		extract(c, idx, (uint32_t)o->extract, out);
	else if (o->stats)
		rc = print_stats(idx, out);
	else
		print_tsv(idx, out);
	rfb_index_close(idx);
	if (rc)
		cli_die(c, "%s: out of memory", path);
	return 0;
}
