/* Re-running a late block (policy->redo_late; struct plb__redo). Once the
 * pool is empty, a PU that asks and has nothing may run a piece of the
 * late block expected to end last, if the PUs free now would, together,
 * run it in under 1/redo_gain of the time it is expected to take still
 * (as late again as it already is: plb__busy_for). The pieces go in
 * order from the block's start, each planned to end when the PUs that
 * may take pieces, each from when it is free, would together have run
 * the rest of the block (redo_end). Whichever ends first
 * wins, and every unit still counts once: the original, if it ends before
 * any piece (the pieces are then void); else the pieces, from the first
 * to end (the original is void and the rest of its range, not yet in
 * pieces, goes back to the pool for the policy to grant). */
#include <math.h>

#include "balancer/internal.h"

#define REDO_SLOW 2.0   /* a piece may take at most this times its planned time */

void plb__redo_drop(struct plb__balancer *b)
{
	for (int i = 0; i < b->n; i++)
		for (int k = 0; k < b->pu[i].nout; k++)
			if (b->pu[i].out[k].flags & REC_PIECE)
				b->pu[i].out[k].flags = REC_VOID;
	b->rx.active = 0;
}

int plb__redo_release(struct plb__balancer *b)
{
	for (int i = 0; i < b->n; i++)
		for (int k = 0; k < b->pu[i].nout; k++)
			b->pu[i].out[k].flags &= ~REC_PIECE;
	b->rx.active = 0;
	return b->rx.next < b->rx.end ? plb__pool_put(b, b->rx.next, b->rx.end - b->rx.next) : 0;
}

int plb__redo_won(struct plb__balancer *b)
{
	struct plb__pu *o = &b->pu[b->rx.pu];
	for (int k = 0; k < o->nout; k++)
		if (o->out[k].id == b->rx.id)
			o->out[k].flags = REC_VOID;
	b->st.redo_won++;
	return plb__redo_release(b);
}

void plb__note_rate(struct plb__balancer *b, int pu)
{
	const struct plb__model *m = &b->model[pu];
	double x = fmax((double)b->pu[pu].max_block, b->p.min_block);
	double e = plb__model_ready(m) ? plb__model_eval(m, x) : 0;
	b->pu[pu].rate = e > 0 ? x / e : 0;
}

/* The free PUs' rate together: what they would run a late block's range
 * at, each piece's way back counted (a re-run sends the block's output
 * again: where the link is what made the block late, the pieces are no
 * sooner). */
static double free_rate(const struct plb__balancer *b)
{
	double rate = 0;
	for (int i = 0; i < b->n; i++)
		if (!b->pu[i].lost && b->pu[i].nout == 0)
			rate += b->bs[i].trip_rate;
	return rate;
}

/* When running grant g again pays: past its predicted end by redo_gain
 * times what the free PUs need for it (then it is expected to end, as
 * late again, later than they would). A block without a prediction
 * counts as predicted to end when it started (plb__busy_for): a first
 * training block on a PU far slower than the rest is run again like any.
 * INFINITY for one that cannot be. */
static double redo_from(const struct plb__balancer *b, const struct plb__grant_rec *g, double rate)
{
	if (g->flags || !(rate > 0) || !(b->p.redo_gain > 0))
		return INFINITY;
	return plb__due(g) + b->p.redo_gain * (double)g->units / rate;
}

/* Start re-running the late block expected to end last among those for
 * which it pays now (see above). */
static int redo_start(struct plb__balancer *b, double now)
{
	/* a scan of every grant: once per instant, not once per PU asking
	 * (every waiting PU asks at every event) */
	if (now == b->rx.tried)
		return 0;
	b->rx.tried = now;
	const struct plb__grant_rec *late = NULL;
	double late_end = 0, rate = -1;
	int late_pu = -1;
	for (int i = 0; i < b->n; i++)
		for (int k = 0; k < b->pu[i].nout && !b->pu[i].lost; k++) {
			const struct plb__grant_rec *g = &b->pu[i].out[k];
			if (!(now > plb__due(g)))
				continue;
			if (rate < 0)           /* the sum only once something is late */
				rate = free_rate(b);
			double e = now + (now - plb__due(g));
			if (now >= redo_from(b, g, rate) && e > late_end) {
				late_end = e;
				late = g;
				late_pu = i;
			}
		}
	if (!late)
		return 0;
	b->rx = (struct plb__redo){.active = 1, .pu = late_pu, .id = late->id,
				   .off = late->off, .end = late->off + late->units,
				   .next = late->off, .tried = now, .end_now = NAN};
	return 1;
}

/* When the pieces of the rest of the late block should end: the time T
 * at which the PUs that may take pieces (not the late block's, not lost,
 * not declined), each from when it is free (plb__busy_for), have run the
 * rest at their rates together; the PUs about to be free count, or a
 * block freed at an instant when a few are goes to those few in pieces
 * that take as long as the whole for the cluster (mixed:11 of the
 * robustness bench: two GPUs took 5.5 s pieces of a late block while
 * the six others, free 30-80 ms later, had none). No earlier than the
 * fastest of them takes for a piece of min_block: pieces are min_block
 * at least. b->x holds each one's free time (solve scratch). */
static double redo_end(struct plb__balancer *b, double now)
{
	struct plb__redo *rx = &b->rx;
	/* every PU waiting asks at every event: once per instant and state */
	if (rx->end_epoch == b->epoch && rx->end_now == now)
		return rx->end_t;
	double rest = (double)(rx->end - rx->next), piece = fmin(rest, b->p.min_block);
	double T = INFINITY;
	int any = 0;
	for (int i = 0; i < b->n; i++) {
		const struct plb__bsum *u = &b->bs[i];
		b->x[i] = INFINITY;
		/* rate > 0: a ready model (busy_sync) */
		if (i == rx->pu || u->lost || u->declined == rx->id || !(u->trip_rate > 0))
			continue;
		b->x[i] = now + plb__busy_for(b, i, now);
		/* from above: by then this one alone would have run it, so
		 * the root is below each such time; Newton starts at the least,
		 * not at the slowest PU's, fewer steps (each a scan) away */
		T = fmin(T, b->x[i] + rest / u->trip_rate);
		any = 1;
	}
	/* g(T), the sum of rate x (T - free) over the PUs free before T,
	 * is rest: g is convex, increasing and piecewise linear, so Newton
	 * from above falls to the root, each step past a free time or onto
	 * the root */
	for (int it = 0; it < 64 && any; it++) {
		double r = 0, rxf = 0;
		for (int i = 0; i < b->n; i++)
			if (b->x[i] < T) {
				r += b->bs[i].trip_rate;
				rxf += b->bs[i].trip_rate * b->x[i];
			}
		double next = (rest + rxf) / r;
		if (!(next < T))
			break;
		T = next;
	}
	rx->end_epoch = b->epoch;
	rx->end_now = now;
	/* the fastest one's time for a piece of min_block, where none
	 * would end one by T (a scan that stops at the first that would) */
	double t_min = INFINITY;
	for (int i = 0; i < b->n && any && t_min > T - now; i++)
		if (isfinite(b->x[i]))
			t_min = fmin(t_min, piece == b->p.min_block ? b->bs[i].t_minb :
					    plb__model_eval_memo(&b->model[i], piece));
	rx->end_t = any ? fmax(T, now + t_min) : INFINITY;
	return rx->end_t;
}

double plb__balancer_wake(const plb__balancer_t *b)
{
	if (!b || !b->pol->redo_late || b->pool > 0 || b->rx.active || b->done_units == b->W)
		return INFINITY;
	double t = INFINITY, rate = free_rate(b);
	for (int i = 0; i < b->n; i++)
		for (int k = 0; k < b->pu[i].nout && !b->pu[i].lost; k++)
			t = fmin(t, redo_from(b, &b->pu[i].out[k], rate));
	return t;
}

int plb__balancer_idle_waits(const plb__balancer_t *b, double now)
{
	if (!b || b->pool > 0 || b->done_units == b->W)
		return 0;
	if (!b->pol->redo_late)
		return 1;
	/* redo_next: with pieces out, any free PU may take the next; with
	 * none, redo_start finds a block only at or past plb__balancer_wake
	 * (the same rates, the same grants) */
	if (b->rx.active)
		return b->rx.next >= b->rx.end;
	return now < plb__balancer_wake(b);
}

int plb__redo_next(struct plb__balancer *b, int pu, double now, struct plb__grant *g)
{
	if (!b->model || !plb__model_ready(&b->model[pu]) || (b->rx.active && pu == b->rx.pu))
		return PLB__NEXT_WAIT;
	const struct plb__model *m = &b->model[pu];
	if (!b->rx.active && !redo_start(b, now))
		return PLB__NEXT_WAIT;
	struct plb__pu *u = &b->pu[pu];
	if (pu == b->rx.pu || b->rx.next >= b->rx.end || b->bs[pu].declined == b->rx.id)
		return PLB__NEXT_WAIT;
	uint64_t rest = b->rx.end - b->rx.next;
	double t_piece = redo_end(b, now) - now;
	/* within the sizes this PU has run: a fit says little beyond them,
	 * and a cliff may lie there */
	double most = fmin(fmin((double)rest, plb__model_cap(m)), (double)b->pu[pu].max_block);
	double x = fmax(plb__model_inverse(m, t_piece, most), b->p.min_block);
	uint64_t want = x >= (double)rest ? rest : (uint64_t)llround(x);
	if (want < 1)
		want = 1;
	if (rest - want < (uint64_t)b->p.min_block)
		want = rest;
	/* a PU too slow for a piece in about the planned time (a large fixed
	 * cost, a min_block that takes long) would hold the range up once
	 * the pieces win: it leaves the pieces to the others */
	double pred = plb__model_eval(m, (double)want);
	if (!(pred <= REDO_SLOW * t_piece)) {
		/* its model cannot change while it waits: do not ask again */
		b->bs[pu].declined = b->rx.id;
		b->rx.end_now = NAN;    /* redo_end: one PU fewer */
		return PLB__NEXT_WAIT;
	}
	struct plb__grant_rec *rec = &u->out[u->nout];
	*rec = (struct plb__grant_rec){.id = b->next_id++, .off = b->rx.next, .units = want,
				       .kind = PLB__GRANT_REDO, .t_grant = now, .pred_s = pred,
				       .pred_end = now + pred, .flags = REC_PIECE};
	b->rx.next += want;
	u->nout++;
	plb__busy_sync(b, pu);
	b->nout_total++;
	b->epoch++;
	b->st.blocks++;
	b->st.redo_blocks++;
	*g = (struct plb__grant){.id = rec->id, .pu = pu, .offset = rec->off,
				.units = want, .kind = PLB__GRANT_REDO, .predicted_s = pred};
	return PLB__NEXT_GRANT;
}
