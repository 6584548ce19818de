/* plbsim's two-level case (hierarchical partitioning, balancer/hpart.h):
 * the heterogeneous 2-D blocked product C = A B of n x n doubles in b x b
 * blocks, laid out over a scenario's nodes (CMA) and each node's
 * rectangle cut into vertical slices among its emulated PUs, by one of
 * the partitioners (the paper's FPM one, multiple- or single-CPM,
 * homogeneous).
 *
 * A PU's [model] compute curve is its time for one step of the product
 * on a slice of the given area in blocks (a unit is one b x b block of C
 * updated by a pivot of width b: 2 b^3 flops); its noise is a benchmark's
 * (one lognormal draw each); its transfer curve, speed changes and
 * failures are not used. A node's [node] link_gbps carries its pivot row
 * and column each step (m + n blocks of b^2 doubles into a node whose
 * rectangle is m x n blocks), plus two latencies; without it the pivots
 * cost nothing. Deterministic for a seed. */
#ifndef PLB_SIM_LAYOUT2D_H
#define PLB_SIM_LAYOUT2D_H

#include <stdint.h>
#include <stdio.h>

#include "balancer/hpart.h"
#include "runtime/config/config.h"

struct plb__sim2d_opts {
	long n;                 /* the matrices' side, in elements */
	int b;                  /* the block's side (default 128) */
	enum plb__hpart_method method;
	uint64_t seed;
	double eps;             /* INPA's and IDPA's imbalance to stop at; 0: 0.05 */
};

struct plb__sim2d_result {
	enum plb__hpart_method method;
	int N;                  /* blocks a side: ceil(n / b) */
	double step_s;          /* the partition's step: its slowest node's time (true curves) */
	double bound_s;         /* the step's lower bound (plb__sim2d_run) */
	double product_s;       /* N steps */
	double bytes_step;      /* pivot bytes into the nodes a step */
	double bytes_net;       /* pivot bytes that cross the network over the
				 * product (balancer/pivots.h: N (m + n) - 2 m n
				 * blocks into a node; those it holds stay) */
	double bytes_1d;        /* what plb's 1-D product would move on the same nodes:
				 * A to each, B's columns out and C's back, once */
	double mem_max_mb;      /* the most a node holds (plb__sim2d_node_mb) */
	int mem_max_node;       /* which */
	double mem_all_mb;      /* A, B and C */
	struct plb__hpart part; /* the partition (hpart.h), slices in element columns */
};

/* Partitions cfg's emulated PUs for o, every node's rectangles within its
 * [node] memory_mb where it is set. The bound is the equal-time split
 * of the step's N^2 blocks over every PU's true curve (whole blocks and
 * the layout aside), plus the least a node's pivots can cost (a square
 * rectangle of N^2 / q blocks over the fastest node link). 0, or a
 * negative PLB_E code with a message in err (a scenario with no emulated
 * PU, a node without one, n below b, more nodes than blocks, matrices
 * that do not fit in the nodes' memory_mb). */
PLB_WUR int plb__sim2d_run(const struct plb__config *cfg, const struct plb__sim2d_opts *o,
			   struct plb__sim2d_result *r, char *err, size_t errlen);
void plb__sim2d_result_fini(struct plb__sim2d_result *r);

/* The result as text: the method's figures, then each node's rectangle
 * and its PUs' slices (names from cfg). */
void plb__sim2d_print(const struct plb__config *cfg, const struct plb__sim2d_result *r, FILE *f);

#endif
