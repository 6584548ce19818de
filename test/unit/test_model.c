/* Unit tests of the per-PU performance model (balancer/model.c, fit.c): the fit
 * recovers known curves without over-fitting, stays increasing where the
 * solver uses it, the transfer line stays non-negative, the inverse is
 * exact, speed changes are caught from one sample, the window forgets, and
 * bad samples are refused without side effects. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/model.h"

typedef double (*truth_fn)(double u);

/* Deterministic N(0,1) for the noise (LCG + Box-Muller). */
static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s * 6364136223846793005ull + 1442695040888963407ull;
}

static double rng_unif(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(void)
{
	double a = rng_unif(), b = rng_unif();

	return sqrt(-2 * log(a)) * cos(6.283185307179586 * b);
}

static double relerr(double got, double want)
{
	return fabs(got / want - 1);
}

/* n sizes log-spaced over [lo, hi]. */
static void logspace(double *u, int n, double lo, double hi)
{
	for (int i = 0; i < n; i++)
		u[i] = n == 1 ? lo : lo * pow(hi / lo, (double)i / (n - 1));
}

/* Fit truth at n log-spaced sizes with multiplicative noise of relative
 * sd `noise`, weights 1/t^2 as the model uses, the default 3 terms. */
static void fit_truth(struct plb__curve *c, truth_fn f, double W, double lo,
		      double hi, int n, double noise, uint64_t seed)
{
	double u[64], t[64], w[64];

	assert_true(n <= 64);
	rng_seed(seed);
	logspace(u, n, lo, hi);
	for (int i = 0; i < n; i++) {
		t[i] = f(u[i]) * (1 + noise * rng_normal());
		w[i] = 1 / (t[i] * t[i]);
	}
	assert_int_equal(plb__curve_fit(c, W, u, t, w, n, 3), 0);
}

/* Largest relative error of c against f at sampled sizes and midpoints. */
static double worst_err(const struct plb__curve *c, truth_fn f, double lo,
			double hi, int n)
{
	double worst = 0;

	for (int i = 0; i < 2 * n - 1; i++) {
		double u = lo * pow(hi / lo, (double)i / (2 * n - 2));
		worst = fmax(worst, relerr(plb__curve_eval(c, u), f(u)));
	}
	return worst;
}

/* Mean relative error of c against f at sampled sizes and midpoints. */
static double mean_err(const struct plb__curve *c, truth_fn f, double lo,
		       double hi, int n)
{
	double sum = 0;

	for (int i = 0; i < 2 * n - 1; i++) {
		double u = lo * pow(hi / lo, (double)i / (2 * n - 2));
		sum += relerr(plb__curve_eval(c, u), f(u));
	}
	return sum / (2 * n - 1);
}

/* c is positive and increasing from lo to hi (checked densely). */
static void assert_curve_increasing(const struct plb__curve *c, double lo,
				    double hi)
{
	double prev = 0;

	for (int i = 0; i <= 2000; i++) {
		double u = lo * pow(hi / lo, i / 2000.0);
		double f = plb__curve_eval(c, u);
		assert_true(f > 0);
		assert_true(f >= prev);
		assert_true(plb__curve_deriv(c, u) > 0);
		prev = f;
	}
}

/* The curve's derivative is its slope: a central difference agrees. */
static void assert_deriv_is_slope(const struct plb__curve *c, double lo, double hi)
{
	for (int i = 0; i <= 20; i++) {
		double u = lo * pow(hi / lo, i / 20.0), h = 1e-4 * u;
		double fd = (plb__curve_eval(c, u + h) - plb__curve_eval(c, u - h)) / (2 * h);
		double d = plb__curve_deriv(c, u);
		if (!(fabs(d - fd) <= 1e-5 * fabs(fd)))
			fail_msg("at %g units the derivative is %.9g, the slope %.9g", u, d, fd);
	}
}

/* E is non-decreasing on [0, 2W] and dE/dx >= 0. */
static void assert_model_increasing(const struct plb__model *m)
{
	double prev = plb__model_eval(m, 0);

	assert_true(prev > 0);
	for (int i = 1; i <= 4000; i++) {
		double u = m->W * 2 * pow(i / 4000.0, 3);
		double e = plb__model_eval(m, u);
		assert_true(e >= prev);
		assert_true(plb__model_deriv(m, u) >= 0);
		prev = e;
	}
}

static double t_affine(double u) { return 0.002 + 3e-6 * u; }
static double t_xlnx(double u) { return 1e-7 * u + 2e-8 * u * log(u); }
static double t_square(double u) { return 1e-3 + 1e-8 * u + 1e-13 * u * u; }
static double t_linear(double u) { return 2e-6 * u; }
static double t_sat(double u) { return 5e-3 + 1e-8 * u; }

/* GPU-like table: a fixed cost until the device fills, then linear;
 * piecewise linear through the points, as the emulator's tables are. */
static double t_gpu(double u)
{
	static const double pu[] = {1e3, 1e4, 1e5, 1e6, 4e6};
	static const double pt[] = {4e-3, 4.2e-3, 6e-3, 2.4e-2, 9e-2};
	int i = 0;

	while (i < 3 && u > pu[i + 1])
		i++;
	return pt[i] + (pt[i + 1] - pt[i]) * (u - pu[i]) / (pu[i + 1] - pu[i]);
}

/* 0.002 + 3e-6 x is recovered within 0.1% at sampled and interpolated sizes. */
static void test_fit_affine(void **state)
{
	struct plb__curve c;

	(void)state;
	fit_truth(&c, t_affine, 1 << 20, 1024, 65536, 13, 0, 1);
	assert_true(worst_err(&c, t_affine, 1024, 65536, 13) < 1e-3);
	assert_curve_increasing(&c, 512, 1 << 20);
	/* extrapolated to W the intercept is negligible: still close */
	assert_true(relerr(plb__curve_eval(&c, 1 << 20), t_affine(1 << 20)) < 0.02);
}

/* A sample of weight 0 is allowed and counts for nothing: six exact
 * samples of 0.002 + 3e-6 x and a seventh far off it, weighted 0, give
 * the line; weighted 1, the seventh moves the fit. */
static void test_fit_zero_weight(void **state)
{
	struct plb__curve c;
	double u[7], t[7], w[7];

	(void)state;
	for (int i = 0; i < 6; i++) {
		u[i] = 1024.0 * (1 << (2 * i));
		t[i] = t_affine(u[i]);
		w[i] = 1;
	}
	u[6] = 3000;
	t[6] = 10 * t_affine(u[6]);
	w[6] = 0;
	assert_int_equal(plb__curve_fit(&c, 1 << 22, u, t, w, 7, 3), 0);
	for (int i = 0; i < 6; i++)
		if (!(relerr(plb__curve_eval(&c, u[i]), t[i]) < 1e-4))
			fail_msg("weight 0 on an outlier: E(%g) = %g, the line %g", u[i],
				 plb__curve_eval(&c, u[i]), t[i]);
	w[6] = 1;
	assert_int_equal(plb__curve_fit(&c, 1 << 22, u, t, w, 7, 3), 0);
	assert_true(relerr(plb__curve_eval(&c, 3000), t_affine(3000)) > 0.01);
}

/* The unit of time does not choose the curve: the same noisy samples in
 * seconds, milliseconds or kiloseconds (weighted 1/t^2, as the model
 * weighs them, or not at all) give the same basis functions and the same
 * curve, scaled. Every part of the selection score is a ratio of times
 * (the leave-one-out error to the data, the spread at W to F(W)). */
static void test_fit_time_unit_invariant(void **state)
{
	static const truth_fn f[] = {t_affine, t_square, t_gpu, t_xlnx};
	static const double scale[] = {1e-3, 1e3};
	double u[10], t[10], w[10], ts[10], ws[10];

	(void)state;
	for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
		for (uint64_t seed = 1; seed <= 5; seed++)
			for (int weighted = 0; weighted <= 1; weighted++) {
				rng_seed(seed);
				logspace(u, 10, 1e3, 1e5);
				for (int i = 0; i < 10; i++) {
					t[i] = f[k](u[i]) * (1 + 0.05 * rng_normal());
					w[i] = 1 / (t[i] * t[i]);
				}
				struct plb__curve c0, c1;
				assert_int_equal(plb__curve_fit(&c0, 1e7, u, t, weighted ? w : NULL,
								10, 3), 0);
				for (size_t j = 0; j < 2; j++) {
					for (int i = 0; i < 10; i++) {
						ts[i] = t[i] * scale[j];
						ws[i] = 1 / (ts[i] * ts[i]);
					}
					assert_int_equal(plb__curve_fit(&c1, 1e7, u, ts,
									weighted ? ws : NULL, 10, 3), 0);
					if (c1.mask != c0.mask)
						fail_msg("truth %zu seed %d weighted %d: times x %g chose basis %#x, not %#x",
							 k, (int)seed, weighted, scale[j], c1.mask, c0.mask);
					for (double x = 1e3; x <= 1e7; x *= 10)
						if (!(relerr(plb__curve_eval(&c1, x),
							     scale[j] * plb__curve_eval(&c0, x)) < 1e-9))
							fail_msg("truth %zu seed %d: times x %g: F(%g) = %g, not %g",
								 k, (int)seed, scale[j], x,
								 plb__curve_eval(&c1, x),
								 scale[j] * plb__curve_eval(&c0, x));
				}
			}
}

/* a x + b x ln x is recovered almost exactly (it is in the basis). */
static void test_fit_xlnx(void **state)
{
	struct plb__curve c;

	(void)state;
	fit_truth(&c, t_xlnx, 1e7, 1e3, 1e6, 12, 0, 1);
	assert_true(worst_err(&c, t_xlnx, 1e3, 1e6, 12) < 1e-6);
	assert_true(relerr(plb__curve_eval(&c, 1e7), t_xlnx(1e7)) < 1e-6);
	assert_curve_increasing(&c, 500, 1e7);
	assert_deriv_is_slope(&c, 500, 1e7);
}

/* A saturating GPU table is followed within 12% and the fit is increasing. */
static void test_fit_gpu_table(void **state)
{
	struct plb__curve c;

	(void)state;
	fit_truth(&c, t_gpu, 1.6e7, 1e3, 4e6, 24, 0, 1);
	assert_true(worst_err(&c, t_gpu, 1e3, 4e6, 24) < 0.12);
	assert_curve_increasing(&c, 500, 1.6e7);
	assert_deriv_is_slope(&c, 500, 1.6e7);
}

/* An x^2-dominated curve is recovered within 1%. */
static void test_fit_square(void **state)
{
	struct plb__curve c;

	(void)state;
	fit_truth(&c, t_square, 1e6, 1e4, 1e6, 16, 0, 1);
	assert_true(worst_err(&c, t_square, 1e4, 1e6, 16) < 0.01);
	assert_curve_increasing(&c, 5e3, 1e6);
	assert_deriv_is_slope(&c, 5e3, 1e6);
}

/* With 5% noise, 32 samples predict within 3% on average and 8% at worst. */
static void test_fit_noise(void **state)
{
	static const truth_fn fs[] = {t_affine, t_xlnx, t_square};
	static const double W[] = {1 << 20, 1e7, 1e6};
	static const double lo[] = {1024, 1e3, 1e4};
	static const double hi[] = {65536, 1e6, 1e6};

	(void)state;
	for (int k = 0; k < 3; k++) {
		for (uint64_t seed = 1; seed <= 10; seed++) {
			struct plb__curve c;
			fit_truth(&c, fs[k], W[k], lo[k], hi[k], 32, 0.05, seed);
			double e = mean_err(&c, fs[k], lo[k], hi[k], 32);
			double worst = worst_err(&c, fs[k], lo[k], hi[k], 32);
			if (e >= 0.03 || worst >= 0.08)
				print_error("curve %d seed %d: %.3f %.3f\n", k,
					    (int)seed, e, worst);
			assert_true(e < 0.03);
			assert_true(worst < 0.08);
			assert_curve_increasing(&c, lo[k] / 2, W[k]);
		}
	}
}

/* Noisy linear data: at most 2 terms, within 10% and increasing at W = 8x. */
static void test_no_overfit(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 50; seed++) {
		struct plb__curve c;
		double W = 1e6;
		fit_truth(&c, t_linear, W, W / 1000, W / 8, 32, 0.05, seed);
		int terms = 0;
		for (unsigned v = c.mask; v; v &= v - 1)
			terms++;
		assert_true(terms <= 2);
		assert_true(relerr(plb__curve_eval(&c, W), t_linear(W)) < 0.1);
		assert_curve_increasing(&c, W / 2000, W);
	}
}

/* At W = 8x..256x the largest sample the fit is within 25% and increasing. */
static void test_extrapolation(void **state)
{
	static const truth_fn fs[] = {t_sat, t_affine, t_linear};
	static const double W[] = {1e8, 1 << 24, 1e6};
	static const double lo[] = {1e3, 1024, 1e3};
	static const double hi[] = {1e6, 65536, 1.25e5};

	(void)state;
	for (int k = 0; k < 3; k++) {
		for (int n = 8; n <= 32; n *= 2) {
			for (uint64_t seed = 1; seed <= 20; seed++) {
				struct plb__curve c;
				fit_truth(&c, fs[k], W[k], lo[k], hi[k], n, 0.05,
					  seed);
				double e = relerr(plb__curve_eval(&c, W[k]),
						  fs[k](W[k]));
				if (e >= 0.25)
					print_error("curve %d n %d seed %d: %.3f\n",
						    k, n, (int)seed, e);
				assert_true(e < 0.25);
				assert_curve_increasing(&c, lo[k] / 2, W[k]);
			}
		}
	}
}

/* Two block sizes (training) give a curve through both, even a nearly flat one,
 * whether the whole domain at the fitted rate takes many seconds (W = 2^24)
 * or a small part of one (W = 2^16: the rate's coefficient is below 1). */
static void test_two_sizes(void **state)
{
	static const double ratio[] = {1.05, 1.2, 1.5, 2};
	static const double W[] = {1 << 24, 1 << 16};
	struct plb__curve c;

	(void)state;
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 4; i++) {
			double u[] = {1024, 2048}, t[] = {0.01, 0.01 * ratio[i]};
			double w[] = {1e4, 1e4 / (ratio[i] * ratio[i])};
			assert_int_equal(plb__curve_fit(&c, W[k], u, t, w, 2, 3), 0);
			if (relerr(plb__curve_eval(&c, 1024), t[0]) > 1e-6 ||
			    relerr(plb__curve_eval(&c, 2048), t[1]) > 1e-6)
				fail_msg("W %g, ratio %g: the curve misses a sample", W[k], ratio[i]);
			assert_curve_increasing(&c, 512, W[k]);
		}
	}
}

/* The fit fills the whole curve: plb__curve_eval evaluates all seven terms
 * and relies on every coefficient outside the mask being 0, so a curve
 * struct that held garbage before the fit (a fresh stack variable) must
 * come out clean, and blocks that took no measurable time fit F = 0
 * exactly (not some tiny positive time). */
static void test_fit_fills_curve(void **state)
{
	struct plb__curve c;
	double u1[] = {1000, 1000, 1000}, t1[] = {0.01, 0.012, 0.011};
	double z[] = {0, 0, 0}, u2[] = {1000, 4000, 16000};

	(void)state;
	/* one size (proportional), several sizes (a fitted subset), zeros */
	for (int k = 0; k < 3; k++) {
		memset(&c, 0x5a, sizeof c);
		const double *u = k == 1 ? u2 : u1, *t = k == 2 ? z : t1;
		assert_int_equal(plb__curve_fit(&c, 1e6, u, t, NULL, 3, 3), 0);
		assert_true(c.mask != 0);
		for (int j = 0; j < PLB__B_COUNT; j++)
			if (!(c.mask & (1u << j)) && c.coef[j] != 0)
				fail_msg("case %d: coefficient %d outside the mask is %g",
					 k, j, c.coef[j]);
		assert_true(c.scale == 1e6);
	}
	for (int i = 0; i <= 20; i++)
		assert_true(plb__curve_eval(&c, 500 * pow(2000, i / 20.0)) == 0);
}

/* model_max_terms may be up to 7 (README): with every term allowed and
 * enough distinct sizes for 6- and 7-term candidates, a curve in the basis
 * is still recovered (the extra terms must not win) and stays increasing. */
static void test_fit_all_terms(void **state)
{
	double u[16], t[16], w[16];
	struct plb__curve c;

	(void)state;
	logspace(u, 16, 1e3, 1e6);
	for (int i = 0; i < 16; i++) {
		t[i] = t_xlnx(u[i]);
		w[i] = 1 / (t[i] * t[i]);
	}
	for (int mt = 5; mt <= 7; mt++) {
		assert_int_equal(plb__curve_fit(&c, 1e7, u, t, w, 16, mt), 0);
		assert_true(worst_err(&c, t_xlnx, 1e3, 1e6, 16) < 1e-6);
		assert_true(relerr(plb__curve_eval(&c, 1e7), t_xlnx(1e7)) < 1e-6);
		assert_curve_increasing(&c, 500, 1e7);
	}
}

/* Fill a model with truth (exec) and a small transfer line. */
static void feed(struct plb__model *m, truth_fn f, double lo, double hi,
		 int n, double noise, uint64_t seed)
{
	double u[256];

	assert_true(n <= 256);
	rng_seed(seed);
	logspace(u, n, lo, hi);
	for (int i = 0; i < n; i++) {
		double t = f(u[i]) * (1 + noise * rng_normal());
		assert_int_equal(plb__model_add(m, u[i], t, 1e-5 + 1e-10 * u[i]), 0);
	}
}

static void model_new(struct plb__model *m, double W, double window,
		      double thr)
{
	struct plb__params p;

	plb__params_init(&p);
	p.model_window = window;
	p.change_threshold = thr;
	assert_int_equal(plb__model_init(m, W, &p), 0);
}

/* Past its largest block a curve grows at least half as steeply as the
 * blocks did, from the smallest to the largest. An offload device with a
 * 1 s start-up per block and 1500 units/s ran 465, 636 and 1381 units in
 * 1.665, 1.647 and 2.169 s (3% noise, plbsim's mixed:12): leave-one-out
 * preferred a constant, which put 10,000 units at 1.95 s (they take
 * 7.9 s). The same holds over noise draws of such a device's blocks. */
static void test_no_flattening_beyond_samples(void **state)
{
	struct plb__model m;
	double u[] = {465, 636, 1381}, t[] = {1.665, 1.647, 2.169};

	(void)state;
	model_new(&m, 104056, 32, 0.3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb__model_add(&m, u[i], t[i], 0), 0);
	double floor = t[2] + 0.5 * (t[2] - t[0]) / (u[2] - u[0]) * (10000 - u[2]);
	if (!(plb__model_eval(&m, 10000) >= floor * 0.999))
		fail_msg("E(10000) = %g s, under the samples' half slope (%g s)",
			 plb__model_eval(&m, 10000), floor);
	plb__model_fini(&m);

	for (uint64_t seed = 1; seed <= 50; seed++) {
		double x[4] = {465, 700, 1400, 2800}, y[4];
		rng_seed(seed);
		model_new(&m, 104056, 32, 0.3);
		for (int i = 0; i < 4; i++) {
			y[i] = (1.0 + x[i] / 1500) * (1 + 0.03 * rng_normal());
			assert_int_equal(plb__model_add(&m, x[i], y[i], 0), 0);
			double s = (y[i] - y[0]) / (x[i] - x[0]);
			for (double v = 2 * x[i]; i > 0 && s > 0 && v <= 104056; v *= 2)
				if (!(plb__model_deriv(&m, v) >= 0.5 * s * 0.999))
					fail_msg("seed %d, %d blocks: dE/dx(%g) = %g, secant %g",
						 (int)seed, i + 1, v, plb__model_deriv(&m, v), s);
		}
		plb__model_fini(&m);
	}
}

/* The floor's secant: the mean time of the largest blocks (sizes within
 * 20% of the largest) less that of the smallest, over the largest size
 * less the smallest. Exact times of 1 + 0.3 ln u + 6.6e-5 u at 1000, 1100, 2000,
 * 4000 and 4100 units: that curve's slope at W = 1e5 is 0.35 of the
 * secant, so it is refused, and the curve kept grows at least half as
 * steeply as the secant up to W. Over the sizes' sum, or with a group's
 * total for its mean, the floor would let the curve through. */
static void test_flattening_floor_from_group_means(void **state)
{
	static const double u[] = {1000, 1100, 2000, 4000, 4100};
	double t[5];
	struct plb__model m;

	(void)state;
	model_new(&m, 1e5, 32, 0.3);
	for (int i = 0; i < 5; i++) {
		t[i] = 1 + 0.3 * log(u[i]) + 6.6e-5 * u[i];
		assert_int_equal(plb__model_add(&m, u[i], t[i], 0), 0);
	}
	double secant = (0.5 * (t[3] + t[4]) - 0.5 * (t[0] + t[1])) / (u[4] - u[0]);
	for (double v = 8200; v <= 1e5; v *= 2) {
		double floor = plb__model_eval(&m, 4100) + 0.5 * secant * (v - 4100);
		if (!(plb__model_eval(&m, v) >= floor * 0.999))
			fail_msg("E(%g) = %g s, under half the secant from 4100 units (%g s)", v,
				 plb__model_eval(&m, v), floor);
	}
	plb__model_fini(&m);
}

/* E is non-decreasing on [0, 2W] and held below u_lo, for 1..32 samples. */
static void test_model_increasing(void **state)
{
	static const truth_fn fs[] = {t_affine, t_xlnx, t_square, t_gpu, t_linear};
	static const double W[] = {1 << 20, 1e7, 1e6, 1.6e7, 1e6};
	static const double lo[] = {1024, 1e3, 1e4, 1e3, 1e3};
	static const double hi[] = {65536, 1e6, 1e6, 4e6, 1.25e5};

	(void)state;
	for (int k = 0; k < 5; k++) {
		for (int n = 1; n <= 32; n += 5) {
			struct plb__model m;
			model_new(&m, W[k], 32, 0.3);
			feed(&m, fs[k], lo[k], hi[k], n, 0.05, (uint64_t)n);
			assert_true(m.u_lo == lo[k] / 2);
			assert_model_increasing(&m);
			/* E below u_lo is held at E(u_lo) */
			assert_true(plb__model_eval(&m, 0) ==
				    plb__model_eval(&m, m.u_lo));
			plb__model_fini(&m);
		}
	}
}

/* One sample gives c x; repeated sizes work in the fit and in the model. */
static void test_one_sample_and_duplicates(void **state)
{
	struct plb__model m;
	struct plb__curve c;

	(void)state;
	model_new(&m, 1e6, 32, 0.3);
	assert_false(plb__model_ready(&m));
	assert_int_equal(plb__model_add(&m, 1000, 0.01, 0.001), 0);
	assert_true(plb__model_ready(&m));
	assert_true(relerr(plb__model_eval(&m, 1000), 0.011) < 1e-12);
	assert_true(relerr(plb__model_eval(&m, 4000), 0.044) < 1e-12);
	assert_true(relerr(plb__model_eval(&m, 0), 0.0055) < 1e-12);
	/* the same size again: still proportional, through the mean */
	assert_int_equal(plb__model_add(&m, 1000, 0.012, 0.001), 0);
	assert_int_equal(plb__model_add(&m, 1000, 0.011, 0.001), 0);
	assert_true(relerr(plb__model_compute(&m, 1000), 0.011) < 0.02);
	/* a second size: the curve bends through both */
	assert_int_equal(plb__model_add(&m, 8000, 0.02, 0.004), 0);
	assert_int_equal(plb__model_add(&m, 8000, 0.02, 0.004), 0);
	assert_true(relerr(plb__model_compute(&m, 8000), 0.02) < 0.05);
	assert_true(relerr(plb__model_compute(&m, 1000), 0.011) < 0.05);
	assert_model_increasing(&m);
	plb__model_fini(&m);

	double u1 = 500, t1 = 0.25;
	assert_int_equal(plb__curve_fit(&c, 1000, &u1, &t1, NULL, 1, 3), 0);
	assert_true(relerr(plb__curve_eval(&c, 1000), 0.5) < 1e-12);
	double u[] = {100, 100, 100, 400, 400}, t[] = {1, 1.1, 0.9, 2, 2};
	assert_int_equal(plb__curve_fit(&c, 1000, u, t, NULL, 5, 3), 0);
	assert_true(relerr(plb__curve_eval(&c, 100), 1) < 0.05);
	assert_true(relerr(plb__curve_eval(&c, 400), 2) < 0.05);
}

static double t_cliff(double u) { return 1e-3 + 1e-6 * u + (u > 2e4 ? 3e-6 * (u - 2e4) : 0); }

/* The model is a function of the set of samples in its window, not of
 * their order (with speed changes, which read the order, not detected):
 * every rotation of the samples, and their reverse, give the same curve,
 * transfer line, cap and fall. Each sample comes first in one of the
 * orders, so a loop of the fit or the cliff search that skips the
 * window's first sample is seen (the speed-change loops are not run). */
static void test_sample_order_invariance(void **state)
{
	static const truth_fn fs[] = {t_affine, t_xlnx, t_square, t_gpu, t_cliff, t_sat};
	static const double probe[] = {0.5, 1, 3, 10, 40, 300};
	enum { N = 9 };
	(void)state;
	for (size_t f = 0; f < sizeof fs / sizeof *fs; f++) {
		double u[N], t[N], x[N], ref[6], cap = 0, fall = 0;
		rng_seed(100 + f);
		logspace(u, N, 1e3, 6e4);
		for (int i = 0; i < N; i++) {
			t[i] = fs[f](u[i]) * (1 + 0.04 * rng_normal());
			x[i] = 1e-5 + 1e-10 * u[i] * (1 + 0.1 * rng_normal());
		}
		/* the orders: rotations by r (0..N-1), then the reverse */
		for (int r = 0; r <= N; r++) {
			struct plb__model m;
			model_new(&m, 1e7, 32, 1e3);
			for (int k = 0; k < N; k++) {
				int i = r < N ? (k + r) % N : N - 1 - k;
				assert_int_equal(plb__model_add(&m, u[i], t[i], x[i]), 0);
			}
			for (int j = 0; j < 6; j++) {
				double e = plb__model_eval(&m, probe[j] * 1e3);
				if (r == 0)
					ref[j] = e;
				else if (!(relerr(e, ref[j]) < 1e-6))
					fail_msg("curve %zu, order %d: E(%g) = %.9g, in the first order %.9g",
						 f, r, probe[j] * 1e3, e, ref[j]);
			}
			if (r == 0) {
				cap = plb__model_cap(&m);
				fall = m.x_fall;
			} else if (plb__model_cap(&m) != cap || m.x_fall != fall) {
				fail_msg("curve %zu, order %d: cap %g and fall %g, in the first order %g and %g",
					 f, r, plb__model_cap(&m), m.x_fall, cap, fall);
			}
			plb__model_fini(&m);
		}
		if (fs[f] == t_cliff && !(cap < 6e4))
			fail_msg("the cliff at 20000 units was not found (cap %g)", cap);
	}
}

/* The weights' floor is a thousandth of the longest sample's time,
 * wherever that sample is in the window: blocks of a microsecond or
 * less (a timer's resolution, not the device's rate: 10^-6 and 10^-8 s
 * in turn, which no curve follows) beside a 1 s block of 10^5 units do
 * not bend the curve away from the long one. */
static void test_weight_floor_from_longest(void **state)
{
	static const double u[] = {1e5, 1, 2, 4, 8, 16};
	static const double t[] = {1.0, 1e-6, 1e-8, 1e-6, 1e-8, 1e-6};
	(void)state;
	for (int first = 0; first < 2; first++) {
		struct plb__model m;
		model_new(&m, 1e6, 32, 1e3);
		for (int k = 0; k < 6; k++) {
			int i = first ? k : (k + 1) % 6;   /* the long one first, or last */
			assert_int_equal(plb__model_add(&m, u[i], t[i], 0), 0);
		}
		double e = plb__model_eval(&m, 1e5);
		if (!(relerr(e, 1.0) < 0.05))
			fail_msg("the 1 s block %s: E(10^5) = %g s, expected 1 s within 5%%",
				 first ? "first" : "last", e);
		plb__model_fini(&m);
	}
}

/* Tiny blocks of a huge domain (e^x ~ 1, collinear columns) still fit. */
static void test_rank_deficient(void **state)
{
	struct plb__curve c;

	(void)state;
	fit_truth(&c, t_affine, 1e15, 1024, 65536, 16, 0, 1);
	assert_true(worst_err(&c, t_affine, 1024, 65536, 16) < 0.01);
	assert_curve_increasing(&c, 512, 1e15);
	fit_truth(&c, t_xlnx, 1e15, 1e3, 1e12, 16, 0.02, 1);
	assert_true(worst_err(&c, t_xlnx, 1e3, 1e12, 16) < 0.05);
	assert_curve_increasing(&c, 500, 1e15);
}

/* G recovers a1 x + a2 and never goes negative, whatever the data. */
static void test_xfer_line(void **state)
{
	struct plb__model m;
	double W = 1e6;

	(void)state;
	model_new(&m, W, 32, 0.3);
	for (int i = 1; i <= 10; i++)
		assert_int_equal(plb__model_add(&m, 1e4 * i, 0.1 * i,
						1e-4 + 2e-9 * 1e4 * i), 0);
	assert_true(relerr(m.g1, 2e-9 * W) < 1e-9);
	assert_true(relerr(m.g0, 1e-4) < 1e-9);
	assert_true(relerr(plb__model_xfer(&m, 5e5), 1e-4 + 1e-3) < 1e-9);
	plb__model_fini(&m);

	/* decreasing with size: flat at the mean */
	model_new(&m, W, 32, 100);
	for (int i = 1; i <= 10; i++)
		assert_int_equal(plb__model_add(&m, 1e4 * i, 0.1 * i,
						1e-3 / i), 0);
	assert_true(m.g1 == 0 && m.g0 > 0);
	plb__model_fini(&m);

	/* a negative intercept: through the origin */
	model_new(&m, W, 32, 0.3);
	for (int i = 1; i <= 10; i++)
		assert_int_equal(plb__model_add(&m, 1e5 * i, 0.1 * i,
						-1e-4 + 2e-9 * 1e5 * i), 0);
	assert_true(m.g0 == 0 && m.g1 > 0);
	for (int i = 0; i <= 100; i++)
		assert_true(plb__model_xfer(&m, W * i / 100) >= 0);
	plb__model_fini(&m);

	/* no transfer at all */
	model_new(&m, W, 32, 0.3);
	for (int i = 1; i <= 5; i++)
		assert_int_equal(plb__model_add(&m, 1e4 * i, 0.1 * i, 0), 0);
	assert_true(m.g0 == 0 && m.g1 == 0);
	assert_true(plb__model_xfer(&m, W) == 0);
	plb__model_fini(&m);
}

/* Transfer times symmetric about the middle block size, (0, b, 0) at sizes
 * (N - d, N, N + d): the unconstrained weighted line is flat (slope 0, a
 * non-negative intercept), so G is that line, flat at the weighted mean
 * b / (2e6 + 1) (weights 1/t^2, zero times floored at 1e-3 b), at every
 * size. Well-spread sizes, and sizes one unit apart, as a steady policy
 * hands out, where a line through the origin fits the three samples as
 * closely but would halve G at half the size. */
static void test_xfer_flat_symmetric(void **state)
{
	static const double spread[] = {5e5, 1};
	struct plb__model m;
	double W = 1e8, N = 1e6;

	(void)state;
	for (int k = 0; k < 2; k++) {
		for (int i = 1; i <= 10; i++) {
			double b = 1e-4 * i, d = spread[k];
			model_new(&m, W, 32, 0.3);
			assert_int_equal(plb__model_add(&m, N - d, 0.01, 0), 0);
			assert_int_equal(plb__model_add(&m, N, 0.01, b), 0);
			assert_int_equal(plb__model_add(&m, N + d, 0.01, 0), 0);
			double mean = b / (2e6 + 1);
			for (int j = 0; j <= 4; j++) {
				double u = (N - d) / 2 * pow(2 * W / (N - d), j / 4.0);
				if (relerr(plb__model_xfer(&m, u), mean) > 1e-6)
					fail_msg("d %g, b %g: G(%g) = %g, the mean is %g",
						 d, b, u, plb__model_xfer(&m, u), mean);
			}
			plb__model_fini(&m);
		}
	}
}

/* inverse(E(x)) == x in a few evaluations of E, and the ends: 0 below
 * E(0), max_units above. */
static void test_inverse(void **state)
{
	static const truth_fn fs[] = {t_affine, t_xlnx, t_square, t_gpu};
	static const double W[] = {1 << 20, 1e7, 1e6, 1.6e7};
	static const double lo[] = {1024, 1e3, 1e4, 1e3};
	static const double hi[] = {65536, 1e6, 1e6, 4e6};

	(void)state;
	for (int k = 0; k < 4; k++) {
		struct plb__model m;
		model_new(&m, W[k], 32, 0.3);
		feed(&m, fs[k], lo[k], hi[k], 20, 0.05, 7);
		int most = 0;
		for (int i = 0; i <= 200; i++) {
			double x = m.u_lo * pow(W[k] / m.u_lo, i / 200.0);
			int steps;
			double y = plb__model_inverse_steps(&m, plb__model_eval(&m, x),
							    W[k], &steps);
			assert_true(relerr(y, x) < 1e-9);
			most = steps > most ? steps : most;
		}
		/* safeguarded Newton from a secant start: 3-6 evaluations
		 * here; bisection alone would take 40 or more (a bracket of
		 * 3 decades to 1e-14), and a converged step that rounded to
		 * the bracket's end took 35 */
		if (most > 8)
			fail_msg("curve %d: an inversion took %d evaluations", k, most);
		double e0 = plb__model_eval(&m, 0);
		assert_true(plb__model_inverse(&m, e0 * 0.99, W[k]) == 0);
		assert_true(plb__model_inverse(&m, 1e9, W[k]) == W[k]);
		assert_true(plb__model_inverse(&m, 1e9, W[k] / 3) == W[k] / 3);
		assert_true(plb__model_inverse(&m, NAN, W[k]) == 0);
		assert_true(plb__model_inverse(&m, 1e9, 0) == 0);
		plb__model_fini(&m);
	}
}

/* A 4x slow-down/speed-up is caught from one sample (then within 10%). */
static void test_speed_change(void **state)
{
	struct plb__model m;
	double W = 1 << 20;

	(void)state;
	model_new(&m, W, 32, 0.3);
	feed(&m, t_xlnx, 1e3, 1e5, 20, 0.03, 3);
	assert_int_equal(m.changes, 0);
	double u = 3e4;
	assert_int_equal(plb__model_add(&m, u, 4 * t_xlnx(u),
					4 * (1e-5 + 1e-10 * u)), 0);
	assert_int_equal(m.changes, 1);
	for (int i = 0; i <= 20; i++) {
		double x = 1e3 * pow(100, i / 20.0);
		double want = 4 * (t_xlnx(x) + 1e-5 + 1e-10 * x);
		assert_true(relerr(plb__model_eval(&m, x), want) < 0.1);
		/* the transfer part is rescaled with the rest */
		assert_true(relerr(plb__model_xfer(&m, x), 4 * (1e-5 + 1e-10 * x)) < 0.1);
	}
	plb__model_fini(&m);

	/* and 4x faster, likewise */
	model_new(&m, W, 32, 0.3);
	feed(&m, t_affine, 1e3, 1e5, 20, 0.03, 4);
	assert_int_equal(plb__model_add(&m, u, t_affine(u) / 4,
					(1e-5 + 1e-10 * u) / 4), 0);
	assert_int_equal(m.changes, 1);
	for (int i = 0; i <= 20; i++) {
		double x = 1e3 * pow(100, i / 20.0);
		double want = (t_affine(x) + 1e-5 + 1e-10 * x) / 4;
		assert_true(relerr(plb__model_eval(&m, x), want) < 0.1);
	}
	plb__model_fini(&m);

	/* a change is judged within the sampled sizes from the samples near
	 * the block, every sample counted: a block of the oldest and smallest
	 * sample's size, 4x slower, has two samples within CHANGE_NEAR (3x),
	 * that one and 2000 (without the oldest the range would start at
	 * 2000 / 1.5 units, and one near sample is too few) */
	model_new(&m, W, 32, 0.3);
	static const double sizes[] = {1000, 4000, 8000, 2000, 16000};
	for (int i = 0; i < 5; i++)
		assert_int_equal(plb__model_add(&m, sizes[i], t_affine(sizes[i]), 0), 0);
	assert_int_equal(m.changes, 0);
	assert_int_equal(plb__model_add(&m, 1000, 4 * t_affine(1000), 0), 0);
	assert_int_equal(m.changes, 1);
	plb__model_fini(&m);

	/* but a block below the sampled sizes is the fit's extrapolation:
	 * 2000 units against samples at 4000 and 5000 (both within 3x) */
	model_new(&m, W, 32, 0.3);
	assert_int_equal(plb__model_add(&m, 4000, t_affine(4000), 0), 0);
	assert_int_equal(plb__model_add(&m, 5000, t_affine(5000), 0), 0);
	assert_int_equal(plb__model_add(&m, 2000, 4 * t_affine(2000), 0), 0);
	assert_int_equal(m.changes, 0);
	plb__model_fini(&m);

	/* and one near sample is too few, also in a full window (4 here) */
	model_new(&m, W, 4, 0.3);
	static const double far[] = {1000, 8000, 16000, 32000};
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb__model_add(&m, far[i], t_affine(far[i]), 0), 0);
	assert_int_equal(plb__model_add(&m, 1000, 4 * t_affine(1000), 0), 0);
	assert_int_equal(m.changes, 0);
	plb__model_fini(&m);
}

/* Steady PUs (sweeping sizes, GPU training steps) raise no false alarm. */
static void test_no_false_change(void **state)
{
	struct plb__model m;

	(void)state;
	/* sizes sweep 4 decades up and down with 5% noise: the window at one
	 * end of the sweep has not seen the other */
	model_new(&m, 1e8, 32, 0.3);
	rng_seed(5);
	for (int i = 0; i < 400; i++) {
		double x = 1e3 * pow(1e4, (i % 97) / 96.0);
		double n = 1 + 0.05 * rng_normal();
		assert_int_equal(plb__model_add(&m, x, t_xlnx(x) * n,
						1e-5 + 1e-10 * x), 0);
	}
	assert_int_equal(m.changes, 0);
	plb__model_fini(&m);

	/* PLB-HAC training of a saturating GPU: x_init, 2 x_init, then
	 * growing blocks; nearly flat times are not a speed-up */
	model_new(&m, 1.6e7, 32, 0.3);
	for (double x = 1024; x < 4e6; x *= 2)
		assert_int_equal(plb__model_add(&m, x, t_gpu(x), 0), 0);
	assert_int_equal(m.changes, 0);
	plb__model_fini(&m);

	/* a block that took no measurable time (a timer's resolution) is no
	 * speed change, and the samples before it keep their times */
	model_new(&m, 1 << 20, 32, 0.3);
	feed(&m, t_xlnx, 1e3, 1e5, 20, 0.03, 3);
	assert_int_equal(plb__model_add(&m, 3e4, 0, 0), 0);
	assert_int_equal(m.changes, 0);
	for (int i = 0; i < m.n - 1; i++)
		assert_true(m.s[(m.head + i) % m.cap].exec_s > 0);
	plb__model_fini(&m);
}

/* The window keeps only the latest samples, and the fit follows them. */
static void test_window(void **state)
{
	struct plb__model m;

	(void)state;
	model_new(&m, 1e6, 4, 100);
	for (int i = 1; i <= 10; i++) {
		double u = 1e3 * i;
		double t = (i <= 6 ? 10 : 1) * t_affine(u);
		assert_int_equal(plb__model_add(&m, u, t, 0), 0);
	}
	assert_int_equal(m.n, 4);
	assert_int_equal(m.nfits, 10);
	for (int i = 0; i < 4; i++)
		assert_true(m.s[(m.head + i) % m.cap].units == 1e3 * (7 + i));
	assert_true(m.u_lo == 3500);
	for (int i = 7; i <= 10; i++)
		assert_true(relerr(plb__model_eval(&m, 1e3 * i),
				   t_affine(1e3 * i)) < 0.01);
	plb__model_fini(&m);
}

/* A performance cliff: beyond 10000 units each unit costs 4x. Blocks of
 * 1000-8000 units keep their throughput, one of 16000 loses half of it:
 * the cap is 8000 (the largest block that kept it), more units are planned
 * as blocks of 8000, and the fall outlives the window (4 samples here);
 * the same where a unit takes seconds. */
/* Blocks of 1000-16000 units on a PU whose units past 10000 cost 4x: the
 * last one falls, and the cap is 8000. */
static const double cliff_u[] = {1000, 2000, 4000, 8000, 16000};

static void cliff_model(struct plb__model *m, int window)
{
	const double *u = cliff_u;

	model_new(m, 1e6, window, 0.3);
	for (int i = 0; i < 5; i++) {
		double t = 0.001 + 1e-4 * u[i] + (u[i] > 1e4 ? 3e-4 * (u[i] - 1e4) : 0);
		assert_true(isinf(plb__model_cap(m)));         /* no fall yet */
		assert_int_equal(plb__model_add(m, u[i], t, 0), 0);
	}
	assert_true(plb__model_cap(m) == 8000);
}

/* A fall is a property of size: past a cliff a block is slow whenever it
 * runs, and the smaller blocks after it run at the PU's rate. Two blocks
 * of 8000 units 30% below the best rate are a fall (cap 4000); when the
 * next two blocks of 4000 run 20% slow too (a slow period: a GPU beside
 * a CPU team whose copies compete with its own), the size explains
 * nothing and the cap goes; when they run at the best rate, it stays,
 * also once the slow blocks have left the window. */
static void test_fall_explained_by_time(void **state)
{
	static const double u[] = {1000, 2000, 4000};
	(void)state;
	for (int later_fast = 0; later_fast < 2; later_fast++) {
		struct plb__model m;
		model_new(&m, 1e6, 8, 0.3);
		for (int i = 0; i < 3; i++)
			assert_int_equal(plb__model_add(&m, u[i], 1e-5 * u[i], 0), 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(plb__model_add(&m, 8000, 1e-5 * 8000 / 0.7, 0), 0);
		assert_true(plb__model_cap(&m) == 4000);
		double slow = later_fast ? 1.0 : 0.8;
		assert_int_equal(plb__model_add(&m, 4000, 1e-5 * 4000 / slow, 0), 0);
		assert_true(plb__model_cap(&m) == 4000);        /* one is not enough */
		assert_int_equal(plb__model_add(&m, 4000, 1e-5 * 4000 / slow, 0), 0);
		assert_int_equal(m.changes, 0);
		if (later_fast) {
			assert_true(plb__model_cap(&m) == 4000);
			assert_true(m.x_fall == 8000);
			/* the slow blocks leave the window of 8: the fall stays */
			for (int i = 0; i < 8; i++)
				assert_int_equal(plb__model_add(&m, 4000, 1e-5 * 4000, 0), 0);
			assert_true(m.x_fall == 8000);
			assert_true(plb__model_cap(&m) == 4000);
		} else {
			if (!isinf(plb__model_cap(&m)))
				fail_msg("smaller blocks as slow after the fall: cap %g, fall %g",
					 plb__model_cap(&m), m.x_fall);
			/* and it does not come back when they leave the window */
			for (int i = 0; i < 8; i++)
				assert_int_equal(plb__model_add(&m, 4000, 1e-5 * 4000 / slow, 0), 0);
			assert_true(isinf(m.x_fall));
		}
		plb__model_fini(&m);
	}
}

static void test_cliff_cap(void **state)
{
	struct plb__model m;

	(void)state;
	cliff_model(&m, 4);
	double e = plb__model_eval(&m, 8000);
	assert_true(relerr(plb__model_eval_split(&m, 32000), 4 * e) < 1e-12);
	assert_true(relerr(plb__model_deriv_split(&m, 32000), e / 8000) < 1e-12);
	assert_true(relerr(plb__model_inverse_split(&m, 4 * e, 1e6), 32000) < 1e-9);
	assert_true(relerr(plb__model_inverse_split(&m, 0.5 * e, 1e6),
			   plb__model_inverse(&m, 0.5 * e, 1e6)) < 1e-12);
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb__model_add(&m, 8000, 0.801, 0), 0);
	assert_true(plb__model_cap(&m) == 8000);
	plb__model_fini(&m);

	/* the slow block first (a warm start, or the window's oldest): the
	 * same cliff, capped at the largest block that kept the best rate */
	static const double v[] = {16000, 1000, 2000, 4000};
	model_new(&m, 1e6, 32, 0.3);
	for (int i = 0; i < 4; i++) {
		double t = 0.001 + 1e-4 * v[i] + (v[i] > 1e4 ? 3e-4 * (v[i] - 1e4) : 0);
		assert_int_equal(plb__model_add(&m, v[i], t, 0), 0);
	}
	assert_int_equal(m.changes, 0);
	if (!(plb__model_cap(&m) == 4000))
		fail_msg("the slow 16000-unit block first: cap %g, expected 4000",
			 plb__model_cap(&m));
	plb__model_fini(&m);

	/* the same fall where a unit takes seconds (under one unit a second
	 * at best): rates are compared, not required to exceed one */
	static const double w[] = {1, 2, 4, 8, 16};
	model_new(&m, 1e3, 32, 0.3);
	for (int i = 0; i < 5; i++)
		assert_int_equal(plb__model_add(&m, w[i], 1 + 10 * w[i] + (w[i] > 10 ? 30 * (w[i] - 10) : 0), 0), 0);
	assert_true(plb__model_cap(&m) == 8);
	plb__model_fini(&m);

	/* throughput that only rises (a fixed cost): no cap */
	model_new(&m, 1e6, 32, 0.3);
	for (int i = 0; i < 5; i++)
		assert_int_equal(plb__model_add(&m, cliff_u[i], 0.05 + 1e-4 * cliff_u[i], 0), 0);
	assert_true(isinf(plb__model_cap(&m)));
	assert_true(plb__model_eval_split(&m, 5e5) == plb__model_eval(&m, 5e5));
	plb__model_fini(&m);
}

/* plb__model_set_floor: the cap is never below the block whose E is the
 * PU's round trip, and is the cliff's again when the round trip is short;
 * the floor follows each refit. */
static void test_cap_floor(void **state)
{
	struct plb__model m;

	(void)state;
	cliff_model(&m, 8);
	plb__model_set_floor(&m, 0.1);          /* E(8000) = 0.8 s: the cliff's cap holds */
	assert_true(plb__model_cap(&m) == 8000);
	plb__model_set_floor(&m, 2.0);
	double x = plb__model_inverse(&m, 2.0, 1e6);
	assert_true(x > 8000 && plb__model_cap(&m) == x);
	assert_true(relerr(plb__model_eval_split(&m, x), 2.0) < 1e-6);
	assert_true(relerr(plb__model_eval_split(&m, 3 * x), 3 * plb__model_eval(&m, x)) < 1e-12);
	assert_int_equal(plb__model_add(&m, 12000, 2.2, 0), 0);
	assert_true(plb__model_cap(&m) == plb__model_inverse(&m, 2.0, 1e6));
	plb__model_set_floor(&m, NAN);          /* not a time: no floor */
	assert_true(plb__model_cap(&m) == 8000);
	plb__model_fini(&m);
}

/* A mild fall past the samples stops growth, however the fit bends to
 * it: a GPU (cliff:22 of the robustness bench: 0.4 ms a block, 0.02 s
 * more while it fills up, 27,200 units a second, 5.6x a unit past 28,321)
 * ran 1,024, 1,987 and 7,948 units within 1% of a line, then 31,792
 * units 28% below its best rate. Judged by its scatter about the fit
 * (6%, the fit bending towards the slow block) that block was noise and
 * the next was 55,008 units, 3x slow; about a line through the blocks of
 * the best rate's size and down to an eighth of it, it is a soft fall,
 * and the cap is 7,948. On a line through the blocks below the cap, the
 * PU's fixed cost a block is the 18 ms its times show. */
static void test_soft_fall_scatter(void **state)
{
	static const double u[] = {1024, 1987, 7948, 31792};
	static const double t[] = {0.056628, 0.094011, 0.320479, 1.772358};
	struct plb__model m;

	(void)state;
	model_new(&m, 3265718, 32, 0.3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb__model_add(&m, u[i], t[i], 0), 0);
	if (!(plb__model_cap(&m) == 7948))
		fail_msg("after a block 28%% slow past 7948 units: cap %g", plb__model_cap(&m));
	double c = plb__model_cap_fixed(&m);
	if (!(c > 0.015 && c < 0.021))
		fail_msg("fixed cost a block at the cap: %g s, the times say 0.018", c);
	assert_true(relerr(plb__model_fall_rate(&m), u[3] / t[3]) < 1e-12);
	plb__model_fini(&m);

	/* the same over sizes a line does not hold: a GPU filling up (9,387
	 * units a second, 1.54 x 385 units' worth more a block; cliff:8) ran
	 * 1,024 to 32,768 units at 6,650 to 9,170 units a second, then 91,971
	 * units 6.8% below its best past a cliff at 89,870, then more blocks
	 * of up to 32,768. About a line through all of them the bend reads as
	 * 7% of scatter, and the slow block as noise. */
	static const double v[] = {1024, 2048, 8192, 32768, 91971, 32768, 32768, 18215};
	static const double w[] = {0.153877, 0.273875, 0.947070, 3.574332,
				   10.762880, 3.567803, 3.570921, 2.021008};
	model_new(&m, 3813089, 32, 0.3);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(plb__model_add(&m, v[i], w[i], 0), 0);
		if (i >= 4 && !(plb__model_cap(&m) == 32768))
			fail_msg("%d blocks after one 6.8%% slow past 32768 units: cap %g",
				 i - 4, plb__model_cap(&m));
	}
	plb__model_fini(&m);

	/* blocks all of one size below the cap: no line, no fixed cost */
	model_new(&m, 3265718, 32, 0.3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb__model_add(&m, 7948, 0.32 + 0.001 * i, 0), 0);
	assert_int_equal(plb__model_add(&m, 31792, 1.772358, 0), 0);
	assert_true(plb__model_cap(&m) == 7948);
	assert_true(plb__model_cap_fixed(&m) == -1);
	plb__model_fini(&m);
}

/* A block between the cap and the fall that runs at the best rate (a
 * deliberate probe) is no speed change: past the cap the fit bends with
 * the fall. 0.1 s a block and 3.3e-4 s a unit, 5x a unit past 6,000:
 * blocks of 1,024 and 2,048, 8,192 (2x slow), 4,096, then 5,793, which
 * the fit had at 1.5x its time. It lifts the cap to itself, and nothing
 * is rescaled. */
static double t_far(double u) { return 0.1 + 3.3e-4 * u + (u > 6000 ? 1.32e-3 * (u - 6000) : 0); }

static void test_probe_past_cap_no_change(void **state)
{
	static const double u[] = {1024, 2048, 8192, 4096, 5793};
	struct plb__model m;

	(void)state;
	model_new(&m, 200000, 32, 0.3);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(plb__model_add(&m, u[i], t_far(u[i]), 0), 0);
		if (i == 3 && !(plb__model_cap(&m) == 4096))
			fail_msg("cap %g after the fall and a block of 4096", plb__model_cap(&m));
	}
	if (m.changes != 0 || !(plb__model_cap(&m) == 5793))
		fail_msg("a probe of 5793 at the best rate: %d speed changes, cap %g",
			 m.changes, plb__model_cap(&m));
	plb__model_fini(&m);
}

/* plb__theil_sen: a line through points of which a few are far off (a
 * round trip that waited behind another node's bytes); pairs of sizes
 * closer than 1.25x give no slope, and with none the slope given stands. */
static void test_theil_sen(void **state)
{
	static const double u[] = {100, 200, 400, 800, 1600, 3200, 150};
	static const double t[] = {1.1, 1.2, 9.0, 1.8, 2.6, 4.2, 1.15};
	double slope = 0, c = -1;

	(void)state;
	assert_int_equal(plb__theil_sen(u, t, 7, &slope, &c), 21);
	assert_true(relerr(slope, 1e-3) < 1e-9 && relerr(c, 1.0) < 1e-9);
	static const double v[] = {100, 110, 120};
	static const double w[] = {1.3, 1.2, 1.4};
	slope = 0.005;
	assert_int_equal(plb__theil_sen(v, w, 3, &slope, &c), 0);
	assert_true(slope == 0.005 && relerr(c, 0.8) < 1e-12);
	slope = 0;
	static const double d[] = {1.0, 0.5};      /* falling: slope 0, not below */
	assert_int_equal(plb__theil_sen(u, d, 2, &slope, &c), 1);
	assert_true(slope == 0 && c == 0.75);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double sorted_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_dbl);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Theil-Sen's medians (a selection, not a sort) against sorted medians,
 * on every count up to PLB__TS_MAX, odd and even, with many ties: the
 * sizes lie 1.3x apart, so every pair gives a slope. */
static void test_theil_sen_medians(void **state)
{
	(void)state;
	rng_seed(7);
	for (int trial = 0; trial < 400; trial++) {
		int n = 2 + trial % (PLB__TS_MAX - 1);
		double u[PLB__TS_MAX], t[PLB__TS_MAX], sl[PLB__TS_MAX * PLB__TS_MAX], ci[PLB__TS_MAX];
		for (int i = 0; i < n; i++) {
			u[i] = 100 * pow(1.3, i);
			/* a coarse grid of times: equal slopes and intercepts */
			t[i] = 0.01 * round(100 * (0.5 + 0.001 * u[i] * (1 + 0.3 * rng_unif())));
		}
		for (int i = n - 1; i > 0; i--) {      /* any order */
			int j = (int)(rng_unif() * (i + 1));
			double a = u[i], b = t[i];
			u[i] = u[j], t[i] = t[j], u[j] = a, t[j] = b;
		}
		int k = 0;
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				sl[k++] = (t[i] - t[j]) / (u[i] - u[j]);
		double want_s = fmax(0, sorted_median(sl, k));
		for (int i = 0; i < n; i++)
			ci[i] = t[i] - want_s * u[i];
		double want_c = fmax(0, sorted_median(ci, n)), slope = -1, c = -1;
		assert_int_equal(plb__theil_sen(u, t, n, &slope, &c), k);
		if (slope != want_s || c != want_c)
			fail_msg("n %d: slope %.17g c %.17g, sorted medians %.17g %.17g", n, slope, c,
				 want_s, want_c);
	}
}

/* The fit's shortcuts (one QR of all the samples for every subset, and
 * no leave-one-out pass for a subset that cannot win) pick the curve the
 * plain method picks: every subset solved by LAPACK on all samples and
 * scored in full. Curves of the kinds devices show (affine, saturating,
 * a power, a rising rate), 2 to 32 samples, 0-10% noise, weighted as the
 * model weighs them. */
/* Two fits are one curve: the same terms, the same values to rounding. */
static int same_curve(const struct plb__curve *a, const struct plb__curve *b, double W)
{
	int same = a->mask == b->mask;
	for (double x = 32; same && x <= W; x *= 4)
		same = relerr(plb__curve_eval(a, x), plb__curve_eval(b, x)) < 1e-7;
	return same;
}

static void test_fit_matches_reference(void **state)
{
	static const int ns[] = {2, 3, 4, 6, 9, 16, 32};
	int differ = 0, trials = 0, alone = 0;

	(void)state;
	rng_seed(11);
	for (int trial = 0; trial < 700; trial++) {
		int n = ns[trial % 7], kind = (trial / 7) % 4, terms = trial % 5 ? 3 : 2;
		double W = trial % 3 ? 1 << 20 : 1 << 24, noise = 0.1 * rng_unif();
		double u[32], t[32], w[32];
		for (int i = 0; i < n; i++) {
			u[i] = round(64 * pow(2, 10 * rng_unif()));
			double x = u[i];
			double e = kind == 0   ? 2e-3 + x / 5e4
				   : kind == 1 ? 1e-3 + (x + 800 * (1 - exp(-x / 800))) / 1e5
				   : kind == 2 ? 1e-6 * pow(x, 1.3)
					       : x / 3e4 * (1 + x / 2e5);
			t[i] = e * (1 + noise * rng_normal());
			if (t[i] <= 0)
				t[i] = e;
			w[i] = 1 / (t[i] * t[i]);
		}
		struct plb__curve fast, ref;
		plb__fit_reference = 0;
		assert_int_equal(plb__curve_fit(&fast, W, u, t, w, n, terms), 0);
		plb__fit_reference = 1;
		assert_int_equal(plb__curve_fit(&ref, W, u, t, w, n, terms), 0);
		plb__fit_reference = 0;
		trials++;
		int same = fast.mask == ref.mask;
		for (double x = 32; same && x <= W; x *= 4)
			same = relerr(plb__curve_eval(&fast, x), plb__curve_eval(&ref, x)) < 1e-7;
		if (!same) {
			differ++;
			print_error("trial %d: n %d kind %d: mask %#x against %#x\n", trial, n, kind,
				    fast.mask, ref.mask);
		}
		/* a hint (the right subset, or any) changes nothing */
		struct plb__curve hinted;
		unsigned hint = trial % 2 ? fast.mask : 1 + (unsigned)(rng_unif() * 127);
		assert_int_equal(plb__curve_fit_hint(&hinted, W, u, t, w, n, terms, hint), 0);
		if (!same_curve(&hinted, &fast, W)) {
			differ++;
			print_error("trial %d: hint %#x gave mask %#x against %#x\n", trial, hint,
				    hinted.mask, fast.mask);
		}
		/* the chosen subset alone is the same curve, where it passes the
		 * checks alone (not the two-size line, nor the fallback) */
		struct plb__curve only;
		int rc = plb__curve_fit_only(&only, W, u, t, w, n, fast.mask);
		assert_true(rc == 0 || rc == 1);
		if (rc == 0 && !same_curve(&only, &fast, W)) {
			differ++;
			print_error("trial %d: the subset %#x alone differs\n", trial, fast.mask);
		}
		alone += rc == 0;
	}
	assert_int_equal(trials, 700);
	assert_int_equal(differ, 0);
	assert_true(alone >= 600);
}

/* A model refits the terms it chose alone until PLB__SELECT_EVERY fits
 * have passed or a sample lies outside the sizes they were chosen on:
 * then it chooses again, and gets what a fit of its window would. */
static void test_select_again(void **state)
{
	struct plb__model m;
	double W = 1e7;
	(void)state;
	model_new(&m, W, 32, 0.3);
	rng_seed(5);
	int selections = 0;
	for (int k = 0; k < 40; k++) {
		double u = k == 30 ? 64000 : round(1000 + 3000 * rng_unif());
		double tt = t_square(u) * (1 + 0.03 * rng_normal());
		unsigned before = m.F.mask;
		assert_int_equal(plb__model_add(&m, u, tt, 0), 0);
		assert_true(m.since_select < PLB__SELECT_EVERY);
		double uu[32], te[32], w[32];
		for (int i = 0; i < m.n; i++) {
			const struct plb__sample *s = &m.s[(m.head + i) % m.cap];
			uu[i] = s->units;
			te[i] = s->exec_s;
			w[i] = 1 / (te[i] * te[i]);
		}
		struct plb__curve want;
		if (m.since_select == 0) {
			selections++;
			assert_int_equal(plb__curve_fit(&want, W, uu, te, w, m.n, m.max_terms), 0);
		} else {
			assert_int_equal(m.F.mask, before);
			assert_int_equal(plb__curve_fit_only(&want, W, uu, te, w, m.n, m.F.mask), 0);
		}
		assert_true(same_curve(&m.F, &want, W));
		if (k == 30)            /* a size never seen: chosen again */
			assert_int_equal(m.since_select, 0);
	}
	/* every fit of under 16 samples, then every 8th and 64000 */
	assert_true(selections >= PLB__SELECT_MIN_N - 1 + (40 - PLB__SELECT_MIN_N) / PLB__SELECT_EVERY &&
		    selections < 30);
	plb__model_fini(&m);
}

/* Blocks of microseconds set no best rate: a real CPU ran 64-point
 * k-means blocks in 2 us (the block in cache, 3x the rate of blocks of
 * 10^5 points streaming from memory), and the model capped that PU at
 * 120 points where each block paid a millisecond of round trip. The same
 * fall between blocks of milliseconds is a cliff. */
static void test_no_cliff_from_microsecond_blocks(void **state)
{
	static const double u[] = {64, 128, 16384, 65536, 150000};
	struct plb__model m;

	(void)state;
	/* the third time as the second, each block's time half transfer: a
	 * block's length is its compute and transfer together */
	for (int scale = 0; scale < 3; scale++) {
		double k = scale ? 1000 : 1;    /* then: 1000x slower */
		double xf = scale == 2 ? 0.5 : 0;
		model_new(&m, 2e6, 32, 0.3);
		for (int i = 0; i < 5; i++) {
			double per = u[i] < 1000 ? 30e-9 : 90e-9;
			assert_int_equal(plb__model_add(&m, u[i], (1 - xf) * k * per * u[i],
							xf * k * per * u[i]), 0);
		}
		if (scale == 0 && !isinf(plb__model_cap(&m)))
			fail_msg("blocks of 2-4 us capped the PU at %g units", plb__model_cap(&m));
		if (scale >= 1 && !(plb__model_cap(&m) == 128))
			fail_msg("blocks of 2-4 ms 3x faster than large ones: cap %g, not 128",
				 plb__model_cap(&m));
		plb__model_fini(&m);
	}
}

/* Beyond W (never asked by the solver, but E must stay non-decreasing
 * everywhere) E goes on along its tangent at W: E(W + d) = E(W) + d E'(W),
 * for a step of a fraction of a unit as for one of W. */
static void test_beyond_w(void **state)
{
	static const double step[] = {0.25, 0.5, 1, 3, 1e3, 1e6};
	struct plb__model m;
	double W = 1e6;

	(void)state;
	model_new(&m, W, 32, 0.3);
	feed(&m, t_square, 1e4, 1e6, 16, 0, 1);
	double e = plb__model_eval(&m, W), d = plb__model_deriv(&m, W);
	assert_true(d > 0);
	for (size_t i = 0; i < sizeof step / sizeof step[0]; i++) {
		double got = plb__model_eval(&m, W + step[i]) - e;
		if (relerr(got, d * step[i]) > 1e-6)
			fail_msg("E(W + %g) - E(W) = %g, the tangent gives %g",
				 step[i], got, d * step[i]);
	}
	plb__model_fini(&m);
}

/* max_units at or below u_lo, where E is held flat at E(u_lo): the whole
 * range fits when t >= E(max_units) (even exactly equal: "largest x with
 * E(x) <= t"), none of it when t is below. */
static void test_inverse_held(void **state)
{
	struct plb__model m;

	(void)state;
	model_new(&m, 1e6, 32, 0.3);
	feed(&m, t_affine, 1e3, 1e5, 8, 0, 1);
	assert_true(m.u_lo == 500);
	static const double cap[] = {500, 250, 10, 0.5};
	for (size_t i = 0; i < sizeof cap / sizeof cap[0]; i++) {
		double e = plb__model_eval(&m, cap[i]);
		assert_true(e == plb__model_eval(&m, m.u_lo));
		assert_true(plb__model_inverse(&m, e, cap[i]) == cap[i]);
		assert_true(plb__model_inverse(&m, 2 * e, cap[i]) == cap[i]);
		assert_true(plb__model_inverse(&m, 0.5 * e, cap[i]) == 0);
		assert_true(plb__model_inverse(&m, 0, cap[i]) == 0);
	}
	plb__model_fini(&m);
}

/* Throughput that keeps rising with block size (E concave: a fixed cost
 * that dominates, a GPU filling up): 1e-6 u (1 - 0.3 ln(u / W)), and a
 * block time that grows only logarithmically, 0.01 e^(u/W) + 5e-4 ln(u/W),
 * whose slope falls 1000-fold from the smallest block to W (the first
 * secant and Newton steps overshoot far out of the bracket). The inverse
 * is as exact as on the convex curves of test_inverse, over the whole range. */
static double t_concave(double u) { return 1e-6 * u * (1 - 0.3 * log(u / 1e7)); }
static double t_log(double u) { return 0.01 * exp(u / 1e7) + 5e-4 * log(u / 1e7); }

static void test_inverse_concave(void **state)
{
	static const truth_fn fs[] = {t_concave, t_log};
	struct plb__model m;
	double W = 1e7;

	(void)state;
	for (int k = 0; k < 2; k++) {
		model_new(&m, W, 32, 0.3);
		feed(&m, fs[k], 1e2, 1e7, 20, 0, 1);
		assert_true(relerr(plb__model_compute(&m, 1e3), fs[k](1e3)) < 1e-6);
		assert_model_increasing(&m);
		for (int i = 0; i <= 400; i++) {
			double x = m.u_lo * pow(W / m.u_lo, i / 400.0);
			double y = plb__model_inverse(&m, plb__model_eval(&m, x), W);
			if (relerr(y, x) > 1e-9)
				fail_msg("curve %d: inverse(E(%g)) = %.12g", k, x, y);
		}
		plb__model_fini(&m);
	}
}

/* A PU whose transfers take as long as its compute (a slow link) slows
 * down 4x in both: the change is judged on the whole block time, exec +
 * transfer, so it is caught from one sample and both parts rescale. */
static void test_speed_change_with_transfer(void **state)
{
	struct plb__model m;
	double W = 1 << 20, u = 3e4;

	(void)state;
	model_new(&m, W, 32, 0.3);
	for (int i = 0; i < 20; i++) {
		double x = 1e3 * pow(100, i / 19.0);
		assert_int_equal(plb__model_add(&m, x, t_affine(x), t_affine(x)), 0);
	}
	assert_int_equal(m.changes, 0);
	assert_int_equal(plb__model_add(&m, u, 4 * t_affine(u), 4 * t_affine(u)), 0);
	assert_int_equal(m.changes, 1);
	for (int i = 0; i <= 20; i++) {
		double x = 1e3 * pow(100, i / 20.0);
		assert_true(relerr(plb__model_eval(&m, x), 8 * t_affine(x)) < 0.1);
		assert_true(relerr(plb__model_xfer(&m, x), 4 * t_affine(x)) < 0.1);
	}
	plb__model_fini(&m);
}

/* change_threshold is "off its prediction by MORE than this factor"
 * (README): with a threshold of 1, a block exactly 2x its prediction is no
 * speed change, one a little more is. */
static void test_change_threshold_strict(void **state)
{
	static const double over[] = {1, 1.01};
	struct plb__model m;
	double u = 3e4;

	(void)state;
	for (int k = 0; k < 2; k++) {
		model_new(&m, 1 << 20, 32, 1.0);
		feed(&m, t_xlnx, 1e3, 1e5, 20, 0, 3);
		double f = plb__model_compute(&m, u), g = plb__model_xfer(&m, u);
		/* the block's times are its prediction doubled, exactly */
		assert_true(2 * f + 2 * g == 2 * plb__model_eval(&m, u));
		assert_int_equal(plb__model_add(&m, u, 2 * over[k] * f,
						2 * over[k] * g), 0);
		assert_int_equal(m.changes, k);
		plb__model_fini(&m);
	}
}

/* CLIFF_SOFT: the largest block ran 8% below the best rate (it entered a
 * cliff by a little, or met a slow period), far beyond the 0.5% scatter of
 * the samples before it: blocks are held at the largest that ran near the
 * best, 4000, though 8% is no fall (x_fall stays INFINITY), and still
 * once the slow block has left the window (8 samples); also where the
 * samples before it scatter by 2% either way. Where they scatter by 10%,
 * the same block says nothing: no cap. A larger block near the best rate
 * lifts the cap. */
static void test_soft_fall_holds_growth(void **state)
{
	static const double quiet[] = {1.005, 0.995, 1.005, 0.995, 1.005, 0.995};
	static const double noisy[] = {1.1, 0.9, 1.1, 0.9, 1.1, 0.9};
	static const double some[] = {1.02, 0.98, 1.02, 0.98, 1.02, 0.98};
	struct plb__model m;

	(void)state;
	/* 2% either way: 3 x the scatter, 6%, is below the 8% drop (the
	 * scatter is the RMS over the samples, not their sum) */
	model_new(&m, 1e6, 8, 10);
	for (int i = 0; i < 6; i++) {
		double u = 500 * (1 << (i / 2)) * (1 + i % 2);
		assert_int_equal(plb__model_add(&m, u, 1e-4 * u * some[i], 0), 0);
	}
	assert_int_equal(plb__model_add(&m, 8000, 0.8 * 0.98 / 0.92, 0), 0);
	if (plb__model_cap(&m) != 4000)
		fail_msg("8%% slow past samples scattered 2%%: cap %g, expected 4000",
			 plb__model_cap(&m));
	plb__model_fini(&m);
	for (int n = 0; n < 2; n++) {
		const double *f = n ? noisy : quiet;
		model_new(&m, 1e6, 8, 10);      /* no speed change detection here */
		for (int i = 0; i < 6; i++) {
			double u = 500 * (1 << (i / 2)) * (1 + i % 2);
			assert_int_equal(plb__model_add(&m, u, 1e-4 * u * f[i], 0), 0);
		}
		assert_true(isinf(plb__model_cap(&m)));
		/* the best rate is the block run 0.9 or 0.995 of its time */
		double slow = (n ? 0.9 : 0.995) / 0.92;
		assert_int_equal(plb__model_add(&m, 8000, 0.8 * slow, 0), 0);
		if (n == 0 && !(plb__model_cap(&m) == 4000 && isinf(m.x_fall)))
			fail_msg("8%% slow past quiet samples: cap %g, fall %g; expected 4000 and none",
				 plb__model_cap(&m), m.x_fall);
		if (n == 1 && !isinf(plb__model_cap(&m)))
			fail_msg("8%% slow past samples scattered 10%%: cap %g, expected none",
				 plb__model_cap(&m));
		for (int i = 0; n == 0 && i < 8; i++)
			assert_int_equal(plb__model_add(&m, 4000, 0.4 * f[i % 2], 0), 0);
		if (n == 0 && plb__model_cap(&m) != 4000)
			fail_msg("the slow block out of the window: cap %g, expected 4000",
				 plb__model_cap(&m));
		assert_int_equal(plb__model_add(&m, 9000, 0.9, 0), 0);
		assert_true(isinf(plb__model_cap(&m)));
		plb__model_fini(&m);
	}
}

/* A block 30% slower per unit than the best (a mild cliff, or noise, a
 * neighbour, a device warming up): on its own it holds blocks at the
 * largest size that kept the best rate, and is not yet a fall (x_fall
 * stays INFINITY: nothing to carry to another run); a second slow block
 * makes it one, capped the same. A block as large at the best rate
 * refutes it instead. 50% slower is a fall at once. */
static void test_cliff_one_mild_fall(void **state)
{
	struct plb__model m;

	(void)state;
	for (int refute = 0; refute < 2; refute++) {
		model_new(&m, 1e6, 8, 10);      /* no speed change detection here */
		assert_int_equal(plb__model_add(&m, 1000, 0.1, 0), 0);
		assert_int_equal(plb__model_add(&m, 2000, 0.2, 0), 0);
		assert_int_equal(plb__model_add(&m, 4000, 0.4 / 0.7, 0), 0);
		assert_true(plb__model_cap(&m) == 2000 && isinf(m.x_fall));
		if (refute) {
			assert_int_equal(plb__model_add(&m, 4000, 0.41, 0), 0);
			assert_true(isinf(plb__model_cap(&m)) && isinf(m.x_fall));
		} else {
			assert_int_equal(plb__model_add(&m, 3000, 0.3 / 0.7, 0), 0);
			assert_true(plb__model_cap(&m) == 2000 && m.x_fall == 3000);
		}
		plb__model_fini(&m);
	}
	/* the refuting block first (the window's oldest sample): a block
	 * larger than the mild slow one, near the best rate, still refutes it */
	model_new(&m, 1e6, 8, 10);
	assert_int_equal(plb__model_add(&m, 4000, 0.41, 0), 0);
	assert_int_equal(plb__model_add(&m, 1000, 0.1, 0), 0);
	assert_int_equal(plb__model_add(&m, 2000, 0.2, 0), 0);
	assert_int_equal(plb__model_add(&m, 3000, 0.3 / 0.7, 0), 0);
	if (!(isinf(plb__model_cap(&m)) && isinf(m.x_fall)))
		fail_msg("a mild slow block after a larger one near the best rate: cap %g, fall %g; expected none",
			 plb__model_cap(&m), m.x_fall);
	plb__model_fini(&m);
	/* the mild one first, in a window it fills: counted once, still no
	 * fall */
	model_new(&m, 1e6, 4, 10);
	assert_int_equal(plb__model_add(&m, 8000, 0.8 / 0.7, 0), 0);
	assert_int_equal(plb__model_add(&m, 1000, 0.1, 0), 0);
	assert_int_equal(plb__model_add(&m, 2000, 0.2, 0), 0);
	assert_int_equal(plb__model_add(&m, 4000, 0.4, 0), 0);
	assert_int_equal(m.n, m.cap);
	if (!(plb__model_cap(&m) == 4000 && isinf(m.x_fall)))
		fail_msg("one mild slow block, the oldest of a full window: cap %g, fall %g; expected 4000 and none",
			 plb__model_cap(&m), m.x_fall);
	plb__model_fini(&m);
	model_new(&m, 1e6, 8, 10);
	assert_int_equal(plb__model_add(&m, 1000, 0.1, 0), 0);
	assert_int_equal(plb__model_add(&m, 4000, 0.4 / 0.45, 0), 0);
	assert_true(plb__model_cap(&m) == 1000 && m.x_fall == 4000);
	plb__model_fini(&m);
	/* a block no larger than the best one that runs slow is no cliff:
	 * there is no larger size to stop below (noise, a neighbour) */
	model_new(&m, 1e6, 8, 10);
	assert_int_equal(plb__model_add(&m, 1000, 0.11, 0), 0);
	assert_int_equal(plb__model_add(&m, 2000, 0.2, 0), 0);
	assert_int_equal(plb__model_add(&m, 2000, 0.2 / 0.45, 0), 0);
	assert_true(isinf(plb__model_cap(&m)) && isinf(m.x_fall));
	plb__model_fini(&m);
}

/* A PU whose blocks of one size ran 2x apart (a real CPU sharing its
 * cores) has no cliff from larger blocks 30% below its best rate: its
 * noise reaches that far. The same larger blocks on a PU whose blocks of
 * one size agree are a cliff (find_cliff's noise scale). */
static void test_cliff_within_noise(void **state)
{
	(void)state;
	for (int noisy = 0; noisy <= 1; noisy++) {
		struct plb__model m;
		model_new(&m, 1e6, 32, 10);
		assert_int_equal(plb__model_add(&m, 1000, 0.010, 0), 0);
		assert_int_equal(plb__model_add(&m, 1000, noisy ? 0.020 : 0.0105, 0), 0);
		assert_int_equal(plb__model_add(&m, 4000, 0.040 / 0.7, 0), 0);
		assert_int_equal(plb__model_add(&m, 4000, 0.040 / 0.7, 0), 0);
		if (noisy && !isinf(m.x_fall))
			fail_msg("noisy PU: a fall at %g within its noise", m.x_fall);
		if (!noisy && m.x_fall != 4000)
			fail_msg("quiet PU: fall %g, expected 4000", m.x_fall);
		plb__model_fini(&m);
	}
}

/* The fall outlives the window even when every sample left is past it
 * (blocks of 8000 after a fall seen at 4000, window 2): nothing below the
 * fall says where it began, so the cap is half the fall, 2000. */
static void test_cliff_cap_window_past_fall(void **state)
{
	struct plb__model m;

	(void)state;
	model_new(&m, 1e6, 2, 0.3);
	assert_int_equal(plb__model_add(&m, 1000, 0.1, 0), 0);
	assert_int_equal(plb__model_add(&m, 4000, 1.0, 0), 0);  /* 2.5x per unit */
	assert_true(plb__model_cap(&m) == 1000);
	assert_int_equal(plb__model_add(&m, 8000, 2.0, 0), 0);
	assert_int_equal(plb__model_add(&m, 8000, 2.0, 0), 0);
	assert_true(m.s[m.head].units == 8000 && m.s[(m.head + 1) % m.cap].units == 8000);
	assert_true(plb__model_cap(&m) == 2000);
	double e = plb__model_eval(&m, 2000);
	assert_true(relerr(plb__model_eval_split(&m, 8000), 4 * e) < 1e-12);
	plb__model_fini(&m);
}

/* A kept model loads in one fit (plb__balancer_model_set warms every PU at
 * every run of an iterative app): the same curve, line, cap and fall as
 * adding its samples one by one where no speed change lies among them,
 * the newest model_window of them kept, one fit, not one a sample; a bad
 * sample adds none of them. */
/* plb__model_eval_memo answers as plb__model_eval does after every change
 * of the model: its first sample, each refit, a speed change, another
 * size asked. */
static void test_eval_memo_follows_fits(void **state)
{
	(void)state;
	struct plb__model m;
	model_new(&m, 1e6, 32, 0.3);
	assert_true(plb__model_eval_memo(&m, 4096) == plb__model_eval(&m, 4096));
	double last = plb__model_eval_memo(&m, 4096);
	for (int i = 0; i < 12; i++) {
		double u = 1024.0 * (1 + i % 4), slow = i < 8 ? 1 : 3;   /* 3x slower from sample 8 */
		assert_int_equal(plb__model_add(&m, u, slow * (1e-3 + 2e-6 * u), 1e-5), 0);
		double e = plb__model_eval(&m, 4096);
		if (!(plb__model_eval_memo(&m, 4096) == e))
			fail_msg("sample %d: memo %.9g, eval %.9g", i, plb__model_eval_memo(&m, 4096), e);
		if (i == 0 || i == 8)
			assert_true(e != last);         /* the case the memo must not hide */
		last = e;
		assert_true(plb__model_eval_memo(&m, 100) == plb__model_eval(&m, 100));
	}
	plb__model_fini(&m);
}

/* The spread of a PU's samples about its fit: NAN below 3 samples, 0 for
 * samples on a line, and about d for times d above and below it in turn
 * (log(1 + d) and log(1 - d): d to first order). */
static void test_model_spread(void **state)
{
	(void)state;
	for (int k = 0; k < 2; k++) {
		double d = k ? 0.05 : 0;
		struct plb__model m;
		model_new(&m, 1e6, 32, 1e3);
		for (int i = 0; i < 24; i++) {
			double u = 1000 * (i + 1), t = 0.01 + 1e-5 * u;
			assert_int_equal(plb__model_add(&m, u, t * (1 + (i % 2 ? d : -d)), 0), 0);
			if (i < 2)
				assert_true(isnan(plb__model_spread(&m)));
		}
		double sd = plb__model_spread(&m);
		if (!(fabs(sd - d) <= 0.2 * d + 1e-6))
			fail_msg("samples %g off the line: spread %g", d, sd);
		plb__model_fini(&m);
	}
}

static void test_model_load(void **state)
{
	(void)state;
	enum { N = 12 };
	struct plb__sample v[N];
	for (int i = 0; i < N; i++) {
		double u = 2500 * (i + 1);     /* the cliff at 20000 */
		v[i] = (struct plb__sample){u, t_cliff(u) * (1 + 0.02 * ((i % 3) - 1)), 1e-5 + 1e-9 * u};
	}
	for (int window = 8; window <= 32; window += 24) {
		struct plb__model a, b;
		model_new(&a, 1e6, window, 1e3);        /* no speed change detection */
		model_new(&b, 1e6, window, 1e3);
		for (int i = 0; i < N; i++)
			assert_int_equal(plb__model_add(&a, v[i].units, v[i].exec_s, v[i].xfer_s), 0);
		assert_int_equal(plb__model_load(&b, v, N), 0);
		assert_int_equal(b.nfits, 1);
		assert_int_equal(b.n, a.n);
		for (int i = 0; i < b.n; i++)
			assert_true(b.s[(b.head + i) % b.cap].units == a.s[(a.head + i) % a.cap].units);
		for (double u = 500; u < 4e4; u *= 1.7)
			if (!(relerr(plb__model_eval(&b, u), plb__model_eval(&a, u)) < 1e-9))
				fail_msg("window %d: E(%g) loaded %.9g, added %.9g", window, u,
					 plb__model_eval(&b, u), plb__model_eval(&a, u));
		if (window == 32 && !(plb__model_cap(&b) == plb__model_cap(&a) && b.x_fall == a.x_fall &&
				      plb__model_cap(&b) <= 2e4))
			fail_msg("cap %g fall %g loaded, %g and %g added", plb__model_cap(&b), b.x_fall,
				 plb__model_cap(&a), a.x_fall);
		plb__model_fini(&a);
		plb__model_fini(&b);
	}
	struct plb__model m;
	model_new(&m, 1e6, 32, 0.3);
	struct plb__sample bad[2] = {{1000, 0.1, 0}, {2000, NAN, 0}};
	assert_int_equal(plb__model_load(&m, bad, 2), PLB_EINVAL);
	assert_int_equal(m.n, 0);
	assert_int_equal(m.nfits, 0);
	plb__model_fini(&m);
}

/* Blocks that took no time fit a curve of 0 s: a block that then takes
 * a second has no prediction to be a multiple of, and is no speed change
 * (no rescale of the old samples, no count). */
static void test_no_change_from_zero_prediction(void **state)
{
	(void)state;
	struct plb__model m;
	model_new(&m, 1e6, 32, 0.3);
	assert_int_equal(plb__model_add(&m, 100, 0, 0), 0);
	assert_int_equal(plb__model_add(&m, 200, 0, 0), 0);
	assert_int_equal(plb__model_add(&m, 400, 0, 0), 0);
	assert_true(plb__model_eval(&m, 150) == 0);
	assert_int_equal(plb__model_add(&m, 150, 1, 0), 0);
	assert_int_equal(m.changes, 0);
	assert_false(m.after_change);
	plb__model_fini(&m);
}

/* Bad samples and arguments give PLB_EINVAL and change nothing. */
static void test_bad_samples(void **state)
{
	static const double bad[][3] = {
		{0, 1, 0}, {-5, 1, 0}, {NAN, 1, 0}, {INFINITY, 1, 0},
		{100, -1, 0}, {100, NAN, 0}, {100, INFINITY, 0},
		{100, 1, -1}, {100, 1, NAN}, {100, 1, INFINITY},
		{100, -0.5, 1}, {100, NAN, 1},         /* a bad part in a good total */
	};
	struct plb__model m, snap;
	struct plb__sample ring[32];

	(void)state;
	model_new(&m, 1e6, 32, 0.3);
	feed(&m, t_affine, 1e3, 1e5, 8, 0, 1);
	memcpy(&snap, &m, sizeof m);
	memcpy(ring, m.s, sizeof ring);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(plb__model_add(&m, bad[i][0], bad[i][1],
						bad[i][2]), PLB_EINVAL);
		assert_memory_equal(&m, &snap, sizeof m);
		assert_memory_equal(m.s, ring, sizeof ring);
	}
	plb__model_fini(&m);

	struct plb__curve c;
	double u[] = {1, 2}, t[] = {1, 2}, w[] = {1, -1}, z[] = {0, 0};
	double wn[] = {1, -0.5}, wi[] = {1, INFINITY};     /* they still sum above 0 */
	double ub[] = {1, 0}, tb[] = {1, -2};
	assert_int_equal(plb__curve_fit(&c, 10, u, t, w, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, u, t, z, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, u, t, wn, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, u, t, wi, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, ub, t, NULL, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, u, tb, NULL, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 0, u, t, NULL, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, u, t, NULL, 0, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, NULL, t, NULL, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(&c, 10, u, NULL, NULL, 2, 3), PLB_EINVAL);
	assert_int_equal(plb__curve_fit(NULL, 10, u, t, NULL, 2, 3), PLB_EINVAL);

	/* a term budget under 1 is 1 (a fit, not an error or an empty curve) */
	struct plb__curve c0, c1;
	double u3[] = {100, 200, 400}, t3[] = {1.1, 2.0, 4.3};
	assert_int_equal(plb__curve_fit(&c1, 1000, u3, t3, NULL, 3, 1), 0);
	assert_true(plb__curve_eval(&c1, 300) > 0);
	for (int k = -1; k <= 0; k++) {
		assert_int_equal(plb__curve_fit(&c0, 1000, u3, t3, NULL, 3, k), 0);
		assert_true(plb__curve_eval(&c0, 300) == plb__curve_eval(&c1, 300));
	}

	struct plb__params p;
	plb__params_init(&p);
	assert_int_equal(plb__model_init(&m, 0, &p), PLB_EINVAL);
	assert_int_equal(plb__model_init(&m, NAN, &p), PLB_EINVAL);
	assert_int_equal(plb__model_init(NULL, 1000, &p), PLB_EINVAL);
	assert_int_equal(plb__model_init(&m, 1000, NULL), PLB_EINVAL);
	/* a window must hold a sample (the params' own range starts at 4; this
	 * guards callers that fill the struct by hand) */
	for (double win = -1; win < 1; win += 0.5) {
		p.model_window = win;
		assert_int_equal(plb__model_init(&m, 1000, &p), PLB_EINVAL);
	}
	/* and one sample is enough: the newest alone */
	p.model_window = 1;
	assert_int_equal(plb__model_init(&m, 1000, &p), 0);
	assert_int_equal(plb__model_add(&m, 100, 1.0, 0), 0);
	assert_int_equal(plb__model_add(&m, 200, 1.5, 0), 0);
	assert_int_equal(m.n, 1);
	plb__model_fini(&m);
}

/* Blocks that took less time the larger they were (a device warming up,
 * or noise): no fitted curve falls with the block size, whatever the
 * samples do, since a solve needs E non-decreasing. */
static void test_fit_never_falls(void **state)
{
	(void)state;
	static const double u[] = {1000, 2000, 4000, 8000, 16000};
	static const double t[][5] = {
		{2.0, 1.5, 1.0, 0.8, 0.7},
		{1.0, 0.9, 1.2, 0.6, 1.5},
		{0.1, 0.4, 0.3, 0.2, 0.1},
	};
	for (int k = 0; k < 3; k++) {
		struct plb__curve c;
		assert_int_equal(plb__curve_fit(&c, 1e5, u, t[k], NULL, 5, 3), 0);
		double prev = 0;
		for (int i = 0; i <= 400; i++) {
			double x = 100 * pow(2e5 / 100, i / 400.0), f = plb__curve_eval(&c, x);
			if (!(f >= prev && isfinite(f)))
				fail_msg("samples %d: the fit falls from %g to %g s at %g units", k, prev, f, x);
			prev = f;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fit_affine),
		cmocka_unit_test(test_select_again),
		cmocka_unit_test(test_fit_zero_weight),
		cmocka_unit_test(test_fit_time_unit_invariant),
		cmocka_unit_test(test_fit_xlnx),
		cmocka_unit_test(test_fit_never_falls),
		cmocka_unit_test(test_fit_gpu_table),
		cmocka_unit_test(test_fit_square),
		cmocka_unit_test(test_fit_noise),
		cmocka_unit_test(test_no_overfit),
		cmocka_unit_test(test_extrapolation),
		cmocka_unit_test(test_two_sizes),
		cmocka_unit_test(test_no_flattening_beyond_samples),
		cmocka_unit_test(test_fit_fills_curve),
		cmocka_unit_test(test_fit_all_terms),
		cmocka_unit_test(test_flattening_floor_from_group_means),
		cmocka_unit_test(test_model_increasing),
		cmocka_unit_test(test_one_sample_and_duplicates),
		cmocka_unit_test(test_rank_deficient),
		cmocka_unit_test(test_xfer_line),
		cmocka_unit_test(test_xfer_flat_symmetric),
		cmocka_unit_test(test_inverse),
		cmocka_unit_test(test_speed_change),
		cmocka_unit_test(test_no_false_change),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_cliff_cap),
		cmocka_unit_test(test_fall_explained_by_time),
		cmocka_unit_test(test_cap_floor),
		cmocka_unit_test(test_soft_fall_scatter),
		cmocka_unit_test(test_theil_sen),
		cmocka_unit_test(test_theil_sen_medians),
		cmocka_unit_test(test_fit_matches_reference),
		cmocka_unit_test(test_probe_past_cap_no_change),
		cmocka_unit_test(test_weight_floor_from_longest),
		cmocka_unit_test(test_sample_order_invariance),
		cmocka_unit_test(test_no_cliff_from_microsecond_blocks),
		cmocka_unit_test(test_beyond_w),
		cmocka_unit_test(test_inverse_held),
		cmocka_unit_test(test_inverse_concave),
		cmocka_unit_test(test_speed_change_with_transfer),
		cmocka_unit_test(test_change_threshold_strict),
		cmocka_unit_test(test_cliff_cap_window_past_fall),
		cmocka_unit_test(test_soft_fall_holds_growth),
		cmocka_unit_test(test_cliff_one_mild_fall),
		cmocka_unit_test(test_cliff_within_noise),
		cmocka_unit_test(test_no_change_from_zero_prediction),
		cmocka_unit_test(test_bad_samples),
		cmocka_unit_test(test_eval_memo_follows_fits),
		cmocka_unit_test(test_model_load),
		cmocka_unit_test(test_model_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
