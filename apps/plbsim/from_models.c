/* plbsim --from-models: a scenario from a real cluster's models file and
 * the config it ran with, so that "what if I add two GPUs, or use static"
 * is a plbsim run away. Each PU with a record of the chosen kind of run
 * becomes an emulated PU whose compute curve is its fitted model,
 * tabulated; what a models file does not hold (the domain's size, the
 * links, the noise where too few samples say it) is taken from the config
 * or assumed, and the scenario's header says which. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/model.h"
#include "runtime/config/config.h"
#include "runtime/config/modelsfile.h"
#include "from_models.h"

#define NPOINT 14               /* points of a tabulated curve */

struct rec {
	char host[256], pu[64], dev[96], kind[PLB__MODELS_KERNEL_MAX + 300];
	double cliff;
	int n;
	struct plb__sample *s;
};

struct recs {
	struct rec *v;
	int n, cap;
};

static int collect(void *ctx, const struct plb__models_rec *m)
{
	struct recs *r = ctx;
	if (r->n == r->cap) {
		int cap = r->cap ? 2 * r->cap : 16;
		struct rec *v = realloc(r->v, (size_t)cap * sizeof *v);
		if (!v)
			return PLB_ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	struct rec *x = &r->v[r->n];
	memset(x, 0, sizeof *x);
	snprintf(x->host, sizeof x->host, "%s", m->host);
	snprintf(x->pu, sizeof x->pu, "%s", m->pu);
	snprintf(x->dev, sizeof x->dev, "%s", m->dev);
	snprintf(x->kind, sizeof x->kind, "%s in=%zu out=%zu sig=%.200s", m->kernel, m->in_unit,
		 m->out_unit, m->sig);
	x->cliff = m->cliff;
	x->n = m->n;
	if (!(x->s = malloc((size_t)m->n * sizeof *x->s)))
		return PLB_ENOMEM;
	memcpy(x->s, m->s, (size_t)m->n * sizeof *x->s);
	r->n++;
	return 0;
}

/* The config's node a PU belongs to ("a" of "a.k620#1"), or -1. */
static int node_of(const struct plb__config *cfg, const char *pu)
{
	size_t dot = strcspn(pu, ".");
	for (int i = 0; i < cfg->nnodes; i++)
		if (strlen(cfg->nodes[i].name) == dot && !strncmp(cfg->nodes[i].name, pu, dot))
			return i;
	return -1;
}

/* The class a record's device is, and whether it was assumed. */
static const char *class_of(const struct plb__config *cfg, const char *dev, int *assumed)
{
	static const char *const names[] = {"cpu", "gpu", "mic"};
	*assumed = 0;
	if (!strncmp(dev, "cpu:", 4))
		return "cpu";
	if (!strncmp(dev, "gpu:", 4))
		return "gpu";
	if (!strncmp(dev, "emu:", 4))
		for (int i = 0; i < cfg->nmodels; i++)
			if (!strcmp(cfg->models[i].name, dev + 4))
				return names[cfg->models[i].cls];
	*assumed = 1;           /* an OpenCL device, or a model the config lacks */
	return "gpu";
}

/* A name [model] takes: the PU's, its host first, [A-Za-z0-9_.-] only. */
static void model_name(const struct rec *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%s", r->host, r->pu);
	for (char *c = buf; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
			*c = '_';
}

/* PU r's fitted model tabulated from its smallest block to W into t (a
 * "table U:S ..." value); its spread (NAN: too few samples); whether it
 * had a fit (else its last sample's rate, through the origin). 0 or an
 * error code. */
static int tabulate(const struct plb__config *cfg, const struct rec *r, double W, char *t,
		    size_t len, double *spread, int *fitted)
{
	struct plb__model m;
	int rc = plb__model_init(&m, W, &cfg->params);
	if (rc)
		return rc;
	if ((rc = plb__model_load(&m, r->s, r->n))) {
		plb__model_fini(&m);
		return rc;
	}
	double lo = INFINITY;
	for (int j = 0; j < r->n; j++)
		lo = fmin(lo, r->s[j].units);
	lo = fmax(1, floor(lo / 2));
	size_t at = (size_t)snprintf(t, len, "table");
	double prev = 0, pu = 0;
	*fitted = plb__model_ready(&m);
	for (int k = 0; k < NPOINT && at < len; k++) {
		double u = k == NPOINT - 1 ? W : floor(lo * pow(W / lo, (double)k / (NPOINT - 1)));
		if (u <= pu)
			continue;
		double s = *fitted ? plb__model_eval(&m, u) : NAN;
		if (!(s > 0) || !isfinite(s)) {
			/* no fit (one sample): its rate, through the origin */
			*fitted = 0;
			s = (r->s[r->n - 1].exec_s + r->s[r->n - 1].xfer_s) * u / r->s[r->n - 1].units;
		}
		s = fmax(s, prev);      /* a table's times may not fall */
		at += (size_t)snprintf(t + at, len - at, " %.0f:%.6g", u, s);
		prev = s;
		pu = u;
	}
	*spread = plb__model_spread(&m);
	plb__model_fini(&m);
	return at < len ? 0 : PLB_ENOMEM;
}

static void list_kinds(const struct recs *r, FILE *f)
{
	for (int i = 0; i < r->n; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = !strcmp(r->v[j].kind, r->v[i].kind);
		if (!seen)
			fprintf(f, "  %s\n", r->v[i].kind);
	}
}

int plbsim_from_models(const char *config, const char *models, const char *kind, double units,
		       FILE *out)
{
	struct plb__config cfg;
	struct recs r = {0};
	char err[1024];
	int rc = plb__config_load(config, &cfg, err, sizeof err);
	if (rc) {
		fprintf(stderr, "plbsim: %s\n", err);
		return 1;
	}
	if ((rc = plb__models_read(models, collect, &r, err, sizeof err))) {
		fprintf(stderr, "plbsim: --from-models: %s\n", rc == PLB_ENOMEM ? "out of memory" : err);
		goto out;
	}
	/* the kind of run: the only one, or the one --kind names */
	const char *k0 = NULL;
	int nk = 0;             /* kinds that match, other than k0: any is too many */
	for (int i = 0; i < r.n; i++) {
		if (kind && !strstr(r.v[i].kind, kind))
			continue;
		if (!k0)
			k0 = r.v[i].kind;
		else if (strcmp(k0, r.v[i].kind))
			nk++;
	}
	if (!k0 || nk > 0) {
		fprintf(stderr, "plbsim: --from-models %s: %s; accepted: --kind TEXT, part of one of:\n",
			models, !k0 ? (kind ? "no record of that --kind" : "no records") :
			"records of several kinds of run");
		list_kinds(&r, stderr);
		rc = 1;
		goto out;
	}
	double W = units > 0 ? units : cfg.units, most = 0;
	for (int i = 0; i < r.n; i++)
		for (int j = 0; !strcmp(r.v[i].kind, k0) && j < r.v[i].n; j++)
			most = fmax(most, r.v[i].s[j].units);
	if (!(W >= most) || !(W >= 1)) {
		/* an app's config often says units = 1: its job gives the size */
		fprintf(stderr, "plbsim: --from-models: the domain's size is not in the models file, and %s's [run] units (%.0f) is below the largest block the models saw (%.0f units): the app's job gave the size; accepted: --units W\n",
			config, cfg.units, most);
		rc = 1;
		goto out;
	}
	fprintf(out, "; a scenario from the models file %s and the config %s\n", models, config);
	fprintf(out, "; (plbsim %s --from-models %s%s%s), kind of run: %s\n", config, models,
		kind ? " --kind " : "", kind ? kind : "", k0);
	fprintf(out, "; Each PU with a record became an emulated PU: its compute curve is its\n"
		     "; fitted model (transfer included), tabulated from half its smallest block\n"
		     "; to W. Taken from the config: W%s, the network and links, the policy.\n",
		units > 0 ? " (no: from --units)" : "");
	int used = 0, other = 0, assumed_cls = 0, assumed_noise = 0;
	for (int i = 0; i < r.n; i++) {
		if (strcmp(r.v[i].kind, k0))
			continue;
		if (node_of(&cfg, r.v[i].pu) < 0)
			other++;
		else
			used++;
	}
	/* the models first, so the header can say what was assumed */
	char *body = NULL;
	size_t blen = 0;
	FILE *b = open_memstream(&body, &blen);
	if (!b) {
		rc = 1;
		goto out;
	}
	for (int i = 0; i < r.n; i++) {
		const struct rec *x = &r.v[i];
		if (strcmp(x->kind, k0) || node_of(&cfg, x->pu) < 0)
			continue;
		char name[384], table[2048];
		double spread;
		int as, fitted;
		const char *cls = class_of(&cfg, x->dev, &as);
		assumed_cls += as;
		model_name(x, name, sizeof name);
		if ((rc = tabulate(&cfg, x, W, table, sizeof table, &spread, &fitted))) {
			fprintf(stderr, "plbsim: --from-models: %s's samples: %s\n", x->pu, plb_strerror(rc));
			fclose(b);
			free(body);
			rc = 1;
			goto out;
		}
		fprintf(b, "\n[model %s]\n; %s on %s (%s), %d sample%s%s%s\n", name, x->pu, x->host,
			x->dev, x->n, x->n == 1 ? "" : "s", as ? "; its class assumed" : "",
			fitted ? "" : "; too few to fit: its rate, through the origin (assumed)");
		if (isfinite(x->cliff))
			fprintf(b, "; throughput fell from %.0f units on (a cliff)\n", x->cliff);
		fprintf(b, "class = %s\ncompute = %s\n", cls, table);
		if (isfinite(spread))
			fprintf(b, "noise = %.3f\n", fmin(fmax(spread, 0), 0.5));
		else {
			fprintf(b, "noise = 0.02   ; assumed: too few samples to say\n");
			assumed_noise++;
		}
	}
	fclose(b);
	fprintf(out, "; Assumed: %d PUs' noise (too few samples), %d PUs' class (OpenCL devices,\n"
		     "; or models the config lacks: gpu). %d records of PUs on nodes the config\n"
		     "; lacks were left out; PUs without a record are not in the scenario.\n",
		assumed_noise, assumed_cls, other);
	fprintf(out, "\n[run]\nunits = %.0f\npolicy = %s\nseed = %llu\npipeline = %d\n", W, cfg.policy,
		(unsigned long long)cfg.seed, cfg.pipeline);
	fprintf(out, "\n[network]\nlatency_us = %g\nfail_detect_ms = %g\n", cfg.latency_us,
		cfg.fail_detect_ms);
	if (cfg.link_gbps > 0)
		fprintf(out, "link_gbps = %g\n", cfg.link_gbps);
	for (int nd = 0; nd < cfg.nnodes; nd++) {
		int any = 0;
		for (int i = 0; i < r.n; i++) {
			const struct rec *x = &r.v[i];
			if (strcmp(x->kind, k0) || node_of(&cfg, x->pu) != nd)
				continue;
			char name[384];
			model_name(x, name, sizeof name);
			if (!any++)
				fprintf(out, "\n[node %s]\nemu =", cfg.nodes[nd].name);
			fprintf(out, " %s", name);
		}
		if (any) {
			fputc('\n', out);
			if (cfg.nodes[nd].link_gbps > 0)
				fprintf(out, "link_gbps = %g\n", cfg.nodes[nd].link_gbps);
		}
	}
	fputs(body, out);
	free(body);
	rc = used ? 0 : 1;
	if (!used)
		fprintf(stderr, "plbsim: --from-models: no record of this kind names a PU of %s's nodes\n",
			config);
out:
	for (int i = 0; i < r.n; i++)
		free(r.v[i].s);
	free(r.v);
	plb__config_fini(&cfg);
	return rc ? 1 : 0;
}
