/* How a kernel's time spreads against its length, the ground for the
 * emulated devices' noise_time: a dgemm (compute bound, 512 x 64 x 512
 * per call) and a streaming triad (memory bound, 8 MiB per array), each
 * repeated to blocks of about 1 ms, 10 ms, 0.1 s and 1 s, every block run
 * REPS times back to back.
 *
 *   OPENBLAS_NUM_THREADS=1 noise_spread [REPS]     (REPS 2-1000, default 20)
 *
 * Prints per kernel and length the mean time, the coefficient of variation
 * and the least and largest time against the mean. Independent noise per
 * short piece would make the spread fall as 1/sqrt(length); what lasts
 * longer than a block (a neighbour, the clock) does not fall. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "balancer/base/clock.h"

enum { N = 512, COLS = 64 };
#define TRIAD ((size_t)1 << 20)

static double *A, *B, *C, *x, *y, *z;

static void once(int kind)
{
	if (kind == 0) {
		cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, N, COLS, N, 1, A, N, B, N,
			    0, C, N);
	} else {
		for (size_t i = 0; i < TRIAD; i++)
			z[i] = x[i] + 1.5 * y[i];
	}
}

static double block(int kind, long calls)
{
	double t0 = plb__now();
	for (long q = 0; q < calls; q++)
		once(kind);
	return plb__now() - t0;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 20;
	if (argc > 2 || reps < 2 || reps > 1000) {
		fprintf(stderr, "usage: noise_spread [REPS 2-1000]\n");
		return 2;
	}
	A = malloc(sizeof *A * N * N), B = malloc(sizeof *B * N * N), C = malloc(sizeof *C * N * N);
	x = malloc(sizeof *x * TRIAD), y = malloc(sizeof *y * TRIAD), z = malloc(sizeof *z * TRIAD);
	if (!A || !B || !C || !x || !y || !z) {
		fprintf(stderr, "noise_spread: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < (size_t)N * N; i++)
		A[i] = B[i] = C[i] = 1.0 / (double)(i + 1);
	for (size_t i = 0; i < TRIAD; i++)
		x[i] = y[i] = z[i] = (double)i;
	const char *names[] = {"dgemm", "triad"};
	for (int kind = 0; kind < 2; kind++)
		for (double target = 1e-3; target < 3; target *= 10) {
			long calls = 1;
			double d;
			while ((d = block(kind, calls)) < target / 4)
				calls *= 2;
			calls = lround((double)calls * target / d);
			if (calls < 1)
				calls = 1;
			double s = 0, s2 = 0, lo = INFINITY, hi = 0;
			for (int r = 0; r < reps; r++) {
				double e = block(kind, calls);
				s += e;
				s2 += e * e;
				lo = fmin(lo, e);
				hi = fmax(hi, e);
			}
			double m = s / reps, sd = sqrt(fmax(0, s2 / reps - m * m));
			printf("%s %8.4f s  cv %.4f  min/mean %.3f max/mean %.3f (%d reps)\n",
			       names[kind], m, sd / m, lo / m, hi / m, reps);
			fflush(stdout);
		}
	printf("(z %g, C %g)\n", z[5], C[3]);   /* the results are used */
	return 0;
}
