/*
 * dump_stream.c - refurb-dump on a batch stream: the HEADER, a frame
 * listing, per-epoch statistics with the label histogram, and one batch's
 * images as a table and a contact sheet (see dump_stream.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump_stream.h"
#include "refurb/encode.h"
#include "refurb/io.h"
#include "refurb/sheet.h"
#include "refurb/stream.h"

#define SHEET_GAP 2        /* pixels between images and around them */
#define SHEET_GRAY 128     /* background */

static void print_header(FILE *out, const char *path,
			 const struct rfb_stream_info *in)
{
	fprintf(out, "# stream\t%s\n# format\tversion %d\n", path,
		rfb_stream_info_version(in));
	if (in->groups > 1) {
		fprintf(out, "# view groups\t");
		for (uint32_t g = 0; g < in->groups; g++)
			fprintf(out, "%s%u x %ux%u", g ? ", " : "",
				in->group[g].views, in->group[g].height,
				in->group[g].width);
		fprintf(out, " (a sheet shows the first group's views side by side)\n");
	} else if (in->views > 1)
		fprintf(out, "# views\t%u (a sheet shows a sample's side by side)\n",
			in->views);
	fprintf(out, "# images\t%ux%ux%u %s %s\n# batch size\t%u\n", in->height,
		in->width, in->channels, rfb_stream_dtype_name(in->dtype),
		rfb_stream_layout_name(in->layout), in->batch_size);
	fprintf(out, "# classes\t%u\n# epochs\t%u-", in->class_count,
		in->first_epoch);
	if (in->last_epoch == RFB_STREAM_OPEN_END)
		fprintf(out, "(open)");
	else
		fprintf(out, "%u", in->last_epoch);
	fprintf(out, " from step %u\n# epoch images\t%llu%s\n", in->first_step,
		(unsigned long long)in->epoch_images,
		in->epoch_images ? "" : " (unknown)");
	fprintf(out, "# shard\t%u/%u\n# seeds\tplan %llu augment %llu\n"
		"# index\t%016llx\n", in->shard_k, in->shard_n,
		(unsigned long long)in->plan_seed,
		(unsigned long long)in->augment_seed,
		(unsigned long long)in->index_identity);
	fprintf(out, "# normalized\t");
	for (uint32_t ch = 0; in->normalized && ch < in->channels; ch++)
		fprintf(out, "%smean %g std %g", ch ? ", " : "", in->mean[ch],
			in->std[ch]);
	fprintf(out, "%s\n# partial\t%s\n# final\t%s\n",
		in->normalized ? "" : "no", in->partial_pipeline,
		in->final_pipeline);
	for (const char *p = in->extra; *p;) {
		size_t len = strcspn(p, "\n");
		fprintf(out, "# extra\t%.*s\n", (int)len, p);
		p += len + (p[len] == '\n');
	}
}

/* ---- listing --------------------------------------------------------- */

static void print_frame(FILE *out, const struct rfb_stream_frame *f)
{
	fprintf(out, "%llu\t%llu\t", (unsigned long long)f->seq,
		(unsigned long long)f->offset);
	if (f->type == RFB_FRAME_HEADER)
		fprintf(out, "HEADER\t-\t-\t-\t-\n");
	else if (f->type == RFB_FRAME_BATCH)
		fprintf(out, "BATCH\t%u\t%u\t%llu\t%u\n", f->batch.epoch,
			f->batch.step, (unsigned long long)f->batch.global_step,
			f->batch.n);
	else if (f->type == RFB_FRAME_EPOCH_END)
		fprintf(out, "EPOCH_END\t%u\t-\t-\t%llu\n", f->epoch_end.epoch,
			(unsigned long long)f->epoch_end.images);
	else if (f->type == RFB_FRAME_VIEW_GROUPS)
		fprintf(out, "VIEW_GROUPS\t-\t-\t-\t-\n");
	else
		fprintf(out, "END\t-\t-\t-\t%llu\n",
			(unsigned long long)f->end.images);
}

/* ---- statistics ------------------------------------------------------ */

struct stats {
	uint32_t classes;
	uint64_t *hist;                 /* this epoch, per label */
	uint64_t *total, *min, *max;    /* per label, over complete epochs */
	uint32_t *ids;                  /* this epoch's sample ids */
	size_t nids, cap;
	uint32_t epoch, batches, shorts, done;
	uint64_t images;
	int open;                       /* this epoch has batches */
};

static int stats_init(struct stats *s, uint32_t classes)
{
	memset(s, 0, sizeof *s);
	s->classes = classes;
	s->hist = calloc(classes, sizeof *s->hist);
	s->total = calloc(classes, sizeof *s->total);
	s->min = calloc(classes, sizeof *s->min);
	s->max = calloc(classes, sizeof *s->max);
	return s->hist && s->total && s->min && s->max ? 0 : -1;
}

static void stats_free(struct stats *s)
{
	free(s->hist);
	free(s->total);
	free(s->min);
	free(s->max);
	free(s->ids);
}

static int stats_batch(struct stats *s, const struct rfb_stream_batch *b,
		       uint32_t batch_size)
{
	if (s->nids + b->n > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		while (cap < s->nids + b->n)
			cap *= 2;
		uint32_t *ids = realloc(s->ids, cap * sizeof *ids);
		if (!ids)
			return -1;
		s->ids = ids;
		s->cap = cap;
	}
	memcpy(s->ids + s->nids, b->ids, b->n * sizeof *b->ids);
	s->nids += b->n;
	for (uint32_t i = 0; i < b->n; i++)
		s->hist[b->labels[i]]++;
	s->epoch = b->epoch;
	s->batches++;
	s->shorts += b->n < batch_size;
	s->images += b->n;
	s->open = 1;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Print this epoch's row; fold it into the per-label figures if complete. */
static void stats_row(FILE *out, struct stats *s, uint32_t epoch, int complete)
{
	uint64_t lo = UINT64_MAX, hi = 0, dup = 0;
	uint32_t seen = 0;

	qsort(s->ids, s->nids, sizeof *s->ids, cmp_u32);
	for (size_t i = 1; i < s->nids; i++)
		dup += s->ids[i] == s->ids[i - 1] &&
		       s->ids[i] != RFB_STREAM_REPEAT_ID;
	for (uint32_t k = 0; k < s->classes; k++) {
		uint64_t h = s->hist[k];
		seen += h > 0;
		lo = h < lo ? h : lo;
		hi = h > hi ? h : hi;
		if (complete) {
			s->total[k] += h;
			s->min[k] = s->done == 0 || h < s->min[k] ? h : s->min[k];
			s->max[k] = h > s->max[k] ? h : s->max[k];
		}
		s->hist[k] = 0;
	}
	fprintf(out, "%u\t%u\t%llu\t%u\t%u\t%llu\t%llu\t%llu%s\n", epoch,
		s->batches, (unsigned long long)s->images, s->shorts, seen,
		(unsigned long long)lo, (unsigned long long)hi,
		(unsigned long long)dup, complete ? "" : "\t(incomplete)");
	s->done += complete;
	s->nids = 0;
	s->batches = s->shorts = 0;
	s->images = 0;
	s->open = 0;
}

static void stats_labels(FILE *out, const struct stats *s,
			 const struct rfb_stream_info *in)
{
	fprintf(out, "# label\tclass\timages\tper-epoch-min\tper-epoch-max\n");
	for (uint32_t k = 0; k < s->classes; k++) {
		fprintf(out, "%u\t", k);
		dump_tsv_field(out, in->class_names[k]);
		fprintf(out, "\t%llu\t%llu\t%llu\n",
			(unsigned long long)s->total[k],
			(unsigned long long)s->min[k],
			(unsigned long long)s->max[k]);
	}
}

/* ---- one batch and its contact sheet --------------------------------- */

struct batch_sel {
	int by_global;
	uint32_t epoch, step;
	uint64_t global;
};

static void parse_sel(struct cli *c, const char *arg, struct batch_sel *sel)
{
	char *end;
	unsigned long long a, b;

	errno = 0;
	a = strtoull(arg, &end, 10);
	if (end != arg && *end == '\0' && !errno && arg[0] != '-') {
		sel->by_global = 1;
		sel->global = a;
		return;
	}
	if (end == arg || *end != ':' || errno || a > UINT32_MAX || arg[0] == '-')
		cli_usage_error(c, "--batch: '%s' is not EPOCH:STEP or a global "
				"step", arg);
	const char *s = end + 1;
	b = strtoull(s, &end, 10);
	if (end == s || *end || errno || b > UINT32_MAX || s[0] == '-')
		cli_usage_error(c, "--batch: '%s' is not EPOCH:STEP or a global "
				"step", arg);
	sel->by_global = 0;
	sel->epoch = (uint32_t)a;
	sel->step = (uint32_t)b;
}

static int sel_match(const struct batch_sel *sel,
		     const struct rfb_stream_batch *b)
{
	return sel->by_global ? b->global_step == sel->global
	       : b->epoch == sel->epoch && b->step == sel->step;
}

/* Range of a float32 batch that is not normalized: the min/max shown as
 * 0/255 (a flat batch maps to mid-gray). */
static void f32_range(const struct rfb_stream_batch *b, float *lo, float *hi)
{
	size_t n = b->pixel_bytes / 4;
	const unsigned char *p = b->pixels;

	*lo = INFINITY;
	*hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		float v;
		memcpy(&v, p + 4 * i, 4);
		if (isfinite(v)) {
			*lo = v < *lo ? v : *lo;
			*hi = v > *hi ? v : *hi;
		}
	}
}

/* Views of every sample (1 in a version 1 stream). */
static uint32_t views_of(const struct rfb_stream_info *in)
{
	if (in->groups > 1)    /* the first group's block leads the pixels */
		return in->group[0].views;
	return in->views > 1 ? in->views : 1;
}

/* Sample (y, x, ch) of image k (view k % V of sample k / V: the views of
 * a sample follow each other) as an 8-bit pixel value. */
static unsigned char sample_u8(const struct rfb_stream_info *in,
			       const struct rfb_stream_batch *b, uint32_t k,
			       uint32_t y, uint32_t x, uint32_t ch, float lo,
			       float hi)
{
	size_t H = in->height, W = in->width, C = in->channels;
	size_t at = k * H * W * C + (in->layout == RFB_STREAM_NHWC
		    ? (y * W + x) * C + ch : ch * H * W + y * W + x);
	const unsigned char *p = b->pixels;
	float v;

	if (in->dtype == RFB_STREAM_U8)
		return p[at];
	memcpy(&v, p + 4 * at, 4);
	if (in->normalized)
		v = 255.0f * (v * in->std[ch] + in->mean[ch]);
	else
		v = hi > lo ? 255.0f * (v - lo) / (hi - lo) : 127.5f;
	if (!(v > 0))          /* NaN too */
		return 0;
	return v >= 255 ? 255 : (unsigned char)lrintf(v);
}

/* The batch's images (every view of every sample) as 8-bit HWC images in
 * buf, one after the other, then, up to cols, cells of background: a
 * sheet is cols wide even when the batch has fewer images. */
static int batch_images(const struct rfb_stream_info *in,
			const struct rfb_stream_batch *b, int cols,
			rfb_imgbuf *buf, rfb_image **images, int *n, rfb_err *err)
{
	size_t one = (size_t)in->width * in->height * in->channels;
	uint32_t count = b->n * views_of(in);
	int cells = (int)count < cols ? cols : (int)count;
	float lo = 0, hi = 0;
	unsigned char *p;
	int rc;

	/* one more image's room: the background cell */
	if ((rc = rfb_imgbuf_reserve(buf, one * ((size_t)count + 1), err)))
		return rc;
	if (!(*images = calloc((size_t)cells, sizeof **images)))
		return rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory");
	if (in->dtype == RFB_STREAM_F32 && !in->normalized)
		f32_range(b, &lo, &hi);
	p = buf->data;
	for (int j = 0; j < cells; j++) {
		unsigned char *px = p + one * (size_t)((uint32_t)j < count ? j : (int)count);
		(*images)[j] = (rfb_image){ px, (size_t)in->width * in->channels,
					    (int)in->width, (int)in->height,
					    (int)in->channels };
	}
	memset(p + one * count, SHEET_GRAY, one);
	for (uint32_t k = 0; k < count; k++)
		for (uint32_t y = 0; y < in->height; y++)
			for (uint32_t x = 0; x < in->width; x++)
				for (uint32_t ch = 0; ch < in->channels; ch++)
					*p++ = sample_u8(in, b, k, y, x, ch, lo, hi);
	*n = cells;
	return 0;
}

/* The sheet of the batch: cols samples a row, each with its views side
 * by side (cols x views images a row). */
static int write_sheet(struct cli *c, const struct dump_stream_opts *so,
		       const struct rfb_stream_info *in,
		       const struct rfb_stream_batch *b, int samples_per_row)
{
	int cols = samples_per_row * (int)views_of(in);
	const struct rfb_sheet_opts opts = { cols, SHEET_GAP,
					     { SHEET_GRAY, SHEET_GRAY, SHEET_GRAY } };
	int rows = (int)((b->n + (uint32_t)samples_per_row - 1) /
			 (uint32_t)samples_per_row);
	uint64_t w = SHEET_GAP + (uint64_t)cols * (in->width + SHEET_GAP);
	uint64_t h = SHEET_GAP + (uint64_t)rows * (in->height + SHEET_GAP);
	rfb_imgbuf pixels = { 0 }, buf = { 0 }, jpeg = { 0 };
	rfb_image *images = NULL, sheet;
	rfb_err err = { 0 };
	rfb_encoder *enc = NULL;
	size_t len;
	int rc = 1, n = 0;

	if (w > RFB_IMAGE_MAX_SIDE || h > RFB_IMAGE_MAX_SIDE) {
		cli_warn(c, "%s: a sheet of %llux%llu pixels is too large for "
			 "JPEG (try --columns)", so->sheet,
			 (unsigned long long)w, (unsigned long long)h);
		return 1;
	}
	/* the library lays the sheet out (image/contact_sheet.c); the
	 * encoding keeps full chroma (4:4:4) for looking at pixels */
	if (batch_images(in, b, cols, &pixels, &images, &n, &err) ||
	    rfb_sheet_build(images, n, &opts, &sheet, &buf, &err) ||
	    !(enc = rfb_encoder_new(&err)))
		goto fail;
	if (rfb_jpeg_encode(enc, &sheet, so->quality ? so->quality : 90,
			    RFB_ENCODE_444, &jpeg, &len, &err) ||
	    rfb_file_replace(so->sheet, jpeg.data, len, &err))
		goto fail;
	rc = 0;
fail:
	if (rc)
		cli_warn_err(c, &err);
	rfb_encoder_free(enc);
	free(images);
	rfb_imgbuf_free(&pixels);
	rfb_imgbuf_free(&buf);
	rfb_imgbuf_free(&jpeg);
	return rc;
}

/* The sheet of the selected batch if asked for (nothing on stdout then),
 * else its table. */
static int dump_batch(struct cli *c, const struct dump_stream_opts *so,
		      const struct rfb_stream_info *in,
		      const struct rfb_stream_batch *b, FILE *out)
{
	int cols = so->columns;

	if (cols <= 0)
		cols = (int)ceil(sqrt((double)b->n));
	if (so->sheet)
		return write_sheet(c, so, in, b, cols);
	fprintf(out, "# batch\tepoch %u step %u global %llu, %u images\n",
		b->epoch, b->step, (unsigned long long)b->global_step, b->n);
	fprintf(out, "# index\trow\tcolumn\tid\tlabel\tclass\n");
	for (uint32_t j = 0; j < b->n; j++) {
		fprintf(out, "%u\t%u\t%u\t%u\t%u\t", j, j / (uint32_t)cols,
			j % (uint32_t)cols, b->ids[j], b->labels[j]);
		dump_tsv_field(out, in->class_names[b->labels[j]]);
		putc('\n', out);
	}
	return 0;
}

/* ---- the whole stream ------------------------------------------------ */

struct dump {
	struct cli *c;
	const char *path;
	const struct dump_opts *o;
	const struct dump_stream_opts *so;
	struct batch_sel sel;
	struct stats st;
	const struct rfb_stream_info *info;
	FILE *out;
	int found;                     /* the selected batch was dumped */
	int header_pending;            /* read, not yet printed */
};

/* The HEADER's lines (once the VIEW_GROUPS frame that may follow it is
 * read: they are part of what the stream holds), then the table's. */
static int begin(struct dump *d)
{
	d->header_pending = 0;
	if (!d->so->sheet)     /* a sheet: nothing on stdout */
		print_header(d->out, d->path, d->info);
	if (d->o->stats && stats_init(&d->st, d->info->class_count)) {
		cli_warn(d->c, "%s: out of memory", d->path);
		return -1;
	}
	if (d->o->stats)
		fprintf(d->out, "# epoch\tbatches\timages\tshort\tclasses\t"
			"per-class-min\tper-class-max\tduplicate-ids\n");
	else if (!d->so->batch)
		fprintf(d->out, "# frame\toffset\ttype\tepoch\tstep\t"
			"global\timages\n");
	return 0;
}

/* Handle one frame; returns 0 to go on, 1 to stop, -1 on failure. */
static int on_frame(struct dump *d, const struct rfb_stream_frame *f)
{
	if (f->type == RFB_FRAME_HEADER) {
		d->info = f->info;
		d->header_pending = 1;
		return 0;
	}
	if (d->header_pending && begin(d))
		return -1;
	if (d->so->batch) {
		if (f->type != RFB_FRAME_BATCH || !sel_match(&d->sel, &f->batch))
			return 0;
		d->found = 1;
		return dump_batch(d->c, d->so, d->info, &f->batch, d->out) ? -1 : 1;
	}
	if (!d->o->stats)
		print_frame(d->out, f);
	else if (f->type == RFB_FRAME_BATCH &&
		 stats_batch(&d->st, &f->batch, d->info->batch_size)) {
		cli_warn(d->c, "%s: out of memory", d->path);
		return -1;
	}
	else if (f->type == RFB_FRAME_EPOCH_END)
		stats_row(d->out, &d->st, f->epoch_end.epoch, 1);
	return 0;
}

/* After the last frame (or an error): the rest of the statistics and how
 * the stream ended. */
static void finish(struct dump *d, rfb_stream_reader *r, int rc,
		   const struct rfb_stream_frame *last)
{
	if (d->header_pending && begin(d))
		return;
	if (!d->info || d->so->batch)
		return;
	if (d->o->stats) {
		if (d->st.open)
			stats_row(d->out, &d->st, d->st.epoch, 0);
		stats_labels(d->out, &d->st, d->info);
	}
	if (rfb_stream_reader_skipped(r))
		fprintf(d->out, "# skipped\t%llu frames of unknown types\n",
			(unsigned long long)rfb_stream_reader_skipped(r));
	if (rc == 0)
		fprintf(d->out, "# end\tclean: %llu batches, %llu images, %u "
			"epochs\n", (unsigned long long)last->end.batches,
			(unsigned long long)last->end.images, last->end.epochs);
	else
		fprintf(d->out, "# end\tnot clean: see the error\n");
}

static void check_opts(struct cli *c, const struct dump_stream_opts *so,
		       struct batch_sel *sel)
{
	if ((so->sheet || so->columns) && !so->batch)
		cli_usage_error(c, "--sheet and --columns need --batch");
	if (so->columns < 0 || so->columns > 65535)
		cli_usage_error(c, "--columns: %d is out of range (1 to 65535)",
				so->columns);
	if (so->quality < 0 || so->quality > 100)
		cli_usage_error(c, "--quality: %d is out of range (1 to 100)",
				so->quality);
	if (so->batch)
		parse_sel(c, so->batch, sel);
}

int dump_stream(struct cli *c, const char *path, const struct dump_opts *o,
		const struct dump_stream_opts *so, FILE *out)
{
	struct dump d = { .c = c, .path = path, .o = o, .so = so, .out = out };
	struct rfb_stream_frame f, last = { 0 };
	rfb_err err = { 0 };
	int fd, rc, status = 0;

	check_opts(c, so, &d.sel);
	if (strcmp(path, "-") == 0)
		fd = dup(STDIN_FILENO), d.path = path = "(stdin)";
	else
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		cli_die(c, "%s: %s", path, strerror(errno));
	rfb_stream_reader *r = rfb_stream_reader_new_fd(fd, path, NULL, &err);
	if (!r)
		cli_die_err(c, &err);
	while ((rc = rfb_stream_next(r, &f, &err)) == 1) {
		int k = on_frame(&d, &f);
		last = f;
		if (k) {
			status = k < 0;
			break;
		}
	}
	if (rc <= 0)
		finish(&d, r, rc, &last);
	fflush(out);
	if (rc < 0) {
		cli_warn_err(c, &err);
		status = 1;
	} else if (so->batch && !d.found) {
		cli_warn(c, "%s: no batch %s in the stream", path, so->batch);
		status = 1;
	}
	if (o->stats)
		stats_free(&d.st);
	rfb_stream_reader_free(r);
	close(fd);
	return status;
}
