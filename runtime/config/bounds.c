/* T_lb and T_eq from true curves (see bounds.h). Inversions are bisections:
 * true curves are non-decreasing in block size (the config loader rejects
 * decreasing tables), so "largest b with E(b) <= t" is well defined. */
#include <math.h>

#include "runtime/config/bounds.h"

static double block_time(const struct plb__devmodel *m, double b, int overlap)
{
	double f = plb__curve_spec_eval(&m->compute, b);
	double g = plb__curve_spec_eval(&m->transfer, b);
	return overlap ? fmax(f, g) : f + g;
}

/* Largest b in [0, W] with fn(b) <= t, for non-decreasing fn. */
static double invert(double (*fn)(const struct plb__devmodel *, double, int),
		     const struct plb__devmodel *m, int arg, double t, double W)
{
	if (fn(m, W, arg) <= t)
		return W;
	double lo = 0, hi = W;
	if (fn(m, 0, arg) > t)
		return 0;
	for (int i = 0; i < 200 && hi - lo > 1e-9 * (1 + hi); i++) {
		double mid = 0.5 * (lo + hi);
		if (fn(m, mid, arg) <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* b / E(b), 0 where E(b) is not positive. */
static double rate_at(const struct plb__devmodel *m, double b, int overlap)
{
	double e = block_time(m, b, overlap);
	return e > 0 ? b / e : 0;
}

/* r(t) = max over b with E(b) <= t of b / E(b): on each linear piece of a
 * table b/E(b) is monotone, so its breakpoints and the largest feasible b
 * are the candidates. For a polynomial with non-negative coefficients
 * E(b)/b = c0/b + c1 + c2 b + ... is convex, so b/E(b) has one peak: a log
 * grid finds its neighbourhood and a golden-section search the peak. */
static double best_rate(const struct plb__devmodel *m, double t, double W, int overlap)
{
	double best = 0;
	double bmax = invert(block_time, m, overlap, t, W);
	if (bmax > 0)
		best = bmax / fmax(block_time(m, bmax, overlap), 1e-300);
	const struct plb__curve_spec *cs[2] = {&m->compute, &m->transfer};
	for (int k = 0; k < 2; k++) {
		const struct plb__curve_spec *c = cs[k];
		if (c->kind == PLB__CURVE_TABLE) {
			for (int i = 0; i < c->n && c->x[i] <= bmax; i++)
				if (c->x[i] > 0)
					best = fmax(best, rate_at(m, c->x[i], overlap));
		} else if (c->kind == PLB__CURVE_POLY && bmax > 1) {
			int top = 0;
			double peak = 0;
			for (int i = 0; i <= 64; i++) {
				double r = rate_at(m, pow(bmax, i / 64.0), overlap);
				if (r > peak) {
					peak = r;
					top = i;
				}
			}
			/* golden section on log b between the peak's neighbours */
			double lo = (top > 0 ? top - 1 : 0) / 64.0 * log(bmax);
			double hi = (top < 64 ? top + 1 : 64) / 64.0 * log(bmax);
			const double g = 0.6180339887498949;
			for (int it = 0; it < 60 && hi - lo > 1e-12; it++) {
				double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
				if (rate_at(m, exp(x1), overlap) < rate_at(m, exp(x2), overlap))
					lo = x1;
				else
					hi = x2;
			}
			best = fmax(best, fmax(peak, rate_at(m, exp(0.5 * (lo + hi)), overlap)));
		}
	}
	return best;
}

static double capacity(const struct plb__devmodel *m, double T, double W, int overlap)
{
	double teff = plb__devmodel_work_until(m, fmin(T, m->fail_t));
	if (teff <= 0)
		return 0;
	double c = best_rate(m, teff, W, overlap) * teff;
	return c < W ? c : W;
}

/* Smallest T with total(T) >= W, total non-decreasing. */
static double solve_T(double (*total)(const struct plb__devmodel *const *, int, double, double, int),
		      const struct plb__devmodel *const *m, int n, double W, int arg)
{
	double hi = 1e-6;
	while (total(m, n, hi, W, arg) < W) {
		hi *= 2;
		if (hi > 1e13)
			return INFINITY;
	}
	double lo = 0;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = 0.5 * (lo + hi);
		if (total(m, n, mid, W, arg) >= W)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

static double total_capacity(const struct plb__devmodel *const *m, int n,
			     double T, double W, int overlap)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += capacity(m[i], T, W, overlap);
	return s;
}

double plb__bound_lower(const struct plb__devmodel *const *m, int n, double W,
			int overlap)
{
	return solve_T(total_capacity, m, n, W, overlap);
}

/* Finish time of one block of b units started at t = 0. */
static double one_block(const struct plb__devmodel *m, double b, int unused)
{
	double x = plb__devmodel_finish(m, 0, plb__curve_spec_eval(&m->transfer, b));
	double c = plb__devmodel_finish(m, x, plb__curve_spec_eval(&m->compute, b));
	return c <= m->fail_t ? c : INFINITY;
}

static double total_one_round(const struct plb__devmodel *const *m, int n,
			      double T, double W, int unused)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += invert(one_block, m[i], 0, T, W);
	return s;
}

double plb__bound_eq(const struct plb__devmodel *const *m, int n, double W)
{
	return solve_T(total_one_round, m, n, W, 0);
}
