/* plb.h: the task API, the one header apps and kernels see.
 *
 * A job is a domain of W units (matrix columns, points, options, genes)
 * that plb cuts into blocks [offset, offset + units) and spreads over every
 * processing unit (PU) of the cluster so that all of them finish together.
 * A kernel is a name plus one set of functions per device class; the job
 * says where a block's input comes from and where its output goes (a fixed
 * number of bytes per unit, contiguous by unit) and which data every block
 * shares (sent to every node once per run).
 *
 *   int main(int argc, char **argv)
 *   {
 *       static const struct plb_kernel *const kernels[] = {&square};
 *       struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
 *       plb_t *p;
 *       if (plb_options_parse(&argc, argv, &o))      (--config, --policy, --set)
 *           return plb_usage_error();
 *       if (plb_init(&argc, &argv, &o, &p))
 *           return plb_finalize(p), 1;
 *       if (!plb_is_master(p))                       (worker ranks serve blocks)
 *           return plb_serve(p) | plb_finalize(p) ? 1 : 0;
 *       ... struct plb_job job = {PLB_INIT, .kernel = "square", .units = n, ...};
 *       int rc = plb_run(p, &job);                   (job.out is complete)
 *       if (!rc)
 *           rc = plb_report(p, stdout, 0);
 *       return plb_finalize(p) || rc ? 1 : 0;
 *   }
 *
 * Rank 0 is the master: it runs the app (plb_run, plb_report). Every other
 * rank is a worker daemon inside plb_serve, which runs blocks on its node's
 * PUs until the master calls plb_finalize. README.md has a complete kernel.
 * Functions return 0 or a negative PLB_E... code (plb_errors.h).
 *
 * Every struct an app fills or passes (plb_options, plb_kernel, plb_job,
 * plb_result, plb_pu_result) starts with its ABI stamp, set by PLB_INIT:
 * the library reads it as the layout of the plb.h the app was built with,
 * and refuses a struct without one. */
#ifndef PLB_H
#define PLB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plb_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* This header's plb; plb_version() is the library's. A program and the
 * library it runs with may differ in PATCH and, within one PLB_ABI, in
 * MINOR; every rank of a job must run the same plb (a worker of another
 * version is refused when it joins). */
#define PLB_VERSION_MAJOR 0
#define PLB_VERSION_MINOR 3
#define PLB_VERSION_PATCH 0
#define PLB_VERSION (PLB_VERSION_MAJOR * 10000 + PLB_VERSION_MINOR * 100 + PLB_VERSION_PATCH)
/* The ABI: the layout of the structs below and the functions' calls. The
 * shared library is libplb.so.PLB_ABI; a struct's members are only ever
 * appended, in a new ABI, and the stamp tells the library which it got. */
#define PLB_ABI 2
/* The first member of every struct below: {PLB_INIT, .name = ...}. */
#define PLB_INIT .abi = PLB_ABI

typedef struct plb plb_t;

/* The device classes a kernel may have functions for, one line each:
 * X(ID, member, since) gives PLB_DEV_ID and struct plb_kernel's member,
 * which a kernel of an older ABI than since lacks. A new class is appended
 * (as the last line, with the ABI it comes in). */
#define PLB_DEVICE_CLASSES(X)                                                \
	X(CPU, cpu, 1)     /* host cores (also what an emulated PU runs) */  \
	X(CUDA, cuda, 1)   /* one CUDA GPU */                                   \
	X(OPENCL, opencl, 2) /* one OpenCL device (AMD, Intel, NVIDIA, PoCL) */

enum plb_device_class {
#define PLB_X_(ID, member, since) PLB_DEV_##ID,
	PLB_DEVICE_CLASSES(PLB_X_)
#undef PLB_X_
	PLB_DEV_NCLASS
};

/* The PU a kernel instance runs on. */
struct plb_pu_info {
	enum plb_device_class cls;
	int device;             /* CUDA device ordinal (cuda), the device's
				 * index over every platform (opencl), -1
				 * otherwise */
	int cores;              /* cores in the PU's team (cpu), cores the
				 * device runs on (opencl, type CPU), 1 otherwise */
	const char *name;       /* "a.cpu", "a.gpu0", "a.cl0", "a.k620#1" */
	/* opencl (ABI 2): the device (a cl_device_id) and a context of it
	 * (cl_context) the runtime made; the kernel makes its own queues,
	 * buffers and programs in that context. NULL otherwise. */
	void *cl_device, *cl_context;
};

/* One block, or (cpu) one team member's share of it. */
struct plb_block {
	uint64_t offset, units; /* [offset, offset + units) of the domain */
	const void *in;         /* units * in_unit bytes of input */
	void *out;              /* units * out_unit bytes to fill */
	void *acc;              /* a job with a reduction: this block's (or team
				 * member's) own accumulator, acc_bytes, holding
				 * the identity at the start: add the block's
				 * contribution into it. NULL otherwise. */
	int member, members;    /* a kernel class with `whole`: this call is
				 * member `member` (from 0) of the `members` of a
				 * CPU team that run this block at once; else 0, 1 */
	/* A pipeline's task (plb_run_pipeline; 0 and NULL otherwise): offset
	 * is its instance, units 1, in and out the instance's; the task is
	 * number `task` of the `tasks` its operation (index `op` in
	 * plb_pipeline.ops) has in the instance; scratch is the instance's
	 * scratch_bytes on its node, which its tasks share (zeroed when the
	 * instance arrives; a task reads what the tasks it waits for wrote). */
	void *scratch;
	int op, task, tasks;
};

/* From a kernel's run, on the PU's thread: of the block blk's time, this
 * many seconds went to moving its data to and from a device and did not
 * overlap its compute (copies that CUDA events or OpenCL profiling timed,
 * staging, synchronisation). The PU's model fits them as the block's
 * transfer time G beside its compute F (E = F + G); the report, the trace
 * and the models file show the two. Optional: without it a block's time is
 * all compute. Called more than once, the last call counts. */
PLB_API void plb_report_copies(const struct plb_block *blk, double seconds);

/* One device class's functions. init runs once per PU and run (on the PU's
 * thread) before its first block, with the run's shared data, and sets
 * *state; run processes one block; fini frees the state. init and fini may
 * be NULL. For cpu, run is called from every core of the PU's team at once,
 * each on its own part of the block: it must not write to state. Return 0,
 * or a negative PLB_E code: the block goes back to the pool and the PU is
 * taken out of the run, with the reason in the log. */
struct plb_kernel_class {
	int (*init)(const struct plb_pu_info *pu, const void *shared,
		    size_t shared_bytes, void **state);
	int (*run)(void *state, const struct plb_block *blk);
	void (*fini)(void *state);
	/* cpu: 0 (the default): a team cuts each block into one range of
	 * units per member. 1: every member is called on the whole block
	 * (blk->member of blk->members) and does its own share of the work:
	 * for kernels where a range of units would make every member read all
	 * the shared data (a product by columns: each member then takes a
	 * slab of rows). Members must write disjoint bytes of out. */
	int whole;
};

/* A kernel: its name (what the master tells workers to run) and a class
 * per device type; a class without run is not offered on that device. */
struct plb_kernel {
	unsigned abi;           /* PLB_INIT */
	const char *name;
	/* For jobs with a reduction: acc = acc (+) part, both `bytes` long.
	 * It must be associative, with the job's identity as identity (sums,
	 * minima, counts). Called on workers (a CPU team's members) and on the
	 * master (the blocks, in offset order), never concurrently on one acc. */
	void (*combine)(void *acc, const void *part, size_t bytes);
	/* the classes, last: a new one is appended */
#define PLB_X_(ID, member, since) struct plb_kernel_class member;
	PLB_DEVICE_CLASSES(PLB_X_)
#undef PLB_X_
};

/* One run over a domain. in/out are read and written on the master only:
 * unit i's input is in + i * in_unit, its output out + i * out_unit. */
struct plb_job {
	unsigned abi;           /* PLB_INIT */
	const char *kernel;     /* a name in plb_options.kernels */
	uint64_t units;         /* W; 0: the config file's [run] units */
	const void *shared;     /* sent once to every node, may be NULL */
	size_t shared_bytes;
	const void *in;
	size_t in_unit;
	void *out;
	size_t out_unit;
	/* A reduction (acc_bytes > 0; the kernel must have combine): every
	 * block gets an accumulator of acc_bytes starting as acc_identity
	 * (NULL: all zero bytes); the kernel adds into it, and plb_run
	 * combines the blocks' accumulators in offset order into acc. Every
	 * unit counts exactly once, also when a block is run twice or a PU
	 * is lost. */
	size_t acc_bytes;
	const void *acc_identity;
	void *acc;
	/* What a unit's cost depends on besides the kernel and the unit sizes,
	 * e.g. "n=4096" (NULL: nothing). Runs with the same kernel, unit sizes
	 * and signature share their fitted models: a later run starts from
	 * them instead of training ([run] keep_models). */
	const char *signature;
	/* Input kept on the nodes between runs (over MPI; in one process PUs
	 * read the job's memory in place and no input is sent anyway), bits:
	 * PLB_IN_KEEP: each node keeps the input it is sent, within
	 *   [run] resident_mb, for later runs of this domain;
	 * PLB_IN_UNCHANGED: in holds what it held in the last run with
	 *   PLB_IN_KEEP (same in, in_unit and units, nothing written to it
	 *   since): nodes use what they kept, the balancer gives a PU the
	 *   units its node holds, and only what a node lacks is sent.
	 * PLB_SHARED_UNCHANGED: shared holds what it held in the last run
	 *   (same address and size): nodes use the copy they were sent.
	 * 0 (the default): every block's input is sent and nothing is kept. */
	int in_mode;
};
#define PLB_IN_KEEP          1
#define PLB_IN_UNCHANGED     2
#define PLB_SHARED_UNCHANGED 4

/* ---- Pipelines: several operations on each piece of data ----------------
 *
 * A pipeline is a set of operations, each run by a kernel, and the
 * dataflow between them (an operation waits for those named in its after,
 * in the same instance). An instance is one unit of the domain (an image
 * tile, a chunk of a file): its input and output are in_unit and out_unit
 * bytes, as a job's units. The master hands instances to the nodes on
 * demand, up to a window each; each node's worker runs the instances'
 * tasks on its PUs as they become ready, choosing by a scheduler (fcfs,
 * heft, padas, pams: docs/PIPELINES.md) from what it learns of each
 * operation's time on each kind of PU. A CPU PU of N cores runs N tasks at
 * once, one a core. A task runs on one PU, so a kernel class with `whole`
 * is called with member 0 of 1. */
#define PLB_MAX_AFTER 8
#define PLB_TASKS_LATER (-1)    /* plb_op.tasks: none until plb_task_expand */
struct plb_op {
	unsigned abi;           /* PLB_INIT */
	const char *name;       /* unique in the pipeline; a config's [op NAME] of
				 * the same name gives emulated PUs their times */
	const char *kernel;     /* a name in plb_options.kernels: its class for a
				 * PU's device runs the tasks there (none: that
				 * kind of PU never runs this operation) */
	const char *after[PLB_MAX_AFTER + 1];   /* operations above this one in
						 * plb_pipeline.ops that it waits
						 * for, NULL-ended */
	int tasks;              /* tasks an instance has of it: 0 means 1;
				 * PLB_TASKS_LATER: none until a task of an
				 * operation it waits for calls plb_task_expand */
};

struct plb_pipeline {
	unsigned abi;           /* PLB_INIT */
	const struct plb_op *ops;
	int nops;               /* 1 to 64 */
	uint64_t instances;     /* 0: the config file's [run] units */
	const void *shared;     /* sent once to every node, may be NULL */
	size_t shared_bytes;
	const void *in;         /* instance i's input: in + i * in_unit */
	size_t in_unit;
	void *out;              /* instance i's output: out + i * out_unit */
	size_t out_unit;
	size_t scratch_bytes;   /* each instance's scratch on its node (block.scratch) */
	const char *scheduler;  /* NULL: the config's [run] scheduler (pams) */
	int window;             /* instances a node holds at once; 0: [run] window,
				 * else 4 a task slot of the node */
};

/* Master: run the pipeline over every instance; returns 0 when every
 * instance's output is in pl->out, each from exactly one run of its tasks.
 * plb_report and plb_result then tell this run. */
PLB_API PLB_WUR int plb_run_pipeline(plb_t *p, const struct plb_pipeline *pl);
/* From a pipeline task's kernel (on its PU's thread): the task's instance
 * needs count (>= 0) tasks of operation op, which must wait, directly or
 * through others, for the calling task's operation. The last call for an
 * op counts, and it takes effect when the calling task ends well. 0, or
 * PLB_EINVAL (not a pipeline task, an unknown op, one that does not wait
 * for this task's). */
PLB_API int plb_task_expand(const struct plb_block *blk, const char *op, int count);

/* The figures of the master's last run (plb_result), as in plb_report. */
struct plb_result {
	unsigned abi;           /* PLB_INIT, set by the caller */
	uint64_t units;         /* W */
	int coverage_ok;        /* every unit came back exactly once */
	double makespan_s;      /* the run's first grant to its last unit back */
	double lower_bound_s;   /* no schedule on these PUs ends sooner */
	double ratio;           /* makespan / lower bound (NAN when unknown) */
	double imbalance;       /* (last - first PU finish) / makespan */
	double wall_s;          /* plb_run's own wall time */
	double bytes_sent;      /* to the workers: shared data, blocks' input */
	double bytes_received;  /* from them: blocks' output and accumulators */
	long blocks, training_blocks;
	int npu, pus_lost;
	int warm_pus;           /* PUs that started from an earlier run's model */
	double resident_bytes;  /* input the nodes hold after the run (in_mode) */
	double unkept_bytes;    /* input sent that a node's budget could not keep */
	double master_cpu_s;    /* CPU seconds of the master's thread in the run: near
				 * makespan_s, the master is what limits the run */
};

/* One PU's figures in the last run. */
struct plb_pu_result {
	unsigned abi;           /* PLB_INIT, set by the caller */
	const char *name;       /* as in the report; valid until the next run */
	double units;           /* units it completed */
	double idle_frac;       /* share of the makespan it had no block */
};

#define PLB_MAX_SET 32

struct plb_options {
	unsigned abi;           /* PLB_INIT */
	const char *config;     /* the node/device INI file (required) */
	const char *policy;     /* NULL: the file's [run] policy */
	const char *set[PLB_MAX_SET + 1];       /* "key=value" balancer overrides, NULL-ended */
	const struct plb_kernel *const *kernels;
	int nkernels;
	int quiet;              /* errors only on stderr (no warnings, no progress line) */
	const char *models;     /* NULL: the file's [run] models (if any) */
	const char *trace;      /* NULL: none; else the master writes every run's
				 * blocks to this file as trace events (JSON that
				 * Perfetto, chrome://tracing and plb-plot open) */
	int progress;           /* 1: the master shows a progress line on stderr for
				 * runs past a second even when stderr is not a
				 * terminal (under mpirun it never is); 0: only
				 * on a terminal */
};

/* The library's plb: PLB_VERSION of the plb.h it was built from. */
PLB_API unsigned plb_version(void);

/* Takes plb's own options out of argv into o (stamped with PLB_INIT),
 * leaving the app's in place:
 *   --config FILE  --policy NAME  --set KEY=VALUE (repeatable)  --quiet
 *   --models FILE  --trace FILE  --progress
 * (also as --opt=value). Returns 0, or PLB_EINVAL after printing what is
 * wrong and what is accepted (from the first rank only). */
PLB_API PLB_WUR int plb_options_parse(int *argc, char **argv, struct plb_options *o);
/* plb_options_parse for an app that takes no options of its own (its
 * positional arguments stay in argv; so does everything after "--"): any
 * other argument that starts with '-' is refused, naming it, the nearest
 * of plb's options ("--polcy: unknown option; did you mean --policy?")
 * and those accepted; --help (or -h) prints a usage line and plb's
 * options on stdout (first rank) and returns 1: exit 0 then. Returns 0,
 * 1 or PLB_EINVAL (after saying why). */
PLB_API PLB_WUR int plb_options_parse_strict(int *argc, char **argv, struct plb_options *o);
/* The option arg was probably meant to be: the nearest of plb's options,
 * --help and the app's own (more, nmore of them), when near enough; else
 * NULL. For an app's "unknown option" message. */
PLB_API const char *plb_options_suggest(const char *arg, const char *const *more, int nmore);
/* plb's options, one line each with what they take, as plb_options_parse
 * reads them: for an app's --help. */
PLB_API void plb_options_usage(FILE *f);
/* Whether a file can be written at path, asked before a run so that a bad
 * output option fails at start, not after the job: 0 when it exists and
 * can be written, or does not exist and its folder can be; else
 * PLB_EINVAL or PLB_EIO with the reason in err (len bytes). Nothing is
 * created, truncated or replaced. Any thread. */
PLB_API PLB_WUR int plb_check_writable(const char *path, char *err, size_t len);

/* The rank the launcher gives this process, before plb_init (0 without a
 * launcher): for printing usage errors once. */
PLB_API int plb_launch_rank(void);

/* For a usage error found before plb_init: returns 2 (the exit status to
 * use), on ranks other than the first after a one-second pause, so that
 * mpirun does not end the first rank (which prints the message) early. */
PLB_API int plb_usage_error(void);

/* Starts the transport (MPI_Init under mpirun), reads the config on the
 * master, gives each worker its node section and starts its PU threads.
 * On every rank *out is then a handle to pass to plb_finalize, also when an
 * error is returned (then after the message has been printed once, by the
 * master). Call once, from the main thread. */
PLB_API PLB_WUR int plb_init(int *argc, char ***argv, const struct plb_options *o,
			     plb_t **out);
/* True on rank 0. */
PLB_API int plb_is_master(const plb_t *p);
/* Worker ranks: run blocks until the master finalizes. */
PLB_API PLB_WUR int plb_serve(plb_t *p);
/* Master: run job over the cluster; returns 0 when every unit's output is in
 * job->out, each unit from exactly one block (checked apart from the
 * balancer: anything else is PLB_EIO, and plb_report still tells the run).
 * May be called several times (one per phase). */
PLB_API PLB_WUR int plb_run(plb_t *p, const struct plb_job *job);
/* Master: the figures of the last run: the text table, or (json) one JSON
 * object with the same keys as plbsim --json. */
PLB_API PLB_WUR int plb_report(plb_t *p, FILE *f, int json);
/* Master: the last run's figures into *r (stamped with PLB_INIT: the
 * library fills the members r's ABI has); PLB_ESTATE before a run. */
PLB_API PLB_WUR int plb_result(const plb_t *p, struct plb_result *r);
/* Master: PU pu's figures in the last run (0 <= pu < plb_result's npu),
 * r as above. */
PLB_API PLB_WUR int plb_pu_result(const plb_t *p, int pu, struct plb_pu_result *r);
/* Stops the workers (from the master), ends the transport, writes the
 * models file, frees p. Returns 0 or the first error it met; each error is
 * logged (plb_errmsg cannot be asked after it: p is freed). p may be NULL. */
PLB_API int plb_finalize(plb_t *p);
/* The message of the last call's error ("" when the last call on p
 * succeeded): each call on p but this one and plb_is_master starts with
 * it cleared. */
PLB_API const char *plb_errmsg(const plb_t *p);

/* ---- The 2-D blocked product with its matrices on the nodes ----------
 * C = A B of n x n matrices in b x b blocks, laid out over the worker
 * nodes in two levels (docs/HIERARCHICAL.md): each node holds its
 * rectangles of A, B and C, drawn there element by element from a seed,
 * and a step k of the N = n / b steps moves only pivots between the
 * nodes (A's block column k along, B's block row k down), each node's
 * PUs updating their slices of its C. The master holds the partition and
 * the figures; no matrix crosses its link. */

/* A step on one PU: what a 2-D product's kernel gets in blk->in (its
 * blk->units: the slice's area in b x b blocks, for emulated PUs' models):
 * c += a b, a the pivot column's part (rows x k, row-major, leading
 * dimension lda), b the pivot row's slice (k x cols, ldb), c the slice of
 * the node's C (rows x cols, ldc); elements of elem bytes (4: float, 8:
 * double). A CPU team's members each take their share of the columns. */
struct plb_gemm_step {
	const void *a, *b;
	void *c;
	long rows, cols, k, lda, ldb, ldc;
	int elem;
};

struct plb_mm2d {
	unsigned abi;           /* PLB_INIT */
	const char *kernel;     /* a name in plb_options.kernels whose classes run
				 * struct plb_gemm_step */
	long n;                 /* the matrices' side, in elements (a multiple of
				 * block) */
	int block;              /* b; 0: 128 */
	int elem;               /* 4 (float) or 8 (double); 0: 8 */
	uint64_t seed;          /* A and B: plb_mm2d_element of it */
	const char *partitioner;        /* "fpm" (NULL), "multiple-cpm", "single-cpm",
					 * "homogeneous" */
	double eps;             /* the imbalance the partitioners stop at; 0: 0.05 */
	int verify;             /* Freivalds' test of C on the nodes (8 vectors) */
	void *gather;           /* NULL: C stays on the nodes; else n x n elements
				 * (row-major) on the master that C is gathered into
				 * at the end, each node's rectangle in one message */
};

struct plb_mm2d_result {
	unsigned abi;           /* PLB_INIT, set by the caller */
	int nodes, pus;
	long blocks;            /* N: blocks a side, and steps */
	double partition_s;     /* the partitioner's benchmarks and solves */
	double product_s;       /* the first step's start to the last node's end */
	double step_s;          /* product_s / N */
	double compute_frac;    /* of the nodes' step time, their PUs' compute (the
				 * rest: waiting for pivots), the mean over nodes */
	double bytes_net;       /* pivot bytes between the nodes */
	long half_perimeters;   /* the layout's, in blocks, and its lower bound */
	double half_perimeters_lb;
	double memory_mb_max;   /* the most a node holds of the matrices */
	int benchmarks, node_iterations;
	int verified;           /* 1: passed, 0: failed, -1: not asked */
	double residual;        /* the test's largest relative difference */
	double bound_s;         /* N steps of: the equal-time split of a step over
				 * every PU's FPM (what the partitioner measured),
				 * plus the pivots a node of the average area must
				 * receive, over the slowest node link ([node]
				 * link_gbps, else [network] link_gbps; none: 0) */
	double link_gbps;       /* the link the bound took (0: none known) */
};

/* Element (i, j) of matrix `which` (0: A, 1: B) drawn from seed: uniform in
 * [-1, 1), the same on every node. */
PLB_API double plb_mm2d_element(uint64_t seed, int which, long i, long j);
/* Master: run the 2-D product over the worker nodes (every PU's class
 * must have a function in the kernel). 0 with *r filled; PLB_EINVAL (bad
 * job), PLB_ECONFIG (a node's [node] memory_mb too small for any
 * partition, or a PU the kernel has no function for), PLB_EIO (a worker
 * failed or fell silent: the run is lost, not recovered). */
PLB_API PLB_WUR int plb_run_mm2d(plb_t *p, const struct plb_mm2d *job, struct plb_mm2d_result *r);

#ifdef __cplusplus
}
#endif

#endif
