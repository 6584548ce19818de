/* plb-kmeans's kernel for plb (struct plb_kernel): each block labels its
 * points with their nearest centroids (the run's shared data) and adds
 * them into its accumulator, which combine merges (a reduction). */
#include <stdio.h>

#include "balancer/base/clock.h"
#include "kernels/kmeans/kmeans.h"
#include "plb.h"

static int km_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	(void)pu;
	const struct plb__km_shared *h = shared;
	if (bytes < sizeof *h || h->k < 1 || h->d < 1 || bytes != plb__km_shared_bytes(h->k, h->d))
		return PLB_EINVAL;
	*state = (void *)shared;
	return 0;
}

static int km_cpu_run(void *state, const struct plb_block *b)
{
	return plb__km_cpu(state, b->in, (size_t)b->units, b->out, b->acc);
}

static void km_combine(void *acc, const void *part, size_t bytes)
{
	plb__km_combine(acc, part, bytes);
}

#ifdef PLB_HAVE_CUDA
static int km_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			void **state)
{
	char err[256];
	int rc = km_init(pu, shared, bytes, state);
	if (!rc && (rc = plb__km_cuda_create(pu->device, shared, (struct plb__km_cuda **)state, err,
					     sizeof err)))
		fprintf(stderr, "plb-kmeans: %s: %s\n", pu->name, err);
	return rc;
}

static int km_cuda_run(void *state, const struct plb_block *b)
{
	double t0 = plb__now();
	int rc = plb__km_cuda_run(state, b->in, (size_t)b->units, b->out, b->acc);
	if (!rc) {
		struct plb__phase_times ph;
		plb__km_cuda_times(state, &ph);
		plb__report_phases(b, plb__now() - t0, &ph);
	}
	return rc;
}

static void km_cuda_fini(void *state)
{
	plb__km_cuda_destroy(state);
}
#endif

#ifdef PLB_HAVE_OPENCL
static int km_cl_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	char err[256];
	int rc = km_init(pu, shared, bytes, state);
	if (!rc && (rc = plb__km_cl_create(pu->cl_context, pu->cl_device, shared,
					   (struct plb__km_cl **)state, err, sizeof err)))
		fprintf(stderr, "plb-kmeans: %s: %s\n", pu->name, err);
	return rc;
}

static int km_cl_run(void *state, const struct plb_block *b)
{
	double t0 = plb__now();
	int rc = plb__km_cl_run(state, b->in, (size_t)b->units, b->out, b->acc);
	if (!rc) {
		struct plb__phase_times ph;
		plb__km_cl_times(state, &ph);
		plb__report_phases(b, plb__now() - t0, &ph);
	}
	return rc;
}

static void km_cl_fini(void *state)
{
	plb__km_cl_destroy(state);
}
#endif

const struct plb_kernel plb__km_kernel = {
	PLB_INIT,
	.name = "kmeans",
	.cpu = {.init = km_init, .run = km_cpu_run},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = km_cuda_init, .run = km_cuda_run, .fini = km_cuda_fini},
#endif
#ifdef PLB_HAVE_OPENCL
	.opencl = {.init = km_cl_init, .run = km_cl_run, .fini = km_cl_fini},
#endif
	.combine = km_combine,
};
