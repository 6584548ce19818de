/* plb-nuclei's pieces: the drawn image and the CPU operations find every
 * drawn nucleus and nothing else; the features tasks, however many, give
 * the one-task answer; and the OpenCL operations (on PoCL here) give the
 * CPU's output to the bit, each run on the scratch the CPU operations
 * before it left. Built where OpenCV is (the Makefile leaves it out
 * otherwise). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nuclei/nuclei.h"
#include "runtime/device/device.h"      /* plb__dev_opencl_count (test_gpu.h) */
#include "test/unit/test_gpu.h"

#define T 256

static const struct nuclei_params PA = {.tile = T, .open_r = 1, .area_min = 30, .area_max = 1200};

struct tile {
	uint8_t rgb[T * T * 3];
	void *scratch;
	struct nuclei_out out;
};

/* Every op of one tile on the CPU, the features in `feat` tasks' shares
 * (NUCLEI_FEAT_TASK objects each, as the pipeline cuts them). */
static void cpu_ops(struct tile *t, int upto)
{
	struct plb_block b = {.units = 1, .in = t->rgb, .out = &t->out, .members = 1,
			      .scratch = t->scratch};
	for (int m = 0; m < upto && m < NUCLEI_FEATURES; m++) {
		b.op = m;
		assert_int_equal(nuclei_run_op(m, &PA, &b), 0);
	}
	if (upto < NUCLEI_NOPS)
		return;
	int tasks = ((int)t->out.reported + NUCLEI_FEAT_TASK - 1) / NUCLEI_FEAT_TASK;
	for (int k = tasks - 1; k >= 0; k--) {  /* any order */
		b.op = NUCLEI_FEATURES;
		b.task = k;
		b.tasks = tasks;
		assert_int_equal(nuclei_run_op(NUCLEI_FEATURES, &PA, &b), 0);
	}
}

static struct tile *new_tile(uint64_t seed, struct nuclei_truth *truth, size_t *n)
{
	struct tile *t = calloc(1, sizeof *t);
	assert_non_null(t);
	assert_non_null(t->scratch = calloc(1, nuclei_scratch_bytes(T)));
	nuclei_draw(seed, 1, 1, T, t->rgb, truth, 128, n);
	return t;
}

static void free_tile(struct tile *t)
{
	free(t->scratch);
	free(t);
}

/* Every drawn nucleus is one object near its centre; no other object. */
static void test_finds_what_was_drawn(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct nuclei_truth truth[128];
		size_t n;
		struct tile *t = new_tile(seed, truth, &n);
		cpu_ops(t, NUCLEI_NOPS);
		assert_true(n > 0);
		assert_int_equal(t->out.objects, n);
		for (size_t k = 0; k < n; k++) {
			int hit = 0;
			for (uint32_t j = 0; j < t->out.reported; j++) {
				double dx = t->out.obj[j].x - truth[k].x, dy = t->out.obj[j].y - truth[k].y;
				if (sqrt(dx * dx + dy * dy) <= truth[k].r / 2) {
					hit++;
					/* its area about the ellipse's (radii r and 0.75-1 r) */
					assert_true(t->out.obj[j].area >= 0.6 * 3.14159265358979 * truth[k].r * truth[k].r * 0.75);
					assert_true(t->out.obj[j].area <= 1.4 * 3.14159265358979 * truth[k].r * truth[k].r);
					assert_true(t->out.obj[j].mean_h > 100);
				}
			}
			if (hit != 1)
				fail_msg("seed %llu: nucleus %zu at (%.1f, %.1f), r %.1f%s: %d objects there",
					 (unsigned long long)seed, k, truth[k].x, truth[k].y, truth[k].r,
					 truth[k].hollow ? " (hollow)" : "", hit);
		}
		free_tile(t);
	}
}

/* The features cut in tasks equal the features in one pass. */
static void test_features_tasks(void **state)
{
	(void)state;
	size_t n;
	struct nuclei_truth truth[128];
	struct tile *t = new_tile(3, truth, &n);
	cpu_ops(t, NUCLEI_NOPS);
	struct nuclei_out whole = t->out;
	/* one pass over every object: NUCLEI_FEAT_TASK objects a call, in order */
	memset(t->out.obj, 0, sizeof t->out.obj);
	struct plb_block b = {.units = 1, .in = t->rgb, .out = &t->out, .members = 1,
			      .scratch = t->scratch, .op = NUCLEI_FEATURES};
	for (int k = 0; k * NUCLEI_FEAT_TASK < (int)t->out.reported; k++) {
		b.task = k;
		assert_int_equal(nuclei_run_op(NUCLEI_FEATURES, &PA, &b), 0);
	}
	assert_memory_equal(&whole, &t->out, sizeof whole);
	assert_true(t->out.reported > NUCLEI_FEAT_TASK);        /* more than one task */
	free_tile(t);
}

/* A device's run of an operation (nuclei_cl_run or nuclei_cuda_run). */
typedef int (*dev_run)(void *d, int op, const struct nuclei_params *pa, const struct plb_block *b);

/* Each device operation, run where the CPU's would be, gives its output
 * to the bit: the whole tile's outcome and every image equal; and an
 * opening of another radius is refused, not computed wrong. */
static void device_matches_cpu(const char *what, dev_run run, void *d)
{
	int ran = 0;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		size_t n;
		struct nuclei_truth truth[128];
		struct tile *c = new_tile(seed, truth, &n), *g = new_tile(seed, truth, &n);
		cpu_ops(c, NUCLEI_NOPS);
		struct plb_block b = {.units = 1, .in = g->rgb, .out = &g->out, .members = 1,
				      .scratch = g->scratch};
		for (int m = 0; m < NUCLEI_FEATURES; m++) {
			b.op = m;
			if (NUCLEI_DEVICE_OP(m)) {
				if (run(d, m, &PA, &b))
					fail_msg("op %s on the %s device failed", nuclei_op_names[m], what);
				ran++;
			} else {
				assert_int_equal(nuclei_run_op(m, &PA, &b), 0);
			}
		}
		struct nuclei_scratch sc, sg;
		nuclei_scratch_at(c->scratch, T, &sc);
		nuclei_scratch_at(g->scratch, T, &sg);
		const struct {
			const char *what;
			const void *a, *b;
			size_t n;
		} img[] = {
			{"gray", sc.gray, sg.gray, T * T}, {"h", sc.h, sg.h, T * T},
			{"marker", sc.marker, sg.marker, T * T}, {"recon", sc.recon, sg.recon, T * T},
			{"mask", sc.mask, sg.mask, T * T}, {"grad", sc.grad, sg.grad, T * T * 4},
		};
		for (size_t k = 0; k < sizeof img / sizeof *img; k++)
			if (memcmp(img[k].a, img[k].b, img[k].n))
				fail_msg("seed %llu: the %s device's %s differs from the CPU's",
					 (unsigned long long)seed, what, img[k].what);
		/* the rest on the CPU: the same objects */
		for (int k = 0; k * NUCLEI_FEAT_TASK < (int)g->out.reported; k++) {
			b.op = NUCLEI_FEATURES;
			b.task = k;
			assert_int_equal(nuclei_run_op(NUCLEI_FEATURES, &PA, &b), 0);
		}
		assert_memory_equal(&c->out, &g->out, sizeof c->out);
		free_tile(c);
		free_tile(g);
	}
	assert_int_equal(ran, 4 * 6);
	struct nuclei_params wide = PA;
	wide.open_r = 2;
	struct tile *t = new_tile(1, NULL, NULL);
	struct plb_block b = {.units = 1, .in = t->rgb, .out = &t->out, .members = 1,
			      .scratch = t->scratch, .op = NUCLEI_OPEN};
	assert_int_equal(run(d, NUCLEI_OPEN, &wide, &b), PLB_EINVAL);
	free_tile(t);
}

#ifdef PLB_HAVE_OPENCL
static int cl_run(void *d, int op, const struct nuclei_params *pa, const struct plb_block *b)
{
	return nuclei_cl_run(d, op, pa, b);
}
#endif

static void test_opencl_matches_cpu(void **state)
{
	(void)state;
	test_need_opencl("test_opencl_matches_cpu");
#ifdef PLB_HAVE_OPENCL
	cl_context ctx;
	cl_device_id dev;
	char err[320];
	test_cl_first(&ctx, &dev);
	struct nuclei_cl *d;
	if (nuclei_cl_create(ctx, dev, T, &d, err, sizeof err))
		fail_msg("%s", err);
	device_matches_cpu("OpenCL", cl_run, d);
	nuclei_cl_destroy(d);
	clReleaseContext(ctx);
#endif
}

#ifdef PLB_HAVE_CUDA
static int cuda_run(void *d, int op, const struct nuclei_params *pa, const struct plb_block *b)
{
	return nuclei_cuda_run(d, op, pa, b);
}
#endif

static void test_cuda_matches_cpu(void **state)
{
	(void)state;
	test_need_gpu("test_cuda_matches_cpu");
#ifdef PLB_HAVE_CUDA
	char err[320];
	struct nuclei_cuda *d;
	if (nuclei_cuda_create(0, T, &d, err, sizeof err))
		fail_msg("%s", err);
	device_matches_cpu("CUDA", cuda_run, d);
	nuclei_cuda_destroy(d);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finds_what_was_drawn),
		cmocka_unit_test(test_features_tasks),
		cmocka_unit_test(test_opencl_matches_cpu),
		cmocka_unit_test(test_cuda_matches_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
