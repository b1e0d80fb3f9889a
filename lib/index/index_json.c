/*
 * index_json.c - the one JSON reading refurb needs: a top-level field of a
 * WebDataset KEY.json member, as a class number or a class name (see
 * scan_internal.h).  Anything else in the document is skipped, checked
 * only as far as skipping needs.
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

/* A string at s (after its opening quote): its end (after the closing
 * quote), or NULL.  When out is not NULL the decoded string is written
 * there (\uXXXX outside ASCII is refused: class names with them are
 * rare, and refusing beats guessing). */
static const char *string_end(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && *s != '"'; s++) {
		char c = *s;
		if ((unsigned char)c < 0x20)
			return NULL;
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
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", s[i]) ||
					    !s[i])
						return NULL;
				if (out && strncmp(s + 1, "00", 2) == 0 &&
				    strtol((char[]){ s[3], s[4], 0 }, NULL, 16) >= 0x20 &&
				    strtol((char[]){ s[3], s[4], 0 }, NULL, 16) < 0x80)
					c = (char)strtol((char[]){ s[3], s[4], 0 },
							 NULL, 16);
				else if (out)
					return NULL;
				s += 4;
				break;
			default:
				return NULL;
			}
		}
		if (out) {
			if (n + 1 >= cap)
				return NULL;
			out[n++] = c;
		}
	}
	if (out)
		out[n] = 0;
	return *s == '"' ? s + 1 : NULL;
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
	if (*s == '-' || (*s >= '0' && *s <= '9')) {
		char *end;
		(void)strtod(s, &end);
		return end == s ? NULL : end;
	}
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
	const char *s = ws(text);
	char key[256];

	if (*s++ != '{')
		return -1;
	s = ws(s);
	if (*s == '}')
		return -1;
	for (;;) {
		if (*s != '"' || !(s = string_end(s + 1, key, sizeof key)))
			return -1;
		if (*(s = ws(s)) != ':')
			return -1;
		s++;
		if (strcmp(key, field) == 0)
			return take_value(s, number, name);
		if (!(s = skip_value(s, 0)))
			return -1;
		s = ws(s);
		if (*s != ',')
			return -1;
		s = ws(s + 1);
	}
}
