/* Pipeline runs (plb_run_pipeline): what travels, and the worker's node
 * level.
 *
 *   master -> worker  PSTART  the ops (struct plb__pipe_wire, then one
 *                             struct plb__pipe_wire_op each), then the
 *                             shared data (hdr.shared_bytes; borrowed: a
 *                             struct plb__borrow whose in is its address)
 *   master -> worker  INST    hdr.inst, its input (in_unit bytes; borrowed:
 *                             a struct plb__borrow with its input's and its
 *                             output's addresses in the master's memory)
 *   worker -> master  IDONE   hdr.inst, hdr.status (a failure: hdr.pu is
 *                             the task slot, the payload the reason), its
 *                             output (out_unit bytes, none when borrowed)
 *                             padded to 16, then hdr.ntask task records
 *   master -> worker  END     as a block run's
 *
 * The master hands instances to a node up to its window, one more each time
 * one comes back (master side: pipeline.c). On the worker the node's
 * scheduler (balancer/tasks.c) and a driver (balancer/driver.c) that asks
 * it for the node's task slots, as plbsim's pipeline runs do
 * (runtime/sim/pipe.c), are wpipe.c, here, with no threads and no
 * transport (worker.c gives it hooks for both and calls it under one
 * mutex: the communication thread as instances come, a slot's own thread
 * as its task ends). A slot is a PU, or one core of a CPU PU's team. */
#ifndef PLB_CORE_PIPE_H
#define PLB_CORE_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "balancer/tasks.h"
#include "plb.h"

struct plb__pipe_wire {
	int32_t nops, window;
	uint64_t scratch_bytes;
	char scheduler[16];
	double est_error;       /* [run] estimate_error (the schedulers' expected
				 * times put off by it: balancer/tasks.h) */
	int32_t depth;          /* [run] pipeline: tasks a slot holds at once */
	int32_t pad;
};
struct plb__pipe_wire_op {
	char name[64], kernel[64];
	uint64_t after;         /* a bit per op it waits for directly */
	int32_t tasks;          /* a count, or PLB_TASKS_LATER */
	int32_t pad;
	double seed_s[4];       /* by device type: a task's mean time in the kept
				 * models (an earlier run's); 0: none */
};
_Static_assert(sizeof(struct plb__pipe_wire) % 16 == 0, "wire alignment");
_Static_assert(sizeof(struct plb__pipe_wire_op) % 16 == 0, "wire alignment");

/* One task as it ran (an IDONE carries its instance's). */
struct plb__task_rec {
	int32_t op, slot, type, index;
	double start, end;      /* on the worker's clock from its PSTART */
	double exec_s, xfer_s;
};

#define PLB__TASK_EXPAND_MAX 8

/* One task on its way to a slot and back (the worker's; wpipe.c makes it,
 * the slot's thread runs it, the communication thread hands it back). */
struct plb__task_job {
	uint64_t id, inst;
	int op, index, tasks, slot;
	const void *in;
	void *out, *scratch;
	double arrive;          /* plb__now() when it was given */
	void *ctx;              /* the worker's */
	/* filled by the slot's thread */
	int rc;
	double start, end, exec_s, xfer_s;      /* start, end: plb__now() */
	int nexp;               /* plb_task_expand calls */
	int exp_op[PLB__TASK_EXPAND_MAX], exp_count[PLB__TASK_EXPAND_MAX];
	char err[200];
};

/* What an op is on the worker. */
struct plb__wpipe_op {
	char name[64];
	uint64_t after;         /* direct */
	uint64_t waits;         /* every op it waits for, through others too */
	int tasks;
};

struct plb__wpipe;

struct plb__wpipe_cfg {
	int nops;
	const struct plb__wpipe_op *ops;
	unsigned *types;        /* by op: the device types whose slots run it */
	enum plb__tasks_policy policy;
	int nslot;
	const int *type;        /* each slot's device type (0: CPU) */
	const double (*seed_s)[PLB__TASKS_MAX_TYPES];   /* by op, type: an expected
							 * time to start from (the
							 * config's [op]); 0: none */
	uint64_t seed;
	double est_error;
	int depth;              /* tasks a slot holds at once (1 or 2) */
	size_t out_unit, scratch_bytes;
	double t0;              /* the run's start (plb__now) */
	/* the worker's hooks: run job on its slot (the job is the slot's until
	 * it comes back to plb__wpipe_done); instance inst is done: its
	 * output (out_unit bytes, NULL when borrowed) and task records (the
	 * hook copies them; 0 or a PLB_E code) */
	int (*give)(void *ctx, struct plb__task_job *job);
	int (*finished)(void *ctx, uint64_t inst, const void *out, const struct plb__task_rec *rec,
			int nrec);
	void *ctx;
};

/* The node's pipeline: NULL with *rc and why set on bad arguments. */
struct plb__wpipe *plb__wpipe_open(const struct plb__wpipe_cfg *c, int *rc, char *why, size_t len);
void plb__wpipe_close(struct plb__wpipe *wp);
/* Instance inst came (msg: its INST, which wp frees once the instance is
 * done; in: its input; out: where its output goes, NULL: a buffer of
 * wp's). 0 or a PLB_E code. */
PLB_WUR int plb__wpipe_admit(struct plb__wpipe *wp, uint64_t inst, void *msg, const void *in,
			     void *out, double now);
/* Every slot can take tasks now (their kernels are ready): ask them. */
PLB_WUR int plb__wpipe_begin(struct plb__wpipe *wp, double now);
/* A task came back from its slot (run well or not: job->rc); wp frees job.
 * A failed task's slot is out of the run and the task goes to another.
 * 0, or a PLB_E code with why. */
PLB_WUR int plb__wpipe_done(struct plb__wpipe *wp, struct plb__task_job *job, double now,
			    char *why, size_t len);
/* The end of a batch of events: ask the slots that reported, then the
 * parked ones. 0, or PLB_EIO with why when no slot left can run the
 * tasks still to run. */
PLB_WUR int plb__wpipe_answer(struct plb__wpipe *wp, double now, char *why, size_t len);
/* Instances held (admitted, not done). */
int plb__wpipe_held(const struct plb__wpipe *wp);

#endif
