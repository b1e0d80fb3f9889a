/*
 * fuzz_json.c - the JSON label reader of tar shards (rfbi_json_field,
 * lib/index/index_json.c) on any text: the KEY.json member of a
 * WebDataset sample (refurb-index(1), --label json:FIELD).
 *
 * The input, up to its first NUL, is the member's text; the field asked
 * for is "label".  The reader must:
 *   - return 0, -1 (no such field, or not a class number or name) or
 *     RFBI_JSON_MALFORMED, and allocate a name only when it returns 0;
 *   - on 0, give either a class number in [0, RFB_INDEX_MAX_CLASSES) and
 *     no name, or a non-empty name of valid UTF-8 (no surrogate, no
 *     control character, at most RFB_INDEX_MAX_CLASS_NAME bytes) and -1;
 *   - give the same answer for the text with white space around it.
 * A seed of the corpus is accepted when the reader returns 0.
 */
#include "fuzz.h"
#include "refurb/index.h"
#include "../../lib/index/index_scan_internal.h"

/* 1 if s[0..n) is UTF-8 without surrogates, overlong forms or control
 * characters. */
static int json_valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], len, cp;

		if (c < 0x80) {
			if (c < 0x20)
				return 0;
			i++;
			continue;
		}
		len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
		if (!len || c >= 0xf8 || i + len > n)
			return 0;
		cp = c & (0x7fu >> len);
		for (unsigned k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

/* The reader's answer on text, its invariants checked. */
static int json_answer(const char *text, long *number, char **name)
{
	int rc = rfbi_json_field(text, "label", number, name);

	FUZZ_ASSERT(rc == 0 || rc == -1 || rc == RFBI_JSON_MALFORMED);
	if (rc) {
		FUZZ_ASSERT(*name == NULL);
		return rc;
	}
	if (*name) {
		size_t n = strlen(*name);
		FUZZ_ASSERT(*number == -1);
		FUZZ_ASSERT(n > 0 && n <= RFB_INDEX_MAX_CLASS_NAME);
		FUZZ_ASSERT(json_valid_utf8((const unsigned char *)*name, n));
	} else {
		FUZZ_ASSERT(*number >= 0 && *number < (long)RFB_INDEX_MAX_CLASSES);
	}
	return rc;
}

FUZZ_TARGET(json)
{
	size_t n = strnlen((const char *)data, size);
	char *text = malloc(n + 1), *padded = malloc(n + 5), *name = NULL,
	     *name2 = NULL;
	long number = -2, number2 = -2;
	int rc, rc2;

	if (!text || !padded)
		abort();
	memcpy(text, data, n);
	text[n] = 0;
	snprintf(padded, n + 5, " \n%s\t ", text);
	rc = json_answer(text, &number, &name);
	rc2 = json_answer(padded, &number2, &name2);
	FUZZ_ASSERT(rc == rc2);
	if (rc == 0) {
		FUZZ_ASSERT(number == number2);
		FUZZ_ASSERT((name == NULL) == (name2 == NULL));
		FUZZ_ASSERT(!name || strcmp(name, name2) == 0);
	}
	free(name);
	free(name2);
	free(text);
	free(padded);
	return rc == 0;
}
