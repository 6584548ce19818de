/* The emu device class: a PU whose block times follow a [model] of the
 * config, exactly as plbsim simulates it (transfer stage, then compute
 * stage; a block's transfer starts when its message arrives, so with two
 * grants held the next transfer overlaps the current compute; speed changes
 * and noise; a failure ends the PU). It runs the real CPU kernel on its own
 * thread first (at low priority), so results stay correct, then sleeps
 * until the model's finish time. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "balancer/base/log.h"
#include "runtime/device/device.h"

/* Emulated PUs run their real kernels at low priority (nice 10, this
 * thread only), so that on a machine that also has real PUs the emulation's
 * own work does not slow the real PUs or skew their models. */
static int emu_thread_start(struct plb__dev *d, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10))
		plb__log(PLB__LOG_INFO, "emu", "%s: cannot lower this thread's priority", d->desc.name);
	return 0;
}

static int emu_run(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
		   const struct plb_block *b, struct plb__dev_times *t)
{
	const struct plb__devmodel *m = d->model;
	double u = (double)b->units;
	double G = plb__curve_spec_eval(&m->transfer, u) * plb__rng_noise(&d->rng, m->noise);
	double F = plb__curve_spec_eval(&m->compute, u) * plb__rng_noise(&d->rng, m->noise);
	double xs = fmax(d->arrive - d->t0, d->xfer_free);
	double xe = plb__devmodel_finish(m, xs, G);
	double cs = fmax(xe, d->comp_free);
	double ce = plb__devmodel_finish(m, cs, F);
	int rc = 0;

	d->xfer_free = xe;
	d->comp_free = ce;
	if (kc && kc->run)
		rc = kc->run(kstate, b);
	if (ce > m->fail_t) {
		plb__sleep_until(d->t0 + m->fail_t);
		t->died = 1;
		return rc;
	}
	double late = plb__now() - (d->t0 + ce);
	if (late > 0.01 && late > 0.1 * (ce - cs))
		plb__log(PLB__LOG_INFO, "emu", "%s: the real kernel took %.3f s past the model's finish",
			 d->desc.name, late);
	plb__sleep_until(d->t0 + ce);
	t->xfer_s = xe - xs;
	t->exec_s = ce - cs;
	t->busy_s = ce - fmax(xs, d->busy_until);
	d->busy_until = ce;
	return rc;
}

const struct plb__devclass plb__dev_emu = {
	.name = "emu",
	.thread_start = emu_thread_start,
	.run = emu_run,
};
