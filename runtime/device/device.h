/* Device classes of the worker daemon: cpu (a team of cores, bound with
 * hwloc), cuda (one GPU; dev_cuda.c, built only with nvcc, the one runtime
 * file with CUDA headers) and emu (an emulated PU: it runs the real CPU
 * kernel, then waits out its model's time). Each sits behind this vtable,
 * one instance per file. A PU's thread calls thread_start once, then run
 * per block; open and close run on the daemon's main thread. */
#ifndef PLB_DEVICE_H
#define PLB_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "plb.h"
#include "balancer/base/clock.h"
#include "runtime/config/devmodel.h"

/* What a PU is, as a worker announces it in HELLO (fixed size, no pointers). */
enum plb__pu_kind { PLB__PU_CPU, PLB__PU_CUDA, PLB__PU_EMU };

struct plb__pu_desc {
	int32_t kind;           /* enum plb__pu_kind */
	int32_t model;          /* emu: index of its [model] in the config */
	int32_t device;         /* cuda: device ordinal */
	int32_t cores;          /* cpu: team size */
	char name[64];
};

struct plb__dev;

/* What one block cost, measured (or, for emu, modelled). */
struct plb__dev_times {
	double exec_s, xfer_s;  /* compute stage, transfer stage */
	double busy_s;          /* time the PU was busy for it, not counting overlap */
	int died;               /* emu: the PU failed during the block */
};

struct plb__devclass {
	const char *name;
	/* Check and set up (device present, cores there); NULL: nothing to
	 * check. err says what is wrong for the user; the caller adds the
	 * config's file:line. */
	PLB_WUR int (*open)(struct plb__dev *d, char *err, size_t errlen);
	/* On the PU's own thread, before anything else (binding, device). */
	PLB_WUR int (*thread_start)(struct plb__dev *d, char *err, size_t errlen);
	/* Run one block with the kernel class kc and its state. */
	PLB_WUR int (*run)(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
			   const struct plb_block *b, struct plb__dev_times *t);
	void (*close)(struct plb__dev *d);     /* NULL: nothing to free */
};

struct plb__dev {
	const struct plb__devclass *cls;
	struct plb__pu_desc desc;
	struct plb_pu_info info;
	void *state;                    /* the class's own */
	size_t in_unit, out_unit;       /* the run's bytes per unit */
	/* emu */
	const struct plb__devmodel *model;
	struct plb__rng rng;
	double t0;                      /* the run's start on this worker (plb__now) */
	double arrive;                  /* when the current block's message arrived */
	double xfer_free, comp_free, busy_until;
};

extern const struct plb__devclass plb__dev_cpu, plb__dev_emu;
#ifdef PLB_HAVE_CUDA
extern const struct plb__devclass plb__dev_cuda;
/* CUDA devices this process sees; negative (and err) when the driver
 * cannot be asked. */
int plb__cuda_count(char *err, size_t errlen);
#endif

/* Cores of this node (hwloc), at least 1. */
int plb__host_cores(void);

#endif
