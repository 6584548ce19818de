/* plbsim's engine: a discrete-event simulation, in virtual time, of a master
 * running the balancer and the scenario's emulated PUs. Messages take the
 * network latency each way; the master is one server that charges each
 * event the cost of its balancer work (the measured CPU time of the calls,
 * less what reading the CPU clock itself costs, or solve_us per solve for
 * bit-exact runs); each PU is a transfer stage and
 * a compute stage, so with pipeline = 2 the next block's transfer overlaps
 * the current block's compute. Deterministic for a seed when solve_us is
 * fixed. */
#ifndef PLB_SIM_H
#define PLB_SIM_H

#include <stdio.h>

#include "balancer/balancer.h"
#include "balancer/driver.h"
#include "runtime/config/config.h"
#include "runtime/config/report.h"
#include "runtime/config/trace.h"

/* Models carried from one run to the next, as plb's iterations and its
 * models file carry them: per PU up to PLB__SIM_KEEP samples, oldest
 * first, and the block size where its throughput fell (INFINITY: none).
 * A run given one starts each PU with samples from them (no training) and
 * leaves its own there at its end (none for a PU it lost). */
#define PLB__SIM_KEEP 256
struct plb__sim_kept {
	int npu;
	int *n;
	double *cliff;
	struct plb__sample *s;  /* npu x PLB__SIM_KEEP */
};
PLB_WUR int plb__sim_kept_init(struct plb__sim_kept *k, int npu);
void plb__sim_kept_fini(struct plb__sim_kept *k);

struct plb__sim_opts {
	const char *policy;
	uint64_t seed;
	double solve_us;        /* < 0: measured */
	FILE *csv;              /* CSV of every event, or NULL */
	struct plb__trace *trace;       /* the run's trace events (trace.h), or NULL */
	/* called after every grant (units, kind, policy step), for studies */
	void (*on_grant)(void *ctx, int pu, double now, double units, int kind, int step);
	/* called after every balancer call the run makes (driver.h), for tests */
	void (*drive_log)(void *ctx, const struct plb__driver_call *c);
	void *ctx;
	struct plb__sim_kept *kept;     /* models in and out, or NULL: cold */
};

/* The result of one run; free with plb__sim_result_fini. */
struct plb__sim_result {
	struct plb__report rep;
	char **names;
	double *idle, *units;
	double *lost_at;        /* npu: when each PU died, NAN if it did not */
	int stalled;            /* the run could not finish (e.g. every PU lost) */
	char note[200];         /* rep.bound_note where links or couplings add to it */
};

/* Run cfg with opts. Returns 0 (also when stalled: see res->stalled) or a
 * negative PLB_E code with a message in err. */
PLB_WUR int plb__sim_run(const struct plb__config *cfg,
			 const struct plb__sim_opts *opts,
			 struct plb__sim_result *res, char *err, size_t errlen);
void plb__sim_result_fini(struct plb__sim_result *res);

#endif
