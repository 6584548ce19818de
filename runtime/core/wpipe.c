/* A worker's node level in a pipeline run (pipe.h): the node's task
 * scheduler and the balancer's driver over its task slots, the instances
 * it holds (their input message, output, scratch and task records). No
 * threads, no transport, not thread-safe: worker.c calls it under one
 * mutex, from the communication thread (instances in, the run's start
 * and end) and from a slot's thread when its task ends; its hooks run a
 * task on its slot and send a finished instance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "balancer/base/log.h"
#include "balancer/base/vec.h"
#include "balancer/driver.h"
#include "runtime/core/pipe.h"
#include "runtime/transport/transport.h"

enum { I_FREE, I_HELD, I_GONE };      /* a table entry: never used, held, freed */

struct winst {
	uint64_t id;
	int state;
	void *msg;              /* its INST */
	const void *in;
	void *out;              /* where its output goes */
	void *own;              /* wp's buffer for the output (not borrowed), NULL */
	void *scratch;          /* scratch_bytes, zeroed; NULL when none */
	struct plb__task_rec *rec;
	size_t nrec, caprec;
};

struct plb__wpipe {
	struct plb__wpipe_cfg c;
	struct plb__wpipe_op *ops;
	plb__tasks_t *t;
	struct plb__driver d;
	int driver_ok, begun;
	struct winst *inst;     /* open addressing on the instance id */
	size_t cap, held, gone;
	int rc;                 /* a hook's error inside the scheduler's callback */
	char why[200];
};

static size_t hash(uint64_t id, size_t cap)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

static struct winst *find(struct plb__wpipe *wp, uint64_t id)
{
	for (size_t i = wp->cap ? hash(id, wp->cap) : 0, k = 0; k < wp->cap;
	     i = (i + 1) & (wp->cap - 1), k++) {
		if (wp->inst[i].state == I_FREE)
			return NULL;
		if (wp->inst[i].state == I_HELD && wp->inst[i].id == id)
			return &wp->inst[i];
	}
	return NULL;
}

/* Room for one more instance: at most half the table held or freed (the
 * freed entries are dropped when it is rebuilt). */
static int grow(struct plb__wpipe *wp)
{
	if (wp->cap && (wp->held + wp->gone + 1) * 2 <= wp->cap)
		return 0;
	size_t cap = wp->cap ? wp->cap : 64;
	while ((wp->held + 1) * 4 > cap)
		cap *= 2;
	struct winst *v = calloc(cap, sizeof *v), *old = wp->inst;
	if (!v)
		return PLB_ENOMEM;
	for (size_t i = 0; i < wp->cap; i++) {
		if (old[i].state != I_HELD)
			continue;
		size_t j = hash(old[i].id, cap);
		while (v[j].state != I_FREE)
			j = (j + 1) & (cap - 1);
		v[j] = old[i];
	}
	free(old);
	wp->inst = v;
	wp->cap = cap;
	wp->gone = 0;
	return 0;
}

static void forget(struct plb__wpipe *wp, struct winst *x)
{
	plb__msg_free(x->msg);
	free(x->own);
	free(x->scratch);
	free(x->rec);
	*x = (struct winst){.state = I_GONE};
	wp->held--;
	wp->gone++;
}

static void finished(void *ctx, uint64_t inst, double now)
{
	struct plb__wpipe *wp = ctx;
	(void)now;
	struct winst *x = find(wp, inst);
	if (!x) {
		if (!wp->rc) {
			wp->rc = PLB_ESTATE;
			snprintf(wp->why, sizeof wp->why, "instance %llu ended but is not held",
				 (unsigned long long)inst);
		}
		return;
	}
	int rc = wp->c.finished(wp->c.ctx, inst, x->own, x->rec, (int)x->nrec);
	if (rc && !wp->rc) {
		wp->rc = rc;
		snprintf(wp->why, sizeof wp->why, "sending instance %llu: %s", (unsigned long long)inst,
			 plb_strerror(rc));
	}
	forget(wp, x);
}

static double rel(const struct plb__wpipe *wp, double now)
{
	return now - wp->c.t0;
}

static int grant(void *ctx, int slot, const struct plb__grant *g)
{
	struct plb__wpipe *wp = ctx;
	uint64_t inst;
	int op, index;
	if (plb__tasks_task(wp->t, g->id, &inst, &op, &index))
		return PLB_ESTATE;
	struct winst *x = find(wp, inst);
	struct plb__task_job *j = calloc(1, sizeof *j);
	if (!x || !j) {
		free(j);
		return x ? PLB_ENOMEM : PLB_ESTATE;
	}
	*j = (struct plb__task_job){.id = g->id, .inst = inst, .op = op, .index = index,
				    .tasks = plb__tasks_of(wp->t, g->id), .slot = slot,
				    .in = x->in, .out = x->out,
				    .scratch = x->scratch,
				    .arrive = plb__now()};
	int rc = wp->c.give(wp->c.ctx, j);
	if (rc)
		free(j);
	return rc;
}

struct plb__wpipe *plb__wpipe_open(const struct plb__wpipe_cfg *c, int *rc, char *why, size_t len)
{
	struct plb__wpipe *wp = calloc(1, sizeof *wp);
	struct plb__pipe_op ops[PLB__TASKS_MAX_OPS];
	*rc = PLB_ENOMEM;
	snprintf(why, len, "out of memory");
	if (!wp || c->nops < 1 || c->nops > PLB__TASKS_MAX_OPS) {
		if (wp)
			*rc = PLB_EINVAL;
		free(wp);
		return NULL;
	}
	wp->c = *c;
	wp->c.types = NULL;     /* the caller's: read here only */
	wp->c.seed_s = NULL;
	int *type = malloc(((size_t)c->nslot + 1) * sizeof *type);
	if (!type || !(wp->ops = malloc((size_t)c->nops * sizeof *wp->ops))) {
		free(type);
		free(wp);
		return NULL;
	}
	memcpy(type, c->type, (size_t)c->nslot * sizeof *type);
	wp->c.type = type;
	memcpy(wp->ops, c->ops, (size_t)c->nops * sizeof *wp->ops);
	wp->c.ops = wp->ops;
	for (int m = 0; m < c->nops; m++)
		ops[m] = (struct plb__pipe_op){c->ops[m].after,
					       c->ops[m].tasks == PLB_TASKS_LATER ? 0 : c->ops[m].tasks,
					       c->types[m]};
	struct plb__tasks_cfg tc = {.policy = c->policy, .nops = c->nops, .ops = ops,
				    .npu = c->nslot, .type = c->type, .seed = c->seed,
				    .est_error = c->est_error,
				    .finished = finished, .ctx = wp};
	if (!(wp->t = plb__tasks_create(&tc, rc, why, len))) {
		plb__wpipe_close(wp);
		return NULL;
	}
	/* the expected times to start from: the scheduler refuses none that
	 * is positive, on a type that runs the op */
	for (int m = 0; m < c->nops; m++)
		for (int y = 0; y < PLB__TASKS_MAX_TYPES; y++)
			if (c->seed_s && c->seed_s[m][y] > 0 && (c->types[m] >> y & 1))
				(void)!plb__tasks_estimate(wp->t, m, y, c->seed_s[m][y]);
	int depth = c->depth == 2 ? 2 : 1;
	if (plb__driver_init_source(&wp->d, &plb__tasks_source, wp->t, c->nslot, depth, grant, NULL, wp)) {
		*rc = PLB_ENOMEM;
		snprintf(why, len, "out of memory");
		plb__wpipe_close(wp);
		return NULL;
	}
	wp->driver_ok = 1;
	*rc = 0;
	why[0] = 0;
	return wp;
}

void plb__wpipe_close(struct plb__wpipe *wp)
{
	if (!wp)
		return;
	for (size_t i = 0; i < wp->cap; i++)
		if (wp->inst[i].state == I_HELD)
			forget(wp, &wp->inst[i]);
	free(wp->inst);
	if (wp->driver_ok)
		plb__driver_fini(&wp->d);
	plb__tasks_destroy(wp->t);
	free((int *)wp->c.type);
	free(wp->ops);
	free(wp);
}

int plb__wpipe_admit(struct plb__wpipe *wp, uint64_t inst, void *msg, const void *in, void *out,
		     double now)
{
	if (find(wp, inst) || grow(wp)) {
		plb__msg_free(msg);
		return find(wp, inst) ? PLB_EINVAL : PLB_ENOMEM;
	}
	size_t i = hash(inst, wp->cap);
	while (wp->inst[i].state == I_HELD)
		i = (i + 1) & (wp->cap - 1);
	struct winst *x = &wp->inst[i];
	if (x->state == I_GONE)
		wp->gone--;
	*x = (struct winst){.id = inst, .state = I_HELD, .msg = msg, .in = in, .out = out};
	wp->held++;
	if (!out)
		x->out = x->own = calloc(1, wp->c.out_unit ? wp->c.out_unit : 1);
	if (wp->c.scratch_bytes)
		x->scratch = calloc(1, wp->c.scratch_bytes);
	if ((!out && !x->own) || (wp->c.scratch_bytes && !x->scratch)) {
		forget(wp, x);
		return PLB_ENOMEM;
	}
	return plb__tasks_admit(wp->t, inst, rel(wp, now));
}

int plb__wpipe_begin(struct plb__wpipe *wp, double now)
{
	int rc = 0;
	wp->begun = 1;
	for (int s = 0; s < wp->c.nslot && !rc; s++)
		rc = plb__driver_poll(&wp->d, s, rel(wp, now));
	return rc ? rc : wp->rc;
}

int plb__wpipe_done(struct plb__wpipe *wp, struct plb__task_job *j, double now, char *why,
		    size_t len)
{
	int rc = 0;
	struct winst *x = find(wp, j->inst);
	if (!x) {
		snprintf(why, len, "a task of instance %llu came back, which this node does not hold",
			 (unsigned long long)j->inst);
		free(j);
		return PLB_ESTATE;
	}
	if (j->rc) {
		/* the slot is out; its task goes to the others */
		plb__log(PLB__LOG_ERROR, "worker", "task slot %d: %s; the slot is taken out of the run",
			 j->slot, j->err[0] ? j->err : plb_strerror(j->rc));
		rc = plb__driver_lost(&wp->d, j->slot, rel(wp, now));
		free(j);
		if (rc)
			snprintf(why, len, "taking a task slot out: %s", plb_strerror(rc));
		return rc;
	}
	for (int k = 0; k < j->nexp && k < PLB__TASK_EXPAND_MAX; k++)
		if ((rc = plb__tasks_expand(wp->t, j->inst, j->exp_op[k], j->exp_count[k]))) {
			snprintf(why, len, "plb_task_expand(\"%s\", %d) from a task of '%s': its tasks are already made",
				 wp->ops[j->exp_op[k]].name, j->exp_count[k], wp->ops[j->op].name);
			free(j);
			return rc;
		}
	struct plb__task_rec r = {.op = j->op, .slot = j->slot, .type = wp->c.type[j->slot],
				  .index = j->index, .start = j->start - wp->c.t0,
				  .end = j->end - wp->c.t0, .exec_s = j->exec_s, .xfer_s = j->xfer_s};
	struct plb__block_done s = {.grant_id = j->id, .finish = rel(wp, now), .exec_s = j->exec_s,
				    .xfer_s = j->xfer_s};
	int slot = j->slot;
	free(j);
	if ((rc = plb__push(&x->rec, &x->nrec, &x->caprec, sizeof r, &r))) {
		snprintf(why, len, "out of memory");
		return rc;
	}
	/* the instance may end here (finished: sent and forgotten) */
	rc = plb__driver_done(&wp->d, slot, &s);
	if (rc < 0 && rc != PLB_ESTALE) {
		snprintf(why, len, "%s: %s", wp->d.failed ? wp->d.failed : "the scheduler",
			 plb_strerror(rc));
		return rc;
	}
	if (wp->rc)
		snprintf(why, len, "%s", wp->why);
	return wp->rc;
}

int plb__wpipe_answer(struct plb__wpipe *wp, double now, char *why, size_t len)
{
	if (!wp->begun)
		return 0;
	int rc = plb__driver_answer(&wp->d, rel(wp, now));
	if (!rc && wp->rc)
		rc = wp->rc;
	if (rc) {
		snprintf(why, len, "%s", wp->rc ? wp->why : wp->d.failed ? wp->d.failed : plb_strerror(rc));
		return rc;
	}
	if (wp->held && !wp->d.busy) {
		struct plb__tasks_stats st;
		plb__tasks_stats(wp->t, &st);
		snprintf(why, len, "no task slot left on this node can run its %ld ready tasks (every slot that could was taken out)",
			 st.ready);
		return PLB_EIO;
	}
	return 0;
}

int plb__wpipe_held(const struct plb__wpipe *wp)
{
	return wp ? (int)wp->held : 0;
}
