/* plbsim's pipeline runs (see pipe.h): a heap of events (an instance
 * reaching a node, a task ending on a PU) in (time, sequence) order; each
 * node a task scheduler and the balancer's driver asking it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "balancer/base/vec.h"
#include "balancer/driver.h"
#include "runtime/config/devmodel.h"
#include "runtime/sim/pipe.h"

enum { E_ARRIVE, E_END };

struct pev {
	double t;
	uint64_t seq;
	int type, node, pu;     /* pu: the node's own index */
	double t0;              /* E_END: when the task's compute started */
	double copy;            /* E_END: its inputs' copy before that, s */
	uint64_t id;            /* E_ARRIVE: the instance; E_END: the task */
};

struct pnode {
	plb__tasks_t *t;
	int *ran_on;            /* by task id - 1: the cfg->pus index that ran it (-1: none) */
	size_t nran, capran;
	struct plb__driver d;
	int npu, *gpu;          /* its PUs: their indices in cfg->pus */
	int inflight;           /* instances on their way to it */
	struct pipe *p;
	int idx;
};

struct pipe {
	const struct plb__config *cfg;
	struct pnode *node;
	struct plb__noise *nz;  /* a PU's, by cfg->pus index */
	double *free_at;        /* a PU's, by cfg->pus index: when its last task given ends
				 * ([run] pipeline 2: the next waits for it) */
	struct pev *heap;
	size_t nheap, capheap;
	uint64_t seq, next_inst, ninst;
	double now, lat, end, sched_s;
	int rc;
	struct plb__pipe_result *r;
};

static int before(const void *pa, const void *pb)
{
	const struct pev *a = pa, *b = pb;
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int push(struct pipe *p, struct pev e)
{
	e.seq = ++p->seq;
	return plb__heap_push(&p->heap, &p->nheap, &p->capheap, sizeof e, &e, before);
}

/* Node n asks the master for an instance: one on its way, or, with none
 * left and none on the way, the node is told no more will come. */
static int request(struct pipe *p, struct pnode *n, double now)
{
	if (p->next_inst < p->ninst) {
		n->inflight++;
		return push(p, (struct pev){.t = now + 2 * p->lat, .type = E_ARRIVE, .node = n->idx,
					    .id = p->next_inst++});
	}
	if (!n->inflight)
		plb__tasks_close(n->t);
	return 0;
}

static void finished(void *ctx, uint64_t inst, double now)
{
	struct pnode *n = ctx;
	(void)inst;
	int rc = request(n->p, n, now);
	if (rc && !n->p->rc)
		n->p->rc = rc;
}

static int class_of(const struct pipe *p, int gpu)
{
	return (int)p->cfg->models[p->cfg->pus[gpu].model].cls;
}

/* The memory a PU computes in: the host's for CPU PUs (-1), else its own. */
static int space_of(const struct pipe *p, int gpu)
{
	return class_of(p, gpu) == PLB__MODEL_CPU ? -1 : gpu;
}

static double transfer_s(const struct pipe *p, int gpu, double mb)
{
	return plb__curve_spec_eval(&p->cfg->models[p->cfg->pus[gpu].model].transfer, mb);
}

/* The time to bring task id's inputs to PU gpu's memory (the copies are
 * counted in the result). */
static double copy_in(struct pipe *p, struct pnode *n, uint64_t id, int gpu)
{
	uint64_t in[256];
	int k = plb__tasks_inputs(n->t, id, in, 256), to = space_of(p, gpu);
	double s = 0;
	for (int i = 0; i < k && i < 256; i++) {
		uint64_t inst;
		int op, idx, from = n->ran_on[in[i] - 1];
		if (from < 0 || space_of(p, from) == to || plb__tasks_task(n->t, in[i], &inst, &op, &idx))
			continue;
		double mb = p->cfg->ops[op].out_mb;
		if (!(mb > 0))
			continue;
		double c = (space_of(p, from) >= 0 ? transfer_s(p, from, mb) : 0) +
			   (to >= 0 ? transfer_s(p, gpu, mb) : 0);
		s += c;
		p->r->copies++;
		p->r->copy_mb += mb;
		p->r->copy_s += c;
	}
	return s;
}

static int grant(void *ctx, int pu, const struct plb__grant *g)
{
	struct pnode *n = ctx;
	struct pipe *p = n->p;
	uint64_t inst;
	int op, idx, gpu = n->gpu[pu];
	if (plb__tasks_task(n->t, g->id, &inst, &op, &idx))
		return PLB_ESTATE;
	while (n->nran < g->id) {
		int none = -1;
		if (plb__push(&n->ran_on, &n->nran, &n->capran, sizeof none, &none))
			return PLB_ENOMEM;
	}
	n->ran_on[g->id - 1] = gpu;
	int cls = class_of(p, gpu);
	/* its inputs' copy, then its compute once the PU's task before it ends
	 * (a copy overlaps the compute before it) */
	double copy = copy_in(p, n, g->id, gpu), from = fmax(p->now, p->free_at[gpu]);
	double start = fmax(p->now + copy, p->free_at[gpu]);
	double work = p->cfg->ops[op].ms[cls] / 1e3;
	const struct plb__devmodel *m = &p->cfg->models[p->cfg->pus[gpu].model];
	double end = plb__devmodel_stage(m, &p->nz[gpu], PLB__STAGE_COMPUTE, start, work);
	if (!(end - start >= 0.1 * work))
		end = start + 0.1 * work;
	p->free_at[gpu] = end;
	p->r->ran[op][cls]++;
	p->r->busy_s[cls] += end - from;
	return push(p, (struct pev){.t = end, .type = E_END, .node = n->idx, .pu = pu, .id = g->id,
				    .t0 = start, .copy = copy});
}

static int open_node(struct pipe *p, struct pnode *n, const struct plb__pipe_opts *o,
		     enum plb__tasks_policy pol, double err_e, char *err, size_t errlen)
{
	const struct plb__config *cfg = p->cfg;
	int *type = calloc((size_t)cfg->npu + 1, sizeof *type);
	n->gpu = calloc((size_t)cfg->npu + 1, sizeof *n->gpu);
	if (!type || !n->gpu) {
		free(type);
		return PLB_ENOMEM;
	}
	for (int i = 0; i < cfg->npu; i++)
		if (cfg->pus[i].node == n->idx) {
			n->gpu[n->npu] = i;
			type[n->npu++] = class_of(p, i);
			p->r->pus[class_of(p, i)]++;
		}
	struct plb__pipe_op ops[PLB__TASKS_MAX_OPS];
	for (int m = 0; m < cfg->nops; m++) {
		ops[m] = (struct plb__pipe_op){cfg->ops[m].after_mask, cfg->ops[m].tasks, 0};
		for (int k = 0; k < PLB__OP_CLASSES; k++)
			ops[m].types |= (cfg->ops[m].ms[k] > 0) << k;
	}
	struct plb__tasks_cfg tc = {.policy = pol, .nops = cfg->nops, .ops = ops, .npu = n->npu,
				    .type = type, .est_error = err_e, .blind_copies = o->blind_copies,
				    .seed = o->seed ^ (uint64_t)n->idx * 0x9E3779B97F4A7C15ULL,
				    .finished = finished, .ctx = n};
	int rc = 0;
	char why[200] = "";
	if (n->npu)
		n->t = plb__tasks_create(&tc, &rc, why, sizeof why);
	free(type);
	if (!n->npu || !n->t) {
		snprintf(err, errlen, "%s: [node %s]: %s", cfg->path, cfg->nodes[n->idx].name,
			 n->npu ? why : "no emulated PUs: a pipeline's node needs emu PUs");
		return n->npu && rc == PLB_ENOMEM ? PLB_ENOMEM : PLB_ECONFIG;
	}
	for (int m = 0; m < cfg->nops && !o->learn; m++) {
		for (int k = 0; k < PLB__OP_CLASSES; k++)
			if (cfg->ops[m].ms[k] > 0 && plb__tasks_estimate(n->t, m, k, cfg->ops[m].ms[k] / 1e3))
				return PLB_EINVAL;
		/* and its inputs' copies between classes, by the node's first PU
		 * of each (what an earlier run would have measured) */
		int first[PLB__OP_CLASSES] = {-1, -1, -1};
		for (int u = n->npu - 1; u >= 0; u--)
			first[class_of(p, n->gpu[u])] = n->gpu[u];
		for (int f = 0; f < PLB__OP_CLASSES; f++)
			for (int y = 0; y < PLB__OP_CLASSES; y++) {
				if (f == y || first[f] < 0 || first[y] < 0)
					continue;
				double c = 0;
				for (int j = 0; j < m; j++) {
					double mb = cfg->ops[j].out_mb * cfg->ops[j].tasks;
					if (!(cfg->ops[m].after_mask >> j & 1) || !(mb > 0))
						continue;
					c += (f ? transfer_s(p, first[f], mb) : 0) + (y ? transfer_s(p, first[y], mb) : 0);
				}
				if (c > 0 && plb__tasks_estimate_copy(n->t, m, f, y, c))
					return PLB_EINVAL;
			}
	}
	return plb__driver_init_source(&n->d, &plb__tasks_source, n->t, n->npu,
				       cfg->pipeline == 2 ? 2 : 1, grant, NULL, n);
}

static int step(struct pipe *p, const struct pev *e)
{
	struct pnode *n = &p->node[e->node];
	int rc;
	double t0 = plb__now();
	if (e->type == E_ARRIVE) {
		n->inflight--;
		rc = plb__tasks_admit(n->t, e->id, p->now);
		if (!rc && p->next_inst >= p->ninst && !n->inflight)
			plb__tasks_close(n->t);
	} else {
		struct plb__block_done s = {.grant_id = e->id, .finish = p->now,
					    .exec_s = e->t - e->t0, .xfer_s = e->copy};
		p->end = p->now;
		p->r->tasks++;
		rc = plb__driver_done(&n->d, e->pu, &s);
	}
	if (!rc)
		rc = plb__driver_answer(&n->d, p->now);
	p->sched_s += plb__now() - t0;
	return rc ? rc : p->rc;
}

static void fini(struct pipe *p)
{
	for (int i = 0; p->node && i < p->cfg->nnodes; i++) {
		plb__driver_fini(&p->node[i].d);
		plb__tasks_destroy(p->node[i].t);
		free(p->node[i].gpu);
		free(p->node[i].ran_on);
	}
	free(p->node);
	free(p->nz);
	free(p->free_at);
	free(p->heap);
}

int plb__sim_pipeline(const struct plb__config *cfg, const struct plb__pipe_opts *o,
		      struct plb__pipe_result *r, char *err, size_t errlen)
{
	*r = (struct plb__pipe_result){0};
	enum plb__tasks_policy pol;
	const char *sched = o->scheduler ? o->scheduler : cfg->scheduler;
	if (!cfg->nops || !(cfg->units >= 1)) {
		snprintf(err, errlen, "%s: a pipeline needs [op] sections and [run] units (instances)",
			 cfg->path);
		return PLB_ECONFIG;
	}
	if (plb__tasks_policy_parse(sched, &pol)) {
		snprintf(err, errlen, "scheduler '%s': accepted: %s", sched, plb__tasks_policies_accepted());
		return PLB_EINVAL;
	}
	struct pipe p = {.cfg = cfg, .r = r, .ninst = (uint64_t)cfg->units,
			 .lat = cfg->latency_us * 1e-6};
	snprintf(r->scheduler, sizeof r->scheduler, "%s", plb__tasks_policy_name(pol));
	p.node = calloc((size_t)cfg->nnodes, sizeof *p.node);
	p.nz = calloc((size_t)cfg->npu + 1, sizeof *p.nz);
	p.free_at = calloc((size_t)cfg->npu + 1, sizeof *p.free_at);
	if (!p.node || !p.nz || !p.free_at) {
		fini(&p);
		return PLB_ENOMEM;
	}
	for (int i = 0; i < cfg->npu; i++)
		plb__noise_seed(&p.nz[i], o->seed, (uint64_t)i);
	double e_err = o->est_error >= 0 ? o->est_error : cfg->estimate_error;
	int rc = 0;
	for (int i = 0; i < cfg->nnodes && !rc; i++) {
		p.node[i].p = &p;
		p.node[i].idx = i;
		rc = open_node(&p, &p.node[i], o, pol, e_err, err, errlen);
	}
	for (int i = 0; i < cfg->nnodes && !rc; i++) {
		struct pnode *n = &p.node[i];
		int w = o->window > 0 ? o->window : cfg->window > 0 ? cfg->window : 4 * n->npu;
		r->window = w;
		for (int k = 0; k < w && !rc; k++)
			rc = request(&p, n, 0);
		for (int u = 0; u < n->npu && !rc; u++)
			rc = plb__driver_poll(&n->d, u, 0);
	}
	while (!rc && p.nheap) {
		struct pev e;
		plb__heap_pop(&p.heap, &p.nheap, sizeof e, &e, before);
		p.now = e.t;
		rc = step(&p, &e);
	}
	if (rc && !*err)
		snprintf(err, errlen, "pipeline run: %s",
			 p.node && p.node[0].d.failed ? p.node[0].d.failed : "failed");
	for (int i = 0; i < cfg->nnodes && !rc; i++) {
		struct plb__tasks_stats st;
		plb__tasks_stats(p.node[i].t, &st);
		r->instances += st.instances_done;
		if (st.tasks_done != st.tasks_made) {
			snprintf(err, errlen, "pipeline run: node %s ended with %ld of %ld tasks done",
				 cfg->nodes[i].name, st.tasks_done, st.tasks_made);
			rc = PLB_ESTATE;
		}
	}
	if (!rc && r->instances != (long)p.ninst) {
		snprintf(err, errlen, "pipeline run: %ld of %llu instances done", r->instances,
			 (unsigned long long)p.ninst);
		rc = PLB_ESTATE;
	}
	r->makespan_s = p.end;
	r->sched_us_task = r->tasks ? p.sched_s / (double)r->tasks * 1e6 : 0;
	fini(&p);
	return rc;
}
