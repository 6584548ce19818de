/* Per-PU performance model of PLB-HAC 3.1 (model.h): the balancer's only
 * knowledge of a PU. F, the compute time of a block, is a weighted least
 * squares fit (LAPACKE Householder QR) over subsets of seven basis functions
 * of x = units / W. The subset is chosen by leave-one-out error (PRESS)
 * with a price per term, among curves that are positive and increasing
 * from half the smallest sampled block up to W and do not grow beyond the
 * samples faster than within them, since the solver extrapolates up to W.
 * G, the transfer time, is a line with non-negative coefficients. E = F + G
 * is non-decreasing for every units >= 0 so that the one-variable solver
 * can invert it; evaluating and inverting allocate nothing and cost one exp
 * and one log per evaluation at most. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "balancer/model.h"

#define NB PLB__B_COUNT
/* Shape check points, log-spaced over [u_lo, W]. */
#define GRID 64
/* A unit-norm column whose distance from the span of the earlier ones
 * (|R_jj|) is below this is collinear with them: the subset is skipped, a
 * smaller one describes the same curve. */
#define RANK_TOL 1e-9
/* 1 - h_ii below this: leaving sample i out leaves the fit undetermined. */
#define HAT_TOL 1e-8
/* Selection (see plb__curve_fit): an extra term must cut the score by
 * this factor; weight of the extrapolation variance at W in the score; how
 * much steeper (log-log slope) than within the samples a curve may grow
 * beyond them. */
#define TERM_PENALTY 0.1
#define EXTRAP_WEIGHT 0.2
#define ELAST_SLACK 0.5
/* A speed change is only believed where two or more samples lie within
 * this factor of the new block's size: elsewhere a miss is as likely the
 * curve's shape. */
#define CHANGE_NEAR 3.0
/* ... and only for blocks within this factor of the sampled size range. */
#define CHANGE_RANGE 1.5

#define BIT(b) (1u << (b))
#define EXP_BITS (BIT(PLB__B_EXP) | BIT(PLB__B_XEXP))
#define LN_BITS (BIT(PLB__B_LN) | BIT(PLB__B_XLN))

/* All seven f_i(x) and df_i/dx. */
static void basis(double x, double f[NB], double d[NB])
{
	double ex = exp(x), lx = log(x);

	f[PLB__B_X] = x;
	d[PLB__B_X] = 1;
	f[PLB__B_X2] = x * x;
	d[PLB__B_X2] = 2 * x;
	f[PLB__B_X3] = x * x * x;
	d[PLB__B_X3] = 3 * x * x;
	f[PLB__B_EXP] = ex;
	d[PLB__B_EXP] = ex;
	f[PLB__B_LN] = lx;
	d[PLB__B_LN] = 1 / x;
	f[PLB__B_XEXP] = x * ex;
	d[PLB__B_XEXP] = (1 + x) * ex;
	f[PLB__B_XLN] = x * lx;
	d[PLB__B_XLN] = lx + 1;
}

/* F(units) and, if dfdu, dF/dunits. Coefficients outside the mask are 0, so
 * one expression serves every subset; exp and log only when needed. */
static double curve_fd(const struct plb__curve *c, double units, double *dfdu)
{
	const double *a = c->coef;
	double x = units / c->scale;
	double ex = 0, lx = 0;

	if (!(x >= DBL_MIN))
		x = DBL_MIN;    /* keeps ln finite; callers stay above u_lo */
	if (c->mask & EXP_BITS)
		ex = exp(x);
	if (c->mask & LN_BITS)
		lx = log(x);
	double f = x * (a[PLB__B_X] + x * (a[PLB__B_X2] + x * a[PLB__B_X3])) +
		   ex * (a[PLB__B_EXP] + x * a[PLB__B_XEXP]) +
		   lx * (a[PLB__B_LN] + x * a[PLB__B_XLN]);
	if (dfdu) {
		double d = a[PLB__B_X] +
			   x * (2 * a[PLB__B_X2] + 3 * x * a[PLB__B_X3]) +
			   ex * (a[PLB__B_EXP] + (1 + x) * a[PLB__B_XEXP]) +
			   (c->mask & BIT(PLB__B_LN) ? a[PLB__B_LN] / x : 0) +
			   a[PLB__B_XLN] * (lx + 1);
		*dfdu = d / c->scale;
	}
	return f;
}

double plb__curve_eval(const struct plb__curve *c, double units)
{
	return curve_fd(c, units, NULL);
}

double plb__curve_deriv(const struct plb__curve *c, double units)
{
	double d;

	curve_fd(c, units, &d);
	return d;
}

static int popcount(unsigned v)
{
	int k = 0;

	for (; v; v &= v - 1)
		k++;
	return k;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Block sizes closer than this factor count as one: a slope taken over a
 * few percent of size under a few percent of noise is noise (training
 * gives a slow PU 2 x_init R ~ x_init when R ~ 1/2). */
#define DISTINCT 1.2

/* Distinct sizes among v (n of them; sorted in place): clusters whose
 * neighbours lie within DISTINCT of each other count once. */
static int count_distinct(double *v, int n)
{
	int nd = 1;
	double base;

	qsort(v, (size_t)n, sizeof *v, cmp_double);
	base = v[0];
	for (int i = 1; i < n; i++)
		if (v[i] > base * DISTINCT) {
			nd++;
			base = v[i];
		}
	return nd;
}

/* The fallback, always increasing: F = c x, c = sum w t / sum w x. */
static void fit_proportional(struct plb__curve *c, const double *x,
			     const double *t, const double *w, int n)
{
	double st = 0, sx = 0;

	for (int i = 0; i < n; i++) {
		double wi = w ? w[i] : 1;
		st += wi * t[i];
		sx += wi * x[i];
	}
	c->mask = BIT(PLB__B_X);
	c->coef[PLB__B_X] = sx > 0 ? st / sx : 0;
}

/* Where a candidate curve is checked: GRID points log-spaced from u_lo to
 * W, and the smallest and largest samples (basis values and derivatives). */
struct grid {
	double x[GRID], v[GRID][NB], d[GRID][NB];
	double xs[2], vs[2][NB], ds[2][NB];
};

/* F and x F'/F (elasticity: the log-log slope) from basis values. */
static double fe(const double *coef, unsigned mask, const double *v,
		 const double *d, double x, double *el)
{
	double f = 0, df = 0;

	for (int j = 0; j < NB; j++) {
		if (!(mask & BIT(j)))
			continue;
		f += coef[j] * v[j];
		df += coef[j] * d[j];
	}
	*el = x * df / f;
	return f;
}

/* A usable curve is positive and increasing on the grid, and beyond the
 * largest sample its log-log slope stays below max(1, the steepest within
 * the samples) + ELAST_SLACK: growth the samples do not show must not
 * decide how much data the solver gives (a spurious x^3 or x e^x term
 * barely visible in the samples can grow 100-fold up to W). */
static int shape_ok(const double *coef, unsigned mask, const struct grid *gr)
{
	double f, e, prev = 0, el[GRID], emax = 1;

	for (int s = 0; s < 2; s++) {
		if (!(fe(coef, mask, gr->vs[s], gr->ds[s], gr->xs[s], &e) > 0))
			return 0;
		emax = fmax(emax, e);
	}
	for (int g = 0; g < GRID; g++) {
		f = fe(coef, mask, gr->v[g], gr->d[g], gr->x[g], &el[g]);
		if (!(f > 0) || !(el[g] > 0) || !isfinite(f) || f < prev)
			return 0;
		if (gr->x[g] >= gr->xs[0] && gr->x[g] <= gr->xs[1])
			emax = fmax(emax, el[g]);
		prev = f;
	}
	for (int g = 0; g < GRID; g++)
		if (gr->x[g] > gr->xs[1] && el[g] > emax + ELAST_SLACK)
			return 0;
	return 1;
}

/* Workspace of one fit, carved from one allocation. */
struct fitws {
	double *x, *sw, *b, *col[NB], *q, *srt;
	struct grid gr;
};

/* Least squares on the columns in mask, scored by how well it predicts:
 * PRESS / |b|^2 (the leave-one-out error, relative) plus the squared
 * relative standard error of F at the top of the range, top (the
 * normalised basis at W), where the solver extrapolates: a term that the
 * samples barely determine must not decide the curve far beyond them.
 * Returns 0 and fills coef (per basis function of x) and *score, or -1 if
 * the subset is rank deficient or (if loo) a sample's leave-one-out
 * prediction is undefined. */
static int fit_subset(const struct fitws *ws, const double *norm,
		      const double *top, double bsq, int n, unsigned mask,
		      int loo, double coef[NB], double *score)
{
	int idx[NB], k = 0;
	double tau[NB + 1], work[NB + 1], c[NB], R[NB][NB];

	for (int j = 0; j < NB; j++)
		if (mask & BIT(j))
			idx[k++] = j;
	/* QR of [A_S | b]: Householder leaves the first k columns' factors as
	 * for A_S alone, and the last column's top k entries are Q^T b. */
	for (int j = 0; j < k; j++)
		memcpy(ws->q + (size_t)j * n, ws->col[idx[j]],
		       (size_t)n * sizeof(double));
	memcpy(ws->q + (size_t)k * n, ws->b, (size_t)n * sizeof(double));
	if (LAPACKE_dgeqr2_work(LAPACK_COL_MAJOR, n, k + 1, ws->q, n, tau,
				work) != 0)
		return -1;
	for (int j = 0; j < k; j++) {
		for (int i = 0; i <= j; i++)
			R[i][j] = ws->q[i + (size_t)j * n];
		if (!(fabs(R[j][j]) > RANK_TOL))
			return -1;
	}
	for (int j = k - 1; j >= 0; j--) {
		double s = ws->q[j + (size_t)k * n];
		for (int l = j + 1; l < k; l++)
			s -= R[j][l] * c[l];
		c[j] = s / R[j][j];
	}
	/* h_ii = |R^-T a_i|^2; the leave-one-out residual is r_i / (1 - h_ii). */
	double press = 0, rss = 0;
	for (int i = 0; i < n; i++) {
		double z[NB], h = 0, r = ws->b[i];
		for (int j = 0; j < k; j++) {
			double a = ws->col[idx[j]][i], s = a;
			for (int l = 0; l < j; l++)
				s -= R[l][j] * z[l];
			z[j] = s / R[j][j];
			h += z[j] * z[j];
			r -= a * c[j];
		}
		if (!(1 - h > HAT_TOL)) {
			if (loo)
				return -1;
			h = 0;
		}
		rss += r * r;
		r /= 1 - h;
		press += r * r;
	}
	/* Var F(W) = sigma^2 |R^-T a(W)|^2, sigma^2 = rss / (n - k). */
	double z[NB], zz = 0, ftop = 0;
	for (int j = 0; j < k; j++) {
		double s = top[idx[j]];
		for (int l = 0; l < j; l++)
			s -= R[l][j] * z[l];
		z[j] = s / R[j][j];
		zz += z[j] * z[j];
		ftop += top[idx[j]] * c[j];
	}
	double se2 = n > k ? rss / (n - k) * zz / (ftop * ftop) : 0;
	*score = press / bsq + EXTRAP_WEIGHT * se2;
	if (!(ftop > 0) || !isfinite(*score))
		return -1;
	memset(coef, 0, NB * sizeof(double));
	for (int j = 0; j < k; j++)
		coef[idx[j]] = c[j] / norm[idx[j]];
	return 0;
}

/* The selection rule. Candidates: every subset of 1..min(max_terms,
 * distinct sizes - 1) basis functions whose design has full rank, whose
 * leave-one-out predictions all exist, and whose curve passes shape_ok.
 * The lowest (PRESS / |b|^2 + EXTRAP_WEIGHT * relvar F(W)) * 1.1^terms
 * wins. No candidate (or one distinct size): F = c x. Why not plain
 * PRESS with a 2% tie: on 32 samples with 5% noise it gave a line 2 or 3
 * terms 3 times in 10, and some fits were 1000-fold off at W. */
int plb__curve_fit(struct plb__curve *c, double scale, const double *units,
		   const double *t, const double *w, int n, int max_terms)
{
	if (!c || !units || !t || n < 1 || !(scale > 0) || !isfinite(scale))
		return PLB_EINVAL;
	double wsum = 0, umin = INFINITY, umax = 0;
	for (int i = 0; i < n; i++) {
		if (!(units[i] > 0) || !isfinite(units[i]) || !(t[i] >= 0) ||
		    !isfinite(t[i]))
			return PLB_EINVAL;
		if (w && (!(w[i] >= 0) || !isfinite(w[i])))
			return PLB_EINVAL;
		wsum += w ? w[i] : 1;
		umin = fmin(umin, units[i]);
		umax = fmax(umax, units[i]);
	}
	if (!(wsum > 0))
		return PLB_EINVAL;
	if (max_terms < 1)
		max_terms = 1;
	if (max_terms > NB)
		max_terms = NB;

	struct fitws ws;
	double *mem = malloc((size_t)n * (4 + 2 * NB + 1) * sizeof(double));
	if (!mem)
		return PLB_ENOMEM;
	ws.x = mem;
	ws.sw = ws.x + n;
	ws.b = ws.sw + n;
	ws.srt = ws.b + n;
	for (int j = 0; j < NB; j++)
		ws.col[j] = ws.srt + n + (size_t)j * n;
	ws.q = ws.col[NB - 1] + n;      /* n x (NB + 1) */

	memset(c, 0, sizeof *c);
	c->scale = scale;
	for (int i = 0; i < n; i++) {
		ws.x[i] = units[i] / scale;
		ws.srt[i] = ws.x[i];
	}
	int kmax = count_distinct(ws.srt, n) - 1;
	if (kmax > max_terms)
		kmax = max_terms;
	if (kmax < 1) {
		/* One block size says nothing about shape: proportional. */
		fit_proportional(c, ws.x, t, w, n);
		free(mem);
		return 0;
	}

	/* sqrt(w)-scaled design with unit-norm columns (conditioning); a
	 * column that is zero or overflows (ln 1, e^x of huge x) is unusable. */
	double norm[NB];
	unsigned bad = 0;
	for (int i = 0; i < n; i++) {
		double f[NB], d[NB];
		ws.sw[i] = w ? sqrt(w[i]) : 1;
		ws.b[i] = ws.sw[i] * t[i];
		basis(ws.x[i], f, d);
		for (int j = 0; j < NB; j++)
			ws.col[j][i] = ws.sw[i] * f[j];
	}
	for (int j = 0; j < NB; j++) {
		double s = 0;
		for (int i = 0; i < n; i++)
			s += ws.col[j][i] * ws.col[j][i];
		norm[j] = sqrt(s);
		if (!(norm[j] > 0) || !isfinite(norm[j])) {
			bad |= BIT(j);
			continue;
		}
		for (int i = 0; i < n; i++)
			ws.col[j][i] /= norm[j];
	}

	/* The curve must hold from half the smallest block (below, E is held
	 * flat) to W, where the solver may extrapolate. */
	struct grid *gr = &ws.gr;
	double glo = umin / 2 / scale, ghi = fmax(scale, umax) / scale;
	for (int g = 0; g < GRID; g++) {
		double x = g == GRID - 1 ? ghi
			   : glo * pow(ghi / glo, (double)g / (GRID - 1));
		gr->x[g] = x;
		basis(x, gr->v[g], gr->d[g]);
	}
	gr->xs[0] = umin / scale;
	gr->xs[1] = umax / scale;
	for (int s = 0; s < 2; s++)
		basis(gr->xs[s], gr->vs[s], gr->ds[s]);

	double top[NB], bsq = 0;
	for (int j = 0; j < NB; j++)
		top[j] = bad & BIT(j) ? 0 : gr->v[GRID - 1][j] / norm[j];
	for (int i = 0; i < n; i++)
		bsq += ws.b[i] * ws.b[i];
	if (!(bsq > 0))
		bsq = 1;

	/* The lowest score, with a factor (1 + TERM_PENALTY) per term so that
	 * an extra term must buy a real gain; the floor makes rounding-level
	 * scores (exact data) tie, and then the fewest terms win. */
	double best = INFINITY, best_c[NB];
	unsigned pick = 0;
	for (unsigned mask = 1; mask < BIT(NB); mask++) {
		int k = popcount(mask);
		double coef[NB], sc;
		if (k > kmax || (mask & bad))
			continue;
		if (fit_subset(&ws, norm, top, bsq, n, mask, 1, coef, &sc) != 0)
			continue;
		sc = (sc + 1e-20) * pow(1 + TERM_PENALTY, k);
		/* the shape check costs most: only for a new best */
		if (sc < best && shape_ok(coef, mask, gr)) {
			best = sc;
			pick = mask;
			memcpy(best_c, coef, sizeof coef);
		}
	}
	/* Two sizes (the training blocks): one term cannot follow a fixed
	 * cost plus a rate (a GPU's time rises 1.2-fold from x_init to 2
	 * x_init, which neither x nor e^x matches), so latency + rate, ~ a e^x
	 * + b x, goes through both when a, b >= 0; cross-validation has
	 * nothing to judge it by. */
	unsigned lin = BIT(PLB__B_EXP) | BIT(PLB__B_X);
	double coef[NB], sc;
	if (kmax == 1 && max_terms >= 2 && !(bad & lin) &&
	    fit_subset(&ws, norm, top, bsq, n, lin, 0, coef, &sc) == 0 &&
	    coef[PLB__B_EXP] >= 0 && coef[PLB__B_X] >= 0 &&
	    shape_ok(coef, lin, gr)) {
		pick = lin;
		memcpy(best_c, coef, sizeof coef);
	}
	if (pick) {
		c->mask = pick;
		memcpy(c->coef, best_c, sizeof c->coef);
	} else {
		fit_proportional(c, ws.x, t, w, n);
	}
	free(mem);
	return 0;
}

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
		    const struct plb_params *p)
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
	F = curve_fd(&m->F, u, &dF);
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

int plb__model_add(struct plb__model *m, double units, double exec_s,
		   double xfer_s)
{
	if (!m || !m->s || !(units > 0) || !isfinite(units) ||
	    !(exec_s >= 0) || !isfinite(exec_s) || !(xfer_s >= 0) ||
	    !isfinite(xfer_s))
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

	struct plb__curve F;
	rel_weights(te, w, n);
	int rc = plb__curve_fit(&F, m->W, u, te, w, n, m->max_terms);
	if (rc != 0) {
		free(mem);
		return rc;
	}
	double umin = INFINITY;
	for (int i = 0; i < n; i++) {
		x[i] = u[i] / m->W;
		umin = fmin(umin, u[i]);
	}
	rel_weights(tx, w, n);
	fit_line(x, tx, w, n, &m->g1, &m->g0);

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
		m->s[m->head] = ns;
		m->head = (m->head + 1) % m->cap;
	} else {
		m->s[(m->head + m->n) % m->cap] = ns;
		m->n++;
	}
	m->F = F;
	m->u_lo = umin / 2;
	m->nfits++;
	free(mem);
	return 0;
}

double plb__model_inverse(const struct plb__model *m, double t,
			  double max_units)
{
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
		if (!(xn > lo && xn < hi) || fabs(2 * f) > fabs(dx_old * d)) {
			xn = (lo > 0 && hi > 4 * lo) ? sqrt(lo * hi)
						      : 0.5 * (lo + hi);
		} else if (fabs(xn - x) <= 1e-14 * x) {
			return xn;
		}
		dx_old = dx;
		dx = xn - x;
		x = xn;
	}
	return lo;
}
