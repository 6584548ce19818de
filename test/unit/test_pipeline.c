/* Pipeline runs in one process (master and worker threads, no mpirun):
 * plb_run_pipeline with counting kernels on a CPU team of two cores (two
 * task slots) and an emulated GPU. The pipeline, per instance i:
 *
 *   A          scratch.a = in[i] + 1; expands C to i % 4 tasks
 *   B (3)      after A: scratch.b += task + 1 (each sees scratch.a set)
 *   C (later)  after A: scratch.c += 1
 *   D          after B, C: out[i] = a * 1000000 + b * 1000 + c
 *
 * so out[i] holds the whole dataflow's outcome, and each task is counted
 * where it ran. Every scheduler; a task that fails (its slot is taken out,
 * the task runs elsewhere); an op an emulated PU has no [op] time for;
 * plb_task_expand's refusals; bad pipelines refused naming what is wrong;
 * a block run after a pipeline run on the same handle. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plb.h"
#include "runtime/core/rt.h"    /* the pipeline report: tasks by op and type */

#define N 240

struct scratch {
	_Atomic uint64_t a, b, c;
};

static uint64_t in[N], out[N];
static _Atomic int ran_a[N], ran_b[N][3], ran_c[N][4], ran_d[N];
static atomic_int order_bad, expand_refused, fail_left;
static int fail_inst = -1;      /* B fails once on this instance */

static int k_a(void *st, const struct plb_block *b)
{
	(void)st;
	struct scratch *s = b->scratch;
	uint64_t i = b->offset;
	if (b->units != 1 || !s || b->tasks != 1 || b->task != 0)
		atomic_fetch_add(&order_bad, 1);
	atomic_fetch_add(&ran_a[i], 1);
	atomic_store(&s->a, *(const uint64_t *)b->in + 1);
	/* refused: an unknown op, an op that does not wait for A, A itself */
	if (plb_task_expand(b, "nope", 1) == PLB_EINVAL && plb_task_expand(b, "A", 1) == PLB_EINVAL &&
	    plb_task_expand(b, "C", -1) == PLB_EINVAL)
		atomic_fetch_add(&expand_refused, 1);
	return plb_task_expand(b, "C", (int)(i % 4));
}

static int k_b(void *st, const struct plb_block *b)
{
	(void)st;
	struct scratch *s = b->scratch;
	uint64_t i = b->offset;
	if (!atomic_load(&s->a) || b->tasks != 3 || b->task < 0 || b->task > 2)
		atomic_fetch_add(&order_bad, 1);
	int one = 1;
	if ((int)i == fail_inst && atomic_compare_exchange_strong(&fail_left, &one, 0))
		return PLB_EDEVICE;
	atomic_fetch_add(&ran_b[i][b->task], 1);
	atomic_fetch_add(&s->b, (uint64_t)b->task + 1);
	/* a task of B may not expand C (C does not wait for B) */
	if (plb_task_expand(b, "C", 1) != PLB_EINVAL)
		atomic_fetch_add(&order_bad, 1);
	return 0;
}

static int k_c(void *st, const struct plb_block *b)
{
	(void)st;
	struct scratch *s = b->scratch;
	uint64_t i = b->offset;
	if (!atomic_load(&s->a) || b->tasks != (int)(i % 4) || b->task >= b->tasks)
		atomic_fetch_add(&order_bad, 1);
	atomic_fetch_add(&ran_c[i][b->task], 1);
	atomic_fetch_add(&s->c, 1);
	return 0;
}

static int k_d(void *st, const struct plb_block *b)
{
	(void)st;
	struct scratch *s = b->scratch;
	uint64_t i = b->offset;
	atomic_fetch_add(&ran_d[i], 1);
	*(uint64_t *)b->out = atomic_load(&s->a) * 1000000 + atomic_load(&s->b) * 1000 + atomic_load(&s->c);
	return 0;
}

/* a block run's kernel: out = 3 in + 1 */
static int k_sq(void *st, const struct plb_block *b)
{
	(void)st;
	for (uint64_t u = 0; u < b->units; u++)
		((uint64_t *)b->out)[u] = 3 * ((const uint64_t *)b->in)[u] + 1;
	return 0;
}

static const struct plb_kernel KA = {PLB_INIT, .name = "ka", .cpu = {.run = k_a}};
static const struct plb_kernel KB = {PLB_INIT, .name = "kb", .cpu = {.run = k_b}};
static const struct plb_kernel KC = {PLB_INIT, .name = "kc", .cpu = {.run = k_c}};
static const struct plb_kernel KD = {PLB_INIT, .name = "kd", .cpu = {.run = k_d}};
static const struct plb_kernel KSQ = {PLB_INIT, .name = "sq", .cpu = {.run = k_sq}};

static const struct plb_op OPS[] = {
	{PLB_INIT, .name = "A", .kernel = "ka"},
	{PLB_INIT, .name = "B", .kernel = "kb", .after = {"A"}, .tasks = 3},
	{PLB_INIT, .name = "C", .kernel = "kc", .after = {"A"}, .tasks = PLB_TASKS_LATER},
	{PLB_INIT, .name = "D", .kernel = "kd", .after = {"B", "C"}},
};

/* a CPU team of 2 cores and an emulated GPU; C has no GPU time, so the
 * GPU never runs it; B's times make the GPU the better place for it.
 * run_keys: more [run] lines (a test's variant) */
static const char *run_keys = "";
static const char *const CONFIG =
	"[node a]\ncpu = 2\nemu = g\n"
	"[model g]\nclass = gpu\ncompute = poly 0 0.0002\n"
	"[op B]\ncpu = 2\ngpu = 0.5\n"
	"[op C]\ncpu = 1\n";

static char cfg_path[64];

static const char *models_path;        /* plb_options.models of the next start */

static plb_t *start(void)
{
	snprintf(cfg_path, sizeof cfg_path, "/tmp/plb-pipe-XXXXXX");
	int fd = mkstemp(cfg_path);
	assert_true(fd >= 0);
	char text[512];
	int len = snprintf(text, sizeof text, "[run]\nunits = 100\n%s%s", run_keys, CONFIG);
	assert_int_equal(write(fd, text, (size_t)len), (ssize_t)len);
	close(fd);
	static const struct plb_kernel *const ks[] = {&KA, &KB, &KC, &KD, &KSQ};
	struct plb_options o = {PLB_INIT, .config = cfg_path, .kernels = ks, .nkernels = 5, .quiet = 1,
				.models = models_path};
	int argc = 1;
	char *args[] = {"test_pipeline", NULL}, **argv = args;
	plb_t *p = NULL;
	if (plb_init(&argc, &argv, &o, &p))
		fail_msg("plb_init: %s", plb_errmsg(p));
	unlink(cfg_path);
	return p;
}

static struct plb_pipeline pipeline(const char *sched)
{
	return (struct plb_pipeline){PLB_INIT, .ops = OPS, .nops = 4, .instances = N,
				     .in = in, .in_unit = sizeof *in, .out = out,
				     .out_unit = sizeof *out, .scratch_bytes = sizeof(struct scratch),
				     .scheduler = sched, .window = 6};
}

static void reset(void)
{
	memset(out, 0, sizeof out);
	for (int i = 0; i < N; i++) {
		in[i] = (uint64_t)i * 7 + 3;
		atomic_store(&ran_a[i], 0);
		atomic_store(&ran_d[i], 0);
		for (int k = 0; k < 3; k++)
			atomic_store(&ran_b[i][k], 0);
		for (int k = 0; k < 4; k++)
			atomic_store(&ran_c[i][k], 0);
	}
	atomic_store(&order_bad, 0);
	atomic_store(&expand_refused, 0);
}

/* Every task ran once, after those it waits for; every output in place. */
static void check_outputs(plb_t *p)
{
	long tasks = 0;
	for (int i = 0; i < N; i++) {
		uint64_t want = (in[i] + 1) * 1000000 + 6 * 1000 + (uint64_t)(i % 4);
		if (out[i] != want)
			fail_msg("instance %d: out %llu, want %llu", i, (unsigned long long)out[i],
				 (unsigned long long)want);
		assert_int_equal(atomic_load(&ran_a[i]), 1);
		assert_int_equal(atomic_load(&ran_d[i]), 1);
		for (int k = 0; k < 3; k++)
			assert_int_equal(atomic_load(&ran_b[i][k]), 1);
		for (int k = 0; k < 4; k++)
			assert_int_equal(atomic_load(&ran_c[i][k]), k < i % 4);
		tasks += 5 + i % 4;
	}
	assert_int_equal(atomic_load(&order_bad), 0);
	assert_int_equal(atomic_load(&expand_refused), N);
	struct plb_result r = {PLB_INIT};
	assert_int_equal(plb_result(p, &r), 0);
	assert_int_equal(r.units, N);
	assert_true(r.coverage_ok);
	assert_int_equal(r.blocks, tasks);
	assert_int_equal(r.npu, 3);     /* two cores of the team, the emulated GPU */
	assert_true(r.makespan_s > 0);
}

static void every_scheduler(void)
{
	plb_t *p = start();
	static const char *const sched[] = {"fcfs", "heft", "padas", "pams", NULL};
	for (int s = 0; s <= 4; s++) {
		reset();
		struct plb_pipeline pl = pipeline(sched[s]);
		if (plb_run_pipeline(p, &pl))
			fail_msg("%s: %s", sched[s] ? sched[s] : "default", plb_errmsg(p));
		check_outputs(p);
		/* the emulated GPU has no [op C] time: it never runs C */
		const struct plb__pipe_report *rep = p->pipe_last;
		assert_int_equal(rep->ran[2][1], 0);
		long c = 0, all = 0;
		for (int y = 0; y < 4; y++)
			c += rep->ran[2][y];
		for (int i = 0; i < N; i++)
			all += i % 4;
		assert_int_equal(c, all);
		/* the report, as text and JSON */
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_int_equal(plb_report(p, f, 1), 0);
		fclose(f);
		cJSON *o = cJSON_Parse(buf);
		assert_non_null(o);
		assert_string_equal(cJSON_GetObjectItem(o, "scheduler")->valuestring,
				    sched[s] ? sched[s] : "pams");
		assert_int_equal(cJSON_GetObjectItem(o, "instances_done")->valuedouble, N);
		cJSON_Delete(o);
		free(buf);
	}
	assert_int_equal(plb_finalize(p), 0);
}

static void test_every_scheduler(void **state)
{
	(void)state;
	every_scheduler();
}

/* The same with copies: instances' input and output travel in the
 * messages, as between ranks, not in place. */
static void test_every_scheduler_copied(void **state)
{
	(void)state;
	run_keys = "in_place = 0\n";
	every_scheduler();
	run_keys = "";
}

/* Two tasks a slot ([run] pipeline = 2): a team member queues its next. */
static void test_every_scheduler_two_a_slot(void **state)
{
	(void)state;
	run_keys = "pipeline = 2\n";
	every_scheduler();
	run_keys = "";
}

/* A task that fails: its slot is out, the task runs on another slot. */
static void test_failed_task(void **state)
{
	(void)state;
	plb_t *p = start();
	reset();
	fail_inst = 17;
	atomic_store(&fail_left, 1);
	struct plb_pipeline pl = pipeline("fcfs");
	if (plb_run_pipeline(p, &pl))
		fail_msg("%s", plb_errmsg(p));
	fail_inst = -1;
	assert_int_equal(atomic_load(&fail_left), 0);
	check_outputs(p);
	assert_int_equal(plb_finalize(p), 0);
}

/* A block run after a pipeline run, and a pipeline run after it. */
static void test_block_run_between(void **state)
{
	(void)state;
	plb_t *p = start();
	reset();
	struct plb_pipeline pl = pipeline("pams");
	assert_int_equal(plb_run_pipeline(p, &pl), 0);
	check_outputs(p);
	uint64_t bo[N];
	struct plb_job job = {PLB_INIT, .kernel = "sq", .units = N, .in = in, .in_unit = sizeof *in,
			      .out = bo, .out_unit = sizeof *bo};
	if (plb_run(p, &job))
		fail_msg("plb_run: %s", plb_errmsg(p));
	for (int i = 0; i < N; i++)
		assert_int_equal(bo[i], 3 * in[i] + 1);
	struct plb_result r = {PLB_INIT};
	assert_int_equal(plb_result(p, &r), 0);
	assert_int_equal(r.units, N);
	reset();
	assert_int_equal(plb_run_pipeline(p, &pl), 0);
	check_outputs(p);
	assert_int_equal(plb_finalize(p), 0);
}

/* Bad pipelines are refused before anything runs, naming what is wrong. */
static void test_bad_pipelines(void **state)
{
	(void)state;
	plb_t *p = start();
	struct plb_op late[] = {{PLB_INIT, .name = "A", .kernel = "ka", .after = {"B"}},
				{PLB_INIT, .name = "B", .kernel = "kb"}};
	struct plb_op twice[] = {{PLB_INIT, .name = "A", .kernel = "ka"},
				 {PLB_INIT, .name = "A", .kernel = "kb"}};
	struct plb_op nokernel[] = {{PLB_INIT, .name = "A", .kernel = "none"}};
	struct plb_op nostamp[] = {{.name = "A", .kernel = "ka"}};
	struct {
		const struct plb_op *ops;
		int nops;
		const char *sched, *says;
	} bad[] = {
		{late, 2, NULL, "'B', which is not an op above it"},
		{twice, 2, NULL, "two ops are named 'A'"},
		{nokernel, 1, NULL, "kernel 'none' is not in plb_options.kernels"},
		{nostamp, 1, NULL, "struct plb_op"},
		{OPS, 0, NULL, "accepted: 1 to 64"},
		{OPS, 4, "fifo", "scheduler 'fifo'; accepted: fcfs | heft | padas | pams"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		struct plb_pipeline pl = pipeline(bad[k].sched);
		pl.ops = bad[k].ops;
		pl.nops = bad[k].nops;
		assert_true(plb_run_pipeline(p, &pl) < 0);
		if (!strstr(plb_errmsg(p), bad[k].says))
			fail_msg("case %zu: '%s' does not say '%s'", k, plb_errmsg(p), bad[k].says);
	}
	/* and the handle still runs a good one */
	reset();
	struct plb_pipeline pl = pipeline(NULL);
	assert_int_equal(plb_run_pipeline(p, &pl), 0);
	check_outputs(p);
	assert_int_equal(plb_finalize(p), 0);
}

/* Each op's task times are kept as its PUs' samples (one unit a task,
 * signature "op=NAME"), written to the models file and read back by the
 * next process, whose next run starts its schedulers from them. */
static void test_models_kept(void **state)
{
	(void)state;
	char path[] = "/tmp/plb-pipe-models-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);           /* plb writes it at plb_finalize */
	models_path = path;
	plb_t *p = start();
	reset();
	struct plb_pipeline pl = pipeline("heft");
	assert_int_equal(plb_run_pipeline(p, &pl), 0);
	check_outputs(p);
	double b_cpu = plb__kept_task_mean(p, "kb", sizeof *in, sizeof *out, "B", 0);
	assert_true(b_cpu > 0);
	assert_int_equal(plb_finalize(p), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[512];
	int recs = 0;
	while (fgets(line, sizeof line, f))
		recs += strstr(line, "kernel=kb ") && strstr(line, "sig=op=B") != NULL;
	fclose(f);
	assert_true(recs >= 1);
	/* the next process reads them: the same means */
	p = start();
	assert_true(fabs(plb__kept_task_mean(p, "kb", sizeof *in, sizeof *out, "B", 0) - b_cpu) <=
		    1e-9 * b_cpu);
	assert_true(plb__kept_task_mean(p, "kb", sizeof *in, sizeof *out, "nope", 0) == 0);
	reset();
	assert_int_equal(plb_run_pipeline(p, &pl), 0);
	check_outputs(p);
	assert_int_equal(plb_finalize(p), 0);
	models_path = NULL;
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_scheduler),
		cmocka_unit_test(test_every_scheduler_copied),
		cmocka_unit_test(test_every_scheduler_two_a_slot),
		cmocka_unit_test(test_failed_task),
		cmocka_unit_test(test_block_run_between),
		cmocka_unit_test(test_bad_pipelines),
		cmocka_unit_test(test_models_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
