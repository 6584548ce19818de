/* A growing array (see vec.h). */
#include <stdlib.h>
#include <string.h>

#include "balancer/base/vec.h"

int plb__push(void *v, size_t *n, size_t *cap, size_t sz, const void *x)
{
	char **a = v;
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		char *b = realloc(*a, c * sz);
		if (!b)
			return PLB_ENOMEM;
		*a = b;
		*cap = c;
	}
	memcpy(*a + *n * sz, x, sz);
	(*n)++;
	return 0;
}
