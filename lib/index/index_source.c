/*
 * index_source.c - reading samples' bytes from their files or, with one pread,
 * from the tar shards that hold them (see source.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refurb/io.h"
#include "refurb/source.h"

#include <sys/resource.h>

#define FD_UNOPENED (-1)

/* One shard's descriptor: open while in use or among the most recently
 * used, closed (least recently used first) when more than cap are open. */
struct shard_fd {
	int fd;                   /* FD_UNOPENED or an open fd */
	unsigned users;           /* reads in progress on fd */
	uint64_t used;            /* LRU stamp */
};

struct rfb_source {
	const rfb_index *idx;
	char *root;               /* override, or NULL */
	uint32_t shard_count;
	struct shard_fd *fds;     /* per shard */
	uint32_t open, cap;       /* descriptors open, and the most kept */
	uint64_t clock;
	pthread_mutex_t lock;
};

/* How many shard descriptors to keep open: half of RLIMIT_NOFILE (the
 * rest is left to the cache's segments, pipes and the libraries), at
 * least 4, at most 4096. */
static uint32_t fd_cap(void)
{
	struct rlimit rl;
	rlim_t half;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 4096;
	half = rl.rlim_cur / 2;
	return half < 4 ? 4 : half > 4096 ? 4096 : (uint32_t)half;
}

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
	s->cap = fd_cap();
	for (uint32_t k = 0; k < n; k++)
		s->fds[k].fd = FD_UNOPENED;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void rfb_source_close(rfb_source *s)
{
	if (!s)
		return;
	for (uint32_t k = 0; k < s->shard_count; k++)
		if (s->fds[k].fd >= 0)
			close(s->fds[k].fd);
	pthread_mutex_destroy(&s->lock);
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
	if (fd < 0 && errno == ENOENT)
		return rfb_err_set(err, RFB_EMISMATCH, path, "shard vanished "
				   "since it was indexed (%s, or re-run "
				   "refurb-index)", s->root ? "check --root"
				   : "if the shards moved, give their "
				   "directory with --root DIR");
	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open the shard");
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
				   ? ", and another mtime: a copy keeps it with "
				   "cp -p or rsync -t" : "");
	}
	return fd;
}

/* Close the least recently used descriptor no read is using, if any.
 * Called with the lock held. */
static void close_one(rfb_source *s)
{
	struct shard_fd *lru = NULL;

	for (uint32_t k = 0; k < s->shard_count; k++) {
		struct shard_fd *e = &s->fds[k];
		if (e->fd >= 0 && !e->users && (!lru || e->used < lru->used))
			lru = e;
	}
	if (lru) {
		close(lru->fd);
		lru->fd = FD_UNOPENED;
		s->open--;
	}
}

/* The descriptor of shard k, opened if needed, held until put_fd. */
static int get_fd(rfb_source *s, uint32_t k, const char *path, rfb_err *err)
{
	struct shard_fd *e = &s->fds[k - 1];
	int fd;

	pthread_mutex_lock(&s->lock);
	if (e->fd < 0) {
		if (s->open >= s->cap)
			close_one(s);
		if ((fd = open_shard(s, k, path, err)) < 0) {
			pthread_mutex_unlock(&s->lock);
			return fd;
		}
		e->fd = fd;
		s->open++;
	}
	e->users++;
	e->used = ++s->clock;
	fd = e->fd;
	pthread_mutex_unlock(&s->lock);
	return fd;
}

static void put_fd(rfb_source *s, uint32_t k)
{
	pthread_mutex_lock(&s->lock);
	s->fds[k - 1].users--;
	pthread_mutex_unlock(&s->lock);
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
	if ((rc = grow(buf, cap, (size_t)si->bytes + 1, err)))
		return rc;
	if ((fd = get_fd(s, si->shard, path, err)) < 0)
		return fd;
	got = rfb_pread_full(fd, *buf, (size_t)si->bytes, (off_t)si->offset);
	put_fd(s, si->shard);
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
