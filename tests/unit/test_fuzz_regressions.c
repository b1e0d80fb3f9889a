/*
 * test_fuzz_regressions.c - the fuzz targets of tests/fuzz/ on the saved
 * inputs, with the normal build (and under `make asan`).
 *
 * Every target (compiled in here with FUZZ_NO_MAIN: only its body) runs
 * on every file of tests/fuzz/regressions/NAME/ - the inputs the fuzzers
 * found crashing, leaking or breaking an invariant, kept after the fix -
 * which must now pass the target's checks, and on every seed of
 * tests/fuzz/corpus/NAME/ (tests/fuzz/make-corpus), which the reader must
 * also accept as a whole, except the seeds named bad-*, which it must
 * reject (a JPEG bomb ...).  A target's check that fails aborts this
 * program, which tests/run counts as a failure.
 */
#include <dirent.h>
#include <sys/resource.h>

#define FUZZ_NO_MAIN
#include "../fuzz/fuzz_checkpoint.c"
#include "../fuzz/fuzz_costs.c"
#include "../fuzz/fuzz_index.c"
#include "../fuzz/fuzz_jpeg.c"
#include "../fuzz/fuzz_json.c"
#include "../fuzz/fuzz_manifest.c"
#include "../fuzz/fuzz_pipeline.c"
#include "../fuzz/fuzz_plan.c"
#include "../fuzz/fuzz_png.c"
#include "../fuzz/fuzz_record.c"
#include "../fuzz/fuzz_evict.c"
#include "../fuzz/fuzz_stream.c"
#include "../fuzz/fuzz_tar.c"
#include "refurb/io.h"
#include "test.h"

#define FUZZ_DIR "tests/fuzz/"

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the regular files in dir (NULL-terminated, malloc'ed);
 * *n = their number (0 if dir does not exist). */
static char **list_files(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t cap = 0;

	*n = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (*n + 1 >= cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof *names);
			if (!names)
				abort();
		}
		names[(*n)++] = strdup(e->d_name);
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(names, *n, sizeof *names, by_name);
	return names;
}

/* Run fn on every file of FUZZ_DIR kind/name; returns how many there
 * were, *accepted = how many of them the reader accepted. */
static size_t replay(const char *kind, const char *name,
		     int (*fn)(const uint8_t *, size_t), size_t *accepted)
{
	char dir[256], path[512];
	size_t n;
	char **files;

	snprintf(dir, sizeof dir, FUZZ_DIR "%s/%s", kind, name);
	files = list_files(dir, &n);
	*accepted = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char *data;
		size_t len;
		rfb_err err = { 0 };

		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		if (rfb_file_load(path, (size_t)1 << 26, &data, &len, &err)) {
			CHECKF(0, "%s: %s", path, err.msg);
			free(files[i]);
			continue;
		}
		int ok = fn(data, len);
		*accepted += (size_t)ok;
		if (strcmp(kind, "corpus") == 0 &&
		    ok == (strncmp(files[i], "bad-", 4) == 0))
			CHECKF(0, "seed %s is %s", path,
			       ok ? "accepted" : "rejected");
		free(files[i]);
		free(data);
	}
	free(files);
	return n;
}

static void run_target(const char *name, int (*fn)(const uint8_t *, size_t))
{
	size_t seeds, regressions, ok_seeds, ok_regressions;

	seeds = replay("corpus", name, fn, &ok_seeds);
	regressions = replay("regressions", name, fn, &ok_regressions);
	printf("# %s: %zu seeds, %zu regression inputs (%zu accepted)\n",
	       name, seeds, regressions, ok_regressions);
	CHECKF(seeds >= 3 && ok_seeds >= 3, "%s: only %zu seeds (%zu valid) "
	       "in " FUZZ_DIR "corpus/%s", name, seeds, ok_seeds, name);
}

#define TARGET_TEST(name)                                                  \
	static void test_##name(void) { run_target(#name, fuzz_##name); }

TARGET_TEST(index)
TARGET_TEST(evict)
TARGET_TEST(plan)
TARGET_TEST(record)
TARGET_TEST(manifest)
TARGET_TEST(checkpoint)
TARGET_TEST(pipeline)
TARGET_TEST(stream)
TARGET_TEST(jpeg)
TARGET_TEST(png)
TARGET_TEST(costs)
TARGET_TEST(tar)
TARGET_TEST(json)

/* Without AddressSanitizer (which maps terabytes of shadow), cap the
 * address space: an allocation sized by what an input claims then fails
 * with RFB_ENOMEM, which the targets count as a finding, as libFuzzer's
 * -malloc_limit_mb does. */
static void cap_memory(void)
{
#ifndef __SANITIZE_ADDRESS__
	struct rlimit lim;

	if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur > ((rlim_t)4 << 30)) {
		lim.rlim_cur = (rlim_t)4 << 30;
		setrlimit(RLIMIT_AS, &lim);
	}
#endif
}

int main(void)
{
	cap_memory();
	RUN(test_index);
	RUN(test_evict);
	RUN(test_costs);
	RUN(test_plan);
	RUN(test_record);
	RUN(test_manifest);
	RUN(test_checkpoint);
	RUN(test_pipeline);
	RUN(test_stream);
	RUN(test_jpeg);
	RUN(test_png);
	RUN(test_tar);
	RUN(test_json);
	return test_done();
}
