/* The equal-time system of PLB-HAC 3.2, generalised so that PU p becomes
 * free after avail[p] seconds: find x_p >= 0 with sum x_p = S minimising
 * T = max_p (avail_p + E_p(x_p)); at the optimum every PU that gets data
 * finishes at T. Two solvers:
 *  - plb__solve_fast: for non-decreasing E_p, the one-variable reduction
 *    sum_p E_p^-1(T - avail_p) = S (geometric partitioning), safeguarded
 *    Newton on T with warm-started Newton/bisection inversions.
 *  - plb__solve_slsqp: NLopt SLSQP on "minimise T s.t. avail_p + E_p(x_p)
 *    <= T, sum x_p = S, 0 <= x_p <= S": any smooth E_p, dense O(n^3).
 * Neither knows MPI or the policies; tests drive them with synthetic E_p. */
#ifndef PLB_SOLVER_H
#define PLB_SOLVER_H

#include "plb_errors.h"

/* One PU's block-time function. eval and deriv take units, return seconds
 * and seconds per unit. */
struct plb__efun {
	double (*eval)(const void *ctx, double units);
	double (*deriv)(const void *ctx, double units);
	const void *ctx;
	double avail;           /* seconds until the PU is free, >= 0 */
};

struct plb__solve_out {
	double T;               /* common finish time, seconds from now */
	int iters;              /* outer iterations or SLSQP evaluations */
};

/* Solve for n PUs and S units; x (n doubles) receives the split, which
 * sums to S. Returns 0, PLB_EINVAL (n < 1, S < 0) or PLB_ESOLVE. */
PLB_WUR int plb__solve_fast(const struct plb__efun *e, int n, double S,
			    double *x, struct plb__solve_out *out);
PLB_WUR int plb__solve_slsqp(const struct plb__efun *e, int n, double S,
			     double *x, struct plb__solve_out *out);

#endif
