/* The busy PUs (internal.h): when each PU with grants out is free, kept
 * in a compact summary per PU (struct plb__bsum), and the questions the
 * policies ask of them at one instant (who is free last, what they run
 * by a time, whether they could run the pool dry), answered from one scan
 * per instant and change of the grants. */
#include <math.h>

#include "balancer/internal.h"

/* When a PU with grants whose predicted ends lie in [lo, hi] is free,
 * from now: the latest of those ends, where one past its predicted end
 * counts as ending as late again as it already is; a block nothing
 * predicted (a first training block) is as late as it has run: a device
 * 100x slower than the rest is not about to be free. The latest such
 * end is the earliest predicted one's, now + (now - lo) (IEEE sums are
 * monotone), so lo and hi give each grant's answer to the bit. */
static double busy_from(double lo, double hi, double now)
{
	double end = now;
	if (hi > end)
		end = hi;
	if (lo < now) {
		double e = now + (now - lo);
		if (e > end)
			end = e;
	}
	return end - now;
}

void plb__busy_sync(struct plb__balancer *b, int pu)
{
	const struct plb__pu *u = &b->pu[pu];
	struct plb__bsum *s = &b->bs[pu];
	s->lo = INFINITY;
	s->hi = -INFINITY;
	for (int i = 0; i < u->nout; i++) {
		s->lo = fmin(s->lo, u->out[i].pred_end);
		s->hi = fmax(s->hi, u->out[i].pred_end);
	}
	s->busy = !u->lost && u->nout > 0;
	s->lost = u->lost;
	int ready = b->model && plb__model_ready(&b->model[pu]);
	s->rate = ready ? u->rate : 0;
	s->trip_rate = s->rate > 0 ? s->rate / (1 + fmax(0, u->lk_slope) * s->rate) : 0;
	s->t_minb = ready ? plb__model_eval_memo(&b->model[pu], b->p.min_block) : INFINITY;
}

double plb__busy_for(const struct plb__balancer *b, int pu, double now)
{
	const struct plb__bsum *s = &b->bs[pu];
	return s->busy ? busy_from(s->lo, s->hi, now) : 0;
}

/* plb__busy_dry's bracket, opened again: nothing known for the pool. */
static void dry_open(struct plb__busiest *c, uint64_t pool)
{
	c->dry_lo = -INFINITY;
	c->dry_hi = INFINITY;
	c->pool_at = pool;
}

const struct plb__busiest *plb__busy_list(struct plb__balancer *b, double now)
{
	struct plb__busiest *c = &b->busiest;
	if (!(c->now == now && c->epoch == b->epoch)) {
		c->now = now;
		c->epoch = b->epoch;
		c->first = c->second = 0;
		c->who = -1;
		c->nbusy = 0;
		c->rsum = 0;
		dry_open(c, b->pool);
		for (int i = 0; i < b->n; i++) {
			const struct plb__bsum *s = &b->bs[i];
			if (!s->busy)
				continue;
			double t = plb__busy_for(b, i, now);
			c->idx[c->nbusy] = i;
			c->rate[c->nbusy] = s->rate;
			c->rsum += s->rate;
			c->free_in[c->nbusy++] = t;
			if (t > c->first) {
				c->second = c->first;
				c->first = t;
				c->who = i;
			} else if (t > c->second) {
				c->second = t;
			}
		}
	}
	return c;
}

double plb__busy_room(struct plb__balancer *b, int pu, double now, double t)
{
	const struct plb__busiest *c = plb__busy_list(b, now);
	double room = 0;
	for (int k = 0; k < c->nbusy; k++) {
		double d = t - c->free_in[k];
		room += (d > 0 ? d : 0) * c->rate[k];      /* maxsd, no branch to mispredict */
	}
	/* pu itself, where it is busy */
	if (b->pu[pu].nout > 0 && !b->pu[pu].lost && b->model && plb__model_ready(&b->model[pu])) {
		double f = plb__busy_for(b, pu, now);
		if (t > f)
			room -= (t - f) * b->pu[pu].rate;
	}
	return fmax(0, room);
}

int plb__busy_dry(struct plb__balancer *b, int pu, double now, double t)
{
	if (b->pu[pu].nout > 0)
		return plb__busy_room(b, pu, now, t) < (double)b->pool;
	struct plb__busiest *c = &b->busiest;
	plb__busy_list(b, now);
	if (c->pool_at != b->pool)
		dry_open(c, b->pool);
	if (t <= c->dry_lo)
		return 1;
	if (t >= c->dry_hi)
		return 0;
	/* past every busy PU's free time the room is at least (t - first)
	 * times their rates' sum (each term is at least its part of it, and
	 * rounding is monotone); the margin covers the sums' rounding */
	int dry = t > c->first && (t - c->first) * c->rsum >= (1 + 1e-9) * (double)b->pool ?
			  0 : plb__busy_room(b, pu, now, t) < (double)b->pool;
	if (dry)
		c->dry_lo = t;
	else
		c->dry_hi = t;
	return dry;
}

double plb__others_free_in(struct plb__balancer *b, int pu, double now)
{
	const struct plb__busiest *c = plb__busy_list(b, now);
	return pu == c->who ? c->second : c->first;
}

int plb__others_busy(const struct plb__balancer *b, int except)
{
	int mine = except >= 0 ? b->pu[except].nout : 0;
	return b->nout_total - mine > 0;
}
