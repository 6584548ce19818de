/* Device classes: what runs a PU's blocks on a worker. One class per file
 * (runtime/device/CLASS.c, one instance built with designated
 * initialisers), named in PLB__PU_KINDS (runtime/config/config.h) beside
 * the [node] key that asks for it; devices.c binds the two, so adding a
 * class is its file and one line in that list. cpu: a team of cores bound
 * with hwloc; cuda: one GPU (the runtime's only file with CUDA headers; a
 * build without CUDA says so when a config asks for a GPU); emu: an
 * emulated PU whose block times follow a [model]; opencl: one OpenCL device
 * (the runtime's only file with OpenCL headers) (it runs the real CPU
 * kernel, then waits out the model's time). open and close run on the
 * worker's main thread; thread_start, begin and run on the PU's own. */
#ifndef PLB_DEVICE_H
#define PLB_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "plb.h"
#include "runtime/config/config.h"

/* What a PU is, as a worker announces it in HELLO (fixed size, no pointers). */
struct plb__pu_desc {
	int32_t kind;           /* enum plb__pu_kind: the [node] key that made it */
	int32_t model;          /* index of its [model] in the config; -1: a real device */
	int32_t device;         /* device ordinal; -1: none */
	int32_t cores;          /* cores in its team; 1 but for a CPU team */
	char name[64];
};

/* Where a PU comes from: value number `index` of node `node`'s key. */
struct plb__dev_spec {
	const struct plb__config *cfg;
	int node, index;
	int value;              /* that value: cores (-1 all), device index, model
				 * index, selector index (DEVICES) */
	int sub;                /* which of the PUs the value makes (see count) */
	int host_cores;         /* host cores the node's PUs of a class with host_core
				 * hold (plb__dev_open fills it) */
};

/* What a run gives every PU; set before begin. */
struct plb__dev_run {
	double t0;              /* the run's start on this worker (plb__now) */
	uint64_t seed, stream;  /* the run's random seed, this PU's stream */
	size_t in_unit, out_unit;       /* bytes per unit of a block's input, output */
	size_t acc_bytes;               /* a reduction's accumulator (0: none) ... */
	const void *acc_identity;       /* ... its value at a block's start ... */
	void (*combine)(void *acc, const void *part, size_t bytes);     /* ... and join */
};

/* What one block cost, measured (or, for emu, modelled). */
struct plb__dev_times {
	double exec_s, xfer_s;  /* compute stage, transfer stage */
	double busy_s;          /* time the PU was busy for it, not counting overlap */
	double overran;         /* emu: its real kernel ran this long past the
				 * model's finish, so its times are the host's
				 * (0: it did not, or not by enough to matter) */
	double xfer_at;         /* when its transfer stage began (plb__now); NAN:
				 * not known (a device's copies are part of exec) */
	double task_s;          /* in (emu): a pipeline task's time on this PU from
				 * the config's [op] section; 0: the model's for
				 * the block's units */
	int died;               /* the PU failed during the block (emu) ... */
	double dead_at;         /* ... at this time (plb__now) */
};

struct plb__dev;

struct plb__devclass {
	const char *name;
	enum plb_device_class kernel;   /* which of a kernel's functions it runs */
	int own_times;          /* run fills in the times; else a block's exec
				 * time is the wall time of run */
	int host_core;          /* its thread feeds a device: cpu = all leaves
				 * it a core of its own */
	/* How many PUs value s makes (opencl = all: every device); NULL: 1.
	 * On the worker, before open. */
	int (*count)(const struct plb__dev_spec *s);
	/* Of a class with host_core: the host cores value s's PUs hold
	 * (a CPU-type OpenCL device: its cores); NULL: one a PU. */
	int (*holds)(const struct plb__dev_spec *s);
	/* Check and set up the PU (device present, cores there) and fill in
	 * d->desc and d->info (its name above all). err says what is wrong
	 * for the user; the caller adds the key's file:line. */
	PLB_WUR int (*open)(struct plb__dev *d, const struct plb__dev_spec *s,
			    char *err, size_t errlen);
	/* On the PU's own thread, before anything else (binding, device);
	 * NULL: nothing to do. */
	PLB_WUR int (*thread_start)(struct plb__dev *d, char *err, size_t errlen);
	/* A run starts: d->run holds it. NULL: nothing to reset. */
	void (*begin)(struct plb__dev *d);
	/* Run one block with the kernel class kc and its state; arrive is
	 * when the block's message reached this worker (plb__now). NULL: the
	 * kernel's run, called on the PU's thread. */
	PLB_WUR int (*run)(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
			   const struct plb_block *b, double arrive, struct plb__dev_times *t);
	void (*close)(struct plb__dev *d);     /* NULL: nothing to free */
	/* Pipeline runs, a class whose PU runs several tasks at once (a CPU
	 * team: a core each, plb__pu_slots): slot 0 is the PU's own thread;
	 * for a slot s >= 1, on_slot has fn(arg) run on that slot's own
	 * thread (it returns at once; tasks run in the order given;
	 * PLB_ESTATE when two already wait there). NULL: one slot. */
	PLB_WUR int (*on_slot)(struct plb__dev *d, int s, void (*fn)(void *), void *arg);
};

struct plb__dev {
	const struct plb__devclass *cls;
	struct plb__pu_desc desc;
	struct plb_pu_info info;
	struct plb__dev_run run;
	void *state;                    /* the class's own */
};

#define X(ID, cls, key, value, accepts) extern const struct plb__devclass plb__dev_##cls;
PLB__PU_KINDS(X)
#undef X

/* The class behind each PU kind's methods, with the defaults above. d is
 * caller-owned; plb__dev_open fills it in (zeroed first), plb__dev_close
 * frees what open made (also after open failed). */
/* The PUs value s of kind `kind` makes (each then opened with s->sub). */
int plb__dev_count(enum plb__pu_kind kind, const struct plb__dev_spec *s);
PLB_WUR int plb__dev_open(struct plb__dev *d, enum plb__pu_kind kind,
			  const struct plb__dev_spec *s, char *err, size_t errlen);
PLB_WUR int plb__dev_thread_start(struct plb__dev *d, char *err, size_t errlen);
void plb__dev_begin(struct plb__dev *d, const struct plb__dev_run *run);
PLB_WUR int plb__dev_run(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
			 const struct plb_block *b, double arrive, struct plb__dev_times *t);
void plb__dev_close(struct plb__dev *d);
/* A pipeline's task: plb__dev_run, but a CPU team's slot runs the kernel
 * on its own thread alone (the team is not asked), and an emulated PU
 * takes t->task_s where it is set. */
PLB_WUR int plb__dev_run_task(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
			      const struct plb_block *b, double arrive, struct plb__dev_times *t);
PLB_WUR int plb__dev_on_slot(struct plb__dev *d, int s, void (*fn)(void *), void *arg);
/* A PU as a pipeline's node scheduler sees it, from what the worker
 * announced (the master and the worker read the same): its task slots (a
 * CPU team's cores, else 1) and its device type (0 a CPU core, 1 a CUDA
 * GPU, 2 an OpenCL device; an emulated PU its model's class). */
int plb__pu_slots(const struct plb__pu_desc *d);
int plb__pu_task_type(const struct plb__config *cfg, const struct plb__pu_desc *d);


/* CUDA devices this process sees: 0 when there is no driver, no device or
 * no CUDA in the build, -1 when the driver answers with another error;
 * why (may be NULL) gets the reason whenever the count is not a plain
 * success. */
int plb__dev_cuda_count(char *why, size_t len);

/* OpenCL devices this process sees, over every platform: 0 when there is
 * no ICD loader, no platform, no device or no OpenCL in the build (why,
 * which may be NULL, then says which). */
int plb__dev_opencl_count(char *why, size_t len);

/* A kernel's functions for device class c (none, all NULL, where the
 * kernel's ABI stamp predates the class), and c's name ("cpu", "cuda"). */
const struct plb_kernel_class *plb__kernel_class(const struct plb_kernel *k,
						 enum plb_device_class c);
const char *plb__device_class_name(enum plb_device_class c);

#endif
