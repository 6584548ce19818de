/* Balancer parameters: one X-macro table gives the struct fields, their
 * defaults (the papers' values where the papers give one), their ranges and
 * a line of documentation. The [balancer] section of a scenario or config
 * file, plbsim --help and README's table are all generated from it. */
#ifndef PLB_PARAMS_H
#define PLB_PARAMS_H

#include <stddef.h>

#include "plb_errors.h"

/* X(name, default, min, max, doc); every parameter is a double. */
#define PLB__PARAMS(X)                                                          \
	X(initial_block, 1024, 1, 1e15,                                        \
	  "x_init: units of a PU's first training block (PLB-HAC, PLB-HeC, HDSS)") \
	X(train_div, 32, 1, 1e9,                                               \
	  "first blocks are at most W/(train_div*PUs), so no PU starts with a block it cannot finish in a small part of the run") \
	X(min_block, 64, 1, 1e15,                                              \
	  "smallest block ever granted, except the domain's last units; at most W/(train_div*PUs), so a domain of few costly units does not train in blocks worth much of the run. PLB-HAC: a PU whose share is smaller waits for the next step, unless the busy PUs could not run the rest dry before its block of this size would end") \
	X(gap_threshold_ms, 400, 0, 1e9,                                       \
	  "PLB-HAC: a PU finishing this much earlier than predicted gets a gap-filling block, unless its fixed cost per block is over half of the gap") \
	X(end_fraction, 0.7, 0, 1,                                             \
	  "PLB-HAC: once this fraction of W is assigned, steps shrink by end_decrease") \
	X(end_decrease, 0.1, 0, 0.99,                                          \
	  "PLB-HAC: alpha: past end_fraction, each step is (1 - alpha) times what the solve gives") \
	X(step_fraction, 0.25, 0.001, 1,                                       \
	  "PLB-HAC: a virtual step covers this fraction of the unassigned data (docs/ALGORITHM.md)") \
	X(block_overhead, 0.01, 0.0001, 1,                                     \
	  "PLB-HAC: a step's blocks grow until the PU's fixed cost per block is at most this fraction of the block, within stretch_fraction of the time the PU has left; past block_time_fraction only so far as all PUs' fixed costs, each weighed by its share of the work, cost this fraction of the cluster's throughput") \
	X(stretch_fraction, 0.8, 0.05, 1,                                      \
	  "PLB-HAC: a block grown for efficiency takes at most this fraction of the time its PU has left, or all of it where the rest would be less than twice the PU's fixed cost per block (a block for the rest would be mostly that cost)") \
	X(block_time_fraction, 0.2, 0.01, 1,                                  \
	  "PLB-HAC: a block is planned to take at most this fraction of the time its PU has left, unless its fixed cost per block needs longer (see block_overhead), and then at most this fraction of it (or max_growth - 1 times the fixed cost, if more) longer than its largest block so far: a k-fold surprise on one block then costs nothing while k * fraction <= 1") \
	X(probe_fraction, 0.05, 0.001, 1,                                     \
	  "PLB-HAC: a block larger than its PU's largest so far is planned to take at most this fraction of the PU's time left more than that largest block, unless its fixed cost per block (extended along the tangent there) is still above block_overhead: a cliff past the sampled sizes slows only that part, but by up to 6x") \
	X(step_min_ms, 50, 0, 1e9,                                             \
	  "PLB-HAC: a virtual step lasts at least this long, unless it is the last") \
	X(redo_gain, 3, 0, 1e9,                                                \
	  "PLB-HAC: once no work is left to hand out, free PUs run a late block again when they would end it in 1/redo_gain of the time it is still expected to take; the first copy to end counts. 0: never (for kernels that must run once per unit)") \
	X(max_growth, 4, 1.1, 1e9,                                             \
	  "a PU's block is at most this times the largest block it has done: fits are not trusted far beyond their data, where a performance cliff may start") \
	X(model_window, 32, 4, 4096,                                           \
	  "samples per PU kept for the fit (the most recent)")                \
	X(model_max_terms, 3, 1, 7,                                            \
	  "most basis functions in a fitted F_p")                             \
	X(change_threshold, 0.3, 0.01, 100,                                    \
	  "a sample off its prediction by more than this factor rescales the PU's older samples (speed change)") \
	X(couple_probe, 0, 0, 0.1,                                             \
	  "PLB-HAC: the share of W that runs of a node without a small PU may cost, to see whether it slows its node-mates more than it adds (0: never)") \
	X(solver, 0, 0, 2,                                                     \
	  "0 auto (one-variable reduction; SLSQP when it refuses a curve), 1 reduction only, 2 SLSQP only (NLopt; at most 64 PUs: it is dense, O(n^3))") \
	X(hec_threshold, 0.1, 0, 10,                                           \
	  "PLB-HeC: re-solve when a round's finish times differ by more than this fraction of the round") \
	X(hec_r2, 0.7, 0, 1,                                                   \
	  "PLB-HeC: training rounds go on until every fit's R^2 reaches this") \
	X(hec_round_fraction, 0.1, 0.001, 1,                                   \
	  "PLB-HeC: data per synchronised round, as a fraction of W")         \
	X(hdss_adaptive_fraction, 0.2, 0.001, 1,                               \
	  "HDSS: at most this fraction of W is used by the adaptive phase")   \
	X(hdss_samples, 4, 2, 64,                                              \
	  "HDSS: blocks per PU in the adaptive phase")                        \
	X(hdss_div, 2, 1, 1000,                                                \
	  "HDSS: completion blocks are (w_p / sum w) * remaining / hdss_div") \
	X(greedy_block, 1024, 1, 1e15,                                         \
	  "greedy: units per block")

struct plb__params {
#define X(name, def, lo, hi, doc) double name;
	PLB__PARAMS(X)
#undef X
};

/* Fill p with the defaults. */
void plb__params_init(struct plb__params *p);

/* Set parameter `key` from text `value`. On error returns PLB_ENOENT (no such
 * key) or PLB_EINVAL (not a number or out of range) and writes a message
 * saying what would be accepted into err (errlen bytes). */
PLB_WUR int plb__params_set(struct plb__params *p, const char *key,
			    const char *value, char *err, size_t errlen);

/* Set a parameter from "KEY=VALUE" (as given to --set); PLB_EINVAL with a
 * message when there is no '=', else as plb__params_set. */
PLB_WUR int plb__params_assign(struct plb__params *p, const char *assignment,
			       char *err, size_t errlen);

/* SLSQP (solver = 2) is dense, O(n^3) in the PUs: 17 ms a solve at 64
 * PUs, 2.2 s at 256 (build/bench/bench_solver), and a run solves at every
 * step. It takes at most this many. */
#define PLB__SLSQP_MAX_PU 64

/* Whether p suits a cluster of npu PUs: 0, or PLB_EINVAL with a message
 * in err that says why and what is accepted (solver = 2 past
 * PLB__SLSQP_MAX_PU PUs). */
PLB_WUR int plb__params_check(const struct plb__params *p, int npu, char *err, size_t errlen);

/* Iterate the table: returns 0 and fills the out pointers for i in range,
 * PLB_ENOENT past the end. */
int plb__params_describe(int i, const char **name, double *def, double *lo,
			 double *hi, const char **doc);

#endif
