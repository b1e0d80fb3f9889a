/*
 * dump_index.c - refurb-dump on an index: the TSV listing (which
 * refurb-index --from-tsv reads back) and the --stats summary.
 */
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "refurb/index.h"

static void print_tsv(const rfb_index *idx, FILE *out)
{
	uint32_t n = rfb_index_count(idx);

	fputs("# root\t", out);
	dump_tsv_field(out, rfb_index_root(idx));
	for (uint32_t c = 0; c < rfb_index_class_count(idx); c++) {
		fprintf(out, "\n# class\t%u\t", c);
		dump_tsv_field(out, rfb_index_class_name(idx, c));
	}
	fputs("\n", out);
	fprintf(out, "# id\tlabel\tclass\tbytes\twidth\theight\tchannels\tpath\n");
	for (uint32_t i = 0; i < n; i++) {
		rfb_sample_info s;
		if (rfb_index_get(idx, i, &s))
			continue; /* i < n: never */
		fprintf(out, "%u\t%u\t", i, s.label);
		dump_tsv_field(out, rfb_index_class_name(idx, s.label));
		fprintf(out, "\t%llu\t%u\t%u\t%u\t", (unsigned long long)s.bytes,
			s.width, s.height, s.channels);
		dump_tsv_field(out, s.path);
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
		"root         %s\n", n, nc,
		(unsigned long long)rfb_index_identity(idx), rfb_index_root(idx));
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

int dump_index(struct cli *c, const char *path, const struct dump_opts *o,
	       FILE *out)
{
	rfb_err err = { 0 };
	rfb_index *idx = rfb_index_open(path, &err);
	int rc = 0;

	if (!idx)
		cli_die_err(c, &err);
	if (o->stats)
		rc = print_stats(idx, out);
	else
		print_tsv(idx, out);
	rfb_index_close(idx);
	if (rc)
		cli_die(c, "%s: out of memory", path);
	return 0;
}
