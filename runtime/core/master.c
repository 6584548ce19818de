/* The master (rank 0): plb_run drives the balancer over the workers' PUs.
 * It sends START (kernel and shared data) to every worker, asks the
 * balancer for up to `pipeline` grants per PU, packs each grant's input
 * into a DISPATCH, and on every DONE reports the sample and asks again for
 * that PU and for every PU the balancer had told to wait. Messages are
 * handled in batches; a batch's outputs are merged after its grants have
 * gone, so copying a large block's output never delays the next block.
 * When no message arrives the loop backs off (plb__backoff) instead of
 * spinning. Times given to the balancer are
 * seconds since the run's start.
 *
 * In one process ([run] in_place, a transport with same_memory) a block is
 * borrowed: its DISPATCH gives the PU the addresses of its input and output
 * in the job's own memory, which the kernel reads and writes in place, and
 * its DONE brings only the accumulator back. A block granted while a
 * borrowed one over the same units is still on a PU (a late block run
 * again) gets copies instead, and its output is copied in only after
 * every PU has left the run, so the accepted block's bytes are the last
 * written. plb_run returns once no PU touches the job's memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "balancer/balancer.h"
#include "balancer/base/log.h"
#include "runtime/config/bounds.h"
#include "runtime/config/coverage.h"
#include "runtime/core/resident.h"
#include "runtime/core/rt.h"

#define BATCH 512               /* messages handled between two polls */
#define RATE_MIN_S 1e-3        /* blocks shorter than this set no rate for the bound (on_done) */
#define PROGRESS_AFTER_S 1.0    /* a run this long shows a progress line ... */
#define PROGRESS_EVERY_S 0.25   /* ... updated this often */

struct slot {
	uint64_t id, offset, units;
	int used, borrowed;
	enum plb_grant_kind kind;
	double predicted_s;
	double sent;            /* plb__now() when dispatch began packing it */
	double turn;            /* from its PU's DONE that it follows to sent; 0: none */
};

struct mpu {
	int peer;               /* index in p->peer */
	int local;              /* the worker's PU index */
	int lost, finished, parked, nout, touched;
	struct slot s[PLB_MAX_GRANTS];
	double busy, units, best_rate, last_finish;
	int long_block;         /* best_rate is from blocks of RATE_MIN_S or more */
	long blocks;
	long overran;           /* blocks it ran past its model (emulated) */
	double heard;           /* when its newest DONE came, until a grant follows (NAN: none) */
};

struct run {
	struct plb *p;
	const struct plb_job *job;
	plb_balancer_t *b;
	struct mpu *pu;
	int npu, pipeline;
	uint64_t W;
	double t0, now, end;
	double sent;            /* just before START went: a worker's run clock starts after it */
	double (*way)[2];       /* per worker: START's way to it is within [way[0], way[1]],
				 * from its blocks' times (clock_done) */
	double cpu0, cpu;       /* the master thread's CPU seconds at t0; in the run */
	struct plb__coverage cov;
	int *touched;
	int ntouched;
	int gen;                /* this run's number, echoed in every DONE */
	int finished;
	struct merge { void *msg; size_t at, len; uint64_t off; } *merge;  /* DONEs to copy out */
	int nmerge;
	int borrow;             /* blocks are borrowed (in place) in this run */
	struct live { uint64_t id, offset, units; } *live;     /* borrowed blocks on a PU */
	size_t nlive, caplive;
	struct live *placing;   /* blocks whose output is arriving straight into
				 * the job's (the place hook said where) */
	size_t nplacing, capplacing;
	long placed, apart;     /* outputs that travelled apart; of them, placed */
	struct merge *late;     /* copied blocks over borrowed units, or over units
				 * a placed output may still be writing: merged at
				 * the end */
	size_t nlate, caplate;
	const struct plb_kernel *k;
	size_t accpad;          /* a DONE's accumulator, padded: its output follows */
	struct accs {           /* the accepted blocks' accumulators */
		uint64_t *off;
		char *buf;
		size_t n, cap;
	} acc;
	double bytes_out, bytes_in;
	double said;            /* the last ALIVE round to the workers */
	double watched;         /* the last look at the workers' silence */
	int ranks_lost;         /* worker ranks taken out for silence */
	char lost_note[256];
	int tty;                /* stderr is a terminal: a progress line */
	double shown;           /* when it was last drawn (0: never) */
	int warm;               /* PUs started from kept models */
	int res, reuse;         /* input kept on the nodes; their stores kept (resident.c) */
	int map_out;            /* the output's pages may be fresh: map each block's first */
	double unkept, resident;        /* bytes over the nodes' budgets; held at the end */
};

/* Keeps a block's accumulator (at offset off) for the end of the run. */
static int acc_keep(struct run *r, uint64_t off, const void *part)
{
	struct accs *a = &r->acc;
	size_t bytes = r->job->acc_bytes;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		uint64_t *o = realloc(a->off, cap * sizeof *o);
		if (o)
			a->off = o;
		char *b = o ? realloc(a->buf, cap * bytes) : NULL;
		if (!b)
			return PLB_ENOMEM;
		a->buf = b;
		a->cap = cap;
	}
	a->off[a->n] = off;
	memcpy(a->buf + a->n * bytes, part, bytes);
	a->n++;
	return 0;
}

static const struct accs *sort_accs;
static int by_acc_offset(const void *x, const void *y)
{
	uint64_t a = sort_accs->off[*(const size_t *)x], b = sort_accs->off[*(const size_t *)y];
	return a < b ? -1 : a > b;
}

/* job.acc = the identity combined with every block's accumulator in
 * offset order: the same blocks give the same bits. */
static int acc_finish(struct run *r)
{
	const struct plb_job *job = r->job;
	const struct accs *a = &r->acc;
	size_t *order = malloc((a->n + 1) * sizeof *order);
	if (!order)
		return plb__fail(r->p, PLB_ENOMEM, "out of memory");
	for (size_t i = 0; i < a->n; i++)
		order[i] = i;
	sort_accs = a;
	qsort(order, a->n, sizeof *order, by_acc_offset);
	if (job->acc_identity)
		memcpy(job->acc, job->acc_identity, job->acc_bytes);
	else
		memset(job->acc, 0, job->acc_bytes);
	for (size_t i = 0; i < a->n; i++)
		r->k->combine(job->acc, a->buf + order[i] * job->acc_bytes, job->acc_bytes);
	free(order);
	return 0;
}

/* Copies n DONEs' outputs into the job's output, keeps their
 * accumulators and frees the DONEs. */
static int merge_list(struct run *r, struct merge *list, size_t n)
{
	int rc = 0;
	for (size_t k = 0; k < n; k++) {
		struct merge *m = &list[k];
		const char *data = plb__msg_data(m->msg);
		if (r->map_out && m->len >= PLB__POPULATE_MIN)
			(void)plb__populate((char *)r->job->out + m->at, m->len);
		if (m->len)
			memcpy((char *)r->job->out + m->at, data + r->accpad, m->len);
		if (r->job->acc_bytes && !rc && acc_keep(r, m->off, data))
			rc = plb__fail(r->p, PLB_ENOMEM, "out of memory for the blocks' accumulators");
		plb__msg_free(m->msg);
	}
	return rc;
}

static int merge_outputs(struct run *r)
{
	int rc = merge_list(r, r->merge, (size_t)r->nmerge);
	r->nmerge = 0;
	return rc;
}

/* Is any block of l[0..n) over any of [off, off + units)? */
static int overlaps(const struct live *l, size_t n, uint64_t off, uint64_t units)
{
	for (size_t k = 0; k < n; k++)
		if (l[k].offset < off + units && off < l[k].offset + l[k].units)
			return 1;
	return 0;
}

/* Block id came back (done, failed or lost with its PU). */
static void drop_id(struct live *l, size_t *n, uint64_t id)
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
 * the transport settles (on_done), so the kept block's bytes are the last
 * written. */
static void *place_out(void *ctx, int src, const struct plb__hdr *h)
{
	struct run *r = ctx;
	struct plb *p = r->p;
	int peer = src - 1;
	if (h->type != PLB__MSG_DONE || h->status || h->arg != r->gen || r->borrow ||
	    (h->flags & PLB__F_BORROWED) || peer < 0 || peer >= p->npeer ||
	    p->peer[peer].rank < 0 || h->pu < 0 || h->pu >= p->peer[peer].npu)
		return NULL;
	int i = p->peer[peer].pu0 + h->pu;
	const struct slot *sl = NULL;
	r->apart++;
	for (int k = 0; k < PLB_MAX_GRANTS && !sl; k++)
		if (r->pu[i].s[k].used && r->pu[i].s[k].id == h->id)
			sl = &r->pu[i].s[k];
	if (!sl || sl->borrowed || sl->offset != h->offset || sl->units != h->units ||
	    h->tail != (uint64_t)sl->units * r->job->out_unit || h->len != r->accpad + h->tail ||
	    !plb_balancer_counts(r->b, i, h->id) ||
	    overlaps(r->placing, r->nplacing, sl->offset, sl->units))
		return NULL;
	struct live l = {sl->id, sl->offset, sl->units};
	if (plb__push(&r->placing, &r->nplacing, &r->capplacing, sizeof l, &l))
		return NULL;
	r->placed++;
	char *at = (char *)r->job->out + sl->offset * r->job->out_unit;
	if (r->map_out && h->tail >= PLB__POPULATE_MIN)
		(void)plb__populate(at, h->tail);
	return at;
}

int plb__push(void *v, size_t *n, size_t *cap, size_t sz, const void *x)
{
	char **a = v;
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		char *b = realloc(*a, c * sz);
		if (!b)
			return PLB_ENOMEM;
		*a = b;
		*cap = c;
	}
	memcpy(*a + *n * sz, x, sz);
	(*n)++;
	return 0;
}

static int dispatch(struct run *r, int i, const struct plb_grant *g)
{
	struct plb *p = r->p;
	struct mpu *u = &r->pu[i];
	const struct plb_job *job = r->job;
	double sent = plb__now();
	int borrow = r->borrow && !overlaps(r->live, r->nlive, g->offset, g->units), nseg = 0;
	size_t len = borrow ? sizeof(struct plb__borrow)
		     : r->res ? plb__res_len(p, u->peer, job, g, &nseg)
			      : (size_t)g->units * job->in_unit;
	void *msg = plb__msg_alloc(PLB__MSG_DISPATCH, len);
	if (!msg)
		return plb__fail(p, PLB_ENOMEM, "out of memory for a block of %zu bytes", len);
	struct plb__hdr *h = plb__msg_hdr(msg);
	h->pu = u->local;
	h->id = g->id;
	h->offset = g->offset;
	h->units = g->units;
	h->kind = (int32_t)g->kind;
	h->arg = r->gen;
	if (borrow) {
		struct plb__borrow bw = {
			job->in_unit ? (uint64_t)(uintptr_t)((const char *)job->in + g->offset * job->in_unit) : 0,
			job->out_unit ? (uint64_t)(uintptr_t)((char *)job->out + g->offset * job->out_unit) : 0};
		struct live l = {g->id, g->offset, g->units};
		memcpy(plb__msg_data(msg), &bw, sizeof bw);
		h->flags = PLB__F_BORROWED;
		if (plb__push(&r->live, &r->nlive, &r->caplive, sizeof l, &l)) {
			plb__msg_free(msg);
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		}
	} else if (r->res) {
		int rc = plb__res_fill(p, u->peer, job, g, msg, nseg, r->b, &r->unkept);
		if (rc) {
			plb__msg_free(msg);
			return rc;
		}
	} else if (len) {
		memcpy(plb__msg_data(msg), (const char *)job->in + g->offset * job->in_unit, len);
	}
	int k = 0;
	while (k < PLB_MAX_GRANTS && u->s[k].used)
		k++;
	if (k == PLB_MAX_GRANTS) {
		plb__msg_free(msg);
		return plb__fail(p, PLB_ESTATE, "more than %d grants outstanding on one PU", PLB_MAX_GRANTS);
	}
	plb__log(PLB__LOG_DEBUG, "master", "t=%.4f grant %llu to %s: %llu units at %llu (%s, predicted %.4f s)",
		 r->now - r->t0, (unsigned long long)g->id, p->pu[i].name,
		 (unsigned long long)g->units, (unsigned long long)g->offset,
		 plb_grant_kind_name(g->kind),
		 g->predicted_s);
	u->s[k] = (struct slot){g->id, g->offset, g->units, 1, borrow, g->kind, g->predicted_s, sent,
				isfinite(u->heard) ? sent - u->heard : 0};
	u->heard = NAN;
	u->nout++;
	r->bytes_out += (double)(PLB__HDR_SIZE + len);
	int rc = p->tp->ops->send(p->tp, p->peer[u->peer].rank, msg);
	if (rc)
		return plb__fail(p, rc, "sending a block to rank %d: %s", p->peer[u->peer].rank,
				 p->tp->err);
	return 0;
}

/* Ask the balancer for PU i's next blocks, up to the pipeline depth. */
static int poll_pu(struct run *r, int i)
{
	struct mpu *u = &r->pu[i];
	u->parked = 0;
	while (!u->lost && !u->finished && u->nout < r->pipeline) {
		struct plb_grant g;
		int rc = plb_balancer_next(r->b, i, r->now - r->t0, &g);
		if (rc == PLB_NEXT_WAIT) {
			/* a grant after a wait follows no DONE at once */
			u->parked = 1;
			u->heard = NAN;
			return 0;
		}
		if (rc == PLB_NEXT_DONE) {
			u->finished = 1;
			return 0;
		}
		if (rc != PLB_NEXT_GRANT)
			return plb__fail(r->p, rc < 0 ? rc : PLB_ESTATE, "balancer: %s", plb_strerror(rc));
		if ((rc = dispatch(r, i, &g)))
			return rc;
	}
	return 0;
}

/* Ask every PU told to wait again, unless the balancer says each would
 * wait (plb_balancer_idle_waits: at the end of a job thousands may wait,
 * and this runs at every DONE); *busy (if not NULL) gets how many PUs
 * are alive and hold or wait for work. */
static int poll_parked(struct run *r, int *busy)
{
	int rc = 0, n = 0, ask = !plb_balancer_idle_waits(r->b, r->now - r->t0);
	for (int i = 0; i < r->npu && !rc; i++) {
		if (ask && r->pu[i].parked)
			rc = poll_pu(r, i);
		n += !r->pu[i].lost && (r->pu[i].nout || r->pu[i].parked);
	}
	if (busy)
		*busy = n;
	return rc;
}

static int lose(struct run *r, int i)
{
	struct mpu *u = &r->pu[i];
	if (u->lost)
		return 0;
	u->lost = 1;
	u->nout = 0;
	memset(u->s, 0, sizeof u->s);
	int rc = plb_balancer_lost(r->b, i, r->now - r->t0);
	if (rc)
		return plb__fail(r->p, rc, "balancer: %s", plb_strerror(rc));
	plb__trace_instant(r->p->trace, i, r->now, "lost", "the PU is out of the run; its blocks went back to the pool");
	plb__log(PLB__LOG_WARN, "master", "PU %s is out of the run; its blocks go to the others",
		 r->p->pu[i].name);
	return 0;
}

/* A DONE narrows where its worker's run clock (which starts when START
 * arrives there) lies against this one: the block arrived after its
 * packing began here, and its DONE was heard after it was sent. Returns
 * the estimate of START's way to the worker: the middle of what every
 * block of the run so far allows (the least way out taken as the least way
 * back, as NTP does). heard: when this DONE was received (plb__now). */
static double clock_done(struct run *r, const struct plb__hdr *h, const struct slot *sl,
			 int peer, double heard)
{
	double *w = r->way[peer];
	if (isfinite(h->t_arrive) && isfinite(h->t_end)) {
		w[0] = fmax(w[0], sl->sent - r->sent - h->t_arrive);
		w[1] = fmin(w[1], heard - r->sent - h->t_end);
	}
	if (!isfinite(w[1]))
		return w[0];
	return w[0] <= w[1] ? 0.5 * (w[0] + w[1]) : w[1];
}

/* --trace: a block that came back, placed by its worker's clock moved by
 * START's estimated way (clock_done: the block is never placed past its
 * DONE's arrival here, nor its transfer before its packing began). A real
 * PU whose block crossed the link (link > 0) shows the input's way as its
 * transfer: from the start of its packing here to its arrival there. */
static void trace_done(struct run *r, int i, const struct plb__hdr *h, const struct slot *sl,
		       double heard, double link, int dropped)
{
	if (!r->p->trace)
		return;
	double at = r->sent + clock_done(r, h, sl, r->pu[i].peer, heard);
	double end = fmin(at + h->t_end, heard), start = end - h->exec_s;
	double xs = isfinite(h->t_xfer) ? at + h->t_xfer : start - h->xfer_s;
	double xe = xs + h->xfer_s;
	if (link > 0 && !isfinite(h->t_xfer)) {
		xs = sl->sent;
		xe = fmin(fmax(at + h->t_arrive, xs), start);
	}
	struct plb__trace_block tb = {
		.pu = i, .id = sl->id, .offset = sl->offset, .units = sl->units,
		.kind = plb_grant_kind_name(sl->kind), .predicted_s = sl->predicted_s,
		.xfer_start = xs, .xfer_end = xe, .start = start, .end = end,
		.dropped = dropped};
	plb__trace_block(r->p->trace, &tb);
	plb__trace_after(r->p->trace, r->b, i, r->now);
}

void plb__peer_out(struct plb *p, int k)
{
	struct plb__peer *pe = &p->peer[k];
	p->tp->no_finalize = 1;
	if (p->tp->ops->forget)
		p->tp->ops->forget(p->tp, pe->rank);
	pe->gone_rank = pe->rank;
	pe->rank = -1;
}

/* How long worker k may be silent in a run: [network] peer_timeout_min_s,
 * or PEER_GAP_FACTOR times its longest silence so far (a worker whose
 * loop stalls on a loaded machine, or whose messages queue behind a large
 * one on a slow link) or PEER_BLOCK_FACTOR times the longest predicted
 * time of a block it has out (large blocks move large messages), if more;
 * never past peer_timeout_s. A worker says ALIVE every fifth of
 * peer_timeout_min_s when it has nothing else to say. */
#define PEER_GAP_FACTOR   4
#define PEER_BLOCK_FACTOR 3
static double peer_limit(const struct run *r, int k, double *block)
{
	const struct plb *p = r->p;
	const struct plb__peer *pe = &p->peer[k];
	*block = 0;
	for (int i = pe->pu0; i < pe->pu0 + pe->npu; i++)
		for (int s = 0; s < PLB_MAX_GRANTS; s++)
			if (r->pu[i].s[s].used && isfinite(r->pu[i].s[s].predicted_s))
				*block = fmax(*block, r->pu[i].s[s].predicted_s);
	double t = fmax(PEER_GAP_FACTOR * pe->gap, PEER_BLOCK_FACTOR * *block);
	return fmin(fmax(t, plb__peer_timeout_min(&p->cfg)), p->cfg.peer_timeout_s);
}

/* Worker rank k has said nothing for `silent` seconds, past its `limit`:
 * it is gone (dead, frozen, cut off). Its PUs are taken out and their
 * blocks go back to the pool; nothing more is sent to it and what is
 * queued for it is dropped; should it come back, it is told to stop and
 * whatever it sends is ignored. MPI_Finalize would wait for it: the job
 * ends without it. */
static int rank_lost(struct run *r, int k, double silent, double limit, double block)
{
	struct plb *p = r->p;
	struct plb__peer *pe = &p->peer[k];
	int rank = pe->rank;
	plb__log(PLB__LOG_ERROR, "master", "rank %d (%s) has said nothing for %.1f s, longer than its limit of %.2f s (its longest silence before %.2f s, its longest block out predicted at %.2f s; [network] peer_timeout_min_s = %g s, peer_timeout_s = %g s): taken out of the run at %.2f s; the blocks of its %d PUs go to the others",
		 rank, pe->host, silent, limit, pe->gap, block, plb__peer_timeout_min(&p->cfg),
		 p->cfg.peer_timeout_s, r->now - r->t0, pe->npu);
	size_t n = strlen(r->lost_note);
	snprintf(r->lost_note + n, sizeof r->lost_note - n, "%srank %d on %s at %.2f s", n ? ", " : "",
		 rank, pe->host, r->now - r->t0);
	r->ranks_lost++;
	plb__peer_out(p, k);
	void *msg = plb__msg_alloc(PLB__MSG_SHUTDOWN, 0);
	if (msg) {
		plb__msg_hdr(msg)->status = PLB_EIO;
		if (p->tp->ops->send(p->tp, rank, msg))
			plb__log(PLB__LOG_INFO, "master", "rank %d cannot be told to stop: %s", rank,
				 p->tp->err);
	}
	plb__res_forget(p, k);
	for (int i = 0; i < pe->npu; i++) {
		int rc = lose(r, pe->pu0 + i);
		if (rc)
			return rc;
	}
	return 0;
}

/* Between ranks: each live worker said something within its limit
 * (peer_limit), or it is taken out; the master says ALIVE every fifth of
 * [network] peer_timeout_s when it has nothing else to say. Not between
 * the ends of one process. */
static int watch_peers(struct run *r)
{
	struct plb *p = r->p;
	double limit = p->cfg.peer_timeout_s, now = plb__now();
	double lo = plb__peer_timeout_min(&p->cfg);
	int rc = 0;
	if (p->tp->ops->same_memory)
		return 0;
	/* a master that did not look for a while (its own work, a machine
	 * that stalled) cannot tell who was silent: everyone starts afresh */
	if (plb__held_up(&r->watched, now, lo))
		for (int k = 0; k < p->npeer; k++)
			p->peer[k].heard = fmax(p->peer[k].heard, now);
	if (now - r->said >= limit / 5) {
		r->said = now;
		for (int k = 0; k < p->npeer && !rc; k++) {
			if (p->peer[k].rank < 0)
				continue;
			void *msg = plb__msg_alloc(PLB__MSG_ALIVE, 0);
			rc = msg ? p->tp->ops->send(p->tp, p->peer[k].rank, msg) : PLB_ENOMEM;
			if (rc)
				return plb__fail(p, rc, "sending to rank %d: %s", p->peer[k].rank, p->tp->err);
		}
	}
	int lost = 0;
	for (int k = 0; k < p->npeer && !rc; k++) {
		/* a worker cannot answer a run it has not received: until its
		 * first word in a run, while a send to it is under way (START
		 * with the run's shared data, its first blocks: a slow link, a
		 * loaded machine) it is not silent, for peer_timeout_s from the
		 * run's start at most (a send to a dead rank never ends) */
		if (p->peer[k].rank >= 0 && !p->peer[k].spoke && now - r->t0 < limit &&
		    p->tp->ops->pending_to && p->tp->ops->pending_to(p->tp, p->peer[k].rank) > 0)
			p->peer[k].heard = fmax(p->peer[k].heard, now);
		double silent = now - p->peer[k].heard, lim, block;
		/* peer_limit is lo at least: its scan of the PUs only then */
		if (p->peer[k].rank >= 0 && silent > lo && silent > (lim = peer_limit(r, k, &block))) {
			/* the loop's clock may be a merge of outputs old: the
			 * balancer, the log and the report take it out now */
			r->now = fmax(r->now, now);
			rc = rank_lost(r, k, silent, lim, block);
			lost = 1;
		}
	}
	/* its blocks are back in the pool: the PUs told to wait take them */
	return rc || !lost ? rc : poll_parked(r, NULL);
}

static void touch(struct run *r, int i)
{
	if (!r->pu[i].touched) {
		r->pu[i].touched = 1;
		r->touched[r->ntouched++] = i;
	}
}

/* A block's time between the nodes: its round trip, from the start of its
 * packing here to its DONE's receipt, less its time on the worker (from
 * its DISPATCH's arrival to its DONE): the packing, the input's and the
 * output's way over the network, queueing behind other blocks' sends, and
 * this loop's delay in hearing back; no clocks are compared across nodes.
 * 0 where the worker's times are unknown. Every block's, with the master's
 * delay from the DONE it followed (slot.turn), is its PU's round trip
 * (plb_sample.link_s): an emulated PU's messages and a borrowed block's
 * take real ways too. A real PU's block that travelled (not borrowed) is
 * also its link time, logged and traced only: the link is shared by every
 * PU's blocks, so charged to the PU whose block waited it moves work to
 * PUs whose bytes take the same way (docs/DESIGN.md); an emulated PU's
 * transfer model stands for its link. */
static double away_time(const struct plb__hdr *h, const struct slot *sl, double heard)
{
	if (!isfinite(h->t_arrive) || !isfinite(h->t_end))
		return 0;
	double t = (heard - sl->sent) - (h->t_end - h->t_arrive);
	return t > 0 ? t : 0;
}

static int on_done(struct run *r, int peer, void *msg)
{
	struct plb *p = r->p;
	struct plb__hdr *h = plb__msg_hdr(msg);
	struct plb__peer *pe = &p->peer[peer];
	int rc;

	if (h->pu < 0 || h->pu >= pe->npu)
		return plb__fail(p, PLB_EIO, "DONE from rank %d for PU %d, which it does not have",
				 pe->rank, h->pu);
	int i = pe->pu0 + h->pu;
	struct mpu *u = &r->pu[i];
	pe->idle_wall_s = h->d0;
	pe->idle_cpu_s = h->d1;
	if ((h->flags & PLB__F_BORROWED) && h->arg == r->gen)
		drop_id(r->live, &r->nlive, h->id);  /* a borrowed block is back */
	if (h->flags & PLB__F_PLACED)
		drop_id(r->placing, &r->nplacing, h->id);
	int k = 0;
	while (k < PLB_MAX_GRANTS && !(u->s[k].used && u->s[k].id == h->id))
		k++;
	if (k == PLB_MAX_GRANTS || h->arg != r->gen)
		return 0;       /* from a PU already taken out (its block was granted
				 * again), or from an earlier run */
	struct slot sl = u->s[k];
	u->s[k].used = 0;
	u->nout--;
	touch(r, i);
	if (h->status) {
		plb__log(PLB__LOG_ERROR, "master", "PU %s failed block %llu: %s", p->pu[i].name,
			 (unsigned long long)sl.id, plb_strerror(h->status));
		plb__trace_instant(p->trace, i, r->now, "kernel failed", plb_strerror(h->status));
		return lose(r, i);
	}
	size_t want = sl.borrowed ? 0 : (size_t)sl.units * r->job->out_unit;
	if (h->units != sl.units || h->offset != sl.offset || h->len != r->accpad + want ||
	    !(h->flags & PLB__F_BORROWED) != !sl.borrowed)
		return plb__fail(p, PLB_EIO, "DONE for block %llu from %s does not match its grant (%llu bytes, expected %zu)",
				 (unsigned long long)sl.id, p->pu[i].name, (unsigned long long)h->len,
				 r->accpad + want);
	double heard = plb__now(), away = away_time(h, &sl, heard);
	double link = sl.borrowed || p->pu[i].model >= 0 ? 0 : away;
	struct plb_sample smp = {.grant_id = sl.id, .exec_s = h->exec_s, .xfer_s = h->xfer_s,
				 .finish = r->now - r->t0, .link_s = away + sl.turn};
	u->heard = heard;
	plb__log(PLB__LOG_DEBUG, "master", "t=%.4f done %llu on %s: exec %.4f s, xfer %.4f s, link %.4f s",
		 smp.finish, (unsigned long long)sl.id, p->pu[i].name, h->exec_s, h->xfer_s, link);
	rc = plb_balancer_done(r->b, i, &smp);
	if (rc == PLB_ESTALE) {
		trace_done(r, i, h, &sl, heard, link, 1);
		return 0;
	}
	if (rc)
		return plb__fail(p, rc, "balancer: %s", plb_strerror(rc));
	trace_done(r, i, h, &sl, heard, link, 0);
	int placed = (h->flags & PLB__F_PLACED) != 0;
	struct merge m = {msg, sl.offset * r->job->out_unit, placed ? 0 : want, sl.offset};
	if ((r->borrow && !sl.borrowed) ||
	    (!placed && overlaps(r->placing, r->nplacing, sl.offset, sl.units))) {
		/* a borrowed copy of these units, or a placed one that lost
		 * the race, may still be writing them */
		if (plb__push(&r->late, &r->nlate, &r->caplate, sizeof m, &m))
			return plb__fail(p, PLB_ENOMEM, "out of memory");
	} else {
		r->merge[r->nmerge++] = m;
	}
	if ((rc = plb__coverage_add(&r->cov, sl.offset, sl.units)))
		return plb__fail(p, rc, "out of memory");
	u->busy += h->busy_s;
	u->units += (double)sl.units;
	u->blocks++;
	u->overran += (h->flags & PLB__F_OVERRAN) != 0;
	u->last_finish = r->now - r->t0;
	/* the bound's rate: blocks of a millisecond or more (a shorter one
	 * is the timer, the dispatch and a cache holding the whole block: a
	 * CPU ran 64 k-means points at 3x the rate it keeps on large blocks),
	 * any block while none is that long */
	double t = h->exec_s + h->xfer_s, rate = t > 0 ? (double)sl.units / t : 0;
	if (t >= RATE_MIN_S && !u->long_block) {
		u->long_block = 1;
		u->best_rate = 0;
	}
	if ((t >= RATE_MIN_S || !u->long_block) && rate > u->best_rate)
		u->best_rate = rate;
	if (plb_balancer_finished(r->b)) {
		r->finished = 1;
		r->end = r->now;
	}
	return 0;
}

/* The progress line, on a terminal (stderr; or --progress), for runs past
 * PROGRESS_AFTER_S:
 * units done, elapsed, what the models say is left, blocks. The time left
 * is the units left over the PUs' rates at their mean block so far (each
 * PU's model's prediction); before every live PU has a model, the rate so
 * far. end: the run is over: the line is cleared. */
static void progress(struct run *r, int end)
{
	double el = r->now - r->t0;
	if (!r->tty || (!end && (el < PROGRESS_AFTER_S || r->now - r->shown < PROGRESS_EVERY_S)))
		return;
	if (end) {
		if (r->shown > 0)
			fputs("\r\033[K", stderr);
		plb__log_progress(0);
		return;
	}
	r->shown = r->now;
	struct plb_balancer_stats st;
	plb_balancer_stats(r->b, &st);
	double rate = 0, left = (double)(r->W - st.units_done);
	for (int i = 0; i < r->npu && rate >= 0; i++) {
		const struct mpu *u = &r->pu[i];
		if (u->lost)
			continue;
		double b = u->blocks ? u->units / (double)u->blocks : 0, t = plb_balancer_predict(r->b, i, b);
		rate = b > 0 && t > 0 ? rate + b / t : -1;
	}
	if (!(rate > 0))
		rate = st.units_done ? (double)st.units_done / el : 0;
	char eta[48] = "";
	if (rate > 0)
		snprintf(eta, sizeof eta, ", about %.1f s left", left / rate);
	fprintf(stderr, "\rplb: run %d: %5.1f%% of %llu units, %.1f s%s, %ld blocks\033[K", r->gen,
		100.0 * (double)st.units_done / (double)r->W, (unsigned long long)r->W, el, eta, st.blocks);
	fflush(stderr);
	plb__log_progress(1);
}

static int on_message(struct run *r, void *msg, int src)
{
	struct plb *p = r->p;
	struct plb__hdr *h = plb__msg_hdr(msg);
	int peer = src - 1;

	if (peer < 0 || peer >= p->npeer)
		return plb__fail(p, PLB_EIO, "message from unknown rank %d", src);
	if (p->peer[peer].rank < 0)
		return 0;       /* a rank taken out (it came back late): ignored */
	p->peer[peer].gap = fmax(p->peer[peer].gap, r->now - p->peer[peer].heard);
	p->peer[peer].heard = r->now;
	p->peer[peer].spoke = 1;
	r->bytes_in += (double)(PLB__HDR_SIZE + h->len);
	switch (h->type) {
	case PLB__MSG_ALIVE:
		return 0;
	case PLB__MSG_DONE:
		return on_done(r, peer, msg);
	case PLB__MSG_LOST:
		if (h->pu < 0 || h->pu >= p->peer[peer].npu)
			return plb__fail(p, PLB_EIO, "LOST from rank %d for PU %d", src, h->pu);
		if ((h->flags & PLB__F_BORROWED) && h->arg == r->gen)
			drop_id(r->live, &r->nlive, h->id);  /* a borrowed block is back */
		touch(r, p->peer[peer].pu0 + h->pu);
		return lose(r, p->peer[peer].pu0 + h->pu);
	case PLB__MSG_BYE:
		/* the worker stopped on an error of its own: its PUs are gone */
		plb__log(PLB__LOG_ERROR, "master", "rank %d stopped: %s", src, plb_strerror(h->status));
		p->peer[peer].rank = -1;
		plb__res_forget(p, peer);
		for (int i = 0; i < p->peer[peer].npu; i++) {
			int rc = lose(r, p->peer[peer].pu0 + i);
			if (rc)
				return rc;
		}
		return 0;
	default:
		return plb__fail(p, PLB_EIO, "unexpected message type %u from rank %d", h->type, src);
	}
}

/* START: the kernel's name, the shared data (padded; borrowed: its
 * address), the accumulator's identity (zero bytes if the job gives none). */
static int start_workers(struct run *r, const char *kernel)
{
	struct plb *p = r->p;
	const struct plb_job *job = r->job;
	size_t nlen = PLB__KERNEL_NAME_MAX;
	int kept = plb__res_shared_kept(p, job, r->borrow);
	p->res.valid_shared = 0;        /* until the run has ended well (plb__res_end) */
	size_t spart = r->borrow ? sizeof(struct plb__borrow) : kept ? 0 : job->shared_bytes;
	size_t at = nlen + plb__pad16(spart);
	size_t len = job->acc_bytes ? at + job->acc_bytes : nlen + spart;
	for (int w = 0; w < p->npeer; w++) {
		if (p->peer[w].rank < 0)
			continue;       /* gone in an earlier run */
		void *msg = plb__msg_alloc(PLB__MSG_START, len);
		if (!msg)
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		struct plb__hdr *h = plb__msg_hdr(msg);
		char *data = plb__msg_data(msg);
		memset(data, 0, len);
		memcpy(data, kernel, strlen(kernel));
		if (r->borrow) {
			struct plb__borrow bw = {(uint64_t)(uintptr_t)job->shared, 0};
			memcpy(data + nlen, &bw, sizeof bw);
			h->flags = PLB__F_BORROWED;
		} else if (kept) {
			h->flags = PLB__F_SHARED_KEPT;
		} else if (job->shared_bytes) {
			memcpy(data + nlen, job->shared, job->shared_bytes);
		}
		if (job->acc_bytes && job->acc_identity)
			memcpy(data + at, job->acc_identity, job->acc_bytes);
		if (r->reuse)
			h->flags |= PLB__F_REUSE;
		if (!r->map_out)
			h->flags |= PLB__F_OUT_MAPPED;
		h->d0 = (double)job->in_unit;
		h->d1 = (double)job->out_unit;
		h->id = p->cfg.seed;
		h->offset = (uint64_t)p->peer[w].pu0;
		h->units = job->shared_bytes;
		r->bytes_out += (double)(PLB__HDR_SIZE + len);
		int rc = p->tp->ops->send(p->tp, p->peer[w].rank, msg);
		if (rc)
			return plb__fail(p, rc, "sending the run to rank %d: %s", p->peer[w].rank, p->tp->err);
	}
	return 0;
}

/* END to every worker; ack: each answers ENDED once its PUs have left
 * the run. */
static int end_workers(struct plb *p, int ack)
{
	for (int w = 0; w < p->npeer; w++) {
		if (p->peer[w].rank < 0)
			continue;
		void *msg = plb__msg_alloc(PLB__MSG_END, 0);
		if (!msg)
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		plb__msg_hdr(msg)->arg = ack;
		int rc = p->tp->ops->send(p->tp, p->peer[w].rank, msg);
		if (rc)
			return plb__fail(p, rc, "ending the run on rank %d: %s", p->peer[w].rank, p->tp->err);
	}
	return 0;
}

/* A run with borrowed blocks ends (also on an error): END, then wait until
 * every worker has left the run, so that no PU reads or writes the job's
 * memory once plb_run returns; then the copied blocks over borrowed units
 * are merged, last. Messages still arriving are of this run's blocks
 * that lost the race, or failed: the run is over, they are dropped. */
static int end_borrowed(struct run *r)
{
	struct plb *p = r->p;
	struct plb__backoff bo = {0};
	int rc = end_workers(p, 1), left = 0, said = 0;
	double t0 = plb__now();

	for (int w = 0; w < p->npeer; w++)
		left += p->peer[w].rank >= 0;
	plb__backoff_reset(&bo);
	while (left > 0) {
		void *msg;
		int src, got = p->tp->ops->recv(p->tp, &msg, &src);
		if (got < 0) {
			rc = rc ? rc : plb__fail(p, got, "receiving: %s", p->tp->err);
			break;
		}
		if (got) {
			uint32_t type = plb__msg_hdr(msg)->type;
			left -= type == PLB__MSG_ENDED || type == PLB__MSG_BYE;
			plb__msg_free(msg);
			plb__backoff_reset(&bo);
			continue;
		}
		if (!said && plb__now() - t0 > 1) {
			said = 1;
			plb__log(PLB__LOG_INFO, "master", "waiting for the PUs still running a block in the job's memory (%zu borrowed blocks not back)",
				 r->nlive);
		}
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
	r->nlive = 0;
	int mrc = merge_list(r, r->late, r->nlate);
	r->nlate = 0;
	return rc ? rc : mrc;
}

void plb__run_result_free(struct plb__run_result *res, int npu)
{
	if (!res)
		return;
	if (res->names)
		for (int i = 0; i < npu; i++)
			free(res->names[i]);
	free(res->names);
	free(res->idle);
	free(res->units);
	free(res->overran);
	free(res);
}

/* The report: emulated PUs bound by their models, real ones by their best
 * measured rate (a linear curve through it). */
static int report(struct run *r, double wall)
{
	struct plb *p = r->p;
	struct plb__run_result *res = calloc(1, sizeof *res);
	const struct plb__devmodel **m = calloc((size_t)r->npu, sizeof *m);
	struct plb__devmodel *real = calloc((size_t)r->npu, sizeof *real);
	double (*coef)[2] = calloc((size_t)r->npu, sizeof *coef);
	struct plb_balancer_stats st;
	int nm = 0, nreal = 0, rc = 0;

	if (!res || !m || !real || !coef || !(res->names = calloc((size_t)r->npu, sizeof *res->names)) ||
	    !(res->idle = calloc((size_t)r->npu, sizeof *res->idle)) ||
	    !(res->units = calloc((size_t)r->npu, sizeof *res->units)) ||
	    !(res->overran = calloc((size_t)r->npu, sizeof *res->overran))) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;
	}
	plb_balancer_stats(r->b, &st);
	struct plb__report *rep = &res->rep;
	double makespan = r->end - r->t0, first = INFINITY, last = -INFINITY;
	for (int i = 0; i < r->npu; i++) {
		struct mpu *u = &r->pu[i];
		const struct plb__pu_desc *d = &p->pu[i];
		if (!(res->names[i] = strdup(d->name))) {
			rc = plb__fail(p, PLB_ENOMEM, "out of memory");
			goto out;
		}
		res->idle[i] = makespan > 0 ? fmax(0, 1 - u->busy / makespan) : 0;
		res->units[i] = u->units;
		res->overran[i] = u->overran;
		if (d->model >= 0) {             /* emulated: its true curve */
			m[nm++] = &p->cfg.models[d->model];
		} else if (u->best_rate > 0) {
			coef[nreal][0] = 0;
			coef[nreal][1] = 1 / u->best_rate;
			real[nreal].compute = (struct plb__curve_spec){.kind = PLB__CURVE_POLY, .n = 2,
								       .c = coef[nreal]};
			real[nreal].fail_t = INFINITY;
			m[nm++] = &real[nreal++];
		}
		if (u->blocks && !u->lost) {
			first = fmin(first, u->last_finish);
			last = fmax(last, u->last_finish);
		}
	}
	rep->scenario = p->cfg.path;
	rep->policy = p->policy;
	rep->seed = p->cfg.seed;
	rep->units = r->W;
	rep->units_done = st.units_done;
	rep->coverage_ok = r->finished && plb__coverage_ok(&r->cov, r->W);
	rep->makespan_s = makespan;
	rep->lower_bound_s = plb__bound_lower(m, nm, (double)r->W, r->pipeline > 1);
	rep->eq_optimum_s = plb__bound_eq(m, nm, (double)r->W);
	snprintf(res->note, sizeof res->note, "%s%s%s",
		 nm - nreal ? "emulated PUs: their models" : "",
		 nm - nreal && nreal ? "; " : "",
		 nreal ? "real PUs: their best measured rate (an estimate: their true curves are unknown)" : "");
	if (r->pipeline > 1)
		snprintf(res->note + strlen(res->note), sizeof res->note - strlen(res->note),
			 "; E = max(F, G): transfers overlap compute");
	rep->bound_note = res->note;
	rep->imbalance = last >= first && makespan > 0 ? (last - first) / makespan : NAN;
	rep->npu = r->npu;
	rep->pu_names = (const char *const *)res->names;
	rep->idle_frac = res->idle;
	rep->pu_units = res->units;
	rep->overran = res->overran;
	rep->ranks_lost = r->ranks_lost;
	snprintf(res->lost_note, sizeof res->lost_note, "%s", r->lost_note);
	rep->ranks_note = res->lost_note;
	plb__report_set_stats(rep, &st);
	rep->wall_s = wall;
	rep->bytes_sent = r->bytes_out;
	rep->bytes_received = r->bytes_in;
	rep->warm_pus = r->warm;
	rep->resident_bytes = r->resident;
	rep->unkept_bytes = r->unkept;
	rep->master_cpu_s = r->cpu;
	double iw = 0, ic = 0;
	for (int w = 0; w < p->npeer; w++) {
		iw += p->peer[w].idle_wall_s;
		ic += p->peer[w].idle_cpu_s;
	}
	/* in one process the worker's CPU cannot be told from the master's */
	res->worker_idle_cpu = iw > 0 && !p->single ? ic / iw : NAN;
	plb__run_result_free(p->last, p->npu);
	p->last = res;
	res = NULL;
out:
	plb__run_result_free(res, r->npu);
	free(m);
	free(real);
	free(coef);
	return rc;
}

int plb_run(plb_t *p, const struct plb_job *job)
{
	struct run r = {.p = p, .job = job};
	struct plb__backoff bo = {0};
	int rc;

	if (!p || !p->master)
		return p ? plb__fail(p, PLB_ESTATE, "plb_run: only the master (rank 0) runs jobs") : PLB_EINVAL;
	if (p->failed)
		return plb__fail(p, PLB_ESTATE, "plb_run: plb_init failed");
	if (!job || !job->kernel || !(r.k = plb__kernel_find(p, job->kernel)))
		return plb__fail(p, PLB_ENOENT, "plb_run: kernel '%s' is not in plb_options.kernels",
				 job && job->kernel ? job->kernel : "(null)");
	if (strlen(job->kernel) >= PLB__KERNEL_NAME_MAX)
		return plb__fail(p, PLB_EINVAL, "plb_run: kernel name '%.40s...' is too long; accepted: up to %d characters",
				 job->kernel, PLB__KERNEL_NAME_MAX - 1);
	r.W = job->units ? job->units : (uint64_t)p->cfg.units;
	if (!r.W)
		return plb__fail(p, PLB_EINVAL, "plb_run: the domain's size is not known: job.units is 0 and %s has no [run] units; accepted: either, an integer >= 1",
				 p->cfg.path);
	if ((job->in_unit && !job->in) || (job->out_unit && !job->out) ||
	    (job->shared_bytes && !job->shared) || (job->acc_bytes && !job->acc))
		return plb__fail(p, PLB_EINVAL, "plb_run: in, out, shared or acc is NULL but its size is not 0");
	if (job->acc_bytes && !r.k->combine)
		return plb__fail(p, PLB_EINVAL, "plb_run: the job has an accumulator (acc_bytes %zu) but kernel '%s' has no combine function",
				 job->acc_bytes, job->kernel);
	r.accpad = plb__pad16(job->acc_bytes);
	r.npu = p->npu;
	r.pipeline = p->cfg.pipeline;
	r.gen = ++p->runs;
	r.pu = calloc((size_t)r.npu, sizeof *r.pu);
	r.touched = calloc((size_t)r.npu, sizeof *r.touched);
	r.merge = calloc(BATCH, sizeof *r.merge);
	r.way = calloc((size_t)p->npeer + 1, sizeof *r.way);
	if (!r.pu || !r.touched || !r.merge || !r.way) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;
	}
	for (int w = 0; w < p->npeer; w++) {
		r.way[w][1] = INFINITY;
		for (int k = 0; k < p->peer[w].npu; k++) {
			r.pu[p->peer[w].pu0 + k].peer = w;
			r.pu[p->peer[w].pu0 + k].local = k;
			r.pu[p->peer[w].pu0 + k].heard = NAN;
		}
	}
	rc = plb_balancer_create(&p->cfg.params, p->policy, r.npu, r.W, &r.b);
	if (rc) {
		rc = plb__fail(p, rc, "cannot create the balancer (policy %s, %d PUs, %llu units): %s",
			       p->policy, r.npu, (unsigned long long)r.W, plb_strerror(rc));
		goto out;
	}
	if (p->cfg.keep_models && (r.warm = plb__kept_warm(p, job, r.b)) < 0) {
		rc = plb__fail(p, r.warm, "balancer: the kept models: %s", plb_strerror(r.warm));
		goto out;
	}
	r.borrow = p->tp->ops->same_memory && p->cfg.in_place;
	if ((r.res = plb__res_begin(p, job, r.W, r.borrow, r.b, &r.reuse)) < 0) {
		rc = r.res;
		goto out;
	}
	/* the output the last run wrote whole has its pages mapped; until this
	 * run ends well nothing is known of it (the app may free it after) */
	size_t out_bytes = (size_t)r.W * job->out_unit;
	r.map_out = !(job->out && job->out == p->out_mapped && out_bytes == p->out_mapped_bytes);
	p->out_mapped = NULL;
	double wall0 = r.sent = plb__now();
	plb__trace_begin(p->trace);
	if ((rc = start_workers(&r, job->kernel))) {
		/* a START may have gone: its run must still end */
		if (r.borrow)
			(void)end_borrowed(&r);
		goto out;
	}
	r.t0 = r.now = r.said = r.watched = plb__now();
	r.cpu0 = plb__cpu_now();
	for (int w = 0; w < p->npeer; w++) {
		p->peer[w].heard = r.t0;
		p->peer[w].spoke = 0;
		/* a rank gone in an earlier run has no PU in this one */
		for (int k = 0; p->peer[w].rank < 0 && k < p->peer[w].npu && !rc; k++)
			rc = lose(&r, p->peer[w].pu0 + k);
	}
	r.tty = !p->quiet && (p->progress || isatty(STDERR_FILENO));
	p->tp->place = place_out;
	p->tp->place_ctx = &r;
	for (int i = 0; i < r.npu && !rc; i++)
		rc = poll_pu(&r, i);
	plb__trace_after(p->trace, r.b, -1, plb__now());
	/* when the PUs told to wait should be asked again with no message in
	 * between (a late block worth running again): it moves only with the
	 * balancer's state, so it is asked after each batch, not each spin */
	double wake = plb_balancer_wake(r.b);
	int wakes = p->tp->ops->wakes;  /* a message wakes this loop: it may sleep long */
	bo.cap_us = wakes ? PLB__BACKOFF_WAKE_US : 0;
	plb__backoff_reset(&bo);
	while (!rc && !r.finished) {
		void *msg;
		int src, n = 0;
		unsigned long seen = wakes ? plb__waiter_seen(&p->wt) : 0;
		r.ntouched = 0;
		r.now = plb__now();
		while (n < BATCH && !rc) {
			int got = p->tp->ops->recv(p->tp, &msg, &src);
			if (got < 0) {
				rc = plb__fail(p, got, "receiving: %s", p->tp->err);
				break;
			}
			if (!got)
				break;
			n++;
			size_t kept = (size_t)r.nmerge + r.nlate;
			rc = on_message(&r, msg, src);
			if ((size_t)r.nmerge + r.nlate == kept)    /* not a DONE whose output waits */
				plb__msg_free(msg);
		}
		if (rc || r.finished) {
			int mrc = merge_outputs(&r);
			rc = rc ? rc : mrc;
			break;
		}
		if (n) {
			/* the PUs that reported, then every PU told to wait */
			for (int k = 0; k < r.ntouched && !rc; k++) {
				r.pu[r.touched[k]].touched = 0;
				rc = poll_pu(&r, r.touched[k]);
			}
			int busy = 0;
			if (!rc)
				rc = poll_parked(&r, &busy);
			if (!rc && !busy) {
				struct plb_balancer_stats st;
				plb_balancer_stats(r.b, &st);
				rc = plb__fail(p, PLB_EIO, "every PU is lost or idle with %llu of %llu units not done",
					       (unsigned long long)(r.W - st.units_done), (unsigned long long)r.W);
			}
			int mrc = merge_outputs(&r);
			rc = rc ? rc : mrc;
			plb__trace_after(p->trace, r.b, -1, plb__now());
			progress(&r, 0);
			if (!rc)
				rc = watch_peers(&r);
			wake = plb_balancer_wake(r.b);
			plb__backoff_reset(&bo);
			continue;
		}
		if (r.now - r.t0 >= wake) {
			rc = poll_parked(&r, NULL);
			plb__trace_after(p->trace, r.b, -1, plb__now());
			wake = plb_balancer_wake(r.b);
		}
		progress(&r, 0);
		if (!rc)
			rc = watch_peers(&r);
		long us = plb__backoff_next(&bo, p->tp->ops->pending(p->tp));
		if (us >= PLB__BACKOFF_POLL_US && wakes) {
			/* until a message, or the balancer's wake time */
			double left = wake - (plb__now() - r.t0);
			if (left < us * 1e-6)
				us = left > 0 ? (long)(left * 1e6) + 1 : 1;
			plb__waiter_wait(&p->wt, seen, us);
		} else if (us > 0) {
			nanosleep(&(struct timespec){0, us * 1000}, NULL);
		}
	}
	/* no output is placed any more; those on their way arrive before
	 * anything is merged over them, and before plb_run returns */
	p->tp->place = NULL;
	p->tp->place_ctx = NULL;
	if (p->tp->ops->settle) {
		int src = p->tp->ops->settle(p->tp, p->cfg.peer_timeout_s);
		if (src && !rc)
			rc = plb__fail(p, src, "%s; job.out is not to be trusted", p->tp->err);
	}
	if (r.apart)
		plb__log(PLB__LOG_DEBUG, "master", "%ld of %ld block outputs sent apart were received in place",
			 r.placed, r.apart);
	r.cpu = plb__cpu_now() - r.cpu0;
	progress(&r, 1);
	if (p->trace) {
		char name[PLB__KERNEL_NAME_MAX + 32];
		snprintf(name, sizeof name, "run %d: %s", r.gen, job->kernel);
		double end = r.finished ? r.end : plb__now();
		plb__trace_run(p->trace, r.sent, end, name, p->policy, r.W);
		plb__trace_models(p->trace, r.b, r.npu, end);
	}
	if (r.borrow) {
		int erc = end_borrowed(&r);
		rc = rc ? rc : erc;
	} else {
		int mrc = merge_list(&r, r.late, r.nlate);
		r.nlate = 0;
		rc = rc ? rc : mrc;
		if (!rc)
			rc = end_workers(p, 0);
	}
	r.resident = plb__res_end(p, job, r.W, r.res, r.borrow, !rc);
	if (!rc)
		rc = report(&r, plb__now() - wall0);
	if (!rc && p->last->rep.coverage_ok) {
		p->out_mapped = job->out;
		p->out_mapped_bytes = out_bytes;
	}
	/* the coverage record is kept apart from the balancer's counts: when
	 * they disagree the output cannot be trusted (the report stays) */
	if (!rc && !p->last->rep.coverage_ok)
		rc = plb__fail(p, PLB_EIO, "plb_run: the blocks that came back do not cover "
			       "[0, %llu) exactly once (a hole or an overlap); job.out is not "
			       "to be trusted", (unsigned long long)r.W);
	if (!rc && job->acc_bytes)
		rc = acc_finish(&r);
	if (!rc) {
		int *lost = calloc((size_t)r.npu + 1, sizeof *lost);
		for (int i = 0; lost && i < r.npu; i++)
			lost[i] = r.pu[i].lost;
		if (!lost || plb__kept_store(p, job, r.b, lost))
			rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		free(lost);
	}
out:
	for (size_t k = 0; k < r.nlate; k++)
		plb__msg_free(r.late[k].msg);
	free(r.late);
	free(r.live);
	free(r.placing);
	free(r.acc.off);
	free(r.acc.buf);
	plb__coverage_fini(&r.cov);
	plb_balancer_destroy(r.b);
	free(r.pu);
	free(r.touched);
	free(r.merge);
	free(r.way);
	return rc;
}

int plb_report(plb_t *p, FILE *f, int json)
{
	if (!p || !p->master || !p->last)
		return p ? plb__fail(p, PLB_ESTATE, "plb_report: no run on this rank") : PLB_EINVAL;
	struct plb__run_result *res = p->last;
	if (!json) {
		plb__report_text(&res->rep, f);
		if (!isnan(res->worker_idle_cpu))
			fprintf(f, "idle worker CPU   %.1f%% of a core (while its PUs had no block)\n",
				100 * res->worker_idle_cpu);
		return 0;
	}
	cJSON *o = plb__report_json(&res->rep);
	if (!o || !cJSON_AddNumberToObject(o, "worker_idle_cpu",
					   isnan(res->worker_idle_cpu) ? -1 : res->worker_idle_cpu) ||
	    !cJSON_AddStringToObject(o, "runtime", p->tp->ops->name)) {
		cJSON_Delete(o);
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	fprintf(f, "%s\n", s);
	free(s);
	return 0;
}

double plb_ratio(const plb_t *p)
{
	return p && p->last ? plb__report_ratio(&p->last->rep) : NAN;
}

int plb_result(const plb_t *p, struct plb_result *out)
{
	if (!p || !out || !p->master || !p->last)
		return p && out ? PLB_ESTATE : PLB_EINVAL;
	const struct plb__report *r = &p->last->rep;
	*out = (struct plb_result){
		.units = r->units, .coverage_ok = r->coverage_ok, .makespan_s = r->makespan_s,
		.lower_bound_s = r->lower_bound_s, .ratio = plb__report_ratio(r),
		.imbalance = r->imbalance, .wall_s = r->wall_s, .bytes_sent = r->bytes_sent,
		.bytes_received = r->bytes_received, .blocks = r->blocks,
		.training_blocks = r->training_blocks, .npu = r->npu, .pus_lost = r->pus_lost,
		.warm_pus = r->warm_pus, .resident_bytes = r->resident_bytes,
		.unkept_bytes = r->unkept_bytes, .master_cpu_s = r->master_cpu_s,
	};
	return 0;
}

int plb_pu_result(const plb_t *p, int pu, struct plb_pu_result *out)
{
	if (!p || !out || !p->master || !p->last)
		return p && out ? PLB_ESTATE : PLB_EINVAL;
	const struct plb__report *r = &p->last->rep;
	if (pu < 0 || pu >= r->npu)
		return PLB_EINVAL;
	*out = (struct plb_pu_result){r->pu_names[pu], r->pu_units[pu], r->idle_frac[pu]};
	return 0;
}
