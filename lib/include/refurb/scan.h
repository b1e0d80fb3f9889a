/*
 * scan.h - finding a dataset's images and reading their headers, to build
 * an index: from a directory tree in torchvision's ImageFolder layout, or
 * from a list of "path<TAB>label" lines (which also reads back the TSV that
 * refurb-dump prints for an index).
 */
#ifndef REFURB_SCAN_H
#define REFURB_SCAN_H

#include <stdint.h>

#include "refurb/error.h"
#include "refurb/index.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a tar shard sample's label comes from (rfb_scan_shards). */
enum rfb_label_from {
	RFB_LABEL_CLS = 0,   /* KEY.cls: a decimal class number */
	RFB_LABEL_JSON,      /* KEY.json: field label_field, a number or a name */
	RFB_LABEL_DIR        /* the member's first directory (ImageFolder) */
};

struct rfb_scan_opts {
	uint64_t max_pixels;  /* larger images are bad files */
	int threads;          /* header-reading threads, >= 1 */
	int strict;           /* the first bad file fails the scan */
	const char *root;     /* lists: base of relative paths (NULL = cwd,
			       * unless the list names its root) */
	enum rfb_label_from label_from;  /* shards only */
	const char *label_field;         /* RFB_LABEL_JSON: the field */
	const char *classes;  /* shards: file of class names, one a line in
			       * label order, or NULL (numbers name
			       * themselves, names are sorted) */
	size_t memory;        /* the builder's budget of records and paths
			       * (rfb_index_builder_set_memory; 0: none) */
	const char *temp_dir; /* where it flushes them (NULL: /tmp) */
	/* Called (from the calling thread, in index order) for every bad
	 * file; why has the reason, path the file.  May be NULL. */
	void (*on_bad)(void *ctx, const char *path, const rfb_err *why);
	/* Called from the calling thread now and then while headers are
	 * read.  May be NULL. */
	void (*on_progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

struct rfb_scan_stats {
	uint64_t candidates;    /* files that looked like images */
	uint64_t indexed;       /* good files, now in the index */
	uint64_t bad;           /* files left out (reported via on_bad) */
	uint32_t classes;
	uint32_t empty_classes; /* classes without a single good image */
	/* the first four of them by name, ", "-separated, then "..." if
	 * there are more (a name that does not fit is left out) */
	char empty_names[256];
};

/*
 * Index the ImageFolder tree at dir: the class of an image is its
 * first-level subdirectory; classes are sorted by code point exactly as
 * torchvision's ImageFolder sorts them (label = class_to_idx); files are
 * taken as torchvision's make_dataset takes them (os.walk following
 * symlinks, directories in sorted path order, files sorted, extensions
 * .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp in any case; non-JPEG
 * contents are bad files).  On success *out is a builder holding the index
 * (caller frees).  Returns 0 or a negative RFB_E* code: a missing or
 * unreadable dir, no images at all, or (strict) the first bad file.
 */
int rfb_scan_folder(const char *dir, const struct rfb_scan_opts *o,
		    rfb_index_builder **out, struct rfb_scan_stats *st,
		    rfb_err *err) RFB_MUST_CHECK;

/*
 * Index the images listed in the text file list ("-" = stdin): lines
 * "path<TAB>label" where label is a class name or a number (all numbers:
 * classes are "0" .. max; otherwise names, sorted like ImageFolder), or
 * the TSV refurb-dump prints for an index ("id label class bytes width
 * height channels path" with "# root" and "# class" lines), which gives
 * back the same index.  Blank lines and lines starting with '#' are
 * ignored.  Returns as rfb_scan_folder(); a malformed line is RFB_EFORMAT
 * naming the line.
 */
int rfb_scan_list(const char *list, const struct rfb_scan_opts *o,
		  rfb_index_builder **out, struct rfb_scan_stats *st,
		  rfb_err *err) RFB_MUST_CHECK;

/*
 * Index the samples of the tar shards paths[0..n) (WebDataset layout),
 * read in place: the members KEY.jpg, KEY.jpeg and KEY.png (any case;
 * JPEG or PNG by content, as in a tree), the key
 * being the member's name up to the first dot of its last component; the
 * label from o->label_from.  Samples are sorted by key within a shard,
 * shards in the order given.  Shards are stored relative to the directory
 * of the first (the index's root) when inside it.  A shard that cannot be
 * opened, is not a tar file or is compressed fails the scan; a bad member
 * (truncated, corrupt header, not a JPEG, no or a bad label, a key seen
 * before in this or an earlier shard) is reported through o->on_bad and
 * left out (strict: fails the scan).  Returns as rfb_scan_folder().
 */
int rfb_scan_shards(char *const *paths, size_t n,
		    const struct rfb_scan_opts *o, rfb_index_builder **out,
		    struct rfb_scan_stats *st, rfb_err *err) RFB_MUST_CHECK;

/*
 * Expand the braces of a shard pattern as WebDataset (braceexpand) does:
 * "{000..146}" is a numeric range, zero-padded to the width of its first
 * bound; "{a,b}" alternatives; several braces multiply.  On success
 * *names is a malloc'ed array of *n malloc'ed strings (free each, then
 * the array).  Returns 0, RFB_EINVAL for an unbalanced or empty brace or
 * a range that goes down, RFB_ELIMIT past 10000000 names.
 */
int rfb_shard_expand(const char *pattern, char ***names, size_t *n,
		     rfb_err *err) RFB_MUST_CHECK;

/*
 * What the file at path is: 1 an uncompressed tar file, 0 not a tar, or
 * a negative RFB_E* code: RFB_EFORMAT for a compressed file (err says
 * that shards must be uncompressed), RFB_EIO if it cannot be read.
 */
int rfb_shard_sniff(const char *path, rfb_err *err) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
