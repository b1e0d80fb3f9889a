/*
 * plan_annotate.c - cache annotations of the plan stream (see annotate.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/annotate.h"
#include "refurb/handover.h"

void rfb_annot_set(rfb_plan_sample *s, const struct rfb_cache_addr *a,
		   uint32_t write_epoch)
{
	s->addr_count = 4;
	s->addr[0] = a->segment;
	s->addr[1] = a->offset;
	s->addr[2] = a->length;
	s->addr[3] = write_epoch;
}

void rfb_annot_set_skipped(rfb_plan_sample *s)
{
	s->addr_count = 1;
	s->addr[0] = 0;
}

int rfb_annot_get(const rfb_plan_sample *s, struct rfb_cache_addr *a,
		  uint32_t *write_epoch)
{
	if (s->addr_count == 1 && s->addr[0] == 0)
		return 0;
	if (s->addr_count == 4 && s->addr[0] == RFB_HANDOVER_SEGMENT) {
		if (s->addr[2] < RFB_RECORD_HEADER_SIZE ||
		    s->addr[2] > RFB_RECORD_HEADER_SIZE + (uint64_t)RFB_RECORD_MAX_STORED ||
		    s->addr[1] > INT64_MAX || s->addr[3] > UINT32_MAX)
			return RFB_EFORMAT;
		a->segment = RFB_HANDOVER_SEGMENT;
		a->offset = s->addr[1];
		a->length = (uint32_t)s->addr[2];
		*write_epoch = (uint32_t)s->addr[3];
		return 2;
	}
	if (s->addr_count != 4 || s->addr[0] >= RFB_CACHE_NO_SEGMENT ||
	    s->addr[2] < RFB_RECORD_HEADER_SIZE ||
	    s->addr[2] > RFB_RECORD_HEADER_SIZE + (uint64_t)RFB_RECORD_MAX_STORED ||
	    s->addr[1] < RFB_CACHE_SEGMENT_HEADER || s->addr[1] > INT64_MAX ||
	    s->addr[3] > UINT32_MAX)
		return RFB_EFORMAT;
	a->segment = (uint32_t)s->addr[0];
	a->offset = s->addr[1];
	a->length = (uint32_t)s->addr[2];
	*write_epoch = (uint32_t)s->addr[3];
	return 1;
}

/* Percent-encode v as a header value into out (size n, may be 0);
 * returns the encoded length. */
static size_t put_value(char *out, size_t n, const char *v)
{
	size_t len = 0;

	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p > ' ' && *p <= '~' && *p != '%') {
			if (len + 1 < n)
				out[len] = (char)*p;
			len++;
		} else {
			if (len + 3 < n)
				snprintf(out + len, 4, "%%%02X", *p);
			len += 3;
		}
	}
	if (len < n)
		out[len] = '\0';
	return len;
}

size_t rfb_annot_format_header(char *buf, size_t n, const rfb_plan_header *h,
			       const struct rfb_annot_header *a)
{
	const char *keys[] = { "cache", "index-file", "root", "partial", "codec" };
	const char *vals[] = { a->cache, a->index_file, a->root, a->partial,
			       a->codec };
	size_t len = rfb_plan_format_header(buf, n, h);

	if (len > 0)
		len--; /* drop the '\n', added again at the end */
	for (int i = 0; i < 5; i++) {
		len += (size_t)snprintf(len < n ? buf + len : NULL,
					len < n ? n - len : 0, " %s=", keys[i]);
		len += put_value(len < n ? buf + len : NULL, len < n ? n - len : 0,
				 vals[i]);
	}
	if (a->handover[0]) { /* only with --handover: older readers see none */
		len += (size_t)snprintf(len < n ? buf + len : NULL,
					len < n ? n - len : 0, " handover=");
		len += put_value(len < n ? buf + len : NULL, len < n ? n - len : 0,
				 a->handover);
	}
	if (a->max_pixels) /* 0: not said (older readers see none) */
		len += (size_t)snprintf(len < n ? buf + len : NULL,
					len < n ? n - len : 0, " max-pixels=%"
					PRIu64, a->max_pixels);
	len += (size_t)snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0,
				" aug-seed=%" PRIu64 "\n", a->aug_seed);
	return len;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The decoded value of " key=" in line into out (size n): 0, or -1 if
 * the key is missing, badly encoded or too long. */
static int get_value(const char *line, size_t len, const char *key,
		     char *out, size_t n)
{
	size_t klen = strlen(key), o = 0;

	for (size_t i = 0; i + klen + 2 <= len; i++) {
		if (line[i] != ' ' || strncmp(line + i + 1, key, klen) ||
		    line[i + 1 + klen] != '=')
			continue;
		for (size_t j = i + klen + 2; j < len && line[j] != ' '; j++) {
			int c = (unsigned char)line[j];
			if (c == '%') {
				if (j + 2 >= len || hexval(line[j + 1]) < 0 ||
				    hexval(line[j + 2]) < 0)
					return -1;
				c = hexval(line[j + 1]) * 16 + hexval(line[j + 2]);
				j += 2;
			}
			if (c == 0 || o + 1 >= n)
				return -1;
			out[o++] = (char)c;
		}
		out[o] = '\0';
		return 0;
	}
	return -1;
}

/* A canonical decimal (digits only, no leading zero) that fits in 64
 * bits, as the writer prints it: 0 or -1. */
static int parse_seed(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

int rfb_annot_parse_header(const char *line, size_t len,
			   struct rfb_annot_header *a, rfb_err *err)
{
	struct { const char *key; char *out; size_t n; } f[] = {
		{ "cache", a->cache, sizeof a->cache },
		{ "index-file", a->index_file, sizeof a->index_file },
		{ "root", a->root, sizeof a->root },
		{ "partial", a->partial, sizeof a->partial },
		{ "codec", a->codec, sizeof a->codec },
	};
	char seed[32];

	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (get_value(line, len, f[i].key, f[i].out, f[i].n))
			return rfb_err_set(err, RFB_EFORMAT, NULL,
				"header has no valid %s= (is this plan annotated "
				"by refurb-partial?)", f[i].key);
	if (get_value(line, len, "aug-seed", seed, sizeof seed) || !seed[0])
		return rfb_err_set(err, RFB_EFORMAT, NULL,
				   "header has no valid aug-seed=");
	if (parse_seed(seed, &a->aug_seed))
		return rfb_err_set(err, RFB_EFORMAT, NULL, "bad aug-seed=%s", seed);
	if (get_value(line, len, "handover", a->handover, sizeof a->handover))
		a->handover[0] = '\0'; /* optional */
	a->max_pixels = 0; /* optional: an older refurb-partial's has none */
	if (!get_value(line, len, "max-pixels", seed, sizeof seed) &&
	    (parse_seed(seed, &a->max_pixels) || !a->max_pixels))
		return rfb_err_set(err, RFB_EFORMAT, NULL, "bad max-pixels=%s",
				   seed);
	return 0;
}
