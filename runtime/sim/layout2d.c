/* plbsim's two-level case: see layout2d.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/pivots.h"
#include "runtime/config/devmodel.h"
#include "runtime/sim/layout2d.h"

struct ctx {
	const struct plb__config *cfg;
	int *pu;                /* PU index of node i's j-th at off[i] + j */
	int *off;
	struct plb__rng *rng;   /* a stream a PU: its benchmarks' noise */
	double b;
};

static const struct plb__devmodel *model_of(const struct ctx *c, int k)
{
	return &c->cfg->models[c->cfg->pus[c->pu[k]].model];
}

/* PU k's true time for a slice of `area` blocks */
static double true_time(const struct ctx *c, int k, double area)
{
	return area > 0 ? plb__curve_spec_eval(&model_of(c, k)->compute, area) : 0;
}

/* hpart's benchmark: the true time with one draw of the PU's noise */
static double bench(void *ctx, int i, int j, int m, double d)
{
	struct ctx *c = ctx;
	int k = c->off[i] + j;
	return true_time(c, k, m * d) * plb__rng_noise(&c->rng[k], model_of(c, k)->noise);
}

/* node i's pivots a step: m + n blocks of b^2 doubles, and two latencies */
static double comm_time(const struct ctx *c, int i, int m, int n)
{
	double bw = c->cfg->nodes[i].link_gbps * 1e9 / 8;
	if (!(bw > 0))
		return 0;
	return (m + n) * c->b * c->b * 8 / bw + 2 * c->cfg->latency_us * 1e-6;
}

static double comm(void *ctx, int i, int m, int n)
{
	return comm_time(ctx, i, m, n);
}

static double bound_time(void *ctx, int k, double area)
{
	return true_time(ctx, k, area);
}

void plb__sim2d_result_fini(struct plb__sim2d_result *r)
{
	plb__hpart_fini(&r->part);
}

int plb__sim2d_run(const struct plb__config *cfg, const struct plb__sim2d_opts *o,
		   struct plb__sim2d_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	int q = cfg->nnodes, b = o->b > 0 ? o->b : 128;
	if (cfg->nops) {
		snprintf(err, errlen, "%s: a pipeline ([op] sections) has no 2-D layout", cfg->path);
		return PLB_ECONFIG;
	}
	if (!(o->n >= b)) {
		snprintf(err, errlen, "the matrices' side n = %ld is below the block's b = %d; accepted: n >= b",
			 o->n, b);
		return PLB_EINVAL;
	}
	long N = (o->n + b - 1) / b;
	if (N > 1L << 20) {
		snprintf(err, errlen, "n = %ld in blocks of %d is %ld blocks a side; accepted: at most %ld",
			 o->n, b, N, 1L << 20);
		return PLB_EINVAL;
	}
	struct ctx c = {.cfg = cfg, .b = b};
	int *p = calloc((size_t)q + 1, sizeof *p);
	c.off = calloc((size_t)q + 1, sizeof *c.off);
	c.pu = malloc(((size_t)cfg->npu + 1) * sizeof *c.pu);
	c.rng = malloc(((size_t)cfg->npu + 1) * sizeof *c.rng);
	int rc = PLB_ENOMEM;
	if (!p || !c.off || !c.pu || !c.rng) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int k = 0; k < cfg->npu; k++) {
		const struct plb__devmodel *m = &cfg->models[cfg->pus[k].model];
		if (!(plb__curve_spec_eval(&m->compute, 1) > 0)) {
			snprintf(err, errlen, "%s:%d: [model %s]: its compute takes 0 s for a block; the 2-D layout needs a time for every slice; accepted: a curve above 0 at 1 unit",
				 cfg->path, m->line, m->name);
			rc = PLB_ECONFIG;
			goto out;
		}
		p[cfg->pus[k].node]++;
	}
	for (int i = 0; i < q; i++) {
		if (!p[i]) {
			snprintf(err, errlen, "%s:%d: node %s has no emulated PU (emu =): the 2-D layout partitions emulated PUs only",
				 cfg->path, cfg->nodes[i].line, cfg->nodes[i].name);
			rc = PLB_ECONFIG;
			goto out;
		}
		c.off[i + 1] = c.off[i] + p[i];
	}
	if ((long)q > N * N) {
		snprintf(err, errlen, "%d nodes cannot each have a block of %ld x %ld; accepted: n at least %d",
			 q, N, N, b * (int)ceil(sqrt(q)));
		rc = PLB_EINVAL;
		goto out;
	}
	/* PUs in node order (config order keeps a node's together, but not
	 * necessarily nodes in file order) */
	int *fill = calloc((size_t)q + 1, sizeof *fill);
	if (!fill) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int k = 0; k < cfg->npu; k++) {
		int i = cfg->pus[k].node, at = c.off[i] + fill[i]++;
		c.pu[at] = k;
		plb__rng_seed(&c.rng[at], o->seed, (uint64_t)k);
	}
	free(fill);
	/* [node] memory_mb: each node's rectangles within it */
	double block_mb = (double)b * b * 8 / 1048576, need = 3.0 * N * N * block_mb, held = 0;
	double *mem = calloc((size_t)q + 1, sizeof *mem);
	if (!mem) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < q; i++) {
		mem[i] = cfg->nodes[i].memory_mb;
		held += mem[i] > 0 ? mem[i] : INFINITY;
	}
	struct plb__hpart_cfg hc = {.q = q, .p = p, .N = (int)N, .eps1 = o->eps > 0 ? o->eps : 0.05,
				    .eps2 = o->eps > 0 ? o->eps : 0.05,
				    .max_iter = 20, .method = o->method, .bench = bench, .comm = comm,
				    .ctx = &c, .sub = b};
	int over = -1;
	rc = plb__hpart_run_mem(&hc, mem, block_mb, &r->part, &over);
	free(mem);
	if (rc == PLB_ECONFIG) {
		if (held < need)
			snprintf(err, errlen, "%s: the matrices (A, B and C: 3 x %ld^2 doubles, %.0f MiB) do not fit in the nodes' [node] memory_mb (%.0f MiB in all); accepted: a smaller n, or more memory",
				 cfg->path, o->n, need, held);
		else if (over >= 0)
			snprintf(err, errlen, "%s:%d: node %s: no rectangle of the %ld x %ld blocks was found within its [node] memory_mb = %g MiB",
				 cfg->path, cfg->nodes[over].line, cfg->nodes[over].name, N, N,
				 cfg->nodes[over].memory_mb);
		else
			snprintf(err, errlen, "%s: no layout of the %ld x %ld blocks keeps every node within its [node] memory_mb; accepted: a smaller n, or more memory",
				 cfg->path, N, N);
		goto out;
	}
	if (rc) {
		snprintf(err, errlen, "partitioning %ld x %ld blocks over %d nodes: %s", N, N, q,
			 plb_strerror(rc));
		goto out;
	}
	r->method = o->method;
	r->N = (int)N;
	double W = (double)N * N, fast = 0;
	for (int i = 0; i < q; i++) {
		const struct plb__hpart *h = &r->part;
		double t = 0;
		for (int j = 0; j < p[i]; j++)
			t = fmax(t, true_time(&c, c.off[i] + j, h->m[i] * ((double)h->d[h->off[i] + j] / b)));
		r->step_s = fmax(r->step_s, t + comm_time(&c, i, h->m[i], h->n[i]));
		r->bytes_step += (double)(h->m[i] + h->n[i]) * b * b * 8;
		fast = fmax(fast, cfg->nodes[i].link_gbps);
	}
	for (int i = 0; i < q; i++) {
		double mb = plb__hpart_node_mb(&r->part, i, block_mb);
		if (mb > r->mem_max_mb) {
			r->mem_max_mb = mb;
			r->mem_max_node = i;
		}
	}
	struct plb__grid g = {q, (int)N, r->part.m, r->part.n, r->part.row, r->part.at};
	for (int i = 0; i < q; i++)
		r->bytes_net += plb__pivots_blocks_in(&g, i) * b * b * 8;
	/* the least a node's pivots can cost: a square of W / q blocks over
	 * the fastest link (each node's, where every node has one) */
	double least = 0;
	for (int i = 0; i < q && fast > 0; i++)
		if (!(cfg->nodes[i].link_gbps > 0))
			fast = 0;
	if (fast > 0)
		least = 2 * sqrt(W / q) * b * b * 8 / (fast * 1e9 / 8) + 2 * cfg->latency_us * 1e-6;
	r->bound_s = plb__equal_time_bound(cfg->npu, bound_time, &c, W) + least;
	r->product_s = N * r->step_s;
	double side = (double)N * b;
	r->bytes_1d = (q + 2.0) * side * side * 8;
	r->mem_all_mb = need;
	rc = 0;
out:
	free(p);
	free(c.off);
	free(c.pu);
	free(c.rng);
	return rc;
}

void plb__sim2d_print(const struct plb__config *cfg, const struct plb__sim2d_result *r, FILE *f)
{
	const struct plb__hpart *h = &r->part;
	fprintf(f, "partitioner %s on %s: %d x %d blocks over %d nodes\n",
		plb__hpart_method_name(r->method), cfg->path, r->N, r->N, h->q);
	fprintf(f, "  step           %.6g s (the slowest node's compute and pivots; bound %.6g s, ratio %.4f)\n",
		r->step_s, r->bound_s, r->step_s / r->bound_s);
	fprintf(f, "  product        %.6g s (%d steps)\n", r->product_s, r->N);
	fprintf(f, "  partitioner    %d node iterations, %d benchmarks%s\n", h->inter_iters, h->benches,
		r->method == PLB__HPART_SCPM || r->method == PLB__HPART_HOMOG ? ""
		: h->converged ? ", converged"
		: ", stopped at its iteration limit (the best partition measured kept)");
	fprintf(f, "  half-perimeters %ld blocks (%.4f of their lower bound %.1f)\n", h->half_perimeters,
		(double)h->half_perimeters / h->half_perimeters_lb, h->half_perimeters_lb);
	fprintf(f, "  pivots         %.4g MB into the nodes a step, %.4g GB across the network in all (the pivots a node holds itself stay; plb's 1-D product: %.4g GB, A to each node and B's and C's columns once)\n",
		r->bytes_step / 1e6, r->bytes_net / 1e9, r->bytes_1d / 1e9);
	const struct plb__node *big = &cfg->nodes[r->mem_max_node];
	fprintf(f, "  memory         %.4g MiB at most a node (%s", r->mem_max_mb, big->name);
	if (big->memory_mb > 0)
		fprintf(f, ", of its memory_mb %g", big->memory_mb);
	fprintf(f, "; A, B and C %.4g MiB in all)\n", r->mem_all_mb);
	fprintf(f, "  node             rectangle (blocks)        at   PUs' slices (element columns)\n");
	for (int i = 0; i < h->q; i++) {
		char where[48], rect[48];
		snprintf(rect, sizeof rect, "%d x %d", h->m[i], h->n[i]);
		snprintf(where, sizeof where, "(%d, %d)", h->row[i], h->at[i]);
		fprintf(f, "  %-16s %-16s %12s  ", cfg->nodes[i].name, rect, where);
		int first = 1;
		for (int j = 0; j < h->off[i + 1] - h->off[i]; j++) {
			/* the PUs in node order: names from the config */
			const char *name = "?";
			for (int u = 0, seen = 0; u < cfg->npu; u++)
				if (cfg->pus[u].node == i && seen++ == j)
					name = cfg->pus[u].name;
			fprintf(f, "%s%s %d", first ? "" : ", ", name, h->d[h->off[i] + j]);
			first = 0;
		}
		fprintf(f, "\n");
	}
}
