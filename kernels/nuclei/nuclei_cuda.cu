// plb-nuclei's device operations on a CUDA GPU: the same six as on an
// OpenCL device (nuclei_opencl.c), each the CPU operation's output to the
// bit (integer arithmetic; the deconvolution in double without fused
// multiply-adds, the Makefile's --fmad=false; the reconstruction and the
// flood to their one fixed point). A task copies its inputs from the
// tile's scratch in host memory and its output back, timed with CUDA
// events and reported with plb_report_copies.
#include <cuda_runtime.h>
#include <stdlib.h>

#include "kernels/cuda_check.h"
#include "kernels/nuclei/nuclei.h"

__global__ void k_gray(const unsigned char *rgb, unsigned char *g, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] = (unsigned char)((rgb[3 * i] * 9798 + rgb[3 * i + 1] * 19235 + rgb[3 * i + 2] * 3735 +
					(1 << 14)) >> 15);
}

__global__ void k_deconv(const unsigned char *rgb, unsigned char *h, const double *lut, double i0,
			 double i1, double i2, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	double c = 0;
	c = __dadd_rn(c, __dmul_rn(lut[rgb[3 * i]], i0));
	c = __dadd_rn(c, __dmul_rn(lut[rgb[3 * i + 1]], i1));
	c = __dadd_rn(c, __dmul_rn(lut[rgb[3 * i + 2]], i2));
	double v = __dmul_rn(c, 200);
	h[i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
}

__global__ void k_morph3(const unsigned char *s, unsigned char *d, int T, int dil)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= T || y >= T)
		return;
	int i = y * T + x;
	unsigned char v = s[i];
	if (x > 0) v = dil ? max(v, s[i - 1]) : min(v, s[i - 1]);
	if (x < T - 1) v = dil ? max(v, s[i + 1]) : min(v, s[i + 1]);
	if (y > 0) v = dil ? max(v, s[i - T]) : min(v, s[i - T]);
	if (y < T - 1) v = dil ? max(v, s[i + T]) : min(v, s[i + T]);
	d[i] = v;
}

__global__ void k_clip(const unsigned char *a, const unsigned char *m, unsigned char *d, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		d[i] = min(a[i], m[i]);
}

__global__ void k_recon(const unsigned char *s, unsigned char *d, const unsigned char *m,
			int *changed, int T)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= T || y >= T)
		return;
	unsigned char v = 0;
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++) {
			int xx = x + dx, yy = y + dy;
			if (xx >= 0 && xx < T && yy >= 0 && yy < T)
				v = max(v, s[yy * T + xx]);
		}
	int i = y * T + x;
	v = min(v, m[i]);
	d[i] = v;
	if (v != s[i])
		*changed = 1;
}

__global__ void k_flood(const unsigned char *m, volatile unsigned char *r, int *changed, int T)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= T || y >= T)
		return;
	int i = y * T + x;
	if (r[i] || m[i])
		return;
	if (x == 0 || y == 0 || x == T - 1 || y == T - 1 || r[i - 1] || r[i + 1] || r[i - T] ||
	    r[i + T]) {
		r[i] = 1;
		*changed = 1;
	}
}

__global__ void k_holes(unsigned char *m, const unsigned char *r, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		m[i] = m[i] | (r[i] ? 0 : 255);
}

__device__ int rf(int k, int T)
{
	return k < 0 ? -k : k >= T ? 2 * T - 2 - k : k;
}

__global__ void k_sobel(const unsigned char *g, float *out, int T)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= T || y >= T)
		return;
	int xm = rf(x - 1, T), xp = rf(x + 1, T), ym = rf(y - 1, T), yp = rf(y + 1, T);
	int gx = (g[ym * T + xp] - g[ym * T + xm]) + 2 * (g[y * T + xp] - g[y * T + xm]) +
		 (g[yp * T + xp] - g[yp * T + xm]);
	int gy = (g[yp * T + xm] - g[ym * T + xm]) + 2 * (g[yp * T + x] - g[ym * T + x]) +
		 (g[yp * T + xp] - g[ym * T + xp]);
	float fx = (float)gx, fy = (float)gy;
	out[y * T + x] = __fsqrt_rn(__fadd_rn(__fmul_rn(fx, fx), __fmul_rn(fy, fy)));
}

struct nuclei_cuda {
	int dev, T;
	cudaStream_t stream;
	cudaEvent_t e0, e1;
	unsigned char *rgb, *a, *b, *m;
	float *f;
	double *lut;
	int *flag;
	double inv0[3];
	double copy_s;
	char err[256];
};

extern "C" void nuclei_cuda_destroy(struct nuclei_cuda *d)
{
	if (!d)
		return;
	cudaSetDevice(d->dev);
	void *mem[] = {d->rgb, d->a, d->b, d->m, d->f, d->lut, d->flag};
	for (size_t i = 0; i < sizeof mem / sizeof *mem; i++)
		if (mem[i])
			cudaFree(mem[i]);
	if (d->e0)
		cudaEventDestroy(d->e0);
	if (d->e1)
		cudaEventDestroy(d->e1);
	if (d->stream)
		cudaStreamDestroy(d->stream);
	free(d);
}

static int make(struct nuclei_cuda *d)
{
	size_t px = (size_t)d->T * (size_t)d->T;
	double lut[256];
	PLB__CUDA_CHECK(d, cudaSetDevice(d->dev));
	PLB__CUDA_CHECK(d, cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
	PLB__CUDA_CHECK(d, cudaEventCreate(&d->e0));
	PLB__CUDA_CHECK(d, cudaEventCreate(&d->e1));
	PLB__CUDA_CHECK(d, cudaMalloc(&d->rgb, px * 3));
	PLB__CUDA_CHECK(d, cudaMalloc(&d->a, px));
	PLB__CUDA_CHECK(d, cudaMalloc(&d->b, px));
	PLB__CUDA_CHECK(d, cudaMalloc(&d->m, px));
	PLB__CUDA_CHECK(d, cudaMalloc(&d->f, px * sizeof(float)));
	PLB__CUDA_CHECK(d, cudaMalloc(&d->flag, sizeof(int)));
	PLB__CUDA_CHECK(d, cudaMalloc(&d->lut, sizeof lut));
	nuclei_deconv_coeffs(d->inv0, lut);
	PLB__CUDA_CHECK(d, cudaMemcpy(d->lut, lut, sizeof lut, cudaMemcpyHostToDevice));
	return 0;
}

extern "C" int nuclei_cuda_create(int dev, int T, struct nuclei_cuda **out, char *err, size_t len)
{
	struct nuclei_cuda *d = (struct nuclei_cuda *)calloc(1, sizeof *d);
	*out = NULL;
	if (!d) {
		snprintf(err, len, "out of memory");
		return PLB_ENOMEM;
	}
	d->dev = dev;
	d->T = T;
	int rc = make(d);
	if (rc) {
		snprintf(err, len, "%s", d->err);
		nuclei_cuda_destroy(d);
		return rc;
	}
	*out = d;
	return 0;
}

// A copy between host and device on the stream, timed.
static int copy(struct nuclei_cuda *d, void *to, const void *from, size_t n, cudaMemcpyKind k)
{
	float ms = 0;
	PLB__CUDA_CHECK(d, cudaEventRecord(d->e0, d->stream));
	PLB__CUDA_CHECK(d, cudaMemcpyAsync(to, from, n, k, d->stream));
	PLB__CUDA_CHECK(d, cudaEventRecord(d->e1, d->stream));
	PLB__CUDA_CHECK(d, cudaEventSynchronize(d->e1));
	PLB__CUDA_CHECK(d, cudaEventElapsedTime(&ms, d->e0, d->e1));
	d->copy_s += ms * 1e-3;
	return 0;
}

#define PUT(d, to, from, n) copy(d, to, from, n, cudaMemcpyHostToDevice)
#define GET(d, to, from, n) copy(d, to, from, n, cudaMemcpyDeviceToHost)

// Steps of a kernel (launched by step(s, t)) until one changes nothing;
// swap: each step reads s and writes t, then they trade places, the
// last written left in d->a.
template <class F> static int fixed_point(struct nuclei_cuda *d, int swap, F step)
{
	int changed = 1;
	unsigned char *s = d->a, *t = d->b;
	for (int k = 0; changed && k < 4 * d->T + 4; k++) {
		PLB__CUDA_CHECK(d, cudaMemsetAsync(d->flag, 0, sizeof(int), d->stream));
		step(s, t);
		PLB__CUDA_CHECK(d, cudaGetLastError());
		PLB__CUDA_CHECK(d, cudaMemcpyAsync(&changed, d->flag, sizeof changed,
						   cudaMemcpyDeviceToHost, d->stream));
		PLB__CUDA_CHECK(d, cudaStreamSynchronize(d->stream));
		if (swap) {
			unsigned char *x = s;
			s = t;
			t = x;
		}
	}
	if (swap && s != d->a)
		PLB__CUDA_CHECK(d, cudaMemcpyAsync(d->a, s, (size_t)d->T * (size_t)d->T,
						   cudaMemcpyDeviceToDevice, d->stream));
	return 0;
}

extern "C" int nuclei_cuda_run(struct nuclei_cuda *d, int op, const struct nuclei_params *pa,
			       const struct plb_block *b)
{
	struct nuclei_scratch s;
	int T = d->T, n = T * T, rc = 0;
	size_t px = (size_t)n;
	dim3 g1((unsigned)((n + 255) / 256)), t1(256), g2((unsigned)((T + 15) / 16), (unsigned)((T + 15) / 16)),
		t2(16, 16);
	if (!b->scratch)
		return PLB_EINVAL;
	PLB__CUDA_CHECK(d, cudaSetDevice(d->dev));
	nuclei_scratch_at(b->scratch, T, &s);
	d->copy_s = 0;
	switch (op) {
	case NUCLEI_GRAY:
		if ((rc = PUT(d, d->rgb, b->in, px * 3)))
			break;
		k_gray<<<g1, t1, 0, d->stream>>>(d->rgb, d->a, n);
		PLB__CUDA_CHECK(d, cudaGetLastError());
		rc = GET(d, s.gray, d->a, px);
		break;
	case NUCLEI_DECONV:
		if ((rc = PUT(d, d->rgb, b->in, px * 3)))
			break;
		k_deconv<<<g1, t1, 0, d->stream>>>(d->rgb, d->a, d->lut, d->inv0[0], d->inv0[1],
						    d->inv0[2], n);
		PLB__CUDA_CHECK(d, cudaGetLastError());
		rc = GET(d, s.h, d->a, px);
		break;
	case NUCLEI_OPEN:
		if (pa->open_r != 1) {
			snprintf(d->err, sizeof d->err, "the device's opening takes a disc of radius 1 only (open_r %d)",
				 pa->open_r);
			return PLB_EINVAL;
		}
		if ((rc = PUT(d, d->a, s.h, px)))
			break;
		k_morph3<<<g2, t2, 0, d->stream>>>(d->a, d->b, T, 0);
		k_morph3<<<g2, t2, 0, d->stream>>>(d->b, d->a, T, 1);
		PLB__CUDA_CHECK(d, cudaGetLastError());
		rc = GET(d, s.marker, d->a, px);
		break;
	case NUCLEI_RECON:
		if ((rc = PUT(d, d->b, s.marker, px)) || (rc = PUT(d, d->m, s.h, px)))
			break;
		k_clip<<<g1, t1, 0, d->stream>>>(d->b, d->m, d->a, n);
		PLB__CUDA_CHECK(d, cudaGetLastError());
		if ((rc = fixed_point(d, 1, [&](unsigned char *x, unsigned char *y) {
			     k_recon<<<g2, t2, 0, d->stream>>>(x, y, d->m, d->flag, T);
		     })))
			break;
		rc = GET(d, s.recon, d->a, px);
		break;
	case NUCLEI_FILL:
		if ((rc = PUT(d, d->m, s.mask, px)))
			break;
		PLB__CUDA_CHECK(d, cudaMemsetAsync(d->a, 0, px, d->stream));
		if ((rc = fixed_point(d, 0, [&](unsigned char *, unsigned char *) {
			     k_flood<<<g2, t2, 0, d->stream>>>(d->m, d->a, d->flag, T);
		     })))
			break;
		k_holes<<<g1, t1, 0, d->stream>>>(d->m, d->a, n);
		PLB__CUDA_CHECK(d, cudaGetLastError());
		rc = GET(d, s.mask, d->m, px);
		break;
	case NUCLEI_SOBEL:
		if ((rc = PUT(d, d->a, s.gray, px)))
			break;
		k_sobel<<<g2, t2, 0, d->stream>>>(d->a, d->f, T);
		PLB__CUDA_CHECK(d, cudaGetLastError());
		rc = GET(d, s.grad, d->f, px * sizeof(float));
		break;
	default:
		return PLB_EINVAL;
	}
	if (!rc)
		plb_report_copies(b, d->copy_s);
	return rc;
}
