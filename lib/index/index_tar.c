/*
 * index_tar.c - reading tar headers in place: ustar and GNU headers, GNU long
 * names ('L'), pax extended headers ('x': path and size), base-256 sizes
 * (see tar_internal.h).  The layout is POSIX.1-2001's ustar/pax and GNU
 * tar's; Python's tarfile reads the same archives the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refurb/enum.h"
#include "refurb/io.h"
#include "index_tar_internal.h"

#define MAX_EXT_HEADER ((uint64_t)1 << 20)   /* pax or long-name data */

static int all_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* An octal field (leading spaces, ending at NUL or space), or GNU's
 * base-256 (first byte 0x80).  Returns 0, or -1 when malformed. */
static int parse_number(const unsigned char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] == 0x80) {
		for (i = 1; i < n; i++) {
			if (v >> 56)
				return -1;
			v = v << 8 | f[i];
		}
		*out = v;
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 61)
			return -1;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != 0 && f[i] != ' ')
		return -1;
	*out = v;
	return 0;
}

/* The header checksum: the stored value equals the sum of the block's
 * bytes with the checksum field taken as spaces (unsigned, or signed as
 * some old tars computed it). */
static int checksum_ok(const unsigned char *b)
{
	uint64_t want;
	long sum_u = 0, sum_s = 0;

	if (parse_number(b + 148, 8, &want))
		return 0;
	for (int i = 0; i < TAR_BLOCK; i++) {
		unsigned char c = i >= 148 && i < 156 ? ' ' : b[i];
		sum_u += c;
		sum_s += (signed char)c;
	}
	return (long)want == sum_u || (long)want == sum_s;
}

enum tar_kind rfbi_tar_sniff(const unsigned char *b, size_t n)
{
	if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return TAR_GZIP;
	if (n >= 3 && memcmp(b, "BZh", 3) == 0)
		return TAR_BZIP2;
	if (n >= 6 && memcmp(b, "\xfd" "7zXZ\0", 6) == 0)
		return TAR_XZ;
	if (n >= 4 && memcmp(b, "\x28\xb5\x2f\xfd", 4) == 0)
		return TAR_ZSTD;
	if (n >= 4 && memcmp(b, "\x04\x22\x4d\x18", 4) == 0)
		return TAR_LZ4;
	if (n < TAR_BLOCK)
		return TAR_NOT;
	if (n >= 2 * TAR_BLOCK && all_zero(b, 2 * TAR_BLOCK))
		return TAR_PLAIN;  /* an empty archive */
	return !all_zero(b, TAR_BLOCK) && checksum_ok(b) ? TAR_PLAIN : TAR_NOT;
}

/* only the compressed kinds have names (rfbi_tar_check_kind tells them
 * from TAR_PLAIN and TAR_NOT by that) */
static const struct rfb_enum_name tar_kind_names[] = {
	{ TAR_GZIP, "gzip" },
	{ TAR_BZIP2, "bzip2" },
	{ TAR_XZ, "xz" },
	{ TAR_ZSTD, "zstd" },
	{ TAR_LZ4, "lz4" },
	{ 0, NULL },
};

const char *rfbi_tar_kind_name(enum tar_kind k)
{
	return rfb_enum_name(tar_kind_names, (int)k);
}

int rfbi_tar_check_kind(enum tar_kind k, const char *path, rfb_err *err)
{
	if (rfbi_tar_kind_name(k))
		return rfb_err_set(err, RFB_EFORMAT, path, "compressed shard "
				   "(%s): refurb reads shards in place, so they "
				   "must be uncompressed tar files (decompress "
				   "it first)", rfbi_tar_kind_name(k));
	if (k != TAR_PLAIN)
		return rfb_err_set(err, RFB_EFORMAT, path, "not a tar file (no "
				   "valid tar header at its start)");
	return 0;
}

void rfbi_tar_open(struct tar_reader *r, int fd, const char *path,
		   uint64_t file_size)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->path = path;
	r->file_size = file_size;
}

void rfbi_tar_close(struct tar_reader *r)
{
	free(r->name);
	free(r->long_name);
	r->name = r->long_name = NULL;
}

/* n moved back (dir < 0) or on (dir > 0) to the start of a UTF-8
 * character of s. */
static size_t char_start(const char *s, size_t n, int dir)
{
	while (((unsigned char)s[n] & 0xc0) == 0x80)
		n = dir < 0 ? n - 1 : n + 1;
	return n;
}

const char *rfbi_tar_shown(const char *name, char *buf)
{
	size_t len = strlen(name), head, tail;

	if (len <= RFBI_TAR_SHOWN_KEEP) {
		memcpy(buf, name, len + 1);
		return buf;
	}
	head = char_start(name, 96, -1);
	tail = char_start(name, len - 40, 1);
	snprintf(buf, RFBI_TAR_SHOWN, "%.*s...%s (%zu bytes)", (int)head, name,
		 name + tail, len);
	return buf;
}

/* The last member's name for messages (into buf, RFBI_TAR_SHOWN bytes). */
static const char *last_shown(const struct tar_reader *r, char *buf)
{
	return r->last ? rfbi_tar_shown(r->last, buf) : "(none)";
}

/* The data of an extension header (long name, pax records), malloc'ed and
 * NUL-terminated. */
static int read_ext(struct tar_reader *r, uint64_t off, uint64_t size,
		    char **out, rfb_err *err)
{
	char *d;
	ssize_t got;

	if (size > MAX_EXT_HEADER)
		return rfb_err_set(err, RFB_EFORMAT, r->path, "extension header "
				   "at offset %llu: %llu bytes, more than refurb "
				   "reads", (unsigned long long)off - TAR_BLOCK,
				   (unsigned long long)size);
	if (!(d = malloc(size + 1)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	got = rfb_pread_full(r->fd, d, size, (off_t)off);
	if (got < 0 || (uint64_t)got != size) {
		free(d);
		return got < 0 ? rfb_err_sys(err, errno, r->path, "read failed")
			       : rfb_err_set(err, RFB_ETRUNC, r->path, "truncated "
					     "shard: it ends inside an extension "
					     "header");
	}
	d[size] = 0;
	*out = d;
	return 0;
}

/* A decimal number of digits only, without overflow: s[0..n) into *out.
 * Returns 0, or -1 when malformed. */
static int parse_decimal(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* The pax record at rec ("LEN KEY=VALUE\n", LEN counting the whole
 * record), at most room bytes: its length, with the newline made a NUL and
 * *key, *value pointing into it; 0 when malformed. */
static uint64_t pax_record(char *rec, uint64_t room, char **key, char **value)
{
	size_t digits = 0;
	uint64_t len;
	char *eq;

	while (digits < room && rec[digits] >= '0' && rec[digits] <= '9')
		digits++;
	if (digits == 0 || digits >= room || rec[digits] != ' ' ||
	    parse_decimal(rec, digits, &len) || len > room || len < digits + 3 ||
	    rec[len - 1] != '\n')
		return 0;
	*key = rec + digits + 1;
	if (!(eq = memchr(*key, '=', (size_t)(rec + len - 1 - *key))) || eq == *key)
		return 0;
	*eq = 0;
	rec[len - 1] = 0;
	*value = eq + 1;
	return len;
}

/* pax records: keep path and size for the next member. */
static int apply_pax(struct tar_reader *r, char *d, uint64_t size,
		     rfb_err *err)
{
	uint64_t at = 0, len;
	char shown[RFBI_TAR_SHOWN];
	const char *last = last_shown(r, shown);

	while (at < size) {
		char *key, *value;
		if (!(len = pax_record(d + at, size - at, &key, &value)))
			return rfb_err_set(err, RFB_EFORMAT, r->path, "corrupt pax "
					   "header after member %s (a malformed "
					   "record at byte %llu of its data)", last,
					   (unsigned long long)at);
		if (strcmp(key, "path") == 0) {
			free(r->long_name);
			if (!(r->long_name = strdup(value)))
				return rfb_err_set(err, RFB_ENOMEM, NULL,
						   "out of memory");
		} else if (strcmp(key, "size") == 0) {
			if (parse_decimal(value, strlen(value), &r->pax_size))
				return rfb_err_set(err, RFB_EFORMAT, r->path,
						   "corrupt pax header after member "
						   "%s (size '%.40s' is not a "
						   "decimal number of bytes)", last,
						   value);
			r->have_pax_size = 1;
		}
		at += len;
	}
	return 0;
}

/* The member's name: a pending long name, else ustar's prefix/name. */
static int take_name(struct tar_reader *r, const unsigned char *b,
		     rfb_err *err)
{
	char name[101], prefix[156];
	size_t n;

	free(r->name);
	if (r->long_name) {
		r->name = r->long_name;
		r->long_name = NULL;
		return 0;
	}
	memcpy(name, b, 100);
	name[100] = 0;
	memcpy(prefix, b + 345, 155);
	prefix[155] = 0;
	/* GNU tar's own headers keep other fields where ustar's prefix is */
	if (memcmp(b + 257, "ustar\0", 6) != 0)
		prefix[0] = 0;
	n = strlen(prefix) + strlen(name) + 2;
	if (!(r->name = malloc(n)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if (prefix[0])
		snprintf(r->name, n, "%s/%s", prefix, name);
	else
		snprintf(r->name, n, "%s", name);
	return 0;
}

/* Headers that describe the next member (or the archive) rather than
 * being one: GNU long name and long link, pax extended and global. */
static int is_ext_header(unsigned char type)
{
	return type == 'L' || type == 'K' || type == 'x' || type == 'g';
}

/* Read the header block at r->pos into r->buf.  Returns 1, 0 at the end,
 * or an error. */
static int read_header(struct tar_reader *r, size_t *got_out, rfb_err *err)
{
	char shown[RFBI_TAR_SHOWN];
	ssize_t got;

	if (r->pos >= r->file_size)
		goto end; /* no end-of-archive blocks: accepted, as tarfile does */
	got = rfb_pread_full(r->fd, r->buf, sizeof r->buf, (off_t)r->pos);
	if (got < 0)
		return rfb_err_sys(err, errno, r->path, "read failed");
	if (got < TAR_BLOCK)
		return rfb_err_set(err, RFB_ETRUNC, r->path, "truncated shard: it "
				   "ends inside the tar header at offset %llu "
				   "(after member %s)", (unsigned long long)r->pos,
				   last_shown(r, shown));
	if (all_zero(r->buf, TAR_BLOCK))
		goto end;
	if (!checksum_ok(r->buf))
		return rfb_err_set(err, RFB_EFORMAT, r->path, "corrupt tar header "
				   "at offset %llu (checksum mismatch; after "
				   "member %s)", (unsigned long long)r->pos,
				   last_shown(r, shown));
	*got_out = (size_t)got;
	return 1;
end:
	/* an extension header describes a member that must follow it */
	if (r->long_name || r->have_pax_size)
		return rfb_err_set(err, RFB_ETRUNC, r->path, "truncated shard: it "
				   "ends after an extension header, before its "
				   "member (after member %s)", last_shown(r, shown));
	return 0;
}

int rfbi_tar_next(struct tar_reader *r, struct tar_member *m, rfb_err *err)
{
	char shown[RFBI_TAR_SHOWN];

	for (;;) {
		const unsigned char *b = r->buf;
		uint64_t size, data;
		size_t got = 0;
		char *ext = NULL;
		int rc = read_header(r, &got, err);

		if (rc <= 0)
			return rc;
		if (parse_number(b + 124, 12, &size))
			return rfb_err_set(err, RFB_EFORMAT, r->path, "corrupt size "
					   "field in the tar header at offset %llu",
					   (unsigned long long)r->pos);
		data = r->pos + TAR_BLOCK;
		if (is_ext_header(b[156]) && size > r->file_size - data)
			goto truncated;
		if (b[156] == 'L' || b[156] == 'x') {
			if ((rc = read_ext(r, data, size, &ext, err)))
				return rc;
			if (b[156] == 'L') {
				free(r->long_name);
				r->long_name = ext;
			} else {
				rc = apply_pax(r, ext, size, err);
				free(ext);
				if (rc)
					return rc;
			}
			r->pos = data + (size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
			continue;
		}
		if (b[156] == 'g' || b[156] == 'K') {   /* global pax, long link */
			r->pos = data + (size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
			continue;
		}
		if (r->have_pax_size)
			size = r->pax_size;
		r->have_pax_size = 0;
		if ((rc = take_name(r, b, err)))
			return rc;
		r->last = r->name;
		m->name = r->name;
		m->type = b[156] ? (char)b[156] : '0';
		m->header_off = r->pos;
		m->data_off = data;
		m->size = m->type == '5' ? 0 : size;
		if (m->size > r->file_size - data)
			goto truncated;
		m->head = b + TAR_BLOCK;
		m->head_len = got - TAR_BLOCK < m->size ? got - TAR_BLOCK
							 : (size_t)m->size;
		r->pos = data + (m->size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
		return 1;
truncated:
		if (is_ext_header(b[156]))
			return rfb_err_set(err, RFB_ETRUNC, r->path, "truncated "
					   "shard: the extension header at offset "
					   "%llu needs %llu bytes, the shard is %llu",
					   (unsigned long long)r->pos,
					   (unsigned long long)size,
					   (unsigned long long)r->file_size);
		return rfb_err_set(err, RFB_ETRUNC, r->path, "member %s: truncated "
				   "shard (the member needs %llu bytes at offset "
				   "%llu, the shard is %llu bytes)",
				   rfbi_tar_shown(r->name, shown),
				   (unsigned long long)size,
				   (unsigned long long)data,
				   (unsigned long long)r->file_size);
	}
}
