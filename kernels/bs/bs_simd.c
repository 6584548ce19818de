/* The Black-Scholes CPU kernel's loops and the drawing of options (see
 * bs.h), in a file of their own built with -O3 -ffast-math -fopenmp-simd
 * (Makefile): a chunk of options is moved from the unit-by-unit input
 * into one array a parameter, priced by a loop the compiler vectorises
 * (with glibc's vector exp and log, libmvec), and the prices moved out.
 * On x86-64 each loop is built for AVX-512, AVX2 and the baseline, and the
 * best one for the machine it runs on is picked when the program starts
 * (target_clones), so one binary serves every node of a mixed cluster.
 * The serial reference in bs_cpu.c is built with the ordinary flags: it
 * checks these loops, fast-math included. Inputs must be finite, S, K, T,
 * v > 0 (the reader checks files; fast-math assumes no NaN). */
#include <math.h>
#include <stdint.h>

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

/* No contraction of a * b + c into one FMA (fast-math allows it), where
 * the bits must be those of the plain expression. */
#if defined(__clang__)
#define PLB_NO_CONTRACT_
#define PLB_NO_CONTRACT_BODY_ _Pragma("clang fp contract(off)")
#elif defined(__GNUC__)
#define PLB_NO_CONTRACT_ __attribute__((optimize("fp-contract=off")))
#define PLB_NO_CONTRACT_BODY_
#else
#define PLB_NO_CONTRACT_
#define PLB_NO_CONTRACT_BODY_
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

/* splitmix64's output function: a 64-bit mix in which every input bit
 * moves every output bit (Steele, Lea, Flood, OOPSLA 2014). */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Here for its vectorised build (6x faster than -O2's scalar loop on
 * AVX-512): the mixing is integer arithmetic, and a value is lo + (hi - lo)
 * u with u = m 2^-53 exact, one product and one sum, rounded as written
 * once fast-math's contraction into one FMA is off: the same bits on
 * every node, as the tests check against Python. */
PLB_CLONES_ PLB_NO_CONTRACT_ void plb__bs_draw(enum plb__bs_prec prec, void *in, uint64_t first,
					       size_t n, uint64_t seed)
{
	PLB_NO_CONTRACT_BODY_
	static const double lo[5] = {5, 1, 0.25, 0.01, 0.1}, hi[5] = {30, 100, 10, 0.05, 0.5};
	const uint64_t gamma = 0x9E3779B97F4A7C15ULL, base = mix64(seed);
	for (size_t i = 0; i < n; i++) {
		/* value k of option j is splitmix64's number 5 j + k + 1 */
		uint64_t z = base + (5 * (first + i) + 1) * gamma;
		double f[5];
		for (int k = 0; k < 5; k++)
			f[k] = lo[k] + (hi[k] - lo[k]) *
				       ((double)(mix64(z + (uint64_t)k * gamma) >> 11) * 0x1.0p-53);
		if (prec == PLB__BS_F64)
			((struct plb__bs_opt *)in)[i] = (struct plb__bs_opt){f[0], f[1], f[2], f[3], f[4]};
		else
			((struct plb__bs_optf *)in)[i] = (struct plb__bs_optf){
				(float)f[0], (float)f[1], (float)f[2], (float)f[3], (float)f[4]};
	}
}
