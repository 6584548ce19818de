/* The balancer's parameter table (params.h): defaults, parsing, ranges. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/params.h"

struct row {
	const char *name;
	size_t off;
	double def, lo, hi;
	const char *doc;
};

static const struct row rows[] = {
#define X(n, d, l, h, doc) {#n, offsetof(struct plb__params, n), d, l, h, doc},
	PLB__PARAMS(X)
#undef X
};
#define NROWS (sizeof rows / sizeof rows[0])

void plb__params_init(struct plb__params *p)
{
	for (size_t i = 0; i < NROWS; i++)
		*(double *)((char *)p + rows[i].off) = rows[i].def;
}

int plb__params_set(struct plb__params *p, const char *key, const char *value,
		    char *err, size_t errlen)
{
	for (size_t i = 0; i < NROWS; i++) {
		if (strcmp(rows[i].name, key) != 0)
			continue;
		char *end;
		errno = 0;
		double v = strtod(value, &end);
		while (*end == ' ' || *end == '\t')
			end++;
		if (end == value || *end != '\0' || errno || !isfinite(v)) {
			snprintf(err, errlen, "%s: '%s' is not a number (%s)",
				 key, value, rows[i].doc);
			return PLB_EINVAL;
		}
		if (v < rows[i].lo || v > rows[i].hi) {
			snprintf(err, errlen, "%s = %g is out of range [%g, %g]",
				 key, v, rows[i].lo, rows[i].hi);
			return PLB_EINVAL;
		}
		*(double *)((char *)p + rows[i].off) = v;
		return 0;
	}
	snprintf(err, errlen, "unknown balancer parameter '%s' (see plbsim --params)", key);
	return PLB_ENOENT;
}

int plb__params_assign(struct plb__params *p, const char *assignment,
		       char *err, size_t errlen)
{
	char key[128];
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof key) {
		snprintf(err, errlen, "expected KEY=VALUE, got '%s'", assignment);
		return PLB_EINVAL;
	}
	snprintf(key, sizeof key, "%.*s", (int)(eq - assignment), assignment);
	return plb__params_set(p, key, eq + 1, err, errlen);
}

int plb__params_check(const struct plb__params *p, int npu, char *err, size_t errlen)
{
	if (p->solver == 2 && npu > PLB__SLSQP_MAX_PU) {
		snprintf(err, errlen, "solver = 2 (SLSQP only) takes at most %d PUs, and the cluster has %d: SLSQP is dense, O(n^3) in the PUs (17 ms a solve at 64 PUs, 2.2 s at 256), and a run solves at every step; accepted: solver = 0 (the default: the one-variable reduction, SLSQP only where it refuses a curve) or 1",
			 PLB__SLSQP_MAX_PU, npu);
		return PLB_EINVAL;
	}
	return 0;
}

int plb__params_describe(int i, const char **name, double *def, double *lo,
			 double *hi, const char **doc)
{
	if (i < 0 || (size_t)i >= NROWS)
		return PLB_ENOENT;
	*name = rows[i].name;
	*def = rows[i].def;
	*lo = rows[i].lo;
	*hi = rows[i].hi;
	*doc = rows[i].doc;
	return 0;
}
