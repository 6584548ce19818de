/* plbsim: simulate a scenario (a cluster of emulated PUs described in an INI
 * file) under one or every balancing policy, in virtual time, and report
 * makespan, lower bound, ratio, idle time and balancer costs. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/balancer.h"
#include "runtime/config/config.h"
#include "runtime/sim/layout2d.h"
#include "runtime/sim/pipe.h"
#include "from_models.h"
#include "runtime/sim/sim.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: plbsim SCENARIO.ini [options]\n"
		"  --policy NAME   a policy below, or all (default: the scenario's [run] policy)\n"
		"  --seed N        random seed for the devices' noise (default: [run] seed)\n"
		"  --json          print the report as JSON (an array with --policy all)\n"
		"  --trace FILE    write the run as trace events (JSON: Perfetto, chrome://tracing,\n"
		"                  plb-plot; one policy)\n"
		"  --csv FILE      write every grant/done/fail/lost event as CSV (one policy)\n"
		"  --layout 2d     the 2-D blocked product C = A B instead: the emulated PUs\n"
		"                  partitioned in two levels (nodes' rectangles, PUs' slices);\n"
		"                  a model's compute is its time for one step on a slice of\n"
		"                  that many b x b blocks (docs/HIERARCHICAL.md)\n"
		"  --n N           with --layout 2d: the matrices' side, in elements\n"
		"  --block B       with --layout 2d: the block's side (default 128)\n"
		"  --partitioner P with --layout 2d: fpm (default), multiple-cpm, single-cpm,\n"
		"                  homogeneous, or all\n"
		"  --eps E         with --layout 2d: the nodes' (and a node's devices')\n"
		"                  imbalance the iterative partitioners stop at (default 0.05)\n"
		"  --runs N        run it N times, each starting from the models the one\n"
		"                  before left (plb's --runs with --models); report the last\n"
		"  --solve-us US   charge US microseconds per solve instead of the measured\n"
		"                  CPU time: runs become repeatable to the bit\n"
		"  --set KEY=VAL   override a [balancer] parameter (repeatable)\n"
		"  --params        list the balancer parameters with defaults and exit\n"
		"  --from-models FILE  print a scenario made from a models file (written by a\n"
		"                  run with --models) and SCENARIO.ini, the config it ran\n"
		"                  with: each PU's fitted curve; then plbsim that scenario\n"
		"  --kind TEXT     with --from-models: the kind of run (a file may hold several)\n"
		"  --units W       with --from-models: the domain's size; with a pipeline\n"
		"                  scenario: its instances (default: [run] units)\n"
		"a scenario with [op] sections is a pipeline run (README.md, Pipelines):\n"
		"  --scheduler NAME  fcfs, heft, padas, pams or all (default: [run] scheduler)\n"
		"  --window N      instances a node holds at once (default: [run] window)\n"
		"  --estimate-error E  error put into the expected times, 0 to 100\n"
		"                  (default: [run] estimate_error)\n"
		"  --learn         the schedulers start knowing no times (default: the true means)\n"
		"  --blind-copies  the schedulers leave the copies of data out of their speedups\n"
		"                  and finish times (the paper's; for comparison)\n"
		"  --help          this text\n"
		"policies:\n");
	for (int i = 0; plb__policy_name(i); i++)
		fprintf(f, "  %-9s %s\n", plb__policy_name(i), plb__policy_doc(plb__policy_name(i)));
}

static void list_params(void)
{
	const char *name, *doc;
	double def, lo, hi;
	printf("%-24s %10s  %-18s %s\n", "parameter", "default", "range", "meaning");
	for (int i = 0; plb__params_describe(i, &name, &def, &lo, &hi, &doc) == 0; i++) {
		char range[64];
		snprintf(range, sizeof range, "[%g, %g]", lo, hi);
		printf("%-24s %10g  %-18s %s\n", name, def, range, doc);
	}
}

/* Exit statuses: as the apps, 2 for a bad command line, 1 for a run that
 * failed: a bad scenario, an unwritable file, a run that stalled or lost
 * units. */
enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* A pipeline scenario's run under one scheduler, or all: a table (or
 * JSON lines), and for one scheduler where each op ran. */
static int pipeline(const struct plb__config *cfg, const char *sched, struct plb__pipe_opts o,
		    int json)
{
	static const char *const cls[PLB__OP_CLASSES] = {"cpu", "gpu", "mic"};
	int all = sched && !strcmp(sched, "all");
	char err[512] = "";
	if (!json)
		printf("%-6s %7s %8s %11s %9s %8s %11s %8s %10s\n", "sched", "window", "est_err",
		       "makespan_s", "instances", "tasks", "us_a_task", "copies", "copied_mb");
	for (int k = 0; all ? k < PLB__TASKS_NPOLICY : k < 1; k++) {
		o.scheduler = all ? plb__tasks_policy_name((enum plb__tasks_policy)k) : sched;
		struct plb__pipe_result r;
		double e = o.est_error >= 0 ? o.est_error : cfg->estimate_error;
		if (plb__sim_pipeline(cfg, &o, &r, err, sizeof err)) {
			fprintf(stderr, "plbsim: %s\n", err);
			return EXIT_FAIL;
		}
		if (json) {
			cJSON *obj = cJSON_CreateObject(), *ran = cJSON_CreateObject();
			cJSON_AddStringToObject(obj, "scheduler", r.scheduler);
			cJSON_AddNumberToObject(obj, "window", r.window);
			cJSON_AddNumberToObject(obj, "estimate_error", e);
			cJSON_AddNumberToObject(obj, "makespan_s", r.makespan_s);
			cJSON_AddNumberToObject(obj, "instances", (double)r.instances);
			cJSON_AddNumberToObject(obj, "tasks", (double)r.tasks);
			cJSON_AddNumberToObject(obj, "sched_us_task", r.sched_us_task);
			cJSON_AddNumberToObject(obj, "copies", (double)r.copies);
			cJSON_AddNumberToObject(obj, "copy_mb", r.copy_mb);
			cJSON_AddNumberToObject(obj, "copy_s", r.copy_s);
			for (int m = 0; m < cfg->nops; m++) {
				cJSON *op = cJSON_AddObjectToObject(ran, cfg->ops[m].name);
				for (int c = 0; c < PLB__OP_CLASSES; c++)
					cJSON_AddNumberToObject(op, cls[c], (double)r.ran[m][c]);
			}
			cJSON_AddItemToObject(obj, "ran", ran);
			char *txt = cJSON_PrintUnformatted(obj);
			puts(txt);
			free(txt);
			cJSON_Delete(obj);
			continue;
		}
		printf("%-6s %7d %8.2f %11.4f %9ld %8ld %11.2f %8ld %10.0f\n", r.scheduler, r.window, e,
		       r.makespan_s, r.instances, r.tasks, r.sched_us_task, r.copies, r.copy_mb);
		if (all)
			continue;
		printf("\n%-16s %9s %9s %9s   (tasks run on PUs of each class)\n", "op", cls[0], cls[1],
		       cls[2]);
		for (int m = 0; m < cfg->nops; m++)
			printf("%-16s %9ld %9ld %9ld\n", cfg->ops[m].name, r.ran[m][0], r.ran[m][1],
			       r.ran[m][2]);
		printf("%-16s %9d %9d %9d\n", "PUs", r.pus[0], r.pus[1], r.pus[2]);
		for (int c = 0; c < PLB__OP_CLASSES; c++)
			if (r.pus[c])
				printf("%s busy %.1f%% of the makespan\n", cls[c],
				       100 * r.busy_s[c] / r.pus[c] / r.makespan_s);
	}
	return 0;
}

/* The 2-D layout's partitioners (--layout 2d): one, or all as a table
 * (or JSON lines). */
static int layout2d(const struct plb__config *cfg, const char *part, long n, int b, double eps,
		    uint64_t seed, int json)
{
	int all = !part || !strcmp(part, "all");
	char err[512] = "";
	if (!json && all)
		printf("%-13s %11s %11s %7s %11s %6s %7s %9s %6s\n", "partitioner", "step_s", "bound_s",
		       "ratio", "product_s", "iters", "benches", "converged", "hp");
	for (int k = 0; all ? k < PLB__HPART_NMETHOD : k < 1; k++) {
		enum plb__hpart_method m = (enum plb__hpart_method)k;
		for (int i = 0; !all && i < PLB__HPART_NMETHOD; i++)
			if (!strcmp(part, plb__hpart_method_name((enum plb__hpart_method)i)))
				m = (enum plb__hpart_method)i;
		struct plb__sim2d_opts o = {.n = n, .b = b, .method = m, .seed = seed, .eps = eps};
		struct plb__sim2d_result r;
		if (plb__sim2d_run(cfg, &o, &r, err, sizeof err)) {
			fprintf(stderr, "plbsim: %s\n", err);
			return EXIT_FAIL;
		}
		const struct plb__hpart *h = &r.part;
		double hp = (double)h->half_perimeters / h->half_perimeters_lb;
		if (json) {
			cJSON *obj = cJSON_CreateObject();
			cJSON_AddStringToObject(obj, "partitioner", plb__hpart_method_name(m));
			cJSON_AddNumberToObject(obj, "blocks", r.N);
			cJSON_AddNumberToObject(obj, "step_s", r.step_s);
			cJSON_AddNumberToObject(obj, "bound_s", r.bound_s);
			cJSON_AddNumberToObject(obj, "ratio", r.step_s / r.bound_s);
			cJSON_AddNumberToObject(obj, "product_s", r.product_s);
			cJSON_AddNumberToObject(obj, "node_iterations", h->inter_iters);
			cJSON_AddNumberToObject(obj, "benchmarks", h->benches);
			cJSON_AddBoolToObject(obj, "converged", h->converged);
			cJSON_AddNumberToObject(obj, "half_perimeters", (double)h->half_perimeters);
			cJSON_AddNumberToObject(obj, "half_perimeters_lb", h->half_perimeters_lb);
			cJSON_AddNumberToObject(obj, "pivot_bytes_step", r.bytes_step);
			cJSON_AddNumberToObject(obj, "pivot_bytes_net", r.bytes_net);
			cJSON_AddNumberToObject(obj, "memory_mb_max", r.mem_max_mb);
			cJSON_AddNumberToObject(obj, "bytes_1d", r.bytes_1d);
			char *txt = cJSON_PrintUnformatted(obj);
			puts(txt);
			free(txt);
			cJSON_Delete(obj);
		} else if (all) {
			printf("%-13s %11.6g %11.6g %7.4f %11.6g %6d %7d %9s %6.4f\n", plb__hpart_method_name(m),
			       r.step_s, r.bound_s, r.step_s / r.bound_s, r.product_s, h->inter_iters,
			       h->benches,
			       m == PLB__HPART_SCPM || m == PLB__HPART_HOMOG ? "-" : h->converged ? "yes" : "no",
			       hp);
		} else {
			plb__sim2d_print(cfg, &r, stdout);
		}
		plb__sim2d_result_fini(&r);
	}
	return 0;
}

static int valid_policy(const char *name)
{
	for (int i = 0; plb__policy_name(i); i++)
		if (strcmp(plb__policy_name(i), name) == 0)
			return 1;
	return 0;
}

/* Runs cfg `runs` times under o's policy, each run's noise seeded one
 * past the one before and its models started from what the run before
 * left (as plb's iterations and its models file carry them); the last
 * run's result in *res, and only the last writes the CSV and trace. */
static int warm_runs(const struct plb__config *cfg, const struct plb__sim_opts *o0, int runs,
		     struct plb__sim_result *res, char *err, size_t errlen)
{
	struct plb__sim_opts o = *o0;
	struct plb__sim_kept kept;
	if (runs == 1)
		return plb__sim_run(cfg, &o, res, err, errlen);
	if (plb__sim_kept_init(&kept, cfg->npu)) {
		snprintf(err, errlen, "out of memory");
		return PLB_ENOMEM;
	}
	o.kept = &kept;
	int rc = 0;
	for (int r = 0; r < runs && !rc; r++) {
		o.seed = o0->seed + (uint64_t)r;
		o.csv = r == runs - 1 ? o0->csv : NULL;
		o.trace = r == runs - 1 ? o0->trace : NULL;
		rc = plb__sim_run(cfg, &o, res, err, errlen);
		if (!rc && r < runs - 1)
			plb__sim_result_fini(res);
	}
	plb__sim_kept_fini(&kept);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"policy", required_argument, 0, 'p'},
		{"seed", required_argument, 0, 's'},
		{"json", no_argument, 0, 'j'},
		{"trace", required_argument, 0, 't'},
		{"csv", required_argument, 0, 'c'},
		{"solve-us", required_argument, 0, 'u'},
		{"set", required_argument, 0, 'S'},
		{"params", no_argument, 0, 'P'},
		{"scheduler", required_argument, 0, 'K'},
		{"window", required_argument, 0, 'W'},
		{"estimate-error", required_argument, 0, 'E'},
		{"learn", no_argument, 0, 'L'},
		{"blind-copies", no_argument, 0, 'B'},
		{"from-models", required_argument, 0, 'M'},
		{"kind", required_argument, 0, 'k'},
		{"units", required_argument, 0, 'U'},
		{"runs", required_argument, 0, 'R'},
		{"layout", required_argument, 0, 'Y'},
		{"n", required_argument, 0, 'N'},
		{"block", required_argument, 0, 'b'},
		{"eps", required_argument, 0, 'e'},
		{"partitioner", required_argument, 0, 'Q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *policy = NULL, *trace_path = NULL, *csv_path = NULL, *sched = NULL;
	struct plb__pipe_opts po = {.est_error = -1};
	const char *from_models = NULL, *kind = NULL;
	double units = 0;
	long lv;
	const char *sets[64];
	int nsets = 0, json = 0, have_seed = 0, runs = 1, layout = 0, block = 128;
	long side = 0;
	const char *partitioner = NULL;
	double eps = 0;
	unsigned long long seed = 0;
	double solve_us = NAN;
	char *end;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy = optarg;
			break;
		case 's':
			errno = 0;
			seed = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || optarg[0] == '-') {
				fprintf(stderr, "plbsim: --seed: '%s' is not a non-negative integer\n", optarg);
				return EXIT_USAGE;
			}
			have_seed = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 't':
			trace_path = optarg;
			break;
		case 'c':
			csv_path = optarg;
			break;
		case 'u':
			solve_us = strtod(optarg, &end);
			if (*end || end == optarg || !(solve_us >= 0) || !isfinite(solve_us)) {
				fprintf(stderr, "plbsim: --solve-us: '%s' is not a number >= 0\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'S':
			if (nsets == 64) {
				fprintf(stderr, "plbsim: --set: at most 64 of them\n");
				return EXIT_USAGE;
			}
			sets[nsets++] = optarg;
			break;
		case 'P':
			list_params();
			return 0;
		case 'K': {
			enum plb__tasks_policy tp;
			if (strcmp(optarg, "all") && plb__tasks_policy_parse(optarg, &tp)) {
				fprintf(stderr, "plbsim: --scheduler: '%s'; accepted: %s | all\n", optarg,
					plb__tasks_policies_accepted());
				return EXIT_USAGE;
			}
			sched = optarg;
			break;
		}
		case 'W':
			errno = 0;
			lv = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || lv < 1 || lv > 1000000) {
				fprintf(stderr, "plbsim: --window: '%s'; accepted: an integer in [1, 1e6]\n", optarg);
				return EXIT_USAGE;
			}
			po.window = (int)lv;
			break;
		case 'E':
			po.est_error = strtod(optarg, &end);
			if (*end || end == optarg || !(po.est_error >= 0 && po.est_error <= 100)) {
				fprintf(stderr, "plbsim: --estimate-error: '%s'; accepted: a number in [0, 100]\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'L':
			po.learn = 1;
			break;
		case 'B':
			po.blind_copies = 1;
			break;
		case 'M':
			from_models = optarg;
			break;
		case 'k':
			kind = optarg;
			break;
		case 'U':
			units = strtod(optarg, &end);
			if (*end || end == optarg || !(units >= 1 && units <= 9007199254740992.0) ||
			    units != floor(units)) {
				fprintf(stderr, "plbsim: --units: '%s'; accepted: an integer in [1, 2^53]\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'R':
			errno = 0;
			lv = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || lv < 1 || lv > 1000) {
				fprintf(stderr, "plbsim: --runs: '%s'; accepted: an integer in [1, 1000]\n", optarg);
				return EXIT_USAGE;
			}
			runs = (int)lv;
			break;
		case 'Y':
			if (strcmp(optarg, "2d")) {
				fprintf(stderr, "plbsim: --layout: '%s'; accepted: 2d\n", optarg);
				return EXIT_USAGE;
			}
			layout = 2;
			break;
		case 'N':
			errno = 0;
			side = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || side < 1 || side > (1L << 40)) {
				fprintf(stderr, "plbsim: --n: '%s'; accepted: an integer in [1, 2^40]\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'b':
			errno = 0;
			lv = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || lv < 1 || lv > 65536) {
				fprintf(stderr, "plbsim: --block: '%s'; accepted: an integer in [1, 65536]\n", optarg);
				return EXIT_USAGE;
			}
			block = (int)lv;
			break;
		case 'e': {
			char *e2;
			eps = strtod(optarg, &e2);
			if (*e2 || e2 == optarg || !(eps > 0 && eps < 1)) {
				fprintf(stderr, "plbsim: --eps: '%s'; accepted: a number in (0, 1)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'Q': {
			int ok = !strcmp(optarg, "all");
			for (int i = 0; i < PLB__HPART_NMETHOD; i++)
				ok |= !strcmp(optarg, plb__hpart_method_name((enum plb__hpart_method)i));
			if (!ok) {
				fprintf(stderr, "plbsim: --partitioner: '%s'; accepted: fpm | multiple-cpm | single-cpm | homogeneous | all\n",
					optarg);
				return EXIT_USAGE;
			}
			partitioner = optarg;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "plbsim: unknown or incomplete option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "plbsim: expected exactly one scenario file\n");
		usage(stderr);
		return EXIT_USAGE;
	}

	if (from_models)
		return plbsim_from_models(argv[optind], from_models, kind, units, stdout);
	if (kind) {
		fprintf(stderr, "plbsim: --kind goes with --from-models\n");
		return EXIT_USAGE;
	}
	struct plb__config cfg;
	char err[1024];
	if (plb__config_load(argv[optind], &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "plbsim: %s\n", err);
		return EXIT_FAIL;
	}
	if (cfg.warning[0])
		fprintf(stderr, "plbsim: warning: %s\n", cfg.warning);
	int rc = EXIT_USAGE;
	for (int i = 0; i < nsets; i++) {
		if (plb__params_assign(&cfg.params, sets[i], err, sizeof err) != 0) {
			fprintf(stderr, "plbsim: --set %s\n", err);
			goto out;
		}
	}
	if (plb__params_check(&cfg.params, cfg.npu, err, sizeof err)) {
		fprintf(stderr, "plbsim: %s: [balancer] %s\n", cfg.path, err);
		goto out;
	}
	if (!layout && (side || block != 128 || partitioner || eps > 0)) {
		fprintf(stderr, "plbsim: --n, --block, --partitioner and --eps go with --layout 2d\n");
		goto out;
	}
	if (layout) {
		if (!side) {
			fprintf(stderr, "plbsim: --layout 2d needs --n N, the matrices' side in elements\n");
			goto out;
		}
		if (policy || trace_path || csv_path || nsets || runs > 1 || cfg.nops) {
			fprintf(stderr, "plbsim: --layout 2d partitions the scenario's emulated PUs for the 2-D product; it takes --n, --block, --partitioner, --eps, --seed and --json%s\n",
				cfg.nops ? " (and no pipeline scenario)" : "");
			goto out;
		}
		rc = layout2d(&cfg, partitioner ? partitioner : "fpm", side, block, eps,
			      have_seed ? seed : cfg.seed, json);
		goto out;
	}
	if (units > 0 && !cfg.nops) {
		fprintf(stderr, "plbsim: --units goes with --from-models or a pipeline scenario (its instances)\n");
		goto out;
	}
	if (cfg.nops) {
		if (units > 0)
			cfg.units = units;
		if (policy || trace_path || csv_path || nsets) {
			fprintf(stderr, "plbsim: %s is a pipeline (it has [op] sections): --%s does not apply; accepted: --scheduler, --window, --units, --estimate-error, --learn, --blind-copies, --seed, --json\n",
				cfg.path, policy ? "policy" : trace_path ? "trace" : csv_path ? "csv" : "set");
			goto out;
		}
		po.seed = have_seed ? seed : cfg.seed;
		rc = pipeline(&cfg, sched, po, json);
		goto out;
	}
	if (sched || po.window || po.est_error >= 0 || po.learn || po.blind_copies) {
		fprintf(stderr, "plbsim: --scheduler, --window, --estimate-error, --learn and --blind-copies are for pipeline scenarios (with [op] sections); %s has none\n",
			cfg.path);
		goto out;
	}
	if (!policy)
		policy = cfg.policy;
	int all = strcmp(policy, "all") == 0;
	if (!all && !valid_policy(policy)) {
		char names[256];
		fprintf(stderr, "plbsim: --policy: unknown policy '%s'; accepted: %s all\n",
			policy, plb__policy_names(names, sizeof names, " "));
		goto out;
	}
	if (all && (trace_path || csv_path)) {
		fprintf(stderr, "plbsim: --%s needs a single --policy\n", trace_path ? "trace" : "csv");
		goto out;
	}
	for (int i = 0; i < cfg.nnodes; i++) {
		char real[128];
		if (plb__node_npu(&cfg.nodes[i], 1))
			fprintf(stderr, "plbsim: %s:%d: node %s: real devices (%s) are not "
				"simulated; only its emu PUs are\n", cfg.path, cfg.nodes[i].line,
				cfg.nodes[i].name, plb__pu_keys(real, sizeof real, 1));
	}

	struct plb__sim_opts o = {
		.seed = have_seed ? seed : cfg.seed,
		.solve_us = isnan(solve_us) ? cfg.solve_us : solve_us,
	};
	if (csv_path && !(o.csv = fopen(csv_path, "w"))) {
		fprintf(stderr, "plbsim: --csv: cannot write %s: %s\n", csv_path, strerror(errno));
		rc = EXIT_FAIL;
		goto out;
	}
	if (trace_path && plb__trace_open(&o.trace, trace_path, 0, err, sizeof err)) {
		fprintf(stderr, "plbsim: %s\n", err);
		rc = EXIT_FAIL;
		goto out;
	}
	cJSON *arr = json && all ? cJSON_CreateArray() : NULL;
	if (all && !json && runs > 1)
		printf("run %d of %d of each policy, with the models its runs before left\n", runs, runs);
	if (all && !json)
		printf("%-8s %10s %10s %10s %7s %9s %7s %5s %6s %9s %s\n", "policy",
		       "makespan", "T_lb", "T_eq", "ratio", "imbalance", "blocks", "gap",
		       "solves", "solve_ms", "coverage");
	rc = 0;
	for (int k = 0; all ? plb__policy_name(k) != NULL : k < 1; k++) {
		o.policy = all ? plb__policy_name(k) : policy;
		struct plb__sim_result res;
		if (warm_runs(&cfg, &o, runs, &res, err, sizeof err) != 0) {
			fprintf(stderr, "plbsim: %s: %s\n", o.policy, err);
			rc = EXIT_FAIL;
			break;
		}
		const struct plb__report *r = &res.rep;
		if (res.stalled || !r->coverage_ok) {
			fprintf(stderr, "plbsim: %s: run %s (%llu of %llu units done)\n", o.policy,
				res.stalled ? "stalled: no PU left to finish it" : "lost or repeated units",
				(unsigned long long)r->units_done, (unsigned long long)r->units);
			rc = EXIT_FAIL;
		}
		if (json) {
			cJSON *obj = plb__report_json(r);
			if (runs > 1 && obj)
				cJSON_AddNumberToObject(obj, "runs", runs);
			if (arr) {
				cJSON_AddItemToArray(arr, obj);
			} else {
				char *txt = cJSON_Print(obj);
				puts(txt);
				free(txt);
				cJSON_Delete(obj);
			}
		} else if (all) {
			printf("%-8s %10.3f %10.3f %10.3f %7.4f %9.4f %7ld %5ld %6ld %9.3f %s\n",
			       o.policy, r->makespan_s, r->lower_bound_s, r->eq_optimum_s,
			       plb__report_ratio(r), r->imbalance, r->blocks, r->gap_blocks,
			       r->solves, r->solver_ms_mean, r->coverage_ok ? "ok" : "FAILED");
		} else {
			if (runs > 1)
				printf("run %d of %d, with the models the runs before left (seeds %llu-%llu)\n",
				       runs, runs, (unsigned long long)o.seed,
				       (unsigned long long)o.seed + (unsigned long long)runs - 1);
			plb__report_text(r, stdout);
		}
		plb__sim_result_fini(&res);
	}
	if (arr) {
		char *txt = cJSON_Print(arr);
		puts(txt);
		free(txt);
		cJSON_Delete(arr);
	}
	if (o.csv && fclose(o.csv)) {
		fprintf(stderr, "plbsim: --csv %s: writing it failed: %s\n", csv_path, strerror(errno));
		rc = rc ? rc : EXIT_FAIL;
	}
	if (plb__trace_close(o.trace, err, sizeof err)) {
		fprintf(stderr, "plbsim: %s\n", err);
		rc = rc ? rc : EXIT_FAIL;
	}
out:
	plb__config_fini(&cfg);
	return rc;
}
