/* hdss: the Heterogeneous Dynamic Self-Scheduler (Belviranli, Bhuyan,
 * Gupta, ACM TACO 9(4), 2013), as the PLB papers ran it. Adaptive phase:
 * each PU runs hdss_samples blocks of doubling size (sized so that every
 * PU's fit within hdss_adaptive_fraction of W); its throughput is fitted
 * against block size with a logarithmic curve thr(x) = a ln x + b by least
 * squares after each of them, and its weight is the saturated throughput
 * (the curve at four times its largest block, kept within [1, 1.5] times
 * the best throughput it showed), settled once it has all its samples. A
 * PU that finishes the phase before the others repeats its last size
 * rather than idle.
 *
 * The phase ends when every PU's weight has settled, or once its blocks
 * hold hdss_adaptive_fraction of W: a PU far slower than the rest, still
 * in its first blocks, does not keep the others training to the end of
 * the job (on half of config/sim every block had been a training block).
 * Completion phase: each block is the PU's weight share of remaining /
 * hdss_div, so blocks decrease like guided self-scheduling; a PU whose
 * weight is not settled takes part with the weight of the samples it has,
 * and one with none yet finishes its training block first. */
#include <math.h>
#include <stdlib.h>

#include "balancer/internal.h"

struct hdss_pu {
	int nblocks;            /* adaptive blocks granted */
	int nsamples;
	double size;            /* its current adaptive block size */
	double lx[64], thr[64]; /* ln(size), throughput per adaptive block */
	double weight;          /* from its samples so far; 0 before the first */
	int settled;            /* its weight is from hdss_samples samples */
};

struct hdss_state {
	struct hdss_pu *pu;
	int settled;            /* PUs alive whose weight has settled */
	double wsum;            /* the weights of the PUs alive */
	double trained;         /* units the adaptive phase granted */
	int completion;         /* the adaptive phase is over */
};

static int hdss_init(struct plb__balancer *b)
{
	struct hdss_state *h = b->ps;
	h->pu = calloc((size_t)b->n, sizeof *h->pu);
	if (!h->pu)
		return PLB_ENOMEM;
	int k = (int)b->p.hdss_samples;
	/* the doubling sizes of all PUs must fit the adaptive fraction */
	double cap = b->p.hdss_adaptive_fraction * (double)b->W /
		     ((double)b->n * (pow(2, k) - 1));
	double x = fmin(b->p.initial_block, cap);
	for (int i = 0; i < b->n; i++)
		h->pu[i].size = fmax(x, b->p.min_block);
	return 0;
}

static void hdss_fini(struct plb__balancer *b)
{
	struct hdss_state *h = b->ps;
	free(h->pu);
}

static double fit_weight(const struct hdss_pu *P)
{
	int n = P->nsamples;
	double mx = 0, my = 0, sxx = 0, sxy = 0, best = 0, lmax = 0;
	for (int i = 0; i < n; i++) {
		mx += P->lx[i];
		my += P->thr[i];
		best = fmax(best, P->thr[i]);
		lmax = fmax(lmax, P->lx[i]);
	}
	mx /= n;
	my /= n;
	for (int i = 0; i < n; i++) {
		sxx += (P->lx[i] - mx) * (P->lx[i] - mx);
		sxy += (P->lx[i] - mx) * (P->thr[i] - my);
	}
	double a = sxx > 0 ? sxy / sxx : 0;
	double w = my + a * (lmax + log(4.0) - mx);
	return fmin(fmax(w, best), 1.5 * best);
}

static int hdss_next(struct plb__balancer *b, int pu, double now,
		     double *units, enum plb__grant_kind *kind, int *step)
{
	struct hdss_state *h = b->ps;
	struct hdss_pu *P = &h->pu[pu];
	int k = (int)b->p.hdss_samples;
	*step = 0;
	if (!h->completion && (h->settled >= b->alive ||
			       h->trained >= b->p.hdss_adaptive_fraction * (double)b->W))
		h->completion = 1;
	if (!h->completion || P->weight == 0) {
		if (P->nblocks >= k && b->pu[pu].nout > 0)
			return PLB__NEXT_WAIT;
		if (P->nblocks < k && P->nblocks > P->nsamples)
			return PLB__NEXT_WAIT;   /* sizes double: needs the sample */
		*units = P->size;
		*kind = PLB__GRANT_TRAINING;
		h->trained += P->size;
		if (P->nblocks < k - 1)
			P->size *= 2;
		P->nblocks++;
		return PLB__NEXT_GRANT;
	}
	*step = 1;
	*units = fmax(b->p.min_block,
		      P->weight / h->wsum * (double)b->pool / b->p.hdss_div);
	*kind = PLB__GRANT_REGULAR;
	return PLB__NEXT_GRANT;
}

static void hdss_done(struct plb__balancer *b, int pu,
		      const struct plb__grant_rec *g, const struct plb__block_done *s)
{
	struct hdss_state *h = b->ps;
	struct hdss_pu *P = &h->pu[pu];
	if (g->kind != PLB__GRANT_TRAINING || P->nsamples >= 64)
		return;
	double t = fmax(s->exec_s + s->xfer_s, 1e-12);
	P->lx[P->nsamples] = log((double)g->units);
	P->thr[P->nsamples] = (double)g->units / t;
	P->nsamples++;
	if (P->settled || b->pu[pu].lost)
		return;
	/* every sample refits the weight until it has them all */
	h->wsum -= P->weight;
	P->weight = fit_weight(P);
	h->wsum += P->weight;
	if (P->nsamples >= (int)b->p.hdss_samples) {
		P->settled = 1;
		h->settled++;
	}
}

static void hdss_lost(struct plb__balancer *b, int pu)
{
	struct hdss_state *h = b->ps;
	h->settled -= h->pu[pu].settled;
	h->wsum -= h->pu[pu].weight;
	h->pu[pu].weight = 0;
	h->pu[pu].settled = 0;
}

const struct plb__policy plb__policy_hdss = {
	.name = "hdss",
	.doc = "HDSS: adaptive phase with log-fitted throughput weights, then weighted guided blocks",
	.state_size = sizeof(struct hdss_state),
	.init = hdss_init,
	.fini = hdss_fini,
	.next = hdss_next,
	.done = hdss_done,
	.lost = hdss_lost,
};
