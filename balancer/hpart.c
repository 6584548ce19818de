/* Hierarchical partitioning with functional performance models (see
 * hpart.h): FPMs, the GPA, and INPA with IDPA nested (and the paper's
 * baselines: multiple and single constant performance models, and the
 * homogeneous split). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/hpart.h"
#include "balancer/layout.h"

/* ---- functional performance models --------------------------------------- */

/* the times never falling with size: tm[k] = max(t[0..k]) */
static void envelope(struct plb__fpm *f)
{
	for (int k = 0; k < f->n; k++)
		f->tm[k] = k && f->tm[k - 1] > f->t[k] ? f->tm[k - 1] : f->t[k];
}

static int add(struct plb__fpm *f, double x, double t);

int plb__fpm_add(struct plb__fpm *f, double x, double t)
{
	int rc = add(f, x, t);
	if (!rc)
		envelope(f);
	return rc;
}

static int add(struct plb__fpm *f, double x, double t)
{
	if (!f || !(x > 0) || !(t > 0) || !isfinite(x) || !isfinite(t))
		return PLB_EINVAL;
	int k = 0;
	while (k < f->n && f->x[k] < x)
		k++;
	if (k < f->n && f->x[k] == x) {
		f->t[k] = t;
		return 0;
	}
	if (f->n == PLB__FPM_MAX) {
		/* the nearest pair (in log size) becomes its mean */
		int best = 0;
		double bd = INFINITY;
		for (int i = 0; i + 1 < f->n; i++) {
			double dd = log(f->x[i + 1] / f->x[i]);
			if (dd < bd) {
				bd = dd;
				best = i;
			}
		}
		f->x[best] = (f->x[best] + f->x[best + 1]) / 2;
		f->t[best] = (f->t[best] + f->t[best + 1]) / 2;
		memmove(f->x + best + 1, f->x + best + 2, (size_t)(f->n - best - 2) * sizeof *f->x);
		memmove(f->t + best + 1, f->t + best + 2, (size_t)(f->n - best - 2) * sizeof *f->t);
		f->n--;
		k = 0;
		while (k < f->n && f->x[k] < x)
			k++;
		if (k < f->n && f->x[k] == x) {
			f->t[k] = t;
			return 0;
		}
	}
	memmove(f->x + k + 1, f->x + k, (size_t)(f->n - k) * sizeof *f->x);
	memmove(f->t + k + 1, f->t + k, (size_t)(f->n - k) * sizeof *f->t);
	f->x[k] = x;
	f->t[k] = t;
	f->n++;
	return 0;
}


double plb__fpm_time(const struct plb__fpm *f, double x)
{
	if (!f || !f->n || !(x >= 0))
		return NAN;
	const double *tm = f->tm;
	if (x <= f->x[0])
		return tm[0] * x / f->x[0];
	int n = f->n;
	if (x >= f->x[n - 1])
		return tm[n - 1] * x / f->x[n - 1];
	int k = 0;
	while (f->x[k + 1] < x)
		k++;
	return tm[k] + (tm[k + 1] - tm[k]) * (x - f->x[k]) / (f->x[k + 1] - f->x[k]);
}

double plb__fpm_size(const struct plb__fpm *f, double t)
{
	if (!f || !f->n || !(t > 0))
		return 0;
	const double *tm = f->tm;
	int n = f->n;
	if (t < tm[0])
		return f->x[0] * t / tm[0];
	/* the last point whose time is at most t (tm never falls: bisect) */
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (tm[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	int k = lo;
	if (k == n - 1)
		return f->x[n - 1] * t / tm[n - 1];
	return f->x[k] + (f->x[k + 1] - f->x[k]) * (t - tm[k]) / (tm[k + 1] - tm[k]);
}

struct rem {
	double r;
	int i;
};

static int by_rem(const void *a, const void *b)
{
	const struct rem *x = a, *y = b;
	return x->r != y->r ? (x->r > y->r ? -1 : 1) : x->i - y->i;
}

/* FPM i's size at time t, at most its cap (max_each: NULL for none). */
static double capped_size(const struct plb__fpm *f, const long *max_each, int i, double t)
{
	double x = plb__fpm_size(&f[i], t);
	return max_each && x > (double)max_each[i] ? (double)max_each[i] : x;
}

double plb__gpa(const struct plb__fpm *f, int n, long total, long min_each, const long *max_each,
		long *out)
{
	if (!f || n < 1 || !out || min_each < 0 || total < (long)n * min_each)
		return NAN;
	long room = 0;
	for (int i = 0; i < n; i++) {
		if (!f[i].n || (max_each && max_each[i] < min_each))
			return NAN;
		room += max_each ? (max_each[i] < total ? max_each[i] : total) : total;
		if (room >= total)
			room = total;   /* (no overflow) */
	}
	if (room < total)
		return NAN;     /* the caps hold less than total */
	/* the time at which the sizes sum to total: between 0 and a time at
	 * which it is sure to (each FPM at its cap, or one at all of it) */
	double lo = 0, hi = 0;
	for (int i = 0; i < n; i++) {
		long most = max_each && max_each[i] < total ? max_each[i] : total;
		hi = fmax(hi, plb__fpm_time(&f[i], (double)most));
	}
	for (int i = 0; i < n; i++)
		if (!max_each || max_each[i] >= total)
			hi = fmin(hi, plb__fpm_time(&f[i], (double)total));
	/* the sum of sizes is piecewise linear in the time: regula falsi
	 * (Illinois), with a bisection step where it stalls, to a sum within
	 * a quarter unit above total (whole units are shared out below) */
	double flo = -(double)total, fhi = 0;
	for (int i = 0; i < n; i++)
		fhi += capped_size(f, max_each, i, hi);
	fhi -= (double)total;
	int side = 0;
	for (int it = 0; it < 200 && hi - lo > 1e-9 * hi && fhi > 0.25; it++) {
		double mid = fhi - flo > 0 ? hi - fhi * (hi - lo) / (fhi - flo) : (lo + hi) / 2;
		if (!(mid > lo && mid < hi) || it % 8 == 7)
			mid = (lo + hi) / 2;
		double fm = -(double)total;
		for (int i = 0; i < n; i++)
			fm += capped_size(f, max_each, i, mid);
		if (fm >= 0) {
			hi = mid;
			fhi = fm;
			if (side == 1)
				flo /= 2;
			side = 1;
		} else {
			lo = mid;
			flo = fm;
			if (side == -1)
				fhi /= 2;
			side = -1;
		}
	}
	struct rem *r = malloc((size_t)n * sizeof *r);
	if (!r)
		return NAN;
	long sum = 0;
	for (int i = 0; i < n; i++) {
		double x = capped_size(f, max_each, i, hi);
		out[i] = (long)floor(x);
		if (out[i] < min_each)
			out[i] = min_each;
		r[i] = (struct rem){x - (double)out[i], i};
		sum += out[i];
	}
	qsort(r, (size_t)n, sizeof *r, by_rem);
	/* short: one more to the largest remainders (below their cap); over
	 * (the raised minimums): one less from the smallest above their
	 * minimum. The caps hold total, so the first ends. */
	for (int k = 0; sum < total; k = (k + 1) % n)
		if (!max_each || out[r[k].i] < max_each[r[k].i]) {
			out[r[k].i]++;
			sum++;
		}
	for (int k = n - 1; sum > total; k = (k + n - 1) % n)
		if (out[r[k].i] > min_each) {
			out[r[k].i]--;
			sum--;
		}
	free(r);
	double T = 0;
	for (int i = 0; i < n; i++)
		T = fmax(T, plb__fpm_time(&f[i], (double)out[i]));
	return T;
}

double plb__equal_time_bound(int n, double (*time)(void *ctx, int k, double area), void *ctx,
			     double W)
{
	if (n < 1 || !time || !(W > 0))
		return NAN;
	/* hi: a time by which the fastest device alone runs all of it */
	double hi = INFINITY;
	for (int k = 0; k < n; k++)
		hi = fmin(hi, time(ctx, k, W));
	double lo = 0;
	for (int it = 0; it < 200 && hi - lo > 1e-9 * hi; it++) {
		double T = (lo + hi) / 2, sum = 0;
		for (int k = 0; k < n && sum < W; k++) {
			double a0 = 0, a1 = W;
			for (int b = 0; b < 60 && a1 - a0 > 1e-9 * W; b++) {
				double am = (a0 + a1) / 2;
				if (time(ctx, k, am) <= T)
					a0 = am;
				else
					a1 = am;
			}
			sum += a0;
		}
		if (sum >= W)
			hi = T;
		else
			lo = T;
	}
	return hi;
}

/* ---- INPA and IDPA --------------------------------------------------------- */

static const char *const method_names[] = {"fpm", "multiple-cpm", "single-cpm", "homogeneous"};

const char *plb__hpart_method_name(enum plb__hpart_method m)
{
	return (unsigned)m < PLB__HPART_NMETHOD ? method_names[m] : "?";
}

struct st {
	const struct plb__hpart_cfg *c;
	struct plb__hpart *h;
	struct plb__fpm *dev;   /* by device, in blocks of area */
	struct plb__fpm *node;  /* by node, in blocks of area */
	struct plb__fpm *tmp;   /* scratch: one node's devices in columns */
	long *lw;
	double *speed;          /* by device: blocks of area a second, last measured */
	double *best_area;      /* by node: the areas of the best partition measured */
	int sub;                /* a slice's unit: 1/sub blocks (cfg.sub, 1 at least) */
	long *cap;              /* by node: cfg.cap in whole blocks (NULL: none) */
	unsigned char *held;    /* by node: its area was held at its cap (cap_fill) */
	double *dd, *dt;        /* scratch: one node's devices' slices and times */
};

/* n columns among node i's devices in proportion to w[] (or equally). */
static void share(int n, int p, const double *w, int *d)
{
	double sum = 0;
	for (int j = 0; j < p; j++)
		sum += w ? w[j] : 1;
	int used = 0;
	for (int j = 0; j < p; j++) {
		d[j] = (int)floor((double)n * (w ? w[j] : 1) / sum);
		used += d[j];
	}
	for (int j = 0; used < n; j = (j + 1) % p, used++)
		d[j]++;
}

/* Benchmarks node i's devices on their slices; the slowest's time. */
/* Node i's devices on m x d[j] blocks: t[j] (0 where d[j] is 0), all at
 * once where the configuration benchmarks a node so, else one by one. */
static void bench_devices(struct st *s, int i, int m, const double *d, double *t)
{
	const struct plb__hpart_cfg *c = s->c;
	if (c->bench_node) {
		c->bench_node(c->ctx, i, m, d, t);
		return;
	}
	for (int j = 0; j < c->p[i]; j++)
		t[j] = d[j] > 0 ? c->bench(c->ctx, i, j, m, d[j]) : 0;
}

static double bench_node(struct st *s, int i)
{
	struct plb__hpart *h = s->h;
	double worst = 0;
	for (int j = 0; j < s->c->p[i]; j++)
		s->dd[j] = (double)h->d[h->off[i] + j] / s->sub;
	bench_devices(s, i, h->m[i], s->dd, s->dt);
	for (int j = 0; j < s->c->p[i]; j++) {
		int k = h->off[i] + j;
		double d = s->dd[j];
		h->t_dev[k] = 0;
		if (!h->d[k])
			continue;
		double t = s->dt[j];
		h->benches++;
		h->t_dev[k] = t;
		double area = (double)h->m[i] * d;
		if (t > 0 && isfinite(t)) {
			plb__fpm_add(&s->dev[k], area, t);
			s->speed[k] = area / t;
		}
		worst = fmax(worst, t);
	}
	return worst;
}

static double imbalance(const double *t, int n)
{
	double lo = INFINITY, hi = 0;
	for (int i = 0; i < n; i++)
		if (t[i] > 0) {
			lo = fmin(lo, t[i]);
			hi = fmax(hi, t[i]);
		}
	return hi > 0 ? (hi - lo) / hi : 0;
}

/* The nodes' imbalance, leaving out those held at their cap: such a node
 * ends early because it cannot take more, which no partition within the
 * caps mends. */
static double node_imbalance(const struct st *s)
{
	const struct plb__hpart *h = s->h;
	double lo = INFINITY, hi = 0;
	for (int i = 0; i < h->q; i++) {
		if (!(h->t_node[i] > 0) || (s->cap && s->held[i]))
			continue;
		lo = fmin(lo, h->t_node[i]);
		hi = fmax(hi, h->t_node[i]);
	}
	return hi > 0 ? (hi - lo) / hi : 0;
}

/* IDPA on node i (its rectangle set): its slices, iterated for FPM and
 * MCPM. Returns the node's time. */
static double idpa(struct st *s, int i)
{
	const struct plb__hpart_cfg *c = s->c;
	struct plb__hpart *h = s->h;
	int p = c->p[i], *d = h->d + h->off[i], m = h->m[i], n = h->n[i] * s->sub;
	double w[64];
	int iter = c->method == PLB__HPART_FPM || c->method == PLB__HPART_MCPM ? c->max_iter : 1;
	/* the first split: equal, or (single CPM, or a device measured before)
	 * by speed */
	int known = 1;
	for (int j = 0; j < p && j < 64; j++) {
		w[j] = s->speed[h->off[i] + j];
		known &= w[j] > 0;
	}
	share(n, p, known && c->method != PLB__HPART_HOMOG && p <= 64 ? w : NULL, d);
	double t = 0, best_t = INFINITY;
	int best_d[64];
	for (int it = 0; it < iter; it++) {
		t = bench_node(s, i);
		if (t < best_t && p <= 64) {    /* the best split measured */
			best_t = t;
			memcpy(best_d, d, (size_t)p * sizeof *d);
		}
		if (it + 1 == iter || imbalance(h->t_dev + h->off[i], p) <= c->eps2)
			break;
		if (c->method == PLB__HPART_MCPM) {
			for (int j = 0; j < p && j < 64; j++)
				w[j] = s->speed[h->off[i] + j];
			share(n, p, w, d);
			continue;
		}
		/* GPA in columns (of 1/sub blocks): each device's FPM with
		 * sizes over m */
		for (int j = 0; j < p; j++) {
			const struct plb__fpm *f = &s->dev[h->off[i] + j];
			s->tmp[j] = *f;
			for (int k = 0; k < f->n; k++)
				s->tmp[j].x[k] = f->x[k] / m * s->sub;
			if (!f->n)      /* never measured: its speed as any other's */
				plb__fpm_add(&s->tmp[j], 1, t / (n > 0 ? n : 1));
		}
		if (isnan(plb__gpa(s->tmp, p, n, 0, NULL, s->lw)))
			break;
		int same = 1;
		for (int j = 0; j < p; j++) {
			same &= d[j] == (int)s->lw[j];
			d[j] = (int)s->lw[j];
		}
		if (same)
			break;  /* a fixed point: its times are those just measured */
	}
	if (p <= 64 && best_t < t) {
		/* ended on a worse split than one measured (a model that will
		 * learn more at the next node iteration): the better one, its
		 * times those it was measured at */
		memcpy(d, best_d, (size_t)p * sizeof *d);
		for (int j = 0; j < p; j++)
			s->dd[j] = (double)d[j] / s->sub;
		bench_devices(s, i, m, s->dd, s->dt);
		for (int j = 0; j < p; j++)
			h->t_dev[h->off[i] + j] = d[j] ? s->dt[j] : 0;
		h->benches += p;
		t = best_t;
	}
	h->t_node[i] = t;
	return t;
}

/* The node's layout from its areas. */
/* Areas within the caps: scaled to N x N blocks, those above their cap
 * held there and the rest scaled up to fill what they leave, until none
 * is above (at most q rounds: each holds one more). */
static void cap_fill(const struct st *s, double *area)
{
	int q = s->c->q;
	double total = (double)s->c->N * s->c->N, sum = 0;
	for (int i = 0; s->cap && i < q; i++)
		sum += area[i];
	for (int i = 0; s->cap && sum > 0 && i < q; i++)
		area[i] *= total / sum;         /* in blocks */
	for (int round = 0; s->cap && round <= q; round++) {
		double held = 0, free_sum = 0;
		for (int i = 0; i < q; i++)
			if (area[i] >= (double)s->cap[i])
				held += (double)s->cap[i];
			else
				free_sum += area[i];
		if (!(free_sum > 0))
			break;
		double k = (total - held) / free_sum;
		int moved = 0;
		for (int i = 0; i < q; i++) {
			if (area[i] >= (double)s->cap[i]) {
				area[i] = (double)s->cap[i];
				continue;
			}
			area[i] *= k;
			moved |= area[i] > (double)s->cap[i];
		}
		if (!moved)
			break;
	}
	for (int i = 0; s->cap && i < q; i++)
		s->held[i] = area[i] >= (double)s->cap[i];
}

/* The layout of the areas in whole blocks (CMA); with caps, a rectangle
 * that rounding took above its node's cap asks for that many blocks less
 * (and one more), which go to the nodes with room, in proportion to their
 * room, and the layout is made again (at most 16 times). 0, PLB_EINVAL (N too small),
 * PLB_ECONFIG (not found within the caps). */
static int place(struct st *s, double *area)
{
	struct plb__hpart *h = s->h;
	int q = s->c->q;
	for (int tries = 0;; tries++) {
		int nc = plb__layout_blocks(area, q, s->c->N, h->m, h->n, h->col, h->row, h->at);
		if (nc < 0)
			return nc;
		if (!s->cap)
			return 0;
		double over = 0, room = 0;
		int nover = 0;
		for (int i = 0; i < q; i++) {
			double a = (double)h->m[i] * h->n[i], c = (double)s->cap[i];
			if (a > c) {
				over += a - c;
				nover++;
			} else {
				room += c - a;
			}
		}
		if (!nover)
			return 0;
		if (tries == 16 || room < over + nover)
			return PLB_ECONFIG;
		/* the targets move, so that a node rounding keeps above its cap
		 * is asked for less each time */
		double give = (over + nover) / room;
		for (int i = 0; i < q; i++) {
			double a = (double)h->m[i] * h->n[i], c = (double)s->cap[i];
			area[i] = a > c ? fmax(area[i] - (a - c) - 1, 1) : area[i] + (c - a) * give;
		}
	}
}

static void seed(struct st *s)
{
	/* each device once at a 1 x 1 slice: the FPMs' first point, and the
	 * single CPM's speeds */
	const struct plb__hpart_cfg *c = s->c;
	for (int i = 0; i < c->q; i++) {
		for (int j = 0; j < c->p[i]; j++)
			s->dd[j] = 1;
		bench_devices(s, i, 1, s->dd, s->dt);
		for (int j = 0; j < c->p[i]; j++) {
			int k = s->h->off[i] + j;
			double t = s->dt[j];
			s->h->benches++;
			if (t > 0 && isfinite(t)) {
				plb__fpm_add(&s->dev[k], 1, t);
				s->speed[k] = 1 / t;
			}
		}
	}
}

void plb__hpart_fini(struct plb__hpart *h)
{
	if (!h)
		return;
	free(h->m);
	free(h->n);
	free(h->col);
	free(h->row);
	free(h->at);
	free(h->off);
	free(h->d);
	free(h->t_node);
	free(h->t_dev);
	memset(h, 0, sizeof *h);
}

/* The common time at which the devices' FPMs share W blocks of area
 * (each read off its FPM directly: plb__fpm_size), to a relative 1e-9;
 * NAN when a device has no point. */
static double fpm_bound(const struct st *s, double W)
{
	int n = s->h->ndev;
	double lo = 0, hi = INFINITY;
	for (int k = 0; k < n; k++) {
		if (!s->dev[k].n)
			return NAN;
		hi = fmin(hi, plb__fpm_time(&s->dev[k], W));
	}
	for (int it = 0; it < 200 && hi - lo > 1e-9 * hi; it++) {
		double T = (lo + hi) / 2, sum = 0;
		for (int k = 0; k < n && sum < W; k++)
			sum += plb__fpm_size(&s->dev[k], T);
		if (sum >= W)
			hi = T;
		else
			lo = T;
	}
	return hi;
}

static int inpa(struct st *s, double *area)
{
	const struct plb__hpart_cfg *c = s->c;
	struct plb__hpart *h = s->h;
	int q = c->q, rc;
	int iter = c->method == PLB__HPART_FPM || c->method == PLB__HPART_MCPM ? c->max_iter : 1;
	if (c->method == PLB__HPART_SCPM || c->method == PLB__HPART_FPM || c->method == PLB__HPART_MCPM)
		seed(s);
	for (int i = 0; i < q; i++) {
		area[i] = 1;
		if (c->method == PLB__HPART_SCPM) {
			area[i] = 0;
			for (int j = 0; j < c->p[i]; j++)
				area[i] += s->speed[h->off[i] + j];
		}
	}
	double best = INFINITY;
	for (int it = 0; it < iter; it++) {
		h->inter_iters = it + 1;
		cap_fill(s, area);
		if ((rc = place(s, area)))
			return rc;
		double worst = 0;
		for (int i = 0; i < q; i++) {
			double t = idpa(s, i);
			if (c->comm)
				h->t_node[i] = t += c->comm(c->ctx, i, h->m[i], h->n[i]);
			if (t > 0)
				plb__fpm_add(&s->node[i], (double)h->m[i] * h->n[i], t);
			worst = fmax(worst, t);
		}
		if (worst < best) {     /* the best partition measured */
			best = worst;
			memcpy(s->best_area, area, (size_t)q * sizeof *area);
		}
		h->imbalance = node_imbalance(s);
		if (h->imbalance <= c->eps1) {
			h->converged = 1;
			break;
		}
		if (it + 1 == iter)
			break;
		if (c->method == PLB__HPART_MCPM) {
			for (int i = 0; i < q; i++)
				area[i] = (double)h->m[i] * h->n[i] / h->t_node[i];
			continue;
		}
		if (isnan(plb__gpa(s->node, q, (long)c->N * c->N, 1, s->cap, s->lw)))
			return PLB_EINVAL;
		int same = 1;
		for (int i = 0; i < q; i++) {
			same &= fabs(area[i] - (double)s->lw[i]) < 0.5;
			area[i] = (double)s->lw[i];
		}
		if (same) {
			h->converged = 1;       /* the GPA gives what it was given */
			break;
		}
	}
	if (!h->converged && h->inter_iters > 1 && memcmp(s->best_area, area, (size_t)q * sizeof *area)) {
		/* stopped at max_iter on a partition worse than one measured:
		 * that one, its devices' splits found again on what is known now */
		memcpy(area, s->best_area, (size_t)q * sizeof *area);
		if ((rc = place(s, area)))
			return rc;
		for (int i = 0; i < q; i++)
			if (c->comm)
				h->t_node[i] = idpa(s, i) + c->comm(c->ctx, i, h->m[i], h->n[i]);
			else
				idpa(s, i);
		h->imbalance = node_imbalance(s);
	}
	h->step_bound = fpm_bound(s, (double)c->N * c->N);
	h->half_perimeters = 0;
	h->half_perimeters_lb = 0;
	for (int i = 0; i < q; i++) {
		h->half_perimeters += h->m[i] + h->n[i];
		h->half_perimeters_lb += 2 * sqrt((double)h->m[i] * h->n[i]);
	}
	return 0;
}

/* cfg's caps in whole blocks (a node at least one, none past N x N):
 * PLB_ECONFIG where they hold less than the N x N blocks. */
static int caps(const struct plb__hpart_cfg *c, long *cap)
{
	double total = (double)c->N * c->N, room = 0;
	for (int i = 0; cap && i < c->q; i++) {
		double x = c->cap[i] >= total ? total : floor(c->cap[i]);
		if (!(x >= 1))
			return PLB_ECONFIG;
		cap[i] = (long)x;
		room += x;
	}
	return cap && room < total ? PLB_ECONFIG : 0;
}

int plb__hpart_run(const struct plb__hpart_cfg *c, struct plb__hpart *h)
{
	memset(h, 0, sizeof *h);
	if (!c || c->q < 1 || !c->p || c->N < 1 || (!c->bench && !c->bench_node) || c->max_iter < 1 ||
	    (unsigned)c->method >= PLB__HPART_NMETHOD || !(c->eps1 >= 0) || !(c->eps2 >= 0) ||
	    c->sub < 0 || (long)c->N * (c->sub > 1 ? c->sub : 1) > INT_MAX / 2)
		return PLB_EINVAL;
	int ndev = 0, maxp = 0;
	for (int i = 0; i < c->q; i++) {
		if (c->p[i] < 1)
			return PLB_EINVAL;
		ndev += c->p[i];
		maxp = c->p[i] > maxp ? c->p[i] : maxp;
	}
	int q = c->q;
	h->q = q;
	h->ndev = ndev;
	h->m = calloc((size_t)q, sizeof *h->m);
	h->n = calloc((size_t)q, sizeof *h->n);
	h->col = calloc((size_t)q, sizeof *h->col);
	h->row = calloc((size_t)q, sizeof *h->row);
	h->at = calloc((size_t)q, sizeof *h->at);
	h->off = calloc((size_t)q + 1, sizeof *h->off);
	h->d = calloc((size_t)ndev, sizeof *h->d);
	h->t_node = calloc((size_t)q, sizeof *h->t_node);
	h->t_dev = calloc((size_t)ndev, sizeof *h->t_dev);
	struct st s = {.c = c, .h = h, .sub = c->sub > 1 ? c->sub : 1};
	s.dev = calloc((size_t)ndev, sizeof *s.dev);
	s.node = calloc((size_t)q, sizeof *s.node);
	s.tmp = calloc((size_t)maxp, sizeof *s.tmp);
	s.lw = calloc((size_t)(ndev > maxp ? ndev : maxp), sizeof *s.lw);
	s.speed = calloc((size_t)ndev, sizeof *s.speed);
	double *area = calloc((size_t)q, sizeof *area);
	s.best_area = calloc((size_t)q, sizeof *s.best_area);
	s.cap = c->cap ? calloc((size_t)q, sizeof *s.cap) : NULL;
	s.held = c->cap ? calloc((size_t)q, 1) : NULL;
	s.dd = calloc((size_t)maxp + 1, sizeof *s.dd);
	s.dt = calloc((size_t)maxp + 1, sizeof *s.dt);
	int rc = PLB_ENOMEM;
	if (h->m && h->n && h->col && h->row && h->at && h->off && h->d && h->t_node && h->t_dev &&
	    s.dev && s.node && s.tmp && s.lw && s.speed && area && s.best_area && s.dd && s.dt && (!c->cap || (s.cap && s.held))) {
		for (int i = 0; i < q; i++)
			h->off[i + 1] = h->off[i] + c->p[i];
		rc = caps(c, s.cap);
		if (!rc)
			rc = inpa(&s, area);
	}
	free(s.dev);
	free(s.node);
	free(s.tmp);
	free(s.lw);
	free(s.speed);
	free(s.best_area);
	free(s.cap);
	free(s.held);
	free(s.dd);
	free(s.dt);
	free(area);
	if (rc)
		plb__hpart_fini(h);
	return rc;
}

double plb__hpart_node_mb(const struct plb__hpart *h, int i, double block_mb)
{
	double m = h->m[i], n = h->n[i];
	return (3 * m * n + 2 * (m + n)) * block_mb;
}

int plb__hpart_run_mem(struct plb__hpart_cfg *cfg, const double *memory_mb, double block_mb,
		       struct plb__hpart *h, int *over)
{
	int q = cfg->q, capped = 0;
	double held = 0;
	*over = -1;
	for (int i = 0; memory_mb && i < q; i++) {
		capped |= memory_mb[i] > 0;
		held += memory_mb[i] > 0 ? memory_mb[i] : INFINITY;
	}
	if (!capped) {
		cfg->cap = NULL;
		return plb__hpart_run(cfg, h);
	}
	if (held < 3.0 * cfg->N * cfg->N * block_mb) {
		memset(h, 0, sizeof *h);
		return PLB_ECONFIG;
	}
	double *cap = calloc((size_t)q, sizeof *cap);
	if (!cap)
		return PLB_ENOMEM;
	for (int i = 0; i < q; i++) {
		double blocks = memory_mb[i] / block_mb;
		cap[i] = memory_mb[i] > 0 ? (blocks - 4 * sqrt(blocks / 3)) / 3 : INFINITY;
	}
	cfg->cap = cap;
	int rc = 0;
	for (int tries = 0; tries < 5; tries++) {
		if ((rc = plb__hpart_run(cfg, h)))
			break;
		*over = -1;
		for (int i = 0; i < q; i++) {
			double more = plb__hpart_node_mb(h, i, block_mb) - memory_mb[i];
			if (memory_mb[i] > 0 && more > 0) {
				cap[i] = fmax(cap[i] - more / block_mb / 3 - 1, 1);
				*over = i;
			}
		}
		if (*over < 0)
			break;
		plb__hpart_fini(h);
		rc = PLB_ECONFIG;
	}
	cfg->cap = NULL;
	free(cap);
	return rc;
}
