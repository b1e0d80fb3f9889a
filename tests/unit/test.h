/*
 * test.h - a tiny unit-test harness printing TAP.
 *
 *   static void test_something(void) { CHECK(1 + 1 == 2); }
 *   static void test_other(void) { if (!have_it()) SKIP("no it"); ... }
 *   int main(void) { RUN(test_something); return test_done(); }
 */
#ifndef REFURB_TEST_H
#define REFURB_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_count, test_failed_count, test_current_failed;
static const char *test_prefix = "";
static const char *test_skip_reason;

/* SKIP("why"): return from the current test, which TAP reports as
 * `ok N - name # SKIP why` (tests/run counts it as skipped). */
#define SKIP(why)                                                          \
	do {                                                               \
		test_skip_reason = (why);                                  \
		return;                                                    \
	} while (0)

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("# %s:%d: CHECK(%s) failed\n", __FILE__,   \
			       __LINE__, #cond);                           \
			test_current_failed = 1;                           \
		}                                                          \
	} while (0)

/* CHECK with a printf-style diagnostic when it fails. */
#define CHECKF(cond, ...)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("# %s:%d: CHECK(%s) failed: ", __FILE__,   \
			       __LINE__, #cond);                           \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			test_current_failed = 1;                           \
		}                                                          \
	} while (0)

static inline void test_run(const char *name, void (*fn)(void))
{
	test_current_failed = 0;
	test_skip_reason = NULL;
	fn();
	test_count++;
	if (test_current_failed)
		test_failed_count++;
	printf("%s %d - %s%s", test_current_failed ? "not ok" : "ok",
	       test_count, test_prefix, name);
	if (test_skip_reason && !test_current_failed)
		printf(" # SKIP %s", test_skip_reason);
	printf("\n");
	fflush(stdout);
}

#define RUN(fn) test_run(#fn, fn)

static inline int test_done(void)
{
	printf("1..%d\n", test_count);
	return test_failed_count ? 1 : 0;
}

#endif
