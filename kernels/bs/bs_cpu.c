/* The Black-Scholes CPU kernel's entry (its loops and the drawing of
 * options are in bs_simd.c), the serial reference, verification, the
 * drawn options' kernel and the CSV reader (see bs.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bs/bs.h"

/* Abramowitz and Stegun 26.2.17: the normal CDF to 7.5e-8. */

size_t plb__bs_in_unit(enum plb__bs_prec prec)
{
	return prec == PLB__BS_F64 ? sizeof(struct plb__bs_opt) : sizeof(struct plb__bs_optf);
}

size_t plb__bs_out_unit(enum plb__bs_prec prec)
{
	return 2 * (prec == PLB__BS_F64 ? sizeof(double) : sizeof(float));
}

/* The plain serial formula in double, built with the ordinary flags: the
 * reference the vectorised loops are checked against. */
static double cnd(double d)
{
	double k = 1 / (1 + PLB__BS_P * fabs(d));
	double c = PLB__BS_RSQRT2PI * exp(-0.5 * d * d) * PLB__BS_POLY(double, k);
	return d > 0 ? 1 - c : c;
}

int plb__bs_cpu(enum plb__bs_prec prec, const void *in, void *out, size_t n)
{
	if (n && (!in || !out))
		return PLB_EINVAL;
	if (prec == PLB__BS_F64)
		plb__bs_simd_f64(in, out, n);
	else
		plb__bs_simd_f32(in, out, n);
	return 0;
}

void plb__bs_ref(const struct plb__bs_opt *o, double *call, double *put)
{
	double sq = o->v * sqrt(o->T);
	double d1 = (log(o->S / o->K) + (o->r + 0.5 * o->v * o->v) * o->T) / sq, d2 = d1 - sq;
	double c1 = cnd(d1), c2 = cnd(d2), ke = o->K * exp(-o->r * o->T);
	*call = o->S * c1 - ke * c2;
	*put = ke * (1 - c2) - o->S * (1 - c1);
}

/* Option i of in, in double. */
static struct plb__bs_opt opt_at(enum plb__bs_prec prec, const void *in, size_t i)
{
	if (prec == PLB__BS_F64)
		return ((const struct plb__bs_opt *)in)[i];
	const struct plb__bs_optf *f = (const struct plb__bs_optf *)in + i;
	return (struct plb__bs_opt){f->S, f->K, f->T, f->r, f->v};
}

int plb__bs_verify(enum plb__bs_prec prec, const void *in, const void *out, size_t n,
		   size_t *bad, double *err_ref, double *err_parity)
{
	/* a price is a few operations on S and K: rounding leaves errors of a
	 * few eps of S + K; single precision's exp and log add a few more */
	double tol = prec == PLB__BS_F64 ? 1e-12 : 2e-5;
	double wr = 0, wp = 0;
	size_t first = n;
	for (size_t i = 0; i < n; i++) {
		struct plb__bs_opt o = opt_at(prec, in, i);
		double c, p, rc, rp;
		if (prec == PLB__BS_F64) {
			c = ((const double *)out)[2 * i];
			p = ((const double *)out)[2 * i + 1];
		} else {
			c = ((const float *)out)[2 * i];
			p = ((const float *)out)[2 * i + 1];
		}
		plb__bs_ref(&o, &rc, &rp);
		double scale = fabs(o.S) + fabs(o.K);
		double er = fmax(fabs(c - rc), fabs(p - rp)) / scale;
		double ep = fabs(c - p - (o.S - o.K * exp(-o.r * o.T))) / scale;
		if (!(er <= wr))
			wr = isnan(er) ? INFINITY : er;
		if (!(ep <= wp))
			wp = isnan(ep) ? INFINITY : ep;
		if (first == n && !(er <= tol && ep <= tol))
			first = i;
	}
	if (bad)
		*bad = first;
	if (err_ref)
		*err_ref = wr;
	if (err_parity)
		*err_parity = wp;
	return first == n ? 0 : PLB_ESOLVE;
}

void plb__bs_generate(enum plb__bs_prec prec, void *in, size_t n, uint64_t seed)
{
	plb__bs_draw(prec, in, 0, n, seed);
}

int plb__bs_cpu_drawn(enum plb__bs_prec prec, uint64_t seed, uint64_t first, void *out, size_t n)
{
	enum { CHUNK = 256 };   /* options drawn a pass: 10 KB, in L1 */
	struct plb__bs_opt buf[CHUNK];
	size_t ou = plb__bs_out_unit(prec);
	if (n && !out)
		return PLB_EINVAL;
	for (size_t o = 0; o < n; o += CHUNK) {
		size_t m = n - o < CHUNK ? n - o : CHUNK;
		plb__bs_draw(prec, buf, first + o, m, seed);
		int rc = plb__bs_cpu(prec, buf, (char *)out + o * ou, m);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- CSV ----------------------------------------------------------------- */

#define NCOL 5
static const char *const col_name[NCOL] = {"S", "K", "T", "r", "v"};

/* The next field of a line at *p (comma-separated, spaces around it
 * trimmed), NUL-terminated in place; NULL past the last one. */
static char *next_field(char **p)
{
	char *s = *p;
	if (!s)
		return NULL;
	char *c = strchr(s, ',');
	*p = c ? c + 1 : NULL;
	if (c)
		*c = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

static int blank_or_comment(const char *s)
{
	s += strspn(s, " \t\r\n");
	return !*s || *s == '#';
}

/* The header: which field holds each column (-1: none yet). */
static int read_header(char *line, int *at, int *nfield, char *what, size_t len)
{
	for (int k = 0; k < NCOL; k++)
		at[k] = -1;
	char *p = line, *f;
	int i = 0;
	while ((f = next_field(&p))) {
		for (int k = 0; k < NCOL; k++)
			if (!strcmp(f, col_name[k])) {
				if (at[k] >= 0) {
					snprintf(what, len, "column %s named twice", f);
					return -1;
				}
				at[k] = i;
			}
		i++;
	}
	for (int k = 0; k < NCOL; k++)
		if (at[k] < 0) {
			snprintf(what, len, "the header has no column %s; accepted: a first line naming the columns S,K,T,r,v (any order; others ignored)",
				 col_name[k]);
			return -1;
		}
	*nfield = i;
	return 0;
}

/* One option's line into v[]; a message in what on error. */
static int read_option(char *line, const int *at, int nfield, double *v, char *what, size_t len)
{
	char *p = line, *f;
	int i = 0;
	while ((f = next_field(&p))) {
		for (int k = 0; k < NCOL; k++) {
			if (at[k] != i)
				continue;
			char *end;
			errno = 0;
			double x = strtod(f, &end);
			/* S, K, T, v > 0; r any finite rate */
			int ok = end != f && !*end && !errno && isfinite(x) && (k == 3 || x > 0);
			if (!ok) {
				snprintf(what, len, "%s = '%.40s'; accepted: a finite number%s", col_name[k], f,
					 k == 3 ? "" : " > 0");
				return -1;
			}
			v[k] = x;
		}
		i++;
	}
	if (i != nfield) {
		snprintf(what, len, "%d fields where the header has %d", i, nfield);
		return -1;
	}
	return 0;
}

int plb__bs_read_csv(const char *path, enum plb__bs_prec prec, void **in_out, size_t *n_out,
		     char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return PLB_EIO;
	}
	size_t unit = plb__bs_in_unit(prec), n = 0, cap = 0, lineno = 0, linecap = 0;
	char *line = NULL, what[200];
	char *in = NULL;
	int at[NCOL], nfield = 0, header = 0, rc = 0;
	ssize_t got;
	while ((got = getline(&line, &linecap, f)) >= 0) {
		lineno++;
		if ((size_t)got != strlen(line)) {
			snprintf(err, errlen, "%s:%zu: a NUL byte; accepted: a text file", path, lineno);
			rc = PLB_EINVAL;
			break;
		}
		if (blank_or_comment(line))
			continue;
		if (!header) {
			if (read_header(line, at, &nfield, what, sizeof what)) {
				snprintf(err, errlen, "%s:%zu: %s", path, lineno, what);
				rc = PLB_EINVAL;
				break;
			}
			header = 1;
			continue;
		}
		double v[NCOL];
		if (read_option(line, at, nfield, v, what, sizeof what)) {
			snprintf(err, errlen, "%s:%zu: %s", path, lineno, what);
			rc = PLB_EINVAL;
			break;
		}
		if (n == cap) {
			size_t c = cap ? 2 * cap : 1024;
			char *g = realloc(in, c * unit);
			if (!g) {
				snprintf(err, errlen, "%s:%zu: out of memory", path, lineno);
				rc = PLB_ENOMEM;
				break;
			}
			in = g;
			cap = c;
		}
		if (prec == PLB__BS_F64)
			((struct plb__bs_opt *)in)[n] = (struct plb__bs_opt){v[0], v[1], v[2], v[3], v[4]};
		else
			((struct plb__bs_optf *)in)[n] = (struct plb__bs_optf){
				(float)v[0], (float)v[1], (float)v[2], (float)v[3], (float)v[4]};
		n++;
	}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		rc = PLB_EIO;
	}
	if (!rc && !n) {
		snprintf(err, errlen, "%s:%zu: no options%s; accepted: a header line S,K,T,r,v and one option a line",
			 path, lineno, header ? "" : " and no header");
		rc = PLB_EINVAL;
	}
	free(line);
	fclose(f);
	if (rc) {
		free(in);
		return rc;
	}
	*in_out = in;
	*n_out = n;
	return 0;
}
