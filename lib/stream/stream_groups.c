/*
 * stream_groups.c - the pixel data of a batch stream's samples and view
 * groups: the bytes of an image, a sample and a batch, where each view
 * group of a version 3 stream lies in a BATCH payload, the VIEW_GROUPS
 * frame that follows its HEADER (one encoder, one decoder) and the checks
 * of a group table (stream_frame.c's HEADER checks call these).  Layout in refurb-stream(5):
 *
 *   VIEW_GROUPS payload (P = Q = 8 + 16 G)
 *   0       4   u32  G, view groups (2 to 8)
 *   4       4   -    reserved, 0
 *   8+16g   4   u32  K_g, views of group g (at least 1)
 *   12+16g  4   u32  H_g, height of its images
 *   16+16g  4   u32  W_g, width of its images
 *   20+16g  4   -    reserved, 0
 *
 *   BATCH pixel data of n samples: group after group, each group's n K_g
 *   images (sample after sample, its K_g views together) followed by
 *   zero bytes up to a multiple of 64.
 */
#include <stdio.h>
#include <string.h>

#include "refurb/bytes.h"
#include "stream_internal.h"

static uint64_t round64(uint64_t n)
{
	return (n + RFB_STREAM_ALIGN - 1) & ~(uint64_t)(RFB_STREAM_ALIGN - 1);
}

size_t rfb_stream_image_bytes(const struct rfb_stream_info *info)
{
	return (size_t)info->height * info->width * info->channels *
	       (info->dtype == RFB_STREAM_F32 ? 4 : 1);
}

size_t rfb_stream_sample_bytes(const struct rfb_stream_info *info)
{
	size_t all = 0;

	if (info->groups < 2)
		return rfb_stream_image_bytes(info) *
		       (info->views > 1 ? info->views : 1);
	for (uint32_t g = 0; g < info->groups && g < RFB_STREAM_MAX_GROUPS; g++)
		all += rfb_stream_group_bytes(info, g);
	return all;
}

uint64_t rfbi_stream_batch_max_payload(const struct rfb_stream_info *info)
{
	uint64_t all = rfb_stream_pixel_bytes(info, info->batch_size);

	if (all == UINT64_MAX ||
	    __builtin_add_overflow(all, stream_pixel_offset(info->batch_size),
				   &all))
		return UINT64_MAX;
	return all;
}

size_t rfb_stream_group_bytes(const struct rfb_stream_info *info, uint32_t g)
{
	if (info->groups < 2)
		return rfb_stream_sample_bytes(info);
	if (g >= info->groups || g >= RFB_STREAM_MAX_GROUPS)
		return 0;  /* no such group (a table not yet checked) */
	return (size_t)info->group[g].views * info->group[g].height *
	       info->group[g].width * info->channels *
	       (info->dtype == RFB_STREAM_F32 ? 4 : 1);
}

uint64_t rfb_stream_group_offset(const struct rfb_stream_info *info,
				 uint64_t n, uint32_t g)
{
	uint64_t off = 0, block;

	for (uint32_t i = 0; i < g && i < info->groups &&
	     i < RFB_STREAM_MAX_GROUPS; i++) {
		if (__builtin_mul_overflow(n, (uint64_t)rfb_stream_group_bytes(info, i),
					   &block) ||
		    block > UINT64_MAX - 64 ||
		    __builtin_add_overflow(off, round64(block), &off))
			return UINT64_MAX;
	}
	return off;
}

uint64_t rfb_stream_pixel_bytes(const struct rfb_stream_info *info, uint64_t n)
{
	uint64_t all;

	if (info->groups < 2)
		return __builtin_mul_overflow(n, (uint64_t)rfb_stream_sample_bytes(info),
					      &all) ? UINT64_MAX : all;
	return rfb_stream_group_offset(info, n, info->groups);
}

int rfbi_stream_groups_check(const struct rfb_stream_info *in,
			     const struct rfb_stream_limits *lim, int code,
			     const char *name, const char *where, rfb_err *err)
{
	uint32_t views = 0;

	if (in->groups < 2)
		return 0;
	if (in->groups > RFB_STREAM_MAX_GROUPS)
		return rfb_err_set(err, code, name, "%s%u view groups (2 to %d)",
				   where, in->groups, RFB_STREAM_MAX_GROUPS);
	for (uint32_t g = 0; g < in->groups; g++) {
		const struct rfb_stream_group *x = &in->group[g];
		if (!x->views || !x->height || !x->width)
			return rfb_err_set(err, code, name, "%sview group %u has "
					   "%u views of %ux%u (none may be 0)",
					   where, g, x->views, x->height, x->width);
		if (x->height > lim->max_side || x->width > lim->max_side ||
		    (uint64_t)x->height * x->width > lim->max_pixels)
			return rfb_err_set(err, RFB_ELIMIT, name, "%sview group "
					   "%u's images of %ux%u exceed the limit",
					   where, g, x->width, x->height);
		views += x->views > RFB_STREAM_MAX_VIEWS ? RFB_STREAM_MAX_VIEWS + 1
							 : x->views;
	}
	if (views != in->views)
		return rfb_err_set(err, code, name, "%sview groups of %u views "
				   "in all, the HEADER says %u", where, views,
				   in->views);
	if (in->group[0].height != in->height || in->group[0].width != in->width)
		return rfb_err_set(err, code, name, "%sview group 0 of %ux%u, "
				   "the HEADER says %ux%u", where,
				   in->group[0].height, in->group[0].width,
				   in->height, in->width);
	if (rfbi_stream_batch_max_payload(in) > lim->max_payload)
		return rfb_err_set(err, RFB_ELIMIT, name, "%sa batch of %u "
				   "samples would exceed the frame limit of "
				   "%llu bytes", where, in->batch_size,
				   (unsigned long long)lim->max_payload);
	return 0;
}

size_t rfbi_stream_groups_size(const struct rfb_stream_info *info)
{
	return 8 + 16 * (size_t)info->groups;
}

void rfbi_stream_groups_encode(const struct rfb_stream_info *info,
			       unsigned char *out)
{
	memset(out, 0, rfbi_stream_groups_size(info));
	rfb_put_le32(out, info->groups);
	for (uint32_t g = 0; g < info->groups; g++) {
		rfb_put_le32(out + 8 + 16 * g, info->group[g].views);
		rfb_put_le32(out + 12 + 16 * g, info->group[g].height);
		rfb_put_le32(out + 16 + 16 * g, info->group[g].width);
	}
}

int rfbi_stream_groups_decode(const unsigned char *p, uint64_t len,
			      struct rfb_stream_info *info,
			      const struct rfb_stream_limits *lim,
			      const char *name, const char *where, rfb_err *err)
{
	uint32_t groups = len >= 8 ? rfb_get_le32(p) : 0;

	if (len < 8 || groups < 2 || groups > RFB_STREAM_MAX_GROUPS ||
	    len != 8 + 16 * (uint64_t)groups)
		return rfb_err_set(err, RFB_EFORMAT, name, "%sVIEW_GROUPS frame "
				   "of %llu bytes for %u groups (2 to %d, 8 + 16 "
				   "bytes each)", where, (unsigned long long)len,
				   groups, RFB_STREAM_MAX_GROUPS);
	info->groups = groups;
	for (uint32_t g = 0; g < groups; g++) {
		info->group[g].views = rfb_get_le32(p + 8 + 16 * g);
		info->group[g].height = rfb_get_le32(p + 12 + 16 * g);
		info->group[g].width = rfb_get_le32(p + 16 + 16 * g);
	}
	return rfbi_stream_groups_check(info, lim, RFB_EFORMAT, name, where, err);
}
