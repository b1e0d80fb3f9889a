/*
 * io.h - full reads and writes that survive EINTR and short transfers,
 * whole-file loading with a size limit, and atomic file replacement.
 */
#ifndef REFURB_IO_H
#define REFURB_IO_H

#include <stddef.h>
#include <sys/types.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Read up to n bytes from fd into buf, retrying on EINTR and short reads.
 * Returns the number of bytes read, which is less than n only at end of
 * file, or -1 with errno set.
 */
ssize_t rfb_read_full(int fd, void *buf, size_t n) RFB_MUST_CHECK;

/* Like rfb_read_full() at file offset off (pread); fd's offset unchanged.
 * EAGAIN (a network or FUSE file system) is retried too, for a while. */
ssize_t rfb_pread_full(int fd, void *buf, size_t n, off_t off) RFB_MUST_CHECK;

/*
 * open(path, flags) (no O_CREAT: no mode), tried again on EINTR and, for
 * a while, on EAGAIN.  Returns the fd, or -1 with errno set.
 */
int rfb_open_retry(const char *path, int flags) RFB_MUST_CHECK;

/*
 * Write all n bytes of buf to fd, retrying on EINTR and short writes.
 * Returns 0, or -1 with errno set (EPIPE, ENOSPC ...).
 */
int rfb_write_full(int fd, const void *buf, size_t n) RFB_MUST_CHECK;

/* Like rfb_write_full() at file offset off (pwrite). */
int rfb_pwrite_full(int fd, const void *buf, size_t n, off_t off) RFB_MUST_CHECK;

struct iovec;

/*
 * Write the n buffers of iov, in order, at file offset off (pwritev),
 * retrying on EINTR and short writes, in chunks of at most IOV_MAX.  iov
 * is not modified.  Returns 0, or -1 with errno set.
 */
int rfb_pwritev_full(int fd, const struct iovec *iov, size_t n,
		     off_t off) RFB_MUST_CHECK;

/*
 * Load the whole of path ("-" is stdin) into a malloc'ed buffer.  Files
 * larger than max_len are refused with RFB_ELIMIT before anything is
 * allocated for them.  On success *data (caller frees) and *len are set;
 * an extra NUL byte follows the data so text can be parsed in place.
 * Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_file_load(const char *path, size_t max_len, unsigned char **data,
		  size_t *len, rfb_err *err) RFB_MUST_CHECK;

/*
 * Read the whole regular file path into *buf, which grows (realloc) when
 * *cap is too small and never shrinks, so a worker reusing its buffer
 * allocates nothing in the steady state.  Files that are not regular (a
 * FIFO would block) and files over max_len bytes are refused (RFB_EINVAL,
 * RFB_ELIMIT).  *len is the file's length.  Returns 0 or a negative
 * RFB_E* code with err filled, naming path.
 */
int rfb_file_read_into(const char *path, size_t max_len, unsigned char **buf,
		       size_t *cap, size_t *len, rfb_err *err) RFB_MUST_CHECK;

/*
 * Replace path atomically with len bytes of data: write "path.tmp.PID",
 * fsync it, rename over path, fsync the directory.  After a crash path is
 * either the old or the new content, never a mix.  A path that names an
 * existing file that is neither regular nor a directory (a FIFO, a
 * terminal, /dev/null, also through a symbolic link) is written in place
 * instead.  Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_file_replace(const char *path, const void *data, size_t len,
		     rfb_err *err) RFB_MUST_CHECK;

/* fsync the directory that contains path (for renames and creates). */
int rfb_fsync_parent(const char *path, rfb_err *err) RFB_MUST_CHECK;

/*
 * The absolute, resolved form of path (realpath), malloc'ed (the caller
 * frees it).  When path cannot be resolved (it does not exist yet):
 * NULL with errno set if must_exist, else path made absolute as text
 * (the working directory + "/" + path; path itself when it starts with
 * "/"), or NULL with errno set when even that fails.
 */
char *rfb_path_absolute(const char *path, int must_exist) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
