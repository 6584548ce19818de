/* Emulated device models (devmodel.h): evaluating and parsing the block-time
 * curves of a [model NAME] section, the piecewise-constant speed changes a
 * model may have, and the per-PU random streams that give blocks their
 * noise. Everything here is pure computation so that plbsim and the runtime's
 * emulated PUs see exactly the same device for the same seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/devmodel.h"
#include "runtime/config/parse.h"

/* The longest a block may be given to take, and the largest coefficient:
 * beyond them a model is a typo (1e19 s overflowed the runtime's sleep
 * and read as no time at all), not a device. */
#define SECONDS_MAX 1e9
#define TABLE_ACCEPTS "'table U:S U:S ...' (units:seconds for one block, " \
	"units >= 0 strictly increasing, seconds in [0, 1e9] and non-decreasing, " \
	"no spaces around ':')"
#define POLY_ACCEPTS "'poly C0 C1 C2 ...' (seconds = C0 + C1 x + C2 x^2 ..., " \
	"at least one coefficient, each in [0, 1e9])"

/* Index i of the segment [x[i], x[i+1]] that serves u: the one holding u,
 * or the first / last one when u lies outside the table. Needs n >= 2. */
static int table_segment(const struct plb__curve_spec *c, double u)
{
	int lo = 0, hi = c->n - 2;

	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		if (c->x[mid] <= u)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

double plb__curve_spec_eval(const struct plb__curve_spec *c, double units)
{
	double y = 0;

	switch (c->kind) {
	case PLB__CURVE_NONE:
		return 0;
	case PLB__CURVE_TABLE:
		if (c->n == 1) {
			/* One measurement: assume time proportional to units. */
			y = c->x[0] > 0 ? c->y[0] * units / c->x[0] : c->y[0];
		} else {
			int i = table_segment(c, units);
			double s = (c->y[i + 1] - c->y[i]) / (c->x[i + 1] - c->x[i]);
			y = c->y[i] + s * (units - c->x[i]);
		}
		break;
	case PLB__CURVE_POLY:
		for (int i = c->n - 1; i >= 0; i--)
			y = y * units + c->c[i];
		break;
	}
	/* Extrapolated lines and polynomials may dip below 0; time cannot. */
	return y > 0 ? y : 0;
}

double plb__devmodel_factor(const struct plb__devmodel *m, double t)
{
	double f = 1;

	for (int i = 0; i < m->nchange && m->change_t[i] <= t; i++)
		f = m->change_f[i];
	return f;
}

/* The speed factor of piece k of a stage: its own stream, drawn afresh. */
static double piece(const struct plb__noise *nz, double sd, int stage, uint64_t k)
{
	struct plb__rng r;
	plb__rng_seed(&r, nz->seed ^ (k * 0x9E3779B97F4A7C15ULL), 2 * nz->stream + (uint64_t)stage);
	return plb__rng_noise(&r, sd);
}

/* When `work` seconds at base speed, started at t0, end: the pieces of
 * constant speed walked, each cut where a speed change falls, and with nz
 * (noise pieces of m->noise_time) also where a noise piece ends. */
static double walk(const struct plb__devmodel *m, const struct plb__noise *nz, int stage,
		   double t0, double work)
{
	double t = t0, f = 1, tau = nz ? m->noise_time : INFINITY;
	int i = 0;
	uint64_t k = nz ? (uint64_t)floor(fmax(t0, 0) / tau) : 0;

	if (!(work > 0))
		return t0;
	while (i < m->nchange && m->change_t[i] <= t)
		f = m->change_f[i++];
	for (;;) {
		double end = nz ? (double)(k + 1) * tau : INFINITY;
		if (end <= t) {         /* t on a piece's edge, by rounding */
			k++;
			continue;
		}
		if (i < m->nchange && m->change_t[i] < end)
			end = m->change_t[i];
		double g = nz ? f * piece(nz, m->noise, stage, k) : f;
		if (!(end < INFINITY) || work <= (end - t) / g)
			return t + work * g;
		work -= (end - t) / g;
		t = end;
		while (i < m->nchange && m->change_t[i] <= t)
			f = m->change_f[i++];
	}
}

double plb__devmodel_finish(const struct plb__devmodel *m, double t0,
			    double work)
{
	return walk(m, NULL, 0, t0, work);
}

double plb__devmodel_work_until(const struct plb__devmodel *m, double t)
{
	double w = 0, prev = 0, f = 1;

	if (!(t > 0))
		return 0;
	for (int i = 0; i < m->nchange && m->change_t[i] < t; i++) {
		w += (m->change_t[i] - prev) / f;
		prev = m->change_t[i];
		f = m->change_f[i];
	}
	return w + (t - prev) / f;
}

void plb__curve_spec_fini(struct plb__curve_spec *c)
{
	free(c->x);
	free(c->y);
	free(c->c);
	memset(c, 0, sizeof *c);
}

static const char *skip_space(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static size_t token_len(const char *s)
{
	size_t n = 0;

	while (s[n] && s[n] != ' ' && s[n] != '\t')
		n++;
	return n;
}


/* Token shown in messages: long enough to recognise, short enough to read. */
#define TOK(s, len) (int)((len) > 40 ? 40 : (len)), (s)

/* The c->n points of a table, s at the first one. */
static int parse_table(struct plb__curve_spec *c, const char *s,
		       char *err, size_t errlen)
{
	for (int i = 0; i < c->n; i++, s = skip_space(s + token_len(s))) {
		size_t len = token_len(s);
		const char *colon = memchr(s, ':', len);
		if (!colon || plb__cfg_number(s, colon - s, &c->x[i]) ||
		    plb__cfg_number(colon + 1, len - (colon + 1 - s), &c->y[i])) {
			snprintf(err, errlen, "point %d '%.*s' is malformed; accepted: "
				 TABLE_ACCEPTS, i + 1, TOK(s, len));
			return PLB_EINVAL;
		}
		if (c->x[i] < 0 || c->y[i] < 0) {
			snprintf(err, errlen, "point %d '%.*s' has a negative value; accepted: "
				 TABLE_ACCEPTS, i + 1, TOK(s, len));
			return PLB_EINVAL;
		}
		if (c->y[i] > SECONDS_MAX) {
			snprintf(err, errlen, "point %d '%.*s': %g s for one block is out of range; "
				 "accepted: " TABLE_ACCEPTS, i + 1, TOK(s, len), c->y[i]);
			return PLB_EINVAL;
		}
		if (i > 0 && c->x[i] <= c->x[i - 1]) {
			snprintf(err, errlen, "point %d '%.*s' is unsorted: units %g do not "
				 "exceed the previous point's %g; accepted: " TABLE_ACCEPTS,
				 i + 1, TOK(s, len), c->x[i], c->x[i - 1]);
			return PLB_EINVAL;
		}
		/* the bounds invert the curves: more units never take less time */
		if (i > 0 && c->y[i] < c->y[i - 1]) {
			snprintf(err, errlen, "point %d '%.*s': %g s is less than the previous "
				 "point's %g s; block times must not decrease with units; accepted: "
				 TABLE_ACCEPTS, i + 1, TOK(s, len), c->y[i], c->y[i - 1]);
			return PLB_EINVAL;
		}
	}
	return 0;
}

/* The c->n coefficients of a polynomial, s at the first one. */
static int parse_poly(struct plb__curve_spec *c, const char *s,
		      char *err, size_t errlen)
{
	for (int i = 0; i < c->n; i++, s = skip_space(s + token_len(s))) {
		size_t len = token_len(s);
		if (plb__cfg_number(s, len, &c->c[i])) {
			snprintf(err, errlen, "coefficient %d '%.*s' is not a number; accepted: "
				 POLY_ACCEPTS, i + 1, TOK(s, len));
			return PLB_EINVAL;
		}
		/* a negative one makes time fall below 0 somewhere, which the
		 * evaluation would hide by clamping */
		if (c->c[i] < 0 || c->c[i] > SECONDS_MAX) {
			snprintf(err, errlen, "coefficient %d '%.*s' is %s; accepted: " POLY_ACCEPTS,
				 i + 1, TOK(s, len), c->c[i] < 0 ? "negative" : "out of range");
			return PLB_EINVAL;
		}
	}
	return 0;
}

int plb__curve_spec_parse(struct plb__curve_spec *c, const char *text,
			  char *err, size_t errlen)
{
	const char *s = skip_space(text);
	size_t len = token_len(s);
	int table = len == 5 && !memcmp(s, "table", 5), rc;

	memset(c, 0, sizeof *c);
	if (!table && !(len == 4 && !memcmp(s, "poly", 4))) {
		snprintf(err, errlen, "'%.*s' is not a curve kind; accepted: "
			 TABLE_ACCEPTS " or " POLY_ACCEPTS, TOK(s, len));
		return PLB_EINVAL;
	}
	s += len;
	c->n = plb__cfg_count_words(s);
	if (c->n == 0) {
		snprintf(err, errlen, table ? "empty table; accepted: " TABLE_ACCEPTS
					    : "poly has no coefficient; accepted: " POLY_ACCEPTS);
		return PLB_EINVAL;
	}
	c->kind = table ? PLB__CURVE_TABLE : PLB__CURVE_POLY;
	if (table) {
		c->x = malloc((size_t)c->n * sizeof *c->x);
		c->y = malloc((size_t)c->n * sizeof *c->y);
	} else {
		c->c = malloc((size_t)c->n * sizeof *c->c);
	}
	if (table ? !c->x || !c->y : !c->c) {
		snprintf(err, errlen, "out of memory");
		rc = PLB_ENOMEM;
	} else {
		rc = table ? parse_table(c, skip_space(s), err, errlen)
			   : parse_poly(c, skip_space(s), err, errlen);
	}
	if (rc)
		plb__curve_spec_fini(c);
	return rc;
}

/* splitmix64 (Vigna): turns any 64-bit state sequence into well-mixed words;
 * the recommended way to fill xoshiro's state. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

#define TWO_PI 6.283185307179586476925286766559  /* M_PI is not C11 */

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t xoshiro_next(struct plb__rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

void plb__rng_seed(struct plb__rng *r, uint64_t seed, uint64_t stream)
{
	/* Mix seed and stream separately first, so nearby (seed, stream) pairs
	 * such as (1, 2) and (2, 1) do not start from related states. */
	uint64_t a = seed, b = ~stream;
	uint64_t x = splitmix64(&a) ^ rotl(splitmix64(&b), 32);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
		r->s[0] = 1;    /* the one state xoshiro cannot leave */
}

double plb__rng_uniform(struct plb__rng *r)
{
	return (double)(xoshiro_next(r) >> 11) * 0x1.0p-53;
}

double plb__rng_normal(struct plb__rng *r)
{
	/* Box-Muller, keeping only the cosine half: with no cached spare the
	 * state stays four words, and a copied state replays exactly. */
	double u1 = 1.0 - plb__rng_uniform(r);  /* (0, 1]: log is finite */
	double u2 = plb__rng_uniform(r);

	return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

double plb__rng_noise(struct plb__rng *r, double sd)
{
	if (!(sd > 0))
		return 1;
	double s2 = log1p(sd * sd);     /* lognormal: var = (e^s2 - 1) mean^2 */
	return exp(sqrt(s2) * plb__rng_normal(r) - s2 / 2);
}

void plb__noise_seed(struct plb__noise *nz, uint64_t seed, uint64_t stream)
{
	plb__rng_seed(&nz->rng, seed, stream);
	nz->seed = seed;
	nz->stream = stream;
}

double plb__devmodel_stage(const struct plb__devmodel *m, struct plb__noise *nz, int stage,
			   double t0, double work)
{
	if (!(m->noise_time > 0) || !(m->noise > 0))
		return walk(m, NULL, stage, t0, work * plb__rng_noise(&nz->rng, m->noise));
	return walk(m, nz, stage, t0, work);
}
