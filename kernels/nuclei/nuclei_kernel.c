/* plb-nuclei's kernels: one a pipeline operation, each a cpu class that
 * runs nuclei_run_op on the task's tile (the shared data: struct
 * nuclei_params). */
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

const struct plb_kernel nuclei_kernels[NUCLEI_NOPS] = {
#define X(ID, nm, after) {PLB_INIT, .name = "nuclei." nm, .cpu = {.init = k_init, .run = run_##ID}},
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
