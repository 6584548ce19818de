/* k-means kernels for the bundled plb-kmeans app (Lloyd's algorithm): the
 * points are the domain, one point (d float32 coordinates) a unit; a run
 * labels every point with its nearest centroid (an int32 a unit) and adds
 * each point into its cluster's sum, in a block's accumulator: k * d sums,
 * k counts and the block's inertia (sum of squared distances to the
 * nearest centroid), all double, combined by adding. The CPU kernel gets
 * each chunk's distances from one BLAS product, |x|^2 - 2 x.c + |c|^2; the
 * serial reference computes (x - c)^2 directly, in double. */
#ifndef PLB_KERNELS_KMEANS_H
#define PLB_KERNELS_KMEANS_H

#include <stddef.h>
#include <stdint.h>

#include "plb_errors.h"
#include "kernels/phase_times.h"

#ifdef __cplusplus
extern "C" {
#endif

/* plb-kmeans's kernel "kmeans" (kmeans_kernel.c): cpu, and cuda where
 * built, with combine. */
extern const struct plb_kernel plb__km_kernel;

/* A run's shared data: the header, then k * d float centroids (row c is
 * centroid c), then their k squared norms (float). */
struct plb__km_shared {
	int32_t k, d;
	int32_t pad[2];
};

/* Bytes of the shared data and of the accumulator for k clusters of d
 * dimensions. */
size_t plb__km_shared_bytes(int k, int d);
size_t plb__km_acc_bytes(int k, int d);

/* Fills the shared data at sh (plb__km_shared_bytes) from k * d centroids. */
void plb__km_share(void *sh, int k, int d, const float *centroids);

/* A block of n points (row-major, d floats each): labels into labels, and
 * the points added into acc (plb__km_acc_bytes: sums[k * d], counts[k],
 * inertia, all double; not cleared). Ties go to the lowest centroid.
 * Returns 0, PLB_EINVAL or PLB_ENOMEM. */
PLB_WUR int plb__km_cpu(const void *shared, const float *points, size_t n, int32_t *labels,
			double *acc);

/* acc += part, both plb__km_acc_bytes(k, d) (the job's combine). */
void plb__km_combine(void *acc, const void *part, size_t bytes);

/* The serial reference of one point: its nearest centroid (ties: the
 * lowest) and the squared distance to it, in double. */
int plb__km_nearest(const float *x, int k, int d, const float *centroids, double *dist);

/* New centroids from an accumulator: the mean of each cluster's points; a
 * cluster left empty keeps its centroid. Returns how many were empty. */
int plb__km_update(const double *acc, int k, int d, float *centroids);

/* n points of d dimensions drawn from seed around k centres (a normal
 * spread of 1 around centres uniform in [-10, 10) a dimension). */
void plb__km_generate(float *points, size_t n, int d, int k, uint64_t seed);

/* k initial centroids among the n points, chosen from seed: k-means++
 * (plusplus: each next one with probability proportional to its squared
 * distance from the nearest chosen), or k distinct points at random.
 * Returns 0, PLB_EINVAL (k > n) or PLB_ENOMEM. */
PLB_WUR int plb__km_init(const float *points, size_t n, int d, int k, int plusplus, uint64_t seed,
			 float *centroids);

/* Reads points from a file: the raw format (the 8 bytes "PLBKMF32", then
 * n and d as little-endian int64, then n * d little-endian float32, row
 * by row) when it starts with that magic, else CSV (d numbers a line, the
 * same d on every line; a first line that is not numbers is a header of
 * names; '#' lines are comments). *points (malloc'd), *n and *d on
 * success; PLB_EINVAL with "FILE:LINE: what; accepted: ..." (raw: FILE:
 * and the byte offset) in err, PLB_EIO or PLB_ENOMEM otherwise. */
PLB_WUR int plb__km_read(const char *path, float **points, size_t *n, int *d, char *err,
			 size_t errlen);

/* CUDA (kmeans_cuda.cu). Without a CUDA toolkit these are absent: callers
 * test PLB_HAVE_CUDA. */
struct plb__km_cuda;
/* Device dev with the run's centroids (the shared data) uploaded. On
 * error returns PLB_EIO and writes the CUDA reason. */
PLB_WUR int plb__km_cuda_create(int dev, const void *shared, struct plb__km_cuda **out, char *err,
				size_t errlen);
/* plb__km_cpu's work on the device: labels, and the points added into acc;
 * returns when both are in host memory. */
PLB_WUR int plb__km_cuda_run(struct plb__km_cuda *c, const float *points, size_t n, int32_t *labels,
			     double *acc);
/* The last block's phases (copy in, kernel, copy out) as the device
 * timed them. */
void plb__km_cuda_times(const struct plb__km_cuda *c, struct plb__phase_times *t);
void plb__km_cuda_destroy(struct plb__km_cuda *c);

/* OpenCL (kmeans_opencl.c). Without OpenCL at build time these are
 * absent: callers test PLB_HAVE_OPENCL. As the CUDA functions, on OpenCL
 * device dev (a cl_device_id) of context ctx (a cl_context). */
struct plb__km_cl;
PLB_WUR int plb__km_cl_create(void *ctx, void *dev, const void *shared, struct plb__km_cl **out,
			      char *err, size_t errlen);
PLB_WUR int plb__km_cl_run(struct plb__km_cl *c, const float *points, size_t n, int32_t *labels,
			   double *acc);
void plb__km_cl_times(const struct plb__km_cl *c, struct plb__phase_times *t);
void plb__km_cl_destroy(struct plb__km_cl *c);

#ifdef __cplusplus
}
#endif

#endif
