/*
 * pipeline_internal.h - the parsed form of a pipeline, shared by the
 * parser (pipeline_parse*.c), the canonical printer (pipeline_text.c), the
 * executor (pipeline_exec.c) and the JPEG planner (pipeline_jpeg.c).
 */
#ifndef REFURB_PIPELINE_INTERNAL_H
#define REFURB_PIPELINE_INTERNAL_H

#include "refurb/augment.h"
#include "refurb/pipeline.h"
#include "refurb/resize.h"
#include "refurb/rng.h"
#include "refurb/transform.h"

/* Most options of one choice or order. */
#define RFB_CHOICE_MAX 16

/* Largest n of one randaug=n=N filter (longer runs of equal RandAugment
 * layers are written as several filters in the canonical text). */
#define RFB_RANDAUG_MAX_N 16

enum rfb_filter {
	RFB_F_RESIZE,
	RFB_F_CENTERCROP,
	RFB_F_CROP,
	RFB_F_RRCROP,
	RFB_F_FLIP,
	RFB_F_RANDAUG,
	RFB_F_AUTOAUG,
	RFB_F_TRIVIALAUG,
	RFB_F_NORMALIZE,
	RFB_F_GRAY,
	RFB_F_RGB,
	/* torchvision's single transforms (filters.h) */
	RFB_F_VFLIP,
	RFB_F_GRAYSCALE,
	RFB_F_COLORJITTER,
	RFB_F_GAUSSBLUR,
	RFB_F_ERASING,
	RFB_F_SOLARIZE,
	RFB_F_POSTERIZE,
	RFB_F_EQUALIZE,
	RFB_F_AUTOCONTRAST,
	RFB_F_SHARPNESS,
	RFB_F_INVERT,
	RFB_F_ROTATION,
	RFB_F_AFFINE,
	RFB_F_PERSPECTIVE,
	RFB_F_APPLY,
	RFB_F_AUGMIX,             /* torchvision's AugMix (augmix.h) */
	RFB_F_PAD,
	RFB_F_CHOICE,
	RFB_F_ORDER,
	RFB_F_COUNT
};

/* One layer.  Only the fields of its filter are meaningful; the others
 * stay zero so that layers compare with memcmp-free field checks. */
struct rfb_layer {
	enum rfb_filter kind;
	int height, width;        /* exact size (resize HxW, crops) */
	int shorter;              /* resize: shorter side (0 = exact size) */
	int max_size;             /* resize: cap on the longer side, 0 none */
	double dct;               /* resize: DCT-scaled decode down to this
				   * ratio of the target (0 = the default,
				   * RFB_PIPE_SCALE_RATIO) */
	enum rfb_interp interp;   /* resize, rrcrop, the augment ops */
	struct rfb_padding pad;   /* crop, pad */
	enum rfb_pad_mode pad_mode; /* crop, pad: torchvision's padding_mode */
	int pad_if_needed;        /* crop */
	unsigned char fill[3];    /* crop padding, augment ops' fill */
	double scale[2], ratio[2];/* rrcrop */
	double p;                 /* flip */
	int magnitude, bins;      /* randaug (m, bins), trivialaug (bins) */
	enum rfb_autoaug_policy policy;
	int norm_channels;        /* normalize: 1 or 3 values given */
	double mean[3], std[3];
	/* the single transforms */
	double jitter[4][2];      /* colorjitter: brightness, contrast,
				   * saturation, hue ranges */
	unsigned jitter_on;       /* colorjitter: bit i: factor i is drawn */
	int kernel[2];            /* gaussblur: kernel height, width (odd) */
	double sigma[2];          /* gaussblur */
	double amount;            /* solarize threshold, sharpness factor,
				   * perspective distortion_scale */
	double degrees[2];        /* rotation, affine */
	int expand;               /* rotation: expand=1 (the size changes) */
	int has_center;           /* rotation, affine: center given */
	double center[2];         /* rotation, affine: x, y in pixels */
	int has_translate;        /* affine: translate given */
	double translate[2];      /* affine: largest shift, fraction of w, h */
	int has_scale;            /* affine: scale range in scale[] */
	int shear_n;              /* affine: 0, 2 (x) or 4 (x, y) in shear[] */
	double shear[4];
	int count;                /* apply, choice, order: the layers after
				   * it it gates */
	int options;              /* choice, order: the options (K) */
	int option_layers[RFB_CHOICE_MAX]; /* choice, order: layers of each
				   * option, in order (0 until resolved) */
	double weights[RFB_CHOICE_MAX]; /* choice: random.choices' weights */
	int after_norm;           /* erasing: on the float tensor, after
				   * normalize (value in evalue, or random) */
	int erase_random;         /* erasing: value=random (after normalize,
				   * or deferred) */
	int deferred;             /* erasing before normalize with only
				   * erasing up to it, from the first
				   * value=random one: run on the float
				   * tensor at normalize, as torchvision's
				   * ToTensor, RandomErasing, Normalize */
	double evalue[3];         /* erasing after normalize: the values */
	/* augmix: severity in magnitude, interp, fill (when has_fill) */
	int mix_width, mix_depth; /* mixture_width; chain_depth (-1: 1..3) */
	int all_ops, has_fill;
	double alpha;
};

/* A gate (apply, choice, order): decides which of the l->count layers
 * after it run. */
static inline int layer_is_gate(const struct rfb_layer *l)
{
	return l->kind == RFB_F_APPLY || l->kind == RFB_F_CHOICE ||
	       l->kind == RFB_F_ORDER;
}

struct rfb_pipeline {
	int nlayers;
	struct rfb_layer *layers;
	char *canonical;
};

/* The position of p's normalize layer (followed only by erasing layers
 * that work on its float output), or -1 when it has none. */
int rfbi_pipeline_norm_at(const rfb_pipeline *p);

/* Filter names, indexed by enum rfb_filter. */
extern const char *const rfbi_filter_names[RFB_F_COUNT];

/* The random stream of the layer at position under key. */
void rfbi_layer_rng(const struct rfb_pipe_key *key, int position, rfb_rng *rng);

/*
 * The rectangle crop layer l (centercrop or crop, at position) cuts from a
 * w x h image into *r: 1 if it lies inside the image, 0 if it needs
 * padding or l is no crop (*r may be filled all the same).
 */
int rfbi_layer_crop_rect(const struct rfb_layer *l, int position, int w, int h,
			 const struct rfb_pipe_key *key, struct rfb_rect *r);

/* The output size of layer l alone on an s-sized input, into s (a
 * rotation expand=1 with its first angle): 0 or a negative code with
 * err filled (pipeline_shape.c). */
int rfbi_layer_out_shape(const struct rfb_layer *l, struct rfb_pipe_shape *s,
			 rfb_err *err);

/* A new pipeline owning a copy of layers[0..n) and its canonical text
 * (for parse, join) into *out:
 * 0, RFB_ENOMEM, or RFB_ESPEC when its canonical text is longer than a
 * spec may be (RFB_PIPELINE_MAX_SPEC - 1 bytes, what cache manifests
 * hold): defaults spelled out make it longer than the spec given. */
int rfbi_pipeline_make(const struct rfb_layer *layers, int n,
		       rfb_pipeline **out, rfb_err *err) RFB_MUST_CHECK;

#endif
