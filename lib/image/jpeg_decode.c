/*
 * jpeg_decode.c - JPEG decoding through libjpeg-turbo's libjpeg API (see
 * decode.h).
 *
 * The libjpeg API, not TurboJPEG, because it has what the partial
 * pipeline needs and TurboJPEG 2.x lacks: jpeg_crop_scanline() and
 * jpeg_skip_scanlines() for region decoding, a progress hook to cap the
 * number of scans, and control over every warning.  libjpeg reports
 * errors through error_exit(), which must not return: we longjmp back to
 * guarded(), the one function that calls setjmp, abort the decompressor
 * (which keeps it reusable) and turn libjpeg's message into an rfb_err.
 * Warnings (emit_message with level -1) take the same way unless
 * RFB_DECODE_LENIENT allows them; "premature end of JPEG file" (libjpeg's
 * memory source hit the end of the data and would pad with a fake EOI,
 * i.e. grey pixels) becomes RFB_ETRUNC.  Nothing is ever printed.
 * rfb_decode_pixels_bands() hands the rows to a callback 16 at a time
 * instead of storing the image, so that a resize can read them while
 * they are still in the cache.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <turbojpeg.h>

#include "refurb/bytes.h"
#include "refurb/decode.h"

/* Rows asked from libjpeg per jpeg_read_scanlines() call. */
#define ROWS_PER_CALL 16

/* Rows of a band of rfb_decode_pixels_bands(): an iMCU row of a 4:2:0
 * JPEG at full scale (libjpeg has just decoded it: its rows are still in
 * the cache), two strips of the AVX2 horizontal resize pass. */
#define BAND_ROWS 16

struct decode_errmgr {
	struct jpeg_error_mgr pub; /* libjpeg's part: must be first */
	jmp_buf jump;
	unsigned flags;            /* RFB_DECODE_LENIENT */
	int code;                  /* RFB_E* code of the failure */
	char msg[JMSG_LENGTH_MAX];
};

struct rfb_decoder {
	struct jpeg_decompress_struct cinfo;
	struct decode_errmgr jerr;
	struct jpeg_progress_mgr progress;
	int max_scans;
	int have_header;          /* rfb_decode_header() succeeded */
	unsigned char *scratch;   /* rows for conversion and trimming */
	size_t scratch_cap;
};

/* How decoded rows become output rows. */
enum convert {
	CONVERT_NONE,        /* libjpeg's output is the output */
	CONVERT_RGB_TO_L,
	CONVERT_CMYK_TO_RGB, /* Adobe-inverted CMYK, PIL's cmyk2rgb */
	CONVERT_CMYK_TO_L,
};

/* One rfb_decode_pixels() call, passed through guarded(). */
struct decode_job {
	const struct rfb_decode_opts *opts;
	rfb_image *img;
	rfb_imgbuf *buf;
	rfb_err *err;
	enum convert convert;
	int channels;        /* of the output image */
	int in_components;   /* of libjpeg's output rows */
	int row_skip;        /* pixels to drop at the start of each row */
	int direct;          /* libjpeg writes straight into img's rows */
	unsigned char *rows; /* direct: libjpeg's first row (img starts
			      * row_skip pixels into it) */
	size_t row_bytes;    /* direct: from one of libjpeg's rows to the next */
	rfb_decode_band_fn band_fn; /* rfb_decode_pixels_bands() */
	void *band_arg;
};

/* ---- libjpeg callbacks ------------------------------------------------- */

static int code_of_message(int msg_code)
{
	switch (msg_code) {
	case JERR_OUT_OF_MEMORY:
		return RFB_ENOMEM;
	case JERR_IMAGE_TOO_BIG:
	case JERR_WIDTH_OVERFLOW:
	case JERR_NO_BACKING_STORE:
		return RFB_ELIMIT;
	case JERR_INPUT_EMPTY:
	case JERR_INPUT_EOF:
	case JWRN_JPEG_EOF:
		return RFB_ETRUNC;
	default:
		return RFB_EDECODE;
	}
}

static _Noreturn void fail_jump(j_common_ptr cinfo)
{
	struct decode_errmgr *e = (struct decode_errmgr *)cinfo->err;

	e->code = code_of_message(e->pub.msg_code);
	(*e->pub.format_message)(cinfo, e->msg);
	longjmp(e->jump, 1);
}

static void on_error_exit(j_common_ptr cinfo)
{
	fail_jump(cinfo);
}

/* Warnings that cannot change a decoded pixel. */
static int warning_is_harmless(int msg_code)
{
	return msg_code == JWRN_JFIF_MAJOR || msg_code == JWRN_BOGUS_ICC ||
	       msg_code == JWRN_ADOBE_XFORM || msg_code == JWRN_EXTRANEOUS_DATA;
}

static void on_emit_message(j_common_ptr cinfo, int msg_level)
{
	struct decode_errmgr *e = (struct decode_errmgr *)cinfo->err;

	if (msg_level >= 0)
		return; /* trace message */
	e->pub.num_warnings++;
	if ((e->flags & RFB_DECODE_LENIENT) &&
	    warning_is_harmless(e->pub.msg_code))
		return;
	fail_jump(cinfo);
}

static void on_output_message(j_common_ptr cinfo)
{
	(void)cinfo; /* the library never prints */
}

/* Called at least once per scan while a multi-scan file is read. */
static void on_progress(j_common_ptr cinfo)
{
	rfb_decoder *d = cinfo->client_data;
	int scans = d->cinfo.input_scan_number;

	if (scans > d->max_scans) {
		d->jerr.code = RFB_ELIMIT;
		snprintf(d->jerr.msg, sizeof d->jerr.msg,
			 "more than %d scans (progressive JPEG bomb?)",
			 d->max_scans);
		longjmp(d->jerr.jump, 1);
	}
}

/*
 * Run body(d, arg) with libjpeg's errors caught.  The setjmp lives in
 * this small function so that no caller has locals longjmp could clobber.
 */
static int guarded(rfb_decoder *d, int (*body)(rfb_decoder *, void *),
		   void *arg, rfb_err *err)
{
	if (setjmp(d->jerr.jump)) {
		jpeg_abort_decompress(&d->cinfo);
		d->have_header = 0;
		return rfb_err_set(err, d->jerr.code, NULL, "%s", d->jerr.msg);
	}
	return body(d, arg);
}

/* ---- the decoder object ------------------------------------------------ */

/* jpeg_create_decompress() fails through error_exit if out of memory;
 * nothing to abort yet, hence not guarded(). */
static int create(rfb_decoder *d)
{
	if (setjmp(d->jerr.jump))
		return RFB_ENOMEM;
	jpeg_create_decompress(&d->cinfo);
	return 0;
}

rfb_decoder *rfb_decoder_new(rfb_err *err)
{
	rfb_decoder *d = calloc(1, sizeof *d);

	if (!d) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory for a decoder");
		return NULL;
	}
	d->cinfo.err = jpeg_std_error(&d->jerr.pub);
	d->jerr.pub.error_exit = on_error_exit;
	d->jerr.pub.emit_message = on_emit_message;
	d->jerr.pub.output_message = on_output_message;
	d->cinfo.client_data = d;
	d->progress.progress_monitor = on_progress;
	d->max_scans = RFB_DECODE_DEFAULT_MAX_SCANS;
	if (create(d)) {
		rfb_err_set(err, RFB_ENOMEM, NULL, "%s", d->jerr.msg);
		free(d);
		return NULL;
	}
	d->cinfo.progress = &d->progress;
	return d;
}

void rfb_decoder_free(rfb_decoder *d)
{
	if (!d)
		return;
	jpeg_destroy_decompress(&d->cinfo);
	free(d->scratch);
	free(d);
}

/* ---- header -------------------------------------------------------------- */

static int tj_colorspace(J_COLOR_SPACE cs)
{
	switch (cs) {
	case JCS_RGB: return TJCS_RGB;
	case JCS_YCbCr: return TJCS_YCbCr;
	case JCS_GRAYSCALE: return TJCS_GRAY;
	case JCS_CMYK: return TJCS_CMYK;
	case JCS_YCCK: return TJCS_YCCK;
	default: return -1;
	}
}

/* TurboJPEG's subsampling class of the file, -1 if it has none. */
static int tj_subsampling(const struct jpeg_decompress_struct *c)
{
	static const int factors[][3] = {
		{ TJSAMP_444, 1, 1 }, { TJSAMP_422, 2, 1 }, { TJSAMP_420, 2, 2 },
		{ TJSAMP_440, 1, 2 }, { TJSAMP_411, 4, 1 },
	};
	const jpeg_component_info *ci = c->comp_info;

	if (c->num_components == 1)
		return TJSAMP_GRAY;
	if (c->num_components != 3 && c->num_components != 4)
		return -1;
	for (int i = 1; i < 3; i++)
		if (ci[i].h_samp_factor != 1 || ci[i].v_samp_factor != 1)
			return -1;
	if (c->num_components == 4 &&
	    (ci[3].h_samp_factor != ci[0].h_samp_factor ||
	     ci[3].v_samp_factor != ci[0].v_samp_factor))
		return -1;
	for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++)
		if (ci[0].h_samp_factor == factors[i][1] &&
		    ci[0].v_samp_factor == factors[i][2])
			return factors[i][0];
	return -1;
}

struct header_job {
	const void *data;
	size_t len;
	uint64_t max_pixels;
	struct rfb_jpeg_info *info;
	rfb_err *err;
};

static int header_body(rfb_decoder *d, void *arg)
{
	struct header_job *job = arg;
	struct jpeg_decompress_struct *c = &d->cinfo;
	uint64_t pixels;

	jpeg_mem_src(c, job->data, (unsigned long)job->len);
	jpeg_read_header(c, TRUE);
	pixels = (uint64_t)c->image_width * c->image_height;
	if (pixels > job->max_pixels) {
		jpeg_abort_decompress(c);
		return rfb_err_set(job->err, RFB_ELIMIT, NULL,
				   "%ux%u pixels, more than the cap of %llu "
				   "pixels (--max-pixels)",
				   c->image_width, c->image_height,
				   (unsigned long long)job->max_pixels);
	}
	if (job->info) {
		job->info->width = (int)c->image_width;
		job->info->height = (int)c->image_height;
		job->info->components = c->num_components;
		job->info->colorspace = tj_colorspace(c->jpeg_color_space);
		job->info->subsampling = tj_subsampling(c);
	}
	d->have_header = 1;
	return 0;
}

/* Cheap checks libjpeg would report less clearly. */
static int check_start(const unsigned char *p, size_t len, rfb_err *err)
{
	if (len == 0)
		return rfb_err_set(err, RFB_ETRUNC, NULL, "empty (0 bytes)");
	if (p[0] != 0xFF || (len > 1 && p[1] != 0xD8))
		return rfb_err_set(err, RFB_EDECODE, NULL,
				   "not a JPEG file: starts with 0x%02x%s",
				   p[0], len > 1 ? "..." : "");
	if (len < 2)
		return rfb_err_set(err, RFB_ETRUNC, NULL,
				   "truncated JPEG (%zu byte)", len);
	return 0;
}

int rfb_decode_header(rfb_decoder *d, const void *data, size_t len,
		      const struct rfb_decode_opts *opts,
		      struct rfb_jpeg_info *info, rfb_err *err)
{
	struct header_job job = { data, len, 0, info, err };
	int rc;

	if (!d || (!data && len))
		return rfb_err_set(err, RFB_EINVAL, NULL, "no decoder or data");
	d->have_header = 0;
	jpeg_abort_decompress(&d->cinfo);
	rc = check_start(data, len, err);
	if (rc)
		return rc;
	job.max_pixels = opts && opts->max_pixels ? opts->max_pixels
						  : RFB_IMAGE_DEFAULT_MAX_PIXELS;
	d->jerr.flags = opts ? opts->flags : 0;
	return guarded(d, header_body, &job, err);
}

/* ---- pixels -------------------------------------------------------------- */

/* PIL's cmyk2rgb after its "CMYK;I" unpacker (Adobe stores CMYK inverted:
 * the samples libjpeg returns are 255 - ink). */
static inline unsigned char cmyk_channel(int inverted_ink, int inverted_k)
{
	int ink = 255 - inverted_ink, t = ink * inverted_k + 128;

	return (unsigned char)(inverted_k - (((t >> 8) + t) >> 8));
}

/* PIL's rgb2l (ITU-R 601-2 luma in 16-bit fixed point). */
static inline unsigned char rgb_luma(int r, int g, int b)
{
	return (unsigned char)((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
}

static void convert_row(enum convert how, const unsigned char *restrict in,
			unsigned char *restrict out, int width)
{
	for (int x = 0; x < width; x++) {
		unsigned char r, g, b;

		if (how == CONVERT_RGB_TO_L) {
			out[x] = rgb_luma(in[3 * x], in[3 * x + 1], in[3 * x + 2]);
			continue;
		}
		r = cmyk_channel(in[4 * x], in[4 * x + 3]);
		g = cmyk_channel(in[4 * x + 1], in[4 * x + 3]);
		b = cmyk_channel(in[4 * x + 2], in[4 * x + 3]);
		if (how == CONVERT_CMYK_TO_L) {
			out[x] = rgb_luma(r, g, b);
		} else {
			out[3 * x] = r;
			out[3 * x + 1] = g;
			out[3 * x + 2] = b;
		}
	}
}

/* Choose libjpeg's output colour space and our conversion. */
static int choose_color(struct jpeg_decompress_struct *c,
			struct decode_job *job)
{
	enum rfb_decode_color want = job->opts->color;

	switch (c->jpeg_color_space) {
	case JCS_GRAYSCALE:
		/* libjpeg's gray -> RGB replicates, as PIL's convert does */
		c->out_color_space = want == RFB_DECODE_RGB ? JCS_RGB
							    : JCS_GRAYSCALE;
		job->convert = CONVERT_NONE;
		job->channels = want == RFB_DECODE_RGB ? 3 : 1;
		return 0;
	case JCS_YCbCr:
	case JCS_RGB:
		c->out_color_space = JCS_RGB;
		job->convert = want == RFB_DECODE_GRAY ? CONVERT_RGB_TO_L
						       : CONVERT_NONE;
		job->channels = want == RFB_DECODE_GRAY ? 1 : 3;
		return 0;
	case JCS_CMYK:
	case JCS_YCCK:
		c->out_color_space = JCS_CMYK; /* libjpeg undoes YCCK */
		job->convert = want == RFB_DECODE_GRAY ? CONVERT_CMYK_TO_L
						       : CONVERT_CMYK_TO_RGB;
		job->channels = want == RFB_DECODE_GRAY ? 1 : 3;
		return 0;
	default:
		return rfb_err_set(job->err, RFB_EDECODE, NULL,
				   "unsupported JPEG colour space "
				   "(%d components)", c->num_components);
	}
}

static int check_opts(const struct rfb_decode_opts *o, rfb_err *err)
{
	int s = o->scale_denom;

	if (s != 0 && s != 1 && s != 2 && s != 4 && s != 8)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "scale 1/%d (only 1, 2, 4, 8)", s);
	if ((unsigned)o->color > RFB_DECODE_GRAY)
		return rfb_err_set(err, RFB_EINVAL, NULL, "bad colour mode %d",
				   (int)o->color);
	if (o->max_scans < 0)
		return rfb_err_set(err, RFB_EINVAL, NULL, "bad scan limit");
	return 0;
}

/* The region to output, in scaled pixels; whole image if none given. */
static int region_of(const struct rfb_decode_opts *o,
		     const struct jpeg_decompress_struct *c, int r[4],
		     rfb_err *err)
{
	long w = c->output_width, h = c->output_height;

	if (o->width <= 0 || o->height <= 0) {
		r[0] = 0, r[1] = 0, r[2] = (int)w, r[3] = (int)h;
		return 0;
	}
	if (o->x < 0 || o->y < 0 || o->x + (long)o->width > w ||
	    o->y + (long)o->height > h)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "region %dx%d+%d+%d outside the %ldx%ld image",
				   o->width, o->height, o->x, o->y, w, h);
	r[0] = o->x, r[1] = o->y, r[2] = o->width, r[3] = o->height;
	return 0;
}

/*
 * Decode only the columns that the region needs.  The crop asked from
 * libjpeg reaches one iMCU beyond the region on each side, so that fancy
 * upsampling sees the same neighbours as in a full decode; libjpeg then
 * moves the left edge down to an iMCU boundary, and row_skip drops what
 * lies left of the region.
 */
static void crop_columns(struct jpeg_decompress_struct *c, const int r[4],
			 struct decode_job *job)
{
	long margin = (long)c->max_h_samp_factor * c->min_DCT_scaled_size;
	long left = r[0] - margin, right = (long)r[0] + r[2] + margin;
	JDIMENSION xoff, width;

	if (left < 0)
		left = 0;
	if (right > (long)c->output_width)
		right = c->output_width;
	job->row_skip = r[0];
	if (left == 0 && right == (long)c->output_width)
		return;
	xoff = (JDIMENSION)left;
	width = (JDIMENSION)(right - left);
	jpeg_crop_scanline(c, &xoff, &width);
	job->row_skip = r[0] - (int)xoff;
}

static int reserve_scratch(rfb_decoder *d, size_t n, rfb_err *err)
{
	unsigned char *p;

	if (n <= d->scratch_cap)
		return 0;
	p = malloc(n);
	if (!p)
		return rfb_err_set(err, RFB_ENOMEM, NULL,
				   "out of memory for %zu bytes of rows", n);
	free(d->scratch);
	d->scratch = p;
	d->scratch_cap = n;
	return 0;
}

/* Read rows [r[1], r[1] + r[3]) of the (cropped) output into job->img. */
static int read_rows(rfb_decoder *d, const int r[4], struct decode_job *job)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	size_t in_row = (size_t)c->output_width * job->in_components;
	JSAMPROW rows[ROWS_PER_CALL];
	int done = 0;

	if (r[1] > 0)
		jpeg_skip_scanlines(c, (JDIMENSION)r[1]);
	while (done < r[3]) {
		int n = r[3] - done < ROWS_PER_CALL ? r[3] - done : ROWS_PER_CALL;
		int got;

		for (int i = 0; i < n; i++)
			rows[i] = job->direct ? job->rows + (size_t)(done + i) * job->row_bytes
					      : d->scratch + (size_t)i * in_row;
		got = (int)jpeg_read_scanlines(c, rows, (JDIMENSION)n);
		if (got <= 0)
			return rfb_err_set(job->err, RFB_EDECODE, NULL,
					   "decoder stopped at row %d", done);
		for (int i = 0; !job->direct && i < got; i++) {
			const unsigned char *in =
				rows[i] + (size_t)job->row_skip * job->in_components;
			unsigned char *out = rfb_image_px(job->img, 0, done + i);
			if (job->convert == CONVERT_NONE)
				memcpy(out, in, (size_t)r[2] * job->channels);
			else
				convert_row(job->convert, in, out, r[2]);
		}
		done += got;
	}
	return 0;
}

/* RFB_DECODE_VIEW: libjpeg's whole (cropped) rows go into buf, img is
 * the region's part of them. */
static int view_rows(const struct jpeg_decompress_struct *c, const int r[4],
		     struct decode_job *job)
{
	size_t row, total;
	int rc;

	if (rfb_mul_size((size_t)c->output_width, (size_t)job->channels, &row) ||
	    rfb_mul_size(row, (size_t)r[3], &total))
		return rfb_err_set(job->err, RFB_ELIMIT, NULL, "image too large");
	rc = rfb_imgbuf_reserve(job->buf, total, job->err);
	if (rc)
		return rc;
	job->direct = 1;
	job->rows = job->buf->data;
	job->row_bytes = row;
	job->img->data = job->buf->data + (size_t)job->row_skip * job->channels;
	job->img->stride = row;
	return 0;
}

/* Colour, scale and libjpeg's settings for job; r gets the region. */
static int setup(struct jpeg_decompress_struct *c, struct decode_job *job,
		 int r[4])
{
	int rc = choose_color(c, job);

	if (rc)
		return rc;
	c->scale_num = 1;
	c->scale_denom = job->opts->scale_denom ? job->opts->scale_denom : 1;
	c->dct_method = JDCT_ISLOW;       /* PIL's (libjpeg's default) */
	c->do_fancy_upsampling = TRUE;    /* PIL's unless draft mode */
	jpeg_calc_output_dimensions(c);
	return region_of(job->opts, c, r, job->err);
}

static int pixels_body(rfb_decoder *d, void *arg)
{
	struct decode_job *job = arg;
	struct jpeg_decompress_struct *c = &d->cinfo;
	int r[4] = { 0 }, rc;

	rc = setup(c, job, r);
	if (rc)
		goto fail;
	rc = rfb_image_alloc(job->img, job->buf, r[2], r[3], job->channels,
			     job->err);
	if (rc)
		goto fail;
	jpeg_start_decompress(c);
	job->in_components = c->out_color_components;
	crop_columns(c, r, job);
	job->direct = job->convert == CONVERT_NONE && job->row_skip == 0 &&
		      (int)c->output_width == r[2];
	if (job->direct) {
		job->rows = job->img->data;
		job->row_bytes = job->img->stride;
	} else if (job->convert == CONVERT_NONE &&
		   (job->opts->flags & RFB_DECODE_VIEW)) {
		rc = view_rows(c, r, job);
		if (rc)
			goto fail;
	}
	rc = reserve_scratch(d, (size_t)c->output_width * job->in_components *
					ROWS_PER_CALL, job->err);
	if (rc)
		goto fail;
	rc = read_rows(d, r, job);
fail:
	/* abort, not finish: nothing below the region needs decoding */
	jpeg_abort_decompress(c);
	return rc;
}

/* Rows [r[1], r[1] + r[3]) of the (cropped) output to job->band_fn, in
 * bands of BAND_ROWS rows (fewer at the end): libjpeg writes them into
 * the scratch, the band is a view of them (or of their conversion). */
static int band_rows(rfb_decoder *d, const int r[4], struct decode_job *job)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	size_t in_row = (size_t)c->output_width * job->in_components;
	unsigned char *conv = d->scratch + BAND_ROWS * in_row;
	JSAMPROW rows[BAND_ROWS];
	rfb_image band = { NULL, 0, r[2], 0, job->channels };
	int done = 0, rc;

	for (int i = 0; i < BAND_ROWS; i++)
		rows[i] = d->scratch + (size_t)i * in_row;
	if (job->convert == CONVERT_NONE) {
		band.data = rows[0] + (size_t)job->row_skip * job->in_components;
		band.stride = in_row;
	} else {
		band.data = conv;
		band.stride = (size_t)r[2] * job->channels;
	}
	if (r[1] > 0)
		jpeg_skip_scanlines(c, (JDIMENSION)r[1]);
	while (done < r[3]) {
		int want = r[3] - done < BAND_ROWS ? r[3] - done : BAND_ROWS;
		for (band.height = 0; band.height < want;) {
			int got = (int)jpeg_read_scanlines(c, rows + band.height,
							   (JDIMENSION)(want - band.height));
			if (got <= 0)
				return rfb_err_set(job->err, RFB_EDECODE, NULL,
						   "decoder stopped at row %d",
						   done + band.height);
			band.height += got;
		}
		for (int i = 0; job->convert != CONVERT_NONE && i < band.height; i++)
			convert_row(job->convert,
				    rows[i] + (size_t)job->row_skip * job->in_components,
				    conv + (size_t)i * band.stride, r[2]);
		rc = job->band_fn(job->band_arg, &band, done, job->err);
		if (rc)
			return rc;
		done += band.height;
	}
	return 0;
}

static int bands_body(rfb_decoder *d, void *arg)
{
	struct decode_job *job = arg;
	struct jpeg_decompress_struct *c = &d->cinfo;
	int r[4] = { 0 }, rc;
	size_t in_row, out_row;

	rc = setup(c, job, r);
	if (rc)
		goto fail;
	jpeg_start_decompress(c);
	job->in_components = c->out_color_components;
	crop_columns(c, r, job);
	in_row = (size_t)c->output_width * job->in_components;
	out_row = (size_t)r[2] * job->channels;
	rc = reserve_scratch(d, (in_row + out_row) * BAND_ROWS, job->err);
	if (rc)
		goto fail;
	rc = band_rows(d, r, job);
fail:
	jpeg_abort_decompress(c);
	return rc;
}

/* What rfb_decode_pixels and rfb_decode_pixels_bands share. */
static int run_pixels(rfb_decoder *d, const struct rfb_decode_opts *opts,
		      struct decode_job *job, int (*body)(rfb_decoder *, void *),
		      rfb_err *err)
{
	static const struct rfb_decode_opts defaults;
	int rc;

	if (!d->have_header)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "decode without a header read first");
	d->have_header = 0;
	job->opts = opts ? opts : &defaults;
	job->err = err;
	rc = check_opts(job->opts, err);
	if (rc) {
		jpeg_abort_decompress(&d->cinfo);
		return rc;
	}
	d->max_scans = job->opts->max_scans ? job->opts->max_scans
					    : RFB_DECODE_DEFAULT_MAX_SCANS;
	d->jerr.flags = job->opts->flags;
	return guarded(d, body, job, err);
}

int rfb_decode_pixels(rfb_decoder *d, const struct rfb_decode_opts *opts,
		      rfb_image *img, rfb_imgbuf *buf, rfb_err *err)
{
	struct decode_job job = { 0 };

	if (!d || !img || !buf)
		return rfb_err_set(err, RFB_EINVAL, NULL, "no decoder or image");
	job.img = img;
	job.buf = buf;
	return run_pixels(d, opts, &job, pixels_body, err);
}

int rfb_decode_pixels_bands(rfb_decoder *d, const struct rfb_decode_opts *opts,
			    rfb_decode_band_fn fn, void *arg, rfb_err *err)
{
	struct decode_job job = { 0 };

	if (!d || !fn)
		return rfb_err_set(err, RFB_EINVAL, NULL, "no decoder or callback");
	job.band_fn = fn;
	job.band_arg = arg;
	return run_pixels(d, opts, &job, bands_body, err);
}

int rfb_decode(rfb_decoder *d, const void *data, size_t len,
	       const struct rfb_decode_opts *opts, rfb_image *img,
	       rfb_imgbuf *buf, struct rfb_jpeg_info *info, rfb_err *err)
{
	int rc = rfb_decode_header(d, data, len, opts, info, err);

	if (rc)
		return rc;
	return rfb_decode_pixels(d, opts, img, buf, err);
}

/* ---- choosing the scale ------------------------------------------------ */

int rfb_decode_pick_scale(int image_width, int image_height,
			  const struct rfb_decode_target *t, double min_ratio)
{
	double w = image_width, h = image_height;

	if (!t || t->out_width <= 0 || t->out_height <= 0 || min_ratio <= 0)
		return 1;
	if (t->width > 0 && t->height > 0)
		w = t->width, h = t->height;
	for (int d = 8; d > 1; d /= 2)
		if (w / d >= min_ratio * t->out_width &&
		    h / d >= min_ratio * t->out_height)
			return d;
	return 1;
}

int rfb_decode_pick_scale_short_side(int image_width, int image_height,
				     int short_side, double min_ratio)
{
	struct rfb_decode_target t = { 0 };
	int w = image_width, h = image_height;

	if (w <= 0 || h <= 0 || short_side <= 0)
		return 1;
	/* torchvision's Resize(int): long side = int(S * long / short) */
	if (w <= h) {
		t.out_width = short_side;
		t.out_height = (int)((double)short_side * h / w);
	} else {
		t.out_height = short_side;
		t.out_width = (int)((double)short_side * w / h);
	}
	if (t.out_width < 1)
		t.out_width = 1;
	if (t.out_height < 1)
		t.out_height = 1;
	return rfb_decode_pick_scale(w, h, &t, min_ratio);
}

int rfb_decode_map_region(int image_width, int image_height, int denom,
			  int x, int y, int w, int h,
			  struct rfb_decode_opts *out, double box[4])
{
	int x0, y0, x1, y1;

	if ((denom != 1 && denom != 2 && denom != 4 && denom != 8) ||
	    w <= 0 || h <= 0 || x < 0 || y < 0 ||
	    x > image_width - w || y > image_height - h)
		return RFB_EINVAL;
	x0 = x / denom;
	y0 = y / denom;
	x1 = rfb_decode_scaled_size(x + w, denom);
	y1 = rfb_decode_scaled_size(y + h, denom);
	out->scale_denom = denom;
	out->x = x0;
	out->y = y0;
	out->width = x1 - x0;
	out->height = y1 - y0;
	box[0] = (double)x / denom - x0;
	box[1] = (double)y / denom - y0;
	box[2] = (double)(x + w) / denom - x0;
	box[3] = (double)(y + h) / denom - y0;
	return 0;
}
