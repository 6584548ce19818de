/* Times the equal-time solvers (balancer/solver.h) on realistic curves,
 * E_p(x) = c0 + a x + b x ln(1 + x/W) + d e^(x/W) with per-PU coefficients
 * over a 50x speed range and avail_p in [0, 0.1 T], so one evaluation costs
 * about one exp and one log as a fitted model's does. Prints mean and max
 * milliseconds per solve beside the targets, and how far SLSQP's T is from
 * the fast path's. Standalone: no arguments; runs in well under 20 s. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "balancer/base/clock.h"
#include "balancer/solver.h"
#include "test/unit/test_util.h"

#define NINST 4		/* instances per size, solved in turn */

struct curve {
	double c0, a, b, d, W;
};

static double c_eval(const void *ctx, double x)
{
	const struct curve *k = ctx;
	double z = x / k->W;

	return k->c0 + k->a * x + k->b * x * log1p(z) + k->d * exp(z);
}

static double c_deriv(const void *ctx, double x)
{
	const struct curve *k = ctx;
	double z = x / k->W;

	return k->a + k->b * (log1p(z) + z / (1 + z)) + k->d * exp(z) / k->W;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void)
{
	return test_urand(&rng);
}

struct inst {
	int n;
	double S;
	struct curve *k;
	struct plb__efun *e;
	double *x;
};

/* A domain of W units, which the slowest PUs would take ~10 s over and the
 * fastest 50 times less; a step S of half of it; fixed costs up to 5 ms
 * on the slowest. */
static int inst_make(struct inst *in, int n)
{
	double W = 1e7;
	struct plb__solve_out o;

	in->n = n;
	in->S = 0.5 * W;
	in->k = malloc((size_t)n * sizeof *in->k);
	in->e = malloc((size_t)n * sizeof *in->e);
	in->x = malloc((size_t)n * sizeof *in->x);
	if (!in->k || !in->e || !in->x)
		return -1;
	for (int p = 0; p < n; p++) {
		double s = pow(50, urand()), a = 10 / W * (0.8 + 0.4 * urand());

		in->k[p] = (struct curve){
			.c0 = 0.005 * urand() / s,
			.a = a / s,
			.b = 0.3 * urand() * a / s,
			.d = 0.002 * urand() / s,
			.W = W,
		};
		in->e[p] = (struct plb__efun){ .eval = c_eval,
			.deriv = c_deriv, .ctx = &in->k[p] };
	}
	/* avail in [0, 0.1 T], T from the same PUs all free now */
	if (plb__solve_fast(in->e, n, in->S, in->x, &o))
		return -1;
	for (int p = 0; p < n; p++)
		in->e[p].avail = 0.1 * o.T * urand();
	return 0;
}

static void inst_free(struct inst *in)
{
	free(in->k);
	free(in->e);
	free(in->x);
}

typedef int (*solve_fn)(const struct plb__efun *, int, double, double *,
			struct plb__solve_out *);

struct result {
	int reps, skipped;
	double mean_ms, max_ms, iters, T[NINST];
};

/* One untimed warm-up solve (the size is skipped if it takes longer than
 * skip_s), then the instances in turn until at least 20 solves and min_s
 * seconds, or budget_s seconds and 3 solves. */
static int run(solve_fn solve, struct inst *in, double min_s, double budget_s,
	       double skip_s, struct result *r)
{
	double t0, t, sum = 0, its = 0;
	struct plb__solve_out o;

	*r = (struct result){ 0 };
	t0 = plb__now();
	if (solve(in[0].e, in[0].n, in[0].S, in[0].x, &o))
		return -1;
	t = plb__now() - t0;
	if (t > skip_s) {
		r->skipped = 1;
		r->max_ms = 1e3 * t;
		return 0;
	}
	t0 = plb__now();
	for (;;) {
		int i = r->reps % NINST;
		double s = plb__now(), dt;

		if (solve(in[i].e, in[i].n, in[i].S, in[i].x, &o))
			return -1;
		dt = plb__now() - s;
		r->T[i] = o.T;
		sum += dt;
		its += o.iters;
		if (1e3 * dt > r->max_ms)
			r->max_ms = 1e3 * dt;
		r->reps++;
		t = plb__now() - t0;
		if ((r->reps >= 20 && t >= min_s) ||
		    (r->reps >= 3 && t >= budget_s))
			break;
	}
	r->mean_ms = 1e3 * sum / r->reps;
	r->iters = its / r->reps;
	return 0;
}

static void row(const char *name, int n, const struct result *r,
		const char *target, const char *gap)
{
	if (r->skipped)
		printf("%-6s %5d %6s %10s %10.1f %7s  %-16s\n", name, n, "-",
		       "skipped", r->max_ms, "", "(one solve > 2 s)");
	else
		printf("%-6s %5d %6d %10.4f %10.4f %7.1f  %-16s %s\n", name, n,
		       r->reps, r->mean_ms, r->max_ms, r->iters, target, gap);
}

/* The fast path at every size, SLSQP up to 256 PUs. */
static int bench_size(int n)
{
	struct inst in[NINST];
	struct result rf, rs;
	double goal = n == 16 ? 0.1 : n == 4096 ? 10 : 0, gap = 0;
	char target[32] = "", buf[32];
	int rc = -1;

	for (int i = 0; i < NINST; i++)
		in[i] = (struct inst){ 0 };
	for (int i = 0; i < NINST; i++)
		if (inst_make(&in[i], n))
			goto out;
	if (run(plb__solve_fast, in, 0.3, 1.0, 10, &rf))
		goto out;
	if (goal > 0)
		snprintf(target, sizeof target, "<= %g ms %s", goal,
			 rf.mean_ms <= goal ? "ok" : "MISSED");
	row("fast", n, &rf, target, "");
	if (n <= 256) {
		if (run(plb__solve_slsqp, in, 0.3, 2.0, 2.0, &rs))
			goto out;
		for (int i = 0; i < NINST && i < rs.reps; i++)
			gap = fmax(gap, fabs(rs.T[i] - rf.T[i]) / rf.T[i]);
		snprintf(buf, sizeof buf, "%.1e", gap);
		row("slsqp", n, &rs, "", buf);
	}
	rc = 0;
out:
	for (int i = 0; i < NINST; i++)
		inst_free(&in[i]);
	return rc;
}

int main(void)
{
	static const int sizes[] = { 4, 16, 64, 256, 1024, 4096 };
	double t0 = plb__now();

	printf("equal-time solver, E(x) = c0 + a x + b x ln(1+x/W) + d e^(x/W),"
	       " speeds over 50x, avail in [0, 0.1 T]\n");
	printf("%-6s %5s %6s %10s %10s %7s  %-16s %s\n", "solver", "PUs",
	       "reps", "mean_ms", "max_ms", "iters", "target", "T vs fast");
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (bench_size(sizes[i])) {
			fprintf(stderr, "bench_solver: a solve failed at %d "
				"PUs\n", sizes[i]);
			return 1;
		}
	printf("targets: the fast path's mean per solve; iters: outer "
	       "iterations (fast), evaluations (slsqp); %.1f s in all\n",
	       plb__now() - t0);
	return 0;
}
