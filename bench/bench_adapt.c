/* Adaptation (make bench): in config/sim/adapt-4x.ini one GPU becomes 4x
 * slower mid-run. For every virtual step of plb-hac after the change, print
 * the block the slowed GPU got and its new equal-time size: its share when
 * the step's regular units are split with the true curves (speed factors in
 * force). Target: within 10% by the third step after the change.
 *   bench_adapt [SCENARIO [KEY=VALUE ...]]   (balancer parameter overrides) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/balancer.h"
#include "balancer/solver.h"
#include "runtime/config/config.h"
#include "runtime/sim/sim.h"

struct rec { double t, units; int pu, kind, step; };
static struct rec *recs;
static int nrec, caprec;

static void on_grant(void *ctx, int pu, double now, double units, int kind, int step)
{
	if (nrec == caprec) {
		caprec = caprec ? 2 * caprec : 1024;
		recs = realloc(recs, (size_t)caprec * sizeof *recs);
		if (!recs)
			abort();
	}
	recs[nrec++] = (struct rec){now, units, pu, kind, step};
}

struct truth { const struct plb__devmodel *m; double factor; };

static double true_e(const void *ctx, double x)
{
	const struct truth *t = ctx;
	return t->factor * (plb__curve_spec_eval(&t->m->compute, x) +
			    plb__curve_spec_eval(&t->m->transfer, x));
}

static double true_d(const void *ctx, double x)
{
	double h = fmax(1e-6 * x, 1e-3);
	return (true_e(ctx, x + h) - true_e(ctx, fmax(x - h, 0))) / (x + h - fmax(x - h, 0));
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "config/sim/adapt-4x.ini";
	struct plb__config cfg;
	char err[1024];
	if (plb__config_load(path, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		if (plb__params_assign(&cfg.params, argv[i], err, sizeof err) != 0) {
			fprintf(stderr, "bench_adapt: %s\n", err);
			return 1;
		}
	}
	int gpu = -1;
	for (int i = 0; i < cfg.npu; i++)
		if (cfg.models[cfg.pus[i].model].nchange > 0)
			gpu = i;
	if (gpu < 0) {
		fprintf(stderr, "%s: no PU with a speed change\n", path);
		return 1;
	}
	const struct plb__devmodel *gm = &cfg.models[cfg.pus[gpu].model];
	double tchange = gm->change_t[0];
	struct plb__sim_opts o = {.policy = "plb-hac", .seed = cfg.seed, .solve_us = cfg.solve_us,
				  .on_grant = on_grant};
	struct plb__sim_result res;
	if (plb__sim_run(&cfg, &o, &res, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("%s: %s becomes %.1fx slower at t = %.1f s; plb-hac ratio %.4f\n", path,
	       cfg.pus[gpu].name, gm->change_f[0], tchange, plb__report_ratio(&res.rep));
	printf("%5s %9s %10s %10s %8s\n", "step", "t", "granted", "equal-time", "ratio");
	struct plb__efun *ef = calloc((size_t)cfg.npu, sizeof *ef);
	struct truth *tr = calloc((size_t)cfg.npu, sizeof *tr);
	double *x = calloc((size_t)cfg.npu, sizeof *x);
	int after = 0, within = -1;
	for (int k = 0; k < nrec; k++) {
		struct rec *r = &recs[k];
		if (r->pu != gpu || r->kind != PLB__GRANT_REGULAR || r->t < tchange)
			continue;
		/* the step's regular units, all PUs */
		double S = 0;
		for (int j = 0; j < nrec; j++)
			if (recs[j].step == r->step && recs[j].kind == PLB__GRANT_REGULAR)
				S += recs[j].units;
		for (int i = 0; i < cfg.npu; i++) {
			tr[i] = (struct truth){&cfg.models[cfg.pus[i].model],
					       plb__devmodel_factor(&cfg.models[cfg.pus[i].model], r->t)};
			ef[i] = (struct plb__efun){true_e, true_d, &tr[i], 0};
		}
		struct plb__solve_out so;
		if (plb__solve_fast(ef, cfg.npu, S, x, &so) != 0)
			continue;
		after++;
		double ratio = r->units / x[gpu];
		if (within < 0 && fabs(ratio - 1) <= 0.10)
			within = after;
		printf("%5d %9.2f %10.0f %10.0f %8.3f\n", after, r->t, r->units, x[gpu], ratio);
	}
	if (within > 0)
		printf("within 10%% of the new equal-time size at step %d after the change (target: <= 3)\n", within);
	else
		printf("never within 10%% of the new equal-time size (target: by step 3)\n");
	free(ef);
	free(tr);
	free(x);
	free(recs);
	plb__sim_result_fini(&res);
	plb__config_fini(&cfg);
	return 0;
}
