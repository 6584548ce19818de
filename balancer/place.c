/* Placement of grants on resident input: a node keeps the input it was sent
 * in earlier runs of a domain, so a block whose units its node holds costs
 * no transfer. Which units a grant takes is the core's choice (policies
 * choose only how many), so placement is decided here, for every policy:
 *
 *   - a PU in a group (its node) gets free units its group holds: the
 *     first free held stretch as long as the grant, else the longest one;
 *   - a grant longer than that stretch is cut to it when its model says
 *     the cut costs under PLACE_COST of the block's predicted time (one
 *     more block's fixed cost: E(l) + E(want - l) - E(want)), so that cuts
 *     add at most that share to any PU's time and hence to the makespan;
 *     otherwise it starts there and runs on past the held units (the
 *     caller sends only what the node lacks);
 *   - a PU whose group holds no free units takes the lowest, as without
 *     placement. Without any group every grant is as it was. */
#include <stdlib.h>

#include "balancer/internal.h"

#define PLACE_COST 0.01

int plb__balancer_group(plb__balancer_t *b, int pu, int group)
{
	if (!b || pu < 0 || pu >= b->n || group < -1 || group >= b->n)
		return PLB_EINVAL;
	if (!b->grp) {
		b->grp = malloc((size_t)b->n * sizeof *b->grp);
		b->held = calloc((size_t)b->n, sizeof *b->held);
		if (!b->grp || !b->held) {
			plb__place_free(b);
			return PLB_ENOMEM;
		}
		for (int i = 0; i < b->n; i++)
			b->grp[i] = -1;
	}
	b->grp[pu] = group;
	return 0;
}

int plb__balancer_hold(plb__balancer_t *b, int group, uint64_t off, uint64_t units)
{
	if (!b || !b->held || group < 0 || group >= b->n || units == 0 || off > b->W ||
	    units > b->W - off)
		return PLB_EINVAL;
	return plb__ranges_add(&b->held[group], off, units);
}

void plb__place_free(struct plb__balancer *b)
{
	if (b->held)
		for (int i = 0; i < b->n; i++)
			plb__ranges_free(&b->held[i]);
	free(b->held);
	free(b->grp);
	b->held = NULL;
	b->grp = NULL;
}

/* Cutting a grant of want units to l costs under PLACE_COST of its time. */
static int cheap_cut(const struct plb__balancer *b, int pu, uint64_t l, uint64_t want)
{
	if (!b->model || !plb__model_ready(&b->model[pu]))
		return 0;
	const struct plb__model *m = &b->model[pu];
	double whole = plb__model_eval(m, (double)want);
	double extra = plb__model_eval(m, (double)l) + plb__model_eval(m, (double)(want - l)) - whole;
	return whole > 0 && extra <= PLACE_COST * whole;
}

int plb__place(const struct plb__balancer *b, int pu, uint64_t *want, uint64_t *at)
{
	if (!b->grp || b->grp[pu] < 0)
		return -1;
	const struct plb__ranges *h = &b->held[b->grp[pu]];
	int best = -1, j = 0;
	uint64_t bs = 0, bl = 0;
	/* free ranges and held ones, both sorted: their intersections in order */
	for (int i = 0; i < b->nfree && bl < *want; i++) {
		const struct plb__range *f = &b->free[i];
		uint64_t fe = f->off + f->len;
		while (j < h->n && h->r[j].off + h->r[j].len <= f->off)
			j++;
		for (int k = j; k < h->n && h->r[k].off < fe && bl < *want; k++) {
			uint64_t s = h->r[k].off > f->off ? h->r[k].off : f->off;
			uint64_t he = h->r[k].off + h->r[k].len, e = he < fe ? he : fe;
			if (e - s > bl) {
				best = i;
				bs = s;
				bl = e - s;
			}
		}
	}
	if (best < 0)
		return -1;
	if (bl < *want && bl >= (uint64_t)b->p.min_block && cheap_cut(b, pu, bl, *want))
		*want = bl;
	/* free units before it too few to stay free go with it */
	uint64_t lead = bs - b->free[best].off;
	if (lead && lead < (uint64_t)b->p.min_block) {
		bs -= lead;
		*want += lead;
	}
	*at = bs;
	return best;
}
