/* The lower bound T_lb and the one-round optimum T_eq against answers
 * worked out by hand, so that a bound that is off (half of what it should
 * be, a failure or a speed change ignored) fails here and not only in the
 * ratio it divides:
 *  - linear curves: T_lb = T_eq = W / sum of rates;
 *  - a fixed cost per block: c0 + c1 W / n for n equal PUs (a table and a
 *    polynomial give the same line);
 *  - a PU that fails, one that slows down;
 *  - transfers overlapped (pipeline 2) or not;
 *  - nothing left to run: INFINITY;
 *  - T_eq of 2 and 3 PUs with curved, cliffed, slowing and failing models
 *    against a brute-force search over every split of W. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/bounds.h"

#define MAXPU 4

struct cluster {
	struct plb__devmodel m[MAXPU];
	const struct plb__devmodel *p[MAXPU];
	double change_t[MAXPU], change_f[MAXPU];
	int n;
};

/* PU i: compute curve, transfer curve (NULL: none). */
static void add(struct cluster *c, const char *compute, const char *transfer)
{
	char err[200];
	struct plb__devmodel *m = &c->m[c->n];
	memset(m, 0, sizeof *m);
	m->fail_t = INFINITY;
	if (plb__curve_spec_parse(&m->compute, compute, err, sizeof err))
		fail_msg("%s: %s", compute, err);
	if (transfer && plb__curve_spec_parse(&m->transfer, transfer, err, sizeof err))
		fail_msg("%s: %s", transfer, err);
	c->p[c->n] = m;
	c->n++;
}

static void slow_down(struct cluster *c, int i, double t, double factor)
{
	c->change_t[i] = t;
	c->change_f[i] = factor;
	c->m[i].nchange = 1;
	c->m[i].change_t = &c->change_t[i];
	c->m[i].change_f = &c->change_f[i];
}

static void clear(struct cluster *c)
{
	for (int i = 0; i < c->n; i++) {
		plb__curve_spec_fini(&c->m[i].compute);
		plb__curve_spec_fini(&c->m[i].transfer);
	}
	c->n = 0;
}

static void near(double got, double want, const char *what)
{
	if (!(fabs(got - want) <= 1e-6 * want))
		fail_msg("%s: got %.9g, expected %.9g", what, got, want);
}

static void test_linear(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0 0.01", NULL);           /* 100 units/s */
	add(&c, "poly 0 3.3333333333333335e-3", NULL); /* 300 */
	add(&c, "poly 0 1.6666666666666667e-3", NULL); /* 600 */
	near(plb__bound_lower(c.p, c.n, 1000, 0), 1.0, "T_lb, rates 100+300+600, W 1000");
	near(plb__bound_eq(c.p, c.n, 1000), 1.0, "T_eq, the same");
	near(plb__bound_lower(c.p, 1, 250, 0), 2.5, "T_lb, one PU at 100/s, W 250");
	clear(&c);
}

static void test_fixed_cost(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0.5 0.01", NULL);
	near(plb__bound_lower(c.p, 1, 400, 0), 0.5 + 4.0, "one PU: c0 + c1 W");
	add(&c, "table 0:0.5 100:1.5", NULL);   /* the same line as a table */
	near(plb__bound_lower(c.p, 2, 400, 0), 0.5 + 2.0, "two PUs: c0 + c1 W / 2");
	near(plb__bound_eq(c.p, 2, 400), 0.5 + 2.0, "T_eq: one block each");
	clear(&c);
}

static void test_failure(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0 0.01", NULL);
	add(&c, "poly 0 0.01", NULL);
	c.m[0].fail_t = 2;
	/* by T >= 2: 100 * 2 + 100 * T = 500 */
	near(plb__bound_lower(c.p, 2, 500, 0), 3.0, "a PU that fails at 2 s");
	/* one block each: the first must end by 2 s (200 units), the other
	 * takes the remaining 300 */
	near(plb__bound_eq(c.p, 2, 500), 3.0, "T_eq, a PU that fails at 2 s");
	/* a PU dead from the start gives nothing, not even one unit: at
	 * 100/s the other does W = 2 alone */
	c.m[0].fail_t = 0;
	near(plb__bound_lower(c.p, 2, 2, 0), 0.02, "a PU dead from the start, W 2");
	c.m[1].fail_t = 0;
	if (!isinf(plb__bound_lower(c.p, 2, 500, 0)))
		fail_msg("every PU failed at 0 s: the bound must be INFINITY");
	clear(&c);
}

/* E(b) = 1 + 1e-4 b^2: b / E(b) peaks at b = 100 (50 units/s), far inside
 * the sizes a long run allows, so T_lb = W / 50. */
static void test_interior_peak(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 1 0 1e-4", NULL);
	near(plb__bound_lower(c.p, 1, 1e5, 0), 2000.0, "T_lb, best block inside the range");
	clear(&c);
	/* the same with a transfer curve that is a polynomial too (free) */
	add(&c, "poly 1 0 1e-4", "poly 0 0");
	near(plb__bound_lower(c.p, 1, 1e5, 0), 2000.0, "T_lb, peak with a polynomial transfer");
	clear(&c);
	/* E(b) = 1 + b^2 / 1.0404 peaks at b = 1.02 (0.51 units/s): below the
	 * second point, 1.12, of the log grid over [1, bmax] (bmax ~ 1430, the
	 * largest block that ends by T_lb), and the grid's best is its first
	 * point, b = 1 (0.5099 units/s) */
	add(&c, "poly 1 0 0.96116878123798539", NULL);
	near(plb__bound_lower(c.p, 1, 1e6, 0), 1e6 / 0.51, "T_lb, best block near the smallest");
	clear(&c);
	/* E(b) = 0.01 + 1e-6 b^2: the peak at b = 100 takes 0.02 s (5000
	 * units/s), a block far shorter than a second, so T_lb = W / 5000 */
	add(&c, "poly 0.01 0 1e-6", NULL);
	near(plb__bound_lower(c.p, 1, 1e6, 0), 200.0, "T_lb, best block of 0.02 s");
	clear(&c);
	/* a table whose best block is its first point, one unit: 0.01 s
	 * (100 units/s), then 4 units/s from 2 units on; the largest block
	 * that ends by T_lb (40 units) is no better, so T_lb = W / 100 */
	add(&c, "table 1:0.01 2:0.5 100:25", NULL);
	near(plb__bound_lower(c.p, 1, 1000, 0), 10.0, "T_lb, best block of one unit");
	clear(&c);
}

/* A domain smaller than one unit per PU still splits: W = 1 over two PUs of
 * 1 unit/s ends at 0.5 s. */
static void test_fractional_split(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0 1", NULL);
	add(&c, "poly 0 1", NULL);
	near(plb__bound_lower(c.p, 2, 1, 0), 0.5, "T_lb, W 1 over two PUs");
	near(plb__bound_eq(c.p, 2, 1), 0.5, "T_eq, W 1 over two PUs");
	clear(&c);
	/* a fixed cost with the bound below one unit's time: E(b) = 0.5 + 0.5 b
	 * next to a PU of 10 units/s, W = 8. By T < 1 the first can run only
	 * b = 2T - 1 < 1 units, at b / E(b) = (2T - 1) / T: 10 T + 2 T - 1 = 8
	 * at T = 0.75 (a rate taken at b = 1, past what fits, gives 0.727) */
	add(&c, "poly 0.5 0.5", NULL);
	add(&c, "poly 0 0.1", NULL);
	near(plb__bound_lower(c.p, 2, 8, 0), 0.75, "T_lb, a fixed cost within one unit");
	clear(&c);
}

static void test_speed_change(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0 0.01", NULL);
	slow_down(&c, 0, 1.0, 2.0);             /* half speed from 1 s on */
	/* base-speed work by T: 1 + (T - 1) / 2 = 1.5 s for 150 units */
	near(plb__bound_lower(c.p, 1, 150, 0), 2.0, "a PU at half speed from 1 s");
	near(plb__bound_eq(c.p, 1, 150), 2.0, "T_eq, one block through the change");
	clear(&c);
}

static void test_overlap(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0 0.01", "poly 0 0.01");  /* compute and transfer 100/s each */
	near(plb__bound_lower(c.p, 1, 100, 0), 2.0, "transfer then compute: F + G");
	near(plb__bound_lower(c.p, 1, 100, 1), 1.0, "overlapped: max(F, G)");
	clear(&c);
}

/* The peak of b / E(b) found wherever it falls between the points of the
 * log grid over [1, bmax] (bmax, and so the grid, moves with W): E(b) =
 * 1 + 1e-4 b^2 peaks at b = 100, 50 units/s, so T_lb = W / 50 for every W
 * large enough that blocks of 100 fit. */
static void test_peak_between_grid_points(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 1 0 1e-4", NULL);
	for (int i = 0; i <= 40; i++) {
		double W = 1e4 * pow(100, i / 40.0);
		double got = plb__bound_lower(c.p, 1, W, 0);
		if (!(fabs(got - W / 50) <= 1e-6 * W / 50))
			fail_msg("W %g: T_lb %.9g, expected %.9g", W, got, W / 50);
	}
	clear(&c);
}

/* A PU whose smallest block takes longer than the whole run adds no
 * capacity: 100 units/s alone finish W = 100 in 1 s, and a PU that needs
 * 100 s for any block must not lower that (it could not end one block). */
static void test_too_slow_to_help(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0 0.01", NULL);
	add(&c, "poly 100 0.01", NULL);
	near(plb__bound_lower(c.p, 2, 100, 0), 1.0, "T_lb with a PU of 100 s per block");
	near(plb__bound_lower(c.p, 2, 100, 1), 1.0, "the same with overlap");
	clear(&c);
}

/* Runs shorter than a microsecond (fast PUs, a small domain) get their
 * bounds as precisely as long ones: 1e10 and 3e10 units/s, W = 1000 end at
 * 25 ns. */
static void test_short_run(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0 1e-10", NULL);
	add(&c, "poly 0 3.3333333333333335e-11", NULL);
	near(plb__bound_lower(c.p, 2, 1000, 0), 2.5e-8, "T_lb of a 25 ns run");
	near(plb__bound_eq(c.p, 2, 1000), 2.5e-8, "T_eq of a 25 ns run");
	clear(&c);
}

/* Finish time of one block of b units from t = 0, by the definition
 * (transfer, then compute, on the PU's clock; no block: 0 s). */
static double one_block_bf(const struct plb__devmodel *m, double b)
{
	if (b <= 0)
		return 0;
	double x = plb__devmodel_finish(m, 0, plb__curve_spec_eval(&m->transfer, b));
	double t = plb__devmodel_finish(m, x, plb__curve_spec_eval(&m->compute, b));
	return t <= m->fail_t ? t : INFINITY;
}

/* min over splits of W in steps of `step` of the latest finish. */
static double eq_brute_force(const struct cluster *c, double W, double step)
{
	double best = INFINITY;
	for (double b0 = 0; b0 <= W + 1e-9; b0 += step) {
		double t0 = one_block_bf(c->p[0], b0);
		if (c->n == 2) {
			best = fmin(best, fmax(t0, one_block_bf(c->p[1], W - b0)));
			continue;
		}
		for (double b1 = 0; b0 + b1 <= W + 1e-9; b1 += step) {
			double t = fmax(t0, one_block_bf(c->p[1], b1));
			best = fmin(best, fmax(t, one_block_bf(c->p[2], fmax(0, W - b0 - b1))));
		}
	}
	return best;
}

static void test_eq_brute_force(void **state)
{
	struct cluster c = {0};
	add(&c, "poly 0.2 0.002 1e-5", NULL);                   /* curved */
	add(&c, "table 0:0.1 200:0.5 400:3 1000:9", "poly 0.05 0.0005"); /* a cliff */
	double W = 1000;
	/* the grid's optimum is at most one step's worth of time above the true one */
	double bf = eq_brute_force(&c, W, 0.5), eq = plb__bound_eq(c.p, 2, W);
	if (!(eq <= bf + 1e-9 && eq >= bf - 0.02))
		fail_msg("2 PUs: T_eq %.6f, brute force %.6f", eq, bf);
	add(&c, "poly 0.05 0.001", "poly 0 0.0002");
	slow_down(&c, 2, 0.6, 3.0);
	bf = eq_brute_force(&c, W, 1);
	eq = plb__bound_eq(c.p, 3, W);
	if (!(eq <= bf + 1e-9 && eq >= bf - 0.02))
		fail_msg("3 PUs, one slowing down: T_eq %.6f, brute force %.6f", eq, bf);
	c.m[0].fail_t = 0.9;                    /* the curved PU fails at 0.9 s */
	bf = eq_brute_force(&c, W, 1);
	eq = plb__bound_eq(c.p, 3, W);
	if (!(eq <= bf + 1e-9 && eq >= bf - 0.02))
		fail_msg("3 PUs, one failing: T_eq %.6f, brute force %.6f", eq, bf);
	clear(&c);
}

/* The job's shared data over the links (plb__bound_lower_extra): two
 * nodes of one PU at 1000 units/s, 1 MB of shared data to each over a
 * master's link of 1 MB/s, units of no bytes. Sent one node after the
 * other, the first starts at 1 s, the second at 2 s: 1500 units end at
 * 2.25 s. No run ends before 2 s: one node alone needs until 2.5 s, and
 * both need both copies across, 2 s. With 500 units, one node is the
 * better plan: its copy and 0.5 s of compute, 1.5 s. */
static void test_shared_data(void **state)
{
	(void)state;
	struct cluster c = {0};
	add(&c, "poly 0 1e-3", NULL);
	add(&c, "poly 0 1e-3", NULL);
	int node[2] = {0, 1};
	struct plb__bound_extra x = {.bw_master = 1e6, .nnodes = 2, .node = node,
				     .shared_bytes = 1e6};
	double link = 0;
	near(plb__bound_lower_extra(c.p, 2, 1500, 0, &x, &link), 2.0, "1500 units, two nodes");
	near(link, 1.0, "the links' own bound: one copy");
	near(plb__bound_lower_extra(c.p, 2, 500, 0, &x, &link), 1.5, "500 units, one node");
	x.shared_bytes = 0;
	near(plb__bound_lower_extra(c.p, 2, 1500, 0, &x, &link), 0.75, "no shared data");
	clear(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear),
		cmocka_unit_test(test_fixed_cost),
		cmocka_unit_test(test_failure),
		cmocka_unit_test(test_interior_peak),
		cmocka_unit_test(test_fractional_split),
		cmocka_unit_test(test_speed_change),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_eq_brute_force),
		cmocka_unit_test(test_peak_between_grid_points),
		cmocka_unit_test(test_short_run),
		cmocka_unit_test(test_too_slow_to_help),
		cmocka_unit_test(test_shared_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
