/* Unit tests of the equal-time solvers (balancer/solver.h) on synthetic
 * curves: the fast path against brute force on small cases, SLSQP against
 * the fast path on random ones, and the promises every split keeps (sums to
 * S exactly, no negative share, one finish time, bad input refused). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>

#include "balancer/solver.h"
#include "test_util.h"

#define NMAX 16

/* E(x) = c0 + a x + b x ln(1 + x/W) + c (x/W)^3 + d e^(x/W), held at E(flat)
 * below x = flat (as fitted models are held below their first sample),
 * and past x = cap (when > 0) E(cap) x / cap, a share run as blocks of
 * cap (as plb-hac's solves see a model's cap: a kink where the slope
 * leaps). */
struct curve {
	double c0, a, b, c, d, W, flat, cap;
};

static double c_base(const struct curve *k, double x)
{
	double z;

	x = fmax(x, k->flat);
	z = x / k->W;
	return k->c0 + k->a * x + k->b * x * log1p(z) + k->c * z * z * z +
	       k->d * exp(z);
}

static double c_eval(const void *ctx, double x)
{
	const struct curve *k = ctx;

	if (k->cap > 0 && x > k->cap)
		return c_base(k, k->cap) * (x / k->cap);
	return c_base(k, x);
}

static double c_deriv(const void *ctx, double x)
{
	const struct curve *k = ctx;
	double z = x / k->W;

	if (k->cap > 0 && x > k->cap)
		return c_base(k, k->cap) / k->cap;
	if (x < k->flat)
		return 0;
	return k->a + k->b * (log1p(z) + z / (1 + z)) +
	       3 * k->c * z * z / k->W + k->d * exp(z) / k->W;
}

static void bind(struct plb__efun *e, const struct curve *k, int n,
		 const double *avail)
{
	for (int p = 0; p < n; p++) {
		e[p].eval = c_eval;
		e[p].deriv = c_deriv;
		e[p].ctx = &k[p];
		e[p].avail = avail ? avail[p] : 0;
	}
}

/* The objective: latest finish over the PUs that get data. */
static double makespan(const struct plb__efun *e, int n, const double *x)
{
	double t = -INFINITY;

	for (int p = 0; p < n; p++)
		if (x[p] > 0)
			t = fmax(t, e[p].avail + e[p].eval(e[p].ctx, x[p]));
	return t;
}

static double seq_sum(const double *x, int n)
{
	double s = 0;

	for (int p = 0; p < n; p++)
		s += x[p];
	return s;
}

struct grid {
	const struct plb__efun *e;
	int n;
	double S, best, b0, b1;
};

/* Score the split (x0, x1, rest) of 2 or 3 PUs; keep the best. */
static void grid_try(struct grid *g, double x0, double x1)
{
	double x[3] = { x0, g->n == 3 ? x1 : g->S - x0, 0 }, t;

	if (g->n == 3) {
		x[2] = g->S - x0 - x1;
		if (fabs(x[2]) <= 8 * DBL_EPSILON * g->S)
			x[2] = 0;	/* on the face where PU 2 idles */
	}
	if (x[0] < 0 || x[0] > g->S || x[1] < 0 || x[2] < 0)
		return;
	t = makespan(g->e, g->n, x);
	if (t < g->best) {
		g->best = t;
		g->b0 = x[0];
		g->b1 = x[1];
	}
}

/* Brute force for 2 or 3 PUs: a grid over splits, then finer grids around
 * the best point. Shares of 0 and S are on the first grid, so fixed costs
 * are handled. */
static double brute(const struct plb__efun *e, int n, double S)
{
	struct grid g = { .e = e, .n = n, .S = S, .best = INFINITY };
	int G = n == 2 ? 4000 : 300, m = n == 3 ? G : 0;
	double h = S / G;

	for (int i = 0; i <= G; i++)
		for (int j = 0; j <= m; j++)
			grid_try(&g, i * h, j * h);
	for (int level = 0; level < 12; level++) {
		double c0 = g.b0, c1 = g.b1;
		int w = G / 20, wj = n == 3 ? w : 0;

		h /= 8;
		for (int i = -w; i <= w; i++)
			for (int j = -wj; j <= wj; j++)
				grid_try(&g, c0 + i * h, c1 + j * h);
	}
	return g.best;
}

/* Checks every split must pass; returns the makespan. */
static double check_split(const struct plb__efun *e, int n, double S,
			  const double *x, const struct plb__solve_out *o,
			  double ttol)
{
	double T = makespan(e, n, x);

	assert_true(seq_sum(x, n) == S);
	for (int p = 0; p < n; p++)
		assert_true(x[p] >= 0 && x[p] <= S);
	assert_true(o->T == T);
	/* every PU with data finishes at T */
	for (int p = 0; p < n; p++) {
		double t = e[p].avail + e[p].eval(e[p].ctx, x[p]);

		if (x[p] > 0 && fabs(t - T) > ttol * T)
			fail_msg("PU %d of %d finishes at %.17g, T %.17g", p,
				 n, t, T);
	}
	return T;
}

static uint64_t rng = 88172645463325252ull;

static double urand(void)
{
	return test_urand(&rng);
}

/* Realistic curves: fixed cost, linear, x ln x and exp parts, speed over a
 * 50x range; W is the domain, S a step of it. */
static void random_curves(struct curve *k, int n, double W)
{
	for (int p = 0; p < n; p++) {
		double s = pow(50, urand());

		k[p] = (struct curve){
			.c0 = 0.01 * urand() / s,
			.a = (0.5 + urand()) / (W * s),
			.b = 0.5 * urand() / (W * s),
			.d = 0.05 * urand() / s,
			.W = W,
		};
	}
}

/* The curve shapes of the brute-force test, by name. */
static struct curve shape(int which, double speed, double S)
{
	double W = S;

	switch (which) {
	case 0:		/* linear */
		return (struct curve){ .a = 1 / speed, .W = W };
	case 1:		/* affine: a fixed cost */
		return (struct curve){ .c0 = 0.3 * S / speed, .a = 1 / speed,
				       .W = W };
	case 2:		/* x ln x (as x ln(1 + x/W), increasing from 0) */
		return (struct curve){ .b = 4 / speed, .W = W };
	case 3:		/* cubic */
		return (struct curve){ .c = 2 * S / speed, .W = W };
	case 4:		/* flat below a quarter of S */
		return (struct curve){ .a = 1 / speed, .W = W,
				       .flat = 0.25 * S };
	default:	/* mixed */
		return (struct curve){ .c0 = 0.05 * S / speed, .a = 0.5 / speed,
				       .b = 1 / speed, .c = 0.3 * S / speed,
				       .d = 0.1 * S / speed, .W = W };
	}
}

/* One brute-force case: curve shapes s[0..n-1] at speeds 1, 3.7, 0.4. */
static void brute_case(int n, const int *s, int with_avail)
{
	const double speed[3] = { 1, 3.7, 0.4 }, avail[3] = { 0, 2, 0.5 };
	const double S = 10;
	struct curve k[3];
	struct plb__efun e[3];
	struct plb__solve_out o;
	double x[3], Tf, Tb;

	for (int p = 0; p < n; p++)
		k[p] = shape(s[p], speed[p], S);
	bind(e, k, n, with_avail ? avail : NULL);
	assert_int_equal(plb__solve_fast(e, n, S, x, &o), 0);
	Tf = check_split(e, n, S, x, &o, 1e-9);
	Tb = brute(e, n, S);
	/* brute force never beats the optimum, and comes close to it */
	if (!(Tb >= Tf * (1 - 1e-12)) || !(Tb <= Tf * (1 + 1e-7)))
		fail_msg("n %d shapes %d %d %d avail %d: fast %.15g, brute "
			 "force %.15g", n, s[0], s[1], n > 2 ? s[2] : -1,
			 with_avail, Tf, Tb);
}

/* Fast path = brute force, 2-3 PUs, linear/fixed-cost/xlnx/cubic/flat/mixed. */
static void test_fast_matches_brute_force(void **state)
{
	(void)state;
	for (int a = 0; a < 6; a++)
		for (int b = 0; b < 6; b++)
			for (int av = 0; av < 2; av++) {
				int s2[2] = { a, b };
				int s3[3] = { a, b, (a + 2) % 6 };

				brute_case(2, s2, av);
				if (b == (a + 3) % 6 || b == a)
					brute_case(3, s3, av);
			}
}

/* SLSQP = fast path (split, T) on random 2..16 PUs, with and without avail. */
static void test_slsqp_agrees_with_fast(void **state)
{
	double worst_x = 0, worst_T = 0;

	(void)state;
	for (int n = 2; n <= NMAX; n++)
		for (int rep = 0; rep < 6; rep++) {
			struct curve k[NMAX];
			struct plb__efun e[NMAX];
			struct plb__solve_out of, os;
			double xf[NMAX], xs[NMAX], avail[NMAX];
			double W = 1e6, S = W * (0.05 + urand());

			random_curves(k, n, W);
			bind(e, k, n, NULL);
			if (rep & 1) {	/* avail in [0, 0.1 T] */
				assert_int_equal(plb__solve_fast(e, n, S, xf,
								 &of), 0);
				for (int p = 0; p < n; p++)
					avail[p] = 0.1 * of.T * urand();
				bind(e, k, n, avail);
			}
			assert_int_equal(plb__solve_fast(e, n, S, xf, &of), 0);
			assert_true(of.iters <= 8);	/* Newton, not bisection */
			assert_int_equal(plb__solve_slsqp(e, n, S, xs, &os), 0);
			/* SLSQP ran (it is skipped when one PU takes all) and
			 * counted its evaluations */
			int shared = 0;
			for (int p = 0; p < n; p++)
				shared += xs[p] > 0;
			if (shared > 1)
				assert_true(os.iters >= 1);
			check_split(e, n, S, xf, &of, 1e-9);
			check_split(e, n, S, xs, &os, 1e-6);
			for (int p = 0; p < n; p++) {
				double dx = fabs(xf[p] - xs[p]) /
					    fmax(xf[p], S / n);
				worst_x = fmax(worst_x, dx);
				assert_true(dx <= 1e-3);
			}
			worst_T = fmax(worst_T, fabs(of.T - os.T) / of.T);
			assert_true(fabs(of.T - os.T) <= 1e-7 * of.T);
		}
	print_message("worst split gap %.2g, worst T gap %.2g\n", worst_x,
		      worst_T);
}

/* SLSQP solves what plb-hac's and plb-hec's solves give it, as the fast
 * path does, to the same finish within 1e-6 relative: 2 to 64 PUs whose
 * curves are flat below their first units (held, as models are below
 * their smallest block), some with a cap past which their slope leaps (a
 * kink SLSQP's line search stopped on), free at different times, speeds
 * over 50x. Before: a flat PU that held T up, a kink, a start a rounding
 * past its bound or an evaluations' limit reached made SLSQP fail
 * (solver = 2 failed on 15 of the 18 config/sim scenarios of at most 64
 * PUs). */
static void test_slsqp_agrees_with_fast_on_models(void **state)
{
	enum { N = 64 };
	double worst = 0;
	int kinks = 0, flats = 0;

	(void)state;
	for (int rep = 0; rep < 300; rep++) {
		int n = 2 + (int)(urand() * (rep < 40 ? 15 : N - 1));
		struct curve k[N];
		struct plb__efun e[N];
		struct plb__solve_out of, os;
		double xf[N], xs[N], avail[N];
		double W = 1e5, S = W * (0.002 + 0.1 * urand());

		random_curves(k, n, W);
		for (int p = 0; p < n; p++) {
			/* flat below 0-4 shares' worth, capped past 0.3-3 */
			k[p].flat = urand() < 0.7 ? 4 * urand() * S / n : 0;
			k[p].cap = urand() < 0.4 ? (0.3 + 2.7 * urand()) * S / n : 0;
			avail[p] = urand() < 0.5 ? 0 : 0.5 * urand() * k[p].c0 * 10;
		}
		bind(e, k, n, avail);
		assert_int_equal(plb__solve_fast(e, n, S, xf, &of), 0);
		int rc = plb__solve_slsqp(e, n, S, xs, &os);
		if (rc)
			fail_msg("rep %d, %d PUs: SLSQP %s", rep, n, plb_strerror(rc));
		assert_true(seq_sum(xs, n) == S);
		assert_true(os.T == makespan(e, n, xs));
		for (int p = 0; p < n; p++) {
			assert_true(xs[p] >= 0);
			kinks += k[p].cap > 0 && xf[p] > k[p].cap;
			flats += xf[p] > 0 && xf[p] <= k[p].flat;
		}
		worst = fmax(worst, fabs(os.T - of.T) / of.T);
		if (!(fabs(os.T - of.T) <= 1e-6 * of.T))
			fail_msg("rep %d, %d PUs: SLSQP's T %.12g, the fast path's %.12g", rep, n,
				 os.T, of.T);
	}
	/* the cases are there: shares past a kink, shares on a flat start */
	assert_true(kinks > 10 && flats > 10);
	print_message("worst T gap %.2g; %d shares past a cap, %d on a flat start\n", worst, kinks,
		      flats);
}

/* Fast split: sum == S exactly, x >= 0, one finish T, on 400 odd instances. */
static void test_fast_invariants(void **state)
{
	(void)state;
	for (int rep = 0; rep < 400; rep++) {
		int n = 1 + (int)(urand() * 64);
		struct curve k[64];
		struct plb__efun e[64];
		struct plb__solve_out o;
		double x[64], avail[64], W = 1000;
		double S = W * pow(10, -3 + 4 * urand()) * (1 + 1e-7 * rep);

		random_curves(k, n, W);
		for (int p = 0; p < n; p++) {
			avail[p] = urand() < 0.5 ? 0 : 2 * urand();
			if (urand() < 0.2)	/* big fixed costs */
				k[p].c0 = 3 * urand();
			if (urand() < 0.2)
				k[p].flat = S * urand();
		}
		bind(e, k, n, avail);
		assert_int_equal(plb__solve_fast(e, n, S, x, &o), 0);
		check_split(e, n, S, x, &o, 1e-9);
		assert_true(o.iters >= 1);
	}
}

/* A time table, piecewise linear through (px, py) and linear beyond the
 * last point, as the emulated devices' models are. */
struct table {
	int np;
	double px[6], py[6];
};

static double t_eval(const void *ctx, double x)
{
	const struct table *t = ctx;
	int i = 1;

	if (x <= t->px[0])
		return t->py[0];
	while (i < t->np - 1 && x > t->px[i])
		i++;
	return t->py[i - 1] + (t->py[i] - t->py[i - 1]) *
	       (x - t->px[i - 1]) / (t->px[i] - t->px[i - 1]);
}

static double t_deriv(const void *ctx, double x)
{
	const struct table *t = ctx;
	int i = 1;

	if (x < t->px[0])
		return 0;
	while (i < t->np - 1 && x >= t->px[i])
		i++;
	return (t->py[i] - t->py[i - 1]) / (t->px[i] - t->px[i - 1]);
}

/* Largest x in [0, S] with E(x) <= t, by plain bisection. */
static double bisect_inverse(const struct plb__efun *e, double t, double S)
{
	double a = 0, b = S;

	if (e->eval(e->ctx, 0) > t)
		return 0;
	if (e->eval(e->ctx, S) <= t)
		return S;
	for (int i = 0; i < 200; i++) {
		double m = 0.5 * (a + b);

		if (e->eval(e->ctx, m) <= t)
			a = m;
		else
			b = m;
	}
	return a;
}

/* Fast path optimal (by bisection) on time tables mixed with smooth curves. */
static void test_fast_optimal_on_tables(void **state)
{
	(void)state;
	for (int rep = 0; rep < 60; rep++) {
		int n = 1 + (int)(urand() * 300);
		struct table tb[300];
		struct curve k[300];
		struct plb__efun e[300];
		struct plb__solve_out o;
		double x[300], S = 1000 * (0.01 + urand()), W = 1000, T, sum;

		random_curves(k, n, W);
		bind(e, k, n, NULL);
		for (int p = 0; p < n; p++) {
			double px = 0, py = 0.05 * urand();

			e[p].avail = urand() < 0.3 ? 0.5 * urand() : 0;
			if (urand() < 0.5)
				continue;
			tb[p].np = 2 + (int)(urand() * 5);
			for (int i = 0; i < tb[p].np; i++) {
				px += W * (0.001 + 0.3 * urand());
				py += 0.01 * urand() * px / W;
				tb[p].px[i] = px;
				tb[p].py[i] = py;
			}
			e[p].eval = t_eval;
			e[p].deriv = t_deriv;
			e[p].ctx = &tb[p];
		}
		assert_int_equal(plb__solve_fast(e, n, S, x, &o), 0);
		T = check_split(e, n, S, x, &o, 1e-9);
		sum = 0;
		for (int p = 0; p < n; p++)
			sum += bisect_inverse(&e[p],
					      T * (1 - 1e-9) - e[p].avail, S);
		assert_true(sum < S);
	}
}

/* SLSQP = fast path on e^(x/W) curves over 68 W, where SLSQP must restart. */
static void test_slsqp_steep_curves(void **state)
{
	struct curve k[2] = {
		{ .c0 = 0.0947, .a = 0.0553, .d = 0.0127, .W = 0.2694 },
		{ .a = 0.0695, .b = 0.0531, .d = 0.00287, .W = 0.2694 },
	};
	struct plb__efun e[2];
	struct plb__solve_out of, os;
	double xf[2], xs[2], S = 18.284;

	(void)state;
	bind(e, k, 2, NULL);
	assert_int_equal(plb__solve_fast(e, 2, S, xf, &of), 0);
	assert_int_equal(plb__solve_slsqp(e, 2, S, xs, &os), 0);
	check_split(e, 2, S, xf, &of, 1e-9);
	check_split(e, 2, S, xs, &os, 1e-6);
	assert_true(fabs(os.T - of.T) <= 1e-7 * of.T);
	for (int p = 0; p < 2; p++)
		assert_true(fabs(xs[p] - xf[p]) <= 1e-3 * xf[p]);
}

/* SLSQP = fast path (split, T) when a unit takes about as many seconds
 * as a PU's share has units: 2..8 PUs with random_curves' shapes plus a
 * cubic part over a domain of 10 units, 0.1 to 100 s per unit, fixed costs
 * of up to a tenth of a PU's whole-domain time, and avail in [0, 3 T]
 * (some PUs busy past the optimum, which SLSQP must leave out). SLSQP's
 * start and the bound it prunes PUs with come from splits on chords and
 * secants through each PU's finish times: a share (units) taken for a
 * time (seconds) there gives a bound below the optimum, and PUs the
 * optimum needs are left out. */
static void test_slsqp_slow_units(void **state)
{
	uint64_t seed = 77;

	(void)state;
	for (int rep = 0; rep < 300; rep++) {
		int n = 2 + (int)(test_urand(&seed) * 7);
		struct curve k[8];
		struct plb__efun e[8];
		struct plb__solve_out of, os;
		double xf[8], xs[8], avail[8], W = 10, S = W * (0.1 + test_urand(&seed));
		double unit_s = pow(10, -1 + 3 * test_urand(&seed));

		for (int p = 0; p < n; p++) {
			double sp = pow(50, test_urand(&seed));

			k[p] = (struct curve){
				.c0 = 0.1 * W * unit_s * test_urand(&seed) / sp,
				.a = (0.5 + test_urand(&seed)) * unit_s / sp,
				.b = 0.5 * test_urand(&seed) * unit_s / sp,
				.c = W * unit_s * test_urand(&seed) / sp,
				.d = 0.05 * W * unit_s * test_urand(&seed) / sp,
				.W = W,
			};
		}
		bind(e, k, n, NULL);
		assert_int_equal(plb__solve_fast(e, n, S, xf, &of), 0);
		for (int p = 0; p < n; p++)
			avail[p] = 3 * of.T * test_urand(&seed);
		bind(e, k, n, avail);
		assert_int_equal(plb__solve_fast(e, n, S, xf, &of), 0);
		assert_int_equal(plb__solve_slsqp(e, n, S, xs, &os), 0);
		check_split(e, n, S, xf, &of, 1e-9);
		check_split(e, n, S, xs, &os, 1e-6);
		if (!(fabs(of.T - os.T) <= 1e-7 * of.T))
			fail_msg("rep %d, %d PUs: fast T %.9g, SLSQP T %.9g", rep, n,
				 of.T, os.T);
		for (int p = 0; p < n; p++)
			assert_true(fabs(xf[p] - xs[p]) <= 1e-3 * fmax(xf[p], S / n));
	}
}

/* A PU with a huge avail gets 0, in both solvers. */
static void test_huge_avail_gets_zero(void **state)
{
	struct curve k[4];
	struct plb__efun e[4];
	struct plb__solve_out o;
	double x[4], avail[4] = { 0, 0.1, 1e6, 0 }, S = 100;

	(void)state;
	for (int p = 0; p < 4; p++)
		k[p] = (struct curve){ .c0 = 0.01, .a = 1.0 / (p + 1), .W = S };
	k[2].a = 1e-6;	/* the fastest, but busy */
	bind(e, k, 4, avail);
	assert_int_equal(plb__solve_fast(e, 4, S, x, &o), 0);
	check_split(e, 4, S, x, &o, 1e-9);
	assert_true(x[2] == 0);
	assert_true(o.T < 100);
	assert_int_equal(plb__solve_slsqp(e, 4, S, x, &o), 0);
	check_split(e, 4, S, x, &o, 1e-6);
	assert_true(x[2] == 0);
}

/* A fixed cost past the others' finish keeps a PU out, in both solvers,
 * with exactly 0 units (what SLSQP leaves it is below a fraction of S,
 * whatever S is: 10 units or 10^7). */
static void test_fixed_cost_excluded(void **state)
{
	(void)state;
	static const double Ss[] = { 10, 1e7 };
	for (int c = 0; c < 2; c++) {
		double S = Ss[c], u = 10 / S;   /* the same times at any S */
		struct curve k[3] = {
			{ .a = u, .W = S }, { .a = 2 * u, .W = S },
			{ .c0 = 50, .a = 0.001 * u, .W = S },
		};
		struct plb__efun e[3];
		struct plb__solve_out of, os;
		double xf[3], xs[3];

		bind(e, k, 3, NULL);
		assert_int_equal(plb__solve_fast(e, 3, S, xf, &of), 0);
		assert_int_equal(plb__solve_slsqp(e, 3, S, xs, &os), 0);
		check_split(e, 3, S, xf, &of, 1e-9);
		check_split(e, 3, S, xs, &os, 1e-6);
		if (!(xf[2] == 0 && xs[2] == 0))
			fail_msg("S = %g: the PU with the fixed cost got %g (fast), %g (SLSQP)",
				 S, xf[2], xs[2]);
		/* 1 x0 = 2 x1, x0 + x1 = S */
		assert_true(fabs(of.T - 20.0 / 3) <= 1e-9 * of.T);
		assert_true(fabs(os.T - of.T) <= 1e-7 * of.T);
	}
}

/* Flat curves: a constant-time PU takes what it finishes first; all-flat. */
static void test_flat_curves(void **state)
{
	struct curve k[2] = { { .c0 = 1, .W = 1 }, { .a = 1, .W = 1 } };
	struct curve z[2] = { { .W = 1 }, { .W = 1 } };
	struct plb__efun e[2];
	struct plb__solve_out o;
	double x[2];

	(void)state;
	bind(e, k, 2, NULL);
	assert_int_equal(plb__solve_fast(e, 2, 10, x, &o), 0);
	check_split(e, 2, 10, x, &o, 1e-9);
	assert_true(fabs(o.T - 1) <= 1e-12);
	assert_int_equal(plb__solve_fast(e, 2, 0.5, x, &o), 0);
	check_split(e, 2, 0.5, x, &o, 1e-9);
	assert_true(fabs(o.T - 0.5) <= 1e-12 && x[0] == 0);

	bind(e, z, 2, NULL);
	assert_int_equal(plb__solve_fast(e, 2, 3, x, &o), 0);
	assert_true(seq_sum(x, 2) == 3 && x[0] >= 0 && x[1] >= 0);
	assert_true(o.T == 0);
}

/* One PU takes everything and finishes at avail + E(S). */
static void test_one_pu(void **state)
{
	struct curve k = { .c0 = 0.5, .a = 2, .b = 1, .W = 7 };
	struct plb__efun e;
	struct plb__solve_out o;
	double x, avail = 3;

	(void)state;
	bind(&e, &k, 1, &avail);
	assert_int_equal(plb__solve_fast(&e, 1, 7, &x, &o), 0);
	assert_true(x == 7);
	assert_true(o.T == 3 + c_eval(&k, 7));
	assert_int_equal(plb__solve_slsqp(&e, 1, 7, &x, &o), 0);
	assert_true(x == 7);
	assert_true(o.T == 3 + c_eval(&k, 7));
	assert_int_equal(o.iters, 0);   /* nothing to solve: SLSQP not run */
}

/* S = 0: every share is 0 and T is the earliest avail, found with no
 * iteration of either solver. */
static void test_zero_S(void **state)
{
	struct curve k[3] = { { .a = 1, .W = 1 }, { .a = 2, .W = 1 },
			      { .a = 3, .W = 1 } };
	struct plb__efun e[3];
	struct plb__solve_out o;
	double x[3] = { 5, 5, 5 }, avail[3] = { 0.7, 0.2, 0.9 };

	(void)state;
	bind(e, k, 3, avail);
	o.iters = -1;
	assert_int_equal(plb__solve_fast(e, 3, 0, x, &o), 0);
	assert_true(x[0] == 0 && x[1] == 0 && x[2] == 0 && o.T == 0.2);
	assert_int_equal(o.iters, 0);
	x[1] = 5;
	o.iters = -1;
	assert_int_equal(plb__solve_slsqp(e, 3, 0, x, &o), 0);
	assert_true(x[0] == 0 && x[1] == 0 && x[2] == 0 && o.T == 0.2);
	assert_int_equal(o.iters, 0);
}

/* The split does not depend on the unit of time: the same curves with
 * every time multiplied by 10^k (k = -6..9: from millions of units per
 * second to a unit in minutes) give the same shares to 1e-9 and T times
 * 10^k, and the outer search stays Newton (at most 8 steps, as in
 * test_slsqp_agrees_with_fast) whatever the PUs' rates are. */
static void test_fast_time_scale(void **state)
{
	(void)state;
	for (int rep = 0; rep < 24; rep++) {
		int n = 2 + rep % 7;
		struct curve k[8], ks[8];
		struct plb__efun e[8];
		struct plb__solve_out o1, os;
		double x1[8], xs[8], avail[8], W = 1e6, S = W * (0.05 + urand());

		random_curves(k, n, W);
		for (int p = 0; p < n; p++)
			avail[p] = rep & 1 ? 0.05 * urand() : 0;
		bind(e, k, n, avail);
		assert_int_equal(plb__solve_fast(e, n, S, x1, &o1), 0);
		for (int sc = -6; sc <= 9; sc += 3) {
			double f = pow(10, sc), as[8];

			for (int p = 0; p < n; p++) {
				ks[p] = k[p];
				ks[p].c0 *= f;
				ks[p].a *= f;
				ks[p].b *= f;
				ks[p].c *= f;
				ks[p].d *= f;
				as[p] = f * avail[p];
			}
			bind(e, ks, n, as);
			assert_int_equal(plb__solve_fast(e, n, S, xs, &os), 0);
			check_split(e, n, S, xs, &os, 1e-9);
			if (os.iters > 8)
				fail_msg("times x 1e%d: %d outer iterations", sc, os.iters);
			assert_near(os.T, f * o1.T, 1e-9 * f * o1.T);
			for (int p = 0; p < n; p++)
				assert_near(xs[p], x1[p], 1e-9 * fmax(x1[p], S / n));
		}
	}
}

/* Steep curves (e^(x/W) over 20 to 30 W, as in test_slsqp_steep_curves)
 * in slow units (up to a second per unit, so the weights 1 / E_p' that
 * spread the outer search's last residual add up to less than one unit
 * per second): Newton on T overshoots here and the search ends on
 * bisection steps, with a residual near its tolerance; spread over the
 * shares, it still leaves every PU finishing at T (1e-9). */
static void test_fast_steep_slow_units(void **state)
{
	uint64_t seed = 20240611;

	(void)state;
	for (int rep = 0; rep < 300; rep++) {
		int n = 2 + (int)(test_urand(&seed) * 3);
		struct curve k[4];
		struct plb__efun e[4];
		struct plb__solve_out o;
		double x[4], S = 100 * (0.5 + test_urand(&seed));

		for (int p = 0; p < n; p++) {
			double sp = pow(10, test_urand(&seed));

			k[p] = (struct curve){
				.a = test_urand(&seed) / sp,
				.d = 0.001 * test_urand(&seed) / sp,
				.W = S / (20 + 10 * test_urand(&seed)),
			};
		}
		bind(e, k, n, NULL);
		assert_int_equal(plb__solve_fast(e, n, S, x, &o), 0);
		check_split(e, n, S, x, &o, 1e-9);
	}
}

/* Linear curves over a huge domain whose per-unit times are below
 * 1 / DBL_MAX (E_p(x) = 1 + c_p x with c_p of 1e-309 s, S near 1e308
 * units): the weights 1 / E_p' that spread the last residual are
 * infinite. The split is still the equal-time one, x_p in proportion to
 * 1 / c_p, checked in closed form. */
static void test_fast_tiny_slopes(void **state)
{
	const double c[3] = { 1e-309, 2e-309, 4e-309 };
	struct curve k[3];
	struct plb__efun e[3];
	struct plb__solve_out o;
	double x[3];

	(void)state;
	for (int rep = 0; rep < 8; rep++) {
		double S = 1e308 * (0.3 + 0.5 * urand()), T;

		for (int p = 0; p < 3; p++)
			k[p] = (struct curve){ .c0 = 1, .a = c[p], .W = S };
		bind(e, k, 3, NULL);
		assert_int_equal(plb__solve_fast(e, 3, S, x, &o), 0);
		check_split(e, 3, S, x, &o, 1e-9);
		/* x_p c_p = T - 1 for all p, sum x_p = S (1 / c_p overflows) */
		T = 1 + S * c[0] / (1 + c[0] / c[1] + c[0] / c[2]);
		assert_near(o.T, T, 1e-9 * T);
		for (int p = 0; p < 3; p++)
			assert_near(x[p], (T - 1) / c[p], 1e-9 * S);
	}
}

/* E(x) = (x / S)^k: a PU's whole time in the last few units. */
static double pw_eval(const void *ctx, double x)
{
	const double *k = ctx;

	return pow(fmax(x, 0) / k[1], k[0]);
}

static double pw_deriv(const void *ctx, double x)
{
	const double *k = ctx;

	return k[0] / k[1] * pow(fmax(x, 0) / k[1], k[0] - 1);
}

/* Curves (x/S)^1000 and (x/S)^500 put the optimum T near 1e-209 s with
 * the bracket starting at [0, 1]: bisection needs some 700 halvings, and
 * Newton on T barely moves, past the outer search's cap. The fast path
 * then says so (PLB_ESOLVE, on which plb__solve goes to SLSQP): it returns
 * the equal-time split or that error, never a split whose PUs finish at
 * different times. */
static void test_fast_gives_up_or_solves(void **state)
{
	const double S = 1000, k[2][2] = { { 1000, S }, { 500, S } };
	struct plb__efun e[2];
	struct plb__solve_out o;
	double x[2];
	int rc;

	(void)state;
	for (int p = 0; p < 2; p++)
		e[p] = (struct plb__efun){ pw_eval, pw_deriv, k[p], 0 };
	rc = plb__solve_fast(e, 2, S, x, &o);
	if (rc == 0)
		check_split(e, 2, S, x, &o, 1e-9);
	else
		assert_int_equal(rc, PLB_ESOLVE);
}

/* Bad input is PLB_EINVAL; a decreasing curve is PLB_ESOLVE (fast path). */
/* A block time that is finite at 0 units but not at S (past x = 0.5). */
static double inf_past_half(const void *ctx, double x)
{
	(void)ctx;
	return x > 0.5 ? INFINITY : x;
}

static double deriv_one(const void *ctx, double x)
{
	(void)ctx;
	(void)x;
	return 1;
}

static void test_bad_input(void **state)
{
	struct curve k[2] = { { .a = 1, .W = 1 }, { .a = 2, .W = 1 } };
	struct plb__efun e[2];
	struct plb__solve_out o;
	double x[2];
	int (*solve[2])(const struct plb__efun *, int, double, double *,
			struct plb__solve_out *) = {
		plb__solve_fast, plb__solve_slsqp
	};

	(void)state;
	for (int s = 0; s < 2; s++) {
		bind(e, k, 2, NULL);
		assert_int_equal(solve[s](e, 0, 1, x, &o), PLB_EINVAL);
		assert_int_equal(solve[s](e, -3, 1, x, &o), PLB_EINVAL);
		assert_int_equal(solve[s](e, 2, -1, x, &o), PLB_EINVAL);
		assert_int_equal(solve[s](e, 2, NAN, x, &o), PLB_EINVAL);
		assert_int_equal(solve[s](e, 2, INFINITY, x, &o), PLB_EINVAL);
		assert_int_equal(solve[s](NULL, 2, 1, x, &o), PLB_EINVAL);
		assert_int_equal(solve[s](e, 2, 1, NULL, &o), PLB_EINVAL);
		e[1].avail = NAN;
		assert_int_equal(solve[s](e, 2, 1, x, &o), PLB_EINVAL);
		e[1].avail = -1;
		assert_int_equal(solve[s](e, 2, 1, x, &o), PLB_EINVAL);
		/* a curve without its derivative, or without itself */
		bind(e, k, 2, NULL);
		e[1].deriv = NULL;
		assert_int_equal(solve[s](e, 2, 1, x, &o), PLB_EINVAL);
		bind(e, k, 2, NULL);
		e[0].eval = NULL;
		assert_int_equal(solve[s](e, 2, 1, x, &o), PLB_EINVAL);
	}
	/* not finite at S: the fast solver refuses it, the first curve alone
	 * as every one */
	struct plb__efun inf[2] = {{inf_past_half, deriv_one, NULL, 0}, {inf_past_half, deriv_one, NULL, 0}};
	assert_int_equal(plb__solve_fast(inf, 2, 1, x, &o), PLB_ESOLVE);
	bind(e, k, 2, NULL);
	e[0] = inf[0];
	assert_int_equal(plb__solve_fast(e, 2, 1, x, &o), PLB_ESOLVE);
	k[1].a = -1;
	bind(e, k, 2, NULL);
	assert_int_equal(plb__solve_fast(e, 2, 1, x, &o), PLB_ESOLVE);
	/* so does SLSQP, for one such curve beside a finite one */
	bind(e, k, 2, NULL);
	e[0] = inf[0];
	assert_int_equal(plb__solve_slsqp(e, 2, 1, x, &o), PLB_ESOLVE);
}

/* A block time that jumps by 10 s past 0.3 units: beside 2x, no split of
 * 1 unit gives the two PUs the same finish (under 0.3 units the first
 * ends by 0.3 s and the second after 1.4 s; past it the first ends after
 * 10.3 s, the second by 1.4 s). */
static double jump_at_03(const void *ctx, double x)
{
	(void)ctx;
	return x > 0.3 ? x + 10 : x;
}

/* A start-up cost that E(0) does not show: nothing at 0 units, 100 s
 * and up past it. */
static double startup_past_0(const void *ctx, double x)
{
	(void)ctx;
	return x > 0 ? 100 + x : 0;
}

/* SLSQP says it failed where no split has equal finish times, and where
 * it cannot confirm its split (a PU without a share would end first, at
 * 0 s): it restarts from where it stopped a bounded number of rounds,
 * then gives up or returns the split; it does not loop. */
static void test_slsqp_gives_up_on_unequal_finishes(void **state)
{
	struct curve two = { .a = 2, .W = 1 };  /* 2x */
	struct plb__efun e[2] = {
		{ jump_at_03, deriv_one, NULL, 0 }, { c_eval, c_deriv, &two, 0 }
	};
	struct plb__solve_out o;
	double x[2];

	(void)state;
	assert_int_equal(plb__solve_slsqp(e, 2, 1, x, &o), PLB_ESOLVE);
	e[0].eval = startup_past_0;
	int rc = plb__solve_slsqp(e, 2, 1, x, &o);
	if (!(rc == PLB_ESOLVE || (rc == 0 && x[0] == 0 && x[1] == 1)))
		fail_msg("a start-up past 0 units: rc %d, split %g + %g", rc, x[0], x[1]);
}

/* Many PUs whose curves are flat below their first units (as fitted
 * models are held below half their smallest block), free at different
 * times: the sum of shares jumps where each curve starts, and a split
 * that lands on a jump was bracketed to the last bit by halving (40-55
 * sweeps at the end of a 4096-PU run). Going to the curve's start at once
 * keeps every solve under 25 sweeps, and each split still ends together
 * (check_split). */
static void test_fast_jumps_found(void **state)
{
	enum { N = 512 };
	static struct curve k[N];
	static struct plb__efun e[N];
	static double avail[N], x[N];
	struct plb__solve_out o;
	int most = 0;

	(void)state;
	for (int p = 0; p < N; p++) {
		k[p] = (struct curve){ .c0 = 0.01 * (1 + p % 5), .a = 1e-3 * (1 + 0.1 * (p % 7)),
				       .W = 1e6, .flat = 32 };
		avail[p] = 0.003 * (p % 13);
	}
	bind(e, k, N, avail);
	for (int i = 0; i < 60; i++) {
		double S = 2000 + 997.0 * i;
		assert_int_equal(plb__solve_fast(e, N, S, x, &o), 0);
		check_split(e, N, S, x, &o, 1e-9);
		most = o.iters > most ? o.iters : most;
	}
	if (most > 25)
		fail_msg("a solve took %d sweeps", most);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast_matches_brute_force),
		cmocka_unit_test(test_slsqp_agrees_with_fast),
		cmocka_unit_test(test_slsqp_agrees_with_fast_on_models),
		cmocka_unit_test(test_slsqp_steep_curves),
		cmocka_unit_test(test_slsqp_slow_units),
		cmocka_unit_test(test_slsqp_gives_up_on_unequal_finishes),
		cmocka_unit_test(test_fast_invariants),
		cmocka_unit_test(test_fast_optimal_on_tables),
		cmocka_unit_test(test_huge_avail_gets_zero),
		cmocka_unit_test(test_fixed_cost_excluded),
		cmocka_unit_test(test_flat_curves),
		cmocka_unit_test(test_one_pu),
		cmocka_unit_test(test_zero_S),
		cmocka_unit_test(test_fast_time_scale),
		cmocka_unit_test(test_fast_tiny_slopes),
		cmocka_unit_test(test_fast_steep_slow_units),
		cmocka_unit_test(test_fast_gives_up_or_solves),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_fast_jumps_found),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
