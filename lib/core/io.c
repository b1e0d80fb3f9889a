/*
 * io.c - full reads and writes, bounded whole-file loads, atomic
 * replacement of small files and absolute paths (see io.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "refurb/io.h"

/* How often a read of a file that says EAGAIN (a network or FUSE file
 * system, a file opened O_NONBLOCK) is tried again, a millisecond apart,
 * before the error is given up to the caller. */
#define EAGAIN_TRIES 200

/* Wait a millisecond before trying again; 0 while tries are left. */
static int again(unsigned *tries)
{
	struct timespec ms = { 0, 1000000 };

	if (++*tries > EAGAIN_TRIES)
		return -1;
	nanosleep(&ms, NULL);
	return 0;
}

/* Read up to n bytes at off (or at the fd's position when off < 0).
 * Positional reads are of files: their EAGAIN is transient and retried;
 * a pipe's is the caller's to handle. */
static ssize_t read_loop(int fd, void *buf, size_t n, off_t off)
{
	size_t done = 0;
	unsigned tries = 0;

	while (done < n) {
		ssize_t r = off < 0 ? read(fd, (char *)buf + done, n - done)
				    : pread(fd, (char *)buf + done, n - done,
					    off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && off >= 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    again(&tries) == 0)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

ssize_t rfb_read_full(int fd, void *buf, size_t n)
{
	return read_loop(fd, buf, n, -1);
}

ssize_t rfb_pread_full(int fd, void *buf, size_t n, off_t off)
{
	return off < 0 ? (errno = EINVAL, -1) : read_loop(fd, buf, n, off);
}

/* Write all n bytes at off (or at the fd's position when off < 0). */
static int write_loop(int fd, const void *buf, size_t n, off_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = off < 0 ? write(fd, (const char *)buf + done, n - done)
				    : pwrite(fd, (const char *)buf + done, n - done,
					     off + (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)w;
	}
	return 0;
}

int rfb_write_full(int fd, const void *buf, size_t n)
{
	return write_loop(fd, buf, n, -1);
}

int rfb_pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
	return off < 0 ? (errno = EINVAL, -1) : write_loop(fd, buf, n, off);
}

int rfb_pwritev_full(int fd, const struct iovec *iov, size_t n, off_t off)
{
	struct iovec part;
	size_t i = 0, skip = 0; /* bytes of iov[i] already written */

	while (i < n) {
		size_t cnt = n - i < IOV_MAX ? n - i : IOV_MAX;
		ssize_t w;
		if (skip) { /* finish a buffer a short write cut */
			part.iov_base = (char *)iov[i].iov_base + skip;
			part.iov_len = iov[i].iov_len - skip;
			w = pwrite(fd, part.iov_base, part.iov_len, off);
		} else {
			w = pwritev(fd, iov + i, (int)cnt, off);
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		off += w;
		while (w > 0 && i < n) {
			size_t left = iov[i].iov_len - skip;
			if ((size_t)w < left) {
				skip += (size_t)w;
				w = 0;
			} else {
				w -= (ssize_t)left;
				skip = 0;
				i++;
			}
		}
	}
	return 0;
}

int rfb_open_retry(const char *path, int flags)
{
	unsigned tries = 0;
	int fd;

	for (;;) {
		fd = open(path, flags);
		if (fd >= 0 || (errno != EINTR &&
				!((errno == EAGAIN || errno == EWOULDBLOCK) &&
				  again(&tries) == 0)))
			return fd;
	}
}

/* Grow-as-you-go read for pipes and other files of unknown size. */
static int load_stream(int fd, const char *path, size_t max_len,
		       unsigned char **data, size_t *len, rfb_err *err)
{
	size_t cap = 65536, used = 0;
	unsigned char *buf = malloc(cap + 1);

	if (!buf)
		return rfb_err_set(err, RFB_ENOMEM, path, "out of memory");
	for (;;) {
		ssize_t r;
		if (used == cap) {
			unsigned char *nb;
			if (cap > max_len) {
				free(buf);
				return rfb_err_set(err, RFB_ELIMIT, path,
					"larger than the limit of %zu bytes",
					max_len);
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return rfb_err_set(err, RFB_ENOMEM, path,
						   "out of memory");
			}
			buf = nb;
		}
		r = rfb_read_full(fd, buf + used, cap - used);
		if (r < 0) {
			int e = errno;
			free(buf);
			return rfb_err_sys(err, e, path, "read failed");
		}
		used += (size_t)r;
		if (used < cap)
			break;
	}
	if (used > max_len) {
		free(buf);
		return rfb_err_set(err, RFB_ELIMIT, path,
				   "larger than the limit of %zu bytes", max_len);
	}
	buf[used] = '\0';
	*data = buf;
	*len = used;
	return 0;
}

int rfb_file_load(const char *path, size_t max_len, unsigned char **data,
		  size_t *len, rfb_err *err)
{
	int fd, rc;
	struct stat st;

	if (strcmp(path, "-") == 0)
		return load_stream(STDIN_FILENO, "(stdin)", max_len, data, len,
				   err);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open");
	if (fstat(fd, &st) < 0) {
		rc = rfb_err_sys(err, errno, path, "cannot stat");
	} else if (S_ISDIR(st.st_mode)) {
		rc = rfb_err_set(err, RFB_EINVAL, path,
				 "is a directory, not a file");
	} else if (S_ISREG(st.st_mode) && (size_t)st.st_size > max_len) {
		rc = rfb_err_set(err, RFB_ELIMIT, path,
				 "larger than the limit of %zu bytes", max_len);
	} else {
		rc = load_stream(fd, path, max_len, data, len, err);
	}
	close(fd);
	return rc;
}

int rfb_file_read_into(const char *path, size_t max_len, unsigned char **buf,
		       size_t *cap, size_t *len, rfb_err *err)
{
	struct stat st;
	int fd = rfb_open_retry(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc = 0;
	ssize_t got;

	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open");
	if (fstat(fd, &st) < 0) {
		rc = rfb_err_sys(err, errno, path, "cannot stat");
	} else if (!S_ISREG(st.st_mode)) {
		rc = rfb_err_set(err, RFB_EINVAL, path, "not a regular file");
	} else if ((uint64_t)st.st_size > max_len) {
		rc = rfb_err_set(err, RFB_ELIMIT, path,
				 "larger than the limit of %zu bytes", max_len);
	} else if (*cap < (size_t)st.st_size + 1) {
		unsigned char *nb = realloc(*buf, (size_t)st.st_size + 1);
		if (!nb)
			rc = rfb_err_set(err, RFB_ENOMEM, path, "out of memory");
		else
			*buf = nb, *cap = (size_t)st.st_size + 1;
	}
	if (rc == 0) {
		got = rfb_read_full(fd, *buf, (size_t)st.st_size);
		if (got < 0)
			rc = rfb_err_sys(err, errno, path, "read failed");
		*len = got < 0 ? 0 : (size_t)got;
	}
	close(fd);
	return rc;
}

int rfb_fsync_parent(const char *path, rfb_err *err)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rfb_err_sys(err, errno, dir, "cannot open directory");
	if (fsync(fd) < 0 && errno != EINVAL) {
		int e = errno;
		close(fd);
		return rfb_err_sys(err, e, dir, "fsync failed");
	}
	close(fd);
	return 0;
}

/* Write to path as it is (a FIFO, a terminal, /dev/null ...): such files
 * cannot be replaced by renaming, and must not be (as root, a rename over
 * /dev/null would replace the device node with a regular file). */
static int write_in_place(const char *path, const void *data, size_t len,
			  rfb_err *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open");
	if (rfb_write_full(fd, data, len) < 0)
		rc = rfb_err_sys(err, errno, path, "write failed");
	if (close(fd) < 0 && rc == 0)
		rc = rfb_err_sys(err, errno, path, "write failed");
	return rc;
}

int rfb_file_replace(const char *path, const void *data, size_t len,
		     rfb_err *err)
{
	char tmp[PATH_MAX];
	struct stat st;
	int fd;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return write_in_place(path, data, len, err);
	if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
	    (int)sizeof tmp)
		return rfb_err_set(err, RFB_EINVAL, path, "path too long");
	/* messages name the user's file: the temporary one beside it is
	 * ours (and gone after a failure) */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot create");
	if (rfb_write_full(fd, data, len) < 0 || fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return rfb_err_sys(err, e, path, "write failed");
	}
	if (close(fd) < 0) {
		int e = errno;
		unlink(tmp);
		return rfb_err_sys(err, e, path, "write failed");
	}
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return rfb_err_sys(err, e, path, "cannot replace");
	}
	return rfb_fsync_parent(path, err);
}

char *rfb_path_absolute(const char *path, int must_exist)
{
	char *abs = realpath(path, NULL);
	char cwd[PATH_MAX];
	size_t n;

	if (abs || must_exist)
		return abs;
	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof cwd))
		return NULL;
	n = strlen(cwd) + strlen(path) + 2;
	if ((abs = malloc(n)))
		snprintf(abs, n, "%s/%s", cwd, path);
	return abs;
}
