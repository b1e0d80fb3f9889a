/*
 * enospc_shim.c - an LD_PRELOAD library for the full-disk tests
 * (tests/faults.bats): a file system that fills up after a given number
 * of bytes, without a mount.
 *
 *   ENOSPC_DIR=/abs/path/cache ENOSPC_AFTER=N \
 *       LD_PRELOAD=build/tools/enospc_shim.so refurb-partial ...
 *
 * write, pwrite, writev and pwritev to files whose path starts with
 * ENOSPC_DIR (absolute, without symbolic links) share a budget of
 * ENOSPC_AFTER bytes for the whole process (all threads): the write that
 * crosses it writes what is left (a short write, as a filling disk does)
 * and every later one fails with ENOSPC.  Writes to anything else (the
 * plan on stdout, stderr) pass.  Without ENOSPC_DIR nothing changes.
 *
 * EIO_FSYNC=K (with ENOSPC_DIR, without ENOSPC_AFTER): the K-th fsync of
 * a cache segment (a *.seg file) under ENOSPC_DIR fails with EIO (a disk
 * that fails to write back); writes are not limited then.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static uint64_t used; /* bytes written under ENOSPC_DIR so far */

/* Is fd a file under ENOSPC_DIR (whose name ends in suffix)? */
static int watched_as(int fd, const char *suffix)
{
	const char *dir = getenv("ENOSPC_DIR");
	char link[64], path[4096];
	ssize_t n;

	if (!dir || !*dir)
		return 0;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof path - 1)) < 0)
		return 0;
	path[n] = '\0';
	return strncmp(path, dir, strlen(dir)) == 0 &&
	       (size_t)n >= strlen(suffix) &&
	       strcmp(path + n - strlen(suffix), suffix) == 0;
}

static int watched(int fd)
{
	return watched_as(fd, "");
}

/*
 * How many of want bytes a write to fd may write: want for files that
 * are not watched, else what is left of the budget (taken from it).
 * 0 for a non-empty write means the disk is full (errno = ENOSPC).
 */
static size_t allowed(int fd, size_t want)
{
	const char *after = getenv("ENOSPC_AFTER");
	uint64_t limit = after ? strtoull(after, NULL, 10) : UINT64_MAX;
	uint64_t u, take;

	if (want == 0 || !watched(fd))
		return want;
	u = __atomic_load_n(&used, __ATOMIC_SEQ_CST);
	do {
		take = u >= limit ? 0 : limit - u < want ? limit - u : want;
	} while (take && !__atomic_compare_exchange_n(&used, &u, u + take, 0,
						      __ATOMIC_SEQ_CST,
						      __ATOMIC_SEQ_CST));
	if (take == 0)
		errno = ENOSPC;
	return (size_t)take;
}

static size_t iov_bytes(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* The first iovecs of iov covering n bytes, into out (cut short). */
static int iov_cut(const struct iovec *iov, int cnt, size_t n,
		   struct iovec *out)
{
	int k = 0;

	for (; k < cnt && n > 0; k++) {
		out[k] = iov[k];
		if (out[k].iov_len > n)
			out[k].iov_len = n;
		n -= out[k].iov_len;
	}
	return k;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void *buf, size_t n)
{
	size_t ok = allowed(fd, n);

	return n && !ok ? -1 : NEXT(write)(fd, buf, ok);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	size_t ok = allowed(fd, n);

	return n && !ok ? -1 : NEXT(pwrite)(fd, buf, ok, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	size_t ok = allowed(fd, n);

	return n && !ok ? -1 : NEXT(pwrite64)(fd, buf, ok, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	size_t n = cnt > 0 ? iov_bytes(iov, cnt) : 0, ok = allowed(fd, n);
	struct iovec cut[IOV_MAX];

	if (n && !ok)
		return -1;
	if (ok == n || cnt > IOV_MAX)
		return NEXT(writev)(fd, iov, cnt);
	return NEXT(writev)(fd, cut, iov_cut(iov, cnt, ok, cut));
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	size_t n = cnt > 0 ? iov_bytes(iov, cnt) : 0, ok = allowed(fd, n);
	struct iovec cut[IOV_MAX];

	if (n && !ok)
		return -1;
	if (ok == n || cnt > IOV_MAX)
		return NEXT(pwritev)(fd, iov, cnt, off);
	return NEXT(pwritev)(fd, cut, iov_cut(iov, cnt, ok, cut), off);
}

static uint64_t fsyncs; /* fsyncs of watched files so far */

int fsync(int fd)
{
	const char *k = getenv("EIO_FSYNC");

	if (k && watched_as(fd, ".seg") &&
	    __atomic_add_fetch(&fsyncs, 1, __ATOMIC_SEQ_CST) == strtoull(k, NULL, 10)) {
		errno = EIO;
		return -1;
	}
	return NEXT(fsync)(fd);
}
