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

/* What every block shares: the sizes, then A. */
struct mm_shared {
	int32_t n, prec;
	int64_t pad;
};

struct mm_state {
	const struct mm_shared *sh;
	const void *A;
	struct plb__mm_cuda *cuda;
};

static int mm_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	const struct mm_shared *sh = shared;
	if (bytes < sizeof *sh || sh->n < 1 ||
	    bytes != sizeof *sh + (size_t)sh->n * (size_t)sh->n * plb__mm_elem(sh->prec))
		return PLB_EINVAL;
	struct mm_state *s = calloc(1, sizeof *s);
	if (!s)
		return PLB_ENOMEM;
	s->sh = sh;
	s->A = sh + 1;
	(void)pu;
	*state = s;
	return 0;
}

/* A CPU team's member computes its slab of C's rows over the whole block
 * (.whole below): it reads only its rows of A, where a slab of columns
 * would make every member read all of A (memory-bound for thin blocks).
 * Slabs start at multiples of 16 rows (whole cache lines). */
static int mm_cpu_run(void *state, const struct plb_block *b)
{
	const struct mm_state *s = state;
	int n = s->sh->n, m = b->members > 1 ? b->members : 1;
	int r0 = (int)((int64_t)n * b->member / m) & ~15;
	int r1 = b->member + 1 == m ? n : (int)((int64_t)n * (b->member + 1) / m) & ~15;
	return plb__mm_cpu_rows(s->sh->prec, n, r0, r1 - r0, (int64_t)b->units, s->A, b->in, b->out);
}

static void mm_fini(void *state)
{
	struct mm_state *s = state;
#ifdef PLB_HAVE_CUDA
	if (s)
		plb__mm_cuda_destroy(s->cuda);
#endif
	free(s);
}

#ifdef PLB_HAVE_CUDA
static int mm_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			void **state)
{
	char err[256];
	int rc = mm_init(pu, shared, bytes, state);
	if (rc)
		return rc;
	struct mm_state *s = *state;
	rc = plb__mm_cuda_create(pu->device, s->sh->prec, s->sh->n, s->sh->n, &s->cuda, err, sizeof err);
	if (!rc)
		rc = plb__mm_cuda_set_a(s->cuda, s->A);
	if (rc) {
		fprintf(stderr, "plb-mm: %s: %s\n", pu->name, err);
		mm_fini(s);
	}
	return rc;
}

static int mm_cuda_run(void *state, const struct plb_block *b)
{
	struct mm_state *s = state;
	return plb__mm_cuda_run(s->cuda, (int64_t)b->units, b->in, b->out);
}
#endif

static const struct plb_kernel mm_kernel = {
	PLB_INIT,
	.name = "mm",
	.cpu = {.init = mm_init, .run = mm_cpu_run, .fini = mm_fini, .whole = 1},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = mm_cuda_init, .run = mm_cuda_run, .fini = mm_fini},
#endif
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np K plb-mm --config FILE --n N [options]\n"
		"  --config FILE      nodes and devices (INI; see README.md)\n"
		"  --n N              matrix order: C = A x B, all N x N (required)\n"
		"  --prec P           single or double (default double)\n"
		"  --policy NAME      balancing policy (default: the file's [run] policy)\n"
		"  --set KEY=VALUE    override a [balancer] parameter (repeatable)\n"
		"  --verify           check C: exactly for N <= 512, else Freivalds' test\n"
		"  --json             the report as one JSON object\n"
		"  --seed S           seed of A and B (default 1)\n"
		"  --output FILE      write C (column-major, raw) to FILE\n"
		"  --runs K           compute the product K times, one report each (default 1);\n"
		"                     runs after the first start from its models, and the\n"
		"                     nodes keep the A and B they were sent\n"
		"  --models FILE      read fitted models from FILE at start, write them at the end\n"
		"  --trace FILE       write every run's blocks to FILE as trace events (JSON for\n"
		"                     Perfetto, chrome://tracing and plb-plot)\n"
		"  --quiet            errors only on stderr, no warnings, no progress line\n"
		"  --progress         a progress line on stderr for runs past a second, also\n"
		"                     off a terminal (under mpirun; default: on a terminal)\n");
}

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
	static const struct plb_kernel *const kernels[] = {&mm_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-mm", .usage = usage, .say = plb_launch_rank() == 0,
			     .runs = 1, .seed = 1, .dbl = 1};
	long n = 0;
	const char *output = NULL;
	int status;

	if (plb_options_parse(&argc, argv, &o))
		return plb_usage_error();
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int k = app_common(&a, argc, argv, &i, &status);
		if (k == APP_EXIT)
			return status;
		if (k == APP_TAKEN)
			continue;
		if (!strcmp(argv[i], "--n") && v) {
			if (app_long(&a, "--n", argv[++i], 1, 1 << 20, "an integer in [1, 1048576]", &n))
				return plb_usage_error();
		} else if (!strcmp(argv[i], "--output") && v) {
			output = argv[++i];
		} else {
			return app_unknown(&a, argv[i]);
		}
	}
	if (!n || !o.config) {
		if (a.say) {
			fprintf(stderr, "plb-mm: %s is required\n", !o.config ? "--config FILE" : "--n N");
			usage(stderr);
		}
		return plb_usage_error();
	}
	enum plb__mm_prec prec = a.dbl ? PLB__MM_F64 : PLB__MM_F32;
	long seed = a.seed;

	plb_t *p;
	int rc = plb_init(&argc, &argv, &o, &p);
	if ((status = app_worker(p, rc)) >= 0)
		return status;

	size_t elem = plb__mm_elem(prec), nn = (size_t)n * (size_t)n;
	struct mm_shared *sh = malloc(sizeof *sh + nn * elem);
	void *B = malloc(nn * elem), *C = calloc(nn, elem);
	if (!sh || !B || !C) {
		fprintf(stderr, "plb-mm: out of memory for three %ld x %ld matrices\n", n, n);
		rc = PLB_ENOMEM;
		goto out;
	}
	*sh = (struct mm_shared){.n = (int32_t)n, .prec = prec};
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
