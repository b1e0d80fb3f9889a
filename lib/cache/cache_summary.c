/*
 * cache_summary.c - what refurb-dump --stats reads of a cache instead of
 * its records: each segment file's header and size, against the
 * checkpoint's segment table (rfb_cache_list, see cache.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "refurb/io.h"

/* The header of segment id and the size of its file: *death is
 * UINT32_MAX when the header is bad or cut short. */
static int segment_header(const char *dir, uint32_t id, uint32_t *death,
			  uint64_t *size, rfb_err *err)
{
	char path[4200];
	unsigned char h[RFB_CACHE_SEGMENT_HEADER];
	struct stat st;
	uint32_t hid;
	int fd;

	if (rfb_cache_segment_path(dir, id, path, sizeof path))
		return rfb_err_set(err, RFB_ELIMIT, dir, "path too long");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		int rc = rfb_err_sys(err, errno, path, "cannot open segment");
		if (fd >= 0)
			close(fd);
		return rc;
	}
	*size = (uint64_t)st.st_size;
	if (rfb_pread_full(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    rfbi_cache_parse_segment_header(h, &hid, death) || hid != id)
		*death = UINT32_MAX;
	close(fd);
	return 0;
}

/* The bytes of segment id (size bytes) that the checkpoint's table covers
 * (n rows sorted by id): all of a dead one, none of one it does not name. */
static uint64_t covered(const struct ckpt_seg *table, uint32_t n, uint32_t id,
			uint64_t size)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ckpt_seg *row = &table[mid];
		if (row->id == id)
			return row->dead || row->durable > size ? size
							       : row->durable;
		if (row->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int rfb_cache_list(const char *dir, rfb_cache_segment_fn fn, void *ctx,
		   rfb_err *err)
{
	uint32_t *ids, death, nrows;
	uint64_t size;
	struct ckpt_seg *table;
	size_t n;
	int rc;

	if ((rc = rfbi_cache_list_segments(dir, &ids, &n, err)))
		return rc;
	(void)rfbi_cache_ckpt_segments(dir, &table, &nrows);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = segment_header(dir, ids[i], &death, &size, err);
		if (rc == RFB_EIO && err && err->sys_errno == ENOENT)
			rc = 0; /* deleted by the writer meanwhile */
		else if (rc == 0)
			rc = fn(ctx, ids[i], death, size,
				table ? covered(table, nrows, ids[i], size) : 0);
	}
	free(table);
	free(ids);
	return rc;
}
