/* The matrix-multiply kernels and the product check: the CPU kernel on
 * blocks of columns against a plain reference, the exact and Freivalds
 * checks accepting right products and catching wrong ones, and the CUDA
 * and OpenCL kernels against the CPU one where a GPU or an OpenCL device
 * (PoCL) is present. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mm/mm.h"
#include "test/unit/test_gpu.h"

static void *random_matrix(enum plb__mm_prec prec, int rows, int cols, uint64_t seed)
{
	size_t n = (size_t)rows * cols;
	void *m = malloc(n * plb__mm_elem(prec));
	assert_non_null(m);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		double v = (double)(seed >> 11) / 9007199254740992.0 * 2 - 1;
		if (prec == PLB__MM_F64)
			((double *)m)[i] = v;
		else
			((float *)m)[i] = (float)v;
	}
	return m;
}

static double get(enum plb__mm_prec prec, const void *m, size_t i)
{
	return prec == PLB__MM_F64 ? ((const double *)m)[i] : ((const float *)m)[i];
}

/* C = A x B computed block by block of uneven widths; every other block
 * as three slabs of rows of uneven heights (a CPU team's members). */
static void *product_by_blocks(enum plb__mm_prec prec, int n, const void *A, const void *B)
{
	size_t e = plb__mm_elem(prec), col = (size_t)n * e;
	void *C = calloc((size_t)n * n, e);
	assert_non_null(C);
	static const int widths[] = {1, 7, 2, 16, 5};
	int off = 0;
	for (int k = 0; off < n; k++) {
		int w = widths[k % 5];
		if (off + w > n)
			w = n - off;
		const char *b = (const char *)B + col * off;
		char *c = (char *)C + col * off;
		if (k % 2 == 0) {
			assert_int_equal(plb__mm_cpu(prec, n, w, A, b, c), 0);
		} else {
			int r1 = n / 5, r2 = n / 5 + n / 2;
			assert_int_equal(plb__mm_cpu_rows(prec, n, 0, r1, w, A, b, c), 0);
			assert_int_equal(plb__mm_cpu_rows(prec, n, r1, r2 - r1, w, A, b, c), 0);
			assert_int_equal(plb__mm_cpu_rows(prec, n, r2, n - r2, w, A, b, c), 0);
		}
		off += w;
	}
	return C;
}

/* The CPU kernel on blocks of columns equals the textbook product. */
static void test_cpu_blocks_match_reference(void **state)
{
	for (int p = 0; p < 2; p++) {
		enum plb__mm_prec prec = p ? PLB__MM_F64 : PLB__MM_F32;
		int n = 37;
		void *A = random_matrix(prec, n, n, 1), *B = random_matrix(prec, n, n, 2);
		void *C = product_by_blocks(prec, n, A, B);
		double tol = prec == PLB__MM_F64 ? 1e-12 : 1e-4;
		for (int j = 0; j < n; j++)
			for (int i = 0; i < n; i++) {
				double ref = 0;
				for (int k = 0; k < n; k++)
					ref += get(prec, A, (size_t)k * n + i) * get(prec, B, (size_t)j * n + k);
				double got = get(prec, C, (size_t)j * n + i);
				if (fabs(got - ref) > tol)
					fail_msg("C[%d,%d] = %g, expected %g", i, j, got, ref);
			}
		free(A);
		free(B);
		free(C);
	}
}

/* Both checks accept a right product and reject one wrong element. */
static void test_verify_catches_errors(void **state)
{
	for (int p = 0; p < 2; p++) {
		enum plb__mm_prec prec = p ? PLB__MM_F64 : PLB__MM_F32;
		int n = 64;
		void *A = random_matrix(prec, n, n, 3), *B = random_matrix(prec, n, n, 4);
		void *C = product_by_blocks(prec, n, A, B);
		double err;
		assert_int_equal(plb__mm_verify(prec, n, A, B, C, 1, 0, 9, &err), 0);
		assert_int_equal(plb__mm_verify(prec, n, A, B, C, 0, 3, 9, &err), 0);
		/* one element off by 1e-3 of its column's scale */
		size_t i = (size_t)17 * n + 40;
		if (prec == PLB__MM_F64)
			((double *)C)[i] += 1e-2;
		else
			((float *)C)[i] += 1e-2f;
		assert_int_equal(plb__mm_verify(prec, n, A, B, C, 1, 0, 9, &err), PLB_ESOLVE);
		assert_true(err > 0);
		assert_int_equal(plb__mm_verify(prec, n, A, B, C, 0, 3, 9, &err), PLB_ESOLVE);
		/* a NaN is an error, not a pass */
		if (prec == PLB__MM_F64)
			((double *)C)[i] = NAN;
		else
			((float *)C)[i] = NAN;
		assert_int_equal(plb__mm_verify(prec, n, A, B, C, 0, 2, 9, &err), PLB_ESOLVE);
		free(A);
		free(B);
		free(C);
	}
}

/* Freivalds scales: a 600 x 600 product checks in O(n^2). */
static void test_verify_large_freivalds(void **state)
{
	int n = 600;
	void *A = random_matrix(PLB__MM_F32, n, n, 5), *B = random_matrix(PLB__MM_F32, n, n, 6);
	void *C = product_by_blocks(PLB__MM_F32, n, A, B);
	double err;
	assert_int_equal(plb__mm_verify(PLB__MM_F32, n, A, B, C, 0, 4, 1, &err), 0);
	assert_true(err < 1e-4);
	free(A);
	free(B);
	free(C);
}

/* Bad arguments are refused. */
static void test_bad_args(void **state)
{
	float a = 1, b = 1, c = 0;
	assert_int_equal(plb__mm_cpu(PLB__MM_F32, 0, 1, &a, &b, &c), PLB_EINVAL);
	assert_int_equal(plb__mm_cpu(PLB__MM_F32, 1, -1, &a, &b, &c), PLB_EINVAL);
	assert_int_equal(plb__mm_cpu(PLB__MM_F32, 1, 1, NULL, &b, &c), PLB_EINVAL);
	assert_int_equal(plb__mm_cpu(PLB__MM_F32, 1, 0, &a, NULL, NULL), 0);
	assert_int_equal(plb__mm_cpu(PLB__MM_F32, 1, 1, &a, &b, &c), 0);
	assert_true(c == 1);
	assert_int_equal(plb__mm_cpu_rows(PLB__MM_F32, 1, 0, 2, 1, &a, &b, &c), PLB_EINVAL);
	assert_int_equal(plb__mm_cpu_rows(PLB__MM_F32, 1, 1, 1, 1, &a, &b, &c), PLB_EINVAL);
	assert_int_equal(plb__mm_cpu_rows(PLB__MM_F32, 1, -1, 1, 1, &a, &b, &c), PLB_EINVAL);
	c = 5;
	assert_int_equal(plb__mm_cpu_rows(PLB__MM_F32, 1, 1, 0, 1, &a, &b, &c), 0);
	assert_true(c == 5);
}

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
/* A device's matrix-multiply functions, as the test calls them. */
struct dev_mm {
	const char *what;
	int (*create)(enum plb__mm_prec prec, int n, int64_t max_cols, void **m, char *err,
		      size_t len);
	int (*set_a)(void *m, const void *A);
	int (*run)(void *m, int64_t cols, const void *B, void *C);
	void (*times)(const void *m, struct plb__phase_times *t);
	void (*destroy)(void *m);
};

/* The device's kernel equals the CPU kernel, for blocks of one column, of
 * one chunk and of several chunks on alternating streams or queues, and
 * refuses a block wider than it was made for. */
static void device_matches_cpu(const struct dev_mm *d)
{
	static const int widths[] = {1, 64, 235, 300, 0};
	for (int p = 0; p < 2; p++) {
		enum plb__mm_prec prec = p ? PLB__MM_F64 : PLB__MM_F32;
		int n = 300, max_cols = 300;
		size_t col = (size_t)n * plb__mm_elem(prec), bytes = col * (size_t)n;
		void *A = random_matrix(prec, n, n, 7), *B = random_matrix(prec, n, n, 8);
		void *Cc = malloc(bytes), *Cg = malloc(bytes);
		memset(Cg, 0xff, bytes);        /* NaN: a column not written fails */
		void *m;
		char err[320];
		if (d->create(prec, n, max_cols, &m, err, sizeof err) != 0)
			fail_msg("%s", err);
		assert_int_equal(d->set_a(m, A), 0);
		assert_int_equal(d->run(m, max_cols + 1, B, Cg), PLB_EINVAL);
		assert_int_equal(d->run(m, 0, B, Cg), 0);
		int off = 0;
		for (int k = 0; off < n; k++) {
			int w = widths[k % 4] < n - off ? widths[k % 4] : n - off;
			assert_int_equal(plb__mm_cpu(prec, n, w, A, (char *)B + col * off,
						     (char *)Cc + col * off), 0);
			double t0 = test_now();
			assert_int_equal(d->run(m, w, (char *)B + col * off, (char *)Cg + col * off), 0);
			struct plb__phase_times ph;
			d->times(m, &ph);
			test_phases_ok(&ph, test_now() - t0, 2);
			off += w;
		}
		double tol = prec == PLB__MM_F64 ? 1e-10 : 1e-3;
		for (size_t i = 0; i < (size_t)n * n; i++)
			if (!(fabs(get(prec, Cc, i) - get(prec, Cg, i)) <= tol))
				fail_msg("element %zu: cpu %g %s %g", i, get(prec, Cc, i), d->what,
					 get(prec, Cg, i));
		d->destroy(m);
		free(A);
		free(B);
		free(Cc);
		free(Cg);
	}
}
#endif

#ifdef PLB_HAVE_CUDA
static int cuda_create(enum plb__mm_prec prec, int n, int64_t max_cols, void **m, char *err,
		       size_t len)
{
	return plb__mm_cuda_create(0, prec, n, max_cols, (struct plb__mm_cuda **)m, err, len);
}
static int cuda_set_a(void *m, const void *A) { return plb__mm_cuda_set_a(m, A); }
static int cuda_run(void *m, int64_t cols, const void *B, void *C) { return plb__mm_cuda_run(m, cols, B, C); }
static void cuda_times(const void *m, struct plb__phase_times *t) { plb__mm_cuda_times(m, t); }
static void cuda_destroy(void *m) { plb__mm_cuda_destroy(m); }
#endif

/* The CUDA kernel against the CPU's. Skipped without a GPU, unless
 * PLB_REQUIRE_GPU=1 (set where a GPU must be found), which fails instead. */
static void test_cuda_matches_cpu(void **state)
{
	(void)state;
	test_need_gpu("test_cuda_matches_cpu");
#ifdef PLB_HAVE_CUDA
	static const struct dev_mm d = {"gpu", cuda_create, cuda_set_a, cuda_run, cuda_times,
					cuda_destroy};
	device_matches_cpu(&d);
#endif
}

#ifdef PLB_HAVE_OPENCL
static cl_context cl_ctx;
static cl_device_id cl_dev;
static int cl_create(enum plb__mm_prec prec, int n, int64_t max_cols, void **m, char *err, size_t len)
{
	return plb__mm_cl_create(cl_ctx, cl_dev, prec, n, max_cols, (struct plb__mm_cl **)m, err, len);
}
static int cl_set_a(void *m, const void *A) { return plb__mm_cl_set_a(m, A); }
static int cl_run(void *m, int64_t cols, const void *B, void *C) { return plb__mm_cl_run(m, cols, B, C); }
static void cl_times(const void *m, struct plb__phase_times *t) { plb__mm_cl_times(m, t); }
static void cl_destroy(void *m) { plb__mm_cl_destroy(m); }
#endif

/* The OpenCL kernel (CLBlast) against the CPU's, on the node's first
 * OpenCL device (PoCL here). */
static void test_opencl_matches_cpu(void **state)
{
	(void)state;
	test_need_opencl("test_opencl_matches_cpu");
#ifdef PLB_HAVE_OPENCL
	test_cl_first(&cl_ctx, &cl_dev);
	static const struct dev_mm d = {"opencl", cl_create, cl_set_a, cl_run, cl_times, cl_destroy};
	device_matches_cpu(&d);
	clReleaseContext(cl_ctx);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_blocks_match_reference),
		cmocka_unit_test(test_verify_catches_errors),
		cmocka_unit_test(test_verify_large_freivalds),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_cuda_matches_cpu),
		cmocka_unit_test(test_opencl_matches_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
