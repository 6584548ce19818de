/* The Black-Scholes OpenCL kernel (see bs.h): one work-item an option, the
 * same formula as the CPU kernel, in OpenCL C. A block is priced in up to
 * two chunks on the PU's two queues, so that one chunk's copies overlap
 * the other's kernel; device buffers grow with the largest block seen. */
#include "kernels/bs/bs.h"
#include "kernels/opencl_util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char source[] =
	"#ifdef PLB_F64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
	"typedef double REAL;\n#else\ntypedef float REAL;\n#endif\n"
	"REAL cnd(REAL d)\n"
	"{\n"
	"	REAL k = (REAL)1 / ((REAL)1 + (REAL)" STR(PLB__BS_P) " * fabs(d));\n"
	"	REAL c = (REAL)" STR(PLB__BS_RSQRT2PI) " * exp((REAL)-0.5 * d * d) *\n"
	"		 (k * ((REAL)0.31938153 + k * ((REAL)-0.356563782 + k * ((REAL)1.781477937 +\n"
	"		  k * ((REAL)-1.821255978 + k * (REAL)1.330274429)))));\n"
	"	return d > 0 ? (REAL)1 - c : c;\n"
	"}\n"
	"__kernel void price(__global const REAL *in, __global REAL *out, const uint n)\n"
	"{\n"
	"	uint i = get_global_id(0);\n"
	"	if (i >= n)\n"
	"		return;\n"
	"	REAL S = in[5 * i], K = in[5 * i + 1], t = in[5 * i + 2], r = in[5 * i + 3], v = in[5 * i + 4];\n"
	"	REAL sq = v * sqrt(t);\n"
	"	REAL d1 = (log(S / K) + (r + (REAL)0.5 * v * v) * t) / sq;\n"
	"	REAL d2 = d1 - sq;\n"
	"	REAL c1 = cnd(d1), c2 = cnd(d2);\n"
	"	REAL ke = K * exp(-r * t);\n"
	"	out[2 * i] = S * c1 - ke * c2;\n"
	"	out[2 * i + 1] = ke * ((REAL)1 - c2) - S * ((REAL)1 - c1);\n"
	"}\n";

/* a block is cut in two chunks from this many options up */
#define CHUNK_MIN 16384
#define GROUP 64

struct plb__bs_cl {
	struct plb__cl cl;      /* its err says what failed */
	enum plb__bs_prec prec;
	cl_program prog;
	cl_kernel k;
	cl_mem din[2], dout[2];
	size_t cap;             /* options each chunk's buffers hold */
	struct plb__phase_times last;
};

int plb__bs_cl_create(void *ctx, void *dev, enum plb__bs_prec prec, struct plb__bs_cl **out,
		      char *errbuf, size_t errlen)
{
	struct plb__bs_cl *c = calloc(1, sizeof *c);
	*out = NULL;
	if (!c)
		return PLB_ENOMEM;
	c->prec = prec;
	int rc = plb__cl_open(&c->cl, ctx, dev);
	if (!rc && prec == PLB__BS_F64)
		rc = plb__cl_need_fp64(&c->cl, "plb-bs in double precision");
	if (!rc)
		rc = plb__cl_program(&c->cl, source, prec == PLB__BS_F64 ? "-DPLB_F64" : "", &c->prog);
	if (!rc) {
		cl_int e_;
		c->k = clCreateKernel(c->prog, "price", &e_);
		if (!c->k)
			rc = plb__cl_fail(c->cl.err, sizeof c->cl.err, __FILE__, __LINE__, "clCreateKernel", e_);
	}
	if (rc) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", c->cl.err);
		plb__bs_cl_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void release(struct plb__bs_cl *c)
{
	for (int i = 0; i < 2; i++) {
		if (c->din[i])
			clReleaseMemObject(c->din[i]);
		if (c->dout[i])
			clReleaseMemObject(c->dout[i]);
		c->din[i] = c->dout[i] = NULL;
	}
	c->cap = 0;
}

/* Device buffers for chunks of n options. */
static int reserve(struct plb__bs_cl *c, size_t n)
{
	if (n <= c->cap)
		return 0;
	release(c);
	for (int i = 0; i < 2; i++) {
		PLB__CL_MAKE(&c->cl, c->din[i], clCreateBuffer(c->cl.ctx, CL_MEM_READ_ONLY,
							  n * plb__bs_in_unit(c->prec), NULL, &e_));
		PLB__CL_MAKE(&c->cl, c->dout[i], clCreateBuffer(c->cl.ctx, CL_MEM_WRITE_ONLY,
							   n * plb__bs_out_unit(c->prec), NULL, &e_));
	}
	c->cap = n;
	return 0;
}

int plb__bs_cl_run(struct plb__bs_cl *c, const void *in, void *out, size_t n)
{
	c->last = (struct plb__phase_times){0, 0, 0};
	if (!n)
		return 0;
	if (!in || !out || n > UINT32_MAX / 8)
		return PLB_EINVAL;
	int chunks = n >= CHUNK_MIN ? 2 : 1;
	size_t per = (n + (size_t)chunks - 1) / (size_t)chunks, iu = plb__bs_in_unit(c->prec),
	       ou = plb__bs_out_unit(c->prec);
	int rc = reserve(c, per);
	if (rc)
		return rc;
	cl_event ev[2][3] = {{0}};
	for (int i = 0; i < chunks; i++) {
		size_t at = (size_t)i * per, len = at + per <= n ? per : n - at;
		cl_uint m = (cl_uint)len;
		size_t global = (len + GROUP - 1) / GROUP * GROUP;
		cl_command_queue q = c->cl.q[i];
		PLB__CL_CHECK(&c->cl, clEnqueueWriteBuffer(q, c->din[i], CL_FALSE, 0, len * iu,
						      (const char *)in + at * iu, 0, NULL, &ev[i][0]));
		PLB__CL_CHECK(&c->cl, clSetKernelArg(c->k, 0, sizeof(cl_mem), &c->din[i]));
		PLB__CL_CHECK(&c->cl, clSetKernelArg(c->k, 1, sizeof(cl_mem), &c->dout[i]));
		PLB__CL_CHECK(&c->cl, clSetKernelArg(c->k, 2, sizeof m, &m));
		PLB__CL_CHECK(&c->cl, clEnqueueNDRangeKernel(q, c->k, 1, NULL, &global, NULL, 0, NULL,
							&ev[i][1]));
		PLB__CL_CHECK(&c->cl, clEnqueueReadBuffer(q, c->dout[i], CL_FALSE, 0, len * ou,
						     (char *)out + at * ou, 0, NULL, &ev[i][2]));
		PLB__CL_CHECK(&c->cl, clFlush(q));
	}
	for (int i = 0; i < chunks; i++) {
		PLB__CL_CHECK(&c->cl, clFinish(c->cl.q[i]));
		plb__cl_phases_add(ev[i], &c->last);
	}
	return 0;
}

void plb__bs_cl_times(const struct plb__bs_cl *c, struct plb__phase_times *t)
{
	*t = c->last;
}

void plb__bs_cl_destroy(struct plb__bs_cl *c)
{
	if (!c)
		return;
	release(c);
	if (c->k)
		clReleaseKernel(c->k);
	if (c->prog)
		clReleaseProgram(c->prog);
	plb__cl_close(&c->cl);
	free(c);
}
