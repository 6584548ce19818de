/* plb-null: runs a config's domain with a kernel that does nothing, so the
 * PUs' times are their models' (emu) and what remains is the runtime's own
 * cost. For running a plbsim scenario on the real runtime (same file, same
 * figures) and for measuring the master's throughput.
 *
 *   mpirun -np K plb-null --config FILE [--policy P] [--set KEY=VALUE]
 *          [--models FILE] [--trace FILE] [--units W] [--hold S] [--linger S] [--runs K]
 *          [--json]
 *
 * --runs K: K runs one after the other (phases, as an iterative app has);
 * the report is the last one's.
 * --hold S: the master waits S seconds before the run, so the workers sit
 * idle (their CPU use then is in the report: worker_idle_cpu).
 * --linger S: the master waits S seconds after the report, before
 * plb_finalize (a rank lost there is noticed by plb_finalize).
 *
 * The kernel computes nothing but counts, through a reduction, the units
 * of each block and the sum of their indices; every run checks that the
 * sums are W and W (W - 1) / 2, i.e. that each unit counted exactly once
 * (a failure is an error, exit 1). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plb.h"

/* Units counted and the sum of their indices (mod 2^64). */
struct tally {
	uint64_t units, index_sum;
};

static int null_run(void *state, const struct plb_block *b)
{
	(void)state;
	struct tally *t = b->acc;
	uint64_t u = b->units;
	t->units += u;
	/* offset + (offset + 1) + ... + (offset + u - 1), halving the even factor */
	t->index_sum += u % 2 ? u * b->offset + u * ((u - 1) / 2) : u * b->offset + (u / 2) * (u - 1);
	return 0;
}

static void null_combine(void *acc, const void *part, size_t bytes)
{
	(void)bytes;
	struct tally *a = acc;
	const struct tally *p = part;
	a->units += p->units;
	a->index_sum += p->index_sum;
}

static const struct plb_kernel null_kernel = {
	PLB_INIT,
	.name = "null",
	.cpu = {.run = null_run},
	.cuda = {.run = null_run},      /* the tally lives in host memory */
	.combine = null_combine,
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np K plb-null --config FILE [options]\n"
		"  --config FILE      nodes and devices (INI; see README.md)\n"
		"  --units W          the domain's units (default: the file's [run] units)\n"
		"  --hold S           wait S seconds before the run (workers idle meanwhile)\n"
		"  --linger S         wait S seconds after the report, before ending\n"
		"  --runs K           K runs, each checked, the last one reported (default 1)\n"
		"  --json             the report as one JSON object\n"
		"  --policy NAME      balancing policy (default: the file's [run] policy)\n"
		"  --set KEY=VALUE    override a [balancer] parameter (repeatable)\n"
		"  --models FILE      read fitted models from FILE at start, write them at the end\n"
		"  --trace FILE       write every run's blocks to FILE as trace events (JSON for\n"
		"                     Perfetto, chrome://tracing and plb-plot)\n"
		"  --quiet            errors only on stderr, no warnings, no progress line\n"
		"  --progress         a progress line on stderr for runs past a second, also\n"
		"                     off a terminal (under mpirun; default: on a terminal)\n");
}

static void pause_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	if (s > 0)
		nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&null_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	int json = 0, say = plb_launch_rank() == 0;
	double hold = 0, linger = 0, units = 0, runs = 1;

	if (plb_options_parse(&argc, argv, &o))
		return plb_usage_error();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			if (say)
				usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if ((!strcmp(a, "--hold") || !strcmp(a, "--linger") || !strcmp(a, "--units") ||
			    !strcmp(a, "--runs")) && v) {
			double x = strtod(v, &end);
			int secs = a[2] == 'h' || a[2] == 'l';
			if (!*v || *end || !(x >= 0) || x > (secs ? 1e6 : 1e15) ||
			    (!secs && (x != (double)(long long)x || x < 1))) {
				if (say)
					fprintf(stderr, "plb-null: %s %s: accepted: %s\n", a, v,
						secs ? "seconds from 0 to 1e6" : "an integer >= 1");
				return plb_usage_error();
			}
			*(a[2] == 'h' ? &hold : a[2] == 'l' ? &linger : a[2] == 'u' ? &units : &runs) = x;
			i++;
		} else {
			if (say) {
				fprintf(stderr, "plb-null: %s: unknown option or missing value\n", a);
				usage(stderr);
			}
			return plb_usage_error();
		}
	}
	if (!o.config) {
		if (say)
			fprintf(stderr, "plb-null: --config FILE is required\n");
		return plb_usage_error();
	}
	plb_t *p;
	int rc = plb_init(&argc, &argv, &o, &p);
	if (!rc && !plb_is_master(p))
		rc = plb_serve(p);
	else if (!rc) {
		pause_s(hold);
		struct tally t;
		struct plb_job job = {PLB_INIT, .kernel = "null", .units = (uint64_t)units,
				      .acc_bytes = sizeof t, .acc = &t};
		for (long k = 0; k < (long)runs && !rc; k++) {
			if ((rc = plb_run(p, &job))) {
				fprintf(stderr, "plb-null: %s\n", plb_errmsg(p));
				break;
			}
			struct plb_result r = {PLB_INIT};
			rc = plb_result(p, &r);
			uint64_t W = r.units;
			uint64_t want = W % 2 ? W * ((W - 1) / 2) : (W / 2) * (W - 1);
			if (!rc && (t.units != W || t.index_sum != want)) {
				fprintf(stderr, "plb-null: run %ld: the reduction counted %llu units with index sum %llu; expected %llu and %llu\n",
					k + 1, (unsigned long long)t.units, (unsigned long long)t.index_sum,
					(unsigned long long)W, (unsigned long long)want);
				rc = 1;
			}
		}
		if (!rc)
			rc = plb_report(p, stdout, json);
		fflush(stdout);
		pause_s(linger);
	}
	int frc = plb_finalize(p);
	return rc || frc ? 1 : 0;
}
