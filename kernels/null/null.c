/* plb-null's kernel for plb (struct plb_kernel): it computes nothing but
 * counts, through a reduction, each block's units and the sum of their
 * indices, on a CPU or a GPU's PU (the tally lives in host memory). */
#include <stdatomic.h>

#include "kernels/null/null.h"
#include "plb.h"

static int null_run(void *state, const struct plb_block *b)
{
	(void)state;
	struct plb__null_tally *t = b->acc;
	uint64_t u = b->units;
	t->units += u;
	/* offset + (offset + 1) + ... + (offset + u - 1), halving the even factor */
	t->index_sum += u % 2 ? u * b->offset + u * ((u - 1) / 2) : u * b->offset + (u / 2) * (u - 1);
	return 0;
}

static void null_combine(void *acc, const void *part, size_t bytes)
{
	(void)bytes;
	struct plb__null_tally *a = acc;
	const struct plb__null_tally *p = part;
	a->units += p->units;
	a->index_sum += p->index_sum;
}

const struct plb_kernel plb__null_kernel = {
	PLB_INIT,
	.name = "null",
	.cpu = {.run = null_run},
	.cuda = {.run = null_run},      /* the tally lives in host memory */
	.combine = null_combine,
};

/* A pipeline's task: one more task of its instance (its output, a count
 * that tasks on other PUs may add to at once). */
static int null_task(void *state, const struct plb_block *b)
{
	(void)state;
	atomic_fetch_add((_Atomic uint64_t *)b->out, 1);
	return 0;
}

const struct plb_kernel plb__null_task_kernel = {
	PLB_INIT,
	.name = "null.task",
	.cpu = {.run = null_task},
	.cuda = {.run = null_task},     /* the count lives in host memory */
};
