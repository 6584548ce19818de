/* Per-PU performance model (PLB-HAC 3.1): E(x) = F(x) + G(x) for a block of
 * x units. F is a least-squares fit (LAPACKE) over a subset of
 * {x, x^2, x^3, e^x, ln x, x e^x, x ln x}, x normalised to [0,1] of the
 * domain size W, chosen by leave-one-out cross-validation (PRESS) so that it
 * does not over-fit, and kept increasing on the block range in use. G is
 * a1 x + a2 (bandwidth and latency). Every sample refits; the most recent
 * `model_window` samples are kept; a sample far off its prediction
 * (change_threshold) is taken as a speed change and rescales older samples. */
#ifndef PLB_MODEL_H
#define PLB_MODEL_H

#include "balancer/params.h"

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

struct plb__sample {
	double units, exec_s, xfer_s;
};

struct plb__model {
	struct plb__sample *s;          /* ring of the last `cap` samples */
	int cap, n, head;               /* capacity, count, index of oldest */
	double W;
	int max_terms;
	double change_threshold;
	struct plb__curve F;
	double g1, g0;                  /* G(x) = g1 x + g0, both >= 0 */
	double u_lo;                    /* below u_lo, E is held at E(u_lo) */
	long nfits;                     /* fits so far */
	int changes;                    /* speed changes detected */
	int after_change;               /* the last sample revealed a change */
};

/* Initialise for a domain of W units with the parameters' window, term limit
 * and change threshold. Caller owns m; free with plb__model_fini. */
PLB_WUR int plb__model_init(struct plb__model *m, double W,
			    const struct plb_params *p);
void plb__model_fini(struct plb__model *m);

/* Add one measured block and refit. Returns 0, or PLB_EINVAL for a sample
 * that is not finite and positive (units > 0, times >= 0). */
PLB_WUR int plb__model_add(struct plb__model *m, double units, double exec_s,
			   double xfer_s);

/* True once the model has a sample (and so can predict). */
int plb__model_ready(const struct plb__model *m);

/* E(x) = F(x) + G(x) in seconds, non-decreasing in units for units >= 0. */
double plb__model_eval(const struct plb__model *m, double units);
/* dE/dx (seconds per unit), >= 0. */
double plb__model_deriv(const struct plb__model *m, double units);
/* F alone and G alone. */
double plb__model_compute(const struct plb__model *m, double units);
double plb__model_xfer(const struct plb__model *m, double units);

/* Largest x in [0, max_units] with E(x) <= t (0 if E(0) > t). */
double plb__model_inverse(const struct plb__model *m, double t,
			  double max_units);

/* Evaluate a curve and its derivative (per unit). */
double plb__curve_eval(const struct plb__curve *c, double units);
double plb__curve_deriv(const struct plb__curve *c, double units);

/* Fit F to n points (units[i], t[i]) with weights w (NULL: all 1): the
 * selection rule of the model, exposed for tests. Returns 0 or PLB_EINVAL. */
PLB_WUR int plb__curve_fit(struct plb__curve *c, double scale,
			   const double *units, const double *t,
			   const double *w, int n, int max_terms);

#endif
