/*
 * fuzz_costs.c - the cost file (refurb-costs(5)) on any bytes: the reader
 * accepts it or refuses it with a message; what it accepts must be what
 * the file says (every measurement line, in order, the torn last line
 * left out), and written back by rfb_costs_writer it must read the same.
 */
#include <unistd.h>

#include "fuzz.h"
#include "refurb/costs.h"

/* Complete measurement lines after the header. */
static size_t costs_lines(const uint8_t *d, size_t size)
{
	const uint8_t *nl = memchr(d, '\n', size), *end = d + size;
	size_t n = 0;

	while (nl && nl + 1 < end && (nl = memchr(nl + 1, '\n',
						  (size_t)(end - nl - 1))))
		n++;
	return n;
}

/* Written back through the writer, the file reads the same. */
static void costs_round_trip(const rfb_costs *c)
{
	char path[] = "/tmp/fuzz_costs.XXXXXX";
	int fd = mkstemp(path);
	rfb_err err = { 0 };
	rfb_costs_writer *w;
	rfb_costs *back;
	size_t n = rfb_costs_count(c);

	if (fd < 0)
		return;
	close(fd);
	w = rfb_costs_writer_open(path, rfb_costs_header_of(c), &err);
	FUZZ_ASSERT(w);
	for (size_t i = 0; i < n; i++) {
		const struct rfb_cost_entry *e = &rfb_costs_entries(c)[i];
		rfb_costs_writer_add(w, e->id, e->epoch, e->cpu_us * 1e-6);
	}
	FUZZ_ASSERT(rfb_costs_writer_close(w, &err) == 0);
	back = rfb_costs_open(path, &err);
	FUZZ_ASSERT(back && rfb_costs_count(back) == n);
	FUZZ_ASSERT(!n || !memcmp(rfb_costs_entries(back), rfb_costs_entries(c),
				  n * sizeof *rfb_costs_entries(c)));
	FUZZ_ASSERT(!strcmp(rfb_costs_header_of(back)->pipeline,
			    rfb_costs_header_of(c)->pipeline));
	rfb_costs_free(back);
	unlink(path);
}

FUZZ_TARGET(costs)
{
	rfb_err err = { 0 };
	rfb_costs *c = rfb_costs_open_mem(data, size, "fuzz", &err);
	int ok = c != NULL;

	if (!ok) {
		FUZZ_REJECTED(&err, err.code);
		return 0;
	}
	FUZZ_ASSERT(rfb_costs_count(c) == costs_lines(data, size));
	if (size < 4096)
		costs_round_trip(c);
	rfb_costs_free(c);
	return ok;
}
