/* The balancer core under every policy, driven directly (no simulator):
 * coverage with failures and placement, staleness, bad calls, parameters
 * and names, warm starts. The pool, the busy PUs, late blocks run again
 * and each policy's own rules have test programs of their own
 * (test_pool, test_busy, test_redo, test_hdss, test_plb_hec, test_static,
 * test_plb_hac). */
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

struct drv_pu {
	int busy, lost;
	struct plb__grant g;
	double finish, exec;
	double rate, fixed;
};

/* Stale reports seen by run_job since the last reset: re-runs that lost
 * to their original, originals that lost to their re-run; and re-runs. */
static long stale_redo, stale_orig, redo_blocks;

/* When > 0: PU i is in group i % hold_groups and each group holds three
 * random ranges (overlapping each other's), so placement takes grants
 * from the middle of the pool. */
static int hold_groups;

/* Events at which plb__balancer_idle_waits said every PU would wait (each
 * idle PU asked then must be told to wait). */
static long idle_waits_said;

/* The balancer's count of outstanding grants is the driver's: each busy
 * PU holds one (it asks only when idle), a lost one none; others_busy,
 * which every policy's wait rules read, rests on it. */
static void check_outstanding(const plb__balancer_t *b, const struct drv_pu *pu, int n)
{
	int busy = 0, sum = 0;
	for (int i = 0; i < n; i++) {
		busy += pu[i].busy && !pu[i].lost;
		sum += b->pu[i].nout;
	}
	if (b->nout_total != busy || sum != busy)
		fail_msg("%d grants outstanding by the balancer's count, %d by its PUs', %d busy PUs",
			 b->nout_total, sum, busy);
}

/* Run one job of W units over n PUs with random speeds (50x spread), random
 * noise, one block in 5 taking 8x its time, and `nlose` PUs lost (never all): the k-th at a random moment in
 * the k-th of nlose equal slices of [0.05, 0.75] of the run's length had
 * nobody died: the first a PU that holds a block, later ones a busy PU two
 * times in three and any live PU else. Every loss must happen before the
 * run ends, and every unit must be reported done exactly once; returns the
 * number of events. */
static long run_job(const char *policy, int n, uint64_t W, int nlose, uint64_t seed)
{
	rng_state = seed;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, policy, n, W, &b), 0);
	struct drv_pu *pu = calloc((size_t)n, sizeof *pu);
	unsigned char *count = calloc(W, 1);
	assert_non_null(pu);
	assert_non_null(count);
	double rates = 0;
	for (int i = 0; i < n; i++) {
		pu[i].rate = 1000 * pow(50, urand());
		pu[i].fixed = 0.001 * urand();
		rates += pu[i].rate;
	}
	for (int i = 0; i < n && hold_groups > 0; i++)
		assert_int_equal(plb__balancer_group(b, i, i % hold_groups), 0);
	for (int g = 0; g < hold_groups && g < n; g++)
		for (int k = 0; k < 3; k++) {
			uint64_t off = (uint64_t)(urand() * (double)(W - 1));
			assert_int_equal(plb__balancer_hold(b, g, off, 1 + (uint64_t)(urand() * (double)(W - off - 1))), 0);
		}
	double now = 0, span = (double)W / rates, lose_at = INFINITY;
	long events = 0;
	int lost = 0;
	if (nlose > 0)
		lose_at = span * (0.05 + 0.7 * urand() / nlose);
	for (;;) {
		/* hand out work to every idle PU */
		int any_busy = 0, all_wait = plb__balancer_idle_waits(b, now);
		idle_waits_said += all_wait;
		for (int i = 0; i < n; i++) {
			if (pu[i].lost || pu[i].busy)
				continue;
			int rc = plb__balancer_next(b, i, now, &pu[i].g);
			assert_true(rc == PLB__NEXT_GRANT || rc == PLB__NEXT_WAIT || rc == PLB__NEXT_DONE);
			if (all_wait && rc != PLB__NEXT_WAIT)
				fail_msg("%s seed %llu at %g: every PU would wait, said the balancer, and PU %d got %d",
					 policy, (unsigned long long)seed, now, i, rc);
			if (rc != PLB__NEXT_GRANT)
				continue;
			assert_true(pu[i].g.units > 0);
			assert_true(pu[i].g.offset + pu[i].g.units <= W);
			/* one block in 5 straggles 8x (a PU stalls) */
			pu[i].exec = (pu[i].fixed + (double)pu[i].g.units / pu[i].rate * (0.8 + 0.4 * urand())) *
				     (urand() < 0.2 ? 8 : 1);
			pu[i].finish = now + pu[i].exec;
			pu[i].busy = 1;
		}
		check_outstanding(b, pu, n);
		check_busy_summary(b, now);
		int next = -1;
		for (int i = 0; i < n; i++)
			if (pu[i].busy && !pu[i].lost) {
				any_busy = 1;
				if (next < 0 || pu[i].finish < pu[next].finish)
					next = i;
			}
		if (!any_busy)
			break;
		events++;
		/* the balancer asks to be asked again before the next event */
		double wake = plb__balancer_wake(b);
		if (wake > now && wake < pu[next].finish && wake < lose_at) {
			now = wake;
			continue;
		}
		/* a PU dies before the next block ends, with its block */
		if (lost < nlose && lose_at < pu[next].finish) {
			now = fmax(now, lose_at);
			int v = -1, busy = lost == 0 || urand() < 2.0 / 3;
			for (int i = 0, k = (int)(urand() * n); i < n && v < 0; i++)
				if (!pu[(k + i) % n].lost && (pu[(k + i) % n].busy || !busy))
					v = (k + i) % n;
			assert_true(v >= 0);    /* next is busy */
			pu[v].lost = 1;
			lost++;
			assert_int_equal(plb__balancer_lost(b, v, now), 0);
			if (pu[v].busy) {
				/* its late report must not count */
				struct plb__block_done s = {pu[v].g.id, pu[v].exec, 0, now, 0};
				assert_int_equal(plb__balancer_done(b, v, &s), PLB_ESTALE);
			}
			assert_int_equal(plb__balancer_next(b, v, now, &pu[v].g), PLB_ESTATE);
			check_busy_summary(b, now);
			lose_at = lost < nlose ? span * (0.05 + 0.7 * (lost + urand()) / nlose) : INFINITY;
			continue;
		}
		now = pu[next].finish;
		pu[next].busy = 0;
		struct plb__block_done s = {pu[next].g.id, pu[next].exec, 0, now, 0};
		/* a block that lost a race with its re-run (or a re-run that
		 * lost to its original) is stale: its units count elsewhere */
		int rc = plb__balancer_done(b, next, &s);
		check_busy_summary(b, now);
		if (rc == PLB_ESTALE) {
			if (pu[next].g.kind == PLB__GRANT_REDO)
				stale_redo++;
			else
				stale_orig++;
			continue;
		}
		assert_int_equal(rc, 0);
		/* a second report of the same block is refused */
		assert_int_equal(plb__balancer_done(b, next, &s), PLB_ESTALE);
		for (uint64_t u = pu[next].g.offset; u < pu[next].g.offset + pu[next].g.units; u++)
			count[u]++;
	}
	assert_true(plb__balancer_finished(b));
	for (uint64_t u = 0; u < W; u++)
		if (count[u] != 1)
			fail_msg("%s seed %llu: unit %llu done %d times", policy,
				 (unsigned long long)seed, (unsigned long long)u, count[u]);
	struct plb__balancer_stats st;
	plb__balancer_stats(b, &st);
	assert_int_equal(st.units_done, W);
	assert_int_equal(st.units_pool, 0);
	assert_int_equal(st.pus_lost, lost);
	redo_blocks += st.redo_blocks;
	if (lost != nlose)
		fail_msg("%s seed %llu: %d of %d PUs lost before the run ended", policy,
			 (unsigned long long)seed, lost, nlose);
	plb__balancer_destroy(b);
	free(pu);
	free(count);
	return events;
}

/* Every policy covers the domain exactly once with no failures; where
 * plb__balancer_idle_waits says every PU would wait (it does so at every
 * job's end), every PU asked is told to wait. plb-hac
 * runs late blocks again: over these seeds both ends of the race occur, a
 * re-run that ends first (the original's report is stale) and an original
 * that ends first (its re-runs' reports are stale), and every unit still
 * counts once. */
static void test_coverage_all_policies(void **state)
{
	for (int p = 0; plb__policy_name(p); p++) {
		stale_redo = stale_orig = redo_blocks = idle_waits_said = 0;
		for (uint64_t seed = 1; seed <= 20; seed++)
			run_job(plb__policy_name(p), 1 + (int)(seed * 3 % 13), 100000 + seed * 777, 0, seed);
		/* the end of each job, where the pool is empty and the last
		 * blocks run: no use asking the PUs then */
		if (idle_waits_said < 20)
			fail_msg("%s: every PU would wait at %ld events in 20 jobs", plb__policy_name(p),
				 idle_waits_said);
		if (strcmp(plb__policy_name(p), "plb-hac") != 0)
			assert_int_equal(redo_blocks + stale_redo + stale_orig, 0);
		else if (!(redo_blocks > 0 && stale_redo > 0 && stale_orig > 0))
			fail_msg("plb-hac: %ld re-run blocks, %ld lost their race, %ld originals did",
				 redo_blocks, stale_redo, stale_orig);
	}
}

/* Every policy covers the domain exactly once when PUs die mid-block. */
static void test_coverage_with_failures(void **state)
{
	for (int p = 0; plb__policy_name(p); p++)
		for (uint64_t seed = 1; seed <= 20; seed++) {
			int n = 3 + (int)(seed % 10);
			run_job(plb__policy_name(p), n, 50000 + seed * 1013, n - 1, seed * 7919);
		}
}

/* Every policy still covers the domain exactly once when grants are
 * placed on ranges their PU's group holds, with and without losses. */
static void test_coverage_with_placement(void **state)
{
	hold_groups = 3;
	for (int p = 0; plb__policy_name(p); p++)
		for (uint64_t seed = 1; seed <= 8; seed++) {
			int n = 2 + (int)(seed % 7);
			run_job(plb__policy_name(p), n, 40000 + seed * 501, 0, seed);
			run_job(plb__policy_name(p), n, 40000 + seed * 501, n - 1, seed * 31);
		}
	hold_groups = 0;
}

/* Parameters: a number in range is taken; anything else (trailing text,
 * nothing, overflow, out of range, an unknown key) is refused, naming the
 * key, and leaves the value as it was. Policy names: every policy, in a
 * buffer of any size, always terminated. Grant kinds have their names. */
static void test_params_and_names(void **state)
{
	assert_string_equal(plb__grant_kind_name(PLB__GRANT_TRAINING), "training");
	assert_string_equal(plb__grant_kind_name(PLB__GRANT_REGULAR), "regular");
	assert_string_equal(plb__grant_kind_name(PLB__GRANT_GAP), "gap");
	assert_string_equal(plb__grant_kind_name(PLB__GRANT_REDO), "redo");
	struct plb__params p;
	char err[256];
	plb__params_init(&p);
	double was = p.initial_block;
	assert_int_equal(plb__params_assign(&p, "initial_block=2048", err, sizeof err), 0);
	assert_true(p.initial_block == 2048);
	assert_int_equal(plb__params_assign(&p, "initial_block=4096\t", err, sizeof err), 0);
	assert_true(p.initial_block == 4096);
	was = p.initial_block;
	static const char *const bad[] = {"initial_block=12x", "initial_block=", "initial_block=x",
					  "initial_block=1e999", "initial_block=nan",
					  "initial_block=0", "end_fraction=1.5"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		if (plb__params_assign(&p, bad[i], err, sizeof err) == 0)
			fail_msg("'%s' was accepted", bad[i]);
		char key[32];
		snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
		if (!strstr(err, key))
			fail_msg("'%s': the message does not name the key: %s", bad[i], err);
		assert_true(p.initial_block == was);
	}
	assert_int_equal(plb__params_assign(&p, "no_such_key=1", err, sizeof err), PLB_ENOENT);
	/* a key of 127 characters is looked up (and unknown); one of 128 is
	 * refused as such, not cut to 127 and looked up */
	char longkey[200];
	memset(longkey, 'k', sizeof longkey);
	strcpy(longkey + 127, "=1");
	assert_int_equal(plb__params_assign(&p, longkey, err, sizeof err), PLB_ENOENT);
	longkey[127] = 'k';
	strcpy(longkey + 128, "=1");
	assert_int_equal(plb__params_assign(&p, longkey, err, sizeof err), PLB_EINVAL);

	char all[256], small[8];
	plb__policy_names(all, sizeof all, ",");
	size_t len = 0;
	for (int i = 0; plb__policy_name(i); i++) {
		const char *n = plb__policy_name(i);
		assert_int_equal(strncmp(all + len, n, strlen(n)), 0);
		len += strlen(n);
		assert_true(all[len] == (plb__policy_name(i + 1) ? ',' : '\0'));
		len++;
	}
	assert_string_equal(plb__policy_names(small, sizeof small, ","), "plb-hac");
	assert_string_equal(plb__policy_names(small, 1, ","), "");
}

/* A tiny domain (smaller than one block) and a single PU work. */
static void test_tiny_domains(void **state)
{
	for (int p = 0; plb__policy_name(p); p++) {
		run_job(plb__policy_name(p), 1, 1, 0, 3);
		run_job(plb__policy_name(p), 7, 5, 0, 4);
		run_job(plb__policy_name(p), 1, 100000, 0, 5);
	}
}

/* A domain of few, costly units (600 genes on 5 PUs): the first blocks
 * are at most W / (train_div * PUs) = 3.75 units for every policy that
 * trains, not min_block's 64 (which made 5 training blocks half the
 * domain), and min_block is no floor above that for later blocks either. */
static void test_coarse_domain_small_blocks(void **state)
{
	(void)state;
	static const char *const pols[] = {"plb-hac", "plb-hec", "hdss"};
	for (int k = 0; k < 3; k++) {
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, pols[k], 5, 600, &b), 0);
		struct plb__grant g[5];
		uint64_t most = 0;
		for (int i = 0; i < 5; i++) {
			assert_int_equal(plb__balancer_next(b, i, 0, &g[i]), PLB__NEXT_GRANT);
			most = g[i].units > most ? g[i].units : most;
		}
		if (most > 4)
			fail_msg("%s: a first block of %llu units", pols[k], (unsigned long long)most);
		plb__balancer_destroy(b);
	}
	run_job("plb-hac", 5, 600, 0, 6);
}

/* Unknown policies and bad arguments are refused, not crashed on. */
static void test_bad_calls(void **state)
{
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "nope", 4, 100, &b), PLB_ENOENT);
	assert_null(b);
	assert_int_equal(plb__balancer_create(NULL, "greedy", 0, 100, &b), PLB_EINVAL);
	assert_int_equal(plb__balancer_create(NULL, "greedy", 2, 0, &b), PLB_EINVAL);
	assert_int_equal(plb__balancer_create(NULL, "greedy", 2, 100, &b), 0);
	struct plb__grant g;
	assert_int_equal(plb__balancer_next(b, 2, 0, &g), PLB_EINVAL);
	assert_int_equal(plb__balancer_next(b, -1, 0, &g), PLB_EINVAL);
	assert_int_equal(plb__balancer_next(b, 0, NAN, &g), PLB_EINVAL);
	assert_int_equal(plb__balancer_next(b, 0, 0, &g), PLB__NEXT_GRANT);
	struct plb__block_done s = {g.id + 99, 1, 0, 1, 0};
	assert_int_equal(plb__balancer_done(b, 0, &s), PLB_ESTALE);
	s.grant_id = g.id;
	s.exec_s = -1;
	assert_int_equal(plb__balancer_done(b, 0, &s), PLB_EINVAL);
	s.exec_s = NAN;
	assert_int_equal(plb__balancer_done(b, 0, &s), PLB_EINVAL);
	s.exec_s = 1;
	assert_int_equal(plb__balancer_done(b, 1, &s), PLB_ESTALE);  /* not its grant */
	assert_int_equal(plb__balancer_done(b, 0, &s), 0);
	assert_int_equal(plb__balancer_lost(b, 5, 0), PLB_EINVAL);
	/* a report for no balancer, a PU out of range either way, or no
	 * sample is refused before anything is read */
	assert_int_equal(plb__balancer_done(NULL, 0, &s), PLB_EINVAL);
	assert_int_equal(plb__balancer_done(b, -1, &s), PLB_EINVAL);
	assert_int_equal(plb__balancer_done(b, 2, &s), PLB_EINVAL);
	assert_int_equal(plb__balancer_done(b, 0, NULL), PLB_EINVAL);
	plb__balancer_destroy(b);
}

/* Blocks that take no measurable time (a zero-cost device) do not break
 * any policy: everything is still done exactly once. */
static void test_zero_time_blocks(void **state)
{
	for (int p = 0; plb__policy_name(p); p++) {
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, plb__policy_name(p), 3, 50000, &b), 0);
		uint64_t done = 0;
		double now = 0;
		for (int guard = 0; guard < 100000 && !plb__balancer_finished(b); guard++) {
			int progress = 0;
			for (int i = 0; i < 3; i++) {
				struct plb__grant g;
				int rc = plb__balancer_next(b, i, now, &g);
				assert_true(rc > 0);
				if (rc != PLB__NEXT_GRANT)
					continue;
				/* PUs 0 and 1 are free; PU 2 costs 1 ms per 1000 units */
				double t = i < 2 ? 0 : 1e-6 * (double)g.units;
				now += t;
				struct plb__block_done s = {g.id, t, 0, now, 0};
				assert_int_equal(plb__balancer_done(b, i, &s), 0);
				done += g.units;
				progress = 1;
			}
			assert_true(progress || plb__balancer_finished(b));
		}
		assert_true(plb__balancer_finished(b));
		assert_int_equal(done, 50000);
		plb__balancer_destroy(b);
	}
}

/* A lost PU's range is granted again, to someone else, in full. */
static void test_lost_range_regranted(void **state)
{
	plb__balancer_t *b = greedy100(2, 250);
	struct plb__grant g0, g1, g2;
	assert_int_equal(plb__balancer_next(b, 0, 0, &g0), PLB__NEXT_GRANT);
	assert_int_equal(plb__balancer_next(b, 1, 0, &g1), PLB__NEXT_GRANT);
	assert_int_equal(g0.offset, 0);
	assert_int_equal(g1.offset, 100);
	assert_int_equal(plb__balancer_lost(b, 0, 1), 0);
	/* told twice (a worker's LOST, then its rank gone): nothing more */
	assert_int_equal(plb__balancer_lost(b, 0, 1.5), 0);
	struct plb__block_done s = {g1.id, 1, 0, 1, 0};
	assert_int_equal(plb__balancer_done(b, 1, &s), 0);
	assert_int_equal(plb__balancer_next(b, 1, 1, &g2), PLB__NEXT_GRANT);
	assert_int_equal(g2.offset, 0);         /* the lost range first */
	assert_int_equal(g2.units, 100);
	struct plb__balancer_stats st;
	plb__balancer_stats(b, &st);
	assert_int_equal(st.returned_blocks, 1);
	plb__balancer_destroy(b);
}

/* A block's time is its compute and its transfer together: PU 1 computes
 * twice as fast as PU 0 but moves its data at a cost of three times its
 * compute, so it is the slower one (2 ms a unit against 1 ms), and every
 * policy that sizes blocks by measured speed must give it less work. One
 * that read the transfer as part of nothing (or took it off the compute
 * time) would see PU 1 as the faster PU and give it more. */
static void test_transfer_counts_as_time(void **state)
{
	static const double exec_per[2] = {1e-3, 0.5e-3}, xfer_per[2] = {0, 1.5e-3};
	for (int p = 0; plb__policy_name(p); p++) {
		const char *pol = plb__policy_name(p);
		plb__balancer_t *b;
		assert_int_equal(plb__balancer_create(NULL, pol, 2, 200000, &b), 0);
		struct plb__grant g[2];
		double finish[2] = {0, 0}, units[2] = {0, 0}, now = 0, second[2] = {0, 0};
		int busy[2] = {0, 0}, ntrain[2] = {0, 0};
		for (;;) {
			for (int i = 0; i < 2; i++)
				if (!busy[i] && plb__balancer_next(b, i, now, &g[i]) == PLB__NEXT_GRANT) {
					busy[i] = 1;
					finish[i] = now + (exec_per[i] + xfer_per[i]) * (double)g[i].units;
					if (g[i].kind == PLB__GRANT_TRAINING && ++ntrain[i] == 2)
						second[i] = (double)g[i].units;
				}
			int k = busy[0] && (!busy[1] || finish[0] <= finish[1]) ? 0 : busy[1] ? 1 : -1;
			if (k < 0)
				break;
			now = finish[k];
			busy[k] = 0;
			double u = (double)g[k].units;
			struct plb__block_done smp = {g[k].id, exec_per[k] * u, xfer_per[k] * u, now, 0};
			if (plb__balancer_done(b, k, &smp) == 0)
				units[k] += u;
		}
		assert_true(plb__balancer_finished(b));
		plb__balancer_destroy(b);
		if (!(units[1] < 0.75 * units[0]))
			fail_msg("%s: the PU at 2 ms a unit (1.5 of it transfer) did %.0f units, "
				 "the one at 1 ms %.0f", pol, units[1], units[0]);
		/* PLB-HAC's and PLB-HeC's second training block: twice the
		 * first for the faster PU, scaled by its relative speed for
		 * the other (half here) */
		if ((!strcmp(pol, "plb-hac") || !strcmp(pol, "plb-hec")) &&
		    !(second[1] > 0 && second[1] < 0.75 * second[0]))
			fail_msg("%s: second training blocks %.0f units for the PU at 2 ms a unit, "
				 "%.0f for the one at 1 ms", pol, second[1], second[0]);
	}
}

/* A PU holding two grants (pipelining) may report them in either order:
 * the last PU of two reports its second block first, then its first;
 * both count once, a repeat is stale, and the job still ends with every
 * unit done. */
static void test_done_out_of_order(void **state)
{
	plb__balancer_t *b = greedy100(2, 1000);
	struct plb__grant g[2], h;
	assert_int_equal(plb__balancer_next(b, 1, 0, &g[0]), PLB__NEXT_GRANT);
	assert_int_equal(plb__balancer_next(b, 1, 0, &g[1]), PLB__NEXT_GRANT);
	assert_int_equal(plb__balancer_next(b, 1, 0, &h), PLB_ESTATE);
	struct plb__block_done s1 = {g[1].id, 1, 0, 1, 0}, s0 = {g[0].id, 1, 0, 2, 0};
	/* plb__balancer_counts: out on its PU and not voided */
	assert_int_equal(plb__balancer_counts(b, 1, g[0].id), 1);
	assert_int_equal(plb__balancer_counts(b, 1, g[1].id), 1);
	assert_int_equal(plb__balancer_counts(b, 0, g[1].id), 0);       /* not its PU's */
	assert_int_equal(plb__balancer_counts(b, 2, g[1].id), 0);       /* no such PU */
	check_busy_summary(b, 0.5);
	assert_int_equal(plb__balancer_done(b, 1, &s1), 0);
	/* the block still queued now runs from the first's end: free in 1 s,
	 * as late again as it is, 1.5 s from its grant */
	check_busy_summary(b, 1.5);
	assert_true(plb__busy_for(b, 1, 1.5) == 0.5);
	assert_int_equal(plb__balancer_counts(b, 1, g[1].id), 0);       /* done */
	assert_int_equal(plb__balancer_counts(b, 1, g[0].id), 1);
	assert_int_equal(b->pu[1].nout, 1);
	assert_int_equal(b->pu[1].out[0].id, g[0].id);
	assert_int_equal(plb__balancer_done(b, 1, &s1), PLB_ESTALE);
	assert_int_equal(plb__balancer_done(b, 1, &s0), 0);
	assert_int_equal(b->pu[1].nout, 0);
	uint64_t done = g[0].units + g[1].units;
	double now = 2;
	while (!plb__balancer_finished(b)) {
		assert_int_equal(plb__balancer_next(b, 0, now, &h), PLB__NEXT_GRANT);
		now += 1;
		struct plb__block_done s = {h.id, 1, 0, now, 0};
		assert_int_equal(plb__balancer_done(b, 0, &s), 0);
		done += h.units;
	}
	assert_int_equal(done, 1000);
	plb__balancer_destroy(b);
}

/* A warm start of one sample is kept (a PU that ran one block in an
 * earlier process), none leaves the model empty, and what goes in comes
 * back out of plb__balancer_model_get. */
static void test_model_set_counts(void **state)
{
	(void)state;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
	struct plb__sample one = {2048, 0.25, 0.01}, got[4];
	assert_int_equal(plb__balancer_model_set(b, 0, &one, 1, INFINITY), 0);
	assert_int_equal(plb__balancer_model_set(b, 1, NULL, 0, INFINITY), 0);
	assert_int_equal(plb__balancer_model_get(b, 0, got, 4, NULL), 1);
	assert_true(got[0].units == 2048 && got[0].exec_s == 0.25 && got[0].xfer_s == 0.01);
	assert_int_equal(plb__balancer_model_get(b, 1, got, 4, NULL), 0);
	/* no model yet: no prediction; with four exact samples of a line,
	 * the line's time */
	assert_true(isnan(plb__balancer_predict(b, 1, 1000)));
	/* units that are no block size: no prediction */
	assert_true(isnan(plb__balancer_predict(b, 0, INFINITY)));
	assert_true(isnan(plb__balancer_predict(b, 0, NAN)));
	assert_true(isnan(plb__balancer_predict(b, 0, -1)));
	assert_true(isfinite(plb__balancer_predict(b, 0, 0)));
	/* no such PU */
	assert_true(isnan(plb__balancer_predict(b, 2, 1000)));
	assert_true(isnan(plb__balancer_predict(b, -1, 1000)));
	assert_true(isnan(plb__balancer_predict(NULL, 0, 1000)));
	plb__balancer_destroy(b);
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
	four_linear_samples(b, 1, 2);
	double t = plb__balancer_predict(b, 1, 3000);
	if (!(fabs(t - 0.04) < 1e-6))
		fail_msg("a line's time at 3000 units: predicted %g s, not 0.04 s", t);
	/* a block that took no measurable compute time (all transfer) is a
	 * sample; a negative time is not */
	struct plb__sample zero = {512, 0, 0.02}, neg = {512, -0.1, 0.2};
	assert_int_equal(plb__balancer_model_set(b, 0, &zero, 1, INFINITY), 0);
	assert_int_equal(plb__balancer_model_get(b, 0, got, 4, NULL), 1);
	assert_int_equal(plb__balancer_model_set(b, 0, &neg, 1, INFINITY), PLB_EINVAL);
	plb__balancer_destroy(b);
	/* a policy without models refuses a bad sample as well (the first
	 * of several too), and takes good ones without keeping them */
	assert_int_equal(plb__balancer_create(NULL, "greedy", 2, 100000, &b), 0);
	struct plb__sample bad_first[2] = {{512, -0.1, 0.2}, {1024, 0.1, 0}};
	assert_int_equal(plb__balancer_model_set(b, 0, bad_first, 2, INFINITY), PLB_EINVAL);
	assert_int_equal(plb__balancer_model_set(b, 0, &neg, 1, INFINITY), PLB_EINVAL);
	assert_int_equal(plb__balancer_model_set(b, 0, &one, 1, INFINITY), 0);
	assert_int_equal(plb__balancer_model_get(b, 0, got, 4, NULL), 0);
	plb__balancer_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coverage_all_policies),
		cmocka_unit_test(test_coverage_with_failures),
		cmocka_unit_test(test_coverage_with_placement),
		cmocka_unit_test(test_params_and_names),
		cmocka_unit_test(test_tiny_domains),
		cmocka_unit_test(test_coarse_domain_small_blocks),
		cmocka_unit_test(test_bad_calls),
		cmocka_unit_test(test_zero_time_blocks),
		cmocka_unit_test(test_lost_range_regranted),
		cmocka_unit_test(test_transfer_counts_as_time),
		cmocka_unit_test(test_done_out_of_order),
		cmocka_unit_test(test_model_set_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
