/* The scenario / config file loader (config.h). libinih splits the file into
 * key = value lines; every key is checked against the one table below (name,
 * type, range, default, what is accepted), [balancer] keys against params.h's
 * table. inih does not report section headers or line numbers to the
 * handler, so our own reader hands it the lines, counts them and opens each
 * section as its header line goes by (an empty [model X] is seen too).
 * Checks that need the whole file (emu lists naming models defined later,
 * unused models, at least one PU) run after parsing. Not thread-safe: inih's
 * options are process globals. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <ini.h>

#include "balancer/balancer.h"
#include "runtime/config/config.h"

enum sect { S_NONE, S_RUN, S_BALANCER, S_NETWORK, S_NODE, S_MODEL };

enum ktype {
	K_NUM,          /* double */
	K_INT,          /* int */
	K_U64,          /* uint64_t */
	K_POLICY,       /* char[32], a name plb_policy_name() knows */
	K_CLASS,        /* enum plb_pu_class */
	K_TEXT,         /* char *, copied as is */
	K_CURVE,        /* struct plb__curve_spec */
	K_CHANGE,       /* the model's nchange, change_t, change_f */
	K_EMU,          /* a node's emu list: names now, model indices later */
	K_CPU,          /* a node's cpu: int, -1 all, N cores */
	K_GPU,          /* a node's gpu: device index list */
};

enum { F_REQ = 1, F_INTEGER = 2, F_HI_OPEN = 4 };

struct key {
	enum sect sect;
	const char *name;
	enum ktype type;
	unsigned flags;
	double lo, hi;          /* K_NUM, K_INT: accepted range */
	double def;             /* K_NUM, K_INT, K_U64 default */
	const char *sdef;       /* K_POLICY default */
	size_t off;             /* field in the section's struct */
	const char *accepts;    /* for messages: what a right value looks like */
};

#define CFG(f) offsetof(struct plb__config, f)
#define NODE(f) offsetof(struct plb__node, f)
#define MODEL(f) offsetof(struct plb__devmodel, f)
#define W_MAX 9007199254740992.0        /* 2^53: units stay exact in a double */

static const struct key keys[] = {
	{S_RUN, "units", K_NUM, F_REQ | F_INTEGER, 1, W_MAX, 0, NULL, CFG(units),
	 "an integer >= 1, W, the size of the domain (required)"},
	{S_RUN, "policy", K_POLICY, 0, 0, 0, 0, "plb-hac", CFG(policy),
	 "a policy name (see plbsim --help)"},
	{S_RUN, "seed", K_U64, 0, 0, 0, 1, NULL, CFG(seed),
	 "an integer in [0, 18446744073709551615]"},
	{S_RUN, "pipeline", K_INT, 0, 1, 2, 1, NULL, CFG(pipeline),
	 "1 or 2, grants a PU may hold at once"},
	{S_NETWORK, "latency_us", K_NUM, 0, 0, 1e9, 50, NULL, CFG(latency_us),
	 "microseconds in [0, 1e9], one-way control message latency"},
	{S_NETWORK, "solve_us", K_NUM, 0, 0, 1e9, -1, NULL, CFG(solve_us),
	 "microseconds in [0, 1e9] charged per solve (leave out to charge the measured time)"},
	{S_NETWORK, "fail_detect_ms", K_NUM, 0, 0, 1e9, 1000, NULL, CFG(fail_detect_ms),
	 "milliseconds in [0, 1e9] until the master notices a dead PU"},
	{S_NODE, "emu", K_EMU, 0, 0, 0, 0, NULL, NODE(emu),
	 "model names separated by spaces, each a [model NAME] of this file; a name may repeat"},
	{S_NODE, "host", K_TEXT, 0, 0, 0, 0, NULL, NODE(host),
	 "a host name, or * for any"},
	{S_NODE, "cpu", K_CPU, 0, 1, 65536, 0, NULL, NODE(cpu),
	 "all, or a core count in [1, 65536]: one CPU PU over those cores"},
	{S_NODE, "gpu", K_GPU, 0, 0, 1023, 0, NULL, NODE(gpu),
	 "CUDA device indices in [0, 1023] separated by spaces, each once, e.g. 0 1"},
	{S_MODEL, "class", K_CLASS, F_REQ, 0, 0, 0, NULL, MODEL(cls),
	 "cpu | gpu | mic (required)"},
	{S_MODEL, "compute", K_CURVE, F_REQ, 0, 0, 0, NULL, MODEL(compute),
	 "'table U:S U:S ...' or 'poly C0 C1 ...', seconds per block of x units (required)"},
	{S_MODEL, "transfer", K_CURVE, 0, 0, 0, 0, NULL, MODEL(transfer),
	 "'table U:S U:S ...' or 'poly C0 C1 ...', transfer seconds per block of x units"},
	{S_MODEL, "noise", K_NUM, F_HI_OPEN, 0, 1, 0, NULL, MODEL(noise),
	 "a relative standard deviation in [0, 1)"},
	{S_MODEL, "change", K_CHANGE, 0, 0, 0, 0, NULL, 0,
	 "'T:F T:F ...', from T seconds on times are multiplied by F; T >= 0 strictly increasing, F > 0"},
	{S_MODEL, "fail", K_NUM, 0, 0, DBL_MAX, INFINITY, NULL, MODEL(fail_t),
	 "seconds >= 0, when the PU dies"},
};
#define NKEYS (int)(sizeof keys / sizeof keys[0])

static const char *const classes[] = {[PLB_PU_CPU] = "cpu", [PLB_PU_GPU] = "gpu", [PLB_PU_MIC] = "mic"};

#define SECTIONS_ACCEPTED "[run], [balancer], [network], [node NAME], [model NAME]"
#define MAX_PARAMS 256          /* more than params.h will ever hold */

struct ctx {
	struct plb__config *cfg;
	const char *path;
	FILE *f;
	/* the reader's current line and how much of it inih has taken */
	char *buf;
	size_t cap, len, pos;
	int lineno;
	/* the open section */
	enum sect sect;
	int idx;                /* node or model index */
	int sect_line;
	char label[96];         /* "[node A]", for messages */
	int seen[NKEYS];        /* line each key was set on, 0 if not yet */
	int pseen[MAX_PARAMS];  /* the same for [balancer] keys */
	int run_line, bal_line, net_line;
	int cap_nodes, cap_models;
	char **emu_text;        /* per node, resolved after parsing */
	char *err;
	size_t errlen;
	int rc;
};

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF(f, a)
#endif

/* Record an error; only the first one is kept, as later ones are usually
 * its consequences. line <= 0: the error belongs to no line. */
PRINTF(4, 5)
static int report(struct ctx *c, int rc, int line, const char *fmt, ...)
{
	if (c->rc)
		return c->rc;
	c->rc = rc;
	if (!c->err || !c->errlen)
		return rc;
	int n = line > 0 ? snprintf(c->err, c->errlen, "%s:%d: ", c->path, line)
			 : snprintf(c->err, c->errlen, "%s: ", c->path);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#define fail(c, line, ...) report(c, PLB_ECONFIG, line, __VA_ARGS__)
#define oom(c) report(c, PLB_ENOMEM, 0, "out of memory")

/* Values and names quoted in messages are cut here: enough to recognise. */
#define SHOW 60

static int count_words(const char *s)
{
	int n = 0;

	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		n++;
		while (*s && *s != ' ' && *s != '\t')
			s++;
	}
	return n;
}

/* A finite number and nothing else (inih has trimmed the value). */
static int parse_num(const char *s, double *v)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return -1;
	*v = strtod(s, &end);
	return *end == '\0' && isfinite(*v) ? 0 : -1;
}

static void key_list(enum sect s, char *buf, size_t n)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < NKEYS && used < n; i++) {
		if (keys[i].sect != s)
			continue;
		int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "",
				 keys[i].name);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

static void apply_defaults(enum sect s, void *base)
{
	for (int i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		void *p = (char *)base + k->off;
		if (k->sect != s)
			continue;
		switch (k->type) {
		case K_NUM:
			*(double *)p = k->def;
			break;
		case K_INT:
			*(int *)p = (int)k->def;
			break;
		case K_U64:
			*(uint64_t *)p = (uint64_t)k->def;
			break;
		case K_POLICY:
			snprintf(p, sizeof ((struct plb__config *)0)->policy, "%s", k->sdef);
			break;
		default:
			break;  /* zeroed: no curve, no text, no changes */
		}
	}
}

static void *field(struct ctx *c, const struct key *k)
{
	char *base = (char *)c->cfg;

	if (c->sect == S_NODE)
		base = (char *)&c->cfg->nodes[c->idx];
	else if (c->sect == S_MODEL)
		base = (char *)&c->cfg->models[c->idx];
	return base + k->off;
}

static int set_change(struct ctx *c, const struct key *k, const char *v)
{
	struct plb__devmodel *m = &c->cfg->models[c->idx];
	int n = count_words(v), i = 0;
	char *copy = strdup(v), *save = NULL;
	double *t = malloc(n * sizeof *t), *f = malloc(n * sizeof *f);

	if (!copy || !t || !f) {
		oom(c);
		goto err;
	}
	for (char *tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save), i++) {
		char *colon = strchr(tok, ':');
		if (colon)
			*colon = '\0';
		if (!colon || parse_num(tok, &t[i]) || parse_num(colon + 1, &f[i])) {
			if (colon)
				*colon = ':';
			fail(c, c->lineno, "%s %s: point %d '%.*s' is malformed; accepted: %s",
			     c->label, k->name, i + 1, SHOW, tok, k->accepts);
			goto err;
		}
		if (t[i] < 0 || !(f[i] > 0) || (i > 0 && t[i] <= t[i - 1])) {
			fail(c, c->lineno, "%s %s: point %d '%g:%g' %s; accepted: %s",
			     c->label, k->name, i + 1, t[i], f[i],
			     t[i] < 0 ? "has a negative time" :
			     !(f[i] > 0) ? "has a factor that is not > 0" :
			     "is unsorted (time not after the previous one)", k->accepts);
			goto err;
		}
	}
	free(copy);
	m->nchange = n;
	m->change_t = t;
	m->change_f = f;
	return 0;
err:
	free(copy);
	free(t);
	free(f);
	return c->rc;
}

static int set_gpu(struct ctx *c, const struct key *k, const char *v)
{
	struct plb__node *n = &c->cfg->nodes[c->idx];
	int max = count_words(v);
	char *save = NULL, *copy = strdup(v);

	n->gpu_line = c->lineno;
	if (!copy || !(n->gpu = malloc((size_t)max * sizeof *n->gpu))) {
		free(copy);
		return oom(c);
	}
	for (char *tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		double d;
		if (parse_num(tok, &d) || d != floor(d) || d < k->lo || d > k->hi) {
			fail(c, c->lineno, "%s %s: '%.*s' is not a device index; accepted: %s",
			     c->label, k->name, SHOW, tok, k->accepts);
			break;
		}
		for (int i = 0; i < n->ngpu; i++)
			if (n->gpu[i] == (int)d) {
				fail(c, c->lineno, "%s %s: device %d is listed twice; accepted: %s",
				     c->label, k->name, (int)d, k->accepts);
				break;
			}
		if (c->rc)
			break;
		n->gpu[n->ngpu++] = (int)d;
	}
	free(copy);
	return c->rc;
}

static int set_key(struct ctx *c, const struct key *k, const char *v)
{
	void *p = field(c, k);
	double d;

	switch (k->type) {
	case K_NUM:
	case K_INT:
		if (parse_num(v, &d))
			return fail(c, c->lineno, "%s %s: '%.*s' is not a number; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		if (d < k->lo || d > k->hi || ((k->flags & F_HI_OPEN) && d >= k->hi))
			return fail(c, c->lineno, "%s %s = %.*s is out of range; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		if (((k->flags & F_INTEGER) || k->type == K_INT) && d != floor(d))
			return fail(c, c->lineno, "%s %s = %.*s is not an integer; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		if (k->type == K_INT)
			*(int *)p = (int)d;
		else
			*(double *)p = d;
		return 0;
	case K_U64: {
		char *end;
		unsigned long long u;
		errno = 0;
		/* strtoull would take "-1" as 2^64 - 1. */
		u = isdigit((unsigned char)*v) ? strtoull(v, &end, 10) : 0;
		if (!isdigit((unsigned char)*v) || *end || errno)
			return fail(c, c->lineno, "%s %s: '%.*s' is not an unsigned integer; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		*(uint64_t *)p = u;
		return 0;
	}
	case K_POLICY:
		for (int i = 0; plb_policy_name(i); i++) {
			if (!strcmp(v, plb_policy_name(i))) {
				snprintf(p, sizeof c->cfg->policy, "%s", v);
				return 0;
			}
		}
	{
		char names[256];
		return fail(c, c->lineno, "%s %s: '%.*s' is not a policy; accepted: %s",
			    c->label, k->name, SHOW, v,
			    plb_policy_names(names, sizeof names, " | "));
	}
	case K_CLASS:
		for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
			if (!strcmp(v, classes[i])) {
				*(enum plb_pu_class *)p = (enum plb_pu_class)i;
				return 0;
			}
		}
		return fail(c, c->lineno, "%s %s: '%.*s' is not a PU class; accepted: %s",
			    c->label, k->name, SHOW, v, k->accepts);
	case K_TEXT:
		if (!(*(char **)p = strdup(v)))
			return oom(c);
		if (k->off == NODE(host))
			c->cfg->nodes[c->idx].host_line = c->lineno;
		return 0;
	case K_CPU:
		c->cfg->nodes[c->idx].cpu_line = c->lineno;
		if (!strcmp(v, "all")) {
			*(int *)p = -1;
			return 0;
		}
		if (parse_num(v, &d) || d != floor(d) || d < k->lo || d > k->hi)
			return fail(c, c->lineno, "%s %s = %.*s: not a core count; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		*(int *)p = (int)d;
		return 0;
	case K_GPU:
		return set_gpu(c, k, v);
	case K_CURVE: {
		char msg[320];
		struct plb__curve_spec cs;
		int rc = plb__curve_spec_parse(&cs, v, msg, sizeof msg);
		if (rc == PLB_ENOMEM)
			return oom(c);
		if (rc)
			return fail(c, c->lineno, "%s %s: %s", c->label, k->name, msg);
		*(struct plb__curve_spec *)p = cs;
		return 0;
	}
	case K_CHANGE:
		return set_change(c, k, v);
	case K_EMU:
		if (!(c->emu_text[c->idx] = strdup(v)))
			return oom(c);
		c->cfg->nodes[c->idx].emu_line = c->lineno;
		return 0;
	}
	return fail(c, c->lineno, "%s %s: unhandled key type", c->label, k->name);
}

static int param_index(const char *name)
{
	const char *pn, *doc;
	double def, lo, hi;

	for (int i = 0; plb_params_describe(i, &pn, &def, &lo, &hi, &doc) == 0; i++)
		if (!strcmp(pn, name))
			return i;
	return -1;
}

static int set_param(struct ctx *c, const char *name, const char *v)
{
	int i = param_index(name);
	char msg[320];

	if (i < 0) {
		const char *pn, *doc;
		double def, lo, hi;
		size_t used = 0;
		msg[0] = '\0';
		for (int j = 0; plb_params_describe(j, &pn, &def, &lo, &hi, &doc) == 0 &&
				used < sizeof msg; j++) {
			int w = snprintf(msg + used, sizeof msg - used, "%s%s",
					 j ? ", " : "", pn);
			if (w < 0)
				break;
			used += (size_t)w;
		}
		return fail(c, c->lineno, "[balancer] %.*s: unknown key; accepted in [balancer]: %s",
			    SHOW, name, msg);
	}
	if (i < MAX_PARAMS) {
		if (c->pseen[i])
			return fail(c, c->lineno, "[balancer] %s: duplicate key (first set on line %d); accepted: each key once per section",
				    name, c->pseen[i]);
		c->pseen[i] = c->lineno;
	}
	if (plb_params_set(&c->cfg->params, name, v, msg, sizeof msg))
		return fail(c, c->lineno, "[balancer] %s", msg);
	return 0;
}

/* inih's handler: 1 to go on, 0 to stop. inih's own section name is cut at
 * 49 characters, so the section is the one our reader opened. */
static int handler(void *user, const char *section, const char *name,
		   const char *value)
{
	struct ctx *c = user;
	char list[160];
	int k;

	(void)section;
	if (c->rc)
		return 0;
	switch (c->sect) {
	case S_NONE:
		fail(c, c->lineno, "%.*s: key outside any section; accepted: keys under "
		     SECTIONS_ACCEPTED, SHOW, name);
		return 0;
	case S_BALANCER:
		return set_param(c, name, value) == 0;
	default:
		break;
	}
	for (k = 0; k < NKEYS; k++)
		if (keys[k].sect == c->sect && !strcmp(keys[k].name, name))
			break;
	if (k == NKEYS) {
		key_list(c->sect, list, sizeof list);
		fail(c, c->lineno, "%s %.*s: unknown key; accepted in this section: %s",
		     c->label, SHOW, name, list);
		return 0;
	}
	if (c->seen[k]) {
		fail(c, c->lineno, "%s %s: duplicate key (first set on line %d); accepted: each key once per section",
		     c->label, name, c->seen[k]);
		return 0;
	}
	c->seen[k] = c->lineno;
	if (!*value) {
		fail(c, c->lineno, "%s %s: empty value; accepted: %s", c->label, name,
		     keys[k].accepts);
		return 0;
	}
	return set_key(c, &keys[k], value) == 0;
}

/* Keys a section must have are checked when it ends: by then every key it
 * will get has been seen, in whatever order. */
static int close_section(struct ctx *c)
{
	for (int k = 0; k < NKEYS; k++)
		if (keys[k].sect == c->sect && (keys[k].flags & F_REQ) && !c->seen[k])
			return fail(c, c->sect_line, "%s %s: missing; accepted: %s",
				    c->label, keys[k].name, keys[k].accepts);
	c->sect = S_NONE;
	return 0;
}

static int open_single(struct ctx *c, enum sect s, int *line, const char *name)
{
	if (*line)
		return fail(c, c->lineno, "[%s]: duplicate section (first on line %d); accepted: one [%s] per file",
			    name, *line, name);
	*line = c->lineno;
	c->sect = s;
	snprintf(c->label, sizeof c->label, "[%s]", name);
	return 0;
}

/* [node NAME] / [model NAME]: NAME is s[0, len), already trimmed. */
static int check_name(struct ctx *c, const char *kind, const char *s, size_t len)
{
	if (!len)
		return fail(c, c->lineno, "[%s]: missing name; accepted: [%s NAME]", kind, kind);
	for (size_t i = 0; i < len; i++)
		if (isspace((unsigned char)s[i]))
			return fail(c, c->lineno, "[%s %.*s]: name contains a space; accepted: [%s NAME], NAME without spaces",
				    kind, (int)(len > SHOW ? SHOW : len), s, kind);
	return 0;
}

static int open_node(struct ctx *c, const char *s, size_t len)
{
	struct plb__config *cfg = c->cfg;
	int rc = check_name(c, "node", s, len);

	if (rc)
		return rc;
	for (int i = 0; i < cfg->nnodes; i++)
		if (strlen(cfg->nodes[i].name) == len && !memcmp(cfg->nodes[i].name, s, len))
			return fail(c, c->lineno, "[node %s]: duplicate node (first on line %d); accepted: one [node NAME] per NAME",
				    cfg->nodes[i].name, cfg->nodes[i].line);
	if (cfg->nnodes == c->cap_nodes) {
		int cap = c->cap_nodes ? 2 * c->cap_nodes : 8;
		struct plb__node *nodes = realloc(cfg->nodes, cap * sizeof *nodes);
		if (!nodes)
			return oom(c);
		cfg->nodes = nodes;
		char **text = realloc(c->emu_text, cap * sizeof *text);
		if (!text)
			return oom(c);
		c->emu_text = text;
		c->cap_nodes = cap;
	}
	struct plb__node *n = &cfg->nodes[cfg->nnodes];
	memset(n, 0, sizeof *n);
	if (!(n->name = strndup(s, len)))
		return oom(c);
	n->line = c->lineno;
	c->emu_text[cfg->nnodes] = NULL;
	apply_defaults(S_NODE, n);
	c->idx = cfg->nnodes++;
	c->sect = S_NODE;
	snprintf(c->label, sizeof c->label, "[node %s]", n->name);
	return 0;
}

static int open_model(struct ctx *c, const char *s, size_t len)
{
	struct plb__config *cfg = c->cfg;
	int rc = check_name(c, "model", s, len);

	if (rc)
		return rc;
	for (int i = 0; i < cfg->nmodels; i++)
		if (strlen(cfg->models[i].name) == len && !memcmp(cfg->models[i].name, s, len))
			return fail(c, c->lineno, "[model %s]: duplicate model (first on line %d); accepted: one [model NAME] per NAME",
				    cfg->models[i].name, cfg->models[i].line);
	if (cfg->nmodels == c->cap_models) {
		int cap = c->cap_models ? 2 * c->cap_models : 8;
		struct plb__devmodel *models = realloc(cfg->models, cap * sizeof *models);
		if (!models)
			return oom(c);
		cfg->models = models;
		c->cap_models = cap;
	}
	struct plb__devmodel *m = &cfg->models[cfg->nmodels];
	memset(m, 0, sizeof *m);
	if (!(m->name = strndup(s, len)))
		return oom(c);
	m->line = c->lineno;
	apply_defaults(S_MODEL, m);
	c->idx = cfg->nmodels++;
	c->sect = S_MODEL;
	snprintf(c->label, sizeof c->label, "[model %s]", m->name);
	return 0;
}

/* "name" followed by the end or a space: [node A] but not [nodeA]. */
static bool starts_word(const char *s, size_t len, const char *word, size_t *rest)
{
	size_t n = strlen(word);

	if (len < n || memcmp(s, word, n) || (len > n && !isspace((unsigned char)s[n])))
		return false;
	while (n < len && isspace((unsigned char)s[n]))
		n++;
	*rest = n;
	return true;
}

static int open_section(struct ctx *c, const char *s, size_t len)
{
	size_t rest;
	int rc = close_section(c);

	if (rc)
		return rc;
	while (len && isspace((unsigned char)*s))
		s++, len--;
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	memset(c->seen, 0, sizeof c->seen);
	memset(c->pseen, 0, sizeof c->pseen);
	c->sect_line = c->lineno;
	if (len == 3 && !memcmp(s, "run", 3))
		return open_single(c, S_RUN, &c->run_line, "run");
	if (len == 8 && !memcmp(s, "balancer", 8))
		return open_single(c, S_BALANCER, &c->bal_line, "balancer");
	if (len == 7 && !memcmp(s, "network", 7))
		return open_single(c, S_NETWORK, &c->net_line, "network");
	if (starts_word(s, len, "node", &rest))
		return open_node(c, s + rest, len - rest);
	if (starts_word(s, len, "model", &rest))
		return open_model(c, s + rest, len - rest);
	return fail(c, c->lineno, "[%.*s]: unknown section; accepted: " SECTIONS_ACCEPTED,
		    (int)(len > SHOW ? SHOW : len), s);
}

/* A new line has been read: check it and open its section if it is a
 * header, deciding "header" exactly as inih does. */
static int new_line(struct ctx *c)
{
	const char *s = c->buf;

	if (c->len > (size_t)ini_max_line - 3)
		return fail(c, c->lineno, "line is %zu characters long; accepted: lines up to %d characters",
			    c->len, ini_max_line - 3);
	if (strlen(c->buf) != c->len)
		return fail(c, c->lineno, "line holds a NUL byte; accepted: a text file");
	if (c->lineno == 1 && c->len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))
		s += 3;         /* a UTF-8 BOM, which inih skips too */
	while (isspace((unsigned char)*s))
		s++;
	if (*s != '[')
		return 0;
	/* inih ends the name at ']', or at an inline comment (';' after a space). */
	const char *e = s + 1;
	bool was_space = false;
	while (*e && *e != ']' && !(was_space && *e == ';')) {
		was_space = isspace((unsigned char)*e);
		e++;
	}
	if (*e != ']') {
		int len = (int)strcspn(s, "\r\n");
		return fail(c, c->lineno, "'%.*s': malformed section header; accepted: " SECTIONS_ACCEPTED,
			    len > SHOW ? SHOW : len, s);
	}
	return open_section(c, s + 1, (size_t)(e - s - 1));
}

/* inih's line source: hands out our current line in pieces of up to num - 1
 * bytes (inih grows its buffer and asks again), and reads the next line only
 * when the current one is used up, so c->lineno is the line being handled. */
static char *reader(char *str, int num, void *stream)
{
	struct ctx *c = stream;

	if (c->rc || num < 2)
		return NULL;
	if (c->pos == c->len) {
		errno = 0;
		ssize_t n = getline(&c->buf, &c->cap, c->f);
		if (n < 0) {
			if (errno == ENOMEM)
				oom(c);
			else if (ferror(c->f))
				report(c, PLB_EIO, c->lineno + 1, "cannot read: %s", strerror(errno));
			return NULL;
		}
		c->len = (size_t)n;
		c->pos = 0;
		c->lineno++;
		if (new_line(c))
			return NULL;
	}
	size_t k = c->len - c->pos;
	if (k > (size_t)num - 1)
		k = (size_t)num - 1;
	memcpy(str, c->buf + c->pos, k);
	str[k] = '\0';
	c->pos += k;
	return str;
}

static int find_model(const struct plb__config *cfg, const char *name)
{
	for (int i = 0; i < cfg->nmodels; i++)
		if (!strcmp(cfg->models[i].name, name))
			return i;
	return -1;
}

static int resolve_emu(struct ctx *c, int i)
{
	struct plb__config *cfg = c->cfg;
	struct plb__node *n = &cfg->nodes[i];
	char *save = NULL;

	if (!c->emu_text[i])
		return 0;
	if (!(n->emu = malloc(count_words(c->emu_text[i]) * sizeof *n->emu)))
		return oom(c);
	for (char *tok = strtok_r(c->emu_text[i], " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
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
			return fail(c, n->emu_line, "[node %s] emu: model '%.*s' is not defined; accepted: names of [model NAME] sections (%s)",
				    n->name, SHOW, tok, cfg->nmodels ? list : "this file has none");
		}
		n->emu[n->nemu++] = m;
		cfg->models[m].used = 1;
	}
	return 0;
}

/* Checks that need the whole file, then the PU list. */
static int finish(struct ctx *c)
{
	struct plb__config *cfg = c->cfg;
	int rc;

	if (!c->run_line)
		return fail(c, 0, "[run] units: missing (the file has no [run] section); accepted: %s",
			    keys[0].accepts);   /* units is the first row */
	for (int i = 0; i < cfg->nnodes; i++)
		if ((rc = resolve_emu(c, i)))
			return rc;
	for (int i = 0; i < cfg->nmodels; i++)
		if (!cfg->models[i].used)
			return fail(c, cfg->models[i].line, "[model %s]: defined but never used; accepted: models named in some node's emu list (use it or remove the section)",
				    cfg->models[i].name);
	int npu = 0, nreal = 0;
	for (int i = 0; i < cfg->nnodes; i++) {
		npu += cfg->nodes[i].nemu;
		nreal += (cfg->nodes[i].cpu != 0) + cfg->nodes[i].ngpu;
	}
	if (!npu && !nreal)
		return fail(c, 0, "no PU at all; accepted: at least one [node NAME] section with emu = MODEL ..., cpu = or gpu =");
	if (!npu)
		return 0;       /* real devices only: the runtime lists them */
	int *count = calloc(cfg->nmodels, sizeof *count);
	if (!count || !(cfg->pus = malloc(npu * sizeof *cfg->pus))) {
		free(count);
		return oom(c);
	}
	for (int i = 0; i < cfg->nnodes; i++) {
		struct plb__node *n = &cfg->nodes[i];
		memset(count, 0, cfg->nmodels * sizeof *count);
		for (int j = 0; j < n->nemu; j++) {
			struct plb__pu *pu = &cfg->pus[cfg->npu++];
			pu->node = i;
			pu->model = n->emu[j];
			int k = ++count[pu->model];
			int w = snprintf(pu->name, sizeof pu->name, "%s.%s#%d", n->name,
					 cfg->models[pu->model].name, k);
			if (w < 0 || (size_t)w >= sizeof pu->name) {
				free(count);
				return fail(c, n->line, "[node %.*s]: PU name '%.*s.%.*s#%d' is too long; accepted: node and model names that make PU names of at most %zu characters",
					    SHOW, n->name, SHOW, n->name, SHOW,
					    cfg->models[pu->model].name, k, sizeof pu->name - 1);
			}
		}
	}
	free(count);
	return 0;
}

/* Parses c->f (closed here) into c->cfg. */
static int load(struct ctx *c0)
{
	struct ctx c = *c0;
	struct plb__config *cfg = c.cfg;
	const char *path = c.path;

	if (!(cfg->path = strdup(path))) {
		oom(&c);
		goto out;
	}
	apply_defaults(S_RUN, cfg);
	apply_defaults(S_NETWORK, cfg);
	plb_params_init(&cfg->params);

	/* Long lines (1024-PU scenarios) need a growing heap buffer. */
	ini_use_stack = false;
	ini_allow_realloc = true;
	ini_max_line = 1 << 20;
	ini_stop_on_first_error = true;
	ini_allow_multiline = false;
	int r = ini_parse_stream(reader, &c, handler, &c);
	if (r == -2)
		oom(&c);
	else if (r > 0) {
		/* inih stopped at once, so c.buf still holds the line. */
		const char *s = c.buf ? c.buf : "";
		while (isspace((unsigned char)*s))
			s++;
		int len = (int)strcspn(s, "\r\n");
		fail(&c, r, "'%.*s' is not a key = value line; accepted: [section], key = value, or a comment starting with ; or #",
		     len > SHOW ? SHOW : len, s);
	}
	if (!c.rc)
		close_section(&c);
	if (!c.rc)
		finish(&c);
out:
	for (int i = 0; i < cfg->nnodes; i++)
		free(c.emu_text[i]);
	free(c.emu_text);
	free(c.buf);
	fclose(c.f);
	if (c.rc)
		plb__config_fini(cfg);
	return c.rc;
}

int plb__config_load(const char *path, struct plb__config *cfg, char *err,
		     size_t errlen)
{
	struct ctx c = {.cfg = cfg, .path = path, .err = err, .errlen = errlen};

	memset(cfg, 0, sizeof *cfg);
	if (err && errlen)
		err[0] = '\0';
	if (!(c.f = fopen(path, "r")))
		return report(&c, PLB_EIO, 0, "cannot open: %s; accepted: a readable file",
			      strerror(errno));
	return load(&c);
}

int plb__config_load_text(const char *path, const char *text, size_t len,
			  struct plb__config *cfg, char *err, size_t errlen)
{
	struct ctx c = {.cfg = cfg, .path = path, .err = err, .errlen = errlen};

	memset(cfg, 0, sizeof *cfg);
	if (err && errlen)
		err[0] = '\0';
	if (len == 0)
		text = "\n", len = 1;  /* fmemopen refuses an empty buffer */
	if (!(c.f = fmemopen((void *)text, len, "r")))
		return report(&c, PLB_ENOMEM, 0, "cannot read the text: %s", strerror(errno));
	return load(&c);
}

static void model_fini(struct plb__devmodel *m)
{
	free(m->name);
	plb__curve_spec_fini(&m->compute);
	plb__curve_spec_fini(&m->transfer);
	free(m->change_t);
	free(m->change_f);
}

void plb__config_fini(struct plb__config *cfg)
{
	for (int i = 0; i < cfg->nnodes; i++) {
		struct plb__node *n = &cfg->nodes[i];
		free(n->name);
		free(n->host);
		free(n->gpu);
		free(n->emu);
	}
	for (int i = 0; i < cfg->nmodels; i++)
		model_fini(&cfg->models[i]);
	free(cfg->nodes);
	free(cfg->models);
	free(cfg->pus);
	free(cfg->path);
	memset(cfg, 0, sizeof *cfg);
}
