/* The busy PUs (balancer/busy.c): when each is free, the latest other's
 * free time, what they run by a time and whether they could run the pool
 * dry, each from its one scan per instant, against a scan of every PU. */
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

/* When a PU is free (plb__busy_for) and whether others are busy
 * (plb__others_busy), which the model policies plan with. A block without
 * a prediction (greedy has no model; a first training block) counts as
 * predicted to end when it started, so as late again as it has run: a
 * device far slower than the others is not taken to be free at once. A
 * predicted block counts until its predicted end, and past it as late
 * again as it already is. A PU is never busy "for others" with its own
 * blocks. */
static void test_busy_for_and_others_busy(void **state)
{
	plb__balancer_t *b = greedy100(3, 1000);
	struct plb__grant g;
	assert_int_equal(plb__others_busy(b, 0), 0);
	assert_int_equal(plb__others_busy(b, -1), 0);
	assert_int_equal(plb__balancer_next(b, 0, 1, &g), PLB__NEXT_GRANT);
	assert_true(g.predicted_s == 0);
	assert_true(plb__busy_for(b, 0, 1) == 0);
	assert_true(plb__busy_for(b, 0, 5) == 4);       /* as late again */
	assert_true(plb__busy_for(b, 1, 5) == 0);       /* idle */
	/* one block out, PU 0's */
	assert_int_equal(plb__others_busy(b, 0), 0);
	assert_int_equal(plb__others_busy(b, 1), 1);
	assert_int_equal(plb__others_busy(b, 2), 1);
	assert_int_equal(plb__others_busy(b, -1), 1);
	/* a second one, PU 0's too: still nobody busy but PU 0 */
	struct plb__grant g2;
	assert_int_equal(plb__balancer_next(b, 0, 1, &g2), PLB__NEXT_GRANT);
	assert_int_equal(plb__others_busy(b, 0), 0);
	assert_int_equal(plb__others_busy(b, 1), 1);
	plb__balancer_destroy(b);

	/* plb-hac on one PU: a training block at 1 us per unit, then the
	 * rest as a regular block with a prediction (about a second) */
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 1, 1000000, &b), 0);
	double now = 0;
	for (;;) {
		assert_int_equal(plb__balancer_next(b, 0, now, &g), PLB__NEXT_GRANT);
		if (g.kind != PLB__GRANT_TRAINING)
			break;
		double t = 1e-6 * (double)g.units;
		now += t;
		struct plb__block_done s = {g.id, t, 0, now, 0};
		assert_int_equal(plb__balancer_done(b, 0, &s), 0);
	}
	double p = g.predicted_s;
	assert_true(p > 0.9e-6 * (double)g.units && p < 1.1e-6 * (double)g.units);
	assert_near(plb__busy_for(b, 0, now), p, 1e-9 * p);
	assert_near(plb__busy_for(b, 0, now + 0.25 * p), 0.75 * p, 1e-9 * p);
	assert_true(plb__busy_for(b, 0, now + p) == 0);
	/* 2 p past its predicted end: taken to need 2 p more */
	assert_near(plb__busy_for(b, 0, now + 3 * p), 2 * p, 1e-9 * p);
	plb__balancer_destroy(b);
}

/* The latest other PU's free time, scanned afresh. */
static double others_scan(plb__balancer_t *b, int pu, double now)
{
	double t = 0;
	for (int i = 0; i < b->n; i++)
		if (i != pu && !b->pu[i].lost)
			t = fmax(t, plb__busy_for(b, i, now));
	return t;
}

static void assert_others_free_in(plb__balancer_t *b, double now)
{
	for (int pu = 0; pu < b->n; pu++)
		if (plb__others_free_in(b, pu, now) != others_scan(b, pu, now))
			fail_msg("PU %d at %g: %g, a scan says %g", pu, now,
				 plb__others_free_in(b, pu, now), others_scan(b, pu, now));
}

/* plb__others_free_in keeps one scan per instant: a grant, a block done
 * and a lost PU, each at the same instant as the scan it follows, must
 * each be seen (greedy's blocks have no prediction: busy as long again
 * as they have run). */
static void test_others_free_in(void **state)
{
	plb__balancer_t *b = greedy100(4, 100000);
	struct plb__grant g0, g1, g2;
	(void)state;
	assert_int_equal(plb__balancer_next(b, 0, 1, &g0), PLB__NEXT_GRANT);
	assert_int_equal(plb__balancer_next(b, 1, 3, &g1), PLB__NEXT_GRANT);
	assert_others_free_in(b, 5);
	assert_true(plb__others_free_in(b, 0, 5) == 2);
	assert_true(plb__others_free_in(b, 2, 5) == 4);
	struct plb__block_done s = {g0.id, 4, 0, 5, 0};
	assert_int_equal(plb__balancer_done(b, 0, &s), 0);
	assert_true(plb__others_free_in(b, 2, 5) == 2);        /* PU 0 is free */
	assert_others_free_in(b, 5);
	assert_int_equal(plb__balancer_next(b, 2, 5, &g2), PLB__NEXT_GRANT);
	assert_true(plb__others_free_in(b, 3, 5) == 2);
	assert_true(plb__others_free_in(b, 3, 7) == 4);
	assert_others_free_in(b, 7);
	assert_int_equal(plb__balancer_lost(b, 1, 7), 0);
	assert_true(plb__others_free_in(b, 3, 7) == 2);        /* PU 1's block is gone */
	assert_others_free_in(b, 7);
	plb__balancer_destroy(b);
}

/* What the busy PUs other than pu run by t, PU by PU. */
static double room_scan(plb__balancer_t *b, int pu, double now, double t)
{
	double room = 0;
	for (int i = 0; i < b->n; i++)
		if (i != pu && !b->pu[i].lost && b->pu[i].nout > 0 && plb__model_ready(&b->model[i]))
			room += fmax(0, t - plb__busy_for(b, i, now)) * b->pu[i].rate;
	return room;
}

static void assert_busy_room(plb__balancer_t *b, double now)
{
	for (int pu = 0; pu < b->n; pu++)
		for (double t = 0; t < 0.2; t += 0.01) {
			double want = room_scan(b, pu, now, t), got = plb__busy_room(b, pu, now, t);
			if (!(fabs(got - want) <= 1e-9 * want + 1e-12))
				fail_msg("PU %d at %g, t %g: %g, a scan says %g", pu, now, t, got, want);
		}
}

/* plb__busy_dry gives plb__busy_room(t) < pool for every PU, asked at
 * times on both sides of where the busy PUs run the pool dry, in a drawn
 * order and again, so that its bracket is narrowed from both sides and
 * then answers (a bracket moved the wrong way, or kept across a change of
 * the grants, answers otherwise). */
static void assert_busy_dry(plb__balancer_t *b, double now)
{
	double rates = 0, last = 0, ts[64];
	for (int i = 0; i < b->n; i++)
		if (!b->pu[i].lost && b->pu[i].nout > 0) {
			rates += b->pu[i].rate;
			last = fmax(last, plb__busy_for(b, i, now));
		}
	assert_true(rates > 0);
	for (int k = 0; k < 64; k++)
		ts[k] = 2 * (last + (double)b->pool / rates) * urand();
	int yes = 0, no = 0;
	for (int pu = 0; pu < b->n; pu++)
		for (int rep = 0; rep < 2; rep++)
			for (int k = 0; k < 64; k++) {
				double t = ts[k];
				int want = plb__busy_room(b, pu, now, t) < (double)b->pool;
				if (plb__busy_dry(b, pu, now, t) != want)
					fail_msg("PU %d at %g, t %g: busy_dry says %d, the room %d", pu, now, t,
						 !want, want);
				yes += want;
				no += !want;
			}
	assert_true(yes > 0 && no > 0);
}

/* plb__busy_room keeps each busy PU's rate from one scan per instant and
 * state: a block done (which moves the PU's rate), a grant and a lost PU
 * at the same instant as the scan must each be seen. Three PUs of 1, 2
 * and 4 us a unit trained, then two of them busy. */
static void test_busy_room(void **state)
{
	static const double per[3] = {1e-6, 2e-6, 4e-6};
	plb__balancer_t *b;
	struct plb__grant g[3];
	double end[3], now = 0;
	(void)state;
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 3, 100000000, &b), 0);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 3; i++) {
			assert_int_equal(plb__balancer_next(b, i, now, &g[i]), PLB__NEXT_GRANT);
			end[i] = now + per[i] * (double)g[i].units;
		}
		for (int i = 0; i < 3; i++) {
			struct plb__block_done s = {g[i].id, end[i] - now, 0, end[i], 0};
			assert_int_equal(plb__balancer_done(b, i, &s), 0);
			now = fmax(now, end[i]);
		}
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(plb__balancer_next(b, i, now, &g[i]), PLB__NEXT_GRANT);
		end[i] = now + per[i] * (double)g[i].units;
	}
	assert_true(b->pu[0].rate > b->pu[1].rate && b->pu[1].rate > 0);
	assert_busy_room(b, now);
	assert_busy_dry(b, now);
	assert_true(plb__busy_room(b, 2, now, 1e9) > 0);
	assert_true(plb__busy_room(b, 0, now, 0) == 0);
	/* PU 1 ends its block in a third of the time: its rate moves */
	double r1 = b->pu[1].rate;
	struct plb__block_done s = {g[1].id, (end[1] - now) / 3, 0, now, 0};
	assert_int_equal(plb__balancer_done(b, 1, &s), 0);
	assert_true(b->pu[1].rate != r1);
	assert_int_equal(plb__balancer_next(b, 1, now, &g[1]), PLB__NEXT_GRANT);
	assert_busy_room(b, now);
	assert_busy_dry(b, now);
	assert_int_equal(plb__balancer_lost(b, 0, now), 0);
	assert_busy_room(b, now);
	assert_busy_dry(b, now);
	assert_true(plb__busy_room(b, 2, now, 1e9) > 0);
	plb__balancer_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_for_and_others_busy),
		cmocka_unit_test(test_others_free_in),
		cmocka_unit_test(test_busy_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
