/* The idle loop's back-off (transport.h). Spin (yielding) for 20 us after
 * traffic, then sleep 10 us doubling up to 500 us: answers within
 * microseconds while busy, about 2% of a core idle. */
#include <sched.h>

#include "balancer/base/clock.h"
#include "runtime/transport/transport.h"

void plb__backoff_reset(struct plb__backoff *b)
{
	b->last_traffic = plb__now();
	b->sleep_us = 0;
}

long plb__backoff_next(struct plb__backoff *b, int busy)
{
	if (busy)
		return b->sleep_us = 20;
	if (b->sleep_us == 0) {
		if (plb__now() - b->last_traffic < 20e-6) {
			sched_yield();
			return 0;
		}
		b->sleep_us = 10;
		return b->sleep_us;
	}
	b->sleep_us = b->sleep_us * 2 > 500 ? 500 : b->sleep_us * 2;
	return b->sleep_us;
}
