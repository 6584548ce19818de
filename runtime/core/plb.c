/* plb_init and plb_finalize: the start-up handshake and the shutdown.
 *
 *   worker -> master  HELLO0  its host name
 *   master -> worker  CONFIG  the config file's text and its node section
 *                             (or the error that stops every rank)
 *   worker -> master  HELLO   its PUs, checked against the node (or why not)
 *   master <-> worker PROBE, PROBED: the master's link timed, to the
 *                             workers on other hosts (link.c), unless
 *                             [network] link_gbps gives it
 *   master -> worker  CONFIG  go (status 0) or stop (the first error)
 *
 * so every rank returns the same result from plb_init and the master prints
 * the one message. At the end:
 *
 *   master -> worker  SHUTDOWN
 *   worker -> master  ALIVE (PLB__F_HEARD), then BYE once its PUs are closed
 *   master -> worker  FIN: whether to call MPI_Finalize (not if a rank is lost)
 *
 * before the transport ends (master_shutdown). Where ranks were taken out,
 * the master ends the job with MPI_Abort when its process exits ([network]
 * end_lost), so that mpirun does not wait for a frozen one. */
#define _DEFAULT_SOURCE         /* on_exit */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "balancer/balancer.h"
#include "balancer/base/log.h"
#include "runtime/core/rt.h"

/* A message of header h's fields (its len aside) and len bytes of data. */
static int send_simple(struct plb *p, int dst, const struct plb__hdr *h, const void *data,
		       size_t len)
{
	return plb__send(p, dst, h, data, len, NULL, 0);
}

/* Bytes of input this node may keep between runs ([run] resident_mb, else
 * a quarter of its memory), told to the master in HELLO. */
static double resident_budget(const struct plb__config *cfg)
{
	if (cfg->resident_mb >= 0)
		return cfg->resident_mb * 1048576.0;
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? 0.25 * (double)pages * (double)size : 0;
}

static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *buf = NULL;

	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s; accepted: a readable file", path,
			 strerror(errno));
		return PLB_EIO;
	}
	for (;;) {
		char *nb = realloc(buf, cap + 1);
		if (!nb) {
			free(buf);
			fclose(f);
			snprintf(err, errlen, "out of memory");
			return PLB_ENOMEM;
		}
		buf = nb;
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
	}
	int bad = ferror(f), e = errno;
	fclose(f);
	if (bad) {
		free(buf);
		snprintf(err, errlen, "%s: cannot read: %s; accepted: a readable file", path,
			 strerror(e));
		return PLB_EIO;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

/* The master prints an error that stops every rank once, and before it
 * tells the workers (mpirun may end it as soon as a worker exits). */
static void announce(struct plb *p, int rc)
{
	if (rc && !p->announced) {
		p->announced = 1;
		plb__log(PLB__LOG_ERROR, "plb", "%s", p->err);
	}
}

/* --trace FILE: a process per worker rank (its node section, rank and
 * host), a thread per PU. */
static int trace_open(struct plb *p, const char *path)
{
	int rc = plb__trace_open(&p->trace, path, p->t_init, p->err, sizeof p->err);
	if (rc)
		return plb__fail(p, rc, "%s", p->err);
	for (int k = 0; k < p->npeer; k++) {
		char name[400];
		snprintf(name, sizeof name, "node %s (rank %d, %s)", p->cfg.nodes[p->peer[k].node].name,
			 p->peer[k].rank, p->peer[k].host);
		plb__trace_node(p->trace, k, name);
		for (int i = 0; i < p->peer[k].npu; i++) {
			int pu = p->peer[k].pu0 + i;
			if (plb__trace_pu(p->trace, pu, k, p->pu[pu].name))
				return plb__fail(p, PLB_ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* After a wait for every worker timed out: p->err names the ranks that
 * said nothing (have[k]: rank k + 1 did) and the key that sets the limit. */
static int have_it(const void *have, int k)
{
	return ((const void *const *)have)[k] != NULL;
}

static void name_silent(struct plb *p, const void *const *have, int nw)
{
	char why[160];
	snprintf(why, sizeof why, "dead, or still starting: [network] startup_timeout_s, %.0f s now, sets how long the master waits",
		 plb__handshake_s(p));
	plb__name_silent(p, nw, NULL, have_it, have, why);
}

/* The master's side of the handshake. */
static int master_init(struct plb *p, const struct plb_options *o)
{
	char *text = NULL;
	size_t len = 0;
	int nw = p->tp->size - 1, rc = 0;
	char **hosts = calloc((size_t)nw + 1, sizeof *hosts);
	int *assign = calloc((size_t)nw + 1, sizeof *assign);

	p->npeer = nw;
	if (!hosts || !assign || !(p->peer = calloc((size_t)nw + 1, sizeof *p->peer))) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;       /* the workers give up after 120 s (plb__handshake_s) */
	}
	if (nw < 1) {
		rc = plb__fail(p, PLB_ESTATE, "plb needs a master and at least one worker: run it with mpirun -np N (N >= 2: one master, one worker per [node] section)");
		goto out;
	}
	rc = read_file(o->config, &text, &len, p->err, sizeof p->err);
	if (!rc && (rc = plb__config_load_text(o->config, text, len, &p->cfg, p->err, sizeof p->err)) == 0)
		p->have_cfg = 1;
	if (!rc && p->cfg.warning[0])
		plb__log(PLB__LOG_WARN, "plb", "%s", p->cfg.warning);
	if (!rc) {
		snprintf(p->policy, sizeof p->policy, "%s", o->policy ? o->policy : p->cfg.policy);
		int i;
		for (i = 0; plb__policy_name(i) && strcmp(plb__policy_name(i), p->policy); i++)
			;
		if (!plb__policy_name(i)) {
			char names[256];
			rc = plb__fail(p, PLB_ECONFIG, "--policy %s: unknown policy; accepted: %s", p->policy,
				       plb__policy_names(names, sizeof names, " | "));
		}
	}
	for (int i = 0; !rc && o->set[i]; i++) {
		char msg[300];
		if ((rc = plb__params_assign(&p->cfg.params, o->set[i], msg, sizeof msg)))
			rc = plb__fail(p, PLB_ECONFIG, "--set %s: %s", o->set[i], msg);
	}
	int fresh = !p->err[0];  /* a timeout below is the first error: name the ranks */
	/* Always collect every HELLO0, so that each worker hears the outcome. */
	for (int k = 0; k < nw; k++) {
		void *msg;
		int src, r = plb__handshake_recv(p, &msg, &src, "every worker's HELLO", 0);
		if (r) {
			if (fresh)
				name_silent(p, (const void *const *)hosts, nw);
			rc = r;
			goto out;       /* a rank is missing: nothing more to say to it */
		}
		struct plb__hdr *h = plb__msg_hdr(msg);
		if (h->type == PLB__MSG_HELLO0 && src >= 1 && src <= nw && !hosts[src - 1]) {
			hosts[src - 1] = strndup(plb__msg_data(msg), h->len);
			p->peer[src - 1].pid = h->pid;
			if (!rc && hosts[src - 1])
				rc = plb__peer_version(p, src, hosts[src - 1], h->version);
		} else {
			k--;
		}
		plb__msg_free(msg);
	}
	for (int k = 0; k < nw && !rc; k++) {
		if (!hosts[k])
			rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		else
			snprintf(p->peer[k].host, sizeof p->peer[k].host, "%s", hosts[k]);
		p->peer[k].rank = k + 1;
	}
	if (!rc)
		rc = plb__nodes_assign(&p->cfg, (const char *const *)hosts, nw, p->single, assign, p->err,
				       sizeof p->err);
	int away = 0;
	for (int k = 0; k < nw && !rc; k++) {
		p->peer[k].node = assign[k];
		away += strcmp(p->peer[k].host, p->tp->host) != 0;
	}
	for (int k = 0; k < nw && !rc; k++)
		p->peer[k].behind = !away || strcmp(p->peer[k].host, p->tp->host);
	if (!rc && p->single)
		plb__log(PLB__LOG_INFO, "plb", "one process: node section [%s] of %s",
			 p->cfg.nodes[assign[0]].name, p->cfg.path);
	announce(p, rc);        /* before the workers hear of it and exit */
	for (int k = 0; k < nw; k++) {
		int r = rc ? send_simple(p, k + 1, &(struct plb__hdr){.type = PLB__MSG_CONFIG, .status = rc,
								      .node = -1}, NULL, 0)
			   : send_simple(p, k + 1, &(struct plb__hdr){.type = PLB__MSG_CONFIG,
								      .node = assign[k]}, text, len);
		if (r && !rc)
			rc = r;
	}
	if (rc)
		goto out;
	/* HELLO: every worker's PUs, or why it has none; kept per rank, then
	 * listed in rank order (a worker's PUs get consecutive indices). */
	int first_err = 0;
	void **hello = calloc((size_t)nw, sizeof *hello);
	if (!hello) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < nw; k++) {
		void *msg;
		int src, r = plb__handshake_recv(p, &msg, &src, "the workers' PU lists", 0);
		if (r) {
			if (fresh)
				name_silent(p, (const void *const *)hello, nw);
			rc = r;
			for (int j = 0; j < nw; j++)
				plb__msg_free(hello[j]);
			free(hello);
			goto out;
		}
		struct plb__hdr *h = plb__msg_hdr(msg);
		if (h->type != PLB__MSG_HELLO || src < 1 || src > nw || hello[src - 1]) {
			plb__msg_free(msg);
			k--;
			continue;
		}
		hello[src - 1] = msg;
		p->peer[src - 1].budget = h->budget;
		if (h->status && !first_err)
			first_err = plb__fail(p, h->status, "rank %d (%s): %.*s", src, p->peer[src - 1].host,
					      (int)h->len, (char *)plb__msg_data(msg));
	}
	size_t total = 0;
	for (int k = 0; k < nw; k++)
		total += plb__msg_hdr(hello[k])->len / sizeof(struct plb__pu_desc);
	if (!first_err && !(p->pu = calloc(total + 1, sizeof *p->pu)))
		first_err = plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int k = 0; k < nw; k++) {
		struct plb__hdr *h = plb__msg_hdr(hello[k]);
		struct plb__peer *pe = &p->peer[k];
		pe->pu0 = p->npu;
		if (!first_err) {
			pe->npu = (int)(h->len / sizeof(struct plb__pu_desc));
			memcpy(p->pu + p->npu, plb__msg_data(hello[k]), (size_t)pe->npu * sizeof *p->pu);
			for (int i = 0; i < pe->npu; i++)
				p->pu[p->npu + i].name[sizeof p->pu->name - 1] = '\0';
			p->npu += pe->npu;
		}
		plb__msg_free(hello[k]);
	}
	free(hello);
	if (!first_err && p->npu == 0) {
		char keys[128];
		first_err = plb__fail(p, PLB_ECONFIG, "%s:%d: [node %s], the section this process takes, has no PU; accepted: %s in it",
				      p->cfg.path, p->cfg.nodes[assign[0]].line, p->cfg.nodes[assign[0]].name,
				      plb__pu_keys(keys, sizeof keys, 0));
	}
	char why[600];
	if (!first_err && plb__params_check(&p->cfg.params, p->npu, why, sizeof why))
		first_err = plb__fail(p, PLB_ECONFIG, "%s: [balancer] %s", p->cfg.path, why);
	const char *models = o->models ? o->models : p->cfg.models_file;
	if (!first_err && models && !(p->models_path = strdup(models)))
		first_err = plb__fail(p, PLB_ENOMEM, "out of memory");
	if (!first_err && p->models_path)
		first_err = plb__kept_load(p, p->models_path);
	/* written at plb_finalize: a path that cannot be is refused now */
	if (!first_err && p->models_path && plb_check_writable(p->models_path, why, sizeof why))
		first_err = o->models ? plb__fail(p, PLB_EIO, "--models %s", why)
				      : plb__fail(p, PLB_EIO, "%s: [run] models = %s", p->cfg.path, why);
	if (!first_err && o->trace)
		first_err = trace_open(p, o->trace);
	if (!first_err)
		first_err = plb__link_probe(p);
	rc = first_err;
	announce(p, rc);
	if (!rc && !p->single)
		plb__log(PLB__LOG_INFO, "master", "%d worker rank%s joined with %d PUs (%s, policy %s)",
			 nw, nw > 1 ? "s" : "", p->npu, p->cfg.path, p->policy);
	/* the go, with the master's host and process id: a worker on the same
	 * host can tell that the master is gone between runs */
	for (int k = 0; k < nw; k++) {
		int r = send_simple(p, k + 1, &(struct plb__hdr){.type = PLB__MSG_CONFIG, .status = rc,
								 .master_pid = (double)getpid()},
				    p->tp->host, strlen(p->tp->host));
		if (r && !rc)
			rc = r;
	}
out:
	if (hosts)
		for (int k = 0; k < nw; k++)
			free(hosts[k]);
	free(hosts);
	free(assign);
	free(text);
	return rc;
}

/* A worker's side of the handshake. */
static int worker_init(struct plb *p)
{
	void *msg = NULL;
	int src, rc;

	if ((rc = send_simple(p, 0, &(struct plb__hdr){.type = PLB__MSG_HELLO0, .version = PLB_VERSION,
							.pid = (int32_t)getpid()},
			      p->tp->host, strlen(p->tp->host))))
		return rc;
	if ((rc = plb__handshake_recv(p, &msg, &src, "the config from the master", 0)))
		return rc;
	struct plb__hdr *h = plb__msg_hdr(msg);
	if (h->type != PLB__MSG_CONFIG || h->status) {
		rc = h->status ? h->status : PLB_EIO;
		plb__msg_free(msg);
		p->failed = 1;
		return plb__fail(p, rc, "stopped by the master");
	}
	p->node = h->node;
	rc = plb__config_load_text(p->config, plb__msg_data(msg), h->len, &p->cfg, p->err,
				   sizeof p->err);
	plb__msg_free(msg);
	struct plb__pu_desc *desc = NULL;
	int npu = 0;
	if (!rc) {
		p->have_cfg = 1;
		if (p->node < 0 || p->node >= p->cfg.nnodes)
			rc = plb__fail(p, PLB_EIO, "the master gave node %d of %d", p->node, p->cfg.nnodes);
		else
			rc = plb__worker_open(p, &desc, &npu);
	}
	if (rc)
		(void)send_simple(p, 0, &(struct plb__hdr){.type = PLB__MSG_HELLO, .status = rc}, p->err,
				  strlen(p->err));
	else
		rc = send_simple(p, 0, &(struct plb__hdr){.type = PLB__MSG_HELLO,
							  .budget = resident_budget(&p->cfg)}, desc,
				 (size_t)npu * sizeof *desc);
	free(desc);
	int mine = rc;
	/* the master waits as long for the slowest worker: a little longer,
	 * so that its error, which names the silent ranks, comes first; it
	 * may time its link first (PROBE) */
	for (;;) {
		if ((rc = plb__handshake_recv(p, &msg, &src, "the master's go", 5)))
			return rc;
		h = plb__msg_hdr(msg);
		if (h->type != PLB__MSG_PROBE)
			break;
		if (!mine && (rc = plb__link_answer(p, msg)))
			return rc;
		if (mine)
			plb__msg_free(msg);
	}
	rc = h->type == PLB__MSG_CONFIG ? h->status : PLB_EIO;
	if (!rc && !p->tp->ops->same_memory && h->len == strlen(p->tp->host) &&
	    !memcmp(plb__msg_data(msg), p->tp->host, h->len))
		p->master_pid = (int)h->master_pid;
	plb__msg_free(msg);
	if (rc && !mine)
		plb__fail(p, rc, "stopped by the master");
	return mine ? mine : rc;
}

/* The in-process worker: the same handshake and loop as a worker rank's,
 * on a thread of the app's process. */
static void *local_worker_main(void *arg)
{
	struct plb *w = arg;
	plb__log_thread(1);
	int rc = worker_init(w);
	if (!rc) {
		rc = plb__worker_serve(w);
		if (rc)
			plb__log(PLB__LOG_ERROR, "worker", "%s", w->err);
	}
	w->local_rc = rc;
	return NULL;
}

/* MPI under an MPI launcher; otherwise the in-process pair, whose worker
 * end gets a thread and a handle of its own. */
static int open_transport(struct plb *p, int *argc, char ***argv)
{
	char err[512];
	int rc;
	if (plb__launcher_rank()) {
		if ((rc = plb__transport_mpi_create(argc, argv, &p->tp, err, sizeof err)))
			return plb__fail(p, rc, "%s", err);
		if (p->tp->size > 1) {
			plb__log_init(p->tp->rank, p->tp->host);
			return 0;
		}
		/* mpirun -np 1: one process, as without mpirun */
		p->tp->ops->destroy(p->tp);
		p->tp = NULL;
	}
	struct plb *w = calloc(1, sizeof *w);
	if (!w)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	plb__waiter_init(&w->wt);
	if ((rc = plb__transport_local_create(&p->tp, &w->tp))) {
		plb__waiter_fini(&w->wt);
		free(w);
		return plb__fail(p, rc, "out of memory");
	}
	w->kernels = p->kernels;
	w->nkernels = p->nkernels;
	w->config = p->config;
	w->single = p->single = 1;
	p->local = w;
	/* before the worker thread, which reads what this writes */
	plb__log_init(p->tp->rank, p->tp->host);
	if (pthread_create(&p->local_th, NULL, local_worker_main, w))
		return plb__fail(p, PLB_ENOMEM, "cannot start the worker thread");
	p->local_started = 1;
	return 0;
}

int plb_init(int *argc, char ***argv, const struct plb_options *o, plb_t **out)
{
	struct plb *p = calloc(1, sizeof *p);
	char host[256] = "?";
	int rc;

	*out = p;
	if (!p)
		return PLB_ENOMEM;
	p->t_init = plb__now();
	plb__waiter_init(&p->wt);
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	plb__log_init(-1, host);
	if (!o || !o->config) {
		p->failed = 1;
		rc = plb__fail(p, PLB_EINVAL, "no config file; accepted: --config FILE (an INI file: see README.md)");
		plb__log(PLB__LOG_ERROR, "plb", "%s", p->err);
		return rc;
	}
	/* the structs are read as the plb.h they were built with says */
	rc = plb__abi_check(o->abi, "struct plb_options", p->err, sizeof p->err);
	for (int i = 0; !rc && i < o->nkernels; i++) {
		char what[96];
		const struct plb_kernel *k = o->kernels[i];
		snprintf(what, sizeof what, "struct plb_kernel '%.40s'", k && k->name ? k->name : "(null)");
		rc = k ? plb__abi_check(k->abi, what, p->err, sizeof p->err) : 0;
	}
	if (rc) {
		p->failed = 1;
		plb__log(PLB__LOG_ERROR, "plb", "plb_init: %s", p->err);
		return rc;
	}
	p->kernels = o->kernels;
	p->nkernels = o->nkernels;
	p->quiet = o->quiet;
	p->progress = o->progress;
	if (o->quiet)
		plb__log_level = PLB__LOG_ERROR;        /* errors only */
	p->config = o->config;
	if ((rc = open_transport(p, argc, argv))) {
		p->failed = 1;
		plb__log(PLB__LOG_ERROR, "plb", "%s", p->err);
		return rc;
	}
	p->master = p->tp->rank == 0;
	if (p->master && p->tp->ops->wakes)
		p->tp->ops->set_waker(p->tp, plb__waiter_poke, &p->wt);
	rc = p->master ? master_init(p, o) : worker_init(p);
	if (rc) {
		p->failed = 1;
		if (p->master)
			announce(p, rc);
	}
	return rc;
}

int plb_serve(plb_t *p)
{
	plb__api_begin(p);
	if (!p || p->master || p->failed)
		return p ? plb__fail(p, PLB_ESTATE, "plb_serve: not a started worker rank") : PLB_EINVAL;
	int rc = plb__worker_serve(p);
	if (rc)
		plb__log(PLB__LOG_ERROR, "worker", "%s", p->err);
	return rc;
}

/* Ranks were taken out (dead, frozen, cut off): MPI_Finalize is skipped,
 * and mpirun would wait for a frozen rank until the batch system's limit.
 * When the master's process exits, after the app has written what it
 * writes, MPI_Abort ends every rank, with the process's exit status (which
 * Open MPI 4.1's mpirun returns, but not under --enable-recovery, where
 * it exits 0: measured). A rank on a host whose Open MPI daemon is lost
 * is beyond it: mpirun waits for the daemon (docs/FAULTS.md). */
static void end_lost_job(int status, void *arg)
{
	(void)arg;
	fflush(NULL);
	plb__log(PLB__LOG_WARN, "plb", "worker ranks were taken out of this job: the master ends it with MPI_Abort (exit status %d), so that mpirun does not wait for them; [network] end_lost = 0 leaves that to the launcher",
		 status);
	plb__transport_mpi_abort(status);
}

static void end_lost_at_exit(void)
{
	static int set;
	if (!set && !on_exit(end_lost_job, NULL))
		set = 1;
}

/* plb_finalize's errors: no caller can ask for them (p is freed), so each
 * is logged as it comes, once. */
static int fin_report(struct plb *p, int rc)
{
	if (rc && p->err[0])
		plb__log(PLB__LOG_ERROR, "plb", "plb_finalize: %s", p->err);
	p->err[0] = 0;
	return rc;
}

/* A worker that has not said goodbye in time: dead or frozen since the
 * last run. The runs' results are whole; only MPI_Finalize, whose fence
 * would wait for it, is skipped, by every rank (FIN says so). */
static void bye_missing(struct plb *p, int k, const char *why)
{
	struct plb__peer *pe = &p->peer[k];
	plb__log(PLB__LOG_ERROR, "master", "rank %d (%s) %s: taken as lost after the last run; the runs' results are whole, and every rank ends without MPI_Finalize",
		 pe->rank, pe->host, why);
	plb__peer_out(p, k);
}

/* The process ids of the ranks taken out on host, where the job's
 * lost ranks are to be ended ([network] end_lost): into pids (room for
 * one a peer); returns how many. */
static size_t lost_on(const struct plb *p, const char *host, int32_t *pids)
{
	size_t n = 0;
	for (int j = 0; p->have_cfg && p->cfg.end_lost && j < p->npeer; j++)
		if (p->peer[j].gone_rank > 0 && p->peer[j].pid > 0 && !strcmp(p->peer[j].host, host))
			pids[n++] = p->peer[j].pid;
	return n;
}

/* plb_finalize on the master: SHUTDOWN to every worker, its goodbye, then
 * FIN, which says whether to call MPI_Finalize. A worker answers SHUTDOWN
 * at once (ALIVE) and says BYE when its PUs are closed; one that has not
 * answered within [network] peer_timeout_s, or not said BYE within
 * startup_timeout_s, is lost (bye_missing). While it waits, the master
 * tells those that said BYE that it is alive. */
static int master_shutdown(struct plb *p)
{
	enum { OUT, ASKED, ANSWERED, GONE };
	unsigned char *st = calloc((size_t)p->npeer + 1, 1);
	int rc = 0, bad = 0, waiting = 0, fin = !p->tp->no_finalize;    /* else no one finalizes */
	double t0 = plb__now(), said = t0, checked = t0, limit = p->cfg.peer_timeout_s;
	struct plb__backoff bo = {0};

	int32_t *pids = malloc(sizeof *pids * ((size_t)p->npeer + 1));
	if (!st || !pids) {
		free(st);
		free(pids);
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	}
	for (int k = 0; k < p->npeer && !rc; k++) {
		if (p->peer[k].rank < 0)
			continue;
		/* PLB__F_GONE: a rank was lost, whom MPI_Finalize would wait
		 * for; the payload: those on its host, to end */
		size_t n = lost_on(p, p->peer[k].host, pids);
		rc = send_simple(p, p->peer[k].rank, &(struct plb__hdr){.type = PLB__MSG_SHUTDOWN,
					.flags = p->tp->no_finalize ? PLB__F_GONE : 0}, pids, n * sizeof *pids);
		st[k] = ASKED;
		waiting++;
	}
	plb__backoff_reset(&bo);
	while (waiting > 0 && !rc) {        /* (rc: this end cannot go on) */
		void *msg;
		int src, got = p->tp->ops->recv(p->tp, &msg, &src);
		if (got < 0) {
			rc = plb__fail(p, got, "waiting for the workers' goodbye: %s", p->tp->err);
			break;
		}
		if (got) {
			struct plb__hdr *h = plb__msg_hdr(msg);
			int k = src - 1;
			/* (a rank taken out in a run that came back says goodbye too) */
			if (src >= 1 && src <= p->npeer && p->peer[k].rank >= 0 && st[k] && st[k] != GONE) {
				if (h->type == PLB__MSG_ALIVE && (h->flags & PLB__F_HEARD)) {
					st[k] = ANSWERED;       /* (not a late one from the run) */
				} else if (h->type == PLB__MSG_BYE) {
					st[k] = GONE;
					waiting--;
					if (h->status && !bad)
						bad = plb__fail(p, h->status, "rank %d stopped with an error (see its log)", src);
				}
			}
			plb__msg_free(msg);
			plb__backoff_reset(&bo);
			continue;
		}
		double now = plb__now(), last = checked;
		if (plb__held_up(&checked, now, limit))
			t0 += now - last;       /* this process stalled: no one's fault */
		for (int k = 0; k < p->npeer; k++) {
			if ((st[k] == ASKED && now - t0 > limit) ||
			    (st[k] == ANSWERED && now - t0 > plb__handshake_s(p))) {
				char why[160];
				snprintf(why, sizeof why, st[k] == ASKED
					 ? "did not answer the shutdown within [network] peer_timeout_s = %g s"
					 : "did not close its PUs within [network] startup_timeout_s = %g s",
					 st[k] == ASKED ? limit : plb__handshake_s(p));
				bye_missing(p, k, why);
				st[k] = OUT;
				waiting--;
			}
		}
		if (fin && now - said >= limit / 5) {
			for (int k = 0; k < p->npeer && !rc; k++)
				if (st[k] == GONE)
					rc = send_simple(p, p->peer[k].rank,
							 &(struct plb__hdr){.type = PLB__MSG_ALIVE}, NULL, 0);
			said = now;
		}
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
	/* PLB__F_GONE: end without MPI_Finalize (a rank is lost), and end the
	 * ranks taken out on your host */
	for (int k = 0; k < p->npeer && fin; k++) {
		if (st[k] != GONE || p->peer[k].rank < 0)
			continue;
		size_t n = lost_on(p, p->peer[k].host, pids);
		int r = send_simple(p, p->peer[k].rank, &(struct plb__hdr){.type = PLB__MSG_FIN,
					.flags = p->tp->no_finalize ? PLB__F_GONE : 0}, pids, n * sizeof *pids);
		rc = rc ? rc : r;
	}
	plb__end_lost_ranks(pids, lost_on(p, p->tp->host, pids));      /* those on this host */
	free(pids);
	free(st);
	return rc ? rc : bad;
}

int plb_finalize(plb_t *p)
{
	int rc = 0;
	if (!p)
		return 0;
	p->err[0] = 0;          /* what failed before was returned by its call */
	if (p->tp && p->master && !p->failed)
		fin_report(p, rc = master_shutdown(p));
	if (p->local) {
		struct plb *w = p->local;
		if (p->local_started)
			pthread_join(p->local_th, NULL);
		if (w->local_rc && !rc && !p->failed)
			rc = fin_report(p, plb__fail(p, w->local_rc, "the worker stopped: %s", w->err));
		p->local = NULL;
		plb_finalize(w);
	}
	/* a worker that failed after opening its PUs (its run loop closes
	 * them otherwise): its PU threads stop before the transport goes */
	plb__worker_close(p);
	/* what is still queued for ranks taken out never leaves */
	for (int k = 0; p->tp && p->tp->ops->forget && k < p->npeer; k++)
		if (p->peer[k].gone_rank > 0)
			p->tp->ops->forget(p->tp, p->peer[k].gone_rank);
	if (p->tp) {
		int r = p->tp->ops->flush(p->tp, 30);
		if (r && !rc)
			rc = fin_report(p, plb__fail(p, r, "%s", p->tp->err));
		if (p->master && p->tp->no_finalize && !p->tp->ops->same_memory && p->have_cfg &&
		    p->cfg.end_lost)
			end_lost_at_exit();
		if (p->tp->ops->wakes)
			p->tp->ops->set_waker(p->tp, NULL, NULL);
		p->tp->ops->destroy(p->tp);
		p->tp = NULL;
	}
	struct plb__msg_cache_stats cs;
	plb__msg_cache_clear(&cs);
	if (cs.hits + cs.misses)
		plb__log(PLB__LOG_DEBUG, "plb", "%lu of %lu large message buffers were kept ones",
			 cs.hits, cs.hits + cs.misses);
	if (p->trace) {
		char err[600];
		int r = plb__trace_close(p->trace, err, sizeof err);
		p->trace = NULL;
		if (r) {
			plb__log(PLB__LOG_ERROR, "plb", "%s", err);
			rc = rc ? rc : r;
		}
	}
	if (p->pu_left)
		return rc;      /* a PU thread left in its kernel may still read p */
	plb__run_result_free(p->last, p->npu);
	plb__pipe_report_free(p->pipe_last);
	if (p->master && p->models_path && !p->failed && p->nkept) {
		int r = fin_report(p, plb__kept_save(p, p->models_path));
		rc = rc ? rc : r;
	}
	plb__kept_free(p);
	free(p->models_path);
	if (p->have_cfg)
		plb__config_fini(&p->cfg);
	for (int w = 0; p->peer && w < p->npeer; w++)
		plb__ranges_free(&p->peer[w].held);
	free(p->peer);
	free(p->pu);
	plb__waiter_fini(&p->wt);
	free(p);
	return rc;
}
