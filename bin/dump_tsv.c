/*
 * dump_tsv.c - a text field of a TSV listing (a path, a class name)
 * written so that the listing stays one record a line: tab, newline,
 * carriage return and backslash as \t, \n, \r and \\, which
 * refurb-index --list reads back.
 */
#include "dump.h"

void dump_tsv_field(FILE *out, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '\t': fputs("\\t", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\\': fputs("\\\\", out); break;
		default: putc(*s, out);
		}
}
