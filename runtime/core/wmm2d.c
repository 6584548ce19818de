/* The 2-D product on a worker (mm2d.h): a benchmark on one PU for the
 * master's partitioner, and a whole run. In a run the node draws its
 * rectangles of A and B, then for each step k sends its pieces of the
 * pivots of step k + 1 (balancer/pivots.h says which go where), gathers
 * those of step k (its own copied, the others' as they come; ahead ones
 * kept), and has each PU update its slice of C through the kernel's
 * class for its device (struct plb_gemm_step) while it takes in what
 * arrives. The communication thread runs it from M2START to M2DONE. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "balancer/base/log.h"
#include "balancer/base/vec.h"
#include "balancer/pivots.h"
#include "runtime/core/mm2d.h"
#include "runtime/core/rt.h"
#include "runtime/device/device.h"

/* A PU's part: its kernel's class and state, and one job at a time. */
struct wpu2 {
	struct run2 *r;
	int pu;
	const struct plb_kernel_class *kc;
	void *kstate;
	int inited, rc;
	enum { DO_BEGIN, DO_STEP, DO_END } what;
	struct plb_gemm_step step;
	uint64_t units;
	double seconds;
};

struct run2 {
	struct plb *p;
	const struct plb__pu_calls *pus;
	const struct plb_kernel *k;
	double t0;
	uint64_t seed;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int left;               /* PU jobs not back */
	struct wpu2 *pu;
	int npu;
};

static void pu_job(struct plb__dev *d, void *arg)
{
	struct wpu2 *u = arg;
	struct run2 *r = u->r;
	if (u->what == DO_BEGIN) {
		u->kc = plb__kernel_class(r->k, d->info.cls);
		u->rc = u->kc->run ? 0 : PLB_ENOENT;
		if (!u->rc && u->kc->init)
			u->rc = u->kc->init(&d->info, NULL, 0, &u->kstate);
		u->inited = !u->rc;
		if (!u->rc)
			plb__dev_begin(d, &(struct plb__dev_run){.t0 = r->t0, .seed = r->seed,
								 .stream = (uint64_t)u->pu});
		if (u->rc)
			plb__log(PLB__LOG_ERROR, "worker", "%s: kernel '%s' %s", d->desc.name, r->k->name,
				 u->rc == PLB_ENOENT ? "has no function for this PU's class" : "init failed");
	} else if (u->what == DO_STEP) {
		struct plb_block b = {.units = u->units ? u->units : 1, .in = &u->step, .members = 1};
		struct plb__dev_times t = {.xfer_at = NAN};
		double t0 = plb__now();
		u->rc = u->inited ? plb__dev_run(d, u->kc, u->kstate, &b, t0, &t) : PLB_ESTATE;
		if (!u->rc && t.died)
			u->rc = PLB_EDEVICE;
		u->seconds = plb__now() - t0;
	} else {
		if (u->inited && u->kc->fini)
			u->kc->fini(u->kstate);
		u->inited = 0;
		u->kstate = NULL;
	}
	pthread_mutex_lock(&r->mu);
	r->left--;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Gives PU u (all: u < 0) its job; 0 or the first error. */
static int give(struct run2 *r, int u)
{
	for (int j = u < 0 ? 0 : u; j < (u < 0 ? r->npu : u + 1); j++) {
		pthread_mutex_lock(&r->mu);
		r->left++;
		pthread_mutex_unlock(&r->mu);
		int rc = r->pus->on_pu(r->p, j, pu_job, &r->pu[j]);
		if (rc) {
			pthread_mutex_lock(&r->mu);
			r->left--;
			pthread_mutex_unlock(&r->mu);
			return rc;
		}
	}
	return 0;
}

/* Waits at most wait_s for the PUs' jobs: 1 when all are back. */
static int back(struct run2 *r, double wait_s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long ns = ts.tv_nsec + (long)(wait_s * 1e9);
	ts.tv_sec += ns / 1000000000L;
	ts.tv_nsec = ns % 1000000000L;
	pthread_mutex_lock(&r->mu);
	if (r->left > 0)
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	int all = r->left == 0;
	pthread_mutex_unlock(&r->mu);
	return all;
}

static void wait_back(struct run2 *r)
{
	while (!back(r, 1))
		;
}

static int run_init(struct run2 *r, struct plb *p, const struct plb__pu_calls *pus, const char *kernel,
		    uint64_t seed)
{
	memset(r, 0, sizeof *r);
	r->p = p;
	r->pus = pus;
	r->seed = seed;
	r->t0 = plb__now();
	r->npu = pus->npu;
	r->k = plb__kernel_find(p, kernel);
	if (!r->k)
		return PLB_ENOENT;
	r->pu = calloc((size_t)r->npu + 1, sizeof *r->pu);
	if (!r->pu)
		return PLB_ENOMEM;
	for (int j = 0; j < r->npu; j++)
		r->pu[j] = (struct wpu2){.r = r, .pu = j};
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	return 0;
}

/* Ends the PUs' kernels (u < 0: all) and frees r. */
static void run_fini(struct run2 *r)
{
	if (!r->pu)
		return;
	for (int j = 0; j < r->npu; j++)
		r->pu[j].what = DO_END;
	if (!give(r, -1))
		wait_back(r);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->pu);
	r->pu = NULL;
}

static int send_msg(struct plb *p, int rank, int type, const void *head, size_t hlen, const void *data,
		    size_t dlen)
{
	return plb__send(p, rank, &(struct plb__hdr){.type = (uint32_t)type}, head, hlen, data, dlen);
}

/* Fills n elements of size elem at buf with 1/(i+1)-ish values. */
static void fill_bench(void *buf, size_t n, int elem)
{
	for (size_t i = 0; i < n; i++) {
		double v = 1.0 / (double)(i % 97 + 1);
		if (elem == 8)
			((double *)buf)[i] = v;
		else
			((float *)buf)[i] = (float)v;
	}
}

/* M2BENCH: every PU given columns runs one step on its own scratch
 * matrices, all at once (as in the product: a node's PUs share its cores
 * and memory), twice, the second timed; M2BENCHED says each one's time. */
int plb__wmm2d_bench(struct plb *p, const struct plb__pu_calls *pus, void *msg)
{
	struct plb__m2bench mb;
	struct plb__hdr *h = plb__msg_hdr(msg);
	int np = pus->npu, ok = h->len == sizeof mb + (size_t)np * sizeof(int64_t);
	int64_t *cols = malloc(sizeof *cols * ((size_t)np + 1));
	double *secs = calloc((size_t)np + 1, sizeof *secs);
	void **bufs = calloc(2 * (size_t)np + 1, sizeof *bufs);
	if (ok) {
		memcpy(&mb, plb__msg_data(msg), sizeof mb);
		if (cols)
			memcpy(cols, (const char *)plb__msg_data(msg) + sizeof mb, sizeof *cols * (size_t)np);
	}
	plb__msg_free(msg);
	if (!ok || !cols || !secs || !bufs) {
		free(cols);
		free(secs);
		free(bufs);
		return plb__fail(p, ok ? PLB_ENOMEM : PLB_EIO, ok ? "out of memory" : "an M2BENCH not for this worker's PUs");
	}
	mb.kernel[sizeof mb.kernel - 1] = 0;
	struct run2 r = {0};
	int rc = PLB_EINVAL;
	void *a = NULL;
	if (mb.pu == -1 && mb.npu == np && (mb.elem == 4 || mb.elem == 8) && mb.rows >= 1 && mb.k >= 1 &&
	    mb.rows <= 1L << 24 && mb.k <= 4096)
		rc = run_init(&r, p, pus, mb.kernel, 1);
	for (int j = 0; j < np && !rc; j++)
		if (cols[j] < 0 || cols[j] > 1L << 24)
			rc = PLB_EINVAL;
	size_t e = (size_t)mb.elem;
	if (!rc && !(a = malloc((size_t)mb.rows * (size_t)mb.k * e)))
		rc = PLB_ENOMEM;
	if (!rc)
		fill_bench(a, (size_t)mb.rows * (size_t)mb.k, mb.elem);
	for (int j = 0; j < np && !rc; j++) {
		if (!cols[j])
			continue;
		bufs[2 * j] = malloc((size_t)mb.k * (size_t)cols[j] * e);
		bufs[2 * j + 1] = calloc((size_t)mb.rows * (size_t)cols[j], e);
		if (!bufs[2 * j] || !bufs[2 * j + 1])
			rc = PLB_ENOMEM;
		else
			fill_bench(bufs[2 * j], (size_t)mb.k * (size_t)cols[j], mb.elem);
	}
	/* begin, then the step twice, on every PU given columns, at once */
	for (int phase = 0; phase < 3 && !rc; phase++) {
		for (int j = 0; j < np && !rc; j++) {
			struct wpu2 *u = &r.pu[j];
			if (!cols[j])
				continue;
			u->what = phase ? DO_STEP : DO_BEGIN;
			u->step = (struct plb_gemm_step){a, bufs[2 * j], bufs[2 * j + 1], mb.rows, cols[j], mb.k, mb.k,
							 cols[j], cols[j], mb.elem};
			u->units = (uint64_t)llround((double)mb.rows * (double)cols[j] / ((double)mb.k * mb.k));
			rc = give(&r, j);
		}
		wait_back(&r);
		for (int j = 0; j < np && !rc; j++)
			if (cols[j] && r.pu[j].rc)
				rc = r.pu[j].rc;
	}
	/* a PU that failed: its code; else the node's (memory, the kernel) */
	int pu_failed = 0;
	for (int j = 0; j < np; j++) {
		int own = r.pu && cols[j] ? r.pu[j].rc : 0;
		pu_failed |= own != 0;
		secs[j] = own ? own : cols[j] && !rc ? r.pu[j].seconds : 0;
	}
	mb.seconds = pu_failed ? 0 : rc;
	if (r.pu)
		run_fini(&r);
	free(a);
	for (int j = 0; j < 2 * np; j++)
		free(bufs[j]);
	free(bufs);
	free(cols);
	int sent = send_msg(p, 0, PLB__MSG_M2BENCHED, &mb, sizeof mb, secs, sizeof *secs * (size_t)np);
	free(secs);
	return sent;
}

/* ---- a run ------------------------------------------------------------ */

struct node2 {
	struct plb *p;
	const struct plb__pu_calls *pus;
	struct plb__m2start st;
	int32_t *m, *n, *row, *at, *rank;
	int64_t *d;
	struct plb__grid g;
	int me, b, elem;
	long N, R, W;           /* blocks a side; this node's rows and columns, elements */
	char *A, *B, *C;        /* its rectangles, row-major R x W */
	char *ap, *bp;          /* the step's pivots: R x b, b x W */
	void **stash;           /* M2PIVs of steps ahead */
	size_t nstash, capstash;
	double said, wait_s, bytes_sent;
	struct plb__piece *pieces;      /* room for 2 q */
	void *held;             /* a message from the master that ends the run
				 * (its SHUTDOWN after its own error): for the
				 * worker's loop */
};

static double now_alive(struct node2 *s)
{
	struct plb *p = s->p;
	double now = plb__now();
	if (now - s->said >= plb__peer_timeout_min(&p->cfg) / 5) {
		void *msg = plb__msg_alloc(PLB__MSG_ALIVE, 0);
		if (msg && !p->tp->ops->send(p->tp, 0, msg))
			s->said = now;
	}
	return now;
}

/* Sends this node's pieces of step k to the other nodes. */
static int send_step(struct node2 *s, int k)
{
	int na, n = plb__pivots_out(&s->g, k, s->me, s->pieces, &na);
	size_t e = (size_t)s->elem, b = (size_t)s->b;
	for (int i = 0; i < n; i++) {
		const struct plb__piece *pc = &s->pieces[i];
		if (pc->dst == s->me)
			continue;
		struct plb__m2piv hd = {.step = k, .which = i < na ? PLB__M2_A : PLB__M2_B, .first = pc->first,
					.count = pc->count, .run = s->st.run};
		size_t len = (size_t)pc->count * b * b * e;
		void *msg = plb__msg_alloc(PLB__MSG_M2PIV, sizeof hd + len);
		if (!msg)
			return PLB_ENOMEM;
		plb__msg_hdr(msg)->len = sizeof hd + len;
		char *out = (char *)plb__msg_data(msg);
		memcpy(out, &hd, sizeof hd);
		out += sizeof hd;
		if (i < na) {   /* A: count b rows of my column k's b elements */
			long r0 = (long)(pc->first - s->row[s->me]) * s->b, c0 = (long)(k - s->at[s->me]) * s->b;
			for (long y = 0; y < (long)pc->count * s->b; y++)
				memcpy(out + (size_t)y * b * e, s->A + ((size_t)(r0 + y) * s->W + c0) * e, b * e);
		} else {        /* B: my row k, whole */
			long r0 = (long)(k - s->row[s->me]) * s->b;
			memcpy(out, s->B + (size_t)r0 * s->W * e, len);
		}
		int rc = s->p->tp->ops->send(s->p->tp, s->rank[pc->dst], msg);
		if (rc)
			return plb__fail(s->p, rc, "sending a pivot to rank %d: %s", s->rank[pc->dst], s->p->tp->err);
		s->bytes_sent += (double)len;
	}
	return 0;
}

/* An M2PIV into the stash (one of another run: dropped). */
static int keep(struct node2 *s, void *msg)
{
	struct plb__m2piv hd;
	memcpy(&hd, plb__msg_data(msg), sizeof hd);
	if (hd.run != s->st.run) {
		plb__msg_free(msg);
		return 0;
	}
	if (plb__push(&s->stash, &s->nstash, &s->capstash, sizeof msg, &msg)) {
		plb__msg_free(msg);
		return plb__fail(s->p, PLB_ENOMEM, "out of memory");
	}
	return 0;
}

/* Takes what has come: M2PIVs to the stash; anything else is a protocol
 * error. 0, or an error. */
static int take(struct node2 *s)
{
	struct plb *p = s->p;
	for (;;) {
		void *msg;
		int src, got = p->tp->ops->recv(p->tp, &msg, &src);
		if (got < 0)
			return plb__fail(p, got, "in the 2-D product: %s", p->tp->err);
		if (!got)
			return 0;
		struct plb__hdr *h = plb__msg_hdr(msg);
		if (h->type != PLB__MSG_M2PIV || h->len < sizeof(struct plb__m2piv)) {
			int type = (int)h->type;
			if (type == PLB__MSG_ALIVE) {
				plb__msg_free(msg);
				continue;
			}
			if (src == 0 && !s->held) {
				s->held = msg;
				return plb__fail(p, PLB_EIO, "the master ended the 2-D product");
			}
			plb__msg_free(msg);
			return plb__fail(p, PLB_EIO, "in the 2-D product, a message of type %d from rank %d", type, src);
		}
		int rc = keep(s, msg);
		if (rc)
			return rc;
	}
}

/* The stashed piece of step k, which, first (taken out of the stash), or
 * NULL. */
static void *find(struct node2 *s, int k, int which, int first)
{
	for (size_t i = 0; i < s->nstash; i++) {
		struct plb__m2piv hd;
		memcpy(&hd, plb__msg_data(s->stash[i]), sizeof hd);
		if (hd.step == k && hd.which == which && hd.first == first) {
			void *msg = s->stash[i];
			s->stash[i] = s->stash[--s->nstash];
			return msg;
		}
	}
	return NULL;
}

/* Waits (taking in what comes) for the piece of step k, which, first from
 * node src: its message. */
static int wait_piece(struct node2 *s, int k, int which, int first, int src, void **out)
{
	struct plb *p = s->p;
	struct plb__backoff bo = {0};
	double t0 = plb__now();
	plb__backoff_reset(&bo);
	for (;;) {
		int rc = take(s);
		if (rc)
			return rc;
		if ((*out = find(s, k, which, first))) {
			s->wait_s += plb__now() - t0;
			return 0;
		}
		double now = now_alive(s);
		if (now - t0 > p->cfg.peer_timeout_s)
			return plb__fail(p, PLB_EIO, "step %d of the 2-D product: no pivot from rank %d for %.1f s, longer than [network] peer_timeout_s = %g s",
					 k, s->rank[src], now - t0, p->cfg.peer_timeout_s);
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
}

/* The pivots of step k into ap (R x b) and bp (b x W). */
static int gather_step(struct node2 *s, int k)
{
	size_t e = (size_t)s->elem, b = (size_t)s->b;
	struct plb__piece bpc;
	int na = plb__pivots_in(&s->g, k, s->me, s->pieces, &bpc);
	for (int i = 0; i < na; i++) {
		const struct plb__piece *pc = &s->pieces[i];
		long y0 = (long)(pc->first - s->row[s->me]) * s->b, rows = (long)pc->count * s->b;
		if (pc->src == s->me) {
			long c0 = (long)(k - s->at[s->me]) * s->b;
			for (long y = 0; y < rows; y++)
				memcpy(s->ap + (size_t)(y0 + y) * b * e, s->A + ((size_t)(y0 + y) * s->W + c0) * e, b * e);
			continue;
		}
		void *msg;
		int rc = wait_piece(s, k, PLB__M2_A, pc->first, pc->src, &msg);
		if (rc)
			return rc;
		size_t len = (size_t)rows * b * e;
		if (plb__msg_hdr(msg)->len != sizeof(struct plb__m2piv) + len) {
			plb__msg_free(msg);
			return plb__fail(s->p, PLB_EIO, "step %d: a piece of A of the wrong size from rank %d", k,
					 s->rank[pc->src]);
		}
		memcpy(s->ap + (size_t)y0 * b * e, (char *)plb__msg_data(msg) + sizeof(struct plb__m2piv), len);
		plb__msg_free(msg);
	}
	size_t len = b * (size_t)s->W * e;
	if (bpc.src == s->me) {
		memcpy(s->bp, s->B + (size_t)(k - s->row[s->me]) * b * (size_t)s->W * e, len);
		return 0;
	}
	void *msg;
	int rc = wait_piece(s, k, PLB__M2_B, bpc.first, bpc.src, &msg);
	if (rc)
		return rc;
	if (plb__msg_hdr(msg)->len != sizeof(struct plb__m2piv) + len) {
		plb__msg_free(msg);
		return plb__fail(s->p, PLB_EIO, "step %d: a piece of B of the wrong size from rank %d", k,
				 s->rank[bpc.src]);
	}
	memcpy(s->bp, (char *)plb__msg_data(msg) + sizeof(struct plb__m2piv), len);
	plb__msg_free(msg);
	return 0;
}

static double at_e(const char *M, long i, int elem)
{
	return elem == 8 ? ((const double *)M)[i] : (double)((const float *)M)[i];
}

/* Freivalds' parts: this node's rows of B x (up), then with B x whole
 * (down) its rows of A (B x) and C x (up). */
static int verify(struct node2 *s)
{
	struct plb *p = s->p;
	int T = PLB__M2_TRIALS, rc = 0;
	long side = s->N * s->b, c0 = (long)s->at[s->me] * s->b, r0 = (long)s->row[s->me] * s->b;
	double *x = malloc(sizeof *x * (size_t)T * (size_t)s->W);
	double *v = calloc((size_t)2 * T * (size_t)s->R, sizeof *v);
	if (!x || !v) {
		free(x);
		free(v);
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	for (int t = 0; t < T; t++)
		for (long j = 0; j < s->W; j++)
			x[(size_t)t * s->W + j] = plb__m2_x(s->st.seed, t, c0 + j);
	for (int t = 0; t < T; t++)
		for (long i = 0; i < s->R; i++, now_alive(s)) {
			double acc = 0;
			for (long j = 0; j < s->W; j++)
				acc += at_e(s->B, i * s->W + j, s->elem) * x[(size_t)t * s->W + j];
			v[(size_t)t * s->R + i] = acc;
		}
	struct plb__m2vec hd = {.kind = PLB__M2_BX, .node = s->me, .first = r0, .count = s->R};
	if ((rc = send_msg(p, 0, PLB__MSG_M2VEC, &hd, sizeof hd, v, sizeof *v * (size_t)T * (size_t)s->R)))
		goto out;
	/* B x, whole, from the master */
	void *msg = NULL;
	struct plb__backoff bo = {0};
	double t0 = plb__now();
	plb__backoff_reset(&bo);
	for (;;) {
		int src, got = p->tp->ops->recv(p->tp, &msg, &src);
		if (got < 0) {
			rc = plb__fail(p, got, "in the 2-D product's test: %s", p->tp->err);
			goto out;
		}
		if (got && plb__msg_hdr(msg)->type == PLB__MSG_M2VEC)
			break;
		if (got && src == 0 && plb__msg_hdr(msg)->type != PLB__MSG_ALIVE && !s->held) {
			s->held = msg;
			rc = plb__fail(p, PLB_EIO, "the master ended the 2-D product");
			goto out;
		}
		if (got) {
			plb__msg_free(msg);     /* (ALIVEs) */
			continue;
		}
		double now = now_alive(s);
		if (now - t0 > p->cfg.peer_timeout_s + 60) {
			rc = plb__fail(p, PLB_EIO, "the 2-D product's test: no vector from the master for %.1f s",
				       now - t0);
			goto out;
		}
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
	struct plb__m2vec yh;
	memcpy(&yh, plb__msg_data(msg), sizeof yh);
	const double *y = (const double *)((const char *)plb__msg_data(msg) + sizeof yh);
	if (yh.kind != PLB__M2_Y || yh.count != side ||
	    plb__msg_hdr(msg)->len < sizeof yh + sizeof *y * (size_t)T * (size_t)side) {
		plb__msg_free(msg);
		rc = plb__fail(p, PLB_EIO, "the 2-D product's test: a vector of the wrong size from the master");
		goto out;
	}
	for (int t = 0; t < T; t++)
		for (long i = 0; i < s->R; i++, now_alive(s)) {
			double z = 0, c = 0;
			for (long j = 0; j < s->W; j++) {
				z += at_e(s->A, i * s->W + j, s->elem) * y[(size_t)t * side + c0 + j];
				c += at_e(s->C, i * s->W + j, s->elem) * x[(size_t)t * s->W + j];
			}
			v[(size_t)t * s->R + i] = z;
			v[((size_t)T + t) * s->R + i] = c;
		}
	plb__msg_free(msg);
	hd.kind = PLB__M2_ZC;
	rc = send_msg(p, 0, PLB__MSG_M2VEC, &hd, sizeof hd, v, sizeof *v * 2 * (size_t)T * (size_t)s->R);
out:
	free(x);
	free(v);
	return rc;
}

/* Parses M2START into s (its arrays point into msg). 0 or PLB_EIO. */
static int parse_start(struct node2 *s, void *msg)
{
	struct plb__hdr *h = plb__msg_hdr(msg);
	const char *data = plb__msg_data(msg);
	if (h->len < sizeof s->st)
		return PLB_EIO;
	memcpy(&s->st, data, sizeof s->st);
	s->st.kernel[sizeof s->st.kernel - 1] = 0;
	int q = s->st.q;
	if (q < 1 || s->st.node < 0 || s->st.node >= q || s->st.b < 1 || (s->st.elem != 4 && s->st.elem != 8) ||
	    s->st.npu != s->pus->npu || s->st.n < s->st.b || s->st.n % s->st.b ||
	    h->len != sizeof s->st + 5 * (size_t)q * sizeof(int32_t) + (size_t)s->st.npu * sizeof(int64_t))
		return PLB_EIO;
	/* (the payload is 16-byte aligned and the int32 arrays follow a struct
	 * of 8-byte members: aligned; the int64 slices after 5 q of them need
	 * not be, so they are copied) */
	s->m = (int32_t *)(data + sizeof s->st);
	s->n = s->m + q;
	s->row = s->n + q;
	s->at = s->row + q;
	s->rank = s->at + q;
	if (!(s->d = malloc(sizeof *s->d * ((size_t)s->st.npu + 1))))
		return PLB_ENOMEM;
	memcpy(s->d, s->rank + q, sizeof *s->d * (size_t)s->st.npu);
	s->g = (struct plb__grid){q, (int)(s->st.n / s->st.b), s->m, s->n, s->row, s->at};
	s->me = s->st.node;
	s->b = s->st.b;
	s->elem = s->st.elem;
	s->N = s->g.N;
	s->R = (long)s->m[s->me] * s->b;
	s->W = (long)s->n[s->me] * s->b;
	int64_t sum = 0;
	for (int j = 0; j < s->st.npu; j++) {
		if (s->d[j] < 0)
			return PLB_EIO;
		sum += s->d[j];
	}
	char why[160];
	if (sum != s->W || plb__grid_check(&s->g, why, sizeof why))
		return PLB_EIO;
	return 0;
}

/* The node's run: its figures or its error in M2DONE. */
static int run_node(struct node2 *s, struct plb__m2done *done)
{
	struct plb *p = s->p;
	size_t e = (size_t)s->elem, area = (size_t)s->R * (size_t)s->W;
	s->A = malloc(area * e);
	s->B = malloc(area * e);
	s->C = calloc(area, e);
	s->ap = malloc((size_t)s->R * (size_t)s->b * e);
	s->bp = malloc((size_t)s->b * (size_t)s->W * e);
	s->pieces = malloc(sizeof *s->pieces * (2 * (size_t)s->g.q + 1));
	if (!s->A || !s->B || !s->C || !s->ap || !s->bp || !s->pieces)
		return plb__fail(p, PLB_ENOMEM, "the 2-D product: no memory for this node's %ld x %ld rectangles",
				 s->R, s->W);
	long r0 = (long)s->row[s->me] * s->b, c0 = (long)s->at[s->me] * s->b;
	for (long i = 0; i < s->R; i++, now_alive(s))    /* (the master hears it draw) */
		for (long j = 0; j < s->W; j++) {
			double a = plb_mm2d_element(s->st.seed, 0, r0 + i, c0 + j);
			double bv = plb_mm2d_element(s->st.seed, 1, r0 + i, c0 + j);
			if (s->elem == 8) {
				((double *)s->A)[i * s->W + j] = a;
				((double *)s->B)[i * s->W + j] = bv;
			} else {
				((float *)s->A)[i * s->W + j] = (float)a;
				((float *)s->B)[i * s->W + j] = (float)bv;
			}
		}
	struct run2 r;
	int rc = run_init(&r, p, s->pus, s->st.kernel, s->st.seed);
	if (rc)
		return plb__fail(p, rc, "the 2-D product: kernel '%s': %s", s->st.kernel, plb_strerror(rc));
	for (int j = 0; j < r.npu; j++)
		r.pu[j].what = DO_BEGIN;
	if (!(rc = give(&r, -1)))
		wait_back(&r);
	for (int j = 0; j < r.npu && !rc; j++)
		if (r.pu[j].rc && s->d[j] > 0)
			rc = plb__fail(p, r.pu[j].rc, "the 2-D product: PU %d cannot run kernel '%s': %s", j,
				       s->st.kernel, plb_strerror(r.pu[j].rc));
	double compute = 0;
	done->t_first = plb__now();
	int sent = -1;
	for (int k = 0; k < s->N && !rc; k++) {
		while (!rc && sent < k + 1 && sent < s->N - 1)
			rc = send_step(s, ++sent);
		if (rc || (rc = gather_step(s, k)))
			break;
		double t0 = plb__now();
		int out = 0;
		for (int j = 0, col = 0; j < r.npu && !rc; col += (int)s->d[j], j++) {
			if (s->d[j] <= 0)
				continue;
			struct wpu2 *u = &r.pu[j];
			u->what = DO_STEP;
			u->step = (struct plb_gemm_step){s->ap, s->bp + (size_t)col * e, s->C + (size_t)col * e, s->R,
							 s->d[j], s->b, s->b, s->W, s->W, s->elem};
			u->units = (uint64_t)llround((double)s->R * (double)s->d[j] / ((double)s->b * s->b));
			rc = give(&r, j);
			out += !rc;
		}
		/* while the PUs compute: take in the pivots ahead */
		while (out && !back(&r, 2e-4)) {
			int r2 = take(s);
			now_alive(s);
			if (r2 && !rc)
				rc = r2;
		}
		compute += plb__now() - t0;
		for (int j = 0; j < r.npu && !rc; j++)
			if (s->d[j] > 0 && r.pu[j].rc)
				rc = plb__fail(p, r.pu[j].rc, "step %d of the 2-D product: PU %d: %s", k, j,
					       plb_strerror(r.pu[j].rc));
	}
	done->t_last = plb__now();
	done->compute_s = compute;
	done->wait_s = s->wait_s;
	done->bytes_sent = s->bytes_sent;
	run_fini(&r);
	if (!rc && s->st.verify)
		rc = verify(s);
	if (!rc && s->st.gather) {      /* C to the master */
		struct plb__m2c g = {(int64_t)s->row[s->me] * s->b, (int64_t)s->at[s->me] * s->b, s->R, s->W};
		rc = send_msg(p, 0, PLB__MSG_M2C, &g, sizeof g, s->C, area * e);
	}
	return rc;
}

int plb__wmm2d_run(struct plb *p, const struct plb__pu_calls *pus, void *msg, void **again)
{
	struct node2 s = {.p = p, .pus = pus};
	struct plb__m2done done = {0};
	int rc = parse_start(&s, msg);
	if (rc == PLB_ENOMEM)
		rc = plb__fail(p, rc, "out of memory");
	else if (rc)
		rc = plb__fail(p, PLB_EIO, "an M2START that does not hold a 2-D product for this worker's %d PUs",
			       pus->npu);
	/* the pieces that came before M2START: this run's kept, others dropped */
	if (*pus->nearly)
		plb__log(PLB__LOG_DEBUG, "worker", "2-D product: %zu pivot pieces came before its start", *pus->nearly);
	for (size_t i = 0; i < *pus->nearly; i++) {
		void *e = (*pus->early)[i];
		int r = 0;
		if (rc || plb__msg_hdr(e)->len < sizeof(struct plb__m2piv))
			plb__msg_free(e);
		else
			r = keep(&s, e);        /* (its message in p->err) */
		rc = rc ? rc : r;
	}
	*pus->nearly = 0;
	if (!rc)
		rc = run_node(&s, &done);
	done.node = s.me;
	done.status = rc;
	if (rc)
		snprintf(done.text, sizeof done.text, "%.255s", p->err);
	int sent = send_msg(p, 0, PLB__MSG_M2DONE, &done, sizeof done, NULL, 0);
	for (size_t i = 0; i < s.nstash; i++)
		plb__msg_free(s.stash[i]);
	free(s.stash);
	free(s.A);
	free(s.B);
	free(s.C);
	free(s.ap);
	free(s.bp);
	free(s.pieces);
	free(s.d);
	plb__msg_free(msg);
	if (rc && !s.held)
		plb__log(PLB__LOG_ERROR, "worker", "%s", p->err);
	p->err[0] = 0;  /* the run's error is the master's to report */
	*again = s.held;
	return sent;
}
