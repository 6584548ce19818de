/* plb-grn's kernel for plb (struct plb_kernel): each block scores every
 * subset of predictors for its target genes from the shared expression
 * data, on the CPU, a GPU (grn_cuda.cu) or an OpenCL device
 * (grn_opencl.c). */
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

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
/* A device's state: its CUDA or OpenCL kernel (the device holds its own
 * copy of the tables). */
struct grn_dev {
	void *k;
	int opencl;             /* k is a struct plb__grn_cl, else a struct plb__grn_cuda */
};

static int dev_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, int opencl,
		    void **state)
{
	char err[320] = "";
	struct grn_state *st;
	struct grn_dev *g = calloc(1, sizeof *g);
	int rc = g ? grn_init(pu, shared, bytes, (void **)&st) : PLB_ENOMEM;
	if (rc) {
		free(g);
		return rc;
	}
	g->opencl = opencl;
	rc = PLB_EDEVICE;
#ifdef PLB_HAVE_CUDA
	if (!opencl)
		rc = plb__grn_cuda_create(pu->device, shared, &st->tab, (struct plb__grn_cuda **)&g->k,
					  err, sizeof err);
#endif
#ifdef PLB_HAVE_OPENCL
	if (opencl)
		rc = plb__grn_cl_create(pu->cl_context, pu->cl_device, shared, &st->tab,
					(struct plb__grn_cl **)&g->k, err, sizeof err);
#endif
	grn_fini(st);
	if (rc) {
		fprintf(stderr, "plb-grn: %s: %s\n", pu->name, err);
		free(g);
		g = NULL;
	}
	*state = g;
	return rc;
}

static int dev_run(void *state, const struct plb_block *b)
{
	struct grn_dev *g = state;
	struct plb__phase_times ph = {0, 0, 0};
	double t0 = plb__now();
	int rc = PLB_EDEVICE;
#ifdef PLB_HAVE_CUDA
	if (!g->opencl && !(rc = plb__grn_cuda_run(g->k, b->offset, (size_t)b->units, b->out)))
		plb__grn_cuda_times(g->k, &ph);
#endif
#ifdef PLB_HAVE_OPENCL
	if (g->opencl && !(rc = plb__grn_cl_run(g->k, b->offset, (size_t)b->units, b->out)))
		plb__grn_cl_times(g->k, &ph);
#endif
	if (!rc)
		plb__report_phases(b, plb__now() - t0, &ph);
	return rc;
}

static void dev_fini(void *state)
{
	struct grn_dev *g = state;
	if (!g)
		return;
#ifdef PLB_HAVE_CUDA
	if (!g->opencl)
		plb__grn_cuda_destroy(g->k);
#endif
#ifdef PLB_HAVE_OPENCL
	if (g->opencl)
		plb__grn_cl_destroy(g->k);
#endif
	free(g);
}
#endif

#ifdef PLB_HAVE_CUDA
static int grn_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			 void **state)
{
	return dev_init(pu, shared, bytes, 0, state);
}
#endif

#ifdef PLB_HAVE_OPENCL
static int grn_cl_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
		       void **state)
{
	return dev_init(pu, shared, bytes, 1, state);
}
#endif

const struct plb_kernel plb__grn_kernel = {
	PLB_INIT,
	.name = "grn",
	.cpu = {.init = grn_init, .run = grn_cpu_run, .fini = grn_fini},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = grn_cuda_init, .run = dev_run, .fini = dev_fini},
#endif
#ifdef PLB_HAVE_OPENCL
	.opencl = {.init = grn_cl_init, .run = dev_run, .fini = dev_fini},
#endif
};
