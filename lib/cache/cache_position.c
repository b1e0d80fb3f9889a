/*
 * cache_position.c - how far the reader of a cache has read: the file
 * DIR/read-position that refurb-final rewrites after every batch and that
 * refurb-partial reads to delete dead segments as soon as no batch the
 * reader still has to read can refer to them (refurb-cache(5), READ
 * POSITION), and refurb-dump shows.
 *
 * 64 bytes (their encoder and decoder, with the byte table, are in
 * cache_format.c), rewritten in place with one pwrite: a torn write fails
 * its checksum and reads as no position.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "refurb/cache.h"
#include "refurb/checksum.h"
#include "refurb/io.h"


struct rfb_cache_position_writer {
	int fd;
	uint64_t updates;
};

rfb_cache_position_writer *rfb_cache_position_writer_open(const char *dir,
							  rfb_err *err)
{
	rfb_cache_position_writer *w = calloc(1, sizeof *w);
	char path[4200];

	if (!w) {
		rfb_err_set(err, RFB_ENOMEM, dir, "out of memory");
		return NULL;
	}
	snprintf(path, sizeof path, "%s/" POSITION_NAME, dir);
	/* emptied at open: a fresh file tells the writer that a reader that
	 * tells its position is there, before it has read anything */
	if ((w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			  0644)) < 0) {
		rfb_err_sys(err, errno, path, "cannot open");
		free(w);
		return NULL;
	}
	return w;
}

int rfb_cache_position_put(rfb_cache_position_writer *w,
			   const struct rfb_cache_position *p, rfb_err *err)
{
	unsigned char b[POSITION_BYTES];
	struct rfb_cache_position q = *p;

	q.updates = ++w->updates;
	q.pid = (uint32_t)getpid();
	rfbi_cache_position_encode(&q, b);
	if (rfb_pwrite_full(w->fd, b, sizeof b, 0) < 0)
		return rfb_err_sys(err, errno, POSITION_NAME, "cannot write");
	return 0;
}

void rfb_cache_position_writer_close(rfb_cache_position_writer *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}

int rfb_cache_position_read(const char *dir, struct rfb_cache_position *p,
			    double *mtime)
{
	unsigned char b[POSITION_BYTES];
	char path[4200];
	struct stat st;
	int fd;
	ssize_t got;

	memset(p, 0, sizeof *p);
	snprintf(path, sizeof path, "%s/" POSITION_NAME, dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	/* a read that meets the reader's pwrite may see half of each: the
	 * checksum tells, and the next read sees the whole */
	for (int tries = 0; tries < 20; tries++) {
		got = rfb_pread_full(fd, b, sizeof b, 0);
		if (got != (ssize_t)sizeof b || !rfbi_cache_position_is(b) ||
		    rfbi_cache_position_decode(b, p) == 0)
			break;
		got = -1;
		usleep(500);
	}
	if (fstat(fd, &st) < 0)
		got = -1;
	close(fd);
	if (mtime && got >= 0)
		*mtime = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
	if (got != (ssize_t)sizeof b || rfbi_cache_position_decode(b, p)) {
		memset(p, 0, sizeof *p);
		return got >= 0 ? -1 : 0;
	}
	if (mtime)
		*mtime = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
	return 1;
}
