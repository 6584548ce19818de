/* plb-null: runs a config's domain with a kernel that does nothing, so the
 * PUs' times are their models' (emu) and what remains is the runtime's own
 * cost. For running a plbsim scenario on the real runtime (same file, same
 * figures) and for measuring the master's throughput.
 *
 *   mpirun -np K plb-null --config FILE [--policy P] [--set KEY=VALUE]
 *          [--units W] [--hold S] [--runs K] [--json]
 *
 * --runs K: K runs one after the other (phases, as an iterative app has);
 * the report is the last one's.
 * --hold S: the master waits S seconds before the run, so the workers sit
 * idle (their CPU use then is in the report: worker_idle_cpu). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plb.h"

static int null_run(void *state, const struct plb_block *b)
{
	(void)state;
	(void)b;
	return 0;
}

static const struct plb_kernel null_kernel = {
	.name = "null",
	.cpu = {.run = null_run},
	.cuda = {.run = null_run},
};

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&null_kernel};
	struct plb_options o = {.kernels = kernels, .nkernels = 1};
	int json = 0, say = plb_launch_rank() == 0;
	double hold = 0, units = 0, runs = 1;

	if (plb_options_parse(&argc, argv, &o))
		return plb_usage_error();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		if (!strcmp(a, "--json")) {
			json = 1;
		} else if ((!strcmp(a, "--hold") || !strcmp(a, "--units") || !strcmp(a, "--runs")) && v) {
			double x = strtod(v, &end);
			if (*end || x < 0 || x > 1e15 || (a[2] != 'h' && (x != (double)(long long)x || x < 1))) {
				if (say)
					fprintf(stderr, "plb-null: %s %s: accepted: %s\n", a, v,
						a[2] == 'h' ? "seconds >= 0" : "an integer >= 1");
				return plb_usage_error();
			}
			*(a[2] == 'h' ? &hold : a[2] == 'u' ? &units : &runs) = x;
			i++;
		} else {
			if (say)
				fprintf(stderr, "plb-null: %s: unknown option or missing value; accepted: --config FILE --policy P --set K=V --units W --hold S --runs K --json\n", a);
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
		if (hold > 0) {
			struct timespec ts = {(time_t)hold, (long)((hold - (double)(time_t)hold) * 1e9)};
			nanosleep(&ts, NULL);
		}
		struct plb_job job = {.kernel = "null", .units = (uint64_t)units};
		for (long k = 0; k < (long)runs && !rc; k++)
			rc = plb_run(p, &job);
		if (rc)
			fprintf(stderr, "plb-null: %s\n", plb_errmsg(p));
		else
			rc = plb_report(p, stdout, json);
	}
	int frc = plb_finalize(p);
	return rc || frc ? 1 : 0;
}
