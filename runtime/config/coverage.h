/* Which ranges of the domain really came back: recorded from the blocks the
 * PUs completed, independently of the balancer's own counts, and checked at
 * the end (every unit of [0, W) exactly once). Used by plbsim and the
 * runtime. */
#ifndef PLB_COVERAGE_H
#define PLB_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

#include "plb_errors.h"
#include "balancer/balancer.h"

struct plb__coverage {
	struct plb__range *r;
	size_t n, cap;
};

/* Record [off, off + len). Returns 0 or PLB_ENOMEM. */
PLB_WUR int plb__coverage_add(struct plb__coverage *c, uint64_t off, uint64_t len);
/* Every unit of [0, W) recorded exactly once? (Sorts the record.) */
int plb__coverage_ok(struct plb__coverage *c, uint64_t W);
void plb__coverage_fini(struct plb__coverage *c);

#endif
