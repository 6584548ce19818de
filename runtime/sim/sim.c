/* plbsim's discrete-event engine (see sim.h). Events live in a binary heap
 * ordered by (time, sequence number), so equal times keep their order and a
 * run is reproducible. The engine checks coverage itself, from the ranges the
 * PUs really completed, independently of the balancer's own counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/balancer.h"
#include "balancer/base/clock.h"
#include "balancer/driver.h"
#include "runtime/config/bounds.h"
#include "runtime/config/coverage.h"
#include "runtime/sim/net.h"
#include "runtime/sim/sim.h"

enum ev_type {
	EV_GRANT_ARRIVE, EV_DONE_ARRIVE, EV_FAIL, EV_LOST_NOTICED, EV_WAKE,
	EV_STAGE_END,           /* a coupled PU's stage ends (if ver is its job's) */
	EV_BUSY_ON, EV_BUSY_OFF,/* a culprit's compute stage starts, ends */
	EV_OUT_START,           /* a block's output starts back over the links */
	EV_NET,                 /* a flow ends (if ver is the links') */
};

struct ev {
	double t;
	uint64_t seq;
	int type, pu, slot;
	uint64_t ver;
};

/* A coupled PU's block, stage by stage (its times are not known ahead):
 * granted and on its way (J_WAY: not a queued block yet), its transfer
 * queued and running, its compute queued and running, ended. */
enum { J_WAY, J_XQ, J_X, J_CQ, J_C, J_END };

struct job {
	struct plb__grant g;
	double xs, xe, cs, ce;  /* transfer start/end, compute start/end */
	double sent, arrive;    /* its grant left the master, reached the PU */
	double turn;            /* from the DONE it followed to sent; 0: none */
	int fails;              /* the model's fail_block: its kernel fails */
	/* a coupled PU's: its state, what is left of the running stage in
	 * seconds it would take uncoupled, since when, the factor it runs
	 * slower by, and the version of its end event */
	int state;
	double remain, t_upd, fac;
	uint64_t ver;
};

struct spu {
	const struct plb__devmodel *m;
	struct plb__noise nz;
	double xfer_free, comp_free;
	int dead;
	int kfailed;                    /* its kernel failed (the model's fail_block) */
	struct job jobs[PLB__MAX_GRANTS];
	int used[PLB__MAX_GRANTS];
	double busy, busy_until, last_finish, units;
	long nblocks;
	int begun;                      /* blocks begun (for the model's fail_block) */
	double heard;                   /* its newest DONE, until a grant follows (NAN: none) */
	/* coupling ([node] couple): the rules that slow it (indices into
	 * cfg->couples; any makes its stages fluid), the PUs whose rules
	 * name it, and its compute stages running now */
	int nrule, nvict, computing;
	int *rule, *vict;
};

struct sim {
	const struct plb__config *cfg;
	const struct plb__sim_opts *o;
	double *lost_at;                /* the result's: when each PU died */
	plb__balancer_t *b;
	struct plb__driver d;           /* asks the balancer, as the runtime's master does */
	struct spu *pu;
	int n;
	struct ev *heap;
	int nheap, capheap;
	uint64_t seq;
	double lat;                     /* one-way latency, s */
	double m_free;                  /* master busy until */
	double now;                     /* master's time in the current event */
	double c0;                      /* CPU clock at the event's start */
	double clock_cost;              /* what reading it twice costs (cpu_clock_cost) */
	double m_cpu;                   /* master time charged, seconds */
	long solves0;
	struct { int pu, slot; } *outq; /* grants decided in this event */
	int noutq;
	struct plb__coverage done;
	int finished;
	double makespan;
	double wake_at;                 /* the earliest wake event pending, or INFINITY */
	struct plb__net net;            /* the links, where the scenario has them */
	int use_net;
	double in_b, out_b;             /* bytes of a unit's input and output */
	/* [run] shared_bytes: per node, when they reached it (INFINITY: not
	 * yet; NULL: none to send), and the grants that came before them */
	double *shared_at;
	struct { int pu, slot; } *parked;
	int nparked;
	uint64_t net_ver;               /* the links' changes: an older EV_NET is stale */
	int err;
	char *errbuf;
	size_t errlen;
};

static int push_v(struct sim *s, double t, int type, int pu, int slot, uint64_t ver)
{
	if (s->nheap == s->capheap) {
		int cap = s->capheap ? 2 * s->capheap : 1024;
		struct ev *h = realloc(s->heap, (size_t)cap * sizeof *h);
		if (!h)
			return PLB_ENOMEM;
		s->heap = h;
		s->capheap = cap;
	}
	struct ev e = {t, s->seq++, type, pu, slot, ver};
	int i = s->nheap++;
	while (i > 0) {
		int p = (i - 1) / 2;
		struct ev *q = &s->heap[p];
		if (q->t < e.t || (q->t == e.t && q->seq < e.seq))
			break;
		s->heap[i] = *q;
		i = p;
	}
	s->heap[i] = e;
	return 0;
}

static int push(struct sim *s, double t, int type, int pu, int slot)
{
	return push_v(s, t, type, pu, slot, 0);
}

static int before(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static struct ev pop(struct sim *s)
{
	struct ev top = s->heap[0];
	struct ev last = s->heap[--s->nheap];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap > 0)
		s->heap[i] = last;
	return top;
}

static void trace(struct sim *s, double t, int pu, const char *what,
		  const struct plb__grant *g, double exec_s, double xfer_s)
{
	if (!s->o->csv)
		return;
	fprintf(s->o->csv, "%.9f,%d,%s,%llu,%llu,%llu,%s,%.9f,%.9f\n", t, pu, what,
		g ? (unsigned long long)g->id : 0ULL, g ? (unsigned long long)g->offset : 0ULL,
		g ? (unsigned long long)g->units : 0ULL, g ? plb__grant_kind_name(g->kind) : "",
		exec_s, xfer_s);
}

static void fail(struct sim *s, int rc, const char *what)
{
	if (!s->err) {
		s->err = rc;
		snprintf(s->errbuf, s->errlen, "%s: %s", what, plb_strerror(rc));
	}
}

/* The balancer wants its waiting PUs asked again at plb__balancer_wake (a
 * late block becomes worth running again), event or not: an EV_WAKE then,
 * unless an earlier one is pending (it looks again when it fires). */
static void schedule_wake(struct sim *s, double now)
{
	double w = plb__balancer_wake(s->b);
	if (w > now && w < s->wake_at) {
		if (push(s, w, EV_WAKE, 0, 0))
			fail(s, PLB_ENOMEM, "event queue");
		s->wake_at = w;
	}
}

/* The CPU time two back-to-back reads of the thread's CPU clock span, the
 * median of 31 pairs: what each event's charge holds besides the
 * balancer's work. On a virtual machine the read is a system call (1.3 us
 * on the development VM, against about 20 us of balancer work a block at
 * 4096 PUs), and the runtime's master reads no such clock per event. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double cpu_clock_cost(void)
{
	double d[31];
	for (int i = 0; i < 31; i++) {
		double a = plb__cpu_now();
		d[i] = plb__cpu_now() - a;
	}
	qsort(d, 31, sizeof *d, cmp_double);
	return d[15];
}

/* The links changed: their next end is the one EV_NET to act on. */
static int net_changed(struct sim *s)
{
	int flow;
	double t = plb__net_next(&s->net, &flow);
	s->net_ver++;
	return flow < 0 ? 0 : push_v(s, t, EV_NET, 0, 0, s->net_ver);
}

/* A block's bytes start over the links at t: its input to PU pu (dir
 * down: the grant arrives a latency after the last byte) or its output
 * back (up: the DONE arrives then). */
static int send_bytes(struct sim *s, double t, double bytes, int dir, int pu, int slot)
{
	int f = plb__net_start(&s->net, t, bytes, s->cfg->pus[pu].node, dir, pu, slot);
	return f < 0 ? f : net_changed(s);
}

/* Node k's shared bytes are in at t: the grants that came before them
 * arrive now. */
static int shared_came(struct sim *s, int k, double t)
{
	s->shared_at[k] = t;
	int rc = 0, left = 0;
	for (int i = 0; i < s->nparked; i++) {
		if (s->cfg->pus[s->parked[i].pu].node != k)
			s->parked[left++] = s->parked[i];
		else if (!rc)
			rc = push(s, t, EV_GRANT_ARRIVE, s->parked[i].pu, s->parked[i].slot);
	}
	s->nparked = left;
	return rc;
}

static void on_net(struct sim *s, const struct ev *e)
{
	if (e->ver != s->net_ver)
		return;         /* the links changed since */
	int flow;
	plb__net_next(&s->net, &flow);
	if (flow < 0)
		return;
	plb__net_advance(&s->net, e->t);
	struct plb__net_flow f = s->net.f[flow];
	plb__net_end(&s->net, flow);
	int rc = f.pu < 0 ? shared_came(s, f.slot, e->t + s->lat)
		 : push(s, e->t + s->lat, f.dir == PLB__NET_DOWN ? EV_GRANT_ARRIVE : EV_DONE_ARRIVE,
			f.pu, f.slot);
	if (!rc)
		rc = net_changed(s);
	if (rc)
		fail(s, rc, "event queue");
}

static void master_begin(struct sim *s, double t)
{
	s->now = t > s->m_free ? t : s->m_free;
	struct plb__balancer_stats st;
	plb__balancer_stats(s->b, &st);
	s->solves0 = st.solves;
	s->noutq = 0;
	s->c0 = plb__cpu_now();         /* the master's work starts here */
}

/* Charge the event's balancer work and send the grants it decided. */
static void master_end(struct sim *s)
{
	double cost;
	if (s->o->solve_us >= 0) {
		struct plb__balancer_stats st;
		plb__balancer_stats(s->b, &st);
		cost = (double)(st.solves - s->solves0) * s->o->solve_us * 1e-6;
	} else {
		cost = fmax(0, plb__cpu_now() - s->c0 - s->clock_cost);
	}
	s->m_free = s->now + cost;
	s->m_cpu += cost;
	plb__trace_after(s->o->trace, s->b, -1, s->now);
	for (int i = 0; i < s->noutq; i++) {
		struct spu *p = &s->pu[s->outq[i].pu];
		struct job *j = &p->jobs[s->outq[i].slot];
		j->sent = s->m_free;
		j->turn = isfinite(p->heard) ? s->m_free - p->heard : 0;
		p->heard = NAN;
		int rc = s->use_net && s->in_b > 0
			 ? send_bytes(s, s->m_free, (double)j->g.units * s->in_b, PLB__NET_DOWN,
				      s->outq[i].pu, s->outq[i].slot)
			 : push(s, s->m_free + s->lat, EV_GRANT_ARRIVE, s->outq[i].pu, s->outq[i].slot);
		if (rc)
			fail(s, rc, "event queue");
	}
	schedule_wake(s, s->now);
}

/* The driver's grant hook: the grant leaves at the event's end
 * (master_end). */
static int sim_grant(void *ctx, int pu, const struct plb__grant *g)
{
	struct sim *s = ctx;
	struct spu *p = &s->pu[pu];
	int slot = 0;
	while (slot < PLB__MAX_GRANTS && p->used[slot])
		slot++;
	if (slot == PLB__MAX_GRANTS) {
		fail(s, PLB_ESTATE, "too many grants on one PU");
		return PLB_ESTATE;
	}
	p->used[slot] = 1;
	p->jobs[slot].g = *g;
	p->jobs[slot].state = J_WAY;
	s->outq[s->noutq].pu = pu;
	s->outq[s->noutq++].slot = slot;
	trace(s, s->now, pu, "grant", g, 0, 0);
	if (s->o->on_grant) {
		struct plb__balancer_stats st;
		plb__balancer_stats(s->b, &st);
		s->o->on_grant(s->o->ctx, pu, s->now, (double)g->units, g->kind, st.step);
	}
	return 0;
}

/* The driver's wait hook: a grant after a wait follows no DONE at once. */
static void sim_wait(void *ctx, int pu)
{
	struct sim *s = ctx;
	s->pu[pu].heard = NAN;
}

/* What a driver call answered: an error ends the run. */
static void drove(struct sim *s, int rc)
{
	if (rc && rc != PLB_ESTALE && s->d.failed)
		fail(s, rc, s->d.failed);
	else if (rc && rc != PLB_ESTALE)
		fail(s, rc, "grant");
}

/* A block's compute stage ended at t: its DONE goes back to the master,
 * over the links where its output has bytes. */
static void send_done(struct sim *s, int pu, int slot, double t)
{
	int rc = s->use_net && s->out_b > 0
		 ? push(s, t, EV_OUT_START, pu, slot)
		 : push(s, t + s->lat, EV_DONE_ARRIVE, pu, slot);
	if (rc)
		fail(s, rc, "event queue");
}

/* Coupling: the factor PU pu's stage runs slower by now, the product of
 * its rules for that stage of which some culprit computes. */
static double couple_factor(const struct sim *s, int pu, int stage)
{
	const struct spu *p = &s->pu[pu];
	double f = 1;
	for (int r = 0; r < p->nrule; r++) {
		const struct plb__couple *c = &s->cfg->couples[p->rule[r]];
		if (c->stage != stage)
			continue;
		for (int q = 0; q < c->nculprit; q++)
			if (s->pu[c->culprits[q]].computing > 0) {
				f *= c->factor;
				break;
			}
	}
	return f;
}

static void stage_sched(struct sim *s, int pu, int slot, double t)
{
	struct job *j = &s->pu[pu].jobs[slot];
	if (push_v(s, t + j->remain * j->fac, EV_STAGE_END, pu, slot, ++j->ver))
		fail(s, PLB_ENOMEM, "event queue");
}

/* The running stage of PU pu's job in slot moved on to t at its factor;
 * from t on it runs at the factor its culprits make now. */
static void stage_refactor(struct sim *s, int pu, int slot, double t)
{
	struct job *j = &s->pu[pu].jobs[slot];
	j->remain = fmax(0, j->remain - (t - j->t_upd) / j->fac);
	j->t_upd = t;
	double f = couple_factor(s, pu, j->state == J_X ? PLB__STAGE_XFER : PLB__STAGE_COMPUTE);
	if (f != j->fac) {
		j->fac = f;
		stage_sched(s, pu, slot, t);
	}
}

/* PU q started or stopped computing at t: the stages it slows change pace. */
static void notify(struct sim *s, int q, double t)
{
	const struct spu *p = &s->pu[q];
	for (int v = 0; v < p->nvict; v++) {
		struct spu *vp = &s->pu[p->vict[v]];
		for (int k = 0; k < PLB__MAX_GRANTS && !vp->dead; k++)
			if (vp->used[k] && (vp->jobs[k].state == J_X || vp->jobs[k].state == J_C))
				stage_refactor(s, p->vict[v], k, t);
	}
}

/* A coupled PU's next stage of kind `want` (J_X from J_XQ, or J_C from
 * J_CQ) starts at t, if none of that kind runs: the earliest arrived
 * block waiting for it. */
static void stage_start(struct sim *s, int pu, int want, double t)
{
	struct spu *p = &s->pu[pu];
	int pick = -1;
	for (int k = 0; k < PLB__MAX_GRANTS; k++) {
		if (!p->used[k])
			continue;
		if (p->jobs[k].state == want)
			return;
		if (p->jobs[k].state == want - 1 &&
		    (pick < 0 || p->jobs[k].arrive < p->jobs[pick].arrive))
			pick = k;
	}
	if (pick < 0 || p->dead)
		return;
	struct job *j = &p->jobs[pick];
	double u = (double)j->g.units;
	int stage = want == J_X ? PLB__STAGE_XFER : PLB__STAGE_COMPUTE;
	const struct plb__curve_spec *c = want == J_X ? &p->m->transfer : &p->m->compute;
	*(want == J_X ? &j->xs : &j->cs) = t;
	j->state = want;
	j->remain = plb__devmodel_stage(p->m, &p->nz, stage, t, plb__curve_spec_eval(c, u)) - t;
	j->t_upd = t;
	j->fac = couple_factor(s, pu, stage);
	stage_sched(s, pu, pick, t);
	if (want == J_C) {
		p->computing++;
		notify(s, pu, t);
	}
}

static void on_stage_end(struct sim *s, const struct ev *e)
{
	struct spu *p = &s->pu[e->pu];
	struct job *j = &p->jobs[e->slot];
	if (!p->used[e->slot] || e->ver != j->ver || p->dead)
		return;
	if (j->state == J_X) {
		j->xe = e->t;
		j->state = J_CQ;
		stage_start(s, e->pu, J_X, e->t);
		stage_start(s, e->pu, J_C, e->t);
		return;
	}
	j->ce = e->t;
	j->state = J_END;
	p->computing--;
	notify(s, e->pu, e->t);
	double b0 = fmax(j->xs, p->busy_until), b1 = fmin(j->ce, p->m->fail_t);
	if (b1 > b0) {
		p->busy += b1 - b0;
		p->busy_until = b1;
	}
	if (j->ce <= p->m->fail_t)
		send_done(s, e->pu, e->slot, j->ce);
	stage_start(s, e->pu, J_C, e->t);
}

static void on_grant_arrive(struct sim *s, const struct ev *e)
{
	struct spu *p = &s->pu[e->pu];
	struct job *j = &p->jobs[e->slot];
	if (p->dead)
		return;         /* sent to a dead PU: lost until the master notices */
	double shared_in = s->shared_at ? s->shared_at[s->cfg->pus[e->pu].node] : 0;
	if (e->t < shared_in) {
		/* a grant with no bytes of its own, before the shared bytes: it
		 * arrives with them (parked until they are in, if they are not) */
		if (isfinite(shared_in)) {
			if (push(s, shared_in, EV_GRANT_ARRIVE, e->pu, e->slot))
				fail(s, PLB_ENOMEM, "event queue");
			return;
		}
		void *q = realloc(s->parked, (size_t)(s->nparked + 1) * sizeof *s->parked);
		if (!q) {
			fail(s, PLB_ENOMEM, "parked grants");
			return;
		}
		s->parked = q;
		s->parked[s->nparked].pu = e->pu;
		s->parked[s->nparked++].slot = e->slot;
		return;
	}
	j->arrive = e->t;
	const struct plb__devmodel *m = p->m;
	if (p->nrule) {
		/* coupled: stage by stage, at the pace its culprits allow */
		j->fails = ++p->begun == m->fail_block;
		j->state = J_XQ;
		stage_start(s, e->pu, J_X, e->t);
		return;
	}
	double u = (double)j->g.units;
	double G = plb__curve_spec_eval(&m->transfer, u);
	double F = plb__curve_spec_eval(&m->compute, u);
	j->xs = fmax(e->t, p->xfer_free);
	j->xe = plb__devmodel_stage(m, &p->nz, PLB__STAGE_XFER, j->xs, G);
	p->xfer_free = j->xe;
	j->cs = fmax(j->xe, p->comp_free);
	j->ce = plb__devmodel_stage(m, &p->nz, PLB__STAGE_COMPUTE, j->cs, F);
	p->comp_free = j->ce;
	j->fails = ++p->begun == m->fail_block;
	double b0 = fmax(j->xs, p->busy_until), b1 = fmin(j->ce, m->fail_t);
	if (b1 > b0) {
		p->busy += b1 - b0;
		p->busy_until = b1;
	}
	if (j->ce <= m->fail_t)
		send_done(s, e->pu, e->slot, j->ce);
	/* a culprit: the PUs it slows hear when it computes */
	if (p->nvict && j->cs < m->fail_t && (push(s, j->cs, EV_BUSY_ON, e->pu, e->slot) ||
					      push(s, fmin(j->ce, m->fail_t), EV_BUSY_OFF, e->pu, e->slot)))
		fail(s, PLB_ENOMEM, "event queue");
}

static void on_lost_noticed(struct sim *s, const struct ev *e);

static void on_done_arrive(struct sim *s, const struct ev *e)
{
	struct spu *p = &s->pu[e->pu];
	struct job *j = &p->jobs[e->slot];
	if (p->kfailed) {
		/* a pipelined block of a PU whose kernel failed: the master
		 * took the PU out and ignores what it still sends (a PU that
		 * died by its fail time sent its last reports before) */
		p->used[e->slot] = 0;
		return;
	}
	if (j->fails) {
		/* its kernel failed on this block (the model's fail_block): the
		 * master hears it with the block and takes the PU out, as the
		 * runtime does */
		p->dead = p->kfailed = 1;
		s->lost_at[e->pu] = e->t;
		p->used[e->slot] = 0;
		plb__driver_back(&s->d, e->pu);
		trace(s, e->t, e->pu, "fail", &j->g, 0, 0);
		plb__trace_instant(s->o->trace, e->pu, e->t, "kernel failed", "the model's fail_block");
		on_lost_noticed(s, e);
		return;
	}
	master_begin(s, e->t);
	/* its round trip outside the PU, as the runtime measures it */
	double way = (s->now - j->sent) - (j->ce - j->arrive);
	struct plb__block_done smp = {.grant_id = j->g.id, .exec_s = j->ce - j->cs,
				 .xfer_s = j->xe - j->xs, .finish = s->now,
				 .link_s = (way > 0 ? way : 0) + j->turn};
	p->heard = s->now;
	int rc = plb__driver_done(&s->d, e->pu, &smp);
	p->used[e->slot] = 0;
	if (rc == 0 || rc == PLB_ESTALE) {
		struct plb__trace_block tb = {
			.pu = e->pu, .id = j->g.id, .offset = j->g.offset, .units = j->g.units,
			.kind = plb__grant_kind_name(j->g.kind), .predicted_s = j->g.predicted_s,
			.xfer_start = j->xs, .xfer_end = j->xe, .start = j->cs, .end = j->ce,
			.dropped = rc == PLB_ESTALE};
		plb__trace_block(s->o->trace, &tb);
		plb__trace_after(s->o->trace, s->b, e->pu, s->now);
	}
	if (rc == 0) {
		if (plb__coverage_add(&s->done, j->g.offset, j->g.units)) {
			fail(s, PLB_ENOMEM, "coverage record");
			return;
		}
		p->units += (double)j->g.units;
		p->last_finish = j->ce;
		p->nblocks++;
		trace(s, s->now, e->pu, "done", &j->g, smp.exec_s, smp.xfer_s);
	} else if (rc == PLB_ESTALE) {
		trace(s, s->now, e->pu, "stale", &j->g, smp.exec_s, smp.xfer_s);
	} else {
		drove(s, rc);
	}
	if (plb__balancer_finished(s->b) && !s->finished) {
		s->finished = 1;
		s->makespan = s->now;
	}
	drove(s, plb__driver_answer(&s->d, s->now));
	master_end(s);
}

static void on_lost_noticed(struct sim *s, const struct ev *e)
{
	master_begin(s, e->t);
	drove(s, plb__driver_lost(&s->d, e->pu, s->now));
	trace(s, s->now, e->pu, "lost", NULL, 0, 0);
	plb__trace_instant(s->o->trace, e->pu, s->now, "lost", "the master took the PU out; its blocks went back to the pool");
	drove(s, plb__driver_answer(&s->d, s->now));
	master_end(s);
}

static void fill_report(struct sim *s, struct plb__sim_result *res)
{
	const struct plb__config *cfg = s->cfg;
	struct plb__balancer_stats st;
	plb__balancer_stats(s->b, &st);
	struct plb__report *r = &res->rep;
	r->scenario = cfg->path;
	r->policy = s->o->policy;
	r->seed = s->o->seed;
	r->units = (uint64_t)cfg->units;
	r->units_done = st.units_done;
	r->coverage_ok = s->finished && plb__coverage_ok(&s->done, (uint64_t)cfg->units);
	r->makespan_s = s->finished ? s->makespan : INFINITY;
	double first = INFINITY, last = -INFINITY;
	for (int i = 0; i < s->n; i++) {
		struct spu *p = &s->pu[i];
		double avail = fmin(r->makespan_s, p->m->fail_t);
		/* a block that lost its race to a re-run may still run after the
		 * end: that time is not the run's */
		double busy = p->busy - fmax(0, p->busy_until - avail);
		res->idle[i] = avail > 0 && isfinite(avail) ? fmax(0, 1 - busy / avail) : 1;
		res->units[i] = p->units;
		if (p->nblocks > 0 && p->m->fail_t > r->makespan_s && !plb__balancer_left_out(s->b, i)) {
			first = fmin(first, p->last_finish);
			last = fmax(last, p->last_finish);
		}
	}
	r->imbalance = last >= first && s->finished ? (last - first) / r->makespan_s : NAN;
	r->npu = s->n;
	r->pu_names = (const char *const *)res->names;
	r->idle_frac = res->idle;
	r->lost_at = res->lost_at;
	r->pu_units = res->units;
	plb__report_set_stats(r, &st);
	r->bytes_sent = r->bytes_received = r->resident_bytes = r->unkept_bytes = NAN;
	/* what the simulated master was charged: measured CPU, or --solve-us */
	r->master_cpu_s = s->m_cpu;
	res->stalled = !s->finished;
}

struct node_pus {
	int k, npu;
};

/* More PUs first, then the lower index. */
static int most_pus_first(const void *a, const void *b)
{
	const struct node_pus *x = a, *y = b;
	return x->npu != y->npu ? (x->npu > y->npu ? -1 : 1) : x->k - y->k;
}

/* The links, where the scenario gives a bandwidth and its blocks bytes. */
static int sim_links(struct sim *s)
{
	const struct plb__config *cfg = s->cfg;
	int any = cfg->link_gbps > 0;
	for (int k = 0; k < cfg->nnodes; k++)
		any |= cfg->nodes[k].link_gbps > 0;
	s->in_b = cfg->in_bytes;
	s->out_b = cfg->out_bytes;
	if (!any || !(s->in_b > 0 || s->out_b > 0 || cfg->shared_bytes > 0))
		return 0;
	double *bw = malloc((size_t)cfg->nnodes * sizeof *bw);
	if (!bw)
		return PLB_ENOMEM;
	for (int k = 0; k < cfg->nnodes; k++)
		bw[k] = cfg->nodes[k].link_gbps * 1e9 / 8;
	int rc = plb__net_init(&s->net, cfg->link_gbps * 1e9 / 8, bw, cfg->nnodes);
	free(bw);
	s->use_net = !rc;
	if (rc || !(cfg->shared_bytes > 0))
		return rc;
	/* the shared bytes to every node with PUs, before any grant, one node
	 * after another, those with the most PUs first (as the runtime sends
	 * its STARTs: runtime/core/peers.c) */
	struct node_pus *by = calloc((size_t)cfg->nnodes, sizeof *by);
	if (!by || !(s->shared_at = malloc((size_t)cfg->nnodes * sizeof *s->shared_at))) {
		free(by);
		return PLB_ENOMEM;
	}
	for (int k = 0; k < cfg->nnodes; k++)
		by[k].k = k;
	for (int i = 0; i < s->n; i++)
		by[cfg->pus[i].node].npu++;
	for (int k = 0; k < cfg->nnodes; k++)
		s->shared_at[k] = by[k].npu ? INFINITY : 0;
	qsort(by, (size_t)cfg->nnodes, sizeof *by, most_pus_first);
	for (int j = 0; j < cfg->nnodes && by[j].npu && !rc; j++) {
		int f = plb__net_start_serial(&s->net, 0, cfg->shared_bytes, by[j].k, PLB__NET_DOWN, -1,
					      by[j].k);
		rc = f < 0 ? f : 0;
	}
	free(by);
	return rc ? rc : net_changed(s);
}

static int add_int(int **arr, int *n, int v)
{
	for (int i = 0; i < *n; i++)
		if ((*arr)[i] == v)
			return 0;
	int *a = realloc(*arr, (size_t)(*n + 1) * sizeof *a);
	if (!a)
		return PLB_ENOMEM;
	a[(*n)++] = v;
	*arr = a;
	return 0;
}

/* Each coupled PU's rules, and each culprit's victims. */
static int sim_couple(struct sim *s)
{
	const struct plb__config *cfg = s->cfg;
	for (int r = 0; r < cfg->ncouple; r++) {
		const struct plb__couple *c = &cfg->couples[r];
		struct spu *v = &s->pu[c->victim];
		int *a = realloc(v->rule, (size_t)(v->nrule + 1) * sizeof *a);
		if (!a)
			return PLB_ENOMEM;
		a[v->nrule++] = r;
		v->rule = a;
		for (int q = 0; q < c->nculprit; q++)
			if (add_int(&s->pu[c->culprits[q]].vict, &s->pu[c->culprits[q]].nvict, c->victim))
				return PLB_ENOMEM;
	}
	return 0;
}

/* The bound with the links and couplings (bounds.h), and a note that
 * says which of them it holds. */
static int extra_bound(struct sim *s, const struct plb__devmodel **models,
		       struct plb__sim_result *res)
{
	const struct plb__config *cfg = s->cfg;
	int *node = malloc((size_t)s->n * sizeof *node);
	double *bw = malloc((size_t)cfg->nnodes * sizeof *bw);
	if (!node || !bw) {
		free(node);
		free(bw);
		return PLB_ENOMEM;
	}
	for (int i = 0; i < s->n; i++)
		node[i] = cfg->pus[i].node;
	for (int k = 0; k < cfg->nnodes; k++)
		bw[k] = cfg->nodes[k].link_gbps * 1e9 / 8;
	struct plb__bound_extra x = {
		.bw_master = cfg->link_gbps * 1e9 / 8, .bw_node = bw, .nnodes = cfg->nnodes,
		.node = node, .in_bytes = s->use_net ? cfg->in_bytes : 0,
		.out_bytes = s->use_net ? cfg->out_bytes : 0,
		.shared_bytes = s->use_net ? cfg->shared_bytes : 0, .couples = cfg->couples,
		.ncouple = cfg->ncouple};
	double link = 0;
	res->rep.lower_bound_s = plb__bound_lower_extra(models, s->n, cfg->units, cfg->pipeline > 1,
							&x, &link);
	res->rep.link_bound_s = link;
	snprintf(res->note, sizeof res->note, "%s%s%s", res->rep.bound_note,
		 s->use_net ? "; the links carry each unit's bytes" : "",
		 cfg->ncouple ? "; each node's coupled PUs at their best subset" : "");
	res->rep.bound_note = res->note;
	free(node);
	free(bw);
	return 0;
}

int plb__sim_kept_init(struct plb__sim_kept *k, int npu)
{
	*k = (struct plb__sim_kept){.npu = npu};
	k->n = calloc((size_t)npu + 1, sizeof *k->n);
	k->cliff = malloc(((size_t)npu + 1) * sizeof *k->cliff);
	k->s = malloc(((size_t)npu * PLB__SIM_KEEP + 1) * sizeof *k->s);
	if (!k->n || !k->cliff || !k->s) {
		plb__sim_kept_fini(k);
		return PLB_ENOMEM;
	}
	for (int i = 0; i < npu; i++)
		k->cliff[i] = INFINITY;
	return 0;
}

void plb__sim_kept_fini(struct plb__sim_kept *k)
{
	free(k->n);
	free(k->cliff);
	free(k->s);
	*k = (struct plb__sim_kept){0};
}

/* The models an earlier run left (plb__sim_kept), before the first grant. */
static int kept_in(struct sim *s, const struct plb__sim_kept *k, char *err, size_t errlen)
{
	if (k->npu != s->n) {
		snprintf(err, errlen, "models kept for %d PUs given to a run of %d", k->npu, s->n);
		return PLB_EINVAL;
	}
	for (int i = 0; i < s->n; i++) {
		int rc = k->n[i] ? plb__balancer_model_set(s->b, i, &k->s[(size_t)i * PLB__SIM_KEEP],
							   k->n[i], k->cliff[i])
				 : 0;
		if (rc) {
			snprintf(err, errlen, "PU %d: its kept model: %s", i, plb_strerror(rc));
			return rc;
		}
	}
	return 0;
}

static void kept_out(const struct sim *s, struct plb__sim_kept *k)
{
	for (int i = 0; i < s->n; i++) {
		double cliff = INFINITY;
		int n = isnan(s->lost_at[i])
			? plb__balancer_model_get(s->b, i, &k->s[(size_t)i * PLB__SIM_KEEP], PLB__SIM_KEEP, &cliff)
			: 0;
		k->n[i] = n > 0 ? (n < PLB__SIM_KEEP ? n : PLB__SIM_KEEP) : 0;
		k->cliff[i] = cliff;
	}
}

int plb__sim_run(const struct plb__config *cfg, const struct plb__sim_opts *o,
		 struct plb__sim_result *res, char *err, size_t errlen)
{
	double w0 = plb__now();
	memset(res, 0, sizeof *res);
	if (cfg->nops) {
		snprintf(err, errlen, "%s: a pipeline ([op] sections): run it with plb__sim_pipeline (pipe.h)",
			 cfg->path);
		return PLB_ECONFIG;
	}
	if (!(cfg->units >= 1)) {
		snprintf(err, errlen, "%s: [run] units: missing; the simulator needs the domain's size; accepted: an integer >= 1",
			 cfg->path);
		return PLB_ECONFIG;
	}
	struct sim s = {.cfg = cfg, .o = o, .n = cfg->npu, .lat = cfg->latency_us * 1e-6,
			.wake_at = INFINITY, .errbuf = err, .errlen = errlen};
	if (o->solve_us < 0)
		s.clock_cost = cpu_clock_cost();
	int rc = plb__balancer_create(&cfg->params, o->policy, cfg->npu,
				      (uint64_t)cfg->units, &s.b);
	if (rc) {
		snprintf(err, errlen, "cannot create balancer for policy '%s': %s",
			 o->policy, plb_strerror(rc));
		return rc;
	}
	s.pu = calloc((size_t)s.n, sizeof *s.pu);
	s.outq = calloc((size_t)s.n * PLB__MAX_GRANTS + 1, sizeof *s.outq);
	res->names = calloc((size_t)s.n, sizeof *res->names);
	res->idle = calloc((size_t)s.n, sizeof *res->idle);
	res->units = calloc((size_t)s.n, sizeof *res->units);
	res->lost_at = malloc((size_t)s.n * sizeof *res->lost_at + 1);
	for (int i = 0; res->lost_at && i < s.n; i++)
		res->lost_at[i] = NAN;
	s.lost_at = res->lost_at;
	const struct plb__devmodel **models = calloc((size_t)s.n, sizeof *models);
	res->rep.npu = s.n;
	if (!s.pu || !s.outq || !res->names || !res->idle || !res->units || !res->lost_at || !models ||
	    plb__driver_init(&s.d, s.b, s.n, cfg->pipeline, sim_grant, sim_wait, &s)) {
		snprintf(err, errlen, "out of memory");
		rc = PLB_ENOMEM;
		goto out;
	}
	for (int i = 0; i < s.n; i++) {
		struct spu *p = &s.pu[i];
		p->m = models[i] = &cfg->models[cfg->pus[i].model];
		p->heard = NAN;
		plb__noise_seed(&p->nz, o->seed, (uint64_t)i);
		res->names[i] = strdup(cfg->pus[i].name);
		if (!res->names[i]) {
			rc = PLB_ENOMEM;
			goto out;
		}
		if (isfinite(p->m->fail_t) && push(&s, p->m->fail_t, EV_FAIL, i, 0)) {
			rc = PLB_ENOMEM;
			goto out;
		}
	}
	for (int i = 0; i < s.n && !rc; i++)
		rc = plb__balancer_node(s.b, i, cfg->pus[i].node);
	if (!rc && o->kept && (rc = kept_in(&s, o->kept, err, errlen)))
		goto out;
	if (rc || (rc = sim_links(&s)) || (rc = sim_couple(&s))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* the master's link, in units a second (a unit's larger way), busy
	 * with the shared bytes first */
	double ub = fmax(cfg->in_bytes, cfg->out_bytes), bw = cfg->link_gbps * 1e9 / 8;
	int copies = 0;
	for (int k = 0; s.shared_at && k < cfg->nnodes; k++)
		copies += s.shared_at[k] > 0;   /* a node with PUs */
	if (s.use_net && bw > 0 && ub > 0 &&
	    (rc = plb__balancer_link(s.b, bw / ub, cfg->shared_bytes * copies / bw))) {
		snprintf(err, errlen, "the master's link: %s", plb_strerror(rc));
		goto out;
	}
	if (o->csv)
		fprintf(o->csv, "t,pu,event,grant,offset,units,kind,exec_s,xfer_s\n");
	for (int k = 0; k < cfg->nnodes; k++)
		plb__trace_node(o->trace, k, cfg->nodes[k].name);
	for (int i = 0; i < s.n; i++)
		if (plb__trace_pu(o->trace, i, cfg->pus[i].node, cfg->pus[i].name)) {
			rc = PLB_ENOMEM;
			goto out;
		}
	plb__trace_begin(o->trace);
	s.d.log = o->drive_log;
	s.d.log_ctx = o->ctx;
	master_begin(&s, 0);
	for (int i = 0; i < s.n && !s.err; i++)
		drove(&s, plb__driver_poll(&s.d, i, s.now));
	master_end(&s);
	while (s.nheap > 0 && !s.finished && !s.err) {
		struct ev e = pop(&s);
		switch (e.type) {
		case EV_GRANT_ARRIVE:
			on_grant_arrive(&s, &e);
			break;
		case EV_DONE_ARRIVE:
			on_done_arrive(&s, &e);
			break;
		case EV_STAGE_END:
			on_stage_end(&s, &e);
			break;
		case EV_BUSY_ON:
		case EV_BUSY_OFF:
			s.pu[e.pu].computing += e.type == EV_BUSY_ON ? 1 : -1;
			notify(&s, e.pu, e.t);
			break;
		case EV_OUT_START: {
			const struct job *j = &s.pu[e.pu].jobs[e.slot];
			int rc2 = send_bytes(&s, e.t, (double)j->g.units * s.out_b, PLB__NET_UP, e.pu, e.slot);
			if (rc2)
				fail(&s, rc2, "event queue");
			break;
		}
		case EV_NET:
			on_net(&s, &e);
			break;
		case EV_FAIL:
			if (s.pu[e.pu].nrule && s.pu[e.pu].computing) {
				/* a coupled PU's compute stops with it */
				s.pu[e.pu].computing = 0;
				s.pu[e.pu].dead = 1;
				notify(&s, e.pu, e.t);
			}
			s.pu[e.pu].dead = 1;
			res->lost_at[e.pu] = e.t;
			trace(&s, e.t, e.pu, "fail", NULL, 0, 0);
			plb__trace_instant(o->trace, e.pu, e.t, "failed", "the PU died (its model's fail time)");
			if (push(&s, e.t + cfg->fail_detect_ms * 1e-3, EV_LOST_NOTICED, e.pu, 0))
				fail(&s, PLB_ENOMEM, "event queue");
			break;
		case EV_LOST_NOTICED:
			on_lost_noticed(&s, &e);
			break;
		case EV_WAKE:
			if (e.t >= s.wake_at)
				s.wake_at = INFINITY;
			/* events since may have moved it: later (a block ended, the
			 * free PUs' rate changed) it is asked for again then */
			if (plb__balancer_wake(s.b) > e.t) {
				schedule_wake(&s, e.t);
				break;
			}
			master_begin(&s, e.t);
			drove(&s, plb__driver_parked(&s.d, s.now));
			master_end(&s);
			break;
		}
	}
	if (s.err) {
		rc = s.err;
		goto out;
	}
	fill_report(&s, res);
	if (o->kept)
		kept_out(&s, o->kept);
	plb__trace_run(o->trace, 0, s.makespan, "run", o->policy, cfg->units);
	plb__trace_models(o->trace, s.b, s.n, s.makespan);
	res->rep.lower_bound_s = plb__bound_lower(models, s.n, cfg->units, cfg->pipeline > 1);
	res->rep.eq_optimum_s = plb__bound_eq(models, s.n, cfg->units);
	res->rep.bound_note = cfg->pipeline > 1
		? "true curves of the emulated PUs, E = max(F, G): transfers overlap compute"
		: "true curves of the emulated PUs, E = F + G";
	if ((s.use_net || cfg->ncouple) && (rc = extra_bound(&s, models, res)))
		snprintf(err, errlen, "out of memory");
	/* no schedule beats the links or the couplings, one round's neither */
	if (res->rep.eq_optimum_s < res->rep.lower_bound_s)
		res->rep.eq_optimum_s = res->rep.lower_bound_s;
	res->rep.wall_s = plb__now() - w0;
out:
	free(models);
	for (int i = 0; s.pu && i < s.n; i++) {
		free(s.pu[i].rule);
		free(s.pu[i].vict);
	}
	plb__net_fini(&s.net);
	free(s.shared_at);
	free(s.parked);
	free(s.pu);
	free(s.outq);
	plb__driver_fini(&s.d);
	free(s.heap);
	plb__coverage_fini(&s.done);
	plb__balancer_destroy(s.b);
	return rc;
}

void plb__sim_result_fini(struct plb__sim_result *res)
{
	if (res->names)
		for (int i = 0; i < res->rep.npu; i++)
			free(res->names[i]);
	free(res->names);
	free(res->idle);
	free(res->lost_at);
	free(res->units);
	memset(res, 0, sizeof *res);
}
