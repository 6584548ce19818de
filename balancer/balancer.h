/* The plb balancer: an event-driven library that decides which range of the
 * domain each processing unit (PU) processes next, so that all PUs finish
 * at the same time. The same code runs under the MPI runtime and the
 * simulator. It knows nothing of MPI, CUDA, threads or wall clocks: the
 * caller passes the time (seconds on any clock that only moves forward).
 *
 *   plb__balancer_create(params, policy, npu, W)
 *   plb__balancer_next(pu, now)  -> a grant {offset, units, kind} | wait | done
 *   plb__balancer_done(pu, sample)
 *   plb__balancer_lost(pu, now)  -> the PU's outstanding ranges return to the pool
 *   plb__balancer_destroy()
 *
 * Invariant (tested): every unit of [0, W) is granted, and reported done,
 * exactly once, whatever the PUs' speeds, failures and the order of events.
 * Not thread-safe: one thread (the master's) makes every call. */
#ifndef PLB_BALANCER_H
#define PLB_BALANCER_H

#include <stdint.h>

#include "plb_errors.h"
#include "balancer/params.h"

typedef struct plb__balancer plb__balancer_t;

/* Grants one PU may hold at once: one block in its transfer stage and one
 * in its compute stage ([run] pipeline = 2). plb__balancer_next refuses
 * more; the runtime and the simulator size their records by it. */
#define PLB__MAX_GRANTS 2

/* A range [off, off + len) of the domain. */
struct plb__range { uint64_t off, len; };

enum plb__grant_kind {
	PLB__GRANT_TRAINING,     /* a profiling block */
	PLB__GRANT_REGULAR,      /* a block of a step or round */
	PLB__GRANT_GAP,          /* fills a gap left by a PU that finished early */
	PLB__GRANT_REDO,         /* part of a late block run again by an idle PU
				 * (whichever copy ends first counts, once) */
};

struct plb__grant {
	uint64_t id;            /* unique, > 0; quote it in the sample */
	int pu;
	uint64_t offset, units; /* the range [offset, offset + units) */
	enum plb__grant_kind kind;
	double predicted_s;     /* the model's E(units), 0 when none yet */
};

/* What plb__balancer_next() answers (non-negative; errors are negative). */
enum plb__next {
	PLB__NEXT_GRANT = 1,     /* *g is filled: send it */
	PLB__NEXT_WAIT = 2,      /* nothing for this PU now: ask again after an event */
	PLB__NEXT_DONE = 3,      /* every unit is done: stop this PU */
};

/* A finished block, as measured by the PU. */
struct plb__block_done {
	uint64_t grant_id;
	double exec_s;          /* compute time of the block */
	double xfer_s;          /* transfer time of the block (0 if none) */
	double finish;          /* when the master learnt of it (balancer clock) */
	double link_s;          /* the block's round trip outside the PU: its grant's
				 * way there, its DONE's way back and the master's
				 * delay in granting it; 0 if unknown (link_fixed,
				 * balancer.c) */
};

struct plb__balancer_stats {
	uint64_t units_done, units_granted, units_pool;
	long blocks, training_blocks, gap_blocks, returned_blocks;
	long redo_blocks;       /* PLB__GRANT_REDO grants */
	long redo_won;          /* late blocks finished by their re-run first */
	long solves;
	double solve_s_total, solve_s_max;      /* CPU time of solves */
	int pus_lost;
	int pus_left_out;       /* PUs that cost their node more than they added */
	int speed_changes;      /* detected by the PUs' models */
	int step;               /* policy's step or round counter */
};

/* Create a balancer for npu PUs and a domain of W units with the named
 * policy ("plb-hac", "plb-hec", "hdss", "greedy", "static"). params may be
 * NULL (defaults). On success *out owns the balancer (free with
 * plb__balancer_destroy) and 0 is returned; PLB_ENOENT for an unknown
 * policy, PLB_EINVAL for npu < 1 or W < 1. */
PLB_WUR int plb__balancer_create(const struct plb__params *params,
				 const char *policy, int npu, uint64_t W,
				 plb__balancer_t **out);
void plb__balancer_destroy(plb__balancer_t *b);

/* Ask for PU pu's next block at time now. Returns PLB__NEXT_GRANT (g filled),
 * PLB__NEXT_WAIT, PLB__NEXT_DONE, or PLB_EINVAL / PLB_ESTATE (a lost PU, or
 * more outstanding grants than allowed), or PLB_ENOMEM (a solve's scratch).
 * A PU may hold several grants; the caller decides how many it asks for
 * (pipelining). */
PLB_WUR int plb__balancer_next(plb__balancer_t *b, int pu, double now,
			       struct plb__grant *g);

/* Report a finished block. Returns 0, PLB_ESTALE if the grant is not
 * outstanding on that PU (done twice, or returned when the PU was lost:
 * the units are not counted twice) or lost a race (a late block whose
 * re-run ended first, or a re-run whose original ended first): the caller
 * drops its results. PLB_EINVAL for a bad sample, PLB_ENOMEM when the
 * PU's model could not be refitted (the block counts as done). After an
 * error other than PLB_ESTALE, destroy the balancer. */
PLB_WUR int plb__balancer_done(plb__balancer_t *b, int pu,
			       const struct plb__block_done *s);

/* Would grant id's results be kept if pu reported it done now? 1 when it
 * is outstanding on pu and has not lost a race (a late block whose re-run
 * ended first, or the reverse), else 0. */
int plb__balancer_counts(const plb__balancer_t *b, int pu, uint64_t id);

/* PU pu failed: its outstanding grants go back to the pool (granted again
 * to others) and it gets no more. Returns 0, or PLB_EINVAL. */
PLB_WUR int plb__balancer_lost(plb__balancer_t *b, int pu, double now);

/* The earliest time (on the caller's clock) at which a PU told to wait
 * may get a grant with no other event in between: when a late block
 * becomes worth running again (the policy runs late blocks again once
 * the pool is empty). INFINITY when nothing is due. The caller asks its
 * waiting PUs again then. */
double plb__balancer_wake(const plb__balancer_t *b);
/* 1 when every PU would be told to wait at `now`, whichever it is, so
 * that asking each is no use until the next event or plb__balancer_wake:
 * the pool is empty, the job is not done, and no late block is being run
 * again in pieces still to hand out, nor due to be.
 * 0 when some PU may get a grant (or the caller cannot know without
 * asking). At the end of a job thousands of PUs wait and every event
 * asked each of them: at 4096 PUs, most of the master's last second. */
int plb__balancer_idle_waits(const plb__balancer_t *b, double now);

/* One measured block of a PU's model: what its fit reads, and what is
 * carried from one run to a later one (plb's iterations, model files). */
struct plb__sample {
	double units, exec_s, xfer_s;
};

/* PU pu's model: copies up to max of its samples, oldest first, into s
 * and the smallest block size at which its throughput fell (a cliff;
 * INFINITY if none) into *cliff (may be NULL). Returns the number of
 * samples the model holds (0 for a policy without models), or PLB_EINVAL. */
int plb__balancer_model_get(const plb__balancer_t *b, int pu, struct plb__sample *s,
			    int max, double *cliff);

/* What PU pu's model predicts for a block of `units` units (seconds:
 * compute and transfer, as the policy plans with it); NAN when the PU has
 * no model yet (or the policy keeps none) or for a bad argument. For
 * traces and plots. */
double plb__balancer_predict(const plb__balancer_t *b, int pu, double units);

/* Before the first grant: starts PU pu's model from n samples of an
 * earlier run of the same kernel on the same PU (and a cliff, INFINITY if
 * none). A policy that trains (plb-hac) does not train a PU so warmed; a
 * wrong sample is caught as any speed change is. A policy without models
 * ignores it. Returns 0, PLB_EINVAL (a bad sample: nothing is changed),
 * PLB_ESTATE after the first grant, or PLB_ENOMEM. */
PLB_WUR int plb__balancer_model_set(plb__balancer_t *b, int pu, const struct plb__sample *s,
				    int n, double cliff);

/* Placement on resident input: PU pu is in group `group` (its node; -1:
 * none; at most npu - 1), and group `group` holds the data of units
 * [off, off + units) (input its node kept from an earlier run). A PU's
 * grant is then taken from free units its group holds where there are
 * any (cut to them when its model says that costs under 1% of the
 * block's time), else from the lowest free units as without groups.
 * Either may be called at any time. Returns 0, PLB_EINVAL (hold before
 * any group, a range outside [0, W)) or PLB_ENOMEM. */
PLB_WUR int plb__balancer_group(plb__balancer_t *b, int pu, int group);
PLB_WUR int plb__balancer_hold(plb__balancer_t *b, int group, uint64_t off, uint64_t units);

/* PU pu runs on node `node` (>= 0; its PUs share memory, a PCIe root,
 * cores): before the first grant. A policy that probes (plb-hac) then
 * runs the node without a PU that adds little to it, for a block of
 * each of the others, and leaves the PU out of the run where the others
 * ran faster by more than it adds (couple.c). Returns 0, PLB_EINVAL or
 * PLB_ENOMEM. */
PLB_WUR int plb__balancer_node(plb__balancer_t *b, int pu, int node);

/* The master's link carries the blocks' bytes, one after another, at
 * `rate` units a second (0: not limited; a unit's larger way, input or
 * output), and is busy for busy_s seconds from the start (the job's
 * shared data). A block is then not late (redo_late) before its bytes
 * could have crossed it: the balancer keeps when the link will have
 * carried every block granted so far. Returns 0 or PLB_EINVAL. */
PLB_WUR int plb__balancer_link(plb__balancer_t *b, double rate, double busy_s);
/* PU pu's blocks do not cross the master's link (a worker on the
 * master's host): its grants leave the link as it is. Returns 0 or
 * PLB_EINVAL. */
PLB_WUR int plb__balancer_local(plb__balancer_t *b, int pu);

/* 1 when PU pu was left out of the run (it cost its node more than it
 * added: plb__balancer_node), else 0. */
int plb__balancer_left_out(const plb__balancer_t *b, int pu);

/* True when every unit is done. */
int plb__balancer_finished(const plb__balancer_t *b);

void plb__balancer_stats(const plb__balancer_t *b, struct plb__balancer_stats *st);

/* "training", "regular", "gap" or "redo": for logs and traces. */
const char *plb__grant_kind_name(enum plb__grant_kind k);

/* Policy names, NULL past the end; and a one-line description. */
const char *plb__policy_name(int i);
const char *plb__policy_doc(const char *name);
/* The policy names joined by sep into buf (for messages); returns buf. */
const char *plb__policy_names(char *buf, size_t len, const char *sep);

#endif
