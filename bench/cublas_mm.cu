/* The reference plb-mm's GPU figures are compared with: C = A x B (n x n,
 * column-major) by cuBLAS called directly, no plb in between.
 *
 *   cublas_mm N single|double [REPS]
 *
 * Prints one line per way of calling it, each the median of REPS timed
 * repetitions after one warm-up (handle, context and buffers made before):
 *   gemm      A, B, C already on the device (cuda events around the gemm)
 *   pageable  A and B copied from malloc'd host memory, the gemm, C copied
 *             back (cudaMemcpy; what a plain program does)
 *   pinned    the same from cudaMallocHost memory (the fastest copies)
 * Each line: mode, seconds, GFLOP/s (2 n^3 over the seconds). The product
 * is checked at 64 random entries against a double-precision dot product;
 * a mismatch or any CUDA or cuBLAS error exits 1 naming file:line. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_PROG "cublas_mm"
#include "bench/bench.h"


struct job {
	size_t n, elem;
	int dbl;
	cublasHandle_t h;
	void *dA, *dB, *dC;
};

static void gemm(const struct job *j)
{
	int n = (int)j->n;
	if (j->dbl) {
		const double one = 1, zero = 0;
		CB(cublasDgemm(j->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const double *)j->dA,
			       n, (const double *)j->dB, n, &zero, (double *)j->dC, n));
	} else {
		const float one = 1, zero = 0;
		CB(cublasSgemm(j->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)j->dA,
			       n, (const float *)j->dB, n, &zero, (float *)j->dC, n));
	}
}

/* Host A, B in, host C out, synchronously: one user's call. */
static double with_copies(const struct job *j, const void *A, const void *B, void *C)
{
	size_t bytes = j->n * j->n * j->elem;
	double t = bench_now();
	CK(cudaMemcpy(j->dA, A, bytes, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(j->dB, B, bytes, cudaMemcpyHostToDevice));
	gemm(j);
	CK(cudaMemcpy(C, j->dC, bytes, cudaMemcpyDeviceToHost));
	return bench_now() - t;
}

static double at(const struct job *j, const void *M, size_t i)
{
	return j->dbl ? ((const double *)M)[i] : ((const float *)M)[i];
}

static int check(const struct job *j, const void *A, const void *B, const void *C)
{
	unsigned long long x = 12345;
	for (int k = 0; k < 64; k++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		size_t r = (size_t)(x >> 33) % j->n, c = (size_t)(x >> 13) % j->n;
		double s = 0, mag = 0;
		for (size_t i = 0; i < j->n; i++) {
			double p = at(j, A, i * j->n + r) * at(j, B, c * j->n + i);
			s += p;
			mag += fabs(p);
		}
		double got = at(j, C, c * j->n + r), tol = (j->dbl ? 1e-12 : 1e-5) * mag + 1e-30;
		if (!(fabs(got - s) <= tol)) {
			fprintf(stderr, "cublas_mm: C[%zu,%zu] = %.9g, expected %.9g\n", r, c, got, s);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || atol(argv[1]) < 1 || (strcmp(argv[2], "single") && strcmp(argv[2], "double"))) {
		fprintf(stderr, "usage: cublas_mm N single|double [REPS]\n");
		return 2;
	}
	struct job j = {.n = (size_t)atol(argv[1]), .dbl = !strcmp(argv[2], "double")};
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	reps = reps < 1 ? 1 : reps > 100 ? 100 : reps;
	j.elem = j.dbl ? sizeof(double) : sizeof(float);
	size_t bytes = j.n * j.n * j.elem;
	double flop = 2.0 * (double)j.n * (double)j.n * (double)j.n, t[100];

	CK(cudaSetDevice(0));
	CB(cublasCreate(&j.h));
	CK(cudaMalloc(&j.dA, bytes));
	CK(cudaMalloc(&j.dB, bytes));
	CK(cudaMalloc(&j.dC, bytes));
	void *A = malloc(bytes), *B = malloc(bytes), *C = malloc(bytes), *pA, *pB, *pC;
	if (!A || !B || !C) {
		fprintf(stderr, "cublas_mm: out of host memory for three %zu x %zu matrices\n", j.n, j.n);
		return 1;
	}
	CK(cudaMallocHost(&pA, bytes));
	CK(cudaMallocHost(&pB, bytes));
	CK(cudaMallocHost(&pC, bytes));
	unsigned long long x = 1;
	for (size_t i = 0; i < j.n * j.n; i++) {
		for (int m = 0; m < 2; m++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			double v = (double)(x >> 11) * 0x1.0p-52 - 1.0;
			if (j.dbl)
				((double *)(m ? B : A))[i] = v;
			else
				((float *)(m ? B : A))[i] = (float)v;
		}
	}
	memset(C, 0xff, bytes);         /* NaN: an entry not written fails the check */
	memcpy(pA, A, bytes);
	memcpy(pB, B, bytes);

	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	with_copies(&j, A, B, C);       /* warm-up: the first gemm loads its kernels */
	if (check(&j, A, B, C))
		return 1;
	for (int r = 0; r < reps; r++) {
		float ms;
		CK(cudaEventRecord(e0, 0));
		gemm(&j);
		CK(cudaEventRecord(e1, 0));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		t[r] = 1e-3 * ms;
	}
	double tg = bench_median(t, reps);
	for (int r = 0; r < reps; r++)
		t[r] = with_copies(&j, A, B, C);
	double tp = bench_median(t, reps);
	memset(pC, 0xff, bytes);
	for (int r = 0; r < reps; r++)
		t[r] = with_copies(&j, pA, pB, pC);
	double tq = bench_median(t, reps);
	if (check(&j, A, B, pC))
		return 1;
	printf("cublas_mm n=%zu %s reps=%d\n", j.n, argv[2], reps);
	printf("gemm     %10.4f s %9.0f GFLOP/s\n", tg, flop / tg * 1e-9);
	printf("pageable %10.4f s %9.0f GFLOP/s\n", tp, flop / tp * 1e-9);
	printf("pinned   %10.4f s %9.0f GFLOP/s\n", tq, flop / tq * 1e-9);
	return 0;
}
