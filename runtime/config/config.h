/* The scenario / config file (INI, read with libinih): one file describes a
 * cluster for plbsim and, with real devices in the node sections, for the
 * runtime. Sections: [run], [balancer], [network], [node NAME] (one per
 * node), [model NAME]. Every key is checked against one table; an unknown
 * section or key, a bad value, a model that is never defined or never used
 * is an error naming file:line and the key. */
#ifndef PLB_CONFIG_H
#define PLB_CONFIG_H

#include <stdint.h>

#include "balancer/params.h"
#include "runtime/config/devmodel.h"

struct plb__node {
	char *name;
	int line;               /* line of the [node NAME] header */
	char *host;             /* "host =", NULL if absent ("*" = any) */
	int host_line;
	int cpu;                /* "cpu =" (runtime): 0 absent, -1 all, N cores */
	int cpu_line;
	int ngpu;               /* "gpu =" (runtime): CUDA device indices */
	int *gpu;
	int gpu_line;
	int nemu;
	int *emu;               /* indices into plb__config.models, in file order */
	int emu_line;
};

/* One emulated PU, in scenario order (nodes in file order, emu list order).
 * Real devices (cpu, gpu) are not in this list: the runtime adds them. */
struct plb__pu {
	int node, model;
	char name[64];          /* "A.k5200#1": node, model, index within node */
};

struct plb__config {
	char *path;
	/* [run] */
	double units;           /* W (required) */
	char policy[32];        /* default "plb-hac" */
	uint64_t seed;          /* default 1 */
	int pipeline;           /* grants a PU may hold, 1 or 2; default 1 */
	/* [balancer] */
	struct plb_params params;
	/* [network] */
	double latency_us;      /* default 50 */
	double solve_us;        /* < 0 (default): charge the measured solve time */
	double fail_detect_ms;  /* default 1000 */
	int nnodes;
	struct plb__node *nodes;
	int nmodels;
	struct plb__devmodel *models;
	int npu;
	struct plb__pu *pus;
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

#endif
