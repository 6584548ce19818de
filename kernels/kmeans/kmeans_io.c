/* k-means inputs: the seeded generator, the initial centroids and the
 * file reader (see kmeans.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kmeans/kmeans.h"

#define MAX_D 4096              /* dimensions a point, at most */

/* Uniform in [0, 1) from a 64-bit LCG: the same on every machine. */
static double urand(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*x >> 11) * 0x1.0p-53;
}

void plb__km_generate(float *points, size_t n, int d, int k, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	float *centre = malloc((size_t)k * (size_t)d * sizeof *centre);
	if (!centre)
		return;
	for (size_t i = 0; i < (size_t)k * (size_t)d; i++)
		centre[i] = (float)(20 * urand(&x) - 10);
	for (size_t i = 0; i < n; i++) {
		size_t j = (size_t)(urand(&x) * k);
		for (int t = 0; t < d; t++) {
			/* Box-Muller: a normal deviate */
			double u = urand(&x), v = urand(&x);
			double g = sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
			points[i * (size_t)d + t] = centre[j * (size_t)d + t] + (float)g;
		}
	}
	free(centre);
}

static double dist2(const float *a, const float *b, int d)
{
	double s = 0;
	for (int t = 0; t < d; t++) {
		double e = (double)a[t] - b[t];
		s += e * e;
	}
	return s;
}

int plb__km_init(const float *points, size_t n, int d, int k, int plusplus, uint64_t seed,
		 float *centroids)
{
	if (k < 1 || d < 1 || (size_t)k > n || !points || !centroids)
		return PLB_EINVAL;
	uint64_t x = seed * 0xD1B54A32D192ED03ULL + 7;
	size_t *pick = malloc((size_t)k * sizeof *pick);
	double *near = plusplus ? malloc(n * sizeof *near) : NULL;
	if (!pick || (plusplus && !near)) {
		free(pick);
		free(near);
		return PLB_ENOMEM;
	}
	for (int j = 0; j < k; j++) {
		size_t c = (size_t)(urand(&x) * (double)n);
		if (plusplus && j > 0) {
			/* a point with probability proportional to near[] */
			double total = 0;
			for (size_t i = 0; i < n; i++)
				total += near[i];
			double r = urand(&x) * total;
			for (c = 0; c + 1 < n && (r -= near[c]) >= 0; c++)
				;
		}
		/* distinct points (random: draw again; k-means++ picks a
		 * chosen one only when every point is: then any other) */
		for (int again = 1; again;) {
			again = 0;
			for (int q = 0; q < j; q++)
				if (pick[q] == c)
					again = 1;
			if (again)
				c = (c + 1) % n;
		}
		pick[j] = c;
		memcpy(centroids + (size_t)j * d, points + c * (size_t)d, (size_t)d * sizeof *centroids);
		for (size_t i = 0; plusplus && i < n; i++) {
			double e = dist2(points + i * (size_t)d, centroids + (size_t)j * d, d);
			near[i] = j == 0 || e < near[i] ? e : near[i];
		}
	}
	free(pick);
	free(near);
	return 0;
}

/* ---- files ---------------------------------------------------------------- */

static const char MAGIC[8] = {'P', 'L', 'B', 'K', 'M', 'F', '3', '2'};

static int64_t le64(const unsigned char *b)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return (int64_t)v;
}

static int read_raw(FILE *f, const char *path, float **out, size_t *n_out, int *d_out, char *err,
		    size_t errlen)
{
	unsigned char h[16];      /* after the magic, which the caller read */
	if (fread(h, 1, sizeof h, f) != sizeof h) {
		snprintf(err, errlen, "%s: byte 8: the header ends early; accepted: the magic PLBKMF32, then n and d as little-endian int64",
			 path);
		return PLB_EINVAL;
	}
	int64_t n = le64(h), d = le64(h + 8);
	if (n < 1 || d < 1 || d > MAX_D || n > (int64_t)(SIZE_MAX / sizeof(float) / (size_t)d)) {
		snprintf(err, errlen, "%s: byte 8: n = %lld, d = %lld; accepted: n >= 1, d in [1, %d]", path,
			 (long long)n, (long long)d, MAX_D);
		return PLB_EINVAL;
	}
	size_t count = (size_t)n * (size_t)d;
	float *p = malloc(count * sizeof *p);
	if (!p) {
		snprintf(err, errlen, "%s: out of memory for %lld points", path, (long long)n);
		return PLB_ENOMEM;
	}
	size_t got = fread(p, sizeof *p, count, f);
	if (got != count || fgetc(f) != EOF) {
		snprintf(err, errlen, "%s: byte %zu: %s; accepted: exactly n * d = %zu float32 after the 24-byte header",
			 path, 24 + got * sizeof *p, got != count ? "the data end early" : "bytes after the data", count);
		free(p);
		return PLB_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		uint32_t u;
		unsigned char *b = (unsigned char *)&p[i];
		u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
		memcpy(&p[i], &u, sizeof u);
		if (!isfinite(p[i])) {
			snprintf(err, errlen, "%s: byte %zu: point %zu, coordinate %zu is not a finite number", path,
				 24 + i * sizeof *p, i / (size_t)d, i % (size_t)d);
			free(p);
			return PLB_EINVAL;
		}
	}
	*out = p;
	*n_out = (size_t)n;
	*d_out = (int)d;
	return 0;
}

/* The numbers of one CSV line into v (at most MAX_D); how many, or -1
 * with the bad field in what. */
static int parse_line(char *line, float *v, char *what, size_t len)
{
	int i = 0;
	for (char *s = line, *next; s; s = next) {
		char *c = strchr(s, ',');
		next = c ? c + 1 : NULL;
		if (c)
			*c = '\0';
		char *end;
		errno = 0;
		double x = strtod(s, &end);
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		if (end == s || *end || errno || !isfinite(x) || fabs(x) > 3.4e38) {
			s += strspn(s, " \t");
			s[strcspn(s, "\r\n")] = '\0';
			snprintf(what, len, "field %d = '%.40s'; accepted: a finite number", i + 1, s);
			return -1;
		}
		if (i == MAX_D) {
			snprintf(what, len, "more than %d fields", MAX_D);
			return -1;
		}
		v[i++] = (float)x;
	}
	return i;
}

static int read_csv(FILE *f, const char *path, float **out, size_t *n_out, int *d_out, char *err,
		    size_t errlen)
{
	char *line = NULL, what[160];
	size_t cap = 0, lineno = 0, n = 0, pcap = 0;
	float *p = NULL, v[MAX_D];
	int d = 0, rc = 0, header = 0;
	ssize_t got;
	while ((got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		char *s = line + strspn(line, " \t\r\n");
		if (!*s || *s == '#')
			continue;
		if ((size_t)got != strlen(line)) {
			snprintf(err, errlen, "%s:%zu: a NUL byte; accepted: a text file", path, lineno);
			rc = PLB_EINVAL;
			break;
		}
		char copy[64];
		snprintf(copy, sizeof copy, "%s", s);
		int m = parse_line(s, v, what, sizeof what);
		if (m < 0 && !n && !header && !strchr("+-.0123456789", copy[0])) {
			header = 1;     /* the header: names */
			continue;
		}
		if (m < 0 || (d && m != d)) {
			if (m >= 0)
				snprintf(what, sizeof what, "%d numbers where the first point has %d", m, d);
			snprintf(err, errlen, "%s:%zu: %s", path, lineno, what);
			rc = PLB_EINVAL;
			break;
		}
		d = m;
		if (n == pcap) {
			size_t c = pcap ? 2 * pcap : 4096;
			float *g = realloc(p, c * (size_t)d * sizeof *g);
			if (!g) {
				snprintf(err, errlen, "%s:%zu: out of memory", path, lineno);
				rc = PLB_ENOMEM;
				break;
			}
			p = g;
			pcap = c;
		}
		memcpy(p + n * (size_t)d, v, (size_t)d * sizeof *v);
		n++;
	}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		rc = PLB_EIO;
	}
	if (!rc && !n) {
		snprintf(err, errlen, "%s:%zu: no points; accepted: d numbers a line (CSV), or the raw format (see --help)",
			 path, lineno);
		rc = PLB_EINVAL;
	}
	free(line);
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	*n_out = n;
	*d_out = d;
	return 0;
}

int plb__km_read(const char *path, float **points, size_t *n, int *d, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return PLB_EIO;
	}
	char head[8];
	size_t got = fread(head, 1, sizeof head, f);
	int raw = got == sizeof head && !memcmp(head, MAGIC, sizeof MAGIC);
	int rc;
	if (raw) {
		rc = read_raw(f, path, points, n, d, err, errlen);
	} else {
		rewind(f);
		rc = read_csv(f, path, points, n, d, err, errlen);
	}
	fclose(f);
	return rc;
}
