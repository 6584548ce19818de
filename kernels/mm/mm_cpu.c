/* The matrix-multiply CPU kernel (BLAS gemm on one block of columns) and
 * the verification of a whole product (see mm.h). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/mm/mm.h"

size_t plb__mm_elem(enum plb__mm_prec prec)
{
	return prec == PLB__MM_F64 ? sizeof(double) : sizeof(float);
}

int plb__mm_cpu(enum plb__mm_prec prec, int n, int64_t cols, const void *A,
		const void *B_blk, void *C_blk)
{
	if (n < 1 || cols < 0 || cols > INT32_MAX || !A || (cols && (!B_blk || !C_blk)))
		return PLB_EINVAL;
	if (cols == 0)
		return 0;
	if (prec == PLB__MM_F64)
		cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, (int)cols, n,
			    1.0, A, n, B_blk, n, 0.0, C_blk, n);
	else
		cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, (int)cols, n,
			    1.0f, A, n, B_blk, n, 0.0f, C_blk, n);
	return 0;
}

static double at(enum plb__mm_prec prec, const void *M, size_t i)
{
	return prec == PLB__MM_F64 ? ((const double *)M)[i] : ((const float *)M)[i];
}

/* y = M x (n x n times n), in double. */
static void matvec(enum plb__mm_prec prec, int n, const void *M, const double *x, double *y)
{
	for (int i = 0; i < n; i++)
		y[i] = 0;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++)
			y[i] += at(prec, M, (size_t)j * n + i) * x[j];
}

/* |M| x (n x n times n), the scale a rounding error is measured against. */
static void absmatvec(enum plb__mm_prec prec, int n, const void *M, const double *x, double *y)
{
	for (int i = 0; i < n; i++)
		y[i] = 0;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++)
			y[i] += fabs(at(prec, M, (size_t)j * n + i)) * fabs(x[j]);
}

int plb__mm_verify(enum plb__mm_prec prec, int n, const void *A, const void *B,
		   const void *C, int exact, int trials, uint64_t seed, double *err_out)
{
	/* rounding errors of a sum of n terms grow like a random walk: about
	 * eps sqrt(n) of the terms' rms, far below eps sqrt(n) of the sum of
	 * their magnitudes (|A| |B| |r|), which is the scale used here; 8 eps
	 * sqrt(n) of it is safe for any BLAS order, and still catches one
	 * element wrong by a fraction of a percent */
	double eps = prec == PLB__MM_F64 ? 2.2e-16 : 1.2e-7;
	double tol = 8.0 * sqrt((double)n) * eps, worst = 0;
	double *v = malloc((size_t)n * 5 * sizeof *v);
	if (!v)
		return PLB_ENOMEM;
	double *r = v, *br = r + n, *abr = br + n, *cr = abr + n, *scale = cr + n;
	int cols = exact ? n : trials;
	uint64_t s = seed * 2862933555777941757ULL + 3037000493ULL;
	for (int t = 0; t < cols; t++) {
		/* exact: the unit vector e_t gives column t; Freivalds: random r */
		for (int j = 0; j < n; j++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			r[j] = exact ? (j == t) : (double)(s >> 11) / 9007199254740992.0 - 0.5;
		}
		matvec(prec, n, B, r, br);
		matvec(prec, n, A, br, abr);
		matvec(prec, n, C, r, cr);
		/* the rounding scale: |A| |B| |r| */
		absmatvec(prec, n, B, r, br);
		absmatvec(prec, n, A, br, scale);
		for (int i = 0; i < n; i++) {
			double e = fabs(cr[i] - abr[i]) / (scale[i] > 0 ? scale[i] : 1);
			if (!(e <= worst))
				worst = isnan(e) ? INFINITY : e;
		}
	}
	free(v);
	if (err_out)
		*err_out = worst;
	return worst <= tol ? 0 : PLB_ESOLVE;
}
