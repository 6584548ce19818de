/* The bundled kernels' CUDA error check, for kernels/NAME/*.cu only (the
 * macro names CUDA's types): a failing call records "file:line: call:
 * CUDA's reason" in the state's err buffer, says it on stderr, and makes
 * the calling function return PLB_EIO. */
#ifndef PLB_KERNELS_CUDA_CHECK_H
#define PLB_KERNELS_CUDA_CHECK_H

#include <stdio.h>

#include "plb_errors.h"

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

#endif
