/* The balancer core: grant bookkeeping, the PUs' models, and the policy
 * vtable dispatch (the pool of free ranges is pool.c, the busy PUs busy.c,
 * late blocks run again redo.c). Policies decide how many units a
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

const char *plb__policy_name(int i)
{
	return i >= 0 && i < NPOLICIES ? policies[i]->name : NULL;
}

const char *plb__policy_names(char *buf, size_t len, const char *sep)
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

const char *plb__grant_kind_name(enum plb__grant_kind k)
{
	switch (k) {
	case PLB__GRANT_TRAINING:
		return "training";
	case PLB__GRANT_GAP:
		return "gap";
	case PLB__GRANT_REDO:
		return "redo";
	case PLB__GRANT_REGULAR:
		break;
	}
	return "regular";
}

const char *plb__policy_doc(const char *name)
{
	const struct plb__policy *pol = find_policy(name);
	return pol ? pol->doc : NULL;
}

int plb__balancer_create(const struct plb__params *params, const char *policy,
			 int npu, uint64_t W, plb__balancer_t **out)
{
	*out = NULL;
	if (npu < 1 || W < 1 || !policy)
		return PLB_EINVAL;
	const struct plb__policy *pol = find_policy(policy);
	if (!pol)
		return PLB_ENOENT;
	struct plb__balancer *b = calloc(1, sizeof *b);
	if (!b)
		return PLB_ENOMEM;
	if (params)
		b->p = *params;
	else
		plb__params_init(&b->p);
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
	for (int i = 0; i < npu; i++)
		b->pu[i].node = -1;
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
	plb__balancer_destroy(b);
	return PLB_ENOMEM;
}

void plb__balancer_destroy(plb__balancer_t *b)
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
	plb__couple_free(b);
	free(b);
}

double plb__first_block(const struct plb__balancer *b)
{
	double cap = (double)b->W / (b->p.train_div * b->n);
	double x = b->p.initial_block < cap ? b->p.initial_block : cap;
	return x > b->p.min_block ? x : b->p.min_block;
}

int plb__balancer_next(plb__balancer_t *b, int pu, double now, struct plb__grant *g)
{
	if (!b || pu < 0 || pu >= b->n || !g || !isfinite(now))
		return PLB_EINVAL;
	struct plb__pu *u = &b->pu[pu];
	int gate = plb__couple_gate(b, pu, now);
	if (gate)
		return gate;
	if (u->lost || u->nout >= PLB__MAX_GRANTS)
		return PLB_ESTATE;
	if (b->pool == 0) {
		if (b->done_units == b->W)
			return PLB__NEXT_DONE;
		return b->pol->redo_late && u->nout == 0 ? plb__redo_next(b, pu, now, g) : PLB__NEXT_WAIT;
	}

	double units = 0;
	enum plb__grant_kind kind = PLB__GRANT_REGULAR;
	int step = 0;
	int rc = b->pol->next(b, pu, now, &units, &kind, &step);
	if (rc != PLB__NEXT_GRANT)
		return rc;
	PLB_ASSERT(isfinite(units) && units > 0);
	int probe = 0;
	units = plb__couple_units(b, pu, units, &probe);
	uint64_t want = units < 1 ? 1 : (uint64_t)llround(units);
	if (want > b->pool)
		want = b->pool;
	/* the lowest free units, or those the PU's node holds (place.c) */
	uint64_t at = b->free[0].off;
	int fi = plb__place(b, pu, &want, &at);
	if (fi >= 0 && plb__pool_room(b))
		return PLB_ENOMEM;
	struct plb__range r = plb__pool_cut(b, fi < 0 ? 0 : fi, fi < 0 ? b->free[0].off : at, want);

	struct plb__grant_rec *rec = &u->out[u->nout];
	double free_in = plb__busy_for(b, pu, now);
	rec->id = b->next_id++;
	rec->off = r.off;
	rec->units = r.len;
	rec->kind = kind;
	rec->t_grant = now;
	rec->step = step;
	rec->flags = probe ? REC_PROBE : 0;
	rec->pred_s = 0;
	if (b->model && plb__model_ready(&b->model[pu]))
		rec->pred_s = plb__model_eval(&b->model[pu], (double)r.len);
	rec->pred_end = now + free_in + rec->pred_s;
	rec->in_end = 0;
	if (b->link_rate > 0 && !u->local)
		rec->in_end = b->link_free = fmax(now, b->link_free) + (double)r.len / b->link_rate;
	u->nout++;
	plb__busy_sync(b, pu);
	b->nout_total++;
	b->epoch++;
	b->st.blocks++;
	if (kind == PLB__GRANT_TRAINING)
		b->st.training_blocks++;
	else if (kind == PLB__GRANT_GAP)
		b->st.gap_blocks++;

	*g = (struct plb__grant){.id = rec->id, .pu = pu, .offset = r.off,
				.units = r.len, .kind = kind,
				.predicted_s = rec->pred_s};
	return PLB__NEXT_GRANT;
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
static void note_link(struct plb__balancer *b, int pu, double units, double link_s)
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

int plb__balancer_done(plb__balancer_t *b, int pu, const struct plb__block_done *s)
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
	plb__busy_sync(b, pu);
	if (g.flags & REC_VOID) {
		/* lost its race; its time still tells the model about the PU */
		if (b->model && s->exec_s + s->xfer_s > 0) {
			if (plb__model_add(&b->model[pu], (double)g.units, s->exec_s, s->xfer_s) != 0)
				return PLB_EINVAL;
			plb__note_rate(b, pu);
		}
		plb__busy_sync(b, pu);
		return PLB_ESTALE;
	}
	if (g.flags & REC_PIECE) {
		int rc = plb__redo_won(b);
		if (rc)
			return rc;
	} else if (b->rx.active && g.id == b->rx.id) {
		plb__redo_drop(b);           /* the original ended first */
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
			plb__note_rate(b, pu);
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
	plb__busy_sync(b, pu);
	b->epoch++;
	if (b->pol->done)
		b->pol->done(b, pu, &g, s);
	return plb__couple_done(b, pu, &g, s);
}

int plb__balancer_counts(const plb__balancer_t *b, int pu, uint64_t id)
{
	if (!b || pu < 0 || pu >= b->n)
		return 0;
	const struct plb__pu *u = &b->pu[pu];
	for (int k = 0; k < u->nout; k++)
		if (u->out[k].id == id)
			return !(u->out[k].flags & REC_VOID);
	return 0;
}

int plb__balancer_lost(plb__balancer_t *b, int pu, double now)
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
			plb__redo_drop(b);           /* the original still covers it */
			continue;
		}
		if (b->rx.active && g->id == b->rx.id)
			rc = plb__redo_release(b);   /* the original is lost: the pieces take over */
		else
			rc = plb__pool_put(b, g->off, g->units);
		if (rc)
			return rc;
		b->st.returned_blocks++;
	}
	b->nout_total -= u->nout;
	b->epoch++;
	u->nout = 0;
	u->lost = 1;
	plb__busy_sync(b, pu);
	b->alive--;
	b->st.pus_lost++;
	if (b->pol->lost)
		b->pol->lost(b, pu);
	plb__couple_lost(b, pu);
	return 0;
}

int plb__balancer_model_get(const plb__balancer_t *b, int pu, struct plb__sample *s,
			    int max, double *cliff)
{
	if (!b || pu < 0 || pu >= b->n || max < 0 || (max && !s))
		return PLB_EINVAL;
	if (cliff)
		*cliff = b->model ? b->model[pu].x_fall : INFINITY;
	if (!b->model)
		return 0;
	const struct plb__model *m = &b->model[pu];
	for (int i = 0; i < m->n && i < max; i++)
		s[i] = m->s[(m->head + i) % m->cap];
	return m->n;
}

double plb__balancer_predict(const plb__balancer_t *b, int pu, double units)
{
	if (!b || pu < 0 || pu >= b->n || !b->model || !(units >= 0) || !isfinite(units) ||
	    !plb__model_ready(&b->model[pu]))
		return NAN;
	return plb__model_eval(&b->model[pu], units);
}

int plb__balancer_model_set(plb__balancer_t *b, int pu, const struct plb__sample *s,
			    int n, double cliff)
{
	if (!b || pu < 0 || pu >= b->n || n < 0 || (n && !s) || isnan(cliff) || !(cliff > 0))
		return PLB_EINVAL;
	for (int i = 0; i < n; i++)
		if (!plb__sample_ok(&s[i]))
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
	int rc = plb__model_load(m, s, n);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++) {
		if (s[i].units > (double)u->max_block)
			u->max_block = (uint64_t)s[i].units;
		u->last_exec_s = s[i].exec_s + s[i].xfer_s;
	}
	plb__model_note_fall(m, cliff);
	plb__note_rate(b, pu);
	plb__busy_sync(b, pu);
	b->epoch++;             /* plb__busy_list keeps the rates it read */
	if (b->pol->warm)
		b->pol->warm(b, pu);
	return 0;
}

int plb__balancer_link(plb__balancer_t *b, double rate, double busy_s)
{
	if (!b || !(rate >= 0) || !isfinite(rate) || !(busy_s >= 0) || !isfinite(busy_s))
		return PLB_EINVAL;
	b->link_rate = rate;
	b->link_free = busy_s;
	return 0;
}

int plb__balancer_local(plb__balancer_t *b, int pu)
{
	if (!b || pu < 0 || pu >= b->n)
		return PLB_EINVAL;
	b->pu[pu].local = 1;
	return 0;
}

int plb__balancer_finished(const plb__balancer_t *b)
{
	return b->done_units == b->W;
}

void plb__balancer_stats(const plb__balancer_t *b, struct plb__balancer_stats *st)
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

int plb__solve(struct plb__balancer *b, double S, double now, double *x, double *T)
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
