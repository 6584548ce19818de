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
 *    plb__balancer_next, see the Makefile): the runtime itself is unchanged. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plb.h"
#include "balancer/balancer.h"
#include "balancer/base/clock.h"
#include "runtime/core/resident.h"      /* struct plb__segs: what a held block costs */
#include "runtime/core/rt.h"            /* plb__peer_version */
#include "runtime/transport/transport.h"

#define W 60013         /* prime: some block has an odd size */

static _Atomic int hits[W];
static atomic_long calls;
static long long fail_unit = -1;        /* the kernel fails once on a block holding it */
static atomic_int failed;
static int team_cores = -1;             /* cores of the last cpu PU opened */
static atomic_long borrowed, copied;    /* kernel calls on the job's memory, on copies */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t seen[64];
static int nseen;

/* test_resident_input's shared data: kernel inits that saw it whole, and
 * (while shared_expected) those that did not */
static uint64_t shared_words[8192];
static atomic_int shared_seen, shared_bad, shared_expected;

static int k_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	if (pu->cls == PLB_DEV_CPU && pu->cores > 1)
		team_cores = pu->cores;
	if (bytes == sizeof shared_words && !memcmp(shared, shared_words, bytes))
		atomic_fetch_add(&shared_seen, 1);
	else if (atomic_load(&shared_expected))
		atomic_fetch_add(&shared_bad, 1);
	*st = NULL;
	return 0;
}

static uint64_t in[W], out[W];

/* Does the block read and write the job's own arrays (in place)? */
static void count_where(const struct plb_block *b)
{
	int bi = (const uint64_t *)b->in >= in && (const uint64_t *)b->in < in + W;
	int bo = (uint64_t *)b->out >= out && (uint64_t *)b->out < out + W;
	if (bi != bo)
		fail_msg("block at %llu: input %s but output %s", (unsigned long long)b->offset,
			 bi ? "in place" : "a copy", bo ? "in place" : "a copy");
	if (bi && ((const uint64_t *)b->in != in + b->offset || (uint64_t *)b->out != out + b->offset))
		fail_msg("block at %llu in place at the wrong place", (unsigned long long)b->offset);
	atomic_fetch_add(bi ? &borrowed : &copied, 1);
}

/* out[u] = 3 in[u] + 1; each unit counted; the threads that ran recorded */
static int k_run(void *st, const struct plb_block *b)
{
	atomic_fetch_add(&calls, 1);
	count_where(b);
	if (fail_unit >= (long long)b->offset && fail_unit < (long long)(b->offset + b->units) &&
	    !atomic_exchange(&failed, 1))
		return PLB_EDEVICE;
	const uint64_t *x = b->in;
	uint64_t *y = b->out;
	for (uint64_t i = 0; i < b->units; i++) {
		y[i] = 3 * x[i] + 1;
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

/* A reduction's accumulator: exact integer sums (any order gives the same
 * bits) and a floating-point one. */
struct acc {
	uint64_t units, sum;    /* units seen, sum of in[] */
	double fsum;            /* sum of 1 / (in[u] + 1) */
};

static void k_combine(void *acc, const void *part, size_t bytes)
{
	assert_int_equal(bytes, sizeof(struct acc));
	struct acc *a = acc;
	const struct acc *b = part;
	a->units += b->units;
	a->sum += b->sum;
	a->fsum += b->fsum;
}

/* The block's contribution to its accumulator, then k_run: a block that
 * fails has added to its accumulator, which must then not count. */
static int k_sum(void *st, const struct plb_block *b)
{
	struct acc *a = b->acc;
	const uint64_t *x = b->in;
	for (uint64_t i = 0; i < b->units; i++) {
		a->units++;
		a->sum += x[i];
		a->fsum += 1.0 / (double)(x[i] + 1);
	}
	return k_run(st, b);
}

static const struct plb_kernel kernel = {
	PLB_INIT,
	.name = "count",
	.cpu = {.init = k_init, .run = k_run},
};

/* A whole-block kernel (.whole): every member of a team gets the whole
 * block and computes the units u with u % members == member. */
static atomic_long whole_calls, whole_bad;
static int k_whole(void *st, const struct plb_block *b)
{
	atomic_fetch_add(&whole_calls, 1);
	/* the test runs it on a team of two */
	if (b->members != 2 || b->member < 0 || b->member >= b->members)
		atomic_fetch_add(&whole_bad, 1);
	const uint64_t *x = b->in;
	uint64_t *y = b->out;
	for (uint64_t i = 0; i < b->units; i++)
		if ((b->offset + i) % (uint64_t)b->members == (uint64_t)b->member) {
			y[i] = 3 * x[i] + 1;
			atomic_fetch_add(&hits[b->offset + i], 1);
		}
	return 0;
}

static const struct plb_kernel whole_kernel = {
	PLB_INIT,
	.name = "whole",
	.cpu = {.init = k_init, .run = k_whole, .whole = 1},
};

static const struct plb_kernel sum_kernel = {
	PLB_INIT,
	.name = "sum",
	.cpu = {.init = k_init, .run = k_sum},
	.combine = k_combine,
};

/* --wrap=plb__balancer_next: the real one, then, when corrupt_grant is the
 * grant's number (counted from 0 in a run), one unit later. */
static long corrupt_grant = -1, ngrants;
int __real_plb__balancer_next(plb__balancer_t *b, int pu, double now, struct plb__grant *g);
int __wrap_plb__balancer_next(plb__balancer_t *b, int pu, double now, struct plb__grant *g)
{
	int rc = __real_plb__balancer_next(b, pu, now, g);
	if (rc == PLB__NEXT_GRANT && ngrants++ == corrupt_grant && g->offset + g->units < W)
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

/* test_run_starts_beside_an_ending_pu: the emulated PU's fini takes
 * 0.3 s; when it ended, and when a.cpu began its first block of a run */
static atomic_llong slow_fini_end_ns, cpu_first_ns;
static char cpu_tag, emu_tag;

static int sf_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	(void)shared;
	(void)bytes;
	*st = strcmp(pu->name, "a.cpu") == 0 ? &cpu_tag : &emu_tag;
	return 0;
}

static int sf_run(void *st, const struct plb_block *b)
{
	long long zero = 0;
	if (st == &cpu_tag)
		atomic_compare_exchange_strong(&cpu_first_ns, &zero, (long long)(1e9 * plb__now()));
	return k_run(NULL, b);
}

static void sf_fini(void *st)
{
	if (st == &emu_tag) {
		nanosleep(&(struct timespec){0, 300000000L}, NULL);
		long long zero = 0;     /* the first run's */
		atomic_compare_exchange_strong(&slow_fini_end_ns, &zero, (long long)(1e9 * plb__now()));
	}
}

static const struct plb_kernel slow_fini_kernel = {
	PLB_INIT,
	.name = "slowfini",
	.cpu = {.init = sf_init, .run = sf_run, .fini = sf_fini},
};

static const struct plb_kernel tag_kernel;     /* test_redo_in_place */

/* A kernel that reports copies (plb_report_copies): 2 ms of work a block,
 * 1 ms of it "copies"; a report for no block, or a negative one, is
 * ignored. */
static int copies_run(void *st, const struct plb_block *b)
{
	(void)st;
	double t0 = plb__now();
	const uint64_t *in_ = b->in;
	uint64_t *o = b->out;
	for (uint64_t u = 0; u < b->units; u++)
		o[u] = 3 * in_[u] + 1;
	while (plb__now() - t0 < 2e-3)
		;
	plb_report_copies(NULL, 5);
	plb_report_copies(b, 1e-3);
	plb_report_copies(b, -1);
	return 0;
}

static const struct plb_kernel copies_kernel = {
	PLB_INIT,
	.name = "copies",
	.cpu = {.run = copies_run},
};

/* plb_init on config_text (models: a models file, or NULL); its rc. */
static int init(const char *config_text, const char *models, plb_t **p)
{
	static const struct plb_kernel *const ks[] = {&kernel, &sum_kernel, &whole_kernel,
						      &tag_kernel, &slow_fini_kernel, &copies_kernel};
	write_config(config_text);
	struct plb_options o = {PLB_INIT, .config = cfg_path, .kernels = ks, .nkernels = 6, .quiet = 1,
				.models = models};
	int argc = 1;
	char *args[] = {"test_runtime", NULL}, **argv = args;
	*p = NULL;
	return plb_init(&argc, &argv, &o, p);
}

static plb_t *start_models(const char *config_text, const char *models)
{
	plb_t *p;
	if (init(config_text, models, &p))
		fail_msg("plb_init: %s", plb_errmsg(p));
	assert_true(plb_is_master(p));
	return p;
}

static plb_t *start(const char *config_text)
{
	return start_models(config_text, NULL);
}

static void stop(plb_t *p)
{
	assert_int_equal(plb_finalize(p), 0);
	unlink(cfg_path);
}

/* One run over `units` of the W units with input in[u] = u * mul + 5 and
 * job.in_mode `mode`; rc of plb_run. Counters reset first. */
static int run_input(plb_t *p, uint64_t units, uint64_t mul, int mode)
{
	for (uint64_t u = 0; u < W; u++) {
		in[u] = u * mul + 5;
		/* units past the domain: as check_exactly_once expects them */
		out[u] = u < units ? 0 : 3 * in[u] + 1;
		atomic_store(&hits[u], u < units ? 0 : 1);
	}
	ngrants = 0;
	atomic_store(&borrowed, 0);
	atomic_store(&copied, 0);
	struct plb_job job = {PLB_INIT, .kernel = "count", .units = units, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8, .in_mode = mode};
	if (mode & PLB_SHARED_UNCHANGED) {
		job.shared = shared_words;
		job.shared_bytes = sizeof shared_words;
	}
	return plb_run(p, &job);
}

static int run_once(plb_t *p)
{
	return run_input(p, W, 7, 0);
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
	/* a whole-block kernel: both members on every block, each its share */
	for (uint64_t u = 0; u < W; u++) {
		out[u] = 0;
		atomic_store(&hits[u], 0);
	}
	atomic_store(&whole_calls, 0);
	atomic_store(&whole_bad, 0);
	struct plb_job job = {PLB_INIT, .kernel = "whole", .units = W, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8};
	assert_int_equal(plb_run(p, &job), 0);
	check_exactly_once("cpu = 2, whole blocks");
	assert_int_equal(atomic_load(&whole_bad), 0);
	if (atomic_load(&whole_calls) != 2 * (long)report_num(p, "blocks"))
		fail_msg("cpu = 2, whole blocks: %ld kernel calls for %g blocks (expected two each)",
			 atomic_load(&whole_calls), report_num(p, "blocks"));
	stop(p);
}

/* Re-runs of late blocks are off (redo_gain = 0): a re-run computes its
 * units a second time (merging them once), and these tests count the
 * kernel's computations, which on a loaded machine a late block would
 * otherwise make 2 now and then. */
#define TWO_PUS(RUN)                                                   \
	"[run]\nunits = 1\n" RUN "[node a]\ncpu = 1\nemu = e\n"         \
	"[model e]\nclass = gpu\ncompute = poly 0.0005 2e-8\n"            \
	"[balancer]\nredo_gain = 0\n"
static const char two_pus[] = TWO_PUS("");
/* the same with copies in and out of messages, as between processes */
static const char two_pus_copied[] = TWO_PUS("in_place = 0\n");

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

/* Runs of one kernel one after the other: from the second on, every PU
 * starts from the last run's model and nothing trains. In place (the
 * default in one process) every block reads and writes the job's arrays
 * and only headers travel; with in_place = 0 every block gets copies. */
static void runs_in_a_row(int in_place)
{
	plb_t *p = start(in_place ? two_pus : two_pus_copied);
	struct plb_result res = {PLB_INIT};
	assert_int_equal(plb_result(p, &res), PLB_ESTATE);
	for (int run = 0; run < 4; run++) {
		assert_int_equal(run_once(p), 0);
		char what[32];
		snprintf(what, sizeof what, "run %d of 4", run + 1);
		check_exactly_once(what);
		assert_int_equal((int)report_num(p, "coverage_ok"), 1);
		assert_int_equal(plb_result(p, &res), 0);
		assert_int_equal(res.npu, 2);
		assert_true(res.coverage_ok && res.units == W && res.makespan_s > 0);
		assert_true(fabs(res.ratio - res.makespan_s / res.lower_bound_s) <= 1e-12 * res.ratio);
		assert_true(fabs(res.ratio - report_num(p, "ratio")) <= 1e-9 * res.ratio);
		/* the master thread's CPU: some, and no more than its wall time
		 * (one thread's, not the process's with the PU threads); the
		 * report's JSON prints it to 15 digits */
		if (!(res.master_cpu_s > 0 && res.master_cpu_s <= res.wall_s + 1e-3) ||
		    fabs(report_num(p, "master_cpu_s") - res.master_cpu_s) > 1e-12 * res.master_cpu_s)
			fail_msg("run %d: master CPU %g s in %g s of wall time (report: %g)", run + 1,
				 res.master_cpu_s, res.wall_s, report_num(p, "master_cpu_s"));
		/* in place: headers only (two a block, and a borrowed block's
		 * two addresses, under 32 bytes; START and END) */
		if (in_place && (atomic_load(&copied) || !atomic_load(&borrowed) ||
				 res.bytes_sent + res.bytes_received >
					 (2.0 * PLB__HDR_SIZE + 32) * (double)(res.blocks + 2)))
			fail_msg("in place, run %d: %ld calls on copies, %ld in place, %g bytes moved",
				 run + 1, atomic_load(&copied), atomic_load(&borrowed),
				 res.bytes_sent + res.bytes_received);
		/* copied: an 8-byte word per unit, each way, and the headers */
		if (!in_place && (atomic_load(&borrowed) || res.bytes_sent <= 8.0 * W ||
				  res.bytes_received <= 8.0 * W))
			fail_msg("in_place = 0, run %d: %ld calls in place, %g bytes sent, %g received",
				 run + 1, atomic_load(&borrowed), res.bytes_sent, res.bytes_received);
		if (run == 0 && (res.training_blocks < 2 || res.warm_pus != 0))
			fail_msg("run 1: %ld training blocks, %d warm PUs", res.training_blocks, res.warm_pus);
		if (run > 0 && (res.training_blocks != 0 || res.warm_pus != 2))
			fail_msg("run %d: %ld training blocks, %d warm PUs (expected 0 and 2)", run + 1,
				 res.training_blocks, res.warm_pus);
	}
	double units = 0;
	for (int i = 0; i < res.npu; i++) {
		struct plb_pu_result pr = {PLB_INIT};
		assert_int_equal(plb_pu_result(p, i, &pr), 0);
		assert_non_null(pr.name);
		assert_true(pr.idle_frac >= 0 && pr.idle_frac <= 1);
		units += pr.units;
	}
	assert_true(units == W);
	struct plb_pu_result pr = {PLB_INIT};
	assert_int_equal(plb_pu_result(p, 2, &pr), PLB_EINVAL);
	stop(p);
}

static void test_runs_in_a_row(void **state)
{
	runs_in_a_row(1);
	runs_in_a_row(0);
}

/* Resident input, through copies as between processes (in_place = 0):
 * a run with PLB_IN_KEEP leaves the node holding the input; later runs
 * with PLB_IN_UNCHANGED send under 5% of it and compute the same outputs
 * from the node's store. New input (PLB_IN_KEEP alone), another domain
 * size and a budget too small for all of it are each sent again as
 * needed, and every output is still right: a block whose input is half
 * in the store and half in its message is put together in order. */
static void test_resident_input(void **state)
{
	plb_t *p = start(two_pus_copied);
	struct plb_result res = {PLB_INIT};
	double first = 0;
	for (size_t k = 0; k < 8192; k++)
		shared_words[k] = k * k + 1;
	atomic_store(&shared_expected, 1);
	for (int run = 0; run < 4; run++) {
		/* shared data (64 KiB, 12% of the input) sent once too */
		int mode = PLB_IN_KEEP | PLB_SHARED_UNCHANGED | (run ? PLB_IN_UNCHANGED : 0);
		atomic_store(&shared_seen, 0);
		assert_int_equal(run_input(p, W, 7, mode), 0);
		check_exactly_once(run ? "input unchanged" : "input kept");
		assert_int_equal(plb_result(p, &res), 0);
		/* every PU that ran a block had the shared data, whole, at its
		 * init (a PU with no block may start its run after plb_run has
		 * returned, on a loaded machine: its init counts later), and
		 * no init had other data */
		int ran = 0;
		for (int i = 0; i < res.npu; i++) {
			struct plb_pu_result pr = {PLB_INIT};
			assert_int_equal(plb_pu_result(p, i, &pr), 0);
			ran += pr.units > 0;
		}
		if (!(ran >= 1 && atomic_load(&shared_seen) >= ran) || atomic_load(&shared_bad))
			fail_msg("run %d: %d PUs ran blocks, %d inits saw the shared data, %d other data",
				 run + 1, ran, atomic_load(&shared_seen), atomic_load(&shared_bad));
		if (!run)
			first = res.bytes_sent;
		/* later runs: START without the shared data, and per block a
		 * header and an empty table of parts; no input at all (how many
		 * blocks a run takes depends on timing, so the headers are not
		 * held to a share of the first run) */
		double bare = PLB__HDR_SIZE + PLB__KERNEL_NAME_MAX +
			      (double)res.blocks * (PLB__HDR_SIZE + sizeof(struct plb__segs));
		if (res.resident_bytes != 8.0 * W || res.unkept_bytes != 0 ||
		    first <= 8.0 * W + sizeof shared_words || (run && res.bytes_sent != bare))
			fail_msg("run %d: %g bytes sent (first run %g; %g without input), %g resident, %g over budget",
				 run + 1, res.bytes_sent, first, bare, res.resident_bytes, res.unkept_bytes);
	}
	atomic_store(&shared_expected, 0);
	/* new input: sent again, and its outputs are the new ones */
	assert_int_equal(run_input(p, W, 11, PLB_IN_KEEP), 0);
	check_exactly_once("new input kept");
	assert_int_equal(plb_result(p, &res), 0);
	assert_true(res.bytes_sent > 8.0 * W);
	/* "unchanged" for a domain of another size: all sent again */
	assert_int_equal(run_input(p, W - 1000, 11, PLB_IN_KEEP | PLB_IN_UNCHANGED), 0);
	check_exactly_once("unchanged, but another size");
	assert_int_equal(plb_result(p, &res), 0);
	assert_true(res.bytes_sent > 8.0 * (W - 1000) && res.resident_bytes == 8.0 * (W - 1000));
	/* without in_mode nothing is kept */
	assert_int_equal(run_input(p, W, 13, 0), 0);
	check_exactly_once("nothing kept");
	assert_int_equal(plb_result(p, &res), 0);
	assert_true(res.resident_bytes == 0);
	stop(p);

	/* a budget of a quarter of the input: the rest is sent every run */
	p = start(TWO_PUS("in_place = 0\nresident_mb = 0.114\n"));
	double budget = 0.114 * 1048576;
	for (int run = 0; run < 3; run++) {
		assert_int_equal(run_input(p, W, 3, PLB_IN_KEEP | (run ? PLB_IN_UNCHANGED : 0)), 0);
		check_exactly_once("over the budget");
		assert_int_equal(plb_result(p, &res), 0);
		if (!(res.resident_bytes <= budget && res.resident_bytes > budget - 8.0 * W / 2 &&
		      res.unkept_bytes > 0 && res.bytes_sent > 8.0 * W - budget))
			fail_msg("budget %g bytes, run %d: %g resident, %g over budget, %g sent", budget,
				 run + 1, res.resident_bytes, res.unkept_bytes, res.bytes_sent);
	}
	stop(p);
}

/* A late block run again in place: the emulated PU stalls in its kernel
 * on its first block, so that block is late and the CPU runs it again
 * once it has done the rest. The stall lasts until the CPU has finished
 * a piece of that block, and 0.1 s more for its DONE to reach the master
 * first (5 s at most): the case happens by construction, however late
 * the emulated PU's thread (nice 10) starts on a loaded machine. (Stalled
 * on its second block, as before, it sometimes never got one: the CPU had
 * done everything first.) Each PU tags what it writes; every unit's
 * output must come from the PU the report credits with it, i.e. the copy
 * that counted, also when the loser writes the job's memory after the
 * winner ended. */
#define EMU_TAG (1ull << 62)
static atomic_int emu_calls, stalled, rerun;
static _Atomic uint64_t stall_lo, stall_hi;     /* the stalled block's units */

static int k_tag_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	*st = (void *)(uintptr_t)(strstr(pu->name, ".cpu") ? 1 : 2);
	return 0;
}

static int k_tag(void *st, const struct plb_block *b)
{
	int emu = (uintptr_t)st == 2;
	count_where(b);
	if (emu && atomic_fetch_add(&emu_calls, 1) == 0 && !atomic_load(&stalled)) {
		atomic_store(&stall_lo, b->offset);
		atomic_store(&stall_hi, b->offset + b->units);
		atomic_store(&stalled, 1);
		for (int t = 0; t < 500 && !atomic_load(&rerun); t++)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	const uint64_t *x = b->in;
	uint64_t *y = b->out;
	for (uint64_t i = 0; i < b->units; i++) {
		/* some 100 ns a unit: block times the models can measure */
		volatile uint64_t v = x[i];
		for (int k = 0; k < 50; k++)
			v = v * 3 + 1;
		y[i] = (3 * x[i] + 1) | (emu ? EMU_TAG : 0);
	}
	/* the CPU finished a piece of the stalled block: the re-run */
	if (!emu && atomic_load(&stalled) && b->offset < atomic_load(&stall_hi) &&
	    b->offset + b->units > atomic_load(&stall_lo))
		atomic_store(&rerun, 1);
	return 0;
}

static const struct plb_kernel tag_kernel = {
	PLB_INIT,
	.name = "tag",
	.cpu = {.init = k_tag_init, .run = k_tag},
};

/* One run: the stall and the re-run happen, and every unit's output is
 * its credited PU's. */
static void redo_tagged(const char *config, const char *what)
{
	plb_t *p = start(config);
	for (uint64_t u = 0; u < W; u++) {
		in[u] = u * 7 + 5;
		out[u] = 0;
	}
	atomic_store(&emu_calls, 0);
	atomic_store(&stalled, 0);
	atomic_store(&rerun, 0);
	struct plb_job job = {PLB_INIT, .kernel = "tag", .units = W, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8};
	assert_int_equal(plb_run(p, &job), 0);
	if (!atomic_load(&stalled) || !(report_num(p, "redo_won") >= 1))
		fail_msg("%s: the case did not happen: stalled %d, %g late blocks run again, %g won",
			 what, atomic_load(&stalled), report_num(p, "redo_blocks"),
			 report_num(p, "redo_won"));
	double emu_units = 0, by_emu = 0;
	for (int i = 0; i < 2; i++) {
		struct plb_pu_result pr = {PLB_INIT};
		assert_int_equal(plb_pu_result(p, i, &pr), 0);
		if (!strstr(pr.name, ".cpu"))
			emu_units = pr.units;
	}
	for (uint64_t u = 0; u < W; u++) {
		if ((out[u] & ~EMU_TAG) != 3 * in[u] + 1)
			fail_msg("%s: out[%llu] = %llx", what, (unsigned long long)u,
				 (unsigned long long)out[u]);
		by_emu += (out[u] & EMU_TAG) != 0;
	}
	if (by_emu != emu_units)
		fail_msg("%s: %g units hold the emulated PU's output, the report credits it with %g",
			 what, by_emu, emu_units);
	stop(p);
}

static void test_redo_in_place(void **state)
{
	static const char cfg[] = "[run]\nunits = 1\n%s[node a]\ncpu = 1\nemu = e\n"
				  "[model e]\nclass = gpu\ncompute = poly 0.0005 2e-8\n";
	char text[sizeof cfg + 32];
	snprintf(text, sizeof text, cfg, "");
	atomic_store(&copied, 0);
	redo_tagged(text, "in place");
	/* the re-run went through copies: a borrowed original was still out */
	assert_true(atomic_load(&copied) >= 1);
	snprintf(text, sizeof text, cfg, "in_place = 0\n");
	redo_tagged(text, "in_place = 0");
}

/* keep_models = 0: every run trains; another signature or kernel is
 * another kind of run, which trains too. */
static void test_models_kept_per_kind(void **state)
{
	plb_t *p = start("[run]\nkeep_models = 0\n[node a]\ncpu = 1\nemu = e\n"
			 "[model e]\nclass = gpu\ncompute = poly 0.0005 2e-8\n"
			 "[balancer]\nredo_gain = 0\n");
	struct plb_result res = {PLB_INIT};
	for (int run = 0; run < 2; run++) {
		assert_int_equal(run_once(p), 0);
		assert_int_equal(plb_result(p, &res), 0);
		assert_true(res.training_blocks >= 2 && res.warm_pus == 0);
	}
	stop(p);
	p = start(two_pus);
	assert_int_equal(run_once(p), 0);
	struct plb_job job = {PLB_INIT, .kernel = "count", .units = W, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8, .signature = "other"};
	assert_int_equal(plb_run(p, &job), 0);
	assert_int_equal(plb_result(p, &res), 0);
	assert_true(res.training_blocks >= 2 && res.warm_pus == 0);
	assert_int_equal(plb_run(p, &job), 0);
	assert_int_equal(plb_result(p, &res), 0);
	assert_true(res.training_blocks == 0 && res.warm_pus == 2);
	stop(p);
}

/* The domain's size from the job when the file has none; neither: an
 * error naming the file. */
static void test_units_from_the_job(void **state)
{
	plb_t *p = start("[node a]\ncpu = 1\n");
	struct plb_job job = {PLB_INIT, .kernel = "count", .units = 0, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8};
	assert_int_equal(plb_run(p, &job), PLB_EINVAL);
	assert_non_null(strstr(plb_errmsg(p), "no [run] units"));
	assert_non_null(strstr(plb_errmsg(p), cfg_path));
	stop(p);
	p = start("[node a]\ncpu = 1\n");
	assert_int_equal(run_once(p), 0);
	check_exactly_once("units from the job");
	stop(p);
}

/* A reduction: every unit's contribution once, whatever ran it - a CPU
 * team's two members, a block that failed and went to another PU - and
 * the integer sums exact. */
static void sum_run(plb_t *p, struct acc *a)
{
	for (uint64_t u = 0; u < W; u++) {
		in[u] = u * 7 + 5;
		atomic_store(&hits[u], 0);
	}
	static const struct acc id = {0, 0, 0.0};
	struct plb_job job = {PLB_INIT, .kernel = "sum", .units = W, .in = in, .in_unit = 8, .out = out,
			      .out_unit = 8, .acc_bytes = sizeof *a, .acc_identity = &id, .acc = a};
	memset(a, 0xff, sizeof *a);
	assert_int_equal(plb_run(p, &job), 0);
}

static void check_sum(const struct acc *a, const char *what)
{
	uint64_t sum = 0;
	double fsum = 0;
	for (uint64_t u = 0; u < W; u++) {
		sum += u * 7 + 5;
		fsum += 1.0 / (double)(u * 7 + 6);
	}
	if (a->units != W || a->sum != sum)
		fail_msg("%s: reduction counted %llu units summing to %llu; expected %d and %llu", what,
			 (unsigned long long)a->units, (unsigned long long)a->sum, W,
			 (unsigned long long)sum);
	if (!(fabs(a->fsum - fsum) <= 1e-12 * fsum))
		fail_msg("%s: floating-point sum %.17g, serial %.17g", what, a->fsum, fsum);
}

static void test_reduction(void **state)
{
	struct acc a;
	plb_t *p = start("[node a]\ncpu = 2\n");
	sum_run(p, &a);
	check_exactly_once("a reduction on a team of two");
	check_sum(&a, "a team of two");
	stop(p);
	p = start(two_pus);
	atomic_store(&failed, 0);
	fail_unit = W / 3;
	sum_run(p, &a);
	fail_unit = -1;
	assert_int_equal(atomic_load(&failed), 1);
	check_sum(&a, "a kernel failing on one block");
	/* no combine function: refused, naming the kernel */
	struct plb_job job = {PLB_INIT, .kernel = "count", .units = W, .in = in, .in_unit = 8, .out = out,
			      .out_unit = 8, .acc_bytes = sizeof a, .acc = &a};
	assert_int_equal(plb_run(p, &job), PLB_EINVAL);
	assert_non_null(strstr(plb_errmsg(p), "has no combine function"));
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

/* The copies a kernel reports are its blocks' transfer time in the
 * model (the models file's XFER_S), the rest their compute. */
static void test_reported_copies(void **state)
{
	(void)state;
	char path[] = "/tmp/plb-test-copies-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	plb_t *p = start_models("[run]\nunits = 2048\n[node a]\ncpu = 1\n", path);
	for (uint64_t u = 0; u < 2048; u++)
		in[u] = u;
	struct plb_job job = {PLB_INIT, .kernel = "copies", .units = 2048, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8};
	assert_int_equal(plb_run(p, &job), 0);
	for (uint64_t u = 0; u < 2048; u++)
		assert_true(out[u] == 3 * u + 1);
	stop(p);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[512];
	int samples = 0;
	while (fgets(line, sizeof line, f)) {
		double units, exec_s, xfer_s;
		if (sscanf(line, "%lf %lf %lf", &units, &exec_s, &xfer_s) != 3)
			continue;
		samples++;
		if (xfer_s != 1e-3 || !(exec_s >= 1e-3))
			fail_msg("a block of %g units: exec %g s, xfer %g s; expected xfer 0.001 and exec >= 0.001",
				 units, exec_s, xfer_s);
	}
	fclose(f);
	unlink(path);
	assert_true(samples > 0);
}

/* A models file: the first process trains and writes it, the second
 * starts warm from it; a record for hardware this cluster lacks is not
 * used but kept; a corrupt file stops plb_init naming file:line. */
static void test_models_file(void **state)
{
	char path[] = "/tmp/plb-test-models-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);           /* absent: the first process trains */
	struct plb_result res = {PLB_INIT};
	plb_t *p = start_models(two_pus, path);
	assert_int_equal(run_once(p), 0);
	assert_int_equal(plb_result(p, &res), 0);
	assert_true(res.training_blocks >= 2 && res.warm_pus == 0);
	stop(p);
	/* another cluster's record, appended: kept, not used */
	FILE *f = fopen(path, "a");
	assert_non_null(f);
	fputs("pu elsewhere z.gpu0 gpu:0 kernel=count in=8 out=8 cliff=inf samples=1 sig=\n"
	      "100 0.5 0\n", f);
	fclose(f);
	p = start_models(two_pus, path);
	assert_int_equal(run_once(p), 0);
	check_exactly_once("warm from a models file");
	assert_int_equal(plb_result(p, &res), 0);
	if (res.training_blocks != 0 || res.warm_pus != 2)
		fail_msg("from the models file: %ld training blocks, %d warm PUs", res.training_blocks,
			 res.warm_pus);
	stop(p);
	char line[512];
	int foreign = 0, header = 0;
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		header += !strcmp(line, "plb-models 1\n");
		foreign += !strncmp(line, "pu elsewhere z.gpu0 ", 20);
	}
	fclose(f);
	assert_int_equal(header, 1);
	assert_int_equal(foreign, 1);
	/* corrupt: a sample line that is not three numbers */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("plb-models 1\npu vm a.cpu cpu:1 kernel=count in=8 out=8 cliff=inf samples=2 sig=\n"
	      "100 0.5 0\n100 x 0\n", f);
	fclose(f);
	plb_t *q;
	assert_int_equal(init(two_pus, path, &q), PLB_ECONFIG);
	char want[64];
	snprintf(want, sizeof want, "%s:4: ", path);
	if (!strstr(plb_errmsg(q), want))
		fail_msg("corrupt models file: '%s' does not name %s", plb_errmsg(q), want);
	plb_finalize(q);
	unlink(cfg_path);
	/* not a models file at all */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("[run]\nunits = 5\n", f);
	fclose(f);
	assert_int_equal(init(two_pus, path, &q), PLB_ECONFIG);
	assert_non_null(strstr(plb_errmsg(q), "not a plb models file"));
	plb_finalize(q);
	unlink(cfg_path);
	unlink(path);
}

/* A run starts on a node while one of its PUs has only the last run's
 * END left to do: that PU's kernel fini (0.3 s here) holds up none of the
 * others. With copies (in_place = 0) the master does not wait for the END
 * between runs; a.cpu's first block of the second run begins before the
 * emulated PU's fini of the first has ended (as plb_finalize, which waits
 * for every fini, finds), and both runs cover every unit once. */
static void test_run_starts_beside_an_ending_pu(void **state)
{
	(void)state;
	atomic_store(&slow_fini_end_ns, 0);
	plb_t *p = start(two_pus_copied);
	for (int run = 0; run < 2; run++) {
		for (uint64_t u = 0; u < W; u++) {
			in[u] = u + 5;
			out[u] = 0;
			atomic_store(&hits[u], 0);
		}
		atomic_store(&cpu_first_ns, 0);
		struct plb_job job = {PLB_INIT, .kernel = "slowfini", .units = W, .in = in, .in_unit = 8,
				      .out = out, .out_unit = 8};
		assert_int_equal(plb_run(p, &job), 0);
		check_exactly_once(run ? "the second run" : "the first run");
	}
	stop(p);        /* every fini has run */
	long long began = atomic_load(&cpu_first_ns), fini = atomic_load(&slow_fini_end_ns);
	if (!(began > 0 && fini > 0 && began < fini))
		fail_msg("a.cpu began the second run %.3f s after the emulated PU's fini of the first ended",
			 1e-9 * (double)(began - fini));
}

/* A struct without its ABI stamp (PLB_INIT), or with a newer ABI than the
 * library's, is refused by the call that reads it, with a message that
 * says how to stamp it; the handle goes on (a stamped call then works). */
static void test_abi_stamps(void **state)
{
	(void)state;
	plb_t *p = start(two_pus);
	struct plb_job job = {.kernel = "count", .units = W, .in = in, .in_unit = 8, .out = out,
			      .out_unit = 8};
	assert_int_equal(plb_run(p, &job), PLB_EINVAL);
	assert_non_null(strstr(plb_errmsg(p), "struct plb_job has no ABI stamp"));
	assert_non_null(strstr(plb_errmsg(p), "PLB_INIT"));
	job.abi = PLB_ABI + 1;
	assert_int_equal(plb_run(p, &job), PLB_EINVAL);
	assert_int_equal(run_once(p), 0);
	struct plb_result res = {0};
	assert_int_equal(plb_result(p, &res), PLB_EINVAL);
	assert_int_equal(res.units, 0);         /* nothing written */
	struct plb_pu_result pr = {.abi = PLB_ABI + 1};
	assert_int_equal(plb_pu_result(p, 0, &pr), PLB_EINVAL);
	res.abi = PLB_ABI;
	assert_int_equal(plb_result(p, &res), 0);
	assert_true(res.units == W && res.abi == PLB_ABI);
	stop(p);

	/* plb_init: the options, and each kernel */
	struct plb_options o = {.config = "/nonexistent.ini"};
	int argc = 1;
	char *args[] = {"test_runtime", NULL}, **argv = args;
	assert_int_equal(plb_init(&argc, &argv, &o, &p), PLB_EINVAL);
	assert_non_null(strstr(plb_errmsg(p), "struct plb_options has no ABI stamp"));
	assert_int_equal(plb_finalize(p), 0);
	static const struct plb_kernel unstamped = {.name = "unstamped", .cpu = {.run = NULL}};
	static const struct plb_kernel *const ks[] = {&unstamped};
	struct plb_options o2 = {PLB_INIT, .config = "/nonexistent.ini", .kernels = ks, .nkernels = 1};
	assert_int_equal(plb_init(&argc, &argv, &o2, &p), PLB_EINVAL);
	assert_non_null(strstr(plb_errmsg(p), "struct plb_kernel 'unstamped' has no ABI stamp"));
	assert_int_equal(plb_finalize(p), 0);
	/* and plb_options_parse */
	struct plb_options o3 = {0};
	assert_int_equal(plb_options_parse(&argc, argv, &o3), PLB_EINVAL);
	assert_true(plb_version() == PLB_VERSION);
}

/* plb_errmsg is the last call's: a second failure says its own reason,
 * not the first's, and a call that succeeds leaves it empty. */
static void test_errmsg_is_the_last_calls(void **state)
{
	(void)state;
	plb_t *p = start(two_pus);
	struct plb_job job = {PLB_INIT, .kernel = "nosuch", .units = W, .in = in, .in_unit = 8,
			      .out = out, .out_unit = 8};
	assert_int_equal(plb_run(p, &job), PLB_ENOENT);
	assert_non_null(strstr(plb_errmsg(p), "kernel 'nosuch' is not in plb_options.kernels"));
	job.kernel = "count";
	job.out = NULL;
	assert_int_equal(plb_run(p, &job), PLB_EINVAL);
	if (!strstr(plb_errmsg(p), "in, out, shared or acc is NULL") || strstr(plb_errmsg(p), "nosuch"))
		fail_msg("the second failure says: %s", plb_errmsg(p));
	struct plb_result res = {PLB_INIT};
	assert_int_equal(plb_result(p, &res), PLB_ESTATE);
	assert_non_null(strstr(plb_errmsg(p), "no run on this rank yet"));
	assert_int_equal(run_once(p), 0);
	assert_string_equal(plb_errmsg(p), "");
	assert_int_equal(plb_result(p, &res), 0);
	assert_string_equal(plb_errmsg(p), "");
	struct plb_pu_result pr = {PLB_INIT};
	assert_int_equal(plb_pu_result(p, 7, &pr), PLB_EINVAL);
	assert_non_null(strstr(plb_errmsg(p), "PU 7; accepted: 0 to 1"));
	FILE *sink = fopen("/dev/null", "w");
	assert_non_null(sink);
	assert_int_equal(plb_report(p, sink, 1), 0);
	fclose(sink);
	assert_string_equal(plb_errmsg(p), "");
	stop(p);
}

/* A worker that runs another plb than the master's is refused when it
 * joins (HELLO0), with both versions in the message. */
static void test_worker_of_another_version(void **state)
{
	(void)state;
	struct plb q = {0};
	assert_int_equal(plb__peer_version(&q, 3, "n7", PLB_VERSION), 0);
	assert_int_equal(q.err[0], 0);
	assert_int_equal(plb__peer_version(&q, 3, "n7", 10203), PLB_ESTATE);
	char mine[32];
	snprintf(mine, sizeof mine, "the master plb %d.%d.%d", PLB_VERSION_MAJOR, PLB_VERSION_MINOR,
		 PLB_VERSION_PATCH);
	if (!strstr(q.err, "rank 3 (n7) runs plb 1.2.3") || !strstr(q.err, mine))
		fail_msg("%s", q.err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_team_of_two),
		cmocka_unit_test(test_kernel_fails_on_one_block),
		cmocka_unit_test(test_runs_in_a_row),
		cmocka_unit_test(test_run_starts_beside_an_ending_pu),
		cmocka_unit_test(test_resident_input),
		cmocka_unit_test(test_redo_in_place),
		cmocka_unit_test(test_models_kept_per_kind),
		cmocka_unit_test(test_units_from_the_job),
		cmocka_unit_test(test_reduction),
		cmocka_unit_test(test_models_file),
		cmocka_unit_test(test_reported_copies),
		cmocka_unit_test(test_bad_coverage_fails),
		cmocka_unit_test(test_abi_stamps),
		cmocka_unit_test(test_worker_of_another_version),
		cmocka_unit_test(test_errmsg_is_the_last_calls),
	};
	alarm(120);     /* a run that hangs (a block never redone) ends here, failed */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
