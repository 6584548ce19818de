/* plb-nuclei's kernels: one a pipeline operation, each a cpu class that
 * runs nuclei_run_op on the task's tile (the shared data: struct
 * nuclei_params), and, for the operations a device runs
 * (NUCLEI_DEVICE_OP), an opencl class. */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/nuclei/nuclei.h"

const char *const nuclei_op_names[NUCLEI_NOPS] = {
#define X(ID, nm, after) nm,
	NUCLEI_OPS(X)
#undef X
};

static int k_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	(void)pu;
	if (bytes != sizeof(struct nuclei_params))
		return PLB_EINVAL;
	nuclei_cv_init();
	*st = (void *)shared;
	return 0;
}

#define X(ID, nm, after)                                                      \
	static int run_##ID(void *st, const struct plb_block *b)              \
	{                                                                     \
		return nuclei_run_op(NUCLEI_##ID, st, b);                     \
	}
NUCLEI_OPS(X)
#undef X

#if defined(PLB_HAVE_CUDA) || defined(PLB_HAVE_OPENCL)
/* A device PU's state: the device's own (nuclei_cuda or nuclei_cl) and
 * how to run and free it, with the run's parameters. */
struct dev_state {
	void *d;
	struct nuclei_params pa;
	int (*run)(void *d, int op, const struct nuclei_params *pa, const struct plb_block *b);
	void (*destroy)(void *d);
};

/* The device made (rc 0) or not: the state, or the reason said. */
static int dev_made(const struct plb_pu_info *pu, struct dev_state *s, int rc, const char *err,
		    void **st)
{
	if (rc) {
		fprintf(stderr, "plb-nuclei: %s: %s\n", pu->name, err);
		free(s);
		s = NULL;
	}
	*st = s;
	return rc;
}

/* The state before its device: the parameters checked. */
static struct dev_state *dev_start(const void *shared, size_t bytes, int *rc)
{
	struct dev_state *s = bytes == sizeof s->pa ? calloc(1, sizeof *s) : NULL;
	*rc = bytes != sizeof s->pa ? PLB_EINVAL : s ? 0 : PLB_ENOMEM;
	if (s)
		s->pa = *(const struct nuclei_params *)shared;
	return s;
}

static void dev_fini(void *st)
{
	struct dev_state *s = st;
	if (s)
		s->destroy(s->d);
	free(s);
}

#define X(ID, nm, after)                                                      \
	static int dev_##ID(void *st, const struct plb_block *b)              \
	{                                                                     \
		struct dev_state *s = st;                                     \
		return s->run(s->d, NUCLEI_##ID, &s->pa, b);                  \
	}
NUCLEI_OPS(X)
#undef X
/* A device class's functions for operation ID: only where a device runs it. */
#define NUCLEI_DEV_CLASS(ID, initf)                                           \
	{.init = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? initf : NULL,                \
	 .run = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? dev_##ID : NULL,               \
	 .fini = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? dev_fini : NULL}
#endif

#ifdef PLB_HAVE_CUDA
static int cuda_run(void *d, int op, const struct nuclei_params *pa, const struct plb_block *b)
{
	return nuclei_cuda_run(d, op, pa, b);
}

static void cuda_destroy(void *d)
{
	nuclei_cuda_destroy(d);
}

static int cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	char err[300] = "";
	int rc;
	struct dev_state *s = dev_start(shared, bytes, &rc);
	if (s) {
		s->run = cuda_run;
		s->destroy = cuda_destroy;
		rc = nuclei_cuda_create(pu->device, s->pa.tile, (struct nuclei_cuda **)&s->d, err, sizeof err);
	}
	return dev_made(pu, s, rc, err, st);
}
#define NUCLEI_CUDA_CLASS(ID) .cuda = NUCLEI_DEV_CLASS(ID, cuda_init),
#else
#define NUCLEI_CUDA_CLASS(ID)
#endif

#ifdef PLB_HAVE_OPENCL
static int cl_run(void *d, int op, const struct nuclei_params *pa, const struct plb_block *b)
{
	return nuclei_cl_run(d, op, pa, b);
}

static void cl_destroy(void *d)
{
	nuclei_cl_destroy(d);
}

static int cl_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	char err[300] = "";
	int rc;
	struct dev_state *s = dev_start(shared, bytes, &rc);
	if (s) {
		s->run = cl_run;
		s->destroy = cl_destroy;
		rc = nuclei_cl_create(pu->cl_context, pu->cl_device, s->pa.tile, (struct nuclei_cl **)&s->d,
				      err, sizeof err);
	}
	return dev_made(pu, s, rc, err, st);
}
#define NUCLEI_CL_CLASS(ID) .opencl = NUCLEI_DEV_CLASS(ID, cl_init),
#else
#define NUCLEI_CL_CLASS(ID)
#endif

const struct plb_kernel nuclei_kernels[NUCLEI_NOPS] = {
#define X(ID, nm, after)                                                      \
	{PLB_INIT, .name = "nuclei." nm, .cpu = {.init = k_init, .run = run_##ID}, \
	 NUCLEI_CUDA_CLASS(ID) NUCLEI_CL_CLASS(ID)},
	NUCLEI_OPS(X)
#undef X
};

/* "a b c" -> {"a", "b", "c"}, in a static copy (the ops are built once) */
void nuclei_pipeline_ops(struct plb_op ops[NUCLEI_NOPS])
{
	static const char *const after[NUCLEI_NOPS] = {
#define X(ID, name, aft) aft,
		NUCLEI_OPS(X)
#undef X
	};
	static char words[NUCLEI_NOPS][64];
	for (int m = 0; m < NUCLEI_NOPS; m++) {
		ops[m] = (struct plb_op){PLB_INIT, .name = nuclei_op_names[m],
					 .kernel = nuclei_kernels[m].name,
					 .tasks = m == NUCLEI_FEATURES ? PLB_TASKS_LATER : 1};
		int k = 0;
		char *w = words[m];
		for (const char *a = after[m]; *a && k < PLB_MAX_AFTER; k++) {
			ops[m].after[k] = w;
			while (*a && *a != ' ')
				*w++ = *a++;
			*w++ = 0;
			while (*a == ' ')
				a++;
		}
		ops[m].after[k] = NULL;
	}
}
