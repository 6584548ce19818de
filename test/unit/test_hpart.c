/* Hierarchical partitioning with functional performance models
 * (balancer/hpart.c): the FPMs read their points back and never fall; the
 * GPA splits by speed on constant-speed models and equalises times on
 * others; INPA with IDPA nested gives a layout whose columns and slices
 * sum right, converges on devices whose speed depends on the size (a GPU
 * that saturates, and one that falls when its slice leaves its memory)
 * within 6% of the bound where slices are many columns, where the
 * multiple-CPM baseline does not converge, and matches the CPM baselines
 * where speeds are constant; slices of a fraction of a block balance
 * where whole columns cannot; memory caps hold with every method, and
 * caps too small are refused; a node's devices benchmarked at once
 * partition better where they slow each other; bad arguments are
 * refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/hpart.h"

static void test_fpm(void **state)
{
	(void)state;
	struct plb__fpm f = {0};
	assert_true(isnan(plb__fpm_time(&f, 1)));
	assert_int_equal(plb__fpm_add(&f, 0, 1), PLB_EINVAL);
	assert_int_equal(plb__fpm_add(&f, 10, 2), 0);
	assert_int_equal(plb__fpm_add(&f, 40, 4), 0);
	assert_int_equal(plb__fpm_add(&f, 20, 5), 0);   /* slower than 40: the envelope */
	assert_true(fabs(plb__fpm_time(&f, 5) - 1) < 1e-12);       /* 10's speed below it */
	assert_true(fabs(plb__fpm_time(&f, 30) - 5) < 1e-12);      /* never falls: 5 up to 40 */
	assert_true(fabs(plb__fpm_time(&f, 80) - 10) < 1e-12);     /* 40's speed past it */
	for (double t = 0.5; t < 20; t *= 1.3) {
		double x = plb__fpm_size(&f, t);
		assert_true(plb__fpm_time(&f, x) <= t * (1 + 1e-12));
		assert_true(plb__fpm_time(&f, x * 1.001 + 1e-9) > t || x >= 20);
	}
	assert_int_equal(plb__fpm_add(&f, 20, 3), 0);   /* replaced */
	assert_int_equal(f.n, 3);
	assert_true(fabs(plb__fpm_time(&f, 20) - 3) < 1e-12);
	for (int k = 0; k < 200; k++)                   /* capped */
		assert_int_equal(plb__fpm_add(&f, 1 + k * 0.37, 1 + k), 0);
	assert_true(f.n <= PLB__FPM_MAX);
	for (int k = 0; k + 1 < f.n; k++)
		assert_true(f.x[k] < f.x[k + 1]);
}

static void test_gpa(void **state)
{
	(void)state;
	struct plb__fpm f[3] = {{0}};
	double speed[3] = {1, 2, 5};
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb__fpm_add(&f[i], 100, 100 / speed[i]), 0);
	long out[3];
	double T = plb__gpa(f, 3, 800, 1, NULL, out);
	assert_int_equal(out[0] + out[1] + out[2], 800);
	assert_true(labs(out[0] - 100) <= 1 && labs(out[1] - 200) <= 1 && labs(out[2] - 500) <= 1);
	assert_true(fabs(T - 100) <= 1.0 + 1e-9);
	/* size-dependent: a device twice as fast up to 100 units, then as slow
	 * as the other: equal times, not equal speeds */
	struct plb__fpm g[2] = {{0}};
	assert_int_equal(plb__fpm_add(&g[0], 100, 50), 0);
	assert_int_equal(plb__fpm_add(&g[0], 400, 350), 0);
	assert_int_equal(plb__fpm_add(&g[1], 100, 100), 0);
	T = plb__gpa(g, 2, 300, 0, NULL, out);
	double t0 = plb__fpm_time(&g[0], (double)out[0]), t1 = plb__fpm_time(&g[1], (double)out[1]);
	assert_int_equal(out[0] + out[1], 300);
	assert_true(fabs(t0 - t1) <= 1.0 + 1e-9);
	assert_true(out[0] > 100 && out[0] < 200);
	assert_true(isnan(plb__gpa(g, 2, 1, 1, NULL, out)));  /* 1 unit, at least 1 each */
	/* caps: the fastest (speed 5) held at 300 of its 500; the other two
	 * share the 500 left at equal times (1 : 2) */
	long cap[3] = {800, 800, 300};
	T = plb__gpa(f, 3, 800, 1, cap, out);
	assert_int_equal(out[0] + out[1] + out[2], 800);
	assert_int_equal(out[2], 300);
	assert_true(labs(out[0] - 167) <= 1 && labs(out[1] - 333) <= 1);
	assert_true(fabs(T - 500.0 / 3) <= 1.0 + 1e-9);
	long small[3] = {100, 100, 100};
	assert_true(isnan(plb__gpa(f, 3, 800, 1, small, out)));     /* 300 < 800 */
	long zero[3] = {0, 800, 800};
	assert_true(isnan(plb__gpa(f, 3, 800, 1, zero, out)));      /* a cap below min_each */
}

/* Devices: a CPU core (constant speed), a GPU that saturates with size,
 * one whose slice falls out of its memory past a size. Time for one step
 * on m x d blocks: area / speed(area). */
struct cluster {
	int q, p[16];
	int kind[16][8];        /* 0 CPU, 1 GPU, 2 GPU with a memory cliff, 3 constant fast */
	long benches;
	int sub;                /* the partition's slices in 1/sub blocks (0: whole) */
};

static double speed_of(int kind, double area)
{
	switch (kind) {
	case 0:
		return 1.0;
	case 1:
		return 12.0 * area / (area + 40);
	case 2:
		return area > 300 ? 2.0 : 10.0 * area / (area + 20);
	default:
		return 4.0;
	}
}

static double bench(void *ctx, int i, int j, int m, double d)
{
	struct cluster *c = ctx;
	c->benches++;
	double area = (double)m * d;
	return area / speed_of(c->kind[i][j], area);
}

/* the product's step time under partition h: the slowest device's true time */
static double step_time(const struct cluster *c, const struct plb__hpart *h)
{
	double worst = 0;
	for (int i = 0; i < h->q; i++)
		for (int j = 0; j < c->p[i]; j++) {
			int d = h->d[h->off[i] + j];
			if (d)
				worst = fmax(worst, bench((void *)c, i, j, h->m[i],
							  (double)d / (c->sub > 1 ? c->sub : 1)));
		}
	return worst;
}

static void check_layout(const struct cluster *c, const struct plb__hpart *h, int N)
{
	long area = 0;
	for (int i = 0; i < h->q; i++) {
		int sum = 0;
		for (int j = 0; j < c->p[i]; j++)
			sum += h->d[h->off[i] + j];
		assert_int_equal(sum, h->n[i] * (c->sub > 1 ? c->sub : 1));
		assert_true(h->m[i] >= 1 && h->n[i] >= 1);
		area += (long)h->m[i] * h->n[i];
	}
	assert_int_equal(area, (long)N * N);
	assert_true((double)h->half_perimeters >= h->half_perimeters_lb - 1e-9);
}

static struct cluster mixed(int gpukind)
{
	struct cluster c = {.q = 6};
	for (int i = 0; i < c.q; i++) {
		c.p[i] = 4;
		for (int j = 0; j < 4; j++)
			c.kind[i][j] = j == 0 && i < 3 ? gpukind : 0;
	}
	return c;
}

/* device k of the cluster (nodes in order) on area a */
static double true_time(void *ctx, int k, double a)
{
	const struct cluster *c = ctx;
	for (int i = 0; i < c->q; k -= c->p[i], i++)
		if (k < c->p[i])
			return a / speed_of(c->kind[i][k], a);
	return INFINITY;
}

/* The least step time any split of the N x N blocks over the devices can
 * have: the equal-time split of the area over their true time functions,
 * whole blocks and the 2-D layout aside. */
static double bound(const struct cluster *c, int N)
{
	int n = 0;
	for (int i = 0; i < c->q; i++)
		n += c->p[i];
	return plb__equal_time_bound(n, true_time, (void *)c, (double)N * N);
}

static void run_all(struct cluster *c, int N, double *t, int *converged, int *benches)
{
	struct plb__hpart_cfg cfg = {.q = c->q, .p = c->p, .N = N, .eps1 = 0.05, .eps2 = 0.05,
				     .max_iter = 30, .bench = bench, .ctx = c};
	for (int m = 0; m < PLB__HPART_NMETHOD; m++) {
		struct plb__hpart h;
		cfg.method = (enum plb__hpart_method)m;
		assert_int_equal(plb__hpart_run(&cfg, &h), 0);
		check_layout(c, &h, N);
		t[m] = step_time(c, &h);
		/* the bound on what was measured: above 0, and no partition's
		 * slowest benchmark below it */
		double slowest = 0;
		for (int i = 0; i < h.q; i++)
			slowest = fmax(slowest, h.t_node[i]);
		if (!(h.step_bound > 0 && h.step_bound <= slowest * (1 + 1e-9)))
			fail_msg("%s: step bound %g, the slowest node %g", plb__hpart_method_name(cfg.method),
				 h.step_bound, slowest);
		converged[m] = h.converged;
		benches[m] = h.benches;
		plb__hpart_fini(&h);
	}
}

static void test_fpm_converges_and_wins(void **state)
{
	(void)state;
	double t[PLB__HPART_NMETHOD];
	int conv[PLB__HPART_NMETHOD], nb[PLB__HPART_NMETHOD];
	/* a saturating GPU, and one with a memory cliff, on half the nodes:
	 * at N = 256 (slices of many columns) the FPM partition converges
	 * within 6% of the bound, no worse than any baseline and ahead of
	 * the single-CPM and homogeneous ones */
	for (int gk = 1; gk <= 2; gk++) {
		struct cluster c = mixed(gk);
		run_all(&c, 256, t, conv, nb);
		double lb = bound(&c, 256);
		if (!conv[PLB__HPART_FPM] || !(t[PLB__HPART_FPM] <= 1.06 * lb))
			fail_msg("gpu kind %d: fpm %.2f (converged %d) against a bound %.2f", gk,
				 t[PLB__HPART_FPM], conv[PLB__HPART_FPM], lb);
		for (int m = 1; m < PLB__HPART_NMETHOD; m++)
			if (!(t[PLB__HPART_FPM] <= 1.001 * t[m]))
				fail_msg("gpu kind %d: fpm %.2f, %s %.2f", gk, t[PLB__HPART_FPM],
					 plb__hpart_method_name((enum plb__hpart_method)m), t[m]);
		assert_true(t[PLB__HPART_FPM] < t[PLB__HPART_SCPM] && t[PLB__HPART_FPM] < t[PLB__HPART_HOMOG]);
	}
	/* where speed depends on size and slices are few columns (N = 64),
	 * the constant models do not converge: multiple-CPM runs to its
	 * iteration limit and benchmarks more; the FPMs converge */
	for (int gk = 1; gk <= 2; gk++) {
		struct cluster c = mixed(gk);
		run_all(&c, 64, t, conv, nb);
		if (!conv[PLB__HPART_FPM] || conv[PLB__HPART_MCPM] || !(nb[PLB__HPART_FPM] < nb[PLB__HPART_MCPM]))
			fail_msg("gpu kind %d, N = 64: fpm converged %d (%d benchmarks), multiple-cpm %d (%d)", gk,
				 conv[PLB__HPART_FPM], nb[PLB__HPART_FPM], conv[PLB__HPART_MCPM], nb[PLB__HPART_MCPM]);
	}
	struct cluster c;
	/* constant speeds: the CPM methods are as good */
	c = mixed(3);
	run_all(&c, 128, t, conv, nb);
	assert_true(fabs(t[PLB__HPART_FPM] - t[PLB__HPART_SCPM]) <= 0.05 * t[PLB__HPART_SCPM]);
}

static double comm_const(void *ctx, int i, int m, int n)
{
	(void)ctx;
	(void)i;
	return 0.5 * (m + n);
}

/* With the pivots' transfer given, a node's time counts it and the nodes
 * are balanced on the sum: the node with the most work no longer gets
 * the largest rectangle's transfer on top */
static void test_comm_counted(void **state)
{
	(void)state;
	struct cluster c = mixed(1);
	struct plb__hpart_cfg cfg = {.q = c.q, .p = c.p, .N = 128, .eps1 = 0.05, .eps2 = 0.05,
				     .max_iter = 30, .method = PLB__HPART_FPM, .bench = bench,
				     .comm = comm_const, .ctx = &c};
	struct plb__hpart h;
	assert_int_equal(plb__hpart_run(&cfg, &h), 0);
	double with = 0, without = 0;
	for (int i = 0; i < h.q; i++) {
		double comp = 0;
		for (int j = 0; j < c.p[i]; j++) {
			int d = h.d[h.off[i] + j];
			if (d)
				comp = fmax(comp, bench(&c, i, j, h.m[i], d));
		}
		assert_true(fabs(h.t_node[i] - (comp + 0.5 * (h.m[i] + h.n[i]))) <= 1e-9 * h.t_node[i]);
		with = fmax(with, h.t_node[i]);
	}
	plb__hpart_fini(&h);
	cfg.comm = NULL;
	assert_int_equal(plb__hpart_run(&cfg, &h), 0);
	for (int i = 0; i < h.q; i++) {
		double comp = 0;
		for (int j = 0; j < c.p[i]; j++) {
			int d = h.d[h.off[i] + j];
			if (d)
				comp = fmax(comp, bench(&c, i, j, h.m[i], d));
		}
		without = fmax(without, comp + 0.5 * (h.m[i] + h.n[i]));
	}
	plb__hpart_fini(&h);
	if (!(with <= without * 1.001))
		fail_msg("with the transfer counted %.2f, without %.2f", with, without);
}

/* Devices of a node that slow each other: each runs 1 + 0.6 (n - 1) times
 * as long when n of its node's devices run at once (they share its cores
 * and memory). Nodes of 1 to 4 such cores. Benchmarked one device at a
 * time, the partitioner takes the 4-core nodes for four times a 1-core
 * node; benchmarked a node at once (bench_node, as the paper's IDPA), it
 * sees what they do together, and the product's step under contention is
 * shorter. */
static double shared_time(const struct cluster *c, int i, int m, const double *d, int j)
{
	int n = 0;
	for (int u = 0; u < c->p[i]; u++)
		n += d[u] > 0;
	double area = (double)m * d[j];
	return area / speed_of(c->kind[i][j], area) * (1 + 0.6 * (n - 1));
}

static void bench_shared(void *ctx, int i, int m, const double *d, double *t)
{
	struct cluster *c = ctx;
	for (int j = 0; j < c->p[i]; j++)
		t[j] = d[j] > 0 ? shared_time(c, i, m, d, j) : 0;
	c->benches++;
}

static double shared_step(const struct cluster *c, const struct plb__hpart *h)
{
	double worst = 0, d[16];
	for (int i = 0; i < h->q; i++) {
		for (int j = 0; j < c->p[i]; j++)
			d[j] = h->d[h->off[i] + j];
		for (int j = 0; j < c->p[i]; j++)
			if (d[j] > 0)
				worst = fmax(worst, shared_time(c, i, h->m[i], d, j));
	}
	return worst;
}

static void test_node_benchmarks(void **state)
{
	(void)state;
	struct cluster c = {.q = 4, .p = {1, 2, 3, 4}};
	struct plb__hpart_cfg cfg = {.q = c.q, .p = c.p, .N = 64, .eps1 = 0.05, .eps2 = 0.05, .max_iter = 30,
				     .method = PLB__HPART_FPM, .bench = bench, .ctx = &c};
	struct plb__hpart one, all;
	assert_int_equal(plb__hpart_run(&cfg, &one), 0);
	cfg.bench = NULL;
	cfg.bench_node = bench_shared;
	assert_int_equal(plb__hpart_run(&cfg, &all), 0);
	check_layout(&c, &all, 64);
	double t_one = shared_step(&c, &one), t_all = shared_step(&c, &all);
	if (!(t_all < 0.9 * t_one))
		fail_msg("under contention: node-wide benchmarks %.2f a step, one device at a time %.2f", t_all,
			 t_one);
	plb__hpart_fini(&one);
	plb__hpart_fini(&all);
}

/* Memory caps: the fastest nodes held to a small rectangle take no more
 * with any method (the rest share it), the FPM partition still beats the
 * homogeneous one within the caps, and caps that hold less than the
 * matrix are refused. */
static void test_caps(void **state)
{
	(void)state;
	struct cluster c = mixed(1);
	int N = 64;
	double cap[16];
	for (int i = 0; i < c.q; i++)
		cap[i] = i < 2 ? 150 : INFINITY;
	struct plb__hpart_cfg cfg = {.q = c.q, .p = c.p, .N = N, .eps1 = 0.05, .eps2 = 0.05,
				     .max_iter = 30, .bench = bench, .cap = cap, .ctx = &c};
	double t[PLB__HPART_NMETHOD];
	for (int m = 0; m < PLB__HPART_NMETHOD; m++) {
		cfg.method = (enum plb__hpart_method)m;
		struct plb__hpart h;
		assert_int_equal(plb__hpart_run(&cfg, &h), 0);
		long area = 0;
		for (int i = 0; i < h.q; i++) {
			area += (long)h.m[i] * h.n[i];
			if (!((double)h.m[i] * h.n[i] <= cap[i]))
				fail_msg("%s: node %d has %d x %d blocks, its cap %g", plb__hpart_method_name(cfg.method),
					 i, h.m[i], h.n[i], cap[i]);
		}
		assert_int_equal(area, (long)N * N);
		t[m] = step_time(&c, &h);
		plb__hpart_fini(&h);
	}
	if (!(t[PLB__HPART_FPM] < t[PLB__HPART_HOMOG]))
		fail_msg("within the caps fpm %.3f, homogeneous %.3f", t[PLB__HPART_FPM], t[PLB__HPART_HOMOG]);
	/* random caps holding 1.2 to 3 times the matrix: always within */
	uint64_t r = 99;
	for (int trial = 0; trial < 40; trial++) {
		double sum = 0;
		for (int i = 0; i < c.q; i++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			sum += cap[i] = 1 + (double)(r >> 11) * 0x1.0p-53;
		}
		double scale = (1.2 + 1.8 * (double)(r % 1000) / 1000) * N * N / sum;
		for (int i = 0; i < c.q; i++)
			cap[i] = floor(cap[i] * scale);
		cfg.method = (enum plb__hpart_method)(trial % PLB__HPART_NMETHOD);
		struct plb__hpart h;
		assert_int_equal(plb__hpart_run(&cfg, &h), 0);
		for (int i = 0; i < h.q; i++)
			assert_true((double)h.m[i] * h.n[i] <= cap[i]);
		plb__hpart_fini(&h);
	}
	for (int i = 0; i < c.q; i++)
		cap[i] = (double)N * N / c.q - 1;
	struct plb__hpart h;
	assert_int_equal(plb__hpart_run(&cfg, &h), PLB_ECONFIG);
}

/* Slices of 1/sub blocks: one node of 4 x 4 blocks, a CPU (speed 1) and
 * a device 4 times as fast: the equal-time split gives the CPU 0.8 of a
 * column (3.2 s a step). In whole columns the best is 4 s (1 + 3, or the
 * device alone); in 64ths of a column, 51 + 205: within 0.2% of 3.2 s. */
static void test_sub_block_slices(void **state)
{
	(void)state;
	struct cluster c = {.q = 1, .p = {2}, .kind = {{0, 3}}};
	struct plb__hpart h;
	struct plb__hpart_cfg cfg = {.q = 1, .p = c.p, .N = 4, .eps1 = 0.01, .eps2 = 0.01,
				     .max_iter = 20, .bench = bench, .ctx = &c};
	assert_int_equal(plb__hpart_run(&cfg, &h), 0);
	check_layout(&c, &h, 4);
	assert_true(step_time(&c, &h) >= 4 - 1e-9);
	plb__hpart_fini(&h);
	c.sub = cfg.sub = 64;
	assert_int_equal(plb__hpart_run(&cfg, &h), 0);
	check_layout(&c, &h, 4);
	double t = step_time(&c, &h);
	if (!(t <= 3.2 * 1.002))
		fail_msg("step %.4f s with slices of 1/64 block (ideal 3.2)", t);
	plb__hpart_fini(&h);
	cfg.sub = -1;
	assert_int_equal(plb__hpart_run(&cfg, &h), PLB_EINVAL);
}

static void test_bad_args(void **state)
{
	(void)state;
	struct cluster c = mixed(1);
	struct plb__hpart h;
	struct plb__hpart_cfg cfg = {.q = c.q, .p = c.p, .N = 2, .eps1 = 0.05, .eps2 = 0.05,
				     .max_iter = 10, .bench = bench, .ctx = &c};
	assert_int_equal(plb__hpart_run(&cfg, &h), PLB_EINVAL);        /* 6 nodes in 2 x 2 */
	cfg.N = 64;
	cfg.bench = NULL;
	assert_int_equal(plb__hpart_run(&cfg, &h), PLB_EINVAL);
	cfg.bench = bench;
	cfg.max_iter = 0;
	assert_int_equal(plb__hpart_run(&cfg, &h), PLB_EINVAL);
	assert_string_equal(plb__hpart_method_name(PLB__HPART_MCPM), "multiple-cpm");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fpm),
		cmocka_unit_test(test_gpa),
		cmocka_unit_test(test_fpm_converges_and_wins),
		cmocka_unit_test(test_comm_counted),
		cmocka_unit_test(test_sub_block_slices),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_node_benchmarks),
		cmocka_unit_test(test_bad_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
