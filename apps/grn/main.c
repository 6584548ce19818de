/* plb-grn: gene-regulatory-network inference by exhaustive feature
 * selection over the cluster. The target genes are the domain: a block of
 * targets goes to a PU, which scores every subset of --size other genes
 * as predictors of each (mean conditional entropy over the discretised
 * expression data, the run's shared data) and returns each target's best
 * subset and its score.
 *
 *   mpirun -np K plb-grn --config FILE (--genes N [--samples S] | --input FILE)
 *          [--size K] [--levels C] [--alpha A] [--noise P] [--seed S]
 *          [--verify] [--output FILE] [--json]
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apps/app.h"
#include "kernels/grn/grn.h"
#include "plb.h"

/* A PU's state: the shared data and the score's tables. */
struct grn_state {
	const void *shared;
	struct plb__grn_tables tab;
};

static int grn_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	(void)pu;
	if (plb__grn_shared_ok(shared, bytes))
		return PLB_EINVAL;
	const struct plb__grn_shared *h = shared;
	struct grn_state *st = calloc(1, sizeof *st);
	if (!st || plb__grn_tables_make(h->s, h->alpha, &st->tab)) {
		free(st);
		return PLB_ENOMEM;
	}
	st->shared = shared;
	*state = st;
	return 0;
}

static int grn_cpu_run(void *state, const struct plb_block *b)
{
	const struct grn_state *st = state;
	return plb__grn_cpu(st->shared, &st->tab, b->offset, (size_t)b->units, b->out);
}

static void grn_fini(void *state)
{
	struct grn_state *st = state;
	if (st)
		plb__grn_tables_free(&st->tab);
	free(st);
}

#ifdef PLB_HAVE_CUDA
static int grn_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			 void **state)
{
	char err[256];
	struct grn_state *st;
	int rc = grn_init(pu, shared, bytes, (void **)&st);
	if (rc)
		return rc;
	rc = plb__grn_cuda_create(pu->device, shared, &st->tab, (struct plb__grn_cuda **)state, err,
				  sizeof err);
	if (rc)
		fprintf(stderr, "plb-grn: %s: %s\n", pu->name, err);
	grn_fini(st);   /* the device holds its own copy of the tables */
	return rc;
}

static int grn_cuda_run(void *state, const struct plb_block *b)
{
	return plb__grn_cuda_run(state, b->offset, (size_t)b->units, b->out);
}

static void grn_cuda_fini(void *state)
{
	plb__grn_cuda_destroy(state);
}
#endif

static const struct plb_kernel grn_kernel = {
	PLB_INIT,
	.name = "grn",
	.cpu = {.init = grn_init, .run = grn_cpu_run, .fini = grn_fini},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = grn_cuda_init, .run = grn_cuda_run, .fini = grn_cuda_fini},
#endif
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np K plb-grn --config FILE (--genes N | --input FILE) [options]\n"
		"  --config FILE      nodes and devices (INI; see README.md)\n"
		"  --genes N          a synthetic network of N genes drawn from --seed: a fifth\n"
		"                     of them regulate the others, --size regulators a gene\n"
		"  --samples S        samples of the synthetic network (default 100)\n"
		"  --noise P          the fraction of samples where a regulated gene ignores its\n"
		"                     regulators (default 0.05)\n"
		"  --input FILE       an expression matrix: one gene a line, its name then its\n"
		"                     values, tab- (TSV) or comma-separated (CSV); an optional\n"
		"                     first line of column names; '#' lines are comments\n"
		"  --size K           predictors a subset, 1 to 3 (default 2)\n"
		"  --levels C         levels each gene's values are cut into by rank, 2 to 8\n"
		"                     (default 3; C^(K+1) <= 256)\n"
		"  --alpha A          penalty weight of instances the samples do not show\n"
		"                     (default 1; 0: the plain conditional entropy)\n"
		"  --seed S           seed of the synthetic network (default 1)\n"
		"  --verify           check every target's best subset and score against the\n"
		"                     serial reference (about the run's work again, on one\n"
		"                     core); a synthetic network also reports how many true\n"
		"                     regulators were found\n"
		"  --output FILE      write each target's best predictors and score as TSV\n"
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

static int write_tsv(const char *path, char *const *names, const struct plb__grn_best *best,
		     int n, int k)
{
	FILE *f = fopen(path, "w");
	int bad = !f || fprintf(f, "target") < 0;
	for (int j = 0; j < k && !bad; j++)
		bad = fprintf(f, "\tpredictor%d", j + 1) < 0;
	bad = bad || fprintf(f, "\tmce_bits\n") < 0;
	for (int t = 0; t < n && !bad; t++) {
		bad = fprintf(f, "%s", names[t]) < 0;
		for (int j = 0; j < k && !bad; j++)
			bad = fprintf(f, "\t%s", names[best[t].reg[j]]) < 0;
		bad = bad || fprintf(f, "\t%.17g\n", best[t].score) < 0;
	}
	if ((f && fclose(f)) || bad) {
		fprintf(stderr, "plb-grn: --output %s: cannot write: %s\n", path, strerror(errno));
		return PLB_EIO;
	}
	return 0;
}

/* Every target against the serial reference, then (truth given) how many
 * true regulators the answer holds. Returns 0, 3 (a mismatch) or an
 * error. */
static int verify(const uint8_t *lev, int n, int s, int levels, int k, double alpha,
		  const struct plb__grn_best *best, const int32_t *truth)
{
	struct plb__grn_tables tab;
	int rc = plb__grn_tables_make(s, alpha, &tab), bad = -1;
	if (rc)
		return rc;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int t = 0; t < n && !rc; t++) {
		struct plb__grn_best ref;
		rc = plb__grn_ref(lev, n, s, levels, k, &tab, t, &ref);
		if (!rc && bad < 0 && (memcmp(ref.reg, best[t].reg, sizeof ref.reg) || ref.score != best[t].score))
			bad = t;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	plb__grn_tables_free(&tab);
	if (rc)
		return rc;
	fprintf(stderr, "plb-grn: verify (serial reference, every target, %.2f s): %s",
		(double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
		bad < 0 ? "ok" : "FAILED");
	if (bad >= 0)
		fprintf(stderr, ", target %d's best subset or score differs", bad);
	fprintf(stderr, "\n");
	if (truth) {
		long found = 0, all = 0, exact = 0, regulated = 0;
		for (int t = 0; t < n; t++) {
			if (truth[(size_t)t * k] < 0)
				continue;
			int hits = 0;
			for (int j = 0; j < k; j++)
				for (int q = 0; q < k; q++)
					hits += best[t].reg[q] == truth[(size_t)t * k + j];
			found += hits;
			all += k;
			exact += hits == k;
			regulated++;
		}
		fprintf(stderr, "plb-grn: true regulators found: %ld of %ld (%.1f%%); targets with exactly their regulators: %ld of %ld\n",
			found, all, all ? 100.0 * (double)found / (double)all : 0.0, exact, regulated);
	}
	return bad < 0 ? 0 : 3;
}

static int parse_double(const struct app_args *a, const char *opt, const char *v, double lo,
			double hi, const char *accepted, double *out)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= lo && x <= hi)) {
		if (a->say)
			fprintf(stderr, "%s: %s %s: accepted: %s\n", a->name, opt, v, accepted);
		return -1;
	}
	*out = x;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&grn_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-grn", .usage = usage, .say = plb_launch_rank() == 0,
			     .runs = 1, .seed = 1, .fixed = 1};
	long genes = 0, samples = 0, size = 2, levels = 3;
	double alpha = 1, noise = -1;
	const char *input = NULL, *output = NULL;
	int status;

	if (plb_options_parse(&argc, argv, &o))
		return plb_usage_error();
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int k2 = app_common(&a, argc, argv, &i, &status);
		if (k2 == APP_EXIT)
			return status;
		if (k2 == APP_TAKEN)
			continue;
		int bad = 0;
		if (!strcmp(opt, "--genes") && v)
			bad = app_long(&a, opt, argv[++i], 2, 1 << 20, "an integer in [2, 1048576]", &genes);
		else if (!strcmp(opt, "--samples") && v)
			bad = app_long(&a, opt, argv[++i], 1, PLB__GRN_MAX_SAMPLES, "an integer in [1, 16777216]", &samples);
		else if (!strcmp(opt, "--size") && v)
			bad = app_long(&a, opt, argv[++i], 1, PLB__GRN_MAX_K, "1, 2 or 3", &size);
		else if (!strcmp(opt, "--levels") && v)
			bad = app_long(&a, opt, argv[++i], 2, PLB__GRN_MAX_LEVELS, "an integer in [2, 8]", &levels);
		else if (!strcmp(opt, "--alpha") && v)
			bad = parse_double(&a, opt, argv[++i], 0, 1e9, "a number in [0, 1e9]", &alpha);
		else if (!strcmp(opt, "--noise") && v)
			bad = parse_double(&a, opt, argv[++i], 0, 1, "a number in [0, 1]", &noise);
		else if (!strcmp(opt, "--input") && v)
			input = argv[++i];
		else if (!strcmp(opt, "--output") && v)
			output = argv[++i];
		else
			return app_unknown(&a, opt);
		if (bad)
			return plb_usage_error();
	}
	int cells = 1;
	for (long j = 0; j <= size; j++)
		cells *= (int)levels;
	const char *wrong = !o.config ? "--config FILE is required"
			    : !genes == !input ? (input ? "--genes and --input exclude each other"
						 : "--genes N or --input FILE is required")
			    : input && (samples || noise >= 0) ? "--samples and --noise are for --genes only"
			    : cells > PLB__GRN_MAX_CELLS ? "--levels C and --size K: C^(K+1) must be at most 256"
			    : NULL;
	if (wrong) {
		if (a.say) {
			fprintf(stderr, "plb-grn: %s\n", wrong);
			usage(stderr);
		}
		return plb_usage_error();
	}
	samples = samples ? samples : 100;
	noise = noise >= 0 ? noise : 0.05;

	/* the master reads or draws the data before plb_init, so that a bad
	 * file stops it at once with file:line; the workers never read it */
	float *expr = NULL;
	char **names = NULL;
	int32_t *truth = NULL;
	uint8_t *lev = NULL;
	void *sh = NULL;
	struct plb__grn_best *best = NULL;
	int n = (int)genes, s = (int)samples, k = (int)size, c = (int)levels, rc = 0;
	if (a.say) {
		char err[512];
		if (input) {
			if ((rc = plb__grn_read(input, &expr, &names, &n, &s, err, sizeof err)))
				fprintf(stderr, "plb-grn: --input %s\n", err);
		}
		if (!rc && n < k + 1) {
			rc = PLB_EINVAL;
			fprintf(stderr, "plb-grn: %d genes: --size %d needs at least %d\n", n, k, k + 1);
		} else if (rc || input) {
			/* read, or not */
		} else if (!(expr = malloc((size_t)n * (size_t)s * sizeof *expr)) ||
			   !(truth = malloc((size_t)n * (size_t)k * sizeof *truth)) ||
			   !(names = calloc((size_t)n, sizeof *names))) {
			rc = PLB_ENOMEM;
			fprintf(stderr, "plb-grn: out of memory for %d genes x %d samples\n", n, s);
		} else if (!(rc = plb__grn_generate(n, s, c, k, noise, (uint64_t)a.seed, expr, truth))) {
			int w = snprintf(NULL, 0, "%d", n - 1);
			for (int g = 0; g < n && !rc; g++)
				if (!(names[g] = malloc((size_t)w + 2)))
					rc = PLB_ENOMEM;
				else
					snprintf(names[g], (size_t)w + 2, "G%0*d", w, g);
			if (rc)
				fprintf(stderr, "plb-grn: out of memory for gene names\n");
		}
	}
	plb_t *p;
	int irc = plb_init(&argc, &argv, &o, &p);
	if ((status = app_worker(p, irc)) >= 0) {
		free(expr);
		free(truth);
		plb__grn_names_free(names, n);
		return status;
	}
	if (rc)
		goto out;
	lev = malloc((size_t)n * (size_t)s);
	sh = malloc(plb__grn_shared_bytes(n, s, c));
	best = malloc((size_t)n * sizeof *best);
	if (!lev || !sh || !best || plb__grn_discretise(expr, n, s, c, lev)) {
		fprintf(stderr, "plb-grn: out of memory for %d genes x %d samples\n", n, s);
		rc = PLB_ENOMEM;
		goto out;
	}
	plb__grn_share(sh, lev, n, s, c, k, alpha);
	char sig[96];
	snprintf(sig, sizeof sig, "genes=%d samples=%d size=%d levels=%d", n, s, k, c);
	struct plb_job job = {
		PLB_INIT,
		.kernel = "grn", .units = (uint64_t)n, .signature = sig,
		.shared = sh, .shared_bytes = plb__grn_shared_bytes(n, s, c),
		.out = best, .out_unit = sizeof *best,
	};
	if ((rc = app_runs(p, &job, &a)))
		goto out;
	if (output && (rc = write_tsv(output, names, best, n, k)))
		goto out;
	if (a.verify)
		rc = verify(lev, n, s, c, k, alpha, best, truth);
out:
	free(expr);
	free(truth);
	plb__grn_names_free(names, n);
	free(lev);
	free(sh);
	free(best);
	return app_end(p, rc);
}
