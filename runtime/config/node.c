/* The [node] sections (config.h): the keys that ask for PUs, read by how
 * their value reads (PLB__PU_KINDS), the emulated PU list built from them
 * once the whole file is read, and which section each worker rank gets.
 * Pure: no MPI, no devices. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/parse.h"

#define CORES_MAX 65536
#define INDEX_MAX 1023

static const struct {
	const char *key;
	enum plb__pu_value value;
} kinds[PLB__PU_NKIND] = {
#define X(ID, cls, key, value, accepts) [PLB__PU_##ID] = {key, PLB__VALUE_##value},
	PLB__PU_KINDS(X)
#undef X
};

enum plb__pu_value plb__pu_kind_value(enum plb__pu_kind k)
{
	return kinds[k].value;
}

const char *plb__pu_keys(char *buf, size_t len, int real_only)
{
	int n = 0, last = -1;
	size_t used = 0;

	for (int k = 0; k < PLB__PU_NKIND; k++)
		if (!real_only || kinds[k].value != PLB__VALUE_MODELS)
			n++, last = k;
	if (len)
		buf[0] = '\0';
	for (int k = 0, i = 0; k < PLB__PU_NKIND && used < len; k++) {
		if (real_only && kinds[k].value == PLB__VALUE_MODELS)
			continue;
		int w = real_only ? snprintf(buf + used, len - used, "%s%s", i ? ", " : "", kinds[k].key)
				  : snprintf(buf + used, len - used, "%s%s =",
					     !i ? "" : k == last && n > 1 ? " or " : ", ", kinds[k].key);
		if (w < 0)
			break;
		used += (size_t)w;
		i++;
	}
	return buf;
}

int plb__node_npu(const struct plb__node *n, int real_only)
{
	int npu = 0;
	for (int k = 0; k < PLB__PU_NKIND; k++)
		if (!real_only || kinds[k].value != PLB__VALUE_MODELS)
			npu += n->pus[k].n;
	return npu;
}

/* CORES: all, or a core count. */
static int set_cores(struct ctx *c, struct plb__node_pus *np, const char *key, const char *v,
		     const char *accepts)
{
	double d;

	if (!(np->v = malloc(sizeof *np->v)))
		return oom(c);
	if (!strcmp(v, "all")) {
		np->v[np->n++] = -1;
		return 0;
	}
	if (plb__cfg_parse_num(v, &d) || d != floor(d) || d < 1 || d > CORES_MAX)
		return fail(c, c->lineno, "%s %s = %.*s: not a core count; accepted: %s",
			    c->label, key, SHOW, v, accepts);
	np->v[np->n++] = (int)d;
	return 0;
}

/* INDICES: device indices, each once. */
static int set_indices(struct ctx *c, struct plb__node_pus *np, const char *key, const char *v,
		       const char *accepts)
{
	int max = plb__cfg_count_words(v);
	char *save = NULL, *copy = strdup(v);

	if (!copy || !(np->v = malloc((size_t)max * sizeof *np->v))) {
		free(copy);
		return oom(c);
	}
	for (char *tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		double d;
		if (plb__cfg_parse_num(tok, &d) || d != floor(d) || d < 0 || d > INDEX_MAX) {
			fail(c, c->lineno, "%s %s: '%.*s' is not a device index; accepted: %s",
			     c->label, key, SHOW, tok, accepts);
			break;
		}
		for (int i = 0; i < np->n; i++)
			if (np->v[i] == (int)d) {
				fail(c, c->lineno, "%s %s: device %d is listed twice; accepted: %s",
				     c->label, key, (int)d, accepts);
				break;
			}
		if (c->rc)
			break;
		np->v[np->n++] = (int)d;
	}
	free(copy);
	return c->rc;
}

/* Whether tok is a device selector: all, INDEX, or PLATFORM:INDEX with
 * PLATFORM letters, digits, '_', '-' or '.'. */
static int selector_ok(const char *tok)
{
	const char *colon = strrchr(tok, ':'), *num = colon ? colon + 1 : tok;
	double d;
	if (!strcmp(tok, "all"))
		return 1;
	if (colon) {
		size_t len = (size_t)(colon - tok);
		if (!len || strspn(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != len)
			return 0;
	}
	return *num && strspn(num, "0123456789") == strlen(num) && !plb__cfg_parse_num(num, &d) &&
	       d <= INDEX_MAX;
}

/* DEVICES: selectors, resolved on the node against the devices it has;
 * all stands alone, and none is written twice. */
static int set_devices(struct ctx *c, struct plb__node_pus *np, const char *key, const char *v,
		       const char *accepts)
{
	int max = plb__cfg_count_words(v);
	char *save = NULL, *copy = strdup(v);

	if (!copy || !(np->v = malloc((size_t)max * sizeof *np->v)) ||
	    !(np->sel = calloc((size_t)max, sizeof *np->sel))) {
		free(copy);
		return oom(c);
	}
	for (char *tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!selector_ok(tok)) {
			fail(c, c->lineno, "%s %s: '%.*s' is not a device; accepted: %s", c->label, key,
			     SHOW, tok, accepts);
			break;
		}
		if (max > 1 && !strcmp(tok, "all")) {
			fail(c, c->lineno, "%s %s: all stands alone (it is every device); accepted: %s",
			     c->label, key, accepts);
			break;
		}
		for (int i = 0; i < np->n; i++)
			if (!strcmp(np->sel[i], tok)) {
				fail(c, c->lineno, "%s %s: device %s is listed twice; accepted: %s",
				     c->label, key, tok, accepts);
				break;
			}
		if (c->rc)
			break;
		if (!(np->sel[np->n] = strdup(tok))) {
			oom(c);
			break;
		}
		np->v[np->n] = np->n;
		np->n++;
	}
	free(copy);
	return c->rc;
}

/* MODELS: the names are kept until every [model] is known. */
static int set_models(struct ctx *c, enum plb__pu_kind k, const char *v)
{
	if (c->cap_names < c->cap_nodes) {
		size_t old = (size_t)c->cap_names * PLB__PU_NKIND, want = (size_t)c->cap_nodes * PLB__PU_NKIND;
		char **names = realloc(c->names, want * sizeof *names);
		if (!names)
			return oom(c);
		memset(names + old, 0, (want - old) * sizeof *names);
		c->names = names;
		c->cap_names = c->cap_nodes;
	}
	if (!(c->names[c->idx * PLB__PU_NKIND + k] = strdup(v)))
		return oom(c);
	return 0;
}

int plb__cfg_set_pus(struct ctx *c, enum plb__pu_kind k, const char *v, const char *accepts)
{
	struct plb__node_pus *np = &c->cfg->nodes[c->idx].pus[k];

	np->line = c->lineno;
	switch (kinds[k].value) {
	case PLB__VALUE_CORES:
		return set_cores(c, np, kinds[k].key, v, accepts);
	case PLB__VALUE_INDICES:
		return set_indices(c, np, kinds[k].key, v, accepts);
	case PLB__VALUE_MODELS:
		return set_models(c, k, v);
	case PLB__VALUE_DEVICES:
		return set_devices(c, np, kinds[k].key, v, accepts);
	}
	return fail(c, c->lineno, "%s %s: unhandled value kind", c->label, kinds[k].key);
}

static int find_model(const struct plb__config *cfg, const char *name)
{
	for (int i = 0; i < cfg->nmodels; i++)
		if (!strcmp(cfg->models[i].name, name))
			return i;
	return -1;
}

/* Node i's key of kind k names models: their indices. */
static int resolve_models(struct ctx *c, int i, enum plb__pu_kind k)
{
	struct plb__config *cfg = c->cfg;
	struct plb__node *n = &cfg->nodes[i];
	struct plb__node_pus *np = &n->pus[k];
	char *text = i < c->cap_names ? c->names[i * PLB__PU_NKIND + k] : NULL, *save = NULL;

	if (!text)
		return 0;
	if (!(np->v = malloc((size_t)plb__cfg_count_words(text) * sizeof *np->v)))
		return oom(c);
	for (char *tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		int m = find_model(cfg, tok);
		if (m < 0) {
			char list[200];
			size_t used = 0;
			list[0] = '\0';
			for (int j = 0; j < cfg->nmodels && used < sizeof list; j++) {
				int w = snprintf(list + used, sizeof list - used, "%s%s",
						 j ? ", " : "", cfg->models[j].name);
				if (w < 0)
					break;
				used += (size_t)w;
			}
			return fail(c, np->line, "[node %s] %s: model '%.*s' is not defined; accepted: names of [model NAME] sections (%s)",
				    n->name, kinds[k].key, SHOW, tok, cfg->nmodels ? list : "this file has none");
		}
		np->v[np->n++] = m;
		cfg->models[m].used = 1;
	}
	return 0;
}

/* The emulated PUs of node i, kind k, appended to cfg->pus; count[m] is
 * how many of model m the node has so far. */
static int add_emulated(struct ctx *c, int i, enum plb__pu_kind k, int *count)
{
	struct plb__config *cfg = c->cfg;
	struct plb__node *n = &cfg->nodes[i];

	for (int j = 0; j < n->pus[k].n; j++) {
		struct plb__emu_pu *pu = &cfg->pus[cfg->npu++];
		pu->node = i;
		pu->model = n->pus[k].v[j];
		int num = ++count[pu->model];
		int w = snprintf(pu->name, sizeof pu->name, "%s.%s#%d", n->name,
				 cfg->models[pu->model].name, num);
		if (w < 0 || (size_t)w >= sizeof pu->name)
			return fail(c, n->line, "[node %.*s]: PU name '%.*s.%.*s#%d' is too long; accepted: node and model names that make PU names of at most %zu characters",
				    SHOW, n->name, SHOW, n->name, SHOW,
				    cfg->models[pu->model].name, num, sizeof pu->name - 1);
	}
	return 0;
}

/* The emulated PUs of node `node` a couple rule's word names: MODEL (all
 * of that model there) or MODEL#K (one), as a mask over cfg->pus in out
 * (npu long). Returns how many it names. */
static int couple_names(const struct plb__config *cfg, int node, const char *w, char *out)
{
	int n = 0;
	for (int p = 0; p < cfg->npu; p++) {
		const struct plb__emu_pu *pu = &cfg->pus[p];
		if (pu->node != node)
			continue;
		const char *local = pu->name + strlen(cfg->nodes[node].name) + 1;  /* MODEL#K */
		size_t ml = strcspn(local, "#");
		if (!strcmp(local, w) || (strlen(w) == ml && !strncmp(local, w, ml)))
			out[p] = 1, n++;
	}
	return n;
}

/* Node i's couple key: rules "VICTIM STAGE FACTOR while CULPRIT...",
 * separated by ';', expanded into one plb__couple per victim PU. */
static int parse_couple(struct ctx *c, int i)
{
	struct plb__config *cfg = c->cfg;
	const struct plb__node *n = &cfg->nodes[i];
	int line = n->couple_line;
	const char *acc = "rules separated by ';', each 'VICTIM STAGE FACTOR while CULPRIT...', "
			  "VICTIM and CULPRIT emulated PUs of this node (MODEL: all of that model, or "
			  "MODEL#K: one), STAGE compute or transfer, FACTOR a number in [1, 1000]";
	char *text = strdup(n->couple), *save = NULL;
	char *vic = calloc((size_t)cfg->npu + 1, 1), *cul = calloc((size_t)cfg->npu + 1, 1);
	if (!text || !vic || !cul) {
		free(text), free(vic), free(cul);
		return oom(c);
	}
	for (char *rule = strtok_r(text, ";", &save); rule && !c->rc; rule = strtok_r(NULL, ";", &save)) {
		char *ws = NULL, *w[64];
		int nw = 0;
		for (char *t = strtok_r(rule, " \t", &ws); t && nw < 64; t = strtok_r(NULL, " \t", &ws))
			w[nw++] = t;
		if (!nw)
			continue;
		double f;
		int stage = nw > 1 && !strcmp(w[1], "compute") ? PLB__STAGE_COMPUTE
			    : nw > 1 && !strcmp(w[1], "transfer") ? PLB__STAGE_XFER : -1;
		if (nw < 5 || stage < 0 || strcmp(w[3], "while") || plb__cfg_parse_num(w[2], &f) ||
		    !(f >= 1 && f <= 1000)) {
			fail(c, line, "[node %s] couple: '%.*s' is not a rule; accepted: %s", n->name, SHOW,
			     w[0], acc);
			break;
		}
		memset(vic, 0, (size_t)cfg->npu);
		memset(cul, 0, (size_t)cfg->npu);
		if (!couple_names(cfg, i, w[0], vic)) {
			fail(c, line, "[node %s] couple: no emulated PU '%.*s' in this node; accepted: %s",
			     n->name, SHOW, w[0], acc);
			break;
		}
		for (int k = 4; k < nw && !c->rc; k++)
			if (!couple_names(cfg, i, w[k], cul))
				fail(c, line, "[node %s] couple: no emulated PU '%.*s' in this node; accepted: %s",
				     n->name, SHOW, w[k], acc);
		for (int p = 0; p < cfg->npu && !c->rc; p++) {
			if (!vic[p])
				continue;
			int nc = 0;
			for (int q = 0; q < cfg->npu; q++)
				nc += cul[q] && q != p;
			if (!nc) {
				fail(c, line, "[node %s] couple: %s would slow only while it computes itself; accepted: culprits other than the victim",
				     n->name, cfg->pus[p].name);
				break;
			}
			struct plb__couple *cp = realloc(cfg->couples, (size_t)(cfg->ncouple + 1) * sizeof *cp);
			int *list = malloc((size_t)nc * sizeof *list);
			if (!cp || !list) {
				free(list);
				if (cp)
					cfg->couples = cp;
				oom(c);
				break;
			}
			cfg->couples = cp;
			cp = &cfg->couples[cfg->ncouple++];
			*cp = (struct plb__couple){.victim = p, .stage = stage, .factor = f, .line = line,
						   .culprits = list};
			for (int q = 0; q < cfg->npu; q++)
				if (cul[q] && q != p)
					list[cp->nculprit++] = q;
		}
	}
	free(text);
	free(vic);
	free(cul);
	return c->rc;
}

int plb__cfg_finish_nodes(struct ctx *c)
{
	struct plb__config *cfg = c->cfg;
	int rc, npu = 0, nreal = 0;

	for (int i = 0; i < cfg->nnodes; i++)
		for (int k = 0; k < PLB__PU_NKIND; k++)
			if (kinds[k].value == PLB__VALUE_MODELS && (rc = resolve_models(c, i, k)))
				return rc;
	for (int i = 0; i < cfg->nmodels && !cfg->warning[0]; i++)
		if (!cfg->models[i].used)
			snprintf(cfg->warning, sizeof cfg->warning,
				 "%s:%d: [model %s]: no node's emu list names it: not used", c->path,
				 cfg->models[i].line, cfg->models[i].name);
	for (int i = 0; i < cfg->nnodes; i++) {
		nreal += plb__node_npu(&cfg->nodes[i], 1);
		npu += plb__node_npu(&cfg->nodes[i], 0);
		/* in one process, under mpirun and in plbsim alike */
		if (!plb__node_npu(&cfg->nodes[i], 0)) {
			char keys[128];
			return fail(c, cfg->nodes[i].line, "[node %s] has no PU; accepted: %s in it",
				    cfg->nodes[i].name, plb__pu_keys(keys, sizeof keys, 0));
		}
	}
	npu -= nreal;
	if (!npu && !nreal) {
		char keys[128];
		return fail(c, 0, "no PU at all; accepted: at least one [node NAME] section with %s",
			    plb__pu_keys(keys, sizeof keys, 0));
	}
	if (!npu) {             /* real devices only: the runtime lists them */
		for (int i = 0; i < cfg->nnodes && !c->rc; i++)
			if (cfg->nodes[i].couple)
				parse_couple(c, i);    /* names no emulated PU: an error */
		return c->rc;
	}
	int *count = calloc((size_t)cfg->nmodels, sizeof *count);
	if (!count || !(cfg->pus = malloc((size_t)npu * sizeof *cfg->pus))) {
		free(count);
		return oom(c);
	}
	rc = 0;
	for (int i = 0; i < cfg->nnodes && !rc; i++) {
		memset(count, 0, (size_t)cfg->nmodels * sizeof *count);
		for (int k = 0; k < PLB__PU_NKIND && !rc; k++)
			if (kinds[k].value == PLB__VALUE_MODELS)
				rc = add_emulated(c, i, k, count);
	}
	free(count);
	for (int i = 0; i < cfg->nnodes && !rc; i++)
		if (cfg->nodes[i].couple)
			rc = parse_couple(c, i);
	return rc;
}

void plb__cfg_node_fini(struct plb__node *n)
{
	free(n->name);
	free(n->host);
	free(n->couple);
	for (int k = 0; k < PLB__PU_NKIND; k++) {
		for (int i = 0; n->pus[k].sel && i < n->pus[k].n; i++)
			free(n->pus[k].sel[i]);
		free(n->pus[k].sel);
		free(n->pus[k].v);
	}
}

/* Which worker rank gets which [node] section. */

/* "a" matches "a" and "a.cluster" (and the other way round): MPI and the
 * user do not always agree on the domain part. */
static int host_match(const char *want, const char *have)
{
	size_t lw = strcspn(want, "."), lh = strcspn(have, ".");
	if (!strcmp(want, have))
		return 1;
	if (want[lw] && have[lh])
		return 0;       /* both fully qualified and different */
	return lw == lh && !strncmp(want, have, lw);
}

static int is_any(const struct plb__node *n)
{
	return !n->host || !strcmp(n->host, "*");
}

int plb__nodes_assign(const struct plb__config *cfg, const char *const *hosts,
		      int nworkers, int single, int *assign, char *err, size_t errlen)
{
	int taken[4096] = {0};
	if (cfg->nnodes > (int)(sizeof taken / sizeof taken[0])) {
		snprintf(err, errlen, "%s: %d [node] sections; accepted: at most %zu", cfg->path,
			 cfg->nnodes, sizeof taken / sizeof taken[0]);
		return PLB_ECONFIG;
	}
	for (int i = 0; i < nworkers; i++) {
		assign[i] = -1;
		for (int j = 0; j < cfg->nnodes && assign[i] < 0; j++)
			if (!taken[j] && !is_any(&cfg->nodes[j]) && host_match(cfg->nodes[j].host, hosts[i]))
				assign[i] = j, taken[j] = 1;
	}
	for (int i = 0; i < nworkers; i++)
		for (int j = 0; j < cfg->nnodes && assign[i] < 0; j++)
			if (!taken[j] && is_any(&cfg->nodes[j]))
				assign[i] = j, taken[j] = 1;
	/* A section nobody took is the likelier mistake: name it first. */
	for (int j = 0; j < cfg->nnodes && !single; j++) {
		const struct plb__node *n = &cfg->nodes[j];
		if (taken[j])
			continue;
		if (is_any(n))
			snprintf(err, errlen, "%s:%d: [node %s] gets no worker rank: the file has %d [node] sections for %d worker ranks; accepted: mpirun -np %d (a master and one worker per section)",
				 cfg->path, n->line, n->name, cfg->nnodes, nworkers, cfg->nnodes + 1);
		else
			snprintf(err, errlen, "%s:%d: [node %s] host = %s: no worker rank runs on that host (or all there have a section already); accepted: a host that runs a worker rank (rank 1 runs on %s), or host = *",
				 cfg->path, n->host_line ? n->host_line : n->line, n->name, n->host,
				 nworkers ? hosts[0] : "no host");
		return PLB_ECONFIG;
	}
	for (int i = 0; i < nworkers; i++) {
		if (assign[i] < 0) {
			if (single)
				snprintf(err, errlen, "%s: no [node] section for this host (%s); accepted, without mpirun: a [node] with host = %s or host = *",
					 cfg->path, hosts[i], hosts[i]);
			else
				snprintf(err, errlen, "%s: worker rank %d (host %s) gets no [node] section: the file has %d for %d worker ranks; accepted: a [node] with host = %s or host = *, one per worker rank",
					 cfg->path, i + 1, hosts[i], cfg->nnodes, nworkers, hosts[i]);
			return PLB_ECONFIG;
		}
	}
	return 0;
}

const struct plb__op *plb__config_op(const struct plb__config *cfg, const char *name)
{
	for (int i = 0; name && i < cfg->nops; i++)
		if (!strcmp(cfg->ops[i].name, name))
			return &cfg->ops[i];
	return NULL;
}
