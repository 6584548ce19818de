/* Resident input: the master's record of what each node holds, and a
 * worker's store (resident.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/log.h"
#include "balancer/base/vec.h"
#include "runtime/core/resident.h"
#include "runtime/core/rt.h"

/* ---- master ------------------------------------------------------------ */

int plb__res_begin(struct plb *p, const struct plb_job *job, uint64_t W, int borrow,
		   plb__balancer_t *b, int *reuse)
{
	int on = (job->in_mode & (PLB_IN_KEEP | PLB_IN_UNCHANGED)) && job->in_unit && !borrow;
	int same = p->res.valid && p->res.in == job->in && p->res.in_unit == job->in_unit &&
		   p->res.W == W;
	*reuse = on && (job->in_mode & PLB_IN_UNCHANGED) && same;
	if (on && (job->in_mode & PLB_IN_UNCHANGED) && !same)
		plb__log(PLB__LOG_WARN, "master", "job.in_mode says the input is unchanged, but %s: it is all sent again",
			 !p->res.valid ? "no earlier run kept it"
				       : "in, in_unit or units differ from the run that kept it");
	if (!*reuse)
		for (int w = 0; w < p->npeer; w++)
			plb__ranges_clear(&p->peer[w].held);
	p->res.valid = 0;
	if (!on)
		return 0;
	for (int w = 0; w < p->npeer; w++) {
		const struct plb__peer *pe = &p->peer[w];
		int rc = 0;
		for (int k = 0; k < pe->npu && !rc; k++)
			rc = plb__balancer_group(b, pe->pu0 + k, w);
		for (int k = 0; k < pe->held.n && !rc && pe->npu; k++)
			rc = plb__balancer_hold(b, w, pe->held.r[k].off, pe->held.r[k].len);
		if (rc)
			return plb__fail(p, rc, "balancer: %s", plb_strerror(rc));
	}
	return 1;
}

int plb__res_shared_kept(const struct plb *p, const struct plb_job *job, int borrow)
{
	return (job->in_mode & PLB_SHARED_UNCHANGED) && !borrow && job->shared_bytes &&
	       p->res.valid_shared && p->res.shared == job->shared &&
	       p->res.shared_bytes == job->shared_bytes;
}

size_t plb__res_len(const struct plb *p, int peer, const struct plb_job *job,
		    const struct plb__grant *g, int *nseg)
{
	const struct plb__ranges *h = &p->peer[peer].held;
	uint64_t lack;
	*nseg = plb__ranges_gaps(h, g->offset, g->units, NULL, 0, &lack);
	return sizeof(struct plb__segs) + (size_t)*nseg * sizeof(struct plb__range) +
	       (size_t)lack * job->in_unit;
}

int plb__res_fill(struct plb *p, int peer, const struct plb_job *job, const struct plb__grant *g,
		  void *msg, int nseg, plb__balancer_t *b, double *unkept)
{
	struct plb__peer *pe = &p->peer[peer];
	struct plb__hdr *h = plb__msg_hdr(msg);
	char *data = plb__msg_data(msg);
	struct plb__segs hd = {(uint64_t)nseg, 0};
	struct plb__range *seg = (struct plb__range *)(data + sizeof hd);
	memcpy(data, &hd, sizeof hd);
	plb__ranges_gaps(&pe->held, g->offset, g->units, seg, nseg, NULL);
	char *at = (char *)(seg + nseg);
	double bytes = 0;
	for (int k = 0; k < nseg; k++) {
		size_t n = (size_t)seg[k].len * job->in_unit;
		memcpy(at, (const char *)job->in + seg[k].off * job->in_unit, n);
		at += n;
		bytes += (double)n;
	}
	h->flags = PLB__F_SEGMENTS;
	if (!nseg)
		return 0;
	if ((double)pe->held.units * (double)job->in_unit + bytes > pe->budget) {
		if (*unkept == 0)
			plb__log(PLB__LOG_WARN, "master", "rank %d (%s) holds %.0f MiB of input, its budget ([run] resident_mb %.0f): what it lacks is sent each run",
				 pe->rank, pe->host, (double)pe->held.units * (double)job->in_unit / 1048576.0,
				 pe->budget / 1048576.0);
		*unkept += bytes;
		return 0;
	}
	h->flags |= PLB__F_KEEP;
	for (int k = 0; k < nseg; k++) {
		int rc = plb__ranges_add(&pe->held, seg[k].off, seg[k].len);
		if (!rc)
			rc = plb__balancer_hold(b, peer, seg[k].off, seg[k].len);
		if (rc)
			return plb__fail(p, rc, "out of memory");
	}
	return 0;
}

void plb__res_forget(struct plb *p, int peer)
{
	plb__ranges_clear(&p->peer[peer].held);
}

double plb__res_end(struct plb *p, const struct plb_job *job, uint64_t W, int on, int borrow,
		    int ok)
{
	double bytes = 0;
	p->res = (struct plb__res_domain){job->in, job->in_unit, W, on && ok,
					  job->shared, job->shared_bytes, ok && !borrow};
	for (int w = 0; w < p->npeer; w++) {
		if (!p->res.valid)
			plb__ranges_clear(&p->peer[w].held);
		bytes += (double)p->peer[w].held.units * (double)job->in_unit;
	}
	return bytes;
}

/* ---- worker ------------------------------------------------------------ */

int plb__store_init(struct plb__store *s)
{
	memset(s, 0, sizeof *s);
	return pthread_rwlock_init(&s->lock, NULL) ? PLB_ENOMEM : 0;
}

/* The store holds all of [off, off + units). */
static int store_has(const struct plb__store *s, uint64_t off, uint64_t units)
{
	const struct plb__range *r = s->part.r;
	uint64_t at = off, end = off + units;
	for (int i = plb__ranges_find(&s->part, off); at < end; i++) {
		if (i >= s->part.n || r[i].off > at)
			return 0;
		at = r[i].off + r[i].len;
	}
	return 1;
}

int plb__store_take(struct plb__store *s, void *msg, size_t in_unit, char *err, size_t errlen)
{
	struct plb__hdr *h = plb__msg_hdr(msg);
	const char *data = plb__msg_data(msg);
	struct plb__segs hd;
	if (h->len < sizeof hd)
		goto bad;
	memcpy(&hd, data, sizeof hd);
	if (hd.n > h->units || hd.n > (h->len - sizeof hd) / sizeof(struct plb__range))
		goto bad;
	const struct plb__range *seg = (const struct plb__range *)(data + sizeof hd);
	uint64_t at = h->offset, sent = 0;
	for (uint64_t k = 0; k < hd.n; k++) {
		if (seg[k].off < at || seg[k].off >= h->offset + h->units || seg[k].len == 0 || seg[k].len > h->offset + h->units - seg[k].off)
			goto bad;
		if (seg[k].off > at && !store_has(s, at, seg[k].off - at))
			goto lacks;
		at = seg[k].off + seg[k].len;
		sent += seg[k].len;
	}
	if (at < h->offset + h->units && !store_has(s, at, h->offset + h->units - at))
		goto lacks;
	if (h->len != sizeof hd + hd.n * sizeof *seg + sent * in_unit)
		goto bad;
	if (!(h->flags & PLB__F_KEEP) || !hd.n)
		return 0;
	pthread_rwlock_wrlock(&s->lock);
	int rc = plb__push(&s->msg, &s->nmsg, &s->capmsg, sizeof *s->msg, &msg), pushed = !rc;
	while (!rc && (size_t)s->part.n + hd.n > (size_t)s->part.cap) {
		int cap = s->part.cap ? 2 * s->part.cap : 16;
		struct plb__range *r = realloc(s->part.r, (size_t)cap * sizeof *r);
		const char **d = r ? realloc(s->data, (size_t)cap * sizeof *d) : NULL;
		void **o = d ? realloc(s->own, (size_t)cap * sizeof *o) : NULL;
		if (r)
			s->part.r = r;
		if (d)
			s->data = d;
		if (o) {
			s->own = o;
			s->part.cap = cap;
		}
		rc = o ? 0 : PLB_ENOMEM;
	}
	if (rc) {
		s->nmsg -= pushed;      /* not the store's: the caller frees it */
		pthread_rwlock_unlock(&s->lock);
		snprintf(err, errlen, "out of memory for the input this node keeps");
		return rc;
	}
	const char *in = (const char *)(seg + hd.n);
	for (uint64_t k = 0; k < hd.n; k++) {
		int i = plb__ranges_find(&s->part, seg[k].off), move = s->part.n - i;
		memmove(&s->part.r[i + 1], &s->part.r[i], (size_t)move * sizeof *s->part.r);
		memmove(&s->data[i + 1], &s->data[i], (size_t)move * sizeof *s->data);
		memmove(&s->own[i + 1], &s->own[i], (size_t)move * sizeof *s->own);
		s->part.r[i] = seg[k];
		s->data[i] = in;
		s->own[i] = msg;
		s->part.n++;
		s->part.units += seg[k].len;
		in += seg[k].len * in_unit;
	}
	pthread_rwlock_unlock(&s->lock);
	return 0;
bad:
	snprintf(err, errlen, "DISPATCH of %llu units at %llu with %llu bytes in parts that do not match its block",
		 (unsigned long long)h->units, (unsigned long long)h->offset, (unsigned long long)h->len);
	return PLB_EIO;
lacks:
	snprintf(err, errlen, "DISPATCH of %llu units at %llu relies on input this node does not hold",
		 (unsigned long long)h->units, (unsigned long long)h->offset);
	return PLB_EIO;
}

int plb__store_input(struct plb__store *s, void *msg, size_t in_unit, const void **in, void **tmp)
{
	struct plb__hdr *h = plb__msg_hdr(msg);
	const char *data = plb__msg_data(msg);
	struct plb__segs hd;
	memcpy(&hd, data, sizeof hd);
	const struct plb__range *seg = (const struct plb__range *)(data + sizeof hd);
	const char *sent = (const char *)(seg + hd.n);
	uint64_t end = h->offset + h->units;
	*tmp = NULL;
	if (hd.n == 1 && seg[0].len == h->units) {
		*in = sent;             /* all of it sent */
		return 0;
	}
	pthread_rwlock_rdlock(&s->lock);
	const struct plb__range *r = s->part.r;
	int i = plb__ranges_find(&s->part, h->offset);
	if (hd.n == 0 && i < s->part.n && r[i].off <= h->offset && r[i].off + r[i].len >= end) {
		*in = s->data[i] + (h->offset - r[i].off) * in_unit;   /* all of it kept */
		pthread_rwlock_unlock(&s->lock);
		return 0;
	}
	char *buf = malloc((size_t)h->units * in_unit);
	if (!buf) {
		pthread_rwlock_unlock(&s->lock);
		return PLB_ENOMEM;
	}
	/* from the parts sent and the store, in order (checked at take) */
	uint64_t at = h->offset, k = 0;
	while (at < end) {
		const char *src;
		uint64_t n;
		if (k < hd.n && seg[k].off == at) {
			src = sent;
			n = seg[k].len;
			sent += n * in_unit;
			k++;
		} else {
			while (r[i].off + r[i].len <= at)
				i++;
			uint64_t stop = k < hd.n ? seg[k].off : end, r_end = r[i].off + r[i].len;
			src = s->data[i] + (at - r[i].off) * in_unit;
			n = (r_end < stop ? r_end : stop) - at;
		}
		memcpy(buf + (at - h->offset) * in_unit, src, (size_t)n * in_unit);
		at += n;
	}
	pthread_rwlock_unlock(&s->lock);
	*in = *tmp = buf;
	return 0;
}

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return (x > y) - (x < y);
}

double plb__store_merge(struct plb__store *s, size_t in_unit)
{
	double copied = 0;
	int out = 0;
	pthread_rwlock_wrlock(&s->lock);
	struct plb__range *r = s->part.r;
	for (int i = 0, j; i < s->part.n; i = j) {
		for (j = i + 1; j < s->part.n && r[j].off == r[j - 1].off + r[j - 1].len; j++)
			;
		uint64_t units = r[j - 1].off + r[j - 1].len - r[i].off;
		void *m = j - i > 1 && in_unit ? plb__msg_alloc(PLB__MSG_DISPATCH, (size_t)units * in_unit) : NULL;
		if (m && plb__push(&s->msg, &s->nmsg, &s->capmsg, sizeof *s->msg, &m)) {
			plb__msg_free(m);
			m = NULL;
		}
		if (!m) {               /* as it is */
			for (int k = i; k < j; k++, out++) {
				r[out] = r[k];
				s->data[out] = s->data[k];
				s->own[out] = s->own[k];
			}
			continue;
		}
		char *at = plb__msg_data(m);
		if ((size_t)units * in_unit >= PLB__POPULATE_MIN)
			(void)plb__populate(at, (size_t)units * in_unit);
		for (int k = i; k < j; k++) {
			size_t n = (size_t)r[k].len * in_unit;
			memcpy(at, s->data[k], n);
			at += n;
		}
		copied += (double)units * (double)in_unit;
		r[out] = (struct plb__range){r[i].off, units};
		s->data[out] = plb__msg_data(m);
		s->own[out++] = m;
	}
	s->part.n = out;
	/* free the messages that no part lies in any more (a message's parts
	 * are all in one group: its block was held whole once taken) */
	void **live = copied > 0 ? malloc((size_t)out * sizeof *live) : NULL;
	if (live) {
		memcpy(live, s->own, (size_t)out * sizeof *live);
		qsort(live, (size_t)out, sizeof *live, ptr_cmp);
		size_t keep = 0;
		for (size_t k = 0; k < s->nmsg; k++) {
			if (bsearch(&s->msg[k], live, (size_t)out, sizeof *live, ptr_cmp))
				s->msg[keep++] = s->msg[k];
			else
				plb__msg_free(s->msg[k]);
		}
		s->nmsg = keep;
		free(live);
	}
	pthread_rwlock_unlock(&s->lock);
	return copied;
}

void plb__store_drop(struct plb__store *s)
{
	pthread_rwlock_wrlock(&s->lock);
	for (size_t k = 0; k < s->nmsg; k++)
		plb__msg_free(s->msg[k]);
	s->nmsg = 0;
	plb__ranges_clear(&s->part);
	pthread_rwlock_unlock(&s->lock);
}

void plb__store_fini(struct plb__store *s)
{
	plb__store_drop(s);
	plb__ranges_free(&s->part);
	free(s->data);
	free(s->own);
	free(s->msg);
	pthread_rwlock_destroy(&s->lock);
}
