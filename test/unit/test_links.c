/* plbsim's links and couplings ([network] link_gbps, [node] link_gbps and
 * couple), worked out by hand:
 *  - the links carry a node's flows one at a time, oldest first, at up to
 *    its link's bandwidth, the nodes' crossing flows share the master's
 *    link max-min fairly, and the two directions are apart;
 *  - the shared bytes ([run] shared_bytes) reach every node before its
 *    first block, and the bound carries them;
 *  - a run whose bytes need longer than its compute ends no sooner than
 *    its bytes take over the master's link (its bound says so), and nodes
 *    with links of their own run their transfers side by side;
 *  - plb-hac ends such a run soon after its last bytes crossed;
 *  - a coupled PU's stage runs slower exactly while its culprit computes,
 *    also with two grants on it at once;
 *  - the bound of coupled PUs is the best subset's: a PU that costs its
 *    node more than it adds is left out;
 *  - a couple rule that names nothing, or itself, is refused with file:line;
 *  - with couple_probe, plb-hac leaves out a PU that costs its node more
 *    than it adds, and only such a PU;
 *  - a scenario without the new keys reports no link_bound_s. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/bounds.h"
#include "runtime/config/config.h"
#include "runtime/sim/net.h"
#include "runtime/sim/sim.h"
#include "test/unit/test_util.h"

static void load_text(const char *text, struct plb__config *cfg)
{
	char err[1024];
	if (plb__config_load_text("t.ini", text, strlen(text), cfg, err, sizeof err))
		fail_msg("%s", err);
}

static void run(const struct plb__config *cfg, const char *policy, struct plb__sim_result *res,
		FILE *csv)
{
	char err[1024];
	struct plb__sim_opts o = {.policy = policy, .seed = 1, .solve_us = 10, .csv = csv};
	if (plb__sim_run(cfg, &o, res, err, sizeof err))
		fail_msg("%s: %s", policy, err);
	if (!res->rep.coverage_ok)
		fail_msg("%s: coverage", policy);
}

/* A run of cfg with its events as CSV: the text, to free. */
static char *run_csv(const struct plb__config *cfg, const char *policy,
		     struct plb__sim_result *res)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *csv = open_memstream(&buf, &len);
	assert_non_null(csv);
	run(cfg, policy, res, csv);
	fclose(csv);
	return buf;
}

static double rate_of(const struct plb__net *n, int f)
{
	return n->f[f].rate;
}

static void test_net_shares(void **state)
{
	(void)state;
	struct plb__net n;
	/* a 10-wide master link and two nodes 1 wide: each flow its node's */
	double nodes[3] = {1, 1, 0};
	assert_int_equal(plb__net_init(&n, 10, nodes, 3), 0);
	int a = plb__net_start(&n, 0, 5, 0, PLB__NET_DOWN, 0, 0);
	int b = plb__net_start(&n, 0, 5, 1, PLB__NET_DOWN, 1, 0);
	assert_near(rate_of(&n, a), 1, 1e-12);
	assert_near(rate_of(&n, b), 1, 1e-12);
	/* node 2's two unlimited flows cross one after the other: the first
	 * takes the 8 the master has left, the second waits */
	int c = plb__net_start(&n, 0, 8, 2, PLB__NET_DOWN, 2, 0);
	int d = plb__net_start(&n, 0, 8, 2, PLB__NET_DOWN, 2, 1);
	assert_near(rate_of(&n, c), 8, 1e-12);
	assert_near(rate_of(&n, d), 0, 1e-12);
	/* the other direction is apart */
	int e = plb__net_start(&n, 0, 1, 2, PLB__NET_UP, 2, 0);
	assert_near(rate_of(&n, e), 10, 1e-12);
	int f;
	assert_near(plb__net_next(&n, &f), 0.1, 1e-12);
	assert_int_equal(f, e);
	plb__net_advance(&n, 0.1);
	plb__net_end(&n, e);
	/* c ends at 1 s; d then takes the 8 and ends at 2 s; a and b have 3
	 * left at rate 1 */
	assert_near(plb__net_next(&n, &f), 1, 1e-12);
	assert_int_equal(f, c);
	plb__net_advance(&n, 1);
	plb__net_end(&n, c);
	assert_near(rate_of(&n, d), 8, 1e-12);
	assert_near(plb__net_next(&n, &f), 2, 1e-12);
	assert_int_equal(f, d);
	plb__net_advance(&n, 2);
	plb__net_end(&n, d);
	assert_near(plb__net_next(&n, &f), 5, 1e-12);
	plb__net_fini(&n);

	/* a 1-wide master link, node 0 at 0.2, node 1 unlimited with two
	 * flows: 0.2 and 0.8, the later flow of node 1 waiting; a flow
	 * started later on node 0 waits too, whatever its size */
	double nodes2[2] = {0.2, 0};
	assert_int_equal(plb__net_init(&n, 1, nodes2, 2), 0);
	a = plb__net_start(&n, 0, 1, 0, PLB__NET_DOWN, 0, 0);
	b = plb__net_start(&n, 0, 1, 1, PLB__NET_DOWN, 1, 0);
	c = plb__net_start(&n, 0, 1, 1, PLB__NET_DOWN, 1, 1);
	d = plb__net_start(&n, 0, 0.01, 0, PLB__NET_DOWN, 0, 1);
	assert_near(rate_of(&n, a), 0.2, 1e-12);
	assert_near(rate_of(&n, b), 0.8, 1e-12);
	assert_near(rate_of(&n, c), 0, 1e-12);
	assert_near(rate_of(&n, d), 0, 1e-12);
	assert_near(plb__net_next(&n, &f), 1.25, 1e-12);
	assert_int_equal(f, b);
	plb__net_fini(&n);
}

#define LINK_SCEN "[run]\nunits = 100000\npipeline = 2\nin_bytes = 1000\nout_bytes = 250\n" \
		  "[network]\nlink_gbps = %g\n"                                          \
		  "[node a]\nemu = f f\nlink_gbps = %g\n[node b]\nemu = f f\nlink_gbps = %g\n"  \
		  "[node c]\nemu = f f\nlink_gbps = %g\n[node d]\nemu = f f\nlink_gbps = %g\n"  \
		  "[model f]\nclass = gpu\ncompute = poly 0.0001 1e-7\n"

/* 100 MB of input through a 1 Gbit/s master link: 0.8 s, where compute
 * alone needs 12.5 ms; the bound is the link's, the run cannot beat it,
 * and a good policy keeps the link busy. Four nodes of 1 Gbit/s behind a
 * 10 Gbit/s master link carry four blocks at once: about a quarter of the
 * time one 1 Gbit/s link needs. */
static void test_link_bound(void **state)
{
	(void)state;
	char text[1024];
	struct plb__config cfg;
	struct plb__sim_result r;
	snprintf(text, sizeof text, LINK_SCEN, 1.0, 0.0, 0.0, 0.0, 0.0);
	load_text(text, &cfg);
	const char *pols[] = {"plb-hac", "greedy", "hdss"};
	for (int p = 0; p < 3; p++) {
		run(&cfg, pols[p], &r, NULL);
		assert_near(r.rep.link_bound_s, 0.8, 1e-9);
		assert_true(r.rep.lower_bound_s >= 0.8 - 1e-9);
		assert_true(r.rep.makespan_s >= r.rep.lower_bound_s);
		if (p == 1 && !(r.rep.makespan_s < 1.5 * r.rep.lower_bound_s))
			fail_msg("greedy, link-bound: makespan %.4f s against %.4f s", r.rep.makespan_s,
				 r.rep.lower_bound_s);
		plb__sim_result_fini(&r);
	}
	plb__config_fini(&cfg);
	snprintf(text, sizeof text, LINK_SCEN, 10.0, 1.0, 1.0, 1.0, 1.0);
	load_text(text, &cfg);
	run(&cfg, "greedy", &r, NULL);
	assert_near(r.rep.link_bound_s, 0.2, 1e-9);
	if (!(r.rep.makespan_s < 0.3))
		fail_msg("four 1 Gbit/s nodes: %.4f s, expected about 0.2", r.rep.makespan_s);
	plb__sim_result_fini(&r);
	plb__config_fini(&cfg);
}

/* A run the master's link bounds ends when its last bytes have crossed
 * and the block they were for is done: that block should be short.
 * test/data/link-tail.ini (link:13 of the drawn clusters) ended 1.126 of
 * its link bound with plb-hac's compute-only blocks to the end (a 3.2 s
 * block took the last bytes), 1.077 with each block held to what the
 * link leaves after it; the links' bound is the run's. */
static void test_link_tail(void **state)
{
	(void)state;
	struct plb__config cfg;
	struct plb__sim_result r;
	char err[1024];
	if (plb__config_load("test/data/link-tail.ini", &cfg, err, sizeof err))
		fail_msg("%s", err);
	run(&cfg, "plb-hac", &r, NULL);
	assert_true(r.rep.link_bound_s > 0 && r.rep.link_bound_s >= r.rep.lower_bound_s - 1e-9);
	if (!(r.rep.makespan_s < 1.10 * r.rep.lower_bound_s))
		fail_msg("link-bound: makespan %.4f s, %.4f of its bound", r.rep.makespan_s,
			 r.rep.makespan_s / r.rep.lower_bound_s);
	plb__sim_result_fini(&r);
	plb__config_fini(&cfg);
}

/* 8 MB of shared bytes to each of four nodes over a 1 Gbit/s master
 * link, with the blocks' 100 MB of input after them (0.8 s): a run needs
 * one node's copy at least, so the links' bound is 0.864 s. The shared
 * bytes go to one node after another (0.064 s each), and no block of a
 * run whose units carry no bytes of their own ends on a node before its
 * shared bytes are in; its bound holds that too. */
static void test_shared_bytes(void **state)
{
	(void)state;
	char text[1024];
	struct plb__config cfg;
	struct plb__sim_result r;
	char scen[1024];
	snprintf(scen, sizeof scen, LINK_SCEN, 1.0, 0.0, 0.0, 0.0, 0.0);
	const char *cut = strstr(scen, "[network]");
	snprintf(text, sizeof text, "%.*sshared_bytes = 8e6\n%s", (int)(cut - scen), scen, cut);
	load_text(text, &cfg);
	run(&cfg, "plb-hac", &r, NULL);
	assert_near(r.rep.link_bound_s, 0.8 + 8e6 / 125e6, 1e-9);
	assert_true(r.rep.lower_bound_s >= r.rep.link_bound_s - 1e-9);
	assert_true(r.rep.makespan_s >= r.rep.lower_bound_s);
	plb__sim_result_fini(&r);
	plb__config_fini(&cfg);

	snprintf(text, sizeof text,
		 "[run]\nunits = 1000\npolicy = greedy\nout_bytes = 1\nshared_bytes = 8e6\n"
		 "[network]\nlink_gbps = 1\n[node a]\nemu = f\n[node b]\nemu = f\n"
		 "[node c]\nemu = f\n[node d]\nemu = f\n"
		 "[model f]\nclass = gpu\ncompute = poly 0.0001 1e-7\n");
	load_text(text, &cfg);
	char *buf = run_csv(&cfg, "greedy", &r);
	/* t,pu,event,...: node k (PU k) has its shared bytes at (k + 1) x
	 * 0.064 s at the earliest, the nodes' in turn */
	double first[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		double t;
		int pu;
		if (strstr(l, ",done,") && sscanf(l, "%lf,%d", &t, &pu) == 2 && pu >= 0 && pu < 4)
			first[pu] = fmin(first[pu], t);
	}
	for (int k = 0; k < 4; k++)
		if (!(first[k] >= (k + 1) * 8e6 / 125e6 - 1e-9))
			fail_msg("node %d: a block done at %.4f s, before its shared bytes were in (%.4f s)",
				 k, first[k], (k + 1) * 8e6 / 125e6);
	/* one after another: the first node starts well before the last */
	assert_true(first[0] < first[3] - 0.1);
	assert_true(r.rep.lower_bound_s >= 8e6 / 125e6);
	assert_true(r.rep.makespan_s >= r.rep.lower_bound_s);
	free(buf);
	plb__sim_result_fini(&r);
	plb__config_fini(&cfg);
}

/* V's one block computes 1 s alone; C computes its own for 0.5 s from the
 * same moment and slows V's compute 2x meanwhile: V moves a quarter in
 * those 0.5 s, then the other 0.75 at full pace: 1.25 s. A transfer
 * rule leaves the compute alone. */
static void test_couple_stretch(void **state)
{
	(void)state;
	static const char *const rule[] = {"v compute 2 while c", "v transfer 2 while c"};
	static const double want[] = {1.25, 1.0};
	for (int k = 0; k < 2; k++) {
		char text[512];
		snprintf(text, sizeof text,
			 "[run]\nunits = 2\npolicy = greedy\n[balancer]\ngreedy_block = 1\n"
			 "[node a]\nemu = v c\ncouple = %s\n"
			 "[model v]\nclass = gpu\ncompute = poly 0 1\n"
			 "[model c]\nclass = cpu\ncompute = poly 0 0.5\n", rule[k]);
		struct plb__config cfg;
		struct plb__sim_result r;
		load_text(text, &cfg);
		char *buf = run_csv(&cfg, "greedy", &r);
		/* t,pu,event,grant,offset,units,kind,exec_s,xfer_s */
		int found = 0;
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
			double t, ex, xf;
			int pu;
			char ev[16];
			if (sscanf(l, "%lf,%d,%15[^,],%*[^,],%*[^,],%*[^,],%*[^,],%lf,%lf", &t, &pu, ev, &ex, &xf) == 5 &&
			    pu == 0 && !strcmp(ev, "done")) {
				assert_near(ex, want[k], 1e-9);
				found = 1;
			}
		}
		assert_true(found);
		free(buf);
		plb__sim_result_fini(&r);
		plb__config_fini(&cfg);
	}
}

/* A coupled PU holding two grants (pipeline = 2): a grant on its way is
 * no queued block. The second grant's job looked queued before it
 * arrived (its slot's state read as "transfer queued"), so the first
 * arrival started both transfers, and the second's compute ended with a
 * transfer that ended before it began: plb__balancer_done refused the
 * negative time and the run failed. Every block's transfer starts no
 * sooner than its grant left, and ends before its compute starts. */
static void test_couple_two_grants(void **state)
{
	(void)state;
	const char *text = "[run]\nunits = 20000\npipeline = 2\n[node a]\nemu = g c\n"
			   "couple = g compute 1.2 while c; g transfer 1.1 while c\n"
			   "[model g]\nclass = gpu\ncompute = poly 1e-4 1e-6\ntransfer = poly 1e-4 2e-6\n"
			   "[model c]\nclass = cpu\ncompute = poly 0 1e-5\n";
	struct plb__config cfg;
	load_text(text, &cfg);
	for (int p = 0; plb__policy_name(p); p++) {
		struct plb__sim_result r;
		char *buf = run_csv(&cfg, plb__policy_name(p), &r);
		int dones = 0;
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
			double t, ex, xf;
			int pu;
			char ev[16];
			if (sscanf(l, "%lf,%d,%15[^,],%*[^,],%*[^,],%*[^,],%*[^,],%lf,%lf", &t, &pu, ev, &ex,
				   &xf) == 5 && !strcmp(ev, "done")) {
				if (!(ex >= 0 && xf >= 0))
					fail_msg("%s: a block of PU %d computed %g s after a transfer of %g s",
						 plb__policy_name(p), pu, ex, xf);
				dones++;
			}
		}
		assert_true(dones >= 2);
		free(buf);
		plb__sim_result_fini(&r);
	}
	plb__config_fini(&cfg);
}

/* g alone runs 1e6 units a second; c, 1e5, halves g's pace while it
 * computes: together 0.6e6 a second, so the best plan leaves c out and
 * T_lb is g's alone (1 s for 1e6 units, with its fixed 0.5 ms a block:
 * one block). Without the rule T_lb is W / 1.1e6 and a bit. */
static void test_couple_bound(void **state)
{
	(void)state;
	const char *text = "[run]\nunits = 1000000\n[node a]\nemu = g c\ncouple = g compute 2 while c\n"
			   "[model g]\nclass = gpu\ncompute = poly 0.0005 1e-6\n"
			   "[model c]\nclass = cpu\ncompute = poly 0 1e-5\n";
	struct plb__config cfg;
	struct plb__sim_result r;
	load_text(text, &cfg);
	run(&cfg, "plb-hac", &r, NULL);
	assert_near(r.rep.lower_bound_s, 1.0005, 1e-6);
	assert_true(r.rep.makespan_s >= r.rep.lower_bound_s);
	assert_non_null(strstr(r.rep.bound_note, "best subset"));
	plb__sim_result_fini(&r);
	plb__config_fini(&cfg);
	/* c far faster and g slowed little: both together is the best */
	const char *both = "[run]\nunits = 1000000\n[node a]\nemu = g c\ncouple = g compute 1.1 while c\n"
			   "[model g]\nclass = gpu\ncompute = poly 0 1e-6\n"
			   "[model c]\nclass = cpu\ncompute = poly 0 1e-6\n";
	load_text(both, &cfg);
	run(&cfg, "greedy", &r, NULL);
	/* rates 1/1.1e-6 + 1e6 */
	assert_near(r.rep.lower_bound_s, 1e6 / (1e6 / 1.1 + 1e6), 1e-6);
	plb__sim_result_fini(&r);
	plb__config_fini(&cfg);
}

static void refused(const char *couple, const char *want)
{
	char text[512], err[1024];
	snprintf(text, sizeof text,
		 "[run]\nunits = 10\n[node a]\nemu = g c c\ncouple = %s\n[node b]\nemu = c\n"
		 "[model g]\nclass = gpu\ncompute = poly 0 1\n[model c]\nclass = cpu\ncompute = poly 0 1\n",
		 couple);
	struct plb__config cfg;
	if (plb__config_load_text("t.ini", text, strlen(text), &cfg, err, sizeof err) == 0)
		fail_msg("couple = %s was accepted", couple);
	if (!strstr(err, want))
		fail_msg("couple = %s: '%s' does not say '%s'", couple, err, want);
}

static void test_couple_refused(void **state)
{
	(void)state;
	refused("g compute 2 while x", "t.ini:5: [node a] couple: no emulated PU 'x' in this node");
	refused("g compute 0.5 while c", "t.ini:5: [node a] couple: 'g' is not a rule");
	refused("g memory 2 while c", "is not a rule");
	refused("g compute 2 when c", "is not a rule");
	refused("c#1 compute 2 while c#1", "a.c#1 would slow only while it computes itself");
	refused("g compute 2 while c#3", "no emulated PU 'c#3'");
	/* a culprit of another node is not one of this node's */
	refused("g compute 2 while b.c#1", "no emulated PU 'b.c#1'");
	/* one victim per PU a model name stands for */
	struct plb__config cfg;
	load_text("[run]\nunits = 10\n[node a]\nemu = g c c\ncouple = c compute 2 while g; g transfer 3 while c#2\n"
		  "[model g]\nclass = gpu\ncompute = poly 0 1\n[model c]\nclass = cpu\ncompute = poly 0 1\n", &cfg);
	assert_int_equal(cfg.ncouple, 3);
	assert_int_equal(cfg.couples[2].victim, 0);
	assert_int_equal(cfg.couples[2].nculprit, 1);
	assert_int_equal(cfg.couples[2].culprits[0], 2);
	plb__config_fini(&cfg);
}

#define PROBE_SCEN "[run]\nunits = 2000000\n[balancer]\ncouple_probe = %g\n[node a]\nemu = g c\n%s\n" \
			  "[model g]\nclass = gpu\ncompute = poly 0.0005 1e-6\n"                   \
			  "[model c]\nclass = cpu\ncompute = poly 0 1e-5\n"

static struct plb__sim_result probe_run(double cost, const char *couple)
{
	char text[512];
	struct plb__config cfg;
	struct plb__sim_result r;
	snprintf(text, sizeof text, PROBE_SCEN, cost, couple);
	load_text(text, &cfg);
	run(&cfg, "plb-hac", &r, NULL);
	plb__config_fini(&cfg);
	return r;
}

/* With couple_probe, plb-hac runs node a without c (a tenth of g's rate)
 * for a block of g: where c triples g's compute, g ran three times as
 * fast, c is left out and the run ends near g's own bound, less than
 * half the time it takes with c at work; where c slows g by 2% (it adds
 * 10%), or not at all, c stays. Without couple_probe, no probe. */
static void test_couple_probe(void **state)
{
	(void)state;
	struct plb__sim_result on = probe_run(0.02, "couple = g compute 3 while c");
	struct plb__sim_result off = probe_run(0, "couple = g compute 3 while c");
	assert_int_equal(on.rep.pus_left_out, 1);
	assert_int_equal(off.rep.pus_left_out, 0);
	if (!(on.rep.makespan_s < 1.02 * on.rep.lower_bound_s && on.rep.makespan_s < 0.5 * off.rep.makespan_s))
		fail_msg("c left out: %.4f s, bound %.4f s, kept: %.4f s", on.rep.makespan_s,
			 on.rep.lower_bound_s, off.rep.makespan_s);
	assert_true(on.rep.imbalance < 0.01);   /* the left-out PU's early end is no imbalance */
	plb__sim_result_fini(&on);
	plb__sim_result_fini(&off);
	static const char *const keep[] = {"couple = g compute 1.02 while c", ""};
	for (int k = 0; k < 2; k++) {
		struct plb__sim_result r = probe_run(0.02, keep[k]);
		if (r.rep.pus_left_out != 0)
			fail_msg("'%s': c left out", keep[k]);
		plb__sim_result_fini(&r);
	}
}

/* A scenario without links or couplings: no link_bound_s, the old note. */
static void test_plain_unchanged(void **state)
{
	(void)state;
	struct plb__config cfg;
	struct plb__sim_result r;
	load_text("[run]\nunits = 1000\nin_bytes = 100\n[node a]\nemu = g\n[model g]\nclass = gpu\ncompute = poly 0 1e-3\n", &cfg);
	run(&cfg, "plb-hac", &r, NULL);
	assert_true(r.rep.link_bound_s == 0);
	assert_string_equal(r.rep.bound_note, "true curves of the emulated PUs, E = F + G");
	plb__sim_result_fini(&r);
	plb__config_fini(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_shares),
		cmocka_unit_test(test_link_bound),
		cmocka_unit_test(test_link_tail),
		cmocka_unit_test(test_shared_bytes),
		cmocka_unit_test(test_couple_stretch),
		cmocka_unit_test(test_couple_two_grants),
		cmocka_unit_test(test_couple_bound),
		cmocka_unit_test(test_couple_refused),
		cmocka_unit_test(test_couple_probe),
		cmocka_unit_test(test_plain_unchanged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
