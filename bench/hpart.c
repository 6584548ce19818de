/* make bench-hpart: hierarchical partitioning (balancer/hpart.c) of a
 * matrix product on a cluster shaped like the paper's (Clarke, Ilic,
 * Lastovetsky, Sousa: 90 nodes, CPU cores and GPUs of two generations, a
 * GPU that slows when its slice leaves its memory), under the four
 * partitioners, against N; then 65,536 PUs (8,192 nodes of 8) in two
 * levels. Devices are models of one step of the blocked product (a slice
 * of m x d blocks of b = 128: 2 m d b^3 flops): a CPU PU of 7 cores at 63-70
 * GFLOP/s (a tenth less once its slice leaves their 28 MB of cache), GPUs
 * of 250 and 90 GFLOP/s at full occupancy (half of it at about 20 and 12
 * blocks) whose speed falls to 15 GFLOP/s (over PCIe) once the slice's A,
 * B and C leave their 3 GB and 1 GB. Each step also moves the pivot row
 * and column: m + n blocks of 128 KiB into a node over 10 Gbit/s.
 *
 * For each method and N: the step time (the slowest device's, plus its
 * node's communication) over the bound (the equal-time split of the
 * step's work over every device's true time function, whole blocks and
 * the layout aside, plus the least communication a node can have, 2
 * sqrt(N^2 / q) blocks), the iterations and benchmarks the partitioner
 * made, the sum of half-perimeters over its lower bound. Figures only.
 * Usage: bench/hpart [--quick] [--sub K] */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "balancer/hpart.h"

#define B 128.0                 /* block side */
#define LINK_BPS 1.25e9         /* 10 Gbit/s */

enum { CPU, GPU_NEW, GPU_OLD };

struct cluster {
	int q, *p, *kind;       /* kind: by device (node i's j-th at off[i] + j) */
	int *off;
	int sub;                /* a device's slice: whole 1/sub blocks (hpart.h) */
};

static double gflops(int kind, double m, double d)
{
	double area = m * d, bytes = (m * B * B + B * d * B + m * d * B * B) * 8;
	switch (kind) {
	case GPU_NEW:
		return bytes > 3e9 ? 15 : 250 * area / (area + 20);
	case GPU_OLD:
		return bytes > 1e9 ? 15 : 90 * area / (area + 12);
	default:        /* a team of 7 cores (one PU, as plb's cpu = 7) */
		return bytes > 7 * 4e6 ? 63 : 70;
	}
}

static double dev_time(const struct cluster *c, int i, int j, int m, double d)
{
	if (d <= 0)
		return 0;
	return 2 * m * d * B * B * B / (gflops(c->kind[c->off[i] + j], m, d) * 1e9);
}

static double bench(void *ctx, int i, int j, int m, double d)
{
	return dev_time(ctx, i, j, m, d);
}

static double comm(void *ctx, int i, int m, int n)
{
	(void)ctx;
	(void)i;
	return (m + n) * B * B * 8 / LINK_BPS;
}

static struct cluster make_cluster(int q, int per, int table1)
{
	struct cluster c = {.q = q};
	c.p = malloc((size_t)q * sizeof *c.p);
	c.off = malloc(((size_t)q + 1) * sizeof *c.off);
	c.kind = malloc((size_t)q * (size_t)per * sizeof *c.kind);
	c.off[0] = 0;
	for (int i = 0; i < q; i++) {
		c.p[i] = per;
		c.off[i + 1] = c.off[i] + per;
		for (int j = 0; j < per; j++) {
			int k = CPU;
			/* Table-1-like: a node in six with a new GPU, one in three
			 * with an old one, the rest CPUs only; a node's CPU is one
			 * PU, its team of 7 cores */
			if (j == per - 1 && (table1 ? i % 6 == 0 : i % 4 == 0))
				k = GPU_NEW;
			else if (j == per - 1 && (table1 ? i % 3 == 1 : i % 4 == 1))
				k = GPU_OLD;
			c.kind[c.off[i] + j] = k;
		}
	}
	return c;
}

/* device k's time for a square slice of area a (blocks) */
static double square_time(void *ctx, int k, double a)
{
	const struct cluster *c = ctx;
	double side = sqrt(a);
	return 2 * a * B * B * B / (gflops(c->kind[k], side, side) * 1e9);
}

/* the least step time: the equal-time split over every device's true
 * time, plus the least communication a node can have */
static double bound(const struct cluster *c, int N)
{
	double W = (double)N * N;
	return plb__equal_time_bound(c->off[c->q], square_time, (void *)c, W) +
	       2 * sqrt(W / c->q) * B * B * 8 / LINK_BPS;
}

static double step_time(const struct cluster *c, const struct plb__hpart *h)
{
	double worst = 0;
	for (int i = 0; i < h->q; i++) {
		double t = 0;
		for (int j = 0; j < c->p[i]; j++)
			t = fmax(t, dev_time(c, i, j, h->m[i], (double)h->d[h->off[i] + j] / c->sub));
		worst = fmax(worst, t + (h->m[i] + h->n[i]) * B * B * 8 / LINK_BPS);
	}
	return worst;
}

int main(int argc, char **argv)
{
	int quick = 0, sub = (int)B;
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[a], "--sub") && a + 1 < argc && atoi(argv[a + 1]) >= 1) {
			sub = atoi(argv[++a]);
		} else {
			fprintf(stderr, "usage: bench/hpart [--quick] [--sub K]: K, a device's slice in 1/K blocks (default %d, a block's columns; 1: whole blocks)\n", (int)B);
			return 2;
		}
	}
	struct cluster c = make_cluster(90, 2, 1);
	c.sub = sub;
	printf("90 nodes: a CPU PU of 7 cores and a GPU (new on 15 nodes, old on 30), or two CPU PUs\n"
	       "(30 nodes); b = 128, a 10 Gbit/s link a node; the step time over its bound, the\n"
	       "partitioner's node iterations and benchmarks, the half-perimeters over their lower bound;\n"
	       "a device's slice a whole number of 1/%d blocks\n\n", sub);
	static const int Ns[] = {128, 256, 512, 1024};
	for (int with_comm = 0; with_comm < 2; with_comm++) {
		printf(with_comm ? "\nthe nodes balanced with their pivots' transfer counted:\n"
				 : "the nodes balanced on the kernel's time alone (the paper's):\n");
		printf("%7s", "N");
		for (int m = 0; m < PLB__HPART_NMETHOD; m++)
			printf(" %25s", plb__hpart_method_name((enum plb__hpart_method)m));
		printf("\n");
		for (int k = 0; k < (quick ? 2 : 4); k++) {
			int N = Ns[k];
			double lb = bound(&c, N);
			printf("%7d", N * 128);
			for (int m = 0; m < PLB__HPART_NMETHOD; m++) {
				struct plb__hpart h;
				struct plb__hpart_cfg cfg = {.q = c.q, .p = c.p, .N = N, .eps1 = 0.05,
							     .eps2 = 0.05, .max_iter = 20,
							     .method = (enum plb__hpart_method)m, .bench = bench,
							     .comm = with_comm ? comm : NULL, .ctx = &c,
							     .sub = sub};
				if (plb__hpart_run(&cfg, &h)) {
					printf(" %25s", "error");
					continue;
				}
				char cell[64];
				snprintf(cell, sizeof cell, "%.3f (%d, %d) %.3f", step_time(&c, &h) / lb,
					 h.inter_iters, h.benches,
					 (double)h.half_perimeters / h.half_perimeters_lb);
				printf(" %25s", cell);
				plb__hpart_fini(&h);
			}
			printf("\n");
		}
	}
	/* 65,536 PUs in two levels */
	struct cluster big = make_cluster(8192, 8, 0);  /* 8 PUs a node: 7 CPU teams and a GPU */
	big.sub = sub;
	int N = quick ? 2048 : 4096;
	struct plb__hpart h;
	struct plb__hpart_cfg cfg = {.q = big.q, .p = big.p, .N = N, .eps1 = 0.05, .eps2 = 0.05,
				     .max_iter = 10, .method = PLB__HPART_FPM, .bench = bench,
				     .comm = comm, .ctx = &big, .sub = sub};
	double t0 = plb__now(), c0 = plb__cpu_now();
	int rc = plb__hpart_run(&cfg, &h);
	double wall = plb__now() - t0, cpu = plb__cpu_now() - c0;
	if (rc) {
		printf("\n65,536 PUs: error %d\n", rc);
		return 1;
	}
	printf("\n65,536 PUs (8,192 nodes of 8; N = %d blocks; pivots counted): fpm step %.3f of its bound, %d node\n"
	       "iterations, converged %d, half-perimeters %.4f of their bound; the partitioner took\n"
	       "%.2f s of CPU (%.2f s wall) on this machine\n",
	       N, step_time(&big, &h) / bound(&big, N), h.inter_iters, h.converged,
	       (double)h.half_perimeters / h.half_perimeters_lb, cpu, wall);
	plb__hpart_fini(&h);
	return 0;
}
