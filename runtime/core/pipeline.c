/* The master's side of a pipeline run (plb_run_pipeline; pipe.h says the
 * messages): check the pipeline, PSTART to every worker with PUs, hand
 * each node instances up to its window (one more each time one comes
 * back), put each instance's output in place, then END and the report.
 * The nodes schedule the tasks (worker.c, wpipe.c); the master holds no
 * balancer in these runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "balancer/base/log.h"
#include "balancer/base/vec.h"
#include "runtime/core/pipe.h"
#include "runtime/core/run.h"

struct pnode {
	int active;             /* holds PUs and runs this pipeline */
	int window, held;
	int slot0, nslot;       /* its slots' global indices */
	double heard;           /* its last message (plb__now) */
	double origin;          /* when its PSTART left: its task records' time 0 */
};

/* A task for the trace (--trace): its global slot and its record. */
struct ttask {
	int slot;
	double start, end, exec_s, xfer_s;
	int op;
	uint64_t inst;
};

struct prun {
	struct plb *p;
	const struct plb_pipeline *pl;
	uint64_t W, next, ndone;
	unsigned char *done;
	int *owner;             /* an instance's node (p->peer index), -1: none yet */
	uint64_t *again;        /* instances of nodes taken out, to hand out again */
	size_t nagain, capagain;
	struct pnode *node;
	int gen, borrow;
	char sched[16];
	int *slot_pu;           /* a global slot's PU (p->pu index) */
	int *slot_node;         /* and its peer (p->peer index) */
	int kind[PLB__TASKS_MAX_OPS];   /* each op's kept models (p->kept index); -1: none kept */
	struct ttask *tt;       /* --trace: every task, written at the end */
	size_t ntt, captt;
	struct plb__pipe_report *rep;
	double t0;
};

static int check_ops(struct plb *p, const struct plb_pipeline *pl, uint64_t after[])
{
	char why[256];
	if (pl->nops < 1 || pl->nops > PLB__TASKS_MAX_OPS || !pl->ops)
		return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: %d ops; accepted: 1 to %d, in ops",
				 pl->nops, PLB__TASKS_MAX_OPS);
	for (int m = 0; m < pl->nops; m++) {
		const struct plb_op *o = &pl->ops[m];
		if (plb__abi_check(o->abi, "struct plb_op", why, sizeof why))
			return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: op %d: %s", m, why);
		if (!o->name || !o->name[0] || strlen(o->name) >= 64)
			return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: op %d has no name, or one of 64 characters or more; accepted: 1 to 63 characters",
					 m);
		for (int k = 0; k < m; k++)
			if (!strcmp(pl->ops[k].name, o->name))
				return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: two ops are named '%s'; accepted: names unique in the pipeline",
						 o->name);
		if (!o->kernel || strlen(o->kernel) >= PLB__KERNEL_NAME_MAX || !plb__kernel_find(p, o->kernel))
			return plb__fail(p, PLB_ENOENT, "plb_run_pipeline: op '%s': kernel '%s' is not in plb_options.kernels",
					 o->name, o->kernel ? o->kernel : "(null)");
		if (o->tasks < PLB_TASKS_LATER)
			return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: op '%s': tasks %d; accepted: 0 (one), a count, or PLB_TASKS_LATER",
					 o->name, o->tasks);
		after[m] = 0;
		for (int a = 0; a < PLB_MAX_AFTER && o->after[a]; a++) {
			int k = 0;
			while (k < m && strcmp(pl->ops[k].name, o->after[a]))
				k++;
			if (k == m)
				return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: op '%s' waits for '%s', which is not an op above it; accepted: the names of ops before it in plb_pipeline.ops",
						 o->name, o->after[a]);
			after[m] |= 1ull << k;
		}
	}
	return 0;
}

/* The pipeline is one this master can run. */
static int check(struct prun *r, uint64_t after[])
{
	struct plb *p = r->p;
	const struct plb_pipeline *pl = r->pl;
	char why[256];
	if (!p || !p->master)
		return p ? plb__fail(p, PLB_ESTATE, "plb_run_pipeline: only the master (rank 0) runs pipelines") : PLB_EINVAL;
	if (p->failed)
		return plb__fail(p, PLB_ESTATE, "plb_run_pipeline: plb_init failed");
	if (!pl)
		return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: no pipeline");
	if (plb__abi_check(pl->abi, "struct plb_pipeline", why, sizeof why))
		return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: %s", why);
	int rc = check_ops(p, pl, after);
	if (rc)
		return rc;
	r->W = pl->instances ? pl->instances : (uint64_t)p->cfg.units;
	if (!r->W)
		return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: the number of instances is not known: instances is 0 and %s has no [run] units; accepted: either, an integer >= 1",
				 p->cfg.path);
	if ((pl->in_unit && !pl->in) || (pl->out_unit && !pl->out) || (pl->shared_bytes && !pl->shared))
		return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: in, out or shared is NULL but its size is not 0");
	if (pl->window < 0)
		return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: window %d; accepted: 0 (the config's) or more",
				 pl->window);
	const char *s = pl->scheduler ? pl->scheduler : p->cfg.scheduler[0] ? p->cfg.scheduler : "pams";
	enum plb__tasks_policy pol;
	if (strlen(s) >= sizeof r->sched || plb__tasks_policy_parse(s, &pol))
		return plb__fail(p, PLB_EINVAL, "plb_run_pipeline: scheduler '%s'; accepted: %s", s,
				 plb__tasks_policies_accepted());
	snprintf(r->sched, sizeof r->sched, "%s", s);
	return 0;
}

static int open_report(struct prun *r)
{
	struct plb *p = r->p;
	struct plb__pipe_report *rep = calloc(1, sizeof *rep);
	int nslot = 0;
	for (int w = 0; w < p->npeer; w++)
		for (int k = 0; k < p->peer[w].npu; k++)
			nslot += plb__pu_slots(&p->pu[p->peer[w].pu0 + k]);
	if (!rep || !(r->slot_pu = calloc((size_t)nslot + 1, sizeof *r->slot_pu)) ||
	    !(r->slot_node = calloc((size_t)nslot + 1, sizeof *r->slot_node))) {
		free(rep);
		return PLB_ENOMEM;
	}
	plb__pipe_report_free(p->pipe_last);
	p->pipe_last = rep;
	rep->nops = r->pl->nops;
	rep->nslot = nslot;
	rep->op_name = calloc((size_t)rep->nops, sizeof *rep->op_name);
	rep->ran = calloc((size_t)rep->nops, sizeof *rep->ran);
	rep->op_s = calloc((size_t)rep->nops, sizeof *rep->op_s);
	rep->slot_name = calloc((size_t)nslot + 1, sizeof *rep->slot_name);
	rep->slot_tasks = calloc((size_t)nslot + 1, sizeof *rep->slot_tasks);
	rep->slot_busy = calloc((size_t)nslot + 1, sizeof *rep->slot_busy);
	if (!rep->op_name || !rep->ran || !rep->op_s || !rep->slot_name || !rep->slot_tasks ||
	    !rep->slot_busy)
		return PLB_ENOMEM;
	for (int m = 0; m < rep->nops; m++)
		snprintf(rep->op_name[m], sizeof rep->op_name[m], "%s", r->pl->ops[m].name);
	snprintf(rep->scheduler, sizeof rep->scheduler, "%s", r->sched);
	rep->instances = r->W;
	int s = 0;
	for (int w = 0; w < p->npeer; w++) {
		r->node[w].slot0 = s;
		for (int k = 0; k < p->peer[w].npu; k++) {
			const struct plb__pu_desc *d = &p->pu[p->peer[w].pu0 + k];
			for (int c = 0, n = plb__pu_slots(d); c < n; c++, s++) {
				r->slot_pu[s] = p->peer[w].pu0 + k;
				r->slot_node[s] = w;
				if (n > 1)
					snprintf(rep->slot_name[s], sizeof rep->slot_name[s], "%s:%d", d->name, c);
				else
					snprintf(rep->slot_name[s], sizeof rep->slot_name[s], "%s", d->name);
			}
		}
		r->node[w].nslot = s - r->node[w].slot0;
	}
	return 0;
}

/* Op m's mean task time on each device type in the kept models (an
 * earlier run's, or the models file's), over the PUs that have some. */
static void kept_seeds(const struct prun *r, int m, double seed_s[4])
{
	const struct plb *p = r->p;
	const struct plb_pipeline *pl = r->pl;
	double sum[4] = {0};
	int n[4] = {0};
	for (int i = 0; p->cfg.keep_models && i < p->npu; i++) {
		double t = plb__kept_task_mean(p, pl->ops[m].kernel, pl->in_unit, pl->out_unit,
					       pl->ops[m].name, i);
		int y = plb__pu_task_type(&p->cfg, &p->pu[i]);
		if (t > 0 && y >= 0 && y < 4) {
			sum[y] += t;
			n[y]++;
		}
	}
	for (int y = 0; y < 4; y++)
		seed_s[y] = n[y] ? sum[y] / n[y] : 0;
}

/* PSTART to every worker that has PUs. */
static int start(struct prun *r, const uint64_t after[])
{
	struct plb *p = r->p;
	const struct plb_pipeline *pl = r->pl;
	size_t head = sizeof(struct plb__pipe_wire) + (size_t)pl->nops * sizeof(struct plb__pipe_wire_op);
	size_t spart = r->borrow ? sizeof(struct plb__borrow) : pl->shared_bytes;
	int any = 0;
	for (int w = 0; w < p->npeer; w++) {
		struct pnode *n = &r->node[w];
		n->active = p->peer[w].rank >= 0 && p->peer[w].npu > 0;
		if (!n->active)
			continue;
		any = 1;
		n->window = pl->window ? pl->window : p->cfg.window ? p->cfg.window : 4 * n->nslot;
		n->heard = plb__now();
		void *msg = plb__msg_alloc(PLB__MSG_PSTART, head + spart);
		if (!msg)
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		struct plb__hdr *h = plb__msg_hdr(msg);
		char *data = plb__msg_data(msg);
		memset(data, 0, head);
		struct plb__pipe_wire pw = {.nops = pl->nops, .window = n->window,
					    .scratch_bytes = pl->scratch_bytes,
					    .est_error = p->cfg.estimate_error,
					    .depth = p->cfg.pipeline};
		snprintf(pw.scheduler, sizeof pw.scheduler, "%s", r->sched);
		memcpy(data, &pw, sizeof pw);
		for (int m = 0; m < pl->nops; m++) {
			struct plb__pipe_wire_op o = {.after = after[m],
						      .tasks = pl->ops[m].tasks == 0 ? 1 : pl->ops[m].tasks};
			snprintf(o.name, sizeof o.name, "%s", pl->ops[m].name);
			kept_seeds(r, m, o.seed_s);
			snprintf(o.kernel, sizeof o.kernel, "%s", pl->ops[m].kernel);
			memcpy(data + sizeof pw + (size_t)m * sizeof o, &o, sizeof o);
		}
		if (r->borrow) {
			struct plb__borrow bw = {(uint64_t)(uintptr_t)pl->shared, 0};
			memcpy(data + head, &bw, sizeof bw);
			h->flags = PLB__F_BORROWED;
		} else if (pl->shared_bytes) {
			memcpy(data + head, pl->shared, pl->shared_bytes);
		}
		h->run = r->gen;
		h->in_unit = (double)pl->in_unit;
		h->out_unit = (double)pl->out_unit;
		h->seed = p->cfg.seed;
		h->pu0 = (uint64_t)p->peer[w].pu0;
		h->shared_bytes = pl->shared_bytes;
		r->rep->bytes_sent += (double)(PLB__HDR_SIZE + head + spart);
		n->origin = plb__now();
		int rc = p->tp->ops->send(p->tp, p->peer[w].rank, msg);
		if (rc)
			return plb__fail(p, rc, "sending the pipeline to rank %d: %s", p->peer[w].rank,
					 p->tp->err);
	}
	return any ? 0 : plb__fail(p, PLB_ESTATE, "plb_run_pipeline: no worker has PUs");
}

/* Node w gets instances until its window is full or none is left. */
static int hand_out(struct prun *r, int w)
{
	struct plb *p = r->p;
	const struct plb_pipeline *pl = r->pl;
	struct pnode *n = &r->node[w];
	while (n->active && n->held < n->window && (r->nagain || r->next < r->W)) {
		/* a node taken out's instances first */
		uint64_t i = r->nagain ? r->again[--r->nagain] : r->next;
		size_t len = r->borrow ? sizeof(struct plb__borrow) : pl->in_unit;
		void *msg = plb__msg_alloc(PLB__MSG_INST, len);
		if (!msg)
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		struct plb__hdr *h = plb__msg_hdr(msg);
		const char *in = (const char *)pl->in + i * pl->in_unit;
		if (r->borrow) {
			struct plb__borrow bw = {(uint64_t)(uintptr_t)in,
						 (uint64_t)(uintptr_t)((char *)pl->out + i * pl->out_unit)};
			memcpy(plb__msg_data(msg), &bw, sizeof bw);
			h->flags = PLB__F_BORROWED;
		} else if (len) {
			memcpy(plb__msg_data(msg), in, len);
		}
		h->run = r->gen;
		h->inst = i;
		r->rep->bytes_sent += (double)(PLB__HDR_SIZE + len);
		int rc = p->tp->ops->send(p->tp, p->peer[w].rank, msg);
		if (rc)
			return plb__fail(p, rc, "sending an instance to rank %d: %s", p->peer[w].rank,
					 p->tp->err);
		if (i == r->next)
			r->next++;
		r->owner[i] = w;
		n->held++;
	}
	return 0;
}

static int peer_of(const struct plb *p, int src)
{
	for (int w = 0; w < p->npeer; w++)
		if (p->peer[w].rank == src)
			return w;
	return -1;
}

/* An IDONE: the instance's output in place, its tasks counted, the node
 * handed the next. */
static int instance_back(struct prun *r, void *msg, int w)
{
	struct plb *p = r->p;
	struct plb__hdr *h = plb__msg_hdr(msg);
	struct plb__pipe_report *rep = r->rep;
	const char *data = plb__msg_data(msg);
	const char *host = p->peer[w].host;
	if (h->status) {
		char why[256];
		snprintf(why, sizeof why, "%.*s", (int)(h->len < sizeof why ? h->len : sizeof why - 1), data);
		return plb__fail(p, h->status, "plb_run_pipeline: node '%s' (rank %d on %s): %s",
				 p->cfg.nodes[p->peer[w].node].name, p->peer[w].rank, host, why);
	}
	size_t olen = r->borrow ? 0 : plb__pad16(r->pl->out_unit);
	uint64_t i = h->inst, nt = h->ntask;
	if (i >= r->W || r->done[i] || h->len != olen + nt * sizeof(struct plb__task_rec))
		return plb__fail(p, PLB_EIO, "plb_run_pipeline: rank %d sent instance %llu %s",
				 p->peer[w].rank, (unsigned long long)i,
				 i >= r->W ? "out of the domain" : r->done[i] ? "twice"
				 : "with a payload that does not match the run");
	if (!r->borrow && r->pl->out_unit)
		memcpy((char *)r->pl->out + i * r->pl->out_unit, data, r->pl->out_unit);
	r->done[i] = 1;
	r->ndone++;
	rep->bytes_received += (double)(PLB__HDR_SIZE + h->len);
	struct pnode *n = &r->node[w];
	for (uint64_t k = 0; k < nt; k++) {
		struct plb__task_rec t;
		memcpy(&t, data + olen + k * sizeof t, sizeof t);
		if (t.op < 0 || t.op >= rep->nops || t.slot < 0 || t.slot >= n->nslot || t.type < 0 ||
		    t.type >= PLB__TASKS_MAX_TYPES)
			return plb__fail(p, PLB_EIO, "plb_run_pipeline: rank %d sent a task record of op %d on slot %d (type %d; nslot %d), which the run does not have",
					 p->peer[w].rank, t.op, t.slot, t.type, n->nslot);
		rep->tasks++;
		rep->ran[t.op][t.type]++;
		rep->op_s[t.op][t.type] += t.exec_s + t.xfer_s;
		rep->slot_tasks[n->slot0 + t.slot]++;
		if (r->kind[t.op] >= 0 &&
		    plb__kept_task_add(p, r->kind[t.op], r->slot_pu[n->slot0 + t.slot], t.exec_s, t.xfer_s))
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		rep->slot_busy[n->slot0 + t.slot] += t.end - t.start;
		struct ttask x = {n->slot0 + t.slot, n->origin + t.start, n->origin + t.end, t.exec_s,
				  t.xfer_s, t.op, i};
		if (p->trace && plb__push(&r->tt, &r->ntt, &r->captt, sizeof x, &x))
			return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	n->held--;
	return hand_out(r, w);
}

static int message(struct prun *r, void *msg, int src)
{
	struct plb *p = r->p;
	struct plb__hdr *h = plb__msg_hdr(msg);
	int w = peer_of(p, src);
	if (w < 0)
		return 0;
	r->node[w].heard = plb__now();
	if (h->type == PLB__MSG_IDONE && h->run == r->gen)
		return instance_back(r, msg, w);
	if (h->type == PLB__MSG_BYE)
		return plb__fail(p, PLB_EIO, "plb_run_pipeline: rank %d stopped in the run (status %s)",
				 src, plb_strerror(h->status));
	return 0;       /* ALIVE, or an earlier run's */
}

/* A node that holds instances and has said nothing for [network]
 * peer_timeout_s (a worker in a run says ALIVE at least every fifth of
 * peer_timeout_min_s) is gone: the run cannot end. */
static int watch(struct prun *r, double now)
{
	struct plb *p = r->p;
	int rc = 0;
	for (int w = 0; w < p->npeer && !rc; w++) {
		struct pnode *n = &r->node[w];
		if (!n->active || !n->held || now - n->heard <= p->cfg.peer_timeout_s)
			continue;
		/* it is gone (dead, frozen, cut off): out of the job, and the
		 * instances it held go to the other nodes; whatever it still
		 * sends is not heard */
		int rank = p->peer[w].rank;
		plb__log(PLB__LOG_WARN, "master", "rank %d (%s) held %d instances and said nothing for %.1f s, longer than [network] peer_timeout_s = %g s: taken out of the job; its instances go to the other nodes",
			 rank, p->peer[w].host, n->held, now - n->heard, p->cfg.peer_timeout_s);
		plb__peer_out(p, w);
		n->active = 0;
		n->held = 0;
		r->rep->ranks_lost++;
		snprintf(r->rep->lost_note + strlen(r->rep->lost_note),
			 sizeof r->rep->lost_note - strlen(r->rep->lost_note), "%srank %d on %s at %.2f s",
			 r->rep->ranks_lost > 1 ? ", " : "", rank, p->peer[w].host, now - r->t0);
		for (uint64_t i = 0; i < r->next && !rc; i++)
			if (r->owner[i] == w && !r->done[i]) {
				r->owner[i] = -1;
				if (plb__push(&r->again, &r->nagain, &r->capagain, sizeof i, &i))
					rc = plb__fail(p, PLB_ENOMEM, "out of memory");
			}
		int alive = 0;
		for (int v = 0; v < p->npeer && !rc; v++)
			if (r->node[v].active) {
				alive = 1;
				rc = hand_out(r, v);
			}
		if (!rc && !alive)
			rc = plb__fail(p, PLB_EIO, "plb_run_pipeline: every node is out of the run with %llu of %llu instances not done",
				       (unsigned long long)(r->W - r->ndone), (unsigned long long)r->W);
	}
	return rc;
}

static int loop(struct prun *r)
{
	struct plb *p = r->p;
	struct plb__backoff bo = {.cap_us = p->tp->ops->wakes ? PLB__BACKOFF_WAKE_US : 0};
	double checked = plb__now();
	int rc = 0;
	plb__backoff_reset(&bo);
	while (!rc && r->ndone < r->W) {
		unsigned long seen = p->tp->ops->wakes ? plb__waiter_seen(&p->wt) : 0;
		void *msg;
		int src, got = p->tp->ops->recv(p->tp, &msg, &src);
		if (got < 0)
			return plb__fail(p, got, "receiving: %s", p->tp->err);
		if (got) {
			rc = message(r, msg, src);
			plb__msg_free(msg);
			plb__backoff_reset(&bo);
			continue;
		}
		double now = plb__now();
		if (plb__held_up(&checked, now, p->cfg.peer_timeout_s))
			for (int w = 0; w < p->npeer; w++)
				r->node[w].heard = fmax(r->node[w].heard, now);
		if ((rc = watch(r, now)))
			break;
		long us = plb__backoff_next(&bo, p->tp->ops->pending(p->tp));
		if (us > 0 && p->tp->ops->wakes)
			plb__waiter_wait(&p->wt, seen, us);
		else if (us > 0)
			nanosleep(&(struct timespec){0, us * 1000}, NULL);
	}
	return rc;
}

static int by_start(const void *a, const void *b)
{
	const struct ttask *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* --trace: the run on the master, and each task a slice on its slot's
 * thread (a PU's own; a CPU team's other cores one each, after the PUs),
 * named by its op, in the order tasks started. */
static void trace_run(struct prun *r, double start, double end)
{
	struct plb *p = r->p;
	const struct plb__pipe_report *rep = r->rep;
	char name[96];
	snprintf(name, sizeof name, "run %d: pipeline of %d ops", r->gen, r->pl->nops);
	plb__trace_run(p->trace, start, end, name, r->sched, r->W);
	for (int s = 0; s < rep->nslot; s++) {
		int pu = r->slot_pu[s], first = s == 0 || r->slot_pu[s - 1] != pu;
		if (!first && plb__trace_pu(p->trace, p->npu + s, p->peer[r->slot_node[s]].node,
					    rep->slot_name[s]))
			return;
	}
	qsort(r->tt, r->ntt, sizeof *r->tt, by_start);
	for (size_t k = 0; k < r->ntt; k++) {
		const struct ttask *x = &r->tt[k];
		int pu = r->slot_pu[x->slot];
		int own = x->slot == 0 || r->slot_pu[x->slot - 1] != pu;
		struct plb__trace_block b = {.pu = own ? pu : p->npu + x->slot, .id = k + 1,
					     .offset = x->inst, .units = 1,
					     .kind = r->pl->ops[x->op].name,
					     .xfer_start = x->start, .xfer_end = x->start,
					     .start = x->start, .end = x->end};
		plb__trace_block(p->trace, &b);
	}
}

int plb_run_pipeline(plb_t *p, const struct plb_pipeline *pl)
{
	struct prun r = {.p = p, .pl = pl};
	uint64_t after[PLB__TASKS_MAX_OPS];
	plb__api_begin(p);
	int rc = check(&r, after);
	if (rc)
		return rc;
	double wall0 = plb__now();
	r.gen = ++p->runs;
	r.borrow = p->tp->ops->same_memory && p->cfg.in_place;
	/* the nodes' kept input and shared data are not this run's */
	p->res.valid = 0;
	p->res.valid_shared = 0;
	p->out_mapped = NULL;
	p->last_pipe = 1;
	r.node = calloc((size_t)p->npeer + 1, sizeof *r.node);
	r.done = calloc((size_t)r.W, 1);
	r.owner = malloc((size_t)r.W * sizeof *r.owner);
	if (r.owner)
		memset(r.owner, 0xff, (size_t)r.W * sizeof *r.owner);       /* -1: none */
	if (!r.node || !r.done || !r.owner || open_report(&r)) {
		free(r.owner);
		free(r.node);
		free(r.done);
		free(r.slot_pu);
		free(r.slot_node);
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	r.rep = p->pipe_last;
	for (int m = 0; m < pl->nops; m++) {
		r.kind[m] = p->cfg.keep_models ? plb__kept_task_kind(p, pl->ops[m].kernel, pl->in_unit,
								     pl->out_unit, pl->ops[m].name) : -1;
		if (r.kind[m] == PLB_ENOMEM) {
			rc = plb__fail(p, PLB_ENOMEM, "out of memory");
			break;
		}
	}
	int started = 0;
	if (!rc && !(rc = start(&r, after))) {
		started = 1;
		r.t0 = plb__now();
		for (int w = 0; w < p->npeer && !rc; w++)
			rc = hand_out(&r, w);
		if (!rc)
			rc = loop(&r);
	}
	r.rep->makespan_s = plb__now() - r.t0;
	if (started || rc) {
		/* END also after an error: the nodes leave the run */
		int erc = plb__run_end_workers(p, 0);
		rc = rc ? rc : erc;
	}
	struct plb__pipe_report *rep = r.rep;
	rep->done = r.ndone;
	rep->window = 0;
	for (int w = 0; w < p->npeer; w++)
		if (r.node[w].active && r.node[w].window > rep->window)
			rep->window = r.node[w].window;
	rep->wall_s = plb__now() - wall0;
	rep->coverage_ok = !rc && r.ndone == r.W;
	if (p->trace && started)
		trace_run(&r, r.t0, r.t0 + rep->makespan_s);
	free(r.tt);
	free(r.slot_node);
	free(r.node);
	free(r.done);
	free(r.owner);
	free(r.again);
	free(r.slot_pu);
	return rc;
}

/* ---- the report ------------------------------------------------------- */

static const char *const type_names[4] = {"cpu", "gpu", "mic/opencl", "other"};

void plb__pipe_report_free(struct plb__pipe_report *r)
{
	if (!r)
		return;
	free(r->op_name);
	free(r->ran);
	free(r->op_s);
	free(r->slot_name);
	free(r->slot_tasks);
	free(r->slot_busy);
	free(r);
}

static int used_types(const struct plb__pipe_report *r)
{
	int used = 0;
	for (int m = 0; m < r->nops; m++)
		for (int y = 0; y < 4; y++)
			used |= (r->ran[m][y] > 0) << y;
	return used ? used : 1;
}

static void print_text(const struct plb__pipe_report *r, FILE *f)
{
	int used = used_types(r);
	fprintf(f, "pipeline          %d ops, scheduler %s, window %d instances a node\n", r->nops,
		r->scheduler, r->window);
	fprintf(f, "instances         %llu of %llu back%s\n", (unsigned long long)r->done,
		(unsigned long long)r->instances, r->coverage_ok ? ", each once" : "");
	fprintf(f, "tasks             %ld on %d task slots\n", r->tasks, r->nslot);
	fprintf(f, "makespan          %.4f s (wall %.4f s)\n", r->makespan_s, r->wall_s);
	if (r->ranks_lost)
		fprintf(f, "ranks lost        %d: %s (their instances done by the others)\n", r->ranks_lost,
			r->lost_note);
	fprintf(f, "bytes             %.3g sent, %.3g received\n", r->bytes_sent, r->bytes_received);
	fprintf(f, "%-18s", "op: tasks (mean s)");
	for (int y = 0; y < 4; y++)
		if (used >> y & 1)
			fprintf(f, "  %-20s", type_names[y]);
	fprintf(f, "\n");
	for (int m = 0; m < r->nops; m++) {
		fprintf(f, "  %-16s", r->op_name[m]);
		for (int y = 0; y < 4; y++) {
			if (!(used >> y & 1))
				continue;
			char c[32];
			if (r->ran[m][y])
				snprintf(c, sizeof c, "%ld (%.4g)", r->ran[m][y], r->op_s[m][y] / (double)r->ran[m][y]);
			else
				snprintf(c, sizeof c, "-");
			fprintf(f, "  %-20s", c);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "%-18s  %8s  %6s\n", "slot", "tasks", "busy");
	for (int s = 0; s < r->nslot; s++)
		fprintf(f, "  %-16s  %8ld  %5.1f%%\n", r->slot_name[s], r->slot_tasks[s],
			r->makespan_s > 0 ? 100 * r->slot_busy[s] / r->makespan_s : 0);
}

int plb__pipe_report_print(const struct plb__pipe_report *r, FILE *f, int json)
{
	if (!json) {
		print_text(r, f);
		return 0;
	}
	cJSON *o = cJSON_CreateObject(), *ops = cJSON_CreateArray(), *slots = cJSON_CreateArray();
	int ok = o && ops && slots;
	if (ok) {
		cJSON_AddStringToObject(o, "run", "pipeline");
		cJSON_AddStringToObject(o, "scheduler", r->scheduler);
		cJSON_AddNumberToObject(o, "window", r->window);
		cJSON_AddNumberToObject(o, "instances", (double)r->instances);
		cJSON_AddNumberToObject(o, "instances_done", (double)r->done);
		cJSON_AddBoolToObject(o, "coverage_ok", r->coverage_ok);
		cJSON_AddNumberToObject(o, "tasks", (double)r->tasks);
		cJSON_AddNumberToObject(o, "makespan_s", r->makespan_s);
		cJSON_AddNumberToObject(o, "wall_s", r->wall_s);
		cJSON_AddNumberToObject(o, "bytes_sent", r->bytes_sent);
		cJSON_AddNumberToObject(o, "bytes_received", r->bytes_received);
		cJSON_AddNumberToObject(o, "ranks_lost", r->ranks_lost);
		cJSON_AddStringToObject(o, "lost_note", r->lost_note);
	}
	for (int m = 0; ok && m < r->nops; m++) {
		cJSON *e = cJSON_CreateObject(), *ran = cJSON_CreateObject(), *mean = cJSON_CreateObject();
		ok = e && ran && mean;
		for (int y = 0; ok && y < 4; y++) {
			const char *k = y == 2 ? "mic" : type_names[y];
			cJSON_AddNumberToObject(ran, k, (double)r->ran[m][y]);
			cJSON_AddNumberToObject(mean, k, r->ran[m][y] ? r->op_s[m][y] / (double)r->ran[m][y] : -1);
		}
		if (ok) {
			cJSON_AddStringToObject(e, "name", r->op_name[m]);
			cJSON_AddItemToObject(e, "ran", ran);
			cJSON_AddItemToObject(e, "mean_s", mean);
			cJSON_AddItemToArray(ops, e);
		} else {
			cJSON_Delete(e);
			cJSON_Delete(ran);
			cJSON_Delete(mean);
		}
	}
	for (int s = 0; ok && s < r->nslot; s++) {
		cJSON *e = cJSON_CreateObject();
		if (!(ok = e != NULL))
			break;
		cJSON_AddStringToObject(e, "name", r->slot_name[s]);
		cJSON_AddNumberToObject(e, "tasks", (double)r->slot_tasks[s]);
		cJSON_AddNumberToObject(e, "busy_s", r->slot_busy[s]);
		cJSON_AddItemToArray(slots, e);
	}
	char *txt = NULL;
	if (ok) {
		cJSON_AddItemToObject(o, "ops", ops);
		cJSON_AddItemToObject(o, "slots", slots);
		ops = slots = NULL;
		txt = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(o);
	cJSON_Delete(ops);
	cJSON_Delete(slots);
	if (!txt)
		return PLB_ENOMEM;
	fprintf(f, "%s\n", txt);
	free(txt);
	return 0;
}
