/* The reference plb-mm's CPU figures are compared with: C = A x B (n x n,
 * column-major) by one BLAS gemm call on all the cores the BLAS library
 * uses by itself (OpenBLAS: OPENBLAS_NUM_THREADS, else every core), no plb
 * in between.
 *
 *   blas_mm N single|double [REPS]
 *
 * Prints "gemm SECONDS GFLOP/s": the median of REPS timed calls after one
 * warm-up, A, B and C allocated and touched before (as an app's are). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, reps = argc > 3 ? atoi(argv[3]) : 3;
	int dbl = argc > 2 && !strcmp(argv[2], "double");
	if (n < 1 || argc < 3 || (!dbl && strcmp(argv[2], "single")) || reps < 1 || reps > 100) {
		fprintf(stderr, "usage: blas_mm N single|double [REPS 1-100]\n");
		return 2;
	}
	size_t nn = (size_t)n * (size_t)n, elem = dbl ? sizeof(double) : sizeof(float);
	char *A = malloc(nn * elem), *B = malloc(nn * elem), *C = calloc(nn, elem);
	double *t = malloc((size_t)reps * sizeof *t);
	if (!A || !B || !C || !t) {
		fprintf(stderr, "blas_mm: out of memory for three %d x %d matrices\n", n, n);
		return 1;
	}
	for (size_t i = 0; i < nn; i++) {
		double a = (double)(i % 1009) / 1009 - 0.5, b = (double)(i % 997) / 997 - 0.5;
		if (dbl) {
			((double *)A)[i] = a;
			((double *)B)[i] = b;
		} else {
			((float *)A)[i] = (float)a;
			((float *)B)[i] = (float)b;
		}
	}
	for (int r = -1; r < reps; r++) {
		double t0 = plb__now();
		if (dbl)
			cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0,
				    (double *)A, n, (double *)B, n, 0.0, (double *)C, n);
		else
			cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
				    (float *)A, n, (float *)B, n, 0.0f, (float *)C, n);
		if (r >= 0)
			t[r] = plb__now() - t0;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp);
	double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
	printf("gemm %.6f %.1f\n", med, 2.0 * n * (double)n * n / med * 1e-9);
	free(A);
	free(B);
	free(C);
	free(t);
	return 0;
}
