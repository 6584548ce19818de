/* The master's link: what it carries a second each way, from [network]
 * link_gbps, or measured at start where that is not given.
 *
 * The probe runs in plb_init, after every worker's HELLO and before the
 * go, while each worker waits for the master and answers at once (its
 * PUs are open, none computes). It times what the job's bytes will cross:
 * the master's own link to every worker on another host, all of them at
 * once, so that the rate is what the master's link and the workers' own
 * links carry together (max-min shared, as the blocks' bytes are sent;
 * docs/ARCHITECTURE.md, "Links: one network model"). Workers on the
 * master's host are left out: their bytes do not cross that link.
 *
 *   ping   three rounds of empty PROBEs answered by empty PROBEDs: the
 *          round trip a message with no bytes takes (the latency, twice,
 *          and each end's loop)
 *   out    PROBEs of S bytes to every worker, each answered by an empty
 *          PROBED once it is whole; S grows from PROBE_FIRST_TOTAL (all
 *          workers together) until a round takes [network] link_probe_ms
 *          or carries PROBE_MAX_TOTAL; then a warm-up round of S each,
 *          one more whose answers give each worker's own rate, and
 *          PROBE_KEEP rounds of the same total shared in proportion to
 *          those rates
 *          (so that all end together: a worker behind a slower link of
 *          its own would otherwise leave the master's link idle at the
 *          end of each round)
 *   in     the same with empty PROBEs asking each worker for S bytes back
 *
 * A way's rate is its fastest kept round's: the most bytes a second the
 * link carried by one of the round's answers (round_rate), the empty
 * round trip taken off. A worker that answers the equal round far after
 * the first is named in a warning. The fastest, not the mean: a rank not
 * scheduled for a while (a shared machine) only makes a round slower,
 * and a link taken for slower than it is would make the bound too high.
 * A token bucket (tc's tbf) lets its burst through at once, and it is
 * full when a way's first round that long begins: that round is not kept
 * (measured here, at 200 Mbit/s with a 512 KiB bucket: 0.30 Gbit/s in
 * where it was).
 *
 * Like StarPU's bus calibration, but at every start and over MPI: a
 * cluster's network is shared with other jobs. At 20 ms a round, five
 * to eight rounds each way: 0.3-0.5 s on this project's emulated hosts
 * (bench/links.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/log.h"
#include "runtime/core/rt.h"

#define PROBE_PINGS       3
#define PROBE_FIRST_TOTAL ((size_t)64 << 10)    /* bytes, all workers together */
#define PROBE_MIN         ((size_t)1 << 10)     /* bytes a worker, at least */
#define PROBE_MAX_TOTAL   ((size_t)64 << 20)    /* bytes a round, at most */
#define PROBE_KEEP        3                     /* rounds at the final size */
#define PROBE_GROW_MAX    16                    /* a round's size grows at most this much */
#define PROBE_LIMIT_ROUNDS 40                   /* a way's rounds, at most */

enum way { OUT, IN };

static int heard_it(const void *heard, int k)
{
	return ((const unsigned char *)heard)[k];
}

/* One round: every rank of ranks (n) sent a PROBE (OUT: of bytes[k],
 * IN: asking for bytes[k] back; NULL: none) and its PROBED heard; at[j]: from the first
 * send to the j-th answer, who[j]: its index in ranks (NULL, NULL: not
 * wanted); *took: to the last. */
static int round_trip(struct plb *p, const int *ranks, int n, enum way way, const size_t *bytes,
		      uint64_t seq, double *at, int *who, double *took)
{
	void **msg = calloc((size_t)n, sizeof *msg);
	int rc = 0;
	if (!msg)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int k = 0; k < n && !rc; k++) {
		size_t len = way == OUT && bytes ? bytes[k] : 0;
		if (!(msg[k] = plb__msg_alloc(PLB__MSG_PROBE, len)))
			rc = plb__fail(p, PLB_ENOMEM, "out of memory (%zu bytes to time the master's link)",
				       len);
		else {
			memset(plb__msg_data(msg[k]), 0, len);
			plb__msg_hdr(msg[k])->id = seq;
			plb__msg_hdr(msg[k])->units = way == IN && bytes ? bytes[k] : 0;
		}
	}
	double t0 = plb__now(), last = t0;
	for (int k = 0; k < n; k++) {
		if (rc) {
			plb__msg_free(msg[k]);
			continue;
		}
		if (p->tp->ops->send(p->tp, ranks[k], msg[k]))
			rc = plb__fail(p, PLB_EIO, "timing the master's link: sending to rank %d: %s",
				       ranks[k], p->tp->err);
	}
	free(msg);
	unsigned char *heard = calloc((size_t)n, 1);
	if (!heard && !rc)
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int got = 0; got < n && !rc;) {
		void *m;
		int src;
		if ((rc = plb__handshake_recv(p, &m, &src, "the workers' answers (timing the master's link)", 0))) {
			plb__name_silent(p, n, ranks, heard_it, heard,
					 "dead, frozen, or behind a link too slow for the probe: [network] startup_timeout_s sets how long the master waits; link_gbps, or link_probe_ms = 0, skips the probe");
			break;
		}
		struct plb__hdr *h = plb__msg_hdr(m);
		int k = 0;
		while (k < n && ranks[k] != src)
			k++;
		if (h->type == PLB__MSG_PROBED && h->id == seq && k < n && !heard[k]) {
			heard[k] = 1;
			last = plb__now();
			if (at) {
				at[got] = last - t0;
				who[got] = k;
			}
			got++;
			if (h->status)
				rc = plb__fail(p, h->status, "timing the master's link: rank %d: %.*s", src,
					       (int)h->len, (char *)plb__msg_data(m));
		}
		plb__msg_free(m);       /* anything else: nothing to say now */
	}
	free(heard);
	*took = last - t0;
	return rc;
}

/* A round's rate: by the j-th answer the link had carried those j
 * workers' bytes at least (the others' were still crossing), so each
 * answer gives a rate it carried at least; the largest. The empty round
 * trip is taken off each answer's time, but no more than half of it (it
 * may have been slower than this round's answers). */
static double round_rate(const double *at, const int *who, const size_t *sz, int n, double ping_s)
{
	double r = 0, sum = 0;
	for (int j = 0; j < n; j++) {
		sum += (double)sz[who[j]];
		r = fmax(r, sum / fmax(at[j] - ping_s, 0.5 * at[j]));
	}
	return r;
}

/* A way's rate, bytes a second: see the top of this file. *slow: the
 * index in ranks of the worker that answered the equal round last,
 * after more than SLOW_AFTER times the first's time (its own link or host
 * is the slower), else -1; *slow_rate: its bytes a second then. */
#define SLOW_AFTER 2.0
static int measure(struct plb *p, const int *ranks, int n, enum way way, double target_s,
		   double ping_s, uint64_t *seq, double *rate, double *bytes_sent, int *slow,
		   double *slow_rate)
{
	size_t each = PROBE_FIRST_TOTAL / (size_t)n, cap = PROBE_MAX_TOTAL / (size_t)n;
	each = each < PROBE_MIN ? PROBE_MIN : each;
	cap = cap < each ? each : cap;
	int kept = 0, warm = 0, rc = 0;
	double *at = malloc(sizeof *at * (size_t)n), *r = malloc(sizeof *r * (size_t)n);
	int *who = malloc(sizeof *who * (size_t)n);
	size_t *sz = malloc(sizeof *sz * (size_t)n);
	*rate = 0;
	*slow = -1;
	*slow_rate = 0;
	if (!at || !r || !who || !sz) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < n; k++)
		sz[k] = each;
	for (int round = 0; round < PROBE_LIMIT_ROUNDS && kept < PROBE_KEEP; round++) {
		double t, total = 0;
		if ((rc = round_trip(p, ranks, n, way, sz, ++*seq, at, who, &t)))
			break;
		for (int k = 0; k < n; k++)
			total += (double)sz[k];
		*bytes_sent += total;
		plb__log(PLB__LOG_DEBUG, "master", "link probe %s: %.0f bytes to %d ranks in %.2f ms, answers from %.2f ms (rank %d) to %.2f ms (rank %d)",
			 way == OUT ? "out" : "in", total, n, t * 1e3, at[0] * 1e3, ranks[who[0]],
			 at[n - 1] * 1e3, ranks[who[n - 1]]);
		if (!warm && !(t >= target_s || each >= cap)) {
			double grow = t > 0 ? target_s / t : PROBE_GROW_MAX;
			grow = fmin(fmax(grow * 1.2, 2.0), PROBE_GROW_MAX);
			each = (size_t)fmin((double)cap, (double)each * grow);
			for (int k = 0; k < n; k++)
				sz[k] = each;
			continue;
		}
		/* the first round at the final size is a warm-up: a token
		 * bucket's burst may have gone through in it */
		if (warm++ == 0)
			continue;
		if (warm > 2) {
			*rate = fmax(*rate, round_rate(at, who, sz, n, ping_s));
			kept++;
			continue;
		}
		/* the next, of equal shares, tells each worker's own rate; the
		 * kept rounds give each a share in proportion, so that all end
		 * together and the link is busy to the end (a worker behind a
		 * slower link of its own would leave it idle, and a token
		 * bucket would refill meanwhile) */
		double sum = 0;
		for (int j = 0; j < n; j++) {
			double tj = fmax(at[j] - ping_s, 0.5 * at[j]);
			r[who[j]] = (double)sz[who[j]] / (tj > 0 ? tj : 1e-9);
			sum += r[who[j]];
		}
		if (n > 1 && at[n - 1] > SLOW_AFTER * at[0]) {
			*slow = who[n - 1];
			*slow_rate = r[who[n - 1]];
		}
		for (int k = 0; k < n; k++)
			sz[k] = (size_t)fmax((double)PROBE_MIN, total * r[k] / sum);
	}
out:
	free(at);
	free(r);
	free(who);
	free(sz);
	return rc;
}

int plb__link_probe(struct plb *p)
{
	struct plb__link *l = &p->link;
	memset(l, 0, sizeof *l);
	if (p->cfg.link_gbps > 0) {
		l->from = PLB__LINK_CONFIG;
		l->out = l->in = p->cfg.link_gbps * 1e9 / 8;
		return 0;
	}
	if (p->tp->ops->same_memory || !(p->cfg.link_probe_ms > 0))
		return 0;
	int *ranks = malloc(sizeof *ranks * ((size_t)p->npeer + 1)), n = 0, rc = 0;
	if (!ranks)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int k = 0; k < p->npeer; k++)
		if (strcmp(p->peer[k].host, p->tp->host))
			ranks[n++] = p->peer[k].rank;
	if (n == 0) {
		free(ranks);
		return 0;       /* every worker on the master's host: no link crossed */
	}
	double t0 = plb__now(), target = p->cfg.link_probe_ms / 1e3, ping = INFINITY, bytes = 0;
	uint64_t seq = 0;
	for (int i = 0; i < PROBE_PINGS && !rc; i++) {
		double t;
		rc = round_trip(p, ranks, n, OUT, NULL, ++seq, NULL, NULL, &t);
		ping = fmin(ping, t);
	}
	int slow[2] = {-1, -1};
	double slow_rate[2] = {0, 0};
	if (!rc)
		rc = measure(p, ranks, n, OUT, target, ping, &seq, &l->out, &bytes, &slow[0], &slow_rate[0]);
	if (!rc)
		rc = measure(p, ranks, n, IN, target, ping, &seq, &l->in, &bytes, &slow[1], &slow_rate[1]);
	for (int w = 0; w < 2 && !rc; w++)
		if (slow[w] >= 0) {
			const struct plb__peer *pe = NULL;
			for (int k = 0; k < p->npeer && !pe; k++)
				if (p->peer[k].rank == ranks[slow[w]])
					pe = &p->peer[k];
			plb__log(PLB__LOG_WARN, "master", "rank %d (%s) answered the link's probe %s far after the others, at %.3g Gbit/s: its own link, or its host, is slower than theirs",
				 ranks[slow[w]], pe ? pe->host : "?", w ? "back" : "out", slow_rate[w] * 8 / 1e9);
		}
	free(ranks);
	if (rc)
		return rc;
	if (!(l->out > 0 && l->in > 0)) {       /* no round long enough: not known */
		plb__log(PLB__LOG_WARN, "master", "the master's link could not be timed (%.0f MB in %.2f s gave no round of [network] link_probe_ms = %g ms): no link is modelled; link_gbps sets one",
			 bytes / 1e6, plb__now() - t0, p->cfg.link_probe_ms);
		memset(l, 0, sizeof *l);
		return 0;
	}
	l->from = PLB__LINK_PROBE;
	l->latency_s = ping / 2;
	plb__log(PLB__LOG_INFO, "master", "the master's link, timed at start to the %d worker rank%s on other hosts: %.3g Gbit/s out, %.3g Gbit/s in, %.0f us one way (%.0f MB in %.2f s; [network] link_gbps gives it instead, link_probe_ms = 0 leaves it out)",
		 n, n > 1 ? "s" : "", l->out * 8 / 1e9, l->in * 8 / 1e9, l->latency_s * 1e6,
		 bytes / 1e6, plb__now() - t0);
	return 0;
}

int plb__link_answer(struct plb *p, void *msg)
{
	struct plb__hdr *h = plb__msg_hdr(msg);
	uint64_t want = h->units, seq = h->id;
	plb__msg_free(msg);
	void *a = want <= PROBE_MAX_TOTAL ? plb__msg_alloc(PLB__MSG_PROBED, (size_t)want) : NULL;
	if (!a && want <= PROBE_MAX_TOTAL)
		return plb__fail(p, PLB_ENOMEM, "out of memory (%llu bytes to time the master's link)",
				 (unsigned long long)want);
	if (!a) {       /* no master of this version asks for that much */
		static const char why[] = "a PROBE asking for more than 64 MiB back";
		if (!(a = plb__msg_alloc(PLB__MSG_PROBED, sizeof why - 1)))
			return plb__fail(p, PLB_ENOMEM, "out of memory");
		memcpy(plb__msg_data(a), why, sizeof why - 1);
		plb__msg_hdr(a)->status = PLB_EIO;
	} else {
		memset(plb__msg_data(a), 0, (size_t)want);
	}
	plb__msg_hdr(a)->id = seq;
	if (p->tp->ops->send(p->tp, 0, a))
		return plb__fail(p, PLB_EIO, "sending to the master: %s", p->tp->err);
	return 0;
}

double plb__link_units(const struct plb__link *l, double in_unit, double out_unit)
{
	double t = plb__link_time(l, in_unit, out_unit);
	return t > 0 && isfinite(t) ? 1 / t : 0;
}

double plb__link_time(const struct plb__link *l, double out_bytes, double in_bytes)
{
	if (l->from == PLB__LINK_NONE)
		return 0;
	double t = 0;
	if (out_bytes > 0)
		t = fmax(t, l->out > 0 ? out_bytes / l->out : INFINITY);
	if (in_bytes > 0)
		t = fmax(t, l->in > 0 ? in_bytes / l->in : INFINITY);
	return t;
}

const char *plb__link_said(const struct plb__link *l)
{
	return l->from == PLB__LINK_CONFIG ? "[network] link_gbps" : "the rate timed at start";
}
