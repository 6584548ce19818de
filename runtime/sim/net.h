/* plbsim's links: the master's link and each node's own, each a
 * bandwidth each way, shared by the transfers (flows) crossing them at
 * once. A flow from the master to a node (a block's input) crosses the
 * master's link down and the node's link down; one back (a block's
 * output) the two links up. As the runtime's MPI transport sends them
 * (runtime/transport/mpi.c), a node's flows in one direction cross one
 * at a time, in the order they started, each at its node's link's
 * bandwidth; the nodes whose flows cross at once share the master's link
 * max-min fairly (water-filling over the nodes, as TCP streams share
 * it). A serial flow (the job's shared data, plb__net_start_serial)
 * crosses only once every serial flow started before it, to any node, is
 * done: the master sends them one node after another. Rates change only when a flow starts or ends; the caller asks for
 * the next end and advances to it. */
#ifndef PLB_SIM_NET_H
#define PLB_SIM_NET_H

#include <stdint.h>

enum { PLB__NET_DOWN, PLB__NET_UP };

struct plb__net_flow {
	double remain;          /* bytes still to cross */
	double rate;            /* bytes per second now */
	int node, dir;
	int pu, slot;           /* whose block: the caller's */
	int active;
	uint64_t seq;           /* start order: a node's oldest crosses first */
	int serial;             /* waits for every older serial flow */
};

struct plb__net_level {
	double level;
	int k;
};

struct plb__net {
	double bw_master;       /* bytes per second each way; INFINITY: no limit */
	double *bw_node;        /* the same per node */
	int nnodes;
	struct plb__net_flow *f;
	int nf, cap;
	uint64_t seq;           /* flows started so far */
	double t;               /* flows have progressed up to t */
	/* scratch for the water-filling: per node, its oldest flow in the
	 * direction shared (-1: none) */
	int *oldest;
	double *level;
	struct plb__net_level *order;
};

/* Links of bw_master and bw_node[k] bytes per second (<= 0: no limit),
 * nnodes of them. Returns 0 or PLB_ENOMEM. */
int plb__net_init(struct plb__net *n, double bw_master, const double *bw_node, int nnodes);
void plb__net_fini(struct plb__net *n);

/* Moves every flow on to time now (>= the last time). */
void plb__net_advance(struct plb__net *n, double now);
/* A flow of `bytes` (> 0) to or from node `node` starting at now (the
 * net advanced to now first). Returns its index (>= 0) or PLB_ENOMEM. */
int plb__net_start(struct plb__net *n, double now, double bytes, int node, int dir, int pu,
		   int slot);
/* The same, for a serial flow. */
int plb__net_start_serial(struct plb__net *n, double now, double bytes, int node, int dir,
			  int pu, int slot);
/* The earliest time an active flow ends (its index in *flow), or
 * INFINITY with *flow = -1 when none is active. */
double plb__net_next(const struct plb__net *n, int *flow);
/* Flow `flow` is done (the net advanced to its end): it leaves the links
 * and the others' rates are shared again. */
void plb__net_end(struct plb__net *n, int flow);

#endif
