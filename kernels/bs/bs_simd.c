/* The Black-Scholes CPU kernel's loops (see bs.h), in a file of their own
 * built with -O3 -ffast-math -fopenmp-simd (Makefile): a chunk of options
 * is moved from the unit-by-unit input into one array a parameter, priced
 * by a loop the compiler vectorises (with glibc's vector exp and log,
 * libmvec), and the prices moved out. On x86-64 each loop is built for
 * AVX-512, AVX2 and the baseline, and the best one for the machine it runs
 * on is picked when the program starts (target_clones), so one binary
 * serves every node of a mixed cluster. The serial reference in bs_cpu.c
 * is built with the ordinary flags: it checks these loops, fast-math
 * included. Inputs must be finite, S, K, T, v > 0 (the reader checks
 * files; fast-math assumes no NaN). */
#include <math.h>

#include "kernels/bs/bs.h"

#define CHUNK 64                /* options a pass: seven arrays of them stay in L1 (64 measured fastest) */
#define PAD 16                  /* the widest vector: 16 floats (AVX-512) */

/* Not under ThreadSanitizer: the clones' resolver runs while the program
 * is relocated, before the sanitizer's runtime is up, and crashes. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define PLB_CLONES_ __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PLB_CLONES_
#endif

#define PLB_BS_SIMD_(NAME, FT, OPT, EXP, LOG, SQRT, FABS)                          \
	PLB_CLONES_ void NAME(const OPT *restrict in, FT *restrict out, size_t n)   \
	{                                                                          \
		_Alignas(64) FT S[CHUNK], K[CHUNK], T[CHUNK], R[CHUNK], V[CHUNK], C[CHUNK], P[CHUNK]; \
		for (size_t o = 0; o < n; o += CHUNK) {                            \
			size_t m = n - o < CHUNK ? n - o : CHUNK;                  \
			/* the tail padded with copies of the last option, so every \
			 * option takes the vector path (no scalar remainder) and   \
			 * its price does not depend on where blocks are cut */     \
			size_t mp = (m + PAD - 1) / PAD * PAD;                     \
			for (size_t i = 0; i < mp; i++) {                          \
				size_t j = o + (i < m ? i : m - 1);                \
				S[i] = in[j].S;                                    \
				K[i] = in[j].K;                                    \
				T[i] = in[j].T;                                    \
				R[i] = in[j].r;                                    \
				V[i] = in[j].v;                                    \
			}                                                          \
			_Pragma("omp simd")                                        \
			for (size_t i = 0; i < mp; i++) {                          \
				PLB__BS_PRICE(FT, EXP, LOG, SQRT, FABS, S[i], K[i], T[i], R[i], V[i], C[i], P[i]); \
			}                                                          \
			for (size_t i = 0; i < m; i++) {                           \
				out[2 * (o + i)] = C[i];                           \
				out[2 * (o + i) + 1] = P[i];                       \
			}                                                          \
		}                                                                  \
	}
PLB_BS_SIMD_(plb__bs_simd_f64, double, struct plb__bs_opt, exp, log, sqrt, fabs)
PLB_BS_SIMD_(plb__bs_simd_f32, float, struct plb__bs_optf, expf, logf, sqrtf, fabsf)
#undef PLB_BS_SIMD_
