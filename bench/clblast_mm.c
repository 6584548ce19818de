/* The reference plb-mm's OpenCL figures are compared with: C = A x B (n x
 * n, column-major) by CLBlast called directly on an OpenCL device, no plb
 * in between.
 *
 *   clblast_mm N single|double [REPS] [DEVICE]
 *
 * DEVICE is an index over every platform's devices (default 0). Prints one
 * line per way of calling it, each the median of REPS timed repetitions
 * after one warm-up (context, queue, buffers and CLBlast's kernels made
 * before):
 *   gemm  A, B, C already on the device
 *   copy  A and B copied from host memory, the gemm, C copied back (what
 *         plb-mm's device does, in chunks)
 * Each line: mode, seconds, GFLOP/s (2 n^3 over the seconds). The product
 * is checked at 64 random entries against a double-precision dot product;
 * a mismatch or any OpenCL or CLBlast error exits 1 naming file:line.
 * Without OpenCL in the build it says so and exits 3. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_PROG "clblast_mm"
#include "bench/bench.h"

#ifdef PLB_HAVE_OPENCL
#include <clblast_c.h>

#include "kernels/opencl_util.h"

#define CK(call)                                                                   \
	do {                                                                       \
		cl_int e_ = (call);                                                \
		if (e_ != CL_SUCCESS) {                                            \
			fprintf(stderr, "%s: %s:%d: %s: %s\n", BENCH_PROG, __FILE__, \
				__LINE__, #call, plb__cl_error_name(e_));          \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

struct job {
	size_t n, elem;
	int dbl;
	cl_command_queue q;
	cl_mem A, B, C;
	void *hA, *hB, *hC;
};

static void gemm(struct job *j)
{
	size_t n = j->n;
	CLBlastStatusCode st = j->dbl
		? CLBlastDgemm(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
			       1.0, j->A, 0, n, j->B, 0, n, 0.0, j->C, 0, n, &j->q, NULL)
		: CLBlastSgemm(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
			       1.0f, j->A, 0, n, j->B, 0, n, 0.0f, j->C, 0, n, &j->q, NULL);
	if (st != CLBlastSuccess) {
		fprintf(stderr, "%s: %s:%d: CLBlast gemm: status %d\n", BENCH_PROG, __FILE__, __LINE__, (int)st);
		exit(1);
	}
	CK(clFinish(j->q));
}

static void with_copies(struct job *j)
{
	size_t bytes = j->n * j->n * j->elem;
	CK(clEnqueueWriteBuffer(j->q, j->A, CL_FALSE, 0, bytes, j->hA, 0, NULL, NULL));
	CK(clEnqueueWriteBuffer(j->q, j->B, CL_FALSE, 0, bytes, j->hB, 0, NULL, NULL));
	gemm(j);
	CK(clEnqueueReadBuffer(j->q, j->C, CL_TRUE, 0, bytes, j->hC, 0, NULL, NULL));
}

static double elem(const struct job *j, const void *m, size_t i)
{
	return j->dbl ? ((const double *)m)[i] : ((const float *)m)[i];
}

int main(int argc, char **argv)
{
	if (argc < 3 || atoi(argv[1]) < 1 || (strcmp(argv[2], "single") && strcmp(argv[2], "double"))) {
		fprintf(stderr, "usage: %s N single|double [REPS] [DEVICE]\n", BENCH_PROG);
		return 2;
	}
	struct job j = {.n = (size_t)atoi(argv[1]), .dbl = !strcmp(argv[2], "double")};
	int reps = argc > 3 ? atoi(argv[3]) : 5, dev_index = argc > 4 ? atoi(argv[4]) : 0;
	reps = reps < 1 ? 1 : reps > 100 ? 100 : reps;
	j.elem = j.dbl ? 8 : 4;
	size_t bytes = j.n * j.n * j.elem;
	cl_context ctx;
	cl_device_id dev;
	char why[320], name[256] = "?";
	if (plb__cl_first(dev_index, &ctx, &dev, why, sizeof why)) {
		fprintf(stderr, "%s: device %d: %s\n", BENCH_PROG, dev_index, why);
		return 1;
	}
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
	printf("device %s\n", name);
	cl_int e;
	j.q = clCreateCommandQueue(ctx, dev, 0, &e);
	CK(e);
	j.A = clCreateBuffer(ctx, CL_MEM_READ_ONLY, bytes, NULL, &e);
	CK(e);
	j.B = clCreateBuffer(ctx, CL_MEM_READ_ONLY, bytes, NULL, &e);
	CK(e);
	j.C = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, bytes, NULL, &e);
	CK(e);
	j.hA = malloc(bytes);
	j.hB = malloc(bytes);
	j.hC = malloc(bytes);
	if (!j.hA || !j.hB || !j.hC) {
		fprintf(stderr, "%s: out of memory\n", BENCH_PROG);
		return 1;
	}
	srand(1);
	for (size_t i = 0; i < j.n * j.n; i++) {
		double a = rand() / (double)RAND_MAX - 0.5, b = rand() / (double)RAND_MAX - 0.5;
		if (j.dbl)
			((double *)j.hA)[i] = a, ((double *)j.hB)[i] = b;
		else
			((float *)j.hA)[i] = (float)a, ((float *)j.hB)[i] = (float)b;
	}
	with_copies(&j);        /* warm-up: CLBlast compiles its kernels */
	for (int t = 0; t < 64; t++) {
		size_t r = (size_t)rand() % j.n, c = (size_t)rand() % j.n;
		double want = 0, scale = 0;
		for (size_t k = 0; k < j.n; k++) {
			want += elem(&j, j.hA, r + k * j.n) * elem(&j, j.hB, k + c * j.n);
			scale += fabs(elem(&j, j.hA, r + k * j.n) * elem(&j, j.hB, k + c * j.n));
		}
		double got = elem(&j, j.hC, r + c * j.n);
		if (fabs(got - want) > (j.dbl ? 1e-10 : 1e-4) * (scale + 1)) {
			fprintf(stderr, "%s: C[%zu,%zu] = %g, want %g\n", BENCH_PROG, r, c, got, want);
			return 1;
		}
	}
	double t[100], flop = 2.0 * (double)j.n * (double)j.n * (double)j.n;
	for (int mode = 0; mode < 2; mode++) {
		for (int i = 0; i < reps; i++) {
			double t0 = bench_now();
			if (mode)
				with_copies(&j);
			else
				gemm(&j);
			t[i] = bench_now() - t0;
		}
		double m = bench_median(t, reps);
		printf("%-5s %.6f %.2f\n", mode ? "copy" : "gemm", m, flop / m * 1e-9);
	}
	clReleaseMemObject(j.A);
	clReleaseMemObject(j.B);
	clReleaseMemObject(j.C);
	clReleaseCommandQueue(j.q);
	clReleaseContext(ctx);
	free(j.hA);
	free(j.hB);
	free(j.hC);
	return 0;
}
#else
int main(void)
{
	fprintf(stderr, "%s: this build has no OpenCL (see make's warning)\n", BENCH_PROG);
	return 3;
}
#endif
