/* The one loop that drives the balancer, shared by the runtime's master
 * and the simulator so that both ask it the same questions in the same
 * order (and that drives a node's pipeline tasks the same way, through
 * struct plb__source): a PU is asked for blocks up to the pipeline depth; a PU told to
 * wait is parked and asked again after every batch of events (unless the
 * balancer says each would wait) and at its wake time; a PU told the job
 * is done is asked no more; a lost PU is asked no more.
 *
 * The caller feeds it events (a block back, a PU lost) as they come, then
 * calls plb__driver_answer once per batch: the PUs that reported, in the
 * order they did, then every parked PU in PU order. The master answers a
 * batch of up to 512 messages at a time, the simulator one event. Grants
 * leave through the caller's hook. Not thread-safe; no clock: the caller
 * passes the time (the balancer's clock). */
#ifndef PLB_BALANCER_DRIVER_H
#define PLB_BALANCER_DRIVER_H

#include <stdint.h>

#include "balancer/balancer.h"

struct plb__driver_pu {
	int nout;               /* grants it holds */
	unsigned char lost;     /* out of the run: asked no more */
	unsigned char finished; /* told the job is done */
	unsigned char touched;  /* reported in this batch */
};

/* One balancer call the driver made, for tests (plb__driver.log). */
enum plb__driver_op { PLB__DRIVE_NEXT, PLB__DRIVE_DONE, PLB__DRIVE_LOST, PLB__DRIVE_IDLE };
struct plb__driver_call {
	enum plb__driver_op op;
	int pu;                 /* -1 for PLB__DRIVE_IDLE */
	double now;             /* NEXT, LOST, IDLE: the time given; DONE: the sample's finish */
	int rc;                 /* what the balancer answered */
	struct plb__grant g;     /* NEXT with PLB__NEXT_GRANT: the grant */
	struct plb__block_done s;    /* DONE: the sample */
};

/* What the driver asks: the balancer's blocks, or a node's pipeline tasks
 * (balancer/tasks.h), with the balancer's answers (enum plb__next) and
 * meanings. Each name is what d->failed says when that call failed. */
struct plb__source {
	int (*next)(void *s, int pu, double now, struct plb__grant *g);
	int (*done)(void *s, int pu, const struct plb__block_done *d);
	int (*lost)(void *s, int pu, double now);
	int (*idle_waits)(void *s, double now);
	const char *next_name, *done_name, *lost_name;
};
extern const struct plb__source plb__balancer_source;  /* s: a plb__balancer_t */
extern const struct plb__source plb__tasks_source;     /* s: a plb__tasks_t */

struct plb__driver {
	const struct plb__source *src;
	void *s;                /* what src asks */
	int npu, pipeline;
	struct plb__driver_pu *pu;
	uint64_t *parked;       /* a bit per PU told to wait */
	int *touched, ntouched; /* the PUs that reported in this batch, in order */
	int busy;               /* PUs alive that hold a grant or wait for one */
	/* The caller's: send grant g to PU pu (0, or a negative PLB_E code
	 * with the caller's message set); and, if not NULL, PU pu was told to
	 * wait. */
	int (*grant)(void *ctx, int pu, const struct plb__grant *g);
	void (*wait)(void *ctx, int pu);
	void *ctx;
	/* Tests only, if not NULL: every balancer call, after it returned. */
	void (*log)(void *log_ctx, const struct plb__driver_call *c);
	void *log_ctx;
	/* The balancer call whose error a function returned ("plb__balancer_next"
	 * ...); NULL when the error was the grant hook's. */
	const char *failed;
};

/* d drives b (npu PUs, at most pipeline grants each); hooks as above.
 * 0 or PLB_ENOMEM. The caller owns b; plb__driver_fini frees d's own. */
PLB_WUR int plb__driver_init(struct plb__driver *d, plb__balancer_t *b, int npu, int pipeline,
			     int (*grant)(void *, int, const struct plb__grant *),
			     void (*wait)(void *, int), void *ctx);
/* The same for any source: src asking s. */
PLB_WUR int plb__driver_init_source(struct plb__driver *d, const struct plb__source *src, void *s,
				    int npu, int pipeline,
				    int (*grant)(void *, int, const struct plb__grant *),
				    void (*wait)(void *, int), void *ctx);
void plb__driver_fini(struct plb__driver *d);

/* Ask PU pu for blocks up to the pipeline depth (it is unparked first). 0,
 * or the first error (a balancer's, with d->failed set, or the hook's). */
PLB_WUR int plb__driver_poll(struct plb__driver *d, int pu, double now);

/* A grant came back from PU pu (done, failed or stale): one fewer out, and
 * pu is asked again at the next answer. */
void plb__driver_back(struct plb__driver *d, int pu);
/* A grant came back done: plb__driver_back, then plb__balancer_done's
 * answer (0, PLB_ESTALE: drop its results, or an error). */
PLB_WUR int plb__driver_done(struct plb__driver *d, int pu, const struct plb__block_done *s);
/* PU pu is out of the run (failed, or its rank silent): its grants go back
 * to the pool and it is asked no more. 0, or the balancer's error. A PU
 * already lost is left as it is. */
PLB_WUR int plb__driver_lost(struct plb__driver *d, int pu, double now);

/* The end of a batch of events: ask the PUs that reported, in the order
 * they did, then every parked PU (plb__driver_parked). */
PLB_WUR int plb__driver_answer(struct plb__driver *d, double now);
/* Ask every parked PU again, in PU order, unless the balancer says each
 * would wait (plb__balancer_idle_waits). Also at plb__balancer_wake. */
PLB_WUR int plb__driver_parked(struct plb__driver *d, double now);

/* Is PU pu parked (told to wait, not asked since)? */
int plb__driver_is_parked(const struct plb__driver *d, int pu);

#endif
