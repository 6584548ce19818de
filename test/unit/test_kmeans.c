/* The k-means kernel: labels are nearest centroids (against the serial
 * reference in double, up to float rounding on near-ties), the
 * accumulator holds exactly the sums and counts of the labelled points,
 * blocks of uneven sizes combined give the labels and counts of one call,
 * the update takes means and leaves an empty cluster's centroid alone, and
 * bad arguments are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kmeans/kmeans.h"
#include "test/unit/test_gpu.h"
#include "test/unit/test_util.h"

/* n points of d dimensions around k random centres (spread 1, centres in
 * [-10, 10)), and k centroids near but not on the centres. */
static void clusters(size_t n, int d, int k, uint64_t seed, float **pts, float **cent)
{
	uint64_t s = seed * 2654435761u + 1;
	float *c = malloc((size_t)k * d * sizeof *c), *p = malloc(n * d * sizeof *p);
	float *centre = malloc((size_t)k * d * sizeof *centre);
	assert_true(c && p && centre);
	for (int i = 0; i < k * d; i++) {
		centre[i] = (float)(20 * test_urand(&s) - 10);
		c[i] = centre[i] + (float)(test_urand(&s) - 0.5);
	}
	for (size_t i = 0; i < n; i++) {
		int j = (int)(test_urand(&s) * k);
		for (int t = 0; t < d; t++)
			p[i * d + t] = centre[j * d + t] + (float)(2 * test_urand(&s) - 1);
	}
	free(centre);
	*pts = p;
	*cent = c;
}

/* One call over every point: each label is a nearest centroid (its
 * distance within float rounding of the reference's best), and the
 * accumulator is exactly the labelled points' sums and counts. */
static void test_labels_and_sums(void **state)
{
	(void)state;
	size_t n = 5003;
	int d = 7, k = 9;
	float *p, *c;
	clusters(n, d, k, 1, &p, &c);
	void *sh = malloc(plb__km_shared_bytes(k, d));
	plb__km_share(sh, k, d, c);
	int32_t *lab = malloc(n * sizeof *lab);
	size_t ab = plb__km_acc_bytes(k, d);
	double *acc = calloc(1, ab), *want = calloc(1, ab);
	assert_int_equal(plb__km_cpu(sh, p, n, lab, acc), 0);
	int ties = 0;
	double inertia = 0;
	for (size_t i = 0; i < n; i++) {
		double best, mine;
		int j = plb__km_nearest(p + i * d, k, d, c, &best);
		assert_true(lab[i] >= 0 && lab[i] < k);
		plb__km_nearest(p + i * d, 1, d, c + (size_t)lab[i] * d, &mine);
		/* float products of coordinates up to ~11: a few ulps of 100s */
		if (!(mine <= best + 1e-3))
			fail_msg("point %zu: label %d at %.9g, nearest %d at %.9g", i, lab[i], mine, j, best);
		ties += j != lab[i];
		for (int t = 0; t < d; t++)
			want[(size_t)lab[i] * d + t] += p[i * d + t];
		want[(size_t)k * d + lab[i]] += 1;
		inertia += best;
	}
	assert_true(ties < 5);
	assert_memory_equal(acc, want, ab - sizeof(double));     /* the same sums, in the same order */
	assert_near(acc[(size_t)k * d + k], inertia, 1e-4 * inertia);
	free(sh);
	free(lab);
	free(acc);
	free(want);
	free(p);
	free(c);
}

/* Blocks of uneven sizes, each with its own accumulator, combined in
 * offset order: the labels and counts of one call over all, the sums to
 * rounding. (BLAS may round a product differently at the edge of a chunk,
 * so a point on a near-tie may change sides: allowed, and then the counts
 * differ by as much.) */
static void test_blocks_combine(void **state)
{
	(void)state;
	size_t n = 20000;
	int d = 3, k = 40;
	float *p, *c;
	clusters(n, d, k, 2, &p, &c);
	void *sh = malloc(plb__km_shared_bytes(k, d));
	plb__km_share(sh, k, d, c);
	int32_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
	size_t ab = plb__km_acc_bytes(k, d);
	double *one = calloc(1, ab), *all = calloc(1, ab), *part = malloc(ab);
	assert_int_equal(plb__km_cpu(sh, p, n, a, one), 0);
	static const size_t w[] = {1, 409, 4096, 7, 999};
	for (size_t off = 0, i = 0; off < n; i++) {
		size_t m = w[i % 5] < n - off ? w[i % 5] : n - off;
		memset(part, 0, ab);
		assert_int_equal(plb__km_cpu(sh, p + off * d, m, b + off, part), 0);
		plb__km_combine(all, part, ab);
		off += m;
	}
	int moved = 0;
	for (size_t i = 0; i < n; i++) {
		if (a[i] == b[i])
			continue;
		double da, db;
		plb__km_nearest(p + i * d, 1, d, c + (size_t)a[i] * d, &da);
		plb__km_nearest(p + i * d, 1, d, c + (size_t)b[i] * d, &db);
		if (!(fabs(da - db) <= 1e-3))
			fail_msg("point %zu: label %d (%.9g) in one call, %d (%.9g) in blocks", i, a[i], da, b[i], db);
		moved++;
	}
	assert_true(moved < 5);
	double total = 0;
	for (int j = 0; j < k; j++) {
		double x = all[(size_t)k * d + j], y = one[(size_t)k * d + j];
		total += x;
		if (!moved)
			assert_true(x == y);
	}
	assert_true(total == (double)n);
	for (size_t i = 0; !moved && i < ab / sizeof(double); i++)
		assert_near(all[i], one[i], 1e-9 * (fabs(one[i]) + 1));
	free(sh);
	free(a);
	free(b);
	free(one);
	free(all);
	free(part);
	free(p);
	free(c);
}

/* The update: means of the clusters; an empty one keeps its centroid. */
static void test_update(void **state)
{
	(void)state;
	int k = 3, d = 2;
	double acc[3 * 2 + 3 + 1] = {4, 6, 0, 0, -3, 9, /* counts */ 2, 0, 3, /* inertia */ 1};
	float c[6] = {9, 9, 7, 8, 9, 9};
	assert_int_equal(plb__km_update(acc, k, d, c), 1);
	assert_true(c[0] == 2 && c[1] == 3 && c[2] == 7 && c[3] == 8 && c[4] == -1 && c[5] == 3);
}

/* The first centroids: k distinct points of the set, the same for the same
 * seed; k-means++ spreads them (on three tight groups, one in each), and
 * more clusters than points is refused. */
static void test_init(void **state)
{
	(void)state;
	float p[9 * 2] = {0, 0, 0.1f, 0, 0, 0.1f, 50, 50, 50.1f, 50, 50, 50.1f, -50, 50, -50.1f, 50, -50, 50.1f};
	for (int pp = 0; pp < 2; pp++) {
		float a[3 * 2], b[3 * 2];
		assert_int_equal(plb__km_init(p, 9, 2, 3, pp, 7, a), 0);
		assert_int_equal(plb__km_init(p, 9, 2, 3, pp, 7, b), 0);
		assert_memory_equal(a, b, sizeof a);
		for (int j = 0; j < 3; j++) {
			int found = 0;
			for (int i = 0; i < 9; i++)
				found += p[2 * i] == a[2 * j] && p[2 * i + 1] == a[2 * j + 1];
			assert_int_equal(found, 1);
			for (int q = 0; q < j; q++)
				assert_false(a[2 * q] == a[2 * j] && a[2 * q + 1] == a[2 * j + 1]);
		}
		if (pp) {       /* one centroid near each group */
			int g[3] = {0, 0, 0};
			for (int j = 0; j < 3; j++)
				g[a[2 * j + 1] < 25 ? 0 : a[2 * j] > 25 ? 1 : 2]++;
			assert_true(g[0] == 1 && g[1] == 1 && g[2] == 1);
		}
	}
	float c[20];
	assert_int_equal(plb__km_init(p, 9, 2, 10, 1, 1, c), PLB_EINVAL);
	/* all points equal: still k distinct indices, no endless draw */
	float same[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	assert_int_equal(plb__km_init(same, 4, 2, 4, 1, 3, c), 0);
}

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
/* A device's k-means functions, as the test calls them. */
struct dev_km {
	int (*create)(const void *shared, void **g, char *err, size_t len);
	int (*run)(void *g, const float *p, size_t n, int32_t *labels, double *acc);
	void (*times)(const void *g, struct plb__phase_times *t);
	void (*destroy)(void *g);
	int streams;            /* queues a block's chunks overlap on */
};

/* The device's kernel labels as the CPU one (but near-ties), and its
 * accumulator matches to rounding, for blocks of 1, 1000 and 30000 points
 * (its buffers growing between them). */
static void device_matches_cpu(const struct dev_km *dev)
{
	size_t n = 30000;
	int d = 6, k = 12;
	float *p, *c;
	clusters(n, d, k, 4, &p, &c);
	void *sh = malloc(plb__km_shared_bytes(k, d));
	plb__km_share(sh, k, d, c);
	void *g;
	char err[320];
	if (dev->create(sh, &g, err, sizeof err))
		fail_msg("%s", err);
	size_t ab = plb__km_acc_bytes(k, d);
	int32_t *la = malloc(n * sizeof *la), *lb = malloc(n * sizeof *lb);
	double *aa = malloc(ab), *bb = malloc(ab);
	static const size_t sizes[] = {1, 1000, 30000};
	for (int s = 0; s < 3; s++) {
		memset(aa, 0, ab);
		memset(bb, 0, ab);
		assert_int_equal(plb__km_cpu(sh, p, sizes[s], la, aa), 0);
		double t0 = test_now();
		assert_int_equal(dev->run(g, p, sizes[s], lb, bb), 0);
		struct plb__phase_times ph;
		dev->times(g, &ph);
		test_phases_ok(&ph, test_now() - t0, dev->streams);
		int moved = 0;
		for (size_t i = 0; i < sizes[s]; i++)
			moved += la[i] != lb[i];
		assert_true(moved < 3);
		/* sums and counts to rounding; the inertia to float rounding
		 * of |x|^2 - 2 x.c + |c|^2 on the CPU (the last value) */
		for (size_t i = 0; !moved && i < ab / sizeof(double); i++)
			assert_near(aa[i], bb[i], (i + 1 < ab / sizeof(double) ? 1e-6 : 1e-4) * (fabs(aa[i]) + 1));
	}
	dev->destroy(g);
	free(sh);
	free(la);
	free(lb);
	free(aa);
	free(bb);
	free(p);
	free(c);
}
#endif

#ifdef PLB_HAVE_CUDA
static int cuda_create(const void *sh, void **g, char *err, size_t len)
{
	return plb__km_cuda_create(0, sh, (struct plb__km_cuda **)g, err, len);
}
static int cuda_run(void *g, const float *p, size_t n, int32_t *l, double *acc) { return plb__km_cuda_run(g, p, n, l, acc); }
static void cuda_times(const void *g, struct plb__phase_times *t) { plb__km_cuda_times(g, t); }
static void cuda_destroy(void *g) { plb__km_cuda_destroy(g); }
#endif

/* The CUDA kernel against the CPU's. Skipped without a GPU, unless
 * PLB_REQUIRE_GPU=1, which fails instead. */
static void test_cuda_matches_cpu(void **state)
{
	(void)state;
	test_need_gpu("test_cuda_matches_cpu");
#ifdef PLB_HAVE_CUDA
	static const struct dev_km dev = {cuda_create, cuda_run, cuda_times, cuda_destroy, 1};
	device_matches_cpu(&dev);
#endif
}

#ifdef PLB_HAVE_OPENCL
static cl_context cl_ctx;
static cl_device_id cl_dev;
static int cl_create(const void *sh, void **g, char *err, size_t len)
{
	return plb__km_cl_create(cl_ctx, cl_dev, sh, (struct plb__km_cl **)g, err, len);
}
static int cl_run(void *g, const float *p, size_t n, int32_t *l, double *acc) { return plb__km_cl_run(g, p, n, l, acc); }
static void cl_times(const void *g, struct plb__phase_times *t) { plb__km_cl_times(g, t); }
static void cl_destroy(void *g) { plb__km_cl_destroy(g); }
#endif

/* The OpenCL kernel against the CPU's, on the node's first OpenCL device
 * (PoCL here). */
static void test_opencl_matches_cpu(void **state)
{
	(void)state;
	test_need_opencl("test_opencl_matches_cpu");
#ifdef PLB_HAVE_OPENCL
	test_cl_first(&cl_ctx, &cl_dev);
	static const struct dev_km dev = {cl_create, cl_run, cl_times, cl_destroy, 2};
	device_matches_cpu(&dev);
	clReleaseContext(cl_ctx);
#endif
}

static void test_bad_args(void **state)
{
	(void)state;
	float c[2] = {0, 0}, x[2] = {1, 1};
	char sh[64];
	int32_t lab;
	double acc[8] = {0};
	plb__km_share(sh, 1, 2, c);
	assert_int_equal(plb__km_cpu(NULL, x, 1, &lab, acc), PLB_EINVAL);
	assert_int_equal(plb__km_cpu(sh, NULL, 1, &lab, acc), PLB_EINVAL);
	assert_int_equal(plb__km_cpu(sh, x, 1, NULL, acc), PLB_EINVAL);
	assert_int_equal(plb__km_cpu(sh, x, 0, NULL, NULL), 0);
	((struct plb__km_shared *)sh)->k = 0;
	assert_int_equal(plb__km_cpu(sh, x, 1, &lab, acc), PLB_EINVAL);
	assert_true(acc[0] == 0 && acc[2] == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels_and_sums),
		cmocka_unit_test(test_blocks_combine),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_cuda_matches_cpu),
		cmocka_unit_test(test_opencl_matches_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
