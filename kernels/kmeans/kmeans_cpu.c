/* The k-means CPU kernel, its reference, the combine and the update (see
 * kmeans.h). */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kmeans/kmeans.h"

#define CHUNK_FLOATS 16384      /* a chunk's x.c products: 64 KiB, cache-resident */

size_t plb__km_shared_bytes(int k, int d)
{
	return sizeof(struct plb__km_shared) + ((size_t)k * (size_t)d + (size_t)k) * sizeof(float);
}

size_t plb__km_acc_bytes(int k, int d)
{
	return ((size_t)k * (size_t)d + (size_t)k + 1) * sizeof(double);
}

void plb__km_share(void *sh, int k, int d, const float *centroids)
{
	struct plb__km_shared *h = sh;
	*h = (struct plb__km_shared){.k = k, .d = d};
	float *c = (float *)(h + 1), *norm = c + (size_t)k * (size_t)d;
	memcpy(c, centroids, (size_t)k * (size_t)d * sizeof *c);
	for (int j = 0; j < k; j++) {
		double s = 0;
		for (int t = 0; t < d; t++)
			s += (double)c[(size_t)j * d + t] * c[(size_t)j * d + t];
		norm[j] = (float)s;
	}
}

int plb__km_cpu(const void *shared, const float *points, size_t n, int32_t *labels, double *acc)
{
	const struct plb__km_shared *h = shared;
	if (!h || h->k < 1 || h->d < 1 || (n && (!points || !labels || !acc)))
		return PLB_EINVAL;
	int k = h->k, d = h->d;
	const float *c = (const float *)(h + 1), *cnorm = c + (size_t)k * (size_t)d;
	size_t chunk = CHUNK_FLOATS / (size_t)k;
	chunk = chunk < 1 ? 1 : chunk;
	float *g = malloc((chunk < n ? chunk : n ? n : 1) * (size_t)k * sizeof *g);
	if (!g)
		return PLB_ENOMEM;
	double *sum = acc, *count = acc + (size_t)k * (size_t)d, *inertia = count + k;
	for (size_t o = 0; o < n; o += chunk) {
		size_t m = n - o < chunk ? n - o : chunk;
		const float *x = points + o * (size_t)d;
		/* g = X C^T: m x k */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, k, d, 1.0f, x, d, c, d,
			    0.0f, g, k);
		for (size_t i = 0; i < m; i++) {
			const float *xi = x + i * (size_t)d, *gi = g + i * (size_t)k;
			float best = FLT_MAX;
			int bj = 0;
			for (int j = 0; j < k; j++) {
				float dist = cnorm[j] - 2 * gi[j];      /* |x|^2 is the same for all j */
				if (dist < best) {
					best = dist;
					bj = j;
				}
			}
			double xn = 0;
			double *s = sum + (size_t)bj * (size_t)d;
			for (int t = 0; t < d; t++) {
				s[t] += xi[t];
				xn += (double)xi[t] * xi[t];
			}
			count[bj] += 1;
			*inertia += fmax(0, xn + (double)best);
			labels[o + i] = bj;
		}
	}
	free(g);
	return 0;
}

void plb__km_combine(void *acc, const void *part, size_t bytes)
{
	double *a = acc;
	const double *p = part;
	for (size_t i = 0; i < bytes / sizeof *a; i++)
		a[i] += p[i];
}

int plb__km_nearest(const float *x, int k, int d, const float *centroids, double *dist)
{
	double best = INFINITY;
	int bj = 0;
	for (int j = 0; j < k; j++) {
		double s = 0;
		for (int t = 0; t < d; t++) {
			double e = (double)x[t] - centroids[(size_t)j * d + t];
			s += e * e;
		}
		if (s < best) {
			best = s;
			bj = j;
		}
	}
	if (dist)
		*dist = best;
	return bj;
}

int plb__km_update(const double *acc, int k, int d, float *centroids)
{
	const double *count = acc + (size_t)k * (size_t)d;
	int empty = 0;
	for (int j = 0; j < k; j++) {
		if (count[j] <= 0) {
			empty++;
			continue;
		}
		for (int t = 0; t < d; t++)
			centroids[(size_t)j * d + t] = (float)(acc[(size_t)j * d + t] / count[j]);
	}
	return empty;
}
