/*
 * stream_text.c - the texts of a HEADER frame are UTF-8 (refurb-stream(5)):
 * the check readers and the writer apply to them, and the escape that
 * turns a value that need not be UTF-8 (a path) into such text.
 */
#include <stdio.h>
#include <string.h>

#include "stream_internal.h"

/* Bytes of the UTF-8 sequence at s[0..n) (s[0] >= 0x80): 2 to 4, or 0
 * when it is not one (a stray continuation byte, a cut or overlong
 * sequence, a surrogate, past U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	unsigned long cp;

	if (!len || s[0] >= 0xf5 || len > n)
		return 0;
	cp = s[0] & (0x7fu >> len);
	for (size_t k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	if (cp < (len == 2 ? 0x80ul : len == 3 ? 0x800ul : 0x10000ul) ||
	    cp > 0x10fffful || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

size_t rfbi_stream_utf8_error(const char *text, size_t n)
{
	const unsigned char *s = (const unsigned char *)text;

	for (size_t i = 0; i < n;) {
		size_t len = s[i] < 0x80 ? 1 : utf8_seq(s + i, n - i);
		if (!len)
			return i;
		i += len;
	}
	return n;
}

size_t rfb_stream_text_escape(char *out, size_t n, const char *value)
{
	const unsigned char *s = (const unsigned char *)value;
	size_t len = 0, kept = 0, left = strlen(value);

	while (left) {
		size_t seq = *s >= 0x80 ? utf8_seq(s, left) : 1;
		char esc[4];
		const char *piece = (const char *)s;
		size_t plen = seq;
		if (!seq || *s < 0x20 || *s == 0x7f || *s == '%') {
			snprintf(esc, sizeof esc, "%%%02X", *s);
			piece = esc;
			seq = 1;
			plen = 3;
		}
		/* whole pieces only, and none after one that did not fit */
		if (kept == len && len + plen < n) {
			memcpy(out + len, piece, plen);
			kept += plen;
		}
		len += plen;
		s += seq;
		left -= seq;
	}
	if (n)
		out[kept] = '\0';
	return len;
}
