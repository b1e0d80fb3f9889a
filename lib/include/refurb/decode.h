/*
 * decode.h - JPEG decoding into reusable image buffers.
 *
 * One rfb_decoder per thread decodes JPEGs held in memory into an
 * rfb_image backed by the caller's rfb_imgbuf; in the steady state nothing
 * is allocated per image (buffers only grow).  A full decode is
 * bit-identical to torchvision's loader, PIL.Image.open(f).convert("RGB")
 * with the same libjpeg-turbo (JDCT_ISLOW, fancy upsampling, Adobe-inverted
 * CMYK converted with PIL's cmyk2rgb).  The decoder can also scale by
 * 1/2, 1/4 or 1/8 inside the IDCT and decode only a region of the output,
 * which is how the partial pipeline skips pixels that no resize or crop
 * would keep.  rfb_decode_pick_scale() says how far one may scale without
 * leaving the augmentation tests' colour tolerance.
 *
 * Hostile input never crashes and never prints: libjpeg's errors and
 * warnings come back as RFB_EDECODE (corrupt or not a JPEG), RFB_ETRUNC
 * (data ends early) or RFB_ELIMIT (too many pixels or scans) with
 * libjpeg's reason in the error context.
 */
#ifndef REFURB_DECODE_H
#define REFURB_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/error.h"
#include "refurb/image.h"
#include "refurb/jpeg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rfb_decoder rfb_decoder;

/* Channels of the decoded image. */
enum rfb_decode_color {
	/* Always 3 channels (RGB): what torchvision's default loader gives. */
	RFB_DECODE_RGB = 0,
	/* Grayscale JPEGs stay 1 channel, everything else becomes RGB. */
	RFB_DECODE_KEEP = 1,
	/* Always 1 channel: PIL's convert("RGB").convert("L"), i.e.
	 * L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16; a grayscale JPEG's
	 * own samples are used as they are. */
	RFB_DECODE_GRAY = 2,
};

/* Accept the warnings that cannot change a pixel (an unknown JFIF
 * revision, a bad ICC marker, an unknown Adobe transform code, stray bytes
 * before a marker).  Without it every libjpeg warning is an error. */
#define RFB_DECODE_LENIENT 0x1u

/* img may be a view into buf whose stride is larger than width *
 * channels: a region's rows are then decoded in place (libjpeg decodes
 * whole iMCU columns around a region) instead of copied out. */
#define RFB_DECODE_VIEW 0x2u

/* Default cap on the number of scans (progressive JPEGs have about 10). */
#define RFB_DECODE_DEFAULT_MAX_SCANS 500

/*
 * What to decode.  A zeroed struct means: whole image, scale 1, RGB,
 * default limits, strict.
 */
struct rfb_decode_opts {
	enum rfb_decode_color color;
	int scale_denom;    /* 1, 2, 4 or 8 (output = ceil(size / denom)); 0 = 1 */
	/* Region in *scaled* output pixels; width == 0 or height == 0 means
	 * the whole scaled image.  Must lie inside the scaled image. */
	int x, y, width, height;
	/* Pixels of the full-size image; 0 = RFB_IMAGE_DEFAULT_MAX_PIXELS.
	 * Bounds memory too: a progressive or multi-scan JPEG holds all its
	 * DCT coefficients, 2 bytes per sample (up to 8 bytes a pixel for
	 * 4:4:4:4 CMYK), besides the output image. */
	uint64_t max_pixels;
	int max_scans;       /* 0 = RFB_DECODE_DEFAULT_MAX_SCANS */
	unsigned flags;      /* RFB_DECODE_LENIENT, RFB_DECODE_VIEW */
};

/*
 * A new decoder (one per thread; not thread-safe itself).  NULL with err
 * filled (RFB_ENOMEM) on failure.  Free with rfb_decoder_free().
 */
rfb_decoder *rfb_decoder_new(rfb_err *err) RFB_MUST_CHECK;

/* Free a decoder and its scratch memory.  NULL accepted. */
void rfb_decoder_free(rfb_decoder *d);

/*
 * Read the header of the JPEG in data[0..len) and fill info (NULL
 * accepted): width, height, components, TurboJPEG TJCS_* colour space
 * (-1 if none) and TJSAMP_* subsampling (-1 if none of TurboJPEG's).
 * Only opts->max_pixels and opts->flags are used here (opts NULL =
 * defaults): more pixels than the limit is RFB_ELIMIT, decided before
 * anything is allocated for the image.  data must stay valid and
 * unchanged until rfb_decode_pixels() has returned or another header is
 * read.  Returns 0 or a negative RFB_E* code with err filled (path left
 * empty: the caller knows the file).
 */
int rfb_decode_header(rfb_decoder *d, const void *data, size_t len,
		      const struct rfb_decode_opts *opts,
		      struct rfb_jpeg_info *info, rfb_err *err) RFB_MUST_CHECK;

/*
 * Decode the image whose header rfb_decode_header() just read, as opts
 * says (NULL = defaults; give the same flags as to the header), into img
 * backed by buf (grown if needed; img->stride = width * channels unless
 * opts->flags has RFB_DECODE_VIEW).  The
 * output is the region's width x height (or the whole scaled image), with
 * 1 or 3 channels as opts->color says.  Decoding stops after the last row
 * of the region: corruption further down is then not seen.  Returns 0 or a
 * negative RFB_E* code with err filled; on error img is unspecified.
 * Either way the header must be read again before the next decode.
 */
int rfb_decode_pixels(rfb_decoder *d, const struct rfb_decode_opts *opts,
		      rfb_image *img, rfb_imgbuf *buf,
		      rfb_err *err) RFB_MUST_CHECK;

/*
 * rfb_decode_pixels() without an output image: the rows go, top to
 * bottom, in bands of up to 16 rows, to fn(arg, rows, y, err), rows being
 * rows y .. y + rows->height - 1 of the output (region or whole scaled
 * image, its channels as opts->color says; a view into the decoder's
 * memory, valid during the call only), while they are still in the CPU's
 * cache.  fn returns 0 to go on, or a negative RFB_E* code with err filled
 * to stop: rfb_decode_pixels_bands() then returns that code.  Otherwise
 * as rfb_decode_pixels().
 */
typedef int (*rfb_decode_band_fn)(void *arg, const rfb_image *rows, int y,
				  rfb_err *err);
int rfb_decode_pixels_bands(rfb_decoder *d, const struct rfb_decode_opts *opts,
			    rfb_decode_band_fn fn, void *arg,
			    rfb_err *err) RFB_MUST_CHECK;

/* rfb_decode_header() then rfb_decode_pixels() with the same opts. */
int rfb_decode(rfb_decoder *d, const void *data, size_t len,
	       const struct rfb_decode_opts *opts, rfb_image *img,
	       rfb_imgbuf *buf, struct rfb_jpeg_info *info,
	       rfb_err *err) RFB_MUST_CHECK;

/* Size of the whole image decoded at 1/denom: ceil(size / denom). */
static inline int rfb_decode_scaled_size(int size, int denom)
{
	return (int)(((long)size + denom - 1) / denom);
}

/*
 * The scaling rule.  Decoding at 1/d and then resizing (PIL-style
 * antialiased bilinear) matches decoding fully and then resizing within
 * the augmentation tests' colour tolerance (>= 99% of samples within +-1,
 * mean absolute error <= 0.5) only when the scaled region stays at least
 * RFB_DECODE_MIN_RATIO = 4 times the resize target in both directions,
 * and the resize maps the exact scaled box (x/d .. (x+w)/d, fractional:
 * see rfb_decode_map_region) onto the target.  DCT scaling is a different
 * low-pass filter than PIL's, and only a large enough further reduction
 * hides the difference.  Measured by scripts/bench-decode --tolerance on
 * the 35 photos of Debian's kphotoalbum and labelme-examples packages,
 * target short sides 24..392, all three scales (1827 cases), pooled over
 * every sample:
 *
 *   scaled short side / target  1-1.5  1.5-2  2-3    3-4    4-6    >= 6
 *   samples within +-1          75-83% 88.0%  94-97% 98.9%  99.6%  99.8%
 *   mean absolute error         0.9-1.3 0.65  0.35-0.44 0.25 0.18  0.11
 *   cases within tolerance      0-1%   3.4%   9-15%  50%    80.5%  90%
 *   ... not counting the border 0-1%   3.4%   9-18%  63%    96.8%  99.2%
 *
 * The remaining failures at >= 4x sit in the last row or column (a
 * partial scaled pixel when the size is not a multiple of d, which a
 * resize that clips its filter at the image edge weighs wrongly) and in
 * colours clipped at 0 or 255.  Resizing the whole scaled image instead of
 * the exact box is much worse (45% of cases pass at 4-6x).
 */
#define RFB_DECODE_MIN_RATIO 4.0

/*
 * What survives of the full-size image after the first geometric step of
 * the pipeline: the region (x, y, width, height) of the full-size image
 * (width == 0 or height == 0: the whole image), resized to out_width x
 * out_height (0 x 0: kept at full resolution, e.g. a crop).
 */
struct rfb_decode_target {
	int x, y, width, height;
	int out_width, out_height;
};

/*
 * The largest scale denominator d in {8, 4, 2, 1} such that the region
 * decoded at 1/d is still at least min_ratio times the target in each
 * direction: width / d >= min_ratio * out_width and height / d >=
 * min_ratio * out_height.  A target kept at full resolution, or a
 * min_ratio <= 0, gives 1.  Use min_ratio = RFB_DECODE_MIN_RATIO to stay
 * within the colour tolerance; smaller values trade fidelity for speed.
 */
int rfb_decode_pick_scale(int image_width, int image_height,
			  const struct rfb_decode_target *t, double min_ratio);

/*
 * Shorthand for "the first resize makes the shorter side short_side"
 * (torchvision's Resize(short_side)): the whole image, target short side.
 */
int rfb_decode_pick_scale_short_side(int image_width, int image_height,
				     int short_side, double min_ratio);

/*
 * Map a region of the full-size image (x, y, w, h) to the smallest region
 * of the image decoded at 1/denom that covers it, written to out (x, y,
 * width, height, ready for rfb_decode_opts).  box receives the exact
 * region inside that decoded region, in its pixels (left, top, right,
 * bottom, fractional), for a resize that takes a source box.  Returns 0,
 * or RFB_EINVAL if the region is empty or not inside the image.
 */
int rfb_decode_map_region(int image_width, int image_height, int denom,
			  int x, int y, int w, int h,
			  struct rfb_decode_opts *out, double box[4]) RFB_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif
