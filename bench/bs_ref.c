/* bench/bs.sh's references for plb-bs: options priced per second on one
 * core by a straightforward vectorised Black-Scholes loop (one array a
 * parameter, #pragma omp simd, built -O3 -ffast-math -march=native for
 * this machine: what a single-node program would do), by plb's CPU kernel
 * called directly (its own loop: options one after the other in memory,
 * one binary for every x86-64 node), and one direct call of plb's kernel
 * for drawn options on all n of them into fresh memory (what plb-bs --n
 * in one process does: draw and price, page faults included).
 *
 *   bs_ref N PREC      (PREC single or double; prints one line of figures)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "kernels/bs/bs.h"

#define REPS 5

#define REF_(NAME, FT, EXP, LOG, SQRT, FABS)                                      \
	static void NAME(size_t n, const FT *S, const FT *K, const FT *T, const FT *R, \
			 const FT *V, FT *C, FT *P)                                 \
	{                                                                         \
		_Pragma("omp simd")                                               \
		for (size_t i = 0; i < n; i++) {                                  \
			PLB__BS_PRICE(FT, EXP, LOG, SQRT, FABS, S[i], K[i], T[i], R[i], V[i], C[i], P[i]); \
		}                                                                 \
	}
REF_(ref_f64, double, exp, log, sqrt, fabs)
REF_(ref_f32, float, expf, logf, sqrtf, fabsf)
#undef REF_

int main(int argc, char **argv)
{
	size_t n = argc > 2 ? strtoull(argv[1], NULL, 10) : 0;
	int dbl = argc > 2 && !strcmp(argv[2], "double");
	if (!n || (!dbl && strcmp(argv[2], "single"))) {
		fprintf(stderr, "usage: bs_ref N single|double\n");
		return 2;
	}
	enum plb__bs_prec prec = dbl ? PLB__BS_F64 : PLB__BS_F32;
	size_t e = dbl ? sizeof(double) : sizeof(float);
	char *in = malloc(n * plb__bs_in_unit(prec)), *out = malloc(n * plb__bs_out_unit(prec));
	char *soa = malloc(7 * n * e);
	if (!in || !out || !soa) {
		fprintf(stderr, "bs_ref: out of memory\n");
		return 1;
	}
	plb__bs_generate(prec, in, n, 1);
	/* the reference's arrays, from the same options (untimed) */
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 5; k++) {
			if (dbl)
				((double *)soa)[k * n + i] = ((const double *)in)[5 * i + k];
			else
				((float *)soa)[k * n + i] = ((const float *)in)[5 * i + k];
		}
	double ref = INFINITY, ker = INFINITY, draw = INFINITY;
	for (int r = 0; r < REPS; r++) {
		/* drawing them again (the same options: seed 1 from 0) */
		double t = plb__now();
		plb__bs_draw(prec, in, 0, n, 1);
		draw = fmin(draw, plb__now() - t);
		t = plb__now();
		if (dbl) {
			const double *s = (const double *)soa;
			ref_f64(n, s, s + n, s + 2 * n, s + 3 * n, s + 4 * n, (double *)soa + 5 * n,
				(double *)soa + 6 * n);
		} else {
			const float *s = (const float *)soa;
			ref_f32(n, s, s + n, s + 2 * n, s + 3 * n, s + 4 * n, (float *)soa + 5 * n,
				(float *)soa + 6 * n);
		}
		ref = fmin(ref, plb__now() - t);
		t = plb__now();
		if (plb__bs_cpu(prec, in, out, n))
			return 1;
		ker = fmin(ker, plb__now() - t);
	}
	/* the two agree (their formulas are the same) */
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		double c = dbl ? ((double *)out)[2 * i] : ((float *)out)[2 * i];
		double c2 = dbl ? ((double *)soa)[5 * n + i] : ((float *)soa)[5 * n + i];
		double s = dbl ? ((double *)in)[5 * i] + ((double *)in)[5 * i + 1]
			       : ((float *)in)[5 * i] + ((float *)in)[5 * i + 1];
		worst = fmax(worst, fabs(c - c2) / s);
	}
	/* one call into fresh memory, as plb-bs --n in one process: the
	 * options drawn from seed 1 as they are priced */
	char *fresh = malloc(n * plb__bs_out_unit(prec));
	double t = plb__now();
	if (!fresh || plb__bs_cpu_drawn(prec, 1, 0, fresh, n))
		return 1;
	double cold = plb__now() - t;
	printf("%s %zu: reference %.1f M options/s, plb kernel %.1f M options/s (%.2fx the reference's time), drawing %.1f ns an option; one cold call (drawing them) %.4f s; prices agree to %.1e of S + K\n",
	       dbl ? "double" : "single", n, n / ref / 1e6, n / ker / 1e6, ker / ref, draw / n * 1e9, cold, worst);
	free(in);
	free(out);
	free(soa);
	free(fresh);
	return worst < (dbl ? 1e-12 : 1e-5) ? 0 : 1;
}
