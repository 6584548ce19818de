/* A PU's compute-time curve F and how it is fitted: least squares
 * (LAPACKE) over a subset of {x, x^2, x^3, e^x, ln x, x e^x, x ln x}, x
 * normalised to [0, 1] of the domain size W, chosen by leave-one-out
 * cross-validation (PRESS) so that it does not over-fit, and kept
 * positive and increasing on the block range in use. */
#ifndef PLB_FIT_H
#define PLB_FIT_H

#include "plb_errors.h"

enum plb__basis {
	PLB__B_X, PLB__B_X2, PLB__B_X3, PLB__B_EXP, PLB__B_LN, PLB__B_XEXP,
	PLB__B_XLN, PLB__B_COUNT
};

/* A fitted F: sum over the terms in `mask` of coef[i] * f_i(units / scale). */
struct plb__curve {
	unsigned mask;                  /* bit i set: basis i in use */
	double coef[PLB__B_COUNT];
	double scale;                   /* W: units are divided by it */
};

/* F(units), and dF/dunits (seconds per unit) in *dfdu if not NULL. */
double plb__curve_eval_d(const struct plb__curve *c, double units, double *dfdu);
/* Evaluate a curve and its derivative (per unit). */
double plb__curve_eval(const struct plb__curve *c, double units);
double plb__curve_deriv(const struct plb__curve *c, double units);

/* Fit F to n points (units[i], t[i]) with weights w (NULL: all 1): the
 * selection rule of the model, exposed for tests. Returns 0 or PLB_EINVAL. */
/* Tests: nonzero solves every subset by LAPACK on all n samples and scores
 * each in full, the plain method that the fit's shortcuts (one QR for all
 * subsets, subsets that cannot win skipped) must agree with. */
extern int plb__fit_reference;
PLB_WUR int plb__curve_fit(struct plb__curve *c, double scale,
			   const double *units, const double *t,
			   const double *w, int n, int max_terms);
/* plb__curve_fit with the subset `hint` (a mask; 0 for none) scored
 * first: the same curve, sooner where the hint wins, as the last fit's
 * subset mostly does when one sample is added. */
PLB_WUR int plb__curve_fit_hint(struct plb__curve *c, double scale,
				const double *units, const double *t,
				const double *w, int n, int max_terms,
				unsigned hint);
/* The subset `mask` alone fitted, where it passes the checks the
 * selection applies (rank, leave-one-out defined, shape): 0; else 1,
 * *c undefined. */
PLB_WUR int plb__curve_fit_only(struct plb__curve *c, double scale,
				const double *units, const double *t,
				const double *w, int n, unsigned mask);

#endif
