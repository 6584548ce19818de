/* The models file's reader (see modelsfile.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/modelsfile.h"

#define LINE_MAX_ 4096

struct rd {
	FILE *f;
	const char *path;
	char *err;
	size_t errlen;
	char *text;             /* the record's lines */
	size_t len, cap;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int bad(struct rd *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (r->err && r->errlen)
		vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return PLB_ECONFIG;
}

static int keep(struct rd *r, const char *line)
{
	size_t n = strlen(line);
	if (r->len + n + 1 > r->cap) {
		size_t cap = (r->len + n + 1) * 2;
		char *t = realloc(r->text, cap);
		if (!t)
			return PLB_ENOMEM;
		r->text = t;
		r->cap = cap;
	}
	memcpy(r->text + r->len, line, n + 1);
	r->len += n;
	return 0;
}

static int read_all(struct rd *r, int (*each)(void *, const struct plb__models_rec *), void *ctx,
		    struct plb__sample *s)
{
	char line[LINE_MAX_], sigbuf[LINE_MAX_];
	int lineno = 1, rc;
	if (!fgets(line, sizeof line, r->f) || strcmp(line, "plb-models 1\n"))
		return bad(r, "%s:1: not a plb models file; accepted: a first line 'plb-models 1' (a file plb_finalize wrote)",
			   r->path);
	while (fgets(line, sizeof line, r->f)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!strchr(line, '\n'))
			return bad(r, "%s:%d: line too long; accepted: at most %d characters", r->path, lineno,
				   LINE_MAX_ - 2);
		struct plb__models_rec m = {.line = lineno, .s = s};
		char cliff_s[32];
		int at = -1;
		m.n = -1;
		if (sscanf(line, "pu %255s %63s %95s kernel=%63s in=%zu out=%zu cliff=%31s samples=%d sig=%n",
			   m.host, m.pu, m.dev, m.kernel, &m.in_unit, &m.out_unit, cliff_s, &m.n, &at) != 8 ||
		    at < 0)
			return bad(r, "%s:%d: expected 'pu HOST PU DEVICE kernel=K in=BYTES out=BYTES cliff=X samples=N sig=S'",
				   r->path, lineno);
		char *end;
		m.cliff = strtod(cliff_s, &end);
		if (*end || !(m.cliff > 0))
			return bad(r, "%s:%d: cliff=%s; accepted: a number of units > 0, or inf", r->path, lineno,
				   cliff_s);
		if (m.n < 1 || m.n > PLB__MODELS_SAMPLES_MAX)
			return bad(r, "%s:%d: samples=%d; accepted: 1 to %d", r->path, lineno, m.n,
				   PLB__MODELS_SAMPLES_MAX);
		r->len = 0;
		if ((rc = keep(r, line)))
			return rc;
		snprintf(sigbuf, sizeof sigbuf, "%s", line + at);
		sigbuf[strcspn(sigbuf, "\n")] = '\0';
		m.sig = sigbuf;
		for (int j = 0; j < m.n; j++) {
			if (!fgets(line, sizeof line, r->f))
				return bad(r, "%s:%d: the file ends within a record (%d of its %d samples; the record starts on line %d)",
					   r->path, lineno, j, m.n, m.line);
			lineno++;
			char extra;
			if (sscanf(line, "%lf %lf %lf %c", &s[j].units, &s[j].exec_s, &s[j].xfer_s, &extra) != 3 ||
			    !(s[j].units > 0) || !isfinite(s[j].units) || !(s[j].exec_s >= 0) ||
			    !isfinite(s[j].exec_s) || !(s[j].xfer_s >= 0) || !isfinite(s[j].xfer_s))
				return bad(r, "%s:%d: expected 'UNITS EXEC_S XFER_S' (units > 0, seconds >= 0), sample %d of the record on line %d",
					   r->path, lineno, j + 1, m.line);
			if ((rc = keep(r, line)))
				return rc;
		}
		m.text = r->text;
		m.len = r->len;
		if ((rc = each(ctx, &m)))
			return rc;
	}
	if (ferror(r->f))
		return bad(r, "%s: cannot read it: %s", r->path, strerror(errno));
	return 0;
}

int plb__models_read(const char *path, int (*each)(void *ctx, const struct plb__models_rec *r),
		     void *ctx, char *err, size_t errlen)
{
	struct rd r = {.path = path, .err = err, .errlen = errlen};
	if (!(r.f = fopen(path, "r"))) {
		int e = errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot read it: %s", path, strerror(e));
		errno = e;
		return PLB_EIO;
	}
	struct plb__sample *s = malloc(PLB__MODELS_SAMPLES_MAX * sizeof *s);
	int rc = s ? read_all(&r, each, ctx, s) : PLB_ENOMEM;
	free(s);
	free(r.text);
	fclose(r.f);
	return rc;
}
