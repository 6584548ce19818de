/* The column-based 2-D layout (balancer/layout.c, the CMA of hierarchical
 * partitioning): on random and skewed areas its sum of half-perimeters is
 * the least of every arrangement of the areas into columns (a brute force
 * over every set partition, up to 8 areas), its rectangles tile the unit
 * square with the areas asked; on a grid of N x N blocks the columns'
 * widths and each column's heights sum to N, every rectangle has a block,
 * and its blocks are as near its area as whole blocks allow; bad
 * arguments are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "balancer/layout.h"

#define PMAX 8

static uint64_t rng = 88172645463325252ULL;
static double unif(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * 0x1.0p-53;
}

/* the least cost of any arrangement into columns: every set partition of
 * the p areas (restricted growth strings), a block of k areas of total w
 * costing k w + 1 */
static double brute(const double *s, int p)
{
	int a[PMAX] = {0};
	double best = INFINITY;
	for (;;) {
		double w[PMAX] = {0};
		int k[PMAX] = {0}, nb = 0;
		for (int i = 0; i < p; i++) {
			w[a[i]] += s[i];
			k[a[i]]++;
			if (a[i] + 1 > nb)
				nb = a[i] + 1;
		}
		double c = 0;
		for (int b = 0; b < nb; b++)
			c += k[b] * w[b] + 1;
		if (c < best)
			best = c;
		/* next restricted growth string */
		int i = p - 1;
		for (; i > 0; i--) {
			int mx = 0;
			for (int j = 0; j < i; j++)
				if (a[j] > mx)
					mx = a[j];
			if (a[i] <= mx) {
				a[i]++;
				for (int j = i + 1; j < p; j++)
					a[j] = 0;
				break;
			}
		}
		if (i == 0)
			return best;
	}
}

static void test_least_half_perimeters(void **state)
{
	(void)state;
	for (int trial = 0; trial < 300; trial++) {
		int p = 1 + trial % PMAX;
		double area[PMAX], s[PMAX], sum = 0, cost;
		for (int i = 0; i < p; i++) {
			/* some skewed: one area far above the rest */
			area[i] = trial % 3 == 0 && i == 0 ? 20 * (1 + unif()) : 0.05 + unif();
			sum += area[i];
		}
		for (int i = 0; i < p; i++)
			s[i] = area[i] / sum;
		struct plb__rect r[PMAX];
		int nc = plb__layout_columns(area, p, r, &cost);
		assert_true(nc >= 1 && nc <= p);
		double b = brute(s, p);
		if (fabs(cost - b) > 1e-12)
			fail_msg("trial %d, p %d: cost %.15g, brute force %.15g", trial, p, cost, b);
		/* the rectangles tile the unit square with the areas asked */
		double half = 0, width = 0;
		for (int c = 0; c < nc; c++) {
			double h = 0, w = -1, x = -1;
			for (int i = 0; i < p; i++)
				if (r[i].col == c) {
					h += r[i].h;
					assert_true(w < 0 || fabs(w - r[i].w) < 1e-15);
					assert_true(x < 0 || fabs(x - r[i].x) < 1e-15);
					w = r[i].w;
					x = r[i].x;
				}
			assert_true(fabs(h - 1) < 1e-12);
			assert_true(fabs(x - width) < 1e-12);     /* columns side by side */
			width += w;
		}
		assert_true(fabs(width - 1) < 1e-12);
		for (int i = 0; i < p; i++) {
			assert_true(fabs(r[i].w * r[i].h - s[i]) < 1e-12);
			half += r[i].w + r[i].h;
		}
		assert_true(fabs(half - cost) < 1e-12);
	}
	/* four equal areas: two columns of two (cost 4; one column or four
	 * cost 5) */
	double eq[4] = {1, 1, 1, 1}, cost;
	struct plb__rect r[4];
	assert_int_equal(plb__layout_columns(eq, 4, r, &cost), 2);
	assert_true(fabs(cost - 4) < 1e-12);
	assert_int_equal(plb__layout_columns(eq, 1, r, &cost), 1);
	assert_true(fabs(cost - 2) < 1e-12);
}

static void test_blocks(void **state)
{
	(void)state;
	for (int trial = 0; trial < 200; trial++) {
		int p = 1 + trial % PMAX, N = 8 + (int)(unif() * 120);
		double area[PMAX], sum = 0;
		for (int i = 0; i < p; i++)
			sum += area[i] = 0.02 + unif();
		int m[PMAX], n[PMAX], col[PMAX], row[PMAX], at[PMAX];
		int nc = plb__layout_blocks(area, p, N, m, n, col, row, at);
		assert_true(nc >= 1);
		int width = 0;
		for (int c = 0; c < nc; c++) {
			int h = 0, w = -1;
			for (int i = 0; i < p; i++)
				if (col[i] == c) {
					assert_true(w < 0 || w == n[i]);
					assert_true(at[i] == width);
					w = n[i];
					h += m[i];
				}
			assert_int_equal(h, N);
			/* the column's rectangles stacked, no gap, no overlap */
			for (int top = 0; top < N;) {
				int k = 0;
				while (k < p && !(col[k] == c && row[k] == top))
					k++;
				if (k == p)
					fail_msg("trial %d: column %d has no rectangle at row %d", trial, c, top);
				top += m[k];
			}
			width += w;
		}
		assert_int_equal(width, N);
		for (int i = 0; i < p; i++) {
			assert_true(m[i] >= 1 && n[i] >= 1);
			double want = area[i] / sum * N * N;
			if (!(fabs(m[i] * n[i] - want) <= m[i] + n[i] + 1))
				fail_msg("trial %d: area %d has %d x %d blocks for %.2f", trial, i, m[i], n[i], want);
		}
	}
	/* a grid too small for every area to have a block: refused */
	double eq[4] = {1, 1, 1, 1};
	int m[4], n[4], col[4], row[4], at[4];
	assert_int_equal(plb__layout_blocks(eq, 4, 1, m, n, col, row, at), PLB_EINVAL);
	assert_int_equal(plb__layout_blocks(eq, 4, 2, m, n, col, row, at), 2);
}

static void test_bad_args(void **state)
{
	(void)state;
	double a[2] = {1, -1}, z[2] = {0, 1}, cost;
	struct plb__rect r[2];
	assert_int_equal(plb__layout_columns(a, 2, r, &cost), PLB_EINVAL);
	assert_int_equal(plb__layout_columns(z, 2, r, &cost), PLB_EINVAL);
	assert_int_equal(plb__layout_columns(a, 0, r, &cost), PLB_EINVAL);
	double nanv[1] = {NAN};
	assert_int_equal(plb__layout_columns(nanv, 1, r, &cost), PLB_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_least_half_perimeters),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_bad_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
