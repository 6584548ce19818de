/* The phases of one block on a GPU, timed by the device (CUDA events
 * around each on the PU's stream): its input copied to the device, the
 * kernel, its output copied back, in seconds. Where a block's chunks
 * overlap on two streams (plb-mm), each is the sum over its chunks, so
 * the three may add up to more than the block's wall time. Plain C: the
 * kernels' C code and the benchmarks read it. */
#ifndef PLB_KERNELS_PHASE_TIMES_H
#define PLB_KERNELS_PHASE_TIMES_H

#include "plb.h"

struct plb__phase_times {
	double in_s, run_s, out_s;
};

/* A CUDA call that ran block b took `wall` seconds on the host, of which
 * its kernels took t->run_s on the device: the rest (copies, staging,
 * synchronisation) is what plb fits as the block's transfer time
 * (plb_report_copies). */
static inline void plb__report_phases(const struct plb_block *b, double wall,
				      const struct plb__phase_times *t)
{
	plb_report_copies(b, wall > t->run_s ? wall - t->run_s : 0);
}

#endif
