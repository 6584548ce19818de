/* The cuda device class (gpu = 0 1 ... in a [node]): one GPU per PU. The
 * runtime's only file with CUDA headers, and built either way: without a
 * whole CUDA toolkit at build time (PLB_HAVE_CUDA unset) a config that asks
 * for a GPU gets a message saying so. The PU's thread makes the device
 * current; streams, cuBLAS handles and pinned staging buffers belong to
 * the kernel's cuda class (e.g. kernels/mm/mm_cuda.cu), which gets the
 * device ordinal in plb_pu_info. A block's exec time is its wall time. */
#include <stdio.h>

#ifdef PLB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "runtime/device/device.h"

#ifdef PLB_HAVE_CUDA
int plb__dev_cuda_count(char *why, size_t len)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaSuccess)
		return n;
	if (why && len)
		snprintf(why, len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
	/* no device, or no driver at all: a machine without a GPU */
	return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? 0 : -1;
}

static int cuda_open(struct plb__dev *d, const struct plb__dev_spec *s, char *err, size_t errlen)
{
	char why[200] = "";
	int dev = s->value, n = plb__dev_cuda_count(why, sizeof why);

	d->desc.device = d->info.device = dev;
	snprintf(d->desc.name, sizeof d->desc.name, "%s.gpu%d", s->cfg->nodes[s->node].name, dev);
	if (n < 0) {
		snprintf(err, errlen, "gpu = %d: cannot ask the CUDA driver (%s)", dev, why);
		return PLB_EDEVICE;
	}
	if (dev >= n) {
		if (n)
			snprintf(err, errlen, "gpu = %d: this node has %d CUDA device%s; accepted: indices 0 to %d",
				 dev, n, n == 1 ? "" : "s", n - 1);
		else
			snprintf(err, errlen, "gpu = %d: this node has no CUDA device; accepted: leave gpu out",
				 dev);
		return PLB_ECONFIG;
	}
	return 0;
}

static int cuda_thread_start(struct plb__dev *d, char *err, size_t errlen)
{
	cudaError_t e = cudaSetDevice(d->desc.device);
	if (e != cudaSuccess) {
		snprintf(err, errlen, "cudaSetDevice(%d): %s", d->desc.device, cudaGetErrorString(e));
		return PLB_EDEVICE;
	}
	return 0;
}
#else
static int cuda_open(struct plb__dev *d, const struct plb__dev_spec *s, char *err, size_t errlen)
{
	(void)d;
	snprintf(err, errlen, "gpu = %d: plb was built without CUDA (no nvcc, or no cuBLAS, at build time); accepted: leave gpu out, or rebuild where nvcc and cuBLAS are installed",
		 s->value);
	return PLB_ECONFIG;
}
#define cuda_thread_start NULL

int plb__dev_cuda_count(char *why, size_t len)
{
	if (why && len)
		snprintf(why, len, "plb was built without CUDA");
	return 0;
}
#endif

const struct plb__devclass plb__dev_cuda = {
	.name = "cuda",
	.kernel = PLB_DEV_CUDA,
	.host_core = 1,
	.open = cuda_open,
	.thread_start = cuda_thread_start,
};
