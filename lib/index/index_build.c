/*
 * index_build.c - building an index and serializing it in the
 * refurb-index(5) layout (the reading side is index_read.c).  Samples come
 * in sample-id order, so the records and the paths are appended, never
 * sorted: with a memory budget (rfb_index_builder_set_memory) they are
 * flushed, whenever the budget is full, to two unlinked temporary files
 * and streamed back when the index is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "index_internal.h"
#include "index_spill_internal.h"

/* Writes format version 2 (index_read.c reads 1 and 2). */
#define RECORD_SIZE INDEX_RECORD_SIZE

/* A byte vector that grows by doubling. */
struct bytevec {
	unsigned char *data;
	size_t len, cap;
};

/* A section whose start may have been flushed to an unlinked file. */
struct spill {
	int fd;                  /* -1 until the first flush */
	uint64_t flushed;        /* bytes in the file; the rest is in memory */
};

struct rfb_index_builder {
	char *root;
	uint32_t class_count, count, shard_count;
	struct bytevec classes, records, paths, shards;
	uint64_t *shard_sizes;   /* to check the samples' byte ranges */
	size_t memory;           /* budget of records + paths, 0: none */
	char *spill_dir;         /* where the flushed parts go */
	struct spill spill_records, spill_paths;
};

static int vec_append(struct bytevec *v, const void *p, size_t n, rfb_err *err)
{
	if (v->cap - v->len < n) {
		size_t cap = v->cap ? v->cap : 4096;
		unsigned char *nd;
		while (cap - v->len < n) {
			if (rfb_mul_size(cap, 2, &cap))
				return rfb_err_set(err, RFB_ELIMIT, NULL,
						   "index too large");
		}
		nd = realloc(v->data, cap);
		if (!nd)
			return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		v->data = nd;
		v->cap = cap;
	}
	memcpy(v->data + v->len, p, n);
	v->len += n;
	return 0;
}

rfb_index_builder *rfb_index_builder_new(const char *root, rfb_err *err)
{
	rfb_index_builder *b = calloc(1, sizeof *b);

	if (!b || !(b->root = rfb_path_absolute(root, 0))) {
		free(b);
		rfb_err_set(err, RFB_ENOMEM, root, "out of memory");
		return NULL;
	}
	b->spill_records.fd = b->spill_paths.fd = -1;
	if (strlen(b->root) > RFB_INDEX_MAX_PATH) {
		rfb_err_set(err, RFB_ELIMIT, root, "root path too long");
		rfb_index_builder_free(b);
		return NULL;
	}
	return b;
}

void rfb_index_builder_free(rfb_index_builder *b)
{
	if (!b)
		return;
	free(b->root);
	free(b->classes.data);
	free(b->records.data);
	free(b->paths.data);
	free(b->shards.data);
	free(b->shard_sizes);
	free(b->spill_dir);
	if (b->spill_records.fd >= 0)
		close(b->spill_records.fd);
	if (b->spill_paths.fd >= 0)
		close(b->spill_paths.fd);
	free(b);
}

int rfb_index_builder_add_class(rfb_index_builder *b, const char *name,
				rfb_err *err)
{
	size_t n = strlen(name);
	unsigned char entry[INDEX_CLASS_HEAD + RFB_INDEX_MAX_CLASS_NAME + 1];
	int rc;

	if (n > RFB_INDEX_MAX_CLASS_NAME)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "class name longer than %u bytes",
				   RFB_INDEX_MAX_CLASS_NAME);
	if (b->class_count >= RFB_INDEX_MAX_CLASSES)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "more than %u classes", RFB_INDEX_MAX_CLASSES);
	n = rfbi_index_class_encode(name, (uint32_t)n, entry);
	if ((rc = vec_append(&b->classes, entry, n, err)))
		return rc;
	b->class_count++;
	return 0;
}

int rfb_index_builder_add_shard(rfb_index_builder *b, const char *path,
				uint64_t size, int64_t mtime_ns, rfb_err *err)
{
	struct index_shard_entry e = { size, mtime_ns, 0, path };
	unsigned char entry[INDEX_SHARD_HEAD + RFB_INDEX_MAX_PATH + 1];
	size_t n = strlen(path);
	uint64_t *ns;
	int rc;

	if (n == 0 || n > RFB_INDEX_MAX_PATH)
		return rfb_err_set(err, RFB_ELIMIT, path,
				   "shard path empty or longer than %u bytes",
				   RFB_INDEX_MAX_PATH);
	if (b->shard_count >= RFB_INDEX_MAX_SHARDS)
		return rfb_err_set(err, RFB_ELIMIT, path, "more than %u shards",
				   RFB_INDEX_MAX_SHARDS);
	ns = realloc(b->shard_sizes, (b->shard_count + 1) * sizeof *ns);
	if (!ns)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	b->shard_sizes = ns;
	ns[b->shard_count] = size;
	e.path_len = (uint32_t)n;
	n = rfbi_index_shard_encode(&e, entry);
	if ((rc = vec_append(&b->shards, entry, n, err)))
		return rc;
	b->shard_count++;
	return 0;
}

/* A shard sample's byte range lies inside its shard; a file's offset is 0. */
static int check_range(const rfb_index_builder *b, const rfb_sample_info *s,
		       rfb_err *err)
{
	if (s->shard == RFB_INDEX_NO_SHARD) {
		if (s->offset == 0)
			return 0;
	} else if (s->shard <= b->shard_count &&
		   s->offset <= b->shard_sizes[s->shard - 1] &&
		   s->bytes <= b->shard_sizes[s->shard - 1] - s->offset) {
		return 0;
	}
	return rfb_err_set(err, RFB_EINVAL, s->path,
			   "shard %u or byte range %llu+%llu out of range",
			   s->shard, (unsigned long long)s->offset,
			   (unsigned long long)s->bytes);
}

/* ---- the memory budget ---- */

int rfb_index_builder_set_memory(rfb_index_builder *b, size_t bytes,
				 const char *dir, rfb_err *err)
{
	if (bytes && bytes < RFB_INDEX_MIN_MEMORY)
		return rfb_err_set(err, RFB_EINVAL, NULL, "memory budget of %zu "
				   "bytes, less than the %u an index needs",
				   bytes, RFB_INDEX_MIN_MEMORY);
	if (b->count)
		return rfb_err_set(err, RFB_EINVAL, NULL, "memory budget set "
				   "after the first sample");
	free(b->spill_dir);
	b->spill_dir = NULL;
	if (bytes && !(b->spill_dir = strdup(dir ? dir : "/tmp")))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	b->memory = bytes;
	return 0;
}

/* Open an unlinked file in the spill directory: it vanishes with the
 * process, however the process ends. */
static int spill_open(const rfb_index_builder *b, rfb_err *err)
{
	return rfbi_temp_open(b->spill_dir, err);
}

/* Append v's bytes to s's file and empty v (its memory is kept). */
static int spill_flush(const rfb_index_builder *b, struct spill *s,
		       struct bytevec *v, rfb_err *err)
{
	if (!v->len)
		return 0;
	if (s->fd < 0 && (s->fd = spill_open(b, err)) < 0)
		return err->code;
	if (rfb_write_full(s->fd, v->data, v->len) < 0)
		return rfb_err_sys(err, errno, b->spill_dir, "cannot write a "
				   "temporary file (free space there, or write "
				   "the index elsewhere)");
	s->flushed += v->len;
	v->len = 0;
	return 0;
}

/* Half the budget for the records, half for the paths, each allocated
 * once and flushed when the next sample does not fit. */
static int make_room(rfb_index_builder *b, size_t path_bytes, rfb_err *err)
{
	size_t half = b->memory / 2;
	struct bytevec *v[2] = { &b->records, &b->paths };
	int rc;

	for (int i = 0; i < 2; i++)
		if (!v[i]->data) {
			if (!(v[i]->data = malloc(half)))
				return rfb_err_set(err, RFB_ENOMEM, NULL,
						   "out of memory");
			v[i]->cap = half;
		}
	if (b->records.cap - b->records.len >= RECORD_SIZE &&
	    b->paths.cap - b->paths.len >= path_bytes)
		return 0;
	if ((rc = spill_flush(b, &b->spill_records, &b->records, err)))
		return rc;
	return spill_flush(b, &b->spill_paths, &b->paths, err);
}

int rfb_index_builder_add(rfb_index_builder *b, const rfb_sample_info *s,
			  rfb_err *err)
{
	unsigned char r[RECORD_SIZE];
	struct index_record rec = {
		.label = s->label, .width = s->width, .height = s->height,
		.channels = s->channels, .colorspace = s->colorspace,
		.subsampling = s->subsampling, .bytes = s->bytes,
		.shard = s->shard, .offset = s->offset,
	};
	size_t plen = strlen(s->path);
	int rc;

	if (plen == 0 || plen > RFB_INDEX_MAX_PATH)
		return rfb_err_set(err, RFB_ELIMIT, s->path,
				   "path empty or longer than %u bytes",
				   RFB_INDEX_MAX_PATH);
	if (s->label >= b->class_count)
		return rfb_err_set(err, RFB_EINVAL, s->path,
				   "label %u but only %u classes", s->label,
				   b->class_count);
	if (b->count >= RFB_INDEX_MAX_SAMPLES)
		return rfb_err_set(err, RFB_ELIMIT, s->path,
				   "more than %u samples", RFB_INDEX_MAX_SAMPLES);
	if ((rc = check_range(b, s, err)))
		return rc;
	if (b->memory && (rc = make_room(b, plen + 1, err)))
		return rc;
	rec.path_offset = b->spill_paths.flushed + b->paths.len;
	rec.path_len = (uint32_t)plen;
	rfbi_index_record_encode(&rec, r);
	if ((rc = vec_append(&b->records, r, sizeof r, err)) ||
	    (rc = vec_append(&b->paths, s->path, plen + 1, err)))
		return rc;
	b->count++;
	return 0;
}

uint32_t rfb_index_builder_count(const rfb_index_builder *b)
{
	return b->count;
}

/* ---- writing ---- */

/* Where the index goes: a file descriptor, or a buffer of its size. */
struct sink {
	int fd;                  /* -1: into buf */
	unsigned char *buf;
	size_t at;
	const char *name;        /* for messages */
};

static int sink_put(struct sink *k, const void *p, size_t n, rfb_err *err)
{
	if (!n)
		return 0;
	if (k->fd < 0) {
		memcpy(k->buf + k->at, p, n);
		k->at += n;
		return 0;
	}
	if (rfb_write_full(k->fd, p, n) < 0)
		return rfb_err_sys(err, errno, k->name, "write failed");
	return 0;
}

/* What a pass over the body does with each piece: the first pass sums
 * (CRC and identity), the second writes. */
struct pass {
	struct sink *out;        /* NULL: sum only */
	uint32_t crc;
	uint64_t identity;
};

static int pass_put(struct pass *p, const unsigned char *d, size_t n,
		    int records, rfb_err *err)
{
	if (p->out)
		return sink_put(p->out, d, n, err);
	p->crc = rfb_crc32c(p->crc, d, n);
	if (records)
		p->identity = rfbi_index_identity_records(p->identity, d,
							  n / RECORD_SIZE);
	return 0;
}

/* A section: its flushed part read back in whole records, then the rest
 * in memory. */
static int pass_section(struct pass *p, const struct spill *s,
			const struct bytevec *v, int records, rfb_err *err)
{
	enum { CHUNK = RECORD_SIZE * 21845 };   /* about 1 MiB */
	unsigned char *buf = NULL;
	int rc = 0;

	if (s->flushed && !(buf = malloc(CHUNK)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	for (uint64_t at = 0; rc == 0 && at < s->flushed; at += CHUNK) {
		size_t n = s->flushed - at < CHUNK ? (size_t)(s->flushed - at)
						   : CHUNK;
		ssize_t got = rfb_pread_full(s->fd, buf, n, (off_t)at);
		if (got < 0 || (size_t)got != n)
			rc = rfb_err_sys(err, got < 0 ? errno : EIO, NULL,
					 "cannot read back a temporary file");
		else
			rc = pass_put(p, buf, n, records, err);
	}
	free(buf);
	return rc ? rc : pass_put(p, v->data, v->len, records, err);
}

static int pass_body(const rfb_index_builder *b, struct pass *p, rfb_err *err)
{
	const struct spill none = { -1, 0 };
	int rc;

	if ((rc = pass_put(p, (const unsigned char *)b->root, strlen(b->root),
			   0, err)) ||
	    (rc = pass_section(p, &none, &b->classes, 0, err)))
		return rc;
	p->identity = rfb_hash64(b->classes.data ? b->classes.data
				 : (const unsigned char *)"", b->classes.len,
				 b->count);
	if ((rc = pass_section(p, &b->spill_records, &b->records, 1, err)) ||
	    (rc = pass_section(p, &b->spill_paths, &b->paths, 0, err)))
		return rc;
	return pass_section(p, &none, &b->shards, 0, err);
}

static uint64_t body_size(const rfb_index_builder *b)
{
	return strlen(b->root) + b->classes.len + b->spill_records.flushed +
	       b->records.len + b->spill_paths.flushed + b->paths.len +
	       b->shards.len;
}

static int write_all(const rfb_index_builder *b, struct sink *out,
		     rfb_err *err)
{
	struct pass sum = { 0 }, put = { .out = out };
	unsigned char d[INDEX_HEADER_SIZE];
	struct index_header h = {
		.count = b->count, .class_count = b->class_count,
		.root_len = (uint32_t)strlen(b->root),
		.shard_count = b->shard_count, .classes_len = b->classes.len,
		.paths_len = b->spill_paths.flushed + b->paths.len,
		.shards_len = b->shards.len,
	};
	int rc;

	if ((rc = pass_body(b, &sum, err)))
		return rc;
	h.identity = sum.identity;
	h.body_crc = sum.crc;
	rfbi_index_header_encode(&h, d);
	if ((rc = sink_put(out, d, sizeof d, err)))
		return rc;
	return pass_body(b, &put, err);
}

int rfb_index_builder_write(const rfb_index_builder *b, int fd,
			    const char *name, rfb_err *err)
{
	struct sink k = { .fd = fd, .name = name };

	return write_all(b, &k, err);
}

int rfb_index_builder_finish(rfb_index_builder *b, unsigned char **data,
			     size_t *len, rfb_err *err)
{
	uint64_t size = INDEX_HEADER_SIZE + body_size(b);
	struct sink k = { .fd = -1 };
	int rc;

	if (size > SIZE_MAX || !(k.buf = malloc((size_t)size)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if ((rc = write_all(b, &k, err))) {
		free(k.buf);
		return rc;
	}
	*data = k.buf;
	*len = (size_t)size;
	return 0;
}
