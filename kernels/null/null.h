/* plb-null's kernel (null.c): a reduction that counts the units of each
 * block and the sum of their indices, so that a run can check that each
 * unit counted exactly once. */
#ifndef PLB_KERNELS_NULL_H
#define PLB_KERNELS_NULL_H

#include <stdint.h>

/* Units counted and the sum of their indices (mod 2^64). */
struct plb__null_tally {
	uint64_t units, index_sum;
};

/* The kernel "null": cpu and cuda, with combine. */
extern const struct plb_kernel plb__null_kernel;
/* The kernel "null.task", for a pipeline's tasks: each adds one to its
 * instance's output (a uint64_t), so a run can check every task ran once. */
extern const struct plb_kernel plb__null_task_kernel;

#endif
