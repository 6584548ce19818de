/* What GPU 0 of this node can do at best, measured with CUDA and cuBLAS
 * called directly: the ceilings the bundled kernels' GPU figures are
 * compared with (bench/gpu_kernels, scripts/device-check.sh).
 *
 *   cuda_limits [GEMM_N]
 *
 * Prints one "key value" line each (values in GB/s, GFLOP/s or counts),
 * each the median of several timed repetitions after a warm-up:
 *   d2d_gbs            a 1 GiB device-to-device copy, bytes read plus
 *                      written (what a kernel that reads its input once
 *                      and writes its output once can move)
 *   h2d_gbs, d2h_gbs   256 MiB between pinned host memory and the device
 *                      (the link: PCIe or NVLink-C2C)
 *   h2d_pageable_gbs, d2h_pageable_gbs   the same from malloc'd memory
 *   sgemm_gflops, dgemm_gflops           cuBLAS on GEMM_N (default 8192)
 *                      square matrices of random values, on the device
 * and the device's name, multiprocessors and memory. Any CUDA or cuBLAS
 * error exits 1 naming file:line and the library's reason. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_PROG "cuda_limits"
#include "bench/bench.h"


#define REPS 7

/* Seconds of one cudaMemcpy of `bytes` (kind), the median of REPS after
 * a warm-up; device-side copies are timed with events, those touching
 * host memory with the host's clock around a synchronous copy. */
static double copy_s(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
	double t[REPS];
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaMemcpy(dst, src, bytes, kind));
	for (int r = 0; r < REPS; r++) {
		if (kind == cudaMemcpyDeviceToDevice) {
			float ms;
			CK(cudaEventRecord(a));
			CK(cudaMemcpyAsync(dst, src, bytes, kind));
			CK(cudaEventRecord(b));
			CK(cudaEventSynchronize(b));
			CK(cudaEventElapsedTime(&ms, a, b));
			t[r] = ms * 1e-3;
		} else {
			double t0 = bench_now();
			CK(cudaMemcpy(dst, src, bytes, kind));
			t[r] = bench_now() - t0;
		}
	}
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	return bench_median(t, REPS);
}

__global__ void fill(float *x, size_t n, unsigned seed)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		unsigned h = (unsigned)i * 2654435761u ^ seed;
		h ^= h >> 15;
		h *= 2246822519u;
		h ^= h >> 13;
		x[i] = (float)(h & 0xffff) / 65536.0f - 0.5f;
	}
}

/* GFLOP/s of cuBLAS gemm on n x n random matrices (dbl: double). */
static double gemm_gflops(cublasHandle_t h, int n, int dbl)
{
	size_t nn = (size_t)n * n, elem = dbl ? 8 : 4;
	void *A, *B, *C;
	CK(cudaMalloc(&A, nn * elem));
	CK(cudaMalloc(&B, nn * elem));
	CK(cudaMalloc(&C, nn * elem));
	/* random bits as floats; for double, pairs of them: finite values */
	size_t nf = nn * elem / 4;
	fill<<<(unsigned)((nf + 255) / 256), 256>>>((float *)A, nf, 1);
	fill<<<(unsigned)((nf + 255) / 256), 256>>>((float *)B, nf, 2);
	CK(cudaGetLastError());
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	double t[REPS];
	for (int r = -1; r < REPS; r++) {
		float ms;
		CK(cudaEventRecord(a));
		if (dbl) {
			const double one = 1, zero = 0;
			CB(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const double *)A, n,
				       (const double *)B, n, &zero, (double *)C, n));
		} else {
			const float one = 1, zero = 0;
			CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)A, n,
				       (const float *)B, n, &zero, (float *)C, n));
		}
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (r >= 0)
			t[r] = ms * 1e-3;
	}
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaFree(A));
	CK(cudaFree(B));
	CK(cudaFree(C));
	return 2.0 * n * (double)n * n / bench_median(t, REPS) * 1e-9;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8192;
	if (argc > 2 || n < 64 || n > 65536) {
		fprintf(stderr, "usage: cuda_limits [GEMM_N]  (64 <= GEMM_N <= 65536, default 8192)\n");
		return 2;
	}
	int ndev = 0;
	CK(cudaGetDeviceCount(&ndev));
	if (ndev < 1) {
		fprintf(stderr, "cuda_limits: no CUDA device on this node\n");
		return 1;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	for (char *c = prop.name; *c; c++)
		if (*c == ' ')
			*c = '_';
	printf("device %s\nmultiprocessors %d\nmemory_gib %.1f\ncompute_capability %d.%d\n",
	       prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, prop.major,
	       prop.minor);
	fflush(stdout);

	size_t big = (size_t)1 << 30, link = (size_t)256 << 20;
	void *d1, *d2, *pin;
	CK(cudaMalloc(&d1, big));
	CK(cudaMalloc(&d2, big));
	CK(cudaMemset(d1, 1, big));
	printf("d2d_gbs %.1f\n", 2.0 * big / copy_s(d2, d1, big, cudaMemcpyDeviceToDevice) * 1e-9);
	CK(cudaMallocHost(&pin, link));
	memset(pin, 1, link);
	char *page = (char *)malloc(link);
	if (!page) {
		fprintf(stderr, "cuda_limits: out of host memory\n");
		return 1;
	}
	memset(page, 1, link);
	printf("h2d_gbs %.1f\n", link / copy_s(d1, pin, link, cudaMemcpyHostToDevice) * 1e-9);
	printf("d2h_gbs %.1f\n", link / copy_s(pin, d1, link, cudaMemcpyDeviceToHost) * 1e-9);
	printf("h2d_pageable_gbs %.1f\n", link / copy_s(d1, page, link, cudaMemcpyHostToDevice) * 1e-9);
	printf("d2h_pageable_gbs %.1f\n", link / copy_s(page, d1, link, cudaMemcpyDeviceToHost) * 1e-9);
	fflush(stdout);
	free(page);
	CK(cudaFreeHost(pin));
	CK(cudaFree(d1));
	CK(cudaFree(d2));

	cublasHandle_t h;
	CB(cublasCreate(&h));
	printf("gemm_n %d\n", n);
	printf("sgemm_gflops %.0f\n", gemm_gflops(h, n, 0));
	fflush(stdout);
	printf("dgemm_gflops %.0f\n", gemm_gflops(h, n, 1));
	CB(cublasDestroy(h));
	return 0;
}
