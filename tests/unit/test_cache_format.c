/*
 * test_cache_format.c - the records of refurb-cache(5) (cache_format.c):
 * each encoder's bytes decode to the same fields, and bytes written by
 * hand from the man page's tables decode to the fields the page names.
 */
#include <stdint.h>
#include <string.h>

#include "refurb/cache.h"
#include "refurb/checksum.h"
#include "refurb/record.h"
#include "../../lib/cache/cache_format_internal.h"
#include "test.h"

static void put_le32(unsigned char *d, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		d[i] = (unsigned char)(v >> (8 * i));
}

/* The CRC-32C of bytes 0 to at-1, stored at at. */
static void put_crc(unsigned char *d, size_t at)
{
	put_le32(d + at, rfb_crc32c(0, d, at));
}

static void test_manifest_from_page(void)
{
	unsigned char d[64 + 3 + 4] = {
		'R', 'F', 'B', 'C', 'M', 'A', 'N', 1,
		0x01, 0, 0, 0, 0, 0, 0, 0x10,            /* 8 index identity */
		0x02, 0, 0, 0, 0, 0, 0, 0x20,            /* 16 schedule identity */
		0x07, 0, 0, 0, 0, 0, 0, 0,               /* 24 seed */
		0xe8, 0x03, 0, 0,                        /* 32 samples 1000 */
		1, 3, 0, 0,                              /* 36 zstd, level 3 */
		3, 0, 0, 0,                              /* 40 L */
		0, 0, 0, 0,                              /* 44 reserved */
		0, 0, 0, 0x40, 0, 0, 0, 0,               /* 48 segment max 1 GiB */
		0, 0, 0, 0,                              /* 56 reserved */
		0, 0, 0, 0,                              /* 60 CRC */
		'f', 'l', 'p',                           /* 64 pipeline */
	};
	struct rfb_cache_manifest m;
	unsigned char again[64 + RFB_CACHE_MAX_SPEC + 4];
	rfb_err err = { 0 };

	put_crc(d, 60);
	put_le32(d + 67, rfb_crc32c(0, d + 64, 3));
	CHECKF(rfb_cache_parse_manifest(d, sizeof d, "m", &m, &err) == 0, "%s",
	       err.msg);
	CHECK(m.index_identity == 0x1000000000000001ULL);
	CHECK(m.schedule_identity == 0x2000000000000002ULL);
	CHECK(m.seed == 7 && m.samples == 1000);
	CHECK(m.codec.kind == RFB_CODEC_ZSTD && m.codec.level == 3);
	CHECK(m.segment_max == 1ULL << 30);
	CHECK(strcmp(m.pipeline, "flp") == 0);
	CHECK(rfbi_cache_manifest_encode(&m, again) == sizeof d);
	CHECK(memcmp(again, d, sizeof d) == 0);
	d[66] = 'x'; /* the text's own CRC */
	CHECK(rfb_cache_parse_manifest(d, sizeof d, "m", &m, &err) ==
	      RFB_ECHECKSUM);
}

static void test_segment_header_from_page(void)
{
	unsigned char h[RFB_CACHE_SEGMENT_HEADER] = {
		'R', 'F', 'B', 'S', 'E', 'G', 0, 1,
		0x2a, 0, 0, 0,                           /* 8 id 42 */
		0x05, 0, 0, 0,                           /* 12 death epoch 5 */
	};
	unsigned char again[RFB_CACHE_SEGMENT_HEADER];
	uint32_t id = 0, death = 0;

	put_crc(h, 60);
	CHECK(rfbi_cache_parse_segment_header(h, &id, &death) == 0);
	CHECK(id == 42 && death == 5);
	rfbi_cache_put_segment_header(again, 42, 5);
	CHECK(memcmp(again, h, sizeof h) == 0);
	h[8] = 43;
	CHECK(rfbi_cache_parse_segment_header(h, &id, &death) == RFB_EFORMAT);
}

static void test_record_header_from_page(void)
{
	unsigned char h[RFB_RECORD_HEADER_SIZE] = {
		'R', 'F', 'R', 1,
		0x0b, 0, 0, 0,                           /* 4 sample 11 */
		0x02, 0, 0, 0,                           /* 8 write epoch 2 */
		0xff, 0xff, 0xff, 0xff,                  /* 12 never dies */
		0x00, 0x01, 0, 0,                        /* 16 stored 256 */
		0x58, 0x02, 0, 0,                        /* 20 raw 20*10*3 */
		20, 0,                                   /* 24 width */
		10, 0,                                   /* 26 height */
		3, 1, 0, 0,                              /* 28 ch, zstd, 0 */
		0x78, 0x56, 0x34, 0x12,                  /* 32 payload CRC */
	};
	unsigned char again[RFB_RECORD_HEADER_SIZE];
	struct rfb_record_meta m;
	rfb_err err = { 0 };

	put_crc(h, 36);
	CHECKF(rfb_record_parse_header(h, sizeof h, &m, &err) == 0, "%s",
	       err.msg);
	CHECK(m.sample == 11 && m.write_epoch == 2);
	CHECK(m.death_epoch == RFB_RECORD_NO_DEATH);
	CHECK(m.stored_len == 256 && m.raw_len == 600);
	CHECK(m.width == 20 && m.height == 10 && m.channels == 3);
	CHECK(m.codec == RFB_CODEC_ZSTD && m.payload_crc == 0x12345678u);
	rfbi_record_header_encode(&m, again);
	CHECK(memcmp(again, h, sizeof h) == 0);
	CHECK(rfb_record_parse_header(h, 39, &m, &err) == RFB_ETRUNC);
}

static void test_ckpt_header_from_page(void)
{
	unsigned char d[CKPT_HEADER] = {
		'R', 'F', 'B', 'C', 'R', 'E', 'C', 1,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* 8 manifest */
		0x64, 0, 0, 0,                           /* 16 samples 100 */
		0x32, 0, 0, 0,                           /* 20 E 50 */
		0x04, 0, 0, 0,                           /* 24 G 4 */
		0x09, 0, 0, 0,                           /* 28 next id 9 */
		0x2c, 0x01, 0, 0, 0, 0, 0, 0,            /* 32 step 300 */
		0x06, 0, 0, 0,                           /* 40 epoch 6 */
		0x00, 0x00, 0x10, 0, 0, 0, 0, 0,         /* 44 appended 1 MiB */
		0x00, 0x00, 0x20, 0, 0, 0, 0, 0,         /* 52 written 2 MiB */
	};
	unsigned char again[CKPT_HEADER];
	struct ckpt_header k;

	put_crc(d, 60);
	CHECK(rfbi_cache_ckpt_header_decode(d, &k) == 0);
	CHECK(k.manifest_hash == 0x1122334455667788ULL);
	CHECK(k.samples == 100 && k.entries == 50 && k.segments == 4);
	CHECK(k.next_id == 9 && k.step == 300 && k.epoch == 6);
	CHECK(k.appended == 1u << 20 && k.written == 2u << 20);
	rfbi_cache_ckpt_header_encode(&k, again);
	CHECK(memcmp(again, d, sizeof d) == 0);
	d[0] = 'X';
	CHECK(rfbi_cache_ckpt_header_decode(d, &k) == RFB_EFORMAT);
}

static void test_ckpt_rows_from_page(void)
{
	static const unsigned char seg[CKPT_SEG] = {
		0x03, 0, 0, 0,                           /* 0 id */
		0x07, 0, 0, 0,                           /* 4 death */
		0x01, 0, 0, 0,                           /* 8 dead */
		0, 0, 0, 0,                              /* 12 reserved */
		0x00, 0x10, 0, 0, 0, 0, 0, 0,            /* 16 covered 4096 */
		0x63, 0, 0, 0, 0, 0, 0, 0,               /* 24 died at step 99 */
	};
	static const unsigned char entry[CKPT_ENTRY] = {
		0x0d, 0, 0, 0,                           /* 0 sample 13 */
		0x03, 0, 0, 0,                           /* 4 segment 3 */
		0x40, 0, 0, 0, 0x01, 0, 0, 0,            /* 8 offset 2^32+64 */
		0x28, 0x01, 0, 0,                        /* 16 length 296 */
		0x04, 0, 0, 0,                           /* 20 write epoch */
	};
	unsigned char again[CKPT_SEG];
	struct ckpt_seg s;
	struct ckpt_entry e;

	rfbi_cache_ckpt_seg_decode(seg, &s);
	CHECK(s.id == 3 && s.death == 7 && s.dead == 1);
	CHECK(s.durable == 4096 && s.dead_since == 99);
	memset(again, 0xaa, sizeof again);
	rfbi_cache_ckpt_seg_encode(&s, again);
	CHECK(memcmp(again, seg, sizeof seg) == 0);
	rfbi_cache_ckpt_entry_decode(entry, &e);
	CHECK(e.sample == 13 && e.seg == 3);
	CHECK(e.offset == (1ULL << 32) + 64);
	CHECK(e.length == 296 && e.write_epoch == 4);
	rfbi_cache_ckpt_entry_encode(&e, again);
	CHECK(memcmp(again, entry, sizeof entry) == 0);
}

static void test_ckpt_crc(void)
{
	unsigned char rows[12] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	rfbi_cache_ckpt_crc_encode(rows, 8);
	CHECK(rfbi_cache_ckpt_crc_check(rows, 8) == 0);
	rows[3] ^= 0x10;
	CHECK(rfbi_cache_ckpt_crc_check(rows, 8) == RFB_ECHECKSUM);
}

static void test_position_from_page(void)
{
	unsigned char d[POSITION_BYTES] = {
		'R', 'F', 'B', 'R', 'P', 'O', 'S', 1,
		0x11, 0, 0, 0, 0, 0, 0, 0,               /* 8 read 17 */
		0x02, 0, 0, 0,                           /* 16 epoch 2 */
		0x05, 0, 0, 0,                           /* 20 step 5 */
		0x10, 0, 0, 0, 0, 0, 0, 0,               /* 24 global 16 */
		0x21, 0, 0, 0, 0, 0, 0, 0,               /* 32 updates 33 */
		0x39, 0x30, 0, 0,                        /* 40 pid 12345 */
		0x03, 0, 0, 0,                           /* 44 written, ended */
		0x08, 0, 0, 0,                           /* 48 batches 8 */
	};
	unsigned char again[POSITION_BYTES];
	struct rfb_cache_position p;

	put_crc(d, 60);
	CHECK(rfbi_cache_position_is(d));
	CHECK(rfbi_cache_position_decode(d, &p) == 0);
	CHECK(p.read_global == 17);
	CHECK(p.written_epoch == 2 && p.written_step == 5);
	CHECK(p.written_global == 16 && p.updates == 33 && p.pid == 12345);
	CHECK(p.has_written == 1 && p.ended == 1 && p.epoch_batches == 8);
	rfbi_cache_position_encode(&p, again);
	CHECK(memcmp(again, d, sizeof d) == 0);
	d[44] = 1;
	put_crc(d, 60);
	CHECK(rfbi_cache_position_decode(d, &p) == 0);
	CHECK(p.has_written == 1 && p.ended == 0);
	d[20] = 6; /* a torn write */
	CHECK(rfbi_cache_position_decode(d, &p) == RFB_EFORMAT);
}

int main(void)
{
	RUN(test_manifest_from_page);
	RUN(test_segment_header_from_page);
	RUN(test_record_header_from_page);
	RUN(test_ckpt_header_from_page);
	RUN(test_ckpt_rows_from_page);
	RUN(test_ckpt_crc);
	RUN(test_position_from_page);
	return test_done();
}
