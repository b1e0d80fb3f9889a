/*
 * index.h - the dataset index: which samples exist, their labels, byte
 * sizes, pixel sizes and paths, and the class-name table.
 *
 * A sample's id is its position in the index (0 .. count-1); every other
 * file of refurb refers to samples by id.  The byte layout is in
 * refurb-index(5).  An index is built once (rfb_index_builder) and then
 * opened read-only (rfb_index): it is loaded whole, verified, and shared
 * by all threads without locking.
 */
#ifndef REFURB_INDEX_H
#define REFURB_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits, enforced on build and on open. */
#define RFB_INDEX_MAX_SAMPLES 0xfffffffeu  /* ids fit in 32 bits */
#define RFB_INDEX_MAX_CLASSES 1000000u
#define RFB_INDEX_MAX_PATH 4096u          /* bytes of one path */
#define RFB_INDEX_MAX_CLASS_NAME 1024u    /* bytes of one class name */
#define RFB_INDEX_MAX_SHARDS 1000000u     /* tar shards of one index */

/* rfb_sample_info.shard of a sample that is a file of its own (shards
 * are numbered from 1, so that a zeroed rfb_sample_info is a file). */
#define RFB_INDEX_NO_SHARD 0u

/* What the index knows about one sample. */
typedef struct rfb_sample_info {
	uint32_t id;
	uint32_t label;        /* index into the class table */
	uint64_t bytes;        /* file size, or size of the member's data */
	uint32_t width, height;
	uint8_t channels;      /* JPEG components: 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK */
	uint8_t colorspace;    /* TurboJPEG TJCS_* value */
	uint8_t subsampling;   /* TurboJPEG TJSAMP_* value */
	const char *path;      /* as stored (relative to the root, or absolute;
				* a shard sample's member name in its tar);
				* NUL-terminated, owned by the index */
	uint32_t shard;        /* tar shard holding the sample (1 .. shard
				* count), or RFB_INDEX_NO_SHARD (0) for a
				* file of its own */
	uint64_t offset;       /* byte offset of the data in the shard (0 for
				* a file) */
} rfb_sample_info;

/* What the index knows about one tar shard (format version 2). */
typedef struct rfb_shard_info {
	const char *path;      /* relative to the root, or absolute; owned
				* by the index */
	uint64_t size;         /* bytes when indexed */
	int64_t mtime_ns;      /* modification time when indexed, ns since
				* the epoch */
} rfb_shard_info;

typedef struct rfb_index rfb_index;

/*
 * Open and verify the index at path ("-" = stdin): magic, version,
 * checksums, every length and offset.  A regular file is mapped read-only
 * (its pages stay the page cache's, shared by the processes that open
 * it, not copied into each), anything else read: the file must then not
 * be changed in place while open (refurb-index replaces it by renaming).
 * Returns the handle (close with rfb_index_close) or NULL with err filled
 * (RFB_EFORMAT, RFB_EVERSION, RFB_ETRUNC, RFB_ECHECKSUM, RFB_ELIMIT,
 * RFB_EIO).
 */
rfb_index *rfb_index_open(const char *path, rfb_err *err) RFB_MUST_CHECK;

/* Same, from an index image in memory (copied).  name is used in errors. */
rfb_index *rfb_index_open_mem(const void *data, size_t len, const char *name,
			      rfb_err *err) RFB_MUST_CHECK;

/* Release the index.  NULL accepted. */
void rfb_index_close(rfb_index *idx);

uint32_t rfb_index_count(const rfb_index *idx);
uint32_t rfb_index_class_count(const rfb_index *idx);

/* Class name of label (NUL-terminated, owned by the index), or NULL if
 * label is out of range. */
const char *rfb_index_class_name(const rfb_index *idx, uint32_t label);

/* 64-bit identity of the index's content: other files record it so that
 * they can refuse to be used with another index. */
uint64_t rfb_index_identity(const rfb_index *idx);

/* Format version the index was read from (1 or 2). */
unsigned rfb_index_version(const rfb_index *idx);

/* Number of tar shards (0 for a tree or a list). */
uint32_t rfb_index_shard_count(const rfb_index *idx);

/* Fill *out for shard k (1 .. shard count).  Returns 0, or RFB_ENOTFOUND. */
int rfb_index_shard(const rfb_index *idx, uint32_t k, rfb_shard_info *out);

/* Directory that relative paths are relative to (absolute path). */
const char *rfb_index_root(const rfb_index *idx);

/* Fill *out for sample id.  Returns 0, or RFB_ENOTFOUND if id >= count. */
int rfb_index_get(const rfb_index *idx, uint32_t id, rfb_sample_info *out) RFB_MUST_CHECK;

/* Label of sample id (id must be < count). */
uint32_t rfb_index_label(const rfb_index *idx, uint32_t id);

/* Pixel count width * height of sample id (id must be < count). */
uint64_t rfb_index_pixels(const rfb_index *idx, uint32_t id);

/*
 * Full path of the file that holds sample id (a shard sample: its shard):
 * root + "/" + path for relative paths, or root
 * replaced by root_override when not NULL (the dataset was moved).
 * Writes into buf of size n; returns 0 or RFB_ELIMIT if it does not fit,
 * RFB_ENOTFOUND if id >= count.
 */
int rfb_index_full_path(const rfb_index *idx, uint32_t id,
			const char *root_override, char *buf, size_t n) RFB_MUST_CHECK;

/* Full path of shard k (1 .. count), as rfb_index_full_path() makes it.  Returns 0,
 * RFB_ELIMIT or RFB_ENOTFOUND. */
int rfb_index_shard_path(const rfb_index *idx, uint32_t k,
			 const char *root_override, char *buf, size_t n);

/* ---- building ---- */

typedef struct rfb_index_builder rfb_index_builder;

/* Start an empty index whose relative paths are relative to root (made
 * absolute).  Returns NULL with err filled on failure. */
rfb_index_builder *rfb_index_builder_new(const char *root, rfb_err *err) RFB_MUST_CHECK;

/* Free a builder.  NULL accepted. */
void rfb_index_builder_free(rfb_index_builder *b);

/* Append a class name; its label is the number of classes before it. */
int rfb_index_builder_add_class(rfb_index_builder *b, const char *name,
				rfb_err *err) RFB_MUST_CHECK;

/* Append a tar shard (its path relative to the root or absolute, its
 * size and mtime); its number is the number of shards with it (the first
 * is shard 1). */
int rfb_index_builder_add_shard(rfb_index_builder *b, const char *path,
				uint64_t size, int64_t mtime_ns,
				rfb_err *err) RFB_MUST_CHECK;

/* Append a sample (info->id is ignored: ids are positions; info->shard
 * is RFB_INDEX_NO_SHARD or the number of a shard added before). */
int rfb_index_builder_add(rfb_index_builder *b, const rfb_sample_info *info,
			  rfb_err *err) RFB_MUST_CHECK;

/* Number of samples added so far. */
uint32_t rfb_index_builder_count(const rfb_index_builder *b);

/*
 * Serialize to a malloc'ed buffer (caller frees) in refurb-index(5)
 * format.  Returns 0 or a negative RFB_E* code with err filled.
 */
int rfb_index_builder_finish(rfb_index_builder *b, unsigned char **data,
			     size_t *len, rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
