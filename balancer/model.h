/* Per-PU performance model (PLB-HAC 3.1): E(x) = F(x) + G(x) for a block of
 * x units. F is a fitted curve (fit.h); G is a1 x + a2 (bandwidth and
 * latency). Every sample refits; the most recent
 * `model_window` samples are kept; a sample far off its prediction
 * (change_threshold) is taken as a speed change and rescales older samples. */
#ifndef PLB_MODEL_H
#define PLB_MODEL_H

#include "balancer/balancer.h"
#include "balancer/fit.h"
#include "balancer/params.h"

/* F's terms are chosen again at every PLB__SELECT_EVERY-th fit at least,
 * and at every fit of fewer than PLB__SELECT_MIN_N samples (model.c). */
#define PLB__SELECT_EVERY 8
#define PLB__SELECT_MIN_N 16

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
	int since_select;               /* fits since the last subset selection */
	double sel_lo, sel_hi;          /* its samples' size range */
	int changes;                    /* speed changes detected */
	int after_change;               /* the last sample revealed a change */
	double x_fall;                  /* smallest block whose throughput fell (a cliff), or INFINITY */
	double x_fall_kept;             /* a fall whose samples left the window, or an earlier run's */
	double x_soft;                  /* smallest block past the best that ran a little slow, or INFINITY */
	double x_soft_kept;             /* x_soft when a sample left the window: it outlives its samples */
	double x_cap;                   /* largest block worth running, or INFINITY */
	double t_floor;                 /* the PU's fixed time a block outside it (plb__model_set_floor) */
	double x_floor;                 /* the block E takes t_floor to run: no cap is below it */
	/* plb__model_eval_memo's one value: E(memo_x) for the fit nfits of n samples */
	double memo_x, memo_e;
	long memo_fits;
	int memo_n;
};

/* Initialise for a domain of W units with the parameters' window, term limit
 * and change threshold. Caller owns m; free with plb__model_fini. */
PLB_WUR int plb__model_init(struct plb__model *m, double W,
			    const struct plb__params *p);
void plb__model_fini(struct plb__model *m);

/* A sample a model takes: units > 0, times >= 0, all finite. */
int plb__sample_ok(const struct plb__sample *s);

/* Add one measured block and refit. Returns 0, or PLB_EINVAL for a sample
 * that is not finite and positive (units > 0, times >= 0). */
PLB_WUR int plb__model_add(struct plb__model *m, double units, double exec_s,
			   double xfer_s);

/* Add n samples at once, oldest first, and fit once: a model kept from an
 * earlier run (plb__balancer_model_set). The samples are taken as they are
 * (a kept model's are already on its last speed: no speed change is looked
 * for among them); the newest model_window of those held and these stay.
 * Returns 0, PLB_EINVAL for a sample plb__model_add would refuse (nothing
 * added), or PLB_ENOMEM. */
PLB_WUR int plb__model_load(struct plb__model *m, const struct plb__sample *s, int n);

/* How far its samples' times stray from the fit: the standard deviation
 * of log(time / E(units)) over the window (noise, and what the fit
 * misses); NAN with fewer than 3 samples. */
double plb__model_spread(const struct plb__model *m);

/* plb__model_eval, kept for the last units asked while the fit stays the
 * same: a question asked of every PU at every event near a job's end. */
double plb__model_eval_memo(struct plb__model *m, double units);

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
/* The same, and in *steps the evaluations of E it took past the bracket's
 * ends (a test of its convergence). */
double plb__model_inverse_steps(const struct plb__model *m, double t,
				double max_units, int *steps);

/* A PU's throughput (units per second of a block) can fall with block size:
 * past a performance cliff (the block outgrows device memory or a cache),
 * a larger block takes more time per unit. Once a block's measured
 * throughput is CLIFF_DROP below the best measured at a smaller size, no
 * block is worth running past the size of the largest sample that stayed
 * near the best: that is x_cap. A slow block after which the next two
 * smaller blocks ran no faster per unit (by CLIFF_DROP) is no fall: its
 * time, not its size, slowed it (model.c, explained_later). The fall is
 * remembered when its sample leaves the window (no block past it is ever
 * planned again, so the window would otherwise forget it and re-run the
 * cliff). A mild drop at the
 * largest sizes (x_soft: CLIFF_SOFT, model.c) caps x_cap the same way,
 * until a block as large runs near the best rate; with neither, x_cap is
 * INFINITY. */
double plb__model_cap(const struct plb__model *m);
/* A line t = slope u + c through n <= PLB__TS_MAX points by Theil-Sen:
 * the median slope of the pairs whose u differ by 1.25x or more, then the
 * median intercept (a few outliers move neither). *slope (>= 0) is taken
 * from the pairs where there are any, else it is used as it stands.
 * Returns the number of such pairs, and c (>= 0) in *c. */
#define PLB__TS_MAX 16
int plb__theil_sen(const double *u, const double *t, int n, double *slope, double *c);
/* The PU's fixed cost per block at its cap: the intercept of a Theil-Sen
 * line through its newest PLB__TS_MAX samples no larger than the cap (a
 * block smaller than the cap pays it again; past the cap the samples bend
 * with the cliff, and so does a fit through them). -1 where those
 * samples are all about one size (nothing to draw a line through). */
double plb__model_cap_fixed(const struct plb__model *m);
/* The slowest throughput (units per second) among the samples larger than
 * the cap: what a block between the cap and the fall runs at least, as
 * its part past a cliff is a smaller share of it. 0: no such sample. */
double plb__model_fall_rate(const struct plb__model *m);
/* The time t (>= 0) each block of the PU costs outside it: its round
 * trip's fixed part (link_fixed, balancer.c), which the samples do not
 * show. No cap is below the block that runs t: a smaller block leaves the
 * PU waiting for its next grant longer than it computes, whatever its
 * rate (a real CPU capped at 685 k-means points ran 35 us blocks a
 * millisecond apart), so its best throughput is at that size or above. */
void plb__model_set_floor(struct plb__model *m, double t);
/* A fall seen at block size x before these samples (an earlier run's
 * x_fall; INFINITY: none): remembered as one seen now would be. */
void plb__model_note_fall(struct plb__model *m, double x);

/* Time for x units run as blocks of at most x_cap: E(x) up to the cap, then
 * E(x_cap) x / x_cap (several capped blocks). Non-decreasing, continuous.
 * For a policy that gives a PU several blocks within one plan. */
double plb__model_eval_split(const struct plb__model *m, double units);
double plb__model_deriv_split(const struct plb__model *m, double units);
/* Largest x in [0, max_units] that blocks of at most x_cap do within t. */
double plb__model_inverse_split(const struct plb__model *m, double t,
				double max_units);

#endif
