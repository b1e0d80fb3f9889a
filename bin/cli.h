/*
 * cli.h - what every refurb program shares: the common options, error
 * reporting in the house format, number parsing, the binary-output guard
 * and the progress meter.  This is program support, not library: it
 * prints and exits, which lib/ never does.
 */
#ifndef REFURB_CLI_H
#define REFURB_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "refurb/enum.h"
#include "refurb/error.h"

/* Long-only option codes start here; programs use values above 0x2000. */
enum { CLI_OPT_PROGRESS = 0x1000 };

/* Short and long forms of the options every program accepts. */
#define CLI_COMMON_SHORTOPTS "hVqj:"
#define CLI_COMMON_LONGOPTS                                              \
	{ "help", no_argument, NULL, 'h' },                              \
	{ "version", no_argument, NULL, 'V' },                           \
	{ "quiet", no_argument, NULL, 'q' },                             \
	{ "progress", no_argument, NULL, CLI_OPT_PROGRESS },             \
	{ "threads", required_argument, NULL, 'j' }

/* The text of the common options, for --help. */
#define CLI_COMMON_HELP                                                  \
	"  -j, --threads N    worker threads (default: number of CPUs)\n"   \
	"  -q, --quiet        no progress, no summary\n"                     \
	"      --progress     show progress even when stderr is not a terminal\n" \
	"  -h, --help         show this help and exit\n"                     \
	"  -V, --version      show the version and exit\n"

struct cli {
	const char *prog;   /* program name for messages */
	const char *usage;  /* one-line usage, shown with usage errors */
	const char *help;   /* full --help text (after the usage line) */
	int quiet;
	int progress;       /* 1 if the meter is shown */
	int threads;        /* -j, default online CPUs */
	double start;       /* rfb_now() at cli_init */
	double last_draw;   /* when the meter was last drawn */
	int drawn;          /* a meter line is on screen */
};

/*
 * SIGINT and SIGTERM: the first sets cli_stop_signal, which the program
 * passes to the library to stop at its next batch (checkpointed, one
 * line saying how to resume, exit 128 + the signal).  If that takes more
 * than CLI_STOP_WAIT seconds (blocked on a pipe), or at a second signal,
 * the line set last with cli_set_stop_line is printed and the program
 * exits at once with the same status (the cache is crash-safe).
 */
#define CLI_STOP_WAIT 5
extern volatile sig_atomic_t cli_stop_signal;
void cli_catch_stop_signals(void);
void cli_set_stop_line(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* "SIGINT" or "SIGTERM" */
const char *cli_signal_name(int sig);

/* Set defaults: progress shown iff stderr is a terminal. */
/* For the programs that stream images (refurb-partial, refurb-final):
 * keep freed memory in the process instead of giving it back to the
 * kernel and taking it again, zeroed page by page, for the next image
 * (glibc's trim and mmap thresholds; nothing elsewhere). */
void cli_keep_freed_memory(void);

void cli_init(struct cli *c, const char *prog, const char *usage,
	      const char *help);

/*
 * Handle opt if it is a common option (exiting for --help/--version).
 * Returns 1 if handled, 0 if the program must handle it.  An unknown
 * option ('?') becomes a usage error.
 */
int cli_common_option(struct cli *c, int opt, const char *arg);

/* Print "PROG: message" and the usage line on stderr, exit 2. */
void cli_usage_error(const struct cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Print "PROG: message" on stderr and exit 1. */
void cli_die(const struct cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Print "PROG: PATH: reason" from a library error context and exit 1. */
void cli_die_err(const struct cli *c, const rfb_err *err)
	__attribute__((noreturn));

/* Print "PROG: message" on stderr (clearing the meter first). */
void cli_warn(struct cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "PROG: PATH: reason" from err on stderr, continue. */
void cli_warn_err(struct cli *c, const rfb_err *err);

/* Parse an unsigned integer in [min, max] or exit with a usage error
 * naming the option. */
uint64_t cli_parse_u64(const struct cli *c, const char *opt, const char *arg,
		       uint64_t min, uint64_t max);

/* The value of arg among the names of an enum (enum.h: aliases
 * accepted), or exit with a usage error listing its canonical names
 * ("OPT: 'ARG' is not A, B or C"). */
int cli_parse_enum(const struct cli *c, const char *opt, const char *arg,
		   const struct rfb_enum_name *names);

/* --max-pixels N of the programs that run pipelines: the largest image
 * decoded or made by any layer (refurb-pipeline(7), MEMORY). */
#define CLI_MAX_PIXELS_HELP \
	"      --max-pixels N     the largest image decoded or made by any\n" \
	"                         layer, in pixels (default 100000000)\n"

/* Parse --max-pixels N (1 to 65535 x 65535) or exit with a usage error. */
uint64_t cli_parse_max_pixels(const struct cli *c, const char *arg);

/* Parse "K/N" (0 <= K < N) for --shard, or exit with a usage error. */
void cli_parse_shard(const struct cli *c, const char *arg, uint32_t *k,
		     uint32_t *n);

/* Parse "A-B" or "A" (A <= B) for --epochs, or exit with a usage error. */
void cli_parse_range(const struct cli *c, const char *opt, const char *arg,
		     uint32_t *first, uint32_t *last);

/*
 * Refuse to write binary data to a terminal unless force is set: exits
 * with a usage error when fd is a tty.
 */
void cli_refuse_tty(const struct cli *c, int fd, int force);

/*
 * Open path for writing ("-" = stdout); exits with an error on failure.
 * Binary output to a terminal is refused (see cli_refuse_tty).
 */
FILE *cli_open_output(const struct cli *c, const char *path, int binary,
		      int force);

/*
 * The single operand the program takes (argv[optind]), or a usage error:
 * "no WHAT given" / "give one WHAT".
 */
const char *cli_one_operand(const struct cli *c, int argc, char **argv,
			    const char *what);

/*
 * Open path for reading (out = 0) or writing (out = 1, created or
 * truncated); "-" and NULL are stdin/stdout.  Binary output to a terminal
 * is refused unless force.  Exits with an error naming path on failure.
 */
int cli_open_fd(const struct cli *c, const char *path, int out, int force);

/* Close f (stdout too), exiting with an error if anything failed to be
 * written (full disk, closed pipe). */
void cli_close_output(const struct cli *c, FILE *f, const char *path);

/* Redraw the meter (at most 5 times a second) for count of total units
 * (total 0 = unknown). */
void cli_progress(struct cli *c, uint64_t count, uint64_t total,
		  const char *unit);

/* Clear the meter line, if one is shown. */
void cli_progress_clear(struct cli *c);

#endif
