/* The runtime in one process (master and worker threads, no mpirun), with a
 * kernel that counts what it is asked to do, so each test checks every
 * unit was computed exactly once and came back to its place in job.out:
 *  - a CPU team of two cores cuts each block among both members;
 *  - a kernel that fails on one block: that PU is taken out and its block
 *    is done by another, nothing lost or repeated;
 *  - several runs in a row, each one checked;
 *  - a grant corrupted between the balancer and the PUs (a hole and an
 *    overlap the balancer's own counts do not see): plb_run fails, naming
 *    the coverage check. The corruption comes from the linker (--wrap
 *    plb_balancer_next, see the Makefile): the runtime itself is unchanged. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plb.h"
#include "balancer/balancer.h"

#define W 60013         /* prime: some block has an odd size */

static _Atomic int hits[W];
static atomic_long calls;
static long long fail_unit = -1;        /* the kernel fails once on a block holding it */
static atomic_int failed;
static int team_cores = -1;             /* cores of the last cpu PU opened */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t seen[64];
static int nseen;

static int k_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	if (pu->cls == PLB_DEV_CPU && pu->cores > 1)
		team_cores = pu->cores;
	*st = NULL;
	return 0;
}

/* out[u] = 3 in[u] + 1; each unit counted; the threads that ran recorded */
static int k_run(void *st, const struct plb_block *b)
{
	atomic_fetch_add(&calls, 1);
	if (fail_unit >= (long long)b->offset && fail_unit < (long long)(b->offset + b->units) &&
	    !atomic_exchange(&failed, 1))
		return PLB_EDEVICE;
	const uint64_t *in = b->in;
	uint64_t *out = b->out;
	for (uint64_t i = 0; i < b->units; i++) {
		out[i] = 3 * in[i] + 1;
		if (b->offset + i < W)
			atomic_fetch_add(&hits[b->offset + i], 1);
	}
	pthread_t me = pthread_self();
	pthread_mutex_lock(&mu);
	int k = 0;
	while (k < nseen && !pthread_equal(seen[k], me))
		k++;
	if (k == nseen && nseen < 64)
		seen[nseen++] = me;
	pthread_mutex_unlock(&mu);
	return 0;
}

static const struct plb_kernel kernel = {
	.name = "count",
	.cpu = {.init = k_init, .run = k_run},
};

/* --wrap=plb_balancer_next: the real one, then, when corrupt_grant is the
 * grant's number (counted from 0 in a run), one unit later. */
static long corrupt_grant = -1, ngrants;
int __real_plb_balancer_next(plb_balancer_t *b, int pu, double now, struct plb_grant *g);
int __wrap_plb_balancer_next(plb_balancer_t *b, int pu, double now, struct plb_grant *g)
{
	int rc = __real_plb_balancer_next(b, pu, now, g);
	if (rc == PLB_NEXT_GRANT && ngrants++ == corrupt_grant && g->offset + g->units < W)
		g->offset++;
	return rc;
}

static char cfg_path[64];

static void write_config(const char *text)
{
	strcpy(cfg_path, "/tmp/plb-test-runtime-XXXXXX");
	int fd = mkstemp(cfg_path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static plb_t *start(const char *config_text)
{
	static const struct plb_kernel *const ks[] = {&kernel};
	write_config(config_text);
	struct plb_options o = {.config = cfg_path, .kernels = ks, .nkernels = 1, .quiet = 1};
	int argc = 1;
	char *args[] = {"test_runtime", NULL}, **argv = args;
	plb_t *p = NULL;
	int rc = plb_init(&argc, &argv, &o, &p);
	if (rc) {
		fail_msg("plb_init: %s", plb_errmsg(p));
	}
	assert_true(plb_is_master(p));
	return p;
}

static void stop(plb_t *p)
{
	assert_int_equal(plb_finalize(p), 0);
	unlink(cfg_path);
}

static uint64_t in[W], out[W];

/* One run over W units; rc of plb_run. Counters reset first. */
static int run_once(plb_t *p)
{
	for (uint64_t u = 0; u < W; u++) {
		in[u] = u * 7 + 5;
		out[u] = 0;
		atomic_store(&hits[u], 0);
	}
	ngrants = 0;
	struct plb_job job = {.kernel = "count", .units = W, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8};
	return plb_run(p, &job);
}

/* Every unit computed once and in its place (with re-runs off: a re-run
 * computes a late block's units again, though they are merged once). */
static void check_exactly_once(const char *what)
{
	for (uint64_t u = 0; u < W; u++) {
		if (atomic_load(&hits[u]) != 1)
			fail_msg("%s: unit %llu computed %d times", what, (unsigned long long)u,
				 atomic_load(&hits[u]));
		if (out[u] != 3 * in[u] + 1)
			fail_msg("%s: out[%llu] = %llu, expected %llu", what, (unsigned long long)u,
				 (unsigned long long)out[u], (unsigned long long)(3 * in[u] + 1));
	}
}

/* A number from the last run's JSON report. */
static double report_num(plb_t *p, const char *key)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(plb_report(p, f, 1), 0);
	fclose(f);
	cJSON *o = cJSON_Parse(buf);
	free(buf);
	assert_non_null(o);
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	double x = cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsTrue(v) ? 1 : cJSON_IsFalse(v) ? 0 : -1e300;
	cJSON_Delete(o);
	if (x == -1e300)
		fail_msg("report has no number or boolean '%s'", key);
	return x;
}

static void test_cpu_team_of_two(void **state)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores < 2)
		fail_msg("a CPU team of two needs two cores; this machine has %ld", cores);
	plb_t *p = start("[run]\nunits = 1\n[node a]\ncpu = 2\n");
	nseen = 0;
	atomic_store(&calls, 0);
	assert_int_equal(run_once(p), 0);
	check_exactly_once("cpu = 2");
	assert_int_equal(team_cores, 2);
	if (nseen < 2)
		fail_msg("cpu = 2: the kernel ran on %d thread(s), expected both members", nseen);
	/* every block of two units or more is cut in two: more calls than blocks */
	if (atomic_load(&calls) <= (long)report_num(p, "blocks"))
		fail_msg("cpu = 2: %ld kernel calls for %g blocks", atomic_load(&calls),
			 report_num(p, "blocks"));
	stop(p);
}

/* Re-runs of late blocks are off (redo_gain = 0): a re-run computes its
 * units a second time (merging them once), and these tests count the
 * kernel's computations, which on a loaded machine a late block would
 * otherwise make 2 now and then. */
static const char two_pus[] =
	"[run]\nunits = 1\n[node a]\ncpu = 1\nemu = e\n"
	"[model e]\nclass = gpu\ncompute = poly 0.0005 2e-8\n"
	"[balancer]\nredo_gain = 0\n";

static void test_kernel_fails_on_one_block(void **state)
{
	/* on the first block, one in the middle, the last */
	static const long long at[] = {0, W / 2, W - 1};
	for (int k = 0; k < 3; k++) {
		plb_t *p = start(two_pus);
		atomic_store(&failed, 0);
		fail_unit = at[k];
		assert_int_equal(run_once(p), 0);
		fail_unit = -1;
		assert_int_equal(atomic_load(&failed), 1);
		check_exactly_once("a kernel failing on one block");
		assert_int_equal((int)report_num(p, "pus_lost"), 1);
		assert_int_equal((int)report_num(p, "units_done"), W);
		stop(p);
	}
}

static void test_runs_in_a_row(void **state)
{
	plb_t *p = start(two_pus);
	for (int run = 0; run < 4; run++) {
		assert_int_equal(run_once(p), 0);
		char what[32];
		snprintf(what, sizeof what, "run %d of 4", run + 1);
		check_exactly_once(what);
		assert_int_equal((int)report_num(p, "coverage_ok"), 1);
	}
	stop(p);
}

static void test_bad_coverage_fails(void **state)
{
	plb_t *p = start(two_pus);
	corrupt_grant = 3;
	int rc = run_once(p);
	corrupt_grant = -1;
	assert_int_equal(rc, PLB_EIO);
	assert_non_null(strstr(plb_errmsg(p), "do not cover [0, 60013) exactly once"));
	assert_int_equal((int)report_num(p, "coverage_ok"), 0);
	stop(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_team_of_two),
		cmocka_unit_test(test_kernel_fails_on_one_block),
		cmocka_unit_test(test_runs_in_a_row),
		cmocka_unit_test(test_bad_coverage_fails),
	};
	alarm(120);     /* a run that hangs (a block never redone) ends here, failed */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
