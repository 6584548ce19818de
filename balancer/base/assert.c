/* See assert.h. */
#include <stdio.h>
#include <stdlib.h>

#include "balancer/base/assert.h"

_Noreturn void plb__assert_fail(const char *cond, const char *file, int line)
{
	fprintf(stderr, "plb: internal error: %s:%d: assertion '%s' failed\n",
		file, line, cond);
	abort();
}
