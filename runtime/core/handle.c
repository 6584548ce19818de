/* The plb handle's small pieces that every file of the core uses (the
 * first error's message, the kernel table), kept apart from plb.c so that
 * the master and the worker do not call back into init and finalize. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/core/rt.h"

int plb__fail(struct plb *p, int rc, const char *fmt, ...)
{
	if (!p->err[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err, sizeof p->err, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const struct plb_kernel *plb__kernel_find(const struct plb *p, const char *name)
{
	for (int i = 0; i < p->nkernels; i++)
		if (p->kernels[i] && p->kernels[i]->name && !strcmp(p->kernels[i]->name, name))
			return p->kernels[i];
	return NULL;
}

int plb_is_master(const plb_t *p)
{
	return p && p->master;
}

const char *plb_errmsg(const plb_t *p)
{
	return p ? p->err : "no plb handle";
}
