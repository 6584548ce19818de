/* plb-grn's kernel for plb (struct plb_kernel): each block scores every
 * subset of predictors for its target genes from the shared expression
 * data, on the CPU or (grn_cuda.cu) a GPU. */
#include <stdio.h>
#include <stdlib.h>

#include "balancer/base/clock.h"
#include "kernels/grn/grn.h"
#include "plb.h"

/* A PU's state: the shared data and the score's tables. */
struct grn_state {
	const void *shared;
	struct plb__grn_tables tab;
};

static int grn_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	(void)pu;
	if (plb__grn_shared_ok(shared, bytes))
		return PLB_EINVAL;
	const struct plb__grn_shared *h = shared;
	struct grn_state *st = calloc(1, sizeof *st);
	if (!st || plb__grn_tables_make(h->s, h->alpha, &st->tab)) {
		free(st);
		return PLB_ENOMEM;
	}
	st->shared = shared;
	*state = st;
	return 0;
}

static int grn_cpu_run(void *state, const struct plb_block *b)
{
	const struct grn_state *st = state;
	return plb__grn_cpu(st->shared, &st->tab, b->offset, (size_t)b->units, b->out);
}

static void grn_fini(void *state)
{
	struct grn_state *st = state;
	if (st)
		plb__grn_tables_free(&st->tab);
	free(st);
}

#ifdef PLB_HAVE_CUDA
static int grn_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			 void **state)
{
	char err[256];
	struct grn_state *st;
	int rc = grn_init(pu, shared, bytes, (void **)&st);
	if (rc)
		return rc;
	rc = plb__grn_cuda_create(pu->device, shared, &st->tab, (struct plb__grn_cuda **)state, err,
				  sizeof err);
	if (rc)
		fprintf(stderr, "plb-grn: %s: %s\n", pu->name, err);
	grn_fini(st);   /* the device holds its own copy of the tables */
	return rc;
}

static int grn_cuda_run(void *state, const struct plb_block *b)
{
	double t0 = plb__now();
	int rc = plb__grn_cuda_run(state, b->offset, (size_t)b->units, b->out);
	if (!rc) {
		struct plb__phase_times ph;
		plb__grn_cuda_times(state, &ph);
		plb__report_phases(b, plb__now() - t0, &ph);
	}
	return rc;
}

static void grn_cuda_fini(void *state)
{
	plb__grn_cuda_destroy(state);
}
#endif

const struct plb_kernel plb__grn_kernel = {
	PLB_INIT,
	.name = "grn",
	.cpu = {.init = grn_init, .run = grn_cpu_run, .fini = grn_fini},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = grn_cuda_init, .run = grn_cuda_run, .fini = grn_cuda_fini},
#endif
};
