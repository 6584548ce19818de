/* Per-PU performance model of PLB-HAC 3.1 (model.h): the balancer's only
 * knowledge of a PU. F, the compute time of a block, is fitted by fit.c;
 * G, the transfer time, is a line with non-negative coefficients. E = F + G
 * is non-decreasing for every units >= 0 so that the one-variable solver
 * can invert it; evaluating and inverting allocate nothing. A sample far
 * off its prediction is taken as a speed change and rescales the older
 * samples. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/assert.h"
#include "balancer/model.h"

/* A speed change is only believed where two or more samples lie within
 * this factor of the new block's size: elsewhere a miss is as likely the
 * curve's shape. */
#define CHANGE_NEAR 3.0
/* ... and only for blocks within this factor of the sampled size range. */
#define CHANGE_RANGE 1.5
/* A block whose throughput is this much below the best measured at a
 * smaller size marks a cliff (model.h): well above what 8% noise on two
 * samples gives (about 11%), well below a cliff of 2.5x per unit or more
 * seen at 1.5x its size (33%). */
#define CLIFF_DROP 0.25
/* One slow block alone is believed only this much below: noise, a
 * neighbour or a device warming up seldom costs half, a cliff of 2.5x per
 * unit seen at twice its size does. */
#define CLIFF_DROP_ONE 0.5
/* A block shorter than this sets no best rate for a fall to be measured
 * against: its time is as much the timer, the dispatch and a cache that
 * holds the whole block as the device's rate at that size (on a real CPU
 * a 64-point k-means block ran 2 us, 3x the rate of large blocks that
 * stream from memory, and capped every block of that PU at 120 points,
 * each paying a millisecond of round trip that no sample shows). */
#define CLIFF_MIN_S 1e-3
/* A block larger than every block that ran near the best throughput, and
 * this much below it (or 3 x the scatter of the samples: soft_low,
 * where that is more), stops growth (x_soft): no block is planned past
 * the largest one that ran near the best. Too little to call a cliff (it
 * may be a slow period or noise, so it is not carried to another run as
 * x_fall is), enough to say that a larger block is a bet against the
 * samples: a block that enters a cliff only partly slows by less than
 * CLIFF_DROP (a GPU whose time per unit jumped 4.7x past 89,872 units ran
 * a block of 97,765 23% below its best rate), and the next, larger one
 * would run wholly past it. It holds after the slow block has left the
 * window (a cliff:22 GPU's 34% slow block left it 32 blocks later, and
 * the next block, 4x the largest, ran wholly past the cliff). A false
 * alarm costs little: the blocks it allows ran at the best rate measured. */
#define CLIFF_SOFT 0.05

/* Relative-error weights 1/t^2: block times span orders of magnitude and
 * the noise is multiplicative, so every block should count alike rather
 * than the largest ones alone. The floor keeps a zero time from taking all
 * the weight. */
static void rel_weights(const double *t, double *w, int n)
{
	double tmax = 0;

	for (int i = 0; i < n; i++)
		tmax = fmax(tmax, t[i]);
	double floor = tmax > 0 ? 1e-3 * tmax : 1;
	for (int i = 0; i < n; i++) {
		double d = fmax(t[i], floor);
		w[i] = 1 / (d * d);
	}
}

/* G = g1 x + g0 (x = units / W), weighted least squares with g1, g0 >= 0:
 * the unconstrained line if feasible, else the better of the two edges
 * (through the origin, or flat). */
static void fit_line(const double *x, const double *t, const double *w, int n,
		     double *g1, double *g0)
{
	double sw = 0, sx = 0, st = 0, sxx = 0, sxt = 0;

	for (int i = 0; i < n; i++) {
		sw += w[i];
		sx += w[i] * x[i];
		st += w[i] * t[i];
		sxx += w[i] * x[i] * x[i];
		sxt += w[i] * x[i] * t[i];
	}
	double mx = sx / sw, mt = st / sw, cxx = 0, cxt = 0;
	for (int i = 0; i < n; i++) {
		double dx = x[i] - mx;
		cxx += w[i] * dx * dx;
		cxt += w[i] * dx * (t[i] - mt);
	}
	double prop = sxx > 0 ? sxt / sxx : 0;
	if (!(cxx > 1e-18 * sxx)) {
		/* One block size: latency and bandwidth cannot be told apart. */
		*g1 = prop;
		*g0 = 0;
		return;
	}
	double a1 = cxt / cxx, a0 = mt - a1 * mx;
	if (a1 >= 0 && a0 >= 0) {
		*g1 = a1;
		*g0 = a0;
		return;
	}
	double e_prop = 0, e_flat = 0;
	for (int i = 0; i < n; i++) {
		double rp = t[i] - prop * x[i], rf = t[i] - mt;
		e_prop += w[i] * rp * rp;
		e_flat += w[i] * rf * rf;
	}
	if (e_prop <= e_flat) {
		*g1 = prop;
		*g0 = 0;
	} else {
		*g1 = 0;
		*g0 = mt;
	}
}

int plb__model_init(struct plb__model *m, double W,
		    const struct plb__params *p)
{
	if (!m || !p || !(W > 0) || !isfinite(W) || !(p->model_window >= 1))
		return PLB_EINVAL;
	memset(m, 0, sizeof *m);
	m->cap = (int)fmin(p->model_window, 1 << 20);
	m->s = calloc((size_t)m->cap, sizeof *m->s);
	if (!m->s)
		return PLB_ENOMEM;
	m->W = W;
	m->max_terms = (int)p->model_max_terms;
	m->change_threshold = p->change_threshold;
	m->F.scale = W;
	m->x_fall = m->x_fall_kept = m->x_soft = m->x_soft_kept = m->x_cap = INFINITY;
	m->memo_x = NAN;
	return 0;
}

void plb__model_fini(struct plb__model *m)
{
	if (!m)
		return;
	free(m->s);
	memset(m, 0, sizeof *m);
}

int plb__model_ready(const struct plb__model *m)
{
	return m && m->n > 0;
}

/* E(u) and dE/du. Below u_lo E is held at E(u_lo), a conservative fixed
 * cost; beyond W (never asked by the solver) it goes on along the tangent
 * at W, so E is non-decreasing everywhere. f and g, if not NULL, get the
 * F and G parts. */
static double model_e(const struct plb__model *m, double u, double *dedu,
		      double *f, double *g)
{
	double ext = 0, dF, F, G, d;
	int held = 0;

	if (m->n == 0) {
		F = G = d = 0;
		goto out;
	}
	if (!(u >= m->u_lo)) {
		u = m->u_lo;
		held = 1;
	}
	if (u > m->W) {
		ext = u - m->W;
		u = m->W;
	}
	F = plb__curve_eval_d(&m->F, u, &dF);
	if (ext > 0 && dF > 0)
		F += dF * ext;
	G = m->g1 * ((u + ext) / m->W) + m->g0;
	d = held ? 0 : fmax(dF + m->g1 / m->W, 0);
out:
	if (dedu)
		*dedu = d;
	if (f)
		*f = F;
	if (g)
		*g = G;
	return F + G;
}

double plb__model_eval(const struct plb__model *m, double units)
{
	return model_e(m, units, NULL, NULL, NULL);
}

double plb__model_eval_memo(struct plb__model *m, double units)
{
	if (!(m->memo_fits == m->nfits && m->memo_n == m->n && m->memo_x == units)) {
		m->memo_e = model_e(m, units, NULL, NULL, NULL);
		m->memo_x = units;
		m->memo_fits = m->nfits;
		m->memo_n = m->n;
	}
	return m->memo_e;
}

double plb__model_deriv(const struct plb__model *m, double units)
{
	double d;

	model_e(m, units, &d, NULL, NULL);
	return d;
}

double plb__model_compute(const struct plb__model *m, double units)
{
	double f;

	model_e(m, units, NULL, &f, NULL);
	return f;
}

double plb__model_xfer(const struct plb__model *m, double units)
{
	double g;

	model_e(m, units, NULL, NULL, &g);
	return g;
}

static const struct plb__sample *sample_at(const struct plb__model *m, int i)
{
	return &m->s[(m->head + i) % m->cap];
}

/* The cap in force: x_cap, never below x_floor. */
static double cap_of(const struct plb__model *m)
{
	return fmax(m->x_cap, m->x_floor);
}

/* The ratio measured / predicted if the sample (units, total) says the PU
 * changed speed, else 1. Believed only where the fit is known to hold: two
 * or more stored samples within CHANGE_NEAR of this size (the training
 * steps x_init -> 2 x_init of a saturating GPU would otherwise look like a
 * 2x speed-up, and a first small block after many large ones like a
 * slow-down), and a miss well beyond the fit's own error there (3 x the
 * RMS of those samples' log residuals). */
static double speed_change(const struct plb__model *m, double units,
			   double total)
{
	double ss = 0, lnear = log(CHANGE_NEAR), umin = INFINITY, umax = 0;
	int near = 0;

	if (m->n == 0 || !(total > 0))
		return 1;
	/* beyond the sampled sizes a miss is as likely the fit's extrapolation */
	for (int i = 0; i < m->n; i++) {
		umin = fmin(umin, sample_at(m, i)->units);
		umax = fmax(umax, sample_at(m, i)->units);
	}
	if (units < umin / CHANGE_RANGE || units > umax * CHANGE_RANGE)
		return 1;
	/* past the cap the fit bends with the fall it is capped for: a probe
	 * between the two (plb-hac's reprobe) that ran at the best rate read
	 * as a 1.5x speed-up, which rescaled the older samples and set the
	 * fall at the probe's size */
	if (isfinite(m->x_cap) && units > cap_of(m))
		return 1;
	for (int i = 0; i < m->n; i++) {
		const struct plb__sample *s = sample_at(m, i);
		double meas = s->exec_s + s->xfer_s;
		if (fabs(log(s->units / units)) > lnear)
			continue;
		double e = model_e(m, s->units, NULL, NULL, NULL);
		if (meas > 0 && e > 0) {
			double l = log(meas / e);
			ss += l * l;
			near++;
		}
	}
	double pred = model_e(m, units, NULL, NULL, NULL);
	if (!(pred > 0))
		return 1;
	if (m->after_change) {
		/* the sample that revealed a change straddled it: this one, the
		 * first wholly at the new speed, says how big it really is */
		double r = total / pred;
		return fabs(log(r)) > log1p(m->change_threshold) ? r : 1;
	}
	if (near < 2)
		return 1;
	double r = total / pred, lr = fabs(log(r));
	if (lr > log1p(m->change_threshold) && lr > 3 * sqrt(ss / near))
		return r;
	return 1;
}

/* Sample i's throughput, units per second: INFINITY for a block that took
 * no measurable time (never a fall, never the best). */
static double sample_rate(const struct plb__model *m, int i)
{
	const struct plb__sample *s = sample_at(m, i);
	double t = s->exec_s + s->xfer_s;
	return t > 0 ? s->units / t : INFINITY;
}

/* The newest PLB__TS_MAX samples of umin to umax units, as sizes u[] and
 * times t[] (compute and transfer); returns how many. */
static int newest_in(const struct plb__model *m, double umin, double umax, double *u, double *t)
{
	int n = 0;
	for (int i = m->n - 1; i >= 0 && n < PLB__TS_MAX; i--) {
		const struct plb__sample *s = sample_at(m, i);
		if (s->units >= umin && s->units <= umax) {
			u[n] = s->units;
			t[n++] = s->exec_s + s->xfer_s;
		}
	}
	return n;
}

/* The throughput below which a block larger than every block that ran
 * near the best rate `best` (measured at `ubest` units) is a soft fall:
 * CLIFF_SOFT below it, or 3 x the scatter of the newest samples of
 * ubest / SOFT_SPAN to ubest units where that is more. Their scatter
 * about a Theil-Sen line through them, not about the fit: the fit bends
 * towards the slow block it is to judge, and a GPU whose blocks of up to
 * 7,948 units had run within 1% of a line read 6% of scatter about the
 * fit, let a block of 31,792 run 28% slow pass as noise, and was given one
 * of 55,008 that ran 3x slow (cliff:22 of the robustness bench). Over a
 * span of sizes as narrow as this a line holds a device's curve: over
 * 1,024 to 32,768 units the same bend (a GPU filling up) read as 7%
 * scatter, and a block 6% slow past a cliff went on to one of 123,751.
 * With fewer than three such samples, their scatter about the fit. */
#define SOFT_SPAN 8

/* Adds a time t's squared log deviation from its prediction e to *ss and
 * counts it in *k, where both are positive. */
static void add_log_dev(double t, double e, double *ss, int *k)
{
	if (e > 0 && t > 0) {
		*ss += log(t / e) * log(t / e);
		(*k)++;
	}
}

static double soft_low(const struct plb__model *m, double best, double ubest)
{
	double u[PLB__TS_MAX], t[PLB__TS_MAX], slope = 0, c = 0, ss = 0;
	int n = newest_in(m, ubest / SOFT_SPAN, ubest, u, t), k = 0;
	if (n >= 3) {
		plb__theil_sen(u, t, n, &slope, &c);
		for (int i = 0; i < n; i++) {
			add_log_dev(t[i], c + slope * u[i], &ss, &k);
		}
	}
	if (k < 3) {
		ss = k = 0;
		/* too few to say how far a line's blocks scatter (two lie on
		 * it whatever the noise): about the fit, the samples up to
		 * ubest; an 8%-noise CPU's two training blocks 5% apart were
		 * a fall to a scatter of 0, and its blocks stayed at 1,024
		 * units for the rest of the run */
		for (int i = 0; i < m->n; i++) {
			const struct plb__sample *s = sample_at(m, i);
			if (s->units <= ubest)
				add_log_dev(s->exec_s + s->xfer_s,
					    model_e(m, s->units, NULL, NULL, NULL), &ss, &k);
		}
	}
	return best * fmin(1 - CLIFF_SOFT, exp(-3 * sqrt(ss / (k > 0 ? k : 1))));
}

/* How far below a rate its own noise takes a block of this PU, as a
 * factor: exp of -3 x the scatter of the log rate of blocks of about one
 * size (within NEAR_SIZE), from the pairs of such samples up to ubest
 * units (the sizes that ran near the best rate) that took CLIFF_MIN_S or
 * more (shorter ones scatter with the timer), among the newest
 * NOISE_SAMPLES (the pairs are a square of them, and model_window may
 * hold thousands). 1 where no two samples are of one size: the curve's
 * shape, not noise, would part them. */
#define NEAR_SIZE 1.25
#define NOISE_SAMPLES 64
static double rate_noise(const struct plb__model *m, double ubest)
{
	double u[NOISE_SAMPLES], lr[NOISE_SAMPLES], ss = 0;
	int n = 0, k = 0;
	for (int i = m->n > NOISE_SAMPLES ? m->n - NOISE_SAMPLES : 0; i < m->n; i++) {
		const struct plb__sample *s = sample_at(m, i);
		double r = sample_rate(m, i);
		if (s->units <= ubest && s->exec_s + s->xfer_s >= CLIFF_MIN_S && isfinite(r) && r > 0) {
			u[n] = s->units;
			lr[n++] = log(r);
		}
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (fmax(u[i], u[j]) <= NEAR_SIZE * fmin(u[i], u[j])) {
				/* a difference of two draws: half its square */
				ss += (lr[i] - lr[j]) * (lr[i] - lr[j]) / 2;
				k++;
			}
	return k > 0 ? fmin(1, exp(-3 * sqrt(ss / k))) : 1;
}

/* E^-1(t_floor), kept with the curve it inverts (find_cliff runs after
 * every fit). */
static void find_floor(struct plb__model *m)
{
	m->x_floor = m->t_floor > 0 && m->n > 0 ? plb__model_inverse(m, m->t_floor, m->W) : 0;
}

/* Whether slow sample i (rate r) is explained by its time rather than its
 * size: the first LATER_N blocks smaller than it that ran after it (each
 * CLIFF_MIN_S or longer) were none of them CLIFF_DROP faster per unit. Past
 * a cliff a block is slow whenever it runs, and the smaller blocks after
 * it, below the cliff, run at the PU's rate; a block slowed by its time (a
 * GPU beside a CPU team whose copies compete with its own, a CPU core
 * shared with other processes) has smaller blocks as slow after it, and
 * capping the PU there costs every later block its fixed cost for a
 * slowdown that no block size avoids. */
#define LATER_N 2
static int explained_later(const struct plb__model *m, int i, double r)
{
	double u = sample_at(m, i)->units, fastest = 0;
	int k = 0;
	for (int j = i + 1; j < m->n && k < LATER_N; j++) {
		const struct plb__sample *s = sample_at(m, j);
		if (s->units < u && s->exec_s + s->xfer_s >= CLIFF_MIN_S) {
			fastest = fmax(fastest, sample_rate(m, j));
			k++;
		}
	}
	return k == LATER_N && fastest * (1 - CLIFF_DROP) < r;
}

/* The best rate among samples from..n-1 (*best, at *ubest units), the
 * threshold below it that makes a larger block slow (*low, lowered with
 * the PU's noise), and the smallest block of a fall those samples show:
 * two slow blocks, or one steep, not explained by their time
 * (explained_later); INFINITY for none. */
static double window_fall(const struct plb__model *m, int from, double *best_out,
			  double *ubest_out, double *low_out)
{
	double best = 0, ubest = 0;
	for (int i = from; i < m->n; i++) {
		double r = sample_rate(m, i);
		const struct plb__sample *s = sample_at(m, i);
		if (isfinite(r) && r > best && s->exec_s + s->xfer_s >= CLIFF_MIN_S) {
			best = r;
			ubest = s->units;
		}
	}
	*best_out = best;
	*ubest_out = ubest;
	*low_out = 0;
	if (!(best > 0))
		return INFINITY;
	/* where the PU's own noise reaches further than CLIFF_DROP, the
	 * thresholds go down with it: a real CPU sharing two cores with
	 * three processes (the k-means demo's first iteration, its points
	 * touched for the first time) ran two blocks of 16,384 points in 3.0
	 * and 7.2 ms, and a block of 37,677 29% below its best rate then
	 * read as a cliff, which caps every later block, in every later
	 * iteration (the models are kept) */
	double low = (1 - CLIFF_DROP) * best, scale = 1;
	/* (the scan of pairs only where some block is slow at all: it can
	 * only lower the thresholds, and this runs at every sample) */
	for (int i = from; i < m->n; i++)
		if (sample_at(m, i)->units > ubest && sample_rate(m, i) < low) {
			scale = fmin(1, rate_noise(m, ubest) / (1 - CLIFF_DROP));
			low *= scale;
			break;
		}
	*low_out = low;
	/* slow blocks: larger than the best one, CLIFF_DROP below its rate */
	int nslow = 0, steep = 0;
	double first = INFINITY;
	for (int i = from; i < m->n; i++) {
		double u = sample_at(m, i)->units, r = sample_rate(m, i);
		if (u > ubest && r < low && !explained_later(m, i, r)) {
			nslow++;
			steep |= r < (1 - CLIFF_DROP_ONE) * best * scale;
			first = fmin(first, u);
		}
	}
	return nslow >= 2 || steep ? first : INFINITY;
}

/* x_fall, x_soft and x_cap from the stored samples (model.h), and x_floor. */
static void find_cliff(struct plb__model *m)
{
	find_floor(m);
	double best, ubest, low;
	double fall_w = window_fall(m, 0, &best, &ubest, &low);
	m->x_fall = fmin(m->x_fall_kept, fall_w);
	if (!(best > 0))
		return;
	/* a soft fall: blocks larger than every one that ran near the best,
	 * or one kept from samples that left the window, unless a block as
	 * large has run near the best since */
	double sl = soft_low(m, best, ubest), good = 0, slow = INFINITY;
	for (int i = 0; i < m->n; i++)
		if (sample_rate(m, i) >= sl)
			good = fmax(good, sample_at(m, i)->units);
	for (int i = 0; i < m->n; i++)
		if (sample_at(m, i)->units > good)
			slow = fmin(slow, sample_at(m, i)->units);
	if (good >= m->x_soft_kept)
		m->x_soft_kept = INFINITY;
	m->x_soft = fmin(slow, m->x_soft_kept);
	double fall = fmin(m->x_fall, m->x_soft);
	if (fall == INFINITY) {
		m->x_cap = INFINITY;
		return;
	}
	if (fall == m->x_fall)
		sl = low;
	double cap = 0;
	for (int i = 0; i < m->n; i++) {
		double u = sample_at(m, i)->units;
		if (u < fall && u > cap && sample_rate(m, i) >= sl)
			cap = u;
	}
	/* no sample left below the fall: half of it, where the fall began at
	 * the latest as far as anything says */
	m->x_cap = cap > 0 ? cap : 0.5 * fall;
}

void plb__model_note_fall(struct plb__model *m, double x)
{
	if (x < m->x_fall_kept) {
		m->x_fall_kept = x;
		find_cliff(m);
	}
}

void plb__model_set_floor(struct plb__model *m, double t)
{
	if (!(t >= 0) || !isfinite(t))
		t = 0;
	if (t != m->t_floor) {
		m->t_floor = t;
		find_floor(m);
	}
}

double plb__model_cap(const struct plb__model *m)
{
	return cap_of(m);
}

/* The k-th smallest of v[0..n) (0 <= k < n), v reordered in place so
 * that v[0..k) are no larger than it (Hoare's selection, expected linear
 * time: the slopes of 16 blocks are 120 values, and an insertion sort of
 * them was a seventh of a 4096-PU simulation's time). */
static double kth_of(double *v, int n, int k)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2];
		int i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				double t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

/* The median of v[0..n) (n >= 1), reordered in place. */
static double median_of(double *v, int n)
{
	double hi = kth_of(v, n, n / 2);
	if (n % 2)
		return hi;
	double lo = v[0];
	for (int i = 1; i < n / 2; i++)
		lo = fmax(lo, v[i]);
	return 0.5 * (lo + hi);
}

int plb__theil_sen(const double *u, const double *t, int n, double *slope, double *c)
{
	double sl[PLB__TS_MAX * (PLB__TS_MAX - 1) / 2], ci[PLB__TS_MAX];
	int k = 0;
	PLB_ASSERT(n >= 1 && n <= PLB__TS_MAX);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double lo = fmin(u[i], u[j]), hi = fmax(u[i], u[j]);
			if (hi >= NEAR_SIZE * lo)
				sl[k++] = (t[i] - t[j]) / (u[i] - u[j]);
		}
	if (k)
		*slope = fmax(0, median_of(sl, k));
	for (int i = 0; i < n; i++)
		ci[i] = t[i] - *slope * u[i];
	*c = fmax(0, median_of(ci, n));
	return k;
}

double plb__model_cap_fixed(const struct plb__model *m)
{
	double u[PLB__TS_MAX], t[PLB__TS_MAX], slope = 0, c = 0;
	int n = newest_in(m, 0, cap_of(m), u, t);
	return n > 0 && plb__theil_sen(u, t, n, &slope, &c) > 0 ? c : -1;
}

double plb__model_fall_rate(const struct plb__model *m)
{
	double cap = cap_of(m), r = INFINITY;
	for (int i = 0; i < m->n; i++)
		if (sample_at(m, i)->units > cap)
			r = fmin(r, sample_rate(m, i));
	return isfinite(r) ? r : 0;
}

double plb__model_eval_split(const struct plb__model *m, double units)
{
	double c = cap_of(m);
	if (!(units > c))
		return model_e(m, units, NULL, NULL, NULL);
	return model_e(m, c, NULL, NULL, NULL) * (units / c);
}

double plb__model_deriv_split(const struct plb__model *m, double units)
{
	double c = cap_of(m);
	if (!(units > c))
		return plb__model_deriv(m, units);
	return model_e(m, c, NULL, NULL, NULL) / c;
}

double plb__model_inverse_split(const struct plb__model *m, double t,
				double max_units)
{
	double c = cap_of(m);
	if (!(max_units > c))
		return plb__model_inverse(m, t, max_units);
	double x = plb__model_inverse(m, t, c);
	if (x < c)
		return x;
	double e = model_e(m, c, NULL, NULL, NULL);
	return e > 0 ? fmin(max_units, t * c / e) : max_units;
}

/* PLB__SELECT_EVERY, PLB__SELECT_MIN_N (model.h): how often F's terms
 * are chosen again (plb__curve_fit's selection over every subset of
 * terms, at every fit of a window under PLB__SELECT_MIN_N samples) while
 * the samples stay within the sizes they were chosen on: in between, a
 * sample refits the chosen terms' weights alone (plb__curve_fit_only). A
 * sample of a size the choice has not seen, a speed change (the samples
 * rescaled) or terms that no longer pass the checks choose again at once.
 * The selection was over a third of the master's time at 4096 PUs, where
 * thousands of blocks of similar sizes end each second; the robustness
 * bench, averaged over three noise seeds, is the same either way
 * (docs/FIGURES.md). While few samples are held each one can change the
 * choice, and a curve that depended on the order its first samples came
 * in would be a curve of chance. */

/* F and G fitted to the n samples u, te, tx (w and x: scratch of n), and
 * u_lo from them; on an error (the curve's fit) the model is unchanged.
 * rescaled: the older samples were rescaled (a speed change) or loaded. */
static int refit(struct plb__model *m, const double *u, const double *te, const double *tx,
		 double *w, double *x, int n, int rescaled)
{
	struct plb__curve F;
	double umin = INFINITY, umax = 0;
	for (int i = 0; i < n; i++) {
		x[i] = u[i] / m->W;
		umin = fmin(umin, u[i]);
		umax = fmax(umax, u[i]);
	}
	rel_weights(te, w, n);
	int rc = 1;
	if (m->F.mask && n >= PLB__SELECT_MIN_N && m->since_select + 1 < PLB__SELECT_EVERY &&
	    umin >= m->sel_lo && umax <= m->sel_hi && !rescaled)
		rc = plb__curve_fit_only(&F, m->W, u, te, w, n, m->F.mask);
	if (rc == 0) {
		m->since_select++;
	} else {
		rc = plb__curve_fit_hint(&F, m->W, u, te, w, n, m->max_terms, m->F.mask);
		if (rc != 0)
			return rc;
		m->since_select = 0;
		m->sel_lo = umin;
		m->sel_hi = umax;
	}
	rel_weights(tx, w, n);
	fit_line(x, tx, w, n, &m->g1, &m->g0);
	m->F = F;
	m->u_lo = umin / 2;
	m->nfits++;
	return 0;
}

int plb__sample_ok(const struct plb__sample *s)
{
	return s->units > 0 && isfinite(s->units) && s->exec_s >= 0 && isfinite(s->exec_s) &&
	       s->xfer_s >= 0 && isfinite(s->xfer_s);
}

/* Before the oldest sample leaves the window: the fall the window shows
 * (x_fall, from the last find_cliff, where it is below x_fall_kept) is
 * kept if it would go with that sample. The window's scan again only
 * where there is such a fall: none on most PUs, and this runs at every
 * sample once the window is full. */
static void keep_fall(struct plb__model *m)
{
	double b, u, l;
	if (m->x_fall < m->x_fall_kept && window_fall(m, 1, &b, &u, &l) > m->x_fall)
		m->x_fall_kept = m->x_fall;
}

int plb__model_add(struct plb__model *m, double units, double exec_s,
		   double xfer_s)
{
	if (!m || !m->s || !plb__sample_ok(&(struct plb__sample){units, exec_s, xfer_s}))
		return PLB_EINVAL;

	/* The window after this sample, oldest first, in scratch arrays, so
	 * that nothing changes unless the refit succeeds. */
	int drop = m->n == m->cap, n = m->n - drop + 1;
	double *mem = malloc((size_t)n * 5 * sizeof(double));
	if (!mem)
		return PLB_ENOMEM;
	double *u = mem, *te = u + n, *tx = te + n, *w = tx + n, *x = w + n;

	/* A speed change rescales the old samples rather than dropping them:
	 * the curve's shape, learnt over many sizes, still holds, only its
	 * scale moved, so one sample is enough to predict again. Recent
	 * samples get no extra weight: the window already ages old ones out
	 * and a rescale puts them on the current speed. */
	double r = speed_change(m, units, exec_s + xfer_s);
	for (int i = 0; i < n - 1; i++) {
		const struct plb__sample *s = sample_at(m, i + drop);
		u[i] = s->units;
		te[i] = s->exec_s * r;
		tx[i] = s->xfer_s * r;
	}
	u[n - 1] = units;
	te[n - 1] = exec_s;
	tx[n - 1] = xfer_s;

	int rc = refit(m, u, te, tx, w, x, n, r != 1);
	if (rc != 0) {
		free(mem);
		return rc;
	}

	if (r != 1) {
		for (int i = 0; i < m->n; i++) {
			m->s[i].exec_s *= r;
			m->s[i].xfer_s *= r;
		}
		m->changes++;
	}
	m->after_change = r != 1;
	struct plb__sample ns = {units, exec_s, xfer_s};
	if (drop) {
		/* a soft fall outlives the samples that showed it, and so
		 * does a fall that the oldest sample showed: no block past it
		 * is planned again, so the window would forget the cliff */
		m->x_soft_kept = fmin(m->x_soft_kept, m->x_soft);
		keep_fall(m);
		m->s[m->head] = ns;
		m->head = (m->head + 1) % m->cap;
	} else {
		m->s[(m->head + m->n) % m->cap] = ns;
		m->n++;
	}
	find_cliff(m);
	free(mem);
	return 0;
}

double plb__model_spread(const struct plb__model *m)
{
	double s1 = 0, s2 = 0;
	int k = 0;
	for (int i = 0; i < m->n; i++) {
		const struct plb__sample *s = sample_at(m, i);
		double e = plb__model_eval(m, s->units), t = s->exec_s + s->xfer_s;
		if (!(e > 0) || !(t > 0))
			continue;
		double r = log(t / e);
		s1 += r;
		s2 += r * r;
		k++;
	}
	if (k < 3)
		return NAN;
	double v = (s2 - s1 * s1 / k) / (k - 1);
	return v > 0 ? sqrt(v) : 0;
}

int plb__model_load(struct plb__model *m, const struct plb__sample *v, int nv)
{
	if (!m || !m->s || nv < 0 || (nv && !v))
		return PLB_EINVAL;
	for (int i = 0; i < nv; i++)
		if (!plb__sample_ok(&v[i]))
			return PLB_EINVAL;
	if (nv == 0)
		return 0;
	/* the window after them: the newest cap of the samples held and v */
	int n = m->n + nv > m->cap ? m->cap : m->n + nv, skip = m->n + nv - n;
	double *mem = malloc((size_t)n * 5 * sizeof(double));
	if (!mem)
		return PLB_ENOMEM;
	double *u = mem, *te = u + n, *tx = te + n, *w = tx + n, *x = w + n;
	for (int i = skip, k = 0; i < m->n + nv; i++, k++) {
		const struct plb__sample *s = i < m->n ? sample_at(m, i) : &v[i - m->n];
		u[k] = s->units;
		te[k] = s->exec_s;
		tx[k] = s->xfer_s;
	}
	int rc = refit(m, u, te, tx, w, x, n, 1);
	if (rc == 0) {
		if (skip > 0)   /* samples leave the window: as in plb__model_add */
			m->x_fall_kept = fmin(m->x_fall_kept, m->x_fall);
		for (int i = 0; i < n; i++)
			m->s[i] = (struct plb__sample){u[i], te[i], tx[i]};
		m->head = 0;
		m->n = n;
		m->after_change = 0;
		find_cliff(m);
	}
	free(mem);
	return rc;
}

double plb__model_inverse(const struct plb__model *m, double t,
			  double max_units)
{
	int steps;
	return plb__model_inverse_steps(m, t, max_units, &steps);
}

double plb__model_inverse_steps(const struct plb__model *m, double t,
				double max_units, int *steps)
{
	*steps = 0;
	if (!(max_units > 0) || isnan(t))
		return 0;
	double fhi = model_e(m, max_units, NULL, NULL, NULL) - t;
	if (fhi <= 0)
		return max_units;
	double lo = m->u_lo, hi = max_units;
	if (!(lo < hi))
		return 0;       /* E is flat on [0, max_units] and above t */
	double flo = model_e(m, lo, NULL, NULL, NULL) - t;
	if (flo > 0)
		return 0;
	if (flo == 0)
		return lo;

	/* Safeguarded Newton (rtsafe): a Newton step when it stays inside
	 * the bracket and halves |f| fast enough, else bisection, geometric
	 * on a wide bracket since sizes span many decades. */
	double x = lo - flo * (hi - lo) / (fhi - flo), dx_old = hi - lo;
	double dx = dx_old;
	for (int it = 0; it < 100; it++) {
		++*steps;
		double d, f = model_e(m, x, &d, NULL, NULL) - t;
		if (f == 0)
			return x;
		if (f > 0)
			hi = x;
		else
			lo = x;
		if (hi - lo <= 1e-14 * hi)
			break;
		double xn = d > 0 ? x - f / d : NAN;
		/* a step below the resolution of x (xn == x: at a bracket's
		 * end) is convergence, not a step out of the bracket */
		if (fabs(xn - x) <= 1e-14 * x)
			return xn;
		if (!(xn > lo && xn < hi) || fabs(2 * f) > fabs(dx_old * d))
			xn = (lo > 0 && hi > 4 * lo) ? sqrt(lo * hi)
						      : 0.5 * (lo + hi);
		dx_old = dx;
		dx = xn - x;
		x = xn;
	}
	return lo;
}
