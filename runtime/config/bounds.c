/* T_lb and T_eq from true curves (see bounds.h). Inversions are bisections:
 * true curves are non-decreasing in block size (the config loader rejects
 * decreasing tables), so "largest b with E(b) <= t" is well defined. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/bounds.h"

/* A PU's true curve as a bound reads it: its model, whether transfers
 * overlap compute, and the factors its couplings slow each stage by. */
struct pu_curve {
	const struct plb__devmodel *m;
	int overlap;
	double fx, fc;
};

static double block_time(const struct pu_curve *c, double b)
{
	double f = plb__curve_spec_eval(&c->m->compute, b) * c->fc;
	double g = plb__curve_spec_eval(&c->m->transfer, b) * c->fx;
	return c->overlap ? fmax(f, g) : f + g;
}

/* Largest b in [0, W] with fn(b) <= t, for non-decreasing fn. */
static double invert(double (*fn)(const struct pu_curve *, double), const struct pu_curve *c,
		     double t, double W)
{
	if (fn(c, W) <= t)
		return W;
	double lo = 0, hi = W;
	if (fn(c, 0) > t)
		return 0;
	for (int i = 0; i < 200 && hi - lo > 1e-9 * (1 + hi); i++) {
		double mid = 0.5 * (lo + hi);
		if (fn(c, mid) <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* b / E(b), 0 where E(b) is not positive. */
static double rate_at(const struct pu_curve *c, double b)
{
	double e = block_time(c, b);
	return e > 0 ? b / e : 0;
}

/* r(t) = max over b with E(b) <= t of b / E(b): on each linear piece of a
 * table b/E(b) is monotone, so its breakpoints and the largest feasible b
 * are the candidates. For a polynomial with non-negative coefficients
 * E(b)/b = c0/b + c1 + c2 b + ... is convex, so b/E(b) has one peak: a log
 * grid finds its neighbourhood and a golden-section search the peak. */
static double best_rate(const struct pu_curve *pc, double t, double W)
{
	double best = 0;
	double bmax = invert(block_time, pc, t, W);
	if (bmax > 0)
		best = bmax / fmax(block_time(pc, bmax), 1e-300);
	const struct plb__curve_spec *cs[2] = {&pc->m->compute, &pc->m->transfer};
	for (int k = 0; k < 2; k++) {
		const struct plb__curve_spec *c = cs[k];
		if (c->kind == PLB__CURVE_TABLE) {
			for (int i = 0; i < c->n && c->x[i] <= bmax; i++)
				if (c->x[i] > 0)
					best = fmax(best, rate_at(pc, c->x[i]));
		} else if (c->kind == PLB__CURVE_POLY && bmax > 1) {
			int top = 0;
			double peak = 0;
			for (int i = 0; i <= 64; i++) {
				double r = rate_at(pc, pow(bmax, i / 64.0));
				if (r > peak) {
					peak = r;
					top = i;
				}
			}
			/* golden section on log b between the peak's neighbours */
			double lo = (top > 0 ? top - 1 : 0) / 64.0 * log(bmax);
			double hi = (top < 64 ? top + 1 : 64) / 64.0 * log(bmax);
			const double g = 0.6180339887498949;
			for (int it = 0; it < 60 && hi - lo > 1e-12; it++) {
				double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
				if (rate_at(pc, exp(x1)) < rate_at(pc, exp(x2)))
					lo = x1;
				else
					hi = x2;
			}
			best = fmax(best, fmax(peak, rate_at(pc, exp(0.5 * (lo + hi)))));
		}
	}
	return best;
}

/* Most PU c does between `from` (its node's shared data in) and T. */
static double capacity(const struct pu_curve *c, double from, double T, double W)
{
	double teff = plb__devmodel_work_until(c->m, fmin(T, c->m->fail_t));
	if (from > 0)
		teff -= plb__devmodel_work_until(c->m, fmin(from, c->m->fail_t));
	if (teff <= 0)
		return 0;
	double cap = best_rate(c, teff, W) * teff;
	return cap < W ? cap : W;
}

/* What a bound sums over: the PUs, and what the links and couplings add. */
struct bound_in {
	const struct plb__devmodel *const *m;
	int n, overlap;
	const struct plb__bound_extra *x;
	double maxb;            /* bytes a unit puts on a link one way, at most */
	double *from;           /* per node: its shared data in, at the earliest */
	int *group;             /* per PU: its node's index among those with
				 * coupled PUs, or -1 */
	int ngroup;
	int **gpu;              /* per group: its coupled PUs */
	int *gn;
};

/* Smallest T with total(T) >= W, total non-decreasing. */
static double solve_T(double (*total)(const struct bound_in *, double, double),
		      const struct bound_in *in, double W)
{
	double hi = 1e-6;
	while (total(in, hi, W) < W) {
		hi *= 2;
		if (hi > 1e13)
			return INFINITY;
	}
	double lo = 0;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = 0.5 * (lo + hi);
		if (total(in, mid, W) >= W)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

static double total_capacity(const struct bound_in *in, double T, double W)
{
	double s = 0;
	for (int i = 0; i < in->n; i++) {
		struct pu_curve c = {in->m[i], in->overlap, 1, 1};
		s += capacity(&c, 0, T, W);
	}
	return s;
}

double plb__bound_lower(const struct plb__devmodel *const *m, int n, double W,
			int overlap)
{
	struct bound_in in = {.m = m, .n = n, .overlap = overlap};
	return solve_T(total_capacity, &in, W);
}

/* Most a group's coupled PUs do by T: the best over the subsets S of them
 * that run (each of S slowed by the rules whose culprits are in S), the
 * others idle. */
static double group_capacity(const struct bound_in *in, int g, double from, double T, double W)
{
	const struct plb__bound_extra *x = in->x;
	int k = in->gn[g];
	/* more coupled PUs than can be searched: all of them, coupled */
	int all = k > PLB__BOUND_SUBSET_MAX;
	unsigned long full = all ? 1 : (1ul << k) - 1;
	double best = 0;
	for (unsigned long S = 1; S <= full; S++) {
		double sum = 0;
		for (int a = 0; a < k; a++) {
			if (!all && !(S >> a & 1))
				continue;
			int p = in->gpu[g][a];
			struct pu_curve c = {in->m[p], in->overlap, 1, 1};
			for (int r = 0; r < x->ncouple; r++) {
				const struct plb__couple *cp = &x->couples[r];
				if (cp->victim != p)
					continue;
				for (int q = 0; q < cp->nculprit; q++) {
					int b = 0;
					while (b < k && in->gpu[g][b] != cp->culprits[q])
						b++;
					if (b < k && (all || (S >> b & 1))) {
						*(cp->stage == PLB__STAGE_XFER ? &c.fx : &c.fc) *= cp->factor;
						break;
					}
				}
			}
			sum += capacity(&c, from, T, W);
		}
		best = fmax(best, sum);
	}
	return best;
}

/* Units a link of bw bytes a second carries in T, `shared` bytes down
 * first: INFINITY where it is not limited or units move no bytes. */
static double link_units(double bw, double T, double shared, double in_b, double out_b)
{
	if (!(bw > 0))
		return INFINITY;
	double down = bw * T - shared, u = INFINITY;
	if (down < 0)
		return 0;
	if (in_b > 0)
		u = down / in_b;
	if (out_b > 0)
		u = fmin(u, bw * T / out_b);
	return u;
}

static int by_more(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x > y ? -1 : x < y;
}

/* Most the cluster does by T. A node does what its PUs do from when its
 * shared data is in (all of it over its own path: from[k]) and its link
 * carries; the master's link carries one copy of the shared data for
 * each node that takes part and every unit's bytes: the most is the best
 * m nodes' together, for the m whose copies leave the link room. */
static double total_extra(const struct bound_in *in, double T, double W)
{
	const struct plb__bound_extra *x = in->x;
	int nn = x->nnodes > 0 ? x->nnodes : 1;
	double *node = calloc((size_t)nn, sizeof *node);
	if (!node)
		return 0;
	double sh = x->shared_bytes;
	for (int i = 0; i < in->n; i++)
		if (in->group[i] < 0) {
			struct pu_curve c = {in->m[i], in->overlap, 1, 1};
			node[x->node[i]] += capacity(&c, in->from ? in->from[x->node[i]] : 0, T, W);
		}
	for (int g = 0; g < in->ngroup; g++) {
		int k = x->node[in->gpu[g][0]];
		node[k] += group_capacity(in, g, in->from ? in->from[k] : 0, T, W);
	}
	for (int k = 0; k < x->nnodes; k++)
		node[k] = fmin(node[k], x->bw_node ? link_units(x->bw_node[k], T, sh, x->in_bytes,
								x->out_bytes)
						   : INFINITY);
	double s = 0;
	if (!(sh > 0)) {
		for (int k = 0; k < x->nnodes; k++)
			s += node[k];
		s = fmin(s, link_units(x->bw_master, T, 0, x->in_bytes, x->out_bytes));
	} else {
		qsort(node, (size_t)x->nnodes, sizeof *node, by_more);
		double top = 0;
		for (int m = 1; m <= x->nnodes && node[m - 1] > 0; m++) {
			top += node[m - 1];
			s = fmax(s, fmin(top, link_units(x->bw_master, T, m * sh, x->in_bytes,
							 x->out_bytes)));
		}
	}
	free(node);
	return s;
}

double plb__bound_lower_extra(const struct plb__devmodel *const *m, int n, double W, int overlap,
			      const struct plb__bound_extra *x, double *link_s)
{
	struct bound_in in = {.m = m, .n = n, .overlap = overlap, .x = x,
			      .maxb = fmax(x->in_bytes, x->out_bytes)};
	double T = INFINITY;
	*link_s = 0;
	/* the links alone: the master's, and the nodes' together */
	double agg = 0;
	for (int k = 0; k < x->nnodes; k++)
		agg += x->bw_node && x->bw_node[k] > 0 ? x->bw_node[k] : INFINITY;
	double bw = fmin(x->bw_master > 0 ? x->bw_master : INFINITY, agg);
	if ((in.maxb > 0 || x->shared_bytes > 0) && isfinite(bw))
		*link_s = fmax(W * x->in_bytes + x->shared_bytes, W * x->out_bytes) / bw;
	/* a node's shared data is in no sooner than it crosses the slower of
	 * its link and the master's alone */
	if (x->shared_bytes > 0 && (in.from = calloc((size_t)(x->nnodes > 0 ? x->nnodes : 1),
						   sizeof *in.from)))
		for (int k = 0; k < x->nnodes; k++) {
			double b = fmin(x->bw_master > 0 ? x->bw_master : INFINITY,
					x->bw_node && x->bw_node[k] > 0 ? x->bw_node[k] : INFINITY);
			in.from[k] = isfinite(b) ? x->shared_bytes / b : 0;
		}
	in.group = malloc((size_t)n * sizeof *in.group);
	in.gpu = calloc((size_t)n, sizeof *in.gpu);
	in.gn = calloc((size_t)n, sizeof *in.gn);
	int *of_node = malloc((size_t)(x->nnodes > 0 ? x->nnodes : 1) * sizeof *of_node);
	if (!in.group || !in.gpu || !in.gn || !of_node)
		goto out;
	for (int k = 0; k < x->nnodes; k++)
		of_node[k] = -1;
	for (int i = 0; i < n; i++)
		in.group[i] = -1;
	/* the coupled PUs, victims and culprits, grouped by node */
	for (int r = 0; r < x->ncouple; r++) {
		const struct plb__couple *cp = &x->couples[r];
		for (int q = -1; q < cp->nculprit; q++) {
			int p = q < 0 ? cp->victim : cp->culprits[q];
			if (in.group[p] >= 0)
				continue;
			int k = x->node[p];
			if (of_node[k] < 0)
				of_node[k] = in.ngroup++;
			int g = of_node[k];
			int *a = realloc(in.gpu[g], (size_t)(in.gn[g] + 1) * sizeof *a);
			if (!a)
				goto out;
			a[in.gn[g]++] = p;
			in.gpu[g] = a;
			in.group[p] = g;
		}
	}
	T = solve_T(total_extra, &in, W);
out:
	for (int g = 0; g < in.ngroup; g++)
		free(in.gpu[g]);
	free(in.gpu);
	free(in.gn);
	free(in.group);
	free(in.from);
	free(of_node);
	return T;
}

/* Finish time of one block of b units started at t = 0. */
static double one_block(const struct pu_curve *pc, double b)
{
	const struct plb__devmodel *m = pc->m;
	double x = plb__devmodel_finish(m, 0, plb__curve_spec_eval(&m->transfer, b));
	double c = plb__devmodel_finish(m, x, plb__curve_spec_eval(&m->compute, b));
	return c <= m->fail_t ? c : INFINITY;
}

static double total_one_round(const struct bound_in *in, double T, double W)
{
	double s = 0;
	for (int i = 0; i < in->n; i++) {
		struct pu_curve c = {in->m[i], 0, 1, 1};
		s += invert(one_block, &c, T, W);
	}
	return s;
}

double plb__bound_eq(const struct plb__devmodel *const *m, int n, double W)
{
	struct bound_in in = {.m = m, .n = n};
	return solve_T(total_one_round, &in, W);
}
