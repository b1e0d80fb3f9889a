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
#include "index_scan_internal.h"

#define FIRST_READ 16384 /* enough for the header of most files */

struct probe_result {
	uint64_t bytes;
	uint32_t width, height;
	uint8_t components, colorspace, subsampling;
	int code;   /* 0 = good */
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
	r->why = strdup(e->msg);
}

/* Read the header of one file, reading more of it when the first chunk
 * does not reach the start of frame. */
static void probe_file(rfb_jpeg_probe *jp, int dirfd, const char *path,
		       uint64_t max_pixels, unsigned char **buf, size_t *cap,
		       struct probe_result *r)
{
	rfb_err e = { 0 };
	struct rfb_jpeg_info info;
	struct stat st;
	size_t want = FIRST_READ;
	ssize_t got;
	int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		rfb_err_sys(&e, errno, NULL, "cannot open");
		fail_result(r, &e);
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rfb_err_set(&e, RFB_EINVAL, NULL, "not a regular file");
		goto fail;
	}
	if (st.st_size == 0) {
		rfb_err_set(&e, RFB_EFORMAT, NULL, "empty file");
		goto fail;
	}
	for (;;) {
		if (want > (size_t)st.st_size)
			want = (size_t)st.st_size;
		if (*cap < want) {
			unsigned char *nb = realloc(*buf, want);
			if (!nb) {
				rfb_err_set(&e, RFB_ENOMEM, NULL, "out of memory");
				goto fail;
			}
			*buf = nb;
			*cap = want;
		}
		got = rfb_pread_full(fd, *buf, want, 0);
		if (got < 0) {
			rfb_err_sys(&e, errno, NULL, "read failed");
			goto fail;
		}
		int rc = rfb_jpeg_read_header(jp, *buf, (size_t)got, max_pixels,
					      &info, &e);
		if (rc == 0)
			break;
		if (rc != RFB_ETRUNC || (size_t)got < want ||
		    want == (size_t)st.st_size)
			goto fail;
		want *= 16; /* a big EXIF block before the frame header */
	}
	close(fd);
	r->bytes = (uint64_t)st.st_size;
	r->width = (uint32_t)info.width;
	r->height = (uint32_t)info.height;
	r->components = (uint8_t)info.components;
	r->colorspace = (uint8_t)info.colorspace;
	r->subsampling = (uint8_t)info.subsampling;
	r->code = 0;
	return;
fail:
	close(fd);
	fail_result(r, &e);
}

/* Take candidates until none are left.  The calling thread passes
 * report = 1 and reports progress between its files. */
static void probe_loop(struct probe_job *j, int report)
{
	unsigned char *buf = NULL;
	size_t cap = 0;
	rfb_jpeg_probe *jp = rfb_jpeg_probe_new(NULL);
	int dirfd = open(j->list->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

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
			probe_file(jp, dirfd, cand_path(j->list, i),
				   j->opts->max_pixels, &buf, &cap, r);
		}
		if (r->code && j->opts->strict)
			atomic_store(&j->stop, 1);
		size_t done = atomic_fetch_add(&j->done, 1) + 1;
		if (report && j->opts->on_progress && done % 128 == 0)
			j->opts->on_progress(j->opts->ctx, done, j->list->n);
	}
	if (dirfd >= 0)
		close(dirfd);
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

/* Add the good results to a new builder, reporting the bad ones. */
static int build(const struct cand_list *l, const struct rfb_scan_opts *o,
		 const struct probe_result *res, rfb_index_builder *b,
		 struct rfb_scan_stats *st, rfb_err *err)
{
	int rc;

	for (uint32_t c = 0; c < l->class_count; c++)
		if ((rc = rfb_index_builder_add_class(b, l->classes[c], err)))
			return rc;
	for (size_t i = 0; i < l->n; i++) {
		const struct probe_result *r = &res[i];
		rfb_sample_info s = { 0 };
		if (r->code) {
			rfb_err why;
			rfb_err_set(&why, r->code, cand_path(l, i), "%s",
				    r->why ? r->why : rfb_strerror(r->code));
			st->bad++;
			if (o->on_bad)
				o->on_bad(o->ctx, cand_path(l, i), &why);
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
		if ((rc = rfb_index_builder_add(b, &s, err)))
			return rc;
		st->indexed++;
	}
	return 0;
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
	for (uint32_t c = 0; c < l->class_count; c++)
		st->empty_classes += !seen[c];
	free(seen);
}

int probe_and_build(const struct cand_list *l, const struct rfb_scan_opts *o,
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
				 "no usable JPEG images (%llu candidate files, "
				 "all bad)", (unsigned long long)st->candidates);
	if (rc) {
		rfb_index_builder_free(b);
		return rc;
	}
	*out = b;
	return 0;
}
