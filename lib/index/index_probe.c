/*
 * index_probe.c - reading the headers of an index's candidate files in
 * parallel and building the index from the good ones (see
 * index_scan_internal.h).  Bad files are reported in candidate order, from the
 * calling thread, so the messages and the index never depend on the
 * thread count.
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
#include "refurb/jpeg.h"
#include "refurb/png.h"
#include "index_scan_internal.h"

#define FIRST_READ 16384 /* enough for the header of most files */

struct probe_result {
	uint64_t bytes;
	uint32_t width, height;
	uint8_t components, colorspace, subsampling;
	int code;   /* 0 = good */
	int sys_errno; /* the errno of a failed system call, else 0 */
	char *why;  /* malloc'ed reason when code != 0 */
};

struct probe_job {
	const struct cand_list *list;
	const struct rfb_scan_opts *opts;
	struct probe_result *res;
	atomic_size_t next;   /* next candidate to take */
	atomic_size_t done;   /* candidates finished */
	atomic_int stop;      /* strict mode: a bad file was seen */
};

static void fail_result(struct probe_result *r, const rfb_err *e)
{
	r->code = e->code ? e->code : RFB_EIO;
	r->sys_errno = e->sys_errno;
	r->why = strdup(e->msg);
}

/* The header of a JPEG or a PNG (by content, whatever the file's name);
 * other image formats are named in the message. */
static int probe_header(rfb_jpeg_probe *jp, const unsigned char *data,
			size_t len, uint64_t max_pixels,
			struct rfb_jpeg_info *info, rfb_err *e)
{
	struct rfb_png_info png;
	const char *other;
	int rc;

	if (rfb_png_sniff(data, len)) {
		if ((rc = rfb_png_read_header(data, len, max_pixels, &png, e)))
			return rc;
		/* as decoded: gray or RGB, no subsampling */
		info->width = png.width;
		info->height = png.height;
		info->components = png.channels;
		info->colorspace = png.channels == 1 ? 2 : 0; /* TJCS_GRAY, TJCS_RGB */
		info->subsampling = -1;
		return 0;
	}
	if ((other = rfb_image_format_name(data, len)))
		return rfb_err_set(e, RFB_EFORMAT, NULL, "%s image (refurb reads "
				   "JPEG and PNG)", other);
	return rfb_jpeg_read_header(jp, data, len, max_pixels, info, e);
}

/* Probe the JPEG or PNG of size bytes at offset off of fd, reading more of it
 * when the first chunk does not reach the start of frame. */
static int probe_bytes(rfb_jpeg_probe *jp, int fd, uint64_t off,
		       uint64_t size, uint64_t max_pixels, unsigned char **buf,
		       size_t *cap, struct rfb_jpeg_info *info, rfb_err *e)
{
	size_t want = FIRST_READ;
	ssize_t got;

	if (size == 0)
		return rfb_err_set(e, RFB_EFORMAT, NULL, "empty file");
	for (;;) {
		if (want > size)
			want = (size_t)size;
		if (*cap < want) {
			unsigned char *nb = realloc(*buf, want);
			if (!nb)
				return rfb_err_set(e, RFB_ENOMEM, NULL, "out of memory");
			*buf = nb;
			*cap = want;
		}
		got = rfb_pread_full(fd, *buf, want, (off_t)off);
		if (got < 0)
			return rfb_err_sys(e, errno, NULL, "read failed");
		int rc = probe_header(jp, *buf, (size_t)got, max_pixels, info, e);
		if (rc == 0)
			return 0;
		if (rc != RFB_ETRUNC || (size_t)got < want || want == size)
			return rc;
		want *= 16; /* a big EXIF block before the frame header */
	}
}

static void set_result(struct probe_result *r, uint64_t bytes,
		       const struct rfb_jpeg_info *info)
{
	r->bytes = bytes;
	r->width = (uint32_t)info->width;
	r->height = (uint32_t)info->height;
	r->components = (uint8_t)info->components;
	r->colorspace = (uint8_t)info->colorspace;
	r->subsampling = (uint8_t)info->subsampling;
	r->code = 0;
}

/* Read the header of one file. */
static void probe_file(rfb_jpeg_probe *jp, int dirfd, const char *path,
		       uint64_t max_pixels, unsigned char **buf, size_t *cap,
		       struct probe_result *r)
{
	rfb_err e = { 0 };
	struct rfb_jpeg_info info;
	struct stat st;
	int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		rfb_err_sys(&e, errno, NULL, "cannot open");
		fail_result(r, &e);
		return;
	}
	/* a first read too short for a big EXIF block leaves an error in e
	 * even when the longer read succeeds: the return value decides */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		fail_result(r, (rfb_err_set(&e, RFB_EINVAL, NULL,
					    "not a regular file"), &e));
	else if (probe_bytes(jp, fd, 0, (uint64_t)st.st_size, max_pixels, buf,
			     cap, &info, &e) == 0)
		set_result(r, (uint64_t)st.st_size, &info);
	else
		fail_result(r, &e);
	close(fd);
}

/* The descriptor of a shard, kept open while one thread probes its
 * members (candidates come shard by shard). */
struct shard_fd {
	uint32_t shard;
	int fd;
};

static void probe_member(rfb_jpeg_probe *jp, const struct cand_list *l,
			 const struct candidate *c, struct shard_fd *sf,
			 uint64_t max_pixels, unsigned char **buf, size_t *cap,
			 struct probe_result *r)
{
	rfb_err e = { 0 };
	struct rfb_jpeg_info info;

	if (sf->shard != c->shard) {
		if (sf->fd >= 0)
			close(sf->fd);
		sf->shard = c->shard;
		sf->fd = open(l->shards[c->shard - 1].full,
			      O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (sf->fd < 0) {
			rfb_err_sys(&e, errno, NULL, "cannot open the shard");
			fail_result(r, &e);
			sf->shard = RFB_INDEX_NO_SHARD;
			return;
		}
	}
	if (probe_bytes(jp, sf->fd, c->offset, c->bytes, max_pixels, buf, cap,
			&info, &e) == 0)
		set_result(r, c->bytes, &info);
	else
		fail_result(r, &e);
}

/* One candidate: bad already, a shard member or a file. */
static void probe_one(struct probe_job *j, size_t i, rfb_jpeg_probe *jp,
		      int dirfd, struct shard_fd *sf, unsigned char **buf,
		      size_t *cap)
{
	const struct candidate *c = &j->list->v[i];
	struct probe_result *r = &j->res[i];

	if (c->code) {
		r->code = c->code;
		r->why = c->why ? strdup(c->why) : NULL;
	} else if (c->shard != RFB_INDEX_NO_SHARD) {
		probe_member(jp, j->list, c, sf, j->opts->max_pixels, buf, cap, r);
	} else {
		probe_file(jp, dirfd, cand_path(j->list, i), j->opts->max_pixels,
			   buf, cap, r);
	}
}

/* Take candidates until none are left.  The calling thread passes
 * report = 1 and reports progress between its files. */
static void probe_loop(struct probe_job *j, int report)
{
	unsigned char *buf = NULL;
	size_t cap = 0;
	rfb_jpeg_probe *jp = rfb_jpeg_probe_new(NULL);
	int dirfd = open(j->list->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct shard_fd sf = { RFB_INDEX_NO_SHARD, -1 };

	for (;;) {
		size_t i = atomic_fetch_add(&j->next, 1);
		struct probe_result *r;
		if (i >= j->list->n || atomic_load(&j->stop))
			break;
		r = &j->res[i];
		if (!jp || dirfd < 0) {
			rfb_err e;
			rfb_err_set(&e, RFB_ENOMEM, NULL, "cannot start a reader");
			fail_result(r, &e);
		} else {
			probe_one(j, i, jp, dirfd, &sf, &buf, &cap);
		}
		if (r->code && j->opts->strict)
			atomic_store(&j->stop, 1);
		size_t done = atomic_fetch_add(&j->done, 1) + 1;
		if (report && j->opts->on_progress && done % 128 == 0)
			j->opts->on_progress(j->opts->ctx, done, j->list->n);
	}
	if (dirfd >= 0)
		close(dirfd);
	if (sf.fd >= 0)
		close(sf.fd);
	rfb_jpeg_probe_free(jp);
	free(buf);
}

static void *probe_thread(void *arg)
{
	probe_loop(arg, 0);
	return NULL;
}

static void run_probes(struct probe_job *j, int threads)
{
	pthread_t tid[256];
	int started = 0;

	for (int t = 1; t < threads && started < 256; t++)
		if (pthread_create(&tid[started], NULL, probe_thread, j) == 0)
			started++;
	probe_loop(j, 1);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	if (j->opts->on_progress)
		j->opts->on_progress(j->opts->ctx, atomic_load(&j->done),
				     j->list->n);
}

/* The error of a bad candidate: a file names itself, a shard member
 * names its shard, and the member in the message. */
static void name_bad(const struct cand_list *l, size_t i,
		     const struct probe_result *r, rfb_err *why)
{
	const char *reason = r->why ? r->why : rfb_strerror(r->code);
	uint32_t k = l->v[i].shard;

	if (k == RFB_INDEX_NO_SHARD)
		rfb_err_set(why, r->code, cand_path(l, i), "%s", reason);
	else if (l->v[i].whole)
		rfb_err_set(why, r->code, l->shards[k - 1].full, "%s", reason);
	else
		rfb_err_set(why, r->code, l->shards[k - 1].full, "member %s: %s",
			    cand_path(l, i), reason);
	why->sys_errno = r->sys_errno;
}

/* Add the good results to a new builder, reporting the bad ones. */
static int build(const struct cand_list *l, const struct rfb_scan_opts *o,
		 const struct probe_result *res, rfb_index_builder *b,
		 struct rfb_scan_stats *st, rfb_err *err)
{
	int rc;

	for (uint32_t c = 0; c < l->class_count; c++)
		if ((rc = rfb_index_builder_add_class(b, l->classes[c], err)))
			return rc;
	for (uint32_t k = 0; k < l->shard_count; k++)
		if ((rc = rfb_index_builder_add_shard(b, l->shards[k].path,
						      l->shards[k].size,
						      l->shards[k].mtime_ns, err)))
			return rc;
	for (size_t i = 0; i < l->n; i++) {
		const struct probe_result *r = &res[i];
		rfb_sample_info s = { 0 };
		if (r->code) {
			rfb_err why;
			name_bad(l, i, r, &why);
			/* out of descriptors, memory or I/O: the file may be
			 * fine; leaving it out would change the dataset */
			if (rfb_err_is_system(&why)) {
				*err = why;
				return r->code;
			}
			st->bad++;
			if (o->on_bad)
				o->on_bad(o->ctx, why.path, &why);
			if (o->strict) {
				*err = why;
				return r->code;
			}
			continue;
		}
		s.label = l->v[i].label;
		s.bytes = r->bytes;
		s.width = r->width;
		s.height = r->height;
		s.channels = r->components;
		s.colorspace = r->colorspace;
		s.subsampling = r->subsampling;
		s.path = cand_path(l, i);
		s.shard = l->v[i].shard;
		s.offset = l->v[i].offset;
		if ((rc = rfb_index_builder_add(b, &s, err)))
			return rc;
		st->indexed++;
	}
	return 0;
}

/* Append the name of the empty class that is the n-th (from 0) to
 * st->empty_names: the first four, then "...". */
static void name_empty_class(struct rfb_scan_stats *st, uint32_t n,
			     const char *name)
{
	size_t used = strlen(st->empty_names), room = sizeof st->empty_names - used;
	int k;

	if (n > 4)
		return;
	k = snprintf(st->empty_names + used, room, "%s%s", n ? ", " : "",
		     n < 4 ? name : "...");
	if (k < 0 || (size_t)k >= room)
		st->empty_names[used] = '\0'; /* no name cut in half */
}

static void count_empty_classes(const struct cand_list *l,
				const struct probe_result *res,
				struct rfb_scan_stats *st)
{
	unsigned char *seen = calloc(l->class_count ? l->class_count : 1, 1);

	if (!seen)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (!res[i].code)
			seen[l->v[i].label] = 1;
	st->classes = l->class_count;
	st->empty_classes = 0;
	st->empty_names[0] = '\0';
	for (uint32_t c = 0; c < l->class_count; c++)
		if (!seen[c])
			name_empty_class(st, st->empty_classes++, l->classes[c]);
	free(seen);
}

int rfbi_probe_and_build(const struct cand_list *l, const struct rfb_scan_opts *o,
			 rfb_index_builder **out, struct rfb_scan_stats *st,
			 rfb_err *err)
{
	struct probe_job j = { .list = l, .opts = o };
	rfb_index_builder *b = NULL;
	int rc;

	memset(st, 0, sizeof *st);
	st->candidates = l->n;
	j.res = calloc(l->n ? l->n : 1, sizeof *j.res);
	if (!j.res)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	run_probes(&j, o->threads < 1 ? 1 : o->threads);
	b = rfb_index_builder_new(l->root, err);
	rc = b ? build(l, o, j.res, b, st, err) : RFB_ENOMEM;
	count_empty_classes(l, j.res, st);
	for (size_t i = 0; i < l->n; i++)
		free(j.res[i].why);
	free(j.res);
	if (rc == 0 && st->indexed == 0)
		rc = rfb_err_set(err, RFB_ENOTFOUND, l->root,
				 "no usable JPEG or PNG images (%llu candidate files, "
				 "all bad)", (unsigned long long)st->candidates);
	if (rc) {
		rfb_index_builder_free(b);
		return rc;
	}
	*out = b;
	return 0;
}
