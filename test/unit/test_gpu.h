/* The CUDA and OpenCL tests' gates, shared by the kernels' tests: include after
 * cmocka.h. */
#ifndef PLB_TEST_GPU_H
#define PLB_TEST_GPU_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device/device.h"

/* Returns when this build has CUDA and this node a GPU; else skips the
 * calling test (cmocka's skip) with the runner's words for what is
 * missing, or, with PLB_REQUIRE_GPU=1 (set where a GPU must be found),
 * fails it. */
static inline void test_need_gpu(const char *test)
{
	const char *req = getenv("PLB_REQUIRE_GPU");
	int must = req && !strcmp(req, "1");
#ifdef PLB_HAVE_CUDA
	char why[256] = "";
	int ndev = plb__dev_cuda_count(why, sizeof why);
	if (ndev < 0)
		fail_msg("the CUDA driver: %s", why);
	if (ndev >= 1)
		return;
	if (must)
		fail_msg("PLB_REQUIRE_GPU=1 but no CUDA device here (%s)", why);
	printf("%s: skipped: no GPU on this node (%s)\n", test, why);
#else
	if (must)
		fail_msg("PLB_REQUIRE_GPU=1 but this build has no CUDA (see make's warning)");
	printf("%s: skipped: no CUDA in this build\n", test);
#endif
	skip();
}

/* Returns when this build has OpenCL and this node a device (PoCL's, on
 * the CPU, where nothing else is installed); else skips the calling test
 * with the runner's words for what is missing, or, with
 * PLB_REQUIRE_OPENCL=1, fails it. */
static inline void test_need_opencl(const char *test)
{
	const char *req = getenv("PLB_REQUIRE_OPENCL");
	int must = req && !strcmp(req, "1");
#ifdef PLB_HAVE_OPENCL
	char why[320] = "";
	if (plb__dev_opencl_count(why, sizeof why) >= 1)
		return;
	if (must)
		fail_msg("PLB_REQUIRE_OPENCL=1 but no OpenCL device here (%s)", why);
	printf("%s: skipped: no OpenCL device on this node (%s)\n", test, why);
#else
	if (must)
		fail_msg("PLB_REQUIRE_OPENCL=1 but this build has no OpenCL (see make's warning)");
	printf("%s: skipped: no OpenCL in this build\n", test);
#endif
	skip();
}

#ifdef PLB_HAVE_OPENCL
#include "kernels/opencl_util.h"

/* The node's first OpenCL device and a context of it, or the calling
 * test fails saying why. */
static inline void test_cl_first(cl_context *ctx, cl_device_id *dev)
{
	char err[320];
	if (plb__cl_first(0, ctx, dev, err, sizeof err))
		fail_msg("%s", err);
}
#endif

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
#include <time.h>

#include "kernels/phase_times.h"

static inline double test_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The phases a CUDA kernel timed (events) for its last block, against the
 * host's wall time of that call: none negative, the kernel's above zero,
 * none longer than `streams` times the call (chunks on several streams
 * overlap) and a millisecond. */
static inline void test_phases_ok(const struct plb__phase_times *t, double wall_s, int streams)
{
	double most = streams * wall_s + 1e-3;
	if (!(t->in_s >= 0 && t->run_s > 0 && t->out_s >= 0 && t->in_s <= most && t->run_s <= most &&
	      t->out_s <= most))
		fail_msg("phases in %.6f run %.6f out %.6f s against a call of %.6f s", t->in_s, t->run_s,
			 t->out_s, wall_s);
}
#endif

#endif
