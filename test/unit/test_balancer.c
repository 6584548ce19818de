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
 * noise, and `nlose` PUs lost (never all): the k-th at a random moment in
 * the k-th of nlose equal slices of [0.05, 0.75] of the run's length had
 * nobody died: the first a PU that holds a block, later ones a busy PU two
 * times in three and any live PU else. Every loss must happen before the
 * run ends, and every unit must be reported done exactly once; returns the
 * number of events. */
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
	double now = 0, span = (double)W / rates, lose_at = INFINITY;
	long events = 0;
	int lost = 0;
	if (nlose > 0)
		lose_at = span * (0.05 + 0.7 * urand() / nlose);
	for (;;) {
		/* hand out work to every idle PU */
		int any_busy = 0;
		for (int i = 0; i < n; i++) {
			if (pu[i].lost || pu[i].busy)
				continue;
			int rc = plb_balancer_next(b, i, now, &pu[i].g);
			assert_true(rc == PLB_NEXT_GRANT || rc == PLB_NEXT_WAIT || rc == PLB_NEXT_DONE);
			if (rc != PLB_NEXT_GRANT)
				continue;
			assert_true(pu[i].g.units > 0);
			assert_true(pu[i].g.offset + pu[i].g.units <= W);
			pu[i].exec = pu[i].fixed + (double)pu[i].g.units / pu[i].rate * (0.8 + 0.4 * urand());
			pu[i].finish = now + pu[i].exec;
			pu[i].busy = 1;
		}
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
				struct plb_sample s = {pu[v].g.id, pu[v].exec, 0, now};
				assert_int_equal(plb_balancer_done(b, v, &s), PLB_ESTALE);
			}
			assert_int_equal(plb_balancer_next(b, v, now, &pu[v].g), PLB_ESTATE);
			lose_at = lost < nlose ? span * (0.05 + 0.7 * (lost + urand()) / nlose) : INFINITY;
			continue;
		}
		now = pu[next].finish;
		pu[next].busy = 0;
		struct plb_sample s = {pu[next].g.id, pu[next].exec, 0, now};
		assert_int_equal(plb_balancer_done(b, next, &s), 0);
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
	if (lost != nlose)
		fail_msg("%s seed %llu: %d of %d PUs lost before the run ended", policy,
			 (unsigned long long)seed, lost, nlose);
	plb_balancer_destroy(b);
	free(pu);
	free(count);
	return events;
}

/* Every policy covers the domain exactly once with no failures. */
static void test_coverage_all_policies(void **state)
{
	for (int p = 0; plb_policy_name(p); p++)
		for (uint64_t seed = 1; seed <= 5; seed++)
			run_job(plb_policy_name(p), 1 + (int)(seed * 3 % 13), 100000 + seed * 777, 0, seed);
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

/* Parameters: a number in range is taken; anything else (trailing text,
 * nothing, overflow, out of range, an unknown key) is refused, naming the
 * key, and leaves the value as it was. Policy names: every policy, in a
 * buffer of any size, always terminated. */
static void test_params_and_names(void **state)
{
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
 * second, slow enough that an error of one unit/s in their sum shows). */
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
		struct plb_sample smp = {g[i].id, t, 0, t};
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
	struct plb_sample s = {g.id + 99, 1, 0, 1};
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
				struct plb_sample s = {g.id, t, 0, now};
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

/* A lost PU's range is granted again, to someone else, in full. */
static void test_lost_range_regranted(void **state)
{
	plb_balancer_t *b;
	struct plb_params p;
	plb_params_init(&p);
	p.greedy_block = 100;
	p.min_block = 1;
	assert_int_equal(plb_balancer_create(&p, "greedy", 2, 250, &b), 0);
	struct plb_grant g0, g1, g2;
	assert_int_equal(plb_balancer_next(b, 0, 0, &g0), PLB_NEXT_GRANT);
	assert_int_equal(plb_balancer_next(b, 1, 0, &g1), PLB_NEXT_GRANT);
	assert_int_equal(g0.offset, 0);
	assert_int_equal(g1.offset, 100);
	assert_int_equal(plb_balancer_lost(b, 0, 1), 0);
	struct plb_sample s = {g1.id, 1, 0, 1};
	assert_int_equal(plb_balancer_done(b, 1, &s), 0);
	assert_int_equal(plb_balancer_next(b, 1, 1, &g2), PLB_NEXT_GRANT);
	assert_int_equal(g2.offset, 0);         /* the lost range first */
	assert_int_equal(g2.units, 100);
	struct plb_balancer_stats st;
	plb_balancer_stats(b, &st);
	assert_int_equal(st.returned_blocks, 1);
	plb_balancer_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coverage_all_policies),
		cmocka_unit_test(test_coverage_with_failures),
		cmocka_unit_test(test_params_and_names),
		cmocka_unit_test(test_static_split),
		cmocka_unit_test(test_tiny_domains),
		cmocka_unit_test(test_bad_calls),
		cmocka_unit_test(test_zero_time_blocks),
		cmocka_unit_test(test_lost_range_regranted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
