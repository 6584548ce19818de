/* Fitted models kept from one plb_run to the next, and from one process
 * to the next. An iterative app runs one kernel on one domain many times:
 * after a run every PU's model samples are kept under the run's kind -
 * kernel, unit sizes and the job's signature - and the next run of that
 * kind starts its balancer from them, so it does not train again ([run]
 * keep_models). With a models file ([run] models, --models) they are
 * loaded when plb_init has the cluster's PUs and saved at plb_finalize.
 *
 * The file (text, docs/MODELS.md):
 *   plb-models 1
 *   pu HOST PU DEVICE kernel=K in=BYTES out=BYTES cliff=X samples=N sig=SIGNATURE
 *   UNITS EXEC_S XFER_S            (N lines, oldest first)
 * A record whose host, PU name or device this cluster lacks is kept as it
 * is and written back, so one file serves several clusters. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/log.h"
#include "runtime/config/modelsfile.h"
#include "runtime/core/rt.h"

#define KEEP_MAX PLB__MODELS_SAMPLES_MAX /* samples kept per PU (the model's window is smaller) */

static int same_kind(const struct plb__kept *k, const char *kernel, size_t in_unit,
		     size_t out_unit, const char *sig)
{
	return !strcmp(k->kernel, kernel) && k->in_unit == in_unit && k->out_unit == out_unit &&
	       !strcmp(k->sig, sig ? sig : "");
}

static struct plb__kept *find(struct plb *p, const char *kernel, size_t in_unit,
			      size_t out_unit, const char *sig)
{
	for (int i = 0; i < p->nkept; i++)
		if (same_kind(&p->kept[i], kernel, in_unit, out_unit, sig))
			return &p->kept[i];
	return NULL;
}

/* The record for a kind, made (every PU without samples) if none. */
static struct plb__kept *find_or_add(struct plb *p, const char *kernel, size_t in_unit,
				     size_t out_unit, const char *sig)
{
	struct plb__kept *k = find(p, kernel, in_unit, out_unit, sig);
	if (k)
		return k;
	struct plb__kept *grown = realloc(p->kept, (size_t)(p->nkept + 1) * sizeof *grown);
	if (!grown)
		return NULL;
	p->kept = grown;
	k = &p->kept[p->nkept];
	*k = (struct plb__kept){.kernel = strdup(kernel), .sig = strdup(sig ? sig : ""),
				.in_unit = in_unit, .out_unit = out_unit,
				.pu = calloc((size_t)p->npu + 1, sizeof *k->pu)};
	if (!k->kernel || !k->sig || !k->pu) {
		free(k->kernel);
		free(k->sig);
		free(k->pu);
		return NULL;
	}
	for (int i = 0; i < p->npu; i++)
		k->pu[i].cliff = INFINITY;
	p->nkept++;
	return k;
}

int plb__kept_warm(struct plb *p, const struct plb_job *job, struct plb__balancer *b)
{
	const struct plb__kept *k = find(p, job->kernel, job->in_unit, job->out_unit, job->signature);
	int warmed = 0;
	for (int i = 0; k && i < p->npu; i++) {
		const struct plb__kept_pu *u = &k->pu[i];
		if (!u->n)
			continue;
		int rc = plb__balancer_model_set(b, i, u->s, u->n, u->cliff);
		if (rc)
			return rc;
		warmed++;
	}
	return warmed;
}

int plb__kept_store(struct plb *p, const struct plb_job *job, const struct plb__balancer *b,
		    const int *lost)
{
	struct plb__kept *k = find_or_add(p, job->kernel, job->in_unit, job->out_unit, job->signature);
	struct plb__sample s[KEEP_MAX];
	if (!k)
		return PLB_ENOMEM;
	for (int i = 0; i < p->npu; i++) {
		struct plb__kept_pu *u = &k->pu[i];
		double cliff = INFINITY;
		int n = lost[i] ? 0 : plb__balancer_model_get(b, i, s, KEEP_MAX, &cliff);
		if (n > KEEP_MAX)
			n = KEEP_MAX;
		if (n <= 0)
			n = 0;
		struct plb__sample *c = n ? malloc((size_t)n * sizeof *c) : NULL;
		if (n && !c)
			return PLB_ENOMEM;
		if (n)
			memcpy(c, s, (size_t)n * sizeof *c);
		free(u->s);
		*u = (struct plb__kept_pu){.n = n, .cliff = cliff, .s = c};
	}
	return 0;
}

static void op_sig(char *buf, size_t len, const char *op)
{
	snprintf(buf, len, "op=%s", op);
}

int plb__kept_task_kind(struct plb *p, const char *kernel, size_t in_unit, size_t out_unit,
			const char *op)
{
	char sig[96];
	op_sig(sig, sizeof sig, op);
	struct plb__kept *k = find_or_add(p, kernel, in_unit, out_unit, sig);
	return k ? (int)(k - p->kept) : PLB_ENOMEM;
}

int plb__kept_task_add(struct plb *p, int kind, int pu, double exec_s, double xfer_s)
{
	if (kind < 0 || kind >= p->nkept || pu < 0 || pu >= p->npu)
		return PLB_EINVAL;
	struct plb__kept_pu *u = &p->kept[kind].pu[pu];
	if (u->cap < KEEP_MAX) {
		/* room for the most a PU keeps (a record read from the file
		 * has room for its own samples only) */
		struct plb__sample *room = realloc(u->s, KEEP_MAX * sizeof *u->s);
		if (!room)
			return PLB_ENOMEM;
		u->s = room;
		u->cap = KEEP_MAX;
	}
	if (u->n == KEEP_MAX) {         /* the older half goes: once in KEEP_MAX / 2 tasks */
		memmove(u->s, u->s + KEEP_MAX / 2, (KEEP_MAX - KEEP_MAX / 2) * sizeof *u->s);
		u->n -= KEEP_MAX / 2;
	}
	u->s[u->n++] = (struct plb__sample){.units = 1, .exec_s = exec_s, .xfer_s = xfer_s};
	return 0;
}

double plb__kept_task_mean(const struct plb *p, const char *kernel, size_t in_unit,
			   size_t out_unit, const char *op, int pu)
{
	char sig[96];
	op_sig(sig, sizeof sig, op);
	const struct plb__kept *k = find((struct plb *)p, kernel, in_unit, out_unit, sig);
	if (!k || pu < 0 || pu >= p->npu || !k->pu[pu].n)
		return 0;
	double t = 0;
	for (int i = 0; i < k->pu[pu].n; i++)
		t += k->pu[pu].s[i].exec_s + k->pu[pu].s[i].xfer_s;
	return t / k->pu[pu].n;
}

void plb__kept_free(struct plb *p)
{
	for (int i = 0; i < p->nkept; i++) {
		for (int j = 0; p->kept[i].pu && j < p->npu; j++)
			free(p->kept[i].pu[j].s);
		free(p->kept[i].pu);
		free(p->kept[i].kernel);
		free(p->kept[i].sig);
	}
	free(p->kept);
	p->kept = NULL;
	p->nkept = 0;
	free(p->foreign);
	p->foreign = NULL;
	p->nforeign = 0;
}

/* ---- the models file --------------------------------------------------- */

/* What a PU is, for matching a file's record: the [node] key that made it
 * and what it names there (an emulated PU's model, a GPU's or OpenCL
 * device's index, a CPU team's cores). */
static void device_id(const struct plb *p, int i, char *buf, size_t len)
{
	const struct plb__pu_desc *d = &p->pu[i];
	if (d->model >= 0 && d->model < p->cfg.nmodels)
		snprintf(buf, len, "emu:%s", p->cfg.models[d->model].name);
	else if (d->kind == PLB__PU_OPENCL)
		snprintf(buf, len, "opencl:%d", d->device);
	else if (d->device >= 0)
		snprintf(buf, len, "gpu:%d", d->device);
	else
		snprintf(buf, len, "cpu:%d", d->cores);
}

static const char *host_of(const struct plb *p, int i)
{
	for (int w = 0; w < p->npeer; w++)
		if (i >= p->peer[w].pu0 && i < p->peer[w].pu0 + p->peer[w].npu)
			return p->peer[w].host;
	return "?";
}

/* A token fits the format: no white space (a kernel name with some is not
 * saved). */
static int one_token(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (isspace((unsigned char)*s))
			return 0;
	return 1;
}

static int keep_foreign(struct plb *p, const char *text, size_t len)
{
	char *grown = realloc(p->foreign, p->nforeign + len + 1);
	if (!grown)
		return PLB_ENOMEM;
	memcpy(grown + p->nforeign, text, len);
	p->nforeign += len;
	grown[p->nforeign] = '\0';
	p->foreign = grown;
	return 0;
}

struct load {
	struct plb *p;
	int unknown;
};

/* One record of the file: this cluster's PU's samples kept under its kind,
 * or (another cluster's, changed hardware) its text kept to write back. */
static int load_one(void *ctx, const struct plb__models_rec *m)
{
	struct load *l = ctx;
	struct plb *p = l->p;
	int i = 0;
	char id[96];
	for (; i < p->npu; i++) {
		device_id(p, i, id, sizeof id);
		if (!strcmp(host_of(p, i), m->host) && !strcmp(p->pu[i].name, m->pu) && !strcmp(id, m->dev))
			break;
	}
	if (i == p->npu) {
		l->unknown++;
		return keep_foreign(p, m->text, m->len);
	}
	struct plb__kept *k = find_or_add(p, m->kernel, m->in_unit, m->out_unit, m->sig);
	struct plb__sample *c = malloc((size_t)m->n * sizeof *c);
	if (!k || !c) {
		free(c);
		return PLB_ENOMEM;
	}
	memcpy(c, m->s, (size_t)m->n * sizeof *c);
	free(k->pu[i].s);
	k->pu[i] = (struct plb__kept_pu){.n = m->n, .cliff = m->cliff, .s = c};
	return 0;
}

int plb__kept_load(struct plb *p, const char *path)
{
	struct load l = {.p = p};
	char err[600];
	int rc = plb__models_read(path, load_one, &l, err, sizeof err);
	if (rc == PLB_EIO && errno == ENOENT) {
		plb__log(PLB__LOG_INFO, "plb", "models file %s does not exist yet: every PU trains, and plb_finalize writes it",
			 path);
		return 0;
	}
	if (rc == PLB_ENOMEM)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	if (rc)
		return plb__fail(p, rc, "models file %s", err);
	if (l.unknown)
		plb__log(PLB__LOG_WARN, "plb", "models file %s: %d records name a host, PU or device this cluster does not have (other hardware): not used, kept in the file",
			 path, l.unknown);
	return 0;
}

int plb__kept_save(struct plb *p, const char *path)
{
	char tmp[4096], id[96];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return plb__fail(p, PLB_EIO, "models file %s: cannot write it: %s", tmp, strerror(errno));
	fprintf(f, "plb-models 1\n");
	fprintf(f, "# fitted block times per PU and kind of run, written by plb_finalize (docs/MODELS.md)\n");
	for (int k = 0; k < p->nkept; k++) {
		const struct plb__kept *r = &p->kept[k];
		if (!one_token(r->kernel) || strchr(r->sig, '\n')) {
			plb__log(PLB__LOG_WARN, "plb", "models file %s: kernel '%s' (a name with white space, or a signature with a newline) is not saved",
				 path, r->kernel);
			continue;
		}
		for (int i = 0; i < p->npu; i++) {
			const struct plb__kept_pu *u = &r->pu[i];
			if (!u->n)
				continue;
			device_id(p, i, id, sizeof id);
			fprintf(f, "pu %s %s %s kernel=%s in=%zu out=%zu cliff=%.17g samples=%d sig=%s\n",
				host_of(p, i), p->pu[i].name, id, r->kernel, r->in_unit, r->out_unit,
				u->cliff, u->n, r->sig);
			for (int j = 0; j < u->n; j++)
				fprintf(f, "%.17g %.17g %.17g\n", u->s[j].units, u->s[j].exec_s,
					u->s[j].xfer_s);
		}
	}
	if (p->foreign)
		fputs(p->foreign, f);
	int bad = ferror(f);
	if (fclose(f) || bad || rename(tmp, path)) {
		int e = errno;
		remove(tmp);
		return plb__fail(p, PLB_EIO, "models file %s: cannot write it: %s", path, strerror(e));
	}
	return 0;
}
