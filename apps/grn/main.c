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

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&plb__grn_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-grn",
			     .synopsis = "mpirun -np K plb-grn --config FILE (--genes N | --input FILE) [options]",
			     .runs = 1, .seed = 1};
	long genes = 0, samples = 0, size = 2, levels = 3;
	double alpha = 1, noise = -1;
	const char *input = NULL, *output = NULL;
	/* its runs and precision are its own: no --runs, --prec */
	const struct app_opt opts[] = {
		APP_LONG_OPT("--genes", "N", &genes, 2, 1 << 20, "an integer in [2, 1048576]",
			     "a synthetic network of N genes drawn from --seed: a fifth\n"
			     "of them regulate the others, --size regulators a gene"),
		APP_LONG_OPT("--samples", "S", &samples, 1, PLB__GRN_MAX_SAMPLES, "an integer in [1, 16777216]",
			     "samples of the synthetic network (default 100)"),
		APP_REAL_OPT("--noise", "P", &noise, 0, 1, "a number in [0, 1]",
			     "the fraction of samples where a regulated gene ignores its\n"
			     "regulators (default 0.05)"),
		APP_TEXT_OPT("--input", "FILE", &input,
			     "an expression matrix: one gene a line, its name then its\n"
			     "values, tab- (TSV) or comma-separated (CSV); an optional\n"
			     "first line of column names; '#' lines are comments"),
		APP_LONG_OPT("--size", "K", &size, 1, PLB__GRN_MAX_K, "1, 2 or 3",
			     "predictors a subset, 1 to 3 (default 2)"),
		APP_LONG_OPT("--levels", "C", &levels, 2, PLB__GRN_MAX_LEVELS, "an integer in [2, 8]",
			     "levels each gene's values are cut into by rank, 2 to 8\n"
			     "(default 3; C^(K+1) <= 256)"),
		APP_REAL_OPT("--alpha", "A", &alpha, 0, 1e9, "a number in [0, 1e9]",
			     "penalty weight of instances the samples do not show\n"
			     "(default 1; 0: the plain conditional entropy)"),
		APP_OPT_SEED(&a, "seed of the synthetic network (default 1)"),
		APP_OPT_VERIFY(&a, "check every target's best subset and score against the\n"
				   "serial reference (about the run's work again, on one\n"
				   "core); a synthetic network also reports how many true\n"
				   "regulators were found"),
		APP_TEXT_OPT("--output", "FILE", &output,
			     "write each target's best predictors and score as TSV"),
		APP_OPT_JSON(&a, "the report as one JSON object"),
	};
	int status = APP_COMMAND_LINE(&a, &o, opts, &argc, argv);
	if (status >= 0)
		return status;
	int cells = 1;
	for (long j = 0; j <= size; j++)
		cells *= (int)levels;
	const char *wrong = !o.config ? "--config FILE is required"
			    : !genes == !input ? (input ? "--genes and --input exclude each other"
						 : "--genes N or --input FILE is required")
			    : input && (samples || noise >= 0) ? "--samples and --noise are for --genes only"
			    : cells > PLB__GRN_MAX_CELLS ? "--levels C and --size K: C^(K+1) must be at most 256"
			    : NULL;
	if (wrong)
		return app_wrong(&a, 1, "%s", wrong);
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
	int n = (int)genes, s = (int)samples, k = (int)size, c = (int)levels;
	int rc = app_writable(&a, "--output", output);
	if (!rc && a.say) {
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
