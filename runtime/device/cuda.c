/* The cuda device class (gpu = 0 1 ... in a [node]): one GPU per PU. The
 * runtime's only file with CUDA headers, and built either way: without a
 * whole CUDA toolkit at build time (PLB_HAVE_CUDA unset) a config that asks
 * for a GPU gets a message saying so. The PU's thread makes the device
 * current; streams, cuBLAS handles and pinned staging buffers belong to
 * the kernel's cuda class (e.g. kernels/mm/mm_cuda.cu), which gets the
 * device ordinal in plb_pu_info. A block's exec time is its wall time.
 *
 * The CUDA runtime library is loaded (dlopen) the first time a config asks
 * for a GPU, never linked: a CPU-only app built against libplb starts on a
 * node without it. The name tried first is the soname of the toolkit plb
 * was built with (PLB_CUDART, e.g. libcudart.so.13), which finds the copy
 * an app with CUDA kernels already has loaded, then that toolkit's own
 * file (PLB_CUDART_DIR). */
#include <stdio.h>

#ifdef PLB_HAVE_CUDA
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#endif

#include "runtime/device/device.h"

#ifdef PLB_HAVE_CUDA
#ifndef PLB_CUDART
#define PLB_CUDART "libcudart.so"
#endif

/* What plb calls of the CUDA runtime, loaded once. */
static struct {
	cudaError_t (*get_count)(int *n);
	cudaError_t (*set_device)(int dev);
	const char *(*error_string)(cudaError_t e);
	char why[300];          /* why it could not be loaded ("" if it was) */
} cudart;
static pthread_once_t cudart_once = PTHREAD_ONCE_INIT;

static void cudart_load(void)
{
	static const char *const names[] = {
		PLB_CUDART,
#ifdef PLB_CUDART_DIR
		PLB_CUDART_DIR "/" PLB_CUDART,
#endif
	};
	void *h = NULL;
	for (size_t i = 0; !h && i < sizeof names / sizeof *names; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(cudart.why, sizeof cudart.why, "cannot load the CUDA runtime (%s)",
			 e ? e : PLB_CUDART);
		return;
	}
	/* POSIX's way from an object pointer to a function pointer */
	*(void **)&cudart.get_count = dlsym(h, "cudaGetDeviceCount");
	*(void **)&cudart.set_device = dlsym(h, "cudaSetDevice");
	*(void **)&cudart.error_string = dlsym(h, "cudaGetErrorString");
	if (!cudart.get_count || !cudart.set_device || !cudart.error_string) {
		snprintf(cudart.why, sizeof cudart.why, "%s lacks cudaGetDeviceCount, cudaSetDevice or cudaGetErrorString",
			 PLB_CUDART);
		cudart.get_count = NULL;
	}
}

int plb__dev_cuda_count(char *why, size_t len)
{
	int n = 0;
	pthread_once(&cudart_once, cudart_load);
	if (!cudart.get_count) {
		/* no CUDA runtime on this node: no GPU plb can use */
		if (why && len)
			snprintf(why, len, "%s", cudart.why);
		return 0;
	}
	cudaError_t e = cudart.get_count(&n);
	if (e == cudaSuccess)
		return n;
	if (why && len) {
		void *drv = NULL;
		if (e == cudaErrorInsufficientDriver && !(drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
			/* the runtime says "insufficient" where there is no driver at all */
			snprintf(why, len, "no NVIDIA driver on this node (libcuda.so.1 not found)");
		else if (e == cudaErrorInsufficientDriver)
			snprintf(why, len, "the NVIDIA driver is older than the CUDA runtime plb was built with (cudaGetDeviceCount: %s); accepted: a driver for CUDA %d.%d or newer",
				 cudart.error_string(e), CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
		else
			snprintf(why, len, "cudaGetDeviceCount: %s", cudart.error_string(e));
		if (drv)
			dlclose(drv);
	}
	/* no device, or no driver at all: a machine without a GPU */
	return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? 0 : -1;
}

static int cuda_open(struct plb__dev *d, const struct plb__dev_spec *s, char *err, size_t errlen)
{
	char why[320] = "";
	int dev = s->value, n = plb__dev_cuda_count(why, sizeof why);

	d->desc.device = d->info.device = dev;
	snprintf(d->desc.name, sizeof d->desc.name, "%s.gpu%d", s->cfg->nodes[s->node].name, dev);
	if (n < 0) {
		snprintf(err, errlen, "gpu = %d: cannot ask the CUDA driver (%s)", dev, why);
		return PLB_EDEVICE;
	}
	if (dev >= n) {
		if (!n && *why)
			snprintf(err, errlen, "gpu = %d: no CUDA device: %s; accepted: leave gpu out", dev, why);
		else if (n)
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
	cudaError_t e = cudart.set_device(d->desc.device);
	if (e != cudaSuccess) {
		snprintf(err, errlen, "cudaSetDevice(%d): %s", d->desc.device, cudart.error_string(e));
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
