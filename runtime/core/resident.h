/* Resident input (plb_job.in_mode): nodes keep the input they were sent,
 * so that a later run of the same domain sends each node only what it
 * lacks, and the balancer hands a PU the units its node holds.
 *
 * The master decides and keeps the record: for each node the ranges it
 * holds (sent with PLB__F_KEEP, within the node's budget). A master and a
 * worker's messages arrive in the order sent, so a range is held from the
 * moment its DISPATCH leaves: every later DISPATCH that relies on it
 * arrives after it. A START without PLB__F_REUSE empties a node's store
 * (the input changed, another domain, or a run that keeps nothing); it is
 * handled only once no PU of the node is in a run.
 *
 * DISPATCH with PLB__F_SEGMENTS carries struct plb__segs, then n ranges
 * (the parts of the block sent, in order), then their input, in order;
 * the rest of the block's input is in the node's store. With PLB__F_KEEP
 * the node keeps the message, and the parts in it, in its store. */
#ifndef PLB_RESIDENT_H
#define PLB_RESIDENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "plb.h"
#include "balancer/balancer.h"
#include "balancer/ranges.h"

struct plb__segs {
	uint64_t n, pad;
};

struct plb;

/* ---- master ---- */

/* A run's start: *reuse (START's PLB__F_REUSE) and whether the run keeps
 * input (returned: 1, or 0 when the job keeps none, blocks are borrowed in
 * place, or the input is empty). With it, the PUs go in groups by node and
 * the nodes' holdings into the balancer. Returns 1, 0 or < 0 (p->err). */
int plb__res_begin(struct plb *p, const struct plb_job *job, uint64_t W, int borrow,
		   plb__balancer_t *b, int *reuse);
/* The job's shared data is what every node was sent last
 * (PLB_SHARED_UNCHANGED, the same address and size, sent whole): START
 * leaves it out. */
int plb__res_shared_kept(const struct plb *p, const struct plb_job *job, int borrow);

/* Payload bytes of grant g's DISPATCH to node peer in such a run; *nseg
 * gets the number of parts it sends. */
size_t plb__res_len(const struct plb *p, int peer, const struct plb_job *job,
		    const struct plb__grant *g, int *nseg);
/* Fills that DISPATCH's payload and flags and records what the node now
 * holds; *unkept grows by the bytes its budget refused to keep. Returns 0
 * or < 0 (p->err). */
int plb__res_fill(struct plb *p, int peer, const struct plb_job *job, const struct plb__grant *g,
		  void *msg, int nseg, plb__balancer_t *b, double *unkept);
/* A node stopped: it holds nothing. */
void plb__res_forget(struct plb *p, int peer);
/* After the run (on: it kept input; borrow: in place; ok: it ended well):
 * what the nodes hold, input and shared data, is kept for the next run,
 * or dropped. Returns the input bytes they hold. */
double plb__res_end(struct plb *p, const struct plb_job *job, uint64_t W, int on, int borrow,
		    int ok);

/* ---- worker ---- */

struct plb__store {
	pthread_rwlock_t lock;          /* PU threads read; the communication thread adds */
	/* the kept parts, sorted and disjoint (one per part received, until
	 * plb__store_merge joins adjacent ones; found with plb__ranges_find),
	 * where each one's input is, and the message that holds it */
	struct plb__ranges part;
	const char **data;
	void **own;
	void **msg;                     /* the kept messages, freed when dropped */
	size_t nmsg, capmsg;
};

int plb__store_init(struct plb__store *s);
/* Communication thread: checks a DISPATCH's parts against its block and
 * the store, and keeps them (PLB__F_KEEP: the message is then the
 * store's). Returns 0, or PLB_EIO / PLB_ENOMEM with the reason in err. */
int plb__store_take(struct plb__store *s, void *msg, size_t in_unit, char *err, size_t errlen);
/* PU thread: the block's input, in the message or the store, or copied
 * from both into *tmp (the caller frees it). Returns 0 or PLB_ENOMEM. */
int plb__store_input(struct plb__store *s, void *msg, size_t in_unit, const void **in, void **tmp);
/* Between runs (no PU may be in a run): each group of adjacent kept parts
 * becomes one part in one buffer, and the messages they came in are
 * freed, so that a block across them is read in place, not copied by
 * plb__store_input in every run. A group stays as it is where memory for
 * its buffer is lacking. Returns the bytes copied. */
double plb__store_merge(struct plb__store *s, size_t in_unit);
/* Empties the store (no PU may be in a run). */
void plb__store_drop(struct plb__store *s);
void plb__store_fini(struct plb__store *s);

#endif
