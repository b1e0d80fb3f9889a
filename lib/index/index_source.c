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

#include "refurb/fdlimit.h"
#include "refurb/io.h"
#include "refurb/source.h"

#include <sys/resource.h>

#define FD_UNOPENED (-1)
#define MAX_OPEN_SHARDS 4096

/* One shard's descriptor: open while in use or among the most recently
 * used, closed (least recently used first) when more than cap are open.
 * The open shards no read is using are on a list, least recently used
 * first, linked through prev and next (shard numbers; shard_count is the
 * list's head), so that the one to close is found at once whatever the
 * number of shards. */
struct shard_fd {
	int fd;                   /* FD_UNOPENED or an open fd */
	unsigned users;           /* reads in progress on fd */
	uint32_t prev, next;      /* on the idle list when fd >= 0 && !users */
};

struct rfb_source {
	const rfb_index *idx;
	char *root;               /* override, or NULL */
	uint32_t shard_count;
	struct shard_fd *fds;     /* per shard, then the idle list's head */
	uint32_t open, cap;       /* descriptors open, and the most kept */
	uint32_t lowered;         /* times EMFILE lowered cap */
	pthread_mutex_t lock;
};

/* How many shard descriptors to keep open until rfb_source_fit_fds says:
 * half of RLIMIT_NOFILE (the rest is left to the cache's segments, pipes
 * and the libraries), at least 4, at most MAX_OPEN_SHARDS. */
static uint32_t fd_cap(void)
{
	struct rlimit rl;
	rlim_t half;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return MAX_OPEN_SHARDS;
	half = rl.rlim_cur / 2;
	return half < 4 ? 4 : half > MAX_OPEN_SHARDS ? MAX_OPEN_SHARDS
		: (uint32_t)half;
}

rfb_source *rfb_source_open(const rfb_index *idx, const char *root_override,
			    rfb_err *err)
{
	rfb_source *s = calloc(1, sizeof *s);
	uint32_t n = rfb_index_shard_count(idx);

	if (!s || !(s->fds = calloc((size_t)n + 1, sizeof *s->fds)) ||
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
	s->fds[n].prev = s->fds[n].next = n;  /* the empty list */
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

int rfb_source_fit_fds(rfb_source *s, uint32_t need, const char *what,
		       struct rfb_source_fds *out, rfb_err *err)
{
	struct rfb_fd_budget b;
	uint32_t want = s->shard_count < MAX_OPEN_SHARDS ? s->shard_count
							 : MAX_OPEN_SHARDS;
	/* as many again for the cache's segments: see below */
	int rc = rfb_fd_budget_check(need, 2 * want, what, &b, err);

	out->limit = b.limit;
	out->raised = b.raised;
	out->shards = s->shard_count;
	out->want = want;
	if (rc)
		return rc;
	/* half of what is left: the cache opens more segments as it grows */
	pthread_mutex_lock(&s->lock);
	s->cap = b.spare / 2 < 1 ? 1 : b.spare / 2 > want ? (want ? want : 1)
		: b.spare / 2;
	out->cap = s->cap;
	pthread_mutex_unlock(&s->lock);
	out->suggest = (uint64_t)b.open + need + 2 * (uint64_t)want;
	return 0;
}

int rfb_source_fds_note(const struct rfb_source_fds *f, rfb_err *note)
{
	if (f->cap >= f->want)
		return 0;
	rfb_err_set(note, RFB_ERESOURCE, NULL, "the open-file limit is %llu: "
		    "%u of the %u shard files are kept open, the others are "
		    "opened again for every read (slower); ulimit -n %llu keeps "
		    "%s (refurb(7), RESOURCE LIMITS)",
		    (unsigned long long)f->limit, f->cap, f->shards,
		    (unsigned long long)f->suggest,
		    f->want == f->shards ? "them all open" : "4096 open");
	return 1;
}

uint32_t rfb_source_fd_cap(rfb_source *s, uint32_t *lowered)
{
	uint32_t cap;

	pthread_mutex_lock(&s->lock);
	cap = s->cap;
	if (lowered)
		*lowered = s->lowered;
	pthread_mutex_unlock(&s->lock);
	return cap;
}

/* Open shard k (1-based) and check it is the file the index describes. */
static int open_shard(const rfb_source *s, uint32_t k, const char *path,
		      rfb_err *err)
{
	rfb_shard_info sh;
	struct stat st;
	int fd;

	(void)rfb_index_shard(s->idx, k, &sh);
	fd = rfb_open_retry(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return rfb_err_set(err, RFB_EMISMATCH, path, "shard vanished "
				   "since it was indexed (%s, or re-run "
				   "refurb-index)", s->root ? "check --root"
				   : "if the shards moved, give their "
				   "directory with --root DIR");
	if (fd < 0)
		return rfb_err_sys(err, errno, path, "cannot open the shard");
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return rfb_err_sys(err, e, path, "cannot stat the shard");
	}
	if (!S_ISREG(st.st_mode)) {
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

/* ---- the idle list (called with the lock held) ---- */

static void idle_unlink(rfb_source *s, uint32_t i)
{
	struct shard_fd *e = &s->fds[i];

	s->fds[e->prev].next = e->next;
	s->fds[e->next].prev = e->prev;
}

/* Put shard index i at the list's end: the most recently used. */
static void idle_push(rfb_source *s, uint32_t i)
{
	uint32_t head = s->shard_count, last = s->fds[head].prev;

	s->fds[i].prev = last;
	s->fds[i].next = head;
	s->fds[last].next = i;
	s->fds[head].prev = i;
}

/* Close the least recently used descriptor no read is using; 0 if there
 * was none. */
static int close_one(rfb_source *s)
{
	uint32_t lru = s->fds[s->shard_count].next;

	if (lru == s->shard_count)
		return 0;
	idle_unlink(s, lru);
	close(s->fds[lru].fd);
	s->fds[lru].fd = FD_UNOPENED;
	s->open--;
	return 1;
}

/* Open shard k; out of descriptors (EMFILE, ENFILE), close idle shards
 * until it opens, and keep no more open from then on: the limit is
 * lower than rfb_source_fit_fds found room for (others took some). */
static int open_within_limit(rfb_source *s, uint32_t k, const char *path,
			     rfb_err *err)
{
	int fd;

	while ((fd = open_shard(s, k, path, err)) < 0 &&
	       (err->sys_errno == EMFILE || err->sys_errno == ENFILE) &&
	       close_one(s)) {
		s->cap = s->open > 1 ? s->open : 1;
		s->lowered++;
	}
	return fd;
}

/* The descriptor of shard k, opened if needed, held until put_fd. */
static int get_fd(rfb_source *s, uint32_t k, const char *path, rfb_err *err)
{
	struct shard_fd *e = &s->fds[k - 1];
	int fd;

	pthread_mutex_lock(&s->lock);
	if (e->fd < 0) {
		if (s->open >= s->cap)
			(void)close_one(s);
		if ((fd = open_within_limit(s, k, path, err)) < 0) {
			pthread_mutex_unlock(&s->lock);
			return fd;
		}
		e->fd = fd;
		s->open++;
	} else if (e->users == 0) {
		idle_unlink(s, k - 1);
	}
	e->users++;
	fd = e->fd;
	pthread_mutex_unlock(&s->lock);
	return fd;
}

static void put_fd(rfb_source *s, uint32_t k)
{
	pthread_mutex_lock(&s->lock);
	if (--s->fds[k - 1].users == 0)
		idle_push(s, k - 1);
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
