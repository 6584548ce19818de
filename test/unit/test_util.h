/* Helpers shared by the cmocka tests (and, for test_urand, the benches). */
#ifndef PLB_TEST_UTIL_H
#define PLB_TEST_UTIL_H

#include <math.h>
#include <stdint.h>

/* Uniform in [0, 1) from a xorshift64 stream: small, and the same data for
 * the same seed everywhere (tests and benches). */
static inline double test_urand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (double)(*s >> 11) / 9007199254740992.0;
}

/* cmocka 1.1 compares floats only in single precision. */
#define assert_near(a, b, eps) do {                                          \
	double a_ = (a), b_ = (b);                                            \
	if (!(fabs(a_ - b_) <= (eps)))                                        \
		fail_msg("%s = %.17g, expected %.17g +- %g", #a, a_, b_,       \
			 (double)(eps));                                      \
} while (0)

#endif
