/* The worker daemon (every rank but 0): one thread per PU, and the calling
 * thread as the communication thread that makes every transport call.
 * DISPATCH messages go to their PU's inbox (each PU woken once per batch
 * of messages read); PU threads put DONE messages (output packed behind
 * the header) in one outbox and wake the communication thread, which
 * sends them. A PU out of work yields its core a few times before it
 * sleeps, so a next block already on its way costs no wake-up. When
 * nothing moves, the communication thread sleeps on the outbox's
 * condition variable with a growing timeout, so an idle worker costs
 * almost no CPU but still answers a PU at once. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "balancer/base/log.h"
#include "balancer/base/vec.h"
#include "runtime/core/pipe.h"
#include "runtime/core/resident.h"
#include "runtime/core/rt.h"
#include "runtime/device/device.h"
#include "runtime/transport/fifo.h"

enum job_kind { JOB_BEGIN, JOB_BLOCK, JOB_END };
enum out_kind { OUT_MSG, OUT_DROPPED, OUT_ENDED, OUT_LOST };
/* a pipeline's (pipe.h): a task to a PU (msg: a struct plb__task_job); a
 * PU's kernels ready; a message a slot's thread made, to send (an
 * instance's IDONE); a slot's thread's failure (msg: a struct pipe_err);
 * a slot's last task of an ended run is back */
enum { JOB_TASK = 16, OUT_BEGUN, OUT_SEND, OUT_PIPE_ERR, OUT_NUDGE };
/* a function to run on a PU's thread with its device (on_pu;
 * msg: a struct fn_job) */
enum { JOB_FN = 32 };

struct fn_job {
	void (*fn)(struct plb__dev *d, void *arg);
	void *arg;
};

struct pipe_err {
	int rc, slot;
	char why[256];
};

/* What the queues carry: a job (enum job_kind) to a PU's inbox from the
 * communication thread, a result (enum out_kind) to the outbox from a PU. */
struct item {
	struct plb__fifo_node link;
	int kind;
	void *msg;              /* JOB_BLOCK: the DISPATCH; OUT_MSG, OUT_LOST: to send */
	double arrive;          /* a job: when its message arrived (plb__now) */
};

struct wpu {
	struct plb__worker *w;
	int idx;
	struct plb__dev dev;
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct plb__fifo inbox;
	int stop;
	int exited;             /* its thread is past its last touch of the worker */
	int wake;               /* communication thread's: a block was queued, not woken yet */
	/* the PU thread's own */
	unsigned run_seen;
	const struct plb_kernel_class *kc;
	void *kstate;
	int kinit, kerr, dead, start_err;
	char err[256];
	/* a pipeline run's: each op's kernel class, state, init error, and
	 * (emu) its time from the config's [op] section (0: the model's) */
	const struct plb_kernel_class *okc[PLB__TASKS_MAX_OPS];
	void *ostate[PLB__TASKS_MAX_OPS];
	int oerr[PLB__TASKS_MAX_OPS];
	unsigned char oinit[PLB__TASKS_MAX_OPS];
	double op_s[PLB__TASKS_MAX_OPS];
};

/* A pipeline's task slot: a PU, or member `member` of a CPU PU's team. */
struct wslot {
	int pu, member;
};

struct plb__worker {
	struct plb *p;
	int npu;
	struct wpu *pu;
	void **m2_early;        /* a 2-D product's pivots that came before its M2START */
	size_t m2_nearly, m2_capearly;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct plb__fifo outbox;
	/* the current run, set by START (read by PU threads after their first
	 * job of the run, which the inbox mutex orders after these writes) */
	unsigned run;
	const struct plb_kernel *k;
	void *start_msg;
	void *shared_msg;       /* the START whose shared data the run uses (PLB__F_SHARED_KEPT:
				 * an earlier one) */
	const void *shared;
	size_t shared_bytes, in_unit, out_unit;
	int out_mapped;         /* PLB__F_OUT_MAPPED: borrowed outputs need no mapping */
	const void *acc_identity;       /* acc_bytes: each block's accumulator's start */
	size_t acc_bytes, accpad;       /* accpad: acc_bytes rounded up to 16 */
	double t0;
	uint64_t seed;
	int pu0;
	int ending;             /* END acks still to come */
	atomic_int blocks_held; /* blocks queued on or run by PUs, not yet posted back */
	void *prev[2];          /* the previous run's START (and shared data), kept
				 * until every PU has ended it (on_start) */
	int ended_ack;          /* the END asked for ENDED once they are in */
	/* communication thread's counts */
	long outstanding;
	int idle;
	double idle_since_wall, idle_since_cpu, idle_wall, idle_cpu;
	double last_wall, last_cpu;     /* the stretch's last sleep so far */
	struct plb__store store;        /* input kept between runs (resident.c) */
	int store_ok;
	int in_run;             /* between a START and its END */
	double heard, said;     /* the last message from, and to, the master */
	double checked;         /* the last look at its silence */
	unsigned long pokes;    /* messages the transport said came (under mu) */
	int waiting;            /* the communication thread sleeps: a message wakes it
				 * (under mu) */
	/* a pipeline run, PSTART to END (pipe.h): the communication thread's,
	 * but that pipe and pipe_ending are read and written under pipe_mu
	 * (a slot's thread asks pipe when its task ends) */
	struct plb__wpipe *pipe;
	void *pstart;           /* its PSTART (the shared data, unless borrowed) */
	int pipe_run;           /* the master's run number */
	int begun_left;         /* PUs whose kernels are not ready yet */
	int pipe_ending;        /* END came: the pipeline closes once no task is out */
	atomic_long tasks_out;  /* tasks on slots */
	/* the node's scheduler (pipe), asked by the communication thread and
	 * by each slot's thread when its task ends (finish_task) */
	pthread_mutex_t pipe_mu;
	int pipe_news;          /* an instance came: the slots are to be asked */
	int nops;
	struct plb__wpipe_op ops[PLB__TASKS_MAX_OPS];
	const struct plb_kernel *opk[PLB__TASKS_MAX_OPS];
	struct wslot *slot;
	int nslot;
};

static void pipe_close(struct plb__worker *w);

/* Queue an item on q, guarded by mu, and (wake) wake cv's waiter. */
static int enqueue_wake(pthread_mutex_t *mu, pthread_cond_t *cv, struct plb__fifo *q, int kind,
			void *msg, double arrive, int wake)
{
	struct item *it = malloc(sizeof *it);
	if (!it)
		return PLB_ENOMEM;
	it->kind = kind;
	it->msg = msg;
	it->arrive = arrive;
	pthread_mutex_lock(mu);
	plb__fifo_push(q, &it->link);
	if (wake)
		pthread_cond_signal(cv);
	pthread_mutex_unlock(mu);
	return 0;
}

/* Queue an item on q, guarded by mu, and wake cv's waiter. */
static int enqueue(pthread_mutex_t *mu, pthread_cond_t *cv, struct plb__fifo *q, int kind,
		   void *msg, double arrive)
{
	return enqueue_wake(mu, cv, q, kind, msg, arrive, 1);
}

/* Frees a message a PU is done with, but not a DISPATCH the node's store
 * keeps. */
static void msg_done(void *msg)
{
	if (msg && plb__msg_hdr(msg)->type == PLB__MSG_DISPATCH &&
	    (plb__msg_hdr(msg)->flags & PLB__F_KEEP))
		return;
	plb__msg_free(msg);
}

/* Frees the items left on q, with their messages. */
static void free_items(struct plb__fifo *q)
{
	struct item *it;
	while ((it = plb__fifo_pop(q))) {
		if (it->kind >= JOB_TASK && it->kind != OUT_SEND)
			free(it->msg);
		else
			msg_done(it->msg);
		free(it);
	}
}

static void post(struct plb__worker *w, int kind, void *msg)
{
	if (enqueue(&w->mu, &w->cv, &w->outbox, kind, msg, 0)) {
		/* Nothing sensible is left: the master would wait for ever. */
		plb__log(PLB__LOG_ERROR, "worker", "out of memory for a finished block");
		abort();
	}
}

/* A block's outcome goes back: it no longer holds the run (on_start). */
static void post_block(struct plb__worker *w, enum out_kind kind, void *msg)
{
	atomic_fetch_sub(&w->blocks_held, 1);
	post(w, kind, msg);
}

/* A pipeline run starts on this PU: every op's kernel for its class. */
static void ops_begin(struct wpu *u)
{
	struct plb__worker *w = u->w;
	struct plb__dev *d = &u->dev;
	plb__dev_begin(d, &(struct plb__dev_run){.t0 = w->t0, .seed = w->seed,
						 .stream = (uint64_t)(w->pu0 + u->idx)});
	for (int m = 0; m < w->nops; m++) {
		const struct plb_kernel_class *kc = plb__kernel_class(w->opk[m], d->info.cls);
		u->okc[m] = kc;
		u->oerr[m] = 0;
		u->ostate[m] = NULL;
		if (kc->run && kc->init) {
			u->oerr[m] = kc->init(&d->info, w->shared, w->shared_bytes, &u->ostate[m]);
			if (u->oerr[m])
				plb__log(PLB__LOG_ERROR, "worker", "%s: kernel '%s' init (op '%s'): %s",
					 d->desc.name, w->opk[m]->name, w->ops[m].name,
					 plb_strerror(u->oerr[m]));
		}
		u->oinit[m] = kc->run && !u->oerr[m];
	}
}

static void ops_end(struct wpu *u)
{
	for (int m = 0; m < PLB__TASKS_MAX_OPS; m++) {
		if (u->oinit[m] && u->okc[m]->fini)
			u->okc[m]->fini(u->ostate[m]);
		u->oinit[m] = 0;
		u->ostate[m] = NULL;
	}
}

/* First block of a run on this PU: reset the emulation, start the kernel. */
static void run_begin(struct wpu *u)
{
	struct plb__worker *w = u->w;
	struct plb__dev *d = &u->dev;

	u->run_seen = w->run;
	if (!w->k) {
		ops_begin(u);
		return;
	}
	u->kc = plb__kernel_class(w->k, d->info.cls);
	u->kerr = 0;
	plb__dev_begin(d, &(struct plb__dev_run){.t0 = w->t0, .seed = w->seed,
						 .stream = (uint64_t)(w->pu0 + u->idx),
						 .in_unit = w->in_unit, .out_unit = w->out_unit,
						 .acc_bytes = w->acc_bytes,
						 .acc_identity = w->acc_identity,
						 .combine = w->k->combine});
	if (!u->kc->run) {
		u->kerr = PLB_ENOENT;
		snprintf(u->err, sizeof u->err, "kernel '%s' has no %s function", w->k->name,
			 plb__device_class_name(d->info.cls));
	} else if (u->kc->init) {
		u->kerr = u->kc->init(&d->info, w->shared, w->shared_bytes, &u->kstate);
		if (u->kerr)
			snprintf(u->err, sizeof u->err, "kernel '%s' init: %s", w->k->name,
				 plb_strerror(u->kerr));
	}
	u->kinit = !u->kerr;
}

static void run_end(struct wpu *u)
{
	ops_end(u);
	if (u->kinit && u->kc->fini)
		u->kc->fini(u->kstate);
	u->kinit = 0;
	u->kstate = NULL;
	u->run_seen = 0;
}

static void do_block(struct wpu *u, struct item *j)
{
	struct plb__worker *w = u->w;
	struct plb__hdr *in = plb__msg_hdr(j->msg);

	if (u->dead) {
		msg_done(j->msg);
		post_block(w, OUT_DROPPED, NULL);
		return;
	}
	if (u->run_seen != w->run)
		run_begin(u);
	int rc = u->start_err ? u->start_err : u->kerr;
	/* borrowed: the input and output are the master's own (checked by
	 * the communication thread); otherwise the input follows the header */
	int borrowed = (in->flags & PLB__F_BORROWED) != 0;
	struct plb__borrow bw = {(uint64_t)(uintptr_t)plb__msg_data(j->msg), 0};
	void *tmp = NULL;       /* input put together from the store and the message */
	if (borrowed) {
		memcpy(&bw, plb__msg_data(j->msg), sizeof bw);
		/* the kernel writes the job's output itself: its pages mapped in
		 * one call, not one fault each (the master's merge does the same),
		 * unless the last run wrote the same output */
		size_t olen = (size_t)in->units * w->out_unit;
		if (bw.out && !w->out_mapped && olen >= PLB__POPULATE_MIN && !rc)
			(void)plb__populate((void *)(uintptr_t)bw.out, olen);
	} else if ((in->flags & PLB__F_SEGMENTS) && !rc) {
		const void *at = NULL;
		if ((rc = plb__store_input(&w->store, j->msg, w->in_unit, &at, &tmp)))
			snprintf(u->err, sizeof u->err, "out of memory for the input of block %llu",
				 (unsigned long long)in->id);
		bw.in = (uint64_t)(uintptr_t)at;
	}
	/* the block's accumulator, then (not borrowed) its output */
	size_t outlen = rc ? 0 : w->accpad + (borrowed ? 0 : (size_t)in->units * w->out_unit);
	void *out = plb__msg_alloc(PLB__MSG_DONE, outlen);
	if (!out) {
		rc = PLB_ENOMEM;
		out = plb__msg_alloc(PLB__MSG_DONE, 0);
		if (!out)
			abort();
		outlen = 0;
	}
	struct plb__dev_times t = {.xfer_at = NAN};
	if (!rc) {
		char *data = plb__msg_data(out);
		if (w->acc_bytes)
			memcpy(data, w->acc_identity, w->acc_bytes);
		struct plb_block b = {.offset = in->offset, .units = in->units,
				      .in = (const void *)(uintptr_t)bw.in,
				      .out = borrowed ? (void *)(uintptr_t)bw.out : data + w->accpad,
				      .acc = w->acc_bytes ? data : NULL, .members = 1};
		rc = plb__dev_run(&u->dev, u->kc, u->kstate, &b, j->arrive, &t);
		if (rc && !u->err[0])
			snprintf(u->err, sizeof u->err, "kernel '%s' failed on block %llu (%llu units at %llu): %s",
				 w->k->name, (unsigned long long)in->id, (unsigned long long)in->units,
				 (unsigned long long)in->offset, plb_strerror(rc));
	}
	struct plb__hdr *h = plb__msg_hdr(out);
	h->pu = u->idx;
	h->id = in->id;
	h->run = in->run;       /* the master's run number */
	h->offset = in->offset;
	h->units = in->units;
	h->flags = in->flags & PLB__F_BORROWED;
	/* the output may travel apart, into the job's output at the master */
	h->tail = outlen > w->accpad ? outlen - w->accpad : 0;
	msg_done(j->msg);
	free(tmp);
	if (t.died) {
		/* The model says this PU died: say so after the detection delay,
		 * as the simulator does; its blocks never come back. */
		u->dead = 1;
		plb__sleep_until(t.dead_at + w->p->cfg.fail_detect_ms * 1e-3);
		void *lost = plb__msg_alloc(PLB__MSG_LOST, 0);
		if (!lost)
			abort();
		/* which block it was (h is out's header: freed only now): a
		 * borrowed one no longer touches the job */
		plb__msg_hdr(lost)->pu = u->idx;
		plb__msg_hdr(lost)->id = h->id;
		plb__msg_hdr(lost)->run = h->run;
		plb__msg_hdr(lost)->flags = h->flags;
		plb__msg_free(out);
		post_block(w, OUT_LOST, lost);
		return;
	}
	h->status = rc;
	h->exec_s = t.exec_s;
	h->xfer_s = t.xfer_s;
	h->busy_s = t.busy_s;
	h->t_xfer = t.xfer_at - w->t0;
	h->t_arrive = j->arrive - w->t0;
	if (t.overran > 0)
		h->flags |= PLB__F_OVERRAN;
	h->t_end = plb__now() - w->t0;
	if (rc) {
		h->len = h->tail = 0;
		plb__log(PLB__LOG_ERROR, "worker", "%s: %s", u->dev.desc.name, u->err);
	}
	post_block(w, OUT_MSG, out);
}

/* ---- a pipeline's tasks, on their slot's thread ---------------------- */

/* Set on a slot's thread while it asks the node's scheduler: what the
 * scheduler's hooks do there differs (give_task, send_instance). */
static _Thread_local int on_slot_thread;

static void finish_task(struct plb__worker *w, struct plb__task_job *j);

/* The task the calling thread runs (plb_task_expand). */
static _Thread_local struct plb__task_job *cur_task;
static _Thread_local const struct plb__worker *cur_worker;

int plb_task_expand(const struct plb_block *blk, const char *op, int count)
{
	struct plb__task_job *j = cur_task;
	const struct plb__worker *w = cur_worker;
	if (!j || !w || !blk || blk->offset != j->inst || blk->op != j->op || !op || count < 0)
		return PLB_EINVAL;
	int m = 0;
	while (m < w->nops && strcmp(w->ops[m].name, op))
		m++;
	if (m == w->nops || !(w->ops[m].waits >> j->op & 1))
		return PLB_EINVAL;
	for (int k = 0; k < j->nexp; k++)
		if (j->exp_op[k] == m) {
			j->exp_count[k] = count;
			return 0;
		}
	if (j->nexp == PLB__TASK_EXPAND_MAX)
		return PLB_EINVAL;
	j->exp_op[j->nexp] = m;
	j->exp_count[j->nexp++] = count;
	return 0;
}

/* Runs task j on PU u's thread, or on its team member's, and finishes it
 * there (finish_task). */
static void run_task(struct wpu *u, struct plb__task_job *j)
{
	struct plb__worker *w = u->w;
	int m = j->op;
	int rc = u->dead ? PLB_EDEVICE : u->start_err ? u->start_err : u->oerr[m];
	if (!rc && !u->oinit[m])
		rc = PLB_ENOENT;
	struct plb__dev_times t = {.xfer_at = NAN, .task_s = u->op_s[m]};
	struct plb_block b = {.offset = j->inst, .units = 1, .in = j->in, .out = j->out,
			      .members = 1, .scratch = j->scratch, .op = m, .task = j->index,
			      .tasks = j->tasks};
	j->start = plb__now();
	if (!rc) {
		cur_task = j;
		cur_worker = w;
		rc = plb__dev_run_task(&u->dev, u->okc[m], u->ostate[m], &b, j->arrive, &t);
		cur_task = NULL;
		if (t.died && !rc)
			rc = PLB_EDEVICE;
		if (t.died)
			u->dead = 1;
	}
	j->end = plb__now();
	j->exec_s = t.exec_s;
	j->xfer_s = t.xfer_s;
	j->rc = rc;
	if (rc)
		snprintf(j->err, sizeof j->err, "%s: op '%s' (kernel '%s') failed on instance %llu: %s",
			 u->dev.desc.name, w->ops[m].name, w->opk[m]->name, (unsigned long long)j->inst,
			 t.died ? "the PU died, as its model says" : u->oerr[m] ? "its init failed"
			 : !u->oinit[m] ? "the kernel has no function for this PU" : plb_strerror(rc));
	finish_task(w, j);
}

/* A slot's task has ended: the node's scheduler hears it at once, on this
 * thread, and gives this slot (and any that waits) its next task, so a
 * slot waits for no hand-off to the communication thread (on the 2-core
 * VM that hand-off cost about 80 us a task). What must cross the
 * transport (a finished instance) or stop the run goes to the
 * communication thread. */
static void finish_task(struct plb__worker *w, struct plb__task_job *j)
{
	struct pipe_err e = {.slot = j->slot};
	pthread_mutex_lock(&w->pipe_mu);
	long left = atomic_fetch_sub(&w->tasks_out, 1) - 1;
	if (!w->pipe || w->pipe_ending) {
		free(j);
	} else {
		on_slot_thread = 1;
		e.rc = plb__wpipe_done(w->pipe, j, plb__now(), e.why, sizeof e.why);
		if (!e.rc)
			e.rc = plb__wpipe_answer(w->pipe, plb__now(), e.why, sizeof e.why);
		on_slot_thread = 0;
	}
	int ending = w->pipe_ending;
	pthread_mutex_unlock(&w->pipe_mu);
	struct pipe_err *copy = e.rc ? malloc(sizeof *copy) : NULL;
	if (copy)
		*copy = e;
	if (e.rc)
		post(w, OUT_PIPE_ERR, copy);
	else if (ending && !left)
		post(w, OUT_NUDGE, NULL);       /* the run's end waited for it */
}

/* A team member's task (the device class calls it on the member's thread). */
static void member_task(void *arg)
{
	struct plb__task_job *j = arg;
	struct plb__worker *w = j->ctx;
	run_task(&w->pu[w->slot[j->slot].pu], j);
}

static void *pu_main(void *arg)
{
	struct wpu *u = arg;
	char err[256] = "";

	plb__log_thread(u->w->p->tp->rank);
	if (plb__dev_thread_start(&u->dev, err, sizeof err)) {
		u->start_err = PLB_EDEVICE;
		snprintf(u->err, sizeof u->err, "%s", err);
	}
	pthread_mutex_lock(&u->mu);
	for (;;) {
		/* Out of work: give the core away a few times before sleeping.
		 * The next block is often on its way (the master answers the
		 * DONE just posted), and taking it without a wake-up saves two
		 * context switches; an idle PU still sleeps after a few
		 * microseconds. (bench/runtime.sh, one process, 1-unit blocks:
		 * about 1.8x the completions per second of sleeping at once.) */
		for (int spin = 0, go = 1; go && spin < 4 && plb__fifo_empty(&u->inbox) && !u->stop; spin++) {
			pthread_mutex_unlock(&u->mu);
			go = plb__yield();
			pthread_mutex_lock(&u->mu);
		}
		while (plb__fifo_empty(&u->inbox) && !u->stop)
			pthread_cond_wait(&u->cv, &u->mu);
		struct item *j = plb__fifo_pop(&u->inbox);
		if (!j)
			break;
		pthread_mutex_unlock(&u->mu);
		if (j->kind == JOB_END) {
			run_end(u);
			post(u->w, OUT_ENDED, NULL);
		} else if (j->kind == JOB_BEGIN) {
			/* start the kernel now, so its set-up is not charged to
			 * (and does not skew the model of) the first block */
			if (u->run_seen != u->w->run && !u->dead)
				run_begin(u);
			post(u->w, u->w->k ? OUT_DROPPED : OUT_BEGUN, NULL);
		} else if (j->kind == JOB_TASK) {
			run_task(u, j->msg);
		} else if (j->kind == JOB_FN) {
			struct fn_job *f = j->msg;
			f->fn(&u->dev, f->arg);
			free(f);
		} else {
			do_block(u, j);
		}
		free(j);
		pthread_mutex_lock(&u->mu);
	}
	pthread_mutex_unlock(&u->mu);
	run_end(u);
	pthread_mutex_lock(&u->mu);
	u->exited = 1;
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

/* The transport's waker: a message came for the communication thread. */
static void worker_poke(void *arg)
{
	struct plb__worker *w = arg;
	pthread_mutex_lock(&w->mu);
	w->pokes++;
	if (w->waiting)
		pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static int push_job(struct wpu *u, enum job_kind kind, void *msg)
{
	return enqueue(&u->mu, &u->cv, &u->inbox, kind, msg, plb__now());
}

/* fn(d, arg) on PU pu's thread (struct plb__pu_calls). */
static int on_pu(struct plb *p, int pu, void (*fn)(struct plb__dev *d, void *arg), void *arg)
{
	struct plb__worker *w = p->wk;
	if (!w || pu < 0 || pu >= w->npu)
		return PLB_EINVAL;
	struct fn_job *f = malloc(sizeof *f);
	if (!f)
		return PLB_ENOMEM;
	*f = (struct fn_job){fn, arg};
	int rc = enqueue(&w->pu[pu].mu, &w->pu[pu].cv, &w->pu[pu].inbox, JOB_FN, f, plb__now());
	if (rc)
		free(f);
	return rc;
}

/* ---- set-up ---------------------------------------------------------- */

/* One BLAS thread per caller (OpenBLAS, when it is the BLAS), for every PU
 * of the node: a cpu PU brings its own team of cores, an emulated PU one
 * core, and BLAS's own pool would oversubscribe them. */
static void blas_one_thread(void)
{
	void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
	if (set)
		set(1);
}

int plb__worker_open(struct plb *p, struct plb__pu_desc **desc_out, int *npu_out)
{
	const struct plb__config *cfg = &p->cfg;
	const struct plb__node *n = &cfg->nodes[p->node];
	struct plb__worker *w = calloc(1, sizeof *w);
	int max = 0, rc = 0;
	char err[400];

	*desc_out = NULL;
	*npu_out = 0;
	/* a value may make several PUs (opencl = all) */
	for (int k = 0; k < PLB__PU_NKIND; k++)
		for (int i = 0; i < n->pus[k].n; i++) {
			struct plb__dev_spec s = {.cfg = cfg, .node = p->node, .index = i,
						  .value = n->pus[k].v[i]};
			max += plb__dev_count((enum plb__pu_kind)k, &s);
		}
	if (!w || !(w->pu = calloc((size_t)max + 1, sizeof *w->pu))) {
		free(w);
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	w->p = p;
	blas_one_thread();
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_mutex_init(&w->pipe_mu, NULL);
	p->wk = w;
	if (plb__store_init(&w->store))
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	w->store_ok = 1;
	/* the node's PUs, kind by kind in PLB__PU_KINDS order */
	for (int k = 0; k < PLB__PU_NKIND; k++) {
		for (int i = 0; i < n->pus[k].n; i++) {
			struct plb__dev_spec s = {.cfg = cfg, .node = p->node, .index = i,
						  .value = n->pus[k].v[i]};
			for (int subs = plb__dev_count((enum plb__pu_kind)k, &s); s.sub < subs; s.sub++) {
				struct wpu *u = &w->pu[w->npu++];
				u->w = w;
				u->idx = w->npu - 1;
				pthread_mutex_init(&u->mu, NULL);
				pthread_cond_init(&u->cv, NULL);
				if ((rc = plb__dev_open(&u->dev, (enum plb__pu_kind)k, &s, err, sizeof err)))
					return plb__fail(p, rc, "%s:%d: [node %s] %s", cfg->path,
							 n->pus[k].line, n->name, err);
			}
		}
	}
	struct plb__pu_desc *desc = calloc((size_t)w->npu + 1, sizeof *desc);
	if (!desc)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int i = 0; i < w->npu; i++) {
		struct wpu *u = &w->pu[i];
		desc[i] = u->dev.desc;
		if (pthread_create(&u->th, NULL, pu_main, u)) {
			free(desc);
			return plb__fail(p, PLB_ENOMEM, "cannot start a thread for PU %s", u->dev.desc.name);
		}
		u->started = 1;
	}
	*desc_out = desc;
	*npu_out = w->npu;
	if (p->tp->ops->wakes)
		p->tp->ops->set_waker(p->tp, worker_poke, w);
	return 0;
}

/* Waits up to `until` (plb__now) for PU thread u to end; 1 if it did. */
static int pu_exited(struct wpu *u, double until)
{
	pthread_mutex_lock(&u->mu);
	while (!u->exited) {
		double left = until - plb__now();
		if (left <= 0)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		double ns = (double)ts.tv_nsec + fmin(left, 1.0) * 1e9;
		ts.tv_sec += (time_t)(ns / 1e9);
		ts.tv_nsec = (long)fmod(ns, 1e9);
		pthread_cond_timedwait(&u->cv, &u->mu, &ts);
	}
	int done = u->exited;
	pthread_mutex_unlock(&u->mu);
	return done;
}

/* Stops the PU threads and frees the worker. Whatever block a PU still
 * runs is no one's any more (the runs are over or this rank stops), so a
 * thread still in its kernel half of [network] peer_timeout_s after the
 * stop (a hung kernel, a device gone very slow) is not waited for: the
 * rank ends without it, and what it may still touch is left to the
 * process's end. */
void plb__worker_close(struct plb *p)
{
	struct plb__worker *w = p->wk;
	int left_running = 0;
	if (!w)
		return;
	if (p->tp && p->tp->ops->wakes)
		p->tp->ops->set_waker(p->tp, NULL, NULL);
	for (int i = 0; i < w->npu; i++) {
		struct wpu *u = &w->pu[i];
		pthread_mutex_lock(&u->mu);
		u->stop = 1;
		pthread_cond_signal(&u->cv);
		pthread_mutex_unlock(&u->mu);
	}
	double grace = p->have_cfg ? p->cfg.peer_timeout_s / 2 : 5, until = plb__now() + grace;
	for (int i = 0; i < w->npu; i++) {
		struct wpu *u = &w->pu[i];
		if (u->started && !pu_exited(u, until)) {
			plb__log(PLB__LOG_WARN, "worker", "PU %d (%s) is still in a block %.1f s after it was told to stop (a hung kernel, or a device gone very slow?): not waited for; this rank ends without it",
				 i, u->dev.desc.name, grace);
			pthread_detach(u->th);
			left_running = 1;
		}
	}
	if (left_running) {
		p->wk = NULL;   /* its threads may still post to it: kept */
		p->pu_left = 1;
		return;
	}
	for (int i = 0; i < w->npu; i++) {
		struct wpu *u = &w->pu[i];
		if (u->started)
			pthread_join(u->th, NULL);
		free_items(&u->inbox);
		plb__dev_close(&u->dev);
		pthread_mutex_destroy(&u->mu);
		pthread_cond_destroy(&u->cv);
	}
	free_items(&w->outbox);
	pipe_close(w);
	if (w->store_ok)
		plb__store_fini(&w->store);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->pipe_mu);
	if (w->shared_msg != w->start_msg)
		plb__msg_free(w->shared_msg);
	plb__msg_free(w->start_msg);
	plb__msg_free(w->prev[0]);
	plb__msg_free(w->prev[1]);
	for (size_t i = 0; i < w->m2_nearly; i++)
		plb__msg_free(w->m2_early[i]);
	free(w->m2_early);
	free(w->pu);
	free(w);
	p->wk = NULL;
}

/* ---- the communication thread ------------------------------------------ */

/* What an idle worker costs: CPU time of the whole process over the
 * stretches (of at least IDLE_MIN_S) in which none of its PUs had a block
 * and no message moved. A stretch starts at the loop's first sleep (the
 * short spin after traffic is answering fast, on purpose) and ends at its
 * last one; the clocks are read only then, never while blocks flow. */
#define IDLE_MIN_S 0.1

/* The loop is about to sleep with nothing to do. */
static void idle_sleep(struct plb__worker *w)
{
	double now = plb__now(), cpu = plb__proc_cpu_now();
	if (!w->idle) {
		w->idle = 1;
		w->idle_since_wall = now;
		w->idle_since_cpu = cpu;
	}
	w->last_wall = now;
	w->last_cpu = cpu;
}

/* Work came (or the loop ends): close the stretch, if any. */
static void idle_end(struct plb__worker *w)
{
	if (w->idle && w->last_wall - w->idle_since_wall >= IDLE_MIN_S) {
		w->idle_wall += w->last_wall - w->idle_since_wall;
		w->idle_cpu += w->last_cpu - w->idle_since_cpu;
	}
	w->idle = 0;
}

static int drain(struct plb *p);

/* Whether a PU still holds the last run in a way that a START must wait
 * for (on_start): a block of it, or an earlier START kept for a fini. */
static int old_run_held(struct plb__worker *w)
{
	return w->ending > 0 && (atomic_load(&w->blocks_held) > 0 || w->prev[0] || w->prev[1]);
}

static int on_start(struct plb *p, void *msg)
{
	struct plb__worker *w = p->wk;
	struct plb__hdr *h = plb__msg_hdr(msg);
	const char *name = plb__msg_data(msg);

	/* A PU that holds a block of the previous run reads the run's fields
	 * below: wait until none does. A PU with only its END left touches
	 * none of them (run_end: its kernel's fini, its own state), so the
	 * run starts at once beside it: an idle PU takes a scheduler's
	 * wake-up to get to its END, milliseconds on a busy host or at low
	 * priority (an emulated PU), and the node's other PUs, real ones
	 * too, waited for it (the k-means demo, 2 cores: 1-9 ms a run on
	 * node a, 2-10% of its iterations). Its fini may still read the
	 * shared data its init was given: the previous START is kept until
	 * every PU has ended (w->prev), and a run whose start finds an older
	 * one still kept waits for every PU, as before. */
	while (old_run_held(w)) {
		int rc = drain(p);
		if (rc < 0) {
			plb__msg_free(msg);
			return rc;
		}
		pthread_mutex_lock(&w->mu);
		if (plb__fifo_empty(&w->outbox) && old_run_held(w))
			pthread_cond_wait(&w->cv, &w->mu);
		pthread_mutex_unlock(&w->mu);
	}

	if (h->len < PLB__KERNEL_NAME_MAX || strnlen(name, PLB__KERNEL_NAME_MAX) == PLB__KERNEL_NAME_MAX ||
	    !(w->k = plb__kernel_find(p, name))) {
		int ok = h->len >= PLB__KERNEL_NAME_MAX && strnlen(name, PLB__KERNEL_NAME_MAX) < PLB__KERNEL_NAME_MAX;
		plb__fail(p, PLB_ENOENT, "the master asks for kernel '%.63s', which this program does not have",
			  ok ? name : "?");
		plb__msg_free(msg);
		return PLB_ENOENT;
	}
	/* the shared data (borrowed: its address), then (padded to 16) the
	 * accumulator's identity */
	int borrowed = (h->flags & PLB__F_BORROWED) != 0, kept = (h->flags & PLB__F_SHARED_KEPT) != 0;
	size_t rest = h->len - PLB__KERNEL_NAME_MAX;
	size_t spart = borrowed ? sizeof(struct plb__borrow) : kept ? 0 : h->shared_bytes;
	size_t spad = plb__pad16(spart);
	if (spart > rest || (spart < rest && spad >= rest) ||
	    (borrowed && !p->tp->ops->same_memory) ||
	    (kept && (borrowed || !w->shared_msg || w->shared_bytes != h->shared_bytes))) {
		plb__msg_free(msg);
		return plb__fail(p, PLB_EIO, "START with %llu bytes of shared data in %zu bytes%s",
				 (unsigned long long)h->shared_bytes, rest,
				 borrowed ? ", borrowed" : kept ? ", kept from a run this node did not have" : "");
	}
	/* no PU runs a block of the previous run any more; its START goes
	 * once every PU has ended it (drain) */
	void *old[2] = {w->shared_msg != w->start_msg && !kept ? w->shared_msg : NULL,
			w->shared_msg != w->start_msg || !kept ? w->start_msg : NULL};
	for (int i = 0; i < 2; i++) {
		if (w->ending > 0)
			w->prev[i] = old[i];
		else
			plb__msg_free(old[i]);
	}
	if (!(h->flags & PLB__F_REUSE)) {
		plb__store_drop(&w->store);
	} else {
		/* the input kept in the last runs' blocks, one buffer per range
		 * (w->in_unit is still theirs): plb-kmeans on one PU, 2M points of
		 * 16 floats kept as the 1,024 of its training block and the rest,
		 * copied its 128 MB for the one block of each later run, 0.1 s of
		 * 0.2 */
		double t0 = plb__now(), bytes = plb__store_merge(&w->store, w->in_unit);
		if (bytes > 0)
			plb__log(PLB__LOG_DEBUG, "worker", "rank %d: the input it keeps merged into %d ranges: %.1f MiB copied in %.3f s",
				 p->tp->rank, w->store.part.n, bytes / 1048576.0, plb__now() - t0);
	}
	w->start_msg = msg;
	if (!kept) {
		w->shared_msg = msg;
		w->shared = name + PLB__KERNEL_NAME_MAX;
	}
	if (borrowed) {
		struct plb__borrow bw;
		memcpy(&bw, w->shared, sizeof bw);
		w->shared = (const void *)(uintptr_t)bw.in;
	}
	w->shared_bytes = h->shared_bytes;
	w->acc_bytes = spart < rest ? rest - spad : 0;
	w->accpad = plb__pad16(w->acc_bytes);
	w->acc_identity = name + PLB__KERNEL_NAME_MAX + spad;
	if (w->acc_bytes && !w->k->combine) {
		plb__fail(p, PLB_ENOENT, "kernel '%.63s' has no combine function in this program, but the run has an accumulator",
			  name);
		return PLB_ENOENT;
	}
	w->in_unit = (size_t)h->in_unit;
	w->out_unit = (size_t)h->out_unit;
	w->out_mapped = (h->flags & PLB__F_OUT_MAPPED) != 0;
	w->seed = h->seed;
	w->pu0 = (int)h->pu0;
	w->t0 = plb__now();
	w->run++;
	if (w->run == 0)
		w->run = 1;
	for (int i = 0; i < w->npu; i++) {
		int rc = push_job(&w->pu[i], JOB_BEGIN, NULL);
		if (rc)
			return plb__fail(p, rc, "out of memory");
		w->outstanding++;
	}
	return 0;
}

/* ---- a pipeline run, on the communication thread --------------------- */

/* A slot's task out: to its PU's inbox, or its team member. */
static int give_task(void *ctx, struct plb__task_job *j)
{
	struct plb__worker *w = ctx;
	const struct wslot *sl = &w->slot[j->slot];
	struct wpu *u = &w->pu[sl->pu];
	int rc;
	j->ctx = w;
	if (sl->member == 0) {
		/* the communication thread wakes the PUs it gave tasks once
		 * after a batch (wake_pus); a slot's thread wakes it now */
		rc = enqueue_wake(&u->mu, &u->cv, &u->inbox, JOB_TASK, j, plb__now(), on_slot_thread);
		if (!on_slot_thread)
			u->wake = 1;
	} else {
		rc = plb__dev_on_slot(&u->dev, sl->member, member_task, j);
	}
	if (!rc)
		atomic_fetch_add(&w->tasks_out, 1);
	return rc;
}

/* An instance is done: its output and task records to the master. */
static int send_instance(void *ctx, uint64_t inst, const void *out, const struct plb__task_rec *rec,
			 int nrec)
{
	struct plb__worker *w = ctx;
	struct plb *p = w->p;
	size_t olen = out ? plb__pad16(w->out_unit) : 0;
	void *msg = plb__msg_alloc(PLB__MSG_IDONE, olen + (size_t)nrec * sizeof *rec);
	if (!msg)
		return PLB_ENOMEM;
	struct plb__hdr *h = plb__msg_hdr(msg);
	h->run = w->pipe_run;
	h->inst = inst;
	h->ntask = (uint64_t)nrec;
	char *data = plb__msg_data(msg);
	if (out)
		memcpy(data, out, w->out_unit);
	memcpy(data + olen, rec, (size_t)nrec * sizeof *rec);
	if (on_slot_thread) {
		/* the transport is the communication thread's */
		post(w, OUT_SEND, msg);
		return 0;
	}
	int rc = p->tp->ops->send(p->tp, 0, msg);
	if (rc)
		plb__fail(p, rc, "sending to the master: %s", p->tp->err);
	w->said = plb__now();
	return rc;
}

/* A pipeline that cannot go on: the master hears why (an IDONE with the
 * error), and this worker stops with it. */
static int pipe_failed(struct plb *p, int rc, int slot, const char *why)
{
	struct plb__worker *w = p->wk;
	size_t n = strlen(why) + 1;
	void *msg = plb__msg_alloc(PLB__MSG_IDONE, n);
	if (msg) {
		plb__msg_hdr(msg)->run = w->pipe_run;
		plb__msg_hdr(msg)->status = rc;
		plb__msg_hdr(msg)->pu = slot;
		memcpy(plb__msg_data(msg), why, n);
		(void)!p->tp->ops->send(p->tp, 0, msg);
	}
	return plb__fail(p, rc, "pipeline run: %s", why);
}

static void pipe_close(struct plb__worker *w)
{
	pthread_mutex_lock(&w->pipe_mu);
	plb__wpipe_close(w->pipe);
	w->pipe = NULL;
	plb__msg_free(w->pstart);
	w->pstart = NULL;
	free(w->slot);
	w->slot = NULL;
	w->nslot = 0;
	w->pipe_ending = 0;
	pthread_mutex_unlock(&w->pipe_mu);
}

/* PSTART: the ops, their kernels, the node's slots and its scheduler. */
/* Waits until the runs before are over on every PU (their ends drained):
 * 0, or drain's error. */
static int runs_over(struct plb *p)
{
	struct plb__worker *w = p->wk;
	int rc;
	while (old_run_held(w) || w->pipe) {
		if ((rc = drain(p)) < 0)
			return rc;
		pthread_mutex_lock(&w->mu);
		if (plb__fifo_empty(&w->outbox) && (old_run_held(w) || w->pipe))
			pthread_cond_wait(&w->cv, &w->mu);
		pthread_mutex_unlock(&w->mu);
	}
	return 0;
}

static int on_pstart(struct plb *p, void *msg)
{
	struct plb__worker *w = p->wk;
	struct plb__hdr *h = plb__msg_hdr(msg);
	struct plb__pipe_wire pw;
	char why[256] = "";
	int rc = 0;

	if ((rc = runs_over(p)) < 0) {
		plb__msg_free(msg);
		return rc;
	}
	w->pstart = msg;
	w->pipe_run = h->run;
	const char *data = plb__msg_data(msg);
	size_t len = h->len, at = sizeof pw;
	if (len >= sizeof pw)
		memcpy(&pw, data, sizeof pw);
	if (len < sizeof pw || pw.nops < 1 || pw.nops > PLB__TASKS_MAX_OPS ||
	    len < at + (size_t)pw.nops * sizeof(struct plb__pipe_wire_op))
		return plb__fail(p, PLB_EIO, "PSTART of %zu bytes, which does not hold its ops", len);
	w->nops = pw.nops;
	double wire_seed[PLB__TASKS_MAX_OPS][4];
	for (int m = 0; m < w->nops; m++, at += sizeof(struct plb__pipe_wire_op)) {
		struct plb__pipe_wire_op o;
		memcpy(&o, data + at, sizeof o);
		memcpy(wire_seed[m], o.seed_s, sizeof wire_seed[m]);
		o.name[63] = o.kernel[63] = 0;
		w->ops[m] = (struct plb__wpipe_op){.after = o.after, .tasks = o.tasks};
		snprintf(w->ops[m].name, sizeof w->ops[m].name, "%s", o.name);
		w->ops[m].waits = o.after;
		for (int k = m - 1; k >= 0; k--)
			if (w->ops[m].waits >> k & 1)
				w->ops[m].waits |= w->ops[k].waits;
		if (!(w->opk[m] = plb__kernel_find(p, o.kernel)))
			return plb__fail(p, PLB_ENOENT, "the master asks for kernel '%s' (op '%s'), which this program does not have",
					 o.kernel, o.name);
	}
	/* the shared data (borrowed: its address) */
	size_t rest = len - at;
	int borrowed = (h->flags & PLB__F_BORROWED) != 0;
	if (borrowed ? rest != sizeof(struct plb__borrow) || !p->tp->ops->same_memory
		     : rest != h->shared_bytes)
		return plb__fail(p, PLB_EIO, "PSTART with %zu bytes of shared data where %llu were said",
				 rest, (unsigned long long)h->shared_bytes);
	w->shared = data + at;
	if (borrowed) {
		struct plb__borrow bw;
		memcpy(&bw, data + at, sizeof bw);
		w->shared = (const void *)(uintptr_t)bw.in;
	}
	w->shared_bytes = h->shared_bytes;
	w->k = NULL;
	w->in_unit = (size_t)h->in_unit;
	w->out_unit = (size_t)h->out_unit;
	w->seed = h->seed;
	w->pu0 = (int)h->pu0;
	w->t0 = plb__now();
	/* the slots: a PU each, a CPU team's a core each; their types, and
	 * each op's times from the config's [op] of its name */
	int nslot = 0;
	for (int i = 0; i < w->npu; i++)
		nslot += plb__pu_slots(&w->pu[i].dev.desc);
	w->slot = calloc((size_t)nslot + 1, sizeof *w->slot);
	int *type = calloc((size_t)nslot + 1, sizeof *type);
	unsigned types[PLB__TASKS_MAX_OPS] = {0}, lacks[PLB__TASKS_MAX_OPS] = {0};
	double seed_s[PLB__TASKS_MAX_OPS][PLB__TASKS_MAX_TYPES] = {{0}};
	if (!w->slot || !type) {
		free(type);
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	for (int i = 0; i < w->npu; i++) {
		struct wpu *u = &w->pu[i];
		int y = plb__pu_task_type(&p->cfg, &u->dev.desc);
		for (int k = plb__pu_slots(&u->dev.desc), s = 0; s < k; s++, w->nslot++) {
			w->slot[w->nslot] = (struct wslot){i, s};
			type[w->nslot] = y;
		}
		for (int m = 0; m < w->nops; m++) {
			const struct plb__op *co = plb__config_op(&p->cfg, w->ops[m].name);
			int cls = u->dev.desc.model >= 0 ? (int)p->cfg.models[u->dev.desc.model].cls : -1;
			double ms = co && cls >= 0 ? co->ms[cls] : 0;
			u->op_s[m] = ms > 0 ? ms / 1e3 : 0;
			/* an emulated PU of a class the op's [op] gives no time for
			 * does not run it (as in plbsim) */
			int can = plb__kernel_class(w->opk[m], u->dev.info.cls)->run && !(co && cls >= 0 && !(ms > 0));
			if (can)
				types[m] |= 1u << y;
			else
				lacks[m] |= 1u << y;
			if (co && y < PLB__OP_CLASSES && co->ms[y] > 0)
				seed_s[m][y] = co->ms[y] / 1e3;
			if (y < PLB__TASKS_MAX_TYPES && wire_seed[m][y] > 0)
				seed_s[m][y] = wire_seed[m][y];  /* measured beats the config's */
		}
	}
	for (int m = 0; m < w->nops; m++)
		types[m] &= ~lacks[m];  /* a type runs an op where each of its PUs can */
	enum plb__tasks_policy pol;
	pw.scheduler[15] = 0;
	if (plb__tasks_policy_parse(pw.scheduler, &pol)) {
		free(type);
		return plb__fail(p, PLB_EINVAL, "scheduler '%s'; accepted: %s", pw.scheduler,
				 plb__tasks_policies_accepted());
	}
	struct plb__wpipe_cfg c = {.nops = w->nops, .ops = w->ops, .types = types, .policy = pol,
				   .nslot = w->nslot, .type = type, .seed_s = (const double (*)[PLB__TASKS_MAX_TYPES])seed_s,
				   .seed = w->seed ^ (uint64_t)p->node * 0x9E3779B97F4A7C15ULL,
				   .est_error = pw.est_error >= 0 && isfinite(pw.est_error) ? pw.est_error : 0,
				   .depth = pw.depth,
				   .out_unit = w->out_unit, .scratch_bytes = pw.scratch_bytes,
				   .t0 = w->t0, .give = give_task, .finished = send_instance, .ctx = w};
	if (w->nslot)
		w->pipe = plb__wpipe_open(&c, &rc, why, sizeof why);
	free(type);
	if (w->nslot && !w->pipe)
		return pipe_failed(p, rc, -1, why);
	w->run++;
	if (w->run == 0)
		w->run = 1;
	w->begun_left = w->npu;
	for (int i = 0; i < w->npu; i++) {
		if ((rc = push_job(&w->pu[i], JOB_BEGIN, NULL)))
			return plb__fail(p, rc, "out of memory");
		w->outstanding++;
	}
	return 0;
}

/* INST: an instance and its input (borrowed: its input's and output's
 * addresses). */
static int on_inst(struct plb *p, void *msg)
{
	struct plb__worker *w = p->wk;
	struct plb__hdr *h = plb__msg_hdr(msg);
	int borrowed = (h->flags & PLB__F_BORROWED) != 0;
	if (!w->pipe || (borrowed ? h->len != sizeof(struct plb__borrow) || !p->tp->ops->same_memory
				  : h->len != w->in_unit)) {
		unsigned long long len = h->len;
		plb__msg_free(msg);
		return plb__fail(p, PLB_EIO, w->pipe ? "INST with %llu bytes of input, which does not match the run"
					       : "INST outside a pipeline run (%llu bytes)", len);
	}
	struct plb__borrow bw = {(uint64_t)(uintptr_t)plb__msg_data(msg), 0};
	if (borrowed)
		memcpy(&bw, plb__msg_data(msg), sizeof bw);
	uint64_t inst = h->inst;
	pthread_mutex_lock(&w->pipe_mu);
	int rc = plb__wpipe_admit(w->pipe, inst, msg, (const void *)(uintptr_t)bw.in,
				  (void *)(uintptr_t)bw.out, plb__now());
	pthread_mutex_unlock(&w->pipe_mu);
	w->pipe_news = 1;
	if (rc)
		return pipe_failed(p, rc, -1, rc == PLB_ENOMEM ? "out of memory for an instance"
							      : "an instance sent twice");
	return 0;
}

/* A PU's kernels are ready: once every PU's are, the slots are asked. */
static int pipe_begun(struct plb *p)
{
	struct plb__worker *w = p->wk;
	int rc = 0;
	pthread_mutex_lock(&w->pipe_mu);
	if (--w->begun_left == 0 && w->pipe && !w->pipe_ending)
		rc = plb__wpipe_begin(w->pipe, plb__now());
	pthread_mutex_unlock(&w->pipe_mu);
	return rc ? pipe_failed(p, rc, -1, "asking the task slots") : 0;
}

/* Every PU has left the run: tell the master, who asked. */
static int send_ended(struct plb *p)
{
	void *msg = plb__msg_alloc(PLB__MSG_ENDED, 0);
	p->wk->ended_ack = 0;
	if (!msg)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	int rc = p->tp->ops->send(p->tp, 0, msg);
	return rc ? plb__fail(p, rc, "sending to the master: %s", p->tp->err) : 0;
}

/* SHUTDOWN, FIN: the process ids of the ranks taken out on this host,
 * which this rank ends. */
static void end_lost(void *msg)
{
	const char *data = plb__msg_data(msg);
	for (size_t at = 0; at + sizeof(int32_t) <= plb__msg_hdr(msg)->len; at += sizeof(int32_t)) {
		int32_t pid;
		memcpy(&pid, data + at, sizeof pid);
		plb__end_lost_ranks(&pid, 1);
	}
}

/* END: every PU leaves the run (its kernels' fini). */
static int end_pus(struct plb *p)
{
	struct plb__worker *w = p->wk;
	int rc;
	if (!w->npu && w->ended_ack && (rc = send_ended(p)))
		return rc;
	for (int i = 0; i < w->npu; i++) {
		if ((rc = push_job(&w->pu[i], JOB_END, NULL)))
			return plb__fail(p, rc, "out of memory");
		w->outstanding++;
		w->ending++;
	}
	return 0;
}

static int handle(struct plb *p, void *msg)
{
	struct plb__worker *w = p->wk;
	struct plb__hdr *h = plb__msg_hdr(msg);
	int rc;

	switch (h->type) {
	case PLB__MSG_START:
		w->in_run = 1;
		return on_start(p, msg);
	case PLB__MSG_PSTART:
		w->in_run = 1;
		return on_pstart(p, msg);
	case PLB__MSG_INST:
		return on_inst(p, msg);
	case PLB__MSG_M2BENCH:
	case PLB__MSG_M2START:
		if ((rc = runs_over(p)) < 0) {
			plb__msg_free(msg);
			return rc;
		}
		struct plb__pu_calls pus = {w->npu, on_pu, &w->m2_early, &w->m2_nearly};
		if (h->type == PLB__MSG_M2BENCH)
			return plb__wmm2d_bench(p, &pus, msg);
		void *again = NULL;
		rc = plb__wmm2d_run(p, &pus, msg, &again);
		return rc ? rc : again ? handle(p, again) : 0;
	case PLB__MSG_DISPATCH:
		if (h->pu < 0 || h->pu >= w->npu || !w->k) {
			int pu = h->pu;
			plb__msg_free(msg);
			return plb__fail(p, PLB_EIO, "DISPATCH for PU %d, which this worker does not have", pu);
		}
		if ((h->flags & PLB__F_BORROWED) ? !p->tp->ops->same_memory || h->len != sizeof(struct plb__borrow)
		    : (h->flags & PLB__F_SEGMENTS) ? 0 : h->len != h->units * w->in_unit) {
			unsigned long long len = h->len;
			plb__msg_free(msg);
			return plb__fail(p, PLB_EIO, "DISPATCH with %llu bytes of input for its block, which does not match the run", len);
		}
		if (h->flags & PLB__F_SEGMENTS) {
			char err[200];
			if ((rc = plb__store_take(&w->store, msg, w->in_unit, err, sizeof err))) {
				plb__msg_free(msg);
				return plb__fail(p, rc, "%s", err);
			}
		}
		/* once queued, msg is the PU's (it may be freed at once) */
		struct wpu *u = &w->pu[h->pu];
		atomic_fetch_add(&w->blocks_held, 1);
		if ((rc = enqueue_wake(&u->mu, &u->cv, &u->inbox, JOB_BLOCK, msg, plb__now(), 0))) {
			atomic_fetch_sub(&w->blocks_held, 1);
			msg_done(msg);
			return plb__fail(p, rc, "out of memory");
		}
		w->outstanding++;
		u->wake = 1;
		return 0;
	case PLB__MSG_END:
		w->in_run = 0;
		w->ended_ack = (h->flags & PLB__F_ACK) != 0;
		plb__msg_free(msg);
		pthread_mutex_lock(&w->pipe_mu);
		int out = (w->pipe || w->pstart) && atomic_load(&w->tasks_out);
		if (out)
			w->pipe_ending = 1;
		pthread_mutex_unlock(&w->pipe_mu);
		if (out)
			return 0;       /* a pipeline's tasks still out (after an error): the
					 * PUs end the run once they are back (drain) */
		pipe_close(w);
		return end_pus(p);
	case PLB__MSG_SHUTDOWN:
		rc = h->status;
		if (h->flags & PLB__F_GONE)
			p->tp->no_finalize = 1;         /* a rank is gone: MPI_Finalize would wait */
		end_lost(msg);
		plb__msg_free(msg);
		if (rc) {
			/* the master took this rank out (it was silent too long) */
			p->tp->no_finalize = 1;
			return plb__fail(p, rc, "the master took this rank out of the job: it had said nothing for longer than its limit, [network] peer_timeout_min_s = %g s or more up to peer_timeout_s = %g s (the master's log gives the limit; a frozen or swapping process?); this worker stops",
					 plb__peer_timeout_min(&p->cfg), p->cfg.peer_timeout_s);
		}
		/* heard (the master then waits for BYE as long as closing takes) */
		msg = plb__msg_alloc(PLB__MSG_ALIVE, 0);
		if (!msg)
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		plb__msg_hdr(msg)->flags = PLB__F_HEARD;
		if ((rc = p->tp->ops->send(p->tp, 0, msg)))
			return plb__fail(p, rc, "sending to the master: %s", p->tp->err);
		return 1;
	case PLB__MSG_ALIVE:
		plb__msg_free(msg);
		return 0;
	case PLB__MSG_M2VEC:
		plb__msg_free(msg);     /* a late vector of a 2-D product this node left */
		return 0;
	case PLB__MSG_M2PIV:
		/* another node started its 2-D steps before this one's M2START */
		if (plb__push(&w->m2_early, &w->m2_nearly, &w->m2_capearly, sizeof msg, &msg)) {
			plb__msg_free(msg);
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		}
		return 0;
	default: {
		unsigned type = h->type;
		plb__msg_free(msg);
		return plb__fail(p, PLB_EIO, "unexpected message type %u from the master", type);
	}
	}
}

/* Wake the PUs that were handed blocks in the batch just read: once each,
 * after the batch, so that a PU woken early does not take the core from
 * the thread still reading (bench/runtime.sh under mpirun: about 1.3x the
 * completions per second of waking at each block). */
static void wake_pus(struct plb__worker *w)
{
	for (int i = 0; i < w->npu; i++) {
		struct wpu *u = &w->pu[i];
		if (u->wake) {
			u->wake = 0;
			pthread_mutex_lock(&u->mu);
			pthread_cond_signal(&u->cv);
			pthread_mutex_unlock(&u->mu);
		}
	}
}

/* Send what the PU threads finished. Returns messages moved, or < 0. */
static int drain(struct plb *p)
{
	struct plb__worker *w = p->wk;
	int n = 0, rc = 0;

	pthread_mutex_lock(&w->mu);
	struct item *o = plb__fifo_take_all(&w->outbox);
	pthread_mutex_unlock(&w->mu);
	while (o) {
		struct item *next = (struct item *)o->link.next;
		/* what answers a job the communication thread counted out
		 * (a pipeline's tasks are counted in tasks_out) */
		w->outstanding -= o->kind < JOB_TASK || o->kind == OUT_BEGUN;
		if (o->kind == OUT_BEGUN || o->kind == OUT_PIPE_ERR || o->kind == OUT_NUDGE) {
			int r = 0;
			if (!rc && o->kind == OUT_BEGUN)
				r = pipe_begun(p);
			if (!rc && o->kind == OUT_PIPE_ERR) {
				const struct pipe_err *e = o->msg;
				r = e ? pipe_failed(p, e->rc, e->slot, e->why)
				      : pipe_failed(p, PLB_ENOMEM, -1, "out of memory");
			}
			free(o->msg);
			free(o);
			o = next;
			n++;
			rc = rc ? rc : r;
			continue;
		}
		if (o->kind == OUT_ENDED && --w->ending == 0) {
			for (int i = 0; i < 2; i++) {
				plb__msg_free(w->prev[i]);
				w->prev[i] = NULL;
			}
			if (w->ended_ack && !rc)
				rc = send_ended(p);
		}
		if (o->msg && !rc) {
			/* the idle figures so far travel with every block */
			plb__msg_hdr(o->msg)->idle_wall_s = w->idle_wall;
			plb__msg_hdr(o->msg)->idle_cpu_s = w->idle_cpu;
			rc = p->tp->ops->send(p->tp, 0, o->msg);
			if (rc)
				plb__fail(p, rc, "sending to the master: %s", p->tp->err);
			w->said = plb__now();
		} else {
			plb__msg_free(o->msg);
		}
		free(o);
		o = next;
		n++;
	}
	if (w->pipe && !rc && (n || w->pipe_news)) {
		char why[256] = "";
		w->pipe_news = 0;
		pthread_mutex_lock(&w->pipe_mu);
		int r = plb__wpipe_answer(w->pipe, plb__now(), why, sizeof why);
		pthread_mutex_unlock(&w->pipe_mu);
		if (r)
			rc = pipe_failed(p, r, -1, why);
		wake_pus(w);
	}
	if (w->pipe_ending && !atomic_load(&w->tasks_out)) {
		pipe_close(w);
		int r = end_pus(p);
		rc = rc ? rc : r;
	}
	return rc ? rc : n;
}

/* Is the master still there? In a run it says something at least every
 * fifth of [network] peer_timeout_s (this worker every fifth of
 * peer_timeout_min_s, ALIVE when it has nothing else to say, for the
 * master takes it out sooner); between runs the master may be silent for
 * as long as the app computes, and only a master on this host can be
 * checked (its process). Between ranks of one process nothing is checked.
 * Returns 0, or PLB_EIO: the master is gone. */
static int master_alive(struct plb *p, double now)
{
	struct plb__worker *w = p->wk;
	double limit = p->cfg.peer_timeout_s;
	if (p->tp->ops->same_memory)
		return 0;
	if (plb__held_up(&w->checked, now, limit))
		w->heard = fmax(w->heard, now);         /* afresh */
	if (w->in_run && now - w->said >= plb__peer_timeout_min(&p->cfg) / 5) {
		void *msg = plb__msg_alloc(PLB__MSG_ALIVE, 0);
		int rc = msg ? p->tp->ops->send(p->tp, 0, msg) : PLB_ENOMEM;
		if (rc)
			return plb__fail(p, rc, "sending to the master: %s", p->tp->err);
		w->said = now;
	}
	int gone = w->in_run && now - w->heard > limit;
	if (!gone && !w->in_run && p->master_pid > 0 && now - w->heard > 1) {
		w->heard = now;         /* checked once a second */
		gone = kill(p->master_pid, 0) && errno == ESRCH;
	}
	if (!gone)
		return 0;
	p->tp->no_finalize = 1;         /* MPI_Finalize would wait for it */
	if (w->in_run)
		return plb__fail(p, PLB_EIO, "the master (rank 0) has said nothing for %.1f s in a run, longer than [network] peer_timeout_s = %g s: it is gone; this worker stops",
				 now - w->heard, limit);
	return plb__fail(p, PLB_EIO, "the master (rank 0, process %d on this host) is gone; this worker stops",
			 p->master_pid);
}

/* After BYE, the master's FIN: whether to call MPI_Finalize (not when a
 * rank was lost at the end, whom its fence would wait for). The master
 * says ALIVE while it waits for the others' goodbye; silent for [network]
 * peer_timeout_s, it is gone, and this rank ends without MPI_Finalize. */
static int wait_fin(struct plb *p)
{
	struct plb__backoff bo = {0};
	double limit = p->cfg.peer_timeout_s, heard = plb__now(), checked = heard;
	plb__backoff_reset(&bo);
	for (;;) {
		void *msg;
		int src, r = p->tp->ops->recv(p->tp, &msg, &src);
		if (r < 0)
			return plb__fail(p, r, "waiting for the master's last word: %s", p->tp->err);
		double now = plb__now();
		if (r) {
			struct plb__hdr *h = plb__msg_hdr(msg);
			int type = (int)h->type, gone = (h->flags & PLB__F_GONE) != 0;
			if (type == PLB__MSG_FIN)
				end_lost(msg);
			plb__msg_free(msg);
			heard = now;
			if (type == PLB__MSG_FIN) {
				p->tp->no_finalize |= gone;
				return 0;
			}
			plb__backoff_reset(&bo);
			continue;
		}
		if (plb__held_up(&checked, now, limit))
			heard = fmax(heard, now);       /* afresh */
		if (now - heard > limit) {
			p->tp->no_finalize = 1;
			return plb__fail(p, PLB_EIO, "the master (rank 0) has said nothing for %.1f s since this worker's goodbye, longer than [network] peer_timeout_s = %g s: it is gone; this worker ends without MPI_Finalize",
					 now - heard, limit);
		}
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
}

int plb__worker_serve(struct plb *p)
{
	struct plb__worker *w = p->wk;
	struct plb__backoff bo = {0};
	int rc = 0, stop = 0;

	if (!w)
		return plb__fail(p, PLB_ESTATE, "plb_serve: not a worker rank");
	int wakes = p->tp->ops->wakes;  /* a message wakes this loop: it may sleep long */
	bo.cap_us = wakes ? PLB__BACKOFF_WAKE_US : 0;
	plb__backoff_reset(&bo);
	while (!stop && !rc) {
		int moved = 0;
		void *msg;
		int src;
		unsigned long seen = 0;
		if (wakes) {
			pthread_mutex_lock(&w->mu);
			seen = w->pokes;
			pthread_mutex_unlock(&w->mu);
		}
		for (int i = 0; i < 256; i++) {
			int r = p->tp->ops->recv(p->tp, &msg, &src);
			if (r < 0) {
				rc = plb__fail(p, r, "receiving: %s", p->tp->err);
				break;
			}
			if (r == 0)
				break;
			moved++;
			w->heard = plb__now();
			r = handle(p, msg);
			if (r < 0)
				rc = r;
			else if (r == 1)
				stop = 1;
			if (rc || stop)
				break;
		}
		if (moved)
			wake_pus(w);
		int d = rc ? 0 : drain(p);
		if (d < 0)
			rc = d;
		if (!rc && !stop)
			rc = master_alive(p, plb__now());
		moved += d > 0 ? d : 0;
		int sending = p->tp->ops->pending(p->tp);
		if (moved || sending || w->outstanding || atomic_load(&w->tasks_out))
			idle_end(w);
		if (moved) {
			plb__backoff_reset(&bo);
			continue;
		}
		long us = plb__backoff_next(&bo, sending);
		if (us <= 0)
			continue;
		if (!sending && !w->outstanding && !atomic_load(&w->tasks_out))
			idle_sleep(w);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += us * 1000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_mutex_lock(&w->mu);
		if (plb__fifo_empty(&w->outbox) && w->pokes == seen) {
			w->waiting = 1;
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
			w->waiting = 0;
		}
		pthread_mutex_unlock(&w->mu);
	}
	idle_end(w);
	double idle_wall = w->idle_wall, idle_cpu = w->idle_cpu;
	/* Stop the PU threads, then say goodbye with the idle figures. */
	plb__worker_close(p);
	void *bye = plb__msg_alloc(PLB__MSG_BYE, 0);
	if (!bye)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	plb__msg_hdr(bye)->status = rc;
	plb__msg_hdr(bye)->idle_wall_s = idle_wall;
	plb__msg_hdr(bye)->idle_cpu_s = idle_cpu;
	int src = p->tp->ops->send(p->tp, 0, bye);
	if (src && !rc)
		rc = plb__fail(p, src, "sending to the master: %s", p->tp->err);
	if (!rc && !p->tp->no_finalize)
		rc = wait_fin(p);
	return rc;
}
