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

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/format.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "index_internal.h"

#define INDEX_VERSION 2          /* the version written; 1 is still read */
#define HEADER_SIZE_V1 64
#define RECORD_SIZE_V1 40
#define HEADER_SIZE INDEX_HEADER_SIZE
#define RECORD_SIZE INDEX_RECORD_SIZE
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

uint64_t rfbi_index_identity_v2(const unsigned char *classes, size_t classes_len,
				const unsigned char *records, uint32_t n)
{
	uint64_t h = rfb_hash64(classes, classes_len, n);

	for (uint32_t i = 0; i < n; i++)
		h = rfb_hash64(records + (size_t)i * INDEX_RECORD_SIZE,
			       INDEX_RECORD_CONTENT, h);
	return h;
}

/* ---- opening ---- */

static int check_header(rfb_index *x, const unsigned char *d, size_t len,
			const char *name, rfb_err *err)
{
	size_t crc_at;

	if (len < 8 || memcmp(d, RFB_INDEX_MAGIC, 7) != 0)
		return rfb_err_set(err, len == 0 ? RFB_ETRUNC : RFB_EFORMAT,
				   name, len == 0 ? "empty file, not a refurb index"
				   : "bad magic (not a refurb index)");
	if (d[7] != 1 && d[7] != 2)
		return rfb_err_set(err, RFB_EVERSION, name,
				   "index format version %u, this refurb reads "
				   "versions 1 and %u", d[7], INDEX_VERSION);
	x->version = d[7];
	x->header_size = x->version == 1 ? HEADER_SIZE_V1 : HEADER_SIZE;
	x->record_size = x->version == 1 ? RECORD_SIZE_V1 : RECORD_SIZE;
	crc_at = x->header_size - 4;
	if (len < x->header_size)
		return rfb_err_set(err, RFB_ETRUNC, name,
				   "truncated index (%zu bytes, header needs %zu)",
				   len, x->header_size);
	if (rfb_crc32c(0, d, crc_at) != rfb_get_le32(d + crc_at))
		return rfb_err_set(err, RFB_ECHECKSUM, name,
				   "index header checksum mismatch");
	if (rfb_get_le32(d + 20) != x->record_size)
		return rfb_err_set(err, RFB_EFORMAT, name,
				   "record size %u, expected %zu",
				   rfb_get_le32(d + 20), x->record_size);
	return 0;
}

/* Section sizes from the header, checked against the file length. */
static int check_sections(rfb_index *x, const unsigned char *d,
			  const char *name, size_t *root_len,
			  size_t *classes_len, size_t *shards_len, rfb_err *err)
{
	uint64_t n = rfb_get_le64(d + 8), body = 0;
	uint64_t parts[5];
	int v2 = x->version >= 2;

	parts[0] = rfb_get_le32(d + 24);               /* root */
	parts[1] = rfb_get_le64(d + 32);               /* classes */
	parts[2] = n * x->record_size;                 /* records */
	parts[3] = rfb_get_le64(d + 40);               /* paths */
	parts[4] = v2 ? rfb_get_le64(d + 48) : 0;      /* shards */
	if (n > RFB_INDEX_MAX_SAMPLES || rfb_get_le32(d + 16) >
	    RFB_INDEX_MAX_CLASSES || parts[0] > RFB_INDEX_MAX_PATH ||
	    (v2 && rfb_get_le32(d + 28) > RFB_INDEX_MAX_SHARDS))
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
	if (rfb_crc32c(0, d + x->header_size, body) !=
	    rfb_get_le32(d + (v2 ? 64 : 56)))
		return rfb_err_set(err, RFB_ECHECKSUM, name,
				   "index body checksum mismatch (corrupt file)");
	x->count = (uint32_t)n;
	x->class_count = rfb_get_le32(d + 16);
	x->shard_count = v2 ? rfb_get_le32(d + 28) : 0;
	x->identity = rfb_get_le64(d + (v2 ? 56 : 48));
	*root_len = parts[0];
	*classes_len = parts[1];
	x->paths_len = parts[3];
	*shards_len = parts[4];
	return 0;
}

/* Class table: class_count entries of u32 length, bytes, NUL. */
static int parse_classes(rfb_index *x, const unsigned char *p, size_t len,
			 const char *name, rfb_err *err)
{
	size_t off = 0;

	/* every entry takes at least 5 bytes: check before allocating */
	if (len / 5 < x->class_count)
		goto bad;
	x->class_names = calloc(x->class_count ? x->class_count : 1,
				sizeof *x->class_names);
	if (!x->class_names)
		return rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
	for (uint32_t c = 0; c < x->class_count; c++) {
		uint32_t n;
		if (len - off < 4)
			goto bad;
		n = rfb_get_le32(p + off);
		if (n > RFB_INDEX_MAX_CLASS_NAME || len - off - 4 < (size_t)n + 1 ||
		    p[off + 4 + n] != 0 || memchr(p + off + 4, 0, n))
			goto bad;
		x->class_names[c] = (const char *)p + off + 4;
		off += 4 + (size_t)n + 1;
	}
	if (off == len)
		return 0;
bad:
	return rfb_err_set(err, RFB_EFORMAT, name, "corrupt class table");
}

/* A v2 record's shard and byte range: inside a known shard's size. */
static int check_shard_ref(const rfb_index *x, const unsigned char *r)
{
	uint32_t k = rfb_get_le32(r + 36);
	uint64_t off = rfb_get_le64(r + 40), bytes = rfb_get_le64(r + 16);

	if (k == RFB_INDEX_NO_SHARD)
		return off != 0;
	return k > x->shard_count || off > x->shards[k - 1].size ||
	       bytes > x->shards[k - 1].size - off;
}

/* Shard table: shard_count entries of u64 size, i64 mtime, u32 length,
 * bytes, NUL. */
static int parse_shards(rfb_index *x, const unsigned char *p, size_t len,
			const char *name, rfb_err *err)
{
	size_t off = 0;

	/* every entry takes at least 22 bytes: check before allocating */
	if (len / 22 < x->shard_count)
		goto bad;
	x->shards = calloc(x->shard_count ? x->shard_count : 1,
			   sizeof *x->shards);
	if (!x->shards)
		return rfb_err_set(err, RFB_ENOMEM, name, "out of memory");
	for (uint32_t k = 0; k < x->shard_count; k++) {
		uint32_t n;
		if (len - off < 20)
			goto bad;
		n = rfb_get_le32(p + off + 16);
		if (n == 0 || n > RFB_INDEX_MAX_PATH ||
		    len - off - 20 < (size_t)n + 1 || p[off + 20 + n] != 0 ||
		    memchr(p + off + 20, 0, n))
			goto bad;
		x->shards[k].size = rfb_get_le64(p + off);
		x->shards[k].mtime_ns = (int64_t)rfb_get_le64(p + off + 8);
		x->shards[k].path = (const char *)p + off + 20;
		off += 20 + (size_t)n + 1;
	}
	if (off == len)
		return 0;
bad:
	return rfb_err_set(err, RFB_EFORMAT, name, "corrupt shard table");
}

static int check_records(const rfb_index *x, const char *name, rfb_err *err)
{
	for (uint32_t i = 0; i < x->count; i++) {
		const unsigned char *r = x->records + (size_t)i * x->record_size;
		uint64_t off = rfb_get_le64(r + 24);
		uint32_t plen = rfb_get_le32(r + 32);
		if (rfb_get_le32(r) >= x->class_count)
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample %u: label %u out of range", i,
					   rfb_get_le32(r));
		if (plen == 0 || plen > RFB_INDEX_MAX_PATH ||
		    off >= x->paths_len || x->paths_len - off < (uint64_t)plen + 1 ||
		    x->paths[off + plen] != 0 ||
		    memchr(x->paths + off, 0, plen))
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample %u: corrupt path entry", i);
		if (x->version >= 2 && check_shard_ref(x, r))
			return rfb_err_set(err, RFB_EFORMAT, name,
					   "sample %u: shard %u or its byte range "
					   "out of range", i, rfb_get_le32(r + 36));
	}
	return 0;
}

static rfb_index *open_owned(unsigned char *data, size_t len, int mapped,
			     const char *name, rfb_err *err)
{
	rfb_index *x = calloc(1, sizeof *x);
	size_t root_len = 0, classes_len = 0, shards_len = 0;
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
	if (check_header(x, data, len, name, err) ||
	    check_sections(x, data, name, &root_len, &classes_len, &shards_len,
			   err))
		goto fail;
	p = data + x->header_size;
	x->root = strndup((const char *)p, root_len);
	if (!x->root || strlen(x->root) != root_len) {
		rfb_err_set(err, RFB_EFORMAT, name, "corrupt root path");
		goto fail;
	}
	p += root_len;
	if (parse_classes(x, p, classes_len, name, err))
		goto fail;
	x->records = p + classes_len;
	x->paths = (const char *)x->records + (size_t)x->count * x->record_size;
	if (parse_shards(x, (const unsigned char *)x->paths + x->paths_len,
			 shards_len, name, err) ||
	    check_records(x, name, err))
		goto fail;
	if ((x->version == 1
	     ? rfb_hash64(p, len - x->header_size - root_len, x->count)
	     : rfbi_index_identity_v2(p, classes_len, x->records, x->count)) !=
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
	const unsigned char *r;

	if (id >= x->count)
		return RFB_ENOTFOUND;
	r = x->records + (size_t)id * x->record_size;
	out->id = id;
	out->label = rfb_get_le32(r);
	out->width = rfb_get_le32(r + 4);
	out->height = rfb_get_le32(r + 8);
	out->channels = r[12];
	out->colorspace = r[13];
	out->subsampling = r[14];
	out->bytes = rfb_get_le64(r + 16);
	out->path = x->paths + rfb_get_le64(r + 24);
	out->shard = x->version >= 2 ? rfb_get_le32(r + 36) : RFB_INDEX_NO_SHARD;
	out->offset = x->version >= 2 ? rfb_get_le64(r + 40) : 0;
	return 0;
}

uint32_t rfb_index_label(const rfb_index *x, uint32_t id)
{
	return rfb_get_le32(x->records + (size_t)id * x->record_size);
}

uint64_t rfb_index_pixels(const rfb_index *x, uint32_t id)
{
	const unsigned char *r = x->records + (size_t)id * x->record_size;

	return (uint64_t)rfb_get_le32(r + 4) * rfb_get_le32(r + 8);
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
