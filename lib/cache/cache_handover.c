/*
 * cache_handover.c - the shared-memory ring that hands records from
 * refurb-partial to refurb-final without the cache's files (see
 * handover.h): one writer, one reader, positions that only grow, the
 * reader's consumed position published through the shared header.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/handover.h"

#define OFF_RING 8
#define OFF_PID 16
#define OFF_CONSUMED 64
#define OFF_ATTACHED 128
#define ALIGN 64

struct rfb_handover {
	int fd;
	unsigned char *map;       /* header + ring */
	uint64_t ring;            /* ring bytes */
	uint64_t next;            /* writer: next free position */
	char path[64];
};

static uint64_t *consumed_word(const rfb_handover *h)
{
	return (uint64_t *)(void *)(h->map + OFF_CONSUMED);
}

static uint32_t *attached_word(const rfb_handover *h)
{
	return (uint32_t *)(void *)(h->map + OFF_ATTACHED);
}

rfb_handover *rfb_handover_create(uint64_t ring_bytes, rfb_err *err)
{
	rfb_handover *h = calloc(1, sizeof *h);
	uint64_t ring = (ring_bytes + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);

	if (!h) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	h->fd = -1;
	if (ring < ALIGN || ring > ((uint64_t)1 << 40)) {
		rfb_err_set(err, RFB_EINVAL, NULL, "handover ring of %llu bytes",
			    (unsigned long long)ring_bytes);
		goto fail;
	}
	h->ring = ring;
	h->fd = memfd_create("refurb-handover", MFD_CLOEXEC);
	if (h->fd < 0 || ftruncate(h->fd, (off_t)(RFB_HANDOVER_HEADER + ring))) {
		rfb_err_sys(err, errno, NULL, "cannot create the handover memory");
		goto fail;
	}
	h->map = mmap(NULL, RFB_HANDOVER_HEADER + ring, PROT_READ | PROT_WRITE,
		      MAP_SHARED, h->fd, 0);
	if (h->map == MAP_FAILED) {
		h->map = NULL;
		rfb_err_sys(err, errno, NULL, "cannot map the handover memory");
		goto fail;
	}
	memcpy(h->map, RFB_HANDOVER_MAGIC, 8);
	rfb_put_le64(h->map + OFF_RING, ring);
	rfb_put_le32(h->map + OFF_PID, (uint32_t)getpid());
	snprintf(h->path, sizeof h->path, "/proc/%d/fd/%d", (int)getpid(), h->fd);
	return h;
fail:
	rfb_handover_free(h);
	return NULL;
}

rfb_handover *rfb_handover_attach(const char *path, rfb_err *err)
{
	rfb_handover *h = calloc(1, sizeof *h);
	unsigned char head[16];
	struct stat st;

	if (!h) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	snprintf(h->path, sizeof h->path, "%s", path);
	h->fd = open(path, O_RDWR | O_CLOEXEC);
	if (h->fd < 0) {
		rfb_err_sys(err, errno, path, "cannot open the handover of "
			    "refurb-partial (it must run, piped into this one)");
		goto fail;
	}
	if (fstat(h->fd, &st) || pread(h->fd, head, sizeof head, 0) != sizeof head ||
	    memcmp(head, RFB_HANDOVER_MAGIC, 8) != 0) {
		rfb_err_set(err, RFB_EFORMAT, path, "not a refurb handover");
		goto fail;
	}
	h->ring = rfb_get_le64(head + OFF_RING);
	if (h->ring < ALIGN || h->ring % ALIGN ||
	    (uint64_t)st.st_size != RFB_HANDOVER_HEADER + h->ring) {
		rfb_err_set(err, RFB_EFORMAT, path, "handover of a bad size");
		goto fail;
	}
	h->map = mmap(NULL, RFB_HANDOVER_HEADER + h->ring,
		      PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
	if (h->map == MAP_FAILED) {
		h->map = NULL;
		rfb_err_sys(err, errno, path, "cannot map the handover");
		goto fail;
	}
	__atomic_store_n(attached_word(h), 1, __ATOMIC_RELEASE);
	return h;
fail:
	rfb_handover_free(h);
	return NULL;
}

void rfb_handover_free(rfb_handover *h)
{
	if (!h)
		return;
	if (h->map)
		munmap(h->map, RFB_HANDOVER_HEADER + h->ring);
	if (h->fd >= 0)
		close(h->fd);
	free(h);
}

const char *rfb_handover_path(const rfb_handover *h)
{
	return h->path;
}

uint64_t rfb_handover_position(const rfb_handover *h)
{
	return h->next;
}

/* Sleep about a millisecond; 1 if watch_fd's reader has gone. */
static int nap(int watch_fd)
{
	struct pollfd p = { watch_fd, 0, 0 };

	if (watch_fd < 0) {
		usleep(1000);
		return 0;
	}
	return poll(&p, 1, 1) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL));
}

int rfb_handover_put(rfb_handover *h, const unsigned char *rec, size_t len,
		     uint64_t batch_start, int watch_fd, uint64_t *pos,
		     rfb_err *err)
{
	uint64_t p = h->next, off = p % h->ring, end;

	if (len > h->ring - off) /* no record wraps: start the next lap */
		p += h->ring - off;
	end = p + len;
	if (end - batch_start > h->ring)
		return rfb_err_set(err, RFB_ELIMIT, NULL,
				   "a batch larger than the handover ring");
	while (end - __atomic_load_n(consumed_word(h), __ATOMIC_ACQUIRE) > h->ring)
		if (nap(watch_fd))
			return rfb_err_set(err, RFB_EPIPE, NULL,
					   "the reader closed the stream");
	memcpy(h->map + RFB_HANDOVER_HEADER + p % h->ring, rec, len);
	*pos = p;
	h->next = (end + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
	return 0;
}

int rfb_handover_wait_attached(rfb_handover *h, int watch_fd, int timeout_ms)
{
	for (int waited = 0; !__atomic_load_n(attached_word(h), __ATOMIC_ACQUIRE);
	     waited++) {
		if (waited >= timeout_ms)
			return RFB_ENOTFOUND;
		if (nap(watch_fd))
			return RFB_EPIPE;
	}
	return 0;
}

int rfb_handover_attached(const rfb_handover *h)
{
	return __atomic_load_n(attached_word(h), __ATOMIC_ACQUIRE) != 0;
}

const unsigned char *rfb_handover_get(const rfb_handover *h, uint64_t pos,
				      size_t len, rfb_err *err)
{
	uint64_t off = pos % h->ring;

	if (len > h->ring - off) {
		rfb_err_set(err, RFB_EFORMAT, h->path,
			    "handover address %llx+%zu outside the ring",
			    (unsigned long long)pos, len);
		return NULL;
	}
	return h->map + RFB_HANDOVER_HEADER + off;
}

void rfb_handover_release(rfb_handover *h, uint64_t end)
{
	uint64_t *w = consumed_word(h);

	if (end > __atomic_load_n(w, __ATOMIC_RELAXED))
		__atomic_store_n(w, end, __ATOMIC_RELEASE);
}
