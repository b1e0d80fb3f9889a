/*
 * enum.c - looking up the names of enum values in their tables (see
 * enum.h): the one namer and the one parser behind every *_name() and
 * *_parse() of the library.
 */
#include <string.h>

#include "refurb/enum.h"

const char *rfb_enum_name(const struct rfb_enum_name *table, int value)
{
	for (const struct rfb_enum_name *e = table; e->name; e++)
		if (e->value == value)
			return e->name;
	return NULL;
}

int rfb_enum_parse(const struct rfb_enum_name *table, const char *name)
{
	if (!name)
		return -1;
	for (const struct rfb_enum_name *e = table; e->name; e++)
		if (strcmp(e->name, name) == 0)
			return e->value;
	return -1;
}

size_t rfb_enum_count(const struct rfb_enum_name *table)
{
	size_t n = 0;

	while (table[n].name)
		n++;
	return n;
}
