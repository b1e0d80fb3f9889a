/*
 * ops_geometry.c - ShearX/Y, TranslateX/Y and Rotate as torchvision 0.14
 * runs them on PIL 9.4 images.
 *
 * torchvision turns each op into an inverse affine matrix (in Python
 * doubles: _get_inverse_affine_matrix, or Image.rotate's own matrix with
 * its round(x, 15)), and PIL's Geometry.c resamples with it (ops_affine.c
 * reproduces that part).  This file computes the matrices, operation for
 * operation, and runs the ops on whole images or (NEAREST) on windows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "refurb/filters.h"

/* ---- Python's arithmetic, as torchvision and PIL's Python code use it ---- */

static double py_radians(double deg)
{
	return deg * (M_PI / 180.0); /* math.radians: x * degToRad */
}

static double py_degrees(double rad)
{
	return rad * (180.0 / M_PI); /* math.degrees: x * radToDeg */
}

/* Python's float modulo x % 360.0: the sign follows the divisor. */
static double py_mod360(double x)
{
	double m = fmod(x, 360.0);

	if (m == 0.0)
		return 0.0;
	return m < 0.0 ? m + 360.0 : m;
}

/* Python's round(x, 15): correctly rounded to 15 decimals, both ways. */
static double py_round15(double x)
{
	char text[64];

	snprintf(text, sizeof text, "%.15f", x);
	return strtod(text, NULL);
}

/*
 * torchvision's _get_inverse_affine_matrix(center, angle, translate,
 * scale=1.0, shear), operation for operation.
 */
static void tv_inverse_affine_scaled(const double center[2], double angle,
				     const double translate[2], double scale,
				     const double shear[2], double m[6])
{
	double rot = py_radians(angle);
	double sx = py_radians(shear[0]), sy = py_radians(shear[1]);
	double cx = center[0], cy = center[1];
	double tx = translate[0], ty = translate[1];
	double a = cos(rot - sy) / cos(sy);
	double b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
	double c = sin(rot - sy) / cos(sy);
	double d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);

	m[0] = d;
	m[1] = -b;
	m[2] = 0.0;
	m[3] = -c;
	m[4] = a;
	m[5] = 0.0;
	for (int i = 0; i < 6; i++)
		m[i] /= scale; /* [x / scale for x in matrix]: exact for 1.0 */
	m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
	m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
	m[2] += cx;
	m[5] += cy;
}

static void tv_inverse_affine(const double center[2], double angle,
			      const double translate[2], const double shear[2],
			      double m[6])
{
	tv_inverse_affine_scaled(center, angle, translate, 1.0, shear, m);
}

/* Image.rotate's matrix for angle (already % 360) about center (its
 * rotn_center; no post-translation). */
static void pil_rotate_matrix_at(const double center[2], double angle,
				 double m[6])
{
	double cx = center[0], cy = center[1];
	double rad = -py_radians(angle);
	double x = -cx, y = -cy;

	m[0] = py_round15(cos(rad));
	m[1] = py_round15(sin(rad));
	m[2] = 0.0;
	m[3] = py_round15(-sin(rad));
	m[4] = py_round15(cos(rad));
	m[5] = 0.0;
	m[2] = m[0] * x + m[1] * y + m[2];
	m[5] = m[3] * x + m[4] * y + m[5];
	m[2] += cx;
	m[5] += cy;
}

/* Image.rotate's matrix for angle (already % 360) about the centre. */
static void pil_rotate_matrix(int w, int h, double angle, double m[6])
{
	double center[2] = { w / 2.0, h / 2.0 };

	pil_rotate_matrix_at(center, angle, m);
}

/* ---- the ops ---- */

/* What a geometric op does to a w x h image: a copy, one of
 * Image.rotate's transposes, or PIL's affine transform by m. */
enum job_kind { JOB_COPY, JOB_ROTATE180, JOB_QUARTER, JOB_AFFINE };

struct job {
	enum job_kind kind;
	int quarter;  /* JOB_QUARTER: 1 (ROTATE_90) or 3 (ROTATE_270) */
	double m[6];  /* JOB_AFFINE */
};

static void shear_job(double shear_x, double shear_y, struct job *j)
{
	/* _apply_op: shear = degrees(atan(magnitude)), center = [0, 0] */
	double center[2] = { 0.0, 0.0 }, translate[2] = { 0.0, 0.0 };
	double shear[2] = { py_degrees(atan(shear_x)), py_degrees(atan(shear_y)) };

	*j = (struct job){ JOB_AFFINE, 0, { 0 } };
	tv_inverse_affine(center, 0.0, translate, shear, j->m);
}

static void translate_job(int w, int h, double tx, double ty, struct job *j)
{
	/* _apply_op passes int(magnitude); beyond the image every shift
	 * gives the same all-fill result, so clamp before converting */
	double lim = (double)(w > h ? w : h) + 1;
	double center[2] = { w * 0.5, h * 0.5 };
	double translate[2] = { trunc(fmax(-lim, fmin(lim, tx))),
				trunc(fmax(-lim, fmin(lim, ty))) };
	double shear[2] = { 0.0, 0.0 };

	*j = (struct job){ JOB_AFFINE, 0, { 0 } };
	tv_inverse_affine(center, 0.0, translate, shear, j->m);
}

static void rotate_job(int w, int h, double degrees, struct job *j)
{
	double angle = py_mod360(degrees);

	*j = (struct job){ JOB_AFFINE, 0, { 0 } };
	/* Image.rotate's shortcuts, whatever the filter */
	if (angle == 0.0) {
		j->kind = JOB_COPY;
	} else if (angle == 180.0) {
		j->kind = JOB_ROTATE180;
	} else if ((angle == 90.0 || angle == 270.0) && w == h) {
		j->kind = JOB_QUARTER;
		j->quarter = angle == 90.0 ? 1 : 3;
	} else {
		j->kind = JOB_AFFINE;
		pil_rotate_matrix(w, h, angle, j->m);
	}
}

static void run_job(const struct job *j, const rfb_image *src, rfb_image *dst,
		    enum rfb_interp interp, const unsigned char *fill)
{
	switch (j->kind) {
	case JOB_COPY: rfb_image_copy(dst, src); break;
	case JOB_ROTATE180: rfbi_ops_rotate180(src, dst); break;
	case JOB_QUARTER: rfbi_ops_quarter_turn(src, dst, j->quarter); break;
	case JOB_AFFINE: {
		struct rfb_place sp = { 0, 0, src->width, src->height };
		struct rfb_place dp = { 0, 0, dst->width, dst->height };
		rfbi_ops_affine(src, &sp, dst, &dp, j->m, interp, fill);
		break;
	}
	}
}

void rfbi_ops_shear(const rfb_image *src, rfb_image *dst, double shear_x,
		    double shear_y, enum rfb_interp interp,
		    const unsigned char *fill)
{
	struct job j;

	shear_job(shear_x, shear_y, &j);
	run_job(&j, src, dst, interp, fill);
}

void rfbi_ops_translate(const rfb_image *src, rfb_image *dst, double tx,
			double ty, enum rfb_interp interp,
			const unsigned char *fill)
{
	struct job j;

	translate_job(src->width, src->height, tx, ty, &j);
	run_job(&j, src, dst, interp, fill);
}

void rfbi_ops_rotate(const rfb_image *src, rfb_image *dst, double degrees,
		     enum rfb_interp interp, const unsigned char *fill)
{
	struct job j;

	rotate_job(src->width, src->height, degrees, &j);
	run_job(&j, src, dst, interp, fill);
}

void rfb_affine(const rfb_image *src, rfb_image *dst, double angle,
		const double translate[2], double scale, const double shear[2],
		const double *center, enum rfb_interp interp,
		const unsigned char *fill)
{
	/* F.affine's PIL branch: center [w * 0.5, h * 0.5] unless given */
	double mid[2] = { src->width * 0.5, src->height * 0.5 };
	struct job j = { JOB_AFFINE, 0, { 0 } };

	tv_inverse_affine_scaled(center ? center : mid, angle, translate, scale,
				 shear, j.m);
	run_job(&j, src, dst, interp, fill);
}

/*
 * Image.rotate(angle, expand, center) for a w x h image: the job, and the
 * output size (*nw, *nh).  Without center the shortcuts of rotate_job
 * (ROTATE_90/270 also for non-square images when expanding); with it, the
 * matrix about center; with expand, the size of the rotated corners'
 * bounding box (ceil of the largest minus floor of the smallest) and the
 * matrix moved to its middle.
 */
static void rotate_general(int w, int h, double degrees, int expand,
			   const double *center, struct job *j, int *nw, int *nh)
{
	double angle = py_mod360(degrees), mid[2] = { w / 2.0, h / 2.0 };
	double *m = j->m, xx[4], yy[4];
	const int corner[4][2] = { { 0, 0 }, { w, 0 }, { w, h }, { 0, h } };

	*nw = w;
	*nh = h;
	if (!center) {
		rotate_job(w, h, degrees, j);
		if (expand && (angle == 90.0 || angle == 270.0)) {
			j->kind = JOB_QUARTER;
			j->quarter = angle == 90.0 ? 1 : 3;
		}
		if (j->kind == JOB_QUARTER) {
			*nw = h;
			*nh = w;
		}
		if (j->kind != JOB_AFFINE || !expand)
			return;
	}
	*j = (struct job){ JOB_AFFINE, 0, { 0 } };
	pil_rotate_matrix_at(center ? center : mid, angle, m);
	if (!expand)
		return;
	for (int i = 0; i < 4; i++) {
		xx[i] = m[0] * corner[i][0] + m[1] * corner[i][1] + m[2];
		yy[i] = m[3] * corner[i][0] + m[4] * corner[i][1] + m[5];
	}
	*nw = (int)(ceil(fmax(fmax(xx[0], xx[1]), fmax(xx[2], xx[3]))) -
		    floor(fmin(fmin(xx[0], xx[1]), fmin(xx[2], xx[3]))));
	*nh = (int)(ceil(fmax(fmax(yy[0], yy[1]), fmax(yy[2], yy[3]))) -
		    floor(fmin(fmin(yy[0], yy[1]), fmin(yy[2], yy[3]))));
	double tx = -(*nw - w) / 2.0, ty = -(*nh - h) / 2.0;
	double c = m[0] * tx + m[1] * ty + m[2], f = m[3] * tx + m[4] * ty + m[5];
	m[2] = c;
	m[5] = f;
}

void rfb_rotate_size(int w, int h, double angle, int expand,
		     const double *center, int *nw, int *nh)
{
	struct job j;

	rotate_general(w, h, angle, expand, center, &j, nw, nh);
}

void rfb_rotate(const rfb_image *src, rfb_image *dst, double angle,
		int expand, const double *center, enum rfb_interp interp,
		const unsigned char *fill)
{
	struct job j;
	int nw, nh;

	rotate_general(src->width, src->height, angle, expand, center, &j, &nw,
		       &nh);
	run_job(&j, src, dst, interp, fill);
}

/* Solve the 8 x 8 system m x = b (Gaussian elimination, partial
 * pivoting); 0 if it is singular. */
static int solve8(double m[8][9], double x[8])
{
	for (int col = 0; col < 8; col++) {
		int best = col;
		for (int r = col + 1; r < 8; r++)
			if (fabs(m[r][col]) > fabs(m[best][col]))
				best = r;
		if (fabs(m[best][col]) < 1e-12)
			return 0;
		for (int k = 0; k < 9; k++) {
			double t = m[col][k];
			m[col][k] = m[best][k];
			m[best][k] = t;
		}
		for (int r = 0; r < 8; r++) {
			double f;
			if (r == col)
				continue;
			f = m[r][col] / m[col][col];
			for (int k = col; k < 9; k++)
				m[r][k] -= f * m[col][k];
		}
	}
	for (int i = 0; i < 8; i++)
		x[i] = m[i][8] / m[i][i];
	return 1;
}

int rfb_perspective(const rfb_image *src, rfb_image *dst,
		    const int start[4][2], const int end[4][2],
		    enum rfb_interp interp, const unsigned char *fill,
		    rfb_err *err)
{
	double m[8][9], a[8];

	/* _get_perspective_coeffs: maps the end points onto the start ones */
	for (int i = 0; i < 4; i++) {
		double ex = end[i][0], ey = end[i][1];
		double sx = start[i][0], sy = start[i][1];
		double r0[9] = { ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey, sx };
		double r1[9] = { 0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey, sy };
		memcpy(m[2 * i], r0, sizeof r0);
		memcpy(m[2 * i + 1], r1, sizeof r1);
	}
	if (!solve8(m, a))
		return rfb_err_set(err, RFB_EINVAL, NULL,
				   "perspective: degenerate corner points");
	for (int i = 0; i < 8; i++)
		a[i] = (float)a[i]; /* torch's float32 solution, res.tolist() */
	rfbi_ops_perspective(src, dst, a, interp, fill);
	return 0;
}

/* ---- windows ---- */

/* The job of a geometric op on a full_w x full_h image; 0 if the op can
 * not run on windows (filters other than NEAREST, transposes). */
static int window_job(enum rfb_op op, double magnitude, enum rfb_interp interp,
		      int full_w, int full_h, struct job *j)
{
	switch (op) {
	case RFB_OP_SHEAR_X: shear_job(magnitude, 0.0, j); break;
	case RFB_OP_SHEAR_Y: shear_job(0.0, magnitude, j); break;
	case RFB_OP_TRANSLATE_X: translate_job(full_w, full_h, magnitude, 0.0, j); break;
	case RFB_OP_TRANSLATE_Y: translate_job(full_w, full_h, 0.0, magnitude, j); break;
	case RFB_OP_ROTATE: rotate_job(full_w, full_h, magnitude, j); break;
	default: return 0;
	}
	if (j->kind == JOB_COPY)
		return 1;
	return j->kind == JOB_AFFINE && interp == RFB_INTERP_NEAREST;
}

int rfbi_ops_geometry_need(enum rfb_op op, double magnitude,
			   enum rfb_interp interp, int full_w, int full_h,
			   const struct rfb_rect *out, struct rfb_rect *need)
{
	struct job j;

	if (!window_job(op, magnitude, interp, full_w, full_h, &j))
		return 0;
	if (j.kind == JOB_COPY)
		*need = *out;
	else
		rfbi_ops_affine_need(j.m, full_w, full_h, out, need);
	return 1;
}

void rfbi_ops_geometry_window(enum rfb_op op, double magnitude,
			      enum rfb_interp interp, const unsigned char *fill,
			      const rfb_image *src, const struct rfb_place *sp,
			      rfb_image *dst, const struct rfb_place *dp)
{
	struct job j;

	if (!window_job(op, magnitude, interp, dp->full_w, dp->full_h, &j))
		return;
	if (j.kind == JOB_COPY) {
		rfb_image view = *src;
		view.data = rfb_image_px(src, dp->x - sp->x, dp->y - sp->y);
		view.width = dst->width;
		view.height = dst->height;
		rfb_image_copy(dst, &view);
		return;
	}
	rfbi_ops_affine(src, sp, dst, dp, j.m, interp, fill);
}
