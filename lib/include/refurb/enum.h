/*
 * enum.h - the names of enum values, one table per enum: what every
 * *_name() and *_parse() of the library looks up (rfb_plan_shuffle_name,
 * rfb_interp_parse, ...), and what a program can list as the choices of
 * an option.
 *
 * A table is an array of { value, name } that ends with { 0, NULL }.  The
 * first entry of a value holds its canonical name (what the namers
 * return and the files record); later entries of the same value are
 * aliases that parsers also accept ("sequential" for the shuffle "none").
 * Values are >= 0, so that -1 can mean "no such name".
 *
 * The library's convention, for every enum with names: a table
 * NAME_names[] beside the enum's functions, NAME_name(enum value) that
 * returns the canonical name (static storage) or NULL for a value the
 * enum does not have, and, where the library reads the names back,
 * NAME_parse(const char *name) that returns the value or -1 for a name it
 * does not know (NULL accepted: -1).  Any table can be parsed with
 * rfb_enum_parse.
 */
#ifndef REFURB_ENUM_H
#define REFURB_ENUM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rfb_enum_name {
	int value;          /* >= 0 */
	const char *name;   /* NULL: the end of the table */
};

/* The canonical name of value in table (the first entry with that
 * value), or NULL if the table has none. */
const char *rfb_enum_name(const struct rfb_enum_name *table, int value);

/* The value whose name (canonical or alias) is name, or -1 if no entry
 * has that name or name is NULL. */
int rfb_enum_parse(const struct rfb_enum_name *table, const char *name);

/* Number of entries of table (not counting the end). */
size_t rfb_enum_count(const struct rfb_enum_name *table);

#ifdef __cplusplus
}
#endif

#endif
