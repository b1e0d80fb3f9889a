/*
 * index_read.c - the dataset index: opening and verifying an index file
 * (building it is index_build.c; byte layout in refurb-index(5), API in index.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refurb/checksum.h"
#include "refurb/format.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "index_internal.h"

#define INDEX_MAX_FILE ((size_t)1 << 40)

struct rfb_index {
	unsigned char *data;     /* the whole file */
	size_t len;
	int mapped;              /* data is the file mapped (else malloc'd) */
	unsigned version;
	size_t header_size, record_size;
	uint32_t count, class_count, shard_count;
	uint64_t identity;
	char *root;              /* NUL-terminated copy */
	const unsigned char *records;
	const char *paths;
	size_t paths_len;
	const char **class_names;
	rfb_shard_info *shards;  /* shard_count entries */
};

/* ---- opening ---- */

/* Section sizes from the header h, checked against the file length and
 * the body checksum. */
static int check_sections(rfb_index *x, const struct index_header *h,
			  const char *name, rfb_err *err)
{
	const unsigned char *body_at = x->data + x->header_size;
	uint64_t body = 0;
	const uint64_t parts[5] = { h->root_len, h->classes_len,
				    h->count * x->record_size, h->paths_len,
				    h->shards_len };

	if (h->count > RFB_INDEX_MAX_SAMPLES ||
	    h->class_count > RFB_INDEX_MAX_CLASSES ||
	    h->root_len > RFB_INDEX_MAX_PATH ||
	    h->shard_count > RFB_INDEX_MAX_SHARDS)
		return rfb_err_set(err, RFB_ELIMIT, name,
				   "index header counts exceed refurb's limits");
	for (int i = 0; i < 5; i++) {
		if (parts[i] > INDEX_MAX_FILE || body + parts[i] > INDEX_MAX_FILE)
			return rfb_err_set(err, RFB_ELIMIT, name,
					   "index sections too large");
		body += parts[i];
	}
	if (x->header_size + body != x->len)
		return rfb_err_set(err, x->header_size + body > x->len ? RFB_ETRUNC
				   : RFB_EFORMAT, name,
				   "index is %zu bytes, its header says %llu",
				   x->len, (unsigned long long)(x->header_size + body));
	if (rfb_crc32c(0, body_at, body) != h->body_crc)
		return rfb_err_set(err, RFB_ECHECKSUM, name,
				   "index body checksum mismatch (corrupt file)");
	x->count = (uint32_t)h->count;
	x->class_count = h->class_count;
	x->shard_count = h->shard_count;
	x->identity = h->identity;
	x->paths_len = h->paths_len;
	return 0;
}

/* Class table: class_count entries (index_format.c). */
static int parse_classes(rfb_index *x, const unsigned char *p, size_t len,
			 const char *name, rfb_err *err)
{
	size_t off = 0, n;

	/* every entry takes at least its head and a NUL: check before
	 * allocating */
	if (len / (INDEX_CLASS_HEAD + 1) < x->class_count)
		goto bad;
	x->class_names = calloc(x->class_count ? x->class_count : 1,
				sizeof *x->class_names);
	if (!x->class_names)
		return rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
	for (uint32_t c = 0; c < x->class_count; c++, off += n)
		if (!(n = rfbi_index_class_decode(p + off, len - off,
						  &x->class_names[c])))
			goto bad;
	if (off == len)
		return 0;
bad:
	return rfb_err_set(err, RFB_EFORMAT, name, "corrupt class table");
}

/* A v2 record's shard and byte range: inside a known shard's size. */
static int check_shard_ref(const rfb_index *x, const struct index_record *r)
{
	if (r->shard == RFB_INDEX_NO_SHARD)
		return r->offset != 0;
	return r->shard > x->shard_count ||
	       r->offset > x->shards[r->shard - 1].size ||
	       r->bytes > x->shards[r->shard - 1].size - r->offset;
}

/* Shard table: shard_count entries (index_format.c). */
static int parse_shards(rfb_index *x, const unsigned char *p, size_t len,
			const char *name, rfb_err *err)
{
	size_t off = 0, n;

	/* every entry takes at least its head, a byte of path and a NUL:
	 * check before allocating */
	if (len / (INDEX_SHARD_HEAD + 2) < x->shard_count)
		goto bad;
	x->shards = calloc(x->shard_count ? x->shard_count : 1,
			   sizeof *x->shards);
	if (!x->shards)
		return rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
	for (uint32_t k = 0; k < x->shard_count; k++, off += n) {
		struct index_shard_entry e;
		if (!(n = rfbi_index_shard_decode(p + off, len - off, &e)))
			goto bad;
		x->shards[k].size = e.size;
		x->shards[k].mtime_ns = e.mtime_ns;
		x->shards[k].path = e.path;
	}
	if (off == len)
		return 0;
bad:
	return rfb_err_set(err, RFB_EFORMAT, name, "corrupt shard table");
}

static void record_at(const rfb_index *x, uint32_t id, struct index_record *r)
{
	rfbi_index_record_decode(x->records + (size_t)id * x->record_size,
				 x->version, r);
}

static int check_records(const rfb_index *x, const char *name, rfb_err *err)
{
	for (uint32_t i = 0; i < x->count; i++) {
		struct index_record r;
		record_at(x, i, &r);
		if (r.label >= x->class_count)
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample %u: label %u out of range", i,
					   r.label);
		if (r.path_len == 0 || r.path_len > RFB_INDEX_MAX_PATH ||
		    r.path_offset >= x->paths_len ||
		    x->paths_len - r.path_offset < (uint64_t)r.path_len + 1 ||
		    x->paths[r.path_offset + r.path_len] != 0 ||
		    memchr(x->paths + r.path_offset, 0, r.path_len))
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample %u: corrupt path entry", i);
		if (x->version >= 2 && check_shard_ref(x, &r))
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample %u: shard %u or its byte range "
					   "out of range", i, r.shard);
	}
	return 0;
}

static rfb_index *open_owned(unsigned char *data, size_t len, int mapped,
			     const char *name, rfb_err *err)
{
	rfb_index *x = calloc(1, sizeof *x);
	struct index_header h;
	const unsigned char *p;

	if (!x) {
		if (mapped)
			munmap(data, len);
		else
			free(data);
		rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
		return NULL;
	}
	x->data = data;
	x->len = len;
	x->mapped = mapped;
	if (rfbi_index_header_decode(data, len, &h, name, err))
		goto fail;
	x->version = h.version;
	x->header_size = rfbi_index_header_size(h.version);
	x->record_size = h.record_size;
	if (check_sections(x, &h, name, err))
		goto fail;
	p = data + x->header_size;
	x->root = strndup((const char *)p, h.root_len);
	if (!x->root || strlen(x->root) != h.root_len) {
		rfb_err_set(err, RFB_EFORMAT, name, "corrupt root path");
		goto fail;
	}
	p += h.root_len;
	if (parse_classes(x, p, h.classes_len, name, err))
		goto fail;
	x->records = p + h.classes_len;
	x->paths = (const char *)x->records + (size_t)x->count * x->record_size;
	if (parse_shards(x, (const unsigned char *)x->paths + x->paths_len,
			 h.shards_len, name, err) ||
	    check_records(x, name, err))
		goto fail;
	if ((x->version == 1
	     ? rfb_hash64(p, len - x->header_size - h.root_len, x->count)
	     : rfbi_index_identity_v2(p, h.classes_len, x->records, x->count)) !=
	    x->identity) {
		rfb_err_set(err, RFB_ECHECKSUM, name, "index identity mismatch");
		goto fail;
	}
	return x;
fail:
	rfb_index_close(x);
	return NULL;
}

/*
 * A regular file is mapped, not copied: its pages are the page cache's,
 * which can drop them and share them between the programs of a chain
 * (refurb-partial and refurb-final each used to hold a private copy, some
 * 60 bytes a sample).  NULL (and *fallback) when it cannot be mapped: a
 * pipe, an empty file, a kernel that refuses; then it is read.
 */
static unsigned char *map_file(const char *path, size_t *len, int *fallback,
			       rfb_err *err)
{
	struct stat st;
	void *p;
	int fd = rfb_open_retry(path, O_RDONLY | O_CLOEXEC);

	*fallback = 0;
	if (fd < 0) {
		rfb_err_sys(err, errno, path, "cannot open");
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
	    (uint64_t)st.st_size > INDEX_MAX_FILE) {
		close(fd);
		*fallback = 1;
		return NULL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		*fallback = 1;
		return NULL;
	}
	*len = (size_t)st.st_size;
	return p;
}

rfb_index *rfb_index_open(const char *path, rfb_err *err)
{
	unsigned char *data = NULL;
	size_t len = 0;
	int fallback = 1;

	if (strcmp(path, "-") != 0 &&
	    (data = map_file(path, &len, &fallback, err)))
		return open_owned(data, len, 1, path, err);
	if (!fallback)
		return NULL;
	if (rfb_file_load(path, INDEX_MAX_FILE, &data, &len, err))
		return NULL;
	return open_owned(data, len, 0, strcmp(path, "-") ? path : "(stdin)",
			  err);
}

rfb_index *rfb_index_open_mem(const void *data, size_t len, const char *name,
			      rfb_err *err)
{
	unsigned char *copy = malloc(len + 1);

	if (!copy) {
		rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
		return NULL;
	}
	memcpy(copy, data, len);
	return open_owned(copy, len, 0, name, err);
}

void rfb_index_close(rfb_index *x)
{
	if (!x)
		return;
	if (x->mapped)
		munmap(x->data, x->len);
	else
		free(x->data);
	free(x->root);
	free(x->class_names);
	free(x->shards);
	free(x);
}

uint32_t rfb_index_count(const rfb_index *x) { return x->count; }
uint32_t rfb_index_class_count(const rfb_index *x) { return x->class_count; }
uint64_t rfb_index_identity(const rfb_index *x) { return x->identity; }
const char *rfb_index_root(const rfb_index *x) { return x->root; }
unsigned rfb_index_version(const rfb_index *x) { return x->version; }
uint32_t rfb_index_shard_count(const rfb_index *x) { return x->shard_count; }

int rfb_index_shard(const rfb_index *x, uint32_t k, rfb_shard_info *out)
{
	if (k == 0 || k > x->shard_count)
		return RFB_ENOTFOUND;
	*out = x->shards[k - 1];
	return 0;
}

const char *rfb_index_class_name(const rfb_index *x, uint32_t label)
{
	return label < x->class_count ? x->class_names[label] : NULL;
}

int rfb_index_get(const rfb_index *x, uint32_t id, rfb_sample_info *out)
{
	struct index_record r;

	if (id >= x->count)
		return RFB_ENOTFOUND;
	record_at(x, id, &r);
	out->id = id;
	out->label = r.label;
	out->width = r.width;
	out->height = r.height;
	out->channels = r.channels;
	out->colorspace = r.colorspace;
	out->subsampling = r.subsampling;
	out->bytes = r.bytes;
	out->path = x->paths + r.path_offset;
	out->shard = r.shard;
	out->offset = r.offset;
	return 0;
}

uint32_t rfb_index_label(const rfb_index *x, uint32_t id)
{
	struct index_record r;

	record_at(x, id, &r);
	return r.label;
}

uint64_t rfb_index_pixels(const rfb_index *x, uint32_t id)
{
	struct index_record r;

	record_at(x, id, &r);
	return (uint64_t)r.width * r.height;
}

/* root (or its override) + "/" + path, or path when absolute. */
static int join_root(const rfb_index *x, const char *path,
		     const char *root_override, char *buf, size_t n)
{
	int len;

	if (path[0] == '/')
		len = snprintf(buf, n, "%s", path);
	else
		len = snprintf(buf, n, "%s/%s",
			       root_override ? root_override : x->root, path);
	return len < 0 || (size_t)len >= n ? RFB_ELIMIT : 0;
}

int rfb_index_full_path(const rfb_index *x, uint32_t id,
			const char *root_override, char *buf, size_t n)
{
	rfb_sample_info s;

	if (rfb_index_get(x, id, &s))
		return RFB_ENOTFOUND;
	if (s.shard != RFB_INDEX_NO_SHARD)
		return join_root(x, x->shards[s.shard - 1].path, root_override,
				 buf, n);
	return join_root(x, s.path, root_override, buf, n);
}

int rfb_index_shard_path(const rfb_index *x, uint32_t k,
			 const char *root_override, char *buf, size_t n)
{
	if (k == 0 || k > x->shard_count)
		return RFB_ENOTFOUND;
	return join_root(x, x->shards[k - 1].path, root_override, buf, n);
}
