/* plb-hac: PLB-HAC (Sant'Ana, Cordeiro, de Camargo, Euro-Par 2019).
 *
 * Training: every PU gets x_init (plb__first_block); the first to finish
 * gets 2 x_init, each other PU 2 x_init R with R = t_fastest / t_p. A PU
 * whose larger training block took hardly longer than its smaller one
 * (under 1 + FLAT of the proportional growth) gets one more of twice the
 * size, up to TRAIN_EXTRA times: two such samples cannot tell a fixed cost
 * from a first block slowed by warm-up (first-touch of buffers, library
 * set-up), and the flat fit from them predicted a real CPU's 2048-column
 * block at 0.1 s where it took 0.8 s (config/demo.ini). From
 * then on, asynchronous virtual steps: the first PU to finish its block of
 * the current step re-solves the equal-time system for the next step, and
 * every PU takes its block of the latest step when it becomes free. Nobody
 * waits for anybody.
 *
 * What the paper leaves open, and what we chose:
 * - A step's size S: step_fraction of the unassigned units (so steps shrink
 *   geometrically towards the end), and the whole rest once what would be
 *   left is less than half a step. Past end_fraction of W assigned, each
 *   step is (1 - end_decrease) times that (Algorithm 1's X <- X k, applied
 *   to every fresh solve, not compounded).
 * - A step lasts at least step_min_ms and long enough for every PU to run
 *   min_block; shorter steps would leave the slow PUs idle at the end.
 * - The solve knows when each busy PU becomes free (its outstanding blocks'
 *   predicted end), so a step's blocks all end at one time, also for PUs
 *   that join the step late.
 * - Efficiency: a PU's block is at least the size at which its fixed cost
 *   per block (the tangent's intercept, E - x E') is block_overhead of the
 *   block's time, but within stretch_fraction of the time the PU has left
 *   (from the split of the whole rest), so the end is still approached
 *   geometrically, or within all of it where the rest would be less than
 *   twice the PU's fixed cost (a block for it would be mostly that cost).
 *   A coprocessor
 *   with a 0.2 s offload cost thus runs a few long blocks while the CPUs
 *   follow the steps; it is simply busy through several of them.
 * - Each PU's share comes with its planned end. A PU taking a share solved
 *   earlier gets min(share, what fits before its planned end with its
 *   newest model): a PU that turned slow shrinks at once. A PU that cannot
 *   fit half its share starts a new step instead.
 * - After its model detects a speed change, a PU's next block is a probe of
 *   a quarter of its planned time: the sample that revealed the change
 *   straddled it and understates it.
 * - Trust region: a block is at most max_growth times the largest block the
 *   PU has done, since a fit extrapolated far beyond its samples is a guess,
 *   and never past its model's cliff cap (model.h): a share larger than a
 *   block runs as several blocks, the rest kept for the PU's next
 *   request; solves see the PU's time for x units as blocks of the cap.
 *   Past its largest block a block takes at most probe_fraction of the
 *   time the PU has left more than that one, unless the fixed cost per
 *   block (extended along the tangent there) is still above
 *   block_overhead: the block that finds a cliff enters it by a little.
 *   Below a fall, one block between the cap and the fall is tried where
 *   the fixed cost it would save is worth what it could lose (reprobe).
 * - A block is planned for at most block_time_fraction of the time its PU
 *   has left (to the predicted end of all work), so one surprise costs
 *   little, or longer where the PU's fixed cost needs it: the fixed costs
 *   of all PUs together cost block_overhead of the cluster's throughput,
 *   and a PU's share of that loss is weighed by its share of the work
 *   (fix_times), so a PU with a small share runs short blocks even when
 *   its fixed cost is large. Such a longer block takes at most
 *   block_time_fraction of the time left more than the largest block
 *   the PU has run: past its samples a fit is a guess, and a cliff there
 *   would cost the whole stretched block again.
 * - The only PU alive (one PU, or the others lost) takes all that is left
 *   as one block once its training probe is back: the bounds above guard
 *   against surprises that another PU could absorb.
 * - A block that would end well after the predicted end of all work and
 *   after every busy PU waits while others work, unless they could not
 *   run the pool dry before it ends; a second training block
 *   too, for a PU so slow that its first was back after the others had
 *   planned the rest.
 * - Where the master's link binds (link_limit), a block is held to what
 *   ends by the time the link has carried the pool: the last bytes to
 *   cross are for a short block.
 * - A late block is run again by the free PUs once the pool is empty
 *   (redo_late: the core's mechanism, redo.c), whichever copy ends
 *   first counting.
 * - Gap filling: a PU finishing a regular block earlier than predicted by
 *   more than gap_threshold_ms gets a gap block of that length first,
 *   unless its fixed cost per block is over half of that length.
 * - A PU whose share is below min_block waits for the next step, unless
 *   min_block fits before its planned end or nobody else is busy, or the
 *   busy PUs could not run the pool dry before it would finish min_block
 *   (the last units of a job, with many PUs free: left to the fastest
 *   free PU alone, they ran one after another). Once the
 *   step's planned end has passed, the PU it waits for is late (a model
 *   was wrong, as with few noisy samples on a real PU), and a free PU
 *   starts the next step itself rather than idle until the late one ends. */
#include <math.h>
#include <stdlib.h>

#include "balancer/internal.h"

#define TRAIN_EXTRA 2           /* more training blocks after a flat pair, at most */
#define FLAT 0.25               /* a pair is flat below this share of proportional growth */
#define LATE_END 0.1            /* a block may end this share of the time left after the predicted end */
#define REPROBE_NEAR 1.25       /* no probe between a cap and a fall closer than this factor */
#define GAP_FIXED 0.5           /* a gap block is run where its PU's fixed cost is at most this share of the gap */

struct hac_pu {
	int phase;              /* 0 idle, 1 first training block out, 2 second out, 3 regular */
	int step;               /* step of its last regular block */
	int wait_step;          /* step it declined (share below min_block) */
	int changes;            /* speed changes its model had at its last grant */
	double gap_s;           /* pending gap to fill, seconds */
	double tx[2], tt[2];    /* its last two training blocks: units, exec s */
	int extra;              /* training blocks beyond the paper's two */
};

struct hac_state {
	struct hac_pu *pu;
	double x1;              /* first training block */
	double fast_rate;       /* units/s of the first PU to finish training */
	int step;               /* current virtual step, 0 before the first solve */
	double T_end;           /* when the current step's equal-time blocks end */
	double T_all;           /* when all remaining work was predicted to end, at the last solve */
	double t_solve;         /* when it was solved */
	double *x;              /* shares of the current step (units), -1: not in the solve */
	double *end;            /* when each share is planned to end */
	double *xr;             /* scratch: split of all remaining work */
	double *a;              /* scratch: when each PU becomes free, from now */
	double *t_fix;          /* the block time each PU's fixed cost asks for, at the last solve */
};

static int hac_init(struct plb__balancer *b)
{
	struct hac_state *h = b->ps;
	h->pu = calloc((size_t)b->n, sizeof *h->pu);
	h->x = calloc((size_t)b->n, sizeof *h->x);
	h->end = calloc((size_t)b->n, sizeof *h->end);
	h->xr = calloc((size_t)b->n, sizeof *h->xr);
	h->a = calloc((size_t)b->n, sizeof *h->a);
	h->t_fix = calloc((size_t)b->n, sizeof *h->t_fix);
	if (!h->pu || !h->x || !h->end || !h->xr || !h->a || !h->t_fix)
		return PLB_ENOMEM;
	h->x1 = plb__first_block(b);
	for (int i = 0; i < b->n; i++)
		h->pu[i].wait_step = -1;
	return 0;
}

static void hac_fini(struct plb__balancer *b)
{
	struct hac_state *h = b->ps;
	free(h->pu);
	free(h->x);
	free(h->end);
	free(h->xr);
	free(h->a);
	free(h->t_fix);
}

/* PU pu's fixed cost per block: the tangent's intercept E - x E' at its
 * largest block, where the fit is known, but no more than the time of its
 * smallest block (E at 0 is held at that): a fit that bends down beyond its
 * samples has a large intercept that no block pays. */
static double fixed_cost(const struct plb__balancer *b, int pu)
{
	const struct plb__model *m = &b->model[pu];
	double u = fmin((double)b->pu[pu].max_block, plb__model_cap(m));
	double c = plb__model_eval(m, u) - u * plb__model_deriv(m, u);
	return fmin(fmax(c, 0), plb__model_eval(m, 0));
}

/* How long a block of a PU with fixed cost c per block (fixed_cost) may
 * be stretched for efficiency, of the `left` seconds the PU has:
 * stretch_fraction of them, so that the end is still approached
 * geometrically, or all of them where the rest would be less than 2 c.
 * A block for that rest would spend over half its time on the fixed
 * cost: an offload device with 1 s per block left 20% of its last 9 s for
 * later and ran it as three more blocks, each mostly its fixed cost. */
static double stretch_time(const struct plb__balancer *b, double left, double c)
{
	double t = b->p.stretch_fraction * left;
	return left - t < 2 * c ? left : t;
}

/* Each PU's block time for efficiency: PU i with fixed cost c_i per block
 * and share s_i of the rest loses s_i c_i / d_i of the cluster's throughput
 * with blocks of d_i seconds. Keeping the sum at block_overhead with the
 * blocks as short as possible in total (a surprise costs in proportion to
 * a block's time, whichever PU it hits) gives d_i = sqrt(s_i c_i) K /
 * block_overhead with K = sum_j sqrt(s_j c_j): a PU with a small share
 * runs short blocks even when its fixed cost is large. */
static void fix_times(struct plb__balancer *b, double R)
{
	struct hac_state *h = b->ps;
	double K = 0;
	for (int i = 0; i < b->n; i++) {
		h->t_fix[i] = 0;
		if (!b->pu[i].lost && plb__model_ready(&b->model[i]) && h->xr[i] > 0)
			K += h->t_fix[i] = sqrt(h->xr[i] / R * fixed_cost(b, i));
	}
	for (int i = 0; i < b->n; i++)
		h->t_fix[i] *= K / b->p.block_overhead;
}

/* Smallest block of PU i, up to `cap`, whose fixed cost (the tangent's
 * intercept E - x E') is at most `frac` of its time. */
static double efficient_block(const struct plb__model *m, double frac, double cap)
{
	double lo = 1, hi = cap;
	if (hi <= lo)
		return cap;
	for (int k = 0; k < 40 && hi / lo > 1.01; k++) {
		double mid = sqrt(lo * hi);
		double e = plb__model_eval(m, mid);
		double c = e - mid * plb__model_deriv(m, mid);
		if (c <= frac * e)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* Solve the next step: each PU's share and when it should end. */
static int new_step(struct plb__balancer *b, double now)
{
	struct hac_state *h = b->ps;
	const struct plb__params *p = &b->p;
	double R = (double)b->pool;
	double S = p->step_fraction * R;
	double assigned = (double)(b->W - b->pool) / (double)b->W;
	if (assigned >= p->end_fraction)
		S *= 1 - p->end_decrease;
	if (S < p->min_block)
		S = p->min_block;
	double T, TR;
	/* the split of all that remains: the most any PU may take now */
	int rc = plb__solve(b, R, now, h->xr, &TR);
	if (rc)
		return rc;
	fix_times(b, R);
	if (S >= R || R - S < 0.5 * S) {
		S = R;
		T = TR;
		for (int i = 0; i < b->n; i++)
			h->x[i] = h->xr[i];
	} else if ((rc = plb__solve(b, S, now, h->x, &T))) {
		return rc;
	}
	double amin = INFINITY, tmin = p->step_min_ms * 1e-3;
	for (int i = 0; i < b->n; i++)
		h->a[i] = plb__busy_for(b, i, now);
	for (int i = 0; i < b->n; i++)
		if (!b->pu[i].lost && plb__model_ready(&b->model[i])) {
			amin = fmin(amin, h->a[i]);
			tmin = fmax(tmin, plb__model_eval(&b->model[i], p->min_block));
		}
	tmin += amin;
	if (S < R && T < tmin) {
		/* the equal-time split at T = tmin is x_p = E_p^-1(tmin - a_p),
		 * capped by the split of the rest */
		for (int i = 0; i < b->n; i++) {
			double left = tmin - h->a[i];
			if (h->x[i] > 0 || h->xr[i] > 0)
				h->x[i] = left > 0 ? fmin(h->xr[i],
					plb__model_inverse(&b->model[i], left, R)) : 0;
		}
	}
	for (int i = 0; i < b->n; i++) {
		if (b->pu[i].lost || !plb__model_ready(&b->model[i])) {
			h->x[i] = -1;
			continue;
		}
		const struct plb__model *m = &b->model[i];
		/* stretch towards an efficient block, but within stretch_fraction
		 * of the time this PU has left, so the end is still approached
		 * geometrically */
		double a = h->a[i];
		double most = h->xr[i] > 0 ? plb__model_inverse(m, stretch_time(b, TR - a, fixed_cost(b, i)),
								  h->xr[i]) : 0;
		if (most > h->x[i])
			h->x[i] = fmax(h->x[i], efficient_block(m, p->block_overhead, most));
		h->end[i] = now + a + plb__model_eval_split(m, h->x[i]);
	}
	h->T_end = now + T;
	h->T_all = now + TR;
	h->t_solve = now;
	h->step++;
	b->st.step = h->step;
	return 0;
}

/* Units PU pu can do before its planned end, with its newest model. */
static double fits_before_end(struct plb__balancer *b, int pu, double now)
{
	struct hac_state *h = b->ps;
	double left = h->end[pu] - now - plb__busy_for(b, pu, now);
	return left > 0 ? plb__model_inverse_split(&b->model[pu], left, (double)b->pool) : 0;
}

/* Whether the busy PUs, from when each is free, could not run the whole
 * pool before PU pu (free in `busy`) would finish a block of x units:
 * then leaving the block to them does not end the job sooner, even where
 * pu is slower than they are. Each runs at its rate at its largest block,
 * the most it can do in a short time. The free PUs do not count: each
 * decides for itself when asked, and counting them would have every free
 * PU leave the last units to the others (which, with many PUs free at the
 * end of a job, then run one after another). plb__busy_dry: a scan of
 * the busy PUs where its bracket does not answer, so called only when
 * the cheaper tests failed. */
static int busy_cannot_finish(struct plb__balancer *b, int pu, double now, double busy,
			      double x)
{
	double t = busy + plb__model_eval(&b->model[pu], x);
	return plb__busy_dry(b, pu, now, t);
}

/* busy_cannot_finish for min_block, at most once per request (*memo < 0:
 * not yet): both the wait for the next step and the min_block rule ask.
 * The PU's time for min_block is its model's memo (plb__model_eval_memo):
 * at the end of a job each waiting PU asks at every event, its model
 * unchanged. */
static int busy_cannot_finish_minb(struct plb__balancer *b, int pu, double now,
				   double busy, int *memo)
{
	if (*memo < 0)
		*memo = plb__busy_dry(b, pu, now, busy + plb__model_eval_memo(&b->model[pu], b->p.min_block));
	return *memo;
}

/* Whether a block of x units on PU pu would end well after all the rest
 * is predicted done (a slow PU, a large fixed cost) and after the last
 * busy PU is free: it would only delay the end, so the PU leaves the
 * units to the others while they work. busy: plb__busy_for(pu). */
static int ends_late(struct plb__balancer *b, int pu, double now, double busy, double x)
{
	struct hac_state *h = b->ps;
	double end = now + busy + plb__model_eval(&b->model[pu], x);
	return h->T_all > now && end > h->T_all + LATE_END * (h->T_all - now) &&
	       plb__others_busy(b, pu) && end > now + plb__others_free_in(b, pu, now);
}

/* The largest block PU pu should run now (hac_next: a bounded block):
 * within block_time_fraction of the time it has left, or longer where its
 * fixed cost per block needs it (t_fix, within stretch_fraction of that
 * time), but then by that fraction at most beyond the time of its largest
 * block so far, or by max_growth - 1 times its fixed cost c where that is
 * more: each block it saves saves c, and a cliff just past its largest
 * block costs a few times the extra part (an offload device with 1 s a
 * block, 7 PUs, a 15 s job: its last share was cut at 7.2 s of 8.4, and
 * the rest ran as a block of 1 s of work and 1 s of start-up: mixed:12
 * 1.351 -> 1.311); never max_growth times its largest block. busy:
 * plb__busy_for(pu). block_limit: nor past its model's cap (a cliff). */
static double block_limit_uncapped(struct plb__balancer *b, int pu, double now, double busy)
{
	struct hac_state *h = b->ps;
	const struct plb__params *p = &b->p;
	const struct plb__model *m = &b->model[pu];
	double pool = (double)b->pool, mb = (double)b->pu[pu].max_block;
	double grow = p->max_growth * mb;
	double left = h->T_all - now - busy;
	if (!(left > 0))
		return fmin(plb__model_cap(m), grow);
	double c = fixed_cost(b, pu);
	double t_fix = fmin(h->t_fix[pu], stretch_time(b, left, c));
	/* no shorter than its round trip (plb__model_set_floor): a block the
	 * PU waits longer for than it runs loses more than it balances */
	double t = fmax(p->block_time_fraction * left, fmin(m->t_floor, left));
	if (t_fix > t)
		t = fmin(t_fix, plb__model_eval(m, mb) +
				       fmax(t, (p->max_growth - 1) * c));
	double x = plb__model_inverse(m, t, pool);
	if (x > mb) {
		/* past its samples: by probe_fraction of the time left, or up to
		 * where the fixed cost at its largest block, extended along the
		 * tangent there, is block_overhead of a block */
		double f = p->block_overhead, d = plb__model_deriv(m, mb);
		double eff = d > 0 ? c * (1 - f) / (f * d) : INFINITY;
		double probe = plb__model_inverse(m, plb__model_eval(m, mb) + p->probe_fraction * left, pool);
		x = fmin(x, fmax(mb, fmax(eff, probe)));
	}
	return fmin(grow, x);
}

/* Where the master's link binds (plb__balancer_link: its bytes for the
 * pool take it past the PUs' predicted end of all work), the run ends
 * when the link has carried the pool, now + B + pool / L (B: what it
 * still carries), plus what the last block to cross computes. A block of
 * x units starts at the later of when its PU is free and when its bytes
 * are across (now + B + x / L; a PU beside the master, when it is free),
 * and should end by then: the most units for which it does, at least
 * min_block. No limit where the link does not bind or is not known. */
struct link_end {
	const struct plb__model *m;
	double busy, B, L;      /* B < 0: the PU's bytes cross no link */
};

/* When a block of x units ends, from now (link_limit). */
static double link_ends(const struct link_end *e, double x)
{
	return fmax(e->busy, e->B >= 0 ? e->B + x / e->L : 0) + plb__model_eval(e->m, x);
}

static double link_limit(struct plb__balancer *b, int pu, double now, double busy, double most)
{
	struct hac_state *h = b->ps;
	double L = b->link_rate, pool = (double)b->pool;
	if (!(L > 0) || !(most > 0))
		return most;
	double B = fmax(0, b->link_free - now), end = B + pool / L;
	if (now + end <= h->T_all)
		return most;
	struct link_end e = {&b->model[pu], busy, b->pu[pu].local ? -1 : B, L};
	double lo = 0, hi = most;
	if (link_ends(&e, hi) <= end)
		return most;
	for (int k = 0; k < 50 && hi - lo > 0.5; k++) {
		double mid = 0.5 * (lo + hi);
		if (link_ends(&e, mid) <= end)
			lo = mid;
		else
			hi = mid;
	}
	return fmin(most, fmax(lo, (double)b->p.min_block));
}

static double block_limit(struct plb__balancer *b, int pu, double now, double busy)
{
	double x = fmin(plb__model_cap(&b->model[pu]), block_limit_uncapped(b, pu, now, busy));
	return link_limit(b, pu, now, busy, x);
}

/* A block between PU pu's cap and the size whose throughput fell (model.h),
 * of at most `most` units, where one is worth a try; else 0. The cap is
 * the largest block that ran near the best rate, not where the cliff is:
 * a GPU whose time per unit jumps 5.6x past 28,321 units, capped at 8,192
 * after a block of 32,768 fell, paid 2% more a block for the rest of the
 * run. The probe is the geometric middle g = sqrt(cap fall), so a few
 * probes find the cliff to a factor of REPROBE_NEAR (its result moves the
 * cap or the fall: find_cliff). It is worth it where what it would save,
 * the fixed cost c a block (plb__model_cap_fixed: the fit bends with the
 * fall) over the part of the PU's share of the rest (xr) that would run
 * as blocks of g instead of the cap (blocks are that long only while
 * block_time_fraction of the time left allows it), is more than half the
 * most it can lose: its time at the slowest rate measured past the cap
 * (plb__model_fall_rate: the fall's part of a smaller block is smaller)
 * less its time on the line through the cap. With the cliff anywhere
 * between the two (in log), the probe is good half the time and loses
 * half the most when bad. One at a time: none while the PU holds a
 * block. */
static double reprobe(struct plb__balancer *b, int pu, double now, double busy, double most)
{
	struct hac_state *h = b->ps;
	const struct plb__model *m = &b->model[pu];
	double cap = plb__model_cap(m), fall = fmin(m->x_fall, m->x_soft);
	double left = h->T_all - now - busy;
	if (!isfinite(fall) || !(cap > 0) || !(left > 0) || b->pu[pu].nout > 0)
		return 0;
	double g = fmin(sqrt(cap * fall), most), rf = plb__model_fall_rate(m);
	if (g < REPROBE_NEAR * cap || !(rf > 0))
		return 0;
	double c = plb__model_cap_fixed(m), e = plb__model_eval(m, cap);
	if (!(c > 0) || !(e > c))
		return 0;
	double eg = c + (e - c) * g / cap;
	double rest = fmin(h->xr[pu], (double)b->pool) *
		      fmax(0, 1 - eg / (b->p.block_time_fraction * left));
	double save = rest * c * (1 / cap - 1 / g), lose = g / rf - eg;
	return save > 0.5 * lose ? g : 0;
}

static int hac_next(struct plb__balancer *b, int pu, double now, double *units,
		    enum plb__grant_kind *kind, int *step)
{
	struct hac_state *h = b->ps;
	struct hac_pu *P = &h->pu[pu];
	const struct plb__model *m = &b->model[pu];
	double minb = b->p.min_block;

	/* training */
	if (P->phase == 0) {
		P->phase = 1;
		*units = h->x1;
		*kind = PLB__GRANT_TRAINING;
		*step = 0;
		return PLB__NEXT_GRANT;
	}
	if ((P->phase == 1 || P->phase == 2) && b->pu[pu].nout > 0)
		return PLB__NEXT_WAIT;           /* needs the sample first */
	/* the only PU alive takes all that is left as one block, within its
	 * cliff cap: smaller blocks guard against a surprise that another PU
	 * could absorb, there is none, and each block costs its fixed cost */
	if (b->alive == 1 && b->pu[pu].nout == 0) {
		P->phase = 3;
		*units = fmin((double)b->pool, plb__model_cap(m));
		*kind = PLB__GRANT_REGULAR;
		*step = h->step;
		return PLB__NEXT_GRANT;
	}
	if (P->phase == 1) {
		/* a block that took no measurable time counts as the fastest */
		double t = b->pu[pu].last_exec_s;
		double rate = t > 0 ? h->x1 / t : INFINITY;
		if (h->fast_rate == 0)
			h->fast_rate = rate;    /* the first to finish */
		double R = rate >= h->fast_rate ? 1.0 : rate / h->fast_rate;
		double x = fmax(2 * h->x1 * R, minb);
		/* a PU so slow that its first block was back only after the
		 * others had planned the rest: its second is no exception to
		 * the rule below (a training block is a block) */
		if (h->step > 0 && plb__model_ready(m) &&
		    ends_late(b, pu, now, plb__busy_for(b, pu, now), x))
			return PLB__NEXT_WAIT;
		P->phase = 2;
		*units = x;
		*kind = PLB__GRANT_TRAINING;
		*step = 0;
		return PLB__NEXT_GRANT;
	}
	if (P->phase == 2 && P->extra < TRAIN_EXTRA && P->tx[1] >= 1.5 * P->tx[0] &&
	    P->tt[1] - P->tt[0] < FLAT * P->tt[0] * (P->tx[1] / P->tx[0] - 1)) {
		P->extra++;
		*units = 2 * P->tx[1];
		*kind = PLB__GRANT_TRAINING;
		*step = 0;
		return PLB__NEXT_GRANT;
	}
	P->phase = 3;

	/* when it is free of what it holds (the others: plb__others_free_in) */
	double busy = plb__busy_for(b, pu, now);
	int helps = -1;         /* busy_cannot_finish_minb's memo */

	/* gap filling, where at most half the gap block is the PU's fixed
	 * cost (GAP_FIXED): a gap block is a block more, and one that is
	 * mostly its fixed cost does less than the PU's next share would in
	 * that time (single:15's GPU, 1.96 s a block, ran 601 units in a
	 * 1.37 s gap block at half its rate) */
	if (P->gap_s > 0) {
		double x = fmin(plb__model_inverse(m, P->gap_s, (double)b->pool),
				block_limit(b, pu, now, busy));
		double gap = P->gap_s;
		P->gap_s = 0;
		if (x >= minb && fixed_cost(b, pu) <= GAP_FIXED * gap) {
			*units = x;
			*kind = PLB__GRANT_GAP;
			*step = h->step;
			return PLB__NEXT_GRANT;
		}
	}

	int fresh = 0;
	/* past the step's planned end a PU still out is late (its model was
	 * wrong): a free PU with nothing left in the step does not wait for it */
	int overdue = h->step > 0 && now > h->T_end;
	if (h->step > 0 && P->wait_step == h->step && !overdue && plb__others_busy(b, pu) &&
	    busy + plb__model_eval_memo(&b->model[pu], minb) > plb__others_free_in(b, pu, now) &&
	    !busy_cannot_finish_minb(b, pu, now, busy, &helps))
		return PLB__NEXT_WAIT;
	/* a prefetch (pipelining: the PU still runs a block) takes its share of
	 * a step it does not hold yet; it starts a step only by the rules
	 * below that do not ask for a free PU (its share no longer fits before
	 * the step's end, or the step is overdue and it has none left) */
	if (b->pu[pu].nout > 0 && (h->step == 0 || P->step >= h->step))
		return PLB__NEXT_WAIT;
	if (h->step > 0 && h->x[pu] < 0) {
		/* not in the current plan (it had no model then): join the step */
		h->x[pu] = 0;
		h->end[pu] = h->T_end;
		double fit = fits_before_end(b, pu, now);
		if (fit >= minb) {
			h->x[pu] = fit;
			h->end[pu] = now + busy + plb__model_eval(m, fit);
		}
	}
	/* a new step when this PU is the first to finish the current one, or
	 * cannot fit half its share before its planned end (it turned slow),
	 * or has no share left in an overdue step; never twice at one instant
	 * (a storm of parked PUs) */
	if ((h->step == 0 || P->step >= h->step || (overdue && h->x[pu] < minb) ||
	     (h->x[pu] >= minb && fits_before_end(b, pu, now) < 0.5 * h->x[pu])) &&
	    !(h->step > 0 && h->t_solve == now)) {
		int rc = new_step(b, now);
		if (rc)
			return rc;
		fresh = 1;
	}
	double x = h->x[pu];
	if (!fresh)
		x = fmin(x, fits_before_end(b, pu, now));
	/* just after a speed change the sample that revealed it straddled the
	 * change and understates it: probe with a quarter of the planned time,
	 * so the next sample is all at the new speed */
	if (m->changes != P->changes) {
		P->changes = m->changes;
		x = fmin(x, plb__model_inverse(m, 0.25 * plb__model_eval(m, x), x));
	}
	/* a share may run as several blocks, each bounded (block_limit) */
	double share = x, lim = block_limit_uncapped(b, pu, now, busy);
	double cap = fmin(plb__model_cap(m), lim);
	if (x > cap)
		x = fmax(cap, reprobe(b, pu, now, busy, fmin(x, lim)));
	/* near the end, a rest of the share that would run as a block mostly
	 * its fixed cost runs with this one (stretch_time's rule, at the
	 * split), within the cliff cap: a block after it would be mostly
	 * fixed cost too. Earlier, the rest is planned again at the PU's next
	 * request (config/sim/large-1024: merging there cost 0.7% over seeds
	 * 1-4). */
	if (share > x && share <= plb__model_cap(m)) {
		double c2 = 2 * fixed_cost(b, pu);
		if (h->T_all - now - busy - plb__model_eval(m, share) < c2 &&
		    plb__model_eval(m, share - x) < c2)
			x = share;
	}
	x = link_limit(b, pu, now, busy, x);
	if (x < minb) {
		/* it fits before its planned end, or before the last busy PU
		 * is predicted to finish: then it delays nobody; or the busy
		 * PUs could not finish the pool sooner */
		double t = busy + plb__model_eval_memo(&b->model[pu], minb);
		int fits = t <= 1.1 * (h->end[pu] - now) || t <= plb__others_free_in(b, pu, now) ||
			   busy_cannot_finish_minb(b, pu, now, busy, &helps);
		if (!fits && plb__others_busy(b, pu)) {
			P->wait_step = h->step;
			return PLB__NEXT_WAIT;
		}
		x = minb;
	}
	if (ends_late(b, pu, now, busy, x) && !busy_cannot_finish(b, pu, now, busy, x)) {
		P->wait_step = h->step;
		return PLB__NEXT_WAIT;
	}
	/* the rest of its share waits for its next request */
	h->x[pu] = share - x;
	if (h->x[pu] < minb)
		P->step = h->step;
	*units = x;
	*kind = PLB__GRANT_REGULAR;
	*step = h->step;
	return PLB__NEXT_GRANT;
}

static void hac_done(struct plb__balancer *b, int pu,
		     const struct plb__grant_rec *g, const struct plb__block_done *s)
{
	struct hac_state *h = b->ps;
	struct hac_pu *P = &h->pu[pu];
	if (g->kind == PLB__GRANT_TRAINING) {
		P->tx[0] = P->tx[1];
		P->tt[0] = P->tt[1];
		P->tx[1] = (double)g->units;
		P->tt[1] = s->exec_s;
	}
	if (g->kind != PLB__GRANT_REGULAR || g->pred_s <= 0 || b->pool == 0)
		return;
	double early = g->pred_end - s->finish;
	if (early > b->p.gap_threshold_ms * 1e-3)
		h->pu[pu].gap_s = early;
}

/* A model from an earlier run: no training; its speed changes so far are
 * not news. */
static void hac_warm(struct plb__balancer *b, int pu)
{
	struct hac_state *h = b->ps;
	h->pu[pu].phase = 3;
	h->pu[pu].changes = b->model[pu].changes;
}

const struct plb__policy plb__policy_hac = {
	.name = "plb-hac",
	.doc = "PLB-HAC: fitted curves, asynchronous equal-time virtual steps, gap filling",
	.state_size = sizeof(struct hac_state),
	.needs_model = 1,
	.split_blocks = 1,
	.redo_late = 1,
	.couple_probe = 1,
	.init = hac_init,
	.fini = hac_fini,
	.next = hac_next,
	.done = hac_done,
	.warm = hac_warm,
};
