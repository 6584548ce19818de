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

#ifdef PLB_HAVE_CUDA
struct cuda_state {
	struct nuclei_cuda *d;
	struct nuclei_params pa;
};

static int cuda_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	char err[300] = "";
	struct cuda_state *s = calloc(1, sizeof *s);
	*st = NULL;
	if (!s)
		return PLB_ENOMEM;
	if (bytes != sizeof s->pa) {
		free(s);
		return PLB_EINVAL;
	}
	s->pa = *(const struct nuclei_params *)shared;
	int rc = nuclei_cuda_create(pu->device, s->pa.tile, &s->d, err, sizeof err);
	if (rc) {
		fprintf(stderr, "plb-nuclei: %s: %s\n", pu->name, err);
		free(s);
		return rc;
	}
	*st = s;
	return 0;
}

static void cuda_fini(void *st)
{
	struct cuda_state *s = st;
	if (s)
		nuclei_cuda_destroy(s->d);
	free(s);
}

#define X(ID, nm, after)                                                      \
	static int cuda_##ID(void *st, const struct plb_block *b)             \
	{                                                                     \
		struct cuda_state *s = st;                                    \
		return nuclei_cuda_run(s->d, NUCLEI_##ID, &s->pa, b);         \
	}
NUCLEI_OPS(X)
#undef X
#define NUCLEI_CUDA_CLASS(ID)                                                 \
	.cuda = {.init = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? cuda_init : NULL,    \
		 .run = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? cuda_##ID : NULL,      \
		 .fini = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? cuda_fini : NULL},
#else
#define NUCLEI_CUDA_CLASS(ID)
#endif

#ifdef PLB_HAVE_OPENCL
struct cl_state {
	struct nuclei_cl *d;
	struct nuclei_params pa;
};

static int cl_init(const struct plb_pu_info *pu, const void *shared, size_t bytes, void **st)
{
	char err[300] = "";
	struct cl_state *s = calloc(1, sizeof *s);
	*st = NULL;
	if (!s)
		return PLB_ENOMEM;
	if (bytes != sizeof s->pa) {
		free(s);
		return PLB_EINVAL;
	}
	s->pa = *(const struct nuclei_params *)shared;
	int rc = nuclei_cl_create(pu->cl_context, pu->cl_device, s->pa.tile, &s->d, err, sizeof err);
	if (rc) {
		fprintf(stderr, "plb-nuclei: %s: %s\n", pu->name, err);
		free(s);
		return rc;
	}
	*st = s;
	return 0;
}

static void cl_fini(void *st)
{
	struct cl_state *s = st;
	if (s)
		nuclei_cl_destroy(s->d);
	free(s);
}

#define X(ID, nm, after)                                                      \
	static int cl_##ID(void *st, const struct plb_block *b)               \
	{                                                                     \
		struct cl_state *s = st;                                      \
		return nuclei_cl_run(s->d, NUCLEI_##ID, &s->pa, b);           \
	}
NUCLEI_OPS(X)
#undef X
#define NUCLEI_CL_CLASS(ID)                                                   \
	.opencl = {.init = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? cl_init : NULL,    \
		   .run = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? cl_##ID : NULL,      \
		   .fini = NUCLEI_DEVICE_OP(NUCLEI_##ID) ? cl_fini : NULL},
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
