/* The bundled kernels' CUDA error check, for kernels/NAME/*.cu only (the
 * macro names CUDA's types): a failing call records "file:line: call:
 * CUDA's reason" in the state's err buffer, says it on stderr, and makes
 * the calling function return PLB_EIO. */
#ifndef PLB_KERNELS_CUDA_CHECK_H
#define PLB_KERNELS_CUDA_CHECK_H

#include <stdio.h>

#include "plb_errors.h"
#include "kernels/phase_times.h"

static inline int plb__cuda_fail(char *err, size_t len, const char *file, int line,
				 const char *what, const char *why)
{
	if (err && len)
		snprintf(err, len, "%s:%d: %s: %s", file, line, what, why);
	fprintf(stderr, "plb: cuda: %s:%d: %s: %s\n", file, line, what, why);
	return PLB_EIO;
}

/* s: the kernel's state, with a char err[] member. */
#define PLB__CUDA_CHECK(s, call)                                               \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess)                                         \
			return plb__cuda_fail((s)->err, sizeof (s)->err, __FILE__, \
					      __LINE__, #call, cudaGetErrorString(e_)); \
	} while (0)

/* Events around a block's phases on one stream: record PLB__PH_START
 * before its copy in, PLB__PH_IN after it, PLB__PH_RUN after the kernel
 * and PLB__PH_OUT after the copy out; once the stream has synchronised,
 * plb__cuda_phases_add adds the three spans to *t. */
enum { PLB__PH_START, PLB__PH_IN, PLB__PH_RUN, PLB__PH_OUT, PLB__PH_N };
struct plb__cuda_phases {
	cudaEvent_t ev[PLB__PH_N];
};

static inline cudaError_t plb__cuda_phases_create(struct plb__cuda_phases *p)
{
	for (int i = 0; i < PLB__PH_N; i++) {
		cudaError_t e = cudaEventCreate(&p->ev[i]);
		if (e != cudaSuccess)
			return e;
	}
	return cudaSuccess;
}

static inline void plb__cuda_phases_destroy(struct plb__cuda_phases *p)
{
	for (int i = 0; i < PLB__PH_N; i++)
		if (p->ev[i])
			cudaEventDestroy(p->ev[i]);
}

static inline cudaError_t plb__cuda_phases_add(const struct plb__cuda_phases *p,
					       struct plb__phase_times *t)
{
	float ms[PLB__PH_N - 1];
	for (int i = 0; i < PLB__PH_N - 1; i++) {
		cudaError_t e = cudaEventElapsedTime(&ms[i], p->ev[i], p->ev[i + 1]);
		if (e != cudaSuccess)
			return e;
	}
	t->in_s += ms[0] * 1e-3;
	t->run_s += ms[1] * 1e-3;
	t->out_s += ms[2] * 1e-3;
	return cudaSuccess;
}

#endif
