/* The master (rank 0): plb_run drives the balancer over the workers' PUs.
 * It checks the job, opens the run (the balancer, START to every worker,
 * each PU asked for up to `pipeline` grants), then loops: receive a batch
 * of messages, answer it (the PUs that reported, then every PU the
 * balancer had told to wait), or, when nothing came, ask the waiting PUs
 * at the balancer's wake time and wait for a message (plb__backoff, or
 * a waking transport's sleep). Then it closes the run: outputs settled
 * and merged, the workers told, the report. The balancer is asked through
 * the driver (balancer/driver.h), as plbsim asks it; the other concerns
 * are in the files run.h lists. plb_run returns once no PU touches the
 * job's memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "balancer/base/log.h"
#include "runtime/core/resident.h"
#include "runtime/core/run.h"

/* The loop's pace: when to ask the waiting PUs again with no message in
 * between (a late block worth running again: it moves only with the
 * balancer's state, so it is asked after each batch, not each spin), and
 * how long to wait for a message. */
struct pace {
	double wake;
	int wakes;              /* a message wakes this loop: it may sleep long */
	struct plb__backoff bo;
};

/* The job is one this master can run; r->k and r->W from it. */
static int check(struct plb__run *r)
{
	struct plb *p = r->p;
	const struct plb_job *job = r->job;
	if (!p || !p->master)
		return p ? plb__fail(p, PLB_ESTATE, "plb_run: only the master (rank 0) runs jobs") : PLB_EINVAL;
	if (p->failed)
		return plb__fail(p, PLB_ESTATE, "plb_run: plb_init failed");
	char why[256];
	if (job && plb__abi_check(job->abi, "struct plb_job", why, sizeof why))
		return plb__fail(p, PLB_EINVAL, "plb_run: %s", why);
	if (!job || !job->kernel || !(r->k = plb__kernel_find(p, job->kernel)))
		return plb__fail(p, PLB_ENOENT, "plb_run: kernel '%s' is not in plb_options.kernels",
				 job && job->kernel ? job->kernel : "(null)");
	if (strlen(job->kernel) >= PLB__KERNEL_NAME_MAX)
		return plb__fail(p, PLB_EINVAL, "plb_run: kernel name '%.40s...' is too long; accepted: up to %d characters",
				 job->kernel, PLB__KERNEL_NAME_MAX - 1);
	if (p->cfg.nops && !p->ops_warned++ && !p->quiet)
		plb__log(PLB__LOG_WARN, "master", "%s:%d: [op %s]: the config's [op] sections are for pipeline runs (plb_run_pipeline); this block run does not use them",
			 p->cfg.path, p->cfg.ops[0].line, p->cfg.ops[0].name);
	r->W = job->units ? job->units : (uint64_t)p->cfg.units;
	if (!r->W)
		return plb__fail(p, PLB_EINVAL, "plb_run: the domain's size is not known: job.units is 0 and %s has no [run] units; accepted: either, an integer >= 1",
				 p->cfg.path);
	if ((job->in_unit && !job->in) || (job->out_unit && !job->out) ||
	    (job->shared_bytes && !job->shared) || (job->acc_bytes && !job->acc))
		return plb__fail(p, PLB_EINVAL, "plb_run: in, out, shared or acc is NULL but its size is not 0");
	if (job->acc_bytes && !r->k->combine)
		return plb__fail(p, PLB_EINVAL, "plb_run: the job has an accumulator (acc_bytes %zu) but kernel '%s' has no combine function",
				 job->acc_bytes, job->kernel);
	return 0;
}

/* The driver's wait hook: a grant after a wait follows no DONE at once. */
static void pu_waits(void *ctx, int i)
{
	((struct plb__run *)ctx)->pu[i].heard = NAN;
}

/* The run's state, its balancer and START to every worker. */
static int open_run(struct plb__run *r, double *wall0)
{
	struct plb *p = r->p;
	const struct plb_job *job = r->job;
	int rc;
	r->out.accpad = plb__pad16(job->acc_bytes);
	r->npu = p->npu;
	r->pipeline = p->cfg.pipeline;
	r->gen = ++p->runs;
	r->pu = calloc((size_t)r->npu, sizeof *r->pu);
	r->out.merge = calloc(PLB__BATCH, sizeof *r->out.merge);
	r->watch.way = calloc((size_t)p->npeer + 1, sizeof *r->watch.way);
	if (!r->pu || !r->out.merge || !r->watch.way)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int w = 0; w < p->npeer; w++) {
		r->watch.way[w][1] = INFINITY;
		for (int k = 0; k < p->peer[w].npu; k++) {
			r->pu[p->peer[w].pu0 + k].peer = w;
			r->pu[p->peer[w].pu0 + k].local = k;
			r->pu[p->peer[w].pu0 + k].heard = NAN;
		}
	}
	rc = plb__balancer_create(&p->cfg.params, p->policy, r->npu, r->W, &r->b);
	if (rc)
		return plb__fail(p, rc, "cannot create the balancer (policy %s, %d PUs, %llu units): %s",
				 p->policy, r->npu, (unsigned long long)r->W, plb_strerror(rc));
	/* a worker's PUs share its node: a policy that probes learns whether
	 * one of them slows the others more than it adds (couple.c) */
	for (int i = 0; i < r->npu && !rc; i++)
		rc = plb__balancer_node(r->b, i, r->pu[i].peer);
	/* a worker beside the master: its blocks do not cross the link */
	for (int i = 0; i < r->npu && !rc; i++)
		if (!p->peer[r->pu[i].peer].behind)
			rc = plb__balancer_local(r->b, i);
	if (rc)
		return plb__fail(p, rc, "balancer: %s", plb_strerror(rc));
	if (plb__driver_init(&r->d, r->b, r->npu, r->pipeline, plb__run_dispatch, pu_waits, r))
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	if (p->cfg.keep_models && (r->warm = plb__kept_warm(p, job, r->b)) < 0)
		return plb__fail(p, r->warm, "balancer: the kept models: %s", plb_strerror(r->warm));
	r->out.borrow = p->tp->ops->same_memory && p->cfg.in_place;
	if ((r->res = plb__res_begin(p, job, r->W, r->out.borrow, r->b, &r->reuse)) < 0)
		return r->res;
	/* the output the last run wrote whole has its pages mapped; until this
	 * run ends well nothing is known of it (the app may free it after) */
	size_t out_bytes = (size_t)r->W * job->out_unit;
	r->out.map_out = !(job->out && job->out == p->out_mapped && out_bytes == p->out_mapped_bytes);
	p->out_mapped = NULL;
	/* the run's clock starts before the STARTs: their bytes cross in it
	 * (the first while the next is packed), as the bound counts them */
	*wall0 = r->watch.sent = r->t0 = plb__now();
	plb__trace_begin(p->trace);
	if ((rc = plb__run_start_workers(r, job->kernel))) {
		/* a START may have gone: its run must still end */
		if (r->out.borrow)
			(void)plb__run_end_borrowed(r);
		return rc;
	}
	/* the master's link ([network] link_gbps, or timed at start): a
	 * block is not late before its bytes could have crossed it, after
	 * the STARTs */
	double rate = plb__link_units(&p->link, (double)job->in_unit, (double)job->out_unit);
	if (rate > 0 && !p->tp->ops->same_memory &&
	    (rc = plb__balancer_link(r->b, rate, plb__link_time(&p->link, r->start_out, 0))))
		return plb__fail(p, rc, "balancer: the master's link: %s", plb_strerror(rc));
	return 0;
}

/* The run's clock starts; every PU is asked for its first blocks. */
static int begin(struct plb__run *r, struct pace *pc)
{
	struct plb *p = r->p;
	int rc = 0;
	r->now = r->watch.said = r->watch.watched = plb__now();
	r->cpu0 = plb__cpu_now();
	for (int w = 0; w < p->npeer; w++) {
		p->peer[w].heard = r->now;
		p->peer[w].spoke = 0;
		/* a rank gone in an earlier run has no PU in this one */
		for (int k = 0; p->peer[w].rank < 0 && k < p->peer[w].npu && !rc; k++)
			rc = plb__run_lose(r, p->peer[w].pu0 + k);
	}
	/* 1: a line redrawn in place; 2 (--progress off a terminal, a batch
	 * log): a plain line now and then */
	r->tty = p->quiet ? 0 : isatty(STDERR_FILENO) ? 1 : p->progress ? 2 : 0;
	p->tp->place = plb__out_place;
	p->tp->place_ctx = r;
	for (int i = 0; i < r->npu && !rc; i++)
		rc = plb__run_drove(r, plb__driver_poll(&r->d, i, r->now - r->t0));
	plb__trace_after(p->trace, r->b, -1, plb__now());
	pc->wake = plb__balancer_wake(r->b);
	pc->wakes = p->tp->ops->wakes;
	pc->bo.cap_us = pc->wakes ? PLB__BACKOFF_WAKE_US : 0;
	plb__backoff_reset(&pc->bo);
	return rc;
}

/* Up to PLB__BATCH messages, each handled as it comes; *n: how many. */
static int receive(struct plb__run *r, int *n)
{
	struct plb *p = r->p;
	int rc = 0;
	while (*n < PLB__BATCH && !rc) {
		void *msg;
		int src, got = p->tp->ops->recv(p->tp, &msg, &src);
		if (got < 0)
			return plb__fail(p, got, "receiving: %s", p->tp->err);
		if (!got)
			break;
		(*n)++;
		size_t kept = (size_t)r->out.nmerge + r->out.nlate;
		rc = plb__run_message(r, msg, src);
		if ((size_t)r->out.nmerge + r->out.nlate == kept)    /* not a DONE whose output waits */
			plb__msg_free(msg);
	}
	return rc;
}

/* A batch came: the PUs that reported are asked, then every PU told to
 * wait; the batch's outputs are merged after its grants have gone, so
 * copying a large block's output never delays the next block. */
static int answer(struct plb__run *r, struct pace *pc)
{
	struct plb *p = r->p;
	int rc = plb__run_drove(r, plb__driver_answer(&r->d, r->now - r->t0));
	if (!rc && !r->d.busy) {
		struct plb__balancer_stats st;
		plb__balancer_stats(r->b, &st);
		rc = plb__fail(p, PLB_EIO, "every PU is lost or idle with %llu of %llu units not done",
			       (unsigned long long)(r->W - st.units_done), (unsigned long long)r->W);
	}
	int mrc = plb__out_merge(r);
	rc = rc ? rc : mrc;
	plb__trace_after(p->trace, r->b, -1, plb__now());
	plb__run_progress(r, 0);
	if (!rc)
		rc = plb__run_watch(r);
	pc->wake = plb__balancer_wake(r->b);
	plb__backoff_reset(&pc->bo);
	return rc;
}

/* Nothing came: the waiting PUs are asked at the balancer's wake time,
 * the workers watched, and the loop waits (until a message, or the wake
 * time, where the transport wakes it). */
static int idle(struct plb__run *r, struct pace *pc, unsigned long seen)
{
	struct plb *p = r->p;
	int rc = 0;
	if (r->now - r->t0 >= pc->wake) {
		rc = plb__run_drove(r, plb__driver_parked(&r->d, r->now - r->t0));
		plb__trace_after(p->trace, r->b, -1, plb__now());
		pc->wake = plb__balancer_wake(r->b);
	}
	plb__run_progress(r, 0);
	if (!rc)
		rc = plb__run_watch(r);
	long us = plb__backoff_next(&pc->bo, p->tp->ops->pending(p->tp));
	if (us > 0 && pc->wakes) {
		/* until a message, or the balancer's wake time */
		double left = pc->wake - (plb__now() - r->t0);
		if (left < us * 1e-6)
			us = left > 0 ? (long)(left * 1e6) + 1 : 1;
		plb__waiter_wait(&p->wt, seen, us);
	} else if (us > 0) {
		nanosleep(&(struct timespec){0, us * 1000}, NULL);
	}
	return rc;
}

static int loop(struct plb__run *r, struct pace *pc)
{
	int rc = 0;
	while (!rc && !r->finished) {
		int n = 0;
		unsigned long seen = pc->wakes ? plb__waiter_seen(&r->p->wt) : 0;
		r->now = plb__now();
		rc = receive(r, &n);
		if (rc || r->finished) {
			int mrc = plb__out_merge(r);
			return rc ? rc : mrc;
		}
		rc = n ? answer(r, pc) : idle(r, pc, seen);
	}
	return rc;
}

/* The run's end, also after an error in it: outputs on their way settle
 * and are merged, the workers leave the run, the report is made, the
 * output's coverage checked, the accumulator combined, the models kept. */
static int close_run(struct plb__run *r, int rc, double wall0)
{
	struct plb *p = r->p;
	const struct plb_job *job = r->job;
	/* no output is placed any more; those on their way arrive before
	 * anything is merged over them, and before plb_run returns */
	p->tp->place = NULL;
	p->tp->place_ctx = NULL;
	if (p->tp->ops->settle) {
		int src = p->tp->ops->settle(p->tp, p->cfg.peer_timeout_s);
		if (src && !rc)
			rc = plb__fail(p, src, "%s; job.out is not to be trusted", p->tp->err);
	}
	if (r->out.apart)
		plb__log(PLB__LOG_DEBUG, "master", "%ld of %ld block outputs sent apart were received in place",
			 r->out.placed, r->out.apart);
	r->cpu = plb__cpu_now() - r->cpu0;
	plb__run_progress(r, 1);
	if (p->trace) {
		char name[PLB__KERNEL_NAME_MAX + 32];
		snprintf(name, sizeof name, "run %d: %s", r->gen, job->kernel);
		double end = r->finished ? r->end : plb__now();
		plb__trace_run(p->trace, r->watch.sent, end, name, p->policy, r->W);
		plb__trace_models(p->trace, r->b, r->npu, end);
	}
	int erc = r->out.borrow ? plb__run_end_borrowed(r) : plb__out_merge_late(r);
	rc = rc ? rc : erc;
	if (!rc && !r->out.borrow)
		rc = plb__run_end_workers(p, 0);
	r->resident = plb__res_end(p, job, r->W, r->res, r->out.borrow, !rc);
	if (!rc)
		rc = plb__run_report(r, plb__now() - wall0);
	if (!rc && p->last->rep.coverage_ok) {
		p->out_mapped = job->out;
		p->out_mapped_bytes = (size_t)r->W * job->out_unit;
	}
	/* the coverage record is kept apart from the balancer's counts: when
	 * they disagree the output cannot be trusted (the report stays) */
	if (!rc && !p->last->rep.coverage_ok)
		rc = plb__fail(p, PLB_EIO, "plb_run: the blocks that came back do not cover "
			       "[0, %llu) exactly once (a hole or an overlap); job.out is not "
			       "to be trusted", (unsigned long long)r->W);
	if (!rc && job->acc_bytes)
		rc = plb__out_acc_finish(r);
	if (!rc) {
		int *lost = calloc((size_t)r->npu + 1, sizeof *lost);
		for (int i = 0; lost && i < r->npu; i++)
			lost[i] = r->d.pu[i].lost;
		if (!lost || plb__kept_store(p, job, r->b, lost))
			rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		free(lost);
	}
	return rc;
}

int plb_run(plb_t *p, const struct plb_job *job)
{
	struct plb__run r = {.p = p, .job = job};
	struct pace pc = {0};
	double wall0 = 0;
	plb__api_begin(p);
	int rc = check(&r);
	if (rc)
		return rc;
	p->last_pipe = 0;
	if (!(rc = open_run(&r, &wall0))) {
		rc = begin(&r, &pc);
		if (!rc)
			rc = loop(&r, &pc);
		rc = close_run(&r, rc, wall0);
	}
	plb__out_fini(&r.out);
	plb__coverage_fini(&r.cov);
	plb__driver_fini(&r.d);
	plb__balancer_destroy(r.b);
	free(r.pu);
	free(r.watch.way);
	return rc;
}
