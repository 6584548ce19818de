/* The pool of free units (balancer.h's ranges not granted): a sorted,
 * merged list of free ranges that grants are cut from and lost or
 * released ranges go back to. */
#include <stdlib.h>
#include <string.h>

#include "balancer/internal.h"

struct plb__range plb__pool_cut(struct plb__balancer *b, int fi, uint64_t at, uint64_t want)
{
	struct plb__range *r = &b->free[fi];
	PLB_ASSERT(want > 0 && at >= r->off && at < r->off + r->len);
	uint64_t before = at - r->off, room = r->len - before;
	uint64_t u = want < room ? want : room;
	if (room - u < (uint64_t)b->p.min_block)
		u = room;
	uint64_t after = room - u;
	if (before && after) {
		PLB_ASSERT(b->nfree < b->capfree);
		memmove(&b->free[fi + 2], &b->free[fi + 1], (size_t)(b->nfree - fi - 1) * sizeof *b->free);
		b->free[fi + 1] = (struct plb__range){at + u, after};
		r->len = before;
		b->nfree++;
	} else if (before) {
		r->len = before;
	} else if (after) {
		r->off += u;
		r->len = after;
	} else {
		memmove(&b->free[fi], &b->free[fi + 1], (size_t)(b->nfree - fi - 1) * sizeof *b->free);
		b->nfree--;
	}
	b->pool -= u;
	b->granted += u;
	return (struct plb__range){at, u};
}

int plb__pool_room(struct plb__balancer *b)
{
	if (b->nfree < b->capfree)
		return 0;
	int cap = b->capfree * 2;
	struct plb__range *nf = realloc(b->free, (size_t)cap * sizeof *nf);
	if (!nf)
		return PLB_ENOMEM;
	b->free = nf;
	b->capfree = cap;
	return 0;
}

int plb__pool_put(struct plb__balancer *b, uint64_t off, uint64_t len)
{
	if (plb__pool_room(b))
		return PLB_ENOMEM;
	int i = 0;
	while (i < b->nfree && b->free[i].off < off)
		i++;
	PLB_ASSERT(i == 0 || b->free[i - 1].off + b->free[i - 1].len <= off);
	PLB_ASSERT(i == b->nfree || off + len <= b->free[i].off);
	memmove(&b->free[i + 1], &b->free[i], (size_t)(b->nfree - i) * sizeof *b->free);
	b->free[i] = (struct plb__range){off, len};
	b->nfree++;
	/* merge with the neighbours */
	if (i + 1 < b->nfree && b->free[i].off + b->free[i].len == b->free[i + 1].off) {
		b->free[i].len += b->free[i + 1].len;
		memmove(&b->free[i + 1], &b->free[i + 2], (size_t)(b->nfree - i - 2) * sizeof *b->free);
		b->nfree--;
	}
	if (i > 0 && b->free[i - 1].off + b->free[i - 1].len == b->free[i].off) {
		b->free[i - 1].len += b->free[i].len;
		memmove(&b->free[i], &b->free[i + 1], (size_t)(b->nfree - i - 1) * sizeof *b->free);
		b->nfree--;
	}
	b->pool += len;
	b->granted -= len;
	return 0;
}
