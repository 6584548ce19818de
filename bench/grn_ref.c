/* bench/grn.sh's reference for plb-grn: the pair search (subsets of two
 * predictors) on one core by a straightforward single-node program, and
 * by plb's CPU kernel called directly on every target, on the same
 * synthetic network. The reference is what such a program does: levels
 * one byte a sample, and for each target and first predictor a combined
 * code of both a sample, so that each pair's 27-cell table is one pass of
 * increments over the samples (built -O3 -march=native for this machine);
 * it scores with the same formula. Both answers are compared.
 *
 *   grn_ref GENES SAMPLES    (prints one line of figures)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "kernels/grn/grn.h"

#define C 3                     /* levels */

/* Target t's best pair by histograms; the pair's genes into best. */
static double ref_target(const uint8_t *lev, int n, int s, const struct plb__grn_tables *tab,
			 int t, uint8_t *code, int *best)
{
	const uint8_t *y = lev + (size_t)t * s;
	uint32_t cy[C] = {0}, cnt[C * C * C];
	for (int i = 0; i < s; i++)
		cy[y[i]]++;
	double hy = plb__grn_hy(tab, cy, C), top = INFINITY;
	for (int b = 0; b < n; b++) {
		if (b == t)
			continue;
		const uint8_t *lb = lev + (size_t)b * s;
		for (int i = 0; i < s; i++)
			code[i] = (uint8_t)(lb[i] * C * C + y[i]);
		for (int a = 0; a < b; a++) {
			if (a == t)
				continue;
			const uint8_t *la = lev + (size_t)a * s;
			memset(cnt, 0, sizeof cnt);
			for (int i = 0; i < s; i++)
				cnt[code[i] + la[i] * C]++;
			double sc = plb__grn_score(tab, cnt, C * C, C, hy);
			if (sc < top) {
				top = sc;
				best[0] = a;
				best[1] = b;
			}
		}
	}
	return top;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0, s = argc > 2 ? atoi(argv[2]) : 0;
	if (n < 3 || s < 1 || plb__grn_shape_ok(n, s, C, 2)) {
		fprintf(stderr, "usage: grn_ref GENES SAMPLES (GENES >= 3)\n");
		return 2;
	}
	float *expr = malloc((size_t)n * s * sizeof *expr);
	int32_t *truth = malloc((size_t)n * 2 * sizeof *truth);
	uint8_t *lev = malloc((size_t)n * s), *code = malloc((size_t)s);
	void *sh = malloc(plb__grn_shared_bytes(n, s, C));
	struct plb__grn_best *out = malloc((size_t)n * sizeof *out);
	struct plb__grn_tables tab;
	if (!expr || !truth || !lev || !code || !sh || !out || plb__grn_tables_make(s, 1.0, &tab) ||
	    plb__grn_generate(n, s, C, 2, 0.05, 1, expr, truth) || plb__grn_discretise(expr, n, s, C, lev)) {
		fprintf(stderr, "grn_ref: out of memory\n");
		return 1;
	}
	plb__grn_share(sh, lev, n, s, C, 2, 1.0);
	double t0 = plb__now();
	if (plb__grn_cpu(sh, &tab, 0, (size_t)n, out)) {
		fprintf(stderr, "grn_ref: the kernel failed\n");
		return 1;
	}
	double ker = plb__now() - t0;
	int differ = 0;
	t0 = plb__now();
	for (int t = 0; t < n; t++) {
		int best[2] = {-1, -1};
		double sc = ref_target(lev, n, s, &tab, t, code, best);
		differ += best[0] != out[t].reg[0] || best[1] != out[t].reg[1] ||
			  fabs(sc - out[t].score) > 1e-12 * (1 + sc);
	}
	double ref = plb__now() - t0;
	double pairs = (double)n * (n - 1) * (n - 2) / 2;
	printf("%d genes, %d samples: reference %.3f s (%.1f M pairs/s), plb's kernel %.3f s (%.1f M pairs/s): kernel/reference time %.2f; answers %s\n",
	       n, s, ref, pairs / ref / 1e6, ker, pairs / ker / 1e6, ker / ref,
	       differ ? "DIFFER" : "agree");
	plb__grn_tables_free(&tab);
	free(expr);
	free(truth);
	free(lev);
	free(code);
	free(sh);
	free(out);
	return differ ? 1 : 0;
}
