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
#include "refurb/index.h"

#define HEADER_SIZE 64
#define RECORD_SIZE 40

/* A byte vector that grows by doubling. */
struct bytevec {
	unsigned char *data;
	size_t len, cap;
};

struct rfb_index_builder {
	char *root;
	uint32_t class_count, count;
	struct bytevec classes, records, paths;
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

static char *absolute_root(const char *root)
{
	char *abs = realpath(root, NULL);
	char cwd[PATH_MAX];
	size_t n;

	if (abs)
		return abs;
	/* not (yet) existing: make it absolute textually */
	if (root[0] == '/')
		return strdup(root);
	if (!getcwd(cwd, sizeof cwd))
		return NULL;
	n = strlen(cwd) + strlen(root) + 2;
	abs = malloc(n);
	if (abs)
		snprintf(abs, n, "%s/%s", cwd, root);
	return abs;
}

rfb_index_builder *rfb_index_builder_new(const char *root, rfb_err *err)
{
	rfb_index_builder *b = calloc(1, sizeof *b);

	if (!b || !(b->root = absolute_root(root))) {
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
	rfb_put_le32(r, s->label);
	rfb_put_le32(r + 4, s->width);
	rfb_put_le32(r + 8, s->height);
	r[12] = s->channels;
	r[13] = s->colorspace;
	r[14] = s->subsampling;
	rfb_put_le64(r + 16, s->bytes);
	rfb_put_le64(r + 24, b->paths.len);
	rfb_put_le32(r + 32, (uint32_t)plen);
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
	size_t body = root_len + b->classes.len + b->records.len + b->paths.len;
	unsigned char *d = malloc(HEADER_SIZE + body), *p;

	if (!d)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	p = d + HEADER_SIZE;
	memcpy(p, b->root, root_len);
	/* memcpy with a NULL source is undefined even for 0 bytes */
	if (b->classes.len)
		memcpy(p + root_len, b->classes.data, b->classes.len);
	if (b->records.len)
		memcpy(p + root_len + b->classes.len, b->records.data,
		       b->records.len);
	if (b->paths.len)
		memcpy(p + root_len + b->classes.len + b->records.len,
		       b->paths.data, b->paths.len);
	memset(d, 0, HEADER_SIZE);
	memcpy(d, "RFBINDX\x01", 8);
	rfb_put_le64(d + 8, b->count);
	rfb_put_le32(d + 16, b->class_count);
	rfb_put_le32(d + 20, RECORD_SIZE);
	rfb_put_le32(d + 24, (uint32_t)root_len);
	rfb_put_le64(d + 32, b->classes.len);
	rfb_put_le64(d + 40, b->paths.len);
	rfb_put_le64(d + 48, rfb_hash64(p + root_len, body - root_len, b->count));
	rfb_put_le32(d + 56, rfb_crc32c(0, p, body));
	rfb_put_le32(d + 60, rfb_crc32c(0, d, 60));
	*data = d;
	*len = HEADER_SIZE + body;
	return 0;
}
