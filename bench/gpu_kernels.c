/* Each bundled app's CUDA kernel on GPU 0 against its CPU kernel, at two
 * sizes (per precision where the app has two): is its answer the CPU's,
 * and how far is it from what the device allows?
 *
 *   gpu_kernels [--limits FILE] [--json FILE] [--reps R] [--only APP]
 *
 * FILE of --limits is cuda_limits' output (the device's copy bandwidths
 * and cuBLAS's gemm rates); without it the ratios are left out. For each
 * case it prints one line, and with --json appends one JSON object a line
 * to FILE as soon as the case is done:
 *   verify     the CUDA kernel's output against the CPU kernel's on the
 *              same input (bs: every price to 2e-5 of S + K in single,
 *              1e-12 in double; mm: the CPU's product of the first
 *              columns, and Freivalds' test on all; kmeans: labels, fewer
 *              than 1 in 10^4 moved by float rounding, and the
 *              accumulator; grn: the best subsets and scores, to the bit)
 *   cpu_s      the CPU kernel on one core, for all the units (timed on a
 *              part of them where all would take long: cpu_units)
 *   wall_s     one call of the CUDA kernel with its copies (median of R
 *              after a warm-up), in_s run_s out_s its phases (events)
 *   dev_s      the least time the device needs for the kernel with the
 *              data on it: bytes over the copy bandwidth d2d_gbs (bs,
 *              kmeans), flops over cuBLAS's gemm rate (mm, kmeans's
 *              distances), or for grn the CPU kernel on all this node's
 *              cores
 *   host_s     the least time with the copies: the larger of dev_s and
 *              each direction's bytes over the pinned link bandwidth
 *   run/dev, wall/host   the two ratios (1 is the limit)
 * Exit status 1 when a case fails verification or a CUDA call fails, 2
 * on a bad command line, 3 when this build or node has no CUDA GPU. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "kernels/bs/bs.h"
#include "kernels/grn/grn.h"
#include "kernels/kmeans/kmeans.h"
#include "kernels/mm/mm.h"
#include "runtime/device/device.h"

struct limits {
	double d2d_gbs, h2d_gbs, d2h_gbs, sgemm_gflops, dgemm_gflops;
	int have;
};

/* One case's figures. */
struct fig {
	char app[16], label[64];
	double units, cpu_units, cpu_s, wall_s;
	struct plb__phase_times ph;
	double dev_s, host_s;
	double in_bytes, out_bytes;     /* over the link */
	char verify[320];
};

static int reps = 5;
static FILE *json;
static struct limits lim;

static int read_limits(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "gpu_kernels: --limits %s: %s\n", path, strerror(errno));
		return -1;
	}
	char key[64];
	double v;
	int got = 0;
	while (fscanf(f, "%63s", key) == 1) {
		if (fscanf(f, "%lf", &v) != 1) {
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		double *slot = !strcmp(key, "d2d_gbs") ? &lim.d2d_gbs :
			       !strcmp(key, "h2d_gbs") ? &lim.h2d_gbs :
			       !strcmp(key, "d2h_gbs") ? &lim.d2h_gbs :
			       !strcmp(key, "sgemm_gflops") ? &lim.sgemm_gflops :
			       !strcmp(key, "dgemm_gflops") ? &lim.dgemm_gflops : NULL;
		if (slot && v > 0) {
			*slot = v;
			got++;
		}
	}
	fclose(f);
	if (got < 5) {
		fprintf(stderr, "gpu_kernels: --limits %s: expected d2d_gbs, h2d_gbs, d2h_gbs, "
				"sgemm_gflops and dgemm_gflops (cuda_limits' output), found %d of them\n",
			path, got);
		return -1;
	}
	lim.have = 1;
	return 0;
}

#ifdef PLB_HAVE_CUDA
static int failed;

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "gpu_kernels: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* The link's least time for the case's copies, and the larger of that
 * and the device's. */
static void host_floor(struct fig *f)
{
	double in = lim.h2d_gbs > 0 ? f->in_bytes / (lim.h2d_gbs * 1e9) : 0;
	double out = lim.d2h_gbs > 0 ? f->out_bytes / (lim.d2h_gbs * 1e9) : 0;
	f->host_s = fmax(f->dev_s, fmax(in, out));
}

static void report(struct fig *f)
{
	host_floor(f);
	int ok = !strcmp(f->verify, "ok");
	failed |= !ok;
	double cpu_all = f->cpu_units > 0 ? f->cpu_s * f->units / f->cpu_units : NAN;
	printf("%-7s %-30s %-6s cpu1 %9.4f s  gpu %8.4f s (in %7.4f run %7.4f out %7.4f)",
	       f->app, f->label, ok ? "ok" : "FAIL", cpu_all, f->wall_s, f->ph.in_s, f->ph.run_s,
	       f->ph.out_s);
	if (lim.have)
		printf("  run/dev %5.2f  wall/host %5.2f", f->ph.run_s / f->dev_s, f->wall_s / f->host_s);
	printf("\n");
	if (!ok)
		printf("        %s\n", f->verify);
	fflush(stdout);
	if (!json)
		return;
	fprintf(json,
		"{\"app\": \"%s\", \"case\": \"%s\", \"verify\": \"%s\", \"units\": %.0f, "
		"\"cpu1_s\": %.6g, \"wall_s\": %.6g, \"in_s\": %.6g, \"run_s\": %.6g, \"out_s\": %.6g",
		f->app, f->label, ok ? "ok" : "failed", f->units, cpu_all, f->wall_s, f->ph.in_s,
		f->ph.run_s, f->ph.out_s);
	if (lim.have)
		fprintf(json, ", \"dev_s\": %.6g, \"host_s\": %.6g, \"run_over_dev\": %.4f, "
			      "\"wall_over_host\": %.4f",
			f->dev_s, f->host_s, f->ph.run_s / f->dev_s, f->wall_s / f->host_s);
	fprintf(json, "}\n");
	fflush(json);
}

/* Times reps calls of call(ctx) after a warm-up: their median into
 * f->wall_s; a failing call marks the case failed. */
static void timed(struct fig *f, int (*call)(void *), void *ctx)
{
	double t[64];
	int n = reps < 64 ? reps : 64;
	for (int r = -1; r < n; r++) {
		double t0 = bench_now();
		if (call(ctx)) {
			snprintf(f->verify, sizeof f->verify, "the CUDA kernel failed (above)");
			return;
		}
		if (r >= 0)
			t[r] = bench_now() - t0;
	}
	f->wall_s = bench_median(t, n);
}

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

/* ---- plb-bs: one thread an option; bandwidth-bound on the device ---- */
struct bs_call {
	struct plb__bs_cuda *c;
	const void *in;
	void *out;
	size_t n;
};
static int bs_call(void *ctx)
{
	struct bs_call *b = ctx;
	return plb__bs_cuda_run(b->c, b->in, b->out, b->n);
}

static void bench_bs(size_t n, enum plb__bs_prec prec)
{
	struct fig f = {.units = (double)n, .cpu_units = (double)n};
	snprintf(f.app, sizeof f.app, "bs");
	snprintf(f.label, sizeof f.label, "%s, %zu options", prec == PLB__BS_F64 ? "double" : "single", n);
	size_t iu = plb__bs_in_unit(prec), ou = plb__bs_out_unit(prec);
	char *in = xmalloc(n * iu), *a = xmalloc(n * ou), *g = xmalloc(n * ou);
	plb__bs_generate(prec, in, n, 5);
	double t0 = bench_now();
	if (plb__bs_cpu(prec, in, a, n))
		exit(1);
	f.cpu_s = bench_now() - t0;
	memset(g, 0xff, n * ou);                /* NaN: a price not written fails */
	struct plb__bs_cuda *c;
	char err[256];
	snprintf(f.verify, sizeof f.verify, "ok");
	if (plb__bs_cuda_create(0, prec, &c, err, sizeof err)) {
		snprintf(f.verify, sizeof f.verify, "%s", err);
	} else {
		struct bs_call bc = {c, in, g, n};
		timed(&f, bs_call, &bc);
		plb__bs_cuda_times(c, &f.ph);
		plb__bs_cuda_destroy(c);
	}
	double tol = prec == PLB__BS_F64 ? 1e-12 : 2e-5;
	for (size_t i = 0; i < n && !strcmp(f.verify, "ok"); i++) {
		double S, K, ca, pa, cg, pg;
		if (prec == PLB__BS_F64) {
			const struct plb__bs_opt *o = (const struct plb__bs_opt *)in + i;
			S = o->S, K = o->K;
			ca = ((double *)a)[2 * i], pa = ((double *)a)[2 * i + 1];
			cg = ((double *)g)[2 * i], pg = ((double *)g)[2 * i + 1];
		} else {
			const struct plb__bs_optf *o = (const struct plb__bs_optf *)in + i;
			S = o->S, K = o->K;
			ca = ((float *)a)[2 * i], pa = ((float *)a)[2 * i + 1];
			cg = ((float *)g)[2 * i], pg = ((float *)g)[2 * i + 1];
		}
		if (!(fabs(ca - cg) <= tol * (S + K)) || !(fabs(pa - pg) <= tol * (S + K)))
			snprintf(f.verify, sizeof f.verify, "option %zu: cpu %.9g %.9g, gpu %.9g %.9g", i,
				 ca, pa, cg, pg);
	}
	f.in_bytes = (double)(n * iu);
	f.out_bytes = (double)(n * ou);
	f.dev_s = lim.d2d_gbs > 0 ? (f.in_bytes + f.out_bytes) / (lim.d2d_gbs * 1e9) : NAN;
	report(&f);
	free(in);
	free(a);
	free(g);
}

/* ---- plb-mm: cuBLAS on blocks of B's columns, staged through pinned
 * buffers on two streams ---- */
struct mm_call {
	struct plb__mm_cuda *m;
	int64_t cols;
	const void *B;
	void *C;
};
static int mm_call(void *ctx)
{
	struct mm_call *c = ctx;
	return plb__mm_cuda_run(c->m, c->cols, c->B, c->C);
}

static void bench_mm(int n, enum plb__mm_prec prec)
{
	int dbl = prec == PLB__MM_F64;
	int64_t cpu_cols = 32;
	struct fig f = {.units = (double)n, .cpu_units = (double)cpu_cols};
	snprintf(f.app, sizeof f.app, "mm");
	snprintf(f.label, sizeof f.label, "%s, n = %d", dbl ? "double" : "single", n);
	size_t e = plb__mm_elem(prec), nn = (size_t)n * n;
	char *A = xmalloc(nn * e), *B = xmalloc(nn * e), *C = xmalloc(nn * e);
	char *R = xmalloc((size_t)n * cpu_cols * e);
	for (size_t i = 0; i < nn; i++) {
		double x = urand() - 0.5, y = urand() - 0.5;
		if (dbl)
			((double *)A)[i] = x, ((double *)B)[i] = y;
		else
			((float *)A)[i] = (float)x, ((float *)B)[i] = (float)y;
	}
	double t0 = bench_now();
	if (plb__mm_cpu(prec, n, cpu_cols, A, B, R))
		exit(1);
	f.cpu_s = bench_now() - t0;
	memset(C, 0xff, nn * e);
	struct plb__mm_cuda *m;
	char err[256];
	snprintf(f.verify, sizeof f.verify, "ok");
	if (plb__mm_cuda_create(0, prec, n, n, &m, err, sizeof err)) {
		snprintf(f.verify, sizeof f.verify, "%s", err);
	} else if (plb__mm_cuda_set_a(m, A)) {
		snprintf(f.verify, sizeof f.verify, "copying A to the device failed (above)");
		plb__mm_cuda_destroy(m);
	} else {
		struct mm_call mc = {m, n, B, C};
		timed(&f, mm_call, &mc);
		plb__mm_cuda_times(m, &f.ph);
		plb__mm_cuda_destroy(m);
	}
	/* the first columns against the CPU's, to the rounding of a sum of n
	 * products of numbers under 1/2 */
	double tol = (dbl ? 1e-12 : 2e-5) * sqrt((double)n);
	for (size_t i = 0; i < (size_t)n * cpu_cols && !strcmp(f.verify, "ok"); i++) {
		double x = dbl ? ((double *)R)[i] : ((float *)R)[i];
		double y = dbl ? ((double *)C)[i] : ((float *)C)[i];
		if (!(fabs(x - y) <= tol))
			snprintf(f.verify, sizeof f.verify, "C[%zu][%zu]: cpu %.9g gpu %.9g", i % n,
				 i / n, x, y);
	}
	double worst = 0;
	if (!strcmp(f.verify, "ok") && plb__mm_verify(prec, n, A, B, C, 0, 3, 7, &worst))
		snprintf(f.verify, sizeof f.verify, "Freivalds' test: worst relative error %.3g", worst);
	f.in_bytes = f.out_bytes = (double)(nn * e);
	double rate = dbl ? lim.dgemm_gflops : lim.sgemm_gflops;
	f.dev_s = rate > 0 ? 2.0 * n * (double)nn / (rate * 1e9) : NAN;
	report(&f);
	free(A);
	free(B);
	free(C);
	free(R);
}

/* ---- plb-kmeans: one thread a point, direct distances ---- */
struct km_call {
	struct plb__km_cuda *g;
	const float *p;
	size_t n;
	int32_t *labels;
	double *acc;
	size_t ab;
};
static int km_call(void *ctx)
{
	struct km_call *c = ctx;
	memset(c->acc, 0, c->ab);
	return plb__km_cuda_run(c->g, c->p, c->n, c->labels, c->acc);
}

static void bench_kmeans(size_t n, int d, int k)
{
	size_t cpu_n = n < ((size_t)1 << 20) ? n : ((size_t)1 << 20);
	struct fig f = {.units = (double)n, .cpu_units = (double)cpu_n};
	snprintf(f.app, sizeof f.app, "kmeans");
	snprintf(f.label, sizeof f.label, "%zu points, d %d, k %d", n, d, k);
	float *p = xmalloc(n * (size_t)d * sizeof *p), *cen = xmalloc((size_t)k * d * sizeof *cen);
	plb__km_generate(p, n, d, k, 3);
	for (int j = 0; j < k; j++)      /* centroids: points spread over the set */
		memcpy(cen + (size_t)j * d, p + (n / (size_t)k) * j * (size_t)d, (size_t)d * sizeof *cen);
	void *sh = xmalloc(plb__km_shared_bytes(k, d));
	plb__km_share(sh, k, d, cen);
	size_t ab = plb__km_acc_bytes(k, d);
	int32_t *la = xmalloc(cpu_n * sizeof *la), *lb = xmalloc(n * sizeof *lb);
	double *aa = xmalloc(ab), *bb = xmalloc(ab), *pa = xmalloc(ab);
	memset(aa, 0, ab);
	double t0 = bench_now();
	if (plb__km_cpu(sh, p, cpu_n, la, aa))
		exit(1);
	f.cpu_s = bench_now() - t0;
	struct plb__km_cuda *g;
	char err[256];
	snprintf(f.verify, sizeof f.verify, "ok");
	if (plb__km_cuda_create(0, sh, &g, err, sizeof err)) {
		snprintf(f.verify, sizeof f.verify, "%s", err);
	} else {
		struct km_call kc = {g, p, n, lb, bb, ab};
		timed(&f, km_call, &kc);
		plb__km_cuda_times(g, &f.ph);
		/* the accumulator of the points the CPU ran */
		memset(pa, 0, ab);
		if (!strcmp(f.verify, "ok") && plb__km_cuda_run(g, p, cpu_n, lb, pa))
			snprintf(f.verify, sizeof f.verify, "the CUDA kernel failed (above)");
		plb__km_cuda_destroy(g);
	}
	size_t moved = 0;
	for (size_t i = 0; i < cpu_n; i++)
		moved += la[i] != lb[i];
	if (!strcmp(f.verify, "ok") && moved * 10000 > cpu_n)
		snprintf(f.verify, sizeof f.verify, "%zu of %zu labels differ from the CPU's", moved, cpu_n);
	/* counts and sums to rounding where no label moved */
	for (size_t i = 0; !moved && i + 1 < ab / sizeof(double) && !strcmp(f.verify, "ok"); i++)
		if (!(fabs(aa[i] - pa[i]) <= 1e-6 * (fabs(aa[i]) + 1)))
			snprintf(f.verify, sizeof f.verify, "accumulator[%zu]: cpu %.9g gpu %.9g", i, aa[i],
				 pa[i]);
	f.in_bytes = (double)n * d * sizeof(float);
	f.out_bytes = (double)n * sizeof(int32_t) + (double)ab;
	double mem = lim.d2d_gbs > 0 ? (f.in_bytes + f.out_bytes) / (lim.d2d_gbs * 1e9) : NAN;
	double flop = lim.sgemm_gflops > 0 ? 2.0 * n * (double)k * d / (lim.sgemm_gflops * 1e9) : NAN;
	f.dev_s = fmax(mem, flop);
	report(&f);
	free(p);
	free(cen);
	free(sh);
	free(la);
	free(lb);
	free(aa);
	free(bb);
	free(pa);
}

/* ---- plb-grn: every subset of k predictors of each target ---- */
struct grn_call {
	struct plb__grn_cuda *g;
	size_t n;
	struct plb__grn_best *out;
};
static int grn_call(void *ctx)
{
	struct grn_call *c = ctx;
	return plb__grn_cuda_run(c->g, 0, c->n, c->out);
}

static void bench_grn(int n, int s, int k, int cpu_targets)
{
	int c = 3;
	struct fig f = {.units = n, .cpu_units = cpu_targets};
	snprintf(f.app, sizeof f.app, "grn");
	snprintf(f.label, sizeof f.label, "%d genes, %d samples, k %d", n, s, k);
	float *expr = xmalloc((size_t)n * s * sizeof *expr);
	int32_t *truth = xmalloc((size_t)n * k * sizeof *truth);
	uint8_t *lev = xmalloc((size_t)n * s);
	void *sh = xmalloc(plb__grn_shared_bytes(n, s, c));
	struct plb__grn_tables tab;
	if (plb__grn_generate(n, s, c, k, 0.1, 11, expr, truth) ||
	    plb__grn_discretise(expr, n, s, c, lev) || plb__grn_tables_make(s, 1.0, &tab))
		exit(1);
	plb__grn_share(sh, lev, n, s, c, k, 1.0);
	struct plb__grn_best *a = xmalloc((size_t)cpu_targets * sizeof *a), *b = xmalloc((size_t)n * sizeof *b);
	double t0 = bench_now();
	if (plb__grn_cpu(sh, &tab, 0, (size_t)cpu_targets, a))
		exit(1);
	f.cpu_s = bench_now() - t0;
	struct plb__grn_cuda *g;
	char err[256];
	snprintf(f.verify, sizeof f.verify, "ok");
	if (plb__grn_cuda_create(0, sh, &tab, &g, err, sizeof err)) {
		snprintf(f.verify, sizeof f.verify, "%s", err);
	} else {
		struct grn_call gc = {g, (size_t)n, b};
		timed(&f, grn_call, &gc);
		plb__grn_cuda_times(g, &f.ph);
		plb__grn_cuda_destroy(g);
	}
	for (int t = 0; t < cpu_targets && !strcmp(f.verify, "ok"); t++)
		if (memcmp(a[t].reg, b[t].reg, sizeof a[t].reg) || a[t].score != b[t].score)
			snprintf(f.verify, sizeof f.verify, "target %d: cpu {%d %d %d} %.17g, gpu {%d %d %d} %.17g",
				 t, a[t].reg[0], a[t].reg[1], a[t].reg[2], a[t].score, b[t].reg[0],
				 b[t].reg[1], b[t].reg[2], b[t].score);
	f.in_bytes = 0;
	f.out_bytes = (double)n * sizeof *b;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	f.dev_s = lim.have ? f.cpu_s * n / cpu_targets / (double)(cores > 0 ? cores : 1) : NAN;
	report(&f);
	free(expr);
	free(truth);
	free(lev);
	free(sh);
	free(a);
	free(b);
	plb__grn_tables_free(&tab);
}
#endif

int main(int argc, char **argv)
{
	const char *limits = NULL, *jpath = NULL, *only = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--limits") && i + 1 < argc)
			limits = argv[++i];
		else if (!strcmp(argv[i], "--json") && i + 1 < argc)
			jpath = argv[++i];
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else {
			fprintf(stderr, "gpu_kernels: unknown option or missing value: %s\n"
					"usage: gpu_kernels [--limits FILE] [--json FILE] [--reps 1..64] "
					"[--only mm|bs|kmeans|grn]\n", argv[i]);
			return 2;
		}
	}
	if (reps < 1 || reps > 64 ||
	    (only && strcmp(only, "mm") && strcmp(only, "bs") && strcmp(only, "kmeans") &&
	     strcmp(only, "grn"))) {
		fprintf(stderr, "gpu_kernels: --reps is 1 to 64, --only one of mm, bs, kmeans, grn\n");
		return 2;
	}
	if (limits && read_limits(limits))
		return 2;
	if (jpath && !(json = fopen(jpath, "a"))) {
		fprintf(stderr, "gpu_kernels: --json %s: %s\n", jpath, strerror(errno));
		return 2;
	}
#ifndef PLB_HAVE_CUDA
	fprintf(stderr, "gpu_kernels: this build has no CUDA (see make's warning)\n");
	return 3;
#else
	char why[256] = "";
	int ndev = plb__dev_cuda_count(why, sizeof why);
	if (ndev < 1) {
		fprintf(stderr, "gpu_kernels: no CUDA device on this node (%s)\n", why);
		return 3;
	}
#define WANT(app) (!only || !strcmp(only, app))
	/* the two sizes of each: a block a PU may get early in a run, and
	 * one that fills the device */
	if (WANT("bs"))
		for (int p = 0; p < 2; p++) {
			bench_bs((size_t)1 << 20, p ? PLB__BS_F64 : PLB__BS_F32);
			bench_bs((size_t)32 << 20, p ? PLB__BS_F64 : PLB__BS_F32);
		}
	if (WANT("kmeans")) {
		bench_kmeans((size_t)1 << 20, 16, 16);
		bench_kmeans((size_t)8 << 20, 32, 64);
	}
	if (WANT("grn")) {
		bench_grn(300, 200, 2, 16);
		bench_grn(120, 500, 3, 2);
	}
	if (WANT("mm"))
		for (int p = 0; p < 2; p++) {
			bench_mm(4096, p ? PLB__MM_F64 : PLB__MM_F32);
			bench_mm(8192, p ? PLB__MM_F64 : PLB__MM_F32);
		}
	if (json)
		fclose(json);
	return failed ? 1 : 0;
#endif
}
