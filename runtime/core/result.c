/* What a run leaves (run.h): the report (the bound from the emulated PUs'
 * models and the real PUs' best measured rates), the progress line while
 * it runs, and the getters of plb.h that read the last run's report. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "balancer/base/log.h"
#include "runtime/config/bounds.h"
#include "runtime/core/run.h"

#define PROGRESS_AFTER_S 1.0    /* a run this long shows a progress line ... */
#define PROGRESS_EVERY_S 0.25   /* ... updated this often on a terminal */
#define PROGRESS_PLAIN_S 5.0    /* ... and off one (--progress), a line each */

/* The progress line, on a terminal (stderr), redrawn in place, or with
 * --progress off a terminal (a batch log) a plain line every
 * PROGRESS_PLAIN_S, for runs past PROGRESS_AFTER_S:
 * units done, elapsed, what the models say is left, blocks. The time left
 * is the units left over the PUs' rates at their mean block so far (each
 * PU's model's prediction); before every live PU has a model, the rate so
 * far. end: the run is over: the line is cleared. */
void plb__run_progress(struct plb__run *r, int end)
{
	double el = r->now - r->t0;
	double every = r->tty == 2 ? PROGRESS_PLAIN_S : PROGRESS_EVERY_S;
	if (!r->tty || (!end && (el < PROGRESS_AFTER_S || r->now - r->shown < every)))
		return;
	if (end && r->tty == 2)
		return;         /* its lines are whole: nothing to clear */
	if (end) {
		if (r->shown > 0)
			fputs("\r\033[K", stderr);
		plb__log_progress(0);
		return;
	}
	r->shown = r->now;
	struct plb__balancer_stats st;
	plb__balancer_stats(r->b, &st);
	double rate = 0, left = (double)(r->W - st.units_done);
	for (int i = 0; i < r->npu && rate >= 0; i++) {
		const struct plb__mpu *u = &r->pu[i];
		if (r->d.pu[i].lost)
			continue;
		double b = u->blocks ? u->units / (double)u->blocks : 0, t = plb__balancer_predict(r->b, i, b);
		rate = b > 0 && t > 0 ? rate + b / t : -1;
	}
	if (!(rate > 0))
		rate = st.units_done ? (double)st.units_done / el : 0;
	char eta[48] = "";
	if (rate > 0)
		snprintf(eta, sizeof eta, ", about %.1f s left", left / rate);
	fprintf(stderr, "%splb: run %d: %5.1f%% of %llu units, %.1f s%s, %ld block%s%s",
		r->tty == 2 ? "" : "\r", r->gen, 100.0 * (double)st.units_done / (double)r->W,
		(unsigned long long)r->W, el, eta, st.blocks, st.blocks == 1 ? "" : "s",
		r->tty == 2 ? "\n" : "\033[K");
	fflush(stderr);
	if (r->tty == 1)
		plb__log_progress(1);
}

void plb__run_result_free(struct plb__run_result *res, int npu)
{
	if (!res)
		return;
	if (res->names)
		for (int i = 0; i < npu; i++)
			free(res->names[i]);
	free(res->names);
	free(res->idle);
	free(res->units);
	free(res->overran);
	free(res);
}

/* The report: emulated PUs bound by their models, real ones by their best
 * measured rate (a linear curve through it). */
int plb__run_report(struct plb__run *r, double wall)
{
	struct plb *p = r->p;
	struct plb__run_result *res = calloc(1, sizeof *res);
	const struct plb__devmodel **m = calloc((size_t)r->npu, sizeof *m);
	struct plb__devmodel *real = calloc((size_t)r->npu, sizeof *real);
	double (*coef)[2] = calloc((size_t)r->npu, sizeof *coef);
	struct plb__balancer_stats st;
	int nm = 0, nreal = 0, rc = 0;

	if (!res || !m || !real || !coef || !(res->names = calloc((size_t)r->npu, sizeof *res->names)) ||
	    !(res->idle = calloc((size_t)r->npu, sizeof *res->idle)) ||
	    !(res->units = calloc((size_t)r->npu, sizeof *res->units)) ||
	    !(res->overran = calloc((size_t)r->npu, sizeof *res->overran))) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;
	}
	plb__balancer_stats(r->b, &st);
	struct plb__report *rep = &res->rep;
	double makespan = r->end - r->t0, first = INFINITY, last = -INFINITY;
	for (int i = 0; i < r->npu; i++) {
		struct plb__mpu *u = &r->pu[i];
		const struct plb__pu_desc *d = &p->pu[i];
		if (!(res->names[i] = strdup(d->name))) {
			rc = plb__fail(p, PLB_ENOMEM, "out of memory");
			goto out;
		}
		res->idle[i] = makespan > 0 ? fmax(0, 1 - u->busy / makespan) : 0;
		res->units[i] = u->units;
		res->overran[i] = u->overran;
		if (d->model >= 0) {             /* emulated: its true curve */
			m[nm++] = &p->cfg.models[d->model];
		} else if (u->best_rate > 0) {
			coef[nreal][0] = 0;
			coef[nreal][1] = 1 / u->best_rate;
			real[nreal].compute = (struct plb__curve_spec){.kind = PLB__CURVE_POLY, .n = 2,
								       .c = coef[nreal]};
			real[nreal].fail_t = INFINITY;
			m[nm++] = &real[nreal++];
		}
		if (u->blocks && !r->d.pu[i].lost && !plb__balancer_left_out(r->b, i)) {
			first = fmin(first, u->last_finish);
			last = fmax(last, u->last_finish);
		}
	}
	rep->scenario = p->cfg.path;
	rep->policy = p->policy;
	rep->seed = p->cfg.seed;
	rep->units = r->W;
	rep->units_done = st.units_done;
	rep->coverage_ok = r->finished && plb__coverage_ok(&r->cov, r->W);
	rep->makespan_s = makespan;
	rep->lower_bound_s = plb__bound_lower(m, nm, (double)r->W, r->pipeline > 1);
	rep->eq_optimum_s = plb__bound_eq(m, nm, (double)r->W);
	snprintf(res->note, sizeof res->note, "%s%s%s",
		 nm - nreal ? "emulated PUs: their models" : "",
		 nm - nreal && nreal ? "; " : "",
		 nreal ? "real PUs: their best measured rate (an estimate: their true curves are unknown)" : "");
	if (r->pipeline > 1)
		snprintf(res->note + strlen(res->note), sizeof res->note - strlen(res->note),
			 "; E = max(F, G): transfers overlap compute");
	rep->bound_note = res->note;
	rep->imbalance = last >= first && makespan > 0 ? (last - first) / makespan : NAN;
	rep->npu = r->npu;
	rep->pu_names = (const char *const *)res->names;
	rep->idle_frac = res->idle;
	rep->pu_units = res->units;
	rep->overran = res->overran;
	rep->ranks_lost = r->watch.ranks_lost;
	snprintf(res->lost_note, sizeof res->lost_note, "%s", r->watch.lost_note);
	rep->ranks_note = res->lost_note;
	plb__report_set_stats(rep, &st);
	rep->wall_s = wall;
	rep->bytes_sent = r->bytes_out;
	rep->bytes_received = r->bytes_in;
	/* the master's link ([network] link_gbps, or timed at start) carried
	 * these bytes, each way at most that fast; of them, the bytes the job
	 * had to move to the workers behind it (run.h: start_out, kept_out,
	 * kept_in) */
	const struct plb__link *l = &p->link;
	if (l->from != PLB__LINK_NONE && !p->tp->ops->same_memory) {
		rep->link_bound_s = plb__link_time(l, r->start_out + r->kept_out, r->kept_in);
		if (rep->link_bound_s > rep->lower_bound_s)
			rep->lower_bound_s = rep->link_bound_s;
		if (rep->eq_optimum_s < rep->lower_bound_s)  /* one round beats no link either */
			rep->eq_optimum_s = rep->lower_bound_s;
		snprintf(res->note + strlen(res->note), sizeof res->note - strlen(res->note),
			 makespan < rep->link_bound_s
			 ? "; the master's link at %s, which this run beat: the link is faster than that"
			 : "; the master's link: the run's bytes at %s", plb__link_said(l));
		rep->link_from = l->from == PLB__LINK_CONFIG ? "config" : "timed";
		rep->link_out_gbps = l->out * 8 / 1e9;
		rep->link_in_gbps = l->in * 8 / 1e9;
		rep->link_latency_us = l->from == PLB__LINK_PROBE ? l->latency_s * 1e6 : NAN;
	}
	rep->warm_pus = r->warm;
	rep->resident_bytes = r->resident;
	rep->unkept_bytes = r->unkept;
	rep->master_cpu_s = r->cpu;
	double iw = 0, ic = 0;
	for (int w = 0; w < p->npeer; w++) {
		iw += p->peer[w].idle_wall_s;
		ic += p->peer[w].idle_cpu_s;
	}
	/* in one process the worker's CPU cannot be told from the master's */
	res->worker_idle_cpu = iw > 0 && !p->single ? ic / iw : NAN;
	plb__run_result_free(p->last, p->npu);
	p->last = res;
	res = NULL;
out:
	plb__run_result_free(res, r->npu);
	free(m);
	free(real);
	free(coef);
	return rc;
}

int plb_report(plb_t *p, FILE *f, int json)
{
	plb__api_begin(p);
	if (p && p->master && p->last_pipe && p->pipe_last) {
		int rc = plb__pipe_report_print(p->pipe_last, f, json);
		return rc ? plb__fail(p, rc, "out of memory") : 0;
	}
	if (!p || !p->master || !p->last)
		return p ? plb__fail(p, PLB_ESTATE, "plb_report: no run on this rank") : PLB_EINVAL;
	struct plb__run_result *res = p->last;
	if (!json) {
		plb__report_text(&res->rep, f);
		if (!isnan(res->worker_idle_cpu))
			fprintf(f, "idle worker CPU   %.1f%% of a core (while its PUs had no block)\n",
				100 * res->worker_idle_cpu);
		return 0;
	}
	cJSON *o = plb__report_json(&res->rep);
	if (!o || !cJSON_AddNumberToObject(o, "worker_idle_cpu",
					   isnan(res->worker_idle_cpu) ? -1 : res->worker_idle_cpu) ||
	    !cJSON_AddStringToObject(o, "runtime", p->tp->ops->name)) {
		cJSON_Delete(o);
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	fprintf(f, "%s\n", s);
	free(s);
	return 0;
}

/* The caller's result struct, stamped abi, is one this library fills: 0,
 * or PLB_EINVAL with the message in p (the handle is the caller's, not
 * const memory: the API's const says the call does not change the run,
 * and these calls write its message, as every call does). */
static int result_abi(const plb_t *p, unsigned abi, const char *what)
{
	char why[256];
	if (!plb__abi_check(abi, what, why, sizeof why))
		return 0;
	return plb__fail((struct plb *)p, PLB_EINVAL, "%s", why);
}

int plb_result(const plb_t *p, struct plb_result *out)
{
	plb__api_begin((struct plb *)p);
	if (!p || !out)
		return p ? plb__fail((struct plb *)p, PLB_EINVAL, "plb_result: no struct to fill") : PLB_EINVAL;
	if (result_abi(p, out->abi, "struct plb_result"))
		return PLB_EINVAL;
	if (p->master && p->last_pipe && p->pipe_last) {
		const struct plb__pipe_report *q = p->pipe_last;
		/* a pipeline run: instances are its units, tasks its blocks,
		 * task slots its PUs; no bound */
		*out = (struct plb_result){
			.abi = out->abi, .units = q->instances, .coverage_ok = q->coverage_ok,
			.makespan_s = q->makespan_s, .lower_bound_s = NAN, .ratio = NAN,
			.imbalance = NAN, .wall_s = q->wall_s, .bytes_sent = q->bytes_sent,
			.bytes_received = q->bytes_received, .blocks = q->tasks, .npu = q->nslot,
		};
		return 0;
	}
	if (!p->master || !p->last)
		return plb__fail((struct plb *)p, PLB_ESTATE, "plb_result: no run on this rank yet");
	const struct plb__report *r = &p->last->rep;
	/* ABI 1's members: a later ABI appends, and fills those for a caller
	 * of its own ABI only */
	*out = (struct plb_result){
		.abi = out->abi,
		.units = r->units, .coverage_ok = r->coverage_ok, .makespan_s = r->makespan_s,
		.lower_bound_s = r->lower_bound_s, .ratio = plb__report_ratio(r),
		.imbalance = r->imbalance, .wall_s = r->wall_s, .bytes_sent = r->bytes_sent,
		.bytes_received = r->bytes_received, .blocks = r->blocks,
		.training_blocks = r->training_blocks, .npu = r->npu, .pus_lost = r->pus_lost,
		.warm_pus = r->warm_pus, .resident_bytes = r->resident_bytes,
		.unkept_bytes = r->unkept_bytes, .master_cpu_s = r->master_cpu_s,
	};
	return 0;
}

int plb_pu_result(const plb_t *p, int pu, struct plb_pu_result *out)
{
	plb__api_begin((struct plb *)p);
	if (!p || !out)
		return p ? plb__fail((struct plb *)p, PLB_EINVAL, "plb_pu_result: no struct to fill") : PLB_EINVAL;
	if (result_abi(p, out->abi, "struct plb_pu_result"))
		return PLB_EINVAL;
	if (p->master && p->last_pipe && p->pipe_last) {
		const struct plb__pipe_report *q = p->pipe_last;
		if (pu < 0 || pu >= q->nslot)
			return plb__fail((struct plb *)p, PLB_EINVAL, "plb_pu_result: task slot %d; accepted: 0 to %d (plb_result's npu - 1)",
					 pu, q->nslot - 1);
		*out = (struct plb_pu_result){out->abi, q->slot_name[pu], (double)q->slot_tasks[pu],
					      q->makespan_s > 0 ? 1 - q->slot_busy[pu] / q->makespan_s : NAN};
		return 0;
	}
	if (!p->master || !p->last)
		return plb__fail((struct plb *)p, PLB_ESTATE, "plb_pu_result: no run on this rank yet");
	const struct plb__report *r = &p->last->rep;
	if (pu < 0 || pu >= r->npu)
		return plb__fail((struct plb *)p, PLB_EINVAL, "plb_pu_result: PU %d; accepted: 0 to %d (plb_result's npu - 1)",
				 pu, r->npu - 1);
	*out = (struct plb_pu_result){out->abi, r->pu_names[pu], r->pu_units[pu], r->idle_frac[pu]};
	return 0;
}
