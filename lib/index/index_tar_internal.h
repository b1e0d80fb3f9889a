/*
 * index_tar_internal.h - walking the members of an uncompressed tar file (GNU,
 * ustar and pax headers) without reading their data: each header is one
 * pread, which also brings the first block of the member's data.
 */
#ifndef REFURB_TAR_INTERNAL_H
#define REFURB_TAR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"

#define TAR_BLOCK 512

/* What the first bytes of a file say it is. */
enum tar_kind {
	TAR_NOT = 0,     /* neither a tar nor a known compressed file */
	TAR_PLAIN,       /* a tar header with a valid checksum */
	TAR_GZIP, TAR_BZIP2, TAR_XZ, TAR_ZSTD, TAR_LZ4
};

/* Kind of a file from its first n bytes (an empty tar is TAR_PLAIN when
 * its first block is zeros and n >= 1024). */
enum tar_kind rfbi_tar_sniff(const unsigned char *b, size_t n);

/* Name of a compressed kind ("gzip" ...), or NULL. */
const char *rfbi_tar_kind_name(enum tar_kind k);

/* 0 for TAR_PLAIN; otherwise RFB_EFORMAT with err saying, for path, that
 * a compressed shard must be uncompressed, or that it is not a tar. */
int rfbi_tar_check_kind(enum tar_kind k, const char *path, rfb_err *err) RFB_MUST_CHECK;

struct tar_member {
	const char *name;      /* owned by the reader, valid until rfbi_tar_next */
	char type;             /* '0' regular file, '5' directory, ... */
	uint64_t header_off;   /* offset of its (last) header */
	uint64_t data_off, size;
	const unsigned char *head; /* the first min(size, 512) data bytes */
	size_t head_len;
};

struct tar_reader {
	int fd;
	const char *path;      /* for messages */
	uint64_t file_size, pos;
	char *name;            /* current member's name, malloc'ed */
	char *long_name;       /* pending GNU 'L' or pax path, malloc'ed */
	int have_pax_size;
	uint64_t pax_size;
	const char *last;      /* name of the last member, for messages */
	unsigned char buf[2 * TAR_BLOCK];
};

/* A member name as messages show it: names up to RFBI_TAR_SHOWN_KEEP
 * bytes as they are, longer ones (a pax path may have any length) as
 * their start, "...", their end (the extension) and their length in
 * bytes, cut at UTF-8 character boundaries.  Writes into buf (at least
 * RFBI_TAR_SHOWN bytes) and returns it. */
#define RFBI_TAR_SHOWN_KEEP 160
#define RFBI_TAR_SHOWN 192
const char *rfbi_tar_shown(const char *name, char *buf);

/* Start walking fd (file_size bytes) from its first header. */
void rfbi_tar_open(struct tar_reader *r, int fd, const char *path,
		   uint64_t file_size);

/* Free what the reader holds (not the fd). */
void rfbi_tar_close(struct tar_reader *r);

/*
 * The next member of any type (extension headers are applied, not
 * returned).  Returns 1 with *m filled, 0 at the end of the archive (two
 * zero blocks or the end of the file at a header boundary), or a negative
 * RFB_E* code with err naming the shard, the member and the reason:
 * RFB_ETRUNC (the file ends inside a header or a member's data),
 * RFB_EFORMAT (a header checksum or field is corrupt), RFB_EIO.
 * The walk cannot go on after an error.
 */
int rfbi_tar_next(struct tar_reader *r, struct tar_member *m, rfb_err *err) RFB_MUST_CHECK;

#endif
