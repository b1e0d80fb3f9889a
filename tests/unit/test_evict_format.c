/*
 * test_evict_format.c - the records of refurb-evict(5) (evict_format.c):
 * bytes written by hand from the man page's tables decode to the fields
 * the page names, each encoder writes them back, and the header decoder
 * refuses what the page says a reader must.
 */
#include <stdint.h>
#include <string.h>

#include "refurb/checksum.h"
#include "refurb/evict.h"
#include "../../lib/sched/evict_internal.h"
#include "test.h"

static const unsigned char page_header[RFB_EVICT_HEADER_SIZE] = {
	'R', 'F', 'B', 'S', 'C', 'H', 'D', 1,
	64, 0, 0, 0,                                 /* 8 header size */
	0, 0, 0, 0,                                  /* 12 flags */
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* 16 index identity */
	0xe8, 0x03, 0, 0,                            /* 24 T 1000 */
	0x4d, 0x01, 0, 0,                            /* 28 n 333 */
	0x03, 0, 0, 0,                               /* 32 r 3 */
	0x01, 0,                                     /* 36 balanced */
	0, 0,                                        /* 38 reserved */
	0x07, 0, 0, 0, 0, 0, 0, 0,                   /* 40 seed 7 */
	0x01, 0, 0, 0,                               /* 48 K 1 */
	0x03, 0, 0, 0,                               /* 52 N 3 */
	0xdd, 0xcc, 0xbb, 0xaa,                      /* 56 body CRC */
};

static void put_crc(unsigned char *d, size_t at)
{
	uint32_t crc = rfb_crc32c(0, d, at);

	for (int i = 0; i < 4; i++)
		d[at + i] = (unsigned char)(crc >> (8 * i));
}

static void test_header_from_page(void)
{
	unsigned char d[RFB_EVICT_HEADER_SIZE], again[RFB_EVICT_HEADER_SIZE];
	struct evict_header h;
	rfb_err err = { 0 };

	memcpy(d, page_header, sizeof d);
	put_crc(d, 60);
	CHECKF(rfbi_evict_header_decode(d, sizeof d, &h, "s", &err) == 0, "%s",
	       err.msg);
	CHECK(h.version == 1);
	CHECK(h.p.index_identity == 0x1122334455667788ULL);
	CHECK(h.p.total == 1000 && h.n == 333 && h.p.reuse == 3);
	CHECK(h.p.policy == RFB_EVICT_BALANCED && h.p.seed == 7);
	CHECK(h.p.shard_index == 1 && h.p.shard_count == 3);
	CHECK(h.body_crc == 0xaabbccddu);
	rfbi_evict_header_encode(&h, again);
	CHECK(memcmp(again, d, sizeof d) == 0);
}

static void test_header_refusals(void)
{
	unsigned char d[RFB_EVICT_HEADER_SIZE];
	struct evict_header h;
	rfb_err err = { 0 };

	memcpy(d, page_header, sizeof d);
	put_crc(d, 60);
	CHECK(rfbi_evict_header_decode(d, 63, &h, "s", &err) == RFB_ETRUNC);
	CHECK(rfbi_evict_header_decode(d, 3, &h, "s", &err) == RFB_ETRUNC);
	d[7] = EVICT_VERSION + 1;
	CHECK(rfbi_evict_header_decode(d, sizeof d, &h, "s", &err) ==
	      RFB_EVERSION);
	d[7] = 0;
	CHECK(rfbi_evict_header_decode(d, sizeof d, &h, "s", &err) ==
	      RFB_EVERSION);
	d[7] = 1;
	d[60] ^= 1;
	CHECK(rfbi_evict_header_decode(d, sizeof d, &h, "s", &err) ==
	      RFB_ECHECKSUM);
	d[60] ^= 1;
	d[38] = 1; /* reserved */
	put_crc(d, 60);
	CHECK(rfbi_evict_header_decode(d, sizeof d, &h, "s", &err) ==
	      RFB_EFORMAT);
	d[38] = 0;
	d[12] = 1; /* flags */
	put_crc(d, 60);
	CHECK(rfbi_evict_header_decode(d, sizeof d, &h, "s", &err) ==
	      RFB_EFORMAT);
	d[0] = 'X';
	CHECK(rfbi_evict_header_decode(d, sizeof d, &h, "s", &err) ==
	      RFB_EFORMAT);
	CHECK(strstr(err.msg, "not a refurb schedule") != NULL);
}

static void test_body_from_page(void)
{
	static const unsigned char body[3 * EVICT_ENTRY_BYTES] = {
		0x02, 0, 0, 0, 0x05, 0, 0, 0, 0x00, 0x01, 0, 0, /* ids */
		0x02, 0, 0x00, 0, 0x01, 0,                  /* phases */
	};
	unsigned char again[sizeof body];
	uint32_t ids[3];
	uint16_t phases[3];

	rfbi_evict_body_decode(body, 3, ids, phases);
	CHECK(ids[0] == 2 && ids[1] == 5 && ids[2] == 256);
	CHECK(phases[0] == 2 && phases[1] == 0 && phases[2] == 1);
	rfbi_evict_body_encode(ids, phases, 3, again);
	CHECK(memcmp(again, body, sizeof body) == 0);
}

int main(void)
{
	RUN(test_header_from_page);
	RUN(test_header_refusals);
	RUN(test_body_from_page);
	return test_done();
}
