/* The Black-Scholes kernels and the input reader: textbook prices, the CPU
 * kernel in both precisions against the double reference on blocks of
 * uneven sizes, put-call parity, the check catching a wrong price, the
 * seeded generator, the CSV reader (good files, and every malformed one
 * named by file:line), the CUDA kernel against the CPU one where a GPU
 * is present, and the OpenCL kernel where an OpenCL device is (PoCL). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/bs/bs.h"
#include "test/unit/test_gpu.h"
#include "test/unit/test_util.h"

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
static double get(enum plb__bs_prec prec, const void *out, size_t i)
{
	return prec == PLB__BS_F64 ? ((const double *)out)[i] : ((const float *)out)[i];
}
#endif

/* Hull's example (S = K = 100, T = 1, r = 5%, v = 20%): call 10.4506,
 * put 5.5735; an out-of-the-money call far from expiry and a deep
 * in-the-money one. */
static void test_textbook_prices(void **state)
{
	(void)state;
	struct plb__bs_opt o[3] = {{100, 100, 1, 0.05, 0.2}, {42, 40, 0.5, 0.1, 0.2},
				   {50, 10, 2, 0.03, 0.3}};
	double out[6], c, p;
	assert_int_equal(plb__bs_cpu(PLB__BS_F64, o, out, 3), 0);
	assert_true(fabs(out[0] - 10.4506) < 1e-4 && fabs(out[1] - 5.5735) < 1e-4);
	/* Hull 15.6: S = 42, K = 40, T = 0.5, r = 10%, v = 20%: 4.76 and 0.81 */
	assert_true(fabs(out[2] - 4.76) < 5e-3 && fabs(out[3] - 0.81) < 5e-3);
	/* deep in the money: the put is almost worthless (8.6e-5) and the
	 * call S - K e^{-rT} plus it (parity) */
	assert_true(out[5] > 0 && out[5] < 1e-4 && fabs(out[4] - out[5] - (50 - 10 * exp(-0.06))) < 1e-12);
	plb__bs_ref(&o[0], &c, &p);
	assert_true(fabs(c - out[0]) < 1e-12 * 200 && fabs(p - out[1]) < 1e-12 * 200);
}

/* Drawn options priced in blocks of uneven sizes equal one call over all
 * of them, and pass the check, in both precisions. */
static void test_blocks_and_verify(void **state)
{
	(void)state;
	size_t n = 10007;
	for (int k = 0; k < 2; k++) {
		enum plb__bs_prec prec = k ? PLB__BS_F64 : PLB__BS_F32;
		size_t iu = plb__bs_in_unit(prec), ou = plb__bs_out_unit(prec);
		char *in = malloc(n * iu), *a = malloc(n * ou), *b = malloc(n * ou);
		assert_true(in && a && b);
		plb__bs_generate(prec, in, n, 3);
		assert_int_equal(plb__bs_cpu(prec, in, a, n), 0);
		static const size_t w[] = {1, 7, 64, 1000, 3};
		for (size_t off = 0, i = 0; off < n; i++) {
			size_t m = w[i % 5] < n - off ? w[i % 5] : n - off;
			assert_int_equal(plb__bs_cpu(prec, in + off * iu, b + off * ou, m), 0);
			off += m;
		}
		assert_memory_equal(a, b, n * ou);
		size_t bad = 1;
		double er = 1, ep = 1;
		assert_int_equal(plb__bs_verify(prec, in, a, n, &bad, &er, &ep), 0);
		assert_true(bad == n && er < (k ? 1e-12 : 2e-5) && ep < (k ? 1e-12 : 2e-5));
		/* one put off by 0.1% of S + K is caught, and named */
		size_t at = 4321;
		struct plb__bs_opt o = k ? ((struct plb__bs_opt *)in)[at]
					 : (struct plb__bs_opt){((struct plb__bs_optf *)in)[at].S,
								((struct plb__bs_optf *)in)[at].K, 0, 0, 0};
		double d = 1e-3 * (o.S + o.K);
		if (prec == PLB__BS_F64)
			((double *)a)[2 * at + 1] += d;
		else
			((float *)a)[2 * at + 1] += (float)d;
		assert_int_equal(plb__bs_verify(prec, in, a, n, &bad, &er, &ep), PLB_ESOLVE);
		assert_true(bad == at && er > 5e-4 && ep > 5e-4);
		free(in);
		free(a);
		free(b);
	}
}

/* The generator: in its ranges, the same options for the same seed, others
 * for another, single the rounding of double, and any range of options
 * drawn (and priced) on its own as it is in the whole. */
static void test_generate(void **state)
{
	(void)state;
	size_t n = 5000;
	struct plb__bs_opt *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
	struct plb__bs_optf *f = malloc(n * sizeof *f);
	plb__bs_generate(PLB__BS_F64, a, n, 9);
	plb__bs_generate(PLB__BS_F64, b, n, 9);
	assert_memory_equal(a, b, n * sizeof *a);
	plb__bs_generate(PLB__BS_F64, b, n, 10);
	assert_true(memcmp(a, b, n * sizeof *a) != 0);
	plb__bs_generate(PLB__BS_F32, f, n, 9);
	for (size_t i = 0; i < n; i++) {
		assert_true(a[i].S >= 5 && a[i].S < 30 && a[i].K >= 1 && a[i].K < 100);
		assert_true(a[i].T >= 0.25 && a[i].T < 10 && a[i].r >= 0.01 && a[i].r < 0.05);
		assert_true(a[i].v >= 0.1 && a[i].v < 0.5);
		assert_true(f[i].S == (float)a[i].S && f[i].v == (float)a[i].v);
	}
	/* option j depends on the seed and j alone: any range drawn apart is
	 * that range of the whole, and prices of options drawn block by
	 * block are the prices of the whole set, to the bit */
	plb__bs_draw(PLB__BS_F64, b, 1234, 999, 9);
	assert_memory_equal(a + 1234, b, 999 * sizeof *a);
	plb__bs_draw(PLB__BS_F32, b, 4000, 1000, 9);
	assert_memory_equal(f + 4000, b, 1000 * sizeof *f);
	for (int prec = PLB__BS_F32; prec <= PLB__BS_F64; prec++) {
		size_t ou = plb__bs_out_unit(prec);
		char *whole = malloc(n * ou), *parts = malloc(n * ou);
		assert_int_equal(plb__bs_cpu(prec, prec == PLB__BS_F64 ? (void *)a : (void *)f, whole, n), 0);
		size_t cut[] = {0, 1, 300, 555, 4999, n};
		for (int k = 0; k + 1 < 6; k++)
			assert_int_equal(plb__bs_cpu_drawn(prec, 9, cut[k], parts + cut[k] * ou,
							   cut[k + 1] - cut[k]), 0);
		assert_memory_equal(whole, parts, n * ou);
		assert_int_equal(plb__bs_cpu_drawn(prec, 9, 0, NULL, 1), PLB_EINVAL);
		free(whole);
		free(parts);
	}
	free(a);
	free(b);
	free(f);
}

static char *write_tmp(const char *text)
{
	char *path = test_write_tmp("bs", text);
	assert_non_null(path);
	return path;
}

/* A good file: columns in any order, an extra one, comments, blank lines,
 * spaces and CRLF; both precisions. */
static void test_csv_good(void **state)
{
	(void)state;
	char *path = write_tmp("# two options\n"
			       "id, v ,K,S,T,r\r\n"
			       "\n"
			       "a,0.2,100,100,1,0.05\r\n"
			       "# a comment\n"
			       "b, 0.3 , 10 , 50 , 2 , -0.01\n");
	char err[256] = "";
	void *in = NULL;
	size_t n = 0;
	assert_int_equal(plb__bs_read_csv(path, PLB__BS_F64, &in, &n, err, sizeof err), 0);
	assert_int_equal(n, 2);
	const struct plb__bs_opt *o = in;
	assert_true(o[0].S == 100 && o[0].K == 100 && o[0].T == 1 && o[0].r == 0.05 && o[0].v == 0.2);
	assert_true(o[1].S == 50 && o[1].K == 10 && o[1].T == 2 && o[1].r == -0.01 && o[1].v == 0.3);
	free(in);
	assert_int_equal(plb__bs_read_csv(path, PLB__BS_F32, &in, &n, err, sizeof err), 0);
	assert_true(n == 2 && ((struct plb__bs_optf *)in)[1].v == 0.3f);
	free(in);
	unlink(path);
}

/* Every malformed file is refused with its file:line and what is
 * accepted, and nothing is returned. */
static void test_csv_bad(void **state)
{
	(void)state;
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"S,K,T,r\n1,2,3,4\n", ":1: the header has no column v"},
		{"S,K,T,r,v,S\n", ":1: column S named twice"},
		{"S,K,T,r,v\n1,2,3,0.1,0.2\n1,2,x,0.1,0.2\n", ":3: T = 'x'; accepted: a finite number > 0"},
		{"S,K,T,r,v\n1,2,3,0.1\n", ":2: 4 fields where the header has 5"},
		{"S,K,T,r,v\n1,-2,3,0.1,0.2\n", ":2: K = '-2'"},
		{"S,K,T,r,v\n1,2,3,inf,0.2\n", ":2: r = 'inf'; accepted: a finite number\n"},
		{"S,K,T,r,v\n1,2,3,0.1,0\n", ":2: v = '0'"},
		{"S,K,T,r,v\n1,2,3,0.1,1e999\n", ":2: v = '1e999'"},
		{"S,K,T,r,v\n1,2,3,0.1,0.2,\n", ":2: 6 fields"},
		{"# nothing\n\n", ":2: no options and no header"},
		{"S,K,T,r,v\n", ":1: no options;"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *path = write_tmp(cases[i].text), err[256] = "", want[128];
		void *in = (void *)&err;
		size_t n = 77;
		int rc = plb__bs_read_csv(path, PLB__BS_F64, &in, &n, err, sizeof err);
		/* the message starts with the path and quotes the case's text */
		snprintf(want, sizeof want, "%s%s", path, cases[i].want);
		char *nl = strchr(want, '\n');
		if (nl)
			*nl = '\0';
		if (rc != PLB_EINVAL || strncmp(err, want, strlen(want)) || in != (void *)&err || n != 77)
			fail_msg("case %zu: rc %d, '%s', expected '%s...'", i, rc, err, want);
		unlink(path);
	}
	char err[256];
	void *in;
	size_t n;
	assert_int_equal(plb__bs_read_csv("/nonexistent/options.csv", PLB__BS_F64, &in, &n, err, sizeof err),
			 PLB_EIO);
	assert_non_null(strstr(err, "/nonexistent/options.csv: cannot open"));
}

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
/* A device's prices g of the first n options `in` equal the CPU's a, to
 * rounding (a device's exp and log differ in the last bits). */
static void same_prices(enum plb__bs_prec prec, const char *dev, const void *in, const void *a,
			const void *g, size_t n)
{
	int k = prec == PLB__BS_F64;
	double tol = k ? 1e-12 : 2e-5;
	for (size_t i = 0; i < 2 * n; i++) {
		const struct plb__bs_optf *f = (const struct plb__bs_optf *)in + i / 2;
		const struct plb__bs_opt *d = (const struct plb__bs_opt *)in + i / 2;
		double scale = k ? d->S + d->K : f->S + f->K;
		if (!(fabs(get(prec, a, i) - get(prec, g, i)) <= tol * scale))
			fail_msg("%s, %zu options, value %zu: cpu %.9g %s %.9g", k ? "double" : "single",
				 n, i, get(prec, a, i), dev, get(prec, g, i));
	}
}
#endif

/* The CUDA kernel equals the CPU kernel, for blocks of 1, 1000 and 100000
 * options, the buffers growing between them. Skipped without a GPU,
 * unless PLB_REQUIRE_GPU=1, which fails instead. */
static void test_cuda_matches_cpu(void **state)
{
	(void)state;
	test_need_gpu("test_cuda_matches_cpu");
#ifdef PLB_HAVE_CUDA
	static const size_t sizes[] = {1, 1000, 100000};
	for (int k = 0; k < 2; k++) {
		enum plb__bs_prec prec = k ? PLB__BS_F64 : PLB__BS_F32;
		size_t n = 100000, iu = plb__bs_in_unit(prec), ou = plb__bs_out_unit(prec);
		char *in = malloc(n * iu), *a = malloc(n * ou), *g = malloc(n * ou);
		plb__bs_generate(prec, in, n, 5);
		struct plb__bs_cuda *c;
		char err[256];
		if (plb__bs_cuda_create(0, prec, &c, err, sizeof err) != 0)
			fail_msg("%s", err);
		for (int s = 0; s < 3; s++) {
			memset(g, 0xff, n * ou);        /* NaN: a price not written fails */
			assert_int_equal(plb__bs_cpu(prec, in, a, sizes[s]), 0);
			double t0 = test_now();
			assert_int_equal(plb__bs_cuda_run(c, in, g, sizes[s]), 0);
			struct plb__phase_times ph;
			plb__bs_cuda_times(c, &ph);
			test_phases_ok(&ph, test_now() - t0, 1);
			same_prices(prec, "gpu", in, a, g, sizes[s]);
		}
		plb__bs_cuda_destroy(c);
		free(in);
		free(a);
		free(g);
	}
#endif
}

/* The OpenCL kernel equals the CPU kernel on the node's first OpenCL
 * device (PoCL here), for blocks of 1, 1000 and 100000 options (two
 * chunks on two queues), the buffers growing between them; its copies and
 * kernel timed apart by the queues' events. Options drawn on the device
 * are plb__bs_draw's to the bit. */
static void test_opencl_matches_cpu(void **state)
{
	(void)state;
	test_need_opencl("test_opencl_matches_cpu");
#ifdef PLB_HAVE_OPENCL
	static const size_t sizes[] = {1, 1000, 100000};
	cl_context ctx;
	cl_device_id dev;
	char err[320];
	test_cl_first(&ctx, &dev);
	for (int k = 0; k < 2; k++) {
		enum plb__bs_prec prec = k ? PLB__BS_F64 : PLB__BS_F32;
		size_t n = 100000, iu = plb__bs_in_unit(prec), ou = plb__bs_out_unit(prec);
		char *in = malloc(n * iu), *a = malloc(n * ou), *g = malloc(n * ou);
		plb__bs_generate(prec, in, n, 5);
		struct plb__bs_cl *c;
		if (plb__bs_cl_create(ctx, dev, prec, &c, err, sizeof err) != 0)
			fail_msg("%s", err);
		for (int s = 0; s < 3; s++) {
			memset(g, 0xff, n * ou);
			assert_int_equal(plb__bs_cpu(prec, in, a, sizes[s]), 0);
			double t0 = test_now();
			assert_int_equal(plb__bs_cl_run(c, in, g, sizes[s]), 0);
			struct plb__phase_times ph;
			plb__bs_cl_times(c, &ph);
			test_phases_ok(&ph, test_now() - t0, 2);
			same_prices(prec, "opencl", in, a, g, sizes[s]);
		}
		/* options drawn on the device: the host's draw, to the bit (the
		 * same device prices both), from any first option */
		assert_true(plb__bs_cl_draws(c));       /* PoCL has doubles */
		for (int s = 0; s < 3; s++) {
			uint64_t first = (uint64_t)s * 987654321u;
			plb__bs_draw(prec, in, first, sizes[s], 77);
			assert_int_equal(plb__bs_cl_run(c, in, a, sizes[s]), 0);
			memset(g, 0xff, n * ou);
			double t0 = test_now();
			assert_int_equal(plb__bs_cl_run_drawn(c, 77, first, g, sizes[s]), 0);
			struct plb__phase_times ph;
			plb__bs_cl_times(c, &ph);
			test_phases_ok(&ph, test_now() - t0, 2);
			assert_true(ph.in_s == 0);      /* nothing copied in */
			assert_memory_equal(a, g, sizes[s] * ou);
		}
		assert_int_equal(plb__bs_cl_run(c, NULL, g, 10), PLB_EINVAL);
		plb__bs_cl_destroy(c);
		free(in);
		free(a);
		free(g);
	}
	clReleaseContext(ctx);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_textbook_prices),
		cmocka_unit_test(test_blocks_and_verify),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_csv_good),
		cmocka_unit_test(test_csv_bad),
		cmocka_unit_test(test_cuda_matches_cpu),
		cmocka_unit_test(test_opencl_matches_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
