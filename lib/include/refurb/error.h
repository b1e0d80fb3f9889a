/*
 * error.h - librefurb's error model.
 *
 * Library functions never print and never exit.  They return 0 or a
 * negative RFB_E* code (or NULL) and fill an rfb_err context with a human
 * message, the file concerned and the errno that caused it.  Programs turn
 * the context into "refurb-X: FILE: message" on stderr.
 */
#ifndef REFURB_ERROR_H
#define REFURB_ERROR_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_MUST_CHECK __attribute__((warn_unused_result))

/* Error codes.  Numbers are part of the API: never renumber or reuse. */
enum rfb_code {
	RFB_OK = 0,
	RFB_EIO = -1,        /* read/write/open failed; errno in context */
	RFB_ENOMEM = -2,     /* allocation failed */
	RFB_EFORMAT = -3,    /* bad magic or malformed content */
	RFB_EVERSION = -4,   /* format version this build cannot read */
	RFB_ETRUNC = -5,     /* file or record shorter than it claims */
	RFB_ECHECKSUM = -6,  /* checksum mismatch */
	RFB_EINVAL = -7,     /* invalid argument or parameter */
	RFB_ELIMIT = -8,     /* a size limit was exceeded */
	RFB_EMISMATCH = -9,  /* input made for another index/schedule/cache */
	RFB_EDECODE = -10,   /* image could not be decoded */
	RFB_ELOCKED = -11,   /* resource locked by another process */
	RFB_ENOSPC = -12,    /* no space left on device */
	RFB_ESPEC = -13,     /* pipeline spec syntax or semantic error */
	RFB_ENOTFOUND = -14, /* requested item does not exist */
	RFB_EPIPE = -15,     /* reader went away (EPIPE) */
	RFB_ERESOURCE = -16, /* the system ran out of a resource (open files,
			      * kernel buffers): not the data's fault */
};

/*
 * Error context: filled by the library on failure, read by the caller.
 * A zeroed struct is a valid empty context.
 */
typedef struct rfb_err {
	int code;        /* last RFB_E* code, 0 if none */
	int sys_errno;   /* errno that caused it, 0 if none */
	char path[512];  /* file concerned, "" if none */
	char msg[1024];  /* human-readable reason, no trailing newline */
} rfb_err;

/* Human-readable text of an RFB_E* code; never NULL. */
const char *rfb_strerror(int code);

/*
 * Fill err (NULL accepted: then nothing is recorded) with code, path (NULL
 * for none) and a printf-style message.  Returns code, so that a failing
 * function can "return rfb_err_set(...)".
 */
int rfb_err_set(rfb_err *err, int code, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Like rfb_err_set() for a failed system call: records errno (as given in
 * sys_errno) and appends ": strerror(errno)" to the message, and for the
 * errors of the system (EMFILE, ENFILE, ENOMEM, ENOBUFS, EIO) the limit
 * to raise or what to check, in parentheses.  Maps ENOSPC and EDQUOT to
 * RFB_ENOSPC, EPIPE to RFB_EPIPE, ENOMEM to RFB_ENOMEM, EMFILE, ENFILE
 * and ENOBUFS to RFB_ERESOURCE, everything else to RFB_EIO.  Returns the
 * code recorded.
 */
int rfb_err_sys(rfb_err *err, int sys_errno, const char *path,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Whether err is a failure of the system the program runs on (its
 * resources, devices or file systems: RFB_ENOMEM, RFB_ENOSPC,
 * RFB_ERESOURCE, or an errno such as EMFILE, ENFILE, ENOMEM, EIO,
 * ENOSPC, EAGAIN, ESTALE) rather than of the data read: such a failure
 * says nothing of an image, and must stop a run rather than count as a
 * bad sample.  A file that is not there or not readable (ENOENT, EACCES)
 * is the data's.  NULL gives 0.
 */
int rfb_err_is_system(const rfb_err *err);

/* Reset err to the empty context.  NULL accepted. */
void rfb_err_clear(rfb_err *err);

/*
 * Format err as "PATH: MESSAGE" (or "MESSAGE" when there is no path) into
 * buf of size n.  Returns buf.
 */
const char *rfb_err_text(const rfb_err *err, char *buf, unsigned n);

#ifdef __cplusplus
}
#endif

#endif
