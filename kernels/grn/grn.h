/* Gene-regulatory-network inference kernels of the bundled plb-grn app:
 * exhaustive feature selection. Expression data (genes x samples) are
 * discretised to a few levels per gene; for each target gene every subset
 * of k other genes (the predictors) is scored by the mean conditional
 * entropy of the target given the subset, and the subset with the lowest
 * score is kept. The target genes are the domain: one target a unit, its
 * best subset and score (struct plb__grn_best) a unit's output; the
 * discretised matrix is the run's shared data.
 *
 * The criterion, in bits, with c levels, s samples, N = c^k possible
 * instances x of the subset's levels, f_x samples showing x and
 * H(Y|x) the entropy of the target's levels among them:
 *
 *   MCE = sum over x of (f_x + alpha) / (alpha N + s) * H(Y|x)
 *
 * where an instance seen in no sample counts with H(Y), the target's own
 * entropy (nothing is known there). alpha > 0 penalises subsets whose
 * instances the samples cover thinly (alpha 0: the plain conditional
 * entropy). Ties go to the first subset in colex order (by largest gene
 * index, then the next largest...; indices among the other genes).
 *
 * Counting uses bit sets: for each gene and level, one bit a sample; the
 * samples of an instance and a target level are an AND of k + 1 of them,
 * their number a popcount. The serial reference counts sample by sample
 * instead; both score the counts with plb__grn_score, so the CPU kernel
 * and the reference agree to the bit. */
#ifndef PLB_KERNELS_GRN_H
#define PLB_KERNELS_GRN_H

#include <stddef.h>
#include <stdint.h>

#include "plb_errors.h"
#include "kernels/phase_times.h"

#ifdef __cplusplus
extern "C" {
#endif

/* plb-grn's kernel "grn" (grn_kernel.c): cpu, and cuda and opencl where built. */
extern const struct plb_kernel plb__grn_kernel;

#define PLB__GRN_MAX_K 3        /* predictors a subset */
#define PLB__GRN_MAX_LEVELS 8
#define PLB__GRN_MAX_CELLS 256  /* levels^(k + 1): the counts of one subset */
#define PLB__GRN_MAX_SAMPLES (1 << 24)

/* A run's shared data: this header, then n * levels * words uint64: bit
 * (i % 64) of word [g][l][i / 64] is set when gene g is at level l in
 * sample i. */
struct plb__grn_shared {
	int32_t n, s, levels, k;
	int32_t words, pad;
	double alpha;
};

/* A unit's output: the best subset's gene indices (ascending; -1 past k)
 * and its score. */
struct plb__grn_best {
	int32_t reg[4];
	double score;
};

/* 0 when levels^(k + 1) <= PLB__GRN_MAX_CELLS and each is in range: else
 * PLB_EINVAL. */
int plb__grn_shape_ok(int n, int s, int levels, int k);

size_t plb__grn_shared_bytes(int n, int s, int levels);

/* Fills the shared data at sh (plb__grn_shared_bytes) from lev, n * s
 * levels in [0, levels) gene by gene. */
void plb__grn_share(void *sh, const uint8_t *lev, int n, int s, int levels, int k, double alpha);

/* 0 when sh, bytes long, is shared data plb__grn_share could have made. */
int plb__grn_shared_ok(const void *sh, size_t bytes);

/* The tables the score reads, for s samples: nlog[f] = f log2 f and
 * wf[f] = (f + alpha) / f, f in [0, s] (wf[0] unused). */
struct plb__grn_tables {
	double *nlog, *wf;
	int s;
	double alpha;
};
PLB_WUR int plb__grn_tables_make(int s, double alpha, struct plb__grn_tables *t);
void plb__grn_tables_free(struct plb__grn_tables *t);

/* The target's entropy H(Y), in bits, from its level counts cy[levels]. */
double plb__grn_hy(const struct plb__grn_tables *t, const uint32_t *cy, int levels);

#ifdef __CUDACC__
#define PLB__GRN_HD __host__ __device__
#else
#define PLB__GRN_HD
#endif

/* The criterion of one subset from its counts, cnt[x * c + y] for the N =
 * c^k instances x and the c target levels y, s samples in all, with the
 * tables' nlog and wf and the target's entropy hy: the one formula of the
 * CPU kernel, the reference, the CUDA kernel and the OpenCL kernel (all
 * built without fused multiply-adds: Makefile, grn_opencl.c), so that all
 * four agree to the bit. Written once as a macro: QUAL qualifies the
 * function, G the tables' address space (__global in OpenCL C, where
 * grn_opencl.c turns the macro's expansion into source text). */
#define PLB__GRN_SCORE_DEF(QUAL, G)                                                          \
	QUAL double plb__grn_score_(G const double *nlog, G const double *wf, double alpha,  \
				    int s, const uint32_t *cnt, int N, int c, double hy)     \
	{                                                                                    \
		double sum = 0;                                                              \
		int unseen = 0;                                                              \
		for (int x = 0; x < N; x++) {                                                \
			const uint32_t *cx = cnt + x * c;                                    \
			uint32_t f = 0;                                                      \
			for (int y = 0; y < c; y++)                                          \
				f += cx[y];                                                  \
			if (!f) {                                                            \
				unseen++;                                                    \
				continue;                                                    \
			}                                                                    \
			/* f H(Y|x) = f log2 f - sum of n log2 n over its target levels */   \
			double e = nlog[f];                                                  \
			for (int y = 0; y < c; y++)                                          \
				e -= nlog[cx[y]];                                            \
			sum += wf[f] * e;                                                    \
		}                                                                            \
		return (sum + unseen * alpha * hy) / (alpha * N + s);                        \
	}
PLB__GRN_SCORE_DEF(static inline PLB__GRN_HD, )

/* plb__grn_score_ with t's tables. */
double plb__grn_score(const struct plb__grn_tables *t, const uint32_t *cnt, int N, int levels,
		      double hy);

/* The CPU kernel: targets [first, first + count) of the shared data, one
 * best subset each into out. Returns 0, PLB_EINVAL or PLB_ENOMEM. */
PLB_WUR int plb__grn_cpu(const void *shared, const struct plb__grn_tables *t, uint64_t first,
			 size_t count, struct plb__grn_best *out);

/* The serial reference for target t: the same search, counting sample by
 * sample over lev (n * s levels, gene by gene). Returns 0, PLB_EINVAL or
 * PLB_ENOMEM. */
PLB_WUR int plb__grn_ref(const uint8_t *lev, int n, int s, int levels, int k,
			 const struct plb__grn_tables *tab, int t, struct plb__grn_best *out);

/* Levels from expression: each gene's s values cut into `levels` groups
 * of (nearly) equal size by rank: with the values sorted, the cut points
 * are the values at positions floor(j s / levels), j = 1..levels-1, and a
 * value's level is the number of cut points it reaches (equal values
 * share a level). Returns 0 or PLB_ENOMEM. */
PLB_WUR int plb__grn_discretise(const float *expr, int n, int s, int levels, uint8_t *lev);

/* A synthetic network with a known answer, drawn from seed: a fifth of
 * the genes (at least k) are roots with uniform random levels; every
 * other gene has k roots as regulators and takes its level from a random
 * balanced table of theirs (every level equally often, every regulator
 * mattering), except in a fraction `noise` of the samples where it is
 * drawn at random. Gene order is shuffled. The expression of a gene at
 * level l is l + 0.25 + 0.5 u, u uniform in [0, 1). Writes expr (n * s)
 * and truth (n * k: a gene's regulators ascending, all -1 for a root).
 * Returns 0, PLB_EINVAL or PLB_ENOMEM. */
PLB_WUR int plb__grn_generate(int n, int s, int levels, int k, double noise, uint64_t seed,
			      float *expr, int32_t *truth);

/* Reads an expression matrix: one gene a line, its name then its s
 * values, separated by tabs (TSV) or commas (CSV, when the first data
 * line has no tab); an optional first line of column names (its second
 * field not a number); '#' lines are comments. *expr (n * s, malloc'd),
 * *names (n malloc'd strings in one malloc'd array), *n and *s on
 * success; PLB_EINVAL with "FILE:LINE: what; accepted: ..." in err,
 * PLB_EIO or PLB_ENOMEM otherwise. */
PLB_WUR int plb__grn_read(const char *path, float **expr, char ***names, int *n, int *s,
			  char *err, size_t errlen);
void plb__grn_names_free(char **names, int n);

/* CUDA (grn_cuda.cu). Without a CUDA toolkit these are absent: callers
 * test PLB_HAVE_CUDA. */
struct plb__grn_cuda;
/* Device dev with the shared data and the tables uploaded. On error
 * returns PLB_EIO and writes the CUDA reason. */
PLB_WUR int plb__grn_cuda_create(int dev, const void *shared, const struct plb__grn_tables *t,
				 struct plb__grn_cuda **out, char *err, size_t errlen);
/* plb__grn_cpu's work on the device; returns when out is in host memory. */
PLB_WUR int plb__grn_cuda_run(struct plb__grn_cuda *c, uint64_t first, size_t count,
			      struct plb__grn_best *out);
/* The last block's phases (copy in, kernel, copy out) as the device
 * timed them. */
void plb__grn_cuda_times(const struct plb__grn_cuda *c, struct plb__phase_times *t);
void plb__grn_cuda_destroy(struct plb__grn_cuda *c);

/* OpenCL (grn_opencl.c). Without OpenCL at build time these are absent:
 * callers test PLB_HAVE_OPENCL. As the CUDA functions, on OpenCL device
 * dev (a cl_device_id) of context ctx (a cl_context); the device needs
 * double precision (cl_khr_fp64), else PLB_EDEVICE saying so. */
struct plb__grn_cl;
PLB_WUR int plb__grn_cl_create(void *ctx, void *dev, const void *shared,
			       const struct plb__grn_tables *t, struct plb__grn_cl **out, char *err,
			       size_t errlen);
PLB_WUR int plb__grn_cl_run(struct plb__grn_cl *c, uint64_t first, size_t count,
			    struct plb__grn_best *out);
void plb__grn_cl_times(const struct plb__grn_cl *c, struct plb__phase_times *t);
void plb__grn_cl_destroy(struct plb__grn_cl *c);

#ifdef __cplusplus
}
#endif

#endif
