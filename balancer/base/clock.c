/* See clock.h. */
#include <errno.h>
#include <time.h>

#include "balancer/base/clock.h"

static double seconds(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double plb__now(void)
{
	return seconds(CLOCK_MONOTONIC);
}

double plb__cpu_now(void)
{
	return seconds(CLOCK_THREAD_CPUTIME_ID);
}

double plb__proc_cpu_now(void)
{
	return seconds(CLOCK_PROCESS_CPUTIME_ID);
}

void plb__sleep_until(double t)
{
	struct timespec ts;
	if (plb__now() >= t)
		return;
	if (t > 1e12)           /* 30,000 years: no cast past time_t */
		t = 1e12;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
