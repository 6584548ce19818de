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

/* What every block shares: the precision, and for drawn options the seed
 * (the blocks then carry no input). */
struct bs_shared {
	int32_t prec;
	int32_t drawn;
	uint64_t seed;
};

static int bs_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	(void)pu;
	if (bytes != sizeof(struct bs_shared))
		return PLB_EINVAL;
	*state = (void *)shared;
	return 0;
}

static int bs_cpu_run(void *state, const struct plb_block *b)
{
	const struct bs_shared *sh = state;
	if (sh->drawn)
		return plb__bs_cpu_drawn(sh->prec, sh->seed, b->offset, b->out, (size_t)b->units);
	return plb__bs_cpu(sh->prec, b->in, b->out, (size_t)b->units);
}

#ifdef PLB_HAVE_CUDA
/* A GPU's state: its stream and buffers, and for drawn options a host
 * buffer they are drawn into before they are copied over. */
struct bs_gpu {
	struct plb__bs_cuda *c;
	struct bs_shared sh;
	void *opts;
	size_t cap;             /* options opts holds */
};

static int bs_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			void **state)
{
	char err[256];
	struct bs_gpu *g;
	if (bytes != sizeof g->sh)
		return PLB_EINVAL;
	if (!(g = calloc(1, sizeof *g)))
		return PLB_ENOMEM;
	memcpy(&g->sh, shared, sizeof g->sh);
	int rc = plb__bs_cuda_create(pu->device, g->sh.prec, &g->c, err, sizeof err);
	if (rc) {
		fprintf(stderr, "plb-bs: %s: %s\n", pu->name, err);
		free(g);
		return rc;
	}
	*state = g;
	return 0;
}

static int bs_cuda_run(void *state, const struct plb_block *b)
{
	struct bs_gpu *g = state;
	size_t n = (size_t)b->units;
	if (!g->sh.drawn)
		return plb__bs_cuda_run(g->c, b->in, b->out, n);
	if (n > g->cap) {
		void *o = realloc(g->opts, n * plb__bs_in_unit(g->sh.prec));
		if (!o)
			return PLB_ENOMEM;
		g->opts = o;
		g->cap = n;
	}
	plb__bs_draw(g->sh.prec, g->opts, b->offset, n, g->sh.seed);
	return plb__bs_cuda_run(g->c, g->opts, b->out, n);
}

static void bs_cuda_fini(void *state)
{
	struct bs_gpu *g = state;
	plb__bs_cuda_destroy(g->c);
	free(g->opts);
	free(g);
}
#endif

static const struct plb_kernel bs_kernel = {
	PLB_INIT,
	.name = "bs",
	.cpu = {.init = bs_init, .run = bs_cpu_run},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = bs_cuda_init, .run = bs_cuda_run, .fini = bs_cuda_fini},
#endif
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np K plb-bs --config FILE (--n N | --input FILE.csv) [options]\n"
		"  --config FILE      nodes and devices (INI; see README.md)\n"
		"  --n N              price N options drawn from --seed (S in [5, 30), K in\n"
		"                     [1, 100), T in [0.25, 10) years, r in [0.01, 0.05),\n"
		"                     v in [0.1, 0.5)); each node draws its blocks' options,\n"
		"                     only the prices travel\n"
		"  --input FILE       price the options of a CSV file: a header naming the\n"
		"                     columns S,K,T,r,v (any order, others ignored), then one\n"
		"                     option a line; '#' lines are comments; they travel with\n"
		"                     their blocks\n"
		"  --prec P           single or double (default double)\n"
		"  --seed S           seed of the drawn options (default 1)\n"
		"  --verify           check every price against the serial reference and\n"
		"                     put-call parity\n"
		"  --output FILE      write the prices as CSV (call,put, one option a line)\n"
		"  --runs K           price them K times, one report each (default 1); runs\n"
		"                     after the first start from its models and the nodes\n"
		"                     keep the options of --input they were sent\n"
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
	static const struct plb_kernel *const kernels[] = {&bs_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-bs", .usage = usage, .say = plb_launch_rank() == 0,
			     .runs = 1, .seed = 1, .dbl = 1};
	long n = 0;
	const char *output = NULL, *input = NULL;
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
			if (app_long(&a, "--n", argv[++i], 1, 1L << 40, "an integer in [1, 2^40]", &n))
				return plb_usage_error();
		} else if (!strcmp(argv[i], "--input") && v) {
			input = argv[++i];
		} else if (!strcmp(argv[i], "--output") && v) {
			output = argv[++i];
		} else {
			return app_unknown(&a, argv[i]);
		}
	}
	if (!o.config || !n == !input) {
		if (a.say) {
			fprintf(stderr, "plb-bs: %s\n", !o.config ? "--config FILE is required"
				: input ? "--n and --input exclude each other" : "--n N or --input FILE is required");
			usage(stderr);
		}
		return plb_usage_error();
	}
	enum plb__bs_prec prec = a.dbl ? PLB__BS_F64 : PLB__BS_F32;

	/* the input is read before plb_init, so that a bad file stops the
	 * master at once with file:line; the workers never read it */
	void *in = NULL, *out = NULL;
	size_t count = (size_t)n;
	int rc = 0;
	if (input && a.say) {
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
	struct bs_shared sh = {.prec = prec, .drawn = !input, .seed = (uint64_t)a.seed};
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
