/* make bench: the cost of the performance model on the master: one refit
 * (plb__model_add with a full window of model_window samples, every subset
 * of up to model_max_terms basis functions tried), one inversion
 * (plb__model_inverse, called per PU per solve iteration), and warming a
 * PU from a kept window (plb__model_load, per PU at every run of an
 * iterative app) against adding those samples one by one. Printed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "balancer/base/clock.h"
#include "balancer/model.h"

int main(void)
{
	struct plb__params p;
	plb__params_init(&p);
	const double W = 1 << 20;
	struct plb__model m;
	if (plb__model_init(&m, W, &p) != 0)
		return 1;
	/* a GPU-like curve: fixed cost, a saturating penalty, linear; 3% noise */
	uint64_t s = 1;
	int adds = 0;
	double t_fill = 0;
	for (int k = 0; k < 2000; k++) {
		double u = 256 * pow(2, (k % 12) * 0.7);
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		double noise = 1 + 0.03 * ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 2;
		double t = (2e-4 + (u + 160 * (1 - exp(-u / 160))) / 5000) * noise;
		if (plb__model_add(&m, u, t, 1e-5 + u * 1e-8) != 0)
			return 1;
		if (k + 1 == (int)p.model_window)
			t_fill = plb__now();
		adds++;
	}
	double t1 = plb__now();
	int full = adds - (int)p.model_window;
	volatile double sink = 0;
	int ninv = 200000;
	double t2 = plb__now();
	for (int k = 0; k < ninv; k++)
		sink += plb__model_inverse(&m, 0.01 + 1e-5 * (k % 1000), W);
	double t3 = plb__now();
	printf("model refit (window %d, up to %d terms): %.1f us per sample (%d samples, full window)\n",
	       (int)p.model_window, (int)p.model_max_terms, 1e6 * (t1 - t_fill) / full, full);
	printf("model inverse: %.3f us per call (%d calls)\n", 1e6 * (t3 - t2) / ninv, ninv);

	/* the window just fitted, as plb__balancer_model_set gets it */
	int nk = m.n, reps = 50;
	struct plb__sample kept[m.n];
	for (int i = 0; i < nk; i++)
		kept[i] = m.s[(m.head + i) % m.cap];
	double tl = 0, ta = 0;
	for (int r = 0; r < reps; r++) {
		struct plb__model w;
		if (plb__model_init(&w, W, &p) != 0)
			return 1;
		double t4 = plb__now();
		if (plb__model_load(&w, kept, nk) != 0)
			return 1;
		double t5 = plb__now();
		plb__model_fini(&w);
		if (plb__model_init(&w, W, &p) != 0)
			return 1;
		for (int i = 0; i < nk; i++)
			if (plb__model_add(&w, kept[i].units, kept[i].exec_s, kept[i].xfer_s) != 0)
				return 1;
		double t6 = plb__now();
		plb__model_fini(&w);
		tl += t5 - t4;
		ta += t6 - t5;
	}
	printf("kept model warm (%d samples): %.1f us loaded in one fit, %.1f us added one by one\n",
	       nk, 1e6 * tl / reps, 1e6 * ta / reps);
	plb__model_fini(&m);
	return sink < 0;
}
