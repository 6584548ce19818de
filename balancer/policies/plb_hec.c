/* plb-hec: PLB-HeC (Sant'Ana, Cordeiro, de Camargo, CLUSTER 2015), the
 * synchronous predecessor of PLB-HAC. Rounds end with a barrier. Training
 * rounds (the first finisher doubles its block, the others scale by their
 * relative speed) go on until every PU's fit reaches R^2 >= hec_r2 (at
 * least three blocks each, at most eight rounds). Then one equal-time solve
 * splits a round of hec_round_fraction W; the split is reused round after
 * round and re-solved only when a round's finish times spread by more than
 * hec_threshold of the round's length. The last round takes the rest. */
#include <math.h>
#include <stdlib.h>

#include "balancer/internal.h"

struct hec_pu {
	int round;              /* last round it got a block of */
	double t_start, t_end;  /* its block's grant and finish in that round */
	double size;            /* its training block size */
	int out;                /* its block of the round is outstanding */
};

struct hec_state {
	struct hec_pu *pu;
	int round;              /* current round, from 1 */
	int training;           /* still in training rounds */
	int pending;            /* blocks of the current round outstanding */
	double round_start;
	double fast_rate;
	int resolve;            /* re-solve before the next regular round */
	double *x;
};

static int hec_init(struct plb__balancer *b)
{
	struct hec_state *h = b->ps;
	h->pu = calloc((size_t)b->n, sizeof *h->pu);
	h->x = calloc((size_t)b->n, sizeof *h->x);
	if (!h->pu || !h->x)
		return PLB_ENOMEM;
	h->round = 1;
	h->training = 1;
	h->resolve = 1;
	for (int i = 0; i < b->n; i++)
		h->pu[i].size = plb__first_block(b);
	return 0;
}

static void hec_fini(struct plb__balancer *b)
{
	struct hec_state *h = b->ps;
	free(h->pu);
	free(h->x);
}

/* Times that differ by less than this fraction of their mean differ by
 * rounding only. */
#define SPREAD_MIN 1e-9

/* R^2 of PU i's model over its stored samples. */
static double fit_r2(const struct plb__model *m)
{
	if (m->n < 3)
		return 0;
	double mean = 0, ss_tot = 0, ss_res = 0;
	for (int k = 0; k < m->n; k++) {
		const struct plb__sample *s = &m->s[(m->head + k) % m->cap];
		mean += s->exec_s + s->xfer_s;
	}
	mean /= m->n;
	for (int k = 0; k < m->n; k++) {
		const struct plb__sample *s = &m->s[(m->head + k) % m->cap];
		double t = s->exec_s + s->xfer_s;
		double e = t - plb__model_eval(m, s->units);
		ss_tot += (t - mean) * (t - mean);
		ss_res += e * e;
	}
	/* times alike to rounding (a fixed cost that hides the work) leave
	 * nothing to explain: a spread of 1e-17 s over 0.05 s is no reason
	 * to train on */
	return ss_tot > m->n * (SPREAD_MIN * mean) * (SPREAD_MIN * mean) ? 1 - ss_res / ss_tot : 1;
}

/* The barrier has passed: decide what the next round is. */
static int next_round(struct plb__balancer *b, double now)
{
	struct hec_state *h = b->ps;
	double first = INFINITY, last = -INFINITY;
	for (int i = 0; i < b->n; i++) {
		if (b->pu[i].lost || h->pu[i].round != h->round)
			continue;
		first = fmin(first, h->pu[i].t_end);
		last = fmax(last, h->pu[i].t_end);
	}
	double len = last - h->round_start;
	if (h->training) {
		int good = 1;
		for (int i = 0; i < b->n; i++)
			if (!b->pu[i].lost && fit_r2(&b->model[i]) < b->p.hec_r2)
				good = 0;
		if ((good && h->round >= 3) || h->round >= 8)
			h->training = 0;
	} else if (len > 0 && (last - first) > b->p.hec_threshold * len) {
		h->resolve = 1;
	}
	h->round++;
	h->round_start = now;
	if (!h->training) {
		double R = (double)b->pool;
		double S = b->p.hec_round_fraction * (double)b->W;
		if (R < 1.5 * S)
			S = R, h->resolve = 1;  /* last round: split exactly the rest */
		if (h->resolve) {
			int rc = plb__solve(b, S, now, h->x, NULL);
			if (rc)
				return rc;
			h->resolve = 0;
		}
	}
	b->st.step = h->round;
	return 0;
}

static int hec_next(struct plb__balancer *b, int pu, double now, double *units,
		    enum plb__grant_kind *kind, int *step)
{
	struct hec_state *h = b->ps;
	struct hec_pu *P = &h->pu[pu];
	if (P->round == h->round) {
		if (h->pending > 0)
			return PLB__NEXT_WAIT;   /* barrier */
		int rc = next_round(b, now);
		if (rc)
			return rc;
	}
	if (b->pu[pu].nout > 0)
		return PLB__NEXT_WAIT;
	double x;
	if (h->training) {
		x = P->size;
		*kind = PLB__GRANT_TRAINING;
	} else {
		x = h->x[pu];
		*kind = PLB__GRANT_REGULAR;
		if (x < b->p.min_block) {
			if (plb__others_busy(b, pu)) {
				/* a share too small to run: sit this round out */
				P->round = h->round;
				P->t_end = now;
				return PLB__NEXT_WAIT;
			}
			x = b->p.min_block;     /* nobody else would wake us */
		}
	}
	P->round = h->round;
	P->t_start = now;
	P->out = 1;
	h->pending++;
	*units = x;
	*step = h->round;
	return PLB__NEXT_GRANT;
}

static void hec_done(struct plb__balancer *b, int pu,
		     const struct plb__grant_rec *g, const struct plb__block_done *s)
{
	struct hec_state *h = b->ps;
	struct hec_pu *P = &h->pu[pu];
	P->t_end = s->finish;
	if (P->out) {
		P->out = 0;
		h->pending--;
	}
	if (h->training) {
		/* next training size: the first finisher doubles, the others
		 * scale by their speed relative to it */
		double rate = (double)g->units / fmax(s->exec_s + s->xfer_s, 1e-12);
		if (h->fast_rate == 0 || rate > h->fast_rate)
			h->fast_rate = rate;
		P->size = fmax(b->p.min_block, 2 * P->size * fmin(1.0, rate / h->fast_rate));
	}
}

static void hec_lost(struct plb__balancer *b, int pu)
{
	struct hec_state *h = b->ps;
	if (h->pu[pu].out) {
		h->pu[pu].out = 0;
		h->pending--;
	}
	h->pu[pu].round = -1;
	h->resolve = 1;
}

const struct plb__policy plb__policy_hec = {
	.name = "plb-hec",
	.doc = "PLB-HeC: fitted curves, synchronised rounds, re-solve on imbalance",
	.state_size = sizeof(struct hec_state),
	.needs_model = 1,
	.init = hec_init,
	.fini = hec_fini,
	.next = hec_next,
	.done = hec_done,
	.lost = hec_lost,
};
