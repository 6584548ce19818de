/* The scenario / config file (INI, read with libinih): one file describes a
 * cluster for plbsim and, with real devices in the node sections, for the
 * runtime. Sections: [run], [balancer], [network], [node NAME] (one per
 * node), [model NAME]. Every key is checked against one table; an unknown
 * section or key, a bad value, a model that is never defined or never used
 * is an error naming file:line and the key. */
#ifndef PLB_CONFIG_H
#define PLB_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "balancer/params.h"
#include "runtime/config/devmodel.h"

/* The kinds of PU a [node] section can ask for, one line each, in the
 * order a node's PUs are listed: X(ID, class, key, value, accepted).
 * class is the device class that runs them (runtime/device/CLASS.c), key
 * the [node] key, and value how that key's value reads:
 *   CORES    all, or a core count: one PU over that many cores
 *   INDICES  device indices, each once: one PU per device
 *   MODELS   names of [model NAME] sections, a name may repeat: one
 *            emulated PU each (the only PUs plbsim simulates)
 * Adding a kind of device: a line here, and its class file. */
#define PLB__PU_KINDS(X)                                                          \
	X(CPU, cpu, "cpu", CORES,                                                  \
	  "all (every core but one per GPU or OpenCL device of the section, and "     \
	  "opencl_cores per OpenCL device of type CPU), or a core count "     \
	  "in [1, 65536]: one CPU PU over those cores")                            \
	X(CUDA, cuda, "gpu", INDICES,                                              \
	  "CUDA device indices in [0, 1023] separated by spaces, each once, e.g. 0 1") \
	X(EMU, emu, "emu", MODELS,                                                 \
	  "model names separated by spaces, each a [model NAME] of this file; a name may repeat") \
	X(OPENCL, opencl, "opencl", DEVICES,                                       \
	  "all, or OpenCL devices separated by spaces, each an index in [0, 1023] "  \
	  "over every platform's devices or PLATFORM:INDEX within the platforms "   \
	  "whose name or vendor contains PLATFORM (e.g. pocl:0, nvidia:1)")

enum plb__pu_kind {
#define X(ID, cls, key, value, accepts) PLB__PU_##ID,
	PLB__PU_KINDS(X)
#undef X
	PLB__PU_NKIND
};

enum plb__pu_value { PLB__VALUE_CORES, PLB__VALUE_INDICES, PLB__VALUE_MODELS, PLB__VALUE_DEVICES };

/* One kind's key in a [node] section. */
struct plb__node_pus {
	int n;                  /* values; 0 when the key is absent */
	int *v;                 /* CORES: one, the core count (-1: all);
				 * INDICES: device indices; MODELS: indices
				 * into plb__config.models, in file order;
				 * DEVICES: 0 .. n-1, into sel */
	char **sel;             /* DEVICES: the selectors as written ("all",
				 * "2", "pocl:0"), resolved on the node */
	int line;               /* the key's line */
};

struct plb__node {
	char *name;
	int line;               /* line of the [node NAME] header */
	char *host;             /* "host =", NULL if absent ("*" = any) */
	int host_line;
	double link_gbps;       /* its own link's bandwidth each way; 0: not modelled */
	double memory_mb;       /* MiB of a 2-D product it may hold; 0: no cap */
	char *couple;           /* "couple =" as written (plbsim), NULL if absent */
	int couple_line;
	int opencl_cores;       /* cores a CPU-type OpenCL device (PoCL) runs on */
	struct plb__node_pus pus[PLB__PU_NKIND];
};

/* A coupling between emulated PUs of one node (plbsim): the victim's
 * stage (PLB__STAGE_XFER or PLB__STAGE_COMPUTE) takes `factor` times as
 * long while any of the culprits computes. */
struct plb__couple {
	int victim, stage;      /* index into plb__config.pus; the stage */
	double factor;          /* >= 1 */
	int nculprit;
	int *culprits;          /* indices into plb__config.pus, the victim's node */
	int line;
};

/* One emulated PU, in scenario order (nodes in file order, then its MODELS
 * keys' lists in order). Real devices (cpu, gpu) are not in this list: the
 * runtime adds them. */
struct plb__emu_pu {
	int node, model;
	char name[64];          /* "A.k5200#1": node, model, index within node */
};

/* An [op NAME] section: one operation of a pipeline (plbsim's pipeline
 * runs; balancer/tasks.h). */
#define PLB__OP_CLASSES 3       /* its times: on cpu, gpu and mic PUs */
struct plb__op {
	char *name;
	int line;
	char *after;            /* the ops that end before it starts, by name; NULL: none */
	int after_line;
	uint64_t after_mask;    /* the same, resolved: a bit per op (all defined above it) */
	int tasks;              /* tasks an instance has of it; default 1 */
	double ms[PLB__OP_CLASSES];     /* a task's time on a PU of each model class,
					 * ms; < 0: that class does not run it */
	double out_mb;          /* what a task of it writes for the ops after it, MB:
				 * copied (the PU models' transfer curves, x in MB)
				 * where a later task runs in another memory; default 0 */
};

struct plb__config {
	char *path;
	/* [run] */
	double units;           /* W; 0: not in the file (an app's job gives it) */
	char policy[32];        /* default "plb-hac" */
	uint64_t seed;          /* default 1 */
	int pipeline;           /* grants a PU may hold, 1 to PLB__MAX_GRANTS; default 1 */
	int keep_models;        /* 1: a run starts from the last like run's models */
	int in_place;           /* 1: in one process, blocks use the job's memory */
	double resident_mb;     /* input a node may keep (plb_job.in_mode), MiB;
				 * < 0 (default): a quarter of its memory */
	char *models_file;      /* [run] models: the models file, NULL if none */
	double in_bytes, out_bytes;     /* plbsim: bytes of a unit's input and output
					 * over the links (an app's job gives its own) */
	double shared_bytes;            /* plbsim: bytes every node gets before its
					 * first block (the job's shared data) */
	/* pipelines (with [op] sections): a unit is an instance */
	int window;             /* instances a node holds at once; 0 (default): 4 a PU */
	char scheduler[16];     /* the node's policy: fcfs | heft | padas | pams (default) */
	double estimate_error;  /* error put into the pipeline schedulers' expected times; default 0 */
	/* [balancer] */
	struct plb__params params;
	/* [network] */
	double latency_us;      /* default 50 */
	double link_gbps;       /* the master's link, each way, Gbit/s; 0 (default): not modelled */
	double link_probe_ms;   /* runtime, without link_gbps: the probe's rounds grow
				 * to this; 0: no probe; default 20 */
	double solve_us;        /* < 0 (default): charge the measured solve time */
	double fail_detect_ms;  /* default 1000 */
	double peer_timeout_s;  /* a rank silent this long in a run is gone; default 10 */
	double peer_timeout_min_s; /* a worker silent this long may be gone (master.c, peer_limit); default 1 */
	double startup_timeout_s; /* the handshake's limit on a rank's silence; default 120 */
	int end_lost;           /* ranks taken out: MPI_Abort at the master's exit; default 1 */
	int nnodes;
	struct plb__node *nodes;
	int nmodels;
	struct plb__devmodel *models;
	int npu;
	struct plb__emu_pu *pus;        /* the emulated PUs */
	int ncouple;
	struct plb__couple *couples;    /* [node] couple rules, expanded per victim PU */
	int nops;
	struct plb__op *ops;            /* [op] sections, in file order */
	/* the first warning ("path:line: what"), for the caller to show; ""
	 * when none (a [model] no node uses: one library of models may serve
	 * several configs) */
	char warning[320];
};

/* Read and check `path` into cfg (caller-owned, zeroed by the call). Returns
 * 0, or PLB_ECONFIG / PLB_EIO with "path:line: key: what is wrong, what is
 * accepted" in err. On error cfg holds nothing to free. */
PLB_WUR int plb__config_load(const char *path, struct plb__config *cfg,
			     char *err, size_t errlen);
/* The same from the file's text (already read, e.g. received from the
 * master); path only names it in messages. */
PLB_WUR int plb__config_load_text(const char *path, const char *text, size_t len,
				  struct plb__config *cfg, char *err, size_t errlen);
void plb__config_fini(struct plb__config *cfg);
/* The [op NAME] section of that name, or NULL. */
const struct plb__op *plb__config_op(const struct plb__config *cfg, const char *name);

/* Which config node section each worker rank gets: sections whose
 * host matches the rank's host name first, then the remaining ranks take
 * host = * sections (and sections without host) in file order. assign[i]
 * is worker i's node index. Every rank gets one section and every section
 * one rank, or PLB_ECONFIG with a message naming the section or rank. With
 * single (the in-process mode, one worker), the worker takes the first
 * section whose host matches, or else the first * section, and the other
 * sections are not used. */
PLB_WUR int plb__nodes_assign(const struct plb__config *cfg, const char *const *hosts,
			      int nworkers, int single, int *assign, char *err, size_t errlen);

/* How a PU kind's value reads. */
enum plb__pu_value plb__pu_kind_value(enum plb__pu_kind k);
/* The [node] keys that ask for PUs, for messages: "cpu =, gpu = or emu =",
 * or with real_only the ones plbsim does not simulate: "cpu, gpu". */
const char *plb__pu_keys(char *buf, size_t len, int real_only);
/* PUs the node asks for, of every kind; of real devices only. */
int plb__node_npu(const struct plb__node *n, int real_only);

#endif
