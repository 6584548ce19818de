/* plb-nuclei's operations on an OpenCL device: the regular ones (RGB to
 * grey, colour deconvolution, the opening, Sobel) and the irregular ones
 * that a device iterates to a fixed point (morphological reconstruction,
 * fill holes). Each gives the CPU operation's output to the bit (the
 * reconstruction and the flood have one fixed point whatever the order
 * of the steps; the arithmetic is the CPU's, without contraction, and
 * the square root correctly rounded). A task copies its inputs from the
 * tile's scratch in host memory and its output back, and reports the
 * copies' time (plb_report_copies). Labelling, the area threshold, the
 * distance transform, Otsu's threshold and the features stay on CPUs. */
#include <math.h>

#include "kernels/nuclei/nuclei.h"
#include "kernels/opencl_util.h"

/* OpenCV's RGB to grey for 8 bits: 0.299, 0.587 and 0.114 in 15-bit fixed
 * point, rounded. */
static const char source[] =
	"#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
	"#pragma OPENCL FP_CONTRACT OFF\n"
	"__kernel void gray(__global const uchar *rgb, __global uchar *g, const int n)\n"
	"{\n"
	"	int i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		g[i] = (uchar)((rgb[3 * i] * 9798 + rgb[3 * i + 1] * 19235 + rgb[3 * i + 2] * 3735 +\n"
	"				(1 << 14)) >> 15);\n"
	"}\n"
	"__kernel void deconv(__global const uchar *rgb, __global uchar *h, __constant double *lut,\n"
	"		     const double i0, const double i1, const double i2, const int n)\n"
	"{\n"
	"	int i = get_global_id(0);\n"
	"	if (i >= n)\n"
	"		return;\n"
	"	double c = 0;\n"
	"	c += lut[rgb[3 * i]] * i0;\n"
	"	c += lut[rgb[3 * i + 1]] * i1;\n"
	"	c += lut[rgb[3 * i + 2]] * i2;\n"
	"	double v = c * 200;\n"
	"	h[i] = (uchar)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);\n"
	"}\n"
	/* the 3 x 3 disc of radius 1 (a cross); outside the tile counts as
	 * nothing (OpenCV's default border for morphology) */
	"__kernel void morph3(__global const uchar *s, __global uchar *d, const int T, const int dil)\n"
	"{\n"
	"	int x = get_global_id(0), y = get_global_id(1);\n"
	"	if (x >= T || y >= T)\n"
	"		return;\n"
	"	int i = y * T + x;\n"
	"	uchar v = s[i];\n"
	"	if (x > 0) v = dil ? max(v, s[i - 1]) : min(v, s[i - 1]);\n"
	"	if (x < T - 1) v = dil ? max(v, s[i + 1]) : min(v, s[i + 1]);\n"
	"	if (y > 0) v = dil ? max(v, s[i - T]) : min(v, s[i - T]);\n"
	"	if (y < T - 1) v = dil ? max(v, s[i + T]) : min(v, s[i + T]);\n"
	"	d[i] = v;\n"
	"}\n"
	"__kernel void clip(__global const uchar *a, __global const uchar *m, __global uchar *d, const int n)\n"
	"{\n"
	"	int i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		d[i] = min(a[i], m[i]);\n"
	"}\n"
	/* one step of the reconstruction: a 3 x 3 dilation cut to the mask */
	"__kernel void recon(__global const uchar *s, __global uchar *d, __global const uchar *m,\n"
	"		    __global int *changed, const int T)\n"
	"{\n"
	"	int x = get_global_id(0), y = get_global_id(1);\n"
	"	if (x >= T || y >= T)\n"
	"		return;\n"
	"	uchar v = 0;\n"
	"	for (int dy = -1; dy <= 1; dy++)\n"
	"		for (int dx = -1; dx <= 1; dx++) {\n"
	"			int xx = x + dx, yy = y + dy;\n"
	"			if (xx >= 0 && xx < T && yy >= 0 && yy < T)\n"
	"				v = max(v, s[yy * T + xx]);\n"
	"		}\n"
	"	int i = y * T + x;\n"
	"	v = min(v, m[i]);\n"
	"	d[i] = v;\n"
	"	if (v != s[i])\n"
	"		*changed = 1;\n"
	"}\n"
	/* the flood over the background from the tile's edge, 4-connected;
	 * reach only grows, so steps may read each other's writes */
	"__kernel void flood(__global const uchar *m, __global uchar *r, __global int *changed, const int T)\n"
	"{\n"
	"	int x = get_global_id(0), y = get_global_id(1);\n"
	"	if (x >= T || y >= T)\n"
	"		return;\n"
	"	int i = y * T + x;\n"
	"	if (r[i] || m[i])\n"
	"		return;\n"
	"	if (x == 0 || y == 0 || x == T - 1 || y == T - 1 || r[i - 1] || r[i + 1] || r[i - T] ||\n"
	"	    r[i + T]) {\n"
	"		r[i] = 1;\n"
	"		*changed = 1;\n"
	"	}\n"
	"}\n"
	"__kernel void holes(__global uchar *m, __global const uchar *r, const int n)\n"
	"{\n"
	"	int i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		m[i] = m[i] | (r[i] ? 0 : 255);\n"
	"}\n"
	/* Sobel's 3 x 3 derivatives with the border reflected (OpenCV's
	 * default: -1 reads 1), then the magnitude */
	"int rf(int k, int T) { return k < 0 ? -k : k >= T ? 2 * T - 2 - k : k; }\n"
	"__kernel void sobel(__global const uchar *g, __global float *out, const int T)\n"
	"{\n"
	"	int x = get_global_id(0), y = get_global_id(1);\n"
	"	if (x >= T || y >= T)\n"
	"		return;\n"
	"	int xm = rf(x - 1, T), xp = rf(x + 1, T), ym = rf(y - 1, T), yp = rf(y + 1, T);\n"
	"	int gx = (g[ym * T + xp] - g[ym * T + xm]) + 2 * (g[y * T + xp] - g[y * T + xm]) +\n"
	"		 (g[yp * T + xp] - g[yp * T + xm]);\n"
	"	int gy = (g[yp * T + xm] - g[ym * T + xm]) + 2 * (g[yp * T + x] - g[ym * T + x]) +\n"
	"		 (g[yp * T + xp] - g[ym * T + xp]);\n"
	"	float fx = (float)gx, fy = (float)gy;\n"
	"	out[y * T + x] = sqrt(fx * fx + fy * fy);\n"
	"}\n";

enum { K_GRAY, K_DECONV, K_CROSS, K_CLIP, K_RECON, K_FLOOD, K_HOLES, K_SOBEL, NK };
static const char *const knames[NK] = {"gray", "deconv", "morph3", "clip", "recon",
				       "flood", "holes", "sobel"};

struct nuclei_cl {
	struct plb__cl c;       /* its err[] says the last failure */
	int T;
	cl_program prog;
	cl_kernel k[NK];
	cl_mem rgb, a, b, m, f, flag, lut;
	double inv0[3];
	double copy_s;          /* this task's copies so far, s */
};

void nuclei_cl_destroy(struct nuclei_cl *d)
{
	if (!d)
		return;
	cl_mem *mem[] = {&d->rgb, &d->a, &d->b, &d->m, &d->f, &d->flag, &d->lut};
	for (size_t i = 0; i < sizeof mem / sizeof *mem; i++)
		if (*mem[i])
			clReleaseMemObject(*mem[i]);
	for (int i = 0; i < NK; i++)
		if (d->k[i])
			clReleaseKernel(d->k[i]);
	if (d->prog)
		clReleaseProgram(d->prog);
	plb__cl_close(&d->c);
	free(d);
}

static int make(struct nuclei_cl *d, void *ctx, void *dev, int T)
{
	struct plb__cl *c = &d->c;
	size_t px = (size_t)T * (size_t)T;
	double lut[256];
	int rc;
	if ((rc = plb__cl_open(c, ctx, dev)) || (rc = plb__cl_need_fp64(c, "plb-nuclei's colour deconvolution")) ||
	    (rc = plb__cl_program(c, source, "-cl-fp32-correctly-rounded-divide-sqrt", &d->prog)))
		return rc;
	for (int i = 0; i < NK; i++)
		PLB__CL_MAKE(c, d->k[i], clCreateKernel(d->prog, knames[i], &e_));
	PLB__CL_MAKE(c, d->rgb, clCreateBuffer(ctx, CL_MEM_READ_ONLY, px * 3, NULL, &e_));
	PLB__CL_MAKE(c, d->a, clCreateBuffer(ctx, CL_MEM_READ_WRITE, px, NULL, &e_));
	PLB__CL_MAKE(c, d->b, clCreateBuffer(ctx, CL_MEM_READ_WRITE, px, NULL, &e_));
	PLB__CL_MAKE(c, d->m, clCreateBuffer(ctx, CL_MEM_READ_WRITE, px, NULL, &e_));
	PLB__CL_MAKE(c, d->f, clCreateBuffer(ctx, CL_MEM_READ_WRITE, px * sizeof(float), NULL, &e_));
	PLB__CL_MAKE(c, d->flag, clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &e_));
	nuclei_deconv_coeffs(d->inv0, lut);
	PLB__CL_MAKE(c, d->lut, clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof lut,
					       lut, &e_));
	return 0;
}

int nuclei_cl_create(void *ctx, void *dev, int T, struct nuclei_cl **out, char *err, size_t len)
{
	struct nuclei_cl *d = calloc(1, sizeof *d);
	*out = NULL;
	if (!d) {
		snprintf(err, len, "out of memory");
		return PLB_ENOMEM;
	}
	d->T = T;
	int rc = make(d, ctx, dev, T);
	if (rc) {
		snprintf(err, len, "%s", d->c.err);
		nuclei_cl_destroy(d);
		return rc;
	}
	*out = d;
	return 0;
}

/* ---- a task ------------------------------------------------------------ */

static int put(struct nuclei_cl *d, cl_mem to, const void *from, size_t n)
{
	cl_event e;
	PLB__CL_CHECK(&d->c, clEnqueueWriteBuffer(d->c.q[0], to, CL_TRUE, 0, n, from, 0, NULL, &e));
	d->copy_s += plb__cl_span(e);
	clReleaseEvent(e);
	return 0;
}

static int get(struct nuclei_cl *d, void *to, cl_mem from, size_t n)
{
	cl_event e;
	PLB__CL_CHECK(&d->c, clEnqueueReadBuffer(d->c.q[0], from, CL_TRUE, 0, n, to, 0, NULL, &e));
	d->copy_s += plb__cl_span(e);
	clReleaseEvent(e);
	return 0;
}

/* Kernel k over the tile (two dimensions) or its pixels (one), with its
 * arguments set by the caller. */
static int launch(struct nuclei_cl *d, int k, int two)
{
	size_t T = (size_t)d->T, g1 = T * T, g2[2] = {T, T};
	PLB__CL_CHECK(&d->c, clEnqueueNDRangeKernel(d->c.q[0], d->k[k], two ? 2 : 1, NULL,
						    two ? g2 : &g1, NULL, 0, NULL, NULL));
	return 0;
}

#define ARG(d, kk, i, v) PLB__CL_CHECK(&(d)->c, clSetKernelArg((d)->k[kk], i, sizeof(v), &(v)))

/* Steps of kernel k (arguments set, its flag its changed) until one
 * changes nothing. */
static int fixed_point(struct nuclei_cl *d, int k, int swap)
{
	cl_int zero = 0, changed = 1;
	cl_mem s = d->a, t = d->b;
	for (int step = 0; changed && step < 4 * d->T + 4; step++) {
		PLB__CL_CHECK(&d->c, clEnqueueWriteBuffer(d->c.q[0], d->flag, CL_FALSE, 0, sizeof zero,
							  &zero, 0, NULL, NULL));
		if (swap) {
			ARG(d, k, 0, s);
			ARG(d, k, 1, t);
		}
		int rc = launch(d, k, 1);
		if (rc)
			return rc;
		PLB__CL_CHECK(&d->c, clEnqueueReadBuffer(d->c.q[0], d->flag, CL_TRUE, 0, sizeof changed,
							 &changed, 0, NULL, NULL));
		cl_mem x = s;
		s = t;
		t = x;
	}
	/* the last written is in s: make it a's */
	if (swap && s != d->a)
		PLB__CL_CHECK(&d->c, clEnqueueCopyBuffer(d->c.q[0], s, d->a, 0, 0, (size_t)d->T * (size_t)d->T,
							 0, NULL, NULL));
	return 0;
}

int nuclei_cl_run(struct nuclei_cl *d, int op, const struct nuclei_params *pa,
		  const struct plb_block *b)
{
	struct nuclei_scratch s;
	int T = d->T, n = T * T, rc = 0, one = 1;
	size_t px = (size_t)n;
	if (!b->scratch)
		return PLB_EINVAL;
	nuclei_scratch_at(b->scratch, T, &s);
	d->copy_s = 0;
	switch (op) {
	case NUCLEI_GRAY:
		ARG(d, K_GRAY, 0, d->rgb);
		ARG(d, K_GRAY, 1, d->a);
		ARG(d, K_GRAY, 2, n);
		if (!(rc = put(d, d->rgb, b->in, px * 3)) && !(rc = launch(d, K_GRAY, 0)))
			rc = get(d, s.gray, d->a, px);
		break;
	case NUCLEI_DECONV:
		ARG(d, K_DECONV, 0, d->rgb);
		ARG(d, K_DECONV, 1, d->a);
		ARG(d, K_DECONV, 2, d->lut);
		ARG(d, K_DECONV, 3, d->inv0[0]);
		ARG(d, K_DECONV, 4, d->inv0[1]);
		ARG(d, K_DECONV, 5, d->inv0[2]);
		ARG(d, K_DECONV, 6, n);
		if (!(rc = put(d, d->rgb, b->in, px * 3)) && !(rc = launch(d, K_DECONV, 0)))
			rc = get(d, s.h, d->a, px);
		break;
	case NUCLEI_OPEN: {
		/* the CPU's disc of radius open_r: 1 only here (a cross) */
		int zero = 0;
		if (pa->open_r != 1) {
			snprintf(d->c.err, sizeof d->c.err, "the device's opening takes a disc of radius 1 only (open_r %d)",
				 pa->open_r);
			return PLB_EINVAL;
		}
		ARG(d, K_CROSS, 2, T);
		ARG(d, K_CROSS, 0, d->a);
		ARG(d, K_CROSS, 1, d->b);
		ARG(d, K_CROSS, 3, zero);
		if ((rc = put(d, d->a, s.h, px)) || (rc = launch(d, K_CROSS, 1)))
			break;
		ARG(d, K_CROSS, 0, d->b);
		ARG(d, K_CROSS, 1, d->a);
		ARG(d, K_CROSS, 3, one);
		if (!(rc = launch(d, K_CROSS, 1)))
			rc = get(d, s.marker, d->a, px);
		break;
	}
	case NUCLEI_RECON:
		ARG(d, K_CLIP, 0, d->b);
		ARG(d, K_CLIP, 1, d->m);
		ARG(d, K_CLIP, 2, d->a);
		ARG(d, K_CLIP, 3, n);
		ARG(d, K_RECON, 2, d->m);
		ARG(d, K_RECON, 3, d->flag);
		ARG(d, K_RECON, 4, T);
		if ((rc = put(d, d->b, s.marker, px)) || (rc = put(d, d->m, s.h, px)) ||
		    (rc = launch(d, K_CLIP, 0)) || (rc = fixed_point(d, K_RECON, 1)))
			break;
		rc = get(d, s.recon, d->a, px);
		break;
	case NUCLEI_FILL: {
		cl_uchar zero = 0;
		ARG(d, K_FLOOD, 0, d->m);
		ARG(d, K_FLOOD, 1, d->a);
		ARG(d, K_FLOOD, 2, d->flag);
		ARG(d, K_FLOOD, 3, T);
		ARG(d, K_HOLES, 0, d->m);
		ARG(d, K_HOLES, 1, d->a);
		ARG(d, K_HOLES, 2, n);
		if ((rc = put(d, d->m, s.mask, px)))
			break;
		PLB__CL_CHECK(&d->c, clEnqueueFillBuffer(d->c.q[0], d->a, &zero, 1, 0, px, 0, NULL, NULL));
		if ((rc = fixed_point(d, K_FLOOD, 0)) || (rc = launch(d, K_HOLES, 0)))
			break;
		rc = get(d, s.mask, d->m, px);
		break;
	}
	case NUCLEI_SOBEL:
		ARG(d, K_SOBEL, 0, d->a);
		ARG(d, K_SOBEL, 1, d->f);
		ARG(d, K_SOBEL, 2, T);
		if (!(rc = put(d, d->a, s.gray, px)) && !(rc = launch(d, K_SOBEL, 1)))
			rc = get(d, s.grad, d->f, px * sizeof(float));
		break;
	default:
		return PLB_EINVAL;
	}
	if (!rc)
		plb_report_copies(b, d->copy_s);
	return rc;
}
