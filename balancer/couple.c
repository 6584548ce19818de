/* PUs of one node that slow each other: they share memory bandwidth, a
 * PCIe root, the core that feeds a GPU. A PU's rate then depends on what
 * its node-mates run, and a small PU (a CPU team beside a GPU it feeds)
 * may cost the others more than it adds: on an H100 node, host copies
 * into pinned staging slowed while 15 cores ran gemm beside them.
 *
 * Only running the node without the PU tells, and that costs what the PU
 * would have done meanwhile. With [balancer] couple_probe > 0 (0, the
 * default: never), once a PU that adds at most half of its node's rate
 * has a model (its first training block is back) and the others have
 * theirs, the node runs without it: it gets no block (PLB__NEXT_WAIT)
 * while each of the others runs one block of the size of its last, which
 * ran beside it (the same size: a fit extrapolated to another size is off
 * by more than the effect sought), never more than its policy asked for.
 * PU p then ran s_p = t_with / t_without - 1 faster, and the node gains G
 * = sum_p r_p s_p (r_p its rate) without the PU, which adds its own rate
 * r_q. Where G > r_q, and G is beyond what the others' noise could make
 * of nothing (Z times its standard deviation, each PU's from how far its
 * samples stray from its fit), the PU is left out of the run (as a lost
 * PU, without the loss: the report counts it apart); else it goes back to
 * work.
 *
 * One probe a node at a time, each PU at most once. The probes' idle PUs
 * may lose at most couple_probe x W units in all (each its rate times how
 * long the others need to end their blocks out and one more): one that
 * would pass it is not run, one that goes on past 1.5 times what is left
 * of it ends with no decision, and so does one the pool runs dry in.
 * Policy-free: the core holds the PU and sizes the others' blocks; a
 * policy opts in (struct plb__policy.couple_probe). */
#include <math.h>
#include <stdlib.h>

#include "balancer/internal.h"

#define Z 2.0                   /* standard deviations a gain must clear */
#define NOISE_UNKNOWN 0.1       /* a PU's spread before its fit has 3 samples */

int plb__balancer_node(plb__balancer_t *b, int pu, int node)
{
	if (!b || pu < 0 || pu >= b->n || node < 0 || node >= b->n)
		return PLB_EINVAL;
	if (node >= b->nnodes) {
		int *p = realloc(b->probing, (size_t)(node + 1) * sizeof *p);
		if (!p)
			return PLB_ENOMEM;
		b->probing = p;
		double *t = realloc(b->t_idle, (size_t)(node + 1) * sizeof *t);
		if (!t)
			return PLB_ENOMEM;
		b->t_idle = t;
		for (int k = b->nnodes; k <= node; k++) {
			b->probing[k] = -1;
			b->t_idle[k] = NAN;
		}
		b->nnodes = node + 1;
	}
	b->pu[pu].node = node;
	return 0;
}

void plb__couple_free(struct plb__balancer *b)
{
	free(b->probing);
	free(b->t_idle);
}

int plb__balancer_left_out(const plb__balancer_t *b, int pu)
{
	return b && pu >= 0 && pu < b->n && b->pu[pu].left_out;
}

static void probe_stop(struct plb__balancer *b, int k)
{
	int q = b->probing[k];
	b->pu[q].withheld = 0;
	b->probing[k] = -1;
}

double plb__couple_units(struct plb__balancer *b, int pu, double units, int *probe)
{
	struct plb__pu *u = &b->pu[pu];
	int k = u->node;
	*probe = 0;
	/* never more than the policy asked for: its plan holds */
	if (k < 0 || !b->probing || b->probing[k] < 0 || b->probing[k] == pu ||
	    !isfinite(b->t_idle[k]) || u->probe_t != 0 || !(u->with_u > 0) || units < u->with_u)
		return units;
	*probe = 1;
	u->probe_t = -1;        /* out */
	return u->with_u;
}

/* PU p's rate, units a second at its largest block, or 0 without a model. */
static double rate(const struct plb__balancer *b, int p)
{
	const struct plb__model *m = &b->model[p];
	double x = fmax((double)b->pu[p].max_block, b->p.min_block);
	double e = plb__model_ready(m) ? plb__model_eval(m, x) : 0;
	return e > 0 ? x / e : 0;
}

/* A PU that counts in its node's probes: alive, in the run, with a model. */
static int counts(const struct plb__balancer *b, int p)
{
	return !b->pu[p].lost && !b->pu[p].left_out && plb__model_ready(&b->model[p]);
}

/* The probe of node k has held its PU idle longer than its budget left. */
static int too_long(const struct plb__balancer *b, int k, double now)
{
	int q = b->probing[k];
	return isfinite(b->t_idle[k]) &&
	       (now - b->t_idle[k]) * rate(b, q) > 1.5 * (b->p.couple_probe * (double)b->W - b->probe_spent);
}

int plb__couple_gate(struct plb__balancer *b, int pu, double now)
{
	struct plb__pu *u = &b->pu[pu];
	if (u->left_out)
		return u->nout ? PLB__NEXT_WAIT : PLB__NEXT_DONE;
	/* back to work when nothing is left to learn for, or the others'
	 * blocks (or their waits) run longer than was worth it */
	if (u->withheld && (b->pool == 0 || too_long(b, u->node, now)))
		probe_stop(b, u->node);
	return u->withheld ? PLB__NEXT_WAIT : 0;
}

/* Start a probe without q, where it is worth its cost. */
static void maybe_probe(struct plb__balancer *b, int q, double now)
{
	struct plb__pu *u = &b->pu[q];
	int k = u->node;
	if (u->probed || b->probing[k] >= 0 || !counts(b, q) || b->pool == 0)
		return;
	double rq = rate(b, q), R = rq, wait = 0;
	int mates = 0;
	for (int p = 0; p < b->n; p++) {
		const struct plb__pu *v = &b->pu[p];
		if (p == q || v->node != k || v->lost || v->left_out)
			continue;
		if (!plb__model_ready(&b->model[p]) || !(v->last_u > 0))
			return;         /* the others need their models first */
		mates++;
		R += rate(b, p);
		/* its blocks out, then one like its last */
		wait = fmax(wait, plb__busy_for(b, p, now) + v->last_t);
	}
	if (!mates)
		return;
	u->probed = 1;          /* decided now: probe, or never */
	double cost = rq * wait;
	if (!(rq > 0) || rq > 0.5 * R || b->probe_spent + cost > b->p.couple_probe * (double)b->W)
		return;
	b->probe_spent += cost;
	u->withheld = 1;
	b->probing[k] = q;
	b->t_idle[k] = u->nout ? NAN : now;
	for (int p = 0; p < b->n; p++) {
		struct plb__pu *v = &b->pu[p];
		if (v->node == k && p != q) {
			v->with_u = v->last_u;
			v->with_t = v->last_t;
			v->probe_t = 0;
		}
	}
}

/* Every other PU of the probed node has run its block without q: decide. */
static int probe_end(struct plb__balancer *b, int k)
{
	int q = b->probing[k];
	double gain = 0, var = 0;
	for (int p = 0; p < b->n; p++) {
		struct plb__pu *v = &b->pu[p];
		if (p == q || v->node != k || !counts(b, p))
			continue;
		if (!(v->probe_t > 0))
			return 0;       /* not yet */
		double r = rate(b, p), sd = plb__model_spread(&b->model[p]);
		if (!isfinite(sd))
			sd = NOISE_UNKNOWN;
		gain += r * (v->with_t / v->probe_t - 1);
		var += 2 * (r * sd) * (r * sd);        /* a difference of two blocks */
	}
	probe_stop(b, k);
	if (!(gain > rate(b, q)) || !(gain > Z * sqrt(var)))
		return 0;
	/* out of the run, as a lost PU is, but nothing of it is out (it
	 * idled) and it is no loss */
	struct plb__pu *u = &b->pu[q];
	PLB_ASSERT(u->nout == 0);
	u->lost = u->left_out = 1;
	b->alive--;
	b->st.pus_left_out++;
	plb__busy_sync(b, q);
	b->epoch++;
	if (b->pol->lost)
		b->pol->lost(b, q);
	return 0;
}

int plb__couple_done(struct plb__balancer *b, int pu, const struct plb__grant_rec *g,
		     const struct plb__block_done *s)
{
	struct plb__pu *u = &b->pu[pu];
	int k = u->node;
	if (k < 0 || !b->pol->couple_probe || !b->model || !(b->p.couple_probe > 0))
		return 0;
	double t = s->exec_s + s->xfer_s;
	int q = b->probing[k];
	if (g->flags & REC_PROBE) {
		if (q >= 0)
			u->probe_t = t > 0 ? t : -1;
	} else if (t > 0) {
		u->last_u = (double)g->units;
		u->last_t = t;
	}
	if (q == pu && !u->nout)
		b->t_idle[k] = s->finish;       /* it idles from now */
	if (q >= 0 && too_long(b, k, s->finish)) {
		probe_stop(b, k);
		return 0;
	}
	if (q >= 0)
		return probe_end(b, k);
	maybe_probe(b, pu, s->finish);
	return 0;
}

void plb__couple_lost(struct plb__balancer *b, int pu)
{
	int k = b->pu[pu].node;
	if (k >= 0 && b->probing[k] >= 0 && b->probing[k] == pu)
		probe_stop(b, k);
}
