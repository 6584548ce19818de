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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdss_weights),
		cmocka_unit_test(test_hdss_weight_one),
		cmocka_unit_test(test_hdss_small_domain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
