/* PLB-HeC (balancer/policies/plb_hec.c): synchronised training rounds
 * until every fit explains its times, and re-solves when a round's finish
 * times spread. */
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

/* One lockstep round of PLB-HeC over n like PUs: each gets a block of x
 * units, which takes (1 ms + x / 1e6 s) * factor[i], and all report;
 * returns the kind of PU 0's block. */
static double hec_xfer;  /* the share of each block's time spent in transfer */

static enum plb__grant_kind hec_round(plb__balancer_t *b, int n, double *now,
				      const double *factor)
{
	struct plb__grant g[3];
	assert_true(n <= 3);
	for (int i = 0; i < n; i++)
		assert_int_equal(plb__balancer_next(b, i, *now, &g[i]), PLB__NEXT_GRANT);
	double t0 = *now;
	for (int i = 0; i < n; i++) {
		double t = (1e-3 + (double)g[i].units / 1e6) * factor[i];
		*now = fmax(*now, t0 + t);
		struct plb__block_done s = {g[i].id, t * (1 - hec_xfer), t * hec_xfer, t0 + t, 0};
		assert_int_equal(plb__balancer_done(b, i, &s), 0);
	}
	return g[0].kind;
}

/* PLB-HeC's training over two like PUs whose k-th blocks take noise[k]
 * times their time (so both double their blocks every round); returns the
 * training blocks granted. */
static long hec_training_blocks(double r2, const double noise[8])
{
	struct plb__params p;
	plb__params_init(&p);
	p.hec_r2 = r2;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(&p, "plb-hec", 2, 1000000000, &b), 0);
	double now = 0;
	for (int k = 0; k < 9; k++) {
		const double f[2] = {noise[k % 8], noise[k % 8]};
		if (hec_round(b, 2, &now, f) != PLB__GRANT_TRAINING)
			break;
	}
	struct plb__balancer_stats st;
	plb__balancer_stats(b, &st);
	plb__balancer_destroy(b);
	return st.training_blocks;
}

/* PLB-HeC trains until every PU's fit explains its times (R^2 >= hec_r2)
 * with three blocks at least and eight at most: three rounds on exact
 * times, and on times off by 10% (block sizes double, so the sizes explain
 * most of the spread); all eight when the times are noise (each off by a
 * factor 5 up or down), or off by 10% and hec_r2 is 0.9999. */
static void test_hec_training_rounds(void **state)
{
	static const double exact[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	static const double noisy[8] = {5, 0.2, 5, 0.2, 0.2, 5, 0.2, 5};
	static const double mild[8] = {1.1, 0.9, 1.1, 0.9, 0.9, 1.1, 0.9, 1.1};
	long n;
	if ((n = hec_training_blocks(0.7, exact)) != 2 * 3)
		fail_msg("exact times: %ld training blocks, expected 6", n);
	if ((n = hec_training_blocks(0.7, noisy)) != 2 * 8)
		fail_msg("noisy times, R^2 >= 0.7: %ld training blocks, expected 16", n);
	if ((n = hec_training_blocks(0.7, mild)) != 2 * 3)
		fail_msg("times off by 10%%, R^2 >= 0.7: %ld training blocks, expected 6", n);
	if ((n = hec_training_blocks(0.9999, mild)) != 2 * 8)
		fail_msg("times off by 10%%, R^2 >= 0.9999: %ld training blocks, expected 16", n);
	/* exact times of which a quarter is transfer: the fit explains a
	 * block's whole time, compute and transfer together */
	hec_xfer = 0.25;
	n = hec_training_blocks(0.7, exact);
	hec_xfer = 0;
	if (n != 2 * 3)
		fail_msg("exact times, a quarter transfer: %ld training blocks, expected 6", n);
}

/* R^2 needs three samples: a PU whose blocks take no measurable time
 * (its model keeps no sample of them) never shows a fit good enough, so
 * training runs all eight rounds, next to a PU with exact times (what
 * follows is not this test's concern: that PU has no model to plan with).
 * Either PU may be the one without samples: every PU's fit is looked at. */
static void test_hec_training_without_samples(void **state)
{
	for (int zero = 0; zero < 2; zero++) {
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, "plb-hec", 2, 1000000000, &b), 0);
		double now = 0;
		double f[2] = {1, 1};
		f[zero] = 0;
		for (int k = 0; k < 8; k++)
			if (hec_round(b, 2, &now, f) != PLB__GRANT_TRAINING)
				fail_msg("PU %d without samples: round %d is not training", zero, k + 1);
		struct plb__balancer_stats st;
		plb__balancer_stats(b, &st);
		assert_int_equal(st.training_blocks, 2 * 8);
		plb__balancer_destroy(b);
	}
}

/* PLB-HeC's rounds are a barrier: a PU lost after its block of the round
 * was back holds nothing, so losing it leaves the barrier waiting for the
 * PU still out; the round ends only when that one is back. */
static void test_hec_lost_after_done_keeps_barrier(void **state)
{
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hec", 3, 1000000000, &b), 0);
	struct plb__grant g[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb__balancer_next(b, i, 0, &g[i]), PLB__NEXT_GRANT);
	struct plb__block_done s0 = {g[0].id, 0.01, 0, 0.01, 0};
	assert_int_equal(plb__balancer_done(b, 0, &s0), 0);
	assert_int_equal(plb__balancer_lost(b, 0, 0.015), 0);
	struct plb__block_done s1 = {g[1].id, 0.02, 0, 0.02, 0};
	assert_int_equal(plb__balancer_done(b, 1, &s1), 0);
	struct plb__grant n;
	if (plb__balancer_next(b, 1, 0.02, &n) != PLB__NEXT_WAIT)
		fail_msg("a new round began while PU 2's block of the last one was out");
	struct plb__block_done s2 = {g[2].id, 0.03, 0, 0.03, 0};
	assert_int_equal(plb__balancer_done(b, 2, &s2), 0);
	assert_int_equal(plb__balancer_next(b, 1, 0.03, &n), PLB__NEXT_GRANT);
	plb__balancer_destroy(b);
}

/* PLB-HeC's training rounds over two PUs: PU 0's times are exact, PU 1's
 * block k takes base + (-1)^k jitter seconds whatever its size. */
static int hec_constant_rounds(double base, double jitter)
{
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hec", 2, 1000000000, &b), 0);
	double now = 0;
	int rounds = 0;
	for (int k = 0; k < 9; k++) {
		struct plb__grant g[2];
		double t0 = now;
		for (int i = 0; i < 2; i++)
			assert_int_equal(plb__balancer_next(b, i, now, &g[i]), PLB__NEXT_GRANT);
		if (g[0].kind != PLB__GRANT_TRAINING)
			break;
		rounds++;
		for (int i = 0; i < 2; i++) {
			double t = i == 0 ? 1e-3 + (double)g[i].units / 1e6 : base + (k % 2 ? -jitter : jitter);
			now = fmax(now, t0 + t);
			struct plb__block_done s = {g[i].id, t, 0, t0 + t, 0};
			assert_int_equal(plb__balancer_done(b, i, &s), 0);
		}
	}
	struct plb__balancer_stats st;
	plb__balancer_stats(b, &st);
	plb__balancer_destroy(b);
	assert_int_equal(st.training_blocks, 2 * rounds);
	return rounds;
}

/* A PU whose blocks all take the same time, whatever their size (a fixed
 * cost that hides the work), has no spread for a fit to explain: R^2 is
 * 1, not 0/0 or a rounding error over a rounding error, and training ends
 * after three rounds as for exact times. Alike means within 1e-9 of the
 * mean: 0.05 s three times (their mean is off by rounding: 0.15 / 3 is
 * 0.05000000000000001), 50 s +- 1e-8 s; 1 ms +- 1e-10 s is a spread, the
 * size explains none of it, and training runs its eight rounds. */
static void test_hec_training_constant_times(void **state)
{
	int r;
	(void)state;
	if ((r = hec_constant_rounds(0.05, 0)) != 3)
		fail_msg("0.05 s a block: %d training rounds, expected 3", r);
	if ((r = hec_constant_rounds(50, 1e-8)) != 3)
		fail_msg("50 s +- 1e-8 s a block: %d training rounds, expected 3", r);
	if ((r = hec_constant_rounds(1e-3, 1e-10)) != 8)
		fail_msg("1 ms +- 1e-10 s a block: %d training rounds, expected 8", r);
}

/* PLB-HeC after training: rounds that end together reuse the split; a
 * round whose finishes spread by more than hec_threshold (10%) of its
 * length is re-solved. Three like PUs in lockstep; from round `slow_from`
 * on, PU `slow` takes twice as long. Returns the solves made after round 5. */
static long hec_solves_after(int slow, int slow_from)
{
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hec", 3, 1000000000, &b), 0);
	double now = 0;
	long before = 0;
	struct plb__balancer_stats st;
	for (int k = 0; k < 8; k++) {
		double f[3] = {1, 1, 1};
		if (k >= slow_from && slow >= 0)
			f[slow] = 2;
		(void)hec_round(b, 3, &now, f);
		if (k == 4) {
			plb__balancer_stats(b, &st);
			assert_int_equal(st.training_blocks, 9);        /* 3 rounds */
			before = st.solves;
		}
	}
	plb__balancer_stats(b, &st);
	plb__balancer_destroy(b);
	return st.solves - before;
}

/* A PU that has not asked for a block yet (its worker still starting,
 * say) is in no round: it is no finish time of the round, so rounds that
 * end together are not re-solved on its account. Two like PUs of three
 * run in lockstep through training (all eight rounds: the third has no
 * samples) and four regular rounds. */
static void test_hec_absent_pu_no_resolve(void **state)
{
	(void)state;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hec", 3, 1000000000, &b), 0);
	double now = 0;
	const double f[2] = {1, 1};
	struct plb__balancer_stats st;
	long before = -1;
	for (int k = 0; k < 13; k++) {
		enum plb__grant_kind kind = hec_round(b, 2, &now, f);
		if (k == 8) {
			assert_int_equal(kind, PLB__GRANT_REGULAR);
			plb__balancer_stats(b, &st);
			before = st.solves;
		}
	}
	plb__balancer_stats(b, &st);
	assert_int_equal(st.training_blocks, 2 * 8);
	if (st.solves != before)
		fail_msg("rounds that end together, a third PU that never asked: %ld re-solves, expected none",
			 st.solves - before);
	plb__balancer_destroy(b);
}

static void test_hec_resolve_on_spread(void **state)
{
	long n;
	if ((n = hec_solves_after(-1, 0)) != 0)
		fail_msg("rounds that end together: %ld re-solves, expected none", n);
	for (int slow = 0; slow < 3; slow++)
		if ((n = hec_solves_after(slow, 5)) < 1)
			fail_msg("PU %d twice as slow from round 6: %ld re-solves, expected some",
				 slow, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hec_training_rounds),
		cmocka_unit_test(test_hec_training_without_samples),
		cmocka_unit_test(test_hec_lost_after_done_keeps_barrier),
		cmocka_unit_test(test_hec_training_constant_times),
		cmocka_unit_test(test_hec_absent_pu_no_resolve),
		cmocka_unit_test(test_hec_resolve_on_spread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
