/* A node's scheduler of pipeline tasks: the node level of a pipeline run,
 * as the Workers of Teodoro et al.'s Extreme DataCutter (PAMS and PADAS).
 *
 * A pipeline is a set of operations and the dataflow between them (which
 * operations must end before another starts), declared once. The node
 * admits instances (a tile, a chunk: one unit of the job's domain) as the
 * master hands them over, up to its window; an instance's operations
 * become tasks, one or more an operation (an operation may say at run
 * time how many tasks of a later one its instance needs:
 * plb__tasks_expand), and a task is ready when every task of the
 * operations before it in the same instance has ended. PUs ask for work
 * as they become free (the balancer's driver asks, as for blocks), and
 * the policy picks which ready task a PU gets:
 *
 *   fcfs   one queue in the order tasks became ready; a PU takes the first
 *          it can run.
 *   heft   a queue a PU: a task, when it becomes ready, goes to the PU on
 *          which it would finish first (the PU's queue's expected end,
 *          then the task's expected time there); a PU takes from its own.
 *   padas  one deque ordered by speedup: a task that gains more on the
 *          second accelerator type than on the first goes in from the
 *          head, just before the first task with a smaller speedup there;
 *          else from the tail, likewise with the first type's speedup.
 *          The second type takes from the head, the first from the tail,
 *          a CPU from the middle (the boundary between the two: the end
 *          task of the side whose speedup is lower). At most two
 *          accelerator types.
 *   pams   a queue a device type, each sorted by that type's speedup
 *          (highest first; the CPU's by the best accelerator's speedup,
 *          lowest first); a task is in every queue of a type that runs it
 *          and leaves them all when one takes it.
 *
 * Equal speedups keep the order tasks became ready in. The speedup of a
 * task on a type is its expected time on the CPU type (type 0) over its
 * expected time on that type, each with the time to bring its inputs
 * there: data stays where it was made, and a task made ready on a
 * device's output counts the copy back for the CPU and none for that
 * device's type (where nothing moves, the paper's speedup). Where a
 * task's inputs are is the type of the PU that ran the last task before
 * it to end (the host for an instance's first operations); a copy's
 * expected time is the mean of those measured (a done's xfer_s) for the
 * operation between the two types, 0 while none is known. heft's finish
 * times count the copy too. Expected times start from what the
 * caller seeds (plb__tasks_estimate: a models file, a previous run) and
 * follow the mean of the measured times; one not known yet counts as the
 * mean of the operation's known ones (speedup 1). For the study of
 * wrong estimates, est_error e multiplies every expected time an
 * operation has on a type by 1 + e or by 1 / (1 + e), each with
 * probability one half, drawn from seed once a run (a time cut by e
 * itself would reach zero at e = 100%).
 *
 * Pure: no MPI, threads or clocks (the caller passes the time). */
#ifndef PLB_BALANCER_TASKS_H
#define PLB_BALANCER_TASKS_H

#include <stdint.h>

#include "balancer/balancer.h"

#define PLB__TASKS_MAX_OPS 64
#define PLB__TASKS_MAX_TYPES 4  /* device types: 0 the CPU, then accelerators */

#define PLB__TASKS_POLICIES(X) X(FCFS, "fcfs") X(HEFT, "heft") X(PADAS, "padas") X(PAMS, "pams")
enum plb__tasks_policy {
#define X(ID, name) PLB__TASKS_##ID,
	PLB__TASKS_POLICIES(X)
#undef X
	PLB__TASKS_NPOLICY
};
/* The policy named name: 0, or PLB_EINVAL. */
int plb__tasks_policy_parse(const char *name, enum plb__tasks_policy *p);
const char *plb__tasks_policy_name(enum plb__tasks_policy p);
/* "fcfs | heft | padas | pams", for messages */
const char *plb__tasks_policies_accepted(void);

/* One operation: the operations that end before it starts (a bit each, of
 * lower index only: the dataflow has no cycle), the tasks an instance has
 * of it unless plb__tasks_expand says otherwise (0: none, it is passed
 * over), and the device types that can run it (a bit each). */
struct plb__pipe_op {
	uint64_t after;
	int tasks;
	unsigned types;
};

struct plb__tasks_cfg {
	enum plb__tasks_policy policy;
	int nops;
	const struct plb__pipe_op *ops;
	int npu;
	const int *type;        /* each PU's device type, in [0, PLB__TASKS_MAX_TYPES) */
	double est_error;       /* >= 0 */
	int blind_copies;       /* 1: speedups and finish times leave copies out (the
				 * paper's, for comparison) */
	uint64_t seed;
	/* if not NULL: instance inst has ended (each of its tasks) */
	void (*finished)(void *ctx, uint64_t inst, double now);
	void *ctx;
};

typedef struct plb__tasks plb__tasks_t;

/* A scheduler for cfg (copied). NULL on bad arguments (PLB_EINVAL in *err,
 * with why: an operation no PU can run, an after bit not below its
 * operation, padas with three accelerator types...) or PLB_ENOMEM. */
plb__tasks_t *plb__tasks_create(const struct plb__tasks_cfg *cfg, int *err, char *why,
				size_t whylen);
void plb__tasks_destroy(plb__tasks_t *t);

/* Seeds op's expected time on type (seconds > 0): counts as one
 * measurement. 0 or PLB_EINVAL. */
PLB_WUR int plb__tasks_estimate(plb__tasks_t *t, int op, int type, double seconds);
/* op's expected time on type as the policies see it (with the error), or
 * NAN when nothing is known of op. */
double plb__tasks_expected(const plb__tasks_t *t, int op, int type);
/* Seeds the time to bring the inputs of a task of op from device type
 * `from` to type `to` (seconds >= 0): one measurement. 0 or PLB_EINVAL. */
PLB_WUR int plb__tasks_estimate_copy(plb__tasks_t *t, int op, int from, int to, double seconds);

/* Instance inst (ids are the caller's; unique) reaches the node at now:
 * the tasks of its operations that wait for none become ready. 0,
 * PLB_EINVAL (known id, or the scheduler closed) or PLB_ENOMEM. */
PLB_WUR int plb__tasks_admit(plb__tasks_t *t, uint64_t inst, double now);
/* Instance inst needs count tasks of op (its operations before op have not
 * all ended yet). 0 or PLB_EINVAL. */
PLB_WUR int plb__tasks_expand(plb__tasks_t *t, uint64_t inst, int op, int count);
/* No more instances will come: once the last ends, every PU is told
 * PLB__NEXT_DONE. */
void plb__tasks_close(plb__tasks_t *t);

/* The driver's questions (balancer/driver.h's source): a task for PU pu
 * (PLB__NEXT_GRANT: g->id the task, g->offset its instance, g->units 1,
 * g->predicted_s its expected time there), PLB__NEXT_WAIT or
 * PLB__NEXT_DONE; a task back, measured (s->grant_id; its exec_s
 * refines the expected time of its operation on pu's type, its xfer_s
 * that of the copy of its inputs from where they were): 0, or
 * PLB_ESTALE for a task not out on pu; PU pu out of the run (its tasks
 * ready again for the others); and whether every PU that waits would wait
 * again. */
int plb__tasks_next(plb__tasks_t *t, int pu, double now, struct plb__grant *g);
int plb__tasks_done(plb__tasks_t *t, int pu, const struct plb__block_done *s);
int plb__tasks_lost(plb__tasks_t *t, int pu, double now);
int plb__tasks_idle_waits(const plb__tasks_t *t, double now);

/* Task id's instance, operation and index among its operation's tasks in
 * the instance. 0 or PLB_EINVAL. */
int plb__tasks_task(const plb__tasks_t *t, uint64_t id, uint64_t *inst, int *op, int *index);
/* How many tasks task id's operation has in its instance, or PLB_EINVAL. */
int plb__tasks_of(const plb__tasks_t *t, uint64_t id);
/* The tasks whose outputs task id reads (every task of the operations it
 * waits for, in its instance): their count (ids holds the first max of
 * them), or PLB_EINVAL. */
int plb__tasks_inputs(const plb__tasks_t *t, uint64_t id, uint64_t *ids, int max);
/* The device type task id's inputs are on (that of the PU that ran the
 * last task before it to end; 0, the host, for an instance's first
 * operations), or -1. */
int plb__tasks_home(const plb__tasks_t *t, uint64_t id);

struct plb__tasks_stats {
	long tasks_made, tasks_done, ready, instances_admitted, instances_done;
	long heap_entries;      /* pams: entries in its heaps, stale ones included */
	long tasks_kept, instances_kept;        /* held in memory (the ended are dropped) */
	long ran[PLB__TASKS_MAX_OPS][PLB__TASKS_MAX_TYPES];  /* tasks done, by op and type */
};
void plb__tasks_stats(const plb__tasks_t *t, struct plb__tasks_stats *st);

#endif
