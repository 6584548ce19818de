/* plbsim's links (see net.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plb_errors.h"
#include "runtime/sim/net.h"

int plb__net_init(struct plb__net *n, double bw_master, const double *bw_node, int nnodes)
{
	memset(n, 0, sizeof *n);
	n->bw_master = bw_master > 0 ? bw_master : INFINITY;
	n->nnodes = nnodes;
	n->bw_node = malloc((size_t)(nnodes > 0 ? nnodes : 1) * sizeof *n->bw_node);
	n->oldest = calloc((size_t)(nnodes > 0 ? nnodes : 1), sizeof *n->oldest);
	n->level = malloc((size_t)(nnodes > 0 ? nnodes : 1) * sizeof *n->level);
	n->order = malloc((size_t)(nnodes > 0 ? nnodes : 1) * sizeof *n->order);
	if (!n->bw_node || !n->oldest || !n->level || !n->order) {
		plb__net_fini(n);
		return PLB_ENOMEM;
	}
	for (int k = 0; k < nnodes; k++)
		n->bw_node[k] = bw_node && bw_node[k] > 0 ? bw_node[k] : INFINITY;
	return 0;
}

void plb__net_fini(struct plb__net *n)
{
	free(n->bw_node);
	free(n->f);
	free(n->oldest);
	free(n->level);
	free(n->order);
	memset(n, 0, sizeof *n);
}

void plb__net_advance(struct plb__net *n, double now)
{
	double dt = now - n->t;
	if (dt > 0)
		for (int i = 0; i < n->nf; i++)
			if (n->f[i].active && isfinite(n->f[i].rate))
				n->f[i].remain = fmax(0, n->f[i].remain - n->f[i].rate * dt);
	if (now > n->t)
		n->t = now;
}

static int by_level(const void *a, const void *b)
{
	const struct plb__net_level *x = a, *y = b;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	return x->k - y->k;
}

/* The rates in one direction: a node's oldest flow crosses alone (the
 * others wait, rate 0) at up to its node's link; the master's link caps
 * the crossing flows at the water level L with sum_k min(c_k, L) = C. */
static void share(struct plb__net *n, int dir)
{
	int used = 0;
	for (int k = 0; k < n->nnodes; k++)
		n->oldest[k] = -1;
	for (int i = 0; i < n->nf; i++) {
		struct plb__net_flow *f = &n->f[i];
		if (!f->active || f->dir != dir)
			continue;
		f->rate = 0;
		int *o = &n->oldest[f->node];
		if (*o < 0 || f->seq < n->f[*o].seq)
			*o = i;
	}
	/* a serial flow waits for the older serial ones: its node's flows
	 * behind it wait too */
	int first = -1;
	for (int i = 0; i < n->nf; i++)
		if (n->f[i].active && n->f[i].dir == dir && n->f[i].serial &&
		    (first < 0 || n->f[i].seq < n->f[first].seq))
			first = i;
	for (int k = 0; k < n->nnodes; k++)
		if (n->oldest[k] >= 0 && n->f[n->oldest[k]].serial && n->oldest[k] != first)
			n->oldest[k] = -1;
	for (int k = 0; k < n->nnodes; k++)
		if (n->oldest[k] >= 0) {
			n->level[k] = n->bw_node[k];
			n->order[used++] = (struct plb__net_level){n->level[k], k};
		}
	if (!used)
		return;
	qsort(n->order, (size_t)used, sizeof *n->order, by_level);
	/* nodes below the water take their own link; the rest split what the
	 * master's link has left equally */
	double left = n->bw_master, L = INFINITY;
	for (int j = 0; j < used; j++) {
		int k = n->order[j].k;
		double even = left / (used - j);
		if (n->level[k] <= even) {
			left -= n->level[k];
		} else {
			L = even;
			break;
		}
	}
	for (int k = 0; k < n->nnodes; k++)
		if (n->oldest[k] >= 0)
			n->f[n->oldest[k]].rate = fmin(n->level[k], L);
}

static int start(struct plb__net *n, double now, double bytes, int node, int dir, int pu,
		 int slot, int serial)
{
	plb__net_advance(n, now);
	int i = 0;
	while (i < n->nf && n->f[i].active)
		i++;
	if (i == n->nf) {
		if (n->nf == n->cap) {
			int cap = n->cap ? 2 * n->cap : 64;
			struct plb__net_flow *f = realloc(n->f, (size_t)cap * sizeof *f);
			if (!f)
				return PLB_ENOMEM;
			n->f = f;
			n->cap = cap;
		}
		n->nf++;
	}
	n->f[i] = (struct plb__net_flow){.remain = bytes, .node = node, .dir = dir, .pu = pu,
					 .slot = slot, .active = 1, .seq = ++n->seq, .serial = serial};
	share(n, dir);
	return i;
}

int plb__net_start(struct plb__net *n, double now, double bytes, int node, int dir, int pu,
		   int slot)
{
	return start(n, now, bytes, node, dir, pu, slot, 0);
}

int plb__net_start_serial(struct plb__net *n, double now, double bytes, int node, int dir,
			  int pu, int slot)
{
	return start(n, now, bytes, node, dir, pu, slot, 1);
}

double plb__net_next(const struct plb__net *n, int *flow)
{
	double best = INFINITY;
	*flow = -1;
	for (int i = 0; i < n->nf; i++) {
		const struct plb__net_flow *f = &n->f[i];
		if (!f->active)
			continue;
		if (f->remain > 0 && !(f->rate > 0))
			continue;       /* waiting behind its node's older flow */
		double t = f->remain <= 0 ? n->t : n->t + f->remain / f->rate;
		if (t < best || *flow < 0) {
			best = t;
			*flow = i;
		}
	}
	return best;
}

void plb__net_end(struct plb__net *n, int flow)
{
	int dir = n->f[flow].dir;
	n->f[flow].active = 0;
	while (n->nf > 0 && !n->f[n->nf - 1].active)
		n->nf--;
	share(n, dir);
}
