/*
 * index_build.c - building an index in memory and serializing it in the
 * refurb-index(5) layout (the reading side is index_read.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/format.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "index_internal.h"

/* Writes format version 2 (index_read.c reads 1 and 2). */
#define HEADER_SIZE INDEX_HEADER_SIZE
#define RECORD_SIZE INDEX_RECORD_SIZE

/* A byte vector that grows by doubling. */
struct bytevec {
	unsigned char *data;
	size_t len, cap;
};

struct rfb_index_builder {
	char *root;
	uint32_t class_count, count, shard_count;
	struct bytevec classes, records, paths, shards;
	uint64_t *shard_sizes;   /* to check the samples' byte ranges */
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
	free(b);
}

int rfb_index_builder_add_class(rfb_index_builder *b, const char *name,
				rfb_err *err)
{
	size_t n = strlen(name);
	unsigned char len[4];
	int rc;

	if (n > RFB_INDEX_MAX_CLASS_NAME)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "class name longer than %u bytes",
				   RFB_INDEX_MAX_CLASS_NAME);
	if (b->class_count >= RFB_INDEX_MAX_CLASSES)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "more than %u classes", RFB_INDEX_MAX_CLASSES);
	rfb_put_le32(len, (uint32_t)n);
	if ((rc = vec_append(&b->classes, len, 4, err)) ||
	    (rc = vec_append(&b->classes, name, n + 1, err)))
		return rc;
	b->class_count++;
	return 0;
}

int rfb_index_builder_add_shard(rfb_index_builder *b, const char *path,
				uint64_t size, int64_t mtime_ns, rfb_err *err)
{
	size_t n = strlen(path);
	unsigned char head[20];
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
	rfb_put_le64(head, size);
	rfb_put_le64(head + 8, (uint64_t)mtime_ns);
	rfb_put_le32(head + 16, (uint32_t)n);
	if ((rc = vec_append(&b->shards, head, sizeof head, err)) ||
	    (rc = vec_append(&b->shards, path, n + 1, err)))
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

int rfb_index_builder_add(rfb_index_builder *b, const rfb_sample_info *s,
			  rfb_err *err)
{
	unsigned char r[RECORD_SIZE] = { 0 };
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
	rfb_put_le32(r, s->label);
	rfb_put_le32(r + 4, s->width);
	rfb_put_le32(r + 8, s->height);
	r[12] = s->channels;
	r[13] = s->colorspace;
	r[14] = s->subsampling;
	rfb_put_le64(r + 16, s->bytes);
	rfb_put_le64(r + 24, b->paths.len);
	rfb_put_le32(r + 32, (uint32_t)plen);
	rfb_put_le32(r + 36, s->shard);
	rfb_put_le64(r + 40, s->offset);
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

int rfb_index_builder_finish(rfb_index_builder *b, unsigned char **data,
			     size_t *len, rfb_err *err)
{
	size_t root_len = strlen(b->root);
	const struct bytevec *part[4] = { &b->classes, &b->records, &b->paths,
					  &b->shards };
	size_t body = root_len, at;
	unsigned char *d, *p;

	for (int i = 0; i < 4; i++)
		body += part[i]->len;
	if (!(d = malloc(HEADER_SIZE + body)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	p = d + HEADER_SIZE;
	memcpy(p, b->root, root_len);
	at = root_len;
	for (int i = 0; i < 4; i++) {
		/* memcpy with a NULL source is undefined even for 0 bytes */
		if (part[i]->len)
			memcpy(p + at, part[i]->data, part[i]->len);
		at += part[i]->len;
	}
	memset(d, 0, HEADER_SIZE);
	memcpy(d, RFB_INDEX_MAGIC "\x02", 8);
	rfb_put_le64(d + 8, b->count);
	rfb_put_le32(d + 16, b->class_count);
	rfb_put_le32(d + 20, RECORD_SIZE);
	rfb_put_le32(d + 24, (uint32_t)root_len);
	rfb_put_le32(d + 28, b->shard_count);
	rfb_put_le64(d + 32, b->classes.len);
	rfb_put_le64(d + 40, b->paths.len);
	rfb_put_le64(d + 48, b->shards.len);
	rfb_put_le64(d + 56, rfbi_index_identity_v2(b->classes.data ? b->classes.data
					       : d, b->classes.len,
					       b->records.data, b->count));
	rfb_put_le32(d + 64, rfb_crc32c(0, p, body));
	rfb_put_le32(d + 76, rfb_crc32c(0, d, 76));
	*data = d;
	*len = HEADER_SIZE + body;
	return 0;
}
