/*
 * transform_internal.h - what transform.c and transform_ssse3.c share:
 * the mirrored row copy and swap and the gray to RGB row expansion,
 * whose scalar versions in transform.c are the reference for the SSSE3
 * ones.
 */
#ifndef REFURB_TRANSFORM_INTERNAL_H
#define REFURB_TRANSFORM_INTERNAL_H

/* 1 if the CPU runs the SSSE3 kernels (always 0 off x86-64). */
int rfbi_transform_have_ssse3(void);

/* out[x] = in[w - 1 - x] for the w pixels (ch = 1 or 3) of a row; in and
 * out do not overlap.  Returns the number of leading output pixels done
 * (the caller does the rest); the SSSE3 one reads and writes only inside
 * the two rows. */
int rfbi_flip_row_ssse3(const unsigned char *in, unsigned char *out, int w,
			int ch);

/* Swap pixels a and w - 1 - a of a row in place, for a = 0 .. done - 1;
 * returns done (at most w / 2). */
int rfbi_flip_inplace_ssse3(unsigned char *row, int w, int ch);

/* out[3x] = out[3x + 1] = out[3x + 2] = in[x] for a prefix of the w
 * pixels of a gray row; returns how many were done. */
int rfbi_gray_to_rgb_ssse3(const unsigned char *in, unsigned char *out, int w);

#endif
