/* static: one profiling block per PU, then the rest of the domain split in
 * one block per PU, proportional to the profiled rates (the "static"
 * baseline of PLB-HeC: speeds measured once, never revised). */
#include <stdlib.h>

#include "balancer/internal.h"

struct static_pu {
	int state;              /* 0 nothing, 1 profiling, 2 profiled, 3 got its split */
	double rate;            /* units per second in the profiling block */
};

struct static_state {
	struct static_pu *pu;
	int profiled;           /* PUs alive and profiled */
	int split_done;
	uint64_t split_R;       /* pool when the split was made */
	double rate_sum;
};

static int static_init(struct plb__balancer *b)
{
	struct static_state *s = b->ps;
	s->pu = calloc((size_t)b->n, sizeof *s->pu);
	return s->pu ? 0 : PLB_ENOMEM;
}

static void static_fini(struct plb__balancer *b)
{
	struct static_state *s = b->ps;
	free(s->pu);
}

static int static_next(struct plb__balancer *b, int pu, double now,
		       double *units, enum plb__grant_kind *kind, int *step)
{
	struct static_state *s = b->ps;
	struct static_pu *p = &s->pu[pu];
	*step = 0;
	if (p->state == 0) {
		p->state = 1;
		*units = plb__first_block(b);
		*kind = PLB__GRANT_TRAINING;
		return PLB__NEXT_GRANT;
	}
	if (p->state == 1 || s->profiled < b->alive)
		return PLB__NEXT_WAIT;   /* the profiling pass is a barrier */
	if (p->state == 3 && b->pu[pu].nout > 0)
		return PLB__NEXT_WAIT;   /* pipelining: its split is its work */
	if (!s->split_done) {
		s->split_done = 1;
		s->split_R = b->pool;
		s->rate_sum = 0;
		for (int i = 0; i < b->n; i++)
			if (!b->pu[i].lost)
				s->rate_sum += s->pu[i].rate;
	}
	/* its share of the split; later (units returned by a lost PU) a
	 * proportional share of what is left */
	double R = p->state == 2 ? (double)s->split_R : (double)b->pool;
	p->state = 3;
	*units = R * p->rate / s->rate_sum;
	if (*units < b->p.min_block)
		*units = b->p.min_block;
	*kind = PLB__GRANT_REGULAR;
	return PLB__NEXT_GRANT;
}

static void static_done(struct plb__balancer *b, int pu,
			const struct plb__grant_rec *g, const struct plb__block_done *smp)
{
	struct static_state *s = b->ps;
	struct static_pu *p = &s->pu[pu];
	if (p->state == 1) {
		double t = smp->exec_s + smp->xfer_s;
		p->rate = (double)g->units / (t > 1e-12 ? t : 1e-12);
		p->state = 2;
		s->profiled++;
	}
}

static void static_lost(struct plb__balancer *b, int pu)
{
	struct static_state *s = b->ps;
	if (s->pu[pu].state >= 2) {
		s->profiled--;
		s->rate_sum -= s->pu[pu].rate;
	}
	s->pu[pu].state = 3;
	s->pu[pu].rate = 0;
}

const struct plb__policy plb__policy_static = {
	.name = "static",
	.doc = "one profiling block per PU, then one proportional split of the rest",
	.state_size = sizeof(struct static_state),
	.init = static_init,
	.fini = static_fini,
	.next = static_next,
	.done = static_done,
	.lost = static_lost,
};
