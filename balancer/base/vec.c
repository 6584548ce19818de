/* A growing array and a binary heap on one (see vec.h). */
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

static void swap(char *a, char *b, size_t sz)
{
	char t[64];
	memcpy(t, a, sz);
	memcpy(a, b, sz);
	memcpy(b, t, sz);
}

int plb__heap_push(void *v, size_t *n, size_t *cap, size_t sz, const void *x,
		   int (*before)(const void *, const void *))
{
	if (sz > 64 || plb__push(v, n, cap, sz, x))
		return PLB_ENOMEM;
	char *a = *(char **)v;
	for (size_t i = *n - 1; i > 0;) {
		size_t up = (i - 1) / 2;
		if (!before(a + i * sz, a + up * sz))
			break;
		swap(a + i * sz, a + up * sz, sz);
		i = up;
	}
	return 0;
}

void plb__heap_pop(void *v, size_t *n, size_t sz, void *top,
		   int (*before)(const void *, const void *))
{
	char *a = *(char **)v;
	memcpy(top, a, sz);
	memcpy(a, a + --*n * sz, sz);
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && before(a + l * sz, a + m * sz))
			m = l;
		if (r < *n && before(a + r * sz, a + m * sz))
			m = r;
		if (m == i)
			break;
		swap(a + i * sz, a + m * sz, sz);
		i = m;
	}
}
