/* plbsim's pipeline runs: a scenario with [op] sections, simulated in
 * virtual time. The master hands instances (units) to nodes on demand, up
 * to [run] window a node, each hand-over taking the network latency; each
 * node's scheduler (balancer/tasks.h, under [run] scheduler) gives its
 * ready tasks to its emulated PUs through the balancer's driver, as the
 * worker daemon is to; a task takes its op's time for the PU's model class
 * ([op] cpu, gpu, mic), times 1 + noise N(0, 1) of the PU's model (at
 * least a tenth of it). Data stays where it was made: a task's inputs
 * (the outputs of the tasks of the ops it waits for, [op] out_mb each)
 * made in another memory are copied first (a device's to the host by its
 * model's transfer curve, the host's to a device by that device's; CPU
 * PUs share the host's memory), and the copy is reported apart from the
 * compute. The schedulers start from the true mean times (estimates from
 * an earlier run), with the estimate error applied, or from nothing
 * (learn). Deterministic for a seed. */
#ifndef PLB_SIM_PIPE_H
#define PLB_SIM_PIPE_H

#include "balancer/tasks.h"
#include "runtime/config/config.h"

struct plb__pipe_opts {
	const char *scheduler;  /* NULL: the file's */
	int window;             /* 0: the file's */
	double est_error;       /* < 0: the file's */
	int learn;              /* 1: no estimates to start from */
	int blind_copies;       /* 1: the schedulers leave copies out (balancer/tasks.h) */
	uint64_t seed;
};

struct plb__pipe_result {
	double makespan_s;
	long instances, tasks;
	double sched_us_task;   /* the schedulers' wall time a task (this machine), us */
	int window;
	char scheduler[16];
	/* tasks run, by op and model class (cpu, gpu, mic) */
	long ran[PLB__TASKS_MAX_OPS][PLB__OP_CLASSES];
	double busy_s[PLB__OP_CLASSES]; /* busy time (copies and compute), by class */
	long copies;                    /* inputs copied between memories */
	double copy_mb, copy_s;         /* what they moved and the time they took */
	int pus[PLB__OP_CLASSES];       /* PUs, by class */
};

/* Runs cfg's pipeline (cfg->nops > 0). 0, or a negative PLB_E code with
 * the reason in err. */
PLB_WUR int plb__sim_pipeline(const struct plb__config *cfg, const struct plb__pipe_opts *o,
			      struct plb__pipe_result *r, char *err, size_t errlen);

#endif
