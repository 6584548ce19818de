/* Fitting F, a PU's compute-time curve (fit.h): weighted least squares
 * (LAPACKE Householder QR) over subsets of seven basis functions of
 * x = units / W. The subset is chosen by leave-one-out error (PRESS) with a
 * price per term, among curves that are positive and increasing from half
 * the smallest sampled block up to W and do not grow beyond the samples
 * faster than within them, nor flatter than half their secant, since the
 * solver extrapolates up to W.
 * Evaluating allocates nothing and costs one exp and one log at most. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "balancer/fit.h"

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
/* Beyond the samples a curve's slope (seconds per unit) is at least this
 * share of the samples' own: the secant from the smallest blocks to the
 * largest (see shape_ok). */
#define SLOPE_FLOOR 0.5

#define BIT(b) (1u << (b))
#define EXP_BITS (BIT(PLB__B_EXP) | BIT(PLB__B_XEXP))
#define LN_BITS (BIT(PLB__B_LN) | BIT(PLB__B_XLN))

/* All seven f_i(x) and df_i/dx, given lx = ln x. */
static void basis_lx(double x, double lx, double f[NB], double d[NB])
{
	double ex = exp(x);

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

static void basis(double x, double f[NB], double d[NB])
{
	basis_lx(x, log(x), f, d);
}

/* Coefficients outside the mask are 0, so one expression serves every
 * subset; exp and log only when needed. */
double plb__curve_eval_d(const struct plb__curve *c, double units, double *dfdu)
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
	return plb__curve_eval_d(c, units, NULL);
}

double plb__curve_deriv(const struct plb__curve *c, double units)
{
	double d;

	plb__curve_eval_d(c, units, &d);
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
	double slope;   /* least dF/dx beyond the samples */
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
 * barely visible in the samples can grow 100-fold up to W). Nor may it
 * flatten there: its slope stays at least gr->slope, SLOPE_FLOOR of the
 * samples' secant. A unit costs a device no less past its largest block
 * than the blocks measured so far showed (a GPU short of full occupancy
 * only gets steeper), and a curve flat beyond them promises throughput
 * without limit: three blocks of an offload device with a 1 s start-up,
 * 465, 636 and 1381 units in 1.67, 1.65 and 2.17 s, were fitted best (by
 * leave-one-out) by a constant that put 10,000 units at 1.95 s, where
 * they take 7.9 s, and the solver gave that device most of the rest. */
static int shape_ok(const double *coef, unsigned mask, const struct grid *gr)
{
	double f, e, prev = 0, el[GRID], fv[GRID], emax = 1;

	for (int s = 0; s < 2; s++) {
		if (!(fe(coef, mask, gr->vs[s], gr->ds[s], gr->xs[s], &e) > 0))
			return 0;
		emax = fmax(emax, e);
	}
	for (int g = 0; g < GRID; g++) {
		f = fv[g] = fe(coef, mask, gr->v[g], gr->d[g], gr->x[g], &el[g]);
		if (!(f > 0) || !(el[g] > 0) || !isfinite(f) || f < prev)
			return 0;
		if (gr->x[g] >= gr->xs[0] && gr->x[g] <= gr->xs[1])
			emax = fmax(emax, el[g]);
		prev = f;
	}
	/* el f / x is dF/dx */
	for (int g = 0; g < GRID; g++)
		if (gr->x[g] > gr->xs[1] && (el[g] > emax + ELAST_SLACK ||
					     el[g] * fv[g] < gr->slope * gr->x[g]))
			return 0;
	return 1;
}

/* SLOPE_FLOOR of the secant over the samples, per unit of x: from the mean
 * time of the blocks within DISTINCT of the smallest to that of those
 * within DISTINCT of the largest; 0 for one size or a falling secant. */
static double secant_floor(const double *x, const double *t, int n,
			   double xlo, double xhi)
{
	double tl = 0, th = 0;
	int nl = 0, nh = 0;

	if (!(xhi > xlo * DISTINCT))
		return 0;
	for (int i = 0; i < n; i++) {
		if (x[i] <= xlo * DISTINCT) {
			tl += t[i];
			nl++;
		}
		if (x[i] >= xhi / DISTINCT) {
			th += t[i];
			nh++;
		}
	}
	return fmax(0, SLOPE_FLOOR * (th / nh - tl / nl) / (xhi - xlo));
}

/* One subset's part of the factor (subsets_qr, path_qr), with its terms
 * in ascending order: its last term's column of R (rows 0..k-1, k terms),
 * the top k of Q^T b, and rq, what one more step of the QR leaves below
 * them in b's column (+-|the residual|; 0 where k = mr). A subset's R is
 * its own column and those of its prefixes (the subsets of its first
 * terms). */
struct subqr {
	double col[NB], qb[NB], rq;
};
#define SQ_NONE 0       /* not factored */
#define SQ_DONE 1
#define SQ_DEAD 2       /* a prefix's column is zero below its row: rank deficient */

/* Workspace of one fit, carved from one allocation. rf is the triangular
 * factor of one QR of the whole design and b, [A | b] = Q rf: every
 * subset's least squares is solved on its mr rows (see fit_subset). */
struct fitws {
	double *x, *sw, *b, *col[NB], *q, *srt;
	double rf[(NB + 1) * (NB + 1)];         /* column-major, mr x (NB + 1) */
	int mr;
	struct grid gr;
	struct subqr sq[1u << NB];
	unsigned char sq_state[1u << NB];
	double work[NB + 1][(NB + 1) * (NB + 1)];       /* a factor in the making, per depth */
};

int plb__fit_reference;

/* Householder's alpha for the column x of m rows from row j, -sign(x[j])
 * |x[j..m)|, and |x[j..m)|^2 in *nrm2: where that is not > 0 the column
 * is zero there and alpha means nothing. */
static double house_alpha(const double *x, int m, int j, double *nrm2)
{
	double s = 0;
	for (int i = j; i < m; i++)
		s += x[i] * x[i];
	*nrm2 = s;
	return x[j] >= 0 ? -sqrt(s) : sqrt(s);
}

/* Step j of a Householder QR of the column-major m-row matrix a (m <= NB
 * + 1: rf's rows), on its column c, applied to the columns in `to` (bits
 * over 0..NB, NB being b): returns 1, or 0 where column c is zero from
 * row j down (no reflector; R would get that 0 on its diagonal: a
 * rank-deficient subset). Each column to which it is applied is changed
 * the same way whatever the other columns are, so a subset's factor may
 * be built step by step on its prefixes' (subsets_qr), to the bit what
 * one QR of its columns alone gives. Written out, not LAPACK's dgeqr2:
 * on so few rows the library's call overhead (its machine-constant
 * queries and careful norms) was 42% of a refit; the n-row QR of the
 * data, where accuracy is earned, is LAPACK's. */
static int reflect(double *a, int m, int j, int c, unsigned to)
{
	double *x = a + (size_t)c * m, nrm2;
	double alpha = house_alpha(x, m, j, &nrm2);
	if (!(nrm2 > 0))
		return 0;
	double v0 = x[j] - alpha, vtv = nrm2 - x[j] * x[j] + v0 * v0;
	for (int l = 0; l <= NB; l++) {
		if (!(to & BIT(l)))
			continue;
		double *y = a + (size_t)l * m, s = v0 * y[j];
		for (int i = j + 1; i < m; i++)
			s += x[i] * y[i];
		double f = 2 * s / vtv;
		y[j] -= f * v0;
		for (int i = j + 1; i < m; i++)
			y[i] -= f * x[i];
	}
	x[j] = alpha;
	return 1;
}

/* Subset mask's entry from its factor a at depth d (its last term c
 * reflected at row d): R's column, Q^T b's top and, below it in b's
 * column, what one more step would leave on the diagonal. */
static void keep_subset(struct fitws *ws, const double *a, int d, int c, unsigned mask)
{
	int m = ws->mr, k = d + 1;
	struct subqr *e = &ws->sq[mask];
	const double *bc = a + (size_t)NB * m;
	for (int i = 0; i <= d; i++) {
		e->col[i] = a[i + (size_t)c * m];
		e->qb[i] = bc[i];
	}
	e->rq = 0;
	if (k < m) {
		double nrm2, alpha = house_alpha(bc, m, k, &nrm2);
		e->rq = nrm2 > 0 ? alpha : bc[k];
	}
	ws->sq_state[mask] = SQ_DONE;
}

/* The factors of every subset of up to kmax of the terms in `use`, from
 * rf, each built on its prefix's (depth d, terms from `from` on, prefix
 * the terms so far): at 3 terms of 7 about half the arithmetic of one
 * small QR per subset, and no copies of rf's columns for each. */
static void subsets_qr(struct fitws *ws, int d, int from, unsigned prefix, unsigned use, int kmax)
{
	int m = ws->mr;
	const double *a = d == 0 ? ws->rf : ws->work[d - 1];
	for (int c = from; c < NB; c++) {
		if (!(use & BIT(c)))
			continue;
		unsigned mask = prefix | BIT(c);
		/* the later terms (where deeper subsets need them) and b */
		unsigned to = BIT(NB);
		if (d + 1 < kmax)
			to |= use & ~(BIT(c + 1) - 1);
		double *w = ws->work[d];
		for (int l = c; l <= NB; l++)
			if (l == c || (to & BIT(l)))
				memcpy(w + (size_t)l * m, a + (size_t)l * m, (size_t)m * sizeof(double));
		if (!reflect(w, m, d, c, to)) {
			ws->sq_state[mask] = SQ_DEAD;   /* and every subset it starts */
			continue;
		}
		keep_subset(ws, w, d, c, mask);
		if (d + 1 < kmax && d + 1 < m)
			subsets_qr(ws, d + 1, c + 1, mask, use, kmax);
	}
}

/* The factors of subset mask and its prefixes alone (one subset fitted:
 * plb__curve_fit_only; the two-term line after a one-term selection). */
static void path_qr(struct fitws *ws, unsigned mask)
{
	int m = ws->mr, d = 0;
	double *w = ws->work[0];
	memcpy(w, ws->rf, (size_t)m * (NB + 1) * sizeof(double));
	unsigned prefix = 0;
	for (int c = 0; c < NB; c++) {
		if (!(mask & BIT(c)))
			continue;
		prefix |= BIT(c);
		if (d >= m || !reflect(w, m, d, c, BIT(NB) | (mask & ~(BIT(c + 1) - 1)))) {
			ws->sq_state[prefix] = SQ_DEAD;
			return;
		}
		keep_subset(ws, w, d, c, prefix);
		d++;
	}
}

/* Least squares on the columns in mask, scored by how well it predicts:
 * PRESS / |b|^2 (the leave-one-out error, relative) plus the squared
 * relative standard error of F at the top of the range, top (the
 * normalised basis at W), where the solver extrapolates: a term that the
 * samples barely determine must not decide the curve far beyond them.
 * The columns in mask and b all lie in the span of the Q of one QR of
 * the whole design, [A | b] = Q rf, so min |A_S c - b| is min |rf_S c -
 * rf_b| over rf's mr <= NB + 1 rows: one QR of n rows per fit, not one
 * per subset (63 of them at three terms; the refit was 51 us of a
 * 32-sample window, most of a 4096-PU master's time), the same least
 * squares up to rounding. The leave-one-out residuals still come from
 * the n samples.
 * Returns 0 and fills coef (per basis function of x) and *score; 1 if
 * (loo) its score cannot be below `beat`; -1 if the subset is rank
 * deficient or (if loo) a sample's leave-one-out prediction is undefined.
 * Unless 0, coef is all 0 (no curve passes shape_ok) and *score INFINITY,
 * so that nothing stale is ever read from them. */
static int fit_subset(struct fitws *ws, const double *norm,
		      const double *top, double bsq, int n, unsigned mask,
		      int loo, double beat, double coef[NB], double *score)
{
	int idx[NB], k = 0;
	double c[NB], R[NB][NB], qb[NB], rq, q[(NB + 1) * (NB + 1)];
	int mr = ws->mr;

	memset(coef, 0, NB * sizeof(double));
	*score = INFINITY;

	for (int j = 0; j < NB; j++)
		if (mask & BIT(j))
			idx[k++] = j;
	/* QR of [rf_S | rf_b]: Householder leaves the first k columns' factors
	 * as for A_S alone, and the last column's top k entries are Q^T b. */
	if (plb__fit_reference) {
		/* the plain way, for tests: [A_S | b] on all n rows */
		double tau[NB + 1], work[NB + 1];
		for (int j = 0; j < k; j++)
			memcpy(ws->q + (size_t)j * n, ws->col[idx[j]], (size_t)n * sizeof(double));
		memcpy(ws->q + (size_t)k * n, ws->b, (size_t)n * sizeof(double));
		if (LAPACKE_dgeqr2_work(LAPACK_COL_MAJOR, n, k + 1, ws->q, n, tau, work) != 0)
			return -1;
		mr = n < k + 1 ? n : k + 1;
		for (int j = 0; j <= k; j++)
			for (int i = 0; i < mr; i++)
				q[i + (size_t)j * mr] = ws->q[i + (size_t)j * n];
		beat = INFINITY;
		for (int j = 0; j < k; j++) {
			for (int i = 0; i <= j; i++)
				R[i][j] = q[i + (size_t)j * mr];
			qb[j] = q[j + (size_t)k * mr];
		}
		rq = k < mr ? q[k + (size_t)k * mr] : 0;
	} else {
		if (k > mr)
			return -1;      /* more terms than samples */
		if (ws->sq_state[mask] == SQ_NONE)
			path_qr(ws, mask);
		/* R from the subset's column and its prefixes' */
		unsigned pre = 0;
		for (int j = 0; j < k; j++) {
			pre |= BIT(idx[j]);
			if (ws->sq_state[pre] != SQ_DONE)
				return -1;      /* rank deficient */
			for (int i = 0; i <= j; i++)
				R[i][j] = ws->sq[pre].col[i];
		}
		for (int j = 0; j < k; j++)
			qb[j] = ws->sq[mask].qb[j];
		rq = ws->sq[mask].rq;
	}
	for (int j = 0; j < k; j++)
		if (!(fabs(R[j][j]) > RANK_TOL))
			return -1;
	for (int j = k - 1; j >= 0; j--) {
		double s = qb[j];
		for (int l = j + 1; l < k; l++)
			s -= R[j][l] * c[l];
		c[j] = s / R[j][j];
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
	if (!(ftop > 0))
		return -1;
	/* PRESS >= rss, and rss is the residual left in the last column: a
	 * subset whose score is at least `beat` on rss alone cannot win, and
	 * skips the leave-one-out pass over the samples (the margin covers
	 * the rounding between the two rss) */
	if (loo && (rq * rq / bsq + EXTRAP_WEIGHT * (n > k ? rq * rq / (n - k) * zz / (ftop * ftop) : 0)) *
			   (1 - 1e-9) >= beat)
		return 1;
	/* h_ii = |R^-T a_i|^2; the leave-one-out residual is r_i / (1 - h_ii). */
	double press = 0, rss = 0;
	for (int i = 0; i < n; i++) {
		double zi[NB], h = 0, r = ws->b[i];
		for (int j = 0; j < k; j++) {
			double a = ws->col[idx[j]][i], s = a;
			for (int l = 0; l < j; l++)
				s -= R[l][j] * zi[l];
			zi[j] = s / R[j][j];
			h += zi[j] * zi[j];
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
	double se2 = n > k ? rss / (n - k) * zz / (ftop * ftop) : 0;
	double sc = press / bsq + EXTRAP_WEIGHT * se2;
	if (!isfinite(sc))
		return -1;
	*score = sc;
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
 * terms 3 times in 10, and some fits were 1000-fold off at W. The subset
 * `hint` (0: none) is scored first; with `only`, it alone is fitted, and
 * 1 returned where it fails the checks. */
static int fit_hint(struct plb__curve *c, double scale, const double *units,
		    const double *t, const double *w, int n, int max_terms,
		    unsigned hint, int only)
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
	double lglo = log(glo), lstep = (log(ghi) - lglo) / (GRID - 1);
	for (int g = 0; g < GRID; g++) {
		double lx = g == GRID - 1 ? log(ghi) : lglo + g * lstep;
		double x = g == GRID - 1 ? ghi : exp(lx);
		gr->x[g] = x;
		basis_lx(x, lx, gr->v[g], gr->d[g]);
	}
	gr->xs[0] = umin / scale;
	gr->xs[1] = umax / scale;
	for (int s = 0; s < 2; s++)
		basis(gr->xs[s], gr->vs[s], gr->ds[s]);
	gr->slope = secant_floor(ws.x, t, n, gr->xs[0], gr->xs[1]);

	/* one QR of [A | b], an unusable column as zeros (never in a subset) */
	for (int j = 0; j < NB; j++) {
		if (bad & BIT(j))
			memset(ws.q + (size_t)j * n, 0, (size_t)n * sizeof(double));
		else
			memcpy(ws.q + (size_t)j * n, ws.col[j], (size_t)n * sizeof(double));
	}
	memcpy(ws.q + (size_t)NB * n, ws.b, (size_t)n * sizeof(double));
	double tau[NB + 1], work[NB + 1];
	if (LAPACKE_dgeqr2_work(LAPACK_COL_MAJOR, n, NB + 1, ws.q, n, tau, work) != 0) {
		free(mem);
		return PLB_EINVAL;
	}
	ws.mr = n < NB + 1 ? n : NB + 1;
	for (int j = 0; j <= NB; j++)
		for (int i = 0; i < ws.mr; i++)
			ws.rf[i + (size_t)j * ws.mr] = i <= j ? ws.q[i + (size_t)j * n] : 0;

	/* every subset's factor at once, on its prefix's (the hint alone, for
	 * `only`, when it is first asked for) */
	memset(ws.sq_state, SQ_NONE, sizeof ws.sq_state);
	if (!plb__fit_reference && !only)
		subsets_qr(&ws, 0, 0, 0, ~bad & (BIT(NB) - 1), kmax);

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
	double pen[NB + 1];
	for (int k = 0; k <= NB; k++)
		pen[k] = pow(1 + TERM_PENALTY, k);
	double best = INFINITY, best_c[NB];
	unsigned pick = 0;
	/* the hint first: a good score early lets most subsets stop at rss */
	if (hint && hint < BIT(NB) && popcount(hint) <= kmax && !(hint & bad)) {
		double coef[NB], sc;
		if (fit_subset(&ws, norm, top, bsq, n, hint, 1, INFINITY, coef, &sc) == 0 &&
		    shape_ok(coef, hint, gr)) {
			best = (sc + 1e-20) * pen[popcount(hint)];
			pick = hint;
			memcpy(best_c, coef, sizeof coef);
		}
	}
	if (only) {
		int ok = pick != 0;
		if (ok) {
			c->mask = pick;
			memcpy(c->coef, best_c, sizeof c->coef);
		}
		free(mem);
		return ok ? 0 : 1;
	}
	for (unsigned mask = 1; mask < BIT(NB); mask++) {
		int k = popcount(mask);
		double coef[NB], sc;
		if (k > kmax || (mask & bad) || mask == pick)
			continue;
		if (fit_subset(&ws, norm, top, bsq, n, mask, 1, best / pen[k] - 1e-20, coef,
			       &sc) != 0)
			continue;
		sc = (sc + 1e-20) * pen[k];
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
	    fit_subset(&ws, norm, top, bsq, n, lin, 0, INFINITY, coef, &sc) == 0 &&
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

int plb__curve_fit(struct plb__curve *c, double scale, const double *units,
		   const double *t, const double *w, int n, int max_terms)
{
	return fit_hint(c, scale, units, t, w, n, max_terms, 0, 0);
}

int plb__curve_fit_hint(struct plb__curve *c, double scale, const double *units,
			const double *t, const double *w, int n, int max_terms,
			unsigned hint)
{
	return fit_hint(c, scale, units, t, w, n, max_terms, hint, 0);
}

int plb__curve_fit_only(struct plb__curve *c, double scale, const double *units,
			const double *t, const double *w, int n, unsigned mask)
{
	return fit_hint(c, scale, units, t, w, n, NB, mask, 1);
}
