/* The gene-regulatory-network CUDA kernel (see grn.h). A block's targets
 * are the grid's rows; each row's threads share out the target's subsets
 * by colex rank, every thread a contiguous run of ranks: it finds its
 * first subset by unranking and the next ones by the colex successor,
 * counts each subset's instances by popcounts of ANDed bit sets, and
 * scores them with the same formula as the CPU (plb__grn_score_, this file
 * built without fused multiply-adds: Makefile). A tree in shared memory
 * keeps each thread block's best (lowest score, then lowest rank), and a
 * second kernel the best of a target's thread blocks. Every CUDA call goes
 * through one checking macro, which records file:line and CUDA's error. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/grn/grn.h"
#include "kernels/cuda_check.h"

#define THREADS 256
#define MAX_BLOCKS 64           /* thread blocks a target, at most */

struct plb__grn_cuda {
	int dev, n, s, c, k, W;
	double alpha;
	cudaStream_t stream;
	uint64_t *dbits;
	double *dnlog, *dwf;
	double *dscore;         /* cap * MAX_BLOCKS partial bests */
	unsigned long long *drank;
	struct plb__grn_best *dout;
	size_t cap;
	struct plb__cuda_phases ph;
	struct plb__phase_times last;   /* the last block's phases */
	char err[256];
};


/* C(m, j) for j <= 3, in 64 bits. */
__host__ __device__ static unsigned long long choose(long long m, int j)
{
	if (m < j)
		return 0;
	unsigned long long r = 1;
	for (int i = 0; i < j; i++)
		r = r * (unsigned long long)(m - i) / (unsigned long long)(i + 1);
	return r;
}

/* The subset of colex rank r: p[j] ascending, p[j] the largest q with
 * C(q, j + 1) <= what is left of r. */
__device__ static void unrank(unsigned long long r, int k, int m, int *p)
{
	for (int j = k - 1; j >= 0; j--) {
		int lo = j, hi = m - 1;         /* C(lo, j + 1) <= r holds for lo = j */
		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;
			if (choose(mid, j + 1) <= r)
				lo = mid;
			else
				hi = mid - 1;
		}
		p[j] = lo;
		r -= choose(lo, j + 1);
		m = lo;
	}
}

/* The next subset in colex order. */
__device__ static void next_subset(int k, int *p)
{
	for (int j = 0; j < k; j++) {
		if (j + 1 == k || p[j] + 1 < p[j + 1]) {
			p[j]++;
			for (int i = 0; i < j; i++)
				p[i] = i;
			return;
		}
	}
}

__device__ static int better(double a, unsigned long long ra, double b, unsigned long long rb)
{
	return a < b || (a == b && ra < rb);
}

__global__ void search(const uint64_t *__restrict__ bits, const double *__restrict__ nlog,
		       const double *__restrict__ wf, double alpha, int n, int s, int c, int k, int W,
		       unsigned long long first, double *__restrict__ pscore,
		       unsigned long long *__restrict__ prank)
{
	__shared__ double ss[THREADS];
	__shared__ unsigned long long sr[THREADS];
	int t = (int)(first + blockIdx.y), m = n - 1, N = 1;
	for (int j = 0; j < k; j++)
		N *= c;
	unsigned long long total = choose(m, k), threads = (unsigned long long)gridDim.x * THREADS;
	unsigned long long me = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
	unsigned long long per = (total + threads - 1) / threads, r0 = me * per;
	unsigned long long r1 = r0 + per < total ? r0 + per : total;
	const uint64_t *Y = bits + (size_t)t * c * W;
	uint32_t cy[PLB__GRN_MAX_LEVELS], cnt[PLB__GRN_MAX_CELLS];
	for (int y = 0; y < c; y++) {
		cy[y] = 0;
		for (int i = 0; i < W; i++)
			cy[y] += __popcll(Y[(size_t)y * W + i]);
	}
	double e = nlog[s];
	for (int y = 0; y < c; y++)
		e -= nlog[cy[y]];
	double hy = e / s, best = INFINITY;
	unsigned long long brank = ~0ULL;
	int p[PLB__GRN_MAX_K];
	if (r0 < r1)
		unrank(r0, k, m, p);
	for (unsigned long long r = r0; r < r1; r++) {
		const uint64_t *G[PLB__GRN_MAX_K];
		for (int j = 0; j < k; j++)
			G[j] = bits + (size_t)(p[j] < t ? p[j] : p[j] + 1) * c * W;
		/* instance x: the levels of p[k-1] (most significant) down to p[0] */
		for (int x = 0; x < N; x++) {
			int l[PLB__GRN_MAX_K];
			for (int j = 0, v = x; j < k; j++, v /= c)
				l[j] = v % c;
			for (int y = 0; y < c; y++) {
				uint32_t q = 0;
				for (int i = 0; i < W; i++) {
					uint64_t a = Y[(size_t)y * W + i];
					for (int j = 0; j < k; j++)
						a &= G[j][(size_t)l[j] * W + i];
					q += __popcll(a);
				}
				cnt[x * c + y] = q;
			}
		}
		double sc = plb__grn_score_(nlog, wf, alpha, s, cnt, N, c, hy);
		if (sc < best) {
			best = sc;
			brank = r;
		}
		next_subset(k, p);
	}
	ss[threadIdx.x] = best;
	sr[threadIdx.x] = brank;
	__syncthreads();
	for (int h = THREADS / 2; h > 0; h /= 2) {
		if (threadIdx.x < h &&
		    better(ss[threadIdx.x + h], sr[threadIdx.x + h], ss[threadIdx.x], sr[threadIdx.x])) {
			ss[threadIdx.x] = ss[threadIdx.x + h];
			sr[threadIdx.x] = sr[threadIdx.x + h];
		}
		__syncthreads();
	}
	if (!threadIdx.x) {
		pscore[(size_t)blockIdx.y * gridDim.x + blockIdx.x] = ss[0];
		prank[(size_t)blockIdx.y * gridDim.x + blockIdx.x] = sr[0];
	}
}

/* A target's best over its thread blocks, as genes. */
__global__ void finish(const double *pscore, const unsigned long long *prank, int nb, int n, int k,
		       unsigned long long first, size_t count, struct plb__grn_best *out)
{
	size_t u = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (u >= count)
		return;
	double best = pscore[u * nb];
	unsigned long long r = prank[u * nb];
	for (int b = 1; b < nb; b++)
		if (better(pscore[u * nb + b], prank[u * nb + b], best, r)) {
			best = pscore[u * nb + b];
			r = prank[u * nb + b];
		}
	int p[PLB__GRN_MAX_K], t = (int)(first + u);
	unrank(r, k, n - 1, p);
	for (int j = 0; j < 4; j++)
		out[u].reg[j] = j < k ? (p[j] < t ? p[j] : p[j] + 1) : -1;
	out[u].score = best;
}

int plb__grn_cuda_create(int dev, const void *shared, const struct plb__grn_tables *t,
			 struct plb__grn_cuda **out, char *err, size_t errlen)
{
	*out = NULL;
	const struct plb__grn_shared *h = (const struct plb__grn_shared *)shared;
	if (dev < 0 || !h || !t || t->s != h->s)
		return PLB_EINVAL;
	struct plb__grn_cuda *c = (struct plb__grn_cuda *)calloc(1, sizeof *c);
	if (!c)
		return PLB_ENOMEM;
	*c = (struct plb__grn_cuda){dev, h->n, h->s, h->levels, h->k, h->words, h->alpha};
	size_t bb = plb__grn_shared_bytes(h->n, h->s, h->levels) - sizeof *h;
	size_t tb = ((size_t)h->s + 1) * sizeof(double);
	cudaError_t e = cudaSetDevice(dev);
	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&c->dbits, bb);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&c->dnlog, tb);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&c->dwf, tb);
	if (e == cudaSuccess)
		e = cudaMemcpy(c->dbits, h + 1, bb, cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemcpy(c->dnlog, t->nlog, tb, cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemcpy(c->dwf, t->wf, tb, cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = plb__cuda_phases_create(&c->ph);
	if (e != cudaSuccess) {
		snprintf(err, errlen, "device %d: %s", dev, cudaGetErrorString(e));
		plb__grn_cuda_destroy(c);
		return PLB_EIO;
	}
	*out = c;
	return 0;
}

int plb__grn_cuda_run(struct plb__grn_cuda *c, uint64_t first, size_t count,
		      struct plb__grn_best *out)
{
	if (!c || first + count > (uint64_t)c->n)
		return PLB_EINVAL;
	if (!count)
		return 0;
	PLB__CUDA_CHECK(c, cudaSetDevice(c->dev));
	if (count > c->cap) {
		cudaFree(c->dscore);
		cudaFree(c->drank);
		cudaFree(c->dout);
		c->dscore = NULL;
		c->drank = NULL;
		c->dout = NULL;
		c->cap = 0;
		PLB__CUDA_CHECK(c, cudaMalloc((void **)&c->dscore, count * MAX_BLOCKS * sizeof(double)));
		PLB__CUDA_CHECK(c, cudaMalloc((void **)&c->drank, count * MAX_BLOCKS * sizeof(unsigned long long)));
		PLB__CUDA_CHECK(c, cudaMalloc((void **)&c->dout, count * sizeof *out));
		c->cap = count;
	}
	/* enough threads for every subset, up to MAX_BLOCKS thread blocks a
	 * target; grid rows at most 65535 a launch */
	/* nothing to copy in: the tables went over once, at create */
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_START], c->stream));
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_IN], c->stream));
	unsigned long long total = choose(c->n - 1, c->k);
	unsigned long long want = (total + THREADS - 1) / THREADS;
	int nb = want < MAX_BLOCKS ? (int)want : MAX_BLOCKS;
	for (size_t u = 0; u < count; u += 65535) {
		unsigned rows = (unsigned)(count - u < 65535 ? count - u : 65535);
		search<<<dim3((unsigned)nb, rows), THREADS, 0, c->stream>>>(
			c->dbits, c->dnlog, c->dwf, c->alpha, c->n, c->s, c->c, c->k, c->W, first + u,
			c->dscore + u * nb, c->drank + u * nb);
		PLB__CUDA_CHECK(c, cudaGetLastError());
	}
	finish<<<(unsigned)((count + 127) / 128), 128, 0, c->stream>>>(c->dscore, c->drank, nb, c->n,
								      c->k, first, count, c->dout);
	PLB__CUDA_CHECK(c, cudaGetLastError());
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_RUN], c->stream));
	PLB__CUDA_CHECK(c, cudaMemcpyAsync(out, c->dout, count * sizeof *out, cudaMemcpyDeviceToHost,
				      c->stream));
	PLB__CUDA_CHECK(c, cudaEventRecord(c->ph.ev[PLB__PH_OUT], c->stream));
	PLB__CUDA_CHECK(c, cudaStreamSynchronize(c->stream));
	c->last = (struct plb__phase_times){0, 0, 0};
	PLB__CUDA_CHECK(c, plb__cuda_phases_add(&c->ph, &c->last));
	return 0;
}

void plb__grn_cuda_times(const struct plb__grn_cuda *c, struct plb__phase_times *t)
{
	*t = c->last;
}

void plb__grn_cuda_destroy(struct plb__grn_cuda *c)
{
	if (!c)
		return;
	cudaSetDevice(c->dev);
	cudaFree(c->dbits);
	cudaFree(c->dnlog);
	cudaFree(c->dwf);
	cudaFree(c->dscore);
	cudaFree(c->drank);
	cudaFree(c->dout);
	plb__cuda_phases_destroy(&c->ph);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}
