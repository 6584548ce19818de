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

#include "apps/app.h"
#include "kernels/null/null.h"
#include "plb.h"

static void pause_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	if (s > 0)
		nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&plb__null_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-null", .synopsis = "mpirun -np K plb-null --config FILE [options]",
			     .runs = 1};
	double hold = 0, linger = 0;
	long units = 0;
	const struct app_opt opts[] = {
		APP_LONG_OPT("--units", "W", &units, 1, 1e15, "an integer in [1, 1e15]",
			     "the domain's units (default: the file's [run] units)"),
		APP_REAL_OPT("--hold", "S", &hold, 0, 1e6, "seconds from 0 to 1e6",
			     "wait S seconds before the run (workers idle meanwhile)"),
		APP_REAL_OPT("--linger", "S", &linger, 0, 1e6, "seconds from 0 to 1e6",
			     "wait S seconds after the report, before ending"),
		APP_LONG_OPT("--runs", "K", &a.runs, 1, 1e15, "an integer in [1, 1e15]",
			     "K runs, each checked, the last one reported (default 1)"),
		APP_OPT_JSON(&a, "the report as one JSON object"),
	};
	int status = APP_COMMAND_LINE(&a, &o, opts, &argc, argv);
	if (status >= 0)
		return status;
	if (!o.config)
		return app_wrong(&a, 0, "--config FILE is required");
	plb_t *p;
	int rc = plb_init(&argc, &argv, &o, &p);
	if (!rc && !plb_is_master(p))
		rc = plb_serve(p);
	else if (!rc) {
		pause_s(hold);
		struct plb__null_tally t;
		struct plb_job job = {PLB_INIT, .kernel = "null", .units = (uint64_t)units,
				      .acc_bytes = sizeof t, .acc = &t};
		for (long k = 0; k < a.runs && !rc; k++) {
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
			rc = plb_report(p, stdout, a.json);
		fflush(stdout);
		pause_s(linger);
	}
	int frc = plb_finalize(p);
	return rc || frc ? 1 : 0;
}
