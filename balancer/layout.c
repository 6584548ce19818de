/* The column-based 2-D layout (see layout.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/layout.h"

struct idx {
	double s;
	int i;
};

static int by_area(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->i - y->i;     /* equal areas: in their order */
}

/* The areas sorted, scaled to sum to 1, and the optimal columns: ord[k]
 * the k-th smallest area's index, s[k] its share, and end[c] the end (in
 * sorted order) of column c. Returns the number of columns, or an error. */
static int plan(const double *area, int p, struct idx *ord, int *end, double *cost)
{
	double sum = 0;
	if (!area || p < 1)
		return PLB_EINVAL;
	for (int i = 0; i < p; i++) {
		if (!(area[i] > 0) || !isfinite(area[i]))
			return PLB_EINVAL;
		sum += area[i];
	}
	for (int i = 0; i < p; i++)
		ord[i] = (struct idx){area[i] / sum, i};
	qsort(ord, (size_t)p, sizeof *ord, by_area);
	double *S = malloc(((size_t)p + 1) * sizeof *S), *f = malloc(((size_t)p + 1) * sizeof *f);
	int *from = malloc(((size_t)p + 1) * sizeof *from);
	if (!S || !f || !from) {
		free(S);
		free(f);
		free(from);
		return PLB_ENOMEM;
	}
	S[0] = 0;
	for (int k = 0; k < p; k++)
		S[k + 1] = S[k] + ord[k].s;
	/* f[j]: the least cost of the j smallest areas in columns; a column
	 * of areas i..j-1 costs (j - i) (S[j] - S[i]) + 1 */
	f[0] = 0;
	for (int j = 1; j <= p; j++) {
		f[j] = INFINITY;
		for (int i = 0; i < j; i++) {
			double c = f[i] + (double)(j - i) * (S[j] - S[i]) + 1;
			if (c < f[j]) {
				f[j] = c;
				from[j] = i;
			}
		}
	}
	int nc = 0;
	for (int j = p; j > 0; j = from[j])
		nc++;
	for (int j = p, c = nc - 1; j > 0; j = from[j], c--)
		end[c] = j;
	*cost = f[p];
	free(S);
	free(f);
	free(from);
	return nc;
}

int plb__layout_columns(const double *area, int p, struct plb__rect *r, double *cost)
{
	if (p < 1 || !r || !cost)
		return PLB_EINVAL;
	struct idx *ord = malloc((size_t)p * sizeof *ord);
	int *end = malloc((size_t)p * sizeof *end);
	int nc = ord && end ? plan(area, p, ord, end, cost) : PLB_ENOMEM;
	double x = 0;
	for (int c = 0, k = 0; c < nc; c++) {
		double w = 0, y = 0;
		for (int q = k; q < end[c]; q++)
			w += ord[q].s;
		for (; k < end[c]; k++) {
			double h = ord[k].s / w;
			r[ord[k].i] = (struct plb__rect){c, x, y, w, h};
			y += h;
		}
		x += w;
	}
	free(ord);
	free(end);
	return nc;
}

/* total whole units shared among k in proportion to ideal[] (which sum to
 * total), each at least 1, by largest remainder. 0, or PLB_EINVAL when
 * total < k. */
static int apportion(const double *ideal, int k, int total, int *out)
{
	if (total < k)
		return PLB_EINVAL;
	int sum = 0;
	for (int i = 0; i < k; i++) {
		out[i] = (int)floor(ideal[i]);
		if (out[i] < 1)
			out[i] = 1;
		sum += out[i];
	}
	/* too few: one more to the largest remainders; too many (the ones
	 * raised to 1): one less from the smallest remainders above 1 */
	while (sum != total) {
		int best = -1;
		double bd = 0;
		for (int i = 0; i < k; i++) {
			double rem = ideal[i] - out[i];
			if (sum < total ? (best < 0 || rem > bd) : (out[i] > 1 && (best < 0 || rem < bd))) {
				best = i;
				bd = rem;
			}
		}
		out[best] += sum < total ? 1 : -1;
		sum += sum < total ? 1 : -1;
	}
	return 0;
}

int plb__layout_blocks(const double *area, int p, int N, int *m, int *n, int *col, int *row,
		       int *at)
{
	if (p < 1 || N < 1 || !m || !n || !col || !row || !at)
		return PLB_EINVAL;
	struct plb__rect *r = malloc((size_t)p * sizeof *r);
	double *ideal = malloc((size_t)p * sizeof *ideal), cost;
	int *part = malloc((size_t)p * sizeof *part), *width = malloc((size_t)p * sizeof *width);
	int *members = malloc((size_t)p * sizeof *members);
	int nc = r && ideal && part && width && members ? plb__layout_columns(area, p, r, &cost)
							: PLB_ENOMEM;
	/* the columns' widths, then each column's heights, in blocks */
	double *cw = nc > 0 ? calloc((size_t)nc, sizeof *cw) : NULL;
	if (nc > 0 && !cw)
		nc = PLB_ENOMEM;
	for (int i = 0; nc > 0 && i < p; i++)
		cw[r[i].col] = r[i].w * N;
	if (nc > 0 && apportion(cw, nc, N, width))
		nc = PLB_EINVAL;
	int left = 0;
	for (int c = 0; nc > 0 && c < nc; c++) {
		int k = 0;
		for (int i = 0; i < p; i++)
			if (r[i].col == c)
				members[k++] = i;
		/* top to bottom, as plb__layout_columns placed them */
		for (int a = 1; a < k; a++)
			for (int b = a; b > 0 && r[members[b]].y < r[members[b - 1]].y; b--) {
				int t = members[b];
				members[b] = members[b - 1];
				members[b - 1] = t;
			}
		for (int q = 0; q < k; q++)
			ideal[q] = r[members[q]].h * N;
		if (apportion(ideal, k, N, part)) {
			nc = PLB_EINVAL;
			break;
		}
		for (int q = 0, top = 0; q < k; q++) {
			int i = members[q];
			m[i] = part[q];
			n[i] = width[c];
			col[i] = c;
			row[i] = top;
			at[i] = left;
			top += part[q];
		}
		left += width[c];
	}
	free(cw);
	free(r);
	free(ideal);
	free(part);
	free(width);
	free(members);
	return nc;
}
