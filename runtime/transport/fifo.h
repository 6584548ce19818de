/* An intrusive FIFO, for the runtime's queues (the in-process transport's
 * inboxes, a worker's outbox and its PUs' inboxes). The node is the first
 * member of the queued struct, so a popped node is that struct. Not locked:
 * callers hold the queue's mutex. */
#ifndef PLB_FIFO_H
#define PLB_FIFO_H

#include <stddef.h>

struct plb__fifo_node {
	struct plb__fifo_node *next;
};

struct plb__fifo {
	struct plb__fifo_node *head, *tail;
};

static inline void plb__fifo_push(struct plb__fifo *q, struct plb__fifo_node *n)
{
	n->next = NULL;
	if (q->tail)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
}

/* The oldest node, or NULL. */
static inline void *plb__fifo_pop(struct plb__fifo *q)
{
	struct plb__fifo_node *n = q->head;
	if (n && !(q->head = n->next))
		q->tail = NULL;
	return n;
}

/* Every node, oldest first (follow ->next), leaving q empty. */
static inline void *plb__fifo_take_all(struct plb__fifo *q)
{
	struct plb__fifo_node *n = q->head;
	q->head = q->tail = NULL;
	return n;
}

static inline int plb__fifo_empty(const struct plb__fifo *q)
{
	return q->head == NULL;
}

#endif
