/* The one loop that drives the balancer (see driver.h): the master's and
 * plbsim's, so that plbsim's figures stand for the runtime. */
#include <stdlib.h>
#include <string.h>

#include "balancer/driver.h"
#include "balancer/tasks.h"

static int b_next(void *s, int pu, double now, struct plb__grant *g)
{
	return plb__balancer_next(s, pu, now, g);
}
static int b_done(void *s, int pu, const struct plb__block_done *d)
{
	return plb__balancer_done(s, pu, d);
}
static int b_lost(void *s, int pu, double now)
{
	return plb__balancer_lost(s, pu, now);
}
static int b_idle(void *s, double now)
{
	return plb__balancer_idle_waits(s, now);
}
const struct plb__source plb__balancer_source = {
	b_next, b_done, b_lost, b_idle, "plb__balancer_next", "plb__balancer_done",
	"plb__balancer_lost",
};

static int t_next(void *s, int pu, double now, struct plb__grant *g)
{
	return plb__tasks_next(s, pu, now, g);
}
static int t_done(void *s, int pu, const struct plb__block_done *d)
{
	return plb__tasks_done(s, pu, d);
}
static int t_lost(void *s, int pu, double now)
{
	return plb__tasks_lost(s, pu, now);
}
static int t_idle(void *s, double now)
{
	return plb__tasks_idle_waits(s, now);
}
const struct plb__source plb__tasks_source = {
	t_next, t_done, t_lost, t_idle, "plb__tasks_next", "plb__tasks_done", "plb__tasks_lost",
};

static int parked(const struct plb__driver *d, int pu)
{
	return (int)(d->parked[pu / 64] >> (pu % 64) & 1);
}

/* Does PU pu count as busy: alive, and holding or waiting for work? */
static int busy(const struct plb__driver *d, int pu)
{
	return !d->pu[pu].lost && (d->pu[pu].nout > 0 || parked(d, pu));
}

static void set_parked(struct plb__driver *d, int pu, int v)
{
	uint64_t bit = (uint64_t)1 << (pu % 64);
	d->busy -= busy(d, pu);
	if (v)
		d->parked[pu / 64] |= bit;
	else
		d->parked[pu / 64] &= ~bit;
	d->busy += busy(d, pu);
}

static void set_nout(struct plb__driver *d, int pu, int n)
{
	d->busy -= busy(d, pu);
	d->pu[pu].nout = n;
	d->busy += busy(d, pu);
}

static void note(struct plb__driver *d, enum plb__driver_op op, int pu, double now, int rc,
		 const struct plb__grant *g, const struct plb__block_done *s)
{
	if (!d->log)
		return;
	struct plb__driver_call c = {.op = op, .pu = pu, .now = now, .rc = rc};
	if (g)
		c.g = *g;
	if (s)
		c.s = *s;
	d->log(d->log_ctx, &c);
}

int plb__driver_init(struct plb__driver *d, plb__balancer_t *b, int npu, int pipeline,
		     int (*grant)(void *, int, const struct plb__grant *),
		     void (*wait)(void *, int), void *ctx)
{
	return plb__driver_init_source(d, &plb__balancer_source, b, npu, pipeline, grant, wait, ctx);
}

int plb__driver_init_source(struct plb__driver *d, const struct plb__source *src, void *s,
			    int npu, int pipeline,
			    int (*grant)(void *, int, const struct plb__grant *),
			    void (*wait)(void *, int), void *ctx)
{
	*d = (struct plb__driver){.src = src, .s = s, .npu = npu, .pipeline = pipeline,
				  .grant = grant, .wait = wait, .ctx = ctx};
	d->pu = calloc((size_t)npu + 1, sizeof *d->pu);
	d->parked = calloc((size_t)(npu + 63) / 64 + 1, sizeof *d->parked);
	d->touched = calloc((size_t)npu + 1, sizeof *d->touched);
	if (!d->pu || !d->parked || !d->touched) {
		plb__driver_fini(d);
		return PLB_ENOMEM;
	}
	return 0;
}

void plb__driver_fini(struct plb__driver *d)
{
	free(d->pu);
	free(d->parked);
	free(d->touched);
	d->pu = NULL;
	d->parked = NULL;
	d->touched = NULL;
}

int plb__driver_poll(struct plb__driver *d, int pu, double now)
{
	struct plb__driver_pu *u = &d->pu[pu];
	set_parked(d, pu, 0);
	while (!u->lost && !u->finished && u->nout < d->pipeline) {
		struct plb__grant g;
		int rc = d->src->next(d->s, pu, now, &g);
		note(d, PLB__DRIVE_NEXT, pu, now, rc, rc == PLB__NEXT_GRANT ? &g : NULL, NULL);
		if (rc == PLB__NEXT_WAIT) {
			set_parked(d, pu, 1);
			if (d->wait)
				d->wait(d->ctx, pu);
			return 0;
		}
		if (rc == PLB__NEXT_DONE) {
			u->finished = 1;
			return 0;
		}
		if (rc != PLB__NEXT_GRANT) {
			d->failed = d->src->next_name;
			return rc < 0 ? rc : PLB_ESTATE;
		}
		set_nout(d, pu, u->nout + 1);
		d->failed = NULL;
		if ((rc = d->grant(d->ctx, pu, &g)))
			return rc;
	}
	return 0;
}

void plb__driver_back(struct plb__driver *d, int pu)
{
	struct plb__driver_pu *u = &d->pu[pu];
	if (u->nout > 0)
		set_nout(d, pu, u->nout - 1);
	if (!u->touched) {
		u->touched = 1;
		d->touched[d->ntouched++] = pu;
	}
}

int plb__driver_done(struct plb__driver *d, int pu, const struct plb__block_done *s)
{
	plb__driver_back(d, pu);
	int rc = d->src->done(d->s, pu, s);
	note(d, PLB__DRIVE_DONE, pu, s->finish, rc, NULL, s);
	d->failed = d->src->done_name;
	return rc;
}

int plb__driver_lost(struct plb__driver *d, int pu, double now)
{
	struct plb__driver_pu *u = &d->pu[pu];
	if (u->lost)
		return 0;
	set_parked(d, pu, 0);
	d->busy -= busy(d, pu);
	u->lost = 1;
	u->nout = 0;
	int rc = d->src->lost(d->s, pu, now);
	note(d, PLB__DRIVE_LOST, pu, now, rc, NULL, NULL);
	d->failed = d->src->lost_name;
	return rc;
}

int plb__driver_parked(struct plb__driver *d, double now)
{
	int idle = d->src->idle_waits(d->s, now);
	note(d, PLB__DRIVE_IDLE, -1, now, idle, NULL, NULL);
	if (idle)
		return 0;
	/* a bit map, not a look at every PU: this runs at every event, and
	 * at 4096 PUs the look was a sixth of the master's time */
	for (int w = 0; w < (d->npu + 63) / 64; w++) {
		uint64_t bits = d->parked[w];
		while (bits) {
			int i = __builtin_ctzll(bits), rc;
			bits &= bits - 1;
			if (parked(d, w * 64 + i) && (rc = plb__driver_poll(d, w * 64 + i, now)))
				return rc;
		}
	}
	return 0;
}

int plb__driver_answer(struct plb__driver *d, double now)
{
	int rc = 0;
	for (int k = 0; k < d->ntouched; k++) {
		int pu = d->touched[k];
		d->pu[pu].touched = 0;
		if (!rc)
			rc = plb__driver_poll(d, pu, now);
	}
	d->ntouched = 0;
	return rc ? rc : plb__driver_parked(d, now);
}

int plb__driver_is_parked(const struct plb__driver *d, int pu)
{
	return parked(d, pu);
}
