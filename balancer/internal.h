/* Internals shared by the balancer core (balancer.c: create, next, done,
 * lost; pool.c: the free ranges; busy.c: the busy PUs; redo.c: late
 * blocks run again; place.c: placement on resident input) and the
 * policies (the files in policies/): the balancer's state, the policy
 * vtable, and the helpers a policy uses to ask for a solve or look at a
 * PU. Not for apps. */
#ifndef PLB_BALANCER_INTERNAL_H
#define PLB_BALANCER_INTERNAL_H

#include <stdint.h>

#include "balancer/balancer.h"
#include "balancer/ranges.h"
#include "balancer/base/assert.h"
#include "balancer/model.h"
#include "balancer/solver.h"

struct plb__grant_rec {
	uint64_t id, off, units;
	enum plb__grant_kind kind;
	double t_grant;         /* when it was granted */
	double pred_s;          /* predicted E(units) when granted, 0 if none */
	double pred_end;        /* predicted finish: PU free time + pred_s */
	double in_end;          /* when its bytes are across the master's link,
				 * at the earliest (plb__balancer_link); 0: unknown */
	int step;               /* policy's step/round of the grant */
	int flags;              /* REC_VOID, REC_PIECE, REC_PROBE */
};

#define REC_VOID  1     /* lost its race: its done is stale, its range not its own */
#define REC_PIECE 2     /* a piece of the late block being run again (b->rx) */
#define REC_PROBE 4     /* a block run while its node's probed PU idles (couple.c) */

/* A late block run again in pieces by idle PUs (policy->redo_late): the
 * pieces cover [off, next) of its range [off, end) in order. Until one
 * of them ends the original may still win; the first piece to end voids
 * the original and the rest of its range goes back to the pool. */
struct plb__redo {
	int active;
	int pu;                 /* the late block's PU and grant */
	uint64_t id;
	uint64_t off, end, next;
	double tried;           /* when a start was last looked for (NAN: never) */
	/* the pieces' planned end (redo_end) and the state it is for (the
	 * balancer's epoch, the instant; NAN: none, as after a decline) */
	double end_t, end_now;
	uint64_t end_epoch;
};

/* Round trips a PU's fixed cost outside it is read from (link_fixed). */
#define PLB__LINK_WIN PLB__TS_MAX

struct plb__pu {
	struct plb__grant_rec out[PLB__MAX_GRANTS];
	int nout;
	int lost;
	uint64_t max_block;     /* largest block done */
	double last_exec_s;     /* exec+xfer of its last block */
	double rate;            /* units/s at max_block, by its model (redo_late) */
	/* its newest blocks' sizes and round trips (plb__block_done.link_s) */
	double lk_u[PLB__LINK_WIN], lk_t[PLB__LINK_WIN];
	int lk_n, lk_head;
	double lk_slope;        /* seconds a unit of its round trip, as last found */
	int local;              /* its bytes do not cross the master's link
				 * (plb__balancer_local) */
	/* its node's PUs slowing each other (couple.c) */
	int node;               /* plb__balancer_node; -1: none */
	int withheld;           /* held idle while its node runs without it */
	int left_out;           /* out of the run: it cost its node more than it added */
	int probed;             /* its node has run without it, or never will */
	double last_u, last_t;  /* its newest block done: units, seconds */
	double with_u, with_t;  /* that block when its node's probe began */
	double probe_t;         /* its block of with_u units run while the probed
				 * PU idled: seconds; 0 none yet, -1 out */
};

/* A policy: one file each, one instance, designated initialisers. */
struct plb__policy {
	const char *name;
	const char *doc;
	size_t state_size;      /* zeroed and owned by the core: b->ps */
	int needs_model;        /* core fits E_p from every sample */
	int split_blocks;       /* a PU may run its share of a solve as several
				 * blocks: solves see plb__model_eval_split */
	int redo_late;          /* idle PUs run a late block again once the
				 * pool is empty (struct plb__redo) */
	int couple_probe;       /* the core runs a node without a small PU to see
				 * whether it costs its node more than it adds (couple.c) */
	int (*init)(struct plb__balancer *b);
	void (*fini)(struct plb__balancer *b);
	/* Decide PU pu's next block: return PLB__NEXT_GRANT with *units (> 0) and
	 * *kind and *step set, or PLB__NEXT_WAIT. The core clips *units to the
	 * pool, allocates the range and records the grant. Only called while
	 * the pool holds units. */
	int (*next)(struct plb__balancer *b, int pu, double now, double *units,
		    enum plb__grant_kind *kind, int *step);
	/* A block finished (the model, if any, already holds the sample). */
	void (*done)(struct plb__balancer *b, int pu,
		     const struct plb__grant_rec *g, const struct plb__block_done *s);
	/* A PU was lost (its grants are already back in the pool). */
	void (*lost)(struct plb__balancer *b, int pu);
	/* PU pu's model was started from an earlier run's samples
	 * (plb__balancer_model_set): it needs no training. NULL: it trains. */
	void (*warm)(struct plb__balancer *b, int pu);
};

/* The PUs with outstanding grants at one instant, when each is free, and
 * the two latest of those (plb__others_free_in, plb__busy_list). */
struct plb__busiest {
	double now;
	uint64_t epoch;
	double first, second;   /* seconds from now */
	int who;                /* the PU of first, -1: none busy */
	int nbusy;              /* busy PUs not lost, in index order: */
	int *idx;
	double *free_in;        /* plb__busy_for of each */
	double *rate;           /* plb__pu.rate of each, 0 without a model */
	double rsum;            /* their sum */
	/* plb__busy_dry's bracket, for this instant and epoch and the pool
	 * of pool_at: a PU with nothing out asking at t <= dry_lo is told the
	 * busy PUs could not run the pool dry by then, at t >= dry_hi that
	 * they could */
	double dry_lo, dry_hi;
	uint64_t pool_at;
};

/* What plb__busy_list reads of a PU, kept beside the others' (plb__busy_sync
 * in busy.c, at every change to its grants, model or rate): a scan
 * of the PUs' own states, each a few cache lines apart, was a quarter of
 * a 4096-PU simulation's perf samples at the end of the job, where it
 * runs at every event and the master's time delays every PU. redo_end
 * reads them too. */
struct plb__bsum {
	double lo, hi;          /* its outstanding grants' least and greatest pred_end */
	double rate;            /* plb__pu.rate, 0 without a ready model */
	double trip_rate;       /* the same with its blocks' round trip per unit
				 * (lk_slope) counted: what a piece of a late
				 * block runs at, its output's way back included */
	double t_minb;          /* its model's time for min_block (redo_end) */
	uint64_t declined;      /* the late block whose pieces it is too slow for */
	int busy;               /* grants out and not lost */
	int lost;
};

struct plb__balancer {
	struct plb__params p;
	const struct plb__policy *pol;
	void *ps;                       /* policy state */
	int n;                          /* PUs */
	uint64_t W;
	struct plb__pu *pu;
	struct plb__model *model;       /* n models when pol->needs_model */
	struct plb__range *free;        /* free ranges, sorted by offset */
	int nfree, capfree;
	uint64_t pool;                  /* units in free ranges */
	uint64_t granted;               /* units granted and not returned */
	uint64_t done_units;
	uint64_t next_id;
	int nout_total;                 /* outstanding grants, all PUs */
	uint64_t epoch;                 /* counts changes to the outstanding grants */
	struct plb__busiest busiest;    /* plb__others_free_in's scan, kept per epoch and instant */
	struct plb__bsum *bs;           /* n: what that scan reads */
	int alive;                      /* PUs not lost */
	struct plb__redo rx;
	struct plb__balancer_stats st;
	/* scratch for solves */
	struct plb__efun *ef;
	int *ef_pu;
	double *x;
	/* placement (place.c): each PU's group (-1: none) and the ranges each
	 * group holds; NULL until the first plb__balancer_group */
	int *grp;
	struct plb__ranges *held;
	/* nodes (couple.c): each node's PU being probed (-1: none) and since
	 * when it idles (NAN: it still runs a block); NULL until the first
	 * plb__balancer_node */
	int nnodes;
	int *probing;
	double *t_idle;
	double probe_spent;             /* units the probes' idle PUs were predicted to lose */
	/* the master's link (plb__balancer_link): units a second its blocks'
	 * bytes cross at (0: not limited), and when it will have carried
	 * every block granted so far */
	double link_rate, link_free;
};

/* When grant g may end at the earliest: its predicted end, or its bytes'
 * crossing of the master's link and its predicted time. */
static inline double plb__due(const struct plb__grant_rec *g)
{
	return g->in_end + g->pred_s > g->pred_end ? g->in_end + g->pred_s : g->pred_end;
}

/* The pool (pool.c). Take up to `want` units of free range fi from `at`
 * on (in it). A leftover after them smaller than min_block is not left
 * behind: it goes with this grant. Units left before `at` stay free (the
 * caller made room in b->free for the split: plb__pool_room). */
struct plb__range plb__pool_cut(struct plb__balancer *b, int fi, uint64_t at, uint64_t want);
/* Room for one more free range. 0 or PLB_ENOMEM. */
PLB_WUR int plb__pool_room(struct plb__balancer *b);
/* Return a range to the pool, keeping it sorted and merged. 0 or
 * PLB_ENOMEM. */
PLB_WUR int plb__pool_put(struct plb__balancer *b, uint64_t off, uint64_t len);

/* The busy PUs (busy.c). PU pu's entry in b->bs, after a change to its
 * grants, model or rate. */
void plb__busy_sync(struct plb__balancer *b, int pu);
/* Seconds until PU pu is predicted to be free: 0 if idle; a block past its
 * predicted end is taken to end as late again as it already is. */
double plb__busy_for(const struct plb__balancer *b, int pu, double now);

/* Split S units equal-time over the PUs that are alive and have a model,
 * each becoming free after plb__busy_for; x[pu] receives the units (0 for
 * PUs left out). *T (may be NULL) gets the common finish time from now.
 * Counts a solve and its CPU time. Returns 0 or a negative PLB_E code. */
PLB_WUR int plb__solve(struct plb__balancer *b, double S, double now,
		       double *x, double *T);

/* Seconds until the last PU other than pu is predicted free (plb__busy_for;
 * 0 if none is busy). One scan of every PU per instant and change of the
 * outstanding grants, however many PUs ask: every waiting PU asks at every
 * event, and a scan each was a third of a 4096-PU master's time. */
double plb__others_free_in(struct plb__balancer *b, int pu, double now);
/* The PUs not lost that hold an outstanding grant now, in index order,
 * with when each is free: the same scan, so a question about the busy PUs
 * costs their number, not the cluster's, once many PUs wait at the end. */
const struct plb__busiest *plb__busy_list(struct plb__balancer *b, double now);
/* Units the busy PUs other than pu whose models are ready run between
 * when each is free and `t` seconds from now, each at its rate at its
 * largest block (plb__pu.rate): the question of whether the busy PUs
 * could run the pool dry before t. A scan of plb__busy_list's arrays,
 * which hold each busy PU's rate beside its free time: reading them from
 * every PU's state and model instead (two cache misses a PU) was 16% of
 * a 4096-PU simulation's perf samples, at the end of the job, where the
 * master's time delays every PU. */
double plb__busy_room(struct plb__balancer *b, int pu, double now, double t);
/* plb__busy_room(b, pu, now, t) < pool: the busy PUs could not run the
 * pool dry by t. For a PU with nothing out (those that wait at the end
 * of a job, each asking at every event) from a bracket kept per instant,
 * epoch and pool, narrowed by each scan: the room is a sum, in a fixed
 * order, of terms that do not fall as t grows, and rounding keeps that
 * (IEEE arithmetic is monotone), so a t below one whose room fell short
 * falls short too, and the answers are the scan's, to the bit. */
int plb__busy_dry(struct plb__balancer *b, int pu, double now, double t);

/* True if some PU other than `except` holds an outstanding grant. */
int plb__others_busy(const struct plb__balancer *b, int except);

/* A late block run again (redo.c). PU pu, with nothing out, asks once the
 * pool is empty: a piece of the late block, or PLB__NEXT_WAIT. */
int plb__redo_next(struct plb__balancer *b, int pu, double now, struct plb__grant *g);
/* The original ended first: the pieces are void. */
void plb__redo_drop(struct plb__balancer *b);
/* The original is lost: the pieces become ordinary grants and the rest of
 * its range goes back to the pool. 0 or PLB_ENOMEM. */
PLB_WUR int plb__redo_release(struct plb__balancer *b);
/* A piece ended first: the original is void, then plb__redo_release. */
PLB_WUR int plb__redo_won(struct plb__balancer *b);
/* A PU's rate (units per second) at its largest block so far, as its
 * model has it: kept at each sample, for the late blocks' sums. */
void plb__note_rate(struct plb__balancer *b, int pu);

/* PUs of a node that slow each other (couple.c). What plb__balancer_next
 * answers a PU held idle or left out (PLB__NEXT_WAIT, PLB__NEXT_DONE), or
 * 0 to go on. */
int plb__couple_gate(struct plb__balancer *b, int pu, double now);
/* The units PU pu's next block gets, where the policy asked for `units`:
 * the size of its block before its node's probe, while the probed PU
 * idles and it has not run one (*probe then 1). */
double plb__couple_units(struct plb__balancer *b, int pu, double units, int *probe);
/* A finished block of PU pu (its model has the sample): a probe starts,
 * gathers or ends. 0 or a negative PLB_E code. */
PLB_WUR int plb__couple_done(struct plb__balancer *b, int pu, const struct plb__grant_rec *g,
			     const struct plb__block_done *s);
/* PU pu was lost: a probe of its node that needs it ends. */
void plb__couple_lost(struct plb__balancer *b, int pu);
void plb__couple_free(struct plb__balancer *b);

/* Units of a PU's first training block: initial_block, but at most
 * W/(train_div * PUs) so a slow PU cannot start with a large part of the run,
 * and at least min_block. */
double plb__first_block(const struct plb__balancer *b);

/* Where PU pu's grant of *want units goes when its group holds free units
 * (place.c): sets *at and may shorten *want; returns the index of the free
 * range holding *at, or -1 (no preference: the lowest free units). */
int plb__place(const struct plb__balancer *b, int pu, uint64_t *want, uint64_t *at);
void plb__place_free(struct plb__balancer *b);

/* The policies, one file each in policies/ defining plb__policy_NAME;
 * adding one is its file and a word here (the order is plbsim's). */
#define PLB__POLICIES(X) X(hac) X(hec) X(hdss) X(greedy) X(static)

#define X(name) extern const struct plb__policy plb__policy_##name;
PLB__POLICIES(X)
#undef X

#endif
