/* The trace-event writer (trace.h): one JSON object {"traceEvents": [...]},
 * streamed; times in microseconds from the origin. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/balancer.h"
#include "runtime/config/trace.h"

#define CURVE_POINTS 24         /* points of a fitted curve in "model" */
#define SAMPLES_MAX 256         /* samples of a model written (its window, usually less) */

struct tpu {
	int node;               /* its process, -1: not named yet */
	char *name;
	int xfer_named;         /* its transfer thread has its name */
	double last_end;        /* its last compute slice's end (us) */
	double last_xend;       /* its last transfer slice's end (us) */
};

struct plb__trace {
	FILE *f;
	char *path;
	double origin;
	long events;
	struct tpu *pu;
	int npu;
	long solves;            /* the balancer's counts at the last plb__trace_after */
	int changes;
	uint64_t done;
};

/* Microseconds from the origin, on the nanosecond grid that "%.3f" writes:
 * a slice's ts + dur then reads back as the next slice's ts, not a
 * rounding past it. */
static double us(const struct plb__trace *t, double s)
{
	return round((s - t->origin) * 1e9) / 1e3;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

/* A JSON number; null where it is not finite (JSON has no NaN). */
static void put_num(FILE *f, double x)
{
	if (isfinite(x))
		fprintf(f, "%.9g", x);
	else
		fputs("null", f);
}

/* Starts an event: {"ph":PH,"pid":PID,"tid":TID,"name":NAME ... (no closing
 * brace: the caller adds its fields, then "}"). */
static void ev(struct plb__trace *t, const char *ph, int pid, int tid, const char *name)
{
	fputs(t->events++ ? ",\n" : "\n", t->f);
	fprintf(t->f, "{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"name\":", ph, pid, tid);
	put_str(t->f, name);
}

/* Names a process (tid < 0) or a thread, and gives its place in the view. */
static void meta(struct plb__trace *t, int pid, int tid, const char *what, const char *name, int sort)
{
	ev(t, "M", pid, tid < 0 ? 0 : tid, what);
	fputs(",\"args\":{\"name\":", t->f);
	put_str(t->f, name);
	fputs("}}", t->f);
	ev(t, "M", pid, tid < 0 ? 0 : tid, tid < 0 ? "process_sort_index" : "thread_sort_index");
	fprintf(t->f, ",\"args\":{\"sort_index\":%d}}", sort);
}

int plb__trace_open(struct plb__trace **out, const char *path, double origin, char *err,
		    size_t errlen)
{
	struct plb__trace *t = calloc(1, sizeof *t);
	*out = NULL;
	if (!t || !(t->path = strdup(path))) {
		free(t);
		snprintf(err, errlen, "--trace %s: out of memory", path);
		return PLB_ENOMEM;
	}
	if (!(t->f = fopen(path, "w"))) {
		snprintf(err, errlen, "--trace %s: cannot write it: %s", path, strerror(errno));
		free(t->path);
		free(t);
		return PLB_EIO;
	}
	t->origin = origin;
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"plb\"},\"traceEvents\":[", t->f);
	/* the master: process 0, its thread 0 */
	meta(t, 0, -1, "process_name", "master", 0);
	meta(t, 0, 0, "thread_name", "balancer", 0);
	*out = t;
	return 0;
}

void plb__trace_node(struct plb__trace *t, int node, const char *name)
{
	if (!t)
		return;
	meta(t, 1 + node, -1, "process_name", name, 1 + node);
}

int plb__trace_pu(struct plb__trace *t, int pu, int node, const char *name)
{
	if (!t)
		return 0;
	if (pu >= t->npu) {
		struct tpu *n = realloc(t->pu, (size_t)(pu + 1) * sizeof *n);
		if (!n)
			return PLB_ENOMEM;
		for (int i = t->npu; i <= pu; i++)
			n[i] = (struct tpu){.node = -1};
		t->pu = n;
		t->npu = pu + 1;
	}
	free(t->pu[pu].name);
	if (!(t->pu[pu].name = strdup(name)))
		return PLB_ENOMEM;
	t->pu[pu].node = node;
	meta(t, 1 + node, 1 + 2 * pu, "thread_name", name, 2 * pu);
	return 0;
}

static struct tpu *pu_of(struct plb__trace *t, int pu)
{
	return t && pu >= 0 && pu < t->npu && t->pu[pu].node >= 0 ? &t->pu[pu] : NULL;
}

void plb__trace_run(struct plb__trace *t, double start, double end, const char *name,
		    const char *policy, uint64_t units)
{
	if (!t)
		return;
	ev(t, "X", 0, 0, name);
	fprintf(t->f, ",\"cat\":\"run\",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"policy\":", us(t, start),
		fmax(0, end - start) * 1e6);
	put_str(t->f, policy);
	fprintf(t->f, ",\"units\":%llu}}", (unsigned long long)units);
}

void plb__trace_block(struct plb__trace *t, const struct plb__trace_block *b)
{
	struct tpu *p = pu_of(t, b->pu);
	if (!p)
		return;
	/* A thread's slices must not overlap to show as a row: a start a
	 * clock's error before the last end is moved to it. */
	double s = fmax(us(t, b->start), p->last_end), e = fmax(us(t, b->end), s);
	p->last_end = e;
	ev(t, "X", 1 + p->node, 1 + 2 * b->pu, b->kind);
	fprintf(t->f, ",\"cat\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"id\":%llu,\"offset\":%llu,\"units\":%llu,\"exec_s\":",
		b->dropped ? "block,dropped" : "block", s, e - s, (unsigned long long)b->id,
		(unsigned long long)b->offset, (unsigned long long)b->units);
	put_num(t->f, b->end - b->start);
	fputs(",\"xfer_s\":", t->f);
	put_num(t->f, b->xfer_end - b->xfer_start);
	fputs(",\"predicted_s\":", t->f);
	put_num(t->f, b->predicted_s > 0 ? b->predicted_s : NAN);
	fputs("}}", t->f);
	/* The transfer row takes the same care; a transfer that lies wholly
	 * before the last one's end (two arrivals read in one pass, placed by
	 * a clock estimate that moved between them) has nothing left to draw
	 * and is left out: the block's xfer_s still says how long it took. */
	if (!(b->xfer_end > b->xfer_start))
		return;
	double xs = fmax(us(t, b->xfer_start), p->last_xend), xe = us(t, b->xfer_end);
	if (!(xe > xs))
		return;
	p->last_xend = xe;
	int tid = 2 + 2 * b->pu;
	if (!p->xfer_named) {
		char name[200];
		p->xfer_named = 1;
		snprintf(name, sizeof name, "%s transfer", p->name);
		meta(t, 1 + p->node, tid, "thread_name", name, 2 * b->pu + 1);
	}
	ev(t, "X", 1 + p->node, tid, "transfer");
	fprintf(t->f, ",\"cat\":\"transfer\",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"id\":%llu,\"units\":%llu}}",
		xs, xe - xs, (unsigned long long)b->id, (unsigned long long)b->units);
}

void plb__trace_instant(struct plb__trace *t, int pu, double at, const char *name,
			const char *note)
{
	struct tpu *p = pu_of(t, pu);
	if (!t || (pu >= 0 && !p))
		return;
	ev(t, "i", p ? 1 + p->node : 0, p ? 1 + 2 * pu : 0, name);
	fprintf(t->f, ",\"s\":\"t\",\"ts\":%.3f", us(t, at));
	if (note) {
		fputs(",\"args\":{\"note\":", t->f);
		put_str(t->f, note);
		fputc('}', t->f);
	}
	fputc('}', t->f);
}

void plb__trace_begin(struct plb__trace *t)
{
	if (!t)
		return;
	t->solves = 0;
	t->changes = 0;
	t->done = 0;
}

void plb__trace_after(struct plb__trace *t, const struct plb__balancer *b, int pu, double at)
{
	if (!t)
		return;
	struct plb__balancer_stats st;
	plb__balancer_stats(b, &st);
	if (st.solves > t->solves) {
		char note[64];
		snprintf(note, sizeof note, "%ld solve%s", st.solves - t->solves,
			 st.solves - t->solves == 1 ? "" : "s");
		plb__trace_instant(t, -1, at, "solve", note);
	}
	if (st.speed_changes > t->changes)
		plb__trace_instant(t, pu, at, "speed change", "the PU's model saw a block far off its prediction");
	if (st.units_done != t->done) {
		ev(t, "C", 0, 0, "units done");
		fprintf(t->f, ",\"ts\":%.3f,\"args\":{\"units\":%llu}}", us(t, at),
			(unsigned long long)st.units_done);
	}
	t->solves = st.solves;
	t->changes = st.speed_changes;
	t->done = st.units_done;
}

void plb__trace_models(struct plb__trace *t, const struct plb__balancer *b, int npu, double at)
{
	struct plb__sample *s = t ? malloc(SAMPLES_MAX * sizeof *s) : NULL;
	if (!s)
		return;         /* no memory: the trace goes without curves */
	for (int pu = 0; pu < npu; pu++) {
		struct tpu *p = pu_of(t, pu);
		double cliff;
		int n = plb__balancer_model_get(b, pu, s, SAMPLES_MAX, &cliff);
		if (!p || n <= 0)
			continue;
		n = n < SAMPLES_MAX ? n : SAMPLES_MAX;
		double lo = INFINITY, hi = 0;
		for (int i = 0; i < n; i++) {
			lo = fmin(lo, s[i].units);
			hi = fmax(hi, s[i].units);
		}
		ev(t, "i", 1 + p->node, 1 + 2 * pu, "model");
		fprintf(t->f, ",\"s\":\"t\",\"ts\":%.3f,\"args\":{\"cliff_units\":", us(t, at));
		put_num(t->f, cliff);
		const char *keys[] = {"sample_units", "sample_exec_s", "sample_xfer_s"};
		for (int k = 0; k < 3; k++) {
			fprintf(t->f, ",\"%s\":[", keys[k]);
			for (int i = 0; i < n; i++) {
				fputs(i ? "," : "", t->f);
				put_num(t->f, k == 0 ? s[i].units : k == 1 ? s[i].exec_s : s[i].xfer_s);
			}
			fputc(']', t->f);
		}
		/* the curve, log-spaced from half the smallest sample to twice
		 * the largest */
		lo = fmax(1, lo / 2);
		hi = fmax(lo, 2 * hi);
		double x[CURVE_POINTS];
		fputs(",\"curve_units\":[", t->f);
		for (int i = 0; i < CURVE_POINTS; i++) {
			x[i] = round(lo * pow(hi / lo, i / (CURVE_POINTS - 1.0)));
			fputs(i ? "," : "", t->f);
			put_num(t->f, x[i]);
		}
		fputs("],\"curve_s\":[", t->f);
		for (int i = 0; i < CURVE_POINTS; i++) {
			fputs(i ? "," : "", t->f);
			put_num(t->f, plb__balancer_predict(b, pu, x[i]));
		}
		fputs("]}}", t->f);
	}
	free(s);
}

int plb__trace_close(struct plb__trace *t, char *err, size_t errlen)
{
	if (!t)
		return 0;
	fputs("\n]}\n", t->f);
	int bad = ferror(t->f), e = errno;
	if (fclose(t->f) && !bad) {
		bad = 1;
		e = errno;
	}
	int rc = 0;
	if (bad) {
		snprintf(err, errlen, "--trace %s: writing it failed: %s", t->path, strerror(e));
		rc = PLB_EIO;
	}
	for (int i = 0; i < t->npu; i++)
		free(t->pu[i].name);
	free(t->path);
	free(t->pu);
	free(t);
	return rc;
}
