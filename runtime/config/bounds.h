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

#include "runtime/config/devmodel.h"

/* m[i] is PU i's model. Returns INFINITY when W cannot be done at all. */
double plb__bound_lower(const struct plb__devmodel *const *m, int n, double W,
			int overlap);
double plb__bound_eq(const struct plb__devmodel *const *m, int n, double W);

#endif
