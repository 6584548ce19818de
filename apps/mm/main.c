/* plb-mm: C = A x B over the cluster. A is shared by every block (sent once
 * to each node), B's columns are the domain, a block of columns of C comes
 * back from each block of columns of B. Column-major, so a block is one
 * contiguous piece of B and of C.
 *
 *   mpirun -np K plb-mm --config FILE --n N [--prec single|double]
 *          [--policy P] [--set KEY=VALUE] [--verify] [--json] [--seed S]
 *          [--runs K]
 *
 * With --layout 2d the product is the 2-D blocked one with A, B and C on
 * the worker nodes, drawn there (plb_run_mm2d): only the pivots move,
 * between the workers; --block B, --partitioner P, --eps E; --output
 * gathers C to the master to write it.
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

/* C (n x n, row-major) to path as --output writes it: column-major, raw. */
static int write_colmajor(const char *path, const void *C, long n, size_t elem)
{
	FILE *f = fopen(path, "wb");
	int bad = !f;
	char *col = malloc((size_t)n * elem);
	bad |= !col;
	for (long j = 0; j < n && !bad; j++) {
		for (long i = 0; i < n; i++)
			memcpy(col + (size_t)i * elem, (const char *)C + ((size_t)i * (size_t)n + (size_t)j) * elem, elem);
		bad = fwrite(col, elem, (size_t)n, f) != (size_t)n;
	}
	free(col);
	if ((f && fclose(f)) || bad) {
		fprintf(stderr, "plb-mm: --output %s: cannot write: %s\n", path, strerror(errno));
		return PLB_EIO;
	}
	return 0;
}

/* --layout 2d: the 2-D product, its figures as text or JSON; with
 * --output, C gathered to the master and written. */
static int run_2d(plb_t *p, const struct app_args *a, long n, long block, const char *part, double eps,
		  const char *output)
{
	size_t elem = !strcmp(a->prec, "double") ? 8 : 4;
	struct plb_mm2d job = {PLB_INIT, .kernel = "mm2d", .n = n, .block = (int)block, .elem = (int)elem,
			       .seed = (uint64_t)a->seed, .partitioner = part, .eps = eps, .verify = a->verify};
	if (output && !(job.gather = malloc((size_t)n * (size_t)n * elem))) {
		fprintf(stderr, "plb-mm: --output: out of memory for C (%ld x %ld) on the master\n", n, n);
		return PLB_ENOMEM;
	}
	struct plb_mm2d_result r = {PLB_INIT};
	int rc = plb_run_mm2d(p, &job, &r);
	if (!rc && output)
		rc = write_colmajor(output, job.gather, n, elem);
	free(job.gather);
	if (rc) {
		if (!output || plb_errmsg(p)[0])
			fprintf(stderr, "plb-mm: %s\n", plb_errmsg(p));
		return rc;
	}
	double flops = 2.0 * (double)n * (double)n * (double)n;
	if (a->json) {
		printf("{\"layout\": \"2d\", \"n\": %ld, \"block\": %ld, \"partitioner\": \"%s\", \"nodes\": %d, \"pus\": %d, "
		       "\"product_s\": %.6g, \"step_s\": %.6g, \"gflops\": %.6g, \"compute_frac\": %.4f, "
		       "\"partition_s\": %.6g, \"benchmarks\": %d, \"node_iterations\": %d, "
		       "\"half_perimeters\": %ld, \"half_perimeters_lb\": %.6g, \"pivot_bytes\": %.6g, "
		       "\"memory_mb_max\": %.6g, \"verified\": %d, \"residual\": %.3g, \"bound_s\": %.6g, "
		       "\"ratio\": %.6g, \"link_gbps\": %.6g}\n",
		       n, block, part, r.nodes, r.pus, r.product_s, r.step_s,
		       r.product_s > 0 ? flops / r.product_s / 1e9 : 0, r.compute_frac, r.partition_s, r.benchmarks,
		       r.node_iterations, r.half_perimeters, r.half_perimeters_lb, r.bytes_net, r.memory_mb_max,
		       r.verified, r.residual, r.bound_s, r.bound_s > 0 ? r.product_s / r.bound_s : 0, r.link_gbps);
	} else {
		printf("2-D product      %ld x %ld in %ld x %ld blocks of %ld, over %d nodes and %d PUs (%s)\n", n, n,
		       r.blocks, r.blocks, block, r.nodes, r.pus, part);
		printf("product          %.4g s (%.4g s a step, %.4g GFLOP/s); the nodes' PUs computed %.0f%% of it\n",
		       r.product_s, r.step_s, r.product_s > 0 ? flops / r.product_s / 1e9 : 0, 100 * r.compute_frac);
		printf("partitioner      %.3g s, %d benchmarks, %d node iterations\n", r.partition_s, r.benchmarks,
		       r.node_iterations);
		printf("layout           half-perimeters %ld blocks (%.4f of their lower bound)\n", r.half_perimeters,
		       r.half_perimeters_lb > 0 ? r.half_perimeters / r.half_perimeters_lb : 0);
		printf("pivots           %.4g MB between the nodes; no matrix through the master\n", r.bytes_net / 1e6);
		printf("memory           %.4g MiB at most a node\n", r.memory_mb_max);
		printf("bound            %.4g s, ratio %.4f (the PUs' measured steps split at equal times, %s)\n",
		       r.bound_s, r.bound_s > 0 ? r.product_s / r.bound_s : 0,
		       r.link_gbps > 0 ? "plus the pivots a node must receive over the slowest link"
				       : "no link known: the pivots not counted");
	}
	if (a->verify) {
		fprintf(stderr, "plb-mm: verify (Freivalds, 8 vectors, on the nodes): %s, worst relative difference %.3g\n",
			r.verified == 1 ? "ok" : "FAILED", r.residual);
		if (r.verified != 1)
			return 3;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&plb__mm_kernel, &plb__mm2d_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 2};
	struct app_args a = {.name = "plb-mm", .synopsis = "mpirun -np K plb-mm --config FILE --n N [options]",
			     .runs = 1, .seed = 1, .prec = "double"};
	long n = 0, block = 128;
	double eps = 0.05;
	const char *output = NULL, *layout = "1d", *part = "fpm";
	static const char *const layouts[] = {"1d", "2d", NULL};
	static const char *const parts[] = {"fpm", "multiple-cpm", "single-cpm", "homogeneous", NULL};
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
		APP_WORD_OPT("--layout", "L", &layout, layouts, "1d or 2d",
			     "1d (default): B's columns to the PUs from the master;\n"
			     "2d: A, B and C drawn and kept on the worker nodes,\n"
			     "laid out in two levels, only pivots moving between them"),
		APP_LONG_OPT("--block", "B", &block, 1, 4096, "an integer in [1, 4096]",
			     "with --layout 2d: the block's side (default 128; N a multiple)"),
		APP_WORD_OPT("--partitioner", "P", &part, parts, "fpm, multiple-cpm, single-cpm or homogeneous",
			     "with --layout 2d: fpm (default), multiple-cpm, single-cpm,\n"
			     "homogeneous"),
		APP_REAL_OPT("--eps", "E", &eps, 0.001, 0.5, "a number in [0.001, 0.5]",
			     "with --layout 2d: the imbalance the partitioners stop at\n"
			     "(default 0.05)"),
	};
	int status = APP_COMMAND_LINE(&a, &o, opts, &argc, argv);
	if (status >= 0)
		return status;
	if (!n || !o.config)
		return app_wrong(&a, 1, "%s is required", !o.config ? "--config FILE" : "--n N");
	enum plb__mm_prec prec = !strcmp(a.prec, "double") ? PLB__MM_F64 : PLB__MM_F32;
	long seed = a.seed;
	int two_d = !strcmp(layout, "2d");
	if (two_d && a.runs != 1)
		return app_wrong(&a, 1, "--runs: not with --layout 2d (one run)");
	if (two_d && n % block)
		return app_wrong(&a, 1, "--n %ld: not a multiple of --block %ld; accepted: a multiple", n, block);

	/* the output's path is checked before the run, not after it */
	int unwritable = app_writable(&a, "--output", output);
	plb_t *p;
	int rc = plb_init(&argc, &argv, &o, &p);
	if ((status = app_worker(p, rc)) >= 0)
		return status;
	if (unwritable)
		return app_end(p, unwritable);
	if (two_d)
		return app_end(p, run_2d(p, &a, n, block, part, eps, output));

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
