/*
 * dump_extract.c - refurb-dump --extract: one cached sample as an image
 * (PPM/PGM, or JPEG when the output name ends in .jpg or .jpeg).
 */
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dump.h"
#include "refurb/cache.h"
#include "refurb/encode.h"
#include "refurb/io.h"
#include "refurb/record.h"

struct find {
	uint32_t sample;
	int found;
	struct rfb_cache_addr addr;
	uint32_t write_epoch;
};

static void from_checkpoint(void *ctx, uint32_t sample,
			    const struct rfb_cache_entry *e)
{
	struct find *f = ctx;

	if (sample == f->sample) {
		f->found = 1;
		f->addr = e->addr;
	}
}

/* Records appended after the checkpoint are newer than it. */
static int from_segments(void *ctx, uint32_t segment, uint32_t death,
			 const struct rfb_cache_addr *a,
			 const struct rfb_record_meta *m, const rfb_err *why)
{
	struct find *f = ctx;

	(void)segment;
	(void)death;
	(void)why;
	if (m && m->sample == f->sample &&
	    (!f->found || m->write_epoch >= f->write_epoch)) {
		f->found = 2;
		f->addr = *a;
		f->write_epoch = m->write_epoch;
	}
	return 0;
}

static int is_jpeg_name(const char *path)
{
	size_t n = strlen(path);

	return (n > 4 && !strcasecmp(path + n - 4, ".jpg")) ||
	       (n > 5 && !strcasecmp(path + n - 5, ".jpeg"));
}

static void write_image(struct cli *c, const rfb_image *img,
			const struct dump_opts *o, FILE *out)
{
	rfb_err err = { 0 };

	if (is_jpeg_name(o->output)) {
		rfb_encoder *enc = rfb_encoder_new(&err);
		rfb_imgbuf jpeg = { 0 };
		size_t len;
		if (!enc || rfb_jpeg_encode(enc, img, 95, RFB_ENCODE_444, &jpeg,
					    &len, &err))
			cli_die_err(c, &err);
		fwrite(jpeg.data, 1, len, out);
		rfb_imgbuf_free(&jpeg);
		rfb_encoder_free(enc);
		return;
	}
	fprintf(out, "P%d\n%d %d\n255\n", img->channels == 1 ? 5 : 6, img->width,
		img->height);
	for (int y = 0; y < img->height; y++)
		fwrite(img->data + (size_t)y * img->stride, 1,
		       (size_t)img->width * img->channels, out);
}

int dump_cache_extract(struct cli *c, const char *dir, uint32_t sample,
		       const struct dump_opts *o, FILE *out)
{
	struct find f = { .sample = sample };
	rfb_err err = { 0 };
	rfb_cache_view *v;
	rfb_codec_ctx *codec;
	rfb_imgbuf rec = { 0 }, pix = { 0 };
	struct rfb_record_meta m;
	rfb_image img;
	int fd;

	cli_refuse_tty(c, fileno(out), 0);
	if (rfb_cache_read_checkpoint(dir, from_checkpoint, &f, NULL, &err) &&
	    err.code != RFB_ENOTFOUND)
		cli_die_err(c, &err);
	if (rfb_cache_scan(dir, from_segments, &f, &err))
		cli_die_err(c, &err);
	if (!f.found)
		cli_die(c, "%s: no record of sample %u in the cache", dir, sample);
	if (!(v = rfb_cache_view_open(dir, 0, &err)) ||
	    !(codec = rfb_codec_ctx_new(&err)))
		cli_die_err(c, &err);
	if ((fd = rfb_cache_view_fd(v, f.addr.segment, &err)) < 0 ||
	    rfb_imgbuf_reserve(&rec, f.addr.length, &err) ||
	    rfb_pread_full(fd, rec.data, f.addr.length, (off_t)f.addr.offset) !=
		    (ssize_t)f.addr.length ||
	    rfb_record_decode(codec, rec.data, f.addr.length, &m, &img, &pix, &err))
		cli_die(c, "%s: sample %u: %s", dir, sample,
			err.msg[0] ? err.msg : "cannot read the record");
	write_image(c, &img, o, out);
	rfb_imgbuf_free(&rec);
	rfb_imgbuf_free(&pix);
	rfb_codec_ctx_free(codec);
	rfb_cache_view_close(v);
	return 0;
}
