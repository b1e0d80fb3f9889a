/*
 * cache_reader.c - the batched reader of cache records: one io_submit per batch,
 * aligned windows for O_DIRECT, per-record checks (see aio.h).
 *
 * Life of a batch: prepare_slot() checks each address and finds its
 * segment's fd (a missing segment fails that record only); layout() places
 * every read in the arena (aligned windows in direct mode) and grows it if
 * needed; submit_all() hands all reads to the kernel, resubmitting the
 * tail when io_submit takes only part; wait reaps every completion and
 * finish_record() checks each record.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "refurb/aio.h"
#include "refurb/bytes.h"
#include "refurb/io.h"

#define BUFFERED_SLOT_ALIGN 64      /* records start on cache lines */
#define ARENA_BASE_ALIGN 4096
#define ARENA_ROUND ((size_t)64 << 10)
/* Arenas of this size or more are aligned to it and asked for huge pages
 * (transparent huge pages in "madvise" mode, Debian's default): a batch
 * of records is tens of MiB, and 4 KiB pages cost one page fault each
 * the first time and a TLB miss every 4 KiB when read. */
#define ARENA_HUGE ((size_t)2 << 20)
#define MAX_DIO_ALIGN ((uint32_t)1 << 20)

enum fd_kind { FD_UNKNOWN = 0, FD_BUFFERED, FD_DIRECT, FD_REFUSED };
enum reader_state { IDLE = 0, IN_FLIGHT, BROKEN };

/* What the reader knows of one of the view's fds (indexed by fd). */
struct fd_info {
	int kind;
	uint64_t size;             /* file size last seen (fstat) */
};

/* One record of the batch. */
struct slot {
	struct iocb cb;
	struct rfb_cache_addr addr;
	uint32_t expect;           /* sample id, or RFB_BATCH_ANY_SAMPLE */
	int fd;                    /* -1: no read (the record already failed) */
	int kind;                  /* FD_DIRECT: aligned window */
	uint64_t io_off;           /* what is read: file offset, length */
	size_t io_len;
	size_t buf_pos;            /* where it lands in the arena */
	size_t skip;               /* the record starts this far into it */
	long long res;             /* completion: bytes read or -errno */
};

struct rfb_batch_reader {
	rfb_cache_view *view;
	int direct;                /* the view opens segments with O_DIRECT */
	int defer_payload;         /* the caller checks the payload */
	int state;
	io_context_t ctx;
	size_t max_batch, n;       /* n: records in the current batch */
	size_t in_flight;          /* reads submitted and not reaped */
	struct slot *slots;
	struct iocb **cbp;         /* io_submit's array */
	struct io_event *events;
	struct rfb_batch_record *out;
	unsigned char *arena;      /* read buffer, grows only */
	size_t arena_cap, arena_align;
	struct fd_info *fds;
	size_t nfds;
	uint64_t view_closed;      /* rfb_cache_view_closed() when fds was valid */
	uint32_t forced_align;     /* set_align's, 0: detect */
	uint32_t detected_align;   /* largest of the direct segments seen */
	struct rfb_batch_stats st;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Fail record o with code: "... segment S offset O: message".  Returns code. */
static int __attribute__((format(printf, 4, 5)))
fail(struct rfb_batch_record *o, const struct slot *s, int code,
     const char *fmt, ...)
{
	char msg[sizeof o->why.msg];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	rfb_err_set(&o->why, code, NULL, "record at segment %08x offset %llu: %s",
		    s->addr.segment, (unsigned long long)s->addr.offset, msg);
	o->status = code;
	return code;
}

/* ---- creation ---- */

rfb_batch_reader *rfb_batch_reader_new(rfb_cache_view *view, size_t max_batch,
				       rfb_err *err)
{
	rfb_batch_reader *r;
	int rc;

	if (!view || max_batch == 0) {
		rfb_err_set(err, RFB_EINVAL, NULL, "batch reader: no view or batch size 0");
		return NULL;
	}
	if (max_batch > RFB_BATCH_MAX) {
		rfb_err_set(err, RFB_ELIMIT, NULL, "batch size %zu exceeds %u",
			    max_batch, RFB_BATCH_MAX);
		return NULL;
	}
	r = calloc(1, sizeof *r);
	if (!r || !(r->slots = calloc(max_batch, sizeof *r->slots)) ||
	    !(r->cbp = calloc(max_batch, sizeof *r->cbp)) ||
	    !(r->events = calloc(max_batch, sizeof *r->events)) ||
	    !(r->out = calloc(max_batch, sizeof *r->out))) {
		rfb_batch_reader_free(r);
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	r->view = view;
	r->direct = rfb_cache_view_direct(view);
	r->max_batch = max_batch;
	if ((rc = io_setup((int)max_batch, &r->ctx)) < 0) {
		r->ctx = 0;
		rfb_err_sys(err, -rc, NULL, "io_setup(%zu) failed%s", max_batch,
			    rc == -EAGAIN ? " (the system's AIO event limit, "
			    "/proc/sys/fs/aio-max-nr, is reached)" : "");
		rfb_batch_reader_free(r);
		return NULL;
	}
	return r;
}

void rfb_batch_reader_free(rfb_batch_reader *r)
{
	if (!r)
		return;
	if (r->ctx)
		io_destroy(r->ctx);  /* waits for reads still in flight */
	free(r->arena);
	free(r->fds);
	free(r->out);
	free(r->events);
	free(r->cbp);
	free(r->slots);
	free(r);
}

int rfb_batch_reader_mode(const rfb_batch_reader *r)
{
	if (!r->direct)
		return RFB_BATCH_BUFFERED;
	return r->st.refused_segments ? RFB_BATCH_DIRECT_REFUSED : RFB_BATCH_DIRECT;
}

int rfb_batch_reader_set_align(rfb_batch_reader *r, uint32_t align,
			       rfb_err *err)
{
	if (r->state == IN_FLIGHT)
		return rfb_err_set(err, RFB_EINVAL, NULL, "a batch is in flight");
	if ((align & (align - 1)) != 0 || align > MAX_DIO_ALIGN)
		return rfb_err_set(err, RFB_EINVAL, NULL, "direct-I/O alignment %u "
				   "is not a power of two up to %u", align,
				   MAX_DIO_ALIGN);
	r->forced_align = align;
	r->st.align = align ? align : r->detected_align;
	return 0;
}

void rfb_batch_reader_get_stats(const rfb_batch_reader *r,
				struct rfb_batch_stats *s)
{
	*s = r->st;
}

/* ---- segment fds: direct or not, alignment, size ---- */

/* The device's logical block size, or 0 if it cannot be asked. */
static uint32_t device_block_size(dev_t dev)
{
	char path[64];
	int fd, size = 0;

	if (major(dev) == 0)   /* tmpfs, btrfs ...: no block device */
		return 0;
	snprintf(path, sizeof path, "/dev/block/%u:%u", major(dev), minor(dev));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return 0;
	if (ioctl(fd, BLKSSZGET, &size) < 0)
		size = 0;
	close(fd);
	return size > 0 ? (uint32_t)size : 0;
}

/*
 * The direct-I/O alignment of fd: statx's (0 when the filesystem says it
 * does not do direct I/O on this file), else the block size of the
 * device, else RFB_BATCH_DEFAULT_ALIGN.  Always a power of two.
 */
static uint32_t dio_align(int fd)
{
	uint32_t a = 0, p = 1;
	struct stat st;

#ifdef STATX_DIOALIGN
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
	    (sx.stx_mask & STATX_DIOALIGN)) {
		if (sx.stx_dio_offset_align == 0)
			return 0;
		a = sx.stx_dio_offset_align > sx.stx_dio_mem_align
			? sx.stx_dio_offset_align : sx.stx_dio_mem_align;
	}
#endif
	if (a == 0 && fstat(fd, &st) == 0)
		a = device_block_size(st.st_dev);
	if (a == 0 || a > MAX_DIO_ALIGN)
		a = RFB_BATCH_DEFAULT_ALIGN;
	while (p < a)
		p <<= 1;
	return p;
}

/* The filesystem refused O_DIRECT on fd: read it buffered from now on. */
static void refuse_direct(rfb_batch_reader *r, int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0 && (fl & O_DIRECT))
		(void)fcntl(fd, F_SETFL, fl & ~O_DIRECT);
	if (r->fds[fd].kind != FD_REFUSED)
		r->st.refused_segments++;
	r->fds[fd].kind = FD_REFUSED;
}

static int classify_fd(rfb_batch_reader *r, int fd)
{
	int fl;
	uint32_t a;

	if (!r->direct)
		return FD_BUFFERED;
	if ((fl = fcntl(fd, F_GETFL)) >= 0 && !(fl & O_DIRECT)) {
		r->st.refused_segments++;  /* the view's open refused it */
		return FD_REFUSED;
	}
	if ((a = dio_align(fd)) == 0) {
		r->fds[fd].kind = FD_DIRECT;
		refuse_direct(r, fd);
		return FD_REFUSED;
	}
	if (a > r->detected_align)
		r->detected_align = a;
	r->st.align = r->forced_align ? r->forced_align : r->detected_align;
	return FD_DIRECT;
}

/* r->fds[fd], made (and fd classified) on first sight; NULL if no memory. */
static struct fd_info *fd_info(rfb_batch_reader *r, int fd)
{
	if ((size_t)fd >= r->nfds) {
		size_t n = round_up((size_t)fd + 1, 64);
		struct fd_info *nf = realloc(r->fds, n * sizeof *nf);
		if (!nf)
			return NULL;
		memset(nf + r->nfds, 0, (n - r->nfds) * sizeof *nf);
		r->fds = nf;
		r->nfds = n;
	}
	if (r->fds[fd].kind == FD_UNKNOWN)
		r->fds[fd].kind = classify_fd(r, fd);
	return &r->fds[fd];
}

/* ---- submission ---- */

/*
 * Check address i and find its fd.  Returns 0, or the record's failure
 * status (it is then not read).
 */
static int prepare_slot(rfb_batch_reader *r, size_t i,
			 const struct rfb_cache_addr *addr, uint32_t expect)
{
	struct slot *s = &r->slots[i];
	struct rfb_batch_record *o = &r->out[i];
	struct fd_info *info;
	struct stat st;
	uint64_t end = addr->offset + addr->length;
	int fd;

	s->addr = *addr;
	s->expect = expect;
	s->fd = -1;
	s->res = 0;
	o->data = NULL;
	o->length = addr->length;
	o->status = 0;
	if (addr->length < RFB_RECORD_HEADER_SIZE)
		return fail(o, s, RFB_EINVAL, "length %u is shorter than a record "
			    "header", addr->length);
	if (addr->length > RFB_RECORD_HEADER_SIZE + (uint64_t)RFB_RECORD_MAX_STORED)
		return fail(o, s, RFB_ELIMIT, "length %u is beyond the record size "
			    "limit", addr->length);
	if (addr->offset < RFB_CACHE_SEGMENT_HEADER || addr->offset > (uint64_t)1 << 62)
		return fail(o, s, RFB_EINVAL, "offset out of range");
	if ((fd = rfb_cache_view_fd(r->view, addr->segment, &o->why)) < 0)
		return o->status = fd;
	if (!(info = fd_info(r, fd)))
		return fail(o, s, RFB_ENOMEM, "out of memory");
	/* the size seen last is enough unless the record ends past it: the
	 * writer may have appended since, so look again before failing */
	if (end > info->size) {
		if (fstat(fd, &st) < 0) {
			int e = errno;
			(void)fail(o, s, RFB_EIO, "fstat: %s", strerror(e));
			return o->why.sys_errno = e, o->status; /* a system error */
		}
		info->size = (uint64_t)st.st_size;
	}
	if (end > info->size)
		return fail(o, s, RFB_ETRUNC, "short read: the segment ends at "
			    "%llu, before the record's end %llu (truncated)",
			    (unsigned long long)info->size, (unsigned long long)end);
	s->fd = fd;
	s->kind = info->kind;
	return 0;
}

/*
 * A new arena has half as much again as this batch needs: batches differ
 * in size, and each grow costs the first touch of fresh pages (with huge
 * pages, the kernel may compact memory to find them).  Five grows over
 * the first 22 batches of r = 3 on ImageNet-sized photos became two;
 * refurb-final's slow runs went (README, "The decode bound").  Pages
 * never touched cost nothing.
 */
static int grow_arena(rfb_batch_reader *r, size_t need, size_t align,
		      rfb_err *err)
{
	size_t cap, ask;
	void *p;

	if (rfb_add_size(r->arena_cap, r->arena_cap / 2, &cap))
		cap = 0;
	if (rfb_add_size(need, need / 2, &ask))
		ask = need;  /* no headroom where it would not fit in a size_t */
	if (cap < ask)
		cap = ask;
	cap = round_up(cap, ARENA_ROUND);
	if (cap >= ARENA_HUGE) {
		cap = round_up(cap, ARENA_HUGE);
		if (align < ARENA_HUGE)
			align = ARENA_HUGE;
	}
	if (cap < need)  /* the rounding wrapped */
		return rfb_err_set(err, RFB_ELIMIT, NULL, "batch too large");
	free(r->arena);   /* nothing is in flight: the old reads are reaped */
	r->arena = NULL;
	r->arena_cap = 0;
	r->st.buffer_bytes = 0;
	if (posix_memalign(&p, align, cap) != 0)
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory for a "
				   "%zu-byte batch buffer", cap);
#ifdef MADV_HUGEPAGE
	if (cap >= ARENA_HUGE)
		(void)madvise(p, cap, MADV_HUGEPAGE); /* advice: may be refused */
#endif
	r->arena = p;
	r->arena_cap = cap;
	r->arena_align = align;
	r->st.buffer_bytes = cap;
	r->st.buffer_grows++;
	return 0;
}

/* Place every read in the arena (aligned windows for direct fds). */
static int layout(rfb_batch_reader *r, rfb_err *err)
{
	size_t a = r->st.align ? r->st.align : RFB_BATCH_DEFAULT_ALIGN;
	size_t slot_align = r->direct ? a : BUFFERED_SLOT_ALIGN, total = 0;
	size_t base_align = a > ARENA_BASE_ALIGN ? a : ARENA_BASE_ALIGN;

	for (size_t i = 0; i < r->n; i++) {
		struct slot *s = &r->slots[i];
		if (s->fd < 0)
			continue;
		s->io_off = s->addr.offset;
		s->io_len = s->addr.length;
		s->skip = 0;
		if (s->kind == FD_DIRECT) {
			s->io_off = s->addr.offset & ~(uint64_t)(a - 1);
			s->skip = (size_t)(s->addr.offset - s->io_off);
			s->io_len = round_up(s->skip + s->addr.length, a);
		}
		s->buf_pos = total;
		if (rfb_add_size(total, round_up(s->io_len, slot_align), &total))
			return rfb_err_set(err, RFB_ELIMIT, NULL, "batch too large");
	}
	if (total > 0 && (total > r->arena_cap || base_align > r->arena_align))
		return grow_arena(r, total, base_align, err);
	return 0;
}

/* Store the completions of events[0..got). */
static void take_events(rfb_batch_reader *r, int got)
{
	for (int k = 0; k < got; k++) {
		size_t i = (size_t)(uintptr_t)r->events[k].data;
		r->slots[i].res = (long long)(long)r->events[k].res;
	}
	r->in_flight -= (size_t)got;
}

/* Reap at least min completions (EINTR is retried). */
static int reap(rfb_batch_reader *r, size_t min, rfb_err *err)
{
	int got;

	do
		got = io_getevents(r->ctx, (long)min, (long)r->in_flight,
				   r->events, NULL);
	while (got == -EINTR);
	if (got < 0)
		return rfb_err_sys(err, -got, NULL, "io_getevents failed");
	take_events(r, got);
	return 0;
}

/*
 * Submit cbp[0..nio): one io_submit in the normal case.  If the kernel
 * takes only part, submit the rest; if it refuses a read, that record
 * fails and the next ones are submitted; if the ring is full (EAGAIN),
 * reap a completion first.
 */
static int submit_all(rfb_batch_reader *r, size_t nio, rfb_err *err)
{
	size_t done = 0;
	uint64_t t0 = now_us();
	int rc = 0;

	while (rc == 0 && done < nio) {
		int got = io_submit(r->ctx, (long)(nio - done), r->cbp + done);
		r->st.submit_calls++;
		if (got > 0) {
			done += (size_t)got;
			r->in_flight += (size_t)got;
		} else if (got == -EINTR) {
			continue;
		} else if ((got == -EAGAIN || got == 0) && r->in_flight > 0) {
			rc = reap(r, 1, err);
		} else {
			size_t i = (size_t)(uintptr_t)r->cbp[done]->data;
			r->slots[i].res = got < 0 ? got : -EAGAIN;
			done++;
		}
	}
	r->st.submit_us += now_us() - t0;
	return rc;
}

int rfb_batch_reader_submit(rfb_batch_reader *r,
			    const struct rfb_cache_addr *addrs,
			    const uint32_t *samples, size_t n, rfb_err *err)
{
	size_t nio = 0;
	int rc;

	if (r->state != IDLE)
		return rfb_err_set(err, RFB_EINVAL, NULL, r->state == BROKEN
				   ? "batch reader is broken (an earlier AIO failure)"
				   : "a batch is already in flight on this reader");
	if (n > r->max_batch)
		return rfb_err_set(err, RFB_EINVAL, NULL, "batch of %zu records, "
				   "the reader takes at most %zu", n, r->max_batch);
	if (rfb_cache_view_closed(r->view) != r->view_closed) {
		/* the view closed segments: an fd number may now be another
		 * segment's, so what is known per fd is learnt again */
		if (r->fds)
			memset(r->fds, 0, r->nfds * sizeof *r->fds);
		r->view_closed = rfb_cache_view_closed(r->view);
	}
	r->n = n;
	for (size_t i = 0; i < n; i++)
		(void)prepare_slot(r, i, &addrs[i], samples ? samples[i]
				   : RFB_BATCH_ANY_SAMPLE);
	if ((rc = layout(r, err))) {
		r->n = 0;
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct slot *s = &r->slots[i];
		if (s->fd < 0)
			continue;
		io_prep_pread(&s->cb, s->fd, r->arena + s->buf_pos, s->io_len,
			      (long long)s->io_off);
		s->cb.data = (void *)(uintptr_t)i;
		r->cbp[nio++] = &s->cb;
	}
	r->st.records += n;
	r->state = IN_FLIGHT;
	if ((rc = submit_all(r, nio, err)))
		r->state = BROKEN;
	return rc;
}

/* ---- completion ---- */

/* An O_DIRECT read failed with EINVAL: read the record again buffered. */
static void reread_buffered(rfb_batch_reader *r, struct slot *s)
{
	ssize_t got;

	refuse_direct(r, s->fd);
	s->skip = 0;
	got = rfb_pread_full(s->fd, r->arena + s->buf_pos, s->addr.length,
			     (off_t)s->addr.offset);
	s->res = got < 0 ? -errno : got;
	r->st.sync_rereads++;
}

/* Check the record at p against its header, address and expected id;
 * returns its status. */
static int check_record(rfb_batch_reader *r, struct slot *s,
			 struct rfb_batch_record *o, const unsigned char *p)
{
	rfb_err why = { 0 };
	int rc;

	if ((rc = rfb_record_parse_header(p, s->addr.length, &o->meta, &why)))
		return fail(o, s, rc, "%s", why.msg);
	if (rfb_record_size(&o->meta) != s->addr.length)
		return fail(o, s, RFB_EFORMAT, "the address says %u bytes, the "
			    "record's header %zu", s->addr.length,
			    rfb_record_size(&o->meta));
	if (s->expect != RFB_BATCH_ANY_SAMPLE && o->meta.sample != s->expect)
		return fail(o, s, RFB_EMISMATCH, "the record is sample %u, "
			    "expected sample %u", o->meta.sample, s->expect);
	if (!r->defer_payload &&
	    (rc = rfb_record_verify(p, s->addr.length, &o->meta, &why)))
		return fail(o, s, rc, "%s", why.msg);
	o->data = p;
	r->st.record_bytes += s->addr.length;
	return 0;
}

/* Check the read of record i and the record; returns its status. */
static int finish_record(rfb_batch_reader *r, size_t i)
{
	struct slot *s = &r->slots[i];
	struct rfb_batch_record *o = &r->out[i];

	if (s->res == -EINVAL && s->kind == FD_DIRECT)
		reread_buffered(r, s);
	if (s->res == -EINTR || s->res == -EAGAIN) {
		/* transient: read the same window again, synchronously */
		ssize_t got = rfb_pread_full(s->fd, r->arena + s->buf_pos,
					     s->io_len, (off_t)s->io_off);
		s->res = got < 0 ? -errno : got;
		r->st.sync_rereads++;
	}
	if (s->res < 0) {
		rfb_err why = { 0 };
		int code = rfb_err_sys(&why, (int)-s->res, NULL, "read failed");
		(void)fail(o, s, code, "%s", why.msg);
		o->why.sys_errno = why.sys_errno; /* rfb_err_is_system asks it */
		return code;
	}
	r->st.bytes_read += (uint64_t)s->res;
	if ((uint64_t)s->res < s->skip + (uint64_t)s->addr.length)
		return fail(o, s, RFB_ETRUNC, "short read: %lld of %zu bytes "
			    "(the segment is truncated)",
			    s->res - (long long)s->skip < 0 ? 0
			    : s->res - (long long)s->skip, (size_t)s->addr.length);
	return check_record(r, s, o, r->arena + s->buf_pos + s->skip);
}

void rfb_batch_reader_defer_payload(rfb_batch_reader *r, int on)
{
	r->defer_payload = on;
}

int rfb_batch_reader_check_payload(rfb_batch_reader *r, size_t i)
{
	struct rfb_batch_record *o = &r->out[i];
	rfb_err why = { 0 };
	int rc;

	if (o->status || !r->defer_payload)
		return o->status;
	if ((rc = rfb_record_verify(o->data, o->length, &o->meta, &why))) {
		o->data = NULL;
		return fail(o, &r->slots[i], rc, "%s", why.msg);
	}
	return 0;
}

int rfb_batch_reader_wait(rfb_batch_reader *r,
			  const struct rfb_batch_record **records, rfb_err *err)
{
	uint64_t t0 = now_us();
	int bad = 0, rc;

	if (r->state != IN_FLIGHT)
		return rfb_err_set(err, RFB_EINVAL, NULL, r->state == BROKEN
				   ? "batch reader is broken (an earlier AIO failure)"
				   : "no batch was submitted");
	while (r->in_flight > 0)
		if ((rc = reap(r, r->in_flight, err))) {
			r->state = BROKEN;
			return rc;
		}
	r->st.wait_us += now_us() - t0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->slots[i].fd >= 0)
			(void)finish_record(r, i);
		bad += r->out[i].status != 0;
	}
	r->st.bad_records += (uint64_t)bad;
	r->st.batches++;
	r->state = IDLE;
	if (records)
		*records = r->out;
	return bad;
}
