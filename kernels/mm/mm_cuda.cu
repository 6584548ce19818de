/* The matrix-multiply CUDA kernel (see mm.h): cuBLAS gemm on a block of
 * B's columns. A block is cut into chunks that alternate between two
 * streams, each chunk staged through pinned host memory, so the copy in of
 * one chunk, the product of another and the copy out of a third overlap.
 * Every CUDA and cuBLAS call goes through one checking macro per library,
 * which records file:line and the library's own error string. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mm/mm.h"
#include "plb.h"
#include "kernels/cuda_check.h"

#define NSTREAMS 2
#define CHUNKS 4                /* chunks per block, at least */
#define CHUNK_BYTES (64u << 20) /* most bytes of B (or C) in one chunk */

struct plb__mm_cuda {
	int dev, n;
	enum plb__mm_prec prec;
	size_t elem;
	int64_t max_cols, chunk_cols;
	cudaStream_t stream[NSTREAMS];
	cublasHandle_t blas;
	void *dA, *dB[NSTREAMS], *dC[NSTREAMS];
	void *hB[NSTREAMS], *hC[NSTREAMS];     /* pinned staging */
	struct plb__cuda_phases ph[NSTREAMS];  /* the stream's chunk in flight */
	struct plb__phase_times last;          /* the last block's, summed over chunks */
	char err[256];
};



#define CUBLAS_CHECK(m, call)                                                  \
	do {                                                                   \
		cublasStatus_t s_ = (call);                                    \
		if (s_ != CUBLAS_STATUS_SUCCESS)                               \
			return plb__cuda_fail((m)->err, sizeof (m)->err, __FILE__,  \
					 __LINE__, #call, cublasGetStatusString(s_)); \
	} while (0)

static int setup(struct plb__mm_cuda *m)
{
	size_t nn = (size_t)m->n * (size_t)m->n * m->elem;
	size_t chunk = (size_t)m->n * (size_t)m->chunk_cols * m->elem;
	PLB__CUDA_CHECK(m, cudaSetDevice(m->dev));
	CUBLAS_CHECK(m, cublasCreate(&m->blas));
	PLB__CUDA_CHECK(m, cudaMalloc(&m->dA, nn));
	for (int s = 0; s < NSTREAMS; s++) {
		PLB__CUDA_CHECK(m, cudaStreamCreateWithFlags(&m->stream[s], cudaStreamNonBlocking));
		PLB__CUDA_CHECK(m, cudaMalloc(&m->dB[s], chunk));
		PLB__CUDA_CHECK(m, cudaMalloc(&m->dC[s], chunk));
		PLB__CUDA_CHECK(m, cudaMallocHost(&m->hB[s], chunk));
		PLB__CUDA_CHECK(m, cudaMallocHost(&m->hC[s], chunk));
		PLB__CUDA_CHECK(m, plb__cuda_phases_create(&m->ph[s]));
	}
	return 0;
}

int plb__mm_cuda_create(int dev, enum plb__mm_prec prec, int n,
				   int64_t max_cols, struct plb__mm_cuda **out,
				   char *err, size_t errlen)
{
	*out = NULL;
	if (n < 1 || max_cols < 1 || dev < 0)
		return PLB_EINVAL;
	struct plb__mm_cuda *m = (struct plb__mm_cuda *)calloc(1, sizeof *m);
	if (!m)
		return PLB_ENOMEM;
	m->dev = dev;
	m->n = n;
	m->prec = prec;
	m->elem = plb__mm_elem(prec);
	m->max_cols = max_cols;
	/* staging is 2 x NSTREAMS chunks of pinned memory, whatever n is */
	int64_t fit = (int64_t)(CHUNK_BYTES / ((size_t)n * m->elem));
	m->chunk_cols = (max_cols + CHUNKS - 1) / CHUNKS;
	if (m->chunk_cols > fit)
		m->chunk_cols = fit < 1 ? 1 : fit;
	int rc = setup(m);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", m->err);
		plb__mm_cuda_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

int plb__mm_cuda_set_a(struct plb__mm_cuda *m, const void *A)
{
	PLB__CUDA_CHECK(m, cudaSetDevice(m->dev));
	PLB__CUDA_CHECK(m, cudaMemcpy(m->dA, A, (size_t)m->n * m->n * m->elem,
				 cudaMemcpyHostToDevice));
	return 0;
}

/* Copy the finished chunk of stream s out of its pinned buffer, and add
 * its phases to the block's. */
static int drain(struct plb__mm_cuda *m, int s, void *dst, size_t bytes)
{
	PLB__CUDA_CHECK(m, cudaStreamSynchronize(m->stream[s]));
	memcpy(dst, m->hC[s], bytes);
	PLB__CUDA_CHECK(m, plb__cuda_phases_add(&m->ph[s], &m->last));
	return 0;
}

void plb__mm_cuda_times(const struct plb__mm_cuda *m, struct plb__phase_times *t)
{
	*t = m->last;
}

int plb__mm_cuda_run(struct plb__mm_cuda *m, int64_t cols,
				const void *B_blk, void *C_blk)
{
	if (cols < 0 || cols > m->max_cols)
		return PLB_EINVAL;
	PLB__CUDA_CHECK(m, cudaSetDevice(m->dev));
	size_t colb = (size_t)m->n * m->elem;
	void *pending_dst[NSTREAMS] = {NULL, NULL};
	size_t pending_bytes[NSTREAMS] = {0, 0};
	/* CHUNKS chunks per block (so copies overlap gemms even for small
	 * blocks), but never under 64 columns nor over the staging buffers */
	int64_t cc = (cols + CHUNKS - 1) / CHUNKS;
	cc = cc < 64 ? 64 : cc;
	cc = cc > m->chunk_cols ? m->chunk_cols : cc;
	m->last = (struct plb__phase_times){0, 0, 0};
	int k = 0;
	for (int64_t c0 = 0; c0 < cols; c0 += cc, k++) {
		int s = k % NSTREAMS;
		int64_t nc = cols - c0 < cc ? cols - c0 : cc;
		size_t bytes = colb * (size_t)nc;
		/* the stream's previous chunk must be out of its buffers */
		if (pending_dst[s]) {
			int rc = drain(m, s, pending_dst[s], pending_bytes[s]);
			if (rc)
				return rc;
		}
		memcpy(m->hB[s], (const char *)B_blk + colb * (size_t)c0, bytes);
		PLB__CUDA_CHECK(m, cudaEventRecord(m->ph[s].ev[PLB__PH_START], m->stream[s]));
		PLB__CUDA_CHECK(m, cudaMemcpyAsync(m->dB[s], m->hB[s], bytes,
					      cudaMemcpyHostToDevice, m->stream[s]));
		PLB__CUDA_CHECK(m, cudaEventRecord(m->ph[s].ev[PLB__PH_IN], m->stream[s]));
		CUBLAS_CHECK(m, cublasSetStream(m->blas, m->stream[s]));
		if (m->prec == PLB__MM_F64) {
			const double one = 1, zero = 0;
			CUBLAS_CHECK(m, cublasDgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_N, m->n, (int)nc,
						    m->n, &one, (const double *)m->dA, m->n,
						    (const double *)m->dB[s], m->n, &zero,
						    (double *)m->dC[s], m->n));
		} else {
			const float one = 1, zero = 0;
			CUBLAS_CHECK(m, cublasSgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_N, m->n, (int)nc,
						    m->n, &one, (const float *)m->dA, m->n,
						    (const float *)m->dB[s], m->n, &zero,
						    (float *)m->dC[s], m->n));
		}
		PLB__CUDA_CHECK(m, cudaEventRecord(m->ph[s].ev[PLB__PH_RUN], m->stream[s]));
		PLB__CUDA_CHECK(m, cudaMemcpyAsync(m->hC[s], m->dC[s], bytes,
					      cudaMemcpyDeviceToHost, m->stream[s]));
		PLB__CUDA_CHECK(m, cudaEventRecord(m->ph[s].ev[PLB__PH_OUT], m->stream[s]));
		pending_dst[s] = (char *)C_blk + colb * (size_t)c0;
		pending_bytes[s] = bytes;
	}
	for (int s = 0; s < NSTREAMS; s++)
		if (pending_dst[s]) {
			int rc = drain(m, s, pending_dst[s], pending_bytes[s]);
			if (rc)
				return rc;
		}
	return 0;
}

void plb__mm_cuda_destroy(struct plb__mm_cuda *m)
{
	if (!m)
		return;
	cudaSetDevice(m->dev);
	for (int s = 0; s < NSTREAMS; s++) {
		if (m->stream[s])
			cudaStreamSynchronize(m->stream[s]);
		cudaFree(m->dB[s]);
		cudaFree(m->dC[s]);
		cudaFreeHost(m->hB[s]);
		cudaFreeHost(m->hC[s]);
		plb__cuda_phases_destroy(&m->ph[s]);
		if (m->stream[s])
			cudaStreamDestroy(m->stream[s]);
	}
	cudaFree(m->dA);
	if (m->blas)
		cublasDestroy(m->blas);
	free(m);
}

/* ---- the 2-D product's step (plb__mm2d_kernel's cuda class) ------------
 * As the OpenCL one: the PU's slice of C on the device from its first step
 * until destroy reads it back; each step copies the pivots in (strided:
 * cudaMemcpy2DAsync) and runs cuBLAS's gemm with beta 1. cuBLAS is
 * column-major: row-major c += a b is column-major c' += b' a'. */
struct plb__mm2d_cuda {
	int dev;
	cudaStream_t stream;
	cublasHandle_t blas;
	void *dA, *dB, *dC;
	size_t capA, capB, capC;
	struct plb_gemm_step held;      /* the step that brought dC's slice (c NULL: none) */
	char err[256];
};

static int grow_dev(struct plb__mm2d_cuda *m, void **buf, size_t *cap, size_t bytes)
{
	if (*cap >= bytes)
		return 0;
	if (*buf)
		cudaFree(*buf);
	*buf = NULL;
	*cap = 0;
	PLB__CUDA_CHECK(m, cudaMalloc(buf, bytes));
	*cap = bytes;
	return 0;
}

static int c_home(struct plb__mm2d_cuda *m)
{
	if (!m->held.c || !m->held.rows || !m->held.cols)
		return 0;
	size_t e = (size_t)m->held.elem, w = (size_t)m->held.cols * e;
	PLB__CUDA_CHECK(m, cudaMemcpy2DAsync(m->held.c, (size_t)m->held.ldc * e, m->dC, w, w, (size_t)m->held.rows,
					     cudaMemcpyDeviceToHost, m->stream));
	PLB__CUDA_CHECK(m, cudaStreamSynchronize(m->stream));
	m->held.c = NULL;
	return 0;
}

static cublasStatus_t gemm_cm(struct plb__mm2d_cuda *m, const struct plb_gemm_step *s)
{
	int r = (int)s->rows, n = (int)s->cols, k = (int)s->k;
	if (s->elem == 8) {
		const double one = 1.0;
		return cublasDgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, r, k, &one, (const double *)m->dB, n,
				   (const double *)m->dA, k, &one, (double *)m->dC, n);
	}
	const float one = 1.0f;
	return cublasSgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, r, k, &one, (const float *)m->dB, n,
			   (const float *)m->dA, k, &one, (float *)m->dC, n);
}

int plb__mm2d_cuda_create(int dev, struct plb__mm2d_cuda **out, char *err, size_t errlen)
{
	struct plb__mm2d_cuda *m = (struct plb__mm2d_cuda *)calloc(1, sizeof *m);
	*out = NULL;
	if (!m)
		return PLB_ENOMEM;
	m->dev = dev;
	int rc = 0;
	do {
		if (cudaSetDevice(dev) != cudaSuccess || cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking) !=
		    cudaSuccess) {
			snprintf(m->err, sizeof m->err, "CUDA device %d: no stream", dev);
			rc = PLB_EIO;
			break;
		}
		if (cublasCreate(&m->blas) != CUBLAS_STATUS_SUCCESS ||
		    cublasSetStream(m->blas, m->stream) != CUBLAS_STATUS_SUCCESS) {
			snprintf(m->err, sizeof m->err, "CUDA device %d: no cuBLAS handle", dev);
			rc = PLB_EIO;
		}
	} while (0);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", m->err);
		plb__mm2d_cuda_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

int plb__mm2d_cuda_step(struct plb__mm2d_cuda *m, const struct plb_gemm_step *s)
{
	size_t e = (size_t)s->elem, w = (size_t)s->cols * e;
	PLB__CUDA_CHECK(m, cudaSetDevice(m->dev));
	if (!plb__mm2d_same_slice(&m->held, s)) {
		int rc = c_home(m);
		if (rc || (rc = grow_dev(m, &m->dC, &m->capC, (size_t)s->rows * w + 1)))
			return rc;
		if (s->rows && s->cols)
			PLB__CUDA_CHECK(m, cudaMemcpy2DAsync(m->dC, w, s->c, (size_t)s->ldc * e, w, (size_t)s->rows,
							     cudaMemcpyHostToDevice, m->stream));
		m->held = *s;
	}
	if (!s->rows || !s->cols)
		return 0;
	size_t ka = (size_t)s->k * e;
	int rc = grow_dev(m, &m->dA, &m->capA, (size_t)s->rows * ka);
	if (rc || (rc = grow_dev(m, &m->dB, &m->capB, (size_t)s->k * w)))
		return rc;
	PLB__CUDA_CHECK(m, cudaMemcpy2DAsync(m->dA, ka, s->a, (size_t)s->lda * e, ka, (size_t)s->rows,
					     cudaMemcpyHostToDevice, m->stream));
	PLB__CUDA_CHECK(m, cudaMemcpy2DAsync(m->dB, w, s->b, (size_t)s->ldb * e, w, (size_t)s->k,
					     cudaMemcpyHostToDevice, m->stream));
	CUBLAS_CHECK(m, gemm_cm(m, s));
	PLB__CUDA_CHECK(m, cudaStreamSynchronize(m->stream));
	return 0;
}

int plb__mm2d_cuda_destroy(struct plb__mm2d_cuda *m)
{
	if (!m)
		return 0;
	int rc = m->stream ? c_home(m) : 0;
	void *bufs[] = {m->dA, m->dB, m->dC};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		if (bufs[i])
			cudaFree(bufs[i]);
	if (m->blas)
		cublasDestroy(m->blas);
	if (m->stream)
		cudaStreamDestroy(m->stream);
	free(m);
	return rc;
}
