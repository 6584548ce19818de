/* The in-process transport: the master (rank 0) and one worker (rank 1) in
 * the same process, the worker's communication thread beside the app's.
 * The same messages as over MPI, moved by pointer through two mutex-guarded
 * queues, so master, worker and devices do not know which transport they
 * run on. A send wakes the receiving end (set_waker), so both ends' idle
 * loops sleep until a message comes instead of polling. Used when an app
 * runs without mpirun, and the only one in a build without MPI (make
 * MPI=0). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/transport/fifo.h"
#include "runtime/transport/transport.h"

struct item {
	struct plb__fifo_node link;
	void *buf;
};

struct pair;

struct local {
	struct plb__transport t;
	struct pair *pair;
	struct plb__fifo inbox;
	void (*waker)(void *ctx);       /* called, under the pair's mutex, for each message queued here */
	void *waker_ctx;
};

struct pair {
	pthread_mutex_t mu;
	struct local end[2];
	int alive;                      /* endpoints not destroyed yet */
};

static int local_send(struct plb__transport *t, int dst, void *buf)
{
	struct local *l = (struct local *)t;
	struct pair *pr = l->pair;
	struct item *it = malloc(sizeof *it);
	if (dst < 0 || dst > 1 || !it) {
		free(it);
		plb__msg_free(buf);
		snprintf(t->err, sizeof t->err, dst < 0 || dst > 1 ? "no rank %d in one process" : "out of memory", dst);
		return dst < 0 || dst > 1 ? PLB_EINVAL : PLB_ENOMEM;
	}
	it->buf = buf;
	struct local *d = &pr->end[dst];
	pthread_mutex_lock(&pr->mu);
	plb__fifo_push(&d->inbox, &it->link);
	if (d->waker)
		d->waker(d->waker_ctx);
	pthread_mutex_unlock(&pr->mu);
	return 0;
}

static void local_set_waker(struct plb__transport *t, void (*fn)(void *ctx), void *ctx)
{
	struct local *l = (struct local *)t;
	pthread_mutex_lock(&l->pair->mu);
	l->waker = fn;
	l->waker_ctx = ctx;
	pthread_mutex_unlock(&l->pair->mu);
}

static int local_recv(struct plb__transport *t, void **buf, int *src)
{
	struct local *l = (struct local *)t;
	struct pair *pr = l->pair;
	pthread_mutex_lock(&pr->mu);
	struct item *it = plb__fifo_pop(&l->inbox);
	pthread_mutex_unlock(&pr->mu);
	if (!it)
		return 0;
	*buf = it->buf;
	*src = 1 - t->rank;
	free(it);
	return 1;
}

static int local_pending(const struct plb__transport *t)
{
	(void)t;
	return 0;               /* a send is done when it is queued */
}

static int local_flush(struct plb__transport *t, double timeout_s)
{
	(void)t;
	(void)timeout_s;
	return 0;
}

static void local_destroy(struct plb__transport *t)
{
	struct local *l = (struct local *)t;
	struct pair *pr = l->pair;
	pthread_mutex_lock(&pr->mu);
	struct item *it;
	while ((it = plb__fifo_pop(&l->inbox))) {
		plb__msg_free(it->buf);
		free(it);
	}
	int last = --pr->alive == 0;
	pthread_mutex_unlock(&pr->mu);
	if (last) {
		pthread_mutex_destroy(&pr->mu);
		free(pr);
	}
}

static const struct plb__transport_ops local_ops = {
	.name = "local",
	.same_memory = 1,
	.send = local_send,
	.recv = local_recv,
	.pending = local_pending,
	.flush = local_flush,
	.destroy = local_destroy,
	.wakes = 1,
	.set_waker = local_set_waker,
};

int plb__transport_local_create(struct plb__transport **master, struct plb__transport **worker)
{
	struct pair *pr = calloc(1, sizeof *pr);
	char host[256] = "localhost";
	if (!pr)
		return PLB_ENOMEM;
	pthread_mutex_init(&pr->mu, NULL);
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	for (int i = 0; i < 2; i++) {
		struct local *l = &pr->end[i];
		l->t.ops = &local_ops;
		l->t.rank = i;
		l->t.size = 2;
		snprintf(l->t.host, sizeof l->t.host, "%s", host);
		l->pair = pr;
	}
	pr->alive = 2;
	*master = &pr->end[0].t;
	*worker = &pr->end[1].t;
	return 0;
}
