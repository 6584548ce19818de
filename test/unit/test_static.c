/* static (balancer/policies/static.c): one profiling block each, then one
 * proportional split of the rest. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_balancer.h"

/* static: after one profiling block each, the rest is split in one block
 * per PU in proportion to the profiled rates (here 1 : 3 units per
 * second, slow enough that an error of one unit/s in their sum shows),
 * also when a profiled PU is lost before the others are. */
static void test_static_split(void **state)
{
	const uint64_t W = 100000;
	plb__balancer_t *b;
	struct plb__grant g[2], s[2];
	assert_int_equal(plb__balancer_create(NULL, "static", 2, W, &b), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(plb__balancer_next(b, i, 0, &g[i]), PLB__NEXT_GRANT);
	for (int i = 0; i < 2; i++) {
		double t = (double)g[i].units / (i ? 3.0 : 1.0);
		struct plb__block_done smp = {g[i].id, t, 0, t, 0};
		assert_int_equal(plb__balancer_done(b, i, &smp), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(plb__balancer_next(b, i, 1e6, &s[i]), PLB__NEXT_GRANT);
	uint64_t rest = W - g[0].units - g[1].units;
	if (s[0].units + s[1].units != rest || llabs((long long)(3 * s[0].units) - (long long)s[1].units) > 3)
		fail_msg("static split of %llu: %llu and %llu, expected 1 : 3",
			 (unsigned long long)rest, (unsigned long long)s[0].units,
			 (unsigned long long)s[1].units);
	plb__balancer_destroy(b);

	/* three PUs at 1 : 2 : 3; PU 0 is lost after its profiling, before
	 * PU 2's is back: the others still wait for PU 2 (a lost profiled
	 * PU no longer counts as profiled), and the split is 2 : 3 */
	assert_int_equal(plb__balancer_create(NULL, "static", 3, W, &b), 0);
	struct plb__grant h[3], t[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(plb__balancer_next(b, i, 0, &h[i]), PLB__NEXT_GRANT);
	for (int i = 0; i < 2; i++) {
		double sec = (double)h[i].units / (i + 1.0);
		struct plb__block_done smp = {h[i].id, sec, 0, sec, 0};
		assert_int_equal(plb__balancer_done(b, i, &smp), 0);
	}
	assert_int_equal(plb__balancer_lost(b, 0, 1e5), 0);
	assert_int_equal(plb__balancer_next(b, 1, 1e5, &t[1]), PLB__NEXT_WAIT);
	double sec = (double)h[2].units / 3.0;
	struct plb__block_done smp = {h[2].id, sec, 0, 1e5 + 1, 0};
	assert_int_equal(plb__balancer_done(b, 2, &smp), 0);
	for (int i = 1; i < 3; i++)
		assert_int_equal(plb__balancer_next(b, i, 2e5, &t[i]), PLB__NEXT_GRANT);
	rest = W - h[0].units - h[1].units - h[2].units;       /* PU 0's block was done */
	if (t[1].units + t[2].units != rest ||
	    llabs((long long)(3 * t[1].units) - (long long)(2 * t[2].units)) > 5)
		fail_msg("static split of %llu after a loss: %llu and %llu, expected 2 : 3",
			 (unsigned long long)rest, (unsigned long long)t[1].units,
			 (unsigned long long)t[2].units);
	plb__balancer_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
