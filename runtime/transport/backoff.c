/* The idle loop's back-off (transport.h). Spin (yielding) for 20 us after
 * traffic, then sleep 10 us doubling up to 500 us (20 ms where a message
 * wakes the loop): answers within microseconds while busy, about 2% of a
 * core idle. And the waiter such a loop sleeps in. */
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

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
		if (plb__now() - b->last_traffic < 20e-6 && plb__yield())
			return 0;
		b->sleep_us = 10;
		return b->sleep_us;
	}
	long cap = b->cap_us > 0 ? b->cap_us : PLB__BACKOFF_CAP_US;
	b->sleep_us = b->sleep_us * 2 > cap ? cap : b->sleep_us * 2;
	return b->sleep_us;
}

/* until when (plb__now) yields are not worth it: the cores are shared */
static _Atomic double shared_until;

int plb__yield(void)
{
	double t0 = plb__now();
	if (t0 < atomic_load_explicit(&shared_until, memory_order_relaxed))
		return 0;
	sched_yield();
	double t1 = plb__now();
	if (t1 - t0 <= PLB__YIELD_SHARED_S)
		return 1;
	atomic_store_explicit(&shared_until, t1 + PLB__YIELD_SHARED_FOR_S, memory_order_relaxed);
	return 0;
}

void plb__backoff_sleep(struct plb__backoff *b, int busy)
{
	long us = plb__backoff_next(b, busy);
	if (us > 0)
		nanosleep(&(struct timespec){0, us * 1000}, NULL);
}

void plb__waiter_init(struct plb__waiter *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->pokes = 0;
}

void plb__waiter_fini(struct plb__waiter *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

void plb__waiter_poke(void *arg)
{
	struct plb__waiter *w = arg;
	pthread_mutex_lock(&w->mu);
	w->pokes++;
	if (w->waiting)
		pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

unsigned long plb__waiter_seen(struct plb__waiter *w)
{
	pthread_mutex_lock(&w->mu);
	unsigned long n = w->pokes;
	pthread_mutex_unlock(&w->mu);
	return n;
}

void plb__waiter_wait(struct plb__waiter *w, unsigned long seen, long us)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += us % 1000000 * 1000;
	ts.tv_sec += us / 1000000 + ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_mutex_lock(&w->mu);
	if (w->pokes == seen) {
		w->waiting = 1;
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		w->waiting = 0;
	}
	pthread_mutex_unlock(&w->mu);
}
