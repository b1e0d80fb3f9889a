/*
 * test_index_runs.c - refurb-index's records on temporary files: the
 * external sort (index_runs.c) gives exactly what qsort gives, whatever
 * the budget (in memory, one merge, merges in passes), keeps only the first
 * of equal records when asked, and makes no file when the records fit;
 * the spill (index_spill.c) gives back every record in order, in memory
 * and past its budget.  White-box: calls the functions of the internal
 * headers.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/index/index_runs_internal.h"
#include "../../lib/index/index_spill_internal.h"
#include "test.h"

static unsigned seed = 77;

static unsigned next(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

/* Records: a random text of 1 to max_len letters from a small alphabet
 * (so that many are equal), NUL-terminated in a table. */
static char **make_records(size_t n, size_t max_len, int letters)
{
	char **v = calloc(n ? n : 1, sizeof *v);

	for (size_t i = 0; v && i < n; i++) {
		size_t len = 1 + next() % max_len;
		if (!(v[i] = malloc(len + 1)))
			return NULL;
		for (size_t k = 0; k < len; k++)
			v[i][k] = (char)('a' + next() % (unsigned)letters);
		v[i][len] = 0;
	}
	return v;
}

static void free_records(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Entries of dir (not . and ..). */
static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* Sort n records under memory bytes; check the order against qsort and
 * that runs were (or were not) written; the runs' count in *runs. */
static void check_sort(size_t n, size_t memory, int unique, size_t *runs)
{
	char dir[] = "/tmp/test_index_runs.XXXXXX";
	char **v = make_records(n, 40, unique ? 3 : 26);
	rfb_err err = { 0 };
	struct rfbi_runs *r;
	const unsigned char *rec;
	size_t len, got = 0, want = 0;
	int rc, order_ok = 1;

	CHECK(v != NULL && mkdtemp(dir) != NULL);
	r = rfbi_runs_new(dir, memory, rfbi_runs_cmp_bytes, NULL, unique, &err);
	CHECK(r != NULL);
	if (!r || !v)
		return;
	for (size_t i = 0; i < n; i++)
		CHECK(rfbi_runs_put(r, v[i], strlen(v[i]), &err) == 0);
	qsort(v, n, sizeof *v, cmp_str);
	while ((rc = rfbi_runs_get(r, &rec, &len, &err)) == 1) {
		while (unique && want > 0 && want < n &&
		       !strcmp(v[want], v[want - 1]))
			want++;
		if (want >= n || len != strlen(v[want]) ||
		    memcmp(rec, v[want], len))
			order_ok = 0;
		want++;
		got++;
	}
	while (unique && want > 0 && want < n && !strcmp(v[want], v[want - 1]))
		want++;
	CHECKF(rc == 0, "get: %d %s", rc, err.msg);
	CHECKF(order_ok, "the order differs from qsort's (n %zu, memory %zu)",
	       n, memory);
	CHECKF(want == n, "%zu of %zu records given", want, n);
	CHECK(!unique ? got == n : got < n);
	CHECKF(count_files(dir) == 0, "a temporary file left in %s", dir);
	*runs = rfbi_runs_written(r);
	rfbi_runs_free(r);
	free_records(v, n);
	rmdir(dir);
}

static void test_sort_in_memory(void)
{
	size_t runs;

	check_sort(5000, 0, 0, &runs);
	CHECK(runs == 0);
	check_sort(5000, 1 << 20, 0, &runs);
	CHECK(runs == 0);
	check_sort(0, 4096, 0, &runs);
	CHECK(runs == 0);
}

static void test_sort_one_merge(void)
{
	size_t runs;

	/* 256 KiB: 16 readers of 16 KiB, fewer runs than that */
	check_sort(30000, 256 << 10, 0, &runs);
	CHECKF(runs > 1 && runs <= 16, "%zu runs", runs);
}

static void test_sort_merge_passes(void)
{
	size_t runs;

	/* 4 KiB: two readers at a time, hundreds of runs */
	check_sort(20000, 4096, 0, &runs);
	CHECKF(runs > 100, "%zu runs", runs);
}

static void test_sort_unique(void)
{
	size_t runs;

	check_sort(20000, 0, 1, &runs);
	check_sort(20000, 4096, 1, &runs);
	CHECKF(runs > 100, "%zu runs", runs);
}

/* Put n records of up to max_len bytes in a spill of memory bytes, read
 * them back; *files: the temporary files it had open. */
static void check_spill(size_t n, size_t max_len, size_t memory, int *files)
{
	char dir[] = "/tmp/test_index_spill.XXXXXX";
	char **v = make_records(n, max_len, 26);
	rfb_err err = { 0 };
	struct rfbi_spill *s;
	const unsigned char *rec;
	size_t len, i = 0;
	int rc, same = 1;

	CHECK(v != NULL && mkdtemp(dir) != NULL);
	s = rfbi_spill_new(dir, memory, &err);
	CHECK(s != NULL);
	if (!s || !v)
		return;
	for (size_t k = 0; k < n; k++)
		CHECK(rfbi_spill_put(s, v[k], strlen(v[k]), &err) == 0);
	CHECK(rfbi_spill_rewind(s, &err) == 0);
	while ((rc = rfbi_spill_get(s, &rec, &len, &err)) == 1) {
		if (i >= n || len != strlen(v[i]) || memcmp(rec, v[i], len))
			same = 0;
		i++;
	}
	CHECKF(rc == 0, "get: %d %s", rc, err.msg);
	CHECKF(same && i == n, "%zu of %zu records back, same %d", i, n, same);
	*files = count_files("/proc/self/fd");
	rfbi_spill_free(s);
	*files -= count_files("/proc/self/fd");
	CHECK(count_files(dir) == 0);
	free_records(v, n);
	rmdir(dir);
}

static void test_spill(void)
{
	int files;

	check_spill(10000, 30, 0, &files);        /* no limit: memory */
	CHECK(files == 0);
	check_spill(100000, 60, 64 << 20, &files); /* several 1 MiB blocks */
	CHECK(files == 0);
	check_spill(10000, 30, 4096, &files);     /* a file */
	CHECK(files == 1);
	check_spill(50, 6000, 4096, &files);      /* records past the budget */
	CHECK(files == 1);
	check_spill(0, 1, 4096, &files);
	CHECK(files == 0);
}

int main(void)
{
	RUN(test_sort_in_memory);
	RUN(test_sort_one_merge);
	RUN(test_sort_merge_passes);
	RUN(test_sort_unique);
	RUN(test_spill);
	return test_done();
}
