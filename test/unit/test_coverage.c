/* The coverage check that every "coverage ok" of plbsim and the runtime
 * rests on: [0, W) done exactly once. An exact tiling in any order passes;
 * a hole, an overlap, a duplicate, a range past W, a hole and an overlap
 * that together still sum to W, and a short or empty record fail. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "runtime/config/coverage.h"

/* ok(W, off0, len0, off1, len1, ..., -1): the verdict on these ranges. */
static int ok(uint64_t W, ...)
{
	struct plb__coverage c = {0};
	va_list ap;
	va_start(ap, W);
	for (;;) {
		long long off = va_arg(ap, long long);
		if (off < 0)
			break;
		long long len = va_arg(ap, long long);
		assert_int_equal(plb__coverage_add(&c, (uint64_t)off, (uint64_t)len), 0);
	}
	va_end(ap);
	int r = plb__coverage_ok(&c, W);
	plb__coverage_fini(&c);
	return r;
}

static void test_exact(void **state)
{
	assert_true(ok(10, 0LL, 10LL, -1LL));
	assert_true(ok(10, 0LL, 3LL, 3LL, 7LL, -1LL));
	assert_true(ok(10, 6LL, 4LL, 0LL, 2LL, 2LL, 4LL, -1LL));     /* unsorted */
	assert_true(ok(0, -1LL));                                    /* nothing to do */
	/* an empty block anywhere covers nothing and breaks nothing */
	assert_true(ok(10, 5LL, 5LL, 5LL, 0LL, 0LL, 5LL, 0LL, 0LL, 10LL, 0LL, -1LL));
}

static void test_holes_and_overlaps(void **state)
{
	assert_false(ok(10, -1LL));                                  /* nothing came back */
	assert_false(ok(10, 0LL, 9LL, -1LL));                        /* short at the end */
	assert_false(ok(10, 1LL, 9LL, -1LL));                        /* a hole at 0 */
	assert_false(ok(10, 0LL, 4LL, 5LL, 5LL, -1LL));              /* a hole inside */
	assert_false(ok(10, 0LL, 6LL, 5LL, 5LL, -1LL));              /* an overlap */
	assert_false(ok(10, 0LL, 10LL, 0LL, 10LL, -1LL));            /* all twice */
	assert_false(ok(10, 0LL, 5LL, 5LL, 5LL, 5LL, 5LL, -1LL));    /* a duplicate */
	assert_false(ok(10, 0LL, 11LL, -1LL));                       /* past W */
	assert_false(ok(10, 0LL, 10LL, 10LL, 1LL, -1LL));            /* a range past W */
	/* a hole [4, 5) and an overlap [6, 7): still 10 units in all */
	assert_false(ok(10, 0LL, 4LL, 5LL, 2LL, 6LL, 4LL, -1LL));
	assert_false(ok(10, 6LL, 4LL, 5LL, 2LL, 0LL, 4LL, -1LL));
	/* past W by so much that the end wraps around 2^64 to W */
	assert_false(ok(4, 0LL, 5LL, 5LL, -1LL, -1LL));
}

/* Many blocks (the record grows), shuffled: exact passes; one unit moved
 * from one block to the next (a hole and an overlap) fails. */
static void test_many(void **state)
{
	enum { N = 10000 };
	static uint64_t perm[N];
	for (uint64_t i = 0; i < N; i++)
		perm[i] = i;
	uint64_t s = 88172645463325252ULL;
	for (int i = N - 1; i > 0; i--) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		uint64_t j = s % (uint64_t)(i + 1), t = perm[i];
		perm[i] = perm[j], perm[j] = t;
	}
	for (int bad = 0; bad < 2; bad++) {
		struct plb__coverage c = {0};
		for (int i = 0; i < N; i++) {
			uint64_t b = perm[i], off = 3 * b, len = 3;
			if (bad && b == 4321)
				off++;          /* [12963, 12966) becomes [12964, 12967) */
			assert_int_equal(plb__coverage_add(&c, off, len), 0);
		}
		assert_int_equal(plb__coverage_ok(&c, 3 * N), !bad);
		plb__coverage_fini(&c);
		/* a record emptied by fini is as new */
		assert_int_equal(plb__coverage_add(&c, 0, 5), 0);
		assert_true(plb__coverage_ok(&c, 5));
		plb__coverage_fini(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_holes_and_overlaps),
		cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
