/* Helpers shared by the cmocka tests (and, for test_urand, the benches). */
#ifndef PLB_TEST_UTIL_H
#define PLB_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

/* text in a new file /tmp/plb-test-WHAT-XXXXXX; its path (static: the
 * next call reuses it), or NULL. */
static inline char *test_write_tmp(const char *what, const char *text)
{
	static char path[96];
	snprintf(path, sizeof path, "/tmp/plb-test-%s-XXXXXX", what);
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f || fputs(text, f) < 0 || fclose(f))
		return NULL;
	return path;
}

#endif
