/* The master's part in the job's memory (run.h): a batch's outputs are
 * merged after its grants have gone, so copying a large block's output
 * never delays the next block; an output that travels apart is received
 * straight into the job's (the place hook); the accumulators are combined
 * in offset order at the end.
 *
 * In one process ([run] in_place, a transport with same_memory) a block is
 * borrowed: its DISPATCH gives the PU the addresses of its input and output
 * in the job's own memory, which the kernel reads and writes in place, and
 * its DONE brings only the accumulator back. A block granted while a
 * borrowed one over the same units is still on a PU (a late block run
 * again) gets copies instead, and its output is copied in only after
 * every PU has left the run, so the accepted block's bytes are the last
 * written. */
#include <stdlib.h>
#include <string.h>

#include "balancer/base/vec.h"
#include "runtime/core/run.h"

/* Keeps a block's accumulator (at offset off) for the end of the run. */
static int acc_keep(struct plb__run *r, uint64_t off, const void *part)
{
	struct plb__outs *o = &r->out;
	size_t bytes = r->job->acc_bytes;
	if (o->acc.n == o->acc.cap) {
		size_t cap = o->acc.cap ? 2 * o->acc.cap : 64;
		uint64_t *off2 = realloc(o->acc.off, cap * sizeof *off2);
		if (off2)
			o->acc.off = off2;
		char *b = off2 ? realloc(o->acc.buf, cap * bytes) : NULL;
		if (!b)
			return PLB_ENOMEM;
		o->acc.buf = b;
		o->acc.cap = cap;
	}
	o->acc.off[o->acc.n] = off;
	memcpy(o->acc.buf + o->acc.n * bytes, part, bytes);
	o->acc.n++;
	return 0;
}

static const uint64_t *sort_off;
static int by_acc_offset(const void *x, const void *y)
{
	uint64_t a = sort_off[*(const size_t *)x], b = sort_off[*(const size_t *)y];
	return a < b ? -1 : a > b;
}

/* job.acc = the identity combined with every block's accumulator in
 * offset order: the same blocks give the same bits. */
int plb__out_acc_finish(struct plb__run *r)
{
	const struct plb_job *job = r->job;
	const struct plb__outs *o = &r->out;
	size_t *order = malloc((o->acc.n + 1) * sizeof *order);
	if (!order)
		return plb__fail(r->p, PLB_ENOMEM, "out of memory");
	for (size_t i = 0; i < o->acc.n; i++)
		order[i] = i;
	sort_off = o->acc.off;
	qsort(order, o->acc.n, sizeof *order, by_acc_offset);
	if (job->acc_identity)
		memcpy(job->acc, job->acc_identity, job->acc_bytes);
	else
		memset(job->acc, 0, job->acc_bytes);
	for (size_t i = 0; i < o->acc.n; i++)
		r->k->combine(job->acc, o->acc.buf + order[i] * job->acc_bytes, job->acc_bytes);
	free(order);
	return 0;
}

/* Copies n DONEs' outputs into the job's output, keeps their
 * accumulators and frees the DONEs. */
static int merge_list(struct plb__run *r, struct plb__merge *list, size_t n)
{
	int rc = 0;
	for (size_t k = 0; k < n; k++) {
		struct plb__merge *m = &list[k];
		const char *data = plb__msg_data(m->msg);
		if (r->out.map_out && m->len >= PLB__POPULATE_MIN)
			(void)plb__populate((char *)r->job->out + m->at, m->len);
		if (m->len)
			memcpy((char *)r->job->out + m->at, data + r->out.accpad, m->len);
		if (r->job->acc_bytes && !rc && acc_keep(r, m->off, data))
			rc = plb__fail(r->p, PLB_ENOMEM, "out of memory for the blocks' accumulators");
		plb__msg_free(m->msg);
	}
	return rc;
}

int plb__out_merge(struct plb__run *r)
{
	int rc = merge_list(r, r->out.merge, (size_t)r->out.nmerge);
	r->out.nmerge = 0;
	return rc;
}

int plb__out_merge_late(struct plb__run *r)
{
	int rc = merge_list(r, r->out.late, r->out.nlate);
	r->out.nlate = 0;
	return rc;
}

int plb__out_overlaps(const struct plb__live *l, size_t n, uint64_t off, uint64_t units)
{
	for (size_t k = 0; k < n; k++)
		if (l[k].offset < off + units && off < l[k].offset + l[k].units)
			return 1;
	return 0;
}

void plb__out_drop(struct plb__live *l, size_t *n, uint64_t id)
{
	for (size_t k = 0; k < *n; k++)
		if (l[k].id == id) {
			l[k] = l[--*n];
			return;
		}
}

/* The transport's place hook: a DONE whose output travels apart has it
 * received straight into the job's output, with no message buffer and no
 * copy here, when it answers a grant of this run whose results would count
 * and no other placed output over the same units is still arriving. A
 * DONE kept over units one still may write is merged at the end, after
 * the transport settles (plb__out_accept), so the kept block's bytes are
 * the last written. */
void *plb__out_place(void *ctx, int src, const struct plb__hdr *h)
{
	struct plb__run *r = ctx;
	struct plb__outs *o = &r->out;
	struct plb *p = r->p;
	int peer = src - 1;
	if (h->type != PLB__MSG_DONE || h->status || h->run != r->gen || o->borrow ||
	    (h->flags & PLB__F_BORROWED) || peer < 0 || peer >= p->npeer ||
	    p->peer[peer].rank < 0 || h->pu < 0 || h->pu >= p->peer[peer].npu)
		return NULL;
	int i = p->peer[peer].pu0 + h->pu;
	const struct plb__slot *sl = NULL;
	o->apart++;
	for (int k = 0; k < PLB__MAX_GRANTS && !sl; k++)
		if (r->pu[i].s[k].used && r->pu[i].s[k].id == h->id)
			sl = &r->pu[i].s[k];
	if (!sl || sl->borrowed || sl->offset != h->offset || sl->units != h->units ||
	    h->tail != (uint64_t)sl->units * r->job->out_unit || h->len != o->accpad + h->tail ||
	    !plb__balancer_counts(r->b, i, h->id) ||
	    plb__out_overlaps(o->placing, o->nplacing, sl->offset, sl->units))
		return NULL;
	struct plb__live l = {sl->id, sl->offset, sl->units};
	if (plb__push(&o->placing, &o->nplacing, &o->capplacing, sizeof l, &l))
		return NULL;
	o->placed++;
	char *at = (char *)r->job->out + sl->offset * r->job->out_unit;
	if (o->map_out && h->tail >= PLB__POPULATE_MIN)
		(void)plb__populate(at, h->tail);
	return at;
}

int plb__out_accept(struct plb__run *r, void *msg, const struct plb__slot *sl, size_t want,
		    int placed)
{
	struct plb__outs *o = &r->out;
	struct plb__merge m = {msg, sl->offset * r->job->out_unit, placed ? 0 : want, sl->offset};
	if ((o->borrow && !sl->borrowed) ||
	    (!placed && plb__out_overlaps(o->placing, o->nplacing, sl->offset, sl->units))) {
		/* a borrowed copy of these units, or a placed one that lost
		 * the race, may still be writing them */
		if (plb__push(&o->late, &o->nlate, &o->caplate, sizeof m, &m))
			return plb__fail(r->p, PLB_ENOMEM, "out of memory");
	} else {
		o->merge[o->nmerge++] = m;
	}
	return 0;
}

int plb__out_borrow(struct plb__run *r, const struct plb__grant *g, void *payload)
{
	const struct plb_job *job = r->job;
	struct plb__borrow bw = {
		job->in_unit ? (uint64_t)(uintptr_t)((const char *)job->in + g->offset * job->in_unit) : 0,
		job->out_unit ? (uint64_t)(uintptr_t)((char *)job->out + g->offset * job->out_unit) : 0};
	struct plb__live l = {g->id, g->offset, g->units};
	memcpy(payload, &bw, sizeof bw);
	if (plb__push(&r->out.live, &r->out.nlive, &r->out.caplive, sizeof l, &l))
		return plb__fail(r->p, PLB_ENOMEM, "out of memory");
	return 0;
}

void plb__out_fini(struct plb__outs *o)
{
	for (size_t k = 0; k < o->nlate; k++)
		plb__msg_free(o->late[k].msg);
	free(o->late);
	free(o->live);
	free(o->placing);
	free(o->acc.off);
	free(o->acc.buf);
	free(o->merge);
}
