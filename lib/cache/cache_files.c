/*
 * cache_files.c - the cache directory's files as seen from outside the
 * writer: the manifest file, segment names, the reader's view with
 * its open segments, and the record-by-record scan (refurb-cache(5); the
 * bytes of each record are cache_format.c's).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "refurb/checksum.h"
#include "refurb/io.h"

/* ---- manifest ---- */

uint64_t rfbi_cache_manifest_hash(const struct rfb_cache_manifest *m)
{
	unsigned char b[MANIFEST_FIXED + RFB_CACHE_MAX_SPEC + 4];
	size_t n = rfbi_cache_manifest_encode(m, b);

	return rfb_hash64(b, n, 0);
}

int rfbi_cache_write_manifest(const char *dir, const struct rfb_cache_manifest *m,
			      rfb_err *err)
{
	unsigned char b[MANIFEST_FIXED + RFB_CACHE_MAX_SPEC + 4];
	char path[4200];

	snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
	return rfb_file_replace(path, b, rfbi_cache_manifest_encode(m, b), err);
}

int rfb_cache_read_manifest(const char *dir, struct rfb_cache_manifest *m,
			    rfb_err *err)
{
	char path[4200];
	unsigned char *b;
	size_t len;
	int rc;

	snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
	if ((rc = rfb_file_load(path, MANIFEST_FIXED + RFB_CACHE_MAX_SPEC + 4,
				&b, &len, err)))
		return rc;
	rc = rfb_cache_parse_manifest(b, len, path, m, err);
	free(b);
	return rc;
}

const char *rfb_cache_manifest_diff(const struct rfb_cache_manifest *a,
				    const struct rfb_cache_manifest *b)
{
	if (a->index_identity != b->index_identity)
		return "index";
	if (a->samples != b->samples)
		return "sample count";
	if (a->schedule_identity != b->schedule_identity)
		return "schedule";
	if (strcmp(a->pipeline, b->pipeline) != 0)
		return "pipeline";
	if (a->seed != b->seed)
		return "seed";
	if (a->codec.kind != b->codec.kind || a->codec.level != b->codec.level)
		return "codec";
	return NULL;
}

const char *rfbi_cache_manifest_hint(const char *diff)
{
	if (strcmp(diff, "schedule") == 0)
		return " (another r, eviction seed, policy or shard of refurb-evict)";
	if (strcmp(diff, "seed") == 0)
		return " (refurb-partial's augmentation seed)";
	return "";
}

/* ---- segments ---- */

int rfb_cache_segment_path(const char *dir, uint32_t segment, char *buf,
			   size_t n)
{
	int len = snprintf(buf, n, "%s/%08x.seg", dir, segment);

	return len < 0 || (size_t)len >= n ? RFB_ELIMIT : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Is name "XXXXXXXX.seg" (8 lowercase hex digits)?  Sets *id. */
static int segment_name(const char *name, uint32_t *id)
{
	char *end;

	if (strlen(name) != 12 || strcmp(name + 8, ".seg") != 0)
		return 0;
	for (int i = 0; i < 8; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return 0;
	*id = (uint32_t)strtoul(name, &end, 16);
	/* ffffffff is RFB_CACHE_NO_SEGMENT, never a segment */
	return end == name + 8 && *id != RFB_CACHE_NO_SEGMENT;
}

int rfbi_cache_list_segments(const char *dir, uint32_t **ids, size_t *n,
			     rfb_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint32_t *v = NULL, id;
	size_t cap = 0, count = 0;

	if (!d)
		return rfb_err_sys(err, errno, dir, "cannot read cache directory");
	while ((e = readdir(d))) {
		if (!segment_name(e->d_name, &id))
			continue;
		if (count == cap) {
			uint32_t *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
			if (!nv) {
				free(v);
				closedir(d);
				return rfb_err_set(err, RFB_ENOMEM, dir, "out of memory");
			}
			v = nv;
		}
		v[count++] = id;
	}
	closedir(d);
	if (count)
		qsort(v, count, sizeof *v, cmp_u32);
	*ids = v;
	*n = count;
	return 0;
}

void rfbi_cache_remove_temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4200];

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, CHECKPOINT_NAME ".tmp.", 12) ||
		    !strncmp(e->d_name, MANIFEST_NAME ".tmp.", 13)) {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			(void)unlink(path); /* left for the next writer if it fails */
		}
	closedir(d);
}

/* ---- the reader's view ---- */

struct open_seg {
	uint32_t id;
	int fd;
	uint64_t last_use;       /* the view's tick when it was last asked for */
};

struct rfb_cache_view {
	char *dir;
	int direct;
	int readers_fd;          /* shared flock while the view lives, or -1 */
	struct rfb_cache_manifest man;
	struct open_seg *open;   /* sorted by id */
	size_t nopen, cap;
	uint64_t tick;           /* calls of rfb_cache_view_release */
	uint64_t closed;         /* segments closed by it */
};

rfb_cache_view *rfb_cache_view_open(const char *dir, int direct, rfb_err *err)
{
	rfb_cache_view *v = calloc(1, sizeof *v);
	char path[4200];

	if (!v || !(v->dir = strdup(dir))) {
		free(v);
		rfb_err_set(err, RFB_ENOMEM, dir, "out of memory");
		return NULL;
	}
	v->direct = direct;
	v->readers_fd = -1;
	if (rfb_cache_read_manifest(dir, &v->man, err)) {
		rfb_cache_view_close(v);
		return NULL;
	}
	/* tells a writer that opens the cache that someone reads (an older
	 * cache without the file is read all the same) */
	snprintf(path, sizeof path, "%s/" READERS_NAME, dir);
	if ((v->readers_fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0 &&
	    flock(v->readers_fd, LOCK_SH) < 0) {
		close(v->readers_fd);
		v->readers_fd = -1;
	}
	return v;
}

void rfb_cache_view_close(rfb_cache_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nopen; i++)
		close(v->open[i].fd);
	if (v->readers_fd >= 0)
		close(v->readers_fd);
	free(v->open);
	free(v->dir);
	free(v);
}

const struct rfb_cache_manifest *rfb_cache_view_manifest(const rfb_cache_view *v)
{
	return &v->man;
}

int rfb_cache_view_direct(const rfb_cache_view *v)
{
	return v->direct;
}

int rfb_cache_view_fd(rfb_cache_view *v, uint32_t segment, rfb_err *err)
{
	size_t lo = 0, hi = v->nopen;
	char path[4200];
	int fd;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v->open[mid].id == segment) {
			v->open[mid].last_use = v->tick;
			return v->open[mid].fd;
		}
		if (v->open[mid].id < segment)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (rfb_cache_segment_path(v->dir, segment, path, sizeof path))
		return rfb_err_set(err, RFB_ELIMIT, v->dir, "path too long");
	fd = open(path, O_RDONLY | O_CLOEXEC | (v->direct ? O_DIRECT : 0));
	if (fd < 0 && errno == EINVAL && v->direct) /* no O_DIRECT here */
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT
			? rfb_err_set(err, RFB_ENOTFOUND, path, "segment is gone")
			: rfb_err_sys(err, errno, path, "cannot open segment");
	if (v->nopen == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 32;
		struct open_seg *no = realloc(v->open, cap * sizeof *no);
		if (!no) {
			close(fd);
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		}
		v->open = no;
		v->cap = cap;
	}
	memmove(v->open + lo + 1, v->open + lo, (v->nopen - lo) * sizeof *v->open);
	v->open[lo].id = segment;
	v->open[lo].fd = fd;
	v->open[lo].last_use = v->tick;
	v->nopen++;
	return fd;
}

size_t rfb_cache_view_release(rfb_cache_view *v, uint64_t idle)
{
	size_t j = 0, released = 0;
	struct stat st;

	v->tick++;
	for (size_t i = 0; i < v->nopen; i++) {
		struct open_seg *o = &v->open[i];
		if (v->tick - o->last_use > idle && fstat(o->fd, &st) == 0 &&
		    st.st_nlink == 0) {
			close(o->fd);
			released++;
			continue;
		}
		v->open[j++] = *o;
	}
	v->nopen = j;
	v->closed += released;
	return released;
}

size_t rfb_cache_view_close_unused(rfb_cache_view *v)
{
	size_t j = 0, released = 0;

	v->tick++;
	for (size_t i = 0; i < v->nopen; i++) {
		struct open_seg *o = &v->open[i];
		if (o->last_use + 1 < v->tick) {
			close(o->fd);
			released++;
			continue;
		}
		v->open[j++] = *o;
	}
	v->nopen = j;
	v->closed += released;
	return released;
}

uint64_t rfb_cache_view_closed(const rfb_cache_view *v)
{
	return v->closed;
}

/* ---- scanning ---- */

/* Why the record at off (len bytes, 0 when its header is not whole) of
 * the segment at path is bad when the read gave got bytes: a read error,
 * or a record cut by the end of the file: the torn tail a writer stopped
 * while appending leaves (RFB_ETRUNC), which the next writer cuts. */
static void why_short(rfb_err *why, const char *path, ssize_t got,
		      size_t len)
{
	if (got < 0)
		rfb_err_sys(why, errno, path, "cannot read segment");
	else if (len == 0)
		rfb_err_set(why, RFB_ETRUNC, path, "torn tail: a record header "
			    "cut short by the end of the segment (%zd of %d "
			    "bytes): a writer stopped while appending; the next "
			    "refurb-partial cuts it", got, RFB_RECORD_HEADER_SIZE);
	else
		rfb_err_set(why, RFB_ETRUNC, path, "torn tail: the last record "
			    "is cut short by the end of the segment (%zd of %zu "
			    "bytes): a writer stopped while appending; the next "
			    "refurb-partial cuts it", got, len);
}

/* Visit the records of one segment file, stopping at the first one that
 * cannot be delimited (a bad header, a torn end). */
static int scan_segment(const char *dir, uint32_t id, rfb_cache_visit_fn fn,
			void *ctx, rfb_imgbuf *buf, rfb_err *err)
{
	char path[4200];
	unsigned char h[RFB_CACHE_SEGMENT_HEADER];
	uint32_t hid, death;
	uint64_t off = RFB_CACHE_SEGMENT_HEADER;
	rfb_err why = { 0 };
	int fd, rc = 0;

	if (rfb_cache_segment_path(dir, id, path, sizeof path))
		return rfb_err_set(err, RFB_ELIMIT, dir, "path too long");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return rfb_err_sys(err, errno, path, "cannot open segment");
	ssize_t got = rfb_pread_full(fd, h, sizeof h, 0);
	if (got != (ssize_t)sizeof h ||
	    rfbi_cache_parse_segment_header(h, &hid, &death) || hid != id) {
		if (got >= 0 && got < (ssize_t)sizeof h)
			rfb_err_set(&why, RFB_ETRUNC, path, "segment header cut "
				    "short (%zd of %d bytes): a writer killed while "
				    "creating it; the next writer removes it", got,
				    RFB_CACHE_SEGMENT_HEADER);
		else
			rfb_err_set(&why, RFB_EFORMAT, path, "bad segment header");
		struct rfb_cache_addr a = { id, 0, 0 };
		rc = fn(ctx, id, 0, &a, NULL, &why);
		close(fd);
		return rc;
	}
	for (;;) {
		struct rfb_record_meta m;
		struct rfb_cache_addr a = { id, 0, off };
		ssize_t got = rfb_pread_full(fd, buf->data, RFB_RECORD_HEADER_SIZE,
					     (off_t)off);
		if (got == 0)
			break;
		int bad = got != RFB_RECORD_HEADER_SIZE ||
			  rfb_record_parse_header(buf->data, (size_t)got, &m, &why);
		if (!bad) {
			a.length = (uint32_t)rfb_record_size(&m);
			if ((rc = rfb_imgbuf_reserve(buf, a.length, err)))
				break;
			got = rfb_pread_full(fd, buf->data, a.length, (off_t)off);
			if ((bad = got != (ssize_t)a.length))
				why_short(&why, path, got, a.length);
			else
				bad = rfb_record_verify(buf->data, a.length, &m,
							&why) != 0;
		} else if (got != RFB_RECORD_HEADER_SIZE) {
			why_short(&why, path, got, 0);
		}
		if (bad) {
			/* a whole record whose header checks out but whose
			 * payload does not: its length is trustworthy, so the
			 * records after it are visited too */
			int resync = a.length && got == (ssize_t)a.length;
			snprintf(why.path, sizeof why.path, "%.500s", path);
			if ((rc = fn(ctx, id, death, &a, NULL, &why)) || !resync)
				break;
			off += a.length;
			continue;
		}
		if ((rc = fn(ctx, id, death, &a, &m, NULL)))
			break;
		off += a.length;
	}
	close(fd);
	return rc;
}

int rfb_cache_scan(const char *dir, rfb_cache_visit_fn fn, void *ctx,
		   rfb_err *err)
{
	uint32_t *ids;
	size_t n;
	rfb_imgbuf buf = { 0 };
	int rc;

	if ((rc = rfbi_cache_list_segments(dir, &ids, &n, err)))
		return rc;
	rc = rfb_imgbuf_reserve(&buf, 1 << 20, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = scan_segment(dir, ids[i], fn, ctx, &buf, err);
	rfb_imgbuf_free(&buf);
	free(ids);
	return rc;
}
