/* The 2-D product's pivots (balancer/pivots.c) on random column-based
 * layouts (balancer/layout.c's, of random areas): at every step each
 * node's A pieces tile its rows once and its B piece is its columns',
 * from nodes that hold them; what every node sends is exactly what every
 * node receives; the product run node by node from the pieces alone, each
 * node holding only its own rectangles of A, B and C, equals A B; the
 * blocks that cross the network are N (m + n) - 2 m n a node; layouts
 * that are not column-based tilings, and bad steps or nodes, are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "balancer/layout.h"
#include "balancer/pivots.h"
#include "test_util.h"

#define QMAX 10
#define NMAX 14
#define BS 2                    /* a block's side, in elements */

struct lay {
	int q, N;
	int m[QMAX], n[QMAX], col[QMAX], row[QMAX], at[QMAX];
	struct plb__grid g;
};

/* a random layout: q nodes of random areas on N x N blocks */
static void random_layout(struct lay *l, uint64_t *s)
{
	double area[QMAX];
	for (;;) {
		l->q = 1 + (int)(test_urand(s) * QMAX);
		l->N = l->q + (int)(test_urand(s) * (NMAX - l->q + 1));
		for (int i = 0; i < l->q; i++)
			area[i] = 0.05 + test_urand(s) * (test_urand(s) < 0.2 ? 10 : 1);
		if (plb__layout_blocks(area, l->q, l->N, l->m, l->n, l->col, l->row, l->at) > 0)
			break;          /* (N too small for these areas: draw again) */
	}
	l->g = (struct plb__grid){l->q, l->N, l->m, l->n, l->row, l->at};
}

static int cmp_piece(const void *a, const void *b)
{
	const struct plb__piece *x = a, *y = b;
	if (x->src != y->src)
		return x->src - y->src;
	if (x->dst != y->dst)
		return x->dst - y->dst;
	return x->first - y->first;
}

static void test_pieces_tile_and_match(void **state)
{
	(void)state;
	uint64_t s = 12345;
	for (int trial = 0; trial < 300; trial++) {
		struct lay l;
		random_layout(&l, &s);
		char why[160];
		assert_int_equal(plb__grid_check(&l.g, why, sizeof why), 0);
		for (int k = 0; k < l.N; k++) {
			struct plb__piece in[2 * QMAX * QMAX], out[2 * QMAX * QMAX], a[QMAX], b, o[2 * QMAX];
			int nin = 0, nout = 0;
			for (int i = 0; i < l.q; i++) {
				b = (struct plb__piece){-1, -1, -1, -1};
				int na = plb__pivots_in(&l.g, k, i, a, &b);
				assert_true(na >= 1);
				int at = l.row[i];
				for (int p = 0; p < na; p++) {
					int j = a[p].src;
					assert_int_equal(a[p].dst, i);
					assert_int_equal(a[p].first, at);       /* in order, no gap */
					at += a[p].count;
					/* j holds column k and these rows */
					assert_true(l.at[j] <= k && k < l.at[j] + l.n[j]);
					assert_true(l.row[j] <= a[p].first &&
						    a[p].first + a[p].count <= l.row[j] + l.m[j]);
					in[nin++] = a[p];
				}
				assert_int_equal(at, l.row[i] + l.m[i]);        /* every row once */
				int j = b.src;
				assert_true(j >= 0 && j < l.q);
				assert_int_equal(b.dst, i);
				assert_int_equal(b.first, l.at[i]);
				assert_int_equal(b.count, l.n[i]);
				assert_int_equal(l.at[j], l.at[i]);
				assert_true(l.row[j] <= k && k < l.row[j] + l.m[j]);
				b.first = -1 - b.first;         /* B's apart from A's */
				in[nin++] = b;
			}
			for (int j = 0; j < l.q; j++) {
				int na = -1, n = plb__pivots_out(&l.g, k, j, o, &na);
				assert_true(n >= 0 && na >= 0 && na <= n);
				for (int p = 0; p < n; p++) {
					assert_int_equal(o[p].src, j);
					out[nout] = o[p];
					if (p >= na)
						out[nout].first = -1 - o[p].first;
					nout++;
				}
			}
			assert_int_equal(nin, nout);
			qsort(in, (size_t)nin, sizeof *in, cmp_piece);
			qsort(out, (size_t)nout, sizeof *out, cmp_piece);
			for (int p = 0; p < nin; p++) {
				assert_int_equal(in[p].src, out[p].src);
				assert_int_equal(in[p].dst, out[p].dst);
				assert_int_equal(in[p].first, out[p].first);
				assert_int_equal(in[p].count, out[p].count);
			}
		}
	}
}

/* node i's local copy of matrix M's rectangle: (m BS) x (n BS), row-major */
static double *local_rect(const struct lay *l, int i, const double *M)
{
	int R = l->m[i] * BS, C = l->n[i] * BS, side = l->N * BS;
	double *r = malloc(sizeof *r * (size_t)R * C);
	for (int y = 0; y < R; y++)
		for (int x = 0; x < C; x++)
			r[(size_t)y * C + x] = M[(size_t)(l->row[i] * BS + y) * side + l->at[i] * BS + x];
	return r;
}

static void test_product_from_pieces(void **state)
{
	(void)state;
	uint64_t s = 777;
	for (int trial = 0; trial < 60; trial++) {
		struct lay l;
		random_layout(&l, &s);
		int side = l.N * BS;
		size_t nn = (size_t)side * side;
		double *A = malloc(sizeof *A * nn), *B = malloc(sizeof *B * nn), *C = calloc(nn, sizeof *C);
		for (size_t e = 0; e < nn; e++) {
			A[e] = test_urand(&s) - 0.5;
			B[e] = test_urand(&s) - 0.5;
		}
		for (int y = 0; y < side; y++)
			for (int z = 0; z < side; z++)
				for (int x = 0; x < side; x++)
					C[(size_t)y * side + x] += A[(size_t)y * side + z] * B[(size_t)z * side + x];
		double *la[QMAX], *lb[QMAX], *lc[QMAX];
		for (int i = 0; i < l.q; i++) {
			la[i] = local_rect(&l, i, A);
			lb[i] = local_rect(&l, i, B);
			lc[i] = calloc((size_t)l.m[i] * l.n[i] * BS * BS, sizeof *lc[i]);
		}
		double crossed[QMAX] = {0};
		for (int k = 0; k < l.N; k++) {
			for (int i = 0; i < l.q; i++) {
				int R = l.m[i] * BS, W = l.n[i] * BS;
				double ap[NMAX * BS * BS], bp[NMAX * BS * BS];
				struct plb__piece a[QMAX], b;
				int na = plb__pivots_in(&l.g, k, i, a, &b);
				/* A's pivot column, rows R_i: from each source's local A */
				for (int p = 0; p < na; p++) {
					int j = a[p].src, Wj = l.n[j] * BS;
					for (int y = 0; y < a[p].count * BS; y++)
						for (int x = 0; x < BS; x++)
							ap[((a[p].first - l.row[i]) * BS + y) * BS + x] =
								la[j][((size_t)(a[p].first - l.row[j]) * BS + y) * Wj +
								      (k - l.at[j]) * BS + x];
					if (j != i)
						crossed[i] += a[p].count;
				}
				/* B's pivot row, columns C_i: the source's local row */
				int j = b.src;
				for (int y = 0; y < BS; y++)
					for (int x = 0; x < W; x++)
						bp[y * W + x] = lb[j][((size_t)(k - l.row[j]) * BS + y) * W + x];
				if (j != i)
					crossed[i] += b.count;
				for (int y = 0; y < R; y++)
					for (int z = 0; z < BS; z++)
						for (int x = 0; x < W; x++)
							lc[i][(size_t)y * W + x] += ap[y * BS + z] * bp[z * W + x];
			}
		}
		for (int i = 0; i < l.q; i++) {
			int W = l.n[i] * BS;
			for (int y = 0; y < l.m[i] * BS; y++)
				for (int x = 0; x < W; x++)
					assert_near(lc[i][(size_t)y * W + x],
						    C[(size_t)(l.row[i] * BS + y) * side + l.at[i] * BS + x], 1e-12);
			assert_near(crossed[i], plb__pivots_blocks_in(&l.g, i), 0);
			free(la[i]);
			free(lb[i]);
			free(lc[i]);
		}
		free(A);
		free(B);
		free(C);
	}
}

static void test_refused(void **state)
{
	(void)state;
	char why[160];
	/* two nodes side by side, then made to overlap, to miss a block, to
	 * share columns in part */
	int m[3] = {4, 4}, n[3] = {2, 2}, row[3] = {0, 0}, at[3] = {0, 2};
	struct plb__grid g = {2, 4, m, n, row, at};
	assert_int_equal(plb__grid_check(&g, why, sizeof why), 0);
	at[1] = 1;
	assert_int_equal(plb__grid_check(&g, why, sizeof why), PLB_EINVAL);
	assert_non_null(strstr(why, "not a column-based layout"));
	at[1] = 2;
	n[1] = 1;
	assert_int_equal(plb__grid_check(&g, why, sizeof why), PLB_EINVAL);
	assert_non_null(strstr(why, "cover 12 of the 4 x 4"));
	n[1] = 3;
	assert_int_equal(plb__grid_check(&g, why, sizeof why), PLB_EINVAL);
	assert_non_null(strstr(why, "node 1's rectangle"));
	/* one column of two, overlapping rows */
	int m2[2] = {3, 2}, n2[2] = {4, 4}, row2[2] = {0, 2}, at2[2] = {0, 0};
	struct plb__grid g2 = {2, 4, m2, n2, row2, at2};
	assert_int_equal(plb__grid_check(&g2, why, sizeof why), PLB_EINVAL);
	assert_non_null(strstr(why, "overlap"));
	assert_int_equal(plb__grid_check(NULL, why, sizeof why), PLB_EINVAL);
	n[1] = 2;
	struct plb__piece a[2], b, o[4];
	int na;
	assert_int_equal(plb__pivots_in(&g, 4, 0, a, &b), PLB_EINVAL);
	assert_int_equal(plb__pivots_in(&g, 0, 2, a, &b), PLB_EINVAL);
	assert_int_equal(plb__pivots_out(&g, -1, 0, o, &na), PLB_EINVAL);
	assert_int_equal(plb__pivots_out(&g, 0, -1, o, &na), PLB_EINVAL);
	/* side by side: node 0 holds pivot column 0 for both; each its own B */
	assert_int_equal(plb__pivots_out(&g, 0, 0, o, &na), 3);
	assert_int_equal(na, 2);
	assert_int_equal(plb__pivots_out(&g, 0, 1, o, &na), 1);
	assert_int_equal(na, 0);
	assert_int_equal(o[0].dst, 1);
	assert_near(plb__pivots_blocks_in(&g, 0), 4 * 6 - 2 * 8, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces_tile_and_match),
		cmocka_unit_test(test_product_from_pieces),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
