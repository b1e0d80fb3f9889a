/*
 * pipeline_text.c - a parsed pipeline as a value: its canonical text,
 * layer equality, split and join (the split policy).  Output shapes are
 * pipeline_shape.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

/* The filters' names, which the parser reads and the canonical text
 * writes (here, so that the parser depends on this file and not the
 * other way round). */
const char *const rfbi_filter_names[RFB_F_COUNT] = {
	"resize", "centercrop", "crop", "rrcrop", "flip", "randaug",
	"autoaug", "trivialaug", "normalize", "gray", "rgb", "vflip",
	"grayscale", "colorjitter", "gaussblur", "erasing", "solarize",
	"posterize", "equalize", "autocontrast", "sharpness", "invert",
	"rotation", "affine", "perspective", "apply", "augmix", "pad", "choice",
	"order",
};

/* ---- canonical text ---- */

struct out {
	char *buf;
	size_t len, cap;
	int failed;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->cap - o->len) {
		o->failed = 1;
		return;
	}
	o->len += (size_t)n;
}

/* Shortest %g form that reads back as exactly v. */
static void put_num(struct out *o, double v)
{
	char buf[40];

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	put(o, "%s", buf);
}

static void put_list(struct out *o, const double *v, int n, char sep)
{
	for (int i = 0; i < n; i++) {
		if (i)
			put(o, "%c", sep);
		put_num(o, v[i]);
	}
}

static void put_aug_common(struct out *o, const struct rfb_layer *l)
{
	put(o, ":interp=%s:fill=%u/%u/%u", rfb_interp_name(l->interp),
	    l->fill[0], l->fill[1], l->fill[2]);
}

static void put_range(struct out *o, const char *key, const double r[2])
{
	put(o, "%s=", key);
	put_list(o, r, 2, '-');
}

static void put_fill(struct out *o, const char *key, const unsigned char *f)
{
	put(o, ":%s=%u/%u/%u", key, f[0], f[1], f[2]);
}

/* The single transforms (their arguments after the name). */
static void put_single(struct out *o, const struct rfb_layer *l)
{
	static const char *const jitter_keys[4] = { "brightness", "contrast",
						     "saturation", "hue" };

	switch (l->kind) {
	case RFB_F_COLORJITTER:
		for (int i = 0; i < 4; i++) {
			put(o, "%s", i ? ":" : "=");
			put_range(o, jitter_keys[i], l->jitter[i]);
		}
		return;
	case RFB_F_GAUSSBLUR:
		put(o, "=kernel_size=%dx%d:", l->kernel[0], l->kernel[1]);
		put_range(o, "sigma", l->sigma);
		return;
	case RFB_F_ERASING:
		put(o, "=p=");
		put_num(o, l->p);
		put(o, ":");
		put_range(o, "scale", l->scale);
		put(o, ":");
		put_range(o, "ratio", l->ratio);
		if (l->erase_random) {
			put(o, ":value=random");
		} else if (!l->after_norm) {
			put_fill(o, "value", l->fill);
		} else {
			put(o, ":value=");
			put_list(o, l->evalue, 3, '/');
		}
		return;
	case RFB_F_SOLARIZE:
	case RFB_F_SHARPNESS:
		put(o, "=%s=", l->kind == RFB_F_SOLARIZE ? "threshold" : "factor");
		put_num(o, l->amount);
		break;
	case RFB_F_POSTERIZE:
		put(o, "=bits=%d", l->magnitude);
		break;
	case RFB_F_ROTATION:
	case RFB_F_AFFINE:
		put(o, "=");
		put_range(o, "degrees", l->degrees);
		if (l->has_translate) {
			put(o, ":translate=");
			put_list(o, l->translate, 2, '/');
		}
		if (l->has_scale) {
			put(o, ":");
			put_range(o, "scale", l->scale);
		}
		for (int i = 0; i < l->shear_n; i += 2) {
			put(o, "%s", i ? "/" : ":shear=");
			put_list(o, l->shear + i, 2, '-');
		}
		put(o, ":interp=%s", rfb_interp_name(l->interp));
		put_fill(o, "fill", l->fill);
		/* absent when not given: older specs keep their text */
		if (l->expand)
			put(o, ":expand=1");
		if (l->has_center) {
			put(o, ":center=");
			put_list(o, l->center, 2, '/');
		}
		return;
	case RFB_F_AUGMIX:
		put(o, "=severity=%d:width=%d:depth=%d:alpha=", l->magnitude,
		    l->mix_width, l->mix_depth);
		put_num(o, l->alpha);
		put(o, ":all_ops=%d:interp=%s", l->all_ops, rfb_interp_name(l->interp));
		if (l->has_fill)
			put_fill(o, "fill", l->fill);
		else
			put(o, ":fill=none");
		return;
	case RFB_F_PERSPECTIVE:
		put(o, "=distortion_scale=");
		put_num(o, l->amount);
		break;
	default:
		break;
	}
	/* the ones with p */
	put(o, "%sp=", l->kind == RFB_F_SOLARIZE || l->kind == RFB_F_SHARPNESS ||
		       l->kind == RFB_F_POSTERIZE || l->kind == RFB_F_PERSPECTIVE
		       ? ":" : "=");
	put_num(o, l->p);
	if (l->kind == RFB_F_APPLY)
		put(o, ":n=%d", l->count);
	if (l->kind == RFB_F_PERSPECTIVE) {
		put(o, ":interp=%s", rfb_interp_name(l->interp));
		put_fill(o, "fill", l->fill);
	}
}

static void put_layer(struct out *o, const struct rfb_layer *l, int repeat)
{
	put(o, "%s", rfbi_filter_names[l->kind]);
	switch (l->kind) {
	case RFB_F_RESIZE:
		if (l->shorter)
			put(o, "=%d:max_size=%d", l->shorter, l->max_size);
		else
			put(o, "=%dx%d", l->height, l->width);
		put(o, ":interp=%s", rfb_interp_name(l->interp));
		if (l->dct > 0) { /* absent by default: older specs keep their text */
			put(o, ":dct=");
			put_num(o, l->dct);
		}
		break;
	case RFB_F_CENTERCROP:
		put(o, "=%dx%d", l->height, l->width);
		break;
	case RFB_F_CROP:
		put(o, "=%dx%d:pad=%d/%d/%d/%d:fill=%u/%u/%u:pad_if_needed=%d",
		    l->height, l->width, l->pad.left, l->pad.top, l->pad.right,
		    l->pad.bottom, l->fill[0], l->fill[1], l->fill[2],
		    l->pad_if_needed);
		/* absent when constant: older specs keep their text */
		if (l->pad_mode != RFB_PAD_CONSTANT)
			put(o, ":padding_mode=%s", rfb_pad_mode_name(l->pad_mode));
		break;
	case RFB_F_CHOICE:
	case RFB_F_ORDER:
		put(o, "=n=%d", l->options);
		if (l->kind == RFB_F_CHOICE) {
			put(o, ":p=");
			put_list(o, l->weights, l->options, '/');
		}
		put(o, ":layers=");
		for (int i = 0; i < l->options; i++)
			put(o, "%s%d", i ? "/" : "", l->option_layers[i]);
		break;
	case RFB_F_PAD:
		put(o, "=%d/%d/%d/%d:fill=%u/%u/%u:padding_mode=%s", l->pad.left,
		    l->pad.top, l->pad.right, l->pad.bottom, l->fill[0],
		    l->fill[1], l->fill[2], rfb_pad_mode_name(l->pad_mode));
		break;
	case RFB_F_RRCROP:
		put(o, "=%dx%d:scale=", l->height, l->width);
		put_list(o, l->scale, 2, '-');
		put(o, ":ratio=");
		put_list(o, l->ratio, 2, '-');
		put(o, ":interp=%s", rfb_interp_name(l->interp));
		break;
	case RFB_F_FLIP:
		put(o, "=p=");
		put_num(o, l->p);
		break;
	case RFB_F_RANDAUG:
		put(o, "=n=%d:m=%d:bins=%d", repeat, l->magnitude, l->bins);
		put_aug_common(o, l);
		break;
	case RFB_F_AUTOAUG:
		put(o, "=policy=%s", rfb_autoaug_policy_name(l->policy));
		put_aug_common(o, l);
		break;
	case RFB_F_TRIVIALAUG:
		put(o, "=bins=%d", l->bins);
		put_aug_common(o, l);
		break;
	case RFB_F_NORMALIZE:
		put(o, "=mean=");
		put_list(o, l->mean, l->norm_channels, '/');
		put(o, ":std=");
		put_list(o, l->std, l->norm_channels, '/');
		break;
	case RFB_F_GRAY:
	case RFB_F_RGB:
	case RFB_F_COUNT:
		break;
	default:
		put_single(o, l);
		break;
	}
}

/* 1 if a and b are the same layer. */
static int layer_equal(const struct rfb_layer *a, const struct rfb_layer *b)
{
	return a->kind == b->kind && a->height == b->height &&
	       a->width == b->width && a->shorter == b->shorter &&
	       a->max_size == b->max_size && a->interp == b->interp &&
	       a->dct == b->dct &&
	       a->pad.left == b->pad.left && a->pad.top == b->pad.top &&
	       a->pad.right == b->pad.right && a->pad.bottom == b->pad.bottom &&
	       a->pad_if_needed == b->pad_if_needed &&
	       a->pad_mode == b->pad_mode &&
	       memcmp(a->fill, b->fill, 3) == 0 && a->scale[0] == b->scale[0] &&
	       a->scale[1] == b->scale[1] && a->ratio[0] == b->ratio[0] &&
	       a->ratio[1] == b->ratio[1] && a->p == b->p &&
	       a->magnitude == b->magnitude && a->bins == b->bins &&
	       a->policy == b->policy && a->norm_channels == b->norm_channels &&
	       memcmp(a->mean, b->mean, sizeof a->mean) == 0 &&
	       memcmp(a->std, b->std, sizeof a->std) == 0 &&
	       memcmp(a->jitter, b->jitter, sizeof a->jitter) == 0 &&
	       a->jitter_on == b->jitter_on && a->kernel[0] == b->kernel[0] &&
	       a->kernel[1] == b->kernel[1] && a->sigma[0] == b->sigma[0] &&
	       a->sigma[1] == b->sigma[1] && a->amount == b->amount &&
	       a->degrees[0] == b->degrees[0] && a->degrees[1] == b->degrees[1] &&
	       a->has_translate == b->has_translate &&
	       a->translate[0] == b->translate[0] &&
	       a->translate[1] == b->translate[1] &&
	       a->has_scale == b->has_scale && a->shear_n == b->shear_n &&
	       memcmp(a->shear, b->shear, sizeof a->shear) == 0 &&
	       a->expand == b->expand && a->has_center == b->has_center &&
	       a->center[0] == b->center[0] && a->center[1] == b->center[1] &&
	       a->count == b->count && a->after_norm == b->after_norm &&
	       a->options == b->options &&
	       memcmp(a->option_layers, b->option_layers,
		      sizeof a->option_layers) == 0 &&
	       memcmp(a->weights, b->weights, sizeof a->weights) == 0 &&
	       a->erase_random == b->erase_random &&
	       a->deferred == b->deferred &&
	       memcmp(a->evalue, b->evalue, sizeof a->evalue) == 0 &&
	       a->mix_width == b->mix_width && a->mix_depth == b->mix_depth &&
	       a->all_ops == b->all_ops && a->has_fill == b->has_fill &&
	       a->alpha == b->alpha;
}

static char *canonical_text(const struct rfb_layer *layers, int n)
{
	struct out o = { NULL, 0, 0, 0 };

	/* the longest layer text (choice=n=16 with 16 long weights, affine
	 * with every argument) is < 400 */
	o.cap = 64 + (size_t)n * 400;
	o.buf = malloc(o.cap);
	if (!o.buf)
		return NULL;
	o.buf[0] = '\0';
	for (int i = 0; i < n;) {
		int run = 1;
		/* merged runs stay within what the parser takes back */
		if (layers[i].kind == RFB_F_RANDAUG)
			while (i + run < n && run < RFB_RANDAUG_MAX_N &&
			       layer_equal(&layers[i], &layers[i + run]))
				run++;
		if (i)
			put(&o, ",");
		put_layer(&o, &layers[i], run);
		i += run;
	}
	if (o.failed) {
		free(o.buf);
		return NULL;
	}
	return o.buf;
}

/* Build a pipeline owning a copy of layers[0..n) and its canonical text.
 * NULL with err filled on failure. */
static rfb_pipeline *from_layers(const struct rfb_layer *layers, int n,
				 rfb_err *err)
{
	rfb_pipeline *p = calloc(1, sizeof *p);

	if (!p)
		goto fail;
	p->nlayers = n;
	p->layers = calloc(n ? (size_t)n : 1, sizeof *p->layers);
	if (!p->layers)
		goto fail;
	if (n)
		memcpy(p->layers, layers, (size_t)n * sizeof *layers);
	p->canonical = canonical_text(layers, n);
	if (!p->canonical)
		goto fail;
	return p;
fail:
	rfb_pipeline_free(p);
	rfb_err_set(err, RFB_ENOMEM, NULL, "out of memory for a pipeline");
	return NULL;
}

int rfbi_pipeline_make(const struct rfb_layer *layers, int n,
		       rfb_pipeline **out, rfb_err *err)
{
	size_t len;

	if (!(*out = from_layers(layers, n, err)))
		return RFB_ENOMEM;
	len = strlen((*out)->canonical);
	if (len < RFB_PIPELINE_MAX_SPEC)
		return 0;
	rfb_pipeline_free(*out);
	*out = NULL;
	return rfb_err_set(err, RFB_ESPEC, NULL,
			   "bad pipeline spec: its canonical form would be "
			   "%zu bytes, more than %d", len,
			   RFB_PIPELINE_MAX_SPEC - 1);
}

void rfb_pipeline_free(rfb_pipeline *p)
{
	if (!p)
		return;
	free(p->layers);
	free(p->canonical);
	free(p);
}

const char *rfb_pipeline_canonical(const rfb_pipeline *p)
{
	return p->canonical;
}

int rfb_pipeline_layers(const rfb_pipeline *p)
{
	return p->nlayers;
}

int rfbi_pipeline_norm_at(const rfb_pipeline *p)
{
	for (int i = p->nlayers - 1; i >= 0; i--) {
		if (p->layers[i].kind == RFB_F_NORMALIZE)
			return i;
		if (!p->layers[i].after_norm)
			return -1;
	}
	return -1;
}

static int ends_in_normalize(const rfb_pipeline *p)
{
	return rfbi_pipeline_norm_at(p) >= 0;
}

enum rfb_dtype rfb_pipeline_dtype(const rfb_pipeline *p)
{
	return ends_in_normalize(p) ? RFB_DTYPE_F32 : RFB_DTYPE_U8;
}

enum rfb_layout rfb_pipeline_layout(const rfb_pipeline *p)
{
	return ends_in_normalize(p) ? RFB_LAYOUT_CHW : RFB_LAYOUT_HWC;
}

/* ---- split and join ---- */

int rfb_pipeline_split(const rfb_pipeline *p, int k, rfb_pipeline **head,
		       rfb_pipeline **tail, rfb_err *err)
{
	*head = *tail = NULL;
	if (k < 0 || k > p->nlayers)
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "split after layer %d of %d", k, p->nlayers);
	if (ends_in_normalize(p) && k > rfbi_pipeline_norm_at(p))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "normalize must stay in the final part");
	for (int i = 0; i < k; i++)
		if (p->layers[i].deferred)
			return rfb_err_set(err, RFB_EINVAL, NULL,
					   "erasing value=random (layer %d) must "
					   "stay with normalize in the final part",
					   i + 1);
	for (int i = 0; i < k; i++)
		if ((p->layers[i].kind == RFB_F_APPLY ||
		     p->layers[i].kind == RFB_F_CHOICE ||
		     p->layers[i].kind == RFB_F_ORDER) &&
		    i + p->layers[i].count >= k)
			return rfb_err_set(err, RFB_EINVAL, NULL,
					   "split after layer %d cuts %s (layer "
					   "%d) from the layers it gates", k,
					   rfbi_filter_names[p->layers[i].kind],
					   i + 1);
	*head = from_layers(p->layers, k, err);
	if (*head)
		*tail = from_layers(p->layers + k, p->nlayers - k, err);
	if (!*tail) {
		rfb_pipeline_free(*head);
		*head = NULL;
		return RFB_ENOMEM;
	}
	return 0;
}

int rfb_pipeline_join(const rfb_pipeline *a, const rfb_pipeline *b,
		      rfb_pipeline **out, rfb_err *err)
{
	struct rfb_layer layers[2 * RFB_PIPELINE_MAX_LAYERS];

	*out = NULL;
	if (ends_in_normalize(a) && b->nlayers > 0)
		return rfb_err_set(err, RFB_ESPEC, NULL,
				   "cannot join after normalize (it must be last)");
	if (a->nlayers + b->nlayers > RFB_PIPELINE_MAX_LAYERS)
		return rfb_err_set(err, RFB_ESPEC, NULL, "more than %d layers",
				   RFB_PIPELINE_MAX_LAYERS);
	memcpy(layers, a->layers, (size_t)a->nlayers * sizeof *layers);
	memcpy(layers + a->nlayers, b->layers, (size_t)b->nlayers * sizeof *layers);
	return rfbi_pipeline_make(layers, a->nlayers + b->nlayers, out, err);
}
