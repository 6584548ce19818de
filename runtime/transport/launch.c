/* Which launcher started this process (transport.h). */
#include <stdlib.h>

#include "runtime/transport/transport.h"

const char *plb__launcher_rank(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
	for (int i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);
		if (v)
			return v;
	}
	return NULL;
}
