/* A block's way through the master (run.h): its grant packed into a
 * DISPATCH and sent to its worker; its DONE checked against the grant,
 * its sample given to the balancer (through the driver) and its output
 * handed to output.c; a PU that failed or whose rank went silent taken
 * out; the block placed in the trace on the master's clock. */
#include <math.h>
#include <string.h>

#include "balancer/base/log.h"
#include "runtime/core/resident.h"
#include "runtime/core/run.h"

#define RATE_MIN_S 1e-3        /* blocks shorter than this set no rate for the bound (on_done) */

int plb__run_drove(struct plb__run *r, int rc)
{
	if (rc && r->d.failed)
		return plb__fail(r->p, rc, "balancer: %s", plb_strerror(rc));
	return rc;
}

int plb__run_dispatch(void *ctx, int i, const struct plb__grant *g)
{
	struct plb__run *r = ctx;
	struct plb *p = r->p;
	struct plb__mpu *u = &r->pu[i];
	const struct plb_job *job = r->job;
	double sent = plb__now();
	int borrow = r->out.borrow && !plb__out_overlaps(r->out.live, r->out.nlive, g->offset, g->units);
	int nseg = 0;
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
	h->run = r->gen;
	int rc = 0;
	if (borrow) {
		h->flags = PLB__F_BORROWED;
		rc = plb__out_borrow(r, g, plb__msg_data(msg));
	} else if (r->res) {
		rc = plb__res_fill(p, u->peer, job, g, msg, nseg, r->b, &r->unkept);
	} else if (len) {
		memcpy(plb__msg_data(msg), (const char *)job->in + g->offset * job->in_unit, len);
	}
	if (rc) {
		plb__msg_free(msg);
		return rc;
	}
	int k = 0;
	while (k < PLB__MAX_GRANTS && u->s[k].used)
		k++;
	if (k == PLB__MAX_GRANTS) {
		plb__msg_free(msg);
		return plb__fail(p, PLB_ESTATE, "more than %d grants outstanding on one PU", PLB__MAX_GRANTS);
	}
	plb__log(PLB__LOG_DEBUG, "master", "t=%.4f grant %llu to %s: %llu units at %llu (%s, predicted %.4f s)",
		 r->now - r->t0, (unsigned long long)g->id, p->pu[i].name,
		 (unsigned long long)g->units, (unsigned long long)g->offset,
		 plb__grant_kind_name(g->kind),
		 g->predicted_s);
	u->s[k] = (struct plb__slot){g->id, g->offset, g->units, 1, borrow, g->kind, g->predicted_s, sent,
				     isfinite(u->heard) ? sent - u->heard : 0,
				     (double)(PLB__HDR_SIZE + len)};
	u->heard = NAN;
	r->bytes_out += (double)(PLB__HDR_SIZE + len);
	rc = p->tp->ops->send(p->tp, p->peer[u->peer].rank, msg);
	if (rc)
		return plb__fail(p, rc, "sending a block to rank %d: %s", p->peer[u->peer].rank,
				 p->tp->err);
	return 0;
}

int plb__run_lose(struct plb__run *r, int i)
{
	if (r->d.pu[i].lost)
		return 0;
	memset(r->pu[i].s, 0, sizeof r->pu[i].s);
	int rc = plb__run_drove(r, plb__driver_lost(&r->d, i, r->now - r->t0));
	if (rc)
		return rc;
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
static double clock_done(struct plb__run *r, const struct plb__hdr *h, const struct plb__slot *sl,
			 int peer, double heard)
{
	double *w = r->watch.way[peer];
	if (isfinite(h->t_arrive) && isfinite(h->t_end)) {
		w[0] = fmax(w[0], sl->sent - r->watch.sent - h->t_arrive);
		w[1] = fmin(w[1], heard - r->watch.sent - h->t_end);
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
static void trace_done(struct plb__run *r, int i, const struct plb__hdr *h,
		       const struct plb__slot *sl, double heard, double link, int dropped)
{
	if (!r->p->trace)
		return;
	double at = r->watch.sent + clock_done(r, h, sl, r->pu[i].peer, heard);
	double end = fmin(at + h->t_end, heard), start = end - h->exec_s;
	double xs = isfinite(h->t_xfer) ? at + h->t_xfer : start - h->xfer_s;
	double xe = xs + h->xfer_s;
	if (link > 0 && !isfinite(h->t_xfer)) {
		xs = sl->sent;
		xe = fmin(fmax(at + h->t_arrive, xs), start);
	}
	struct plb__trace_block tb = {
		.pu = i, .id = sl->id, .offset = sl->offset, .units = sl->units,
		.kind = plb__grant_kind_name(sl->kind), .predicted_s = sl->predicted_s,
		.xfer_start = xs, .xfer_end = xe, .start = start, .end = end,
		.dropped = dropped};
	plb__trace_block(r->p->trace, &tb);
	plb__trace_after(r->p->trace, r->b, i, r->now);
}

/* A block's time between the nodes: its round trip, from the start of its
 * packing here to its DONE's receipt, less its time on the worker (from
 * its DISPATCH's arrival to its DONE): the packing, the input's and the
 * output's way over the network, queueing behind other blocks' sends, and
 * this loop's delay in hearing back; no clocks are compared across nodes.
 * 0 where the worker's times are unknown. Every block's, with the master's
 * delay from the DONE it followed (slot.turn), is its PU's round trip
 * (plb__block_done.link_s): an emulated PU's messages and a borrowed block's
 * take real ways too. A real PU's block that travelled (not borrowed) is
 * also its link time, logged and traced only: the link is shared by every
 * PU's blocks, so charged to the PU whose block waited it moves work to
 * PUs whose bytes take the same way (docs/DESIGN.md); an emulated PU's
 * transfer model stands for its link. */
static double away_time(const struct plb__hdr *h, const struct plb__slot *sl, double heard)
{
	if (!isfinite(h->t_arrive) || !isfinite(h->t_end))
		return 0;
	double t = (heard - sl->sent) - (h->t_end - h->t_arrive);
	return t > 0 ? t : 0;
}

/* What a done block adds to its PU's figures in the report. */
static void note_done(struct plb__mpu *u, const struct plb__hdr *h, const struct plb__slot *sl,
		      double finish)
{
	u->busy += h->busy_s;
	u->units += (double)sl->units;
	u->blocks++;
	u->overran += (h->flags & PLB__F_OVERRAN) != 0;
	u->last_finish = finish;
	/* the bound's rate: blocks of a millisecond or more (a shorter one
	 * is the timer, the dispatch and a cache holding the whole block: a
	 * CPU ran 64 k-means points at 3x the rate it keeps on large blocks),
	 * any block while none is that long */
	double t = h->exec_s + h->xfer_s, rate = t > 0 ? (double)sl->units / t : 0;
	if (t >= RATE_MIN_S && !u->long_block) {
		u->long_block = 1;
		u->best_rate = 0;
	}
	if ((t >= RATE_MIN_S || !u->long_block) && rate > u->best_rate)
		u->best_rate = rate;
}

static int on_done(struct plb__run *r, int peer, void *msg)
{
	struct plb *p = r->p;
	struct plb__hdr *h = plb__msg_hdr(msg);
	struct plb__peer *pe = &p->peer[peer];
	int rc;

	if (h->pu < 0 || h->pu >= pe->npu)
		return plb__fail(p, PLB_EIO, "DONE from rank %d for PU %d, which it does not have",
				 pe->rank, h->pu);
	int i = pe->pu0 + h->pu;
	struct plb__mpu *u = &r->pu[i];
	pe->idle_wall_s = h->idle_wall_s;
	pe->idle_cpu_s = h->idle_cpu_s;
	if ((h->flags & PLB__F_BORROWED) && h->run == r->gen)
		plb__out_drop(r->out.live, &r->out.nlive, h->id);  /* a borrowed block is back */
	if (h->flags & PLB__F_PLACED)
		plb__out_drop(r->out.placing, &r->out.nplacing, h->id);
	int k = 0;
	while (k < PLB__MAX_GRANTS && !(u->s[k].used && u->s[k].id == h->id))
		k++;
	if (k == PLB__MAX_GRANTS || h->run != r->gen)
		return 0;       /* from a PU already taken out (its block was granted
				 * again), or from an earlier run */
	struct plb__slot sl = u->s[k];
	u->s[k].used = 0;
	if (h->status) {
		plb__driver_back(&r->d, i);
		plb__log(PLB__LOG_ERROR, "master", "PU %s failed block %llu: %s", p->pu[i].name,
			 (unsigned long long)sl.id, plb_strerror(h->status));
		plb__trace_instant(p->trace, i, r->now, "kernel failed", plb_strerror(h->status));
		return plb__run_lose(r, i);
	}
	size_t want = sl.borrowed ? 0 : (size_t)sl.units * r->job->out_unit;
	if (h->units != sl.units || h->offset != sl.offset || h->len != r->out.accpad + want ||
	    !(h->flags & PLB__F_BORROWED) != !sl.borrowed)
		return plb__fail(p, PLB_EIO, "DONE for block %llu from %s does not match its grant (%llu bytes, expected %zu)",
				 (unsigned long long)sl.id, p->pu[i].name, (unsigned long long)h->len,
				 r->out.accpad + want);
	double heard = plb__now(), away = away_time(h, &sl, heard);
	double link = sl.borrowed || p->pu[i].model >= 0 ? 0 : away;
	struct plb__block_done smp = {.grant_id = sl.id, .exec_s = h->exec_s, .xfer_s = h->xfer_s,
				 .finish = r->now - r->t0, .link_s = away + sl.turn};
	u->heard = heard;
	plb__log(PLB__LOG_DEBUG, "master", "t=%.4f done %llu on %s: exec %.4f s, xfer %.4f s, link %.4f s (round trip %.4f s, on its worker %.4f s)",
		 smp.finish, (unsigned long long)sl.id, p->pu[i].name, h->exec_s, h->xfer_s, link,
		 heard - sl.sent, isfinite(h->t_end - h->t_arrive) ? h->t_end - h->t_arrive : 0.0);
	rc = plb__driver_done(&r->d, i, &smp);
	if (rc == PLB_ESTALE) {
		trace_done(r, i, h, &sl, heard, link, 1);
		return 0;
	}
	if ((rc = plb__run_drove(r, rc)))
		return rc;
	trace_done(r, i, h, &sl, heard, link, 0);
	if ((rc = plb__out_accept(r, msg, &sl, want, (h->flags & PLB__F_PLACED) != 0)))
		return rc;
	if ((rc = plb__coverage_add(&r->cov, sl.offset, sl.units)))
		return plb__fail(p, rc, "out of memory");
	if (p->peer[r->pu[i].peer].behind) {
		r->kept_out += sl.bytes;
		r->kept_in += (double)(PLB__HDR_SIZE + h->len);
	}
	note_done(u, h, &sl, r->now - r->t0);
	if (plb__balancer_finished(r->b)) {
		r->finished = 1;
		r->end = r->now;
	}
	return 0;
}

int plb__run_message(struct plb__run *r, void *msg, int src)
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
		if ((h->flags & PLB__F_BORROWED) && h->run == r->gen)
			plb__out_drop(r->out.live, &r->out.nlive, h->id);  /* a borrowed block is back */
		return plb__run_lose(r, p->peer[peer].pu0 + h->pu);
	case PLB__MSG_BYE:
		/* the worker stopped on an error of its own: its PUs are gone */
		plb__log(PLB__LOG_ERROR, "master", "rank %d stopped: %s", src, plb_strerror(h->status));
		p->peer[peer].rank = -1;
		plb__res_forget(p, peer);
		for (int i = 0; i < p->peer[peer].npu; i++) {
			int rc = plb__run_lose(r, p->peer[peer].pu0 + i);
			if (rc)
				return rc;
		}
		return 0;
	case PLB__MSG_M2BENCHED:
	case PLB__MSG_M2VEC:
	case PLB__MSG_M2C:
	case PLB__MSG_M2DONE:
		return 0;       /* a late word of a 2-D product that failed */
	default:
		return plb__fail(p, PLB_EIO, "unexpected message type %u from rank %d", h->type, src);
	}
}
