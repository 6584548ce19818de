/* The Black-Scholes CUDA kernel (see bs.h): one thread an option, the same
 * formula as the CPU kernel. A block's options are copied to the device,
 * priced, and their prices copied back on the PU's own stream; device
 * buffers grow with the largest block seen. Every CUDA call goes through
 * one checking macro, which records file:line and CUDA's own error
 * string. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/bs/bs.h"
#include "kernels/cuda_check.h"


struct plb__bs_cuda {
	int dev;
	enum plb__bs_prec prec;
	cudaStream_t stream;
	void *din, *dout;
	size_t cap;             /* options the device buffers hold */
	struct plb__cuda_phases ph;
	struct plb__phase_times last;   /* the last block's phases */
	char err[256];
};


template <typename T> __device__ T cnd(T d)
{
	T k = (T)1 / ((T)1 + (T)PLB__BS_P * fabs(d));
	T c = (T)PLB__BS_RSQRT2PI * exp((T)-0.5 * d * d) *
	      PLB__BS_POLY(T, k);
	return d > 0 ? (T)1 - c : c;
}

template <typename T, typename Opt>
__global__ void price(const Opt *__restrict__ in, T *__restrict__ out, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	T S = in[i].S, K = in[i].K, t = in[i].T, r = in[i].r, v = in[i].v;
	T sq = v * sqrt(t);
	T d1 = (log(S / K) + (r + (T)0.5 * v * v) * t) / sq;
	T d2 = d1 - sq;
	T c1 = cnd(d1), c2 = cnd(d2);
	T ke = K * exp(-r * t);
	out[2 * i] = S * c1 - ke * c2;
	out[2 * i + 1] = ke * ((T)1 - c2) - S * ((T)1 - c1);
}

static int setup(struct plb__bs_cuda *c)
{
	PLB__CUDA_CHECK(c, cudaSetDevice(c->dev));
	PLB__CUDA_CHECK(c, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	PLB__CUDA_CHECK(c, plb__cuda_phases_create(&c->ph));
	return 0;
}

int plb__bs_cuda_create(int dev, enum plb__bs_prec prec, struct plb__bs_cuda **out, char *err,
			size_t errlen)
{
	*out = NULL;
	if (dev < 0)
		return PLB_EINVAL;
	struct plb__bs_cuda *c = (struct plb__bs_cuda *)calloc(1, sizeof *c);
	if (!c)
		return PLB_ENOMEM;
	c->dev = dev;
	c->prec = prec;
	int rc = setup(c);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", c->err);
		plb__bs_cuda_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Device buffers for n options. */
static int reserve(struct plb__bs_cuda *c, size_t n)
{
	if (n <= c->cap)
		return 0;
	PLB__CUDA_CHECK(c, cudaFree(c->din));
	PLB__CUDA_CHECK(c, cudaFree(c->dout));
	c->din = c->dout = NULL;
	c->cap = 0;
	PLB__CUDA_CHECK(c, cudaMalloc(&c->din, n * plb__bs_in_unit(c->prec)));
	PLB__CUDA_CHECK(c, cudaMalloc(&c->dout, n * plb__bs_out_unit(c->prec)));
	c->cap = n;
	return 0;
}

int plb__bs_cuda_run(struct plb__bs_cuda *c, const void *in, void *out, size_t n)
{
	if (!n)
		return 0;
	if (!in || !out)
		return PLB_EINVAL;
	PLB__CUDA_CHECK(c, cudaSetDevice(c->dev));
	int rc = reserve(c, n);
	if (rc)
		return rc;
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_START], c->stream));
	PLB__CUDA_CHECK(c, cudaMemcpyAsync(c->din, in, n * plb__bs_in_unit(c->prec),
				      cudaMemcpyHostToDevice, c->stream));
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_IN], c->stream));
	unsigned threads = 256, blocks = (unsigned)((n + threads - 1) / threads);
	if (c->prec == PLB__BS_F64)
		price<double, plb__bs_opt><<<blocks, threads, 0, c->stream>>>(
			(const plb__bs_opt *)c->din, (double *)c->dout, n);
	else
		price<float, plb__bs_optf><<<blocks, threads, 0, c->stream>>>(
			(const plb__bs_optf *)c->din, (float *)c->dout, n);
	PLB__CUDA_CHECK(c, cudaGetLastError());
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_RUN], c->stream));
	PLB__CUDA_CHECK(c, cudaMemcpyAsync(out, c->dout, n * plb__bs_out_unit(c->prec),
				      cudaMemcpyDeviceToHost, c->stream));
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_OUT], c->stream));
	PLB__CUDA_CHECK(c, cudaStreamSynchronize(c->stream));
	c->last = (struct plb__phase_times){0, 0, 0};
	PLB__CUDA_CHECK(c, plb__cuda_phases_add(&c->ph, &c->last));
	return 0;
}

void plb__bs_cuda_times(const struct plb__bs_cuda *c, struct plb__phase_times *t)
{
	*t = c->last;
}

void plb__bs_cuda_destroy(struct plb__bs_cuda *c)
{
	if (!c)
		return;
	cudaSetDevice(c->dev);
	cudaFree(c->din);
	cudaFree(c->dout);
	plb__cuda_phases_destroy(&c->ph);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}
