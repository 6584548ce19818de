/* The matrix-multiply CPU kernel (BLAS gemm on one block of columns) and
 * the verification of a whole product (see mm.h). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/mm/mm.h"
#include "plb.h"

size_t plb__mm_elem(enum plb__mm_prec prec)
{
	return prec == PLB__MM_F64 ? sizeof(double) : sizeof(float);
}

int plb__mm_cpu_rows(enum plb__mm_prec prec, int n, int row0, int rows, int64_t cols,
		     const void *A, const void *B_blk, void *C_blk)
{
	if (n < 1 || cols < 0 || cols > INT32_MAX || !A || (cols && (!B_blk || !C_blk)) ||
	    row0 < 0 || rows < 0 || rows > n - row0)
		return PLB_EINVAL;
	if (cols == 0 || rows == 0)
		return 0;
	/* rows of A and C start row0 elements down their columns */
	size_t at = (size_t)row0 * plb__mm_elem(prec);
	const char *a = (const char *)A + at;
	char *c = (char *)C_blk + at;
	if (prec == PLB__MM_F64)
		cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows, (int)cols, n,
			    1.0, (const double *)a, n, B_blk, n, 0.0, (double *)c, n);
	else
		cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows, (int)cols, n,
			    1.0f, (const float *)a, n, B_blk, n, 0.0f, (float *)c, n);
	return 0;
}

int plb__mm_cpu(enum plb__mm_prec prec, int n, int64_t cols, const void *A,
		const void *B_blk, void *C_blk)
{
	return plb__mm_cpu_rows(prec, n, 0, n, cols, A, B_blk, C_blk);
}

/* y = M x and, when ay is not NULL, ay = |M| |ax| (the scale a rounding
 * error is measured against): n x n times n, in double, one pass over M
 * with the element type known inside the loop, so that it vectorises. */
#define PLB_MATVEC_(T)                                                         \
	static void matvec_##T(int n, const T *M, const double *x, double *y,  \
			       const double *ax, double *ay)                   \
	{                                                                      \
		for (int i = 0; i < n; i++)                                    \
			y[i] = ay ? (ay[i] = 0) : 0;                           \
		for (int j = 0; j < n; j++) {                                  \
			const T *c = M + (size_t)j * (size_t)n;                \
			double xj = x[j], axj = ay ? fabs(ax[j]) : 0;          \
			if (ay)                                                \
				for (int i = 0; i < n; i++) {                  \
					y[i] += (double)c[i] * xj;             \
					ay[i] += fabs((double)c[i]) * axj;     \
				}                                              \
			else                                                   \
				for (int i = 0; i < n; i++)                    \
					y[i] += (double)c[i] * xj;             \
		}                                                              \
	}
PLB_MATVEC_(float)
PLB_MATVEC_(double)
#undef PLB_MATVEC_

static void matvec(enum plb__mm_prec prec, int n, const void *M, const double *x, double *y,
		   const double *ax, double *ay)
{
	if (prec == PLB__MM_F64)
		matvec_double(n, M, x, y, ax, ay);
	else
		matvec_float(n, M, x, y, ax, ay);
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
	double *v = malloc((size_t)n * 6 * sizeof *v);
	if (!v)
		return PLB_ENOMEM;
	double *r = v, *br = r + n, *bra = br + n, *abr = bra + n, *cr = abr + n, *scale = cr + n;
	int cols = exact ? n : trials;
	uint64_t s = seed * 2862933555777941757ULL + 3037000493ULL;
	for (int t = 0; t < cols; t++) {
		/* exact: the unit vector e_t gives column t; Freivalds: random r */
		for (int j = 0; j < n; j++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			r[j] = exact ? (j == t) : (double)(s >> 11) / 9007199254740992.0 - 0.5;
		}
		/* A (B r) against C r, and the rounding scale |A| |B| |r| */
		matvec(prec, n, B, r, br, r, bra);
		matvec(prec, n, A, br, abr, bra, scale);
		matvec(prec, n, C, r, cr, NULL, NULL);
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

int plb__mm_gemm_step(const struct plb_gemm_step *s, int member, int members)
{
	if (!s || !s->a || !s->b || !s->c || s->rows < 0 || s->cols < 0 || s->k < 1 ||
	    s->lda < s->k || s->ldb < s->cols || s->ldc < s->cols || members < 1 || member < 0 ||
	    member >= members || s->rows > INT32_MAX || s->cols > INT32_MAX || s->ldc > INT32_MAX ||
	    (s->elem != 4 && s->elem != 8))
		return PLB_EINVAL;
	/* member's share of the columns */
	long c0 = s->cols * member / members, c1 = s->cols * (member + 1) / members;
	if (c1 <= c0 || !s->rows)
		return 0;
	size_t e = (size_t)s->elem;
	const char *b = (const char *)s->b + (size_t)c0 * e;
	char *c = (char *)s->c + (size_t)c0 * e;
	if (s->elem == 8)
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->rows, (int)(c1 - c0), (int)s->k,
			    1.0, s->a, (int)s->lda, (const double *)b, (int)s->ldb, 1.0, (double *)c, (int)s->ldc);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->rows, (int)(c1 - c0), (int)s->k,
			    1.0f, s->a, (int)s->lda, (const float *)b, (int)s->ldb, 1.0f, (float *)c, (int)s->ldc);
	return 0;
}
