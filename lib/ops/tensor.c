/*
 * tensor.c - ToTensor + Normalize and HWC->CHW (see tensor.h).
 */
#include <math.h>
#include <string.h>

#include "refurb/tensor.h"

const struct rfb_enum_name rfb_dtype_names[] = {
	{ RFB_DTYPE_U8, "uint8" },
	{ RFB_DTYPE_F32, "float32" },
	{ 0, NULL },
};

const struct rfb_enum_name rfb_layout_names[] = {
	{ RFB_LAYOUT_HWC, "HWC" },
	{ RFB_LAYOUT_CHW, "CHW" },
	{ 0, NULL },
};

const char *rfb_dtype_name(enum rfb_dtype t)
{
	return rfb_enum_name(rfb_dtype_names, (int)t);
}

const char *rfb_layout_name(enum rfb_layout l)
{
	return rfb_enum_name(rfb_layout_names, (int)l);
}

int rfb_norm_init(rfb_norm *n, int channels, const double *mean,
		  const double *std, rfb_err *err)
{
	if (channels != 1 && channels != 3)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "normalize: %d channels", channels);
	n->channels = channels;
	for (int c = 0; c < channels; c++) {
		/* torchvision holds mean and std as float32 tensors */
		float m = (float)mean[c], s = (float)std[c];
		if (!isfinite(m) || !isfinite(s) || s == 0.0f)
			return rfb_err_set(err, RFB_EINVAL, NULL,
					   "normalize: channel %d: mean %g, std %g",
					   c, mean[c], std[c]);
		for (int v = 0; v < 256; v++) {
			volatile float x = (float)v / 255.0f; /* ToTensor */
			volatile float d = x - m;              /* sub_ */
			n->lut[c][v] = d / s;                  /* div_ */
		}
	}
	return 0;
}

int rfb_tensor_normalize(const rfb_image *src, const rfb_norm *n,
			 enum rfb_layout layout, float *out, rfb_err *err)
{
	int ch = src->channels, w = src->width;
	size_t plane = (size_t)w * src->height;

	if (n->channels != ch)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "normalize: %d-channel table for a %d-channel "
				   "image", n->channels, ch);
	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src->data + (size_t)y * src->stride;
		if (layout == RFB_LAYOUT_HWC) {
			float *o = out + (size_t)y * w * ch;
			for (int i = 0; i < w * ch; i++)
				o[i] = n->lut[i % ch][in[i]];
			continue;
		}
		for (int c = 0; c < ch; c++) {
			const float *lut = n->lut[c];
			float *o = out + c * plane + (size_t)y * w;
			for (int x = 0; x < w; x++)
				o[x] = lut[in[x * ch + c]];
		}
	}
	return 0;
}

void rfb_tensor_chw_u8(const rfb_image *src, unsigned char *out)
{
	int ch = src->channels, w = src->width;
	size_t plane = (size_t)w * src->height;

	for (int y = 0; y < src->height; y++) {
		const unsigned char *in = src->data + (size_t)y * src->stride;
		for (int c = 0; c < ch; c++) {
			unsigned char *o = out + c * plane + (size_t)y * w;
			for (int x = 0; x < w; x++)
				o[x] = in[x * ch + c];
		}
	}
}
