/*
 * index_json.c - the one JSON reading refurb needs: a top-level field of a
 * WebDataset KEY.json member, as a class number or a class name (see
 * scan_internal.h).  The whole document is checked as JSON; anything but
 * the field is skipped.
 */
#include <stdlib.h>
#include <string.h>

#include "refurb/index.h"
#include "index_scan_internal.h"

#define MAX_DEPTH 64

static const char *ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return s;
}

/* The 4 hex digits at s as a number, or -1. */
static long hex4(const char *s)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
			return -1;
		v = v * 16 + (s[i] <= '9' ? s[i] - '0' : (s[i] | 0x20) - 'a' + 10);
	}
	return v;
}

/* \uXXXX (and its low surrogate) at s (after the "u"): the code point
 * (a lone surrogate as it is), *used the characters read after the "u";
 * -1 when malformed.  Python's json.dumps escapes every non-ASCII
 * character so. */
static long unicode_escape(const char *s, int *used)
{
	long hi = hex4(s), lo;

	*used = 4;
	if (hi < 0xd800 || hi > 0xdfff)
		return hi;
	if (hi > 0xdbff || s[4] != '\\' || s[5] != 'u' ||
	    (lo = hex4(s + 6)) < 0xdc00 || lo > 0xdfff)
		return hi;      /* lone: valid JSON, no character (the caller) */
	*used = 10;
	return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
}

/* Append code point c as UTF-8 to out[*n..cap); 0, or -1 when full. */
static int put_utf8(char *out, size_t *n, size_t cap, long c)
{
	unsigned char b[4];
	size_t len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;

	if (len == 1)
		b[0] = (unsigned char)c;
	for (size_t i = len - 1; len > 1 && i > 0; i--, c >>= 6)
		b[i] = (unsigned char)(0x80 | (c & 0x3f));
	if (len > 1)
		b[0] = (unsigned char)((0xf00 >> len) | c);
	if (*n + len >= cap)
		return -1;
	memcpy(out + *n, b, len);
	*n += len;
	return 0;
}

/* The length of the UTF-8 sequence at s (its lead byte >= 0x80): 2 to 4,
 * or 0 when it is not UTF-8 (a stray continuation byte, a cut or overlong
 * sequence, a surrogate, past U+10FFFF): JSON text is UTF-8 (RFC 8259),
 * and a Latin-1 class name would end up in the index's class section. */
static int utf8_len(const unsigned char *s)
{
	int len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	long cp;

	if (!len || s[0] >= 0xf5)
		return 0;
	cp = s[0] & (0x7f >> len);
	for (int k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	if (cp < (len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* A string at s (after its opening quote): its end (after the closing
 * quote), or NULL.  When out is not NULL the decoded string is written
 * there, as UTF-8 (\u0000, which would cut it, is refused).  Bytes that
 * are not UTF-8 are refused either way. */
static const char *string_end(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && *s != '"'; s++) {
		long c = (unsigned char)*s;
		int used;
		if (c < 0x20)
			return NULL;
		if (c >= 0x80) {
			int len = utf8_len((const unsigned char *)s);
			if (!len || (out && n + (size_t)len >= cap))
				return NULL;
			if (out) {
				memcpy(out + n, s, (size_t)len);
				n += (size_t)len;
			}
			s += len - 1;
			continue;
		}
		if (c == '\\') {
			s++;
			switch (*s) {
			case '"': case '\\': case '/': c = *s; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				if ((c = unicode_escape(s + 1, &used)) < 0 ||
				    (out && (c == 0 ||
					     (c >= 0xd800 && c <= 0xdfff))))
					return NULL;
				s += used;
				if (out && put_utf8(out, &n, cap, c))
					return NULL;
				continue;
			default:
				return NULL;
			}
		}
		if (out) {
			if (n + 1 >= cap)
				return NULL;
			out[n++] = (char)c;
		}
	}
	if (out)
		out[n] = 0;
	return *s == '"' ? s + 1 : NULL;
}

static const char *digits_end(const char *s)
{
	while (*s >= '0' && *s <= '9')
		s++;
	return s;
}

/* A JSON number at s: its end, or NULL (strtod would also take hex,
 * "inf", "nan" and leading zeros, which JSON does not). */
static const char *number_end(const char *s)
{
	const char *d;

	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if ((d = digits_end(s)) == s)
		return NULL;
	else
		s = d;
	if (*s == '.') {
		if ((d = digits_end(s + 1)) == s + 1)
			return NULL;
		s = d;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if ((d = digits_end(s)) == s)
			return NULL;
		s = d;
	}
	return s;
}

/* Skip one value; returns what follows it, or NULL when malformed. */
static const char *skip_value(const char *s, int depth)
{
	s = ws(s);
	if (depth > MAX_DEPTH)
		return NULL;
	if (*s == '"')
		return string_end(s + 1, NULL, 0);
	if (*s == '{' || *s == '[') {
		char close = *s == '{' ? '}' : ']';
		s = ws(s + 1);
		if (*s == close)
			return s + 1;
		for (;;) {
			if (close == '}') {
				if (*s != '"' || !(s = string_end(s + 1, NULL, 0)))
					return NULL;
				if (*(s = ws(s)) != ':')
					return NULL;
				s++;
			}
			if (!(s = skip_value(s, depth + 1)))
				return NULL;
			s = ws(s);
			if (*s == close)
				return s + 1;
			if (*s != ',')
				return NULL;
			s = ws(s + 1);
		}
	}
	if (*s == '-' || (*s >= '0' && *s <= '9'))
		return number_end(s);
	for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
		if (strncmp(s, lit, strlen(lit)) == 0)
			return s + strlen(lit);
	return NULL;
}

/* The value of field: a non-negative integer (*number) or a string
 * (*name, malloc'ed; *number = -1). */
static int take_value(const char *s, long *number, char **name)
{
	s = ws(s);
	if (*s == '"') {
		char buf[RFB_INDEX_MAX_CLASS_NAME + 1];
		if (!string_end(s + 1, buf, sizeof buf) || !buf[0])
			return -1;
		for (const char *p = buf; *p; p++)
			if ((unsigned char)*p < 0x20) /* \n, \t: no class name */
				return -1;
		*number = -1;
		return (*name = strdup(buf)) ? 0 : -1;
	}
	if (*s >= '0' && *s <= '9') {
		char *end;
		long v = strtol(s, &end, 10);
		if (*end == '.' || *end == 'e' || *end == 'E' ||
		    v >= (long)RFB_INDEX_MAX_CLASSES)
			return -1;
		*number = v;
		*name = NULL;
		return 0;
	}
	return -1;
}

int rfbi_json_field(const char *text, const char *field, long *number, char **name)
{
	const char *s = ws(text), *after;
	char key[256];
	int found = -1;

	*name = NULL;
	/* the whole document is checked: a value cut short by a stray quote
	 * ("b "q"") must not pass as its first part */
	if (!(after = skip_value(s, 0)) || *ws(after))
		return RFBI_JSON_MALFORMED;
	if (*s++ != '{')
		return -1;
	s = ws(s);
	while (*s != '}') {
		const char *k = s + 1;
		int is_field = (s = string_end(k, key, sizeof key)) &&
			       strcmp(key, field) == 0;

		if (!s)   /* a key past 255 bytes, \u0000, a lone surrogate */
			s = string_end(k, NULL, 0);
		s = ws(s) + 1;                       /* the ':' */
		if (is_field) {
			/* a duplicate key: its last value, as Python's
			 * json.loads (and so WebDataset) takes it */
			free(*name);
			*name = NULL;
			found = take_value(s, number, name);
		}
		s = ws(skip_value(s, 0));
		if (*s == ',')
			s = ws(s + 1);
	}
	return found;
}
