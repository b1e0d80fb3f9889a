/*
 * io_fault_shim.c - an LD_PRELOAD library that makes the system fail
 * (tests/faults.bats, tests/syserr.bats): opens, reads and AIO reads of
 * chosen files fail with a chosen errno, as they do when a process runs
 * out of descriptors or memory or a disk fails.
 *
 *   FAULT_PATH=SUBSTRING   which files: those whose absolute path contains
 *                          SUBSTRING (e.g. ".tar", ".seg", a directory)
 *   FAULT_OPEN=ERR[@K]     open/openat of such a file fails with ERR from
 *                          the K-th call on (K = 1 by default)
 *   FAULT_READ=ERR[@K]     read/pread of such a file fails with ERR from
 *                          the K-th call on
 *   FAULT_AIO=ERR[@K]      AIO reads of such a file (reaped by
 *                          io_getevents) complete with -ERR from the K-th
 *                          completion on
 *   FAULT_EVERY_OTHER=1    fail only every other time from K on (a
 *                          transient error, EINTR or EAGAIN: a retry
 *                          succeeds)
 *
 * ERR is a name (EMFILE, ENFILE, ENOMEM, EIO, EINTR, EAGAIN, ENOSPC,
 * ENOBUFS, ESTALE, EACCES, ENOENT) or a number.  A relative path given to
 * openat is taken as relative to the working directory.  Counts are for the whole process (all
 * threads).  Without FAULT_PATH nothing changes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static uint64_t opens, reads, aios; /* calls on watched files so far */

static int errno_of(const char *s)
{
	static const struct { const char *name; int e; } names[] = {
		{ "EMFILE", EMFILE }, { "ENFILE", ENFILE }, { "ENOMEM", ENOMEM },
		{ "EIO", EIO }, { "EINTR", EINTR }, { "EAGAIN", EAGAIN },
		{ "ENOSPC", ENOSPC }, { "ENOBUFS", ENOBUFS }, { "ESTALE", ESTALE },
		{ "EACCES", EACCES }, { "ENOENT", ENOENT },
	};

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strncmp(s, names[i].name, strlen(names[i].name)) == 0)
			return names[i].e;
	return atoi(s);
}

/* The errno the n-th watched call given by variable var fails with, or 0. */
static int fault(const char *var, uint64_t *counter)
{
	const char *v = getenv(var), *at;
	uint64_t k = 1, n;

	if (!v || !*v)
		return 0;
	if ((at = strchr(v, '@')))
		k = strtoull(at + 1, NULL, 10);
	n = __atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST);
	if (n < k)
		return 0;
	if (getenv("FAULT_EVERY_OTHER") && (n - k) % 2)
		return 0;
	return errno_of(v);
}

static int watched_path(const char *path)
{
	const char *sub = getenv("FAULT_PATH");
	char abs[4096];

	if (!sub || !*sub || !path)
		return 0;
	if (path[0] != '/' && getcwd(abs, sizeof abs)) {
		size_t n = strlen(abs);
		snprintf(abs + n, sizeof abs - n, "/%s", path);
		path = abs;
	}
	return strstr(path, sub) != NULL;
}

static int watched_fd(int fd)
{
	char link[64], path[4096];
	ssize_t n;

	if (!getenv("FAULT_PATH"))
		return 0;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof path - 1)) < 0)
		return 0;
	path[n] = '\0';
	return watched_path(path);
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

/* ---- opens ---- */

static int open_fault(const char *path)
{
	int e = watched_path(path) ? fault("FAULT_OPEN", &opens) : 0;

	if (e)
		errno = e;
	return e;
}

static mode_t mode_of(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
		? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	return open_fault(path) ? -1 : NEXT(open)(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	return open_fault(path) ? -1 : NEXT(open64)(path, flags, mode);
}

int openat(int dir, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	return open_fault(path) ? -1 : NEXT(openat)(dir, path, flags, mode);
}

int openat64(int dir, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	return open_fault(path) ? -1 : NEXT(openat64)(dir, path, flags, mode);
}

/* ---- reads ---- */

static int read_fault(int fd)
{
	int e = getenv("FAULT_READ") && watched_fd(fd)
		? fault("FAULT_READ", &reads) : 0;

	if (e)
		errno = e;
	return e;
}

ssize_t read(int fd, void *buf, size_t n)
{
	return read_fault(fd) ? -1 : NEXT(read)(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return read_fault(fd) ? -1 : NEXT(pread)(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	return read_fault(fd) ? -1 : NEXT(pread64)(fd, buf, n, off);
}

/* ---- AIO completions ---- */

int io_getevents(io_context_t ctx, long min, long nr, struct io_event *ev,
		 struct timespec *timeout)
{
	int got = NEXT(io_getevents)(ctx, min, nr, ev, timeout);

	for (int i = 0; i < got && getenv("FAULT_AIO"); i++) {
		int e;
		if (ev[i].obj && watched_fd(ev[i].obj->aio_fildes) &&
		    (e = fault("FAULT_AIO", &aios)))
			ev[i].res = (unsigned long)-(long)e;
	}
	return got;
}
