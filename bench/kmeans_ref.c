/* bench/kmeans.sh's reference for plb-kmeans: one Lloyd iteration's work
 * (every point labelled with its nearest centroid, and added into its
 * cluster's sum and count) timed three ways on the same points and
 * centroids, best of REPS:
 *  - a straightforward BLAS program: all n x k products x.c in one sgemm
 *    into an n x k matrix, then one pass for the argmin of |c|^2 - 2 x.c,
 *    the sums and the inertia (what a single-node k-means written on
 *    BLAS does);
 *  - a plain loop computing (x - c)^2 for every point and centroid, built
 *    -O3 -march=native for this machine (what one writes without BLAS);
 *  - plb's CPU kernel called directly (plb__km_cpu: chunks of the same
 *    sgemm sized to stay in cache, the argmin and sums as it goes).
 * Prints one line: points per second each way, and how many labels the
 * kernel and the BLAS program give differently (float near-ties). The
 * BLAS library decides its threads (OPENBLAS_NUM_THREADS=1: one core).
 *
 *   kmeans_ref N D K
 */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "kernels/kmeans/kmeans.h"

#define REPS 5

/* The BLAS program: labels, sums[k * d], counts[k] and the inertia
 * (cleared here), as the kernel's accumulator has them. */
static void ref_blas(const float *x, size_t n, int d, int k, const float *c, const float *cnorm,
		     float *g, int32_t *lab, double *sum, double *count)
{
	memset(sum, 0, ((size_t)k * (size_t)d + (size_t)k + 1) * sizeof *sum);
	double *inertia = count + k;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, k, d, 1.0f, x, d, c, d, 0.0f,
		    g, k);
	for (size_t i = 0; i < n; i++) {
		const float *gi = g + i * (size_t)k;
		float best = FLT_MAX;
		int bj = 0;
		for (int j = 0; j < k; j++) {
			float dist = cnorm[j] - 2 * gi[j];
			if (dist < best) {
				best = dist;
				bj = j;
			}
		}
		lab[i] = bj;
		count[bj] += 1;
		double xn = 0;
		for (int t = 0; t < d; t++) {
			float v = x[i * (size_t)d + t];
			sum[(size_t)bj * d + t] += v;
			xn += (double)v * v;
		}
		*inertia += fmax(0, xn + (double)best);
	}
}

/* The plain loop: the same results from (x - c)^2 in float. */
static void ref_loop(const float *x, size_t n, int d, int k, const float *c, int32_t *lab,
		     double *sum, double *count)
{
	memset(sum, 0, ((size_t)k * (size_t)d + (size_t)k + 1) * sizeof *sum);
	double *inertia = count + k;
	for (size_t i = 0; i < n; i++) {
		const float *xi = x + i * (size_t)d;
		float best = FLT_MAX;
		int bj = 0;
		for (int j = 0; j < k; j++) {
			const float *cj = c + (size_t)j * d;
			float s = 0;
			for (int t = 0; t < d; t++) {
				float e = xi[t] - cj[t];
				s += e * e;
			}
			if (s < best) {
				best = s;
				bj = j;
			}
		}
		lab[i] = bj;
		count[bj] += 1;
		*inertia += best;
		for (int t = 0; t < d; t++)
			sum[(size_t)bj * d + t] += xi[t];
	}
}

int main(int argc, char **argv)
{
	size_t n = argc > 3 ? strtoull(argv[1], NULL, 10) : 0;
	int d = argc > 3 ? atoi(argv[2]) : 0, k = argc > 3 ? atoi(argv[3]) : 0;
	if (!n || d < 1 || k < 1 || (size_t)k > n) {
		fprintf(stderr, "usage: kmeans_ref N D K   (1 <= K <= N)\n");
		return 2;
	}
	size_t kd = (size_t)k * (size_t)d;
	float *x = malloc(n * (size_t)d * sizeof *x), *c = malloc(kd * sizeof *c);
	float *g = malloc(n * (size_t)k * sizeof *g);
	void *sh = malloc(plb__km_shared_bytes(k, d));
	int32_t *lab_ref = malloc(n * sizeof *lab_ref), *lab_ker = malloc(n * sizeof *lab_ker);
	double *acc = malloc(plb__km_acc_bytes(k, d)), *sum = malloc(plb__km_acc_bytes(k, d));
	if (!x || !c || !g || !sh || !lab_ref || !lab_ker || !acc || !sum) {
		fprintf(stderr, "kmeans_ref: out of memory\n");
		return 1;
	}
	plb__km_generate(x, n, d, k, 1);
	if (plb__km_init(x, n, d, k, 0, 1, c)) {
		fprintf(stderr, "kmeans_ref: no initial centroids\n");
		return 1;
	}
	plb__km_share(sh, k, d, c);
	const float *cnorm = (const float *)((const struct plb__km_shared *)sh + 1) + kd;

	double blas = INFINITY, loop = INFINITY, ker = INFINITY;
	for (int r = 0; r < REPS; r++) {
		double t = plb__now();
		ref_blas(x, n, d, k, c, cnorm, g, lab_ref, sum, sum + kd);
		blas = fmin(blas, plb__now() - t);
		t = plb__now();
		ref_loop(x, n, d, k, c, lab_ker, sum, sum + kd);
		loop = fmin(loop, plb__now() - t);
		memset(acc, 0, plb__km_acc_bytes(k, d));
		t = plb__now();
		if (plb__km_cpu(sh, x, n, lab_ker, acc))
			return 1;
		ker = fmin(ker, plb__now() - t);
	}
	/* the kernel against the BLAS program: labels (the same arithmetic
	 * but for the order of the sgemm's sums, so a near-tie may differ)
	 * and counts */
	ref_blas(x, n, d, k, c, cnorm, g, lab_ref, sum, sum + kd);
	size_t differ = 0;
	for (size_t i = 0; i < n; i++)
		differ += lab_ref[i] != lab_ker[i];
	double counted = 0, inertia = acc[kd + (size_t)k], ref_inertia = sum[kd + (size_t)k];
	for (int j = 0; j < k; j++)
		counted += acc[kd + (size_t)j];
	int same = fabs(inertia - ref_inertia) <= 1e-5 * ref_inertia;
	printf("n %zu, d %d, k %d: BLAS program %.1f M points/s, plain loop %.1f M points/s, "
	       "plb kernel %.1f M points/s (%.2fx the BLAS program's time, %.2fx the loop's); "
	       "%zu labels differ from the BLAS program's\n",
	       n, d, k, n / blas / 1e6, n / loop / 1e6, n / ker / 1e6, ker / blas, ker / loop,
	       differ);
	free(x);
	free(c);
	free(g);
	free(sh);
	free(lab_ref);
	free(lab_ker);
	free(acc);
	free(sum);
	if (!same)
		fprintf(stderr, "kmeans_ref: inertia %.9g, the BLAS program's %.9g\n", inertia,
			ref_inertia);
	return counted == (double)n && differ <= n / 1000 && same ? 0 : 1;
}
