/* The gene-network kernels: the criterion on hand-computed cases, the CPU
 * kernel against the serial reference to the bit (every subset size,
 * several level counts, a sample count that leaves a partial word, blocks
 * of uneven sizes), the planted regulators found, discretisation by rank,
 * the generator's balanced tables, the shared data's checks, the reader
 * (good TSV and CSV, every malformed file named by file:line), and the
 * CUDA kernel against the CPU one where a GPU is present. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/grn/grn.h"
#include "test/unit/test_gpu.h"
#include "test/unit/test_util.h"

/* H(Y | x) in bits of counts, straight from the definition. */
static double entropy(const uint32_t *cy, int c)
{
	double f = 0, h = 0;
	for (int y = 0; y < c; y++)
		f += cy[y];
	for (int y = 0; y < c; y++)
		if (cy[y])
			h -= cy[y] / f * log2(cy[y] / f);
	return h;
}

/* The criterion on counts of two levels and one predictor (s = 4), from
 * the definition: a perfect predictor scores 0, an independent one H(Y),
 * an unseen instance counts with H(Y) and weight alpha / (alpha N + s),
 * alpha 0 is the plain conditional entropy. */
static void test_score_by_hand(void **state)
{
	(void)state;
	struct plb__grn_tables t;
	assert_int_equal(plb__grn_tables_make(4, 1.0, &t), 0);
	uint32_t cy[2] = {2, 2};
	double hy = plb__grn_hy(&t, cy, 2);
	assert_near(hy, 1.0, 1e-15);
	uint32_t perfect[4] = {2, 0, 0, 2}, none[4] = {1, 1, 1, 1}, constant[4] = {2, 2, 0, 0};
	uint32_t partial[4] = {2, 1, 0, 1};
	assert_near(plb__grn_score(&t, perfect, 2, 2, hy), 0.0, 1e-15);
	assert_near(plb__grn_score(&t, none, 2, 2, hy), 2 * (3.0 / 6) * 1.0, 1e-15);
	/* x = 1 unseen: (4 + 1) / 6 H(Y) + 1 / 6 H(Y) */
	assert_near(plb__grn_score(&t, constant, 2, 2, hy), 1.0, 1e-15);
	double want = (3 + 1.0) / 6 * entropy(partial, 2) + (1 + 1.0) / 6 * entropy(partial + 2, 2);
	assert_near(plb__grn_score(&t, partial, 2, 2, hy), want, 1e-15);
	plb__grn_tables_free(&t);
	assert_int_equal(plb__grn_tables_make(4, 0.0, &t), 0);
	assert_near(plb__grn_score(&t, partial, 2, 2, hy), 0.75 * entropy(partial, 2), 1e-15);
	assert_near(plb__grn_score(&t, constant, 2, 2, hy), 1.0, 1e-15);
	plb__grn_tables_free(&t);
}

/* A synthetic network of d's shape drawn from seed (its true regulators
 * in truth), with its levels, shared data and tables. */
struct data {
	int n, s, c, k;
	double alpha;
	int32_t *truth;
	uint8_t *lev;
	void *sh;
	struct plb__grn_tables tab;
};

static void data_make(struct data *d, double noise, uint64_t seed)
{
	float *expr = malloc((size_t)d->n * d->s * sizeof *expr);
	d->truth = malloc((size_t)d->n * d->k * sizeof *d->truth);
	d->lev = malloc((size_t)d->n * d->s);
	d->sh = malloc(plb__grn_shared_bytes(d->n, d->s, d->c));
	assert_true(expr && d->truth && d->lev && d->sh);
	assert_int_equal(plb__grn_generate(d->n, d->s, d->c, d->k, noise, seed, expr, d->truth), 0);
	assert_int_equal(plb__grn_discretise(expr, d->n, d->s, d->c, d->lev), 0);
	free(expr);
	plb__grn_share(d->sh, d->lev, d->n, d->s, d->c, d->k, d->alpha);
	assert_int_equal(plb__grn_shared_ok(d->sh, plb__grn_shared_bytes(d->n, d->s, d->c)), 0);
	assert_int_equal(plb__grn_tables_make(d->s, d->alpha, &d->tab), 0);
}

static void data_free(struct data *d)
{
	free(d->truth);
	free(d->lev);
	free(d->sh);
	plb__grn_tables_free(&d->tab);
}

/* The CPU kernel over blocks of 1, 2, 5... targets equals the reference
 * on every target to the bit, for each subset size and level count, with
 * 70 samples (a partial second word); with no noise and 300 samples the
 * planted regulators are found for nearly every regulated gene. */
static void test_matches_reference(void **state)
{
	(void)state;
	static const struct {
		int n, s, c, k;
		double alpha, noise;
	} cases[] = {
		{40, 70, 3, 2, 1.0, 0.1}, {40, 70, 2, 1, 0.0, 0.1}, {24, 70, 3, 3, 1.0, 0.1},
		{30, 70, 4, 2, 2.5, 0.1}, {30, 130, 8, 1, 1.0, 0.0}, {30, 64, 2, 3, 0.5, 0.2},
	};
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
		struct data d = {.n = cases[ci].n, .s = cases[ci].s, .c = cases[ci].c, .k = cases[ci].k,
				 .alpha = cases[ci].alpha};
		data_make(&d, cases[ci].noise, 7 + ci);
		struct plb__grn_best *got = malloc((size_t)d.n * sizeof *got);
		for (int t = 0, b = 1; t < d.n; t += b, b = b * 2 + 1) {
			int m = d.n - t < b ? d.n - t : b;
			assert_int_equal(plb__grn_cpu(d.sh, &d.tab, (uint64_t)t, (size_t)m, got + t), 0);
		}
		for (int t = 0; t < d.n; t++) {
			struct plb__grn_best ref;
			assert_int_equal(plb__grn_ref(d.lev, d.n, d.s, d.c, d.k, &d.tab, t, &ref), 0);
			if (memcmp(ref.reg, got[t].reg, sizeof ref.reg) || ref.score != got[t].score)
				fail_msg("case %zu, target %d: kernel {%d %d %d %d} %.17g, reference {%d %d %d %d} %.17g",
					 ci, t, got[t].reg[0], got[t].reg[1], got[t].reg[2], got[t].reg[3], got[t].score,
					 ref.reg[0], ref.reg[1], ref.reg[2], ref.reg[3], ref.score);
			/* distinct genes, ascending, not the target; -1 past k */
			for (int j = 0; j < 4; j++) {
				if (j >= d.k) {
					assert_int_equal(got[t].reg[j], -1);
					continue;
				}
				assert_true(got[t].reg[j] >= 0 && got[t].reg[j] < d.n && got[t].reg[j] != t);
				assert_true(j == 0 || got[t].reg[j] > got[t].reg[j - 1]);
			}
			assert_true(got[t].score >= 0 && got[t].score <= log2(d.c) + 1e-12);
		}
		free(got);
		data_free(&d);
	}
}

/* The criterion of target t given genes g[0..k-1], counted sample by
 * sample. */
static double subset_score(const struct data *d, int t, const int32_t *g)
{
	uint32_t cnt[PLB__GRN_MAX_CELLS] = {0}, cy[PLB__GRN_MAX_LEVELS] = {0};
	int N = 1;
	for (int j = 0; j < d->k; j++)
		N *= d->c;
	for (int i = 0; i < d->s; i++) {
		int x = 0;
		for (int j = d->k - 1; j >= 0; j--)
			x = x * d->c + d->lev[(size_t)g[j] * d->s + i];
		cnt[x * d->c + d->lev[(size_t)t * d->s + i]]++;
		cy[d->lev[(size_t)t * d->s + i]]++;
	}
	return plb__grn_score(&d->tab, cnt, N, d->c, plb__grn_hy(&d->tab, cy, d->c));
}

/* Noise-free planted networks: the kernel's best scores at least as well
 * as a regulated gene's true regulators, and for nine in ten or more it is
 * them (the rank cut puts the odd sample a level off, so a near miss can
 * win). With one regulator, every gene it drives predicts the others as
 * well as it does: one of them counts as found. */
static void test_finds_planted(void **state)
{
	(void)state;
	for (int k = 1; k <= 3; k++) {
		struct data d = {.n = k == 3 ? 40 : 50, .s = 300, .c = 3, .k = k, .alpha = 1.0};
		data_make(&d, 0.0, 11);
		struct plb__grn_best *got = malloc((size_t)d.n * sizeof *got);
		assert_int_equal(plb__grn_cpu(d.sh, &d.tab, 0, (size_t)d.n, got), 0);
		int regulated = 0, exact = 0;
		for (int t = 0; t < d.n; t++) {
			if (d.truth[(size_t)t * k] < 0)
				continue;
			regulated++;
			double want = subset_score(&d, t, d.truth + (size_t)t * k);
			assert_near(subset_score(&d, t, got[t].reg), got[t].score, 1e-12);
			assert_true(got[t].score <= want + 1e-12);
			/* one regulator: it, or a gene it drives too */
			int r = got[t].reg[0];
			exact += !memcmp(got[t].reg, d.truth + (size_t)t * k, (size_t)k * sizeof *d.truth) ||
				 (k == 1 && d.truth[(size_t)r * k] == d.truth[(size_t)t * k]);
		}
		assert_true(regulated >= d.n * 3 / 4);
		print_message("k %d: the regulators found for %d of %d regulated genes\n", k, exact, regulated);
		if (exact < regulated * 9 / 10)
			fail_msg("k %d: found for %d of %d regulated genes", k, exact, regulated);
		free(got);
		data_free(&d);
	}
}

/* Each gene cut by rank into near-equal groups; equal values share a
 * level; a constant gene is one level. */
static void test_discretise(void **state)
{
	(void)state;
	const float expr[] = {
		5, 1, 3, 2, 4, 6,       /* ranks: thirds of 6 */
		1, 1, 1, 2, 2, 2,       /* ties: cut points 1 and 2, level 0 empty */
		7, 7, 7, 7, 7, 7,       /* constant */
	};
	uint8_t lev[18];
	assert_int_equal(plb__grn_discretise(expr, 3, 6, 3, lev), 0);
	const uint8_t want[18] = {2, 0, 1, 0, 1, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2};
	assert_memory_equal(lev, want, sizeof want);
	assert_int_equal(plb__grn_discretise(expr, 1, 6, 2, lev), 0);
	const uint8_t two[6] = {1, 0, 0, 0, 1, 1};
	assert_memory_equal(lev, two, sizeof two);
}

/* The generator: roots have no regulators; a regulated gene has k
 * distinct roots ascending; the same seed draws the same data. */
static void test_generate(void **state)
{
	(void)state;
	int n = 60, s = 90, k = 2;
	float *a = malloc((size_t)n * s * sizeof *a), *b = malloc((size_t)n * s * sizeof *b);
	int32_t *ta = malloc((size_t)n * k * sizeof *ta), *tb = malloc((size_t)n * k * sizeof *tb);
	assert_int_equal(plb__grn_generate(n, s, 3, k, 0.05, 3, a, ta), 0);
	assert_int_equal(plb__grn_generate(n, s, 3, k, 0.05, 3, b, tb), 0);
	assert_memory_equal(a, b, (size_t)n * s * sizeof *a);
	assert_memory_equal(ta, tb, (size_t)n * k * sizeof *ta);
	int roots = 0;
	for (int g = 0; g < n; g++) {
		const int32_t *t = ta + (size_t)g * k;
		if (t[0] < 0) {
			assert_int_equal(t[1], -1);
			roots++;
			continue;
		}
		assert_true(t[0] < t[1] && t[1] < n && t[0] != g && t[1] != g);
		assert_true(ta[(size_t)t[0] * k] < 0 && ta[(size_t)t[1] * k] < 0);
	}
	assert_int_equal(roots, n / 5);
	for (int i = 0; i < n * s; i++)
		assert_true(a[i] >= 0.25f && a[i] < 2.75f);
	assert_int_equal(plb__grn_generate(n, s, 3, k, 0.05, 4, b, tb), 0);
	assert_true(memcmp(a, b, (size_t)n * s * sizeof *a) != 0);
	assert_int_equal(plb__grn_generate(n, s, 3, k, 1.5, 3, a, ta), PLB_EINVAL);
	assert_int_equal(plb__grn_generate(2, s, 3, 2, 0.0, 3, a, ta), PLB_EINVAL);
	free(a);
	free(b);
	free(ta);
	free(tb);
}

/* Shapes past the limits and shared data that does not add up are
 * refused; so are blocks past the last gene. */
static void test_bad_args(void **state)
{
	(void)state;
	assert_int_equal(plb__grn_shape_ok(10, 50, 3, 2), 0);
	assert_int_equal(plb__grn_shape_ok(10, 50, 4, 3), 0);               /* 4^4 = 256 cells */
	assert_int_equal(plb__grn_shape_ok(10, 50, 5, 3), PLB_EINVAL);      /* 625 */
	assert_int_equal(plb__grn_shape_ok(10, 50, 3, 4), PLB_EINVAL);
	assert_int_equal(plb__grn_shape_ok(10, 50, 1, 1), PLB_EINVAL);
	assert_int_equal(plb__grn_shape_ok(2, 50, 3, 2), PLB_EINVAL);       /* no 2 others */
	assert_int_equal(plb__grn_shape_ok(10, 0, 3, 2), PLB_EINVAL);
	uint8_t lev[10 * 5] = {0};
	size_t bytes = plb__grn_shared_bytes(10, 5, 3);
	void *sh = malloc(bytes);
	plb__grn_share(sh, lev, 10, 5, 3, 2, 1.0);
	assert_int_equal(plb__grn_shared_ok(sh, bytes), 0);
	assert_int_equal(plb__grn_shared_ok(sh, bytes - 8), PLB_EINVAL);
	assert_int_equal(plb__grn_shared_ok(NULL, bytes), PLB_EINVAL);
	struct plb__grn_tables t;
	assert_int_equal(plb__grn_tables_make(5, 1.0, &t), 0);
	struct plb__grn_best out[10];
	assert_int_equal(plb__grn_cpu(sh, &t, 8, 3, out), PLB_EINVAL);
	assert_int_equal(plb__grn_cpu(sh, &t, 9, 1, out), 0);
	((struct plb__grn_shared *)sh)->alpha = -1;
	assert_int_equal(plb__grn_shared_ok(sh, bytes), PLB_EINVAL);
	((struct plb__grn_shared *)sh)->alpha = 1;
	((struct plb__grn_shared *)sh)->words = 2;
	assert_int_equal(plb__grn_shared_ok(sh, bytes), PLB_EINVAL);
	plb__grn_tables_free(&t);
	assert_int_equal(plb__grn_tables_make(6, 1.0, &t), 0);
	((struct plb__grn_shared *)sh)->words = 1;
	assert_int_equal(plb__grn_cpu(sh, &t, 0, 1, out), PLB_EINVAL);     /* tables for 6 samples */
	plb__grn_tables_free(&t);
	struct plb__grn_best r;
	assert_int_equal(plb__grn_ref(lev, 10, 5, 3, 2, &t, 10, &r), PLB_EINVAL);
	free(sh);
}

static char *write_tmp(const char *text)
{
	char *path = test_write_tmp("grn", text);
	assert_non_null(path);
	return path;
}

/* TSV with a header, comments and CRLF; CSV without a header. */
static void test_read_good(void **state)
{
	(void)state;
	static const char *texts[] = {
		"# an expression matrix\ngene\ts1\ts2\ts3\r\nTP53\t1.5\t-2\t3e2\r\n\nMYC\t0\t0.25\t7\r\n",
		"TP53,1.5,-2,3e2\n# a comment\nMYC,0,0.25, 7\n",
	};
	for (int i = 0; i < 2; i++) {
		char *path = write_tmp(texts[i]), err[256] = "", **names;
		float *e;
		int n, s;
		if (plb__grn_read(path, &e, &names, &n, &s, err, sizeof err))
			fail_msg("case %d: %s", i, err);
		assert_true(n == 2 && s == 3);
		assert_string_equal(names[0], "TP53");
		assert_string_equal(names[1], "MYC");
		assert_true(e[0] == 1.5f && e[1] == -2 && e[2] == 300 && e[3] == 0 && e[4] == 0.25f && e[5] == 7);
		free(e);
		plb__grn_names_free(names, n);
		unlink(path);
	}
}

/* Every malformed file is refused with its file:line and what is
 * accepted, and nothing is returned. */
static void test_read_bad(void **state)
{
	(void)state;
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"g\ta\tb\nA\t1\t2\nB\t1\n", ":3: 1 values where the first gene has 2"},
		{"A\t1\t2\nB\t1\tNA\n", ":2: field 3 = 'NA'; accepted: a finite number (no missing values)"},
		{"A,1,2\nB,1,2,3\n", ":2: 3 values where the first gene has 2"},
		{"A,1,2\n,3,4\n", ":2: no gene name in field 1"},
		{"A,1,2\nB\n", ":2: one field; accepted: a gene name, then its values"},
		{"gene,s1,s2\n", ":1: no genes"},
		{"# nothing\n\n", ":2: no genes"},
		{"A,1,inf\n", ":1: field 3 = 'inf'"},
		{"A,1,1e999\n", ":1: field 3 = '1e999'"},
		{"h,x\nA,1\nB,y\n", ":3: field 2 = 'y'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *path = write_tmp(cases[i].text), err[256] = "", want[160], **names = (char **)&err;
		float *e = (float *)&err;
		int n = 77, s = 77;
		int rc = plb__grn_read(path, &e, &names, &n, &s, err, sizeof err);
		snprintf(want, sizeof want, "%s%s", path, cases[i].want);
		if (rc != PLB_EINVAL || strncmp(err, want, strlen(want)) || e != (float *)&err || n != 77 ||
		    names != (char **)&err)
			fail_msg("case %zu: rc %d, '%s', expected '%s...'", i, rc, err, want);
		unlink(path);
	}
	char err[256], **names;
	float *e;
	int n, s;
	assert_int_equal(plb__grn_read("/nonexistent/expr.tsv", &e, &names, &n, &s, err, sizeof err), PLB_EIO);
	assert_non_null(strstr(err, "/nonexistent/expr.tsv: cannot open"));
}

/* The CUDA kernel equals the CPU kernel: the same subsets and scores to
 * the bit (built without fused multiply-adds), for each subset size, on
 * blocks of 1 and of every target. Skipped without a GPU, unless
 * PLB_REQUIRE_GPU=1, which fails instead. */
static void test_cuda_matches_cpu(void **state)
{
	(void)state;
	test_need_gpu("test_cuda_matches_cpu");
#ifdef PLB_HAVE_CUDA
	for (int k = 1; k <= 3; k++) {
		struct data d = {.n = k == 3 ? 40 : 120, .s = 150, .c = 3, .k = k, .alpha = 1.0};
		data_make(&d, 0.1, 5);
		struct plb__grn_best *a = malloc((size_t)d.n * sizeof *a), *b = malloc((size_t)d.n * sizeof *b);
		struct plb__grn_cuda *g;
		char err[256];
		if (plb__grn_cuda_create(0, d.sh, &d.tab, &g, err, sizeof err))
			fail_msg("%s", err);
		assert_int_equal(plb__grn_cpu(d.sh, &d.tab, 0, (size_t)d.n, a), 0);
		assert_int_equal(plb__grn_cuda_run(g, 3, 1, b + 3), 0);
		assert_memory_equal(a + 3, b + 3, sizeof *a);
		double t0 = test_now();
		assert_int_equal(plb__grn_cuda_run(g, 0, (size_t)d.n, b), 0);
		struct plb__phase_times ph;
		plb__grn_cuda_times(g, &ph);
		test_phases_ok(&ph, test_now() - t0, 1);
		assert_true(ph.in_s < 1e-4);    /* nothing to copy in */
		for (int t = 0; t < d.n; t++)
			if (memcmp(a[t].reg, b[t].reg, sizeof a[t].reg) || a[t].score != b[t].score)
				fail_msg("k %d, target %d: CPU {%d %d %d} %.17g, CUDA {%d %d %d} %.17g", k, t,
					 a[t].reg[0], a[t].reg[1], a[t].reg[2], a[t].score, b[t].reg[0], b[t].reg[1],
					 b[t].reg[2], b[t].score);
		plb__grn_cuda_destroy(g);
		free(a);
		free(b);
		data_free(&d);
	}
#endif
}

/* The OpenCL kernel equals the CPU kernel on the node's first OpenCL
 * device (PoCL here): the same subsets and scores to the bit, for each
 * subset size, on a block of 1 and one of every target (the buffers
 * growing between them); nothing copied in, the kernel and the copy back
 * timed apart by the queue's events. */
static void test_opencl_matches_cpu(void **state)
{
	(void)state;
	test_need_opencl("test_opencl_matches_cpu");
#ifdef PLB_HAVE_OPENCL
	cl_context ctx;
	cl_device_id dev;
	test_cl_first(&ctx, &dev);
	for (int k = 1; k <= 3; k++) {
		struct data d = {.n = k == 3 ? 24 : 70, .s = 150, .c = 3, .k = k, .alpha = 1.0};
		data_make(&d, 0.1, 5);
		struct plb__grn_best *a = malloc((size_t)d.n * sizeof *a), *b = malloc((size_t)d.n * sizeof *b);
		struct plb__grn_cl *g;
		char err[320];
		if (plb__grn_cl_create(ctx, dev, d.sh, &d.tab, &g, err, sizeof err))
			fail_msg("%s", err);
		assert_int_equal(plb__grn_cpu(d.sh, &d.tab, 0, (size_t)d.n, a), 0);
		memset(b, 0xff, (size_t)d.n * sizeof *b);
		assert_int_equal(plb__grn_cl_run(g, 3, 1, b + 3), 0);
		assert_memory_equal(a + 3, b + 3, sizeof *a);
		double t0 = test_now();
		assert_int_equal(plb__grn_cl_run(g, 0, (size_t)d.n, b), 0);
		struct plb__phase_times ph;
		plb__grn_cl_times(g, &ph);
		test_phases_ok(&ph, test_now() - t0, 1);
		assert_true(ph.in_s == 0);      /* nothing to copy in */
		for (int t = 0; t < d.n; t++)
			if (memcmp(a[t].reg, b[t].reg, sizeof a[t].reg) || a[t].score != b[t].score)
				fail_msg("k %d, target %d: CPU {%d %d %d} %.17g, OpenCL {%d %d %d} %.17g", k, t,
					 a[t].reg[0], a[t].reg[1], a[t].reg[2], a[t].score, b[t].reg[0], b[t].reg[1],
					 b[t].reg[2], b[t].score);
		assert_int_equal(plb__grn_cl_run(g, (uint64_t)d.n, 1, b), PLB_EINVAL);
		plb__grn_cl_destroy(g);
		free(a);
		free(b);
		data_free(&d);
	}
	clReleaseContext(ctx);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_score_by_hand),
		cmocka_unit_test(test_matches_reference),
		cmocka_unit_test(test_finds_planted),
		cmocka_unit_test(test_discretise),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_read_good),
		cmocka_unit_test(test_read_bad),
		cmocka_unit_test(test_cuda_matches_cpu),
		cmocka_unit_test(test_opencl_matches_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
