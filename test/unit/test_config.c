/* Unit tests for runtime/config/config.c: a full scenario file lands in the right
 * fields, absent sections give the defaults, every kind of mistake is
 * PLB_ECONFIG with "path:LINE:" and the key in the message (and leaves
 * nothing to free), a missing file is PLB_EIO, and very long lines work.
 * Each INI text is written to its own mkstemp file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/config/config.h"

#include "test_util.h"

/* Writes text to a new temp file; its name goes to path (32 bytes). */
static void write_tmp(const char *text, char *path)
{
	strcpy(path, "/tmp/plb_cfg_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int load_text(const char *text, struct plb__config *cfg, char *err,
		     size_t errlen, char *path)
{
	write_tmp(text, path);
	int rc = plb__config_load(path, cfg, err, errlen);
	unlink(path);
	return rc;
}

static void load_ok(const char *text, struct plb__config *cfg)
{
	char path[32], err[1024] = "";
	int rc = load_text(text, cfg, err, sizeof err, path);

	if (rc)
		fail_msg("load failed (%d): %s", rc, err);
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* Loading `text` fails with PLB_ECONFIG, the message holds "path:line: "
 * (just "path: " for line 0) and `key`, and cfg is left empty. */
static void expect_error_at(const char *text, int line, const char *key,
			    int src_line)
{
	char path[32], err[1024] = "", want[64];
	struct plb__config cfg;
	int rc = load_text(text, &cfg, err, sizeof err, path);

	if (line > 0)
		snprintf(want, sizeof want, "%s:%d: ", path, line);
	else
		snprintf(want, sizeof want, "%s: ", path);
	if (rc != PLB_ECONFIG || !strstr(err, want) || !strstr(err, key))
		fail_msg("case at test line %d: rc %d, wanted '%s' and '%s' in: %s",
			 src_line, rc, want, key, err);
	assert_true(all_zero(&cfg, sizeof cfg));
}
#define expect_error(text, line, key) expect_error_at(text, line, key, __LINE__)

/* The smallest valid file, 7 lines; error cases extend or alter it. */
#define MINI "[run]\nunits = 100\n[node A]\nemu = m\n[model m]\nclass = cpu\ncompute = poly 1\n"

static const char full[] =
	"; a scenario with every section\n"             /* 1 */
	"# comments of both kinds\n"                    /* 2 */
	"[run]\n"                                       /* 3 */
	"units = 65536            ; W\n"                /* 4 */
	"policy = hdss\n"                               /* 5 */
	"seed = 18446744073709551615\n"                 /* 6 */
	"pipeline = 2\n"                                /* 7 */
	"\n"                                            /* 8 */
	"[balancer]\n"                                  /* 9 */
	"initial_block = 2048\n"                        /* 10 */
	"hdss_samples = 8\n"                            /* 11 */
	"[network]\n"                                   /* 12 */
	"latency_us = 10\n"                             /* 13 */
	"solve_us = 300\n"                              /* 14 */
	"fail_detect_ms = 500\n"                        /* 15 */
	"[node A]\n"                                    /* 16 */
	"host = a.cluster\n"                            /* 17 */
	"emu = i7 k5200 k5200   ; two GPUs\n"           /* 18 */
	"cpu = all\n"                                   /* 19 */
	"gpu = 0 1\n"                                   /* 20 */
	"  [node B]  \n"                                /* 21 */
	"emu = k5200 i7\n"                              /* 22 */
	"[model k5200]\n"                               /* 23 */
	"class = gpu\n"                                 /* 24 */
	"compute = table 256:0.004 1024:0.009 4096:0.027 65536:0.39\n" /* 25 */
	"transfer = poly 2e-4 1.6e-6\n"                 /* 26 */
	"noise = 0.05\n"                                /* 27 */
	"change = 30:4.0 60:1.0\n"                      /* 28 */
	"fail = 45\n"                                   /* 29 */
	"[model i7]\n"                                  /* 30 */
	"compute = poly 0.001 1e-5\n"                   /* 31 */
	"class = cpu\n"                                 /* 32 */
	"noise_time = 0.25\n";                          /* 33 */

/* A full file parses into the right fields, PUs in scenario order. */
static void test_full_file(void **state)
{
	(void)state;
	struct plb__config c;
	struct plb__params def;

	load_ok(full, &c);
	assert_non_null(c.path);
	assert_near(c.units, 65536, 0);
	assert_string_equal(c.policy, "hdss");
	assert_true(c.seed == UINT64_MAX);
	assert_int_equal(c.pipeline, 2);

	plb__params_init(&def);
	assert_near(c.params.initial_block, 2048, 0);
	assert_near(c.params.hdss_samples, 8, 0);
	assert_near(c.params.min_block, def.min_block, 0);

	assert_near(c.latency_us, 10, 0);
	assert_near(c.solve_us, 300, 0);
	assert_near(c.fail_detect_ms, 500, 0);

	assert_int_equal(c.nnodes, 2);
	struct plb__node *a = &c.nodes[0], *b = &c.nodes[1];
	assert_string_equal(a->name, "A");
	assert_int_equal(a->line, 16);
	assert_string_equal(a->host, "a.cluster");
	assert_int_equal(a->host_line, 17);
	assert_int_equal(a->pus[PLB__PU_CPU].n, 1);
	assert_int_equal(a->pus[PLB__PU_CPU].v[0], -1);
	assert_int_equal(a->pus[PLB__PU_CPU].line, 19);
	assert_int_equal(a->pus[PLB__PU_CUDA].n, 2);
	assert_int_equal(a->pus[PLB__PU_CUDA].v[0], 0);
	assert_int_equal(a->pus[PLB__PU_CUDA].v[1], 1);
	assert_int_equal(a->pus[PLB__PU_CUDA].line, 20);
	assert_int_equal(a->pus[PLB__PU_EMU].n, 3);
	assert_int_equal(a->pus[PLB__PU_EMU].line, 18);
	assert_string_equal(b->name, "B");
	assert_int_equal(b->line, 21);
	assert_null(b->host);
	assert_int_equal(b->pus[PLB__PU_CPU].n, 0);
	assert_int_equal(b->pus[PLB__PU_CUDA].n, 0);
	assert_int_equal(b->pus[PLB__PU_EMU].n, 2);

	assert_int_equal(c.nmodels, 2);
	struct plb__devmodel *k = &c.models[0], *i7 = &c.models[1];
	assert_string_equal(k->name, "k5200");
	assert_int_equal(k->line, 23);
	assert_int_equal(k->cls, PLB__MODEL_GPU);
	assert_int_equal(k->compute.kind, PLB__CURVE_TABLE);
	assert_int_equal(k->compute.n, 4);
	assert_near(k->compute.x[3], 65536, 0);
	assert_near(k->compute.y[3], 0.39, 0);
	assert_int_equal(k->transfer.kind, PLB__CURVE_POLY);
	assert_int_equal(k->transfer.n, 2);
	assert_near(k->transfer.c[1], 1.6e-6, 0);
	assert_near(k->noise, 0.05, 0);
	assert_near(k->noise_time, 0, 0);      /* left out: a draw per block */
	assert_near(i7->noise_time, 0.25, 0);
	assert_int_equal(k->nchange, 2);
	assert_near(k->change_t[0], 30, 0);
	assert_near(k->change_f[0], 4, 0);
	assert_near(k->change_t[1], 60, 0);
	assert_near(k->change_f[1], 1, 0);
	assert_near(k->fail_t, 45, 0);
	assert_true(k->used);
	assert_string_equal(i7->name, "i7");
	assert_int_equal(i7->cls, PLB__MODEL_CPU);
	assert_int_equal(i7->compute.kind, PLB__CURVE_POLY);
	assert_int_equal(i7->transfer.kind, PLB__CURVE_NONE);
	assert_true(isinf(i7->fail_t));
	assert_int_equal(i7->nchange, 0);
	assert_true(i7->used);

	assert_int_equal(a->pus[PLB__PU_EMU].v[0], 1);
	assert_int_equal(a->pus[PLB__PU_EMU].v[1], 0);
	assert_int_equal(a->pus[PLB__PU_EMU].v[2], 0);
	assert_int_equal(b->pus[PLB__PU_EMU].v[0], 0);
	assert_int_equal(b->pus[PLB__PU_EMU].v[1], 1);

	static const struct { const char *name; int node, model; } want[] = {
		{"A.i7#1", 0, 1}, {"A.k5200#1", 0, 0}, {"A.k5200#2", 0, 0},
		{"B.k5200#1", 1, 0}, {"B.i7#1", 1, 1},
	};
	assert_int_equal(c.npu, 5);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(c.pus[i].name, want[i].name);
		assert_int_equal(c.pus[i].node, want[i].node);
		assert_int_equal(c.pus[i].model, want[i].model);
	}
	plb__config_fini(&c);
	assert_true(all_zero(&c, sizeof c));
}

/* Absent optional sections and keys give the documented defaults. */
static void test_defaults(void **state)
{
	(void)state;
	struct plb__config c;
	struct plb__params def;

	load_ok(MINI, &c);
	plb__params_init(&def);
	assert_near(c.units, 100, 0);
	assert_string_equal(c.policy, "plb-hac");
	assert_true(c.seed == 1);
	assert_int_equal(c.pipeline, 1);
	assert_memory_equal(&c.params, &def, sizeof def);
	assert_near(c.latency_us, 50, 0);
	assert_true(c.solve_us < 0);
	assert_near(c.fail_detect_ms, 1000, 0);
	assert_int_equal(c.nmodels, 1);
	assert_near(c.models[0].noise, 0, 0);
	assert_true(isinf(c.models[0].fail_t) && c.models[0].fail_t > 0);
	assert_int_equal(c.models[0].nchange, 0);
	assert_null(c.models[0].change_t);
	assert_int_equal(c.models[0].transfer.kind, PLB__CURVE_NONE);
	assert_null(c.nodes[0].host);
	assert_int_equal(c.npu, 1);
	assert_string_equal(c.pus[0].name, "A.m#1");
	plb__config_fini(&c);
}

/* Sections and keys come in any order: models before nodes, keys shuffled,
 * CRLF line ends, a node without emu next to one with. */
static void test_any_order(void **state)
{
	(void)state;
	struct plb__config c;

	load_ok("[model m]\r\ncompute = table 1:1 2:2\r\nclass = mic\r\n"
		"[node X]\r\nhost = *\r\ncpu = 1\r\n"
		"[node Y]\r\nemu = m m\r\n"
		"[network]\r\nsolve_us = 0\r\n"
		"[run]\r\npolicy = static\r\nunits = 7\r\n", &c);
	assert_near(c.units, 7, 0);
	assert_string_equal(c.policy, "static");
	assert_near(c.solve_us, 0, 0);
	assert_int_equal(c.models[0].cls, PLB__MODEL_MIC);
	assert_int_equal(c.nnodes, 2);
	assert_int_equal(c.nodes[0].pus[PLB__PU_EMU].n, 0);
	assert_null(c.nodes[0].pus[PLB__PU_EMU].v);
	assert_string_equal(c.nodes[0].host, "*");
	assert_int_equal(c.npu, 2);
	assert_string_equal(c.pus[0].name, "Y.m#1");
	assert_string_equal(c.pus[1].name, "Y.m#2");
	assert_int_equal(c.pus[1].node, 1);
	plb__config_fini(&c);
}

/* Unknown sections, [node] without a name, keys outside any section and
 * lines that are not key = value name their line. */
static void test_error_unknown_section(void **state)
{
	(void)state;
	expect_error(MINI "[foo]\nx = 1\n", 8, "foo");
	expect_error(MINI "[nodeB]\n", 8, "nodeB");
	expect_error(MINI "[node]\n", 8, "node NAME");
	expect_error(MINI "[model two words]\n", 8, "two words");
	expect_error(MINI "[run\n", 8, "[run");
	expect_error("units = 100\n" MINI, 1, "units");
	expect_error("[run]\nunits 100\n", 2, "units 100");
}

/* Unknown keys in each kind of section. */
static void test_error_unknown_key(void **state)
{
	(void)state;
	expect_error("[run]\nunits = 100\nbogus = 1\n", 3, "bogus");
	expect_error(MINI "[network]\nlatency = 5\n", 9, "latency");
	expect_error(MINI "[balancer]\nno_such_param = 1\n", 9, "no_such_param");
	expect_error("[run]\nunits = 100\n[node A]\nemu = m\nhosts = x\n", 5, "hosts");
	expect_error(MINI "colour = red\n", 8, "colour");
}

/* A key given twice in one section; a section or node/model given twice. */
static void test_error_duplicates(void **state)
{
	(void)state;
	expect_error("[run]\nunits = 100\nunits = 200\n", 3, "units");
	expect_error(MINI "[balancer]\ninitial_block = 8\ninitial_block = 9\n", 10, "initial_block");
	expect_error(MINI "class = gpu\n", 8, "class");
	expect_error(MINI "[node A]\n", 8, "node A");
	expect_error(MINI "[model m]\nclass = cpu\ncompute = poly 1\n", 8, "model m");
	expect_error(MINI "[run]\n", 8, "run");
	expect_error(MINI "[network]\n[network]\n", 9, "network");
}

/* Values that are not numbers, out of range, or not among the choices. */
static void test_error_bad_values(void **state)
{
	(void)state;
	static const struct { const char *line, *key; } run[] = {
		{"units = abc", "units"}, {"units = 0", "units"},
		{"units = 1.5", "units"}, {"units = -3", "units"},
		{"units = 1e300", "units"}, {"units = inf", "units"},
		{"units =", "units"}, {"seed = -1", "seed"},
		{"seed = 1x", "seed"}, {"seed = 99999999999999999999", "seed"},
		{"pipeline = 3", "pipeline"}, {"pipeline = 1.5", "pipeline"},
		{"policy = fastest", "policy"}, {"units = 100;x", "units"},
		{"units = 0x10", "units"}, {"units = 9007199254740993", "units"},
	};
	char text[512];

	for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
		/* line 2 holds the bad value */
		snprintf(text, sizeof text, "[run]\n%s\n%s\n[node A]\nemu = m\n[model m]\nclass = cpu\ncompute = poly 1\n",
			 run[i].line, strncmp(run[i].line, "units", 5) ? "units = 100" : "seed = 1");
		expect_error(text, 2, run[i].key);
	}
	static const struct { const char *line, *key; } model[] = {
		{"noise = 1", "noise"}, {"noise = -0.1", "noise"},
		{"noise_time = 0", "noise_time"}, {"noise_time = 0.0005", "noise_time"},
		{"fail = -1", "fail"}, {"fail = soon", "fail"},
		{"change = 10:0", "change"}, {"change = 10:-2", "change"},
		{"change = 20:1 10:2", "change"}, {"change = 10:1 10:2", "change"},
		{"change = -1:2", "change"}, {"change = 10", "change"},
		{"change = 10:2 x:3", "change"}, {"transfer = poly", "transfer"},
		{"class = fpga", "class"},
	};
	for (size_t i = 0; i < sizeof model / sizeof model[0]; i++) {
		snprintf(text, sizeof text, "%s%s\n", MINI, model[i].line);
		if (!strncmp(model[i].line, "class", 5))
			snprintf(text, sizeof text, "[run]\nunits = 100\n[node A]\nemu = m\n[model m]\ncompute = poly 1\n%s\n",
				 model[i].line);
		expect_error(text, 8 - !strncmp(model[i].line, "class", 5), model[i].key);
	}
	static const char *const node[] = {
		"cpu = some", "cpu = 0", "cpu = 2.5", "cpu = -1", "gpu = 0 x",
		"gpu = -1", "gpu = 1 0 1", "gpu = 0.5",
	};
	for (size_t i = 0; i < sizeof node / sizeof node[0]; i++) {
		snprintf(text, sizeof text, "[run]\nunits = 100\n[node A]\n%s\n", node[i]);
		expect_error(text, 4, node[i][0] == 'c' ? "cpu" : "gpu");
	}
	expect_error(MINI "[network]\nlatency_us = -1\n", 9, "latency_us");
	expect_error(MINI "[network]\nfail_detect_ms = x\n", 9, "fail_detect_ms");
	expect_error(MINI "[balancer]\ninitial_block = 0\n", 9, "initial_block");
	expect_error(MINI "[balancer]\nend_fraction = lots\n", 9, "end_fraction");
}

/* Broken curves: empty or malformed tables, unsorted or negative points,
 * a poly without coefficients, an unknown kind. */
static void test_error_curves(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"table", "table 256-0.004", "table 256:0.004 1024", "table 256:x",
		"table 512:1 256:2", "table 256:1 256:2", "table 256:-1",
		"table -5:1", "poly", "poly 1 two", "spline 1 2",
	};
	char text[512];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "[run]\nunits = 100\n[node A]\nemu = m\n[model m]\nclass = cpu\ncompute = %s\n",
			 bad[i]);
		expect_error(text, 7, "compute");
	}
}

/* An emu list naming an undefined model points at the emu line; a model
 * nobody uses is a warning that points at its header. */
static void test_error_model_references(void **state)
{
	(void)state;
	expect_error("[run]\nunits = 100\n[node A]\nemu = m zz m\n[model m]\nclass = cpu\ncompute = poly 1\n",
		     4, "zz");
	expect_error("[run]\nunits = 100\n[node A]\nemu = zz\n", 4, "zz");
	/* unused: a warning, not an error (a library of models) */
	struct plb__config cfg;
	load_ok(MINI "[model unused]\nclass = cpu\ncompute = poly 1\n", &cfg);
	assert_non_null(strstr(cfg.warning, ":8: [model unused]: no node's emu list names it"));
	assert_int_equal(cfg.nmodels, 2);
	plb__config_fini(&cfg);
	load_ok(MINI, &cfg);
	assert_string_equal(cfg.warning, "");
	plb__config_fini(&cfg);
	expect_error("[run]\nunits = 100\n[model m]\nclass = cpu\ncompute = poly 1\n", 0, "no PU at all");
}

/* Missing required keys name the section header's line. */
static void test_error_missing_required(void **state)
{
	(void)state;
	/* [run] units is not one: an app's job may give it (plbsim checks) */
	struct plb__config c;
	load_ok("[node A]\nemu = m\n[run]\nseed = 3\n[model m]\nclass = cpu\ncompute = poly 1\n", &c);
	assert_true(c.units == 0 && c.seed == 3 && c.keep_models == 1);
	plb__config_fini(&c);
	load_ok("[node A]\nemu = m\n[model m]\nclass = cpu\ncompute = poly 1\n", &c);
	assert_true(c.units == 0);
	plb__config_fini(&c);
	expect_error("[run]\nunits = 100\n[node A]\nemu = m\n[model m]\ncompute = poly 1\n", 5, "class");
	expect_error("[run]\nunits = 100\n[node A]\nemu = m\n[model m]\nclass = gpu\n[network]\n", 5, "compute");
	expect_error("[run]\nunits = 100\n[node A]\nemu = m\n[model m]\n", 5, "class");
}

/* A file that defines no PU at all, or a node section without one (an
 * error in plbsim, in one process and under mpirun alike). */
static void test_error_no_pu(void **state)
{
	(void)state;
	expect_error("[run]\nunits = 100\n", 0, "no PU");
	expect_error("[run]\nunits = 100\n[node A]\nhost = x\n", 3, "[node A] has no PU");
	expect_error("[run]\nunits = 100\n[node A]\ncpu = 1\n[node B]\nhost = *\n", 5,
		     "[node B] has no PU");
}

/* Real devices alone make a valid runtime config (no emulated PU list);
 * the text loader gives the same result as the file loader. */
static void test_real_devices_from_text(void **state)
{
	(void)state;
	static const char text[] = "[run]\nunits = 64\n[node a]\nhost = *\ncpu = 3\ngpu = 1 0\n";
	struct plb__config c;
	char err[512] = "";

	assert_int_equal(plb__config_load_text("mem.ini", text, strlen(text), &c, err, sizeof err), 0);
	assert_string_equal(c.path, "mem.ini");
	assert_int_equal(c.nnodes, 1);
	assert_int_equal(c.npu, 0);
	assert_int_equal(c.nodes[0].pus[PLB__PU_CPU].n, 1);
	assert_int_equal(c.nodes[0].pus[PLB__PU_CPU].v[0], 3);
	assert_int_equal(c.nodes[0].pus[PLB__PU_CUDA].n, 2);
	assert_int_equal(c.nodes[0].pus[PLB__PU_CUDA].v[0], 1);
	assert_string_equal(c.nodes[0].host, "*");
	plb__config_fini(&c);
	assert_int_equal(plb__config_load_text("mem.ini", "[run]\nunits = x\n", 17, &c, err, sizeof err),
			 PLB_ECONFIG);
	assert_non_null(strstr(err, "mem.ini:2:"));
	assert_int_equal(plb__config_load_text("empty.ini", "", 0, &c, err, sizeof err), PLB_ECONFIG);
}

/* A missing file is PLB_EIO with the path and strerror's text. */
static void test_missing_file(void **state)
{
	(void)state;
	struct plb__config c;
	char err[512] = "";
	const char *path = "/nonexistent/dir/plb.ini";

	assert_int_equal(plb__config_load(path, &c, err, sizeof err), PLB_EIO);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, strerror(ENOENT)));
	assert_true(all_zero(&c, sizeof c));
	/* no message buffer is fine too */
	assert_int_equal(plb__config_load(path, &c, NULL, 0), PLB_EIO);
}

/* A 2000-point table and a 300-name emu list on one line each load, and
 * line numbers after (and on) long lines stay right. */
static void test_long_lines(void **state)
{
	(void)state;
	enum { POINTS = 2000, NAMES = 300 };
	size_t cap = 1 << 17, n = 0;
	char *text = malloc(cap);
	struct plb__config c;

	assert_non_null(text);
	n += snprintf(text + n, cap - n, "[run]\nunits = 100\n[node A]\nemu =");
	for (int i = 0; i < NAMES; i++)
		n += snprintf(text + n, cap - n, " %s", i % 3 ? "m" : "cpu_model");
	n += snprintf(text + n, cap - n, "\n[model m]\nclass = gpu\ncompute = table");
	for (int i = 1; i <= POINTS; i++)
		n += snprintf(text + n, cap - n, " %d:%.6f", 64 * i, 0.001 * i + 1e-6 * i * i);
	n += snprintf(text + n, cap - n, "\n[model cpu_model]\nclass = cpu\ncompute = poly 0 1e-4\n");
	assert_true(n < cap - 64);

	load_ok(text, &c);
	assert_int_equal(c.models[0].compute.n, POINTS);
	assert_near(c.models[0].compute.x[POINTS - 1], 64.0 * POINTS, 0);
	assert_near(c.models[0].compute.y[POINTS - 1], 0.001 * POINTS + 1e-6 * POINTS * POINTS, 1e-9);
	assert_int_equal(c.nodes[0].pus[PLB__PU_EMU].n, NAMES);
	assert_int_equal(c.npu, NAMES);
	assert_string_equal(c.pus[0].name, "A.cpu_model#1");
	assert_string_equal(c.pus[NAMES - 1].name, "A.m#200");
	assert_int_equal(c.models[1].line, 8);
	plb__config_fini(&c);

	/* an error on the line after the long ones */
	snprintf(text + n, cap - n, "bogus = 1\n");
	expect_error(text, 11, "bogus");
	text[n] = '\0';

	/* an undefined name at the end of the long emu line: "m" -> "z" */
	char *eol = strchr(strstr(text, "emu ="), '\n');
	eol[-1] = 'z';
	expect_error(text, 4, "'z'");
	free(text);
}

/* An error message never overflows a small buffer. */
static void test_small_err_buffer(void **state)
{
	(void)state;
	char path[32], err[16];
	struct plb__config c;

	memset(err, 'x', sizeof err);
	assert_int_equal(load_text("[run]\nunits = abc\n", &c, err, 12, path), PLB_ECONFIG);
	assert_int_equal(strlen(err), 11);
	assert_int_equal(err[12], 'x');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_any_order),
		cmocka_unit_test(test_error_unknown_section),
		cmocka_unit_test(test_error_unknown_key),
		cmocka_unit_test(test_error_duplicates),
		cmocka_unit_test(test_error_bad_values),
		cmocka_unit_test(test_error_curves),
		cmocka_unit_test(test_error_model_references),
		cmocka_unit_test(test_error_missing_required),
		cmocka_unit_test(test_error_no_pu),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_real_devices_from_text),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_small_err_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
