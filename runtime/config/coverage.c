/* See coverage.h. */
#include <stdlib.h>

#include "runtime/config/coverage.h"

int plb__coverage_add(struct plb__coverage *c, uint64_t off, uint64_t len)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 4096;
		struct plb__range *r = realloc(c->r, cap * sizeof *r);
		if (!r)
			return PLB_ENOMEM;
		c->r = r;
		c->cap = cap;
	}
	c->r[c->n++] = (struct plb__range){off, len};
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct plb__range *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

int plb__coverage_ok(struct plb__coverage *c, uint64_t W)
{
	if (c->n)
		qsort(c->r, c->n, sizeof *c->r, cmp_range);
	uint64_t next = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (!c->r[i].len)
			continue;       /* covers nothing, wherever it sorted */
		if (c->r[i].off != next || c->r[i].len > W - next)
			return 0;       /* a hole, an overlap, or past W */
		next += c->r[i].len;
	}
	return next == W;
}

void plb__coverage_fini(struct plb__coverage *c)
{
	free(c->r);
	c->r = NULL;
	c->n = c->cap = 0;
}
