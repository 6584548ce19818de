/* plb-mm's kernel for plb (struct plb_kernel): a CPU team computes C's
 * rows in slabs (.whole), a GPU runs cuBLAS on its own stream (mm_cuda.cu),
 * an OpenCL device CLBlast on its two queues (mm_opencl.c);
 * A is the run's shared data, after struct plb__mm_shared. */
#include <stdio.h>
#include <stdlib.h>

#include "balancer/base/clock.h"
#include "kernels/mm/mm.h"
#include "plb.h"

struct mm_state {
	const struct plb__mm_shared *sh;
	const void *A;
	struct plb__mm_cuda *cuda;
	struct plb__mm_cl *cl;
};

static int mm_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	const struct plb__mm_shared *sh = shared;
	if (bytes < sizeof *sh || sh->n < 1 ||
	    bytes != sizeof *sh + (size_t)sh->n * (size_t)sh->n * plb__mm_elem(sh->prec))
		return PLB_EINVAL;
	struct mm_state *s = calloc(1, sizeof *s);
	if (!s)
		return PLB_ENOMEM;
	s->sh = sh;
	s->A = sh + 1;
	(void)pu;
	*state = s;
	return 0;
}

/* A CPU team's member computes its slab of C's rows over the whole block
 * (.whole below): it reads only its rows of A, where a slab of columns
 * would make every member read all of A (memory-bound for thin blocks).
 * Slabs start at multiples of 16 rows (whole cache lines). */
static int mm_cpu_run(void *state, const struct plb_block *b)
{
	const struct mm_state *s = state;
	int n = s->sh->n, m = b->members > 1 ? b->members : 1;
	int r0 = (int)((int64_t)n * b->member / m) & ~15;
	int r1 = b->member + 1 == m ? n : (int)((int64_t)n * (b->member + 1) / m) & ~15;
	return plb__mm_cpu_rows(s->sh->prec, n, r0, r1 - r0, (int64_t)b->units, s->A, b->in, b->out);
}

static void mm_fini(void *state)
{
	struct mm_state *s = state;
#ifdef PLB_HAVE_CUDA
	if (s)
		plb__mm_cuda_destroy(s->cuda);
#endif
#ifdef PLB_HAVE_OPENCL
	if (s)
		plb__mm_cl_destroy(s->cl);
#endif
	free(s);
}

#ifdef PLB_HAVE_CUDA
static int mm_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			void **state)
{
	char err[256];
	int rc = mm_init(pu, shared, bytes, state);
	if (rc)
		return rc;
	struct mm_state *s = *state;
	rc = plb__mm_cuda_create(pu->device, s->sh->prec, s->sh->n, s->sh->n, &s->cuda, err, sizeof err);
	if (!rc)
		rc = plb__mm_cuda_set_a(s->cuda, s->A);
	if (rc) {
		fprintf(stderr, "plb-mm: %s: %s\n", pu->name, err);
		mm_fini(s);
	}
	return rc;
}

static int mm_cuda_run(void *state, const struct plb_block *b)
{
	struct mm_state *s = state;
	double t0 = plb__now();
	int rc = plb__mm_cuda_run(s->cuda, (int64_t)b->units, b->in, b->out);
	if (!rc) {
		struct plb__phase_times ph;
		plb__mm_cuda_times(s->cuda, &ph);
		plb__report_phases(b, plb__now() - t0, &ph);
	}
	return rc;
}
#endif

#ifdef PLB_HAVE_OPENCL
static int mm_cl_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	char err[256];
	int rc = mm_init(pu, shared, bytes, state);
	if (rc)
		return rc;
	struct mm_state *s = *state;
	rc = plb__mm_cl_create(pu->cl_context, pu->cl_device, s->sh->prec, s->sh->n, s->sh->n, &s->cl,
			       err, sizeof err);
	if (!rc && (rc = plb__mm_cl_set_a(s->cl, s->A)))
		snprintf(err, sizeof err, "cannot copy A to the device");
	if (rc) {
		fprintf(stderr, "plb-mm: %s: %s\n", pu->name, err);
		mm_fini(s);
	}
	return rc;
}

static int mm_cl_run(void *state, const struct plb_block *b)
{
	struct mm_state *s = state;
	double t0 = plb__now();
	int rc = plb__mm_cl_run(s->cl, (int64_t)b->units, b->in, b->out);
	if (!rc) {
		struct plb__phase_times ph;
		plb__mm_cl_times(s->cl, &ph);
		plb__report_phases(b, plb__now() - t0, &ph);
	}
	return rc;
}
#endif

const struct plb_kernel plb__mm_kernel = {
	PLB_INIT,
	.name = "mm",
	.cpu = {.init = mm_init, .run = mm_cpu_run, .fini = mm_fini, .whole = 1},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = mm_cuda_init, .run = mm_cuda_run, .fini = mm_fini},
#endif
#ifdef PLB_HAVE_OPENCL
	.opencl = {.init = mm_cl_init, .run = mm_cl_run, .fini = mm_fini},
#endif
};

static int mm2d_cpu_run(void *state, const struct plb_block *b)
{
	(void)state;
	return plb__mm_gemm_step(b->in, b->member, b->members);
}

#ifdef PLB_HAVE_CUDA
static int mm2d_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	(void)shared;
	(void)bytes;
	char err[256];
	int rc = plb__mm2d_cuda_create(pu->device, (struct plb__mm2d_cuda **)state, err, sizeof err);
	if (rc)
		fprintf(stderr, "plb-mm: %s: %s\n", pu->name, err);
	return rc;
}

static int mm2d_cuda_run(void *state, const struct plb_block *b)
{
	return plb__mm2d_cuda_step(state, b->in);
}

static void mm2d_cuda_fini(void *state)
{
	if (plb__mm2d_cuda_destroy(state))
		fprintf(stderr, "plb-mm: the 2-D product: a slice of C could not be read back from its CUDA device\n");
}
#endif

#ifdef PLB_HAVE_OPENCL
static int mm2d_cl_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	(void)shared;
	(void)bytes;
	char err[256];
	int rc = plb__mm2d_cl_create(pu->cl_context, pu->cl_device, (struct plb__mm2d_cl **)state, err,
				     sizeof err);
	if (rc)
		fprintf(stderr, "plb-mm: %s: %s\n", pu->name, err);
	return rc;
}

static int mm2d_cl_run(void *state, const struct plb_block *b)
{
	return plb__mm2d_cl_step(state, b->in);
}

static void mm2d_cl_fini(void *state)
{
	if (plb__mm2d_cl_destroy(state))
		fprintf(stderr, "plb-mm: the 2-D product: a slice of C could not be read back from its OpenCL device\n");
}
#endif

const struct plb_kernel plb__mm2d_kernel = {
	PLB_INIT,
	.name = "mm2d",
	.cpu = {.run = mm2d_cpu_run, .whole = 1},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = mm2d_cuda_init, .run = mm2d_cuda_run, .fini = mm2d_cuda_fini},
#endif
#ifdef PLB_HAVE_OPENCL
	.opencl = {.init = mm2d_cl_init, .run = mm2d_cl_run, .fini = mm2d_cl_fini},
#endif
};
