/* The CUDA tests' gate, shared by the kernels' tests: include after
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

#endif
