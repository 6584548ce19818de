/* The 2-D product in one process (plb_run_mm2d; runtime/core/mm2d.c and
 * wmm2d.c, one node): plb-mm's kernel gives a C that Freivalds' test on
 * the node passes, in double and single precision, on a real CPU PU and
 * on two emulated ones (their slices summing to the rectangle); a kernel
 * that gets one element wrong fails it; the drawn elements are the same
 * for the same seed, in [-1, 1), and differ by matrix; bad jobs, a
 * kernel with no function for a PU's class and a node's memory_mb too
 * small are refused, saying why. (Pivots between nodes: test/cli/mm2d.sh,
 * under mpirun.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernels/mm/mm.h"
#include "plb.h"
#include "test_util.h"

/* plb-mm's step, with c[0] off by one */
static int wrong_run(void *state, const struct plb_block *b)
{
	int rc = plb__mm2d_kernel.cpu.run(state, b);
	const struct plb_gemm_step *s = b->in;
	if (!rc && b->member == 0) {
		if (s->elem == 8)
			((double *)s->c)[0] += 1;
		else
			((float *)s->c)[0] += 1;
	}
	return rc;
}

static const struct plb_kernel wrong_kernel = {PLB_INIT, .name = "wrong", .cpu = {.run = wrong_run, .whole = 1}};
/* no function for any class */
static const struct plb_kernel none_kernel = {PLB_INIT, .name = "none"};

static plb_t *start(const char *text)
{
	static const struct plb_kernel *const ks[] = {&plb__mm2d_kernel, &wrong_kernel, &none_kernel};
	const char *path = test_write_tmp("mm2d", text);
	assert_non_null(path);
	struct plb_options o = {PLB_INIT, .config = path, .kernels = ks, .nkernels = 3, .quiet = 1};
	int argc = 1;
	char *args[] = {"test_mm2d", NULL}, **argv = args;
	plb_t *p = NULL;
	if (plb_init(&argc, &argv, &o, &p))
		fail_msg("plb_init: %s", plb_errmsg(p));
	unlink(path);
	return p;
}

static struct plb_mm2d job(const char *kernel, long n, int block, int elem)
{
	return (struct plb_mm2d){PLB_INIT, .kernel = kernel, .n = n, .block = block, .elem = elem, .seed = 5,
				 .verify = 1};
}

static void test_product(void **state)
{
	(void)state;
	const char *cfgs[] = {"[run]\nunits = 1\n[node a]\ncpu = 1\n",
			      "[run]\nunits = 1\n[node a]\nemu = f s\n[model f]\nclass = gpu\ncompute = poly 1e-4 1e-5\n"
			      "[model s]\nclass = cpu\ncompute = poly 1e-4 4e-5\n"};
	for (int c = 0; c < 2; c++) {
		plb_t *p = start(cfgs[c]);
		for (int elem = 4; elem <= 8; elem += 4) {
			struct plb_mm2d j = job("mm2d", 384, 64, elem);
			struct plb_mm2d_result r = {PLB_INIT};
			if (plb_run_mm2d(p, &j, &r))
				fail_msg("config %d, elem %d: %s", c, elem, plb_errmsg(p));
			assert_int_equal(r.verified, 1);
			assert_true(r.residual < (elem == 8 ? 1e-12 : 1e-4));
			assert_int_equal(r.nodes, 1);
			assert_int_equal(r.pus, c ? 2 : 1);
			assert_int_equal(r.blocks, 6);
			assert_true(r.product_s > 0 && r.step_s > 0);
			assert_true(r.bytes_net == 0);          /* one node: no pivot crosses */
			assert_true(r.benchmarks >= r.pus);
			/* the wrong kernel: the test sees it */
			j.kernel = "wrong";
			assert_int_equal(plb_run_mm2d(p, &j, &r), 0);
			if (r.verified != 0)
				fail_msg("config %d, elem %d: a wrong element passed (residual %g)", c, elem, r.residual);
		}
		assert_int_equal(plb_finalize(p), 0);
	}
}

static void test_elements(void **state)
{
	(void)state;
	double lo = 1, hi = -1, sum = 0;
	for (long i = 0; i < 200; i++)
		for (long j = 0; j < 50; j++) {
			double a = plb_mm2d_element(9, 0, i, j);
			assert_true(a >= -1 && a < 1);
			assert_true(a == plb_mm2d_element(9, 0, i, j));
			assert_true(a != plb_mm2d_element(9, 1, i, j));
			assert_true(a != plb_mm2d_element(10, 0, i, j));
			lo = a < lo ? a : lo;
			hi = a > hi ? a : hi;
			sum += a;
		}
	assert_true(lo < -0.99 && hi > 0.99 && sum / 10000 < 0.05 && sum / 10000 > -0.05);
}

static void refused(plb_t *p, struct plb_mm2d j, int code, const char *want)
{
	struct plb_mm2d_result r = {PLB_INIT};
	assert_int_equal(plb_run_mm2d(p, &j, &r), code);
	if (!strstr(plb_errmsg(p), want))
		fail_msg("'%s' does not say '%s'", plb_errmsg(p), want);
}

static void test_refused(void **state)
{
	(void)state;
	plb_t *p = start("[run]\nunits = 1\n[node a]\ncpu = 1\nmemory_mb = 1\n");
	refused(p, job("mm2d", 100, 64, 8), PLB_EINVAL, "n = 100 in blocks of 64");
	refused(p, job("mm2d", 128, 64, 2), PLB_EINVAL, "elem 2");
	refused(p, job("nope", 128, 64, 8), PLB_ENOENT, "kernel 'nope'");
	struct plb_mm2d j = job("mm2d", 128, 64, 8);
	j.partitioner = "best";
	refused(p, j, PLB_EINVAL, "partitioner 'best'");
	/* 3 x 1024^2 doubles are 24 MiB */
	refused(p, job("mm2d", 1024, 64, 8), PLB_ECONFIG, "do not fit in the nodes' [node] memory_mb (1 MiB");
	refused(p, job("none", 128, 64, 8), PLB_ENOENT, "cannot run kernel 'none'");
	/* after the refusals the node still runs a product */
	struct plb_mm2d_result r = {PLB_INIT};
	if (plb_run_mm2d(p, &j, &r) && !strstr(plb_errmsg(p), "partitioner"))
		fail_msg("%s", plb_errmsg(p));
	j.partitioner = NULL;
	assert_int_equal(plb_run_mm2d(p, &j, &r), 0);
	assert_int_equal(r.verified, 1);
	assert_int_equal(plb_finalize(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_product),
		cmocka_unit_test(test_elements),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
