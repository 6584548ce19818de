/* The balancer core: the pool of free ranges, grant bookkeeping, the PUs'
 * models, and the policy vtable dispatch. Policies decide how many units a
 * PU gets; the core decides which ones, so coverage (every unit granted and
 * done exactly once, lost grants granted again) is enforced here, once, for
 * every policy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "balancer/internal.h"

static const struct plb__policy *const policies[] = {
#define X(name) &plb__policy_##name,
	PLB__POLICIES(X)
#undef X
};
#define NPOLICIES (int)(sizeof policies / sizeof policies[0])

const char *plb_policy_name(int i)
{
	return i >= 0 && i < NPOLICIES ? policies[i]->name : NULL;
}

const char *plb_policy_names(char *buf, size_t len, const char *sep)
{
	size_t used = 0;
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < NPOLICIES && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? sep : "", policies[i]->name);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

static const struct plb__policy *find_policy(const char *name)
{
	for (int i = 0; i < NPOLICIES; i++)
		if (strcmp(policies[i]->name, name) == 0)
			return policies[i];
	return NULL;
}

const char *plb_grant_kind_name(enum plb_grant_kind k)
{
	switch (k) {
	case PLB_GRANT_TRAINING:
		return "training";
	case PLB_GRANT_GAP:
		return "gap";
	case PLB_GRANT_REDO:
		return "redo";
	case PLB_GRANT_REGULAR:
		break;
	}
	return "regular";
}

const char *plb_policy_doc(const char *name)
{
	const struct plb__policy *pol = find_policy(name);
	return pol ? pol->doc : NULL;
}

int plb_balancer_create(const struct plb_params *params, const char *policy,
			int npu, uint64_t W, plb_balancer_t **out)
{
	*out = NULL;
	if (npu < 1 || W < 1 || !policy)
		return PLB_EINVAL;
	const struct plb__policy *pol = find_policy(policy);
	if (!pol)
		return PLB_ENOENT;
	struct plb_balancer *b = calloc(1, sizeof *b);
	if (!b)
		return PLB_ENOMEM;
	if (params)
		b->p = *params;
	else
		plb_params_init(&b->p);
	/* A domain of few, costly units (a gene a unit, not an option) would
	 * otherwise train in blocks worth much of the run: no block floor
	 * above the first blocks' cap, W / (train_div * PUs). */
	double grain = floor((double)W / (b->p.train_div * npu));
	if (b->p.min_block > grain)
		b->p.min_block = grain >= 1 ? grain : 1;
	b->pol = pol;
	b->n = npu;
	b->W = W;
	b->alive = npu;
	b->next_id = 1;
	b->rx.tried = NAN;
	b->busiest.now = NAN;           /* nothing scanned yet */
	b->pu = calloc((size_t)npu, sizeof *b->pu);
	b->ef = calloc((size_t)npu, sizeof *b->ef);
	b->ef_pu = calloc((size_t)npu, sizeof *b->ef_pu);
	b->x = calloc((size_t)npu, sizeof *b->x);
	b->busiest.idx = calloc((size_t)npu, sizeof *b->busiest.idx);
	b->busiest.free_in = calloc((size_t)npu, sizeof *b->busiest.free_in);
	b->busiest.rate = calloc((size_t)npu, sizeof *b->busiest.rate);
	b->bs = calloc((size_t)npu, sizeof *b->bs);
	b->capfree = 8;
	b->free = malloc((size_t)b->capfree * sizeof *b->free);
	if (!b->pu || !b->ef || !b->ef_pu || !b->x || !b->busiest.idx || !b->busiest.free_in ||
	    !b->busiest.rate || !b->bs || !b->free)
		goto err;
	b->free[0] = (struct plb__range){0, W};
	b->nfree = 1;
	b->pool = W;
	if (pol->needs_model) {
		b->model = calloc((size_t)npu, sizeof *b->model);
		if (!b->model)
			goto err;
		for (int i = 0; i < npu; i++)
			if (plb__model_init(&b->model[i], (double)W, &b->p) != 0)
				goto err;
	}
	if (pol->state_size && !(b->ps = calloc(1, pol->state_size)))
		goto err;
	if (pol->init && pol->init(b) != 0)
		goto err;       /* fini frees what init got */
	*out = b;
	return 0;
err:
	plb_balancer_destroy(b);
	return PLB_ENOMEM;
}

void plb_balancer_destroy(plb_balancer_t *b)
{
	if (!b)
		return;
	if (b->pol && b->pol->fini && b->ps)   /* no state: init never ran */
		b->pol->fini(b);
	if (b->model)
		for (int i = 0; i < b->n; i++)
			plb__model_fini(&b->model[i]);
	free(b->model);
	free(b->ps);
	free(b->pu);
	free(b->ef);
	free(b->ef_pu);
	free(b->x);
	free(b->busiest.idx);
	free(b->busiest.free_in);
	free(b->busiest.rate);
	free(b->bs);
	free(b->free);
	plb__place_free(b);
	free(b);
}

/* Take up to `want` units of free range fi from `at` on (in it). A leftover
 * after them smaller than min_block is not left behind: it goes with this
 * grant. Units left before `at` stay free (the caller made room in b->free
 * for the split). */
static struct plb__range pool_cut(struct plb_balancer *b, int fi, uint64_t at, uint64_t want)
{
	struct plb__range *r = &b->free[fi];
	PLB_ASSERT(want > 0 && at >= r->off && at < r->off + r->len);
	uint64_t before = at - r->off, room = r->len - before;
	uint64_t u = want < room ? want : room;
	if (room - u < (uint64_t)b->p.min_block)
		u = room;
	uint64_t after = room - u;
	if (before && after) {
		PLB_ASSERT(b->nfree < b->capfree);
		memmove(&b->free[fi + 2], &b->free[fi + 1], (size_t)(b->nfree - fi - 1) * sizeof *b->free);
		b->free[fi + 1] = (struct plb__range){at + u, after};
		r->len = before;
		b->nfree++;
	} else if (before) {
		r->len = before;
	} else if (after) {
		r->off += u;
		r->len = after;
	} else {
		memmove(&b->free[fi], &b->free[fi + 1], (size_t)(b->nfree - fi - 1) * sizeof *b->free);
		b->nfree--;
	}
	b->pool -= u;
	b->granted += u;
	return (struct plb__range){at, u};
}

/* Room for one more free range. 0 or PLB_ENOMEM. */
static int free_room(struct plb_balancer *b)
{
	if (b->nfree < b->capfree)
		return 0;
	int cap = b->capfree * 2;
	struct plb__range *nf = realloc(b->free, (size_t)cap * sizeof *nf);
	if (!nf)
		return PLB_ENOMEM;
	b->free = nf;
	b->capfree = cap;
	return 0;
}

/* Return a range to the pool, keeping it sorted and merged. */
static int pool_put(struct plb_balancer *b, uint64_t off, uint64_t len)
{
	if (free_room(b))
		return PLB_ENOMEM;
	int i = 0;
	while (i < b->nfree && b->free[i].off < off)
		i++;
	PLB_ASSERT(i == 0 || b->free[i - 1].off + b->free[i - 1].len <= off);
	PLB_ASSERT(i == b->nfree || off + len <= b->free[i].off);
	memmove(&b->free[i + 1], &b->free[i], (size_t)(b->nfree - i) * sizeof *b->free);
	b->free[i] = (struct plb__range){off, len};
	b->nfree++;
	/* merge with the neighbours */
	if (i + 1 < b->nfree && b->free[i].off + b->free[i].len == b->free[i + 1].off) {
		b->free[i].len += b->free[i + 1].len;
		memmove(&b->free[i + 1], &b->free[i + 2], (size_t)(b->nfree - i - 2) * sizeof *b->free);
		b->nfree--;
	}
	if (i > 0 && b->free[i - 1].off + b->free[i - 1].len == b->free[i].off) {
		b->free[i - 1].len += b->free[i].len;
		memmove(&b->free[i], &b->free[i + 1], (size_t)(b->nfree - i - 1) * sizeof *b->free);
		b->nfree--;
	}
	b->pool += len;
	b->granted -= len;
	return 0;
}

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

/* PU pu's entry in b->bs, after a change to its grants, model or rate. */
static void busy_sync(struct plb_balancer *b, int pu)
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
	s->t_minb = ready ? plb__model_eval_memo(&b->model[pu], b->p.min_block) : INFINITY;
}

double plb__busy_for(const struct plb_balancer *b, int pu, double now)
{
	const struct plb__bsum *s = &b->bs[pu];
	return s->busy ? busy_from(s->lo, s->hi, now) : 0;
}

double plb__first_block(const struct plb_balancer *b)
{
	double cap = (double)b->W / (b->p.train_div * b->n);
	double x = b->p.initial_block < cap ? b->p.initial_block : cap;
	return x > b->p.min_block ? x : b->p.min_block;
}

/* plb__busy_dry's bracket, opened again: nothing known for the pool. */
static void dry_open(struct plb__busiest *c, uint64_t pool)
{
	c->dry_lo = -INFINITY;
	c->dry_hi = INFINITY;
	c->pool_at = pool;
}

const struct plb__busiest *plb__busy_list(struct plb_balancer *b, double now)
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

double plb__busy_room(struct plb_balancer *b, int pu, double now, double t)
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

int plb__busy_dry(struct plb_balancer *b, int pu, double now, double t)
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

double plb__others_free_in(struct plb_balancer *b, int pu, double now)
{
	const struct plb__busiest *c = plb__busy_list(b, now);
	return pu == c->who ? c->second : c->first;
}

int plb__others_busy(const struct plb_balancer *b, int except)
{
	int mine = except >= 0 ? b->pu[except].nout : 0;
	return b->nout_total - mine > 0;
}

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
#define REDO_SLOW 2.0   /* a piece may take at most this times its planned time */

static void redo_drop(struct plb_balancer *b)
{
	for (int i = 0; i < b->n; i++)
		for (int k = 0; k < b->pu[i].nout; k++)
			if (b->pu[i].out[k].flags & REC_PIECE)
				b->pu[i].out[k].flags = REC_VOID;
	b->rx.active = 0;
}

/* Turn the pieces into ordinary grants and return the rest of the range. */
static int redo_release(struct plb_balancer *b)
{
	for (int i = 0; i < b->n; i++)
		for (int k = 0; k < b->pu[i].nout; k++)
			b->pu[i].out[k].flags &= ~REC_PIECE;
	b->rx.active = 0;
	return b->rx.next < b->rx.end ? pool_put(b, b->rx.next, b->rx.end - b->rx.next) : 0;
}

/* A piece ended first: the original is void. */
static int redo_won(struct plb_balancer *b)
{
	struct plb__pu *o = &b->pu[b->rx.pu];
	for (int k = 0; k < o->nout; k++)
		if (o->out[k].id == b->rx.id)
			o->out[k].flags = REC_VOID;
	b->st.redo_won++;
	return redo_release(b);
}

/* A PU's rate (units per second) at its largest block so far, as its
 * model has it: kept at each sample, for the sums below. */
static void note_rate(struct plb_balancer *b, int pu)
{
	const struct plb__model *m = &b->model[pu];
	double x = fmax((double)b->pu[pu].max_block, b->p.min_block);
	double e = plb__model_ready(m) ? plb__model_eval(m, x) : 0;
	b->pu[pu].rate = e > 0 ? x / e : 0;
}

/* The free PUs' rate together: what they would run a late block's range
 * at. */
static double free_rate(const struct plb_balancer *b)
{
	double rate = 0;
	for (int i = 0; i < b->n; i++)
		if (!b->pu[i].lost && b->pu[i].nout == 0)
			rate += b->pu[i].rate;
	return rate;
}

/* When running grant g again pays: past its predicted end by redo_gain
 * times what the free PUs need for it (then it is expected to end, as
 * late again, later than they would). A block without a prediction
 * counts as predicted to end when it started (plb__busy_for): a first
 * training block on a PU far slower than the rest is run again like any.
 * INFINITY for one that cannot be. */
static double redo_from(const struct plb_balancer *b, const struct plb__grant_rec *g, double rate)
{
	if (g->flags || !(rate > 0) || !(b->p.redo_gain > 0))
		return INFINITY;
	return g->pred_end + b->p.redo_gain * (double)g->units / rate;
}

/* Start re-running the late block expected to end last among those for
 * which it pays now (see above). */
static int redo_start(struct plb_balancer *b, double now)
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
			if (!(now > g->pred_end))
				continue;
			if (rate < 0)           /* the sum only once something is late */
				rate = free_rate(b);
			double e = now + (now - g->pred_end);
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
static double redo_end(struct plb_balancer *b, double now)
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
		if (i == rx->pu || u->lost || u->declined == rx->id || !(u->rate > 0))
			continue;
		b->x[i] = now + plb__busy_for(b, i, now);
		/* from above: by then this one alone would have run it, so
		 * the root is below each such time; Newton starts at the least,
		 * not at the slowest PU's, fewer steps (each a scan) away */
		T = fmin(T, b->x[i] + rest / u->rate);
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
				r += b->bs[i].rate;
				rxf += b->bs[i].rate * b->x[i];
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

double plb_balancer_wake(const plb_balancer_t *b)
{
	if (!b || !b->pol->redo_late || b->pool > 0 || b->rx.active || b->done_units == b->W)
		return INFINITY;
	double t = INFINITY, rate = free_rate(b);
	for (int i = 0; i < b->n; i++)
		for (int k = 0; k < b->pu[i].nout && !b->pu[i].lost; k++)
			t = fmin(t, redo_from(b, &b->pu[i].out[k], rate));
	return t;
}

int plb_balancer_idle_waits(const plb_balancer_t *b, double now)
{
	if (!b || b->pool > 0 || b->done_units == b->W)
		return 0;
	if (!b->pol->redo_late)
		return 1;
	/* redo_next: with pieces out, any free PU may take the next; with
	 * none, redo_start finds a block only at or past plb_balancer_wake
	 * (the same rates, the same grants) */
	if (b->rx.active)
		return b->rx.next >= b->rx.end;
	return now < plb_balancer_wake(b);
}

static int redo_next(struct plb_balancer *b, int pu, double now, struct plb_grant *g)
{
	if (!b->model || !plb__model_ready(&b->model[pu]) || (b->rx.active && pu == b->rx.pu))
		return PLB_NEXT_WAIT;
	const struct plb__model *m = &b->model[pu];
	if (!b->rx.active && !redo_start(b, now))
		return PLB_NEXT_WAIT;
	struct plb__pu *u = &b->pu[pu];
	if (pu == b->rx.pu || b->rx.next >= b->rx.end || b->bs[pu].declined == b->rx.id)
		return PLB_NEXT_WAIT;
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
		return PLB_NEXT_WAIT;
	}
	struct plb__grant_rec *rec = &u->out[u->nout];
	*rec = (struct plb__grant_rec){.id = b->next_id++, .off = b->rx.next, .units = want,
				       .kind = PLB_GRANT_REDO, .t_grant = now, .pred_s = pred,
				       .pred_end = now + pred, .flags = REC_PIECE};
	b->rx.next += want;
	u->nout++;
	busy_sync(b, pu);
	b->nout_total++;
	b->epoch++;
	b->st.blocks++;
	b->st.redo_blocks++;
	*g = (struct plb_grant){.id = rec->id, .pu = pu, .offset = rec->off,
				.units = want, .kind = PLB_GRANT_REDO, .predicted_s = pred};
	return PLB_NEXT_GRANT;
}

int plb_balancer_next(plb_balancer_t *b, int pu, double now, struct plb_grant *g)
{
	if (!b || pu < 0 || pu >= b->n || !g || !isfinite(now))
		return PLB_EINVAL;
	struct plb__pu *u = &b->pu[pu];
	if (u->lost || u->nout >= PLB_MAX_GRANTS)
		return PLB_ESTATE;
	if (b->pool == 0) {
		if (b->done_units == b->W)
			return PLB_NEXT_DONE;
		return b->pol->redo_late && u->nout == 0 ? redo_next(b, pu, now, g) : PLB_NEXT_WAIT;
	}

	double units = 0;
	enum plb_grant_kind kind = PLB_GRANT_REGULAR;
	int step = 0;
	int rc = b->pol->next(b, pu, now, &units, &kind, &step);
	if (rc != PLB_NEXT_GRANT)
		return rc;
	PLB_ASSERT(isfinite(units) && units > 0);
	uint64_t want = units < 1 ? 1 : (uint64_t)llround(units);
	if (want > b->pool)
		want = b->pool;
	/* the lowest free units, or those the PU's node holds (place.c) */
	uint64_t at = b->free[0].off;
	int fi = plb__place(b, pu, &want, &at);
	if (fi >= 0 && free_room(b))
		return PLB_ENOMEM;
	struct plb__range r = pool_cut(b, fi < 0 ? 0 : fi, fi < 0 ? b->free[0].off : at, want);

	struct plb__grant_rec *rec = &u->out[u->nout];
	double free_in = plb__busy_for(b, pu, now);
	rec->id = b->next_id++;
	rec->off = r.off;
	rec->units = r.len;
	rec->kind = kind;
	rec->t_grant = now;
	rec->step = step;
	rec->flags = 0;
	rec->pred_s = 0;
	if (b->model && plb__model_ready(&b->model[pu]))
		rec->pred_s = plb__model_eval(&b->model[pu], (double)r.len);
	rec->pred_end = now + free_in + rec->pred_s;
	u->nout++;
	busy_sync(b, pu);
	b->nout_total++;
	b->epoch++;
	b->st.blocks++;
	if (kind == PLB_GRANT_TRAINING)
		b->st.training_blocks++;
	else if (kind == PLB_GRANT_GAP)
		b->st.gap_blocks++;

	*g = (struct plb_grant){.id = rec->id, .pu = pu, .offset = r.off,
				.units = r.len, .kind = kind,
				.predicted_s = rec->pred_s};
	return PLB_NEXT_GRANT;
}

/* PU u's fixed cost a block outside it: the intercept of a line through
 * its newest blocks' round trips against their sizes (Theil-Sen: the
 * median slope of the pairs of blocks whose sizes differ by 1.25x or
 * more, then the median intercept; a round trip that waited behind
 * another node's bytes moves neither). A round trip grows with the bytes
 * its block moves, and only its fixed part is paid again by a smaller
 * block: a link-bound PU (Black-Scholes' prices coming back) would
 * otherwise read its bytes' time as a cost a block, and its blocks would
 * grow with it. While the window holds blocks of one size, the last
 * slope found stands (none yet: 0, the median round trip). 0 before any
 * round trip is known. */
static double link_fixed(struct plb__pu *u)
{
	double c = 0;
	if (u->lk_n == 0)
		return 0;
	plb__theil_sen(u->lk_u, u->lk_t, u->lk_n, &u->lk_slope, &c);
	return c;
}

/* A block's round trip, into its PU's window, and the model's floor. */
static void note_link(struct plb_balancer *b, int pu, double units, double link_s)
{
	struct plb__pu *u = &b->pu[pu];
	if (!(link_s > 0))
		return;
	int k = u->lk_n < PLB__LINK_WIN ? u->lk_n++ : u->lk_head++ % PLB__LINK_WIN;
	u->lk_head %= PLB__LINK_WIN;
	u->lk_u[k] = units;
	u->lk_t[k] = link_s;
	if (b->model)
		plb__model_set_floor(&b->model[pu], link_fixed(u));
}

int plb_balancer_done(plb_balancer_t *b, int pu, const struct plb_sample *s)
{
	if (!b || pu < 0 || pu >= b->n || !s)
		return PLB_EINVAL;
	if (!(s->exec_s >= 0) || !(s->xfer_s >= 0) || !isfinite(s->exec_s) ||
	    !isfinite(s->xfer_s) || !isfinite(s->finish) || !(s->link_s >= 0) ||
	    !isfinite(s->link_s))
		return PLB_EINVAL;
	struct plb__pu *u = &b->pu[pu];
	int k = 0;
	while (k < u->nout && u->out[k].id != s->grant_id)
		k++;
	if (k == u->nout)
		return PLB_ESTALE;
	struct plb__grant_rec g = u->out[k];
	note_link(b, pu, (double)g.units, s->link_s);
	memmove(&u->out[k], &u->out[k + 1], (size_t)(u->nout - k - 1) * sizeof *u->out);
	u->nout--;
	b->nout_total--;
	b->epoch++;
	busy_sync(b, pu);
	if (g.flags & REC_VOID) {
		/* lost its race; its time still tells the model about the PU */
		if (b->model && s->exec_s + s->xfer_s > 0) {
			if (plb__model_add(&b->model[pu], (double)g.units, s->exec_s, s->xfer_s) != 0)
				return PLB_EINVAL;
			note_rate(b, pu);
		}
		busy_sync(b, pu);
		return PLB_ESTALE;
	}
	if (g.flags & REC_PIECE) {
		int rc = redo_won(b);
		if (rc)
			return rc;
	} else if (b->rx.active && g.id == b->rx.id) {
		redo_drop(b);           /* the original ended first */
	}
	b->done_units += g.units;
	if (g.units > u->max_block)
		u->max_block = g.units;
	u->last_exec_s = s->exec_s + s->xfer_s;
	if (b->model) {
		/* a tiny or zero-time block says nothing about the curve */
		int changes = b->model[pu].changes, rc;
		if (s->exec_s + s->xfer_s > 0 &&
		    (rc = plb__model_add(&b->model[pu], (double)g.units, s->exec_s, s->xfer_s)) != 0)
			return rc;
		b->st.speed_changes += b->model[pu].changes - changes;
		if (b->pol->redo_late)
			note_rate(b, pu);
	}
	/* The PU's queued blocks (pipelining) run after this one, so their
	 * predicted ends follow from when it ended. Chained from the ends
	 * predicted at their grants instead, they drift by every earlier
	 * block's error: a transfer overlapped with compute is predicted on
	 * top of it at every block, and the drift, read as a gap to fill,
	 * put long gap blocks at the end of the job. */
	double start = s->finish;
	for (int i = 0; i < u->nout; i++) {
		struct plb__grant_rec *o = &u->out[i];
		o->pred_end = fmax(start, o->t_grant) + o->pred_s;
		start = o->pred_end;
	}
	busy_sync(b, pu);
	b->epoch++;
	if (b->pol->done)
		b->pol->done(b, pu, &g, s);
	return 0;
}

int plb_balancer_counts(const plb_balancer_t *b, int pu, uint64_t id)
{
	if (!b || pu < 0 || pu >= b->n)
		return 0;
	const struct plb__pu *u = &b->pu[pu];
	for (int k = 0; k < u->nout; k++)
		if (u->out[k].id == id)
			return !(u->out[k].flags & REC_VOID);
	return 0;
}

int plb_balancer_lost(plb_balancer_t *b, int pu, double now)
{
	if (!b || pu < 0 || pu >= b->n)
		return PLB_EINVAL;
	struct plb__pu *u = &b->pu[pu];
	if (u->lost)
		return 0;
	for (int i = 0; i < u->nout; i++) {
		const struct plb__grant_rec *g = &u->out[i];
		int rc = 0;
		if (g->flags & REC_VOID)
			continue;               /* its range is covered elsewhere */
		if (g->flags & REC_PIECE) {
			redo_drop(b);           /* the original still covers it */
			continue;
		}
		if (b->rx.active && g->id == b->rx.id)
			rc = redo_release(b);   /* the original is lost: the pieces take over */
		else
			rc = pool_put(b, g->off, g->units);
		if (rc)
			return rc;
		b->st.returned_blocks++;
	}
	b->nout_total -= u->nout;
	b->epoch++;
	u->nout = 0;
	u->lost = 1;
	busy_sync(b, pu);
	b->alive--;
	b->st.pus_lost++;
	if (b->pol->lost)
		b->pol->lost(b, pu);
	return 0;
}

int plb_balancer_model_get(const plb_balancer_t *b, int pu, struct plb_model_sample *s,
			   int max, double *cliff)
{
	if (!b || pu < 0 || pu >= b->n || max < 0 || (max && !s))
		return PLB_EINVAL;
	if (cliff)
		*cliff = b->model ? b->model[pu].x_fall : INFINITY;
	if (!b->model)
		return 0;
	const struct plb__model *m = &b->model[pu];
	for (int i = 0; i < m->n && i < max; i++) {
		const struct plb__sample *x = &m->s[(m->head + i) % m->cap];
		s[i] = (struct plb_model_sample){x->units, x->exec_s, x->xfer_s};
	}
	return m->n;
}

double plb_balancer_predict(const plb_balancer_t *b, int pu, double units)
{
	if (!b || pu < 0 || pu >= b->n || !b->model || !(units >= 0) || !isfinite(units) ||
	    !plb__model_ready(&b->model[pu]))
		return NAN;
	return plb__model_eval(&b->model[pu], units);
}

int plb_balancer_model_set(plb_balancer_t *b, int pu, const struct plb_model_sample *s,
			   int n, double cliff)
{
	if (!b || pu < 0 || pu >= b->n || n < 0 || (n && !s) || isnan(cliff) || !(cliff > 0))
		return PLB_EINVAL;
	for (int i = 0; i < n; i++)
		if (!plb__sample_ok(&(struct plb__sample){s[i].units, s[i].exec_s, s[i].xfer_s}))
			return PLB_EINVAL;
	if (b->st.blocks)
		return PLB_ESTATE;
	if (!b->model || n == 0)
		return 0;
	struct plb__model *m = &b->model[pu];
	struct plb__pu *u = &b->pu[pu];
	/* one fit for them all: an iterative app warms every PU at every
	 * run, and a fit a sample took 5-11 ms of the master's time at each
	 * k-means iteration of the demo (5 PUs, 32 samples each) */
	struct plb__sample *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return PLB_ENOMEM;
	for (int i = 0; i < n; i++)
		v[i] = (struct plb__sample){s[i].units, s[i].exec_s, s[i].xfer_s};
	int rc = plb__model_load(m, v, n);
	free(v);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++) {
		if (s[i].units > (double)u->max_block)
			u->max_block = (uint64_t)s[i].units;
		u->last_exec_s = s[i].exec_s + s[i].xfer_s;
	}
	plb__model_note_fall(m, cliff);
	note_rate(b, pu);
	busy_sync(b, pu);
	b->epoch++;             /* plb__busy_list keeps the rates it read */
	if (b->pol->warm)
		b->pol->warm(b, pu);
	return 0;
}

int plb_balancer_finished(const plb_balancer_t *b)
{
	return b->done_units == b->W;
}

void plb_balancer_stats(const plb_balancer_t *b, struct plb_balancer_stats *st)
{
	*st = b->st;
	st->units_done = b->done_units;
	st->units_granted = b->granted;
	st->units_pool = b->pool;
}

static double ef_eval(const void *ctx, double x)
{
	return plb__model_eval(ctx, x);
}

static double ef_deriv(const void *ctx, double x)
{
	return plb__model_deriv(ctx, x);
}

static double ef_eval_split(const void *ctx, double x)
{
	return plb__model_eval_split(ctx, x);
}

static double ef_deriv_split(const void *ctx, double x)
{
	return plb__model_deriv_split(ctx, x);
}

int plb__solve(struct plb_balancer *b, double S, double now, double *x, double *T)
{
	PLB_ASSERT(b->model);
	double t0 = plb__cpu_now();
	int m = 0, split = b->pol->split_blocks;
	for (int i = 0; i < b->n; i++) {
		x[i] = 0;
		if (b->pu[i].lost || !plb__model_ready(&b->model[i]))
			continue;
		b->ef[m] = (struct plb__efun){split ? ef_eval_split : ef_eval,
					      split ? ef_deriv_split : ef_deriv,
					      &b->model[i], plb__busy_for(b, i, now)};
		b->ef_pu[m++] = i;
	}
	if (m == 0)
		return PLB_ESTATE;
	struct plb__solve_out so = {0};
	int rc = b->p.solver == 2 ? plb__solve_slsqp(b->ef, m, S, b->x, &so)
				  : plb__solve_fast(b->ef, m, S, b->x, &so);
	/* auto: the reduction refuses curves that are not monotone */
	if (rc == PLB_ESOLVE && b->p.solver == 0)
		rc = plb__solve_slsqp(b->ef, m, S, b->x, &so);
	if (rc == 0)
		for (int k = 0; k < m; k++)
			x[b->ef_pu[k]] = b->x[k];
	if (T)
		*T = so.T;
	double dt = plb__cpu_now() - t0;
	b->st.solves++;
	b->st.solve_s_total += dt;
	if (dt > b->st.solve_s_max)
		b->st.solve_s_max = dt;
	return rc;
}
