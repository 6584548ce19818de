/* A trace of one or more runs in the Chrome trace-event format (JSON), which
 * Perfetto (ui.perfetto.dev) and chrome://tracing open and plb-plot draws;
 * plbsim and the runtime write it alike (--trace FILE). docs/TRACE.md has
 * the layout:
 *   - process 0 is the master: a slice per run, an instant per solve, the
 *     counter "units done";
 *   - process 1 + k is node k; in it PU i is thread 1 + 2i, named as in
 *     the report, with a slice per block named by its kind (training,
 *     regular, gap, redo), and, where a block's transfer stage is known,
 *     thread 2 + 2i ("NAME transfer") with a slice per transfer;
 *   - instants on a PU's thread: a speed change its model detected, the
 *     PU lost; at each run's end "model": its samples and its fitted curve.
 * Events are written as they come (nothing is kept but a few numbers per
 * PU). Times are seconds on the caller's clock; `origin` (given at open)
 * is time 0 of the file. Not thread-safe: the master's thread writes. */
#ifndef PLB_TRACE_H
#define PLB_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "plb_errors.h"

struct plb__trace;
struct plb__balancer;

/* One finished block, for plb__trace_block. */
struct plb__trace_block {
	int pu;
	uint64_t id, offset, units;
	const char *kind;               /* "training", "regular", "gap", "redo" */
	double predicted_s;             /* what its PU's model planned (0: nothing) */
	double xfer_start, xfer_end;    /* its transfer stage (equal: none known) */
	double start, end;              /* its compute stage */
	int dropped;                    /* its result was not used (a late block
					 * whose other copy ended first) */
};

/* Opens path for writing (truncated). Returns 0, or PLB_EIO with why in err. */
PLB_WUR int plb__trace_open(struct plb__trace **t, const char *path, double origin,
			    char *err, size_t errlen);
/* Names process node (a node of the config, from 0) and PU pu's thread in
 * it; call before the PU's first event. Returns 0 or PLB_ENOMEM. */
void plb__trace_node(struct plb__trace *t, int node, const char *name);
PLB_WUR int plb__trace_pu(struct plb__trace *t, int pu, int node, const char *name);
/* A run, [start, end], on the master. */
void plb__trace_run(struct plb__trace *t, double start, double end, const char *name,
		    const char *policy, uint64_t units);
void plb__trace_block(struct plb__trace *t, const struct plb__trace_block *b);
/* An instant on PU pu's thread (-1: the master's), with an optional note. */
void plb__trace_instant(struct plb__trace *t, int pu, double at, const char *name,
			const char *note);
/* After a balancer call at time `at` about PU pu (-1: none): the counter
 * of units done, an instant per solve and per speed change since the last
 * call. Call plb__trace_begin with the run's balancer first. */
void plb__trace_begin(struct plb__trace *t);
void plb__trace_after(struct plb__trace *t, const struct plb__balancer *b, int pu, double at);
/* At a run's end: each PU's model samples and fitted curve. */
void plb__trace_models(struct plb__trace *t, const struct plb__balancer *b, int npu, double at);
/* Ends the JSON and closes the file; t may be NULL. Returns 0, or PLB_EIO
 * (a write failed: a full disk) with why in err. */
PLB_WUR int plb__trace_close(struct plb__trace *t, char *err, size_t errlen);

#endif
