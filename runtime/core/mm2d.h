/* The 2-D product's messages (plb_run_mm2d: mm2d.c on the master, wmm2d.c
 * on the workers). Each payload starts with the struct named here; the
 * header's own fields are not used but for len.
 *
 *   master -> worker  M2BENCH    struct plb__m2bench: one step on a PU, or
 *                                on each of its PUs at once (pu -1, then
 *                                int64 cols[npu])
 *   worker -> master  M2BENCHED  struct plb__m2bench, with its time (pu -1:
 *                                then double seconds[npu])
 *   master -> worker  M2START    struct plb__m2start, then int32 m[q], n[q],
 *                                row[q], at[q], rank[q] (each node's worker
 *                                rank), then int64 d[npu] (this node's PUs'
 *                                slices, element columns)
 *   worker -> worker  M2PIV      struct plb__m2piv, then the piece (A: its
 *                                count b rows of b, row-major; B: b rows of
 *                                count b); one may reach a worker before
 *                                its own M2START: the worker keeps it
 *   either way        M2VEC      struct plb__m2vec, then doubles
 *   worker -> master  M2DONE     struct plb__m2done
 *   worker -> master  M2C        struct plb__m2c, then its rectangle of C
 *                                (row-major), where the job gathers C
 *
 * A run: M2BENCHes (the partitioner's), M2START to every worker; the
 * workers' steps (M2PIV between them); with verify, each worker's part of
 * B x (M2VEC up), x's product with B summed, to every worker (M2VEC down),
 * their parts of A (B x) and C x (M2VEC up); asked, each one's C (M2C);
 * M2DONE from every worker.
 * A worker says ALIVE to the master every fifth of peer_timeout_min_s. */
#ifndef PLB_CORE_MM2D_H
#define PLB_CORE_MM2D_H

#include <stdint.h>

#define PLB__M2_TRIALS 8        /* Freivalds' vectors */

struct plb__m2bench {
	int32_t pu, elem;       /* the worker's PU (-1: all of them at once, their
				 * columns after this struct), the elements' size */
	int64_t rows, cols, k;  /* the step's a: rows x k, b: k x cols */
	char kernel[64];
	double seconds;         /* M2BENCHED: its time (negative: a PLB_E code);
				 * with pu -1 each PU's after this struct */
	int32_t npu, pad;       /* pu -1: the PUs, then int64 cols[npu] (0: not run) */
};

struct plb__m2start {
	int64_t n;              /* side, elements */
	int32_t b, elem, q, node;       /* block side, element size, nodes, this one */
	int32_t npu, verify;
	int32_t run, gather;    /* the master's run number (its M2PIVs carry it);
				 * 1: send C to the master (M2C) at the end */
	uint64_t seed;
	char kernel[64];
};

enum { PLB__M2_A, PLB__M2_B };

struct plb__m2piv {
	int32_t step, which;    /* k; PLB__M2_A or _B */
	int32_t first, count;   /* blocks of the pivot (A: rows; B: columns) */
	int32_t run, pad;       /* M2START's: a piece of another run is dropped */
};

enum { PLB__M2_BX = 1, PLB__M2_Y, PLB__M2_ZC };

struct plb__m2vec {
	int32_t kind;           /* PLB__M2_BX: rows' part of B x (up); _Y: B x,
				 * whole (down); _ZC: rows' parts of A (B x), then
				 * of C x (up) */
	int32_t node;
	int64_t first, count;   /* element rows, per trial: trials x count doubles
				 * (ZC: two such) */
};

struct plb__m2c {
	int64_t row0, col0, rows, cols; /* in elements */
};

struct plb__m2done {
	int32_t status;         /* 0, or a PLB_E code (why in text) */
	int32_t node;
	double t_first, t_last; /* its first step's start, last one's end (plb__now
				 * on its host: one clock where nodes share a host,
				 * else compared by duration only) */
	double compute_s, wait_s;       /* its steps' PU time, time waiting for pivots */
	double bytes_sent;
	char text[256];
};

/* The trial t's x element j, drawn from the run's seed (every node the
 * same). */
double plb__m2_x(uint64_t seed, int t, long j);

#endif
