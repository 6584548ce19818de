/* The balancer's pool of free units (balancer/pool.c) and placement on
 * resident input (balancer/place.c): the free list stays sorted, disjoint
 * and merged at and past its capacity, a grant takes a whole range or
 * splits one, a rest below min_block goes with its block, and a PU gets
 * the free units its group holds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_balancer.h"

/* The pool's free list stays sorted, disjoint and merged (no two ranges
 * touch) and sums to the pool, whatever order ranges come back in: ten
 * PUs hold one 100-unit block each of W = 1000 and are lost in a shuffled
 * order; at the end the pool is the one range [0, 1000). */
static void test_pool_merges(void **state)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		plb__balancer_t *b = greedy100(10, 1000);
		int order[10];
		for (int i = 0; i < 10; i++) {
			struct plb__grant g;
			assert_int_equal(plb__balancer_next(b, i, 0, &g), PLB__NEXT_GRANT);
			order[i] = i;
		}
		rng_state = seed;
		for (int i = 9; i > 0; i--) {
			int j = (int)(urand() * (i + 1)), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (int k = 0; k < 10; k++) {
			char what[64];
			snprintf(what, sizeof what, "seed %llu, %d lost", (unsigned long long)seed, k + 1);
			assert_int_equal(plb__balancer_lost(b, order[k], 1), 0);
			check_free_list(b, 100 * (uint64_t)(k + 1), what);
		}
		assert_int_equal(b->nfree, 1);
		assert_int_equal(b->free[0].off, 0);
		assert_int_equal(b->free[0].len, 1000);
		plb__balancer_destroy(b);
	}
}

/* The free list at its capacity: 16 PUs hold the 16 blocks of W = 1600
 * (the pool is empty, so the list is too); every other PU is lost, then
 * PU 13, whose range joins PU 12's from the right while the list holds as
 * many ranges as it has room for (8: the first has no free neighbour, so
 * it is inserted before the merge), then the rest, in an order that
 * merges on the left, on the right and on both sides, past the list's
 * first growth. Built with AddressSanitizer, a merge that moves ranges
 * past the list's end is caught here. */
static void test_pool_merges_at_capacity(void **state)
{
	plb__balancer_t *b = greedy100(16, 1600);
	for (int i = 0; i < 16; i++) {
		struct plb__grant g;
		assert_int_equal(plb__balancer_next(b, i, 0, &g), PLB__NEXT_GRANT);
		assert_int_equal(g.offset, 100 * (uint64_t)i);
	}
	assert_int_equal(b->nfree, 0);
	static const int order[16] = {0, 2, 4, 6, 8, 10, 12, 13, 15, 14, 1, 3, 11, 5, 9, 7};
	int cap = b->capfree;
	for (int k = 0; k < 16; k++) {
		char what[64];
		snprintf(what, sizeof what, "%d lost, the last PU %d", k + 1, order[k]);
		assert_int_equal(plb__balancer_lost(b, order[k], 1), 0);
		check_free_list(b, 100 * (uint64_t)(k + 1), what);
		if (k == 6)
			assert_int_equal(b->nfree, cap - 1);    /* one more and it is full */
	}
	assert_int_equal(b->nfree, 1);
	assert_int_equal(b->free[0].off, 0);
	assert_int_equal(b->free[0].len, 1600);
	plb__balancer_destroy(b);
}

/* A grant that takes a whole free range out of a full free list (as many
 * ranges as it has room for): the ranges after it move down, and nothing
 * is read past the list (AddressSanitizer builds check that). */
static void test_pool_take_whole_range_at_capacity(void **state)
{
	(void)state;
	int k;
	plb__balancer_t *b = every_other_lost(1600, 8, &k);
	struct plb__grant g;
	int cap = b->capfree;
	assert_int_equal(cap, 8);
	check_free_list(b, 100 * (uint64_t)k, "full");
	assert_int_equal(plb__balancer_next(b, 1, 0, &g), PLB__NEXT_GRANT);
	assert_int_equal(g.offset, 0);
	assert_int_equal(g.units, 100);
	assert_int_equal(b->nfree, cap - 1);
	check_free_list(b, 100 * (uint64_t)(k - 1), "a whole range taken");
	for (int r = 0; r < b->nfree; r++)
		assert_int_equal(b->free[r].off, 200 * (uint64_t)(r + 1));
	plb__balancer_destroy(b);
}

/* A grant placed inside a free range (its node holds units there) splits
 * the range in two while the free list has room for exactly one more:
 * the ranges after it move up by one, and nothing is written past the
 * list (AddressSanitizer builds check that). 16 PUs hold [0, 1600); the
 * pool is [1600, 1900); six lost PUs fill the list to its capacity less
 * one; PU 1's node holds [1650, 1850), so its grant of 100 starts at 1650
 * and leaves [1600, 1650) and [1750, 1900) free. */
static void test_pool_split_at_capacity(void **state)
{
	(void)state;
	int k, nf = 7;
	plb__balancer_t *b = every_other_lost(1900, nf, &k);
	struct plb__grant g;
	int cap = b->capfree;
	assert_int_equal(cap, nf + 1);
	uint64_t pool = b->pool;
	check_free_list(b, pool, "before the split");
	assert_int_equal(plb__balancer_group(b, 1, 1), 0);
	assert_int_equal(plb__balancer_hold(b, 1, 1650, 200), 0);
	assert_int_equal(plb__balancer_next(b, 1, 0, &g), PLB__NEXT_GRANT);
	assert_int_equal(g.offset, 1650);
	assert_int_equal(g.units, 100);
	assert_int_equal(b->nfree, cap);
	check_free_list(b, pool - 100, "split");
	assert_int_equal(b->free[nf - 1].off, 1600);
	assert_int_equal(b->free[nf - 1].len, 50);
	assert_int_equal(b->free[nf].off, 1750);
	assert_int_equal(b->free[nf].len, 150);
	plb__balancer_destroy(b);
}

/* A block leaves a rest of the pool's range behind only if that rest is
 * min_block or more; less goes with the block (greedy, blocks of 100,
 * min_block 20: 100 then 100 then the 20 left of 220; 100 then 119 of
 * 219). */
static void test_rest_below_min_block_joins(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		struct plb__params p;
		plb__params_init(&p);
		p.greedy_block = 100;
		p.min_block = 20;
		p.train_div = 1;        /* else min_block is cut to W / 32 */
		uint64_t W = c ? 219 : 220;
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(&p, "greedy", 1, W, &b), 0);
		uint64_t want[2][3] = {{100, 100, 20}, {100, 119, 0}}, off = 0;
		for (int k = 0; k < 3 && want[c][k]; k++) {
			struct plb__grant g;
			assert_int_equal(plb__balancer_next(b, 0, k, &g), PLB__NEXT_GRANT);
			assert_int_equal(g.offset, off);
			assert_int_equal(g.units, want[c][k]);
			off += g.units;
			struct plb__block_done s = {g.id, 1, 0, k + 1, 0};
			assert_int_equal(plb__balancer_done(b, 0, &s), 0);
		}
		assert_true(plb__balancer_finished(b));
		plb__balancer_destroy(b);
	}
}

/* The sets of units that placement and resident input keep
 * (balancer/ranges.c) against a bitmap: random ranges added, overlapping,
 * touching and inside what is there; after each, the set is sorted,
 * disjoint and never touching, holds exactly the bitmap's units, and
 * plb__ranges_find and plb__ranges_gaps agree with the bitmap. */
static void test_ranges_against_bitmap(void **state)
{
	(void)state;
	enum { N = 400 };
	unsigned char in[N];
	struct plb__ranges s = {0};
	rng_state = 7;
	for (int round = 0; round < 20; round++) {
		memset(in, 0, sizeof in);
		plb__ranges_clear(&s);
		for (int k = 0; k < 30; k++) {
			uint64_t off = (uint64_t)(urand() * N), len = 1 + (uint64_t)(urand() * 24);
			if (off + len > N)
				len = N - off;
			assert_int_equal(plb__ranges_add(&s, off, len), 0);
			memset(in + off, 1, (size_t)len);
			/* the set against the bitmap */
			uint64_t units = 0;
			int runs = 0;
			for (int u = 0; u < N; u++) {
				units += in[u];
				runs += in[u] && (u == 0 || !in[u - 1]);
			}
			assert_int_equal(s.units, units);
			assert_int_equal(s.n, runs);
			for (int r = 0; r < s.n; r++) {
				assert_true(s.r[r].len > 0);
				assert_true(s.r[r].off + s.r[r].len <= N);
				if (r > 0)
					assert_true(s.r[r - 1].off + s.r[r - 1].len < s.r[r].off);
				for (uint64_t u = s.r[r].off; u < s.r[r].off + s.r[r].len; u++)
					assert_int_equal(in[u], 1);
			}
			/* find: the first range that ends after off */
			uint64_t q = (uint64_t)(urand() * N);
			int f = plb__ranges_find(&s, q);
			assert_true(f == s.n || s.r[f].off + s.r[f].len > q);
			assert_true(f == 0 || s.r[f - 1].off + s.r[f - 1].len <= q);
			/* gaps of a random window: the bitmap's holes there */
			uint64_t wo = (uint64_t)(urand() * N), wl = (uint64_t)(urand() * (double)(N - wo));
			struct plb__range gap[N];
			uint64_t lack = 0, want = 0;
			int ng = plb__ranges_gaps(&s, wo, wl, gap, N, &lack), wantn = 0;
			for (uint64_t u = wo; u < wo + wl; u++) {
				want += !in[u];
				wantn += !in[u] && (u == wo || in[u - 1]);
			}
			assert_int_equal(lack, want);
			assert_int_equal(ng, wantn);
			for (int r = 0; r < ng; r++)
				for (uint64_t u = gap[r].off; u < gap[r].off + gap[r].len; u++) {
					assert_true(u >= wo && u < wo + wl);
					assert_int_equal(in[u], 0);
				}
			/* counting only, without room for the parts */
			uint64_t lack2 = 0;
			assert_int_equal(plb__ranges_gaps(&s, wo, wl, NULL, 0, &lack2), ng);
			assert_int_equal(lack2, want);
		}
	}
	plb__ranges_free(&s);
	assert_null(s.r);
	assert_int_equal(s.n, 0);
}

/* Placement: a PU gets the free units its group holds while there are
 * any, then the lowest free units; without groups the same calls give
 * the same grants as always (lowest first). */
static void test_placement(void **state)
{
	plb__balancer_t *b = greedy100(4, 1000), *plain = greedy100(4, 1000);
	assert_int_equal(plb__balancer_hold(b, 0, 0, 10), PLB_EINVAL);  /* no group yet */
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb__balancer_group(b, i, i / 2), 0);
	assert_int_equal(plb__balancer_group(b, 4, 0), PLB_EINVAL);
	assert_int_equal(plb__balancer_group(b, 0, 4), PLB_EINVAL);
	assert_int_equal(plb__balancer_hold(b, 0, 990, 11), PLB_EINVAL);
	assert_int_equal(plb__balancer_hold(b, 0, 5, 0), PLB_EINVAL);        /* nothing to hold */
	assert_int_equal(plb__balancer_hold(b, 0, 1001, 1), PLB_EINVAL);     /* past W */
	assert_int_equal(plb__balancer_hold(b, 4, 0, 10), PLB_EINVAL);       /* no such group */
	assert_int_equal(plb__balancer_hold(b, -1, 0, 10), PLB_EINVAL);
	assert_int_equal(plb__balancer_hold(b, 0, 600, 250), 0);
	assert_int_equal(plb__balancer_hold(b, 0, 800, 200), 0);        /* merged: [600, 1000) */
	assert_int_equal(plb__balancer_hold(b, 1, 0, 400), 0);
	/* PUs 0 and 1 (group 0) take [600, 1000), 2 and 3 take [0, 400) */
	uint64_t want[8] = {600, 700, 0, 100, 800, 900, 200, 300}, plain_at = 0;
	int who[8] = {0, 1, 2, 3, 0, 1, 2, 3};
	for (int k = 0; k < 8; k++) {
		struct plb__grant g, h;
		assert_int_equal(plb__balancer_next(b, who[k], 0, &g), PLB__NEXT_GRANT);
		assert_int_equal(g.offset, want[k]);
		assert_int_equal(g.units, 100);
		assert_int_equal(plb__balancer_next(plain, who[k], 0, &h), PLB__NEXT_GRANT);
		assert_int_equal(h.offset, plain_at);
		plain_at += 100;
		struct plb__block_done s = {g.id, 1, 0, 1, 0}, t = {h.id, 1, 0, 1, 0};
		assert_int_equal(plb__balancer_done(b, who[k], &s), 0);
		assert_int_equal(plb__balancer_done(plain, who[k], &t), 0);
	}
	check_free_list(b, 200, "held ranges taken");
	/* nothing held is free: the lowest free units, [400, 600) */
	struct plb__grant g;
	assert_int_equal(plb__balancer_next(b, 0, 1, &g), PLB__NEXT_GRANT);
	assert_int_equal(g.offset, 400);
	plb__balancer_destroy(b);
	plb__balancer_destroy(plain);
}

/* A grant longer than the held stretch is cut to it when one more block
 * costs nothing by the PU's model (no fixed cost), and not when the
 * fixed cost is most of a block's time: then it starts on the held units
 * and runs on past them. */
static void test_placement_cut(void **state)
{
	for (int fixed = 0; fixed <= 1; fixed++) {
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
		struct plb__sample s[4];
		for (int k = 0; k < 4; k++) {
			double u = 500.0 * (1 << k);
			s[k] = (struct plb__sample){u, u * 1e-4 + (fixed ? 2.0 : 0), 0};
		}
		for (int i = 0; i < 2; i++) {
			assert_int_equal(plb__balancer_model_set(b, i, s, 4, INFINITY), 0);
			assert_int_equal(plb__balancer_group(b, i, i), 0);
		}
		check_busy_summary(b, 0);       /* the models' rates, from model_set */
		assert_int_equal(plb__balancer_hold(b, 0, 50000, 400), 0);
		struct plb__grant g;
		assert_int_equal(plb__balancer_next(b, 0, 0, &g), PLB__NEXT_GRANT);
		assert_int_equal(g.offset, 50000);
		if (fixed)
			assert_true(g.units > 400);
		else
			assert_int_equal(g.units, 400);
		plb__balancer_destroy(b);
	}
}

/* Placement takes a free unit that a PU's node holds even when it is the
 * only one (a held stretch of one unit): PU 0's node holds [500, 501), so
 * its grant starts there and runs on past it (no model: no cut). A PU in
 * no group takes none of a group's units. */
static void test_placement_one_unit(void **state)
{
	(void)state;
	plb__balancer_t *b = greedy100(2, 1000);
	assert_int_equal(plb__balancer_group(b, 0, 0), 0);
	assert_int_equal(plb__balancer_hold(b, 0, 500, 1), 0);
	struct plb__grant g;
	assert_int_equal(plb__balancer_next(b, 0, 0, &g), PLB__NEXT_GRANT);
	assert_int_equal(g.offset, 500);
	assert_int_equal(g.units, 100);
	check_free_list(b, 900, "one held unit");
	/* PU 1 is in no group: what group 0 holds is not its, it takes the
	 * lowest free units */
	assert_int_equal(plb__balancer_hold(b, 0, 700, 100), 0);
	assert_int_equal(plb__balancer_next(b, 1, 0, &g), PLB__NEXT_GRANT);
	assert_int_equal(g.offset, 0);
	plb__balancer_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_merges),
		cmocka_unit_test(test_pool_merges_at_capacity),
		cmocka_unit_test(test_pool_take_whole_range_at_capacity),
		cmocka_unit_test(test_pool_split_at_capacity),
		cmocka_unit_test(test_rest_below_min_block_joins),
		cmocka_unit_test(test_ranges_against_bitmap),
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_placement_cut),
		cmocka_unit_test(test_placement_one_unit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
