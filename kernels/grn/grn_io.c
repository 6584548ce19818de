/* Gene-regulatory-network inputs: discretisation, the synthetic network
 * with a known answer, and the expression-matrix reader (see grn.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/grn/grn.h"

#define MAX_NAME 255            /* bytes of a gene name */

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

int plb__grn_discretise(const float *expr, int n, int s, int levels, uint8_t *lev)
{
	float *v = malloc((size_t)s * sizeof *v), cut[PLB__GRN_MAX_LEVELS];
	if (!v)
		return PLB_ENOMEM;
	for (size_t g = 0; g < (size_t)n; g++) {
		const float *e = expr + g * (size_t)s;
		memcpy(v, e, (size_t)s * sizeof *v);
		qsort(v, (size_t)s, sizeof *v, cmp_float);
		for (int j = 1; j < levels; j++)
			cut[j] = v[(size_t)j * (size_t)s / (size_t)levels];
		for (size_t i = 0; i < (size_t)s; i++) {
			int l = 0;
			for (int j = 1; j < levels; j++)
				l += e[i] >= cut[j];
			lev[g * (size_t)s + i] = (uint8_t)l;
		}
	}
	free(v);
	return 0;
}

/* Uniform in [0, 1) from a 64-bit LCG: the same on every machine. */
static double urand(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*x >> 11) * 0x1.0p-53;
}

static int below(uint64_t *x, int n)
{
	int r = (int)(urand(x) * n);
	return r < n ? r : n - 1;
}

/* A random table from the c^k instances of k regulators to c levels with
 * every level equally often, redrawn until every regulator matters (some
 * two instances that differ in it alone map to different levels). */
static void draw_table(uint64_t *x, int c, int k, uint8_t *tab)
{
	int N = 1;
	for (int j = 0; j < k; j++)
		N *= c;
	for (;;) {
		for (int i = 0; i < N; i++)
			tab[i] = (uint8_t)(i % c);
		for (int i = N - 1; i > 0; i--) {
			int j = below(x, i + 1);
			uint8_t t = tab[i];
			tab[i] = tab[j];
			tab[j] = t;
		}
		int all = 1;
		for (int j = 0, step = 1; j < k && all; j++, step *= c) {
			int matters = 0;
			for (int i = 0; i < N && !matters; i++) {
				int digit = i / step % c;
				matters = digit + 1 < c && tab[i] != tab[i + step];
			}
			all = matters;
		}
		if (all)
			return;
	}
}

int plb__grn_generate(int n, int s, int levels, int k, double noise, uint64_t seed, float *expr,
		      int32_t *truth)
{
	if (plb__grn_shape_ok(n, s, levels, k) || !(noise >= 0 && noise <= 1))
		return PLB_EINVAL;
	int roots = n / 5 > k ? n / 5 : k;
	if (roots >= n)
		return PLB_EINVAL;
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 3;
	int *perm = malloc((size_t)n * sizeof *perm);
	uint8_t *lev = malloc((size_t)n * (size_t)s), tab[PLB__GRN_MAX_CELLS];
	if (!perm || !lev) {
		free(perm);
		free(lev);
		return PLB_ENOMEM;
	}
	/* gene j of the drawing is gene perm[j] of the output */
	for (int j = 0; j < n; j++)
		perm[j] = j;
	for (int j = n - 1; j > 0; j--) {
		int i = below(&x, j + 1), t = perm[j];
		perm[j] = perm[i];
		perm[i] = t;
	}
	for (int j = 0; j < roots; j++) {
		for (int i = 0; i < s; i++)
			lev[(size_t)j * s + i] = (uint8_t)below(&x, levels);
		for (int r = 0; r < k; r++)
			truth[(size_t)perm[j] * k + r] = -1;
	}
	for (int j = roots; j < n; j++) {
		int reg[PLB__GRN_MAX_K];
		for (int r = 0; r < k; r++) {
			int again;
			do {
				reg[r] = below(&x, roots);
				again = 0;
				for (int q = 0; q < r; q++)
					again |= reg[q] == reg[r];
			} while (again);
		}
		draw_table(&x, levels, k, tab);
		for (int i = 0; i < s; i++) {
			int inst = 0;
			for (int r = 0, step = 1; r < k; r++, step *= levels)
				inst += lev[(size_t)reg[r] * s + i] * step;
			lev[(size_t)j * s + i] = urand(&x) < noise ? (uint8_t)below(&x, levels) : tab[inst];
		}
		/* the regulators' output indices, ascending */
		int32_t *t = truth + (size_t)perm[j] * k;
		for (int r = 0; r < k; r++)
			t[r] = perm[reg[r]];
		for (int a = 1; a < k; a++)
			for (int b = a; b > 0 && t[b - 1] > t[b]; b--) {
				int32_t u = t[b];
				t[b] = t[b - 1];
				t[b - 1] = u;
			}
	}
	for (int j = 0; j < n; j++)
		for (int i = 0; i < s; i++)
			expr[(size_t)perm[j] * s + i] =
				(float)(lev[(size_t)j * s + i] + 0.25 + 0.5 * urand(&x));
	free(perm);
	free(lev);
	return 0;
}

/* ---- the reader ------------------------------------------------------------ */

void plb__grn_names_free(char **names, int n)
{
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

/* The fields of line (cut in place at sep, the line end dropped) into f;
 * how many (at most max + 1, f having room for that many: max + 1 means
 * too many). */
static int split(char *line, char sep, char **f, int max)
{
	line[strcspn(line, "\r\n")] = '\0';
	int m = 0;
	for (char *s = line; s && m <= max;) {
		char *c = strchr(s, sep);
		if (c)
			*c = '\0';
		f[m++] = s;
		s = c ? c + 1 : NULL;
	}
	return m;
}

static int number(const char *s, float *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	while (*end == ' ' || *end == '\t')
		end++;
	if (end == s || *end || errno || !isfinite(x) || fabs(x) > 3.4e38)
		return -1;
	*v = (float)x;
	return 0;
}

/* Whether a field after the first is a number: the first line where none
 * is, is a header of column names. */
static int any_number(char **f, int m)
{
	float v;
	for (int i = 1; i < m; i++)
		if (!number(f[i], &v))
			return 1;
	return 0;
}

struct reader {
	const char *path;
	char *err;
	size_t errlen;
	float *expr;
	char **names;
	int n, cap, s;
};

static int fail(struct reader *r, size_t line, int rc, const char *what)
{
	snprintf(r->err, r->errlen, "%s:%zu: %s", r->path, line, what);
	return rc;
}

/* One gene's line: its name in f[0], its values after. */
static int add_gene(struct reader *r, size_t line, char **f, int m)
{
	char what[200];
	if (r->s && m - 1 != r->s) {
		snprintf(what, sizeof what, "%d values where the first gene has %d; accepted: the same number of samples on every line",
			 m - 1, r->s);
		return fail(r, line, PLB_EINVAL, what);
	}
	size_t len = strlen(f[0]);
	if (!len || len > MAX_NAME)
		return fail(r, line, PLB_EINVAL, len ? "a gene name longer than 255 bytes" : "no gene name in field 1; accepted: the gene's name, then its values");
	if (r->n == r->cap) {
		int c = r->cap ? 2 * r->cap : 1024;
		float *e = realloc(r->expr, (size_t)c * (size_t)(m - 1) * sizeof *e);
		if (e)
			r->expr = e;
		char **nm = e ? realloc(r->names, (size_t)c * sizeof *nm) : NULL;
		if (nm)
			r->names = nm;
		if (!e || !nm)
			return fail(r, line, PLB_ENOMEM, "out of memory");
		r->cap = c;
	}
	float *v = r->expr + (size_t)r->n * (size_t)(m - 1);
	for (int i = 1; i < m; i++)
		if (number(f[i], &v[i - 1])) {
			snprintf(what, sizeof what, "field %d = '%.40s'; accepted: a finite number (no missing values)", i + 1, f[i]);
			return fail(r, line, PLB_EINVAL, what);
		}
	if (!(r->names[r->n] = strdup(f[0])))
		return fail(r, line, PLB_ENOMEM, "out of memory");
	r->n++;
	r->s = m - 1;
	return 0;
}

int plb__grn_read(const char *path, float **expr, char ***names, int *n, int *s, char *err,
		  size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return PLB_EIO;
	}
	struct reader r = {.path = path, .err = err, .errlen = errlen};
	char *line = NULL, **field = NULL, sep = 0;
	size_t cap = 0, lineno = 0;
	int rc = 0, header = 0;
	ssize_t got;
	const int max = PLB__GRN_MAX_SAMPLES + 1;   /* fields a line */
	while (!rc && (got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		char *t = line + strspn(line, " \r\n");
		if (!*t || *t == '#')
			continue;
		if ((size_t)got != strlen(line)) {
			rc = fail(&r, lineno, PLB_EINVAL, "a NUL byte; accepted: a text file");
			break;
		}
		if (!sep)
			sep = strchr(line, '\t') ? '\t' : ',';
		/* a line of got bytes has at most got + 1 fields */
		size_t need = (size_t)got + 2 < (size_t)max + 1 ? (size_t)got + 2 : (size_t)max + 1;
		char **nf = realloc(field, need * sizeof *nf);
		if (!nf) {
			rc = fail(&r, lineno, PLB_ENOMEM, "out of memory");
			break;
		}
		field = nf;
		int m = split(line, sep, field, (int)need - 1);
		if (!r.n && !header && !any_number(field, m)) {
			header = 1;     /* column names */
			continue;
		}
		if (m < 2)
			rc = fail(&r, lineno, PLB_EINVAL, sep == '\t' ? "one field; accepted: a gene name, then its values, separated by tabs"
				  : "one field; accepted: a gene name, then its values, separated by commas (or tabs)");
		else if (m > max)
			rc = fail(&r, lineno, PLB_EINVAL, "more than 2^24 samples");
		else
			rc = add_gene(&r, lineno, field, m);
	}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		rc = PLB_EIO;
	}
	if (!rc && !r.n)
		rc = fail(&r, lineno, PLB_EINVAL, "no genes; accepted: one gene a line, its name then its values (TSV or CSV)");
	free(line);
	free(field);
	fclose(f);
	if (rc) {
		free(r.expr);
		plb__grn_names_free(r.names, r.n);
		return rc;
	}
	*expr = r.expr;
	*names = r.names;
	*n = r.n;
	*s = r.s;
	return 0;
}
