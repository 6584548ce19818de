/* plb-bs: Black-Scholes prices of European calls and puts for n options
 * over the cluster. The options are the domain: a block of options goes to
 * a PU, their call and put prices come back. Options drawn from a seed
 * (--n) are drawn where they are priced, from the seed and their index:
 * only the prices travel. Options read from a file travel with their
 * blocks.
 *
 *   mpirun -np K plb-bs --config FILE [--n N | --input FILE.csv]
 *          [--prec single|double] [--seed S] [--verify] [--output FILE]
 *          [--runs K] [--json] [--policy P] [--set KEY=VALUE] [--models FILE] [--trace FILE]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/app.h"
#include "kernels/bs/bs.h"
#include "plb.h"

static int write_csv(const char *path, enum plb__bs_prec prec, const void *out, size_t n)
{
	FILE *f = fopen(path, "w");
	int bad = !f || fprintf(f, "call,put\n") < 0;
	for (size_t i = 0; i < n && !bad; i++) {
		double c = prec == PLB__BS_F64 ? ((const double *)out)[2 * i] : ((const float *)out)[2 * i];
		double p = prec == PLB__BS_F64 ? ((const double *)out)[2 * i + 1]
					       : ((const float *)out)[2 * i + 1];
		bad = fprintf(f, "%.17g,%.17g\n", c, p) < 0;
	}
	if ((f && fclose(f)) || bad) {
		fprintf(stderr, "plb-bs: --output %s: cannot write: %s\n", path, strerror(errno));
		return PLB_EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&plb__bs_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-bs",
			     .synopsis = "mpirun -np K plb-bs --config FILE (--n N | --input FILE.csv) [options]",
			     .runs = 1, .seed = 1, .prec = "double"};
	long n = 0;
	const char *output = NULL, *input = NULL;
	const struct app_opt opts[] = {
		APP_LONG_OPT("--n", "N", &n, 1, 0x1p40, "an integer in [1, 2^40]",
			     "price N options drawn from --seed (S in [5, 30), K in\n"
			     "[1, 100), T in [0.25, 10) years, r in [0.01, 0.05),\n"
			     "v in [0.1, 0.5)); each node draws its blocks' options,\n"
			     "only the prices travel"),
		APP_TEXT_OPT("--input", "FILE", &input,
			     "price the options of a CSV file: a header naming the\n"
			     "columns S,K,T,r,v (any order, others ignored), then one\n"
			     "option a line; '#' lines are comments; they travel with\n"
			     "their blocks"),
		APP_OPT_PREC(&a),
		APP_OPT_SEED(&a, "seed of the drawn options (default 1)"),
		APP_OPT_VERIFY(&a, "check every price against the serial reference and\n"
				   "put-call parity"),
		APP_TEXT_OPT("--output", "FILE", &output,
			     "write the prices as CSV (call,put, one option a line)"),
		APP_OPT_RUNS(&a, "price them K times, one report each (default 1); runs\n"
				 "after the first start from its models and the nodes\n"
				 "keep the options of --input they were sent"),
		APP_OPT_JSON(&a, "the report as one JSON object"),
	};
	int status = APP_COMMAND_LINE(&a, &o, opts, &argc, argv);
	if (status >= 0)
		return status;
	if (!o.config || !n == !input)
		return app_wrong(&a, 1, "%s", !o.config ? "--config FILE is required"
				 : input ? "--n and --input exclude each other" : "--n N or --input FILE is required");
	enum plb__bs_prec prec = !strcmp(a.prec, "double") ? PLB__BS_F64 : PLB__BS_F32;

	/* the input is read before plb_init, so that a bad file stops the
	 * master at once with file:line; the workers never read it */
	void *in = NULL, *out = NULL;
	size_t count = (size_t)n;
	int rc = app_writable(&a, "--output", output);
	if (!rc && input && a.say) {
		char err[512];
		if ((rc = plb__bs_read_csv(input, prec, &in, &count, err, sizeof err)))
			fprintf(stderr, "plb-bs: --input %s\n", err);
	}
	plb_t *p;
	int irc = plb_init(&argc, &argv, &o, &p);
	if ((status = app_worker(p, irc)) >= 0) {
		free(in);
		return status;
	}
	if (rc)
		goto out;
	size_t iu = plb__bs_in_unit(prec), ou = plb__bs_out_unit(prec);
	if (!(out = malloc(count * ou))) {
		fprintf(stderr, "plb-bs: out of memory for %zu prices\n", count);
		rc = PLB_ENOMEM;
		goto out;
	}
	struct plb__bs_shared sh = {.prec = prec, .drawn = !input, .seed = (uint64_t)a.seed};
	struct plb_job job = {
		PLB_INIT,
		.kernel = "bs", .units = count,
		.signature = prec == PLB__BS_F64 ? "prec=double" : "prec=single",
		.shared = &sh, .shared_bytes = sizeof sh,
		.in = in, .in_unit = input ? iu : 0, .out = out, .out_unit = ou,
	};
	if ((rc = app_runs(p, &job, &a)))
		goto out;
	if (output && (rc = write_csv(output, prec, out, count)))
		goto out;
	if (a.verify && !in && !(in = malloc(count * iu))) {
		fprintf(stderr, "plb-bs: out of memory for %zu options to verify\n", count);
		rc = PLB_ENOMEM;
		goto out;
	}
	if (a.verify) {
		size_t bad = 0;
		if (!input)
			plb__bs_generate(prec, in, count, (uint64_t)a.seed);
		double er = 0, ep = 0;
		rc = plb__bs_verify(prec, in, out, count, &bad, &er, &ep);
		fprintf(stderr, "plb-bs: verify (serial reference, put-call parity; errors relative to S + K): %s, worst %.3g and %.3g",
			rc ? "FAILED" : "ok", er, ep);
		if (rc)
			fprintf(stderr, ", first wrong option %zu", bad);
		fprintf(stderr, "\n");
		if (rc)
			rc = 3;
	}
out:
	free(in);
	free(out);
	return app_end(p, rc);
}
