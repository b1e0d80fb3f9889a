/*
 * dest_room.h - the caller's memory rfb_pipe_run_into and
 * rfb_pipe_run_jpeg_into ask for (struct rfb_pipe_dest): a raw record's
 * payload (rfb_record_raw_room), with the shape it was asked for.
 */
#ifndef REFURB_TEST_DEST_ROOM_H
#define REFURB_TEST_DEST_ROOM_H

#include "refurb/pipeline.h"
#include "refurb/record.h"

struct room {
	rfb_imgbuf buf;
	int calls, w, h, c;
};

static unsigned char *give_room(void *arg, int w, int h, int c)
{
	struct room *r = arg;

	r->calls++;
	r->w = w;
	r->h = h;
	r->c = c;
	return rfb_record_raw_room(&r->buf, w, h, c);
}

/* 1 when the room was asked once, for o's shape, and holds o. */
static inline int room_holds(const struct room *r, const struct rfb_pipe_out *o)
{
	return r->calls == 1 && r->w == o->shape.width &&
	       r->h == o->shape.height && r->c == o->shape.channels &&
	       o->data == r->buf.data + RFB_RECORD_HEADER_SIZE;
}

#endif
