/*
 * test_index_format.c - the records of refurb-index(5) (index_format.c):
 * each encoder's bytes decode to the same fields, and bytes written by
 * hand from the man page's tables decode to the fields the page names.
 */
#include <stdint.h>
#include <string.h>

#include "refurb/checksum.h"
#include "refurb/index.h"
#include "../../lib/index/index_internal.h"
#include "test.h"

/* The version 2 header of refurb-index(5), field by field, little-endian. */
static const unsigned char header_v2[INDEX_HEADER_SIZE] = {
	'R', 'F', 'B', 'I', 'N', 'D', 'X', 2,        /* 0 magic, version */
	0x05, 0x04, 0x03, 0x02, 0x01, 0, 0, 0,       /* 8 N = 0x0102030405 */
	0x07, 0, 0, 0,                               /* 16 C = 7 */
	48, 0, 0, 0,                                 /* 20 record size */
	0x10, 0, 0, 0,                               /* 24 R = 16 */
	0x03, 0, 0, 0,                               /* 28 S = 3 */
	0x21, 0, 0, 0, 0, 0, 0, 0,                   /* 32 class bytes */
	0x22, 0x01, 0, 0, 0, 0, 0, 0,                /* 40 path bytes */
	0x23, 0, 0, 0, 0, 0, 0, 0,                   /* 48 shard bytes */
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* 56 identity */
	0xdd, 0xcc, 0xbb, 0xaa,                      /* 64 body CRC */
	0, 0, 0, 0, 0, 0, 0, 0,                      /* 68 reserved */
	0, 0, 0, 0,                                  /* 76 header CRC */
};

/* A version 1 header: identity at 48, body CRC at 56, header CRC at 60. */
static const unsigned char header_v1[INDEX_HEADER_SIZE_V1] = {
	'R', 'F', 'B', 'I', 'N', 'D', 'X', 1,
	0x09, 0, 0, 0, 0, 0, 0, 0,                   /* 8 N = 9 */
	0x02, 0, 0, 0,                               /* 16 C = 2 */
	40, 0, 0, 0,                                 /* 20 record size */
	0x05, 0, 0, 0,                               /* 24 R = 5 */
	0xee, 0xee, 0xee, 0xee,                      /* 28 reserved */
	0x0a, 0, 0, 0, 0, 0, 0, 0,                   /* 32 class bytes */
	0x0b, 0, 0, 0, 0, 0, 0, 0,                   /* 40 path bytes */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* 48 identity */
	0x44, 0x33, 0x22, 0x11,                      /* 56 body CRC */
	0, 0, 0, 0,                                  /* 60 header CRC */
};

static void put_crc(unsigned char *d, size_t at)
{
	uint32_t crc = rfb_crc32c(0, d, at);

	for (int i = 0; i < 4; i++)
		d[at + i] = (unsigned char)(crc >> (8 * i));
}

static void test_header_from_page(void)
{
	unsigned char d[INDEX_HEADER_SIZE];
	struct index_header h;
	rfb_err err = { 0 };

	memcpy(d, header_v2, sizeof d);
	put_crc(d, 76);
	CHECKF(rfbi_index_header_decode(d, sizeof d, &h, "h", &err) == 0,
	       "%s", err.msg);
	CHECK(h.version == 2);
	CHECK(h.count == 0x0102030405ULL);
	CHECK(h.class_count == 7);
	CHECK(h.record_size == 48);
	CHECK(h.root_len == 16);
	CHECK(h.shard_count == 3);
	CHECK(h.classes_len == 0x21);
	CHECK(h.paths_len == 0x122);
	CHECK(h.shards_len == 0x23);
	CHECK(h.identity == 0x1122334455667788ULL);
	CHECK(h.body_crc == 0xaabbccddu);
	/* the encoder writes the same bytes back */
	unsigned char again[INDEX_HEADER_SIZE];
	rfbi_index_header_encode(&h, again);
	CHECK(memcmp(again, d, sizeof d) == 0);
}

static void test_header_v1_from_page(void)
{
	unsigned char d[INDEX_HEADER_SIZE_V1];
	struct index_header h;
	rfb_err err = { 0 };

	memcpy(d, header_v1, sizeof d);
	put_crc(d, 60);
	CHECKF(rfbi_index_header_decode(d, sizeof d, &h, "h", &err) == 0,
	       "%s", err.msg);
	CHECK(h.version == 1);
	CHECK(h.count == 9 && h.class_count == 2 && h.record_size == 40);
	CHECK(h.root_len == 5);
	CHECK(h.shard_count == 0); /* offset 28 is reserved in version 1 */
	CHECK(h.classes_len == 10 && h.paths_len == 11);
	CHECK(h.shards_len == 0);
	CHECK(h.identity == 0x0807060504030201ULL);
	CHECK(h.body_crc == 0x11223344u);
	CHECK(rfbi_index_header_size(1) == 64 && rfbi_index_record_size(1) == 40);
	CHECK(rfbi_index_header_size(2) == 80 && rfbi_index_record_size(2) == 48);
}

static void test_header_refusals(void)
{
	unsigned char d[INDEX_HEADER_SIZE];
	struct index_header h;
	rfb_err err = { 0 };

	memcpy(d, header_v2, sizeof d);
	put_crc(d, 76);
	CHECK(rfbi_index_header_decode(d, 79, &h, "h", &err) == RFB_ETRUNC);
	CHECK(rfbi_index_header_decode(d, 0, &h, "h", &err) == RFB_ETRUNC);
	d[76] ^= 1;
	CHECK(rfbi_index_header_decode(d, sizeof d, &h, "h", &err) ==
	      RFB_ECHECKSUM);
	d[76] ^= 1;
	d[7] = 3;
	CHECK(rfbi_index_header_decode(d, sizeof d, &h, "h", &err) ==
	      RFB_EVERSION);
	d[7] = 2;
	d[0] = 'X';
	CHECK(rfbi_index_header_decode(d, sizeof d, &h, "h", &err) ==
	      RFB_EFORMAT);
	d[0] = 'R';
	d[20] = 40; /* a version 1 record size in a version 2 header */
	put_crc(d, 76);
	CHECK(rfbi_index_header_decode(d, sizeof d, &h, "h", &err) ==
	      RFB_EFORMAT);
}

/* Record of refurb-index(5), Record section, by hand. */
static const unsigned char record_v2[INDEX_RECORD_SIZE] = {
	0x03, 0, 0, 0,                               /* 0 label */
	0x80, 0x02, 0, 0,                            /* 4 width 640 */
	0xe0, 0x01, 0, 0,                            /* 8 height 480 */
	3, 1, 2, 0,                                  /* 12 comp, cs, samp, 0 */
	0x39, 0x30, 0, 0, 0, 0, 0, 0,                /* 16 bytes 12345 */
	0x10, 0x27, 0, 0, 0, 0, 0, 0,                /* 24 path offset 10000 */
	0x0c, 0, 0, 0,                               /* 32 path length 12 */
	0x02, 0, 0, 0,                               /* 36 shard 2 */
	0x00, 0x02, 0, 0, 0, 0, 0, 0,                /* 40 offset 512 */
};

static void test_record_from_page(void)
{
	struct index_record r;
	unsigned char again[INDEX_RECORD_SIZE];

	rfbi_index_record_decode(record_v2, 2, &r);
	CHECK(r.label == 3);
	CHECK(r.width == 640 && r.height == 480);
	CHECK(r.channels == 3 && r.colorspace == 1 && r.subsampling == 2);
	CHECK(r.bytes == 12345);
	CHECK(r.path_offset == 10000 && r.path_len == 12);
	CHECK(r.shard == 2 && r.offset == 512);
	rfbi_index_record_encode(&r, again);
	CHECK(memcmp(again, record_v2, sizeof again) == 0);
	/* version 1: no shard, whatever bytes 36 to 47 hold */
	rfbi_index_record_decode(record_v2, 1, &r);
	CHECK(r.shard == RFB_INDEX_NO_SHARD && r.offset == 0);
	CHECK(r.path_len == 12 && r.label == 3);
}

static void test_record_round_trip(void)
{
	const struct index_record in = {
		.label = 0xfffffffe, .width = 65535, .height = 1,
		.channels = 4, .colorspace = 4, .subsampling = 255,
		.bytes = 0x123456789aULL, .path_offset = 0xfedcba987654ULL,
		.path_len = 4096, .shard = 1000000, .offset = 1ULL << 40,
	};
	struct index_record out;
	unsigned char b[INDEX_RECORD_SIZE];

	memset(b, 0xaa, sizeof b);
	rfbi_index_record_encode(&in, b);
	CHECK(b[15] == 0); /* reserved */
	rfbi_index_record_decode(b, 2, &out);
	CHECK(out.label == in.label && out.width == in.width &&
	      out.height == in.height);
	CHECK(out.channels == in.channels && out.colorspace == in.colorspace &&
	      out.subsampling == in.subsampling);
	CHECK(out.bytes == in.bytes && out.path_offset == in.path_offset);
	CHECK(out.path_len == in.path_len && out.shard == in.shard &&
	      out.offset == in.offset);
}

static void test_class_entry(void)
{
	static const unsigned char page[] = { 3, 0, 0, 0, 'c', 'a', 't', 0,
					      0, 0, 0, 0, 0 };
	unsigned char b[16];
	const char *name = NULL;

	CHECK(rfbi_index_class_decode(page, sizeof page, &name) == 8);
	CHECK(name && strcmp(name, "cat") == 0);
	CHECK(rfbi_index_class_decode(page + 8, 5, &name) == 5); /* "" */
	CHECK(name && strcmp(name, "") == 0);
	CHECK(rfbi_index_class_encode("cat", 3, b) == 8);
	CHECK(memcmp(b, page, 8) == 0);
	/* refusals: cut short, no NUL, a NUL inside, too long */
	CHECK(rfbi_index_class_decode(page, 7, &name) == 0);
	CHECK(rfbi_index_class_decode(page, 3, &name) == 0);
	memcpy(b, page, 8);
	b[7] = 'x';
	CHECK(rfbi_index_class_decode(b, 8, &name) == 0);
	b[7] = 0;
	b[5] = 0;
	CHECK(rfbi_index_class_decode(b, 8, &name) == 0);
	static const unsigned char huge[] = { 0x01, 0x04, 0, 0, 0 };
	CHECK(rfbi_index_class_decode(huge, sizeof huge, &name) == 0);
}

static void test_shard_entry(void)
{
	static const unsigned char page[] = {
		0x00, 0x10, 0, 0, 0, 0, 0, 0,        /* size 4096 */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* mtime -1 */
		5, 0, 0, 0,                          /* L */
		'a', '.', 't', 'a', 'r', 0,
	};
	struct index_shard_entry s = { 0 }, w;
	unsigned char b[sizeof page];

	CHECK(rfbi_index_shard_decode(page, sizeof page, &s) == sizeof page);
	CHECK(s.size == 4096 && s.mtime_ns == -1 && s.path_len == 5);
	CHECK(s.path && strcmp(s.path, "a.tar") == 0);
	w = s;
	CHECK(rfbi_index_shard_encode(&w, b) == sizeof page);
	CHECK(memcmp(b, page, sizeof page) == 0);
	CHECK(rfbi_index_shard_decode(page, sizeof page - 1, &s) == 0);
	CHECK(rfbi_index_shard_decode(page, 19, &s) == 0);
	memcpy(b, page, sizeof page);
	b[16] = 0; /* an empty path */
	CHECK(rfbi_index_shard_decode(b, sizeof b, &s) == 0);
}

int main(void)
{
	RUN(test_header_from_page);
	RUN(test_header_v1_from_page);
	RUN(test_header_refusals);
	RUN(test_record_from_page);
	RUN(test_record_round_trip);
	RUN(test_class_entry);
	RUN(test_shard_entry);
	return test_done();
}
