/*
 * fuzz_tar.c - the tar shard reader (lib/index/index_tar.c) on any bytes,
 * from a memfd: rfbi_tar_sniff on the first 1024 bytes, then a walk of
 * every member with rfbi_tar_next until the end or an error.  Every member
 * lies inside the file after its header, its head holds the first
 * min(size, 512) bytes of its data, its name is a bounded C string, the
 * walk only goes forward, and an error names the shard.  The same bytes,
 * as a file in $TMPDIR (default /dev/shm), then go through the shard scan
 * (rfb_scan_shards: WebDataset grouping, labels, the JPEG probe; labels
 * from .json members if the walk saw one, else .cls, else directories),
 * whose samples must each be one of the members the walk found.
 *
 * The target rewrites the header checksum of every non-zero 512-byte
 * block of its copy (headers only start at multiples of 512), so that
 * the fuzzer explores the fields behind it, except in blocks whose
 * checksum field starts with 'X', which keeps the mismatch reachable.
 *
 * Input: the tar file.  Accepted: the walk reached the end of the archive.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "refurb/index.h"
#include "refurb/scan.h"
#include "../../lib/index/index_tar_internal.h"

#define TAR_FUZZ_PATH "fuzz.tar"
#define TAR_FUZZ_MAX_NAME ((size_t)1 << 20)   /* index_tar.c's ext limit */
#define TAR_FUZZ_MAX_MEMBERS 64               /* kept for the scan check */

struct tar_fuzz_seen {
	uint64_t off[TAR_FUZZ_MAX_MEMBERS], size[TAR_FUZZ_MAX_MEMBERS];
	size_t n, dropped;
	int json, cls;        /* label members seen: they choose the scan's mode */
};

static void tar_fix_checksums(unsigned char *d, size_t len)
{
	for (size_t at = 0; len - at >= TAR_BLOCK; at += TAR_BLOCK) {
		unsigned char *b = d + at;
		unsigned sum = 0;
		int zero = 1;

		for (int i = 0; i < TAR_BLOCK; i++)
			zero &= b[i] == 0;
		if (zero || b[148] == 'X')
			continue;
		for (int i = 0; i < TAR_BLOCK; i++)
			sum += i >= 148 && i < 156 ? ' ' : b[i];
		snprintf((char *)b + 148, 8, "%06o", sum);
		b[155] = ' ';
	}
}

static void tar_check_member(const struct tar_member *m,
			     const unsigned char *d, size_t len)
{
	FUZZ_ASSERT(m->data_off <= len && m->size <= len - m->data_off);
	FUZZ_ASSERT(m->header_off < m->data_off);
	FUZZ_ASSERT(m->head_len == (m->size < TAR_BLOCK ? m->size : TAR_BLOCK));
	FUZZ_ASSERT(m->head_len == 0 ||
		    memcmp(m->head, d + m->data_off, m->head_len) == 0);
	FUZZ_ASSERT(m->name != NULL);
	FUZZ_ASSERT(strnlen(m->name, TAR_FUZZ_MAX_NAME + 1) <= TAR_FUZZ_MAX_NAME);
}

static void tar_note_label(struct tar_fuzz_seen *seen, const char *name)
{
	const char *dot = strrchr(name, '.');

	seen->json |= dot && strcmp(dot, ".json") == 0;
	seen->cls |= dot && strcmp(dot, ".cls") == 0;
}

/* Walk every member; 1 if the walk reached the end of the archive. */
static int tar_walk(int fd, const unsigned char *d, size_t len,
		    struct tar_fuzz_seen *seen)
{
	struct tar_reader r;
	struct tar_member m;
	rfb_err err = { 0 };
	uint64_t pos = 0, members = 0;
	int rc;

	rfbi_tar_open(&r, fd, TAR_FUZZ_PATH, len);
	while ((rc = rfbi_tar_next(&r, &m, &err)) == 1) {
		tar_check_member(&m, d, len);
		FUZZ_ASSERT(m.header_off >= pos && r.pos > pos);
		pos = r.pos;
		FUZZ_ASSERT(++members <= len / TAR_BLOCK);
		if (m.type != '0' && m.type != '7')
			continue;
		tar_note_label(seen, m.name);
		if (seen->n < TAR_FUZZ_MAX_MEMBERS) {
			seen->off[seen->n] = m.data_off;
			seen->size[seen->n++] = m.size;
		} else {
			seen->dropped++;
		}
	}
	if (rc < 0) {
		FUZZ_REJECTED(&err, rc);
		FUZZ_ASSERT(strcmp(err.path, TAR_FUZZ_PATH) == 0);
	}
	rfbi_tar_close(&r);
	FUZZ_ASSERT(rc <= 0);
	return rc == 0;
}

static void tar_on_bad(void *ctx, const char *path, const rfb_err *why)
{
	(void)ctx;
	FUZZ_ASSERT(path != NULL && why->code < 0 && why->msg[0]);
}

/* Every sample of the scan's index is a member the walk found. */
static void tar_check_index(rfb_index_builder *b, uint64_t len,
			    const struct tar_fuzz_seen *seen)
{
	unsigned char *data;
	size_t n;
	rfb_err err = { 0 };
	rfb_index *idx;
	rfb_sample_info s;

	FUZZ_ASSERT(rfb_index_builder_finish(b, &data, &n, &err) == 0);
	FUZZ_ASSERT((idx = rfb_index_open_mem(data, n, "scan", &err)) != NULL);
	for (uint32_t i = 0; i < rfb_index_count(idx); i++) {
		size_t k = 0;
		FUZZ_ASSERT(rfb_index_get(idx, i, &s) == 0);
		FUZZ_ASSERT(s.shard == 1);
		FUZZ_ASSERT(s.offset <= len && s.bytes <= len - s.offset);
		while (k < seen->n && (seen->off[k] != s.offset ||
				       seen->size[k] != s.bytes))
			k++;
		FUZZ_ASSERT(k < seen->n || seen->dropped);
	}
	rfb_index_close(idx);
	free(data);
}

/* The shard scan on the same bytes, as a file in $TMPDIR. */
static void tar_scan(const unsigned char *d, size_t len,
		     const struct tar_fuzz_seen *seen)
{
	static char path[512];
	char *paths[1] = { path };
	struct rfb_scan_opts o = { 0 };
	struct rfb_scan_stats st;
	rfb_index_builder *b = NULL;
	rfb_err err = { 0 };
	int fd, rc;

	if (!path[0]) {
		const char *tmp = getenv("TMPDIR");
		if (!tmp || !*tmp)
			tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(path, sizeof path, "%s/refurb-fuzz-tar.%ld", tmp,
			 (long)getpid());
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(len == 0 || write(fd, d, len) == (ssize_t)len);
	close(fd);
	o.max_pixels = (uint64_t)1 << 24;
	o.threads = 1;
	o.label_from = seen->json ? RFB_LABEL_JSON : seen->cls ? RFB_LABEL_CLS
				  : RFB_LABEL_DIR;
	o.label_field = "label";
	o.on_bad = tar_on_bad;
	rc = rfb_scan_shards(paths, 1, &o, &b, &st, &err);
	if (rc == 0)
		tar_check_index(b, len, seen);
	else
		FUZZ_REJECTED(&err, rc);
	rfb_index_builder_free(b);
	unlink(path);
}

FUZZ_TARGET(tar)
{
	unsigned char *d = fuzz_copy(data, size);
	struct tar_fuzz_seen seen = { { 0 }, { 0 }, 0, 0, 0, 0 };
	int fd = memfd_create("fuzz-tar", MFD_CLOEXEC), ok;

	tar_fix_checksums(d, size);
	(void)rfbi_tar_sniff(d, size < 2 * TAR_BLOCK ? size : 2 * TAR_BLOCK);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(size == 0 || write(fd, d, size) == (ssize_t)size);
	ok = tar_walk(fd, d, size, &seen);
	close(fd);
	tar_scan(d, size, &seen);
	free(d);
	return ok;
}
