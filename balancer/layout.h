/* The 2-D layout of a matrix product's nodes: the communication minimising
 * algorithm (CMA) of hierarchical partitioning (Clarke, Ilic, Lastovetsky,
 * Sousa), which arranges rectangles of given areas in the unit square (the
 * N x N matrix) in columns so that the sum of their half-perimeters - the
 * volume of the pivot rows and columns each node receives in a blocked
 * product - is least among column-based arrangements (Beaumont, Boudet,
 * Rastello, Robert: with the areas sorted, some optimal column-based
 * arrangement puts consecutive areas in each column, and a column of k
 * rectangles of total area w costs k w + 1, so a dynamic programme over
 * the sorted areas finds it). Pure: no MPI, no devices. */
#ifndef PLB_BALANCER_LAYOUT_H
#define PLB_BALANCER_LAYOUT_H

#include "plb_errors.h"

/* A rectangle of the unit square: its column, its left and top corner,
 * width and height. */
struct plb__rect {
	int col;
	double x, y, w, h;
};

/* Areas area[0..p) > 0 (scaled to sum to 1) arranged in columns: r[i] is
 * area i's rectangle (the columns left to right by area, each's rectangles
 * top to bottom likewise); *cost the sum of half-perimeters (at least
 * 2 sqrt(area) each, at most p + 1); returns the number of columns, or
 * PLB_EINVAL, PLB_ENOMEM. */
PLB_WUR int plb__layout_columns(const double *area, int p, struct plb__rect *r, double *cost);

/* The same on an N x N grid of blocks: column c of width n_c blocks (the
 * widths sum to N), each rectangle of its column m_i blocks high (they sum
 * to N), every n_c and m_i at least 1, area i's m_i n_i as near area_i N^2
 * as whole blocks allow (widths and heights rounded by largest remainder).
 * m[i], n[i], col[i] and the top-left block (row[i], at[i]). Returns the
 * number of columns, or PLB_EINVAL (N smaller than needed for every area
 * to have a block: N < the most rectangles in a column or the columns),
 * PLB_ENOMEM. */
PLB_WUR int plb__layout_blocks(const double *area, int p, int N, int *m, int *n, int *col,
			       int *row, int *at);

#endif
