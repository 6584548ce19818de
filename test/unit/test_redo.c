/* Late blocks run again (balancer/redo.c): when the free PUs are woken,
 * which block, its pieces' sizes and planned end, and which copy counts
 * (the other's report is stale). */
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

/* PU pu asks at *now: 1 with a grant in *g, or 0 once *now has moved on
 * to the balancer's wake-up time, which must be finite. */
static int ask_or_wake(plb__balancer_t *b, int pu, double *now, struct plb__grant *g)
{
	int rc = plb__balancer_next(b, pu, *now, g);
	if (rc == PLB__NEXT_WAIT) {
		*now = plb__balancer_wake(b);
		assert_true(isfinite(*now));
		return 0;
	}
	assert_int_equal(rc, PLB__NEXT_GRANT);
	return 1;
}

/* PU pu runs g from *now at four_linear_samples' line and reports it. */
static void run_linear(plb__balancer_t *b, int pu, const struct plb__grant *g, double *now)
{
	double t = 0.01 + 1e-5 * (double)g->units;
	*now += t;
	struct plb__block_done smp = {g->id, t, 0, *now, 0};
	assert_int_equal(plb__balancer_done(b, pu, &smp), 0);
}

/* A late block is run again by free PUs only: with none (one PU, or the
 * others lost) there is nothing to wake the caller for, however late the
 * block is. */
static void test_no_wake_without_free_pus(void **state)
{
	(void)state;
	for (int n = 1; n <= 2; n++) {
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, "plb-hac", n, 100000, &b), 0);
		four_linear_samples(b, 0, n);
		if (n == 2)
			assert_int_equal(plb__balancer_lost(b, 1, 0), 0);
		struct plb__grant g;
		struct plb__balancer_stats st;
		double now = 0;
		int last_out = 0;
		while (plb__balancer_next(b, 0, now, &g) == PLB__NEXT_GRANT) {
			plb__balancer_stats(b, &st);
			last_out += st.units_pool == 0;
			/* the block runs 100x its model's time */
			now += 100 * (0.01 + 1e-5 * (double)g.units);
			if (isfinite(plb__balancer_wake(b)))
				fail_msg("%d PU(s), one live: a wake-up at %g s for a block nobody else can run",
					 n, plb__balancer_wake(b));
			struct plb__block_done smp = {g.id, 100 * (0.01 + 1e-5 * (double)g.units), 0, now, 0};
			assert_int_equal(plb__balancer_done(b, 0, &smp), 0);
		}
		assert_true(plb__balancer_finished(b));
		assert_true(last_out > 0);      /* the pool was empty with a block out */
		plb__balancer_destroy(b);
	}
}

/* Nor for a free PU whose model holds nothing (its one block took no
 * measurable time, which is no sample): how long it would take over a late
 * block is not known, so the late block is not run again on it, and there
 * is no time to wake the caller at. */
static void test_no_wake_for_untrained_free_pu(void **state)
{
	(void)state;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, 2, &b), 0);
	struct plb__grant g0, g1, g;
	assert_int_equal(plb__balancer_next(b, 0, 0, &g0), PLB__NEXT_GRANT);
	assert_int_equal(plb__balancer_next(b, 1, 0, &g1), PLB__NEXT_GRANT);
	assert_true(g0.units == 1 && g1.units == 1);
	struct plb__block_done s = {g1.id, 0, 0, 0.001, 0};
	assert_int_equal(plb__balancer_done(b, 1, &s), 0);
	assert_true(isnan(plb__balancer_predict(b, 1, 1)));
	/* PU 0's first block is late from its start (it has no prediction) */
	for (double now = 0.01; now < 1000; now *= 10) {
		int nx = plb__balancer_next(b, 1, now, &g);
		if (nx != PLB__NEXT_WAIT)
			fail_msg("t=%g: %d, kind %d units %llu at %llu", now, nx, (int)g.kind, (unsigned long long)g.units, (unsigned long long)g.offset);
		if (isfinite(plb__balancer_wake(b)))
			fail_msg("t=%g: a wake-up at %g s for a PU with one sample", now,
				 plb__balancer_wake(b));
	}
	s = (struct plb__block_done){g0.id, 1000, 0, 1000, 0};
	assert_int_equal(plb__balancer_done(b, 0, &s), 0);
	assert_true(plb__balancer_finished(b));
	plb__balancer_destroy(b);
}

/* The other side: once the pool is empty, a free PU beside a busy one is
 * to be asked again when re-running the busy one's block would pay, which
 * is after that block's predicted end by redo_gain times what the free PU
 * needs for it (its rate at its largest block, x / (0.01 + 1e-5 x), is
 * under 10^5 units a second). While the pool still has units there is
 * no late block to run again, so no wake-up. */
static void test_wake_after_predicted_end(void **state)
{
	(void)state;
	struct plb__params par;
	plb__params_init(&par);          /* the defaults: redo_gain 3 */
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(&par, "plb-hac", 2, 100000, &b), 0);
	four_linear_samples(b, 0, 2);
	struct plb__grant g[2];
	double at[2], end[2], now = 0;
	int busy[2] = {0, 0}, checked = 0;
	for (;;) {
		for (int i = 0; i < 2; i++) {
			if (busy[i])
				continue;
			struct plb__balancer_stats st;
			plb__balancer_stats(b, &st);
			int rc = plb__balancer_next(b, i, now, &g[i]);
			if (rc == PLB__NEXT_GRANT) {
				busy[i] = 1;
				at[i] = now;
				/* 2% slower than predicted: late, not late enough to re-run */
				end[i] = now + 1.02 * (0.01 + 1e-5 * (double)g[i].units);
				continue;
			}
			double w = plb__balancer_wake(b);
			if (st.units_pool > 0 && isfinite(w))
				fail_msg("a wake-up at %g s with %llu units in the pool", w,
					 (unsigned long long)st.units_pool);
			if (st.units_pool > 0 || !busy[1 - i])
				continue;
			double due = at[1 - i] + g[1 - i].predicted_s + par.redo_gain * (double)g[1 - i].units / 1e5;
			if (!(w >= due && isfinite(w)))
				fail_msg("PU %d free at %g s beside a block due at %g s: wake-up at %g s, not after %g s",
					 i, now, at[1 - i] + g[1 - i].predicted_s, w, due);
			checked++;
		}
		int next = busy[0] && (!busy[1] || end[0] <= end[1]) ? 0 : busy[1] ? 1 : -1;
		if (next < 0)
			break;
		now = end[next];
		busy[next] = 0;
		struct plb__block_done smp = {g[next].id, end[next] - at[next], 0, now, 0};
		assert_int_equal(plb__balancer_done(b, next, &smp), 0);
	}
	assert_true(plb__balancer_finished(b));
	assert_true(checked > 0);       /* a PU was free beside a busy one at the end */
	plb__balancer_destroy(b);
}

/* How long after its predicted end a late block of PU 0 (it never ends)
 * is to be run again by PU 1, free once the pool is empty (the wake-up
 * time it is given), whose blocks' round trips took lk seconds a unit
 * (its output's way back over a busy link: link_s in its samples); with
 * a master's link of `rate` units a second (0: none), *cross gets when
 * the late block's input was across it at the earliest. */
static double redo_delay_link(double lk, double rate, int local, double *cross)
{
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
	four_linear_samples(b, 0, 2);
	assert_int_equal(plb__balancer_link(b, rate, 0), 0);
	if (local)
		assert_int_equal(plb__balancer_local(b, 0), 0);
	struct plb__grant g0, g1;
	double now = 0, due = NAN, at = NAN;
	assert_int_equal(plb__balancer_next(b, 0, now, &g0), PLB__NEXT_GRANT);
	due = now + g0.predicted_s;
	*cross = rate > 0 ? (double)g0.units / rate : 0;
	for (int guard = 0; guard < 100000 && isnan(at); guard++) {
		int rc = plb__balancer_next(b, 1, now, &g1);
		if (rc == PLB__NEXT_WAIT) {     /* the pool is empty: woken to re-run it */
			at = plb__balancer_wake(b);
			break;
		}
		assert_int_equal(rc, PLB__NEXT_GRANT);
		if (g1.kind == PLB__GRANT_REDO) {       /* late enough already */
			at = now;
			break;
		}
		/* the round trip is reported, the time kept as the compute's
		 * alone: the two cases meet the late block at the same times */
		double t = 0.01 + 1e-5 * (double)g1.units;
		now += t;
		struct plb__block_done s = {g1.id, t, 0, now, lk * (double)g1.units};
		assert_int_equal(plb__balancer_done(b, 1, &s), 0);
	}
	plb__balancer_destroy(b);
	assert_true(isfinite(at));
	return at - due;
}

static double redo_delay(double lk)
{
	double cross;
	return redo_delay_link(lk, 0, 0, &cross);
}

/* A block is not late before its input could have crossed the master's
 * link (plb__balancer_link): over a link that carries the late block's
 * input in several times its compute's time, it is run again no sooner
 * than that crossing and its predicted time; without one, or on a PU
 * whose bytes do not cross it, far sooner. */
static void test_redo_waits_for_the_link(void **state)
{
	(void)state;
	double cross, plain = redo_delay_link(0, 0, 0, &cross);
	double slow = redo_delay_link(0, 2000, 0, &cross);
	/* the run starts at 0: the block's input is across at `cross` */
	if (!(cross > 3 * plain && slow >= cross - 1e-9))
		fail_msg("re-run %.4f s after the predicted end without a link, %.4f s with one its input crosses in %.4f s",
			 plain, slow, cross);
	/* on a PU beside the master (plb__balancer_local) its input crosses
	 * nothing: run again as soon as without a link */
	double beside = redo_delay_link(0, 2000, 1, &cross);
	if (!(beside < cross / 3))
		fail_msg("re-run %.4f s after the predicted end on a PU beside the master, whose input crosses no link (%.4f s over it)",
			 beside, cross);
	assert_int_equal(plb__balancer_link(NULL, 1, 0), PLB_EINVAL);
	assert_int_equal(plb__balancer_local(NULL, 0), PLB_EINVAL);
}

/* A re-run counts its pieces' way back: where a PU's blocks take far
 * longer to come back than to compute (its output queued on the master's
 * link), re-running a late block on it pays only once the block is late by
 * that much more, since the pieces' outputs queue on the same link. A
 * round trip of 1e-4 s a unit against 1e-5 s of compute puts the re-run
 * several times as far past the block's predicted end. */
static void test_redo_counts_the_way_back(void **state)
{
	(void)state;
	double plain = redo_delay(0), linked = redo_delay(1e-4);
	if (!(plain > 0 && linked > 3 * plain))
		fail_msg("re-run %.4f s after the predicted end without a link cost, %.4f s with", plain, linked);
}

/* A block that lost its race with its re-run is refused as stale, and its
 * time still goes into its PU's model (it says how the PU ran), unless it
 * says nothing: a report of 0 s adds no sample, as for any block. PU 0
 * never ends its first block; PU 1 runs the rest and then that block
 * again, in pieces, asked at the wake-up times. */
static void test_void_block_report(void **state)
{
	(void)state;
	struct plb__sample got[64];
	for (int c = 0; c < 2; c++) {
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, 50000, &b), 0);
		four_linear_samples(b, 0, 2);
		struct plb__grant g0, g;
		double now = 0;
		assert_int_equal(plb__balancer_next(b, 0, now, &g0), PLB__NEXT_GRANT);
		while (!plb__balancer_finished(b)) {
			int rc = plb__balancer_next(b, 1, now, &g);
			if (rc == PLB__NEXT_WAIT) {
				double w = plb__balancer_wake(b);
				if (!(w > now && isfinite(w)))
					fail_msg("PU 1 waits at %g s with no wake-up (%g) beside a stalled block", now, w);
				now = w;
				continue;
			}
			assert_int_equal(rc, PLB__NEXT_GRANT);
			double t = 0.01 + 1e-5 * (double)g.units;
			now += t;
			struct plb__block_done smp = {g.id, t, 0, now, 0};
			assert_int_equal(plb__balancer_done(b, 1, &smp), 0);
		}
		struct plb__balancer_stats st;
		plb__balancer_stats(b, &st);
		assert_true(st.redo_won == 1);
		/* still out on PU 0, but its re-run won: its results would not count */
		assert_int_equal(plb__balancer_counts(b, 0, g0.id), 0);
		int before = plb__balancer_model_get(b, 0, got, 64, NULL);
		/* half of it transfer time (a sample counts exec + transfer) */
		struct plb__block_done late = {g0.id, c ? 0.5 * now : 0, c ? 0.5 * now : 0, now, 0};
		assert_int_equal(plb__balancer_done(b, 0, &late), PLB_ESTALE);
		int after = plb__balancer_model_get(b, 0, got, 64, NULL);
		if (after != before + c)
			fail_msg("a voided block's report of %g s: PU 0's model went from %d to %d samples",
				 late.exec_s + late.xfer_s, before, after);
		plb__balancer_destroy(b);
	}
}

/* Of two late blocks, the one further past its predicted end is run
 * again first: PU 0's block is due before PU 1's, both stall, and PU 2,
 * free once the pool is empty, is asked long after both were due. */
static void test_redo_most_late_first(void **state)
{
	(void)state;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 3, 100000, &b), 0);
	four_linear_samples(b, 0, 3);
	struct plb__grant g0, g1, g;
	double now = 0;
	assert_int_equal(plb__balancer_next(b, 0, now, &g0), PLB__NEXT_GRANT);
	int asked1 = 0;
	double t1 = 0;
	struct plb__balancer_stats st;
	for (plb__balancer_stats(b, &st); st.units_pool > 0; plb__balancer_stats(b, &st)) {
		if (!asked1 && now > 0.2) {
			assert_int_equal(plb__balancer_next(b, 1, now, &g1), PLB__NEXT_GRANT);
			asked1 = 1;
			t1 = now;
			continue;
		}
		if (ask_or_wake(b, 2, &now, &g))
			run_linear(b, 2, &g, &now);
	}
	assert_true(asked1);
	double due0 = g0.predicted_s, due1 = t1 + g1.predicted_s;
	if (!(due0 < due1))
		fail_msg("the set-up wants PU 0's block due first: %g s, PU 1's %g s", due0, due1);
	now = 1000 + 10 * due1;         /* both long overdue */
	assert_int_equal(plb__balancer_next(b, 2, now, &g), PLB__NEXT_GRANT);
	assert_int_equal(g.kind, PLB__GRANT_REDO);
	if (!(g.offset >= g0.offset && g.offset < g0.offset + g0.units))
		fail_msg("the re-run piece at %llu is not in PU 0's block [%llu, %llu), due at %g s, "
			 "but PU 1's [%llu, %llu) is due at %g s", (unsigned long long)g.offset,
			 (unsigned long long)g0.offset, (unsigned long long)(g0.offset + g0.units), due0,
			 (unsigned long long)g1.offset, (unsigned long long)(g1.offset + g1.units), due1);
	plb__balancer_destroy(b);
}

/* A stalled block is run again from its start in a piece of min_block
 * (64) or more that leaves min_block or more of it, or all of it: a rest
 * under min_block goes with the piece (once a piece ends first, the
 * block's rest returns to the pool). PU 0 never ends its first block; PU
 * 1 runs the rest of the domain, then the piece. Over W = 16000-24000 PU
 * 0's first block is about 6000-8000 units, and PU 1's piece of it (the
 * units it does in the block's time at its best rate: all but 1000 (1 -
 * units / 8000) of them) would leave rests on both sides of 64: both
 * cases must come up. */
static void test_redo_piece_rest(void **state)
{
	(void)state;
	int whole = 0, split = 0;
	for (uint64_t W = 16000; W <= 24000; W += 250) {
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, W, &b), 0);
		four_linear_samples(b, 0, 2);
		struct plb__grant g0, g;
		double now = 0;
		int pieces = 0;
		assert_int_equal(plb__balancer_next(b, 0, now, &g0), PLB__NEXT_GRANT);
		assert_true(g0.units >= 64);
		while (!plb__balancer_finished(b)) {
			if (!ask_or_wake(b, 1, &now, &g))
				continue;
			if (g.kind == PLB__GRANT_REDO) {
				pieces++;
				if (g.offset != g0.offset || g.units < 64 ||
				    (g.units != g0.units && g0.units - g.units < 64))
					fail_msg("W %llu: a piece of %llu units at %llu of the block [%llu, %llu)",
						 (unsigned long long)W, (unsigned long long)g.units,
						 (unsigned long long)g.offset, (unsigned long long)g0.offset,
						 (unsigned long long)(g0.offset + g0.units));
				whole += g.units == g0.units;
				split += g.units != g0.units;
			}
			run_linear(b, 1, &g, &now);
		}
		assert_int_equal(pieces, 1);
		plb__balancer_destroy(b);
	}
	if (!(whole > 0 && split > 0))
		fail_msg("pieces of the whole block %d times, of part of it %d times: both wanted", whole, split);
}

/* A late block's pieces go to the PUs about to be free as well as to
 * those free now, planned to end together: PU 0 never ends its first
 * block, PUs 1-3 run the rest of the domain exactly as predicted, and the
 * first of them to find the pool empty is free while the other two end
 * their last blocks. Each piece is planned to end by when the three,
 * each from when it is free, would have run the block's rest together,
 * so the first piece is about a third of the block, not all of it (as
 * when the pieces took the time the PUs free at the start needed for the
 * whole block), at least two of the three run pieces, and their planned
 * ends lie within a piece of min_block's time of each other. */
static void test_redo_pieces_end_together(void **state)
{
	(void)state;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 4, 2000000, &b), 0);
	four_linear_samples(b, 0, 4);
	struct plb__grant g0, g[4];
	double end[4] = {0}, at[4] = {0}, now = 0;
	int busy[4] = {1, 0, 0, 0}, pieces = 0, on[4] = {0};
	double first = 0, lo = INFINITY, hi = -INFINITY;
	assert_int_equal(plb__balancer_next(b, 0, now, &g0), PLB__NEXT_GRANT);
	while (!plb__balancer_finished(b)) {
		int asked = 0;
		for (int i = 1; i < 4; i++) {
			if (busy[i])
				continue;
			int rc = plb__balancer_next(b, i, now, &g[i]);
			if (rc != PLB__NEXT_GRANT) {
				assert_true(rc == PLB__NEXT_WAIT || rc == PLB__NEXT_DONE);
				continue;
			}
			asked = 1;
			busy[i] = 1;
			at[i] = now;
			end[i] = now + 0.01 + 1e-5 * (double)g[i].units;
			if (g[i].kind == PLB__GRANT_REDO) {
				if (pieces++ == 0)
					first = (double)g[i].units;
				on[i] = 1;
				lo = fmin(lo, now + g[i].predicted_s);
				hi = fmax(hi, now + g[i].predicted_s);
			}
		}
		int next = -1;
		for (int i = 1; i < 4; i++)
			if (busy[i] && (next < 0 || end[i] < end[next]))
				next = i;
		if (next < 0) {
			if (asked)
				continue;
			double w = plb__balancer_wake(b);
			assert_true(isfinite(w) && w > now);
			now = w;
			continue;
		}
		now = end[next];
		busy[next] = 0;
		struct plb__block_done smp = {g[next].id, end[next] - at[next], 0, now, 0};
		int rc = plb__balancer_done(b, next, &smp);
		assert_true(rc == 0 || rc == PLB_ESTALE);
	}
	double tpiece = 0.01 + 1e-5 * 64;
	if (!(pieces >= 2 && on[1] + on[2] + on[3] >= 2 && first <= 0.5 * (double)g0.units &&
	      hi - lo <= tpiece))
		fail_msg("a late block of %llu units: %d pieces on %d PUs, the first of %g units, "
			 "planned to end %g s apart (a piece of min_block takes %g s)",
			 (unsigned long long)g0.units, pieces, on[1] + on[2] + on[3], first, hi - lo, tpiece);
	plb__balancer_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redo_counts_the_way_back),
		cmocka_unit_test(test_redo_waits_for_the_link),
		cmocka_unit_test(test_no_wake_without_free_pus),
		cmocka_unit_test(test_no_wake_for_untrained_free_pu),
		cmocka_unit_test(test_wake_after_predicted_end),
		cmocka_unit_test(test_void_block_report),
		cmocka_unit_test(test_redo_most_late_first),
		cmocka_unit_test(test_redo_piece_rest),
		cmocka_unit_test(test_redo_pieces_end_together),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
