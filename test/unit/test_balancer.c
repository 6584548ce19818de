/* The balancer core under every policy, driven directly (no simulator):
 * coverage, staleness, failures, bad calls. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/balancer.h"
#include "balancer/internal.h"      /* the free list, for test_pool_merges */
#include "balancer/ranges.h"
#include "test_util.h"

struct drv_pu {
	int busy, lost;
	struct plb_grant g;
	double finish, exec;
	double rate, fixed;
};

static uint64_t rng_state;
static double urand(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Run one job of W units over n PUs with random speeds (50x spread), random
 * noise, one block in 5 taking 8x its time, and `nlose` PUs lost (never all): the k-th at a random moment in
 * the k-th of nlose equal slices of [0.05, 0.75] of the run's length had
 * nobody died: the first a PU that holds a block, later ones a busy PU two
 * times in three and any live PU else. Every loss must happen before the
 * run ends, and every unit must be reported done exactly once; returns the
 * number of events. */
/* Stale reports seen by run_job since the last reset: re-runs that lost
 * to their original, originals that lost to their re-run; and re-runs. */
static long stale_redo, stale_orig, redo_blocks;
/* When > 0: PU i is in group i % hold_groups and each group holds three
 * random ranges (overlapping each other's), so placement takes grants
 * from the middle of the pool. */
static int hold_groups;
/* Events at which plb_balancer_idle_waits said every PU would wait (each
 * idle PU asked then must be told to wait). */
static long idle_waits_said;

/* The balancer's count of outstanding grants is the driver's: each busy
 * PU holds one (it asks only when idle), a lost one none; others_busy,
 * which every policy's wait rules read, rests on it. */
static void check_outstanding(const plb_balancer_t *b, const struct drv_pu *pu, int n)
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

/* When PU pu is free, from its grants themselves: plb__busy_for and the
 * scans of the busy PUs read a summary of them kept beside each PU's
 * (struct plb__bsum) that every change to a PU's grants must update. */
static double busy_scan(const plb_balancer_t *b, int pu, double now)
{
	double end = now;
	for (int k = 0; k < b->pu[pu].nout; k++) {
		double e = b->pu[pu].out[k].pred_end;
		if (e < now)
			e = now + (now - e);
		end = fmax(end, e);
	}
	return end - now;
}

/* The summary (struct plb__bsum) agrees with each PU's own state: its
 * free time to the bit, busy, lost, its rate (0 without a ready model)
 * and its model's time for min_block. */
static void check_busy_summary(const plb_balancer_t *b, double now)
{
	for (int i = 0; i < b->n; i++) {
		const struct plb__pu *u = &b->pu[i];
		const struct plb__bsum *s = &b->bs[i];
		int ready = b->model && plb__model_ready(&b->model[i]);
		if (plb__busy_for(b, i, now) != busy_scan(b, i, now))
			fail_msg("PU %d at %g: free in %g, its grants say %g", i, now,
				 plb__busy_for(b, i, now), busy_scan(b, i, now));
		if (s->busy != (!u->lost && u->nout > 0) || s->lost != u->lost ||
		    s->rate != (ready ? u->rate : 0) ||
		    (ready && s->t_minb != plb__model_eval(&b->model[i], b->p.min_block)))
			fail_msg("PU %d at %g: its summary is stale (busy %d, lost %d, rate %g, %g s for min_block)",
				 i, now, s->busy, s->lost, s->rate, s->t_minb);
	}
}

static long run_job(const char *policy, int n, uint64_t W, int nlose, uint64_t seed)
{
	rng_state = seed;
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, policy, n, W, &b), 0);
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
		assert_int_equal(plb_balancer_group(b, i, i % hold_groups), 0);
	for (int g = 0; g < hold_groups && g < n; g++)
		for (int k = 0; k < 3; k++) {
			uint64_t off = (uint64_t)(urand() * (double)(W - 1));
			assert_int_equal(plb_balancer_hold(b, g, off, 1 + (uint64_t)(urand() * (double)(W - off - 1))), 0);
		}
	double now = 0, span = (double)W / rates, lose_at = INFINITY;
	long events = 0;
	int lost = 0;
	if (nlose > 0)
		lose_at = span * (0.05 + 0.7 * urand() / nlose);
	for (;;) {
		/* hand out work to every idle PU */
		int any_busy = 0, all_wait = plb_balancer_idle_waits(b, now);
		idle_waits_said += all_wait;
		for (int i = 0; i < n; i++) {
			if (pu[i].lost || pu[i].busy)
				continue;
			int rc = plb_balancer_next(b, i, now, &pu[i].g);
			assert_true(rc == PLB_NEXT_GRANT || rc == PLB_NEXT_WAIT || rc == PLB_NEXT_DONE);
			if (all_wait && rc != PLB_NEXT_WAIT)
				fail_msg("%s seed %llu at %g: every PU would wait, said the balancer, and PU %d got %d",
					 policy, (unsigned long long)seed, now, i, rc);
			if (rc != PLB_NEXT_GRANT)
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
		double wake = plb_balancer_wake(b);
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
			assert_int_equal(plb_balancer_lost(b, v, now), 0);
			if (pu[v].busy) {
				/* its late report must not count */
				struct plb_sample s = {pu[v].g.id, pu[v].exec, 0, now, 0};
				assert_int_equal(plb_balancer_done(b, v, &s), PLB_ESTALE);
			}
			assert_int_equal(plb_balancer_next(b, v, now, &pu[v].g), PLB_ESTATE);
			check_busy_summary(b, now);
			lose_at = lost < nlose ? span * (0.05 + 0.7 * (lost + urand()) / nlose) : INFINITY;
			continue;
		}
		now = pu[next].finish;
		pu[next].busy = 0;
		struct plb_sample s = {pu[next].g.id, pu[next].exec, 0, now, 0};
		/* a block that lost a race with its re-run (or a re-run that
		 * lost to its original) is stale: its units count elsewhere */
		int rc = plb_balancer_done(b, next, &s);
		check_busy_summary(b, now);
		if (rc == PLB_ESTALE) {
			if (pu[next].g.kind == PLB_GRANT_REDO)
				stale_redo++;
			else
				stale_orig++;
			continue;
		}
		assert_int_equal(rc, 0);
		/* a second report of the same block is refused */
		assert_int_equal(plb_balancer_done(b, next, &s), PLB_ESTALE);
		for (uint64_t u = pu[next].g.offset; u < pu[next].g.offset + pu[next].g.units; u++)
			count[u]++;
	}
	assert_true(plb_balancer_finished(b));
	for (uint64_t u = 0; u < W; u++)
		if (count[u] != 1)
			fail_msg("%s seed %llu: unit %llu done %d times", policy,
				 (unsigned long long)seed, (unsigned long long)u, count[u]);
	struct plb_balancer_stats st;
	plb_balancer_stats(b, &st);
	assert_int_equal(st.units_done, W);
	assert_int_equal(st.units_pool, 0);
	assert_int_equal(st.pus_lost, lost);
	redo_blocks += st.redo_blocks;
	if (lost != nlose)
		fail_msg("%s seed %llu: %d of %d PUs lost before the run ended", policy,
			 (unsigned long long)seed, lost, nlose);
	plb_balancer_destroy(b);
	free(pu);
	free(count);
	return events;
}

/* Every policy covers the domain exactly once with no failures; where
 * plb_balancer_idle_waits says every PU would wait (it does so at every
 * job's end), every PU asked is told to wait. plb-hac
 * runs late blocks again: over these seeds both ends of the race occur, a
 * re-run that ends first (the original's report is stale) and an original
 * that ends first (its re-runs' reports are stale), and every unit still
 * counts once. */
static void test_coverage_all_policies(void **state)
{
	for (int p = 0; plb_policy_name(p); p++) {
		stale_redo = stale_orig = redo_blocks = idle_waits_said = 0;
		for (uint64_t seed = 1; seed <= 20; seed++)
			run_job(plb_policy_name(p), 1 + (int)(seed * 3 % 13), 100000 + seed * 777, 0, seed);
		/* the end of each job, where the pool is empty and the last
		 * blocks run: no use asking the PUs then */
		if (idle_waits_said < 20)
			fail_msg("%s: every PU would wait at %ld events in 20 jobs", plb_policy_name(p),
				 idle_waits_said);
		if (strcmp(plb_policy_name(p), "plb-hac") != 0)
			assert_int_equal(redo_blocks + stale_redo + stale_orig, 0);
		else if (!(redo_blocks > 0 && stale_redo > 0 && stale_orig > 0))
			fail_msg("plb-hac: %ld re-run blocks, %ld lost their race, %ld originals did",
				 redo_blocks, stale_redo, stale_orig);
	}
}

/* Every policy covers the domain exactly once when PUs die mid-block. */
static void test_coverage_with_failures(void **state)
{
	for (int p = 0; plb_policy_name(p); p++)
		for (uint64_t seed = 1; seed <= 20; seed++) {
			int n = 3 + (int)(seed % 10);
			run_job(plb_policy_name(p), n, 50000 + seed * 1013, n - 1, seed * 7919);
		}
}

/* Every policy still covers the domain exactly once when grants are
 * placed on ranges their PU's group holds, with and without losses. */
static void test_coverage_with_placement(void **state)
{
	hold_groups = 3;
	for (int p = 0; plb_policy_name(p); p++)
		for (uint64_t seed = 1; seed <= 8; seed++) {
			int n = 2 + (int)(seed % 7);
			run_job(plb_policy_name(p), n, 40000 + seed * 501, 0, seed);
			run_job(plb_policy_name(p), n, 40000 + seed * 501, n - 1, seed * 31);
		}
	hold_groups = 0;
}

/* Parameters: a number in range is taken; anything else (trailing text,
 * nothing, overflow, out of range, an unknown key) is refused, naming the
 * key, and leaves the value as it was. Policy names: every policy, in a
 * buffer of any size, always terminated. Grant kinds have their names. */
static void test_params_and_names(void **state)
{
	assert_string_equal(plb_grant_kind_name(PLB_GRANT_TRAINING), "training");
	assert_string_equal(plb_grant_kind_name(PLB_GRANT_REGULAR), "regular");
	assert_string_equal(plb_grant_kind_name(PLB_GRANT_GAP), "gap");
	assert_string_equal(plb_grant_kind_name(PLB_GRANT_REDO), "redo");
	struct plb_params p;
	char err[256];
	plb_params_init(&p);
	double was = p.initial_block;
	assert_int_equal(plb_params_assign(&p, "initial_block=2048", err, sizeof err), 0);
	assert_true(p.initial_block == 2048);
	assert_int_equal(plb_params_assign(&p, "initial_block=4096\t", err, sizeof err), 0);
	assert_true(p.initial_block == 4096);
	was = p.initial_block;
	static const char *const bad[] = {"initial_block=12x", "initial_block=", "initial_block=x",
					  "initial_block=1e999", "initial_block=nan",
					  "initial_block=0", "end_fraction=1.5"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		if (plb_params_assign(&p, bad[i], err, sizeof err) == 0)
			fail_msg("'%s' was accepted", bad[i]);
		char key[32];
		snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
		if (!strstr(err, key))
			fail_msg("'%s': the message does not name the key: %s", bad[i], err);
		assert_true(p.initial_block == was);
	}
	assert_int_equal(plb_params_assign(&p, "no_such_key=1", err, sizeof err), PLB_ENOENT);
	/* a key of 127 characters is looked up (and unknown); one of 128 is
	 * refused as such, not cut to 127 and looked up */
	char longkey[200];
	memset(longkey, 'k', sizeof longkey);
	strcpy(longkey + 127, "=1");
	assert_int_equal(plb_params_assign(&p, longkey, err, sizeof err), PLB_ENOENT);
	longkey[127] = 'k';
	strcpy(longkey + 128, "=1");
	assert_int_equal(plb_params_assign(&p, longkey, err, sizeof err), PLB_EINVAL);

	char all[256], small[8];
	plb_policy_names(all, sizeof all, ",");
	size_t len = 0;
	for (int i = 0; plb_policy_name(i); i++) {
		const char *n = plb_policy_name(i);
		assert_int_equal(strncmp(all + len, n, strlen(n)), 0);
		len += strlen(n);
		assert_true(all[len] == (plb_policy_name(i + 1) ? ',' : '\0'));
		len++;
	}
	assert_string_equal(plb_policy_names(small, sizeof small, ","), "plb-hac");
	assert_string_equal(plb_policy_names(small, 1, ","), "");
}

/* static: after one profiling block each, the rest is split in one block
 * per PU in proportion to the profiled rates (here 1 : 3 units per
 * second, slow enough that an error of one unit/s in their sum shows),
 * also when a profiled PU is lost before the others are. */
static void test_static_split(void **state)
{
	const uint64_t W = 100000;
	plb_balancer_t *b;
	struct plb_grant g[2], s[2];
	assert_int_equal(plb_balancer_create(NULL, "static", 2, W, &b), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(plb_balancer_next(b, i, 0, &g[i]), PLB_NEXT_GRANT);
	for (int i = 0; i < 2; i++) {
		double t = (double)g[i].units / (i ? 3.0 : 1.0);
		struct plb_sample smp = {g[i].id, t, 0, t, 0};
		assert_int_equal(plb_balancer_done(b, i, &smp), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(plb_balancer_next(b, i, 1e6, &s[i]), PLB_NEXT_GRANT);
	uint64_t rest = W - g[0].units - g[1].units;
	if (s[0].units + s[1].units != rest || llabs((long long)(3 * s[0].units) - (long long)s[1].units) > 3)
		fail_msg("static split of %llu: %llu and %llu, expected 1 : 3",
			 (unsigned long long)rest, (unsigned long long)s[0].units,
			 (unsigned long long)s[1].units);
	plb_balancer_destroy(b);

	/* three PUs at 1 : 2 : 3; PU 0 is lost after its profiling, before
	 * PU 2's is back: the others still wait for PU 2 (a lost profiled
	 * PU no longer counts as profiled), and the split is 2 : 3 */
	assert_int_equal(plb_balancer_create(NULL, "static", 3, W, &b), 0);
	struct plb_grant h[3], t[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb_balancer_next(b, i, 0, &h[i]), PLB_NEXT_GRANT);
	for (int i = 0; i < 2; i++) {
		double sec = (double)h[i].units / (i + 1.0);
		struct plb_sample smp = {h[i].id, sec, 0, sec, 0};
		assert_int_equal(plb_balancer_done(b, i, &smp), 0);
	}
	assert_int_equal(plb_balancer_lost(b, 0, 1e5), 0);
	assert_int_equal(plb_balancer_next(b, 1, 1e5, &t[1]), PLB_NEXT_WAIT);
	double sec = (double)h[2].units / 3.0;
	struct plb_sample smp = {h[2].id, sec, 0, 1e5 + 1, 0};
	assert_int_equal(plb_balancer_done(b, 2, &smp), 0);
	for (int i = 1; i < 3; i++)
		assert_int_equal(plb_balancer_next(b, i, 2e5, &t[i]), PLB_NEXT_GRANT);
	rest = W - h[0].units - h[1].units - h[2].units;       /* PU 0's block was done */
	if (t[1].units + t[2].units != rest ||
	    llabs((long long)(3 * t[1].units) - (long long)(2 * t[2].units)) > 5)
		fail_msg("static split of %llu after a loss: %llu and %llu, expected 2 : 3",
			 (unsigned long long)rest, (unsigned long long)t[1].units,
			 (unsigned long long)t[2].units);
	plb_balancer_destroy(b);
}

/* A tiny domain (smaller than one block) and a single PU work. */
static void test_tiny_domains(void **state)
{
	for (int p = 0; plb_policy_name(p); p++) {
		run_job(plb_policy_name(p), 1, 1, 0, 3);
		run_job(plb_policy_name(p), 7, 5, 0, 4);
		run_job(plb_policy_name(p), 1, 100000, 0, 5);
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
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, pols[k], 5, 600, &b), 0);
		struct plb_grant g[5];
		uint64_t most = 0;
		for (int i = 0; i < 5; i++) {
			assert_int_equal(plb_balancer_next(b, i, 0, &g[i]), PLB_NEXT_GRANT);
			most = g[i].units > most ? g[i].units : most;
		}
		if (most > 4)
			fail_msg("%s: a first block of %llu units", pols[k], (unsigned long long)most);
		plb_balancer_destroy(b);
	}
	run_job("plb-hac", 5, 600, 0, 6);
}

/* Unknown policies and bad arguments are refused, not crashed on. */
static void test_bad_calls(void **state)
{
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "nope", 4, 100, &b), PLB_ENOENT);
	assert_null(b);
	assert_int_equal(plb_balancer_create(NULL, "greedy", 0, 100, &b), PLB_EINVAL);
	assert_int_equal(plb_balancer_create(NULL, "greedy", 2, 0, &b), PLB_EINVAL);
	assert_int_equal(plb_balancer_create(NULL, "greedy", 2, 100, &b), 0);
	struct plb_grant g;
	assert_int_equal(plb_balancer_next(b, 2, 0, &g), PLB_EINVAL);
	assert_int_equal(plb_balancer_next(b, -1, 0, &g), PLB_EINVAL);
	assert_int_equal(plb_balancer_next(b, 0, NAN, &g), PLB_EINVAL);
	assert_int_equal(plb_balancer_next(b, 0, 0, &g), PLB_NEXT_GRANT);
	struct plb_sample s = {g.id + 99, 1, 0, 1, 0};
	assert_int_equal(plb_balancer_done(b, 0, &s), PLB_ESTALE);
	s.grant_id = g.id;
	s.exec_s = -1;
	assert_int_equal(plb_balancer_done(b, 0, &s), PLB_EINVAL);
	s.exec_s = NAN;
	assert_int_equal(plb_balancer_done(b, 0, &s), PLB_EINVAL);
	s.exec_s = 1;
	assert_int_equal(plb_balancer_done(b, 1, &s), PLB_ESTALE);  /* not its grant */
	assert_int_equal(plb_balancer_done(b, 0, &s), 0);
	assert_int_equal(plb_balancer_lost(b, 5, 0), PLB_EINVAL);
	/* a report for no balancer, a PU out of range either way, or no
	 * sample is refused before anything is read */
	assert_int_equal(plb_balancer_done(NULL, 0, &s), PLB_EINVAL);
	assert_int_equal(plb_balancer_done(b, -1, &s), PLB_EINVAL);
	assert_int_equal(plb_balancer_done(b, 2, &s), PLB_EINVAL);
	assert_int_equal(plb_balancer_done(b, 0, NULL), PLB_EINVAL);
	plb_balancer_destroy(b);
}

/* Blocks that take no measurable time (a zero-cost device) do not break
 * any policy: everything is still done exactly once. */
static void test_zero_time_blocks(void **state)
{
	for (int p = 0; plb_policy_name(p); p++) {
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, plb_policy_name(p), 3, 50000, &b), 0);
		uint64_t done = 0;
		double now = 0;
		for (int guard = 0; guard < 100000 && !plb_balancer_finished(b); guard++) {
			int progress = 0;
			for (int i = 0; i < 3; i++) {
				struct plb_grant g;
				int rc = plb_balancer_next(b, i, now, &g);
				assert_true(rc > 0);
				if (rc != PLB_NEXT_GRANT)
					continue;
				/* PUs 0 and 1 are free; PU 2 costs 1 ms per 1000 units */
				double t = i < 2 ? 0 : 1e-6 * (double)g.units;
				now += t;
				struct plb_sample s = {g.id, t, 0, now, 0};
				assert_int_equal(plb_balancer_done(b, i, &s), 0);
				done += g.units;
				progress = 1;
			}
			assert_true(progress || plb_balancer_finished(b));
		}
		assert_true(plb_balancer_finished(b));
		assert_int_equal(done, 50000);
		plb_balancer_destroy(b);
	}
}

/* A greedy balancer handing out blocks of 100 units (min_block 1): the
 * blocks' ranges are then known in advance. */
static plb_balancer_t *greedy100(int n, uint64_t W)
{
	struct plb_params p;
	plb_params_init(&p);
	p.greedy_block = 100;
	p.min_block = 1;
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(&p, "greedy", n, W, &b), 0);
	return b;
}

/* The free list is sorted, disjoint and merged (no two ranges touch) and
 * sums to the pool, which is `want` units. */
static void check_free_list(const plb_balancer_t *b, uint64_t want, const char *what)
{
	uint64_t sum = 0;
	for (int r = 0; r < b->nfree; r++) {
		assert_true(b->free[r].len > 0);
		if (r > 0 && b->free[r - 1].off + b->free[r - 1].len >= b->free[r].off)
			fail_msg("%s: ranges %d and %d touch or overlap", what, r - 1, r);
		sum += b->free[r].len;
	}
	assert_true(b->nfree <= b->capfree);
	assert_int_equal(sum, b->pool);
	assert_int_equal(sum, want);
}

/* A lost PU's range is granted again, to someone else, in full. */
static void test_lost_range_regranted(void **state)
{
	plb_balancer_t *b = greedy100(2, 250);
	struct plb_grant g0, g1, g2;
	assert_int_equal(plb_balancer_next(b, 0, 0, &g0), PLB_NEXT_GRANT);
	assert_int_equal(plb_balancer_next(b, 1, 0, &g1), PLB_NEXT_GRANT);
	assert_int_equal(g0.offset, 0);
	assert_int_equal(g1.offset, 100);
	assert_int_equal(plb_balancer_lost(b, 0, 1), 0);
	/* told twice (a worker's LOST, then its rank gone): nothing more */
	assert_int_equal(plb_balancer_lost(b, 0, 1.5), 0);
	struct plb_sample s = {g1.id, 1, 0, 1, 0};
	assert_int_equal(plb_balancer_done(b, 1, &s), 0);
	assert_int_equal(plb_balancer_next(b, 1, 1, &g2), PLB_NEXT_GRANT);
	assert_int_equal(g2.offset, 0);         /* the lost range first */
	assert_int_equal(g2.units, 100);
	struct plb_balancer_stats st;
	plb_balancer_stats(b, &st);
	assert_int_equal(st.returned_blocks, 1);
	plb_balancer_destroy(b);
}

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
static double hdss_train(plb_balancer_t *b, int n, double (*thr)(int, double))
{
	double now = 0;
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < n; i++) {
			struct plb_grant g;
			assert_int_equal(plb_balancer_next(b, i, now, &g), PLB_NEXT_GRANT);
			assert_int_equal(g.kind, PLB_GRANT_TRAINING);
			assert_int_equal(g.units, 1024u << k);
			struct plb_grant g2;
			assert_int_equal(plb_balancer_next(b, i, now, &g2), PLB_NEXT_WAIT);
			double t = (double)g.units / thr(i, (double)g.units);
			now += t;
			struct plb_sample s = {g.id, 0.75 * t, 0.25 * t, now, 0};
			assert_int_equal(plb_balancer_done(b, i, &s), 0);
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
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "hdss", 4, W, &b), 0);
	double now = hdss_train(b, 4, hdss_thr);
	double wsum = want_w[0] + want_w[1] + want_w[2] + want_w[3];
	for (int i = 0; i < 4; i++) {
		struct plb_balancer_stats st;
		plb_balancer_stats(b, &st);
		struct plb_grant g;
		assert_int_equal(plb_balancer_next(b, i, now, &g), PLB_NEXT_GRANT);
		assert_int_equal(g.kind, PLB_GRANT_REGULAR);
		double want = want_w[i] / wsum * (double)st.units_pool / 2;
		if (fabs((double)g.units - want) > 1)
			fail_msg("PU %d: block of %llu units, expected %.0f (weight %g of %g)", i,
				 (unsigned long long)g.units, want, want_w[i], wsum);
	}
	plb_balancer_destroy(b);
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
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "hdss", 2, W, &b), 0);
	double now = hdss_train(b, 2, unit_or_5000);
	struct plb_balancer_stats st;
	plb_balancer_stats(b, &st);
	double pool = (double)st.units_pool;
	for (int i = 0; i < 2; i++) {
		struct plb_grant g;
		assert_int_equal(plb_balancer_next(b, i, now, &g), PLB_NEXT_GRANT);
		if (g.kind != PLB_GRANT_REGULAR)
			fail_msg("PU %d (weight %d) after training: a %s block", i, i ? 5000 : 1,
				 g.kind == PLB_GRANT_TRAINING ? "training" : "other");
		double want = (i ? 5000.0 : 1.0) / 5001 * pool / 2;
		assert_true(fabs((double)g.units - want) <= 1);
		pool -= (double)g.units;
	}
	plb_balancer_destroy(b);
}

/* HDSS on a domain too small for initial_block: the adaptive phase's
 * doubling sizes shrink so that all PUs' adaptive blocks together take
 * hdss_adaptive_fraction of W, no more and (up to rounding) no less. Two
 * PUs with hdss_samples = 4 run x, 2x, 4x, 8x each: 2 * 15 x = 0.2 * 15000,
 * so x = 100. */
static void test_hdss_small_domain(void **state)
{
	struct plb_params p;
	plb_params_init(&p);
	p.min_block = 1;
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(&p, "hdss", 2, 15000, &b), 0);
	double now = 0;
	uint64_t adaptive = 0;
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 2; i++) {
			struct plb_grant g;
			assert_int_equal(plb_balancer_next(b, i, now, &g), PLB_NEXT_GRANT);
			assert_int_equal(g.kind, PLB_GRANT_TRAINING);
			assert_int_equal(g.units, 100u << k);
			adaptive += g.units;
			now += 1e-3 * (double)g.units;
			struct plb_sample s = {g.id, 1e-3 * (double)g.units, 0, now, 0};
			assert_int_equal(plb_balancer_done(b, i, &s), 0);
		}
	assert_int_equal(adaptive, 3000);
	plb_balancer_destroy(b);
}

/* One lockstep round of PLB-HeC over n like PUs: each gets a block of x
 * units, which takes (1 ms + x / 1e6 s) * factor[i], and all report;
 * returns the kind of PU 0's block. */
static double hec_xfer;  /* the share of each block's time spent in transfer */

static enum plb_grant_kind hec_round(plb_balancer_t *b, int n, double *now,
				     const double *factor)
{
	struct plb_grant g[3];
	assert_true(n <= 3);
	for (int i = 0; i < n; i++)
		assert_int_equal(plb_balancer_next(b, i, *now, &g[i]), PLB_NEXT_GRANT);
	double t0 = *now;
	for (int i = 0; i < n; i++) {
		double t = (1e-3 + (double)g[i].units / 1e6) * factor[i];
		*now = fmax(*now, t0 + t);
		struct plb_sample s = {g[i].id, t * (1 - hec_xfer), t * hec_xfer, t0 + t, 0};
		assert_int_equal(plb_balancer_done(b, i, &s), 0);
	}
	return g[0].kind;
}

/* PLB-HeC's training over two like PUs whose k-th blocks take noise[k]
 * times their time (so both double their blocks every round); returns the
 * training blocks granted. */
static long hec_training_blocks(double r2, const double noise[8])
{
	struct plb_params p;
	plb_params_init(&p);
	p.hec_r2 = r2;
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(&p, "plb-hec", 2, 1000000000, &b), 0);
	double now = 0;
	for (int k = 0; k < 9; k++) {
		const double f[2] = {noise[k % 8], noise[k % 8]};
		if (hec_round(b, 2, &now, f) != PLB_GRANT_TRAINING)
			break;
	}
	struct plb_balancer_stats st;
	plb_balancer_stats(b, &st);
	plb_balancer_destroy(b);
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
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, "plb-hec", 2, 1000000000, &b), 0);
		double now = 0;
		double f[2] = {1, 1};
		f[zero] = 0;
		for (int k = 0; k < 8; k++)
			if (hec_round(b, 2, &now, f) != PLB_GRANT_TRAINING)
				fail_msg("PU %d without samples: round %d is not training", zero, k + 1);
		struct plb_balancer_stats st;
		plb_balancer_stats(b, &st);
		assert_int_equal(st.training_blocks, 2 * 8);
		plb_balancer_destroy(b);
	}
}

/* PLB-HeC's rounds are a barrier: a PU lost after its block of the round
 * was back holds nothing, so losing it leaves the barrier waiting for the
 * PU still out; the round ends only when that one is back. */
static void test_hec_lost_after_done_keeps_barrier(void **state)
{
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hec", 3, 1000000000, &b), 0);
	struct plb_grant g[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb_balancer_next(b, i, 0, &g[i]), PLB_NEXT_GRANT);
	struct plb_sample s0 = {g[0].id, 0.01, 0, 0.01, 0};
	assert_int_equal(plb_balancer_done(b, 0, &s0), 0);
	assert_int_equal(plb_balancer_lost(b, 0, 0.015), 0);
	struct plb_sample s1 = {g[1].id, 0.02, 0, 0.02, 0};
	assert_int_equal(plb_balancer_done(b, 1, &s1), 0);
	struct plb_grant n;
	if (plb_balancer_next(b, 1, 0.02, &n) != PLB_NEXT_WAIT)
		fail_msg("a new round began while PU 2's block of the last one was out");
	struct plb_sample s2 = {g[2].id, 0.03, 0, 0.03, 0};
	assert_int_equal(plb_balancer_done(b, 2, &s2), 0);
	assert_int_equal(plb_balancer_next(b, 1, 0.03, &n), PLB_NEXT_GRANT);
	plb_balancer_destroy(b);
}

/* PLB-HeC's training rounds over two PUs: PU 0's times are exact, PU 1's
 * block k takes base + (-1)^k jitter seconds whatever its size. */
static int hec_constant_rounds(double base, double jitter)
{
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hec", 2, 1000000000, &b), 0);
	double now = 0;
	int rounds = 0;
	for (int k = 0; k < 9; k++) {
		struct plb_grant g[2];
		double t0 = now;
		for (int i = 0; i < 2; i++)
			assert_int_equal(plb_balancer_next(b, i, now, &g[i]), PLB_NEXT_GRANT);
		if (g[0].kind != PLB_GRANT_TRAINING)
			break;
		rounds++;
		for (int i = 0; i < 2; i++) {
			double t = i == 0 ? 1e-3 + (double)g[i].units / 1e6 : base + (k % 2 ? -jitter : jitter);
			now = fmax(now, t0 + t);
			struct plb_sample s = {g[i].id, t, 0, t0 + t, 0};
			assert_int_equal(plb_balancer_done(b, i, &s), 0);
		}
	}
	struct plb_balancer_stats st;
	plb_balancer_stats(b, &st);
	plb_balancer_destroy(b);
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
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hec", 3, 1000000000, &b), 0);
	double now = 0;
	long before = 0;
	struct plb_balancer_stats st;
	for (int k = 0; k < 8; k++) {
		double f[3] = {1, 1, 1};
		if (k >= slow_from && slow >= 0)
			f[slow] = 2;
		(void)hec_round(b, 3, &now, f);
		if (k == 4) {
			plb_balancer_stats(b, &st);
			assert_int_equal(st.training_blocks, 9);        /* 3 rounds */
			before = st.solves;
		}
	}
	plb_balancer_stats(b, &st);
	plb_balancer_destroy(b);
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
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hec", 3, 1000000000, &b), 0);
	double now = 0;
	const double f[2] = {1, 1};
	struct plb_balancer_stats st;
	long before = -1;
	for (int k = 0; k < 13; k++) {
		enum plb_grant_kind kind = hec_round(b, 2, &now, f);
		if (k == 8) {
			assert_int_equal(kind, PLB_GRANT_REGULAR);
			plb_balancer_stats(b, &st);
			before = st.solves;
		}
	}
	plb_balancer_stats(b, &st);
	assert_int_equal(st.training_blocks, 2 * 8);
	if (st.solves != before)
		fail_msg("rounds that end together, a third PU that never asked: %ld re-solves, expected none",
			 st.solves - before);
	plb_balancer_destroy(b);
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
	plb_balancer_t *b = greedy100(16, 1600);
	for (int i = 0; i < 16; i++) {
		struct plb_grant g;
		assert_int_equal(plb_balancer_next(b, i, 0, &g), PLB_NEXT_GRANT);
		assert_int_equal(g.offset, 100 * (uint64_t)i);
	}
	assert_int_equal(b->nfree, 0);
	static const int order[16] = {0, 2, 4, 6, 8, 10, 12, 13, 15, 14, 1, 3, 11, 5, 9, 7};
	int cap = b->capfree;
	for (int k = 0; k < 16; k++) {
		char what[64];
		snprintf(what, sizeof what, "%d lost, the last PU %d", k + 1, order[k]);
		assert_int_equal(plb_balancer_lost(b, order[k], 1), 0);
		check_free_list(b, 100 * (uint64_t)(k + 1), what);
		if (k == 6)
			assert_int_equal(b->nfree, cap - 1);    /* one more and it is full */
	}
	assert_int_equal(b->nfree, 1);
	assert_int_equal(b->free[0].off, 0);
	assert_int_equal(b->free[0].len, 1600);
	plb_balancer_destroy(b);
}

/* A grant that takes a whole free range out of a full free list (as many
 * ranges as it has room for): the ranges after it move down, and nothing
 * is read past the list (AddressSanitizer builds check that). */
/* 16 PUs of greedy100 each granted a block of [0, 1600) of W units; then
 * PUs 0, 2, 4, ... lost (free ranges that do not touch) until the free
 * list holds `nfree` ranges. Returns the balancer; *k: PUs lost. */
static plb_balancer_t *every_other_lost(uint64_t W, int nfree, int *k)
{
	plb_balancer_t *b = greedy100(16, W);
	struct plb_grant g;
	for (int i = 0; i < 16; i++)
		assert_int_equal(plb_balancer_next(b, i, 0, &g), PLB_NEXT_GRANT);
	*k = 0;
	for (int pu = 0; pu < 16 && b->nfree < nfree; pu += 2, ++*k)
		assert_int_equal(plb_balancer_lost(b, pu, 1), 0);
	assert_int_equal(b->nfree, nfree);      /* the case */
	return b;
}

static void test_pool_take_whole_range_at_capacity(void **state)
{
	(void)state;
	int k;
	plb_balancer_t *b = every_other_lost(1600, 8, &k);
	struct plb_grant g;
	int cap = b->capfree;
	assert_int_equal(cap, 8);
	check_free_list(b, 100 * (uint64_t)k, "full");
	assert_int_equal(plb_balancer_next(b, 1, 0, &g), PLB_NEXT_GRANT);
	assert_int_equal(g.offset, 0);
	assert_int_equal(g.units, 100);
	assert_int_equal(b->nfree, cap - 1);
	check_free_list(b, 100 * (uint64_t)(k - 1), "a whole range taken");
	for (int r = 0; r < b->nfree; r++)
		assert_int_equal(b->free[r].off, 200 * (uint64_t)(r + 1));
	plb_balancer_destroy(b);
}

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
	plb_balancer_t *b = greedy100(3, 1000);
	struct plb_grant g;
	assert_int_equal(plb__others_busy(b, 0), 0);
	assert_int_equal(plb__others_busy(b, -1), 0);
	assert_int_equal(plb_balancer_next(b, 0, 1, &g), PLB_NEXT_GRANT);
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
	struct plb_grant g2;
	assert_int_equal(plb_balancer_next(b, 0, 1, &g2), PLB_NEXT_GRANT);
	assert_int_equal(plb__others_busy(b, 0), 0);
	assert_int_equal(plb__others_busy(b, 1), 1);
	plb_balancer_destroy(b);

	/* plb-hac on one PU: a training block at 1 us per unit, then the
	 * rest as a regular block with a prediction (about a second) */
	assert_int_equal(plb_balancer_create(NULL, "plb-hac", 1, 1000000, &b), 0);
	double now = 0;
	for (;;) {
		assert_int_equal(plb_balancer_next(b, 0, now, &g), PLB_NEXT_GRANT);
		if (g.kind != PLB_GRANT_TRAINING)
			break;
		double t = 1e-6 * (double)g.units;
		now += t;
		struct plb_sample s = {g.id, t, 0, now, 0};
		assert_int_equal(plb_balancer_done(b, 0, &s), 0);
	}
	double p = g.predicted_s;
	assert_true(p > 0.9e-6 * (double)g.units && p < 1.1e-6 * (double)g.units);
	assert_near(plb__busy_for(b, 0, now), p, 1e-9 * p);
	assert_near(plb__busy_for(b, 0, now + 0.25 * p), 0.75 * p, 1e-9 * p);
	assert_true(plb__busy_for(b, 0, now + p) == 0);
	/* 2 p past its predicted end: taken to need 2 p more */
	assert_near(plb__busy_for(b, 0, now + 3 * p), 2 * p, 1e-9 * p);
	plb_balancer_destroy(b);
}

/* The latest other PU's free time, scanned afresh. */
static double others_scan(plb_balancer_t *b, int pu, double now)
{
	double t = 0;
	for (int i = 0; i < b->n; i++)
		if (i != pu && !b->pu[i].lost)
			t = fmax(t, plb__busy_for(b, i, now));
	return t;
}

static void assert_others_free_in(plb_balancer_t *b, double now)
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
	plb_balancer_t *b = greedy100(4, 100000);
	struct plb_grant g0, g1, g2;
	(void)state;
	assert_int_equal(plb_balancer_next(b, 0, 1, &g0), PLB_NEXT_GRANT);
	assert_int_equal(plb_balancer_next(b, 1, 3, &g1), PLB_NEXT_GRANT);
	assert_others_free_in(b, 5);
	assert_true(plb__others_free_in(b, 0, 5) == 2);
	assert_true(plb__others_free_in(b, 2, 5) == 4);
	struct plb_sample s = {g0.id, 4, 0, 5, 0};
	assert_int_equal(plb_balancer_done(b, 0, &s), 0);
	assert_true(plb__others_free_in(b, 2, 5) == 2);        /* PU 0 is free */
	assert_others_free_in(b, 5);
	assert_int_equal(plb_balancer_next(b, 2, 5, &g2), PLB_NEXT_GRANT);
	assert_true(plb__others_free_in(b, 3, 5) == 2);
	assert_true(plb__others_free_in(b, 3, 7) == 4);
	assert_others_free_in(b, 7);
	assert_int_equal(plb_balancer_lost(b, 1, 7), 0);
	assert_true(plb__others_free_in(b, 3, 7) == 2);        /* PU 1's block is gone */
	assert_others_free_in(b, 7);
	plb_balancer_destroy(b);
}

/* What the busy PUs other than pu run by t, PU by PU. */
static double room_scan(plb_balancer_t *b, int pu, double now, double t)
{
	double room = 0;
	for (int i = 0; i < b->n; i++)
		if (i != pu && !b->pu[i].lost && b->pu[i].nout > 0 && plb__model_ready(&b->model[i]))
			room += fmax(0, t - plb__busy_for(b, i, now)) * b->pu[i].rate;
	return room;
}

static void assert_busy_room(plb_balancer_t *b, double now)
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
static void assert_busy_dry(plb_balancer_t *b, double now)
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
	plb_balancer_t *b;
	struct plb_grant g[3];
	double end[3], now = 0;
	(void)state;
	assert_int_equal(plb_balancer_create(NULL, "plb-hac", 3, 100000000, &b), 0);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 3; i++) {
			assert_int_equal(plb_balancer_next(b, i, now, &g[i]), PLB_NEXT_GRANT);
			end[i] = now + per[i] * (double)g[i].units;
		}
		for (int i = 0; i < 3; i++) {
			struct plb_sample s = {g[i].id, end[i] - now, 0, end[i], 0};
			assert_int_equal(plb_balancer_done(b, i, &s), 0);
			now = fmax(now, end[i]);
		}
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(plb_balancer_next(b, i, now, &g[i]), PLB_NEXT_GRANT);
		end[i] = now + per[i] * (double)g[i].units;
	}
	assert_true(b->pu[0].rate > b->pu[1].rate && b->pu[1].rate > 0);
	assert_busy_room(b, now);
	assert_busy_dry(b, now);
	assert_true(plb__busy_room(b, 2, now, 1e9) > 0);
	assert_true(plb__busy_room(b, 0, now, 0) == 0);
	/* PU 1 ends its block in a third of the time: its rate moves */
	double r1 = b->pu[1].rate;
	struct plb_sample s = {g[1].id, (end[1] - now) / 3, 0, now, 0};
	assert_int_equal(plb_balancer_done(b, 1, &s), 0);
	assert_true(b->pu[1].rate != r1);
	assert_int_equal(plb_balancer_next(b, 1, now, &g[1]), PLB_NEXT_GRANT);
	assert_busy_room(b, now);
	assert_busy_dry(b, now);
	assert_int_equal(plb_balancer_lost(b, 0, now), 0);
	assert_busy_room(b, now);
	assert_busy_dry(b, now);
	assert_true(plb__busy_room(b, 2, now, 1e9) > 0);
	plb_balancer_destroy(b);
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
	for (int p = 0; plb_policy_name(p); p++) {
		const char *pol = plb_policy_name(p);
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, pol, 2, 200000, &b), 0);
		struct plb_grant g[2];
		double finish[2] = {0, 0}, units[2] = {0, 0}, now = 0, second[2] = {0, 0};
		int busy[2] = {0, 0}, ntrain[2] = {0, 0};
		for (;;) {
			for (int i = 0; i < 2; i++)
				if (!busy[i] && plb_balancer_next(b, i, now, &g[i]) == PLB_NEXT_GRANT) {
					busy[i] = 1;
					finish[i] = now + (exec_per[i] + xfer_per[i]) * (double)g[i].units;
					if (g[i].kind == PLB_GRANT_TRAINING && ++ntrain[i] == 2)
						second[i] = (double)g[i].units;
				}
			int k = busy[0] && (!busy[1] || finish[0] <= finish[1]) ? 0 : busy[1] ? 1 : -1;
			if (k < 0)
				break;
			now = finish[k];
			busy[k] = 0;
			double u = (double)g[k].units;
			struct plb_sample smp = {g[k].id, exec_per[k] * u, xfer_per[k] * u, now, 0};
			if (plb_balancer_done(b, k, &smp) == 0)
				units[k] += u;
		}
		assert_true(plb_balancer_finished(b));
		plb_balancer_destroy(b);
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
	plb_balancer_t *b = greedy100(2, 1000);
	struct plb_grant g[2], h;
	assert_int_equal(plb_balancer_next(b, 1, 0, &g[0]), PLB_NEXT_GRANT);
	assert_int_equal(plb_balancer_next(b, 1, 0, &g[1]), PLB_NEXT_GRANT);
	assert_int_equal(plb_balancer_next(b, 1, 0, &h), PLB_ESTATE);
	struct plb_sample s1 = {g[1].id, 1, 0, 1, 0}, s0 = {g[0].id, 1, 0, 2, 0};
	/* plb_balancer_counts: out on its PU and not voided */
	assert_int_equal(plb_balancer_counts(b, 1, g[0].id), 1);
	assert_int_equal(plb_balancer_counts(b, 1, g[1].id), 1);
	assert_int_equal(plb_balancer_counts(b, 0, g[1].id), 0);       /* not its PU's */
	assert_int_equal(plb_balancer_counts(b, 2, g[1].id), 0);       /* no such PU */
	check_busy_summary(b, 0.5);
	assert_int_equal(plb_balancer_done(b, 1, &s1), 0);
	/* the block still queued now runs from the first's end: free in 1 s,
	 * as late again as it is, 1.5 s from its grant */
	check_busy_summary(b, 1.5);
	assert_true(plb__busy_for(b, 1, 1.5) == 0.5);
	assert_int_equal(plb_balancer_counts(b, 1, g[1].id), 0);       /* done */
	assert_int_equal(plb_balancer_counts(b, 1, g[0].id), 1);
	assert_int_equal(b->pu[1].nout, 1);
	assert_int_equal(b->pu[1].out[0].id, g[0].id);
	assert_int_equal(plb_balancer_done(b, 1, &s1), PLB_ESTALE);
	assert_int_equal(plb_balancer_done(b, 1, &s0), 0);
	assert_int_equal(b->pu[1].nout, 0);
	uint64_t done = g[0].units + g[1].units;
	double now = 2;
	while (!plb_balancer_finished(b)) {
		assert_int_equal(plb_balancer_next(b, 0, now, &h), PLB_NEXT_GRANT);
		now += 1;
		struct plb_sample s = {h.id, 1, 0, now, 0};
		assert_int_equal(plb_balancer_done(b, 0, &s), 0);
		done += h.units;
	}
	assert_int_equal(done, 1000);
	plb_balancer_destroy(b);
}

/* The pool's free list stays sorted, disjoint and merged (no two ranges
 * touch) and sums to the pool, whatever order ranges come back in: ten
 * PUs hold one 100-unit block each of W = 1000 and are lost in a shuffled
 * order; at the end the pool is the one range [0, 1000). */
static void test_pool_merges(void **state)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		plb_balancer_t *b = greedy100(10, 1000);
		int order[10];
		for (int i = 0; i < 10; i++) {
			struct plb_grant g;
			assert_int_equal(plb_balancer_next(b, i, 0, &g), PLB_NEXT_GRANT);
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
			assert_int_equal(plb_balancer_lost(b, order[k], 1), 0);
			check_free_list(b, 100 * (uint64_t)(k + 1), what);
		}
		assert_int_equal(b->nfree, 1);
		assert_int_equal(b->free[0].off, 0);
		assert_int_equal(b->free[0].len, 1000);
		plb_balancer_destroy(b);
	}
}

/* Placement: a PU gets the free units its group holds while there are
 * any, then the lowest free units; without groups the same calls give
 * the same grants as always (lowest first). */
static void test_placement(void **state)
{
	plb_balancer_t *b = greedy100(4, 1000), *plain = greedy100(4, 1000);
	assert_int_equal(plb_balancer_hold(b, 0, 0, 10), PLB_EINVAL);  /* no group yet */
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_balancer_group(b, i, i / 2), 0);
	assert_int_equal(plb_balancer_group(b, 4, 0), PLB_EINVAL);
	assert_int_equal(plb_balancer_group(b, 0, 4), PLB_EINVAL);
	assert_int_equal(plb_balancer_hold(b, 0, 990, 11), PLB_EINVAL);
	assert_int_equal(plb_balancer_hold(b, 0, 5, 0), PLB_EINVAL);        /* nothing to hold */
	assert_int_equal(plb_balancer_hold(b, 0, 1001, 1), PLB_EINVAL);     /* past W */
	assert_int_equal(plb_balancer_hold(b, 4, 0, 10), PLB_EINVAL);       /* no such group */
	assert_int_equal(plb_balancer_hold(b, -1, 0, 10), PLB_EINVAL);
	assert_int_equal(plb_balancer_hold(b, 0, 600, 250), 0);
	assert_int_equal(plb_balancer_hold(b, 0, 800, 200), 0);        /* merged: [600, 1000) */
	assert_int_equal(plb_balancer_hold(b, 1, 0, 400), 0);
	/* PUs 0 and 1 (group 0) take [600, 1000), 2 and 3 take [0, 400) */
	uint64_t want[8] = {600, 700, 0, 100, 800, 900, 200, 300}, plain_at = 0;
	int who[8] = {0, 1, 2, 3, 0, 1, 2, 3};
	for (int k = 0; k < 8; k++) {
		struct plb_grant g, h;
		assert_int_equal(plb_balancer_next(b, who[k], 0, &g), PLB_NEXT_GRANT);
		assert_int_equal(g.offset, want[k]);
		assert_int_equal(g.units, 100);
		assert_int_equal(plb_balancer_next(plain, who[k], 0, &h), PLB_NEXT_GRANT);
		assert_int_equal(h.offset, plain_at);
		plain_at += 100;
		struct plb_sample s = {g.id, 1, 0, 1, 0}, t = {h.id, 1, 0, 1, 0};
		assert_int_equal(plb_balancer_done(b, who[k], &s), 0);
		assert_int_equal(plb_balancer_done(plain, who[k], &t), 0);
	}
	check_free_list(b, 200, "held ranges taken");
	/* nothing held is free: the lowest free units, [400, 600) */
	struct plb_grant g;
	assert_int_equal(plb_balancer_next(b, 0, 1, &g), PLB_NEXT_GRANT);
	assert_int_equal(g.offset, 400);
	plb_balancer_destroy(b);
	plb_balancer_destroy(plain);
}

/* A grant longer than the held stretch is cut to it when one more block
 * costs nothing by the PU's model (no fixed cost), and not when the
 * fixed cost is most of a block's time: then it starts on the held units
 * and runs on past them. */
static void test_placement_cut(void **state)
{
	for (int fixed = 0; fixed <= 1; fixed++) {
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
		struct plb_model_sample s[4];
		for (int k = 0; k < 4; k++) {
			double u = 500.0 * (1 << k);
			s[k] = (struct plb_model_sample){u, u * 1e-4 + (fixed ? 2.0 : 0), 0};
		}
		for (int i = 0; i < 2; i++) {
			assert_int_equal(plb_balancer_model_set(b, i, s, 4, INFINITY), 0);
			assert_int_equal(plb_balancer_group(b, i, i), 0);
		}
		check_busy_summary(b, 0);       /* the models' rates, from model_set */
		assert_int_equal(plb_balancer_hold(b, 0, 50000, 400), 0);
		struct plb_grant g;
		assert_int_equal(plb_balancer_next(b, 0, 0, &g), PLB_NEXT_GRANT);
		assert_int_equal(g.offset, 50000);
		if (fixed)
			assert_true(g.units > 400);
		else
			assert_int_equal(g.units, 400);
		plb_balancer_destroy(b);
	}
}

/* Placement takes a free unit that a PU's node holds even when it is the
 * only one (a held stretch of one unit): PU 0's node holds [500, 501), so
 * its grant starts there and runs on past it (no model: no cut). A PU in
 * no group takes none of a group's units. */
static void test_placement_one_unit(void **state)
{
	(void)state;
	plb_balancer_t *b = greedy100(2, 1000);
	assert_int_equal(plb_balancer_group(b, 0, 0), 0);
	assert_int_equal(plb_balancer_hold(b, 0, 500, 1), 0);
	struct plb_grant g;
	assert_int_equal(plb_balancer_next(b, 0, 0, &g), PLB_NEXT_GRANT);
	assert_int_equal(g.offset, 500);
	assert_int_equal(g.units, 100);
	check_free_list(b, 900, "one held unit");
	/* PU 1 is in no group: what group 0 holds is not its, it takes the
	 * lowest free units */
	assert_int_equal(plb_balancer_hold(b, 0, 700, 100), 0);
	assert_int_equal(plb_balancer_next(b, 1, 0, &g), PLB_NEXT_GRANT);
	assert_int_equal(g.offset, 0);
	plb_balancer_destroy(b);
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
	plb_balancer_t *b = every_other_lost(1900, nf, &k);
	struct plb_grant g;
	int cap = b->capfree;
	assert_int_equal(cap, nf + 1);
	uint64_t pool = b->pool;
	check_free_list(b, pool, "before the split");
	assert_int_equal(plb_balancer_group(b, 1, 1), 0);
	assert_int_equal(plb_balancer_hold(b, 1, 1650, 200), 0);
	assert_int_equal(plb_balancer_next(b, 1, 0, &g), PLB_NEXT_GRANT);
	assert_int_equal(g.offset, 1650);
	assert_int_equal(g.units, 100);
	assert_int_equal(b->nfree, cap);
	check_free_list(b, pool - 100, "split");
	assert_int_equal(b->free[nf - 1].off, 1600);
	assert_int_equal(b->free[nf - 1].len, 50);
	assert_int_equal(b->free[nf].off, 1750);
	assert_int_equal(b->free[nf].len, 150);
	plb_balancer_destroy(b);
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

/* PUs from..to-1 get a model of four blocks of 1000-8000 units at
 * 0.01 s + 10 us a unit. */
static void four_linear_samples(plb_balancer_t *b, int from, int to)
{
	struct plb_model_sample four[4];
	for (int k = 0; k < 4; k++)
		four[k] = (struct plb_model_sample){1000.0 * (1 << k), 0.01 + 1e-5 * 1000.0 * (1 << k), 0};
	for (int i = from; i < to; i++)
		assert_int_equal(plb_balancer_model_set(b, i, four, 4, INFINITY), 0);
}

/* PU pu asks at *now: 1 with a grant in *g, or 0 once *now has moved on
 * to the balancer's wake-up time, which must be finite. */
static int ask_or_wake(plb_balancer_t *b, int pu, double *now, struct plb_grant *g)
{
	int rc = plb_balancer_next(b, pu, *now, g);
	if (rc == PLB_NEXT_WAIT) {
		*now = plb_balancer_wake(b);
		assert_true(isfinite(*now));
		return 0;
	}
	assert_int_equal(rc, PLB_NEXT_GRANT);
	return 1;
}

/* PU pu runs g from *now at four_linear_samples' line and reports it. */
static void run_linear(plb_balancer_t *b, int pu, const struct plb_grant *g, double *now)
{
	double t = 0.01 + 1e-5 * (double)g->units;
	*now += t;
	struct plb_sample smp = {g->id, t, 0, *now, 0};
	assert_int_equal(plb_balancer_done(b, pu, &smp), 0);
}

/* A warm start of one sample is kept (a PU that ran one block in an
 * earlier process), none leaves the model empty, and what goes in comes
 * back out of plb_balancer_model_get. */
static void test_model_set_counts(void **state)
{
	(void)state;
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
	struct plb_model_sample one = {2048, 0.25, 0.01}, got[4];
	assert_int_equal(plb_balancer_model_set(b, 0, &one, 1, INFINITY), 0);
	assert_int_equal(plb_balancer_model_set(b, 1, NULL, 0, INFINITY), 0);
	assert_int_equal(plb_balancer_model_get(b, 0, got, 4, NULL), 1);
	assert_true(got[0].units == 2048 && got[0].exec_s == 0.25 && got[0].xfer_s == 0.01);
	assert_int_equal(plb_balancer_model_get(b, 1, got, 4, NULL), 0);
	/* no model yet: no prediction; with four exact samples of a line,
	 * the line's time */
	assert_true(isnan(plb_balancer_predict(b, 1, 1000)));
	/* units that are no block size: no prediction */
	assert_true(isnan(plb_balancer_predict(b, 0, INFINITY)));
	assert_true(isnan(plb_balancer_predict(b, 0, NAN)));
	assert_true(isnan(plb_balancer_predict(b, 0, -1)));
	assert_true(isfinite(plb_balancer_predict(b, 0, 0)));
	/* no such PU */
	assert_true(isnan(plb_balancer_predict(b, 2, 1000)));
	assert_true(isnan(plb_balancer_predict(b, -1, 1000)));
	assert_true(isnan(plb_balancer_predict(NULL, 0, 1000)));
	plb_balancer_destroy(b);
	assert_int_equal(plb_balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
	four_linear_samples(b, 1, 2);
	double t = plb_balancer_predict(b, 1, 3000);
	if (!(fabs(t - 0.04) < 1e-6))
		fail_msg("a line's time at 3000 units: predicted %g s, not 0.04 s", t);
	/* a block that took no measurable compute time (all transfer) is a
	 * sample; a negative time is not */
	struct plb_model_sample zero = {512, 0, 0.02}, neg = {512, -0.1, 0.2};
	assert_int_equal(plb_balancer_model_set(b, 0, &zero, 1, INFINITY), 0);
	assert_int_equal(plb_balancer_model_get(b, 0, got, 4, NULL), 1);
	assert_int_equal(plb_balancer_model_set(b, 0, &neg, 1, INFINITY), PLB_EINVAL);
	plb_balancer_destroy(b);
	/* a policy without models refuses a bad sample as well (the first
	 * of several too), and takes good ones without keeping them */
	assert_int_equal(plb_balancer_create(NULL, "greedy", 2, 100000, &b), 0);
	struct plb_model_sample bad_first[2] = {{512, -0.1, 0.2}, {1024, 0.1, 0}};
	assert_int_equal(plb_balancer_model_set(b, 0, bad_first, 2, INFINITY), PLB_EINVAL);
	assert_int_equal(plb_balancer_model_set(b, 0, &neg, 1, INFINITY), PLB_EINVAL);
	assert_int_equal(plb_balancer_model_set(b, 0, &one, 1, INFINITY), 0);
	assert_int_equal(plb_balancer_model_get(b, 0, got, 4, NULL), 0);
	plb_balancer_destroy(b);
}

/* A late block is run again by free PUs only: with none (one PU, or the
 * others lost) there is nothing to wake the caller for, however late the
 * block is. */
static void test_no_wake_without_free_pus(void **state)
{
	(void)state;
	for (int n = 1; n <= 2; n++) {
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, "plb-hac", n, 100000, &b), 0);
		four_linear_samples(b, 0, n);
		if (n == 2)
			assert_int_equal(plb_balancer_lost(b, 1, 0), 0);
		struct plb_grant g;
		struct plb_balancer_stats st;
		double now = 0;
		int last_out = 0;
		while (plb_balancer_next(b, 0, now, &g) == PLB_NEXT_GRANT) {
			plb_balancer_stats(b, &st);
			last_out += st.units_pool == 0;
			/* the block runs 100x its model's time */
			now += 100 * (0.01 + 1e-5 * (double)g.units);
			if (isfinite(plb_balancer_wake(b)))
				fail_msg("%d PU(s), one live: a wake-up at %g s for a block nobody else can run",
					 n, plb_balancer_wake(b));
			struct plb_sample smp = {g.id, 100 * (0.01 + 1e-5 * (double)g.units), 0, now, 0};
			assert_int_equal(plb_balancer_done(b, 0, &smp), 0);
		}
		assert_true(plb_balancer_finished(b));
		assert_true(last_out > 0);      /* the pool was empty with a block out */
		plb_balancer_destroy(b);
	}
}

/* Nor for a free PU whose model holds nothing (its one block took no
 * measurable time, which is no sample): how long it would take over a late
 * block is not known, so the late block is not run again on it, and there
 * is no time to wake the caller at. */
static void test_no_wake_for_untrained_free_pu(void **state)
{
	(void)state;
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hac", 2, 2, &b), 0);
	struct plb_grant g0, g1, g;
	assert_int_equal(plb_balancer_next(b, 0, 0, &g0), PLB_NEXT_GRANT);
	assert_int_equal(plb_balancer_next(b, 1, 0, &g1), PLB_NEXT_GRANT);
	assert_true(g0.units == 1 && g1.units == 1);
	struct plb_sample s = {g1.id, 0, 0, 0.001, 0};
	assert_int_equal(plb_balancer_done(b, 1, &s), 0);
	assert_true(isnan(plb_balancer_predict(b, 1, 1)));
	/* PU 0's first block is late from its start (it has no prediction) */
	for (double now = 0.01; now < 1000; now *= 10) {
		int nx = plb_balancer_next(b, 1, now, &g);
		if (nx != PLB_NEXT_WAIT)
			fail_msg("t=%g: %d, kind %d units %llu at %llu", now, nx, (int)g.kind, (unsigned long long)g.units, (unsigned long long)g.offset);
		if (isfinite(plb_balancer_wake(b)))
			fail_msg("t=%g: a wake-up at %g s for a PU with one sample", now,
				 plb_balancer_wake(b));
	}
	s = (struct plb_sample){g0.id, 1000, 0, 1000, 0};
	assert_int_equal(plb_balancer_done(b, 0, &s), 0);
	assert_true(plb_balancer_finished(b));
	plb_balancer_destroy(b);
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
	struct plb_params par;
	plb_params_init(&par);          /* the defaults: redo_gain 3 */
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(&par, "plb-hac", 2, 100000, &b), 0);
	four_linear_samples(b, 0, 2);
	struct plb_grant g[2];
	double at[2], end[2], now = 0;
	int busy[2] = {0, 0}, checked = 0;
	for (;;) {
		for (int i = 0; i < 2; i++) {
			if (busy[i])
				continue;
			struct plb_balancer_stats st;
			plb_balancer_stats(b, &st);
			int rc = plb_balancer_next(b, i, now, &g[i]);
			if (rc == PLB_NEXT_GRANT) {
				busy[i] = 1;
				at[i] = now;
				/* 2% slower than predicted: late, not late enough to re-run */
				end[i] = now + 1.02 * (0.01 + 1e-5 * (double)g[i].units);
				continue;
			}
			double w = plb_balancer_wake(b);
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
		struct plb_sample smp = {g[next].id, end[next] - at[next], 0, now, 0};
		assert_int_equal(plb_balancer_done(b, next, &smp), 0);
	}
	assert_true(plb_balancer_finished(b));
	assert_true(checked > 0);       /* a PU was free beside a busy one at the end */
	plb_balancer_destroy(b);
}

/* A block that lost its race with its re-run is refused as stale, and its
 * time still goes into its PU's model (it says how the PU ran), unless it
 * says nothing: a report of 0 s adds no sample, as for any block. PU 0
 * never ends its first block; PU 1 runs the rest and then that block
 * again, in pieces, asked at the wake-up times. */
static void test_void_block_report(void **state)
{
	(void)state;
	struct plb_model_sample got[64];
	for (int c = 0; c < 2; c++) {
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, "plb-hac", 2, 50000, &b), 0);
		four_linear_samples(b, 0, 2);
		struct plb_grant g0, g;
		double now = 0;
		assert_int_equal(plb_balancer_next(b, 0, now, &g0), PLB_NEXT_GRANT);
		while (!plb_balancer_finished(b)) {
			int rc = plb_balancer_next(b, 1, now, &g);
			if (rc == PLB_NEXT_WAIT) {
				double w = plb_balancer_wake(b);
				if (!(w > now && isfinite(w)))
					fail_msg("PU 1 waits at %g s with no wake-up (%g) beside a stalled block", now, w);
				now = w;
				continue;
			}
			assert_int_equal(rc, PLB_NEXT_GRANT);
			double t = 0.01 + 1e-5 * (double)g.units;
			now += t;
			struct plb_sample smp = {g.id, t, 0, now, 0};
			assert_int_equal(plb_balancer_done(b, 1, &smp), 0);
		}
		struct plb_balancer_stats st;
		plb_balancer_stats(b, &st);
		assert_true(st.redo_won == 1);
		/* still out on PU 0, but its re-run won: its results would not count */
		assert_int_equal(plb_balancer_counts(b, 0, g0.id), 0);
		int before = plb_balancer_model_get(b, 0, got, 64, NULL);
		/* half of it transfer time (a sample counts exec + transfer) */
		struct plb_sample late = {g0.id, c ? 0.5 * now : 0, c ? 0.5 * now : 0, now, 0};
		assert_int_equal(plb_balancer_done(b, 0, &late), PLB_ESTALE);
		int after = plb_balancer_model_get(b, 0, got, 64, NULL);
		if (after != before + c)
			fail_msg("a voided block's report of %g s: PU 0's model went from %d to %d samples",
				 late.exec_s + late.xfer_s, before, after);
		plb_balancer_destroy(b);
	}
}

/* Of two late blocks, the one further past its predicted end is run
 * again first: PU 0's block is due before PU 1's, both stall, and PU 2,
 * free once the pool is empty, is asked long after both were due. */
static void test_redo_most_late_first(void **state)
{
	(void)state;
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hac", 3, 100000, &b), 0);
	four_linear_samples(b, 0, 3);
	struct plb_grant g0, g1, g;
	double now = 0;
	assert_int_equal(plb_balancer_next(b, 0, now, &g0), PLB_NEXT_GRANT);
	int asked1 = 0;
	double t1 = 0;
	struct plb_balancer_stats st;
	for (plb_balancer_stats(b, &st); st.units_pool > 0; plb_balancer_stats(b, &st)) {
		if (!asked1 && now > 0.2) {
			assert_int_equal(plb_balancer_next(b, 1, now, &g1), PLB_NEXT_GRANT);
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
	assert_int_equal(plb_balancer_next(b, 2, now, &g), PLB_NEXT_GRANT);
	assert_int_equal(g.kind, PLB_GRANT_REDO);
	if (!(g.offset >= g0.offset && g.offset < g0.offset + g0.units))
		fail_msg("the re-run piece at %llu is not in PU 0's block [%llu, %llu), due at %g s, "
			 "but PU 1's [%llu, %llu) is due at %g s", (unsigned long long)g.offset,
			 (unsigned long long)g0.offset, (unsigned long long)(g0.offset + g0.units), due0,
			 (unsigned long long)g1.offset, (unsigned long long)(g1.offset + g1.units), due1);
	plb_balancer_destroy(b);
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
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(NULL, "plb-hac", 2, W, &b), 0);
		four_linear_samples(b, 0, 2);
		struct plb_grant g0, g;
		double now = 0;
		int pieces = 0;
		assert_int_equal(plb_balancer_next(b, 0, now, &g0), PLB_NEXT_GRANT);
		assert_true(g0.units >= 64);
		while (!plb_balancer_finished(b)) {
			if (!ask_or_wake(b, 1, &now, &g))
				continue;
			if (g.kind == PLB_GRANT_REDO) {
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
		plb_balancer_destroy(b);
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
	plb_balancer_t *b;
	assert_int_equal(plb_balancer_create(NULL, "plb-hac", 4, 2000000, &b), 0);
	four_linear_samples(b, 0, 4);
	struct plb_grant g0, g[4];
	double end[4] = {0}, at[4] = {0}, now = 0;
	int busy[4] = {1, 0, 0, 0}, pieces = 0, on[4] = {0};
	double first = 0, lo = INFINITY, hi = -INFINITY;
	assert_int_equal(plb_balancer_next(b, 0, now, &g0), PLB_NEXT_GRANT);
	while (!plb_balancer_finished(b)) {
		int asked = 0;
		for (int i = 1; i < 4; i++) {
			if (busy[i])
				continue;
			int rc = plb_balancer_next(b, i, now, &g[i]);
			if (rc != PLB_NEXT_GRANT) {
				assert_true(rc == PLB_NEXT_WAIT || rc == PLB_NEXT_DONE);
				continue;
			}
			asked = 1;
			busy[i] = 1;
			at[i] = now;
			end[i] = now + 0.01 + 1e-5 * (double)g[i].units;
			if (g[i].kind == PLB_GRANT_REDO) {
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
			double w = plb_balancer_wake(b);
			assert_true(isfinite(w) && w > now);
			now = w;
			continue;
		}
		now = end[next];
		busy[next] = 0;
		struct plb_sample smp = {g[next].id, end[next] - at[next], 0, now, 0};
		int rc = plb_balancer_done(b, next, &smp);
		assert_true(rc == 0 || rc == PLB_ESTALE);
	}
	double tpiece = 0.01 + 1e-5 * 64;
	if (!(pieces >= 2 && on[1] + on[2] + on[3] >= 2 && first <= 0.5 * (double)g0.units &&
	      hi - lo <= tpiece))
		fail_msg("a late block of %llu units: %d pieces on %d PUs, the first of %g units, "
			 "planned to end %g s apart (a piece of min_block takes %g s)",
			 (unsigned long long)g0.units, pieces, on[1] + on[2] + on[3], first, hi - lo, tpiece);
	plb_balancer_destroy(b);
}

/* A block leaves a rest of the pool's range behind only if that rest is
 * min_block or more; less goes with the block (greedy, blocks of 100,
 * min_block 20: 100 then 100 then the 20 left of 220; 100 then 119 of
 * 219). */
static void test_rest_below_min_block_joins(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		struct plb_params p;
		plb_params_init(&p);
		p.greedy_block = 100;
		p.min_block = 20;
		p.train_div = 1;        /* else min_block is cut to W / 32 */
		uint64_t W = c ? 219 : 220;
		plb_balancer_t *b;
		assert_int_equal(plb_balancer_create(&p, "greedy", 1, W, &b), 0);
		uint64_t want[2][3] = {{100, 100, 20}, {100, 119, 0}}, off = 0;
		for (int k = 0; k < 3 && want[c][k]; k++) {
			struct plb_grant g;
			assert_int_equal(plb_balancer_next(b, 0, k, &g), PLB_NEXT_GRANT);
			assert_int_equal(g.offset, off);
			assert_int_equal(g.units, want[c][k]);
			off += g.units;
			struct plb_sample s = {g.id, 1, 0, k + 1, 0};
			assert_int_equal(plb_balancer_done(b, 0, &s), 0);
		}
		assert_true(plb_balancer_finished(b));
		plb_balancer_destroy(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redo_most_late_first),
		cmocka_unit_test(test_rest_below_min_block_joins),
		cmocka_unit_test(test_redo_piece_rest),
		cmocka_unit_test(test_redo_pieces_end_together),
		cmocka_unit_test(test_coverage_all_policies),
		cmocka_unit_test(test_model_set_counts),
		cmocka_unit_test(test_coverage_with_failures),
		cmocka_unit_test(test_coverage_with_placement),
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_placement_cut),
		cmocka_unit_test(test_params_and_names),
		cmocka_unit_test(test_static_split),
		cmocka_unit_test(test_tiny_domains),
		cmocka_unit_test(test_coarse_domain_small_blocks),
		cmocka_unit_test(test_bad_calls),
		cmocka_unit_test(test_zero_time_blocks),
		cmocka_unit_test(test_lost_range_regranted),
		cmocka_unit_test(test_hdss_weights),
		cmocka_unit_test(test_hdss_weight_one),
		cmocka_unit_test(test_hec_training_rounds),
		cmocka_unit_test(test_hec_resolve_on_spread),
		cmocka_unit_test(test_hec_absent_pu_no_resolve),
		cmocka_unit_test(test_hec_training_without_samples),
		cmocka_unit_test(test_hec_lost_after_done_keeps_barrier),
		cmocka_unit_test(test_hec_training_constant_times),
		cmocka_unit_test(test_pool_merges),
		cmocka_unit_test(test_pool_merges_at_capacity),
		cmocka_unit_test(test_pool_take_whole_range_at_capacity),
		cmocka_unit_test(test_pool_split_at_capacity),
		cmocka_unit_test(test_placement_one_unit),
		cmocka_unit_test(test_ranges_against_bitmap),
		cmocka_unit_test(test_busy_for_and_others_busy),
		cmocka_unit_test(test_others_free_in),
		cmocka_unit_test(test_busy_room),
		cmocka_unit_test(test_hdss_small_domain),
		cmocka_unit_test(test_done_out_of_order),
		cmocka_unit_test(test_transfer_counts_as_time),
		cmocka_unit_test(test_no_wake_without_free_pus),
		cmocka_unit_test(test_no_wake_for_untrained_free_pu),
		cmocka_unit_test(test_wake_after_predicted_end),
		cmocka_unit_test(test_void_block_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
