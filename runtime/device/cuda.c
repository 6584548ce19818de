/* The cuda device class: one GPU per PU. The runtime's only file with CUDA
 * headers; built when nvcc is found (PLB_HAVE_CUDA). The PU's thread makes
 * the device current; streams, cuBLAS handles and pinned staging buffers
 * belong to the kernel's cuda class (e.g. kernels/mm/mm_cuda.cu), which gets
 * the device ordinal in plb_pu_info. */
#ifdef PLB_HAVE_CUDA
#include <stdio.h>

#include <cuda_runtime.h>

#include "runtime/device/device.h"

int plb__cuda_count(char *err, size_t errlen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
		return 0;
	if (e != cudaSuccess) {
		snprintf(err, errlen, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
		return -1;
	}
	return n;
}

static int cuda_open(struct plb__dev *d, char *err, size_t errlen)
{
	char why[200] = "";
	int n = plb__cuda_count(why, sizeof why);
	if (n < 0) {
		snprintf(err, errlen, "gpu = %d: cannot ask the CUDA driver (%s)", d->desc.device, why);
		return PLB_EDEVICE;
	}
	if (d->desc.device >= n) {
		if (n)
			snprintf(err, errlen, "gpu = %d: this node has %d CUDA device%s; accepted: indices 0 to %d",
				 d->desc.device, n, n == 1 ? "" : "s", n - 1);
		else
			snprintf(err, errlen, "gpu = %d: this node has no CUDA device; accepted: leave gpu out",
				 d->desc.device);
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

static int cuda_run(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
		    const struct plb_block *b, struct plb__dev_times *t)
{
	(void)d;
	double t0 = plb__now();
	int rc = kc->run(kstate, b);
	t->exec_s = t->busy_s = plb__now() - t0;
	t->xfer_s = 0;          /* the kernel's copies overlap its compute: part of exec */
	return rc;
}

const struct plb__devclass plb__dev_cuda = {
	.name = "cuda",
	.open = cuda_open,
	.thread_start = cuda_thread_start,
	.run = cuda_run,
};
#endif
