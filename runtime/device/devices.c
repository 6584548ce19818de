/* The device classes behind the PU kinds (PLB__PU_KINDS), and what every
 * class shares: the description a PU starts with, and timing a block for
 * the classes that do not model their own times. */
#include <math.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "runtime/device/device.h"

static const struct plb__devclass *const classes[PLB__PU_NKIND] = {
#define X(ID, cls, key, value, accepts) [PLB__PU_##ID] = &plb__dev_##cls,
	PLB__PU_KINDS(X)
#undef X
};

/* Host cores the PUs of node `node` whose class has host_core hold. */
static int host_cores(const struct plb__config *cfg, int node)
{
	int n = 0;
	for (int k = 0; k < PLB__PU_NKIND; k++) {
		if (!classes[k]->host_core)
			continue;
		for (int i = 0; i < cfg->nodes[node].pus[k].n; i++) {
			struct plb__dev_spec s = {.cfg = cfg, .node = node, .index = i,
						  .value = cfg->nodes[node].pus[k].v[i]};
			n += classes[k]->holds ? classes[k]->holds(&s) : 1;
		}
	}
	return n;
}

int plb__dev_count(enum plb__pu_kind kind, const struct plb__dev_spec *s)
{
	return classes[kind]->count ? classes[kind]->count(s) : 1;
}

int plb__dev_open(struct plb__dev *d, enum plb__pu_kind kind, const struct plb__dev_spec *s,
		  char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	d->cls = classes[kind];
	d->desc.kind = kind;
	d->desc.model = -1;
	d->desc.device = -1;
	d->desc.cores = 1;
	d->info.cls = d->cls->kernel;
	d->info.device = -1;
	d->info.cores = 1;
	d->info.name = d->desc.name;
	struct plb__dev_spec spec = *s;
	spec.host_cores = host_cores(s->cfg, s->node);
	return d->cls->open(d, &spec, err, errlen);
}

int plb__dev_thread_start(struct plb__dev *d, char *err, size_t errlen)
{
	return d->cls->thread_start ? d->cls->thread_start(d, err, errlen) : 0;
}

void plb__dev_begin(struct plb__dev *d, const struct plb__dev_run *run)
{
	d->run = *run;
	if (d->cls->begin)
		d->cls->begin(d);
}

/* The block the PU thread's kernel runs now, and the copies it reported
 * (plb_report_copies). */
static _Thread_local struct {
	const struct plb_block *b;
	double copy_s;
} cur;

void plb_report_copies(const struct plb_block *blk, double seconds)
{
	if (blk && blk == cur.b && isfinite(seconds) && seconds >= 0)
		cur.copy_s = seconds;
}

/* The kernel's run (or the class's), timed on this thread, with the copies
 * it reports. */
static int timed(struct plb__dev *d, int direct, const struct plb_kernel_class *kc, void *kstate,
		 const struct plb_block *b, double arrive, struct plb__dev_times *t)
{
	cur.b = b;
	cur.copy_s = 0;
	double t0 = plb__now();
	int rc = d->cls->run && !direct ? d->cls->run(d, kc, kstate, b, arrive, t) : kc->run(kstate, b);
	t->busy_s = plb__now() - t0;
	/* the copies the kernel reported, within the block's time, are its
	 * transfer; the rest is compute */
	t->xfer_s = fmin(cur.copy_s, t->busy_s);
	t->exec_s = t->busy_s - t->xfer_s;
	cur.b = NULL;
	return rc;
}

int plb__dev_run(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
		 const struct plb_block *b, double arrive, struct plb__dev_times *t)
{
	t->xfer_at = NAN;
	if (d->cls->own_times)
		return d->cls->run(d, kc, kstate, b, arrive, t);
	return timed(d, 0, kc, kstate, b, arrive, t);
}

int plb__dev_run_task(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
		      const struct plb_block *b, double arrive, struct plb__dev_times *t)
{
	t->xfer_at = NAN;
	if (d->cls->own_times)
		return d->cls->run(d, kc, kstate, b, arrive, t);
	return timed(d, d->cls->on_slot != NULL, kc, kstate, b, arrive, t);
}

int plb__pu_slots(const struct plb__pu_desc *d)
{
	return d->kind == PLB__PU_CPU && d->cores > 1 ? d->cores : 1;
}

int plb__pu_task_type(const struct plb__config *cfg, const struct plb__pu_desc *d)
{
	if (d->model >= 0)
		return (int)cfg->models[d->model].cls;
	return d->kind == PLB__PU_CPU ? 0 : d->kind == PLB__PU_CUDA ? 1 : 2;
}

int plb__dev_on_slot(struct plb__dev *d, int s, void (*fn)(void *), void *arg)
{
	return d->cls->on_slot ? d->cls->on_slot(d, s, fn, arg) : PLB_EINVAL;
}


void plb__dev_close(struct plb__dev *d)
{
	if (d->cls && d->cls->close)
		d->cls->close(d);
}

const struct plb_kernel_class *plb__kernel_class(const struct plb_kernel *k,
						 enum plb_device_class c)
{
	/* a kernel built before a class existed has no such member: none */
	static const struct plb_kernel_class none;
	switch (c) {
#define X(ID, member, since) case PLB_DEV_##ID: return k->abi >= (since) ? &k->member : &none;
	PLB_DEVICE_CLASSES(X)
#undef X
	case PLB_DEV_NCLASS:
		break;
	}
	return NULL;
}

const char *plb__device_class_name(enum plb_device_class c)
{
	static const char *const names[] = {
#define X(ID, member, since) [PLB_DEV_##ID] = #member,
		PLB_DEVICE_CLASSES(X)
#undef X
	};
	return c >= 0 && c < PLB_DEV_NCLASS ? names[c] : "?";
}
