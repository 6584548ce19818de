/* A set of units kept as sorted, disjoint, non-adjacent ranges: what a node
 * holds of a domain's input (resident input), on the master and in the
 * balancer's placement. */
#ifndef PLB_RANGES_H
#define PLB_RANGES_H

#include <stdint.h>

#include "balancer/balancer.h"

struct plb__ranges {
	struct plb__range *r;
	int n, cap;
	uint64_t units;         /* in all of them */
};

/* Adds [off, off + len), which may overlap or touch what is there.
 * Returns 0 or PLB_ENOMEM (then s is unchanged). */
PLB_WUR int plb__ranges_add(struct plb__ranges *s, uint64_t off, uint64_t len);
/* The index of the first range that ends after off (s->n if none). */
int plb__ranges_find(const struct plb__ranges *s, uint64_t off);
/* The parts of [off, off + len) not in s, in order: fills up to max of
 * them into out (may be NULL when max is 0), their units into *units (may
 * be NULL), and returns how many there are. */
int plb__ranges_gaps(const struct plb__ranges *s, uint64_t off, uint64_t len,
		     struct plb__range *out, int max, uint64_t *units);
/* Empties s (keeping its memory for reuse). */
void plb__ranges_clear(struct plb__ranges *s);
void plb__ranges_free(struct plb__ranges *s);

#endif
