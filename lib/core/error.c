/*
 * error.c - error codes and the error context (see error.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

int rfb_err_sys(rfb_err *err, int sys_errno, const char *path,
		const char *fmt, ...)
{
	int code = RFB_EIO;
	size_t len;
	va_list ap;

	if (sys_errno == ENOSPC || sys_errno == EDQUOT)
		code = RFB_ENOSPC;
	else if (sys_errno == EPIPE)
		code = RFB_EPIPE;
	else if (sys_errno == ENOMEM)
		code = RFB_ENOMEM;
	if (!err)
		return code;
	err->code = code;
	err->sys_errno = sys_errno;
	set_path(err, path);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	snprintf(err->msg + len, sizeof err->msg - len, "%s%s",
		 len ? ": " : "", strerror(sys_errno));
	return code;
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
