/* plb-kmeans: Lloyd's k-means over the cluster. The points are the domain;
 * each iteration is one plb_run: every PU labels its block's points with
 * their nearest centroids and adds them into its block's accumulator
 * (sums, counts, inertia: a reduction), the master combines them and
 * moves each centroid to its cluster's mean. The centroids travel as the
 * run's shared data; the points stay on the nodes from the second
 * iteration on (resident input), and the models carry over, so later
 * iterations neither train nor resend points.
 *
 *   mpirun -np K plb-kmeans --config FILE [--n N --d D | --input FILE] [--k K]
 *          [--init kmeans++|random] [--iters MAX] [--tol T] [--seed S]
 *          [--verify] [--labels FILE] [--centroids FILE] [--json]
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/app.h"
#include "kernels/kmeans/kmeans.h"
#include "plb.h"

/* The last iteration's check: each label a nearest centroid of the
 * centroids it was computed with (float rounding allowed on near-ties),
 * and the accumulated counts and sums those of the labelled points. */
static int verify(const float *pts, size_t n, int d, int k, const float *cent, const int32_t *lab,
		  const double *acc)
{
	size_t ab = plb__km_acc_bytes(k, d) / sizeof(double);
	double *want = calloc(ab, sizeof *want), worst = 0;
	size_t bad = n;
	if (!want)
		return PLB_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const float *x = pts + i * (size_t)d;
		double best, mine;
		plb__km_nearest(x, k, d, cent, &best);
		if (lab[i] < 0 || lab[i] >= k) {
			bad = bad == n ? i : bad;
			continue;
		}
		plb__km_nearest(x, 1, d, cent + (size_t)lab[i] * d, &mine);
		/* float products in the kernel: a relative 1e-5 of |x|^2 + |c|^2 */
		double scale = 0;
		for (int t = 0; t < d; t++)
			scale += (double)x[t] * x[t] + (double)cent[(size_t)lab[i] * d + t] * cent[(size_t)lab[i] * d + t];
		if (!(mine - best <= 1e-5 * scale + 1e-12))
			bad = bad == n ? i : bad;
		for (int t = 0; t < d; t++)
			want[(size_t)lab[i] * d + t] += x[t];
		want[(size_t)k * d + lab[i]] += 1;
	}
	for (size_t j = 0; j < (size_t)k * d + k; j++)
		worst = fmax(worst, fabs(acc[j] - want[j]) / (fabs(want[j]) + 1));
	free(want);
	int ok = bad == n && worst <= 1e-9;
	fprintf(stderr, "plb-kmeans: verify (serial nearest centroids and sums, in double): %s", ok ? "ok" : "FAILED");
	if (bad < n)
		fprintf(stderr, ", point %zu is not with a nearest centroid", bad);
	fprintf(stderr, ", sums agree to %.2g\n", worst);
	return ok ? 0 : 3;
}

static int write_text(const char *path, const char *what, const void *data, size_t n, int d,
		      int labels)
{
	FILE *f = fopen(path, "w");
	int bad = !f;
	for (size_t i = 0; i < n && !bad; i++) {
		if (labels) {
			bad = fprintf(f, "%d\n", ((const int32_t *)data)[i]) < 0;
			continue;
		}
		for (int t = 0; t < d && !bad; t++)
			bad = fprintf(f, "%s%.9g", t ? "," : "", ((const float *)data)[i * (size_t)d + t]) < 0;
		bad = bad || fputc('\n', f) == EOF;
	}
	if ((f && fclose(f)) || bad) {
		fprintf(stderr, "plb-kmeans: %s %s: cannot write: %s\n", what, path, strerror(errno));
		return PLB_EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *const kernels[] = {&plb__km_kernel};
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = 1};
	struct app_args a = {.name = "plb-kmeans",
			     .synopsis = "mpirun -np K plb-kmeans --config FILE [--n N --d D | --input FILE] [--k K] [options]",
			     .runs = 1, .seed = 1};
	long n = 0, dim = 0, k = 0, iters = 50;
	double tol = 1e-4;
	const char *input = NULL, *labels_out = NULL, *cent_out = NULL, *init = "kmeans++";
	static const char *const inits[] = {"kmeans++", "random", NULL};
	/* iterations are its runs, and points are float32: no --runs, --prec */
	const struct app_opt opts[] = {
		APP_LONG_OPT("--n", "N", &n, 1, 0x1p40, "an integer in [1, 2^40]",
			     "N points drawn from --seed around K centres (uniform\n"
			     "in [-10, 10) a dimension, normal spread 1; default\n"
			     "1000000 without --input)"),
		APP_LONG_OPT("--d", "D", &dim, 1, 4096, "an integer in [1, 4096]",
			     "dimensions of the drawn points (default 16)"),
		APP_TEXT_OPT("--input", "FILE", &input,
			     "the points of a file: CSV (D numbers a line, an optional\n"
			     "header line of names, '#' comments), or raw: the 8 bytes\n"
			     "PLBKMF32, N and D as little-endian int64, then N x D\n"
			     "little-endian float32, point by point"),
		APP_LONG_OPT("--k", "K", &k, 1, 1 << 20, "an integer in [1, 1048576]", "clusters (default 16)"),
		APP_WORD_OPT("--init", "I", &init, inits, "kmeans++ or random",
			     "kmeans++ (default) or random: the first centroids, from --seed"),
		APP_LONG_OPT("--iters", "MAX", &iters, 1, 1000000, "an integer in [1, 1000000]",
			     "at most MAX iterations (default 50)"),
		APP_REAL_OPT("--tol", "T", &tol, 0, INFINITY, "a number >= 0",
			     "stop when no centroid moves more than T (default 1e-4)"),
		APP_OPT_SEED(&a, "seed of the drawn points and of the first centroids (default 1)"),
		APP_OPT_VERIFY(&a, "check the last iteration: every label a nearest centroid and\n"
				   "the sums those of the labelled points, against a serial\n"
				   "computation in double"),
		APP_TEXT_OPT("--labels", "FILE", &labels_out, "write each point's cluster (0..K-1), one a line"),
		APP_TEXT_OPT("--centroids", "FILE", &cent_out, "write the centroids as CSV, one a line"),
		APP_OPT_JSON(&a, "each iteration's report as one JSON object a line"),
	};
	int status = APP_COMMAND_LINE(&a, &o, opts, &argc, argv);
	if (status >= 0)
		return status;
	const char *missing = !o.config ? "--config FILE is required"
			      : input && (n || dim) ? "--input excludes --n and --d" : NULL;
	if (missing)
		return app_wrong(&a, 1, "%s", missing);
	if (!k)
		k = 16;
	if (!input && !n)
		n = 1000000;
	if (!input && !dim)
		dim = 16;
	int plusplus = !strcmp(init, "kmeans++");

	/* the master reads or draws the points before plb_init, so that a bad
	 * file stops it at once with file:line; the workers never read it */
	float *pts = NULL, *cent = NULL;
	int32_t *lab = NULL;
	double *acc = NULL;
	void *sh = NULL;
	size_t count = (size_t)n;
	int d = (int)dim;
	int rc = app_writable(&a, "--labels", labels_out);
	if (!rc)
		rc = app_writable(&a, "--centroids", cent_out);
	if (!rc && a.say) {
		char err[512];
		if (input) {
			if ((rc = plb__km_read(input, &pts, &count, &d, err, sizeof err)))
				fprintf(stderr, "plb-kmeans: --input %s\n", err);
		} else if (!(pts = malloc(count * (size_t)d * sizeof *pts))) {
			fprintf(stderr, "plb-kmeans: out of memory for %zu points\n", count);
			rc = PLB_ENOMEM;
		} else {
			plb__km_generate(pts, count, d, (int)k, (uint64_t)a.seed);
		}
		if (!rc && (size_t)k > count) {
			fprintf(stderr, "plb-kmeans: --k %ld: more clusters than the %zu points\n", k, count);
			rc = PLB_EINVAL;
		}
	}
	plb_t *p;
	int irc = plb_init(&argc, &argv, &o, &p);
	if ((status = app_worker(p, irc)) >= 0) {
		free(pts);
		return status;
	}
	if (rc)
		goto out;
	size_t ab = plb__km_acc_bytes((int)k, d);
	cent = malloc((size_t)k * (size_t)d * sizeof *cent);
	lab = malloc(count * sizeof *lab);
	acc = malloc(ab);
	sh = malloc(plb__km_shared_bytes((int)k, d));
	if (!cent || !lab || !acc || !sh) {
		fprintf(stderr, "plb-kmeans: out of memory\n");
		rc = PLB_ENOMEM;
		goto out;
	}
	if ((rc = plb__km_init(pts, count, d, (int)k, plusplus, (uint64_t)a.seed, cent))) {
		fprintf(stderr, "plb-kmeans: cannot choose the first centroids: %s\n", plb_strerror(rc));
		goto out;
	}
	char sig[64];
	snprintf(sig, sizeof sig, "d=%d k=%ld", d, k);
	struct plb_job job = {
		PLB_INIT,
		.kernel = "kmeans", .units = count, .signature = sig,
		.shared = sh, .shared_bytes = plb__km_shared_bytes((int)k, d),
		.in = pts, .in_unit = (size_t)d * sizeof *pts,
		.out = lab, .out_unit = sizeof *lab,
		.acc_bytes = ab, .acc = acc,
	};
	double shift = INFINITY;
	long it;
	for (it = 0; it < iters && shift > tol; it++) {
		plb__km_share(sh, (int)k, d, cent);
		/* the points stay on the nodes; the centroids change every time */
		job.in_mode = PLB_IN_KEEP | (it ? PLB_IN_UNCHANGED : 0);
		if ((rc = plb_run(p, &job))) {
			fprintf(stderr, "plb-kmeans: %s\n", plb_errmsg(p));
			goto out;
		}
		struct plb_result r = {PLB_INIT};
		if ((rc = plb_result(p, &r)))
			goto out;
		float *prev = (float *)((struct plb__km_shared *)sh + 1);
		int empty = plb__km_update(acc, (int)k, d, cent);
		shift = 0;
		for (size_t j = 0; j < (size_t)k * d; j++)
			shift = fmax(shift, fabs((double)cent[j] - prev[j]));
		if (a.json) {
			if ((rc = plb_report(p, stdout, 1)))
				goto out;
		} else {
			printf("iteration %3ld: inertia %.6g, largest centroid move %.3g, %d empty; makespan %.4f s, ratio %.3f, %ld training block%s, %.0f bytes sent\n",
			       it + 1, acc[(size_t)k * d + k], shift, empty, r.makespan_s, r.ratio,
			       r.training_blocks, r.training_blocks == 1 ? "" : "s", r.bytes_sent);
		}
	}
	if (!a.json) {
		printf("%s after %ld iterations (largest move %.3g, --tol %g); the last run:\n",
		       shift <= tol ? "converged" : "stopped", it, shift, tol);
		if ((rc = plb_report(p, stdout, 0)))
			goto out;
	}
	fflush(stdout);
	if (labels_out && (rc = write_text(labels_out, "--labels", lab, count, 1, 1)))
		goto out;
	if (cent_out && (rc = write_text(cent_out, "--centroids", cent, (size_t)k, d, 0)))
		goto out;
	if (a.verify)
		rc = verify(pts, count, d, (int)k, (const float *)((struct plb__km_shared *)sh + 1), lab, acc);
out:
	free(pts);
	free(cent);
	free(lab);
	free(acc);
	free(sh);
	return app_end(p, rc);
}
