/* What the GPU benchmarks share: a monotonic clock, the median of
 * timings, and (in .cu files) the CUDA and cuBLAS checks that exit 1
 * naming the program, file:line, the call and the library's reason. */
#ifndef PLB_BENCH_BENCH_H
#define PLB_BENCH_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#ifdef __CUDACC__
/* BENCH_PROG: the program's name, defined before this header. */
#define CK(call)                                                                   \
	do {                                                                       \
		cudaError_t e_ = (call);                                           \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "%s: %s:%d: %s: %s\n", BENCH_PROG, __FILE__, \
				__LINE__, #call, cudaGetErrorString(e_));          \
			exit(1);                                                   \
		}                                                                  \
	} while (0)
#define CB(call)                                                                   \
	do {                                                                       \
		cublasStatus_t s_ = (call);                                        \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                 \
			fprintf(stderr, "%s: %s:%d: %s: %s\n", BENCH_PROG, __FILE__, \
				__LINE__, #call, cublasGetStatusString(s_));       \
			exit(1);                                                   \
		}                                                                  \
	} while (0)
#endif

#endif
