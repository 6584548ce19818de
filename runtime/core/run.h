/* The master's state in one run (plb_run), and the files that make up the
 * master, each one concern:
 *   master.c   plb_run: check, open, loop (receive a batch, answer it,
 *              wait), close; the balancer is asked through the driver
 *              (balancer/driver.h), as plbsim asks it
 *   block.c    a block's way: its DISPATCH out, its DONE (or LOST) back,
 *              a PU taken out, the block in the trace
 *   output.c   the job's memory: outputs merged, placed straight in, or
 *              borrowed in place, and the accumulators
 *   peers.c    the workers: START and END, their silence watched, a rank
 *              taken out
 * and call each other one way only: master.c the rest, peers.c block.c
 * and output.c, block.c output.c.
 *   result.c   the report, the progress line, the result getters
 * Times given to the balancer are seconds since the run's start (t0). */
#ifndef PLB_RUN_H
#define PLB_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "balancer/driver.h"
#include "runtime/config/coverage.h"
#include "runtime/core/rt.h"

/* A grant out on a PU. */
struct plb__slot {
	uint64_t id, offset, units;
	int used, borrowed;
	enum plb__grant_kind kind;
	double predicted_s;
	double sent;            /* plb__now() when dispatch began packing it */
	double turn;            /* from its PU's DONE that it follows to sent; 0: none */
	double bytes;           /* its DISPATCH's, header and all */
};

/* A PU as the master sees it in a run (whether it is lost, parked or done
 * is the driver's: run.d.pu). */
struct plb__mpu {
	int peer;               /* index in p->peer */
	int local;              /* the worker's PU index */
	struct plb__slot s[PLB__MAX_GRANTS];
	double busy, units, best_rate, last_finish;
	int long_block;         /* best_rate is from blocks of RATE_MIN_S or more */
	long blocks;
	long overran;           /* blocks it ran past its model (emulated) */
	double heard;           /* when its newest DONE came, until a grant follows (NAN: none) */
};

/* A block whose units are on a PU, in place or arriving (output.c). */
struct plb__live { uint64_t id, offset, units; };
/* A DONE whose output is to be copied into the job's (output.c). */
struct plb__merge { void *msg; size_t at, len; uint64_t off; };

/* The job's memory in a run (output.c). */
struct plb__outs {
	int borrow;             /* blocks are borrowed (in place) in this run */
	int map_out;            /* the output's pages may be fresh: map each block's first */
	size_t accpad;          /* a DONE's accumulator, padded: its output follows */
	struct plb__merge *merge;       /* this batch's DONEs to copy out (BATCH) */
	int nmerge;
	struct plb__live *live;         /* borrowed blocks on a PU */
	size_t nlive, caplive;
	struct plb__live *placing;      /* blocks whose output is arriving straight
					 * into the job's (the place hook said where) */
	size_t nplacing, capplacing;
	long placed, apart;     /* outputs that travelled apart; of them, placed */
	struct plb__merge *late;        /* copied blocks over borrowed units, or over
					 * units a placed output may still be writing:
					 * merged at the end */
	size_t nlate, caplate;
	struct {                /* the accepted blocks' accumulators */
		uint64_t *off;
		char *buf;
		size_t n, cap;
	} acc;
};

/* The workers in a run (peers.c). */
struct plb__watch {
	double sent;            /* just before START went: a worker's run clock starts after it */
	double (*way)[2];       /* per worker: START's way to it is within [way[0], way[1]],
				 * from its blocks' times (block.c) */
	double said;            /* the last ALIVE round to the workers */
	double watched;         /* the last look at the workers' silence */
	int ranks_lost;         /* worker ranks taken out for silence */
	char lost_note[256];
};

struct plb__run {
	struct plb *p;
	const struct plb_job *job;
	const struct plb_kernel *k;
	plb__balancer_t *b;
	struct plb__driver d;
	struct plb__mpu *pu;
	int npu, pipeline;
	uint64_t W;
	int gen;                /* this run's number, echoed in every DONE */
	double t0, now, end;
	int finished;
	double cpu0, cpu;       /* the master thread's CPU seconds at t0; in the run */
	struct plb__coverage cov;
	struct plb__outs out;
	struct plb__watch watch;
	int tty;                /* a progress line (stderr is a terminal, or --progress) */
	double shown;           /* when it was last drawn (0: never) */
	int warm;               /* PUs started from kept models */
	int res, reuse;         /* input kept on the nodes; their stores kept (resident.c) */
	double unkept, resident;        /* bytes over the nodes' budgets; held at the end */
	double bytes_out, bytes_in;
	/* what the link bound counts of them: the STARTs and the blocks kept
	 * (each unit's bytes once), not a late block's run again, the
	 * output that lost its race nor units granted again: those crossed
	 * twice by the run's choice */
	double start_out, kept_out, kept_in;
};

#define PLB__BATCH 512          /* messages handled between two answers */

/* block.c */
/* The driver's grant hook: grant g's DISPATCH to PU i. */
int plb__run_dispatch(void *r, int i, const struct plb__grant *g);
/* One message from rank src (it is freed by the caller unless kept for a
 * merge: plb__outs.nmerge or nlate grew). */
PLB_WUR int plb__run_message(struct plb__run *r, void *msg, int src);
/* PU i is out of the run: its blocks go back to the pool. */
PLB_WUR int plb__run_lose(struct plb__run *r, int i);
/* A driver call's error as the run's (the balancer's, with its message). */
PLB_WUR int plb__run_drove(struct plb__run *r, int rc);

/* output.c */
/* The transport's place hook (ctx: the run). */
void *plb__out_place(void *ctx, int src, const struct plb__hdr *h);
/* Is any block of l[0..n) over any of [off, off + units)? */
int plb__out_overlaps(const struct plb__live *l, size_t n, uint64_t off, uint64_t units);
/* Block id came back (done, failed or lost with its PU). */
void plb__out_drop(struct plb__live *l, size_t *n, uint64_t id);
/* A DONE accepted: its output (want bytes; placed: already in) is merged
 * with the batch, or at the end if another copy may still write its units. */
PLB_WUR int plb__out_accept(struct plb__run *r, void *msg, const struct plb__slot *sl, size_t want,
			    int placed);
/* Grant g is borrowed (in place): its DISPATCH's payload, and the block
 * recorded as on a PU. 0 or PLB_ENOMEM. */
PLB_WUR int plb__out_borrow(struct plb__run *r, const struct plb__grant *g, void *payload);
/* Copies this batch's outputs in (merge_outputs); the run's end's: the
 * late ones, after every other. */
PLB_WUR int plb__out_merge(struct plb__run *r);
PLB_WUR int plb__out_merge_late(struct plb__run *r);
/* job.acc from the blocks' accumulators, in offset order. */
PLB_WUR int plb__out_acc_finish(struct plb__run *r);
void plb__out_fini(struct plb__outs *o);

/* peers.c */
PLB_WUR int plb__run_start_workers(struct plb__run *r, const char *kernel);
/* END to every worker; ack: each answers ENDED once its PUs left the run. */
PLB_WUR int plb__run_end_workers(struct plb *p, int ack);
/* Each live worker said something within its limit, or it is taken out. */
PLB_WUR int plb__run_watch(struct plb__run *r);
/* A run with borrowed blocks ends: END, then wait until every worker has
 * left the run; then the late blocks are merged (plb__out_merge_late). */
int plb__run_end_borrowed(struct plb__run *r);

/* result.c */
PLB_WUR int plb__run_report(struct plb__run *r, double wall);
/* The progress line; end: the run is over, the line is cleared. */
void plb__run_progress(struct plb__run *r, int end);

#endif
