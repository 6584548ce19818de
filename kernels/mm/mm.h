/* Matrix-multiply kernels of the bundled plb-mm app: C = A x B, n x n,
 * column-major, B's columns the domain, so a block of columns
 * [off, off + cols) of B and C is contiguous (B + off * n). A is shared by
 * every block. The CPU kernel calls BLAS (OpenBLAS); the CUDA kernel
 * (mm_cuda.cu, built only when nvcc is found) calls cuBLAS on its own stream
 * with pinned staging buffers. Verification: an exact reference for small n
 * and Freivalds' randomised check for large n. */
#ifndef PLB_KERNELS_MM_H
#define PLB_KERNELS_MM_H

#include <stddef.h>
#include <stdint.h>

#include "plb.h"
#include "plb_errors.h"
#include "kernels/phase_times.h"

#ifdef __cplusplus
extern "C" {
#endif

enum plb__mm_prec { PLB__MM_F32, PLB__MM_F64 };

/* What every block shares: the sizes, then A (n x n, column-major). */
struct plb__mm_shared {
	int32_t n, prec;
	int64_t pad;
};

/* plb-mm's kernel "mm" (mm_kernel.c): cpu, and cuda where built. */
extern const struct plb_kernel plb__mm_kernel;

/* plb-mm --layout 2d's kernel "mm2d" (mm_kernel.c): the 2-D product's
 * step (struct plb_gemm_step, plb.h), cpu. */
extern const struct plb_kernel plb__mm2d_kernel;
struct plb_gemm_step;
/* Whether step s updates the same slice of C as held (the step that
 * brought a device's copy of it; held->c NULL: none): mm_cuda.cu's and
 * mm_opencl.c's test for reading theirs back first. */
static inline int plb__mm2d_same_slice(const struct plb_gemm_step *held, const struct plb_gemm_step *s)
{
	return held->c && s->c == held->c && s->rows == held->rows && s->cols == held->cols &&
	       s->ldc == held->ldc && s->elem == held->elem;
}
/* c += a b of the step, row-major, for member `member` of `members` (its
 * share of the columns). 0 or PLB_EINVAL. */
PLB_WUR int plb__mm_gemm_step(const struct plb_gemm_step *s, int member, int members);

/* Bytes of one element. */
size_t plb__mm_elem(enum plb__mm_prec prec);

/* C_blk = A x B_blk on the CPU: A n x n, B_blk and C_blk n x cols
 * (column-major, leading dimension n). Returns 0 or PLB_EINVAL. */
PLB_WUR int plb__mm_cpu(enum plb__mm_prec prec, int n, int64_t cols,
			const void *A, const void *B_blk, void *C_blk);
/* The same for rows [row0, row0 + rows) of C_blk only (they need those
 * rows of A alone): one team member's slab of a block. */
PLB_WUR int plb__mm_cpu_rows(enum plb__mm_prec prec, int n, int row0, int rows, int64_t cols,
			     const void *A, const void *B_blk, void *C_blk);

/* Checks C = A x B. exact: every element against a double-precision
 * reference (O(n^3), for small n); otherwise Freivalds' test with `trials`
 * random vectors (O(trials n^2)). Returns 0 if C passes, PLB_ESOLVE with the
 * worst relative error in *err_out if not, PLB_ENOMEM. */
PLB_WUR int plb__mm_verify(enum plb__mm_prec prec, int n, const void *A,
			   const void *B, const void *C, int exact, int trials,
			   uint64_t seed, double *err_out);

/* CUDA (mm_cuda.cu). Without nvcc these are absent: callers test
 * PLB_HAVE_CUDA. */
struct plb__mm_cuda;
/* Set up device `dev` for n x n products of blocks of at most max_cols
 * columns: a stream, a cuBLAS handle, A on the device, pinned staging
 * buffers. On error returns PLB_EIO and writes the CUDA/cuBLAS reason. */
PLB_WUR int plb__mm_cuda_create(int dev, enum plb__mm_prec prec, int n,
				int64_t max_cols, struct plb__mm_cuda **out,
				char *err, size_t errlen);
/* Upload A (n x n) to the device. */
PLB_WUR int plb__mm_cuda_set_a(struct plb__mm_cuda *m, const void *A);
/* C_blk = A x B_blk, copies in and out overlapped with the product on the
 * context's stream; returns when C_blk is in host memory. */
PLB_WUR int plb__mm_cuda_run(struct plb__mm_cuda *m, int64_t cols,
			     const void *B_blk, void *C_blk);
/* The last block's phases (copy in, kernel, copy out) as the device
 * timed them. */
void plb__mm_cuda_times(const struct plb__mm_cuda *c, struct plb__phase_times *t);
void plb__mm_cuda_destroy(struct plb__mm_cuda *m);
/* The 2-D product's step on CUDA device dev (cuBLAS), as the OpenCL one
 * below: the PU's slice of C on the device until destroy reads it back. */
struct plb__mm2d_cuda;
PLB_WUR int plb__mm2d_cuda_create(int dev, struct plb__mm2d_cuda **out, char *err, size_t errlen);
PLB_WUR int plb__mm2d_cuda_step(struct plb__mm2d_cuda *m, const struct plb_gemm_step *s);
int plb__mm2d_cuda_destroy(struct plb__mm2d_cuda *m);

/* OpenCL (mm_opencl.c, CLBlast). Without OpenCL at build time these are
 * absent: callers test PLB_HAVE_OPENCL. As the CUDA functions, on OpenCL
 * device dev (a cl_device_id) of context ctx (a cl_context). */
struct plb__mm_cl;
PLB_WUR int plb__mm_cl_create(void *ctx, void *dev, enum plb__mm_prec prec, int n, int64_t max_cols,
			      struct plb__mm_cl **out, char *err, size_t errlen);
PLB_WUR int plb__mm_cl_set_a(struct plb__mm_cl *m, const void *A);
PLB_WUR int plb__mm_cl_run(struct plb__mm_cl *m, int64_t cols, const void *B_blk, void *C_blk);
void plb__mm_cl_times(const struct plb__mm_cl *m, struct plb__phase_times *t);
/* The 2-D product's step on an OpenCL device (CLBlast): the PU's slice of
 * C kept on the device from its first step until destroy, which reads it
 * back (a step on another slice first reads the last one back). destroy
 * returns 0 or the read-back's error. */
struct plb__mm2d_cl;
PLB_WUR int plb__mm2d_cl_create(void *ctx, void *dev, struct plb__mm2d_cl **out, char *err, size_t errlen);
PLB_WUR int plb__mm2d_cl_step(struct plb__mm2d_cl *m, const struct plb_gemm_step *s);
int plb__mm2d_cl_destroy(struct plb__mm2d_cl *m);
void plb__mm_cl_destroy(struct plb__mm_cl *m);

#ifdef __cplusplus
}
#endif

#endif
