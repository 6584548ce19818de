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
 * (a failure is an error, exit 1).
 *
 * A config with [op] sections (a plbsim pipeline scenario) is run as a
 * pipeline (plb_run_pipeline): each unit an instance, each [op] an
 * operation whose tasks do nothing but count themselves in their
 * instance's output (each run checks every task ran once); emulated PUs
 * take the [op] times of their model's class, so the run is the
 * scenario plbsim runs. --scheduler and --window as plbsim's. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apps/app.h"
#include "kernels/null/null.h"
#include "plb.h"
#include "runtime/config/config.h"      /* a pipeline scenario's [op] sections */

static void pause_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	if (s > 0)
		nanosleep(&ts, NULL);
}

static const char *const schedulers[] = {"fcfs", "heft", "padas", "pams", NULL};

/* Is the config (already read by plb_init) a pipeline scenario? */
static int has_ops(const char *config)
{
	struct plb__config cfg;
	char err[600];
	if (plb__config_load(config, &cfg, err, sizeof err))
		return 0;
	int n = cfg.nops;
	plb__config_fini(&cfg);
	return n > 0;
}

/* The config's [op] sections as a pipeline of counting tasks, runs times
 * (each checked), the last one reported. 0, or 1 after saying why. */
static int run_pipeline(plb_t *p, const char *config, long units, const char *sched, long window,
			const struct app_args *a)
{
	struct plb__config cfg;
	char err[600];
	if (plb__config_load(config, &cfg, err, sizeof err)) {
		fprintf(stderr, "plb-null: %s\n", err);
		return 1;
	}
	struct plb_op ops[64];
	uint64_t want = 0, W = units ? (uint64_t)units : (uint64_t)cfg.units;
	int rc = 0;
	for (int m = 0; m < cfg.nops && m < 64 && !rc; m++) {
		const struct plb__op *c = &cfg.ops[m];
		ops[m] = (struct plb_op){PLB_INIT, .name = c->name, .kernel = "null.task",
					 .tasks = c->tasks ? c->tasks : PLB_TASKS_LATER};
		want += (uint64_t)c->tasks;
		for (int j = 0, k = 0; j < m && !rc; j++) {
			if (!(c->after_mask >> j & 1))
				continue;
			if (k == PLB_MAX_AFTER) {
				fprintf(stderr, "plb-null: %s:%d: [op %s]: waits for more than %d ops; accepted: at most %d\n",
					config, c->line, c->name, PLB_MAX_AFTER, PLB_MAX_AFTER);
				rc = 1;
			} else {
				ops[m].after[k++] = cfg.ops[j].name;
			}
		}
	}
	uint64_t *out = W ? calloc((size_t)W, sizeof *out) : NULL;
	if (!rc && !out) {
		fprintf(stderr, "plb-null: %s\n", W ? "out of memory" : "no units: --units W or [run] units");
		rc = 1;
	}
	struct plb_pipeline pl = {PLB_INIT, .ops = ops, .nops = cfg.nops, .instances = W,
				  .out = out, .out_unit = sizeof *out, .scheduler = sched,
				  .window = (int)window};
	for (long k = 0; k < a->runs && !rc; k++) {
		memset(out, 0, (size_t)W * sizeof *out);
		if ((rc = plb_run_pipeline(p, &pl))) {
			fprintf(stderr, "plb-null: %s\n", plb_errmsg(p));
			break;
		}
		for (uint64_t i = 0; i < W && !rc; i++)
			if (out[i] != want) {
				fprintf(stderr, "plb-null: run %ld: instance %llu ran %llu tasks; expected %llu\n",
					k + 1, (unsigned long long)i, (unsigned long long)out[i],
					(unsigned long long)want);
				rc = 1;
			}
	}
	if (!rc)
		rc = plb_report(p, stdout, a->json) ? 1 : 0;
	fflush(stdout);
	free(out);
	plb__config_fini(&cfg);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&plb__null_kernel, &plb__null_task_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 2};
	struct app_args a = {.name = "plb-null", .synopsis = "mpirun -np K plb-null --config FILE [options]",
			     .runs = 1};
	double hold = 0, linger = 0;
	long units = 0, window = 0;
	const char *sched = NULL;
	const struct app_opt opts[] = {
		APP_LONG_OPT("--units", "W", &units, 1, 1e15, "an integer in [1, 1e15]",
			     "the domain's units (default: the file's [run] units)"),
		APP_REAL_OPT("--hold", "S", &hold, 0, 1e6, "seconds from 0 to 1e6",
			     "wait S seconds before the run (workers idle meanwhile)"),
		APP_REAL_OPT("--linger", "S", &linger, 0, 1e6, "seconds from 0 to 1e6",
			     "wait S seconds after the report, before ending"),
		APP_LONG_OPT("--runs", "K", &a.runs, 1, 1e15, "an integer in [1, 1e15]",
			     "K runs, each checked, the last one reported (default 1)"),
		APP_WORD_OPT("--scheduler", "NAME", &sched, schedulers, "fcfs, heft, padas or pams",
			     "a pipeline scenario's node scheduler (default: its\n"
			     "[run] scheduler, else pams)"),
		APP_LONG_OPT("--window", "N", &window, 1, 1 << 20, "an integer in [1, 2^20]",
			     "a pipeline scenario's instances a node holds at once"),
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
	else if (!rc && has_ops(o.config)) {
		pause_s(hold);
		rc = run_pipeline(p, o.config, units, sched, window, &a);
		pause_s(linger);
	} else if (!rc) {
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
