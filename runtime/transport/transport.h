/* How the master and the workers talk: one message is a fixed header
 * (struct plb__hdr) followed by a payload (block input or output, shared
 * data, config text), in one malloc'd buffer, so a block's data is packed
 * once and never copied again by the transport. A transport moves such
 * buffers between ranks without blocking; the MPI transport (mpi.c,
 * the only file that includes mpi.h) is one, in-process queues another.
 * Not thread-safe: one thread per process (the communication thread) makes
 * every call. */
#ifndef PLB_TRANSPORT_H
#define PLB_TRANSPORT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "plb_errors.h"

enum plb__msg_type {
	PLB__MSG_HELLO0 = 1,    /* worker -> master: its host name and plb's version */
	PLB__MSG_CONFIG,        /* master -> worker: node index, config text; or an error */
	PLB__MSG_HELLO,         /* worker -> master: its PUs (struct plb__pu_desc[]) or an error */
	PLB__MSG_START,         /* master -> worker: a run: kernel, shared data */
	PLB__MSG_DISPATCH,      /* master -> worker: a block and its input */
	PLB__MSG_DONE,          /* worker -> master: a finished block and its output */
	PLB__MSG_LOST,          /* worker -> master: a PU died */
	PLB__MSG_END,           /* master -> worker: the run is over */
	PLB__MSG_SHUTDOWN,      /* master -> worker: stop (status: it was taken out;
				 * PLB__F_GONE: a rank is gone) */
	PLB__MSG_BYE,           /* worker -> master: its idle CPU figures, stopping */
	PLB__MSG_ENDED,         /* worker -> master: every PU has left the run (an END
				 * with PLB__F_ACK asks for it) */
	PLB__MSG_ALIVE,         /* either way, in a run: the sender is alive (sent
				 * when it has said nothing else for a while); at
				 * the end (PLB__F_HEARD from a worker: SHUTDOWN heard) */
	PLB__MSG_FIN,           /* master -> worker, after its BYE: end now
				 * (PLB__F_GONE: a rank is lost; the payload:
				 * the process ids (int32) of the ranks taken
				 * out on the worker's host, for it to end) */
	/* pipeline runs (runtime/core/pipe.h says the payloads) */
	PLB__MSG_PSTART,        /* master -> worker: a pipeline run: its ops, shared data */
	PLB__MSG_INST,          /* master -> worker: an instance and its input */
	PLB__MSG_IDONE,         /* worker -> master: an instance's output and its tasks */
	/* 2-D product runs (runtime/core/mm2d.h says the payloads) */
	PLB__MSG_M2BENCH,       /* master -> worker: time one step on a PU */
	PLB__MSG_M2BENCHED,     /* worker -> master: its time */
	PLB__MSG_M2START,       /* master -> worker: the product, the layout, its slices */
	PLB__MSG_M2PIV,         /* worker -> worker: a pivot's piece */
	PLB__MSG_M2VEC,         /* either way: Freivalds' vectors */
	PLB__MSG_M2DONE,        /* worker -> master: its steps' figures, or an error */
	PLB__MSG_M2C,           /* worker -> master: its rectangle of C (a gather) */
	/* timing the master's link at start (runtime/core/link.c) */
	PLB__MSG_PROBE,         /* master -> worker: bytes to time (hdr.units: as
				 * many to send back), in the handshake */
	PLB__MSG_PROBED,        /* worker -> master: the PROBE whole (hdr.id: its
				 * id), with the bytes it asked for */
};

/* 128 bytes; the payload follows at PLB__HDR_SIZE (16-byte aligned). A
 * field that means something else in another type of message has a name
 * of its own there (the anonymous unions). */
struct plb__hdr {
	uint32_t type;          /* enum plb__msg_type */
	int32_t pu;             /* DISPATCH, DONE, LOST: the worker's local PU index;
				 * IDONE: the worker's task slot that failed */
	int32_t status;         /* 0, or a PLB_E code (DONE, HELLO, CONFIG, SHUTDOWN, BYE) */
	union {
		int32_t run;    /* DISPATCH, DONE, LOST, INST, IDONE: the run's number
				 * (the master's plb_run calls so far) */
		int32_t node;   /* CONFIG: the worker's [node] section; -1 with an error */
	};
	union {
		struct {        /* DISPATCH, DONE, LOST: the block (PROBE,
				 * PROBED: id, the round; units, bytes asked back) */
			uint64_t id;            /* its grant's id */
			uint64_t offset, units;
		};
		struct {        /* INST, IDONE: the instance */
			uint64_t inst;          /* its index in the pipeline's domain */
			uint64_t ntask;         /* IDONE: its task records */
			uint64_t inst_pad;
		};
		struct {        /* START, PSTART: the run */
			uint64_t seed;          /* [run] seed (the emulated PUs' noise) */
			uint64_t pu0;           /* the worker's first PU's index among all */
			uint64_t shared_bytes;  /* the job's shared data */
		};
	};
	int32_t kind;           /* DISPATCH: enum plb__grant_kind */
	int32_t flags;          /* enum plb__flag bits */
	double exec_s, xfer_s;  /* DONE: measured on the PU */
	double busy_s;          /* DONE: PU busy time for this block */
	union {
		struct {        /* START, PSTART: the job's unit sizes */
			double in_unit, out_unit;
		};
		struct {        /* DONE, BYE: the worker's idle time so far, and the
				 * CPU seconds its process used in it */
			double idle_wall_s, idle_cpu_s;
		};
		struct {        /* HELLO0: the worker's plb (PLB_VERSION), refused
				 * unless the master's, and its process id */
			uint32_t version;
			int32_t pid;
		};
		double budget;  /* HELLO: bytes of input the node may keep */
		double master_pid;      /* CONFIG, the go: the master's process id */
	};
	double t_xfer, t_end;   /* DONE: when the block's transfer stage began (NAN:
				 * not known) and when it ended, on the worker's
				 * clock from its run's START (for traces) */
	double t_arrive;        /* DONE: when the block's DISPATCH arrived, on the
				 * same clock (the master takes the time from there
				 * to t_end out of the block's round trip) */
	uint64_t tail;          /* DONE: the payload's last tail bytes (the block's
				 * output) may travel apart and be received where the
				 * receiver wants them (plb__transport.place); 0: none */
	uint64_t len;           /* payload bytes */
};
#define PLB__HDR_SIZE 128
_Static_assert(sizeof(struct plb__hdr) == PLB__HDR_SIZE, "header size");

/* START's payload: the kernel name in a field of this size (NUL-padded, so
 * the shared data after it stays 16-byte aligned), then the shared data
 * (hdr.shared_bytes; borrowed: a struct plb__borrow whose in is its
 * address), then, for a job with a reduction, the accumulator's identity
 * after the shared part padded to 16 (plb__pad16). DISPATCH's: the block's
 * input (borrowed: a struct plb__borrow; in parts: resident.h). DONE's:
 * the block's accumulator padded to 16 (if any), then its output (none
 * when borrowed). */
#define PLB__KERNEL_NAME_MAX 64

/* hdr.flags: every bit, and the messages it goes with. */
enum plb__flag {
	/* START, DISPATCH, DONE, LOST: the message is borrowed: its payload
	 * gives addresses in the master's memory (the job's own input,
	 * output, shared data) instead of the data, and the PU reads and
	 * writes there in place. Only over a transport whose ends share
	 * memory (ops.same_memory); a worker refuses it otherwise. */
	PLB__F_BORROWED = 1 << 0,
	/* DISPATCH: the payload is in parts (resident.h) */
	PLB__F_SEGMENTS = 1 << 1,
	/* DISPATCH: the node keeps the parts (resident.h) */
	PLB__F_KEEP = 1 << 2,
	/* START: the node keeps its store (resident.h) */
	PLB__F_REUSE = 1 << 3,
	/* START: no shared data: the node uses the last it was sent (as many
	 * bytes) */
	PLB__F_SHARED_KEPT = 1 << 4,
	/* DONE: the emulated PU's real kernel ran past its model's finish (its
	 * block took the host's time, not the model's) */
	PLB__F_OVERRAN = 1 << 5,
	/* START: the job's output is the one the last run wrote whole, so its
	 * pages are mapped: no PU need map them again (plb__populate) */
	PLB__F_OUT_MAPPED = 1 << 6,
	/* any, set by the sending transport: the payload's tail (hdr.tail
	 * bytes) follows as a message of its own */
	PLB__F_APART = 1 << 7,
	/* any, set by the receiving transport: the tail was received where
	 * the place hook said; the buffer holds the header and the payload's
	 * first hdr.len - hdr.tail bytes only */
	PLB__F_PLACED = 1 << 8,
	/* END: answer ENDED once every PU has left the run */
	PLB__F_ACK = 1 << 9,
	/* SHUTDOWN, FIN: a rank is gone: end without MPI_Finalize, which would
	 * wait for it */
	PLB__F_GONE = 1 << 10,
	/* ALIVE from a worker at the end: SHUTDOWN was heard */
	PLB__F_HEARD = 1 << 11,
	/* any, large (the MPI transport's queue_min): sent once every earlier
	 * such message of the sender's, to any rank, is done: the master's
	 * STARTs with the job's shared data go to one node after another */
	PLB__F_SERIAL = 1 << 12,
};
struct plb__borrow {
	uint64_t in, out;       /* addresses (uintptr_t); out 0 for START */
};

/* n rounded up to 16: a payload part after which the next stays aligned. */
static inline size_t plb__pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* A message buffer for type with room for len payload bytes (header zeroed
 * but for type and len); NULL when out of memory. Free with plb__msg_free,
 * which keeps large buffers for reuse (msgbuf.c). */
void *plb__msg_alloc(uint32_t type, size_t len);
void plb__msg_free(void *buf);
/* Maps the whole pages inside [p, p + len) now, in one call
 * (MADV_POPULATE_WRITE), instead of taking a page fault per 4 KiB as they
 * are first written; the contents stay as they are. Worth it from about
 * 256 KiB, before copying into memory that may be fresh from malloc (a
 * job's output). 0, or -1 where the kernel refuses it (before Linux 5.14):
 * callers go on without it. */
#define PLB__POPULATE_MIN ((size_t)256 << 10)
int plb__populate(void *p, size_t len);
/* Frees the kept buffers; with st, first says how the cache did. */
struct plb__msg_cache_stats {
	unsigned long hits, misses;     /* large allocations served / not */
	int kept;
	size_t kept_bytes;
};
void plb__msg_cache_clear(struct plb__msg_cache_stats *st);
static inline struct plb__hdr *plb__msg_hdr(void *buf) { return (struct plb__hdr *)buf; }
static inline void *plb__msg_data(void *buf) { return (char *)buf + PLB__HDR_SIZE; }

struct plb__transport;

struct plb__transport_ops {
	const char *name;
	/* The master and the workers share one address space (the in-process
	 * pair): messages may be borrowed (PLB__F_BORROWED). */
	int same_memory;
	/* Queue buf (from plb__msg_alloc, header len filled in) for rank dst;
	 * takes it over (frees it once sent, also on error). Never blocks. */
	PLB_WUR int (*send)(struct plb__transport *t, int dst, void *buf);
	/* The next message that has arrived, if any: 1 with *buf (caller frees)
	 * and *src, 0 if none. Moves pending sends on. Never blocks. */
	PLB_WUR int (*recv)(struct plb__transport *t, void **buf, int *src);
	/* Sends still under way (they move only while recv or flush is called,
	 * so callers poll more often while there are some). */
	int (*pending)(const struct plb__transport *t);
	/* Sends to rank dst still under way. NULL: never asked (one process). */
	int (*pending_to)(const struct plb__transport *t, int dst);
	/* Waits until every queued send has left (at most timeout_s). */
	PLB_WUR int (*flush)(struct plb__transport *t, double timeout_s);
	/* Ends the transport (MPI_Finalize, unless t->no_finalize) and frees t. */
	void (*destroy)(struct plb__transport *t);
	/* Rank dst is gone: drop what is still queued for it (a send to a dead
	 * process never completes). NULL: nothing to do (one process). */
	void (*forget)(struct plb__transport *t, int dst);
	/* Waits (at most timeout_s) until no receive is still writing where
	 * a place hook said: once it returns 0 that memory is the caller's
	 * again. PLB_EIO with err when some still are. Receives from ranks
	 * forgotten since (dead, most likely: theirs may never complete) get
	 * a second, then are cancelled; one that cannot be (part of it in)
	 * is left, with a warning. NULL: the transport never places. */
	PLB_WUR int (*settle)(struct plb__transport *t, double timeout_s);
	/* Sends wake the receiving end (the in-process pair): once fn is set
	 * with set_waker, each message queued for this end calls fn(ctx), so
	 * its idle loop may sleep long and still answer at once. Transports
	 * without it (MPI: nothing wakes a process but polling) set wakes 0
	 * and set_waker NULL. set_waker(t, NULL, NULL) before ctx goes: no
	 * call is under way once it returns. */
	int wakes;
	void (*set_waker)(struct plb__transport *t, void (*fn)(void *ctx), void *ctx);
};

struct plb__transport {
	const struct plb__transport_ops *ops;
	int rank, size;
	int no_finalize;        /* a peer is gone: end without MPI_Finalize, which
				 * would wait for it (docs/MPI.md) */
	char host[256];
	char err[256];          /* the last error, with file:line and the library's text */
	/* Where to receive the tail of a message whose tail travels apart
	 * (PLB__F_APART), asked when its header has arrived, on the thread
	 * that calls recv: the address of hdr.tail writable bytes, or NULL
	 * for the message buffer (as if it had come whole). The message is
	 * delivered once its tail is in, with PLB__F_PLACED where it went to
	 * the hook's address. NULL (the default): every tail goes to the
	 * message buffer. Only the MPI transport splits messages. */
	void *(*place)(void *ctx, int src, const struct plb__hdr *h);
	void *place_ctx;
};

/* An idle loop that answers fast after traffic and then sleeps longer
 * (MPI's own blocking waits spin at 100% of a core: docs/MPI.md). Where a
 * message wakes the loop (the in-process pair), every sleep is one that
 * a message cuts short: a timed sleep that only polled cost a time slice
 * a message beside a busy process (plb-null, 1-unit blocks, one process:
 * 0.3-38k completions a second beside two busy loops, 10-165k now). */
struct plb__backoff {
	double last_traffic;
	long sleep_us;
	long cap_us;            /* the longest sleep; 0 (zero-initialised): PLB__BACKOFF_CAP_US */
};
#define PLB__BACKOFF_CAP_US 500         /* a loop that must poll */
#define PLB__BACKOFF_WAKE_US 20000      /* a loop that a message wakes */
void plb__backoff_reset(struct plb__backoff *b);
/* Microseconds to sleep now (0: spin once more). With sends under way
 * (busy), at most 20 us: large messages move only while polled. */
long plb__backoff_next(struct plb__backoff *b, int busy);
/* Sleeps what plb__backoff_next says (a loop that only polls). */
void plb__backoff_sleep(struct plb__backoff *b, int busy);
/* Gives the core away for a moment (sched_yield) while waiting for
 * another of this process's threads, and says whether to go on doing so:
 * 0 once a yield has taken longer than PLB__YIELD_SHARED_S, i.e. the core
 * went to another process for a time slice, and for PLB__YIELD_SHARED_FOR_S
 * after that, in every thread. A loop that yields waits a time slice a
 * message where a busy process shares the cores (plb-null's completions a
 * second, one process, 1-unit blocks, fell to 0.3-0.4k beside two busy
 * loops); the caller then sleeps or blocks instead. On an idle machine a
 * yield is a few microseconds, and now and then one takes a millisecond
 * (another process's turn): the pause is short so that it costs little
 * there. Any thread. */
int plb__yield(void);
#define PLB__YIELD_SHARED_S 1e-3
#define PLB__YIELD_SHARED_FOR_S 20e-3

/* A sleep that a waking transport's sends (set_waker with plb__waiter_poke)
 * or another thread cut short, without a lost wake-up: take `seen` before
 * looking for work, and wait only if no poke came since. */
struct plb__waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned long pokes;
	int waiting;            /* in plb__waiter_wait: a poke signals */
};
void plb__waiter_init(struct plb__waiter *w);
void plb__waiter_fini(struct plb__waiter *w);
void plb__waiter_poke(void *w);         /* a waker: the struct plb__waiter */
unsigned long plb__waiter_seen(struct plb__waiter *w);
/* Sleeps up to us microseconds, unless poked since seen. */
void plb__waiter_wait(struct plb__waiter *w, unsigned long seen, long us);

/* The MPI transport (MPI_Init_thread, MPI_ERRORS_RETURN). Returns 0, or
 * PLB_EIO / PLB_ESTATE (built without MPI) with the reason in err. */
PLB_WUR int plb__transport_mpi_create(int *argc, char ***argv,
				      struct plb__transport **out,
				      char *err, size_t errlen);
/* MPI_Abort on MPI_COMM_WORLD with status, where MPI is initialised and
 * not finalised (a job whose ranks were taken out, at the master's exit);
 * nothing otherwise, and in a build without MPI. */
void plb__transport_mpi_abort(int status);
/* The rank an MPI launcher (Open MPI, MPICH/Hydra, PMI and PMIx ones) gives
 * this process, from the environment, so also known before MPI_Init and in
 * a build without MPI; NULL when no launcher started it. */
const char *plb__launcher_rank(void);
/* The in-process pair: rank 0 (master) and rank 1 (worker) of one process;
 * each endpoint is destroyed on its own. Returns 0 or PLB_ENOMEM. */
PLB_WUR int plb__transport_local_create(struct plb__transport **master,
					struct plb__transport **worker);

#endif
