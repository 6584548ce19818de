/* Unit tests for runtime/config/devmodel.c: curve parsing and evaluation (tables
 * inside, below and beyond their points, polynomials, never negative), speed
 * changes integrated across change points with hand-computed values, and the
 * per-PU random streams (deterministic, distinct, right moments). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/devmodel.h"

#define EPS 1e-12

#include "test_util.h"

static struct plb__curve_spec parse_ok(const char *text)
{
	struct plb__curve_spec c;
	char err[512];
	int rc = plb__curve_spec_parse(&c, text, err, sizeof err);

	if (rc)
		print_message("parse '%s': %s\n", text, err);
	assert_int_equal(rc, 0);
	return c;
}

/* Builds a model with speed changes "t:f" given as two arrays. */
static struct plb__devmodel model_with(int n, double *t, double *f)
{
	struct plb__devmodel m;

	memset(&m, 0, sizeof m);
	m.nchange = n;
	m.change_t = t;
	m.change_f = f;
	m.fail_t = INFINITY;
	return m;
}

/* A table is linear between points and at them, exact at the points. */
static void test_table_interpolates(void **state)
{
	(void)state;
	struct plb__curve_spec c = parse_ok("table 256:0.004 1024:0.009 4096:0.027");

	assert_int_equal(c.kind, PLB__CURVE_TABLE);
	assert_int_equal(c.n, 3);
	assert_near(plb__curve_spec_eval(&c, 256), 0.004, EPS);
	assert_near(plb__curve_spec_eval(&c, 1024), 0.009, EPS);
	assert_near(plb__curve_spec_eval(&c, 4096), 0.027, EPS);
	/* 0.004 + 384 * 0.005 / 768 */
	assert_near(plb__curve_spec_eval(&c, 640), 0.0065, EPS);
	/* 0.009 + 1536 * 0.018 / 3072 */
	assert_near(plb__curve_spec_eval(&c, 2560), 0.018, EPS);
	plb__curve_spec_fini(&c);
	assert_null(c.x);
}

/* Beyond the last point the last segment's line goes on. */
static void test_table_extrapolates_last_two(void **state)
{
	(void)state;
	struct plb__curve_spec c = parse_ok("table 256:0.004 1024:0.009 4096:0.027");

	/* 0.027 + 4096 * 0.018 / 3072 */
	assert_near(plb__curve_spec_eval(&c, 8192), 0.051, EPS);
	assert_near(plb__curve_spec_eval(&c, 65536),
			    0.027 + 61440 * 0.018 / 3072, 1e-10);
	plb__curve_spec_fini(&c);
}

/* Below the first point the first segment's line goes on, clamped at 0. */
static void test_table_below_first_point(void **state)
{
	(void)state;
	struct plb__curve_spec c = parse_ok("table 256:0.004 1024:0.009");

	/* 0.004 - 128 * 0.005 / 768 */
	assert_near(plb__curve_spec_eval(&c, 128), 0.004 - 0.000833333333333333, 1e-12);
	assert_near(plb__curve_spec_eval(&c, 0), 0.004 - 0.005 / 3, 1e-12);
	plb__curve_spec_fini(&c);

	/* steep first segment: 1 + 0.04 (x - 100) is 0 at x = 75 */
	c = parse_ok("table 100:1 200:5");
	assert_near(plb__curve_spec_eval(&c, 80), 0.2, 1e-12);
	assert_true(plb__curve_spec_eval(&c, 75) == 0);
	assert_true(plb__curve_spec_eval(&c, 50) == 0);
	assert_true(plb__curve_spec_eval(&c, 0) == 0);
	plb__curve_spec_fini(&c);
}

/* A falling last segment is clamped at 0 too: time is never negative. */
static void test_table_never_negative(void **state)
{
	(void)state;
	/* the first segment's line crosses 0 at x = 75: below it, 0 */
	struct plb__curve_spec c = parse_ok("table 100:1 200:5");

	assert_near(plb__curve_spec_eval(&c, 50), 0, EPS);
	assert_true(plb__curve_spec_eval(&c, 0) == 0);
	assert_near(plb__curve_spec_eval(&c, 90), 0.6, EPS);
	assert_near(plb__curve_spec_eval(&c, 150), 3, EPS);
	plb__curve_spec_fini(&c);
	/* a table whose time decreases is refused */
	char err[256];
	assert_int_equal(plb__curve_spec_parse(&c, "table 100:5 200:1", err, sizeof err),
			 PLB_EINVAL);
	assert_non_null(strstr(err, "must not decrease"));
}

/* A one-point table is proportional to units (constant if at 0 units). */
static void test_table_one_point(void **state)
{
	(void)state;
	struct plb__curve_spec c = parse_ok("table 100:2");

	assert_near(plb__curve_spec_eval(&c, 50), 1, EPS);
	assert_near(plb__curve_spec_eval(&c, 300), 6, EPS);
	assert_near(plb__curve_spec_eval(&c, 0), 0, EPS);
	plb__curve_spec_fini(&c);
	c = parse_ok("table 0:0.5");
	assert_near(plb__curve_spec_eval(&c, 1000), 0.5, EPS);
	plb__curve_spec_fini(&c);
}

/* poly is c0 + c1 x + c2 x^2 ..., clamped at 0; NONE evaluates to 0. */
static void test_poly_eval(void **state)
{
	(void)state;
	struct plb__curve_spec c = parse_ok("poly 2e-4 1.6e-6");

	assert_int_equal(c.kind, PLB__CURVE_POLY);
	assert_int_equal(c.n, 2);
	assert_near(plb__curve_spec_eval(&c, 1000), 0.0018, EPS);
	assert_near(plb__curve_spec_eval(&c, 0), 2e-4, EPS);
	plb__curve_spec_fini(&c);

	c = parse_ok("  poly   1 2 3  ");
	assert_near(plb__curve_spec_eval(&c, 2), 17, EPS);
	plb__curve_spec_fini(&c);


	memset(&c, 0, sizeof c);
	assert_true(plb__curve_spec_eval(&c, 123) == 0);
}

/* Malformed curves give PLB_EINVAL, a message naming what is accepted, and
 * nothing to free. */
static void test_curve_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *text, *says;
	} bad[] = {
		{"table", "empty"},
		{"table   ", "empty"},
		{"table 256-0.004", "malformed"},
		{"table 256:", "malformed"},
		{"table :1", "malformed"},
		{"table 256: 1", "malformed"},
		{"table 256:abc", "malformed"},
		{"table 256:nan", "malformed"},
		{"table 512:1 256:2", "unsorted"},
		{"table 256:1 256:2", "unsorted"},
		{"table 256:-1", "negative"},
		{"table -1:1 5:2", "negative"},
		{"poly", "no coefficient"},
		{"poly 1 x", "not a number"},
		{"poly 1 inf", "not a number"},
		{"poly 0x10", "not a number"},
		{"poly -1 0.01", "negative"},
		{"poly 1e19", "out of range"},
		{"poly 1e300 1e300 1e300", "out of range"},
		{"table 1:0.1 2:2e9", "out of range"},
		{"spline 1 2", "not a curve kind"},
		{"", "not a curve kind"},
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct plb__curve_spec c;
		char err[512] = "";
		int rc = plb__curve_spec_parse(&c, bad[i].text, err, sizeof err);
		if (rc != PLB_EINVAL || !strstr(err, bad[i].says) || !strstr(err, "accepted"))
			print_message("'%s' -> %d '%s'\n", bad[i].text, rc, err);
		assert_int_equal(rc, PLB_EINVAL);
		assert_non_null(strstr(err, bad[i].says));
		assert_non_null(strstr(err, "accepted"));
		assert_int_equal(c.kind, PLB__CURVE_NONE);
		assert_null(c.x);
		assert_null(c.y);
		assert_null(c.c);
	}
}

/* The factor is 1 before the first change and change_f[i] from change_t[i]. */
static void test_factor(void **state)
{
	(void)state;
	double t[] = {10, 20}, f[] = {4, 1};
	struct plb__devmodel m = model_with(2, t, f);

	assert_true(plb__devmodel_factor(&m, 0) == 1);
	assert_true(plb__devmodel_factor(&m, 9.999) == 1);
	assert_true(plb__devmodel_factor(&m, 10) == 4);
	assert_true(plb__devmodel_factor(&m, 15) == 4);
	assert_true(plb__devmodel_factor(&m, 20) == 1);
	assert_true(plb__devmodel_factor(&m, 1e6) == 1);
}

/* Stages crossing change points end where the hand computation says. */
static void test_finish_across_changes(void **state)
{
	(void)state;
	double t[] = {10, 20}, f[] = {4, 1};
	struct plb__devmodel m = model_with(2, t, f);

	/* 5 s of work in [5, 10) at x1, 2.5 in [10, 20) at x4, 2.5 more at x1 */
	assert_near(plb__devmodel_finish(&m, 5, 10), 22.5, EPS);
	/* all before the change */
	assert_near(plb__devmodel_finish(&m, 0, 5), 5, EPS);
	/* ends exactly at the change */
	assert_near(plb__devmodel_finish(&m, 0, 10), 10, EPS);
	/* inside the slow period: 1 s of work takes 4 s */
	assert_near(plb__devmodel_finish(&m, 12, 1), 16, EPS);
	/* 2 s of work by t = 20 (8 s at x4), then 1 s at x1 */
	assert_near(plb__devmodel_finish(&m, 12, 3), 21, EPS);
	/* started at the change point itself */
	assert_near(plb__devmodel_finish(&m, 10, 1), 14, EPS);
	/* after every change */
	assert_near(plb__devmodel_finish(&m, 25, 3), 28, EPS);
	/* no work: no time */
	assert_near(plb__devmodel_finish(&m, 7, 0), 7, EPS);

	/* a change at t = 0 applies from the start */
	double t0[] = {0}, f0[] = {2};
	struct plb__devmodel m0 = model_with(1, t0, f0);
	assert_near(plb__devmodel_finish(&m0, 0, 1), 2, EPS);

	/* without changes a stage takes its work */
	struct plb__devmodel plain = model_with(0, NULL, NULL);
	assert_near(plb__devmodel_finish(&plain, 3, 4.5), 7.5, EPS);
	assert_near(plb__devmodel_work_until(&plain, 4.5), 4.5, EPS);
}

/* work_until integrates 1/factor from 0 and is finish's inverse. */
static void test_work_until(void **state)
{
	(void)state;
	double t[] = {10, 20, 30}, f[] = {4, 1, 0.5};
	struct plb__devmodel m = model_with(3, t, f);

	assert_near(plb__devmodel_work_until(&m, 0), 0, EPS);
	assert_near(plb__devmodel_work_until(&m, -3), 0, EPS);
	assert_near(plb__devmodel_work_until(&m, 5), 5, EPS);
	assert_near(plb__devmodel_work_until(&m, 10), 10, EPS);
	assert_near(plb__devmodel_work_until(&m, 14), 11, EPS);
	assert_near(plb__devmodel_work_until(&m, 20), 12.5, EPS);
	assert_near(plb__devmodel_work_until(&m, 25), 17.5, EPS);
	/* from 30 on twice as fast: 22.5 + 2 * 5 */
	assert_near(plb__devmodel_work_until(&m, 35), 32.5, EPS);

	struct plb__rng r;
	plb__rng_seed(&r, 3, 0);
	for (int i = 0; i < 1000; i++) {
		double t0 = 40 * plb__rng_uniform(&r), w = 30 * plb__rng_uniform(&r);
		double t1 = plb__devmodel_finish(&m, t0, w);
		assert_true(t1 >= t0);
		assert_near(plb__devmodel_work_until(&m, t1) -
				    plb__devmodel_work_until(&m, t0), w, 1e-9);
	}
}

/* Same (seed, stream) gives the same sequence; other streams or seeds do
 * not, including swapped (seed, stream) pairs. */
/* noise_time 0: a stage is plb__devmodel_finish of its work times one
 * draw of the PU's stream, in call order (the scenarios written before
 * noise_time replay to the bit). */
static void test_stage_per_block_draws(void **state)
{
	(void)state;
	double t[] = {2}, f[] = {3};
	struct plb__devmodel m = model_with(1, t, f);
	m.noise = 0.05;
	struct plb__noise nz;
	struct plb__rng r;
	plb__noise_seed(&nz, 7, 3);
	plb__rng_seed(&r, 7, 3);
	for (int k = 0; k < 5; k++) {
		double t0 = 0.7 * k, w = 0.9;
		double want = plb__devmodel_finish(&m, t0, w * plb__rng_noise(&r, 0.05));
		assert_near(plb__devmodel_stage(&m, &nz, k % 2, t0, w), want, EPS);
	}
}

/* noise_time > 0: the speed is a function of (seed, stream, stage, time),
 * not of the blocks run. Two ways of cutting the same work give the same
 * end (stages add up, across speed changes too), a fresh stream and a used
 * one agree, a stage within one piece runs at one speed, and the stages'
 * pieces are apart. */
static void test_stage_pieces_in_time(void **state)
{
	(void)state;
	double t[] = {1.25, 3.1}, f[] = {2, 0.5};
	struct plb__devmodel m = model_with(2, t, f);
	m.noise = 0.08;
	m.noise_time = 0.1;
	struct plb__noise a, b;
	plb__noise_seed(&a, 11, 4);
	plb__noise_seed(&b, 11, 4);
	double one = plb__devmodel_stage(&m, &a, PLB__STAGE_COMPUTE, 0.05, 2.5);
	double at = 0.05;
	for (int k = 0; k < 10; k++)
		at = plb__devmodel_stage(&m, &b, PLB__STAGE_COMPUTE, at, 0.25);
	assert_near(at, one, 1e-9);
	assert_near(plb__devmodel_stage(&m, &a, PLB__STAGE_COMPUTE, 0.05, 2.5), one, 0);
	/* within the piece [0.2, 0.3) and before any change: one speed */
	double e1 = plb__devmodel_stage(&m, &a, PLB__STAGE_COMPUTE, 0.21, 0.01);
	double e2 = plb__devmodel_stage(&m, &a, PLB__STAGE_COMPUTE, 0.25, 0.02);
	assert_near((e1 - 0.21) / 0.01, (e2 - 0.25) / 0.02, 1e-9);
	assert_true(fabs((e1 - 0.21) / 0.01 - 1) > 1e-6);      /* noise there */
	double x1 = plb__devmodel_stage(&m, &a, PLB__STAGE_XFER, 0.21, 0.01);
	assert_true(fabs(x1 - e1) > 1e-9);
	/* another stream, another device */
	plb__noise_seed(&b, 11, 5);
	assert_true(fabs(plb__devmodel_stage(&m, &b, PLB__STAGE_COMPUTE, 0.21, 0.01) - e1) > 1e-9);
	/* no work ends where it starts */
	assert_near(plb__devmodel_stage(&m, &a, PLB__STAGE_COMPUTE, 0.4, 0), 0.4, 0);
}

/* A stage within one piece has the model's noise as its relative sd; one
 * 100 pieces long averages them, a tenth of it. Over 2000 seeds the sds
 * are known to a few percent. */
static void test_stage_long_blocks_average(void **state)
{
	(void)state;
	struct plb__devmodel m = model_with(0, NULL, NULL);
	m.noise = 0.05;
	m.noise_time = 0.5;
	enum { N = 2000 };
	double s[2] = {0}, s2[2] = {0};
	for (int k = 0; k < N; k++) {
		struct plb__noise nz;
		plb__noise_seed(&nz, (uint64_t)k, 0);
		double r[2] = {(plb__devmodel_stage(&m, &nz, PLB__STAGE_COMPUTE, 1.0, 0.25) - 1.0) / 0.25,
			       (plb__devmodel_stage(&m, &nz, PLB__STAGE_COMPUTE, 0, 50) - 0) / 50};
		for (int j = 0; j < 2; j++) {
			s[j] += r[j];
			s2[j] += r[j] * r[j];
		}
	}
	double sd[2];
	for (int j = 0; j < 2; j++) {
		double mean = s[j] / N;
		sd[j] = sqrt(s2[j] / N - mean * mean);
		assert_near(mean, 1, 4 * 0.05 / sqrt(N) + 0.001);
	}
	assert_near(sd[0], 0.05, 0.005);
	assert_near(sd[1], 0.005, 0.0015);
}

static void test_rng_deterministic_and_streams_differ(void **state)
{
	(void)state;
	struct plb__rng a, b, c, d, e;

	plb__rng_seed(&a, 42, 7);
	plb__rng_seed(&b, 42, 7);
	plb__rng_seed(&c, 42, 8);
	plb__rng_seed(&d, 43, 7);
	plb__rng_seed(&e, 7, 42);
	int same_c = 0, same_d = 0, same_e = 0;
	for (int i = 0; i < 1000; i++) {
		double x = plb__rng_uniform(&a);
		assert_true(x == plb__rng_uniform(&b));
		assert_true(x >= 0 && x < 1);
		same_c += x == plb__rng_uniform(&c);
		same_d += x == plb__rng_uniform(&d);
		same_e += x == plb__rng_uniform(&e);
	}
	assert_int_equal(same_c, 0);
	assert_int_equal(same_d, 0);
	assert_int_equal(same_e, 0);

	/* seed 0, stream 0 is a usable stream too */
	struct plb__rng z;
	plb__rng_seed(&z, 0, 0);
	assert_true(z.s[0] | z.s[1] | z.s[2] | z.s[3]);
	double sum = 0;
	for (int i = 0; i < 1000; i++)
		sum += plb__rng_uniform(&z);
	assert_near(sum / 1000, 0.5, 0.05);
}

static void moments(int n, double *v, double *mean, double *sd)
{
	double s = 0, s2 = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	*mean = s / n;
	for (int i = 0; i < n; i++)
		s2 += (v[i] - *mean) * (v[i] - *mean);
	*sd = sqrt(s2 / (n - 1));
}

/* plb__rng_normal has mean 0 and sd 1 over 10^5 draws. */
static void test_rng_normal_moments(void **state)
{
	(void)state;
	enum { N = 100000 };
	double *v = malloc(N * sizeof *v), mean, sd;
	struct plb__rng r;

	assert_non_null(v);
	plb__rng_seed(&r, 1, 1);
	for (int i = 0; i < N; i++)
		v[i] = plb__rng_normal(&r);
	moments(N, v, &mean, &sd);
	assert_near(mean, 0, 0.015);    /* se 0.0032 */
	assert_near(sd, 1, 0.01);       /* se 0.0022 */
	free(v);
}

/* Noise factors have mean ~1 and relative sd ~sd over 10^5 draws; sd 0
 * gives exactly 1. */
static void test_rng_noise_moments(void **state)
{
	(void)state;
	enum { N = 100000 };
	static const double sds[] = {0.05, 0.3};
	double *v = malloc(N * sizeof *v), mean, sd;
	struct plb__rng r;

	assert_non_null(v);
	for (size_t k = 0; k < sizeof sds / sizeof sds[0]; k++) {
		plb__rng_seed(&r, 12345, k);
		for (int i = 0; i < N; i++) {
			v[i] = plb__rng_noise(&r, sds[k]);
			assert_true(v[i] > 0);
		}
		moments(N, v, &mean, &sd);
		/* standard errors: sd / sqrt(N) for the mean, about
		 * sd / sqrt(2N) (more for the skewed 0.3) for sd */
		assert_near(mean, 1, 5 * sds[k] / sqrt(N));
		assert_near(sd, sds[k], 0.05 * sds[k]);
	}
	plb__rng_seed(&r, 1, 0);
	for (int i = 0; i < 10; i++)
		assert_true(plb__rng_noise(&r, 0) == 1);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_interpolates),
		cmocka_unit_test(test_table_extrapolates_last_two),
		cmocka_unit_test(test_table_below_first_point),
		cmocka_unit_test(test_table_never_negative),
		cmocka_unit_test(test_table_one_point),
		cmocka_unit_test(test_poly_eval),
		cmocka_unit_test(test_curve_parse_errors),
		cmocka_unit_test(test_factor),
		cmocka_unit_test(test_finish_across_changes),
		cmocka_unit_test(test_stage_per_block_draws),
		cmocka_unit_test(test_stage_pieces_in_time),
		cmocka_unit_test(test_stage_long_blocks_average),
		cmocka_unit_test(test_work_until),
		cmocka_unit_test(test_rng_deterministic_and_streams_differ),
		cmocka_unit_test(test_rng_normal_moments),
		cmocka_unit_test(test_rng_noise_moments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
