/* plb-mm: C = A x B over the cluster. A is shared by every block (sent once
 * to each node), B's columns are the domain, a block of columns of C comes
 * back from each block of columns of B. Column-major, so a block is one
 * contiguous piece of B and of C.
 *
 *   mpirun -np K plb-mm --config FILE --n N [--prec single|double]
 *          [--policy P] [--set KEY=VALUE] [--verify] [--json] [--seed S]
 *          [--runs K]
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/app.h"
#include "kernels/mm/mm.h"
#include "plb.h"

/* Uniform in [-1, 1), from a 64-bit LCG: the same on every machine. */
static void fill(void *M, size_t count, enum plb__mm_prec prec, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	for (size_t i = 0; i < count; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		double v = (double)(x >> 11) * 0x1.0p-52 - 1.0;
		if (prec == PLB__MM_F64)
			((double *)M)[i] = v;
		else
			((float *)M)[i] = (float)v;
	}
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&plb__mm_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-mm", .synopsis = "mpirun -np K plb-mm --config FILE --n N [options]",
			     .runs = 1, .seed = 1, .prec = "double"};
	long n = 0;
	const char *output = NULL;
	const struct app_opt opts[] = {
		APP_LONG_OPT("--n", "N", &n, 1, 1 << 20, "an integer in [1, 1048576]",
			     "matrix order: C = A x B, all N x N (required)"),
		APP_OPT_PREC(&a),
		APP_OPT_VERIFY(&a, "check C: exactly for N <= 512, else Freivalds' test"),
		APP_OPT_JSON(&a, "the report as one JSON object"),
		APP_OPT_SEED(&a, "seed of A and B (default 1)"),
		APP_TEXT_OPT("--output", "FILE", &output, "write C (column-major, raw) to FILE"),
		APP_OPT_RUNS(&a, "compute the product K times, one report each (default 1);\n"
				 "runs after the first start from its models, and the\n"
				 "nodes keep the A and B they were sent"),
	};
	int status = APP_COMMAND_LINE(&a, &o, opts, &argc, argv);
	if (status >= 0)
		return status;
	if (!n || !o.config)
		return app_wrong(&a, 1, "%s is required", !o.config ? "--config FILE" : "--n N");
	enum plb__mm_prec prec = !strcmp(a.prec, "double") ? PLB__MM_F64 : PLB__MM_F32;
	long seed = a.seed;

	/* the output's path is checked before the run, not after it */
	int unwritable = app_writable(&a, "--output", output);
	plb_t *p;
	int rc = plb_init(&argc, &argv, &o, &p);
	if ((status = app_worker(p, rc)) >= 0)
		return status;
	if (unwritable)
		return app_end(p, unwritable);

	size_t elem = plb__mm_elem(prec), nn = (size_t)n * (size_t)n;
	struct plb__mm_shared *sh = malloc(sizeof *sh + nn * elem);
	void *B = malloc(nn * elem), *C = calloc(nn, elem);
	if (!sh || !B || !C) {
		fprintf(stderr, "plb-mm: out of memory for three %ld x %ld matrices\n", n, n);
		rc = PLB_ENOMEM;
		goto out;
	}
	*sh = (struct plb__mm_shared){.n = (int32_t)n, .prec = prec};
	fill(sh + 1, nn, prec, (uint64_t)seed * 2);
	fill(B, nn, prec, (uint64_t)seed * 2 + 1);
	/* a column's cost depends on n and the precision: runs of another
	 * size or precision do not start from these runs' models */
	char sig[64];
	snprintf(sig, sizeof sig, "n=%ld prec=%s", n, prec == PLB__MM_F64 ? "double" : "single");
	struct plb_job job = {
		PLB_INIT,
		.kernel = "mm", .units = (uint64_t)n, .signature = sig,
		.shared = sh, .shared_bytes = sizeof *sh + nn * elem,
		.in = B, .in_unit = (size_t)n * elem,
		.out = C, .out_unit = (size_t)n * elem,
	};
	/* Later runs recompute the same C: a way to time warm runs. A and B
	 * do not change, so the nodes keep what they were sent of them. */
	if ((rc = app_runs(p, &job, &a)))
		goto out;
	if (output) {
		FILE *f = fopen(output, "wb");
		int bad = !f || fwrite(C, elem, nn, f) != nn;
		if ((f && fclose(f)) || bad) {
			fprintf(stderr, "plb-mm: --output %s: cannot write: %s\n", output, strerror(errno));
			rc = PLB_EIO;
			goto out;
		}
	}
	if (a.verify) {
		double err = 0;
		int exact = n <= 512;
		rc = plb__mm_verify(prec, (int)n, sh + 1, B, C, exact, 8, (uint64_t)seed, &err);
		fprintf(stderr, "plb-mm: verify (%s): %s, worst relative error %.3g\n",
			exact ? "exact reference" : "Freivalds, 8 vectors", rc ? "FAILED" : "ok", err);
		if (rc)
			rc = 3;
	}
out:
	free(sh);
	free(B);
	free(C);
	return app_end(p, rc);
}
