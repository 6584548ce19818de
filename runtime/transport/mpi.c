/* The MPI transport, and the only file that includes mpi.h. One message is
 * one MPI message of bytes (header and payload together) on a duplicate of
 * MPI_COMM_WORLD, or two where its tail is large (a block's output,
 * hdr.tail): the tail follows on a tag of its own, and the receiver posts
 * its receive where the place hook says (the master: straight into the
 * job's output, no copy from a message buffer). Receives use MPI_Improbe
 * + MPI_Imrecv so a message of any size is taken whole (never a blocking
 * receive: one whose sender dies halfway must not hold the loop), and
 * sends are MPI_Isend whose buffers are freed as MPI_Testsome reports
 * them done. A rank's messages to one destination cross one large one at
 * a time, in the order sent: while a message of QUEUE_MIN bytes or more
 * is on its way to a rank, what follows it to that rank waits here, and
 * is posted once it is done (progress). Over one link, blocks granted
 * together then arrive one after the other, each at the link's speed,
 * instead of all together at the end, each at a share of it; different
 * destinations still share the sender's link, except large messages
 * flagged PLB__F_SERIAL, which go one after another to whatever rank
 * (plbsim's links model exactly this: runtime/sim/net.c). Errors are
 * returned (MPI_ERRORS_RETURN), never fatal, and name file:line and
 * MPI's own text. MPI_THREAD_FUNNELED: only the thread that called
 * MPI_Init makes MPI calls (the runtime's communication thread). In a
 * build without MPI (make MPI=0) only plb__transport_mpi_create is here,
 * and it says so. */
#include <stdio.h>

#include "runtime/transport/transport.h"

#ifndef PLB_HAVE_MPI
int plb__transport_mpi_create(int *argc, char ***argv, struct plb__transport **out,
			      char *err, size_t errlen)
{
	(void)argc;
	(void)argv;
	*out = NULL;
	snprintf(err, errlen, "this build has no MPI (make MPI=0) but was started by mpirun; accepted: run it directly (one process), or build with MPI");
	return PLB_ESTATE;
}

void plb__transport_mpi_abort(int status)
{
	(void)status;
}
#else
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "balancer/base/clock.h"
#include "balancer/base/log.h"

#define TAG 7
#define TAG_TAIL 8              /* a message's tail sent apart (PLB__F_APART) */
/* Tails from this size on travel apart (PLB_MPI_APART_MIN overrides it,
 * in bytes: tests use it to send small blocks' outputs apart). Below it,
 * one message and one copy at the master cost less than two messages. */
#define APART_MIN ((size_t)256 << 10)
/* A message from this size on is large: the next to its rank waits for
 * it (PLB_MPI_QUEUE_MIN overrides it, in bytes, or "off"). */
#define QUEUE_MIN ((size_t)64 << 10)

/* What a pending send holds back: nothing, the next to its rank, or that
 * and the next serial one to any rank (a large PLB__F_SERIAL message). */
enum held_by { HOLDS_NONE, HOLDS_RANK, HOLDS_SERIAL };

/* The buffer entry of a send that owns no buffer: the first part of a
 * split message, whose buffer the second part's entry frees. */
static char part_;
#define PART ((void *)&part_)
static void *own(void *b) { return b == PART ? NULL : b; }

struct mpi_transport {
	struct plb__transport t;
	MPI_Comm comm;
	MPI_Request *req;
	void **buf;
	int *dst;               /* each pending send's rank */
	unsigned char *large;   /* ... and what it holds back (enum held_by) */
	/* Messages waiting for a large one to their rank, in the order sent. */
	struct waiting {
		int dst;
		void *buf;
	} *wait;
	int nwait, capwait;
	size_t queue_min;       /* 0: no message waits */
	void **gone;            /* buffers of sends to, and receives from, a
				 * forgotten rank: MPI may still use them, so
				 * they are freed at the end */
	int ngone;
	/* Receives under way, in the order their messages were matched. A
	 * message is taken with MPI_Imrecv, never a blocking receive: one
	 * whose sender dies halfway never completes, and the loop must go on
	 * (and notice the sender is gone). A source's messages are delivered
	 * in order: only its oldest receive may be. */
	struct incoming {
		MPI_Request req;
		void *buf;
		int src, count;
		int tail;       /* its tail's receive is under way (PLB__F_APART) */
		int placed;     /* ... where the place hook said */
		int gone;       /* placed, from a rank forgotten since: kept until
				 * it completes (settle), then dropped */
	} *in;
	int nin, capin;
	/* forgotten[r]: rank r was taken out (mpi_forget). Its messages'
	 * tails get no receive again: a tail receive of its that forget
	 * cancelled before the tail came leaves that tail unmatched, and the
	 * next tail receive posted for the rank (should it come back) would
	 * take it instead of its own: MPI_ERR_TRUNCATE where it is larger (a
	 * master died so behind a 200 Mbit/s link), another block's bytes
	 * where not. NULL until a rank is forgotten. */
	unsigned char *forgotten;
	size_t apart_min;
	int npend, cap;
	int *idx;
	MPI_Status *st;
};

/* Every MPI call goes through this: on failure, record file:line and MPI's
 * error string and return PLB_EIO from the calling function. */
#define MPI_CHECK(t, call)                                                   \
	do {                                                                 \
		int mpi_rc_ = (call);                                        \
		if (mpi_rc_ != MPI_SUCCESS)                                  \
			return mpi_fail((t), __FILE__, __LINE__, #call, mpi_rc_); \
	} while (0)

static int mpi_fail(struct plb__transport *t, const char *file, int line,
		    const char *call, int rc)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof msg, "MPI error %d", rc);
	snprintf(t->err, sizeof t->err, "%s:%d: %.40s: %.150s", file, line, call, msg);
	return PLB_EIO;
}

static int post(struct mpi_transport *m, int dst, void *buf);

static size_t msg_len(const void *buf)
{
	return PLB__HDR_SIZE + plb__msg_hdr((void *)buf)->len;
}

/* A large message flagged PLB__F_SERIAL. */
static int is_serial(const struct mpi_transport *m, const void *buf)
{
	return m->queue_min && msg_len(buf) >= m->queue_min &&
	       (plb__msg_hdr((void *)buf)->flags & PLB__F_SERIAL);
}

/* Whether a message to dst (serial: a large PLB__F_SERIAL one) waits:
 * one to dst waits before it (the first `nwait` of the waiting list), a
 * large one to dst is on its way, or, serial, a serial one to any rank is
 * on its way or waits. */
static int held(const struct mpi_transport *m, int dst, int serial, int nwait)
{
	for (int i = 0; i < m->npend; i++)
		if ((m->dst[i] == dst && m->large[i] != HOLDS_NONE) ||
		    (serial && m->large[i] == HOLDS_SERIAL))
			return 1;
	for (int i = 0; i < nwait; i++)
		if (m->wait[i].dst == dst || (serial && is_serial(m, m->wait[i].buf)))
			return 1;
	return 0;
}

/* Posts the waiting messages that are held no more, in order: one that
 * stays holds the later ones to its rank (and, serial, the later serial
 * ones). */
static int post_waiting(struct mpi_transport *m)
{
	int k = 0, rc = 0;
	for (int i = 0; i < m->nwait; i++) {
		struct waiting w = m->wait[i];
		if (rc || held(m, w.dst, is_serial(m, w.buf), k))
			m->wait[k++] = w;
		else
			rc = post(m, w.dst, w.buf);
	}
	m->nwait = k;
	return rc;
}

static int progress(struct mpi_transport *m)
{
	int n = 0;
	if (!m->npend)
		return post_waiting(m);
	MPI_CHECK(&m->t, MPI_Testsome(m->npend, m->req, &n, m->idx, m->st));
	if (n == MPI_UNDEFINED || n == 0)
		return post_waiting(m);        /* a rank forgotten may have let some go */
	for (int i = 0; i < n; i++) {
		plb__msg_free(own(m->buf[m->idx[i]]));
		m->buf[m->idx[i]] = NULL;
	}
	/* compact: completed requests are MPI_REQUEST_NULL now */
	int k = 0;
	for (int i = 0; i < m->npend; i++) {
		if (m->buf[i]) {
			m->req[k] = m->req[i];
			m->dst[k] = m->dst[i];
			m->large[k] = m->large[i];
			m->buf[k++] = m->buf[i];
		}
	}
	m->npend = k;
	return post_waiting(m);
}

static int grow(struct mpi_transport *m)
{
	int cap = m->cap ? 2 * m->cap : 64;
	MPI_Request *r = realloc(m->req, (size_t)cap * sizeof *r);
	if (r)
		m->req = r;
	void **b = realloc(m->buf, (size_t)cap * sizeof *b);
	if (b)
		m->buf = b;
	int *x = realloc(m->idx, (size_t)cap * sizeof *x);
	if (x)
		m->idx = x;
	MPI_Status *s = realloc(m->st, (size_t)cap * sizeof *s);
	if (s)
		m->st = s;
	int *d = realloc(m->dst, (size_t)cap * sizeof *d);
	if (d)
		m->dst = d;
	unsigned char *l = realloc(m->large, (size_t)cap * sizeof *l);
	if (l)
		m->large = l;
	if (!r || !b || !x || !s || !d || !l)
		return PLB_ENOMEM;
	m->cap = cap;
	return 0;
}

/* MPI_Isend of a whole message (two where its tail goes apart). Takes
 * buf: freed on an error, else once sent. */
static int post(struct mpi_transport *m, int dst, void *buf)
{
	struct plb__transport *t = &m->t;
	struct plb__hdr *h = plb__msg_hdr(buf);
	size_t len = PLB__HDR_SIZE + h->len;
	/* a large tail goes apart, so that the receiver may take it straight
	 * where it belongs (a block's output into the job's) */
	size_t tail = h->tail <= h->len && h->tail >= m->apart_min ? h->tail : 0;
	unsigned char large = is_serial(m, buf)                    ? HOLDS_SERIAL
			      : m->queue_min && len >= m->queue_min ? HOLDS_RANK
								    : HOLDS_NONE;
	while (m->npend + 2 > m->cap) {
		if (grow(m)) {
			plb__msg_free(buf);
			snprintf(t->err, sizeof t->err, "out of memory");
			return PLB_ENOMEM;
		}
	}
	if (tail)
		h->flags |= PLB__F_APART;
	int rc = MPI_Isend(buf, (int)(len - tail), MPI_BYTE, dst, TAG, m->comm, &m->req[m->npend]);
	if (rc != MPI_SUCCESS) {
		plb__msg_free(buf);
		return mpi_fail(t, __FILE__, __LINE__, "MPI_Isend", rc);
	}
	m->dst[m->npend] = dst;
	m->large[m->npend] = large;
	m->buf[m->npend++] = tail ? PART : buf;
	if (!tail)
		return 0;
	rc = MPI_Isend((char *)buf + (len - tail), (int)tail, MPI_BYTE, dst, TAG_TAIL, m->comm,
		       &m->req[m->npend]);
	if (rc != MPI_SUCCESS) {
		m->buf[m->npend - 1] = buf;     /* freed once the first part is sent */
		return mpi_fail(t, __FILE__, __LINE__, "MPI_Isend", rc);
	}
	m->dst[m->npend] = dst;
	m->large[m->npend] = large;
	m->buf[m->npend++] = buf;
	return 0;
}

static int mpi_send(struct plb__transport *t, int dst, void *buf)
{
	struct mpi_transport *m = (struct mpi_transport *)t;
	struct plb__hdr *h = plb__msg_hdr(buf);
	size_t len = PLB__HDR_SIZE + h->len;
	if (len > INT_MAX) {
		plb__msg_free(buf);
		snprintf(t->err, sizeof t->err, "a message of %zu bytes is over MPI's limit of %d; use smaller blocks (max_block)",
			 len, INT_MAX);
		return PLB_EINVAL;
	}
	if (!held(m, dst, is_serial(m, buf), m->nwait))
		return post(m, dst, buf);
	if (m->nwait == m->capwait) {
		int cap = m->capwait ? 2 * m->capwait : 16;
		struct waiting *w = realloc(m->wait, (size_t)cap * sizeof *w);
		if (!w) {
			plb__msg_free(buf);
			snprintf(t->err, sizeof t->err, "out of memory");
			return PLB_ENOMEM;
		}
		m->wait = w;
		m->capwait = cap;
	}
	m->wait[m->nwait++] = (struct waiting){dst, buf};
	return 0;
}

/* A message's first part is in and its tail travels apart: receive the
 * tail where the place hook says, or into a buffer for the whole. */
static int post_tail(struct mpi_transport *m, struct incoming *x)
{
	struct plb__hdr *h = plb__msg_hdr(x->buf);
	size_t tail = h->tail;
	char *at = m->t.place ? m->t.place(m->t.place_ctx, x->src, h) : NULL;
	if (at) {
		h->flags |= PLB__F_PLACED;
		x->placed = 1;
	} else {
		void *whole = plb__msg_alloc(0, h->len);
		if (!whole) {
			snprintf(m->t.err, sizeof m->t.err, "out of memory for a message of %llu bytes",
				 (unsigned long long)h->len);
			return PLB_ENOMEM;
		}
		memcpy(whole, x->buf, (size_t)x->count);
		plb__msg_free(x->buf);
		x->buf = whole;
		at = (char *)whole + x->count;
	}
	x->tail = 1;
	MPI_CHECK(&m->t, MPI_Irecv(at, (int)tail, MPI_BYTE, x->src, TAG_TAIL, m->comm, &x->req));
	return 0;
}

static void drop_incoming(struct mpi_transport *m, int i)
{
	memmove(&m->in[i], &m->in[i + 1], (size_t)(m->nin - i - 1) * sizeof *m->in);
	m->nin--;
}

/* The oldest finished receive whose source has none older under way:
 * 1 with it taken out of m->in, 0 if none. A message whose tail travels
 * apart is delivered once that is in too. */
static int take_incoming(struct mpi_transport *m, void **out, int *src)
{
	for (int i = 0; i < m->nin; i++) {
		struct incoming *x = &m->in[i];
		int older = 0, done = 0;
		for (int j = 0; j < i && !older; j++)
			older = m->in[j].src == x->src;
		if (older)
			continue;
		MPI_CHECK(&m->t, MPI_Test(&x->req, &done, MPI_STATUS_IGNORE));
		if (!done)
			continue;
		if (x->gone) {
			plb__msg_free(x->buf);
			drop_incoming(m, i--);
			continue;
		}
		struct plb__hdr *h = plb__msg_hdr(x->buf);
		int apart = x->count >= PLB__HDR_SIZE && (h->flags & PLB__F_APART);
		if (!x->tail && (x->count < PLB__HDR_SIZE ||
				 h->len - (apart ? h->tail : 0) != (uint64_t)x->count - PLB__HDR_SIZE ||
				 (apart && (h->tail > h->len || h->tail > INT_MAX)))) {
			int from = x->src, count = x->count;
			plb__msg_free(x->buf);
			drop_incoming(m, i);
			snprintf(m->t.err, sizeof m->t.err, "malformed message of %d bytes from rank %d",
				 count, from);
			return PLB_EIO;
		}
		if (apart && !x->tail && m->forgotten && m->forgotten[x->src]) {
			plb__msg_free(x->buf);  /* from a rank taken out: ignored */
			drop_incoming(m, i--);
			continue;
		}
		if (apart && !x->tail) {
			int rc = post_tail(m, x);
			if (rc)
				return rc;
			continue;       /* its source's next waits behind it */
		}
		*out = x->buf;
		*src = x->src;
		drop_incoming(m, i);
		return 1;
	}
	return 0;
}

static int mpi_recv(struct plb__transport *t, void **out, int *src)
{
	struct mpi_transport *m = (struct mpi_transport *)t;
	int flag = 0, count = 0, rc;
	MPI_Message msg;
	MPI_Status st;

	if ((rc = progress(m)))
		return rc;
	if ((rc = take_incoming(m, out, src)))
		return rc;
	MPI_CHECK(t, MPI_Improbe(MPI_ANY_SOURCE, TAG, m->comm, &flag, &msg, &st));
	if (!flag)
		return 0;
	MPI_CHECK(t, MPI_Get_count(&st, MPI_BYTE, &count));
	if (m->nin == m->capin) {
		int cap = m->capin ? 2 * m->capin : 16;
		struct incoming *n = realloc(m->in, (size_t)cap * sizeof *n);
		if (!n) {
			snprintf(t->err, sizeof t->err, "out of memory");
			return PLB_ENOMEM;
		}
		m->in = n;
		m->capin = cap;
	}
	/* the header is received over the one plb__msg_alloc wrote */
	void *buf = plb__msg_alloc(0, count > PLB__HDR_SIZE ? (size_t)count - PLB__HDR_SIZE : 0);
	if (!buf) {
		snprintf(t->err, sizeof t->err, "out of memory for a message of %d bytes", count);
		return PLB_ENOMEM;
	}
	struct incoming *x = &m->in[m->nin];
	*x = (struct incoming){.req = MPI_REQUEST_NULL};
	rc = MPI_Imrecv(buf, count, MPI_BYTE, &msg, &x->req);
	if (rc != MPI_SUCCESS) {
		plb__msg_free(buf);
		return mpi_fail(t, __FILE__, __LINE__, "MPI_Imrecv", rc);
	}
	x->buf = buf;
	x->src = st.MPI_SOURCE;
	x->count = count;
	m->nin++;
	return take_incoming(m, out, src);
}

static int mpi_flush(struct plb__transport *t, double timeout_s)
{
	struct mpi_transport *m = (struct mpi_transport *)t;
	double end = plb__now() + timeout_s;
	int rc;
	while (m->npend || m->nwait) {
		if ((rc = progress(m)))
			return rc;
		if (!m->npend && !m->nwait)
			break;
		if (plb__now() > end) {
			snprintf(t->err, sizeof t->err, "%d messages still unsent after %.0f s",
				 m->npend + m->nwait, timeout_s);
			return PLB_EIO;
		}
		nanosleep(&(struct timespec){0, 100000}, NULL);
	}
	return 0;
}

static void mpi_destroy(struct plb__transport *t)
{
	struct mpi_transport *m = (struct mpi_transport *)t;
	if (!m)
		return;
	/* Never leave a request pending (MPI_Finalize would hang on it). */
	for (int i = 0; i < m->npend; i++) {
		MPI_Cancel(&m->req[i]);
		MPI_Request_free(&m->req[i]);
		plb__msg_free(own(m->buf[i]));
	}
	for (int i = 0; i < m->nwait; i++)
		plb__msg_free(m->wait[i].buf);
	free(m->wait);
	/* a tail's receive never matched (its sender is gone) */
	for (int i = 0; i < m->nin; i++)
		if (m->in[i].tail && m->in[i].req != MPI_REQUEST_NULL) {
			MPI_Cancel(&m->in[i].req);
			MPI_Request_free(&m->in[i].req);
		}
	if (!t->no_finalize) {
		MPI_Comm_free(&m->comm);
		MPI_Finalize();
	}
	for (int i = 0; i < m->ngone; i++)
		plb__msg_free(m->gone[i]);
	free(m->gone);
	for (int i = 0; i < m->nin; i++)
		plb__msg_free(m->in[i].buf);    /* (complete or from a rank gone) */
	free(m->in);
	free(m->forgotten);
	free(m->dst);
	free(m->large);
	free(m->req);
	free(m->buf);
	free(m->idx);
	free(m->st);
	free(m);
}

/* Keeps buf to the end (MPI may still use it), or leaks it if there is no
 * room to keep it. */
static void keep_gone(struct mpi_transport *m, void *buf)
{
	if (!(buf = own(buf)))
		return;
	void **g = realloc(m->gone, (size_t)(m->ngone + 1) * sizeof *g);
	if (g) {
		m->gone = g;
		m->gone[m->ngone++] = buf;
	}
}

/* A send to a dead rank never completes: cancel what is queued for it and
 * stop waiting for it; its buffers are kept to the end (MPI may still read
 * them), or leaked if there is no room to keep them. No tail of its is
 * received again (forgotten). */
static void mpi_forget(struct plb__transport *t, int dst)
{
	struct mpi_transport *m = (struct mpi_transport *)t;
	int k = 0;
	if (!m->forgotten)
		m->forgotten = calloc((size_t)t->size + 1, 1);
	if (m->forgotten && dst >= 0 && dst < t->size)
		m->forgotten[dst] = 1;
	for (int i = 0; i < m->npend; i++) {
		if (m->dst[i] == dst) {
			MPI_Cancel(&m->req[i]);
			MPI_Request_free(&m->req[i]);
			keep_gone(m, m->buf[i]);
			continue;
		}
		m->req[k] = m->req[i];
		m->dst[k] = m->dst[i];
		m->large[k] = m->large[i];
		m->buf[k++] = m->buf[i];
	}
	m->npend = k;
	/* what waited for it, never given to MPI */
	k = 0;
	for (int i = 0; i < m->nwait; i++) {
		if (m->wait[i].dst == dst)
			plb__msg_free(m->wait[i].buf);
		else
			m->wait[k++] = m->wait[i];
	}
	m->nwait = k;
	/* and what it was sending: it may never come whole. A tail on its way
	 * into the place hook's memory stays, for settle to wait for. */
	k = 0;
	for (int i = 0; i < m->nin; i++) {
		if (m->in[i].src == dst && m->in[i].placed) {
			m->in[i].gone = 1;
		} else if (m->in[i].src == dst) {
			if (m->in[i].tail && m->in[i].req != MPI_REQUEST_NULL) {
				MPI_Cancel(&m->in[i].req);
				MPI_Request_free(&m->in[i].req);
			}
			keep_gone(m, m->in[i].buf);
			continue;
		}
		m->in[k++] = m->in[i];
	}
	m->nin = k;
}

/* A placed tail from a rank taken out may never complete (its sender is
 * dead): settle waits this long for it, then cancels it. */
#define GONE_GRACE_S 1.0

/* Cancels the placed receives from ranks taken out that are still open:
 * one not yet matched (its sender died before its tail left) is cancelled
 * and dropped; one matched, part of it in, cannot be (MPI completes it
 * only when the rest comes), and is counted. */
static int cancel_gone(struct mpi_transport *m)
{
	int stuck = 0;
	for (int i = 0; i < m->nin; i++) {
		struct incoming *x = &m->in[i];
		int done = 0;
		if (!x->placed || !x->gone)
			continue;
		MPI_CHECK(&m->t, MPI_Cancel(&x->req));
		MPI_CHECK(&m->t, MPI_Test(&x->req, &done, MPI_STATUS_IGNORE));
		if (done) {
			plb__msg_free(x->buf);
			drop_incoming(m, i--);
		} else {
			stuck++;
		}
	}
	return stuck;
}

static int mpi_settle(struct plb__transport *t, double timeout_s)
{
	struct mpi_transport *m = (struct mpi_transport *)t;
	double t0 = plb__now();
	for (;;) {
		int left = 0, gone = 0, from = -1;
		for (int i = 0; i < m->nin; i++) {
			struct incoming *x = &m->in[i];
			int done = 0;
			if (!x->placed)
				continue;
			MPI_CHECK(t, MPI_Test(&x->req, &done, MPI_STATUS_IGNORE));
			if (done && x->gone) {
				plb__msg_free(x->buf);
				drop_incoming(m, i--);
			} else if (!done && x->gone) {
				gone++;
			} else if (!done) {
				left++;
				from = x->src;
			}
		}
		double el = plb__now() - t0;
		if (!left && gone && el > GONE_GRACE_S) {
			int stuck = cancel_gone(m);
			if (stuck < 0)
				return stuck;
			if (stuck)
				plb__log(PLB__LOG_WARN, "mpi", "%d blocks' outputs from ranks taken out stopped halfway in; should such a rank be alive after all, it may still write the rest (its units' right values) into the job's output",
					 stuck);
			return 0;
		}
		if (!left && !gone)
			return 0;
		if (left && el > timeout_s) {
			snprintf(t->err, sizeof t->err, "%d blocks' outputs from rank %d%s still arriving after %.0f s",
				 left, from, left > 1 ? " and others" : "", timeout_s);
			return PLB_EIO;
		}
		nanosleep(&(struct timespec){0, 100000}, NULL);
	}
}

static int mpi_pending(const struct plb__transport *t)
{
	const struct mpi_transport *m = (const struct mpi_transport *)t;
	return m->npend + m->nwait;
}

static int mpi_pending_to(const struct plb__transport *t, int dst)
{
	const struct mpi_transport *m = (const struct mpi_transport *)t;
	int n = 0;
	for (int i = 0; i < m->npend; i++)
		n += m->dst[i] == dst;
	for (int i = 0; i < m->nwait; i++)
		n += m->wait[i].dst == dst;
	return n;
}

static const struct plb__transport_ops mpi_ops = {
	.name = "mpi",
	.send = mpi_send,
	.recv = mpi_recv,
	.pending = mpi_pending,
	.pending_to = mpi_pending_to,
	.flush = mpi_flush,
	.destroy = mpi_destroy,
	.forget = mpi_forget,
	.settle = mpi_settle,
};

void plb__transport_mpi_abort(int status)
{
	int up = 0, down = 1;
	if (MPI_Initialized(&up) == MPI_SUCCESS && up && MPI_Finalized(&down) == MPI_SUCCESS && !down)
		MPI_Abort(MPI_COMM_WORLD, status);
}

/* A byte count from the environment (or "off", 0, where off is
 * accepted), else def with a warning that names what is accepted. */
static size_t env_bytes(const char *name, size_t def, int off)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	if (off && !strcmp(v, "off"))
		return 0;
	char *e;
	unsigned long long b = strtoull(v, &e, 10);
	if (!*e && b > 0 && v[0] != '-')
		return (size_t)b;
	plb__log(PLB__LOG_WARN, "mpi", "%s=%.40s is not a byte count; accepted: an integer >= 1%s; using %zu",
		 name, v, off ? " or off" : "", def);
	return def;
}

int plb__transport_mpi_create(int *argc, char ***argv, struct plb__transport **out,
			      char *err, size_t errlen)
{
	struct mpi_transport *m = calloc(1, sizeof *m);
	int provided = 0, rc, len = 0;

	*out = NULL;
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return PLB_ENOMEM;
	}
	m->t.ops = &mpi_ops;
	m->apart_min = env_bytes("PLB_MPI_APART_MIN", APART_MIN, 0);
	m->queue_min = env_bytes("PLB_MPI_QUEUE_MIN", QUEUE_MIN, 1);
	rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
	if (rc != MPI_SUCCESS) {
		mpi_fail(&m->t, __FILE__, __LINE__, "MPI_Init_thread", rc);
		snprintf(err, errlen, "%s", m->t.err);
		free(m);
		return PLB_EIO;
	}
	if ((rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
	    (rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm)) != MPI_SUCCESS ||
	    (rc = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
	    (rc = MPI_Comm_rank(m->comm, &m->t.rank)) != MPI_SUCCESS ||
	    (rc = MPI_Comm_size(m->comm, &m->t.size)) != MPI_SUCCESS) {
		mpi_fail(&m->t, __FILE__, __LINE__, "MPI setup", rc);
		snprintf(err, errlen, "%s", m->t.err);
		MPI_Finalize();
		free(m);
		return PLB_EIO;
	}
	char host[MPI_MAX_PROCESSOR_NAME];
	if (MPI_Get_processor_name(host, &len) != MPI_SUCCESS || len <= 0)
		gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	snprintf(m->t.host, sizeof m->t.host, "%s", host);
	if (provided < MPI_THREAD_FUNNELED) {
		snprintf(err, errlen, "MPI gives thread level %d, plb needs MPI_THREAD_FUNNELED (%d)",
			 provided, MPI_THREAD_FUNNELED);
		mpi_destroy(&m->t);
		return PLB_EIO;
	}
	*out = &m->t;
	return 0;
}
#endif
