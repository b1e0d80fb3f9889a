/*
 * cli.c - options, messages and progress shared by the refurb programs
 * (see cli.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/progress.h"
#include "refurb/refurb.h"

volatile sig_atomic_t cli_stop_signal;
static char stop_lines[2][1024];
static volatile sig_atomic_t stop_line_current;

void cli_set_stop_line(const char *fmt, ...)
{
	int next = !stop_line_current;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(stop_lines[next], sizeof stop_lines[next], fmt, ap);
	va_end(ap);
	stop_line_current = next;  /* the handler reads a complete line */
}

const char *cli_signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

/* Async-signal-safe: write the last stop line and leave. */
static void stop_now(int sig)
{
	const char *line = stop_lines[stop_line_current];
	int status = 128 + (cli_stop_signal ? cli_stop_signal : sig);

	if (write(STDERR_FILENO, line, strlen(line)) < 0) {
		/* nothing left to tell */
	}
	_exit(status);
}

static void on_stop_signal(int sig)
{
	if (cli_stop_signal)
		stop_now(sig);
	cli_stop_signal = sig;
	alarm(CLI_STOP_WAIT);
}

void cli_catch_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = stop_now;
	sigaction(SIGALRM, &sa, NULL);
}

/* stdout is an anonymous pipe (a program in the middle of a chain), not a
 * named FIFO, a file or a terminal. */
static int stdout_is_pipe(void)
{
	char link[64];
	ssize_t n = readlink("/proc/self/fd/1", link, sizeof link - 1);

	if (n <= 0)
		return 0;
	link[n] = '\0';
	return strncmp(link, "pipe:", 5) == 0;
}

void cli_init(struct cli *c, const char *prog, const char *usage,
	      const char *help)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(c, 0, sizeof *c);
	c->prog = prog;
	c->usage = usage;
	c->help = help;
	/* in a chain, only the last program draws a meter: the lines of
	 * programs writing into a pipe would interleave on one terminal */
	c->progress = isatty(STDERR_FILENO) && !stdout_is_pipe();
	c->threads = cpus > 0 ? (int)cpus : 1;
	c->start = rfb_now();
}

int cli_common_option(struct cli *c, int opt, const char *arg)
{
	switch (opt) {
	case 'h':
		printf("Usage: %s\n%s", c->usage, c->help);
		exit(fflush(stdout) == 0 ? 0 : 1);
	case 'V':
		printf("%s (refurb) %s\n", c->prog, RFB_VERSION);
		exit(fflush(stdout) == 0 ? 0 : 1);
	case 'q':
		c->quiet = 1;
		c->progress = 0;
		return 1;
	case CLI_OPT_PROGRESS:
		c->progress = 1;
		return 1;
	case 'j':
		c->threads = (int)cli_parse_u64(c, "--threads", arg, 1, 256);
		return 1;
	case '?':
		/* getopt already named the bad option */
		fprintf(stderr, "Usage: %s\nTry '%s --help'.\n", c->usage,
			c->prog);
		exit(2);
	}
	return 0;
}

void cli_usage_error(const struct cli *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nUsage: %s\nTry '%s --help'.\n", c->usage, c->prog);
	exit(2);
}

void cli_die(const struct cli *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void cli_die_err(const struct cli *c, const rfb_err *err)
{
	char text[1100];

	cli_die(c, "%s", rfb_err_text(err, text, sizeof text));
}

void cli_warn(struct cli *c, const char *fmt, ...)
{
	va_list ap;

	cli_progress_clear(c);
	fprintf(stderr, "%s: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_warn_err(struct cli *c, const rfb_err *err)
{
	char text[1100];

	cli_warn(c, "%s", rfb_err_text(err, text, sizeof text));
}

uint64_t cli_parse_u64(const struct cli *c, const char *opt, const char *arg,
		       uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!arg || !*arg || *arg == '-' || *arg == '+')
		cli_usage_error(c, "%s: '%s' is not a number", opt,
				arg ? arg : "");
	v = strtoull(arg, &end, 10);
	if (*end)
		cli_usage_error(c, "%s: '%s' is not a number", opt, arg);
	if (errno == ERANGE || v < min || v > max)
		cli_usage_error(c, "%s: %s is out of range (%llu to %llu)", opt,
				arg, (unsigned long long)min,
				(unsigned long long)max);
	return v;
}

int cli_parse_enum(const struct cli *c, const char *opt, const char *arg,
		   const struct rfb_enum_name *names)
{
	const char *canon[16];
	char list[256] = "";
	int v = rfb_enum_parse(names, arg), k = 0;
	size_t n = 0;

	if (v >= 0)
		return v;
	/* an alias is not the first name of its value */
	for (const struct rfb_enum_name *e = names; e->name && k < 16; e++)
		if (rfb_enum_name(names, e->value) == e->name)
			canon[k++] = e->name;
	for (int i = 0; i < k && n < sizeof list; i++)
		n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
				      i == 0 ? "" : i == k - 1 ? " or " : ", ",
				      canon[i]);
	cli_usage_error(c, "%s: '%s' is not %s", opt, arg ? arg : "", list);
}

uint64_t cli_parse_max_pixels(const struct cli *c, const char *arg)
{
	return cli_parse_u64(c, "--max-pixels", arg, 1,
			     (uint64_t)RFB_IMAGE_MAX_SIDE * RFB_IMAGE_MAX_SIDE);
}

void cli_parse_shard(const struct cli *c, const char *arg, uint32_t *k,
		     uint32_t *n)
{
	char buf[64];
	char *slash;

	if (strlen(arg) >= sizeof buf || !(slash = strchr(arg, '/')))
		cli_usage_error(c, "--shard: '%s' is not K/N", arg);
	snprintf(buf, sizeof buf, "%.*s", (int)(slash - arg), arg);
	*k = (uint32_t)cli_parse_u64(c, "--shard", buf, 0, UINT32_MAX - 1);
	*n = (uint32_t)cli_parse_u64(c, "--shard", slash + 1, 1, UINT32_MAX);
	if (*k >= *n)
		cli_usage_error(c, "--shard: '%s': K must be less than N "
				"(shards are numbered 0 to N-1)", arg);
}

void cli_parse_range(const struct cli *c, const char *opt, const char *arg,
		     uint32_t *first, uint32_t *last)
{
	char buf[64];
	const char *dash = strchr(arg, '-');

	if (strlen(arg) >= sizeof buf)
		cli_usage_error(c, "%s: '%s' is not a range A-B", opt, arg);
	if (!dash) {
		*first = *last = (uint32_t)cli_parse_u64(c, opt, arg, 0,
							  UINT32_MAX - 1);
		return;
	}
	snprintf(buf, sizeof buf, "%.*s", (int)(dash - arg), arg);
	*first = (uint32_t)cli_parse_u64(c, opt, buf, 0, UINT32_MAX - 1);
	*last = (uint32_t)cli_parse_u64(c, opt, dash + 1, 0, UINT32_MAX - 1);
	if (*last < *first)
		cli_usage_error(c, "%s: '%s' is reversed (A-B needs A <= B)",
				opt, arg);
}

void cli_refuse_tty(const struct cli *c, int fd, int force)
{
	if (!force && isatty(fd))
		cli_usage_error(c, "refusing to write binary data to a terminal "
				"(redirect it, or use -o FILE)");
}

FILE *cli_open_output(const struct cli *c, const char *path, int binary,
		      int force)
{
	FILE *f;

	if (strcmp(path, "-") == 0) {
		if (binary)
			cli_refuse_tty(c, STDOUT_FILENO, force);
		return stdout;
	}
	f = fopen(path, binary ? "wb" : "w");
	if (!f)
		cli_die(c, "%s: cannot create: %s", path, strerror(errno));
	return f;
}

const char *cli_one_operand(const struct cli *c, int argc, char **argv,
			    const char *what)
{
	if (optind >= argc)
		cli_usage_error(c, "no %s given", what);
	if (optind != argc - 1)
		cli_usage_error(c, "give one %s", what);
	return argv[optind];
}

static int is_fifo(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* A FIFO waits for the other end: say so after CLI_STOP_WAIT seconds
 * instead of waiting without a word (a trainer not started, or a chain
 * that died before its output). */
static int open_fifo(const struct cli *c, const char *path, int out)
{
	double start = rfb_now();
	int said = 0, fd;

	for (;;) {
		fd = open(path, (out ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && !out) {
			/* a reader opens at once: wait for a writer's bytes */
			struct pollfd p = { fd, POLLIN, 0 };
			if (poll(&p, 1, said ? -1 : CLI_STOP_WAIT * 1000) > 0)
				break;
			close(fd);
			fd = -1;
			errno = ENXIO;
		}
		if (fd >= 0)
			break;
		if (errno != ENXIO && errno != EINTR)
			cli_die(c, "%s: cannot open: %s", path, strerror(errno));
		if (!said && rfb_now() - start >= CLI_STOP_WAIT) {
			fprintf(stderr, "%s: %s: waiting for a %s to open this FIFO\n",
				c->prog, path, out ? "reader (the trainer)"
						   : "writer");
			said = 1;
		}
		if (cli_stop_signal)
			stop_now(cli_stop_signal); /* says so, as later stops do */
		usleep(20000);
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		cli_die(c, "%s: cannot open: %s", path, strerror(errno));
	return fd;
}

int cli_open_fd(const struct cli *c, const char *path, int out, int force)
{
	int fd;

	if (!path || strcmp(path, "-") == 0) {
		if (out)
			cli_refuse_tty(c, STDOUT_FILENO, force);
		return out ? STDOUT_FILENO : STDIN_FILENO;
	}
	if (is_fifo(path))
		return open_fifo(c, path, out);
	fd = out ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
		 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		cli_die(c, "%s: cannot open: %s", path, strerror(errno));
	return fd;
}

void cli_close_output(const struct cli *c, FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) != 0 || bad)
		cli_die(c, "%s: write failed: %s",
			strcmp(path, "-") == 0 ? "(stdout)" : path,
			errno ? strerror(errno) : "I/O error");
}

void cli_progress(struct cli *c, uint64_t count, uint64_t total,
		  const char *unit)
{
	char line[200];
	double now;

	if (!c->progress)
		return;
	now = rfb_now();
	if (c->drawn && now - c->last_draw < 0.2 && count != total)
		return;
	c->last_draw = now;
	rfb_progress_format(line, sizeof line, count, total, now - c->start,
			    unit);
	fprintf(stderr, "\r%s: %s\033[K", c->prog, line);
	c->drawn = 1;
}

void cli_progress_clear(struct cli *c)
{
	if (c->drawn) {
		fputs("\r\033[K", stderr);
		c->drawn = 0;
	}
}

void cli_keep_freed_memory(void)
{
#if defined(__GLIBC__)
	/* 256 MiB: far more than a batch's buffers; every allocation from
	 * the heaps, none unmapped when freed (measured by scripts/bench-bound
	 * and /usr/bin/time: refurb-partial's minor page faults at r = 1 fall
	 * from 43 to 26 per image) */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}
