/* Lower bound T_lb and single-round optimum T_eq of a run from the PUs' true
 * curves (emulated device models), as docs/DESIGN.md defines them:
 *  - T_lb: in a time T a PU runs at most r_p(T_eff) T_eff units, where T_eff
 *    is its base-speed working time up to T (speed changes scale it, a
 *    failure ends it) and r_p(t) = max over block sizes b with E_p(b) <= t of
 *    b / E_p(b). T_lb is the T at which all PUs together could do W.
 *    E = F + G, or max(F, G) when transfers overlap compute (pipeline 2).
 *  - T_eq: each PU one block from t = 0 (speed changes and failure
 *    honoured), sizes chosen so that together they cover W as early as
 *    possible. */
#ifndef PLB_BOUNDS_H
#define PLB_BOUNDS_H

#include "runtime/config/config.h"
#include "runtime/config/devmodel.h"

/* m[i] is PU i's model. Returns INFINITY when W cannot be done at all. */
double plb__bound_lower(const struct plb__devmodel *const *m, int n, double W,
			int overlap);
double plb__bound_eq(const struct plb__devmodel *const *m, int n, double W);

/* What links and couplings add to T_lb (plbsim's [network] link_gbps,
 * [node] link_gbps and couple). In a time T a link carries at most its
 * bandwidth x T bytes each way: a node does at most bw_node T / b units,
 * the cluster bw_master T / b, b the larger of a unit's input and output
 * bytes. A node's coupled PUs do at most what the best subset of them
 * does running together the whole time, each slowed by the rules whose
 * culprits are in the subset (the others idle): the best plan on a subset
 * of the PUs. Subsets are searched up to PLB__BOUND_SUBSET_MAX coupled
 * PUs a node; past that, all of them run coupled. */
#define PLB__BOUND_SUBSET_MAX 12
struct plb__bound_extra {
	double bw_master;               /* bytes per second each way; <= 0: no limit */
	const double *bw_node;          /* per node, the same; NULL: none */
	int nnodes;
	const int *node;                /* each PU's node */
	double in_bytes, out_bytes;     /* of a unit */
	double shared_bytes;            /* to every node with PUs, before its first block */
	const struct plb__couple *couples;      /* victims and culprits index the PUs */
	int ncouple;
};
/* T_lb with x; *link_s gets the links' own bound (the bytes each way over
 * the smaller of the master's bandwidth and the nodes' summed; 0 without
 * links). */
double plb__bound_lower_extra(const struct plb__devmodel *const *m, int n, double W, int overlap,
			      const struct plb__bound_extra *x, double *link_s);

#endif
