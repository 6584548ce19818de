/* plb-bs's kernel for plb (struct plb_kernel): options drawn where they
 * are priced (struct plb__bs_shared's seed) or read from the block's
 * input; a GPU draws them on the host, then prices them (bs_cuda.cu). */
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

#ifdef PLB_HAVE_CUDA
/* A GPU's state: its stream and buffers, and for drawn options a host
 * buffer they are drawn into before they are copied over. */
struct bs_gpu {
	struct plb__bs_cuda *c;
	struct plb__bs_shared sh;
	void *opts;
	size_t cap;             /* options opts holds */
};

static int bs_cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes,
			void **state)
{
	char err[256];
	struct bs_gpu *g;
	if (bytes != sizeof g->sh)
		return PLB_EINVAL;
	if (!(g = calloc(1, sizeof *g)))
		return PLB_ENOMEM;
	memcpy(&g->sh, shared, sizeof g->sh);
	int rc = plb__bs_cuda_create(pu->device, g->sh.prec, &g->c, err, sizeof err);
	if (rc) {
		fprintf(stderr, "plb-bs: %s: %s\n", pu->name, err);
		free(g);
		return rc;
	}
	*state = g;
	return 0;
}

static int bs_cuda_run(void *state, const struct plb_block *b)
{
	struct bs_gpu *g = state;
	size_t n = (size_t)b->units;
	const void *in = b->in;
	if (g->sh.drawn) {
		if (n > g->cap) {
			void *o = realloc(g->opts, n * plb__bs_in_unit(g->sh.prec));
			if (!o)
				return PLB_ENOMEM;
			g->opts = o;
			g->cap = n;
		}
		plb__bs_draw(g->sh.prec, g->opts, b->offset, n, g->sh.seed);
		in = g->opts;
	}
	double t0 = plb__now();
	int rc = plb__bs_cuda_run(g->c, in, b->out, n);
	if (!rc) {
		struct plb__phase_times ph;
		plb__bs_cuda_times(g->c, &ph);
		plb__report_phases(b, plb__now() - t0, &ph);
	}
	return rc;
}

static void bs_cuda_fini(void *state)
{
	struct bs_gpu *g = state;
	plb__bs_cuda_destroy(g->c);
	free(g->opts);
	free(g);
}
#endif

const struct plb_kernel plb__bs_kernel = {
	PLB_INIT,
	.name = "bs",
	.cpu = {.init = bs_init, .run = bs_cpu_run},
#ifdef PLB_HAVE_CUDA
	.cuda = {.init = bs_cuda_init, .run = bs_cuda_run, .fini = bs_cuda_fini},
#endif
};
