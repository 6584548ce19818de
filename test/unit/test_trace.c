/* The trace-event writer (runtime/config/trace.c) that plbsim and the
 * runtime share: what it writes parses as JSON whatever the names hold;
 * a thread's slices never overlap, even when the caller's clock says they
 * do; numbers that are not known are null; a model's curve is the
 * balancer's prediction; and a file that cannot be written, or a write that
 * fails, is an error that names the file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "balancer/balancer.h"
#include "runtime/config/trace.h"

/* A fresh file at the mkstemp pattern path. */
static void scratch(char *path)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* A fresh trace at the mkstemp pattern path with one node "a" and its PU
 * 0 "a.cpu", times from origin. */
static struct plb__trace *one_pu(char *path, double origin)
{
	char err[300];
	struct plb__trace *t;
	scratch(path);
	assert_int_equal(plb__trace_open(&t, path, origin, err, sizeof err), 0);
	plb__trace_node(t, 0, "a");
	assert_int_equal(plb__trace_pu(t, 0, 0, "a.cpu"), 0);
	return t;
}

/* The events of the file, parsed (the caller deletes the document). */
static cJSON *events(const char *path, cJSON **doc)
{
	*doc = cJSON_Parse(slurp(path));
	assert_non_null(*doc);
	cJSON *ev = cJSON_GetObjectItem(*doc, "traceEvents");
	assert_true(cJSON_IsArray(ev));
	return ev;
}

/* The n-th event (from 0) with this name and phase, NULL if none. */
static cJSON *find(cJSON *ev, const char *ph, const char *name, int n)
{
	cJSON *e;
	cJSON_ArrayForEach(e, ev) {
		if (!strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, ph) &&
		    !strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) && n-- == 0)
			return e;
	}
	return NULL;
}

static double num(cJSON *e, const char *key)
{
	cJSON *x = cJSON_GetObjectItem(e, key);
	assert_non_null(x);
	return x->valuedouble;
}

static void test_names_slices_and_nulls(void **state)
{
	(void)state;
	char path[] = "/tmp/plb-trace-XXXXXX", err[300];
	scratch(path);
	struct plb__trace *t;
	assert_int_equal(plb__trace_open(&t, path, 100.0, err, sizeof err), 0);
	plb__trace_node(t, 0, "node \"a\"\n(rank 1)");
	assert_int_equal(plb__trace_pu(t, 0, 0, "a.gpu\\0"), 0);
	/* the second block starts 1 ms before the first ends (a clock's error) */
	struct plb__trace_block b = {.pu = 0, .id = 1, .offset = 0, .units = 10, .kind = "training",
				     .xfer_start = 100.001, .xfer_end = 100.002, .start = 100.002,
				     .end = 100.010};
	plb__trace_block(t, &b);
	b = (struct plb__trace_block){.pu = 0, .id = 2, .offset = 10, .units = 5, .kind = "regular",
				      .predicted_s = 0.5, .start = 100.009, .end = 100.020, .dropped = 1};
	plb__trace_block(t, &b);
	b.pu = 7;       /* a PU never named: nothing written */
	plb__trace_block(t, &b);
	plb__trace_instant(t, 0, 100.02, "lost", "why: \"x\"");
	plb__trace_run(t, 100.0, 100.03, "run 1: k", "plb-hac", 15);
	assert_int_equal(plb__trace_close(t, err, sizeof err), 0);

	cJSON *doc, *ev = events(path, &doc);
	cJSON *pn = find(ev, "M", "process_name", 1);
	assert_non_null(pn);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(pn, "args"), "name")->valuestring,
			    "node \"a\"\n(rank 1)");
	cJSON *tn = find(ev, "M", "thread_name", 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(tn, "args"), "name")->valuestring,
			    "a.gpu\\0");
	assert_int_equal((int)num(tn, "pid"), 1);
	assert_int_equal((int)num(tn, "tid"), 1);
	/* times in microseconds from the origin */
	cJSON *s1 = find(ev, "X", "training", 0), *s2 = find(ev, "X", "regular", 0);
	assert_non_null(s1);
	assert_non_null(s2);
	assert_float_equal(num(s1, "ts"), 2000, 1e-3);
	assert_float_equal(num(s1, "dur"), 8000, 1e-3);
	/* moved to the first one's end, its end kept */
	assert_float_equal(num(s2, "ts"), 10000, 1e-3);
	assert_float_equal(num(s2, "ts") + num(s2, "dur"), 20000, 1e-3);
	assert_string_equal(cJSON_GetObjectItem(s2, "cat")->valuestring, "block,dropped");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(s1, "args"), "predicted_s")));
	assert_float_equal(num(cJSON_GetObjectItem(s2, "args"), "predicted_s"), 0.5, 1e-12);
	/* a transfer for the first block only, on the PU's second thread */
	cJSON *x = find(ev, "X", "transfer", 0);
	assert_non_null(x);
	assert_int_equal((int)num(x, "tid"), 2);
	assert_null(find(ev, "X", "transfer", 1));
	assert_float_equal(num(x, "dur"), 1000, 1e-3);
	cJSON *xn = find(ev, "M", "thread_name", 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(xn, "args"), "name")->valuestring,
			    "a.gpu\\0 transfer");
	assert_null(find(ev, "X", "regular", 1));       /* PU 7's */
	cJSON *lost = find(ev, "i", "lost", 0);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(lost, "args"), "note")->valuestring,
			    "why: \"x\"");
	assert_float_equal(num(find(ev, "X", "run 1: k", 0), "dur"), 30000, 1e-3);
	cJSON_Delete(doc);
	unlink(path);
}

/* Back-to-back slices, each starting where the last ended (or a clock's
 * error before it), at times off the nanosecond grid that "%.3f" writes:
 * read back, a slice's ts + dur is never past the next slice's ts (with
 * ts and dur rounded apart it was, by 1 ns, on about one pair in sixty). */
static void test_back_to_back_rounding(void **state)
{
	(void)state;
	char path[] = "/tmp/plb-trace-XXXXXX", err[300];
	struct plb__trace *t = one_pu(path, 0.123456789123);
	enum { N = 600 };
	uint64_t x = 88172645463325252ULL;
	double at = 1.0;
	for (int k = 0; k < N; k++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;        /* xorshift64 */
		double len = 1e-4 + (double)(x >> 11) * 0x1p-53 * 0.3;
		double back = k % 3 == 0 ? 0 : 1e-7 * (double)(x & 0xff);
		struct plb__trace_block b = {.pu = 0, .id = (uint64_t)k, .units = 1, .kind = "regular",
					     .xfer_start = at - back - len / 7, .xfer_end = at - back,
					     .start = at - back, .end = at - back + len};
		plb__trace_block(t, &b);
		at = b.end;
	}
	assert_int_equal(plb__trace_close(t, err, sizeof err), 0);

	cJSON *doc, *ev = events(path, &doc);
	const char *names[] = {"regular", "transfer"};
	for (int n = 0; n < 2; n++) {
		double last_end = -1;
		int seen = 0;
		for (cJSON *e; (e = find(ev, "X", names[n], seen)); seen++) {
			assert_true(num(e, "ts") >= last_end - 1e-6);
			last_end = num(e, "ts") + num(e, "dur");
		}
		assert_int_equal(seen, N);
	}
	cJSON_Delete(doc);
	unlink(path);
}

/* Transfers placed by a clock estimate that moved between two blocks: one
 * that starts before the last transfer's end starts at that end, its own
 * end kept; one that lies wholly before it has nothing left to draw and
 * is left out (it was a zero-length slice, seen as a CI failure of
 * trace.sh), while its block is written with its xfer_s. */
static void test_transfer_behind_the_last(void **state)
{
	(void)state;
	char path[] = "/tmp/plb-trace-XXXXXX", err[300];
	struct plb__trace *t = one_pu(path, 0);
	const double x[3][2] = {{1.000, 1.004}, {1.003, 1.006}, {1.002, 1.0055}};
	for (int k = 0; k < 3; k++) {
		struct plb__trace_block b = {.pu = 0, .id = (uint64_t)k + 1, .units = 1,
					     .kind = "regular", .xfer_start = x[k][0],
					     .xfer_end = x[k][1], .start = 1.01 + k * 0.01,
					     .end = 1.015 + k * 0.01};
		plb__trace_block(t, &b);
	}
	assert_int_equal(plb__trace_close(t, err, sizeof err), 0);

	cJSON *doc, *ev = events(path, &doc);
	cJSON *x1 = find(ev, "X", "transfer", 0), *x2 = find(ev, "X", "transfer", 1);
	assert_non_null(x2);
	assert_null(find(ev, "X", "transfer", 2));
	assert_float_equal(num(x1, "ts") + num(x1, "dur"), 1004000, 1e-3);
	assert_float_equal(num(x2, "ts"), 1004000, 1e-3);
	assert_float_equal(num(x2, "ts") + num(x2, "dur"), 1006000, 1e-3);
	assert_int_equal((int)num(cJSON_GetObjectItem(x2, "args"), "id"), 2);
	cJSON *b3 = find(ev, "X", "regular", 2);
	assert_non_null(b3);
	assert_float_equal(num(cJSON_GetObjectItem(b3, "args"), "xfer_s"), 0.0035, 1e-9);
	cJSON_Delete(doc);
	unlink(path);
}

/* A balancer's events: the counter of units done, solves, and each PU's
 * model with its curve as the balancer predicts it. */
static void test_balancer_events(void **state)
{
	(void)state;
	char path[] = "/tmp/plb-trace-XXXXXX", err[300];
	scratch(path);
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(NULL, "plb-hac", 2, 100000, &b), 0);
	struct plb__trace *t;
	assert_int_equal(plb__trace_open(&t, path, 0, err, sizeof err), 0);
	plb__trace_node(t, 0, "n");
	assert_int_equal(plb__trace_pu(t, 0, 0, "p0"), 0);
	assert_int_equal(plb__trace_pu(t, 1, 0, "p1"), 0);
	plb__trace_begin(t);
	double now = 0;
	int left = 1;
	while (left) {
		left = 0;
		for (int pu = 0; pu < 2; pu++) {
			struct plb__grant g;
			int rc = plb__balancer_next(b, pu, now, &g);
			if (rc != PLB__NEXT_GRANT) {
				left |= rc == PLB__NEXT_WAIT;
				continue;
			}
			left = 1;
			/* PU 1 twice as fast; 1 ms per block */
			now += 1e-3 + (double)g.units * (pu ? 1e-6 : 2e-6);
			struct plb__block_done s = {.grant_id = g.id, .exec_s = (double)g.units * (pu ? 1e-6 : 2e-6) + 1e-3,
					       .finish = now};
			assert_int_equal(plb__balancer_done(b, pu, &s), 0);
			plb__trace_after(t, b, pu, now);
		}
	}
	assert_true(plb__balancer_finished(b));
	plb__trace_models(t, b, 2, now);
	assert_int_equal(plb__trace_close(t, err, sizeof err), 0);
	plb__balancer_destroy(b);

	cJSON *doc, *ev = events(path, &doc), *e, *last = NULL;
	int counters = 0;
	cJSON_ArrayForEach(e, ev) {
		if (!strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "C")) {
			counters++;
			last = e;
		}
	}
	assert_true(counters > 2);
	assert_float_equal(num(cJSON_GetObjectItem(last, "args"), "units"), 100000, 0);
	assert_non_null(find(ev, "i", "solve", 0));
	for (int pu = 0; pu < 2; pu++) {
		cJSON *m = find(ev, "i", "model", pu), *a = cJSON_GetObjectItem(m, "args");
		assert_non_null(m);
		assert_int_equal((int)num(m, "tid"), 1 + 2 * pu);
		cJSON *cu = cJSON_GetObjectItem(a, "curve_units"), *cs = cJSON_GetObjectItem(a, "curve_s");
		int n = cJSON_GetArraySize(cu);
		assert_true(n > 2);
		assert_int_equal(cJSON_GetArraySize(cs), n);
		assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(a, "sample_units")) > 0);
		/* the samples follow 1 ms + units * rate: so does the fit */
		for (int i = 0; i < n; i++) {
			double u = cJSON_GetArrayItem(cu, i)->valuedouble, s = cJSON_GetArrayItem(cs, i)->valuedouble;
			if (u >= 100)
				assert_float_equal(s, 1e-3 + u * (pu ? 1e-6 : 2e-6), 0.05 * s);
		}
	}
	cJSON_Delete(doc);
	unlink(path);
}

static void test_write_errors(void **state)
{
	(void)state;
	char err[300] = "";
	struct plb__trace *t = (void *)1;
	assert_int_equal(plb__trace_open(&t, "/nonexistent/dir/t.json", 0, err, sizeof err), PLB_EIO);
	assert_null(t);
	assert_non_null(strstr(err, "/nonexistent/dir/t.json: cannot write it"));
	if (access("/dev/full", W_OK) == 0) {
		/* the writes fail at the end, when the buffer goes out */
		assert_int_equal(plb__trace_open(&t, "/dev/full", 0, err, sizeof err), 0);
		plb__trace_node(t, 0, "n");
		assert_int_equal(plb__trace_close(t, err, sizeof err), PLB_EIO);
		assert_non_null(strstr(err, "/dev/full: writing it failed"));
	}
	assert_int_equal(plb__trace_close(NULL, err, sizeof err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_slices_and_nulls),
		cmocka_unit_test(test_back_to_back_rounding),
		cmocka_unit_test(test_transfer_behind_the_last),
		cmocka_unit_test(test_balancer_events),
		cmocka_unit_test(test_write_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
