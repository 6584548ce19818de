/* Emulated device models ([model NAME] sections): the true block-time curves
 * that plbsim simulates and the runtime's `emu` PUs wait out. A curve is a
 * table (units:seconds points, piecewise linear between them; beyond the
 * last point and below the first one the nearest segment's line goes on,
 * clamped at 0; a one-point table is the line through (0, 0) and its point,
 * or a constant if that point is at 0 units)
 * or a polynomial c0 + c1 x + ... (also clamped at 0). Speed changes
 * multiply the time of whatever runs after them; a failure ends the PU (the
 * caller compares finish times with fail_t). No MPI, no CUDA. */
#ifndef PLB_DEVMODEL_H
#define PLB_DEVMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "plb_errors.h"

enum plb__curve_kind { PLB__CURVE_NONE, PLB__CURVE_TABLE, PLB__CURVE_POLY };

struct plb__curve_spec {
	enum plb__curve_kind kind;
	int n;                  /* points (table) or coefficients (poly) */
	double *x, *y;          /* table: units, seconds (x strictly increasing) */
	double *c;              /* poly: c[0] + c[1] x + ... */
};

/* What an emulated PU stands for (the model's class =), for the reader of
 * a scenario: it changes nothing in how the PU runs. */
enum plb__model_class { PLB__MODEL_CPU, PLB__MODEL_GPU, PLB__MODEL_MIC };

struct plb__devmodel {
	char *name;
	int line;                       /* line of the [model NAME] header */
	enum plb__model_class cls;
	struct plb__curve_spec compute; /* required */
	struct plb__curve_spec transfer;/* optional: NONE means 0 s */
	double noise;                   /* relative sd of a lognormal factor, mean 1 */
	double noise_time;              /* 0: a factor drawn per stage of each block; > 0: the
					 * device's speed, one factor per piece of this many
					 * seconds of the run, the same whatever runs in it */
	int nchange;
	double *change_t, *change_f;    /* from change_t[i] on, times x change_f[i]; t increasing */
	double fail_t;                  /* INFINITY: never fails */
	int fail_block;                 /* K > 0: the K-th block of each run fails (its kernel); 0: never */
	int used;                       /* referenced by some node's emu list */
};

/* Seconds for a block of `units` at base speed (no noise, no change). Never
 * negative. A NONE curve gives 0. See the top of this file for how a table
 * extends past its points. */
double plb__curve_spec_eval(const struct plb__curve_spec *c, double units);

/* Speed factor (time multiplier) in force at time t (1 before any change). */
double plb__devmodel_factor(const struct plb__devmodel *m, double t);
/* When a stage needing `work` seconds at base speed, started at t0, ends,
 * integrating the speed changes exactly (t0 itself when work <= 0). */
double plb__devmodel_finish(const struct plb__devmodel *m, double t0, double work);
/* Base-speed seconds of work the PU can do in [0, t]: integral of 1/factor
 * (0 for t <= 0). work_until(finish(t0, w)) - work_until(t0) == w. */
double plb__devmodel_work_until(const struct plb__devmodel *m, double t);

/* Parse "table u:s u:s ..." or "poly c0 c1 ..." into c (allocates; free with
 * plb__curve_spec_fini). On error returns PLB_EINVAL (PLB_ENOMEM when out of
 * memory) with a message in err that says what is wrong and what is
 * accepted, and c holds nothing to free. */
PLB_WUR int plb__curve_spec_parse(struct plb__curve_spec *c, const char *text,
				  char *err, size_t errlen);
void plb__curve_spec_fini(struct plb__curve_spec *c);

/* Deterministic per-PU random stream (xoshiro256** seeded by splitmix64). */
struct plb__rng { uint64_t s[4]; };
void plb__rng_seed(struct plb__rng *r, uint64_t seed, uint64_t stream);
double plb__rng_uniform(struct plb__rng *r);    /* [0, 1) */
double plb__rng_normal(struct plb__rng *r);     /* N(0, 1) */
/* Lognormal factor with mean 1 and relative sd `sd` (1 when sd == 0). */
double plb__rng_noise(struct plb__rng *r, double sd);

/* An emulated PU's noise: the stream of per-stage draws (noise_time 0), or
 * the key of its speed's pieces in time (noise_time > 0), which depend on
 * (seed, stream, stage, piece) only, so every policy, whatever its blocks,
 * meets the same device. */
struct plb__noise { struct plb__rng rng; uint64_t seed, stream; };
void plb__noise_seed(struct plb__noise *nz, uint64_t seed, uint64_t stream);
enum { PLB__STAGE_XFER, PLB__STAGE_COMPUTE };
/* When a stage needing `work` seconds at base speed, started at t0, ends,
 * with the model's speed changes and its noise (plb__devmodel_finish, the
 * work scaled by one draw, when noise_time is 0; else integrated over the
 * pieces its span covers, so a block many pieces long averages them). */
double plb__devmodel_stage(const struct plb__devmodel *m, struct plb__noise *nz, int stage,
			   double t0, double work);

#endif
