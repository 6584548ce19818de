/* The 2-D product's pivots over a column-based layout (pivots.h). */
#include "balancer/pivots.h"

#include <stdio.h>

/* The overlap of [a, a + la) and [b, b + lb): its length (0: none), its
 * start in *first. */
static int overlap(int a, int la, int b, int lb, int *first)
{
	int lo = a > b ? a : b, hi = a + la < b + lb ? a + la : b + lb;
	*first = lo;
	return hi > lo ? hi - lo : 0;
}

static int holds_col(const struct plb__grid *g, int j, int k)
{
	return g->at[j] <= k && k < g->at[j] + g->n[j];
}

static int holds_row(const struct plb__grid *g, int j, int k)
{
	return g->row[j] <= k && k < g->row[j] + g->m[j];
}

int plb__grid_check(const struct plb__grid *g, char *why, size_t whylen)
{
	if (!g || g->q < 1 || g->N < 1 || !g->m || !g->n || !g->row || !g->at) {
		snprintf(why, whylen, "no layout");
		return PLB_EINVAL;
	}
	double area = 0;
	for (int i = 0; i < g->q; i++) {
		if (g->m[i] < 1 || g->n[i] < 1 || g->row[i] < 0 || g->at[i] < 0 ||
		    g->row[i] + g->m[i] > g->N || g->at[i] + g->n[i] > g->N) {
			snprintf(why, whylen, "node %d's rectangle %d x %d at (%d, %d) is not within %d x %d blocks",
				 i, g->m[i], g->n[i], g->row[i], g->at[i], g->N, g->N);
			return PLB_EINVAL;
		}
		area += (double)g->m[i] * g->n[i];
		for (int j = 0; j < i; j++) {
			int f, cols = overlap(g->at[i], g->n[i], g->at[j], g->n[j], &f);
			if (!cols)
				continue;
			if (g->at[i] != g->at[j] || g->n[i] != g->n[j]) {
				snprintf(why, whylen, "nodes %d and %d share columns but not all of them: not a column-based layout",
					 j, i);
				return PLB_EINVAL;
			}
			if (overlap(g->row[i], g->m[i], g->row[j], g->m[j], &f)) {
				snprintf(why, whylen, "nodes %d and %d overlap", j, i);
				return PLB_EINVAL;
			}
		}
	}
	if (area != (double)g->N * g->N) {
		snprintf(why, whylen, "the rectangles cover %.0f of the %d x %d blocks", area, g->N, g->N);
		return PLB_EINVAL;
	}
	return 0;
}

int plb__pivots_in(const struct plb__grid *g, int k, int i, struct plb__piece *a,
		   struct plb__piece *b)
{
	if (k < 0 || k >= g->N || i < 0 || i >= g->q)
		return PLB_EINVAL;
	int na = 0;
	for (int j = 0; j < g->q; j++) {
		int first, count;
		if (holds_col(g, j, k) && (count = overlap(g->row[i], g->m[i], g->row[j], g->m[j], &first))) {
			struct plb__piece pc = {j, i, first, count};
			int at = na++;
			for (; at > 0 && a[at - 1].first > first; at--)
				a[at] = a[at - 1];
			a[at] = pc;
		}
		if (g->at[j] == g->at[i] && holds_row(g, j, k))
			*b = (struct plb__piece){j, i, g->at[i], g->n[i]};
	}
	return na;
}

int plb__pivots_out(const struct plb__grid *g, int k, int j, struct plb__piece *out, int *na)
{
	if (k < 0 || k >= g->N || j < 0 || j >= g->q)
		return PLB_EINVAL;
	int n = 0;
	for (int i = 0; holds_col(g, j, k) && i < g->q; i++) {
		int first, count = overlap(g->row[i], g->m[i], g->row[j], g->m[j], &first);
		if (count)
			out[n++] = (struct plb__piece){j, i, first, count};
	}
	*na = n;
	for (int i = 0; holds_row(g, j, k) && i < g->q; i++)
		if (g->at[i] == g->at[j])
			out[n++] = (struct plb__piece){j, i, g->at[j], g->n[j]};
	return n;
}

double plb__pivots_blocks_in(const struct plb__grid *g, int i)
{
	double m = g->m[i], n = g->n[i];
	return g->N * (m + n) - 2 * m * n;
}
