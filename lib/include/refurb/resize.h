/*
 * resize.h - antialiased image resizing with PIL's exact arithmetic, and
 * torchvision's Resize size rule.
 *
 * Bilinear and bicubic reproduce Pillow 9.4's ImagingResample (separable
 * horizontal-then-vertical passes, filter support widened by the
 * downscale factor, coefficients normalised per output pixel and rounded
 * to 22-bit fixed point, 8-bit clipping between the passes); nearest
 * reproduces its affine nearest-neighbour scaling.  torchvision 0.14
 * resizes PIL images with exactly these, so the results are bit-identical.
 *
 * An rfb_resizer is a per-thread context: it caches the coefficient tables
 * of the last few (input size, output size, window) combinations and the
 * intermediate image, so resizing images of a size seen before neither
 * recomputes coefficients nor allocates.
 */
#ifndef REFURB_RESIZE_H
#define REFURB_RESIZE_H

#include "refurb/enum.h"
#include "refurb/error.h"
#include "refurb/image.h"
#include "refurb/ops.h" /* enum rfb_interp */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rfb_resizer rfb_resizer;

/* A new resizer (one per thread).  NULL with err filled on failure. */
rfb_resizer *rfb_resizer_new(rfb_err *err) RFB_MUST_CHECK;

/* Free a resizer and its tables.  NULL accepted. */
void rfb_resizer_free(rfb_resizer *rz);

/* Which kernels rfb_resizer_set_simd() selects. */
enum rfb_resize_kernels {
	RFB_RESIZE_SCALAR = 0, /* the portable scalar kernels (the reference) */
	RFB_RESIZE_AVX2 = 1,   /* AVX2, horizontal pass with pmulld (default) */
	RFB_RESIZE_MADD = 2,   /* AVX2, horizontal pass with pmaddwd on tap
				* pairs (slower than pmulld on the AMD Zen 4
				* it was measured on: scripts/bench-resize) */
};

/* Use the AVX2 kernels (on by default where the CPU has them) or the
 * portable scalar ones; all give the same bytes.  on is an
 * enum rfb_resize_kernels (any other non-zero value means
 * RFB_RESIZE_AVX2).  Returns the kernels now in use: RFB_RESIZE_SCALAR
 * when the CPU has no AVX2.  For tests and benchmarks. */
int rfb_resizer_set_simd(rfb_resizer *rz, int on);

/*
 * Resize all of src to dst's size (PIL Image.resize((w, h), filter)).
 * dst must be allocated by the caller with its width, height and src's
 * channel count, and must not overlap src.  Returns 0 or a negative RFB_E*
 * code with err filled (RFB_ENOMEM growing the cache, RFB_EINVAL for a
 * shape mismatch or an unknown interp).
 */
int rfb_resize(rfb_resizer *rz, const rfb_image *src, rfb_image *dst,
	       enum rfb_interp interp, rfb_err *err) RFB_MUST_CHECK;

/*
 * Resize the rectangle [x0, x1) x [y0, y1) of src (fractional source
 * coordinates, like PIL's resize(box=...)) to dst's size.  The rectangle
 * must lie inside src and not be empty.  Used to finish a resize from a
 * DCT-scaled or region-decoded JPEG.  Returns as rfb_resize().
 */
struct rfb_resize_box {
	double x0, y0, x1, y1;
};
int rfb_resize_box(rfb_resizer *rz, const rfb_image *src,
		   const struct rfb_resize_box *box, rfb_image *dst,
		   enum rfb_interp interp, rfb_err *err) RFB_MUST_CHECK;

/*
 * A window of a larger resize: dst receives the pixels [left, left +
 * dst->width) x [top, top + dst->height) of what resizing all of src to
 * full_w x full_h would give, computed without the rest, bit-identical to
 * resizing then cropping.  The window must lie inside the full size.
 * Returns as rfb_resize().
 */
int rfb_resize_window(rfb_resizer *rz, const rfb_image *src, int full_w,
		      int full_h, int left, int top, rfb_image *dst,
		      enum rfb_interp interp, rfb_err *err) RFB_MUST_CHECK;

/*
 * The general form behind the three above, for callers that map a
 * resize of one image onto another sampling of it (a DCT-scaled or
 * region decode): along each axis, output pixel k (0 <= k < out) is
 * centred on source coordinate offset + (first + k + 0.5) * scale, with
 * the filter widened by max(scale, 1).  src's pixel 0 is source pixel
 * origin, so only source pixels [origin, origin + src size) exist; the
 * filter is cut (and renormalised) at those edges like PIL's at the
 * image's.  A region that covers every output pixel's filter gives the
 * same bits as the whole image would.
 */
struct rfb_resize_axis {
	double offset, scale;
	int first, origin;
};
int rfb_resize_mapped(rfb_resizer *rz, const rfb_image *src,
		      const struct rfb_resize_axis *ax,
		      const struct rfb_resize_axis *ay, rfb_image *dst,
		      enum rfb_interp interp, rfb_err *err) RFB_MUST_CHECK;

/*
 * rfb_resize_mapped (and rfb_resize_box) on a source that arrives in bands
 * of rows, top to bottom, as a decoder produces them: each band's rows go
 * through the horizontal pass at once, while they are in the cache, into
 * the resizer's narrow intermediate; the vertical pass runs at the end.
 * The bytes are those of rfb_resize_mapped on the whole source (the
 * horizontal pass works row by row).
 *
 * _begin: the source's size and channel count, the mapping and dst
 * (allocated by the caller, dst's size and channels; it must stay valid
 * until _end).  Returns 0 or RFB_EINVAL (bad shapes or mapping, or
 * nearest, which has no band form) / RFB_ENOMEM with err filled.
 * _rows: rows, its rows being source rows y .. y + rows->height - 1 (the
 * next ones: bands come in order and cover the source, any height each;
 * rows only needs to stay valid during the call).  _end: the vertical
 * pass into dst.  Between _begin and _end the resizer must not be used
 * for anything else; a new _begin abandons an unfinished one.
 */
int rfb_resize_bands_begin(rfb_resizer *rz, int src_w, int src_h,
			   int channels, const struct rfb_resize_axis *ax,
			   const struct rfb_resize_axis *ay, rfb_image *dst,
			   enum rfb_interp interp, rfb_err *err) RFB_MUST_CHECK;
/* The same with rfb_resize_box's box (checked against src_w x src_h). */
int rfb_resize_bands_begin_box(rfb_resizer *rz, int src_w, int src_h,
			       int channels, const struct rfb_resize_box *box,
			       rfb_image *dst, enum rfb_interp interp,
			       rfb_err *err) RFB_MUST_CHECK;
int rfb_resize_bands_rows(rfb_resizer *rz, const rfb_image *rows, int y,
			  rfb_err *err) RFB_MUST_CHECK;
int rfb_resize_bands_end(rfb_resizer *rz, rfb_err *err) RFB_MUST_CHECK;

/*
 * torchvision's Resize output size for an in_w x in_h image.  size > 0 and
 * max_size == 0: the shorter side becomes size, the longer
 * int(size * long / short); max_size > size additionally caps the longer
 * side (then the shorter is int(max_size * short' / long')).  Sizes are
 * clamped to at least 1.  Returns 0, or RFB_EINVAL (max_size <= size) or
 * RFB_ELIMIT (a side beyond RFB_IMAGE_MAX_SIDE; *out_w and *out_h are
 * then that size, at most INT_MAX) with err filled.
 */
int rfb_resize_shorter(int in_w, int in_h, int size, int max_size,
		       int *out_w, int *out_h, rfb_err *err) RFB_MUST_CHECK;

/* The filters' names ("nearest", "bilinear", "bicubic", in the enum's
 * order; enum.h), and their namer and parser: NULL for an unknown value,
 * -1 for an unknown name. */
extern const struct rfb_enum_name rfb_interp_names[];
const char *rfb_interp_name(enum rfb_interp interp);
int rfb_interp_parse(const char *name);

/* Source pixels a filter reaches beyond an output pixel's centre, in
 * source pixels, when scaling by scale (source / output): support *
 * max(scale, 1).  For planning region decodes. */
double rfb_resize_support(enum rfb_interp interp, double scale);

#ifdef __cplusplus
}
#endif

#endif
