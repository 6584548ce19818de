/* plb-bs's kernel for plb (struct plb_kernel): options drawn where they
 * are priced (struct plb__bs_shared's seed) or read from the block's
 * input; a GPU draws them on the host, then prices them (bs_cuda.cu), an
 * OpenCL device with doubles draws and prices them (bs_opencl.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "kernels/bs/bs.h"
#include "plb.h"

static int bs_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	(void)pu;
	if (bytes != sizeof(struct plb__bs_shared))
		return PLB_EINVAL;
	*state = (void *)shared;
	return 0;
}

static int bs_cpu_run(void *state, const struct plb_block *b)
{
	const struct plb__bs_shared *sh = state;
	if (sh->drawn)
		return plb__bs_cpu_drawn(sh->prec, sh->seed, b->offset, b->out, (size_t)b->units);
	return plb__bs_cpu(sh->prec, b->in, b->out, (size_t)b->units);
}

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
/* A device's state: its queue or stream and buffers (c: a struct
 * plb__bs_cuda or plb__bs_cl), and for drawn options a host buffer they
 * are drawn into before they are copied over. */
struct bs_dev {
	void *c;
	int opencl;             /* c is a struct plb__bs_cl */
	struct plb__bs_shared sh;
	void *opts;
	size_t cap;             /* options opts holds */
};

static int dev_init(const void *shared, size_t bytes, struct bs_dev **state)
{
	struct bs_dev *g;
	*state = NULL;
	if (bytes != sizeof g->sh)
		return PLB_EINVAL;
	if (!(g = calloc(1, sizeof *g)))
		return PLB_ENOMEM;
	memcpy(&g->sh, shared, sizeof g->sh);
	*state = g;
	return 0;
}

/* Block b's options: its input, or drawn into g->opts. */
static int dev_input(struct bs_dev *g, const struct plb_block *b, const void **in)
{
	size_t n = (size_t)b->units;
	*in = b->in;
	if (!g->sh.drawn)
		return 0;
	if (n > g->cap) {
		void *o = realloc(g->opts, n * plb__bs_in_unit(g->sh.prec));
		if (!o)
			return PLB_ENOMEM;
		g->opts = o;
		g->cap = n;
	}
	plb__bs_draw(g->sh.prec, g->opts, b->offset, n, g->sh.seed);
	*in = g->opts;
	return 0;
}

/* Prices n options on g's device (CUDA or OpenCL, as g->opencl says);
 * its phases into *ph. */
static int dev_price(struct bs_dev *g, const void *in, void *out, size_t n,
		     struct plb__phase_times *ph)
{
	int rc = PLB_EINVAL;
#ifdef PLB_HAVE_CUDA
	if (!g->opencl && !(rc = plb__bs_cuda_run(g->c, in, out, n)))
		plb__bs_cuda_times(g->c, ph);
#endif
#ifdef PLB_HAVE_OPENCL
	if (g->opencl && !(rc = plb__bs_cl_run(g->c, in, out, n)))
		plb__bs_cl_times(g->c, ph);
#endif
	return rc;
}

static int dev_run(void *state, const struct plb_block *b)
{
	struct bs_dev *g = state;
	const void *in;
	struct plb__phase_times ph;
	double t0 = plb__now();
	int rc;
#ifdef PLB_HAVE_OPENCL
	if (g->opencl && g->sh.drawn && plb__bs_cl_draws(g->c)) {   /* drawn on the device */
		if (!(rc = plb__bs_cl_run_drawn(g->c, g->sh.seed, b->offset, b->out, (size_t)b->units))) {
			plb__bs_cl_times(g->c, &ph);
			plb__report_phases(b, plb__now() - t0, &ph);
		}
		return rc;
	}
#endif
	rc = dev_input(g, b, &in);
	t0 = plb__now();
	if (!rc && !(rc = dev_price(g, in, b->out, (size_t)b->units, &ph)))
		plb__report_phases(b, plb__now() - t0, &ph);
	return rc;
}

static void dev_fini(void *state)
{
	struct bs_dev *g = state;
#ifdef PLB_HAVE_CUDA
	if (!g->opencl)
		plb__bs_cuda_destroy(g->c);
#endif
#ifdef PLB_HAVE_OPENCL
	if (g->opencl)
		plb__bs_cl_destroy(g->c);
#endif
	free(g->opts);
	free(g);
}

/* The end of a class's init: its device state made (rc 0), or g freed. */
static int dev_made(const struct plb_pu_info *pu, struct bs_dev *g, int rc, const char *err,
		    void **state)
{
	if (rc && g) {
		fprintf(stderr, "plb-bs: %s: %s\n", pu->name, err);
		free(g);
		g = NULL;
	}
	*state = g;
	return rc;
}
#endif

#ifdef PLB_HAVE_CUDA
static int bs_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			void **state)
{
	char err[256] = "";
	struct bs_dev *g;
	int rc = dev_init(shared, bytes, &g);
	if (!rc)
		rc = plb__bs_cuda_create(pu->device, g->sh.prec, (struct plb__bs_cuda **)&g->c, err,
					 sizeof err);
	return dev_made(pu, g, rc, err, state);
}
#endif

#ifdef PLB_HAVE_OPENCL
static int bs_cl_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **state)
{
	char err[256] = "";
	struct bs_dev *g;
	int rc = dev_init(shared, bytes, &g);
	if (!rc) {
		g->opencl = 1;
		rc = plb__bs_cl_create(pu->cl_context, pu->cl_device, g->sh.prec,
				       (struct plb__bs_cl **)&g->c, err, sizeof err);
	}
	return dev_made(pu, g, rc, err, state);
}
#endif

const struct plb_kernel plb__bs_kernel = {
	PLB_INIT,
	.name = "bs",
	.cpu = {.init = bs_init, .run = bs_cpu_run},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = bs_cuda_init, .run = dev_run, .fini = dev_fini},
#endif
#ifdef PLB_HAVE_OPENCL
	.opencl = {.init = bs_cl_init, .run = dev_run, .fini = dev_fini},
#endif
};
