/* The k-means CUDA kernel (see kmeans.h): one thread a point finds its
 * nearest centroid (direct distances, float), writes its label and adds
 * the point into the block's accumulator on the device (double atomics);
 * the accumulator is copied back and added into the caller's. Points,
 * labels and the accumulator travel on the PU's own stream; device
 * buffers grow with the largest block seen. Every CUDA call goes through
 * one checking macro, which records file:line and CUDA's own error. */
#include <cuda_runtime.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kmeans/kmeans.h"
#include "kernels/cuda_check.h"

struct plb__km_cuda {
	int dev, k, d;
	cudaStream_t stream;
	float *dc;              /* centroids, k * d */
	float *dx;              /* points, cap * d */
	int32_t *dl;            /* labels, cap */
	double *dacc, *hacc;    /* the block's accumulator: device, host */
	size_t cap;
	struct plb__cuda_phases ph;
	struct plb__phase_times last;   /* the last block's phases */
	char err[256];
};


__global__ void assign(const float *__restrict__ x, const float *__restrict__ c, int k, int d,
		       size_t n, int32_t *__restrict__ lab, double *__restrict__ acc)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const float *xi = x + i * (size_t)d;
	float best = FLT_MAX;
	int bj = 0;
	for (int j = 0; j < k; j++) {
		float s = 0;
		for (int t = 0; t < d; t++) {
			float e = xi[t] - c[(size_t)j * d + t];
			s += e * e;
		}
		if (s < best) {
			best = s;
			bj = j;
		}
	}
	lab[i] = bj;
	for (int t = 0; t < d; t++)
		atomicAdd(&acc[(size_t)bj * d + t], (double)xi[t]);
	atomicAdd(&acc[(size_t)k * d + bj], 1.0);
	atomicAdd(&acc[(size_t)k * d + k], (double)best);
}

int plb__km_cuda_create(int dev, const void *shared, struct plb__km_cuda **out, char *err,
			size_t errlen)
{
	*out = NULL;
	const struct plb__km_shared *h = (const struct plb__km_shared *)shared;
	if (dev < 0 || !h || h->k < 1 || h->d < 1)
		return PLB_EINVAL;
	struct plb__km_cuda *c = (struct plb__km_cuda *)calloc(1, sizeof *c);
	if (!c)
		return PLB_ENOMEM;
	c->dev = dev;
	c->k = h->k;
	c->d = h->d;
	size_t cb = (size_t)c->k * c->d * sizeof(float), ab = plb__km_acc_bytes(c->k, c->d);
	cudaError_t e = cudaSetDevice(dev);
	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&c->dc, cb);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&c->dacc, ab);
	if (e == cudaSuccess)
		e = cudaMallocHost((void **)&c->hacc, ab);
	if (e == cudaSuccess)
		e = cudaMemcpy(c->dc, h + 1, cb, cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = plb__cuda_phases_create(&c->ph);
	if (e != cudaSuccess) {
		snprintf(err, errlen, "%s:%d: setting up device %d: %s", __FILE__, __LINE__, dev,
			 cudaGetErrorString(e));
		plb__km_cuda_destroy(c);
		return PLB_EIO;
	}
	*out = c;
	return 0;
}

/* Device buffers for n points. */
static int reserve(struct plb__km_cuda *c, size_t n)
{
	if (n <= c->cap)
		return 0;
	PLB__CUDA_CHECK(c, cudaFree(c->dx));
	PLB__CUDA_CHECK(c, cudaFree(c->dl));
	c->dx = NULL;
	c->dl = NULL;
	c->cap = 0;
	PLB__CUDA_CHECK(c, cudaMalloc((void **)&c->dx, n * (size_t)c->d * sizeof(float)));
	PLB__CUDA_CHECK(c, cudaMalloc((void **)&c->dl, n * sizeof(int32_t)));
	c->cap = n;
	return 0;
}

int plb__km_cuda_run(struct plb__km_cuda *c, const float *points, size_t n, int32_t *labels,
		     double *acc)
{
	if (!n)
		return 0;
	if (!points || !labels || !acc)
		return PLB_EINVAL;
	PLB__CUDA_CHECK(c, cudaSetDevice(c->dev));
	int rc = reserve(c, n);
	if (rc)
		return rc;
	size_t ab = plb__km_acc_bytes(c->k, c->d);
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_START], c->stream));
	PLB__CUDA_CHECK(c, cudaMemsetAsync(c->dacc, 0, ab, c->stream));
	PLB__CUDA_CHECK(c, cudaMemcpyAsync(c->dx, points, n * (size_t)c->d * sizeof(float),
				      cudaMemcpyHostToDevice, c->stream));
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_IN], c->stream));
	unsigned threads = 256, blocks = (unsigned)((n + threads - 1) / threads);
	assign<<<blocks, threads, 0, c->stream>>>(c->dx, c->dc, c->k, c->d, n, c->dl, c->dacc);
	PLB__CUDA_CHECK(c, cudaGetLastError());
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_RUN], c->stream));
	PLB__CUDA_CHECK(c, cudaMemcpyAsync(labels, c->dl, n * sizeof(int32_t), cudaMemcpyDeviceToHost,
				      c->stream));
	PLB__CUDA_CHECK(c, cudaMemcpyAsync(c->hacc, c->dacc, ab, cudaMemcpyDeviceToHost, c->stream));
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_OUT], c->stream));
	PLB__CUDA_CHECK(c, cudaStreamSynchronize(c->stream));
	plb__km_combine(acc, c->hacc, ab);
	c->last = (struct plb__phase_times){0, 0, 0};
	PLB__CUDA_CHECK(c, plb__cuda_phases_add(&c->ph, &c->last));
	return 0;
}

void plb__km_cuda_times(const struct plb__km_cuda *c, struct plb__phase_times *t)
{
	*t = c->last;
}

void plb__km_cuda_destroy(struct plb__km_cuda *c)
{
	if (!c)
		return;
	cudaSetDevice(c->dev);
	cudaFree(c->dc);
	cudaFree(c->dx);
	cudaFree(c->dl);
	cudaFree(c->dacc);
	cudaFreeHost(c->hacc);
	plb__cuda_phases_destroy(&c->ph);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}
