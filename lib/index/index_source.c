/*
 * index_source.c - reading samples' bytes from their files or, with one pread,
 * from the tar shards that hold them (see source.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refurb/io.h"
#include "refurb/source.h"

#define FD_UNOPENED (-1)

struct rfb_source {
	const rfb_index *idx;
	char *root;               /* override, or NULL */
	uint32_t shard_count;
	atomic_int *fds;          /* per shard: FD_UNOPENED or an open fd */
	pthread_mutex_t open_lock;
};

rfb_source *rfb_source_open(const rfb_index *idx, const char *root_override,
			    rfb_err *err)
{
	rfb_source *s = calloc(1, sizeof *s);
	uint32_t n = rfb_index_shard_count(idx);

	if (!s || !(s->fds = calloc(n ? n : 1, sizeof *s->fds)) ||
	    (root_override && !(s->root = strdup(root_override)))) {
		if (s)
			free(s->fds);
		free(s);
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	s->idx = idx;
	s->shard_count = n;
	for (uint32_t k = 0; k < n; k++)
		atomic_init(&s->fds[k], FD_UNOPENED);
	pthread_mutex_init(&s->open_lock, NULL);
	return s;
}

void rfb_source_close(rfb_source *s)
{
	if (!s)
		return;
	for (uint32_t k = 0; k < s->shard_count; k++)
		if (atomic_load(&s->fds[k]) >= 0)
			close(atomic_load(&s->fds[k]));
	pthread_mutex_destroy(&s->open_lock);
	free(s->fds);
	free(s->root);
	free(s);
}

/* Open shard k (1-based) and check it is the file the index describes. */
static int open_shard(const rfb_source *s, uint32_t k, const char *path,
		      rfb_err *err)
{
	rfb_shard_info sh;
	struct stat st;
	int fd;

	(void)rfb_index_shard(s->idx, k, &sh);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT
		       ? rfb_err_set(err, RFB_EMISMATCH, path, "shard vanished "
				     "since it was indexed (re-run refurb-index)")
		       : rfb_err_sys(err, errno, path, "cannot open the shard");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return rfb_err_set(err, RFB_EINVAL, path, "shard is not a "
				   "regular file");
	}
	if ((uint64_t)st.st_size != sh.size ||
	    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec !=
	    sh.mtime_ns) {
		close(fd);
		return rfb_err_set(err, RFB_EMISMATCH, path, "shard changed since "
				   "it was indexed (%llu bytes, the index says "
				   "%llu%s; re-run refurb-index)",
				   (unsigned long long)st.st_size,
				   (unsigned long long)sh.size,
				   (uint64_t)st.st_size == sh.size
				   ? ", and another mtime" : "");
	}
	return fd;
}

/* The descriptor of shard k, opened on first use. */
static int shard_fd(rfb_source *s, uint32_t k, const char *path, rfb_err *err)
{
	int fd = atomic_load_explicit(&s->fds[k - 1], memory_order_acquire);

	if (fd >= 0)
		return fd;
	pthread_mutex_lock(&s->open_lock);
	fd = atomic_load(&s->fds[k - 1]);
	if (fd < 0 && (fd = open_shard(s, k, path, err)) >= 0)
		atomic_store_explicit(&s->fds[k - 1], fd, memory_order_release);
	pthread_mutex_unlock(&s->open_lock);
	return fd;
}

static int grow(unsigned char **buf, size_t *cap, size_t want, rfb_err *err)
{
	unsigned char *nb;

	if (*cap >= want)
		return 0;
	if (!(nb = realloc(*buf, want)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	*buf = nb;
	*cap = want;
	return 0;
}

static int read_member(rfb_source *s, const rfb_sample_info *si,
		       const char *path, size_t max_len, unsigned char **buf,
		       size_t *cap, size_t *len, rfb_err *err)
{
	ssize_t got;
	int fd, rc;

	if (si->bytes > max_len)
		return rfb_err_set(err, RFB_ELIMIT, path, "member %s: larger than "
				   "the limit of %zu bytes", si->path, max_len);
	if ((fd = shard_fd(s, si->shard, path, err)) < 0)
		return fd;
	if ((rc = grow(buf, cap, (size_t)si->bytes + 1, err)))
		return rc;
	got = rfb_pread_full(fd, *buf, (size_t)si->bytes, (off_t)si->offset);
	if (got < 0)
		return rfb_err_sys(err, errno, path, "member %s: read failed",
				   si->path);
	if ((uint64_t)got != si->bytes)
		return rfb_err_set(err, RFB_ETRUNC, path, "member %s: shard ends "
				   "inside it (truncated since indexing)", si->path);
	*len = (size_t)got;
	return 0;
}

int rfb_source_read(rfb_source *s, uint32_t id, size_t max_len,
		    unsigned char **buf, size_t *cap, size_t *len, rfb_err *err)
{
	rfb_sample_info si;
	char path[8192];

	if (rfb_index_get(s->idx, id, &si))
		return rfb_err_set(err, RFB_ENOTFOUND, NULL, "sample %u is not in "
				   "the index", id);
	if (rfb_index_full_path(s->idx, id, s->root, path, sizeof path))
		return rfb_err_set(err, RFB_ELIMIT, NULL, "sample %u: path too "
				   "long", id);
	*len = 0;
	if (si.shard == RFB_INDEX_NO_SHARD)
		return rfb_file_read_into(path, max_len, buf, cap, len, err);
	return read_member(s, &si, path, max_len, buf, cap, len, err);
}

void rfb_source_blame(const rfb_source *s, uint32_t id, rfb_err *err)
{
	rfb_sample_info si;
	char path[8192], msg[sizeof err->msg + 600];

	if (rfb_index_get(s->idx, id, &si) ||
	    rfb_index_full_path(s->idx, id, s->root, path, sizeof path))
		return;
	snprintf(err->path, sizeof err->path, "%.500s", path);
	if (si.shard != RFB_INDEX_NO_SHARD &&
	    strncmp(err->msg, "member ", 7) != 0) {
		snprintf(msg, sizeof msg, "member %.80s: %s", si.path, err->msg);
		snprintf(err->msg, sizeof err->msg, "%.*s",
			 (int)sizeof err->msg - 1, msg);
	}
}
