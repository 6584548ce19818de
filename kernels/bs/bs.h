/* Black-Scholes kernels of the bundled plb-bs app: European call and put
 * prices of n options, one option a unit. A unit's input is its five
 * parameters (struct plb__bs_opt, or its float twin), its output the call
 * and the put price (two values), in the precision of the run. The
 * cumulative normal is the usual polynomial approximation (Abramowitz and
 * Stegun 26.2.17, |error| < 7.5e-8), symmetric by construction, so put-call
 * parity holds to rounding. The CPU kernel is a plain loop the compiler
 * vectorises; the CUDA kernel (bs_cuda.cu, built only with a whole CUDA
 * toolkit) one thread an option. Input files (CSV) are read here too, so
 * that the tests reach the reader. */
#ifndef PLB_KERNELS_BS_H
#define PLB_KERNELS_BS_H

#include <stddef.h>
#include <stdint.h>

#include "plb_errors.h"
#include "kernels/phase_times.h"

#ifdef __cplusplus
extern "C" {
#endif

enum plb__bs_prec { PLB__BS_F32, PLB__BS_F64 };

/* What every block shares: the precision, and for drawn options the seed
 * (the blocks then carry no input). */
struct plb__bs_shared {
	int32_t prec;
	int32_t drawn;
	uint64_t seed;
};

/* plb-bs's kernel "bs" (bs_kernel.c): cpu, and cuda where built. */
extern const struct plb_kernel plb__bs_kernel;

/* The normal CDF's polynomial (Abramowitz and Stegun 26.2.17), for every
 * implementation (CPU loops, reference, CUDA, the benchmark's), in type FT:
 * with k = 1 / (1 + 0.2316419 |d|), N(-|d|) = exp(-d^2 / 2) / sqrt(2 pi) *
 * PLB__BS_POLY(FT, k), and N(d) = 1 - N(-d). */
#define PLB__BS_P 0.2316419
#define PLB__BS_RSQRT2PI 0.39894228040143267794
#define PLB__BS_POLY(FT, k)                                                   \
	((k) * ((FT)0.31938153 + (k) * ((FT)-0.356563782 + (k) * ((FT)1.781477937 + \
	 (k) * ((FT)-1.821255978 + (k) * (FT)1.330274429)))))

/* One option's call and put (C, P, lvalues of type FT) from its S, K, T, r
 * and v, with the math functions of FT (expf or exp...): branch-free, so
 * that it vectorises; the CPU loops and the benchmark's reference use it,
 * the serial reference and CUDA spell it out. */
#define PLB__BS_PRICE(FT, EXP, LOG, SQRT, FABS, S, K, T, r, v, C, P)            \
	do {                                                                  \
		FT sq_ = (v) * SQRT(T);                                       \
		FT d1_ = (LOG((S) / (K)) + ((r) + (FT)0.5 * (v) * (v)) * (T)) / sq_; \
		FT d2_ = d1_ - sq_;                                           \
		FT k1_ = (FT)1 / ((FT)1 + (FT)PLB__BS_P * FABS(d1_));         \
		FT k2_ = (FT)1 / ((FT)1 + (FT)PLB__BS_P * FABS(d2_));         \
		FT c1_ = (FT)PLB__BS_RSQRT2PI * EXP((FT)-0.5 * d1_ * d1_) * PLB__BS_POLY(FT, k1_); \
		FT c2_ = (FT)PLB__BS_RSQRT2PI * EXP((FT)-0.5 * d2_ * d2_) * PLB__BS_POLY(FT, k2_); \
		c1_ = d1_ > 0 ? (FT)1 - c1_ : c1_;                            \
		c2_ = d2_ > 0 ? (FT)1 - c2_ : c2_;                            \
		FT ke_ = (K) * EXP(-(r) * (T));                               \
		(C) = (S) * c1_ - ke_ * c2_;                                  \
		(P) = ke_ * ((FT)1 - c2_) - (S) * ((FT)1 - c1_);              \
	} while (0)

/* One option: spot price, strike, years to expiry, risk-free rate and
 * volatility (both per year, continuously compounded). */
struct plb__bs_opt { double S, K, T, r, v; };
struct plb__bs_optf { float S, K, T, r, v; };

/* Bytes of a unit's input and output. */
size_t plb__bs_in_unit(enum plb__bs_prec prec);
size_t plb__bs_out_unit(enum plb__bs_prec prec);

/* Prices of n options: in holds n inputs, out gets n (call, put) pairs,
 * both in prec. Returns 0 or PLB_EINVAL. */
PLB_WUR int plb__bs_cpu(enum plb__bs_prec prec, const void *in, void *out, size_t n);

/* The vectorised loops behind plb__bs_cpu (bs_simd.c). */
void plb__bs_simd_f64(const struct plb__bs_opt *in, double *out, size_t n);
void plb__bs_simd_f32(const struct plb__bs_optf *in, float *out, size_t n);

/* The serial reference: one option in double, the same formula. */
void plb__bs_ref(const struct plb__bs_opt *o, double *call, double *put);

/* Checks n prices against the reference (relative to S + K, the scale of
 * a price) and against put-call parity, C - P = S - K exp(-rT). Returns 0,
 * or PLB_ESOLVE with the first failing option in *bad and the worst errors
 * in *err_ref and *err_parity. */
PLB_WUR int plb__bs_verify(enum plb__bs_prec prec, const void *in, const void *out, size_t n,
			   size_t *bad, double *err_ref, double *err_parity);

/* Options [first, first + n) of those drawn from seed, into in: S in
 * [5, 30), K in [1, 100), T in [0.25, 10), r in [0.01, 0.05), v in
 * [0.1, 0.5). Option j depends on seed and j alone (a counter-based
 * generator, splitmix64), so a node draws its own blocks' options and they
 * are the same on every machine. plb__bs_generate: the first n. */
void plb__bs_draw(enum plb__bs_prec prec, void *in, uint64_t first, size_t n, uint64_t seed);
void plb__bs_generate(enum plb__bs_prec prec, void *in, size_t n, uint64_t seed);

/* Prices options [first, first + n) drawn from seed into out (n call, put
 * pairs in prec), drawing them a few hundred at a time: the prices
 * plb__bs_cpu gives for plb__bs_generate's options. Returns 0 or
 * PLB_EINVAL. */
PLB_WUR int plb__bs_cpu_drawn(enum plb__bs_prec prec, uint64_t seed, uint64_t first, void *out,
			      size_t n);

/* Reads options from a CSV file: a header line naming the columns S, K,
 * T, r, v (in any order, other columns ignored), then one option a line;
 * '#' starts a comment line, blank lines are skipped. *in (malloc'd, in
 * prec) and *n on success; PLB_EINVAL with "FILE:LINE: what, accepted:
 * ..." in err, PLB_EIO (cannot read) or PLB_ENOMEM otherwise. */
PLB_WUR int plb__bs_read_csv(const char *path, enum plb__bs_prec prec, void **in, size_t *n,
			     char *err, size_t errlen);

/* CUDA (bs_cuda.cu). Without a CUDA toolkit these are absent: callers test
 * PLB_HAVE_CUDA. */
struct plb__bs_cuda;
/* A stream on device dev and buffers that grow with the blocks. On error
 * returns PLB_EIO and writes the CUDA reason. */
PLB_WUR int plb__bs_cuda_create(int dev, enum plb__bs_prec prec, struct plb__bs_cuda **out,
				char *err, size_t errlen);
/* Prices n options: copies in, the kernel, copies out; returns when out
 * is in host memory. */
PLB_WUR int plb__bs_cuda_run(struct plb__bs_cuda *c, const void *in, void *out, size_t n);
/* The last block's phases (copy in, kernel, copy out) as the device
 * timed them. */
void plb__bs_cuda_times(const struct plb__bs_cuda *c, struct plb__phase_times *t);
void plb__bs_cuda_destroy(struct plb__bs_cuda *c);

/* OpenCL (bs_opencl.c). Without OpenCL at build time these are absent:
 * callers test PLB_HAVE_OPENCL. */
struct plb__bs_cl;
/* Queues, the program and buffers on OpenCL device dev (a cl_device_id)
 * of context ctx (a cl_context). On error returns PLB_EIO (PLB_EDEVICE:
 * double precision on a device without it) and writes the reason. */
PLB_WUR int plb__bs_cl_create(void *ctx, void *dev, enum plb__bs_prec prec, struct plb__bs_cl **out,
			      char *err, size_t errlen);
/* As plb__bs_cuda_run, on the OpenCL device. */
PLB_WUR int plb__bs_cl_run(struct plb__bs_cl *c, const void *in, void *out, size_t n);
/* 1 when c's device draws options itself (it has doubles, cl_khr_fp64):
 * then plb__bs_cl_run_drawn prices options [first, first + n) drawn from
 * seed there, the same options as plb__bs_draw's, and copies only the
 * prices back. */
int plb__bs_cl_draws(const struct plb__bs_cl *c);
PLB_WUR int plb__bs_cl_run_drawn(struct plb__bs_cl *c, uint64_t seed, uint64_t first, void *out,
				 size_t n);
void plb__bs_cl_times(const struct plb__bs_cl *c, struct plb__phase_times *t);
void plb__bs_cl_destroy(struct plb__bs_cl *c);

#ifdef __cplusplus
}
#endif

#endif
