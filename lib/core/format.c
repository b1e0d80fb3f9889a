/*
 * format.c - telling the refurb file formats apart by their first bytes
 * (see format.h).
 */
#include <string.h>

#include "refurb/format.h"

static int starts_with(const void *head, size_t len, const char *magic)
{
	size_t n = strlen(magic);

	return len >= n && memcmp(head, magic, n) == 0;
}

enum rfb_format rfb_format_detect(const void *head, size_t len)
{
	if (starts_with(head, len, RFB_INDEX_MAGIC))
		return RFB_FORMAT_INDEX;
	if (starts_with(head, len, RFB_EVICT_MAGIC))
		return RFB_FORMAT_EVICT;
	if (starts_with(head, len, RFB_STREAM_MAGIC))
		return RFB_FORMAT_STREAM;
	if (starts_with(head, len, RFB_PLAN_TAG " "))
		return RFB_FORMAT_PLAN;
	return RFB_FORMAT_UNKNOWN;
}
