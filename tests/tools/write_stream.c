/*
 * write_stream.c - a batch stream with known content, for the tests of
 * the readers (tests/refurb-stream-py.bats, tests/refurb-dump-stream.bats).
 *
 *   write_stream [OPTIONS] [-o FILE]      (default: stdout)
 *     -d u8|f32        dtype (u8)          -l nhwc|nchw   layout (nhwc)
 *     -H N -W N -C N   image shape (8 6 3) -b N           batch size (4)
 *     -n N             images per epoch (10)
 *     -k N             classes (3: "class0" ...)
 *     -e A-B           epochs (0-1)        -s N           first step (0)
 *     --normalize      float32 values are normalized (mean/std in HEADER)
 *     --extension      an extension frame (type 99) after the first batch
 *     --critical       ... marked critical
 *     --stop N         stop after N batches, as if killed (no END)
 *     --duplicate      epoch 0 delivers its first sample twice, and its
 *                      last one never (a plan bug the check must see)
 *
 * Content, so that a reader can check every value: image j of epoch e at
 * position k (from the epoch's start) is sample id = (k + 7e) mod N,
 * label = id mod K; sample (y, x, c) of its pixels is v = (31 id + 7 i)
 * mod 256 with i = (y W + x) C + c (its index in NHWC order, whatever the
 * layout) for uint8, and v / 255 as float32 (minus 0.5 with --normalize,
 * where mean = 0.5 and std = 1): every dtype and layout holds the same
 * picture.  The first batch has global step 0.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "refurb/bytes.h"
#include "refurb/stream.h"

struct opts {
	struct rfb_stream_info info;
	int extension, critical, duplicate;
	long stop;
	const char *out;
};

static void usage(void)
{
	fprintf(stderr, "usage: write_stream [-d u8|f32] [-l nhwc|nchw] [-H N] "
		"[-W N] [-C N] [-b N] [-n N] [-k N] [-e A-B] [-s N] "
		"[--normalize] [--extension] [--critical] [--stop N] "
		"[--duplicate] [--groups KxHxW,KxHxW...] [-o FILE]\n");
	exit(2);
}

/* Image id's pixel data at p, in the stream's dtype and layout. */
static void fill(const struct rfb_stream_info *in, uint32_t id,
		 unsigned char *p)
{
	size_t H = in->height, W = in->width, C = in->channels;

	for (size_t y = 0; y < H; y++)
		for (size_t x = 0; x < W; x++)
			for (size_t c = 0; c < C; c++) {
				size_t i = (y * W + x) * C + c;
				size_t at = in->layout == RFB_STREAM_NHWC ? i
					    : (c * H + y) * W + x;
				unsigned v = (unsigned)((31u * id + 7u * i) & 255);
				if (in->dtype == RFB_STREAM_U8)
					p[at] = (unsigned char)v;
				else
					rfb_put_lef32(p + 4 * at, (float)v / 255.0f -
						      (in->normalized ? 0.5f : 0.0f));
			}
}

/* --groups K1xH1xW1,...: a version 3 stream of these view groups. */
static void parse_groups(struct rfb_stream_info *in, const char *arg)
{
	in->groups = in->views = 0;
	for (const char *p = arg; *p; in->groups++) {
		struct rfb_stream_group *g = &in->group[in->groups];
		int used = 0;
		if (in->groups == RFB_STREAM_MAX_GROUPS ||
		    sscanf(p, "%ux%ux%u%n", &g->views, &g->height, &g->width,
			   &used) != 3)
			usage();
		in->views += g->views;
		p += used + (p[used] == ',');
	}
	in->height = in->group[0].height;
	in->width = in->group[0].width;
}

/* Group g's images of sample id at p (bytes of a pattern). */
static void fill_group(const struct rfb_stream_info *in, uint32_t g,
		       uint32_t id, unsigned char *p)
{
	size_t n = rfb_stream_group_bytes(in, g);

	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((31u * id + 7u * i + 13u * g) & 255);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "normalize", no_argument, NULL, 'N' },
		{ "extension", no_argument, NULL, 'X' },
		{ "critical", no_argument, NULL, 'R' },
		{ "stop", required_argument, NULL, 'S' },
		{ "duplicate", no_argument, NULL, 'D' },
		{ "groups", required_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 }
	};
	struct rfb_stream_info *in = &o->info;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:l:H:W:C:b:n:k:e:s:o:",
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'd': in->dtype = strcmp(optarg, "f32") ? RFB_STREAM_U8
				      : RFB_STREAM_F32; break;
		case 'l': in->layout = strcmp(optarg, "nchw") ? RFB_STREAM_NHWC
				       : RFB_STREAM_NCHW; break;
		case 'H': in->height = (uint32_t)atoi(optarg); break;
		case 'W': in->width = (uint32_t)atoi(optarg); break;
		case 'C': in->channels = (uint32_t)atoi(optarg); break;
		case 'b': in->batch_size = (uint32_t)atoi(optarg); break;
		case 'n': in->epoch_images = (uint64_t)atol(optarg); break;
		case 'k': in->class_count = (uint32_t)atoi(optarg); break;
		case 'e':
			if (sscanf(optarg, "%u-%u", &in->first_epoch,
				   &in->last_epoch) != 2)
				usage();
			break;
		case 's': in->first_step = (uint32_t)atoi(optarg); break;
		case 'o': o->out = optarg; break;
		case 'N': in->normalized = 1; break;
		case 'X': o->extension = 1; break;
		case 'R': o->extension = o->critical = 1; break;
		case 'S': o->stop = atol(optarg); break;
		case 'D': o->duplicate = 1; break;
		case 'G': parse_groups(in, optarg); break;
		default: usage();
		}
	}
	if (optind != argc || !in->epoch_images || !in->batch_size)
		usage();
}

struct run {
	rfb_stream_writer *w;
	unsigned char *px;
	uint32_t *labels, *ids;
	uint64_t global;
	long batches;
	rfb_err err;
};

/* Where group g's images of a batch start in the buffer. */
static size_t group_at(const struct rfb_stream_info *in, uint32_t g)
{
	return (size_t)rfb_stream_group_offset(in, in->batch_size, g);
}

/* Write one epoch; returns 0, 1 when --stop says to stop, -1 on error. */
static int write_epoch(const struct opts *o, struct run *r, uint32_t e)
{
	const struct rfb_stream_info *in = &o->info;
	uint32_t n_all = (uint32_t)in->epoch_images, B = in->batch_size;
	size_t img = rfb_stream_image_bytes(in);
	uint32_t step = e == in->first_epoch ? in->first_step : 0;

	for (uint32_t k = step * B; k < n_all; k += B, step++) {
		uint32_t n = n_all - k < B ? n_all - k : B;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t pos = k + j;
			if (o->duplicate && e == 0 && pos == n_all - 1)
				pos = 0;
			r->ids[j] = (pos + 7 * e) % n_all;
			r->labels[j] = r->ids[j] % in->class_count;
			if (in->groups < 2)
				fill(in, r->ids[j], r->px + j * img);
			for (uint32_t g = 0; g < in->groups; g++)
				fill_group(in, g, r->ids[j], r->px +
					   group_at(in, g) + j * rfb_stream_group_bytes(in, g));
		}
		struct rfb_stream_batch b = { e, step, r->global++, n,
			r->labels, r->ids, r->px, n * img, 0, { 0 } };
		for (uint32_t g = 0; g < in->groups; g++)
			b.group_pixels[g] = r->px + group_at(in, g);
		if (rfb_stream_write_batch(r->w, &b, &r->err))
			return -1;
		if (o->extension && r->batches == 0 &&
		    rfb_stream_write_frame(r->w, 99, o->critical ?
					   RFB_FRAME_CRITICAL : 0, "ext", 3,
					   &r->err))
			return -1;
		if (++r->batches == o->stop)
			return 1;
	}
	return rfb_stream_write_epoch_end(r->w, e, &r->err) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const char *names[256];
	static char name_buf[256][16];
	struct opts o = { .info = { .dtype = RFB_STREAM_U8,
		.layout = RFB_STREAM_NHWC, .height = 8, .width = 6,
		.channels = 3, .batch_size = 4, .class_count = 3,
		.last_epoch = 1, .shard_n = 1, .epoch_images = 10,
		.plan_seed = 7, .augment_seed = 8, .index_identity = 0xabcdef,
		.mean = { 0.5f, 0.5f, 0.5f }, .std = { 1, 1, 1 },
		.partial_pipeline = "resize=16", .final_pipeline = "crop=8:6",
		.extra = "writer=write_stream\n" }, .out = "-" };
	struct run r = { 0 };
	int fd = 1, rc = 0;

	parse(argc, argv, &o);
	if (o.info.class_count > 256)
		usage();
	for (uint32_t c = 0; c < o.info.class_count; c++) {
		snprintf(name_buf[c], sizeof name_buf[c], "class%u", c);
		names[c] = name_buf[c];
	}
	o.info.class_names = names;
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(o.out, "-") &&
	    (fd = open(o.out, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
		perror(o.out);
		return 1;
	}
	size_t batch_bytes = o.info.groups > 1
		? (size_t)rfb_stream_pixel_bytes(&o.info, o.info.batch_size)
		: o.info.batch_size * rfb_stream_image_bytes(&o.info);
	r.px = malloc(batch_bytes ? batch_bytes : 1);
	r.labels = malloc(o.info.batch_size * sizeof *r.labels);
	r.ids = malloc(o.info.batch_size * sizeof *r.ids);
	r.w = rfb_stream_writer_new(fd, o.out, &r.err);
	if (!r.px || !r.labels || !r.ids || !r.w ||
	    rfb_stream_write_header(r.w, &o.info, &r.err))
		rc = -1;
	for (uint32_t e = o.info.first_epoch; !rc && e <= o.info.last_epoch; e++)
		rc = write_epoch(&o, &r, e);
	if (!rc && rfb_stream_write_end(r.w, &r.err))
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "write_stream: %s\n", r.err.msg);
	rfb_stream_writer_free(r.w);
	free(r.px);
	free(r.labels);
	free(r.ids);
	if (fd != 1 && close(fd))
		rc = -1;
	return rc < 0 ? 1 : 0;
}
