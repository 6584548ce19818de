/* The phases of one block on a GPU, timed by the device (CUDA events
 * around each on the PU's stream): its input copied to the device, the
 * kernel, its output copied back, in seconds. Where a block's chunks
 * overlap on two streams (plb-mm), each is the sum over its chunks, so
 * the three may add up to more than the block's wall time. Plain C: the
 * kernels' C code and the benchmarks read it. */
#ifndef PLB_KERNELS_PHASE_TIMES_H
#define PLB_KERNELS_PHASE_TIMES_H

struct plb__phase_times {
	double in_s, run_s, out_s;
};

#endif
