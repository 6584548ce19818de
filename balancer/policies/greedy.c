/* greedy: equal blocks of greedy_block units to whichever PU is idle. The
 * simplest self-scheduling baseline of the papers. */
#include "balancer/internal.h"

static int greedy_next(struct plb__balancer *b, int pu, double now,
		       double *units, enum plb__grant_kind *kind, int *step)
{
	*units = b->p.greedy_block;
	*kind = PLB__GRANT_REGULAR;
	*step = 0;
	return PLB__NEXT_GRANT;
}

const struct plb__policy plb__policy_greedy = {
	.name = "greedy",
	.doc = "equal blocks of greedy_block units to whichever PU is idle",
	.next = greedy_next,
};
