/* The one loop that drives the balancer (balancer/driver.c), which the
 * runtime's master and plbsim both call: plbsim's balancer calls are
 * exactly those of its events replayed through the driver as the master
 * handles a batch of one message (so plbsim asks the balancer nothing the
 * master would not); a batch is answered in the order its PUs reported,
 * then the parked PUs in PU order; the pipeline depth, parking, lost and
 * finished PUs and the busy count hold. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/driver.h"
#include "balancer/params.h"
#include "runtime/config/config.h"
#include "runtime/sim/sim.h"

struct rec {
	struct plb__driver_call *c;
	size_t n, cap;
};

static void record(void *ctx, const struct plb__driver_call *c)
{
	struct rec *r = ctx;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 1024;
		r->c = realloc(r->c, r->cap * sizeof *r->c);
		assert_non_null(r->c);
	}
	r->c[r->n++] = *c;
}

static int grant_ok(void *ctx, int pu, const struct plb__grant *g)
{
	(void)ctx, (void)pu, (void)g;
	return 0;
}

/* Two calls are the same call with the same answer, to the bit. */
static int same_call(const struct plb__driver_call *a, const struct plb__driver_call *b)
{
	if (a->op != b->op || a->pu != b->pu || a->now != b->now || a->rc != b->rc)
		return 0;
	if (a->op == PLB__DRIVE_NEXT && a->rc == PLB__NEXT_GRANT)
		return a->g.id == b->g.id && a->g.offset == b->g.offset && a->g.units == b->g.units &&
		       a->g.kind == b->g.kind && a->g.predicted_s == b->g.predicted_s;
	if (a->op == PLB__DRIVE_DONE)
		return !memcmp(&a->s, &b->s, sizeof a->s);
	return 1;
}

static const char *op_name(enum plb__driver_op op)
{
	static const char *const n[] = {"next", "done", "lost", "idle_waits"};
	return n[op];
}

/* plbsim's run of cfg under policy, recorded; then its events (a block
 * done, a PU lost, a wake) replayed through a driver of its own over a
 * fresh balancer: every call the same. */
static int replay(const struct plb__config *cp, const char *policy)
{
	const struct plb__config cfg = *cp;
	const char *path = cfg.path;
	char err[1024];
	struct rec sim = {0}, rep = {0};
	struct plb__sim_opts o = {.policy = policy, .seed = cfg.seed, .solve_us = 100,
				  .drive_log = record, .ctx = &sim};
	struct plb__sim_result res;
	if (plb__sim_run(&cfg, &o, &res, err, sizeof err))
		fail_msg("%s %s: %s", path, policy, err);
	int lost = res.rep.pus_lost;
	plb__sim_result_fini(&res);

	plb__balancer_t *b;
	struct plb__driver d;
	assert_int_equal(plb__balancer_create(&cfg.params, policy, cfg.npu, (uint64_t)cfg.units, &b), 0);
	assert_int_equal(plb__driver_init(&d, b, cfg.npu, cfg.pipeline, grant_ok, NULL, NULL), 0);
	d.log = record;
	d.log_ctx = &rep;
	/* the start: every PU asked at time 0, in PU order */
	for (int i = 0; i < cfg.npu; i++)
		assert_int_equal(plb__driver_poll(&d, i, 0), 0);
	/* then one event at a time, each answered as the master answers a
	 * batch of one message: a done or a lost PU opens an event; an
	 * idle_waits call after its event's own is a wake */
	int idle_seen = 1, events = 0, wakes = 0;
	for (size_t k = 0; k < sim.n; k++) {
		const struct plb__driver_call *c = &sim.c[k];
		int rc = 0;
		if (c->op == PLB__DRIVE_DONE) {
			rc = plb__driver_done(&d, c->pu, &c->s);
			assert_true(rc == 0 || rc == PLB_ESTALE);
			rc = plb__driver_answer(&d, c->s.finish);
		} else if (c->op == PLB__DRIVE_LOST) {
			rc = plb__driver_lost(&d, c->pu, c->now);
			if (!rc)
				rc = plb__driver_answer(&d, c->now);
		} else if (c->op == PLB__DRIVE_IDLE && idle_seen) {
			rc = plb__driver_parked(&d, c->now);
			wakes++;
		} else {
			idle_seen |= c->op == PLB__DRIVE_IDLE;
			continue;
		}
		assert_int_equal(rc, 0);
		idle_seen = c->op == PLB__DRIVE_IDLE;
		events++;
	}
	size_t n = sim.n < rep.n ? sim.n : rep.n;
	for (size_t k = 0; k < n; k++)
		if (!same_call(&sim.c[k], &rep.c[k]))
			fail_msg("%s %s: call %zu of %zu differs: plbsim %s pu %d at %.17g -> %d, replay %s pu %d at %.17g -> %d",
				 path, policy, k, sim.n, op_name(sim.c[k].op), sim.c[k].pu, sim.c[k].now,
				 sim.c[k].rc, op_name(rep.c[k].op), rep.c[k].pu, rep.c[k].now, rep.c[k].rc);
	if (sim.n != rep.n)
		fail_msg("%s %s: plbsim made %zu calls, the replay %zu", path, policy, sim.n, rep.n);
	/* the case is there: events, and every kind of call */
	assert_true(events > 3);
	int seen[4] = {0};
	for (size_t k = 0; k < sim.n; k++)
		seen[sim.c[k].op] = 1;
	assert_true(seen[PLB__DRIVE_NEXT] && seen[PLB__DRIVE_DONE] && seen[PLB__DRIVE_IDLE]);
	assert_int_equal(seen[PLB__DRIVE_LOST], lost > 0);
	print_message("%s %s: %zu calls, %d events (%d wakes), the same\n", path, policy, sim.n, events,
		      wakes);
	plb__driver_fini(&d);
	plb__balancer_destroy(b);
	free(sim.c);
	free(rep.c);
	return lost;
}

static void test_plbsim_is_the_driver(void **state)
{
	(void)state;
	/* every policy; late blocks run again at a wake (late-wake.ini),
	 * PUs that die, one whose kernel fails, two grants a PU
	 * (failures.ini as below) */
	const char *paths[] = {"test/data/failures.ini", "test/data/late-wake.ini", "test/data/small.ini",
			       "config/sim/mm-3.ini"};
	for (size_t s = 0; s < sizeof paths / sizeof *paths; s++) {
		struct plb__config cfg;
		char err[1024];
		if (plb__config_load(paths[s], &cfg, err, sizeof err))
			fail_msg("%s", err);
		int losses = 0;
		if (s == 0) {
			/* failures.ini's PUs run about 1 s: two die, one
			 * fails its fourth block's kernel */
			cfg.models[1].fail_t = 0.2;
			cfg.models[5].fail_t = 0.5;
			cfg.models[3].fail_block = 4;
			cfg.pipeline = 2;
		}
		for (int p = 0; plb__policy_name(p); p++)
			losses += replay(&cfg, plb__policy_name(p)) > 0;
		/* every policy but static (one block to each, then one
		 * split) loses PUs there */
		if (s == 0 && losses < 4)
			fail_msg("%s: PUs lost under %d policies", paths[s], losses);
		plb__config_fini(&cfg);
	}
}

/* A driver over a greedy balancer of npu PUs, W units, blocks of one unit,
 * that records its calls and its grants. */
struct bed {
	plb__balancer_t *b;
	struct plb__driver d;
	struct rec calls;
	struct plb__grant g[64];
	int ng, waits;
};

static int bed_grant(void *ctx, int pu, const struct plb__grant *g)
{
	struct bed *t = ctx;
	assert_true(t->ng < 64);
	assert_int_equal(g->pu, pu);
	t->g[t->ng++] = *g;
	return 0;
}

static void bed_wait(void *ctx, int pu)
{
	(void)pu;
	((struct bed *)ctx)->waits++;
}

static void bed_open(struct bed *t, int npu, uint64_t W, int pipeline)
{
	struct plb__params prm;
	char err[256];
	memset(t, 0, sizeof *t);
	plb__params_init(&prm);
	assert_int_equal(plb__params_set(&prm, "greedy_block", "1", err, sizeof err), 0);
	assert_int_equal(plb__balancer_create(&prm, "greedy", npu, W, &t->b), 0);
	assert_int_equal(plb__driver_init(&t->d, t->b, npu, pipeline, bed_grant, bed_wait, t), 0);
	t->d.log = record;
	t->d.log_ctx = &t->calls;
}

static void bed_close(struct bed *t)
{
	plb__driver_fini(&t->d);
	plb__balancer_destroy(t->b);
	free(t->calls.c);
}

/* The grant PU pu holds (its first one out). */
static const struct plb__grant *held(struct bed *t, int pu, double now, struct plb__block_done *s)
{
	for (int k = t->ng - 1; k >= 0; k--)
		if (t->g[k].pu == pu) {
			*s = (struct plb__block_done){.grant_id = t->g[k].id, .exec_s = 0.01, .finish = now};
			return &t->g[k];
		}
	fail_msg("PU %d holds no grant", pu);
	return NULL;
}

/* A batch: PUs 2 and 0 report, in that order; the answer asks 2, then 0,
 * then (the pool being empty) the balancer whether the waiting PUs
 * would wait, then each parked PU in PU order. Depth 2: each PU holds
 * two grants after its first ask. */
static void test_batch_order(void **state)
{
	(void)state;
	struct bed t;
	bed_open(&t, 4, 9, 2);
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb__driver_poll(&t.d, i, 0), 0);
	/* 8 grants: two each, asked in PU order */
	assert_int_equal(t.ng, 8);
	for (int k = 0; k < 8; k++)
		assert_int_equal(t.g[k].pu, k / 2);
	for (int i = 0; i < 4; i++)
		assert_int_equal(t.d.pu[i].nout, 2);
	assert_int_equal(t.d.busy, 4);
	struct plb__block_done s;
	size_t mark = t.calls.n;
	held(&t, 2, 1, &s);
	assert_int_equal(plb__driver_done(&t.d, 2, &s), 0);
	held(&t, 0, 1, &s);
	assert_int_equal(plb__driver_done(&t.d, 0, &s), 0);
	assert_int_equal(t.d.pu[2].nout, 1);
	assert_int_equal(plb__driver_answer(&t.d, 1), 0);
	/* done 2, done 0, next 2 (the last unit), next 0 (waits), then
	 * idle_waits, then the parked PU 0 asked again if it may get one */
	const struct plb__driver_call *c = &t.calls.c[mark];
	assert_true(t.calls.n - mark >= 5);
	assert_int_equal(c[0].op, PLB__DRIVE_DONE);
	assert_int_equal(c[0].pu, 2);
	assert_int_equal(c[1].op, PLB__DRIVE_DONE);
	assert_int_equal(c[1].pu, 0);
	assert_int_equal(c[2].op, PLB__DRIVE_NEXT);
	assert_int_equal(c[2].pu, 2);
	assert_int_equal(c[2].rc, PLB__NEXT_GRANT);
	assert_int_equal(c[3].op, PLB__DRIVE_NEXT);
	assert_int_equal(c[3].pu, 0);
	assert_int_equal(c[3].rc, PLB__NEXT_WAIT);
	assert_int_equal(c[4].op, PLB__DRIVE_IDLE);
	assert_true(plb__driver_is_parked(&t.d, 0));
	assert_false(plb__driver_is_parked(&t.d, 2));
	assert_int_equal(t.waits, c[4].rc ? 1 : 2);
	/* every parked PU asked once more where the balancer could not say
	 * each would wait; none where it could */
	for (size_t k = mark + 5; k < t.calls.n; k++) {
		assert_int_equal(t.calls.c[k].op, PLB__DRIVE_NEXT);
		assert_int_equal(t.calls.c[k].pu, 0);
	}
	assert_int_equal(t.calls.n - mark, c[4].rc ? 5u : 6u);
	bed_close(&t);
}

/* A lost PU is asked no more, even parked; its grants count for nothing
 * in the busy count; a PU told the job is done is asked no more; with
 * every PU lost nothing is busy. */
static void test_lost_and_done(void **state)
{
	(void)state;
	struct bed t;
	bed_open(&t, 3, 4, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb__driver_poll(&t.d, i, 0), 0);
	assert_int_equal(t.d.busy, 3);
	assert_int_equal(plb__driver_lost(&t.d, 1, 0.5), 0);
	assert_int_equal(t.d.busy, 2);
	assert_int_equal(t.d.pu[1].nout, 0);
	/* lost twice: one call to the balancer */
	size_t mark = t.calls.n;
	assert_int_equal(plb__driver_lost(&t.d, 1, 0.6), 0);
	assert_int_equal(t.calls.n, mark);
	assert_int_equal(plb__driver_poll(&t.d, 1, 0.7), 0);
	assert_int_equal(t.calls.n, mark);
	/* PU 0 and 2 finish the four units (unit 1 came back to the pool) */
	struct plb__block_done s;
	double now = 1;
	while (!plb__balancer_finished(t.b)) {
		for (int i = 0; i < 3; i += 2) {
			if (!t.d.pu[i].nout)
				continue;
			held(&t, i, now, &s);
			int rc = plb__driver_done(&t.d, i, &s);
			assert_true(rc == 0 || rc == PLB_ESTALE);
		}
		assert_int_equal(plb__driver_answer(&t.d, now), 0);
		now += 1;
		assert_true(now < 20);
	}
	for (size_t k = mark; k < t.calls.n; k++)
		assert_true(t.calls.c[k].pu != 1);
	/* after the end, every live PU was told so and is asked no more */
	assert_true(t.d.pu[0].finished && t.d.pu[2].finished);
	mark = t.calls.n;
	assert_int_equal(plb__driver_poll(&t.d, 0, now), 0);
	assert_int_equal(t.calls.n, mark);
	assert_int_equal(t.d.busy, 0);
	bed_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plbsim_is_the_driver),
		cmocka_unit_test(test_batch_order),
		cmocka_unit_test(test_lost_and_done),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
