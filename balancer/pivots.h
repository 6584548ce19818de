/* The pivots of the heterogeneous 2-D blocked product C += A B over a
 * column-based layout of nodes (layout.h, hpart.h): A, B and C are laid
 * out alike, node i holding the blocks [row_i, row_i + m_i) x [at_i,
 * at_i + n_i) of each. Step k (0 <= k < N) updates every node's C by
 * A's block column k (its rows R_i) times B's block row k (its columns
 * C_i). A's pivot column k is held by the nodes of the one layout column
 * whose columns hold k; their rows tile [0, N), so node i gets its rows
 * in pieces, one from each of them whose rows meet R_i. B's pivot row k
 * is held, for node i's columns, by the one node of i's own layout column
 * whose rows hold k (the nodes of a layout column share its columns), so
 * node i gets it whole from that node. A piece whose source is its
 * destination is a copy within the node (node i holds its pivots itself
 * n_i steps of N for A, m_i for B); the others cross the network. Pure:
 * no MPI, no devices. */
#ifndef PLB_BALANCER_PIVOTS_H
#define PLB_BALANCER_PIVOTS_H

#include <stddef.h>

#include "plb_errors.h"

/* The layout in blocks: q nodes over N x N blocks, node i's rectangle
 * m[i] x n[i] at block row row[i], block column at[i] (plb__layout_blocks'
 * and struct plb__hpart's arrays). */
struct plb__grid {
	int q, N;
	const int *m, *n, *row, *at;
};

/* A piece of a pivot: from node src to node dst, blocks [first, first +
 * count) of the pivot (A: rows of pivot column k; B: columns of pivot row
 * k), in the matrix's block numbering. */
struct plb__piece {
	int src, dst, first, count;
};

/* 0 if g's rectangles tile the N x N blocks in columns (every node at
 * least one block; the nodes whose columns meet share the same columns);
 * else PLB_EINVAL with why (a sentence naming the node). */
PLB_WUR int plb__grid_check(const struct plb__grid *g, char *why, size_t whylen);

/* What node i receives at step k: its A pieces into a[] (room for q),
 * ordered by their first row, and its B piece into *b. Returns the number
 * of A pieces, or PLB_EINVAL (k or i out of range). */
PLB_WUR int plb__pivots_in(const struct plb__grid *g, int k, int i, struct plb__piece *a,
			   struct plb__piece *b);

/* What node j sends at step k: its A pieces (to the nodes whose rows meet
 * its own, itself included, when its columns hold k) and its B pieces
 * (to the nodes of its layout column, itself included, when its rows hold
 * k), into out[] (room for 2 q), A's first. *na: how many are A's.
 * Returns the number of pieces, or PLB_EINVAL. */
PLB_WUR int plb__pivots_out(const struct plb__grid *g, int k, int j, struct plb__piece *out, int *na);

/* Blocks node i receives from other nodes over the whole product (N
 * steps): N (m_i + n_i) - 2 m_i n_i. */
double plb__pivots_blocks_in(const struct plb__grid *g, int i);

#endif
