/*
 * tensor.h - from 8-bit images to the tensors a model consumes:
 * torchvision's ToTensor + Normalize (float32, CHW) and plain layout
 * conversion of uint8 images (HWC to CHW).
 *
 * Normalisation is exactly torchvision's float32 arithmetic: x = v / 255
 * (ToTensor), then (x - mean[c]) / std[c] (Normalize), each step rounded
 * to float32.  There are only 256 possible inputs per channel, so the
 * values are tabulated once per (mean, std) in an rfb_norm and the
 * conversion is a table lookup.
 */
#ifndef REFURB_TENSOR_H
#define REFURB_TENSOR_H

#include <stddef.h>

#include "refurb/enum.h"
#include "refurb/error.h"
#include "refurb/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element type and layout of a pipeline's output. */
enum rfb_dtype { RFB_DTYPE_U8 = 0, RFB_DTYPE_F32 = 1 };
enum rfb_layout { RFB_LAYOUT_HWC = 0, RFB_LAYOUT_CHW = 1 };

/* The names ("uint8", "float32"; "HWC", "CHW"; enum.h), and their
 * namers: NULL for an unknown value. */
extern const struct rfb_enum_name rfb_dtype_names[];
extern const struct rfb_enum_name rfb_layout_names[];
const char *rfb_dtype_name(enum rfb_dtype t);
const char *rfb_layout_name(enum rfb_layout l);

/* The normalisation table of up to 3 channels. */
typedef struct rfb_norm {
	int channels;
	float lut[3][256];
} rfb_norm;

/*
 * Fill n for channels (1 or 3) means and standard deviations.  std must
 * be non-zero and everything finite.  Returns 0 or RFB_EINVAL with err
 * filled.
 */
int rfb_norm_init(rfb_norm *n, int channels, const double *mean,
		  const double *std, rfb_err *err) RFB_MUST_CHECK;

/*
 * Normalise src into out (width * height * channels floats, caller-owned)
 * in CHW order (plane c, row y, column x) or HWC.  n->channels must equal
 * src->channels.  Returns 0 or RFB_EINVAL with err filled.
 */
int rfb_tensor_normalize(const rfb_image *src, const rfb_norm *n,
			 enum rfb_layout layout, float *out,
			 rfb_err *err) RFB_MUST_CHECK;

/* Copy src's samples into out (width * height * channels bytes) as
 * planes (CHW). */
void rfb_tensor_chw_u8(const rfb_image *src, unsigned char *out);

#ifdef __cplusplus
}
#endif

#endif
