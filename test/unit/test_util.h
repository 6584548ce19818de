/* Helpers shared by the cmocka tests. */
#ifndef PLB_TEST_UTIL_H
#define PLB_TEST_UTIL_H

#include <math.h>

/* cmocka 1.1 compares floats only in single precision. */
#define assert_near(a, b, eps) do {                                          \
	double a_ = (a), b_ = (b);                                            \
	if (!(fabs(a_ - b_) <= (eps)))                                        \
		fail_msg("%s = %.17g, expected %.17g +- %g", #a, a_, b_,       \
			 (double)(eps));                                      \
} while (0)

#endif
