/* The runtime's internals shared by plb.c (init, finalize), the master's
 * files (rank 0: the balancer loop; run.h lists them), worker.c (every
 * other rank: the daemon) and handle.c (the first error, the kernel
 * table). */
#ifndef PLB_RT_H
#define PLB_RT_H

#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "plb.h"
#include "balancer/balancer.h"
#include "balancer/ranges.h"
#include "balancer/base/clock.h"
#include "runtime/config/config.h"
#include "runtime/config/report.h"
#include "runtime/config/trace.h"
#include "runtime/device/device.h"
#include "runtime/transport/transport.h"

struct plb__worker;             /* worker.c */
struct plb__balancer;

/* Each PU's fitted model after the last run of one kind (models.c): a
 * kernel, its unit sizes and the job's signature. */
struct plb__kept_pu {
	int n;                          /* samples; 0: none (lost, or no model) */
	int cap;                        /* room in s (0: n, as stored or read) */
	double cliff;
	struct plb__sample *s;
};
struct plb__kept {
	char *kernel, *sig;
	size_t in_unit, out_unit;
	struct plb__kept_pu *pu;        /* npu */
};

/* A worker rank as the master sees it. */
struct plb__peer {
	int rank, npu, pu0;             /* pu0: its first PU's global index */
	int node;                       /* its [node] section in the config */
	double heard;                   /* its last message (plb__now), in a run */
	int spoke;                      /* it has said something in this run */
	double gap;                     /* its longest silence so far, in runs */
	int gone_rank;                  /* rank taken out for silence (rank is -1 then); 0: none */
	char host[256];
	int pid;                        /* its process id on host (HELLO0) */
	double idle_wall_s, idle_cpu_s; /* from BYE */
	struct plb__ranges held;        /* the input it keeps (resident.c) */
	double budget;                  /* bytes it may keep (from HELLO) */
	int behind;                     /* its bytes cross the master's link: it runs on
					 * another host, or every worker is on the
					 * master's (one host: [network] link_gbps
					 * stands for a link) */
};

/* The master's link (link.c): bytes a second each way, from [network]
 * link_gbps or timed at start (plb_init). */
enum plb__link_from { PLB__LINK_NONE, PLB__LINK_CONFIG, PLB__LINK_PROBE };
struct plb__link {
	enum plb__link_from from;
	double out, in;         /* bytes a second: master to workers, and back */
	double latency_s;       /* probe: half an empty message's round trip */
};

/* The domain whose input the nodes keep (resident.c). */
struct plb__res_domain {
	const void *in;
	size_t in_unit;
	uint64_t W;
	int valid;
	const void *shared;     /* the shared data every node has (valid_shared) */
	size_t shared_bytes;
	int valid_shared;
};

struct plb {
	struct plb__transport *tp;
	int master;
	const struct plb_kernel *const *kernels;
	int nkernels;
	char policy[32];
	const char *config;     /* its path, as given */
	int single;             /* in-process mode: master and worker in this process */
	struct plb *local;      /* master, in-process mode: the worker's handle */
	pthread_t local_th;
	int local_started, local_rc;
	struct plb__config cfg;
	int have_cfg;
	int node;               /* worker: its config node index */
	int master_pid;         /* worker: the master's process id when it runs on
				 * this host (0: elsewhere, or in this process) */
	int pu_left;            /* worker: a PU thread still in a kernel was left
				 * running at the end; it may read this handle */
	char err[1024];
	int failed;             /* an error every rank knows of */
	int announced;          /* the master has printed it */
	/* master */
	int npeer;
	struct plb__peer *peer;
	int npu;
	struct plb__pu_desc *pu;        /* global PU list: workers in rank order */
	struct plb__run_result *last;   /* the last run's report, NULL before one */
	struct plb__pipe_report *pipe_last;     /* the last pipeline run's */
	int last_pipe;          /* the last run was a pipeline's */
	int ops_warned;         /* a block run was told the config's [op] are not its */
	int runs;               /* plb_run calls so far */
	struct plb__kept *kept; /* models kept between runs, one per kind */
	int nkept;
	char *models_path;      /* the models file, NULL: none */
	char *foreign;          /* its records for PUs this cluster lacks */
	size_t nforeign;
	struct plb__res_domain res;
	/* the output the last run wrote whole (NULL: none), and its bytes:
	 * its pages are mapped, a run into it again maps none */
	const void *out_mapped;
	size_t out_mapped_bytes;
	struct plb__waiter wt;  /* the run loop's sleep, which a waking transport cuts short */
	struct plb__trace *trace;       /* --trace FILE, NULL: none */
	int quiet;              /* --quiet: no warnings, no progress line */
	int progress;           /* --progress: the line even off a terminal */
	double t_init;          /* plb_init's start (plb__now): the trace's time 0 */
	struct plb__link link;  /* master: its link (link.c) */
	/* worker */
	struct plb__worker *wk;
};

/* The master's record of a pipeline run (pipeline.c). */
struct plb__pipe_report {
	char scheduler[16];
	int window, nops, nslot;        /* window: the largest a node had */
	uint64_t instances, done;
	int coverage_ok;                /* every instance came back exactly once */
	int ranks_lost;                 /* worker ranks taken out in the run */
	char lost_note[256];            /* which, where and when */
	long tasks;
	double makespan_s, wall_s, bytes_sent, bytes_received;
	char (*op_name)[64];
	long (*ran)[4];                 /* by op, device type: tasks run */
	double (*op_s)[4];              /* by op, device type: their seconds */
	char (*slot_name)[80];          /* a PU, or "a.cpu:3": core 3 of a CPU team */
	long *slot_tasks;
	double *slot_busy;              /* seconds in tasks */
};
void plb__pipe_report_free(struct plb__pipe_report *r);
PLB_WUR int plb__pipe_report_print(const struct plb__pipe_report *r, FILE *f, int json);

/* The master's record of one run (result.c). */
struct plb__run_result {
	struct plb__report rep;
	char **names;
	double *idle, *units;
	long *overran;          /* npu: blocks an emulated PU ran past its model */
	char note[256];
	char lost_note[256];    /* the worker ranks taken out in the run */
	double worker_idle_cpu; /* CPU share of a core used by an idle worker, NAN if unknown */
	int warm_pus;           /* PUs started from kept models */
};
void plb__run_result_free(struct plb__run_result *r, int npu);

/* [network] peer_timeout_min_s, at most peer_timeout_s: the shortest a
 * worker may be silent in a run, and a fifth of it its ALIVE period. */
static inline double plb__peer_timeout_min(const struct plb__config *c)
{
	return fmin(c->peer_timeout_min_s, c->peer_timeout_s);
}

/* A loop that times its peers' silence against `limit` seconds: whether
 * it was itself held up (this process stopped, swapped, busy elsewhere)
 * for more than half of that since its last look at *checked, in which
 * case the silence it sees tells nothing of the peers. Notes now in
 * *checked. */
static inline int plb__held_up(double *checked, double now, double limit)
{
	int held = now - *checked > limit / 2;
	*checked = now;
	return held;
}

/* Master: worker k's rank is gone (dead, frozen, cut off): nothing more
 * goes to it, what is queued for it is dropped, and no rank calls
 * MPI_Finalize, whose fence would wait for it (peers.c). */
void plb__peer_out(struct plb *p, int k);

/* The ranks taken out whose process ids are pids, on this host (the
 * master's or a worker's), are ended: frozen, one would hold mpirun until
 * the batch system's limit (Open MPI 4.1 under --enable-recovery does not
 * always end it on MPI_Abort: measured). Each must still be a child of
 * this process's parent (the launcher's daemon that started both), so
 * that a process id used again by something else is left alone (peers.c). */
void plb__end_lost_ranks(const int32_t *pids, size_t n);

/* Master, in plb_init: p->link from [network] link_gbps, or timed to the
 * workers on other hosts unless [network] link_probe_ms = 0 (none there:
 * not known). 0, or the error (a worker silent past the handshake's
 * limit). Worker: its answer to a PROBE (takes msg). */
PLB_WUR int plb__link_probe(struct plb *p);
PLB_WUR int plb__link_answer(struct plb *p, void *msg);
/* The time the link needs for out_bytes to the workers and in_bytes back,
 * both at once (the larger way's); 0 where it is not known. */
double plb__link_time(const struct plb__link *l, double out_bytes, double in_bytes);
/* Units a second it carries of a job with these bytes a unit; 0: not known. */
double plb__link_units(const struct plb__link *l, double in_unit, double out_unit);
/* Where its rate comes from, for messages: "[network] link_gbps" or "the
 * rate timed at start". */
const char *plb__link_said(const struct plb__link *l);

/* Worker: its PUs as a 2-D product sees them (worker.c gives them to
 * wmm2d.c): how many, and fn(d, arg) run on PU pu's thread with its
 * device, after what it was given before (0, PLB_EINVAL, PLB_ENOMEM). */
struct plb__dev;
struct plb__pu_calls {
	int npu;
	int (*on_pu)(struct plb *p, int pu, void (*fn)(struct plb__dev *d, void *arg), void *arg);
	/* M2PIVs that came before this node's M2START (another node started
	 * its steps first): the run takes those of its own and frees the rest */
	void ***early;
	size_t *nearly;
};
/* Worker: a 2-D product's M2BENCH, M2START (wmm2d.c; each takes msg): the
 * benchmark answered; the whole run, its pivots to and from the other
 * workers, its M2DONE to the master. 0, or an error that ends the worker
 * (the transport's); the run's own errors go to the master in M2DONE. A
 * message from the master that ended the run (its SHUTDOWN) comes back
 * in *again, for the worker's loop (NULL: none). */
PLB_WUR int plb__wmm2d_bench(struct plb *p, const struct plb__pu_calls *pus, void *msg);
PLB_WUR int plb__wmm2d_run(struct plb *p, const struct plb__pu_calls *pus, void *msg, void **again);

/* An API call begins: the message of an earlier call's error is gone
 * (plb_errmsg says the last call's). */
static inline void plb__api_begin(struct plb *p)
{
	if (p)
		p->err[0] = '\0';
}

/* Record an error message in p->err and return rc. Within one API call
 * the first one wins: it is the cause, what follows its consequences. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int plb__fail(struct plb *p, int rc, const char *fmt, ...);
/* A message of header h's fields (its len aside) whose payload is hlen
 * bytes of head, then dlen of data, to rank dst; 0, or the error (with
 * its message) (handle.c). */
PLB_WUR int plb__send(struct plb *p, int dst, const struct plb__hdr *h, const void *head, size_t hlen,
		      const void *data, size_t dlen);

const struct plb_kernel *plb__kernel_find(const struct plb *p, const char *name);
/* The handshake's limit on a rank's silence: [network] startup_timeout_s,
 * 120 s before the config is read. Its receive: the next message from
 * anyone, waiting at most that + extra_s; 0, or the error naming `what`
 * (handle.c). */
double plb__handshake_s(const struct plb *p);
/* After a wait for n worker ranks timed out: p->err names those that did
 * not answer (said(ctx, k) is 0; ranks[k] is the k-th's rank, NULL: k +
 * 1), the first eight, and why (the limit, what to do). */
void plb__name_silent(struct plb *p, int n, const int *ranks, int (*said)(const void *ctx, int k),
		      const void *ctx, const char *why);
PLB_WUR int plb__handshake_recv(struct plb *p, void **msg, int *src, const char *what, double extra_s);

/* Version v (PLB_VERSION's encoding) as "0.2.0" in buf; returns buf. */
const char *plb__version_text(unsigned v, char *buf, size_t len);
/* A caller's struct stamped abi (PLB_INIT) is one this library reads: 0,
 * or PLB_EINVAL with a message naming `what` in err. */
PLB_WUR int plb__abi_check(unsigned abi, const char *what, char *err, size_t len);
/* The master: worker rank `rank` on host said it runs plb `version`
 * (HELLO0); 0 when that is the master's, else PLB_ESTATE with a message
 * naming both. */
PLB_WUR int plb__peer_version(struct plb *p, int rank, const char *host, unsigned version);

/* models.c: starting a run's balancer from the models kept for the job's
 * kind of run - kernel, unit sizes, signature - (returns the PUs warmed,
 * or < 0); keeping its PUs' models after a run (lost PUs keep none);
 * the models file, read once the PUs are known and written at the end
 * (errors name file:line, in p->err); freeing them all. */
int plb__kept_warm(struct plb *p, const struct plb_job *job, struct plb__balancer *b);
PLB_WUR int plb__kept_store(struct plb *p, const struct plb_job *job,
			    const struct plb__balancer *b, const int *lost);
/* A pipeline run's tasks are kept as samples of one unit (exec_s, xfer_s)
 * of their PU under the kind of their op's kernel, the pipeline's unit
 * sizes and the signature "op=NAME": that kind's index in p->kept (made
 * if none; found once a run), or PLB_ENOMEM; and one task added to it
 * for PU pu, the oldest half dropped when a PU's samples are full. 0 or
 * PLB_ENOMEM. */
int plb__kept_task_kind(struct plb *p, const char *kernel, size_t in_unit, size_t out_unit,
			const char *op);
PLB_WUR int plb__kept_task_add(struct plb *p, int kind, int pu, double exec_s, double xfer_s);
/* The mean time (exec + xfer) of the tasks of that kind kept for PU pu,
 * or 0 when none is. */
double plb__kept_task_mean(const struct plb *p, const char *kernel, size_t in_unit,
			   size_t out_unit, const char *op, int pu);
PLB_WUR int plb__kept_load(struct plb *p, const char *path);
PLB_WUR int plb__kept_save(struct plb *p, const char *path);
void plb__kept_free(struct plb *p);

/* worker.c: the daemon's set-up (node's PUs, checked against the node) and
 * its loop. */
PLB_WUR int plb__worker_open(struct plb *p, struct plb__pu_desc **desc, int *npu);
PLB_WUR int plb__worker_serve(struct plb *p);
void plb__worker_close(struct plb *p);

#endif
