/* HDSS (balancer/policies/hdss.c): the adaptive phase's training blocks
 * and the weights fitted from them. */
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

/* Throughput (units/s) of the four PUs of test_hdss_weights at block size x. */
static double hdss_thr(int pu, double x)
{
	switch (pu) {
	case 0: return 1000 + 100 * log(x);     /* log-linear: the fit is exact */
	case 1: return 5000;                    /* flat */
	case 2: return 6000 - 200 * log(x);     /* slows with size */
	default: return 1 + 1000 * log(x / 1024); /* steep: the fit overshoots */
	}
}

/* HDSS's adaptive phase on n PUs with throughput thr(pu, size): blocks of
 * 1024, 2048, 4096 and 8192 units, one at a time (the next doubled block
 * waits for this one's sample), each split 3 : 1 between compute and
 * transfer. Returns the time at its end. */
static double hdss_train(plb__balancer_t *b, int n, double (*thr)(int, double))
{
	double now = 0;
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < n; i++) {
			struct plb__grant g;
			assert_int_equal(plb__balancer_next(b, i, now, &g), PLB__NEXT_GRANT);
			assert_int_equal(g.kind, PLB__GRANT_TRAINING);
			assert_int_equal(g.units, 1024u << k);
			struct plb__grant g2;
			assert_int_equal(plb__balancer_next(b, i, now, &g2), PLB__NEXT_WAIT);
			double t = (double)g.units / thr(i, (double)g.units);
			now += t;
			struct plb__block_done s = {g.id, 0.75 * t, 0.25 * t, now, 0};
			assert_int_equal(plb__balancer_done(b, i, &s), 0);
		}
	return now;
}

/* HDSS: each PU's training blocks double from initial_block (1024, 2048,
 * 4096, 8192 with hdss_samples = 4), one at a time; its weight is the
 * least-squares line of throughput over ln(size), read at 4 times the
 * largest block and held within [best, 1.5 best]; then every block is
 * w_p / sum w * pool / hdss_div. The throughputs are chosen so each weight
 * is known in closed form: thr_0(4 * 8192); 5000; thr_2(1024) (the fit is
 * below the best sample); 1.5 thr_3(8192) (the fit, thr_3(4 * 8192), is
 * above the cap).
 * Samples split their time 3 : 1 between compute and transfer, and the
 * weight uses both. */
static void test_hdss_weights(void **state)
{
	const uint64_t W = 1000000000000ULL;
	const double want_w[4] = {1000 + 100 * log(4 * 8192.0), 5000,
				  6000 - 200 * log(1024.0), 1.5 * (1 + 1000 * log(8.0))};
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "hdss", 4, W, &b), 0);
	double now = hdss_train(b, 4, hdss_thr);
	double wsum = want_w[0] + want_w[1] + want_w[2] + want_w[3];
	for (int i = 0; i < 4; i++) {
		struct plb__balancer_stats st;
		plb__balancer_stats(b, &st);
		struct plb__grant g;
		assert_int_equal(plb__balancer_next(b, i, now, &g), PLB__NEXT_GRANT);
		assert_int_equal(g.kind, PLB__GRANT_REGULAR);
		double want = want_w[i] / wsum * (double)st.units_pool / 2;
		if (fabs((double)g.units - want) > 1)
			fail_msg("PU %d: block of %llu units, expected %.0f (weight %g of %g)", i,
				 (unsigned long long)g.units, want, want_w[i], wsum);
	}
	plb__balancer_destroy(b);
}

static double unit_or_5000(int pu, double x)
{
	(void)x;
	return pu == 0 ? 1 : 5000;
}

/* HDSS: a PU whose weight is exactly 1 (one unit a second at every block
 * size: the fit is flat at its best sample) is weighted like any other,
 * and both PUs go on to regular blocks in proportion, 1 : 5000. */
static void test_hdss_weight_one(void **state)
{
	(void)state;
	const uint64_t W = 1000000000000ULL;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "hdss", 2, W, &b), 0);
	double now = hdss_train(b, 2, unit_or_5000);
	struct plb__balancer_stats st;
	plb__balancer_stats(b, &st);
	double pool = (double)st.units_pool;
	for (int i = 0; i < 2; i++) {
		struct plb__grant g;
		assert_int_equal(plb__balancer_next(b, i, now, &g), PLB__NEXT_GRANT);
		if (g.kind != PLB__GRANT_REGULAR)
			fail_msg("PU %d (weight %d) after training: a %s block", i, i ? 5000 : 1,
				 g.kind == PLB__GRANT_TRAINING ? "training" : "other");
		double want = (i ? 5000.0 : 1.0) / 5001 * pool / 2;
		assert_true(fabs((double)g.units - want) <= 1);
		pool -= (double)g.units;
	}
	plb__balancer_destroy(b);
}

/* HDSS on a domain too small for initial_block: the adaptive phase's
 * doubling sizes shrink so that all PUs' adaptive blocks together take
 * hdss_adaptive_fraction of W, no more and (up to rounding) no less. Two
 * PUs with hdss_samples = 4 run x, 2x, 4x, 8x each: 2 * 15 x = 0.2 * 15000,
 * so x = 100. */
static void test_hdss_small_domain(void **state)
{
	struct plb__params p;
	plb__params_init(&p);
	p.min_block = 1;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(&p, "hdss", 2, 15000, &b), 0);
	double now = 0;
	uint64_t adaptive = 0;
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 2; i++) {
			struct plb__grant g;
			assert_int_equal(plb__balancer_next(b, i, now, &g), PLB__NEXT_GRANT);
			assert_int_equal(g.kind, PLB__GRANT_TRAINING);
			assert_int_equal(g.units, 100u << k);
			adaptive += g.units;
			now += 1e-3 * (double)g.units;
			struct plb__block_done s = {g.id, 1e-3 * (double)g.units, 0, now, 0};
			assert_int_equal(plb__balancer_done(b, i, &s), 0);
		}
	assert_int_equal(adaptive, 3000);
	plb__balancer_destroy(b);
}

/* A PU far slower than the rest (1000x) is still in its first training
 * blocks when the others have run theirs many times over: the adaptive
 * phase ends once its blocks hold hdss_adaptive_fraction of W (a block
 * past it at most), and the fast PUs get weighted, decreasing blocks while
 * the slow one trains on; once its first block reports, it takes part
 * with that block's weight. Before, the phase waited for every PU's
 * weight, and on a cluster with such a PU every block was a training
 * block. Every unit done exactly once. */
static void test_hdss_slow_pu_does_not_hold_the_phase(void **state)
{
	(void)state;
	const uint64_t W = 10000000;
	const double rate[3] = {1e6, 2e6, 1e3};  /* units a second */
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "hdss", 3, W, &b), 0);
	struct plb__grant g[3];
	double end[3], now = 0, trained = 0, last_regular = INFINITY;
	int busy[3] = {0}, regular_before_slow = 0, slow_regular = 0, shrank = 0;
	unsigned char *seen = calloc(W, 1);
	assert_non_null(seen);
	while (!plb__balancer_finished(b)) {
		for (int i = 0; i < 3; i++) {
			if (busy[i])
				continue;
			int rc = plb__balancer_next(b, i, now, &g[i]);
			if (rc != PLB__NEXT_GRANT)
				continue;
			busy[i] = 1;
			end[i] = now + (double)g[i].units / rate[i];
			if (g[i].kind == PLB__GRANT_TRAINING) {
				trained += (double)g[i].units;
			} else if (i < 2) {
				struct plb__balancer_stats st;
				plb__balancer_stats(b, &st);
				regular_before_slow += st.units_done < W / 2 && !slow_regular;
				shrank += (double)g[i].units < last_regular;
				last_regular = (double)g[i].units;
			} else {
				slow_regular = 1;
			}
		}
		int next = -1;
		for (int i = 0; i < 3; i++)
			if (busy[i] && (next < 0 || end[i] < end[next]))
				next = i;
		assert_true(next >= 0);
		now = end[next];
		busy[next] = 0;
		struct plb__block_done s = {g[next].id, (double)g[next].units / rate[next], 0, now, 0};
		assert_int_equal(plb__balancer_done(b, next, &s), 0);
		for (uint64_t u = g[next].offset; u < g[next].offset + g[next].units; u++)
			seen[u]++;
	}
	for (uint64_t u = 0; u < W; u++)
		if (seen[u] != 1)
			fail_msg("unit %llu done %d times", (unsigned long long)u, seen[u]);
	free(seen);
	/* the phase ended by its budget: one doubled block past it at most */
	if (!(trained <= 0.2 * (double)W + 8192 * 3))
		fail_msg("%.0f units in training blocks, over the adaptive phase's %.0f", trained, 0.2 * (double)W);
	if (!(regular_before_slow > 0 && shrank > 0 && slow_regular))
		fail_msg("regular blocks before the slow PU's weight: %d, of which shrinking %d; the slow PU got one: %d",
			 regular_before_slow, shrank, slow_regular);
	plb__balancer_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdss_weights),
		cmocka_unit_test(test_hdss_weight_one),
		cmocka_unit_test(test_hdss_small_domain),
		cmocka_unit_test(test_hdss_slow_pu_does_not_hold_the_phase),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
