/* The master's workers in a run (run.h): START to each, END at the end
 * (with borrowed blocks: and the wait until each has left the run), and
 * their silence watched: a worker that says nothing for longer than its
 * limit is taken out, its PUs' blocks going back to the pool. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "balancer/base/log.h"
#include "runtime/core/resident.h"
#include "runtime/core/run.h"

/* START: the kernel's name, the shared data (padded; borrowed: its
 * address), the accumulator's identity (zero bytes if the job gives none).
 * The nodes with the most PUs first, and (PLB__F_SERIAL) one after
 * another over the master's link: the first node can start while the
 * others' copies cross, where sent at once all would arrive at the end. */
int plb__run_start_workers(struct plb__run *r, const char *kernel)
{
	struct plb *p = r->p;
	const struct plb_job *job = r->job;
	size_t nlen = PLB__KERNEL_NAME_MAX;
	int borrow = r->out.borrow, kept = plb__res_shared_kept(p, job, borrow);
	p->res.valid_shared = 0;        /* until the run has ended well (plb__res_end) */
	size_t spart = borrow ? sizeof(struct plb__borrow) : kept ? 0 : job->shared_bytes;
	size_t at = nlen + plb__pad16(spart);
	size_t len = job->acc_bytes ? at + job->acc_bytes : nlen + spart;
	int *order = malloc((size_t)(p->npeer > 0 ? p->npeer : 1) * sizeof *order), norder = 0;
	if (!order)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int w = 0; w < p->npeer; w++) {
		if (p->peer[w].rank < 0)
			continue;       /* gone in an earlier run */
		int j = norder++;
		while (j > 0 && p->peer[order[j - 1]].npu < p->peer[w].npu) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = w;
	}
	for (int j = 0; j < norder; j++) {
		int w = order[j];
		void *msg = plb__msg_alloc(PLB__MSG_START, len);
		if (!msg) {
			free(order);
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		}
		struct plb__hdr *h = plb__msg_hdr(msg);
		char *data = plb__msg_data(msg);
		memset(data, 0, len);
		memcpy(data, kernel, strlen(kernel));
		if (borrow) {
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
		if (!r->out.map_out)
			h->flags |= PLB__F_OUT_MAPPED;
		h->in_unit = (double)job->in_unit;
		h->out_unit = (double)job->out_unit;
		h->seed = p->cfg.seed;
		h->pu0 = (uint64_t)p->peer[w].pu0;
		h->shared_bytes = job->shared_bytes;
		h->flags |= PLB__F_SERIAL;
		r->bytes_out += (double)(PLB__HDR_SIZE + len);
		if (p->peer[w].behind)
			r->start_out += (double)(PLB__HDR_SIZE + len);
		int rc = p->tp->ops->send(p->tp, p->peer[w].rank, msg);
		if (rc) {
			free(order);
			return plb__fail(p, rc, "sending the run to rank %d: %s", p->peer[w].rank, p->tp->err);
		}
	}
	free(order);
	return 0;
}

int plb__run_end_workers(struct plb *p, int ack)
{
	for (int w = 0; w < p->npeer; w++) {
		if (p->peer[w].rank < 0)
			continue;
		void *msg = plb__msg_alloc(PLB__MSG_END, 0);
		if (!msg)
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		if (ack)
			plb__msg_hdr(msg)->flags = PLB__F_ACK;
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
int plb__run_end_borrowed(struct plb__run *r)
{
	struct plb *p = r->p;
	struct plb__backoff bo = {0};
	int rc = plb__run_end_workers(p, 1), left = 0, said = 0;
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
				 r->out.nlive);
		}
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
	r->out.nlive = 0;
	int mrc = plb__out_merge_late(r);
	return rc ? rc : mrc;
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

/* Process pid's parent, from /proc/PID/stat ("pid (comm) state ppid":
 * comm may hold spaces and parentheses, so after its last one); -1 where
 * it is not there, has ended, or is not known (no /proc). */
static int parent_of(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *end = strrchr(buf, ')');
	int ppid = -1;
	char state;
	if (!end || sscanf(end + 1, " %c %d", &state, &ppid) != 2 || state == 'Z')
		return -1;      /* (a zombie has ended) */
	return ppid;
}

/* Process pid, when it is there and a child of this process's parent
 * (the launcher's daemon that started both): SIGKILL. */
static int end_rank(int pid)
{
	int parent = (int)getppid();
	if (pid <= 1 || pid == (int)getpid() || parent <= 1 || parent_of(pid) != parent)
		return 0;
	return kill(pid, SIGKILL) == 0;
}

void plb__end_lost_ranks(const int32_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (end_rank(pids[i]))
			plb__log(PLB__LOG_INFO, "plb", "process %d on this host, a rank taken out of the job, ended (SIGKILL; [network] end_lost = 0 leaves it be)",
				 (int)pids[i]);
}

/* The time the master's link needs for the blocks out: a worker waits
 * for its input, and its messages wait behind its own outputs and the
 * others' on that link (a slow link with large outputs had a worker taken
 * out for a silence that was its output crossing). Where the link is
 * known ([network] link_gbps, or timed at start: link.c), the inputs and
 * outputs of every block out at its rates (both ways counted on one: an
 * allowance, not a plan; a timed link's no less than the outputs at the
 * rate the run's messages came in); else their outputs at the rate the
 * run's messages have come in so far, once 1 MB came (*rate, bytes a
 * second). That rate is the link's where the link bounds the run, and
 * less where it idles: then the outputs out take about as long as the
 * blocks that make them, which the limit allows anyway. (The time a tail's receive is
 * open measures nothing: Open MPI's TCP path had the bytes in before the
 * receive was posted, 2,550 Gbit/s over a 200 Mbit/s link.) 0 where
 * neither is known. */
#define OWED_MEASURE_BYTES 1e6
static double owed_s(const struct plb__run *r, double *rate)
{
	const struct plb__link *l = &r->p->link;
	double el = r->now - r->t0;
	double seen = r->bytes_in >= OWED_MEASURE_BYTES && el > 0 ? r->bytes_in / el : 0;
	int known = l->from != PLB__LINK_NONE;
	*rate = known ? fmin(l->out, l->in) : seen;
	if (!r->job || !(*rate > 0))
		return 0;
	double in = 0, out = 0;
	for (int i = 0; i < r->npu; i++)
		for (int s = 0; s < PLB__MAX_GRANTS; s++)
			if (r->pu[i].s[s].used) {
				in += (double)r->pu[i].s[s].units * (double)r->job->in_unit;
				out += (double)r->pu[i].s[s].units * (double)r->job->out_unit;
			}
	if (!known)
		return out / *rate;
	double owed = plb__link_time(l, in, 0) + plb__link_time(l, 0, out);
	/* a timed rate may be above what this run's messages get (a token
	 * bucket's burst in the probe; other jobs on the link since): the
	 * allowance is the larger */
	return l->from == PLB__LINK_PROBE && seen > 0 ? fmax(owed, out / seen) : owed;
}

/* How long worker k may be silent in a run: [network] peer_timeout_min_s,
 * or PEER_GAP_FACTOR times its longest silence so far (a worker whose
 * loop stalls on a loaded machine, or whose messages queue behind a large
 * one on a slow link) or PEER_BLOCK_FACTOR times the longest predicted
 * time of a block it has out (large blocks move large messages), or the
 * master's link's time for every output still out (owed_s), if more;
 * never past peer_timeout_s. A worker says ALIVE every fifth of
 * peer_timeout_min_s when it has nothing else to say. */
#define PEER_GAP_FACTOR   4
#define PEER_BLOCK_FACTOR 3
static double peer_limit(const struct plb__run *r, int k, double *block)
{
	const struct plb *p = r->p;
	const struct plb__peer *pe = &p->peer[k];
	*block = 0;
	for (int i = pe->pu0; i < pe->pu0 + pe->npu; i++)
		for (int s = 0; s < PLB__MAX_GRANTS; s++)
			if (r->pu[i].s[s].used && isfinite(r->pu[i].s[s].predicted_s))
				*block = fmax(*block, r->pu[i].s[s].predicted_s);
	double t = fmax(PEER_GAP_FACTOR * pe->gap, PEER_BLOCK_FACTOR * *block);
	double rate;
	t = fmax(t, PEER_BLOCK_FACTOR * owed_s(r, &rate));
	return fmin(fmax(t, plb__peer_timeout_min(&p->cfg)), p->cfg.peer_timeout_s);
}

/* Worker rank k has said nothing for `silent` seconds, past its `limit`:
 * it is gone (dead, frozen, cut off). Its PUs are taken out and their
 * blocks go back to the pool; nothing more is sent to it and what is
 * queued for it is dropped; should it come back, it is told to stop and
 * whatever it sends is ignored. MPI_Finalize would wait for it: the job
 * ends without it. */
static int rank_lost(struct plb__run *r, int k, double silent, double limit, double block)
{
	struct plb *p = r->p;
	struct plb__peer *pe = &p->peer[k];
	struct plb__watch *wt = &r->watch;
	int rank = pe->rank;
	char link[160];
	double rate, owed = owed_s(r, &rate);
	if (p->link.from != PLB__LINK_NONE)
		snprintf(link, sizeof link, "the blocks out owed the master's link %.2f s at %s, %.3g Gbit/s in",
			 owed, plb__link_said(&p->link), p->link.in * 8 / 1e9);
	else if (rate > 0)
		snprintf(link, sizeof link, "the blocks out owed the master's link %.2f s at the %.3g Gbit/s its messages came at",
			 owed, rate * 8 / 1e9);
	else
		snprintf(link, sizeof link, "the master's link not measured yet and [network] link_gbps unset");
	plb__log(PLB__LOG_ERROR, "master", "rank %d (%s) has said nothing for %.1f s, longer than its limit of %.2f s (its longest silence before %.2f s, its longest block out predicted at %.2f s, %s; [network] peer_timeout_min_s = %g s, peer_timeout_s = %g s): taken out of the run at %.2f s; the blocks of its %d PUs go to the others",
		 rank, pe->host, silent, limit, pe->gap, block, link, plb__peer_timeout_min(&p->cfg),
		 p->cfg.peer_timeout_s, r->now - r->t0, pe->npu);
	size_t n = strlen(wt->lost_note);
	snprintf(wt->lost_note + n, sizeof wt->lost_note - n, "%srank %d on %s at %.2f s", n ? ", " : "",
		 rank, pe->host, r->now - r->t0);
	wt->ranks_lost++;
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
		int rc = plb__run_lose(r, pe->pu0 + i);
		if (rc)
			return rc;
	}
	return 0;
}

/* Between ranks: each live worker said something within its limit
 * (peer_limit), or it is taken out; the master says ALIVE every fifth of
 * [network] peer_timeout_s when it has nothing else to say. Not between
 * the ends of one process. */
int plb__run_watch(struct plb__run *r)
{
	struct plb *p = r->p;
	struct plb__watch *wt = &r->watch;
	double limit = p->cfg.peer_timeout_s, now = plb__now();
	double lo = plb__peer_timeout_min(&p->cfg);
	int rc = 0;
	if (p->tp->ops->same_memory)
		return 0;
	/* a master that did not look for a while (its own work, a machine
	 * that stalled) cannot tell who was silent: everyone starts afresh */
	if (plb__held_up(&wt->watched, now, lo))
		for (int k = 0; k < p->npeer; k++)
			p->peer[k].heard = fmax(p->peer[k].heard, now);
	if (now - wt->said >= limit / 5) {
		wt->said = now;
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
	return rc || !lost ? rc : plb__run_drove(r, plb__driver_parked(&r->d, r->now - r->t0));
}
