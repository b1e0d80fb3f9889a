/*
 * error.c - error codes and the error context (see error.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "refurb/error.h"

const char *rfb_strerror(int code)
{
	switch (code) {
	case RFB_OK: return "success";
	case RFB_EIO: return "input/output error";
	case RFB_ENOMEM: return "out of memory";
	case RFB_EFORMAT: return "bad format";
	case RFB_EVERSION: return "unsupported format version";
	case RFB_ETRUNC: return "truncated";
	case RFB_ECHECKSUM: return "checksum mismatch";
	case RFB_EINVAL: return "invalid argument";
	case RFB_ELIMIT: return "limit exceeded";
	case RFB_EMISMATCH: return "made for different inputs";
	case RFB_EDECODE: return "cannot decode image";
	case RFB_ELOCKED: return "locked by another process";
	case RFB_ENOSPC: return "no space left on device";
	case RFB_ESPEC: return "bad pipeline spec";
	case RFB_ENOTFOUND: return "not found";
	case RFB_EPIPE: return "reader closed the stream";
	case RFB_ERESOURCE: return "out of a system resource";
	}
	return "unknown error";
}

static void set_path(rfb_err *err, const char *path)
{
	if (path)
		snprintf(err->path, sizeof err->path, "%s", path);
	else
		err->path[0] = '\0';
}

int rfb_err_set(rfb_err *err, int code, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	err->sys_errno = 0;
	set_path(err, path);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return code;
}

/* The code of a failed system call's errno. */
static int sys_code(int e)
{
	switch (e) {
	case ENOSPC: case EDQUOT: return RFB_ENOSPC;
	case EPIPE: return RFB_EPIPE;
	case ENOMEM: return RFB_ENOMEM;
	case EMFILE: case ENFILE: case ENOBUFS: return RFB_ERESOURCE;
	}
	return RFB_EIO;
}

/* What to do about errno e, after its text ("" when the message says
 * enough): the limit to raise, or what to look at. */
static void sys_hint(int e, char *buf, size_t n)
{
	struct rlimit rl;

	buf[0] = '\0';
	if (e == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY)
		snprintf(buf, n, " (the open-file limit is %llu: raise it, e.g. "
			 "ulimit -n %llu, see refurb(7), RESOURCE LIMITS)",
			 (unsigned long long)rl.rlim_cur,
			 (unsigned long long)(rl.rlim_cur < 512 ? 4096
					      : rl.rlim_cur * 4));
	else if (e == EMFILE)
		snprintf(buf, n, " (raise the open-file limit: ulimit -n)");
	else if (e == ENFILE)
		snprintf(buf, n, " (the system's table of open files is full: "
			 "raise fs.file-max or stop other programs)");
	else if (e == ENOMEM || e == ENOBUFS)
		snprintf(buf, n, " (free memory, or use fewer threads with -j)");
	else if (e == EIO)
		snprintf(buf, n, " (the device failed: see dmesg, check the disk)");
}

int rfb_err_sys(rfb_err *err, int sys_errno, const char *path,
		const char *fmt, ...)
{
	int code = sys_code(sys_errno);
	char hint[160];
	size_t len;
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	err->sys_errno = sys_errno;
	set_path(err, path);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	sys_hint(sys_errno, hint, sizeof hint);
	snprintf(err->msg + len, sizeof err->msg - len, "%s%s%s",
		 len ? ": " : "", strerror(sys_errno), hint);
	return code;
}

int rfb_err_is_system(const rfb_err *err)
{
	if (!err)
		return 0;
	if (err->code == RFB_ENOMEM || err->code == RFB_ENOSPC ||
	    err->code == RFB_ERESOURCE)
		return 1;
	switch (err->sys_errno) {
	case EMFILE: case ENFILE: case ENOMEM: case ENOBUFS: case EIO:
	case ENOSPC: case EDQUOT: case EAGAIN: case EINTR: case ESTALE:
	case ETIMEDOUT: case ENOLCK: case ENXIO: case ENODEV:
	case EREMOTEIO: case ENOTCONN: case EHOSTDOWN: case ECONNRESET:
		return 1;
	}
	return 0;
}

void rfb_err_clear(rfb_err *err)
{
	if (err)
		memset(err, 0, sizeof *err);
}

const char *rfb_err_text(const rfb_err *err, char *buf, unsigned n)
{
	if (err->path[0])
		snprintf(buf, n, "%s: %s", err->path, err->msg);
	else
		snprintf(buf, n, "%s", err->msg[0] ? err->msg
				 : rfb_strerror(err->code));
	return buf;
}
