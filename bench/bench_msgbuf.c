/* What runtime/transport/msgbuf.c saves: the time to fill a 48 MB message (a block
 * of 3000 columns of a 4096 x 4096 single-precision matrix) in a buffer
 * fresh from malloc (one page fault per 4 KiB), in one fresh from malloc
 * whose pages plb__populate maps first (what the master's merge does to
 * a job's output), in a new buffer from plb__msg_alloc (huge pages, mapped
 * in one call), and in a kept buffer that plb__msg_alloc hands out again;
 * and what plb__populate costs where the pages are mapped already (a later
 * run into the same output). Best of 5 of each, in one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "runtime/transport/transport.h"

#define LEN ((size_t)48 << 20)
#define REPS 5

int main(void)
{
	char *src = malloc(LEN);
	if (!src)
		return 1;
	memset(src, 1, LEN);
	double fresh = 1e9, populated = 1e9, mapped = 1e9, kept = 1e9, again = 1e9;
	for (int r = 0; r < REPS; r++) {
		double t = plb__now();
		char *b = malloc(PLB__HDR_SIZE + LEN);
		if (!b)
			return 1;
		memcpy(b + PLB__HDR_SIZE, src, LEN);
		double dt = plb__now() - t;
		free(b);
		fresh = dt < fresh ? dt : fresh;

		t = plb__now();
		b = malloc(PLB__HDR_SIZE + LEN);
		if (!b)
			return 1;
		(void)plb__populate(b + PLB__HDR_SIZE, LEN);
		memcpy(b + PLB__HDR_SIZE, src, LEN);
		dt = plb__now() - t;
		populated = dt < populated ? dt : populated;
		t = plb__now();                 /* its pages are mapped already */
		(void)plb__populate(b + PLB__HDR_SIZE, LEN);
		dt = plb__now() - t;
		again = dt < again ? dt : again;
		free(b);

		plb__msg_cache_clear(NULL);     /* nothing kept: a new buffer */
		t = plb__now();
		void *m = plb__msg_alloc(0, LEN);
		if (!m)
			return 1;
		memcpy(plb__msg_data(m), src, LEN);
		dt = plb__now() - t;
		mapped = dt < mapped ? dt : mapped;
		plb__msg_free(m);               /* kept */

		t = plb__now();
		m = plb__msg_alloc(0, LEN);
		memcpy(plb__msg_data(m), src, LEN);
		dt = plb__now() - t;
		kept = dt < kept ? dt : kept;
		plb__msg_free(m);
	}
	plb__msg_cache_clear(NULL);
	free(src);
	printf("fill 48 MB, best of %d: fresh malloc %.4f s, fresh malloc + plb__populate %.4f s, "
	       "new plb__msg_alloc %.4f s, kept buffer %.4f s; plb__populate of mapped pages %.4f s\n",
	       REPS, fresh, populated, mapped, kept, again);
	return 0;
}
