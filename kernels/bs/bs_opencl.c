/* The Black-Scholes OpenCL kernel (see bs.h): one work-item an option, the
 * same formula as the CPU kernel, in OpenCL C. Options drawn from a seed
 * are drawn on the device (plb__bs_draw's generator, to the bit) where it
 * has doubles, so that only prices cross the bus. A block is priced in up
 * to two chunks on the PU's two queues, so that one chunk's copies
 * overlap the other's kernel; device buffers grow with the largest block
 * seen. */
#include "kernels/bs/bs.h"
#include "kernels/opencl_util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char source[] =
	"#if defined(PLB_F64) || defined(PLB_DRAW)\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"
	"#ifdef PLB_F64\ntypedef double REAL;\n#else\ntypedef float REAL;\n#endif\n"
	"REAL cnd(REAL d)\n"
	"{\n"
	"	REAL k = (REAL)1 / ((REAL)1 + (REAL)" STR(PLB__BS_P) " * fabs(d));\n"
	"	REAL c = (REAL)" STR(PLB__BS_RSQRT2PI) " * exp((REAL)-0.5 * d * d) *\n"
	"		 (k * ((REAL)0.31938153 + k * ((REAL)-0.356563782 + k * ((REAL)1.781477937 +\n"
	"		  k * ((REAL)-1.821255978 + k * (REAL)1.330274429)))));\n"
	"	return d > 0 ? (REAL)1 - c : c;\n"
	"}\n"
	"void price1(REAL S, REAL K, REAL t, REAL r, REAL v, __global REAL *out)\n"
	"{\n"
	"	REAL sq = v * sqrt(t);\n"
	"	REAL d1 = (log(S / K) + (r + (REAL)0.5 * v * v) * t) / sq;\n"
	"	REAL d2 = d1 - sq;\n"
	"	REAL c1 = cnd(d1), c2 = cnd(d2);\n"
	"	REAL ke = K * exp(-r * t);\n"
	"	out[0] = S * c1 - ke * c2;\n"
	"	out[1] = ke * ((REAL)1 - c2) - S * ((REAL)1 - c1);\n"
	"}\n"
	"__kernel void price(__global const REAL *in, __global REAL *out, const uint n)\n"
	"{\n"
	"	uint i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		price1(in[5 * i], in[5 * i + 1], in[5 * i + 2], in[5 * i + 3], in[5 * i + 4], out + 2 * i);\n"
	"}\n"
	/* plb__bs_draw's options, to the bit: splitmix64, and lo + (hi - lo) u
	 * in double without contraction */
	"#ifdef PLB_DRAW\n"
	"ulong mix64(ulong z)\n"
	"{\n"
	"	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;\n"
	"	z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;\n"
	"	return z ^ (z >> 31);\n"
	"}\n"
	"REAL drawn(ulong z, int k, double lo, double hi)\n"
	"{\n"
	"#pragma OPENCL FP_CONTRACT OFF\n"
	"	double u = (double)(mix64(z + (ulong)k * 0x9E3779B97F4A7C15UL) >> 11) * 0x1.0p-53;\n"
	"	return (REAL)(lo + (hi - lo) * u);\n"
	"}\n"
	"__kernel void price_drawn(const ulong seed, const ulong first, __global REAL *out, const uint n)\n"
	"{\n"
	"	uint i = get_global_id(0);\n"
	"	if (i >= n)\n"
	"		return;\n"
	"	ulong z = mix64(seed) + (5 * (first + i) + 1) * 0x9E3779B97F4A7C15UL;\n"
	"	price1(drawn(z, 0, 5, 30), drawn(z, 1, 1, 100), drawn(z, 2, 0.25, 10),\n"
	"	       drawn(z, 3, 0.01, 0.05), drawn(z, 4, 0.1, 0.5), out + 2 * i);\n"
	"}\n"
	"#endif\n";

/* a block is cut in two chunks from this many options up */
#define CHUNK_MIN 16384
#define GROUP 64

struct plb__bs_cl {
	struct plb__cl cl;      /* its err says what failed */
	enum plb__bs_prec prec;
	cl_program prog;
	cl_kernel k;
	cl_kernel kd;           /* price_drawn: where the device has doubles, else NULL */
	cl_mem din[2], dout[2];
	size_t cap;             /* options each chunk's buffers hold */
	struct plb__phase_times last;
};

/* Doubles on c's device: the draw runs there (PLB_DRAW) */
static int has_fp64(struct plb__bs_cl *c)
{
	cl_device_fp_config fp = 0;
	return clGetDeviceInfo(c->cl.dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) ==
		       CL_SUCCESS && fp;
}

static int setup(struct plb__bs_cl *c, void *ctx, void *dev)
{
	int rc = plb__cl_open(&c->cl, ctx, dev);
	if (!rc && c->prec == PLB__BS_F64)
		rc = plb__cl_need_fp64(&c->cl, "plb-bs in double precision");
	if (rc)
		return rc;
	int draw = has_fp64(c);
	const char *opts = c->prec == PLB__BS_F64 ? "-DPLB_F64 -DPLB_DRAW" : draw ? "-DPLB_DRAW" : "";
	if ((rc = plb__cl_program(&c->cl, source, opts, &c->prog)))
		return rc;
	PLB__CL_MAKE(&c->cl, c->k, clCreateKernel(c->prog, "price", &e_));
	if (draw)
		PLB__CL_MAKE(&c->cl, c->kd, clCreateKernel(c->prog, "price_drawn", &e_));
	return 0;
}

int plb__bs_cl_create(void *ctx, void *dev, enum plb__bs_prec prec, struct plb__bs_cl **out,
		      char *errbuf, size_t errlen)
{
	struct plb__bs_cl *c = calloc(1, sizeof *c);
	*out = NULL;
	if (!c)
		return PLB_ENOMEM;
	c->prec = prec;
	int rc = setup(c, ctx, dev);
	if (rc) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", c->cl.err);
		plb__bs_cl_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

int plb__bs_cl_draws(const struct plb__bs_cl *c)
{
	return c && c->kd;
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

/* Device buffers for chunks of n options (drawn: no input buffers). */
static int reserve(struct plb__bs_cl *c, size_t n, int drawn)
{
	if (n <= c->cap && (drawn || c->din[0]))
		return 0;
	release(c);
	for (int i = 0; i < 2; i++) {
		if (!drawn)
			PLB__CL_MAKE(&c->cl, c->din[i],
				     clCreateBuffer(c->cl.ctx, CL_MEM_READ_ONLY,
						    n * plb__bs_in_unit(c->prec), NULL, &e_));
		PLB__CL_MAKE(&c->cl, c->dout[i], clCreateBuffer(c->cl.ctx, CL_MEM_WRITE_ONLY,
							   n * plb__bs_out_unit(c->prec), NULL, &e_));
	}
	c->cap = n;
	return 0;
}

/* Prices n options on c's two queues, in chunks: from in (copied over),
 * or, in NULL, drawn on the device from seed, option first on. */
static int run(struct plb__bs_cl *c, const void *in, uint64_t seed, uint64_t first, void *out,
	       size_t n)
{
	c->last = (struct plb__phase_times){0, 0, 0};
	if (!n)
		return 0;
	if (!out || n > UINT32_MAX / 8 || (!in && !c->kd))
		return PLB_EINVAL;
	int chunks = n >= CHUNK_MIN ? 2 : 1;
	size_t per = (n + (size_t)chunks - 1) / (size_t)chunks, iu = plb__bs_in_unit(c->prec),
	       ou = plb__bs_out_unit(c->prec);
	int rc = reserve(c, per, !in);
	if (rc)
		return rc;
	cl_event ev[2][3] = {{0}};
	cl_kernel k = in ? c->k : c->kd;
	for (int i = 0; i < chunks; i++) {
		size_t at = (size_t)i * per, len = at + per <= n ? per : n - at;
		cl_uint m = (cl_uint)len;
		cl_ulong sd = seed, f = first + at;
		size_t global = (len + GROUP - 1) / GROUP * GROUP;
		cl_command_queue q = c->cl.q[i];
		if (in) {
			PLB__CL_CHECK(&c->cl, clEnqueueWriteBuffer(q, c->din[i], CL_FALSE, 0, len * iu,
								   (const char *)in + at * iu, 0, NULL,
								   &ev[i][0]));
			PLB__CL_CHECK(&c->cl, clSetKernelArg(k, 0, sizeof(cl_mem), &c->din[i]));
		} else {
			PLB__CL_CHECK(&c->cl, clSetKernelArg(k, 0, sizeof sd, &sd));
			PLB__CL_CHECK(&c->cl, clSetKernelArg(k, 1, sizeof f, &f));
		}
		cl_uint a = in ? 1 : 2;
		PLB__CL_CHECK(&c->cl, clSetKernelArg(k, a, sizeof(cl_mem), &c->dout[i]));
		PLB__CL_CHECK(&c->cl, clSetKernelArg(k, a + 1, sizeof m, &m));
		PLB__CL_CHECK(&c->cl, clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
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

int plb__bs_cl_run(struct plb__bs_cl *c, const void *in, void *out, size_t n)
{
	return n && !in ? PLB_EINVAL : run(c, in, 0, 0, out, n);
}

int plb__bs_cl_run_drawn(struct plb__bs_cl *c, uint64_t seed, uint64_t first, void *out, size_t n)
{
	return run(c, NULL, seed, first, out, n);
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
	if (c->kd)
		clReleaseKernel(c->kd);
	if (c->prog)
		clReleaseProgram(c->prog);
	plb__cl_close(&c->cl);
	free(c);
}
