/*
 * test_stream_payloads.c - the BATCH, EPOCH_END and END payloads of
 * refurb-stream(5) (stream_frame.c): bytes written by hand from the man
 * page's tables decode to the fields the page names, and each encoder
 * writes them back.
 */
#include <stdint.h>
#include <string.h>

#include "../../lib/stream/stream_internal.h"
#include "test.h"

static void test_batch_from_page(void)
{
	/* two images (n = 2), one left out, 3x5 RGB uint8 NHWC */
	unsigned char d[128] = {
		0x04, 0, 0, 0,                           /* 0 epoch 4 */
		0x09, 0, 0, 0,                           /* 4 step 9 */
		0x01, 0x01, 0, 0, 0, 0, 0, 0,            /* 8 global 257 */
		0x02, 0, 0, 0,                           /* 16 n */
		RFB_STREAM_U8, RFB_STREAM_NHWC, 0, 0,    /* 20 dtype, layout */
		0x03, 0, 0, 0,                           /* 24 H */
		0x05, 0, 0, 0,                           /* 28 W */
		0x03, 0, 0, 0,                           /* 32 C */
		0x01, 0, 0, 0,                           /* 36 left out */
	};
	static const unsigned char lists[16] = {
		7, 0, 0, 0, 8, 0, 0, 0,                  /* 64 labels */
		0x2a, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,   /* 72 ids (a repeat) */
	};
	unsigned char again[128];
	struct batch_fixed f;
	uint32_t labels[2], ids[2];

	memcpy(d + 64, lists, sizeof lists);
	CHECK(stream_pixel_offset(2) == 128);
	rfbi_stream_batch_decode(d, &f);
	CHECK(f.epoch == 4 && f.step == 9 && f.global_step == 257);
	CHECK(f.n == 2 && f.left_out == 1);
	CHECK(f.dtype == RFB_STREAM_U8 && f.layout == RFB_STREAM_NHWC);
	CHECK(f.height == 3 && f.width == 5 && f.channels == 3);
	rfbi_stream_batch_lists_decode(d, f.n, labels, ids);
	CHECK(labels[0] == 7 && labels[1] == 8);
	CHECK(ids[0] == 42 && ids[1] == 0xffffffffu);
	memset(again, 0xaa, sizeof again);
	rfbi_stream_batch_encode(&f, labels, ids, again);
	CHECK(memcmp(again, d, sizeof d) == 0); /* zeros up to the pixels */
}

static void test_epoch_end_from_page(void)
{
	static const unsigned char d[STREAM_EPOCH_END_LEN] = {
		0x03, 0, 0, 0,                           /* 0 epoch */
		0x0c, 0, 0, 0,                           /* 4 batches 12 */
		0x00, 0x01, 0, 0, 0x01, 0, 0, 0,         /* 8 images 2^32+256 */
	};
	unsigned char again[STREAM_EPOCH_END_LEN];
	struct rfb_stream_epoch_end e;

	rfbi_stream_epoch_end_decode(d, &e);
	CHECK(e.epoch == 3 && e.batches == 12);
	CHECK(e.images == (1ULL << 32) + 256);
	rfbi_stream_epoch_end_encode(&e, again);
	CHECK(memcmp(again, d, sizeof d) == 0);
}

static void test_end_from_page(void)
{
	static const unsigned char d[STREAM_END_LEN] = {
		0x37, 0, 0, 0, 0, 0, 0, 0,               /* 0 frames 55 */
		0x30, 0, 0, 0, 0, 0, 0, 0,               /* 8 batches 48 */
		0xd0, 0x02, 0, 0, 0, 0, 0, 0,            /* 16 images 720 */
		0x06, 0, 0, 0,                           /* 24 epochs */
		0, 0, 0, 0,                              /* 28 reserved */
	};
	unsigned char again[STREAM_END_LEN];
	struct rfb_stream_end e;

	rfbi_stream_end_decode(d, &e);
	CHECK(e.frames == 55 && e.batches == 48 && e.images == 720);
	CHECK(e.epochs == 6);
	memset(again, 0xaa, sizeof again);
	rfbi_stream_end_encode(&e, again);
	CHECK(memcmp(again, d, sizeof d) == 0);
}

int main(void)
{
	RUN(test_batch_from_page);
	RUN(test_epoch_end_from_page);
	RUN(test_end_from_page);
	return test_done();
}
