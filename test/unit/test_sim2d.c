/* plbsim's two-level case (runtime/sim/layout2d.c, plbsim --layout 2d):
 * the partition covers the product's blocks and each node's slices its
 * rectangle's element columns; no partitioner's step is below the bound;
 * the FPM one is ahead of the homogeneous split on unequal nodes and
 * within 10% of the bound; the pivots cost a node's link its rectangle's
 * half-perimeter each step; the same seed gives the same partition; each
 * node's [node] memory_mb holds with every partitioner where the matrices
 * exceed any one node's; bad sizes, a node without emulated PUs, a PU of
 * no time and matrices larger than the nodes' memory are refused, saying
 * why. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/config/config.h"
#include "runtime/sim/layout2d.h"

/* two fast nodes (a CPU-like PU and a device 4x as fast) and two slow
 * ones (two CPU-like PUs), each behind 10 Gbit/s; a unit is a block
 * update: 2 b^3 flops */
#define SCEN "[run]\nunits = 1024\n[network]\nlatency_us = 50\n" \
	"[node a]\nemu = c g\nlink_gbps = 10\n[node b]\nemu = c g\nlink_gbps = 10\n" \
	"[node c]\nemu = c c\nlink_gbps = 10\n[node d]\nemu = c c\nlink_gbps = 10\n" \
	"[model c]\nclass = cpu\ncompute = poly 1e-5 6e-5\nnoise = %g\n" \
	"[model g]\nclass = gpu\ncompute = poly 1e-4 1.5e-5\nnoise = %g\n"

static void load(struct plb__config *cfg, double noise)
{
	char text[1024], err[1024];
	snprintf(text, sizeof text, SCEN, noise, noise);
	if (plb__config_load_text("t.ini", text, strlen(text), cfg, err, sizeof err))
		fail_msg("%s", err);
}

static struct plb__sim2d_result run(const struct plb__config *cfg, enum plb__hpart_method m,
				    long n, uint64_t seed)
{
	struct plb__sim2d_opts o = {.n = n, .b = 64, .method = m, .seed = seed};
	struct plb__sim2d_result r;
	char err[512];
	if (plb__sim2d_run(cfg, &o, &r, err, sizeof err))
		fail_msg("%s: %s", plb__hpart_method_name(m), err);
	return r;
}

static void test_partition_and_bound(void **state)
{
	(void)state;
	struct plb__config cfg;
	load(&cfg, 0);
	double ratio[PLB__HPART_NMETHOD];
	for (int m = 0; m < PLB__HPART_NMETHOD; m++) {
		struct plb__sim2d_result r = run(&cfg, (enum plb__hpart_method)m, 64 * 48, 1);
		const struct plb__hpart *h = &r.part;
		assert_int_equal(r.N, 48);
		long area = 0;
		double bytes = 0, held = 0;
		for (int i = 0; i < h->q; i++) {
			long cols = 0;
			for (int j = h->off[i]; j < h->off[i + 1]; j++)
				cols += h->d[j];
			assert_int_equal(cols, (long)h->n[i] * 64);     /* element columns */
			area += (long)h->m[i] * h->n[i];
			bytes += (double)(h->m[i] + h->n[i]) * 64 * 64 * 8;
			/* node i holds its pivot column n_i steps, its row m_i */
			held += 2.0 * h->m[i] * h->n[i] * 64 * 64 * 8;
		}
		assert_int_equal(area, 48L * 48);
		assert_true(fabs(r.bytes_step - bytes) <= 1e-6 * bytes);
		assert_true(fabs(r.bytes_net - (48 * bytes - held)) <= 1e-6 * r.bytes_net);
		/* the 1-D product: A to each of 4 nodes, B and C once */
		assert_true(fabs(r.bytes_1d - 6.0 * 3072 * 3072 * 8) <= 1e-6 * r.bytes_1d);
		assert_true(r.step_s >= r.bound_s * (1 - 1e-9));
		assert_true(fabs(r.product_s - 48 * r.step_s) <= 1e-9 * r.product_s);
		ratio[m] = r.step_s / r.bound_s;
		plb__sim2d_result_fini(&r);
	}
	if (!(ratio[PLB__HPART_FPM] < ratio[PLB__HPART_HOMOG] && ratio[PLB__HPART_FPM] <= 1.10))
		fail_msg("fpm %.4f of the bound, homogeneous %.4f", ratio[PLB__HPART_FPM],
			 ratio[PLB__HPART_HOMOG]);
	plb__config_fini(&cfg);
}

/* With benchmark noise: the same seed, the same partition to the bit */
static void test_seeded(void **state)
{
	(void)state;
	struct plb__config cfg;
	load(&cfg, 0.05);
	struct plb__sim2d_result a = run(&cfg, PLB__HPART_FPM, 64 * 32, 7);
	struct plb__sim2d_result b = run(&cfg, PLB__HPART_FPM, 64 * 32, 7);
	assert_true(a.step_s == b.step_s);
	assert_int_equal(a.part.benches, b.part.benches);
	for (int k = 0; k < a.part.ndev; k++)
		assert_int_equal(a.part.d[k], b.part.d[k]);
	plb__sim2d_result_fini(&a);
	plb__sim2d_result_fini(&b);
	plb__config_fini(&cfg);
}

/* [node] memory_mb: the fast nodes a and b may hold 60 MiB each, the
 * others 200; n = 64 x 48 doubles are 216 MiB for A, B and C, more than
 * any one node: every partitioner keeps each node within its memory (its
 * rectangles and two pivot buffers), the FPM one still ahead of the
 * homogeneous split */
static void test_memory(void **state)
{
	(void)state;
	char err[512];
	struct plb__config cfg;
	const char *scen = "[run]\nunits = 1024\n[network]\nlatency_us = 50\n"
		"[node a]\nemu = c g\nlink_gbps = 10\nmemory_mb = 60\n"
		"[node b]\nemu = c g\nlink_gbps = 10\nmemory_mb = 60\n"
		"[node c]\nemu = c c\nlink_gbps = 10\nmemory_mb = 200\n"
		"[node d]\nemu = c c\nlink_gbps = 10\nmemory_mb = 200\n"
		"[model c]\nclass = cpu\ncompute = poly 1e-5 6e-5\n"
		"[model g]\nclass = gpu\ncompute = poly 1e-4 1.5e-5\n";
	if (plb__config_load_text("t.ini", scen, strlen(scen), &cfg, err, sizeof err))
		fail_msg("%s", err);
	double step[PLB__HPART_NMETHOD];
	for (int m = 0; m < PLB__HPART_NMETHOD; m++) {
		struct plb__sim2d_result r = run(&cfg, (enum plb__hpart_method)m, 64 * 48, 1);
		assert_true(r.mem_all_mb > 200);
		for (int i = 0; i < r.part.q; i++) {
			double mb = plb__hpart_node_mb(&r.part, i, 64.0 * 64 * 8 / 1048576);
			if (!(mb <= cfg.nodes[i].memory_mb))
				fail_msg("%s: node %s holds %.1f MiB, its memory_mb %g",
					 plb__hpart_method_name((enum plb__hpart_method)m), cfg.nodes[i].name, mb,
					 cfg.nodes[i].memory_mb);
			assert_true(mb <= r.mem_max_mb);
		}
		step[m] = r.step_s;
		plb__sim2d_result_fini(&r);
	}
	if (!(step[PLB__HPART_FPM] < step[PLB__HPART_HOMOG]))
		fail_msg("within memory: fpm %.4g s a step, homogeneous %.4g", step[PLB__HPART_FPM],
			 step[PLB__HPART_HOMOG]);
	plb__config_fini(&cfg);
}

static void refused(const char *text, long n, const char *want)
{
	struct plb__config cfg;
	char err[1024];
	if (plb__config_load_text("t.ini", text, strlen(text), &cfg, err, sizeof err))
		fail_msg("%s", err);
	struct plb__sim2d_opts o = {.n = n, .b = 64, .method = PLB__HPART_FPM, .seed = 1};
	struct plb__sim2d_result r;
	assert_int_not_equal(plb__sim2d_run(&cfg, &o, &r, err, sizeof err), 0);
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
	plb__config_fini(&cfg);
}

static void test_refused(void **state)
{
	(void)state;
	char text[1024];
	snprintf(text, sizeof text, SCEN, 0.0, 0.0);
	refused(text, 32, "below the block's b = 64");
	refused(text, 64, "4 nodes cannot each have a block");
	refused("[run]\nunits = 10\n[node a]\nemu = c\n[node b]\ncpu = 1\n"
		"[model c]\nclass = cpu\ncompute = poly 0 1\n", 640, "t.ini:5: node b has no emulated PU");
	refused("[run]\nunits = 10\n[node a]\nemu = c z\n[model c]\nclass = cpu\ncompute = poly 0 1\n"
		"[model z]\nclass = gpu\ncompute = poly 0 0\n", 640, "t.ini:8: [model z]: its compute takes 0 s");
	/* 3 x 3072^2 doubles are 216 MiB */
	refused("[run]\nunits = 10\n[node a]\nemu = c\nmemory_mb = 100\n[node b]\nemu = c\nmemory_mb = 100\n"
		"[model c]\nclass = cpu\ncompute = poly 0 1\n", 3072,
		"do not fit in the nodes' [node] memory_mb (200 MiB in all)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partition_and_bound),
		cmocka_unit_test(test_seeded),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
