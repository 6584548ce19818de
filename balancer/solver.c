/* The equal-time block-size solvers of solver.h. The fast path reduces the
 * system to one unknown, the finish time T: each PU takes the most units it
 * can finish by T, x_p(T) = E_p^-1(T - avail_p), and T is moved until the
 * x_p(T) add up to S. sum x_p(T) is non-decreasing in T, so the smallest T
 * that reaches S is the optimum: a split that finishes by T' has every
 * x_p <= x_p(T'). The outer search is Newton on T inside a bracket that
 * also bounds every PU's inversion, which is warm-started Newton falling
 * back to bisection. SLSQP (NLopt) solves the same problem as a constrained
 * minimisation; it serves models that are not monotone and checks the fast
 * path in tests. Both end by making the split sum to S exactly. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <nlopt.h>

#include "balancer/solver.h"

#define SUM_RTOL   1e-10	/* outer stop: |sum x - S| <= SUM_RTOL * S */
#define X_RTOL     1e-13	/* inner stop: a Newton step below X_RTOL * S */
#define OUTER_MAX  300
/* A bracket on T narrower than this share of T, not yet at SUM_RTOL, may
 * hold a jump of sum x: where a curve flat from 0 (a model held flat
 * below half its smallest block) starts, its share leaps from 0. The
 * solve then goes to the starts in the bracket at once: halving to the
 * last bit took 40-55 sweeps at the end of a 4096-PU run, 5-17 ms. */
#define JUMP_RTOL  1e-4
#define INNER_MAX  200
#define SQ_XTOL    1e-10
#define SQ_FTOL    0
#define SQ_CTOL    1e-9
#define SQ_ZERO    1e-9		/* SLSQP shares below this fraction are 0 */
#define SQ_SPREAD  1e-7		/* accepted spread of finish times */
#define SQ_ROUNDS  8		/* SLSQP runs, restarts included */

static int check_args(const struct plb__efun *e, int n, double S,
		      const double *x)
{
	if (n < 1 || !e || !x || !isfinite(S) || S < 0)
		return PLB_EINVAL;
	for (int p = 0; p < n; p++)
		if (!e[p].eval || !e[p].deriv || !isfinite(e[p].avail) ||
		    e[p].avail < 0)
			return PLB_EINVAL;
	return 0;
}

static void set_out(struct plb__solve_out *out, double T, int iters)
{
	if (out) {
		out->T = T;
		out->iters = iters;
	}
}

/* S == 0: nobody gets data; the earliest a PU is free is the answer. */
static int zero_split(const struct plb__efun *e, int n, double *x,
		      struct plb__solve_out *out)
{
	double T = INFINITY;

	for (int p = 0; p < n; p++) {
		x[p] = 0;
		T = fmin(T, e[p].avail);
	}
	set_out(out, T, 0);
	return 0;
}

/* Left-to-right, as callers will add the split up. */
static double seq_sum(const double *x, int n)
{
	double s = 0;

	for (int p = 0; p < n; p++)
		s += x[p];
	return s;
}

/* Make the split sum to S exactly, in any order of addition: round every
 * share to a multiple of g = ulp(S), so that every partial sum up to S is
 * a representable multiple of g and no addition rounds; then the largest
 * share takes S minus the others, also exact. Each share moves by at most
 * g/2, a relative 1e-16 of S. */
static void exact_sum(double *x, int n, double S)
{
	double g = nextafter(S, INFINITY) - S, rest = 0;
	int k = 0;

	for (int p = 0; p < n; p++) {
		x[p] = x[p] > 0 ? g * nearbyint(x[p] / g) : 0;
		if (x[p] > x[k])
			k = p;
	}
	for (int p = 0; p < n; p++)
		if (p != k)
			rest += x[p];
	x[k] = S - rest > 0 ? S - rest : 0;
}

/* Spread the residual r = S - sum x over the shares: in proportion to
 * w_p where w is given (1/E_p', which keeps the finish times equal to
 * first order), else in proportion to x_p; then fix the last ulps. */
static void spread(double *x, const double *w, int n, double S)
{
	double r = S - seq_sum(x, n), W = 0;

	if (w)
		for (int p = 0; p < n; p++)
			W += w[p];
	if (!(W > 0) || !isfinite(W)) {
		w = x;
		W = seq_sum(x, n);
	}
	if (W > 0 && r != 0)
		for (int p = 0; p < n; p++)
			x[p] = fmin(fmax(x[p] + r * (w[p] / W), 0), S);
	exact_sum(x, n, S);
}

/* The finish time solver.h promises: the latest PU that gets data. */
static int finish_time(const struct plb__efun *e, int n, const double *x,
		       double *T)
{
	double t = -INFINITY;

	for (int p = 0; p < n; p++)
		if (x[p] > 0)
			t = fmax(t, e[p].avail + e[p].eval(e[p].ctx, x[p]));
	if (!isfinite(t))
		return PLB_ESOLVE;
	*T = t;
	return 0;
}

/* ---- fast path ---- */

/* Largest x in [a, b] with E(x) <= t, given E(a) <= t; safeguarded Newton
 * from the warm start x0, bisection where Newton leaves the bracket or the
 * curve is flat. A converged Newton step is taken without a check; a
 * bisection ends on a, where E <= t is known (E may jump at b). *d gets E'
 * near the answer (0 if never positive). */
static double invert(const struct plb__efun *f, double t, double a, double b,
		     double x0, double tol, double *d)
{
	double x = fmin(fmax(x0, a), b);

	*d = 0;
	for (int k = 0; k < INNER_MAX; k++) {
		double v = f->eval(f->ctx, x) - t, xn;
		int newton = 1;

		*d = f->deriv(f->ctx, x);
		if (v == 0 && *d > 0)
			return x;
		if (v > 0)
			b = x;
		else
			a = x;
		xn = *d > 0 ? x - v / *d : NAN;
		if (!(xn > a && xn < b)) {
			xn = a + 0.5 * (b - a);
			newton = 0;
		}
		if (b - a <= tol || (!newton && xn - a <= tol))
			return a;
		if (fabs(xn - x) <= tol)
			return xn;
		x = xn;
	}
	return a;
}

struct fast {
	const struct plb__efun *e;
	int n;
	double S, tol;
	double *x, *f0, *fS, *xlo, *xhi, *d;
};

/* x_p(T) for every PU, bracketed by the shares at the bracket's ends.
 * Returns sum x - S; *slope gets d(sum)/dT from the PUs strictly inside
 * (0, S), or 0 when one of them is flat there (sum jumps: no Newton). */
static double sweep(struct fast *f, double T, double *slope)
{
	double sum = 0, ds = 0;
	int flat = 0;

	for (int p = 0; p < f->n; p++) {
		double xp;

		if (T < f->f0[p]) {
			xp = 0;
			f->d[p] = 0;
		} else if (T >= f->fS[p]) {
			xp = f->S;
			f->d[p] = 0;
		} else {
			xp = invert(&f->e[p], T - f->e[p].avail, f->xlo[p],
				    f->xhi[p], f->x[p], f->tol, &f->d[p]);
			if (xp > 0 && xp < f->S) {
				if (f->d[p] > 0)
					ds += 1 / f->d[p];
				else
					flat = 1;
			}
		}
		f->x[p] = xp;
		sum += xp;
	}
	*slope = flat ? 0 : ds;
	return sum - f->S;
}

/* A split on chords: E_p taken as linear from (0, f0_p) to (S, fS_p) makes
 * sum x_p(T) piecewise linear, and a few Newton steps solve it; returns
 * that T and puts the shares in x. The fast path starts from it and SLSQP
 * both starts from it and prunes with it. */
static double chord_split(const double *f0, const double *fS, int n,
			  double S, double *x)
{
	double a = INFINITY, b = INFINITY, T;

	for (int p = 0; p < n; p++) {
		a = fmin(a, f0[p]);
		b = fmin(b, fS[p]);
	}
	T = b;
	for (int it = 0; it < 100; it++) {
		double h = -S, dh = 0, Tn;

		for (int p = 0; p < n; p++) {
			if (T < f0[p])
				continue;
			if (T >= fS[p]) {
				h += S;
				continue;
			}
			double r = S / (fS[p] - f0[p]);
			h += r * (T - f0[p]);
			dh += r;
		}
		if (fabs(h) <= 1e-6 * S)
			break;
		if (h < 0)
			a = T;
		else
			b = T;
		Tn = dh > 0 ? T - h / dh : NAN;
		if (!(Tn > a && Tn < b))
			Tn = a + 0.5 * (b - a);
		if (Tn == T)
			break;
		T = Tn;
	}
	for (int p = 0; p < n; p++) {
		if (T < f0[p])
			x[p] = 0;
		else if (T >= fS[p])
			x[p] = S;
		else
			x[p] = S * (T - f0[p]) / (fS[p] - f0[p]);
	}
	return T;
}

int plb__solve_fast(const struct plb__efun *e, int n, double S, double *x,
		    struct plb__solve_out *out)
{
	struct fast f = { .e = e, .n = n, .S = S, .tol = X_RTOL * S, .x = x };
	double lo = INFINITY, hi = INFINITY, T, g = 0, gprev = INFINITY;
	double slope;
	int rc = check_args(e, n, S, x), it, hi_done = 0, newton_ok = 1;
	double *ws;

	if (rc)
		return rc;
	if (S == 0)
		return zero_split(e, n, x, out);
	ws = malloc(5 * (size_t)n * sizeof *ws);
	if (!ws)
		return PLB_ENOMEM;
	f.f0 = ws;
	f.fS = ws + n;
	f.xlo = ws + 2 * (size_t)n;
	f.xhi = ws + 3 * (size_t)n;
	f.d = ws + 4 * (size_t)n;

	/* Below min f0 nobody takes data; at min fS one PU takes all of it. */
	for (int p = 0; p < n; p++) {
		f.f0[p] = e[p].avail + e[p].eval(e[p].ctx, 0);
		f.fS[p] = e[p].avail + e[p].eval(e[p].ctx, S);
		if (!isfinite(f.f0[p]) || !isfinite(f.fS[p]) ||
		    f.fS[p] < f.f0[p]) {
			rc = PLB_ESOLVE;	/* not finite or not monotone */
			goto out;
		}
		lo = fmin(lo, f.f0[p]);
		hi = fmin(hi, f.fS[p]);
		f.xlo[p] = 0;
		f.xhi[p] = S;
	}
	T = chord_split(f.f0, f.fS, n, S, x);

	for (it = 1; it <= OUTER_MAX; it++) {
		double Tn;

		g = sweep(&f, T, &slope);
		if (fabs(g) <= SUM_RTOL * S)
			break;
		if (g < 0) {
			lo = T;
			memcpy(f.xlo, x, (size_t)n * sizeof *x);
		} else {
			hi = T;
			hi_done = 1;
			memcpy(f.xhi, x, (size_t)n * sizeof *x);
		}
		if (hi - lo <= 4 * DBL_EPSILON * fmax(fabs(lo), fabs(hi)))
			break;
		if (hi_done && hi - lo <= JUMP_RTOL * fmax(fabs(lo), fabs(hi))) {
			/* try the first start inside the bracket, else the double
			 * next to a start at one of its ends (whether a share
			 * has leapt exactly at its start depends on the inverse):
			 * each try puts an end on a start, or closes the bracket
			 * to one ulp around it */
			double jump = INFINITY;
			int at_lo = 0, at_hi = 0;
			for (int p = 0; p < n; p++) {
				if (f.f0[p] > lo && f.f0[p] < hi)
					jump = fmin(jump, f.f0[p]);
				at_lo |= f.f0[p] == lo;
				at_hi |= f.f0[p] == hi;
			}
			if (isfinite(jump) || at_lo || at_hi) {
				T = isfinite(jump) ? jump : at_lo ? nextafter(lo, INFINITY)
								  : nextafter(hi, -INFINITY);
				continue;
			}
		}
		/* Newton while it at least halves the residual. */
		newton_ok = newton_ok ? fabs(g) <= 0.5 * fabs(gprev) : 1;
		gprev = g;
		Tn = slope > 0 && newton_ok ? T - g / slope : NAN;
		if (!(Tn > lo && Tn < hi)) {
			Tn = lo + 0.5 * (hi - lo);
			newton_ok = 0;
		}
		T = Tn;
	}
	if (it > OUTER_MAX) {
		rc = PLB_ESOLVE;
		goto out;
	}

	if (fabs(g) <= SUM_RTOL * S) {
		/* weights 1/E_p', on the PUs inside (0, S) only */
		for (int p = 0; p < n; p++)
			f.d[p] = x[p] > 0 && x[p] < S && f.d[p] > 0 ?
				 1 / f.d[p] : 0;
		spread(x, f.d, n, S);
	} else {
		/* The bracket closed on a jump of the sum (a curve flat at
		 * level T): any split between the shares at its ends finishes
		 * by hi, so interpolate to land on S. */
		double slo, shi, th;

		if (!hi_done) {
			(void)sweep(&f, hi, &slope);
			memcpy(f.xhi, x, (size_t)n * sizeof *x);
		}
		slo = seq_sum(f.xlo, n);
		shi = seq_sum(f.xhi, n);
		th = shi > slo ? (S - slo) / (shi - slo) : 1;
		th = fmin(fmax(th, 0), 1);
		for (int p = 0; p < n; p++)
			x[p] = f.xlo[p] + th * (f.xhi[p] - f.xlo[p]);
		spread(x, NULL, n, S);
	}
	rc = finish_time(e, n, x, &T);
	if (!rc)
		set_out(out, T, it);
out:
	free(ws);
	return rc;
}

/* ---- SLSQP ---- */

/* Variables y_i = x_i / s_i, with s_i the PU's share at the start, and
 * tau = T / T0, with T0 the start's finish: all near 1, and so are the
 * constraints' slopes, which SLSQP's quasi-Newton needs to behave on many
 * PUs. The sum constraint is scaled by m / S for the same reason. */
struct sq {
	const struct plb__efun *e;
	const int *idx;
	const double *s;
	int m;
	double S, T0;
	int nevals;
};

static double sq_obj(unsigned nv, const double *y, double *grad, void *data)
{
	struct sq *c = data;

	c->nevals++;
	if (grad) {
		memset(grad, 0, nv * sizeof *grad);
		grad[nv - 1] = 1;
	}
	return y[nv - 1];
}

/* (avail_p + E_p(x_p)) / T0 - tau <= 0 for each PU. */
static void sq_time(unsigned m, double *res, unsigned nv, const double *y,
		    double *grad, void *data)
{
	struct sq *c = data;

	if (grad)
		memset(grad, 0, (size_t)m * nv * sizeof *grad);
	for (unsigned i = 0; i < m; i++) {
		const struct plb__efun *f = &c->e[c->idx[i]];
		double xp = fmin(fmax(c->s[i] * y[i], 0), c->S);

		res[i] = (f->avail + f->eval(f->ctx, xp)) / c->T0 - y[m];
		if (grad) {
			grad[i * nv + i] = c->s[i] * f->deriv(f->ctx, xp) /
					   c->T0;
			grad[i * nv + m] = -1;
		}
	}
}

/* (sum x - S) m / S = 0. */
static double sq_sum(unsigned nv, const double *y, double *grad, void *data)
{
	struct sq *c = data;
	double sum = -c->S, k = c->m / c->S;

	for (unsigned i = 0; i + 1 < nv; i++) {
		sum += c->s[i] * y[i];
		if (grad)
			grad[i] = k * c->s[i];
	}
	if (grad)
		grad[nv - 1] = 0;
	return k * sum;
}

/* One SLSQP run over the m PUs in c->idx from the shares xs (m values,
 * summing to S); leaves the answer in xs and the finish time in *T. */
static int sq_run(struct sq *c, double *xs, double *T)
{
	int m = c->m, rc = 0;
	double T0 = 0, fval, *y, *s, *lb, *ub, *tol;
	nlopt_opt opt = NULL;
	nlopt_result r;

	y = malloc((5 * (size_t)m + 3) * sizeof *y);
	if (!y)
		return PLB_ENOMEM;
	s = y + m + 1;
	lb = s + m;
	ub = lb + m + 1;
	tol = ub + m + 1;
	/* tau = 1 at the start's latest finish, so the start is feasible. */
	for (int i = 0; i < m; i++) {
		const struct plb__efun *f = &c->e[c->idx[i]];

		T0 = fmax(T0, f->avail + f->eval(f->ctx, xs[i]));
		s[i] = xs[i] > 1e-3 * c->S / m ? xs[i] : c->S / m;
		lb[i] = 0;
		ub[i] = c->S / s[i];
		/* within the bounds, which NLopt insists on: a share scaled
		 * to sum to S may pass S by an ulp */
		y[i] = fmin(xs[i] / s[i], ub[i]);
		tol[i] = SQ_CTOL;
	}
	if (!(T0 > 0) || !isfinite(T0)) {
		rc = PLB_ESOLVE;
		goto out;
	}
	c->T0 = T0;
	c->s = s;
	y[m] = 1;
	lb[m] = 0;
	ub[m] = HUGE_VAL;
	opt = nlopt_create(NLOPT_LD_SLSQP, (unsigned)m + 1);
	if (!opt) {
		rc = PLB_ENOMEM;
		goto out;
	}
	if (nlopt_set_lower_bounds(opt, lb) < 0 ||
	    nlopt_set_upper_bounds(opt, ub) < 0 ||
	    nlopt_set_min_objective(opt, sq_obj, c) < 0 ||
	    nlopt_add_inequality_mconstraint(opt, (unsigned)m, sq_time, c,
					     tol) < 0 ||
	    nlopt_add_equality_constraint(opt, sq_sum, c, SQ_CTOL) < 0 ||
	    nlopt_set_xtol_rel(opt, SQ_XTOL) < 0 ||
	    nlopt_set_ftol_rel(opt, SQ_FTOL) < 0 ||
	    nlopt_set_maxeval(opt, 100 + 2 * m) < 0) {
		rc = PLB_ESOLVE;
		goto out;
	}
	r = nlopt_optimize(opt, y, &fval);
	/* NLopt returns the best point it saw within the constraint
	 * tolerances, so a roundoff-limited stop, or one at the evaluations'
	 * limit, still leaves a usable one: the caller polishes it, checks
	 * it, and runs again from it where it is not the answer. */
	if (r == NLOPT_OUT_OF_MEMORY)
		rc = PLB_ENOMEM;
	else if ((r < 0 && r != NLOPT_ROUNDOFF_LIMITED) || !isfinite(fval))
		rc = PLB_ESOLVE;
	for (int i = 0; i < m; i++)
		xs[i] = fmin(fmax(s[i] * y[i], 0), c->S);
	*T = y[m] * T0;
out:
	nlopt_destroy(opt);
	free(y);
	return rc;
}

/* Whether the split looks optimal: the PUs with data finish together, as
 * they do at the optimum wherever E_p' > 0 (a PU on a flat or falling
 * stretch may finish early), and no PU left out could start before then. */
static int sq_done(const struct sq *c, const double *xs)
{
	double lo = INFINITY, hi = -INFINITY, idle = INFINITY;

	for (int i = 0; i < c->m; i++) {
		const struct plb__efun *f = &c->e[c->idx[i]];
		double t = f->avail + f->eval(f->ctx, xs[i]);

		if (xs[i] <= SQ_ZERO * c->S) {
			idle = fmin(idle, t);
			continue;
		}
		hi = fmax(hi, t);
		/* one on a falling stretch may finish early at the optimum;
		 * one on a flat one would take more at no cost */
		if (f->deriv(f->ctx, xs[i]) >= 0 && xs[i] < c->S)
			lo = fmin(lo, t);
	}
	return !(hi - lo > SQ_SPREAD * fabs(hi)) &&
	       !(idle < hi - SQ_SPREAD * fabs(hi));
}

/* Newton on SLSQP's answer: the PUs with data and a slope there take
 * shares that finish together, x_p += (T' - t_p) / E_p' with T' such that
 * the shares still sum to S, a step halved while it would end later; a PU
 * that finishes early on a flat stretch (held below its smallest block)
 * first takes all the units it can run in the same time. Where a curve
 * has a kink (a model's cap: past it a PU's share runs as several blocks
 * and its slope leaps), SLSQP's line search stops at it, its quasi-Newton
 * step built on the slope on the kink's near side; a flat stretch gives it
 * no slope to move by at all. */
static void sq_polish(const struct plb__efun *e, const int *idx, int m, double S, double *y)
{
	double *t = malloc(4 * (size_t)m * sizeof *t);
	if (!t)
		return;
	double *d = t + m, *z = d + m, *flat = z + m;
	for (int it = 0; it < 50; it++) {
		double w = 0, a = 0, fixed = 0, hi = -INFINITY;
		for (int i = 0; i < m; i++) {
			const struct plb__efun *f = &e[idx[i]];
			t[i] = f->avail + f->eval(f->ctx, y[i]);
			d[i] = y[i] > SQ_ZERO * S ? f->deriv(f->ctx, y[i]) : 0;
			if (y[i] > SQ_ZERO * S)
				hi = fmax(hi, t[i]);
		}
		for (int i = 0; i < m; i++) {
			const struct plb__efun *f = &e[idx[i]];
			flat[i] = y[i];
			if (d[i] == 0 && y[i] > SQ_ZERO * S && t[i] < hi) {
				/* the end of its flat stretch, from below */
				double lo = y[i], up = S;
				for (int k = 0; k < 100 && up - lo > 1e-12 * S; k++) {
					double mid = lo + 0.5 * (up - lo);
					if (f->avail + f->eval(f->ctx, mid) <= t[i])
						lo = mid;
					else
						up = mid;
				}
				flat[i] = lo;
			}
			if (d[i] > 0) {
				w += 1 / d[i];
				a += y[i] - t[i] / d[i];
			} else {
				fixed += flat[i];
			}
		}
		if (!(w > 0))
			break;
		double Tn = (S - fixed - a) / w, moved = 0;
		for (double step = 1; step > 1e-3; step *= 0.5) {
			double u = 0, hz = -INFINITY;
			for (int i = 0; i < m; i++) {
				z[i] = d[i] > 0 ? fmin(fmax(y[i] + step * (Tn - t[i]) / d[i], 0), S)
						: y[i] + step * (flat[i] - y[i]);
				u += z[i];
			}
			for (int i = 0; i < m; i++) {
				const struct plb__efun *f = &e[idx[i]];
				z[i] = u > 0 ? z[i] * (S / u) : z[i];
				if (z[i] > SQ_ZERO * S)
					hz = fmax(hz, f->avail + f->eval(f->ctx, z[i]));
			}
			if (hz < hi) {
				for (int i = 0; i < m; i++) {
					moved = fmax(moved, fabs(z[i] - y[i]));
					y[i] = z[i];
				}
				break;
			}
		}
		if (moved <= 1e-12 * S)
			break;
	}
	free(t);
}

/* Whether no split of S finishes by T, where every curve is
 * non-decreasing: the most units each PU could finish by T (bisected from
 * above: an upper bound) add up to less than S. A certificate that the
 * finish T / (1 - SQ_SPREAD) is optimal where SLSQP's split is not the
 * one with equal finish times that sq_done looks for: with a PU whose
 * curve is flat where it pins T (held below its smallest block), the
 * others may finish early at the optimum too, and any split is as good. */
static int sq_infeasible(const struct plb__efun *e, int n, double S, double T)
{
	double sum = 0;

	for (int p = 0; p < n && sum < S; p++) {
		const struct plb__efun *f = &e[p];
		double a = 0, b = S;

		if (!(f->avail + f->eval(f->ctx, 0) <= T))
			continue;               /* any share takes longer */
		if (f->avail + f->eval(f->ctx, S) <= T)
			return 0;
		for (int k = 0; k < 200 && b - a > 1e-12 * S; k++) {
			double mid = a + 0.5 * (b - a);
			if (f->avail + f->eval(f->ctx, mid) <= T)
				a = mid;
			else
				b = mid;
		}
		sum += b;
	}
	return sum < S;
}

int plb__solve_slsqp(const struct plb__efun *e, int n, double S, double *x,
		     struct plb__solve_out *out)
{
	struct sq c = { .e = e, .S = S };
	double T_ub = INFINITY, T1 = INFINITY, T;
	int rc = check_args(e, n, S, x), best = 0, m = 0;
	int *idx;
	double *f0, *fS, *y, *sec;

	if (rc)
		return rc;
	if (S == 0)
		return zero_split(e, n, x, out);
	idx = malloc((size_t)n * sizeof *idx);
	f0 = calloc(4 * (size_t)n + 1, sizeof *f0);  /* zeroed: no warning of gcc 13 */
	if (!idx || !f0) {
		rc = PLB_ENOMEM;
		goto out;
	}
	fS = f0 + n;
	sec = f0 + 2 * (size_t)n;
	y = f0 + 3 * (size_t)n;
	for (int p = 0; p < n; p++) {
		f0[p] = e[p].avail + e[p].eval(e[p].ctx, 0);
		fS[p] = e[p].avail + e[p].eval(e[p].ctx, S);
		if (!isfinite(f0[p]) || !isfinite(fS[p])) {
			rc = PLB_ESOLVE;
			goto out;
		}
		if (fS[p] < T1) {
			T1 = fS[p];
			best = p;
		}
	}
	/* Start from a split on rates with fixed costs: the chords from
	 * (0, f0) to (S, fS). Its finish bounds the optimum, and so do the
	 * finishes of two splits on secants through each PU's share, which
	 * land near the optimum for smooth curves, and of all on one PU. A
	 * block costs at least E_p(0), so a PU with avail_p + E_p(0) past the
	 * bound cannot help: leave it out, else it would pin T (see below).
	 * The secant split is used to prune only: started there, SLSQP would
	 * have little left to check. */
	(void)chord_split(f0, fS, n, S, x);
	if (finish_time(e, n, x, &T_ub) || T1 < T_ub) {
		T_ub = T1;
		memset(x, 0, (size_t)n * sizeof *x);
		x[best] = S;
	}
	memcpy(sec, x, (size_t)n * sizeof *x);
	for (int it = 0; it < 2; it++) {
		double t;

		for (int p = 0; p < n; p++) {
			double ex = e[p].avail + e[p].eval(e[p].ctx, sec[p]);

			sec[p] = sec[p] > 0 && ex > f0[p] ?
				 f0[p] + (ex - f0[p]) * (S / sec[p]) : fS[p];
		}
		(void)chord_split(f0, sec, n, S, sec);
		if (!finish_time(e, n, sec, &t))
			T_ub = fmin(T_ub, t);
	}
	for (int p = 0; p < n; p++)
		if (p == best || f0[p] <= T_ub) {
			y[m] = x[p];
			idx[m++] = p;
		}
	c.idx = idx;

	/* A PU whose constraint holds T up at a zero share (its fixed cost
	 * or avail is past the optimum), or where its curve is flat down to
	 * a zero share (held below its smallest block: any share takes as
	 * long, and SLSQP has no slope to move it by), pins T and leaves the
	 * rest of the split free: drop it and solve again. Dropping one may
	 * leave the rest unable to finish as early: the best split so far
	 * (in x) is the answer, once its finish is shown optimal
	 * (sq_infeasible) or the split is one SLSQP stopped on with equal
	 * finish times (sq_done). NLopt's SLSQP can also stop short (on a
	 * step that leaves tau as it was, or with the best feasible point far
	 * behind its iterates): a split that is neither is solved again from
	 * where it stopped, with the scales taken afresh, SQ_ROUNDS times at
	 * most without a PU dropped. */
	double T_best = INFINITY;
	for (int stalls = 0;;) {
		double u = seq_sum(y, m);
		int keep = 0, done;

		for (int i = 0; i < m; i++)
			y[i] = u > 0 ? y[i] * (S / u) : S / m;
		c.m = m;
		if (m == 1) {
			y[0] = S;
		} else {
			if ((rc = sq_run(&c, y, &T)))
				goto out;
			sq_polish(e, idx, m, S, y);
		}
		T = -INFINITY;  /* the split's finish */
		for (int i = 0; i < m; i++)
			if (y[i] > SQ_ZERO * S)
				T = fmax(T, e[idx[i]].avail + e[idx[i]].eval(e[idx[i]].ctx, y[i]));
		done = m == 1 || sq_done(&c, y);
		if (T < T_best) {
			T_best = T;
			memset(x, 0, (size_t)n * sizeof *x);
			for (int i = 0; i < m; i++)
				if (y[i] > SQ_ZERO * S)
					x[idx[i]] = y[i];
		}
		if (done || sq_infeasible(e, n, S, T_best * (1 - SQ_SPREAD)))
			break;
		for (int i = 0; i < m; i++) {
			const struct plb__efun *f = &e[idx[i]];
			double pin = T - 1e-8 * fabs(T);

			if (f->avail + f->eval(f->ctx, y[i]) >= pin &&
			    (y[i] <= SQ_ZERO * S ||
			     (f->deriv(f->ctx, y[i]) <= 0 && f->avail + f->eval(f->ctx, 0) >= pin)))
				continue;
			y[keep] = y[i];
			idx[keep++] = idx[i];
		}
		if (keep == 0 || (keep == m && ++stalls > SQ_ROUNDS)) {
			rc = PLB_ESOLVE;
			goto out;
		}
		m = keep;
	}
	spread(x, NULL, n, S);
	rc = finish_time(e, n, x, &T);
	if (!rc)
		set_out(out, T, c.nevals);
out:
	free(idx);
	free(f0);
	return rc;
}
