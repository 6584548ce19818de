/* The 2-D product on the master (plb_run_mm2d, plb.h; messages: mm2d.h):
 * it partitions the product over the worker nodes in two levels
 * (balancer/hpart.h: the nodes' rectangles laid out in columns, each
 * node's cut among its PUs, both on FPMs of the PUs' real steps, which
 * the workers time on request, a node's PUs at once), within each node's
 * [node] memory_mb;
 * then it starts every node's steps, which move the pivots between the
 * workers, gathers their figures and, asked, Freivalds' test of C from
 * the vectors' parts the nodes compute. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "balancer/base/log.h"
#include "balancer/hpart.h"
#include "balancer/pivots.h"
#include "runtime/core/mm2d.h"
#include "runtime/core/rt.h"

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

double plb_mm2d_element(uint64_t seed, int which, long i, long j)
{
	uint64_t h = mix(mix(mix(seed ^ ((uint64_t)which << 56)) ^ (uint64_t)i) ^ (uint64_t)j);
	return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

double plb__m2_x(uint64_t seed, int t, long j)
{
	return plb_mm2d_element(seed, 2 + t, 0, j);
}

struct m2 {
	struct plb *p;
	const struct plb_mm2d *job;
	int q, b, elem;
	long N;
	int run;                /* this run's number (p->runs) */
	int *peer;              /* node i's peer index */
	int *npu;               /* node i's PUs */
	double *heard;          /* node i's last message (plb__now) */
	int err;                /* the first error (its message in p->err) */
};

static int send_to(struct m2 *c, int rank, int type, const void *data, size_t len)
{
	return plb__send(c->p, rank, &(struct plb__hdr){.type = (uint32_t)type}, data, len, NULL, 0);
}

/* The node whose worker is rank src, or -1. */
static int node_of(const struct m2 *c, int src)
{
	for (int i = 0; i < c->q; i++)
		if (c->p->peer[c->peer[i]].rank == src)
			return i;
	return -1;
}

/* The next message from a node (ALIVE taken here), into *msg and *node;
 * waits at most `limit` seconds of a node's silence: PLB_EIO after it,
 * naming the node. */
static int next_msg(struct m2 *c, void **msg, int *node, double limit)
{
	struct plb *p = c->p;
	struct plb__backoff bo = {0};
	double checked = plb__now();
	plb__backoff_reset(&bo);
	for (;;) {
		int src, got = p->tp->ops->recv(p->tp, msg, &src);
		if (got < 0)
			return plb__fail(p, got, "in the 2-D product: %s", p->tp->err);
		double now = plb__now();
		if (got) {
			int i = node_of(c, src);
			if (i < 0 || plb__msg_hdr(*msg)->type == PLB__MSG_ALIVE) {
				if (i >= 0)
					c->heard[i] = now;
				plb__msg_free(*msg);
				plb__backoff_reset(&bo);
				continue;
			}
			c->heard[i] = now;
			*node = i;
			return 0;
		}
		double last = checked;
		if (plb__held_up(&checked, now, limit))
			for (int i = 0; i < c->q; i++)
				c->heard[i] += now - last;      /* this process stalled */
		for (int i = 0; i < c->q; i++)
			if (now - c->heard[i] > limit) {
				const struct plb__peer *pe = &p->peer[c->peer[i]];
				return plb__fail(p, PLB_EIO, "the 2-D product: rank %d (%s) has said nothing for %.1f s, longer than %g s; the run is lost (a 2-D product is not recovered from a lost node)",
						 pe->rank, pe->host, now - c->heard[i], limit);
			}
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
}

/* hpart's benchmark: node i's PUs all at once, as they run in the product
 * (the paper's IDPA; PUs of a node share its cores and memory), PU j on a
 * slice of m blocks' rows and d[j] blocks' columns (d[j] a whole number
 * of element columns: hpart's sub is b), each timed by the worker. */
static void bench_all(void *ctx, int i, int m, const double *d, double *t)
{
	struct m2 *c = ctx;
	struct plb *p = c->p;
	int np = c->npu[i], rank = p->peer[c->peer[i]].rank;
	for (int j = 0; j < np; j++)
		t[j] = d[j] > 0 ? INFINITY : 0;
	if (c->err)
		return;
	struct plb__m2bench mb = {.pu = -1, .elem = c->elem, .rows = (int64_t)m * c->b, .k = c->b, .npu = np};
	snprintf(mb.kernel, sizeof mb.kernel, "%s", c->job->kernel);
	size_t len = sizeof mb + (size_t)np * sizeof(int64_t);
	char *buf = malloc(len);
	if (!buf) {
		c->err = plb__fail(p, PLB_ENOMEM, "out of memory");
		return;
	}
	memcpy(buf, &mb, sizeof mb);
	for (int j = 0; j < np; j++) {
		int64_t cols = d[j] > 0 ? llround(d[j] * c->b) : 0;
		cols = d[j] > 0 && cols < 1 ? 1 : cols;
		memcpy(buf + sizeof mb + (size_t)j * sizeof cols, &cols, sizeof cols);
	}
	c->err = send_to(c, rank, PLB__MSG_M2BENCH, buf, len);
	free(buf);
	if (c->err)
		return;
	c->heard[i] = plb__now();
	for (;;) {
		void *msg;
		int from;
		if ((c->err = next_msg(c, &msg, &from, p->cfg.startup_timeout_s)))
			return;
		struct plb__hdr *h = plb__msg_hdr(msg);
		int ok = from == i && h->type == PLB__MSG_M2BENCHED && h->len == sizeof mb + (size_t)np * sizeof(double);
		if (ok) {
			memcpy(&mb, plb__msg_data(msg), sizeof mb);
			for (int j = 0; j < np; j++)
				memcpy(&t[j], (const char *)plb__msg_data(msg) + sizeof mb + (size_t)j * sizeof(double),
				       sizeof(double));
		}
		plb__msg_free(msg);
		if (!ok)
			continue;       /* (not expected: dropped) */
		if (mb.seconds < 0) {
			c->err = plb__fail(p, (int)mb.seconds, "the 2-D product: %s (rank %d) cannot benchmark kernel '%s': %s (see its log)",
					   p->peer[c->peer[i]].host, rank, c->job->kernel, plb_strerror((int)mb.seconds));
			return;
		}
		for (int j = 0; j < np; j++)
			if (t[j] < 0) {
				c->err = plb__fail(p, (int)t[j], "the 2-D product: %s (rank %d): its PU %d cannot run kernel '%s': %s (see its log)",
						   p->peer[c->peer[i]].host, rank, j, c->job->kernel, plb_strerror((int)t[j]));
				return;
			} else if (d[j] > 0 && !(t[j] > 0)) {
				t[j] = 1e-9;
			}
		return;
	}
}

static int check_job(struct plb *p, const struct plb_mm2d *job, struct plb_mm2d_result *r,
		     enum plb__hpart_method *method)
{
	char why[256];
	if (!p || !p->master)
		return p ? plb__fail(p, PLB_ESTATE, "plb_run_mm2d: only the master (rank 0) runs it") : PLB_EINVAL;
	if (p->failed)
		return plb__fail(p, PLB_ESTATE, "plb_run_mm2d: plb_init failed");
	if (!job || !r)
		return plb__fail(p, PLB_EINVAL, "plb_run_mm2d: no job or no result");
	if (plb__abi_check(job->abi, "struct plb_mm2d", why, sizeof why) ||
	    plb__abi_check(r->abi, "struct plb_mm2d_result", why, sizeof why))
		return plb__fail(p, PLB_EINVAL, "plb_run_mm2d: %s", why);
	if (!job->kernel || strlen(job->kernel) >= 64 || !plb__kernel_find(p, job->kernel))
		return plb__fail(p, PLB_ENOENT, "plb_run_mm2d: kernel '%s' is not in plb_options.kernels",
				 job->kernel ? job->kernel : "(null)");
	int b = job->block ? job->block : 128, elem = job->elem ? job->elem : 8;
	if (b < 1 || b > 4096)
		return plb__fail(p, PLB_EINVAL, "plb_run_mm2d: block %d; accepted: 1 to 4096", b);
	if (elem != 4 && elem != 8)
		return plb__fail(p, PLB_EINVAL, "plb_run_mm2d: elem %d; accepted: 4 (float) or 8 (double)", elem);
	if (job->n < b || job->n % b || job->n / b > 1L << 20)
		return plb__fail(p, PLB_EINVAL, "plb_run_mm2d: n = %ld in blocks of %d; accepted: a multiple of the block, at most 2^20 blocks a side",
				 job->n, b);
	if (!(job->eps >= 0) || job->eps >= 1)
		return plb__fail(p, PLB_EINVAL, "plb_run_mm2d: eps %g; accepted: 0 (0.05) or in (0, 1)", job->eps);
	const char *name = job->partitioner ? job->partitioner : "fpm";
	for (int m = 0; m < PLB__HPART_NMETHOD; m++)
		if (!strcmp(name, plb__hpart_method_name((enum plb__hpart_method)m))) {
			*method = (enum plb__hpart_method)m;
			return 0;
		}
	return plb__fail(p, PLB_EINVAL, "plb_run_mm2d: partitioner '%s'; accepted: fpm, multiple-cpm, single-cpm, homogeneous",
			 name);
}

/* The partition, within each node's [node] memory_mb. */
static int partition(struct m2 *c, enum plb__hpart_method method, struct plb__hpart *h)
{
	struct plb *p = c->p;
	const struct plb_mm2d *job = c->job;
	double block_mb = (double)c->b * c->b * c->elem / 1048576, need = 3.0 * c->N * c->N * block_mb;
	double held = 0, *mem = calloc((size_t)c->q, sizeof *mem);
	if (!mem)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	for (int i = 0; i < c->q; i++) {
		mem[i] = p->cfg.nodes[p->peer[c->peer[i]].node].memory_mb;
		held += mem[i] > 0 ? mem[i] : INFINITY;
	}
	struct plb__hpart_cfg hc = {.q = c->q, .p = c->npu, .N = (int)c->N,
				    .eps1 = job->eps > 0 ? job->eps : 0.05, .eps2 = job->eps > 0 ? job->eps : 0.05,
				    .max_iter = 20, .method = method, .bench_node = bench_all, .ctx = c, .sub = c->b};
	int over = -1, rc = plb__hpart_run_mem(&hc, mem, block_mb, h, &over);
	free(mem);
	if (c->err) {
		if (!rc)
			plb__hpart_fini(h);
		return c->err;
	}
	if (rc == PLB_ECONFIG && held < need)
		return plb__fail(p, rc, "plb_run_mm2d: the matrices (A, B and C: 3 x %ld^2 elements of %d bytes, %.0f MiB) do not fit in the nodes' [node] memory_mb (%.0f MiB in all, %s); accepted: a smaller n, or more memory",
				 job->n, c->elem, need, held, p->cfg.path);
	if (rc == PLB_ECONFIG && over >= 0) {
		const struct plb__node *nd = &p->cfg.nodes[p->peer[c->peer[over]].node];
		return plb__fail(p, rc, "plb_run_mm2d: %s:%d: node %s: no rectangle of the %ld x %ld blocks was found within its [node] memory_mb = %g MiB",
				 p->cfg.path, nd->line, nd->name, c->N, c->N, nd->memory_mb);
	}
	if (rc == PLB_ECONFIG)
		return plb__fail(p, rc, "plb_run_mm2d: no layout of the %ld x %ld blocks keeps every node within its [node] memory_mb (%s)",
				 c->N, c->N, p->cfg.path);
	if (rc)
		return plb__fail(p, rc, "plb_run_mm2d: partitioning %ld x %ld blocks over %d nodes: %s", c->N, c->N,
				 c->q, plb_strerror(rc));
	return 0;
}

/* M2START to node i: the job, the layout, the worker ranks, its slices. */
static int start_node(struct m2 *c, const struct plb__hpart *h, int i)
{
	int q = c->q, np = c->npu[i];
	size_t len = sizeof(struct plb__m2start) + 5 * (size_t)q * sizeof(int32_t) + (size_t)np * sizeof(int64_t);
	char *buf = malloc(len);
	if (!buf)
		return plb__fail(c->p, PLB_ENOMEM, "out of memory");
	struct plb__m2start st = {.n = c->job->n, .b = c->b, .elem = c->elem, .q = q, .node = i, .npu = np,
				  .verify = c->job->verify != 0, .run = c->run, .gather = c->job->gather != NULL,
				  .seed = c->job->seed};
	snprintf(st.kernel, sizeof st.kernel, "%s", c->job->kernel);
	memcpy(buf, &st, sizeof st);
	int32_t *v = (int32_t *)(buf + sizeof st);
	for (int j = 0; j < q; j++) {
		v[j] = h->m[j];
		v[q + j] = h->n[j];
		v[2 * q + j] = h->row[j];
		v[3 * q + j] = h->at[j];
		v[4 * q + j] = c->p->peer[c->peer[j]].rank;
	}
	int64_t d[64];
	char *dp = buf + sizeof st + 5 * (size_t)q * sizeof(int32_t);
	for (int j = 0; j < np; j += 64) {
		int cnt = np - j < 64 ? np - j : 64;
		for (int u = 0; u < cnt; u++)
			d[u] = h->d[h->off[i] + j + u];
		memcpy(dp + (size_t)j * sizeof *d, d, (size_t)cnt * sizeof *d);
	}
	int rc = send_to(c, c->p->peer[c->peer[i]].rank, PLB__MSG_M2START, buf, len);
	free(buf);
	return rc;
}

/* The steps and, asked, the test: each node's M2DONE, and the vectors. */
static int gather(struct m2 *c, struct plb_mm2d_result *r)
{
	struct plb *p = c->p;
	long side = c->N * c->b;
	int T = PLB__M2_TRIALS, verify = c->job->verify != 0;
	size_t nv = (size_t)T * (size_t)side;
	double *y = verify ? calloc(nv, sizeof *y) : NULL;
	double *z = verify ? calloc(nv, sizeof *z) : NULL, *cx = verify ? calloc(nv, sizeof *cx) : NULL;
	int done = 0, bx = 0, zc = 0, got_c = 0, rc = 0, gather = c->job->gather != NULL;
	double frac = 0;
	if (verify && (!y || !z || !cx)) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;
	}
	double limit = p->cfg.peer_timeout_s;
	while (!rc && (done < c->q || (verify && zc < c->q) || (gather && got_c < c->q))) {
		void *msg;
		int i;
		if ((rc = next_msg(c, &msg, &i, limit)))
			break;
		struct plb__hdr *h = plb__msg_hdr(msg);
		const char *data = plb__msg_data(msg);
		if (h->type == PLB__MSG_M2DONE && h->len >= sizeof(struct plb__m2done)) {
			struct plb__m2done d;
			memcpy(&d, data, sizeof d);
			if (d.status) {
				const struct plb__peer *pe = &p->peer[c->peer[i]];
				rc = plb__fail(p, d.status, "the 2-D product failed on rank %d (%s): %.*s", pe->rank,
					       pe->host, (int)sizeof d.text, d.text);
			} else {
				double steps = d.t_last - d.t_first;
				r->product_s = fmax(r->product_s, steps);
				frac += steps > 0 ? d.compute_s / steps : 1;
				r->bytes_net += d.bytes_sent;
				done++;
			}
		} else if (h->type == PLB__MSG_M2C && gather && h->len >= sizeof(struct plb__m2c)) {
			struct plb__m2c g;
			memcpy(&g, data, sizeof g);
			size_t e = (size_t)c->elem;
			if (g.row0 < 0 || g.col0 < 0 || g.rows < 0 || g.cols < 0 || g.row0 + g.rows > side ||
			    g.col0 + g.cols > side || h->len != sizeof g + (size_t)g.rows * (size_t)g.cols * e) {
				rc = plb__fail(p, PLB_EIO, "the 2-D product: node %d's C does not fit the matrix", i);
			} else {
				for (int64_t row = 0; row < g.rows; row++)
					memcpy((char *)c->job->gather + ((size_t)(g.row0 + row) * (size_t)side + (size_t)g.col0) * e,
					       data + sizeof g + (size_t)row * (size_t)g.cols * e, (size_t)g.cols * e);
				got_c++;
			}
		} else if (h->type == PLB__MSG_M2VEC && verify && h->len >= sizeof(struct plb__m2vec)) {
			struct plb__m2vec v;
			memcpy(&v, data, sizeof v);
			const double *x = (const double *)(data + sizeof v);
			size_t want = (size_t)(v.kind == PLB__M2_ZC ? 2 : 1) * (size_t)T * (size_t)v.count;
			if (v.first < 0 || v.count < 0 || v.first + v.count > side ||
			    h->len < sizeof v + want * sizeof(double)) {
				rc = plb__fail(p, PLB_EIO, "the 2-D product: a vector of rows %lld + %lld from node %d, which does not fit",
					       (long long)v.first, (long long)v.count, i);
			} else if (v.kind == PLB__M2_BX) {
				for (int t = 0; t < T; t++)
					for (int64_t e = 0; e < v.count; e++)
						y[(size_t)t * side + v.first + e] += x[(size_t)t * v.count + e];
				if (++bx == c->q)       /* B x whole: to every node */
					for (int k = 0; k < c->q && !rc; k++) {
						size_t len = sizeof v + nv * sizeof(double);
						char *buf = malloc(len);
						if (!buf) {
							rc = plb__fail(p, PLB_ENOMEM, "out of memory");
							break;
						}
						struct plb__m2vec w = {.kind = PLB__M2_Y, .node = k, .first = 0, .count = side};
						memcpy(buf, &w, sizeof w);
						memcpy(buf + sizeof w, y, nv * sizeof(double));
						rc = send_to(c, p->peer[c->peer[k]].rank, PLB__MSG_M2VEC, buf, len);
						free(buf);
					}
			} else if (v.kind == PLB__M2_ZC) {
				for (int t = 0; t < T; t++)
					for (int64_t e = 0; e < v.count; e++) {
						z[(size_t)t * side + v.first + e] += x[(size_t)t * v.count + e];
						cx[(size_t)t * side + v.first + e] += x[((size_t)T + t) * v.count + e];
					}
				zc++;
			}
		}
		plb__msg_free(msg);
	}
	if (!rc) {
		r->step_s = r->product_s / (double)c->N;
		r->compute_frac = frac / c->q;
		r->verified = -1;
		if (verify) {
			/* each trial: the largest difference over the largest of C x */
			double worst = 0;
			for (int t = 0; t < T; t++) {
				double diff = 0, big = 0;
				for (long e = 0; e < side; e++) {
					diff = fmax(diff, fabs(z[(size_t)t * side + e] - cx[(size_t)t * side + e]));
					big = fmax(big, fabs(cx[(size_t)t * side + e]));
				}
				worst = fmax(worst, big > 0 ? diff / big : diff);
			}
			r->residual = worst;
			r->verified = worst <= (c->elem == 4 ? 1e-3 : 1e-9);
		}
	}
out:
	free(y);
	free(z);
	free(cx);
	return rc;
}

int plb_run_mm2d(plb_t *p, const struct plb_mm2d *job, struct plb_mm2d_result *r)
{
	enum plb__hpart_method method = PLB__HPART_FPM;
	plb__api_begin(p);
	int rc = check_job(p, job, r, &method);
	if (rc)
		return rc;
	unsigned abi = r->abi;
	memset(r, 0, sizeof *r);
	r->abi = abi;
	struct m2 c = {.p = p, .job = job, .b = job->block ? job->block : 128, .elem = job->elem ? job->elem : 8};
	c.N = job->n / c.b;
	c.run = ++p->runs;
	c.peer = calloc((size_t)p->npeer + 1, sizeof *c.peer);
	c.npu = calloc((size_t)p->npeer + 1, sizeof *c.npu);
	c.heard = calloc((size_t)p->npeer + 1, sizeof *c.heard);
	if (!c.peer || !c.npu || !c.heard) {
		rc = plb__fail(p, PLB_ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < p->npeer; k++)
		if (p->peer[k].rank >= 0 && p->peer[k].npu > 0) {
			c.peer[c.q] = k;
			c.npu[c.q++] = p->peer[k].npu;
		}
	if (c.q < 1) {
		rc = plb__fail(p, PLB_ESTATE, "plb_run_mm2d: no worker node with a PU is left");
		goto out;
	}
	if ((long)c.q > c.N * c.N) {
		rc = plb__fail(p, PLB_EINVAL, "plb_run_mm2d: %d nodes cannot each have a block of %ld x %ld; accepted: n at least %d",
			       c.q, c.N, c.N, c.b * (int)ceil(sqrt(c.q)));
		goto out;
	}
	double now = plb__now();
	for (int i = 0; i < c.q; i++)
		c.heard[i] = now;
	struct plb__hpart h;
	double t0 = plb__now();
	if ((rc = partition(&c, method, &h)))
		goto out;
	r->partition_s = plb__now() - t0;
	r->nodes = c.q;
	r->blocks = c.N;
	r->benchmarks = h.benches;
	r->node_iterations = h.inter_iters;
	r->half_perimeters = h.half_perimeters;
	r->half_perimeters_lb = h.half_perimeters_lb;
	/* the link: the slowest node's, where each has one; else the
	 * master's; the pivots a square of the average area receives a step,
	 * less those it holds (2 N / sqrt(q) - 2 N / q blocks) */
	double link = INFINITY;
	for (int i = 0; i < c.q; i++) {
		double g = p->cfg.nodes[p->peer[c.peer[i]].node].link_gbps;
		link = g > 0 ? fmin(link, g) : 0;
	}
	r->link_gbps = link > 0 && isfinite(link) ? link : p->cfg.link_gbps > 0 ? p->cfg.link_gbps : 0;
	double least = 2.0 * c.N / sqrt(c.q) - 2.0 * c.N / c.q;
	double comm = r->link_gbps > 0 ? least * c.b * c.b * c.elem * 8 / (r->link_gbps * 1e9) : 0;
	r->bound_s = isfinite(h.step_bound) ? c.N * (h.step_bound + comm) : NAN;
	double block_mb = (double)c.b * c.b * c.elem / 1048576;
	for (int i = 0; i < c.q; i++) {
		r->pus += c.npu[i];
		r->memory_mb_max = fmax(r->memory_mb_max, plb__hpart_node_mb(&h, i, block_mb));
	}
	plb__log(PLB__LOG_INFO, "master", "2-D product: partitioned (%s) in %.3f s, %d benchmarks; the nodes' %ld steps start",
		 plb__hpart_method_name(method), r->partition_s, r->benchmarks, c.N);
	now = plb__now();
	for (int i = 0; i < c.q && !rc; i++) {
		c.heard[i] = now;
		rc = start_node(&c, &h, i);
	}
	plb__hpart_fini(&h);
	if (!rc)
		rc = gather(&c, r);
	if (!rc)
		plb__log(PLB__LOG_INFO, "master", "2-D product of %ld x %ld in %ld x %ld blocks over %d nodes: %.3f s",
			 job->n, job->n, c.N, c.N, c.q, r->product_s);
out:
	free(c.peer);
	free(c.npu);
	free(c.heard);
	return rc;
}
