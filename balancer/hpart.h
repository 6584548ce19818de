/* Hierarchical partitioning with functional performance models (Clarke,
 * Ilic, Lastovetsky, Sousa): a matrix of N x N blocks shared among q nodes
 * as rectangles arranged in columns (layout.h's CMA), each node's
 * rectangle cut into vertical slices among its devices, both levels
 * balanced on each PU's functional performance model (FPM: its time
 * against the size it was given, piecewise linear through what was
 * measured), found by iterating: benchmark every device at its current
 * slice, add the points to the FPMs, re-partition with the geometric
 * partitioning algorithm (GPA: sizes at which every FPM gives the same
 * time, found here by bisection on that time), until the largest relative
 * time difference is below eps2 between a node's devices (IDPA, nested)
 * and below eps1 between nodes (INPA).
 *
 * The benchmark is the caller's (a real kernel, or a device model in a
 * simulation): a device's time for one step of the blocked product on a
 * slice of m x d blocks. Pure: no MPI, no clocks. */
#ifndef PLB_BALANCER_HPART_H
#define PLB_BALANCER_HPART_H

#include "plb_errors.h"

#define PLB__FPM_MAX 64         /* points an FPM keeps */

/* A functional performance model: times t[k] at sizes x[k], x increasing;
 * read piecewise linearly between points, at the constant speed of the
 * nearest end beyond them; never falling (a larger size never takes less
 * time). */
struct plb__fpm {
	int n;
	double x[PLB__FPM_MAX], t[PLB__FPM_MAX];
	double tm[PLB__FPM_MAX];        /* max(t[0..k]): kept by plb__fpm_add */
};

/* Adds the point (x, t), x > 0, t > 0 (a point at an x already there
 * replaces it; past PLB__FPM_MAX the nearest pair's mean is kept). 0 or
 * PLB_EINVAL (nothing added). */
int plb__fpm_add(struct plb__fpm *f, double x, double t);
/* Its time at size x >= 0 (NAN without points). */
double plb__fpm_time(const struct plb__fpm *f, double x);
/* The largest size whose time is at most t. */
double plb__fpm_size(const struct plb__fpm *f, double t);

/* GPA: total whole units shared among n FPMs so that their times are as
 * equal as whole units allow (each at least min_each, and at most
 * max_each[i] where max_each is not NULL: one held at its cap takes less
 * time than the rest, who share what it cannot take): out[i]. Returns the
 * slowest one's time, or NAN on bad arguments (total < n * min_each, a
 * cap below min_each, caps that hold less than total). */
double plb__gpa(const struct plb__fpm *f, int n, long total, long min_each, const long *max_each,
		long *out);

/* The least time in which n devices can share W units of area, each
 * device k taking time(ctx, k, a) for area a (non-decreasing in a): the
 * common time of the equal-time split, found by bisection to a relative
 * 1e-9 (whole units aside). A bound for a partitioning's makespan. */
double plb__equal_time_bound(int n, double (*time)(void *ctx, int k, double area), void *ctx,
			     double W);

enum plb__hpart_method {
	PLB__HPART_FPM,         /* GPA on the FPMs, iterated (the paper's) */
	PLB__HPART_MCPM,        /* multiple constant performance models: shares in
				 * proportion to the last measured speeds, iterated */
	PLB__HPART_SCPM,        /* single CPM: one benchmark at a small size, one split */
	PLB__HPART_HOMOG,       /* equal areas and slices */
	PLB__HPART_NMETHOD
};
const char *plb__hpart_method_name(enum plb__hpart_method m);

struct plb__hpart_cfg {
	int q;                  /* nodes */
	const int *p;           /* devices of each node */
	int N;                  /* blocks a side */
	double eps1, eps2;      /* INPA's and IDPA's imbalance to stop at (0.05, 0.05) */
	int max_iter;           /* INPA's and IDPA's iterations at most (each) */
	enum plb__hpart_method method;
	/* device j of node i's time for one step on a slice of m x d blocks
	 * (d a whole number of 1/sub blocks) */
	double (*bench)(void *ctx, int i, int j, int m, double d);
	/* if not NULL, used instead of bench: node i's devices all at once, as
	 * they run in the product (they share the node's cores, memory and
	 * links), device j on m x d[j] blocks; t[j] its time (d[j] = 0: not
	 * run, t[j] = 0). The paper's IDPA benchmarks a node's devices so. */
	void (*bench_node)(void *ctx, int i, int m, const double *d, double *t);
	/* a device's slice is a whole number of 1/sub blocks wide: b, a
	 * block's columns, for slices of whole columns of elements (a
	 * device's gemm takes any width; the pivots a node receives are its
	 * rectangle's, whatever its slices); 0 or 1: whole blocks */
	int sub;
	/* if not NULL: node i's time a step to receive the pivots of its m x n
	 * rectangle (m + n blocks), added to its devices' for the nodes'
	 * balance (the paper balances the kernel alone) */
	double (*comm)(void *ctx, int i, int m, int n);
	/* if not NULL: node i's rectangle is at most cap[i] blocks (its
	 * memory; INFINITY: no cap). Every method's areas are kept within
	 * them (the others share what a capped node cannot take), the GPA's
	 * equal times among the nodes below their caps; whole blocks too */
	const double *cap;
	void *ctx;
};

/* The partition: node i's rectangle m[i] x n[i] blocks at (row[i], at[i])
 * in column col[i]; its devices' slices d[off[i] + j] 1/sub blocks wide
 * (they sum to n[i] sub); the last benchmarked times (node: its slowest device's,
 * plus its communication where the configuration gives it);
 * the iterations and benchmarks made; the sum of half-perimeters (in
 * blocks) and its lower bound 2 sum sqrt(m_i n_i). */
struct plb__hpart {
	int q, ndev;
	int *m, *n, *col, *row, *at, *off, *d;
	double *t_node, *t_dev;
	int inter_iters, benches;
	int converged;          /* INPA stopped at eps1 or at a fixed point, not at max_iter */
	long half_perimeters;
	double half_perimeters_lb;
	double imbalance;       /* (slowest - fastest node) / slowest, last benchmark */
	double step_bound;      /* the equal-time split of the N x N blocks over every
				 * device's FPM (whole blocks and the layout aside):
				 * no partition on what was measured steps faster */
};

/* Runs the method's partitioning. 0, PLB_EINVAL (bad cfg, or N too small
 * for every node and device to have a block), PLB_ENOMEM, PLB_ECONFIG
 * (the caps hold less than N x N blocks, or whole-block rectangles
 * within them were not found). *out is caller-owned: plb__hpart_fini. */
PLB_WUR int plb__hpart_run(const struct plb__hpart_cfg *cfg, struct plb__hpart *out);
void plb__hpart_fini(struct plb__hpart *h);

/* MiB node i holds in partition h: its rectangles of A, B and C and two
 * pivot buffers (2 (m + n) blocks), block_mb a block's. */
double plb__hpart_node_mb(const struct plb__hpart *h, int i, double block_mb);

/* plb__hpart_run with each node i within memory_mb[i] MiB (0: no cap;
 * memory_mb NULL: none) of blocks of block_mb: its cap first that of a
 * square rectangle, then lowered by what a thinner one needs more (at
 * most 5 runs). cfg->cap is set here (NULL again after). 0; PLB_ECONFIG
 * with *over the node that did not fit (-1: the matrices do not fit in
 * all the nodes' memory, or no layout within the caps was found); the
 * codes of plb__hpart_run. */
PLB_WUR int plb__hpart_run_mem(struct plb__hpart_cfg *cfg, const double *memory_mb, double block_mb,
			       struct plb__hpart *h, int *over);

#endif
