/* The emu device class (emu = MODEL ... in a [node]): a PU whose block
 * times follow a [model] of the config, exactly as plbsim simulates it
 * (transfer stage, then compute stage; a block's transfer starts when its
 * message arrives, so with two grants held the next transfer overlaps the
 * current compute; speed changes and noise; a failure ends the PU). It
 * runs the real CPU kernel on its own thread first (at low priority, and
 * off the cores CPU PUs take), so results stay correct, then sleeps until
 * the model's finish time. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "balancer/base/clock.h"
#include "balancer/base/log.h"
#include "runtime/device/device.h"

struct emu {
	const struct plb__devmodel *m;
	struct plb__noise nz;
	double xfer_free, comp_free;    /* the stages are free from (run time) */
	double busy_until;              /* the PU is busy until (run time) */
	int blocks;                     /* blocks begun in this run */
	int skip;                       /* the first CPUs it keeps off (emu_thread_start) */
};

static int emu_open(struct plb__dev *d, const struct plb__dev_spec *s, char *err, size_t errlen)
{
	const struct plb__config *cfg = s->cfg;
	struct emu *e = calloc(1, sizeof *e);
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return PLB_ENOMEM;
	}
	d->state = e;
	e->m = &cfg->models[s->value];
	/* CPU PUs bind their teams from the first core up: this node's
	 * team's cores, and the first core (another node's team on this
	 * host starts there), are left to them */
	const struct plb__node_pus *cpu = &cfg->nodes[s->node].pus[PLB__PU_CPU];
	int team = cpu->n ? cpu->v[0] : 0;      /* -1: all */
	e->skip = team < 0 ? 0 : team > 1 ? team : 1;
	d->desc.model = s->value;
	/* Its name is the config's: the emulated PUs of a node are listed
	 * kind by kind, so it is the node's (PUs of earlier MODELS kinds +
	 * index)-th one. */
	int nth = s->index;
	for (int k = 0; k < d->desc.kind; k++)
		if (plb__pu_kind_value((enum plb__pu_kind)k) == PLB__VALUE_MODELS)
			nth += cfg->nodes[s->node].pus[k].n;
	for (int i = 0; i < cfg->npu; i++)
		if (cfg->pus[i].node == s->node && nth-- == 0)
			snprintf(d->desc.name, sizeof d->desc.name, "%s", cfg->pus[i].name);
	return 0;
}

/* Emulated PUs run their real kernels at low priority (nice 10, this
 * thread only) and off the cores CPU PUs are bound to (those of this
 * node's team, and the first core, where any team on this host starts;
 * none skipped when the team takes every core, or the process has one
 * CPU), so that on a machine that also has real PUs the emulation's own
 * work does not slow the real PUs or skew their models. */
static int emu_thread_start(struct plb__dev *d, char *err, size_t errlen)
{
	struct emu *e = d->state;
	(void)err;
	(void)errlen;
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10))
		plb__log(PLB__LOG_INFO, "emu", "%s: cannot lower this thread's priority", d->desc.name);
	cpu_set_t all, mine;
	if (sched_getaffinity(0, sizeof all, &all))
		return 0;
	CPU_ZERO(&mine);
	for (int c = 0, k = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all) && k++ >= e->skip)
			CPU_SET(c, &mine);
	if (CPU_COUNT(&mine) && pthread_setaffinity_np(pthread_self(), sizeof mine, &mine))
		plb__log(PLB__LOG_INFO, "emu", "%s: cannot keep its thread off the CPU PUs' cores", d->desc.name);
	return 0;
}

static void emu_begin(struct plb__dev *d)
{
	struct emu *e = d->state;
	e->xfer_free = e->comp_free = e->busy_until = 0;
	e->blocks = 0;
	plb__noise_seed(&e->nz, d->run.seed, d->run.stream);
}

static int emu_run(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
		   const struct plb_block *b, double arrive, struct plb__dev_times *t)
{
	struct emu *e = d->state;
	const struct plb__devmodel *m = e->m;
	double t0 = d->run.t0, u = (double)b->units;
	/* a pipeline's task: its op's time (copies are the kernel's to report) */
	double G = t->task_s > 0 ? 0 : plb__curve_spec_eval(&m->transfer, u);
	double F = t->task_s > 0 ? t->task_s : plb__curve_spec_eval(&m->compute, u);
	double xs = fmax(arrive - t0, e->xfer_free);
	double xe = plb__devmodel_stage(m, &e->nz, PLB__STAGE_XFER, xs, G);
	double cs = fmax(xe, e->comp_free);
	double ce = plb__devmodel_stage(m, &e->nz, PLB__STAGE_COMPUTE, cs, F);
	int rc = 0;

	e->xfer_free = xe;
	e->comp_free = ce;
	if (kc && kc->run)
		rc = kc->run(kstate, b);
	if (ce > m->fail_t) {
		plb__sleep_until(t0 + m->fail_t);
		t->died = 1;
		t->dead_at = t0 + m->fail_t;
		return rc;
	}
	/* late by 10 ms and a tenth of the block: the report says so */
	double late = plb__now() - (t0 + ce);
	if (late > 0.01 && late > 0.1 * (ce - cs)) {
		plb__log(PLB__LOG_INFO, "emu", "%s: the real kernel took %.3f s past the model's finish",
			 d->desc.name, late);
		t->overran = late;
	}
	plb__sleep_until(t0 + ce);
	if (++e->blocks == m->fail_block && !rc) {
		plb__log(PLB__LOG_INFO, "emu", "%s: its block %d of the run fails, as its model's fail_block says",
			 d->desc.name, e->blocks);
		rc = PLB_EDEVICE;       /* fault injection */
	}
	t->xfer_s = xe - xs;
	t->xfer_at = t0 + xs;
	t->exec_s = ce - cs;
	t->busy_s = ce - fmax(xs, e->busy_until);
	e->busy_until = ce;
	return rc;
}

static void emu_close(struct plb__dev *d)
{
	free(d->state);
	d->state = NULL;
}

const struct plb__devclass plb__dev_emu = {
	.name = "emu",
	.kernel = PLB_DEV_CPU,
	.own_times = 1,
	.open = emu_open,
	.thread_start = emu_thread_start,
	.begin = emu_begin,
	.run = emu_run,
	.close = emu_close,
};
