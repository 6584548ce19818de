/* The scenario / config file loader (config.h). libinih splits the file into
 * key = value lines; every key is checked against the one table below (name,
 * type, range, default, what is accepted), [balancer] keys against params.h's
 * table. inih does not report section headers or line numbers to the
 * handler, so our own reader hands it the lines, counts them and opens each
 * section as its header line goes by (an empty [model X] is seen too).
 * Checks that need the whole file (emu lists naming models defined later,
 * unused models, at least one PU) run after parsing; node.c has the [node]
 * sections. Not thread-safe: inih's options are process globals. */
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
#include "balancer/base/words.h"
#include "balancer/tasks.h"
#include "runtime/config/parse.h"

enum ktype {
	K_NUM,          /* double */
	K_INT,          /* int */
	K_U64,          /* uint64_t */
	K_POLICY,       /* char[32], a name plb__policy_name() knows */
	K_CLASS,        /* enum plb__model_class */
	K_TEXT,         /* char *, copied as is */
	K_CURVE,        /* struct plb__curve_spec */
	K_CHANGE,       /* the model's nchange, change_t, change_f */
	K_PUS,          /* a [node] key asking for PUs: off is its enum plb__pu_kind */
	K_SCHED,        /* char[16], a name plb__tasks_policy_parse() knows */
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
#define OP(f) offsetof(struct plb__op, f)
#define W_MAX 9007199254740992.0        /* 2^53: units stay exact in a double */

static const struct key keys[] = {
	{S_RUN, "units", K_NUM, F_INTEGER, 1, W_MAX, 0, NULL, CFG(units),
	 "a decimal integer in [1, 2^53], W, the size of the domain (plbsim needs it; an app's job may set it instead)"},
	{S_RUN, "policy", K_POLICY, 0, 0, 0, 0, "plb-hac", CFG(policy),
	 "a policy name (see plbsim --help)"},
	{S_RUN, "seed", K_U64, 0, 0, 0, 1, NULL, CFG(seed),
	 "an integer in [0, 18446744073709551615]"},
	{S_RUN, "pipeline", K_INT, 0, 1, PLB__MAX_GRANTS, 1, NULL, CFG(pipeline),
	 "1 or 2, grants a PU may hold at once (a pipeline run: tasks a task slot holds)"},
	{S_RUN, "models", K_TEXT, 0, 0, 0, 0, NULL, CFG(models_file),
	 "a file path: fitted models are read from it at start (if it exists) and written to it at the end"},
	{S_RUN, "keep_models", K_INT, 0, 0, 1, 1, NULL, CFG(keep_models),
	 "0 or 1: a run starts from the fitted models of the last run with the same kernel, unit sizes and signature (1, the default) or trains afresh (0)"},
	{S_RUN, "in_place", K_INT, 0, 0, 1, 1, NULL, CFG(in_place),
	 "0 or 1: in one process, PUs read a block's input from and write its output to the job's own memory (1, the default) or get copies, as over MPI (0)"},
	{S_RUN, "resident_mb", K_NUM, 0, 0, 1e12, -1, NULL, CFG(resident_mb),
	 "MiB in [0, 1e12] of input each node may keep between runs for jobs that ask (leave out for a quarter of the node's memory)"},
	{S_RUN, "in_bytes", K_NUM, 0, 0, 1e12, 0, NULL, CFG(in_bytes),
	 "bytes in [0, 1e12] of a unit's input that cross the links to its PU (plbsim; an app's job gives its own)"},
	{S_RUN, "out_bytes", K_NUM, 0, 0, 1e12, 0, NULL, CFG(out_bytes),
	 "bytes in [0, 1e12] of a unit's output that cross the links back to the master (plbsim; an app's job gives its own)"},
	{S_RUN, "shared_bytes", K_NUM, 0, 0, 1e12, 0, NULL, CFG(shared_bytes),
	 "bytes in [0, 1e12] sent once to every node over the links before its first block, the job's shared data (plbsim; an app's job gives its own)"},
	{S_RUN, "window", K_INT, 0, 1, 1e6, 0, NULL, CFG(window),
	 "an integer in [1, 1e6]: pipeline instances a node holds at once (default: 4 a PU)"},
	{S_RUN, "scheduler", K_SCHED, 0, 0, 0, 0, "pams", CFG(scheduler),
	 "fcfs | heft | padas | pams: how a node orders its ready pipeline tasks (default pams)"},
	{S_RUN, "estimate_error", K_NUM, 0, 0, 100, 0, NULL, CFG(estimate_error),
	 "a number in [0, 100]: each expected pipeline task time times 1 + E or 1 / (1 + E), at random (default 0)"},
	{S_NETWORK, "latency_us", K_NUM, 0, 0, 1e9, 50, NULL, CFG(latency_us),
	 "microseconds in [0, 1e9], one-way control message latency"},
	{S_NETWORK, "link_gbps", K_NUM, 0, 0, 1e6, 0, NULL, CFG(link_gbps),
	 "Gbit/s in [0, 1e6]: the master's link, each way, shared by every block's input and output: plbsim models it, the runtime's report bounds the run's bytes by it (0, the default: plbsim has no link; the runtime times it at start, [network] link_probe_ms)"},
	{S_NETWORK, "link_probe_ms", K_NUM, 0, 0, 1e4, 20, NULL, CFG(link_probe_ms),
	 "milliseconds in [0, 1e4]: where link_gbps is not given, the runtime times the master's link at start to the workers on other hosts, in rounds grown to this long (0: not timed, no link modelled)"},
	{S_NETWORK, "solve_us", K_NUM, 0, 0, 1e9, -1, NULL, CFG(solve_us),
	 "microseconds in [0, 1e9] charged per solve (leave out to charge the measured time)"},
	{S_NETWORK, "fail_detect_ms", K_NUM, 0, 0, 1e9, 1000, NULL, CFG(fail_detect_ms),
	 "milliseconds in [0, 1e9] until the master notices a dead PU"},
	{S_NETWORK, "peer_timeout_s", K_NUM, 0, 0.05, 1e6, 10, NULL, CFG(peer_timeout_s),
	 "seconds in [0.05, 1e6] of silence in a run after which a worker stops (its master is gone), and the longest the master waits for a silent worker; the master says it is alive every fifth of it"},
	{S_NETWORK, "peer_timeout_min_s", K_NUM, 0, 0.05, 1e6, 1, NULL, CFG(peer_timeout_min_s),
	 "seconds in [0.05, 1e6]: the master takes out a worker rank silent this long in a run (its blocks go to the others), or longer for one that was silent a quarter of it before or has a block out predicted at a third of it (4x that silence, 3x that block, at most peer_timeout_s); a worker says it is alive every fifth of it"},
	{S_NETWORK, "startup_timeout_s", K_NUM, 0, 1, 1e6, 120, NULL, CFG(startup_timeout_s),
	 "seconds in [1, 1e6] the master waits at start for every worker rank to report its PUs (a node whose devices take long to open needs more); past it plb_init fails naming the silent ranks"},
	{S_NETWORK, "end_lost", K_INT, 0, 0, 1, 1, NULL, CFG(end_lost),
	 "0 or 1: where worker ranks were taken out (dead, frozen, cut off), plb_finalize ends each from a live rank on its host (SIGKILL) and the master ends the job when its process exits, with MPI_Abort, so that mpirun does not wait for a frozen rank (1, the default), or leaves it to the launcher (0: mpirun waits for every rank)"},
	{S_NODE, "host", K_TEXT, 0, 0, 0, 0, NULL, NODE(host),
	 "a host name, or * for any"},
	{S_NODE, "link_gbps", K_NUM, 0, 0, 1e6, 0, NULL, NODE(link_gbps),
	 "Gbit/s in [0, 1e6]: the node's own link, each way (plbsim; 0, the default: not modelled)"},
	{S_NODE, "memory_mb", K_NUM, 0, 0, 1e12, 0, NULL, NODE(memory_mb),
	 "MiB in [0, 1e12] the node may hold of a 2-D product's matrices (its rectangles of A, B and C and two pivot buffers; plbsim --layout 2d keeps every rectangle within it; 0, the default: no cap)"},
	{S_NODE, "couple", K_TEXT, 0, 0, 0, 0, NULL, NODE(couple),
	 "rules separated by ';', each 'VICTIM STAGE FACTOR while CULPRIT...': the emulated PUs VICTIM (a model name of this node: all its PUs, or MODEL#K: one) take FACTOR (>= 1) times as long in STAGE (compute or transfer) while any CULPRIT (named the same way) computes (plbsim)"},
	{S_NODE, "opencl_cores", K_INT, 0, 1, 65536, 1, NULL, NODE(opencl_cores),
	 "an integer in [1, 65536]: the cores each OpenCL device of type CPU (PoCL) runs on, taken out of cpu = all (1, the default)"},
#define X(ID, cls, key, value, accepts) {S_NODE, key, K_PUS, 0, 0, 0, 0, NULL, PLB__PU_##ID, accepts},
	PLB__PU_KINDS(X)
#undef X
	{S_MODEL, "class", K_CLASS, F_REQ, 0, 0, 0, NULL, MODEL(cls),
	 "cpu | gpu | mic (required)"},
	{S_MODEL, "compute", K_CURVE, F_REQ, 0, 0, 0, NULL, MODEL(compute),
	 "'table U:S U:S ...' or 'poly C0 C1 ...', seconds per block of x units (required)"},
	{S_MODEL, "transfer", K_CURVE, 0, 0, 0, 0, NULL, MODEL(transfer),
	 "'table U:S U:S ...' or 'poly C0 C1 ...', transfer seconds per block of x units"},
	{S_MODEL, "noise", K_NUM, F_HI_OPEN, 0, 1, 0, NULL, MODEL(noise),
	 "a relative standard deviation in [0, 1)"},
	{S_MODEL, "noise_time", K_NUM, 0, 0.001, 1e6, 0, NULL, MODEL(noise_time),
	 "seconds in [0.001, 1e6]: noise is the device's speed, one draw per piece of this many seconds of the run that every block in it meets (leave out for a draw per block)"},
	{S_MODEL, "change", K_CHANGE, 0, 0, 0, 0, NULL, 0,
	 "'T:F T:F ...', from T seconds on times are multiplied by F; T >= 0 strictly increasing, F > 0"},
	{S_MODEL, "fail", K_NUM, 0, 0, DBL_MAX, INFINITY, NULL, MODEL(fail_t),
	 "seconds >= 0, when the PU dies"},
	{S_MODEL, "fail_block", K_INT, 0, 0, 1e9, 0, NULL, MODEL(fail_block),
	 "an integer in [0, 1e9]: the PU's kernel fails on its K-th block of each run, which then goes to another PU and the PU is out of the run (fault injection; 0, the default: never)"},
	{S_OP, "after", K_TEXT, 0, 0, 0, 0, NULL, OP(after),
	 "names of [op] sections above this one, separated by spaces: they end before it starts"},
	{S_OP, "tasks", K_INT, 0, 0, 1e6, 1, NULL, OP(tasks),
	 "an integer in [0, 1e6]: tasks an instance has of this op (default 1)"},
	{S_OP, "out_mb", K_NUM, 0, 0, 1e6, 0, NULL, OP(out_mb),
	 "MB >= 0 that a task writes for the ops after it; moved by the PUs' transfer curves (x in MB) where they run in another memory (default 0)"},
	{S_OP, "cpu", K_NUM, 0, 1e-6, 1e9, -1, NULL, OP(ms[PLB__MODEL_CPU]),
	 "milliseconds > 0: a task's time on a PU of class cpu (absent: cpu PUs do not run it)"},
	{S_OP, "gpu", K_NUM, 0, 1e-6, 1e9, -1, NULL, OP(ms[PLB__MODEL_GPU]),
	 "milliseconds > 0: a task's time on a PU of class gpu (absent: gpu PUs do not run it)"},
	{S_OP, "mic", K_NUM, 0, 1e-6, 1e9, -1, NULL, OP(ms[PLB__MODEL_MIC]),
	 "milliseconds > 0: a task's time on a PU of class mic (absent: mic PUs do not run it)"},
};
#define NKEYS (int)(sizeof keys / sizeof keys[0])

_Static_assert(PLB__MAX_GRANTS == 2, "the pipeline key's message says 1 or 2");
_Static_assert(NKEYS <= NKEYS_MAX, "NKEYS_MAX is too small for the key table");

static const char *const classes[] = {
	[PLB__MODEL_CPU] = "cpu", [PLB__MODEL_GPU] = "gpu", [PLB__MODEL_MIC] = "mic",
};

#define SECTIONS_ACCEPTED "[run], [balancer], [network], [node NAME], [model NAME], [op NAME]"

/* Whether integer text s, read as d, is d exactly: digits past 2^53 are
 * rounded away by strtod (9007199254740993 reads as ...992). Text that is
 * not plain digits (1e6) is what strtod says. */
static int exact_integer(const char *s, double d)
{
	const char *q = s + (*s == '+' || *s == '-');
	if (!*q || strspn(q, "0123456789") != strlen(q))
		return 1;
	errno = 0;
	unsigned long long u = strtoull(q, NULL, 10);
	return !errno && fabs(d) <= 18446744073709549568.0 && (unsigned long long)fabs(d) == u;
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
		case K_SCHED:
			snprintf(p, sizeof ((struct plb__config *)0)->scheduler, "%s", k->sdef);
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
	else if (c->sect == S_OP)
		base = (char *)&c->cfg->ops[c->idx];
	return base + k->off;
}

static int set_change(struct ctx *c, const struct key *k, const char *v)
{
	struct plb__devmodel *m = &c->cfg->models[c->idx];
	int n = plb__cfg_count_words(v), i = 0;
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
		if (!colon || plb__cfg_parse_num(tok, &t[i]) || plb__cfg_parse_num(colon + 1, &f[i])) {
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

static int set_key(struct ctx *c, const struct key *k, const char *v)
{
	void *p = k->type == K_PUS ? NULL : field(c, k);
	double d;

	switch (k->type) {
	case K_NUM:
	case K_INT:
		if (plb__cfg_parse_num(v, &d))
			return fail(c, c->lineno, "%s %s: '%.*s' is not a number; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		if (d < k->lo || d > k->hi || ((k->flags & F_HI_OPEN) && d >= k->hi))
			return fail(c, c->lineno, "%s %s = %.*s is out of range; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		if (((k->flags & F_INTEGER) || k->type == K_INT) && d != floor(d))
			return fail(c, c->lineno, "%s %s = %.*s is not an integer; accepted: %s",
				    c->label, k->name, SHOW, v, k->accepts);
		if (((k->flags & F_INTEGER) || k->type == K_INT) && !exact_integer(v, d))
			return fail(c, c->lineno, "%s %s = %.*s is not held exactly (read as %.17g); accepted: %s",
				    c->label, k->name, SHOW, v, d, k->accepts);
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
		for (int i = 0; plb__policy_name(i); i++) {
			if (!strcmp(v, plb__policy_name(i))) {
				snprintf(p, sizeof c->cfg->policy, "%s", v);
				return 0;
			}
		}
	{
		char names[256];
		return fail(c, c->lineno, "%s %s: '%.*s' is not a policy; accepted: %s",
			    c->label, k->name, SHOW, v,
			    plb__policy_names(names, sizeof names, " | "));
	}
	case K_CLASS:
		for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
			if (!strcmp(v, classes[i])) {
				*(enum plb__model_class *)p = (enum plb__model_class)i;
				return 0;
			}
		}
		return fail(c, c->lineno, "%s %s: '%.*s' is not a PU class; accepted: %s",
			    c->label, k->name, SHOW, v, k->accepts);
	case K_SCHED: {
		enum plb__tasks_policy tp;
		if (!plb__tasks_policy_parse(v, &tp)) {
			snprintf(p, sizeof c->cfg->scheduler, "%s", v);
			return 0;
		}
		return fail(c, c->lineno, "%s %s: '%.*s' is not a scheduler; accepted: %s", c->label,
			    k->name, SHOW, v, plb__tasks_policies_accepted());
	}
	case K_TEXT:
		if (!(*(char **)p = strdup(v)))
			return oom(c);
		if (k->off == OP(after) && c->sect == S_OP)
			c->cfg->ops[c->idx].after_line = c->lineno;
		if (k->off == NODE(host) && c->sect == S_NODE)
			c->cfg->nodes[c->idx].host_line = c->lineno;
		if (k->off == NODE(couple) && c->sect == S_NODE)
			c->cfg->nodes[c->idx].couple_line = c->lineno;
		return 0;
	case K_PUS:
		return plb__cfg_set_pus(c, (enum plb__pu_kind)k->off, v, k->accepts);
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
	}
	return fail(c, c->lineno, "%s %s: unhandled key type", c->label, k->name);
}

static int param_index(const char *name)
{
	const char *pn, *doc;
	double def, lo, hi;

	for (int i = 0; plb__params_describe(i, &pn, &def, &lo, &hi, &doc) == 0; i++)
		if (!strcmp(pn, name))
			return i;
	return -1;
}

/* " did you mean X?" when one of the n names cand is near name, else "" */
static const char *did_you_mean(const char *name, const char *const *cand, int n, char *buf,
				size_t len)
{
	const char *near = plb__nearest(name, cand, n);
	if (near)
		snprintf(buf, len, " did you mean %s?", near);
	else
		buf[0] = '\0';
	return buf;
}

static int set_param(struct ctx *c, const char *name, const char *v)
{
	int i = param_index(name);
	char msg[900];

	if (i < 0) {
		const char *pn, *doc, *names[MAX_PARAMS];
		double def, lo, hi;
		size_t used = 0;
		int n = 0;
		char mean[80];
		msg[0] = '\0';
		for (int j = 0; plb__params_describe(j, &pn, &def, &lo, &hi, &doc) == 0 &&
				used < sizeof msg; j++) {
			int w = snprintf(msg + used, sizeof msg - used, "%s%s",
					 j ? ", " : "", pn);
			if (w < 0)
				break;
			used += (size_t)w;
			if (n < MAX_PARAMS)
				names[n++] = pn;
		}
		return fail(c, c->lineno, "[balancer] %.*s: unknown key;%s accepted in [balancer]: %s",
			    SHOW, name, did_you_mean(name, names, n, mean, sizeof mean), msg);
	}
	if (i < MAX_PARAMS) {
		if (c->pseen[i])
			return fail(c, c->lineno, "[balancer] %s: duplicate key (first set on line %d); accepted: each key once per section",
				    name, c->pseen[i]);
		c->pseen[i] = c->lineno;
	}
	if (plb__params_set(&c->cfg->params, name, v, msg, sizeof msg))
		return fail(c, c->lineno, "[balancer] %s", msg);
	return 0;
}

/* inih's handler: 1 to go on, 0 to stop. inih's own section name is cut at
 * 49 characters, so the section is the one our reader opened. */
static int handler(void *user, const char *section, const char *name,
		   const char *value)
{
	struct ctx *c = user;
	char list[700];
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
		const char *names[NKEYS];
		int n = 0;
		char mean[80];
		for (int j = 0; j < NKEYS; j++)
			if (keys[j].sect == c->sect)
				names[n++] = keys[j].name;
		key_list(c->sect, list, sizeof list);
		fail(c, c->lineno, "%s %.*s: unknown key;%s accepted in this section: %s",
		     c->label, SHOW, name, did_you_mean(name, names, n, mean, sizeof mean), list);
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

/* arr (n elements of `size` bytes in use, *cap allocated) with room for
 * one more: moved by realloc, or NULL (arr unchanged) when out of memory. */
static void *room_for_one(void *arr, int n, int *cap, size_t size)
{
	if (n < *cap)
		return arr;
	int ncap = *cap ? 2 * *cap : 8;
	void *na = realloc(arr, (size_t)ncap * size);
	if (na)
		*cap = ncap;
	return na;
}

/* [node NAME], [model NAME] or [op NAME], NAME = s[0, len) already
 * trimmed: checks NAME, refuses one already used, and appends a node, a
 * model or an op with its defaults. */
static int open_named(struct ctx *c, enum sect sect, const char *s, size_t len)
{
	struct plb__config *cfg = c->cfg;
	int n = sect == S_NODE ? cfg->nnodes : sect == S_MODEL ? cfg->nmodels : cfg->nops;
	const char *kind = sect == S_NODE ? "node" : sect == S_MODEL ? "model" : "op";

	if (!len)
		return fail(c, c->lineno, "[%s]: missing name; accepted: [%s NAME]", kind, kind);
	for (size_t i = 0; i < len; i++)
		if (isspace((unsigned char)s[i]))
			return fail(c, c->lineno, "[%s %.*s]: name contains a space; accepted: [%s NAME], NAME without spaces",
				    kind, (int)(len > SHOW ? SHOW : len), s, kind);
	for (int i = 0; i < n; i++) {
		const char *name = sect == S_NODE ? cfg->nodes[i].name :
				   sect == S_MODEL ? cfg->models[i].name : cfg->ops[i].name;
		int line = sect == S_NODE ? cfg->nodes[i].line :
			   sect == S_MODEL ? cfg->models[i].line : cfg->ops[i].line;
		if (strlen(name) == len && !memcmp(name, s, len))
			return fail(c, c->lineno, "[%s %s]: duplicate %s (first on line %d); accepted: one [%s NAME] per NAME",
				    kind, name, kind, line, kind);
	}
	if (sect == S_OP && n == PLB__TASKS_MAX_OPS)
		return fail(c, c->lineno, "[op %.*s]: more than %d ops; accepted: at most %d [op] sections",
			    (int)(len > SHOW ? SHOW : len), s, PLB__TASKS_MAX_OPS, PLB__TASKS_MAX_OPS);
	char *name = strndup(s, len);
	void *arr = !name ? NULL :
		    sect == S_NODE ? room_for_one(cfg->nodes, n, &c->cap_nodes, sizeof *cfg->nodes) :
		    sect == S_MODEL ? room_for_one(cfg->models, n, &c->cap_models, sizeof *cfg->models) :
				      room_for_one(cfg->ops, n, &c->cap_ops, sizeof *cfg->ops);
	if (!arr) {
		free(name);
		return oom(c);
	}
	c->idx = n;
	if (sect == S_NODE) {
		cfg->nodes = arr;
		cfg->nodes[cfg->nnodes++] = (struct plb__node){.name = name, .line = c->lineno};
		apply_defaults(S_NODE, &cfg->nodes[n]);
	} else if (sect == S_MODEL) {
		cfg->models = arr;
		cfg->models[cfg->nmodels++] = (struct plb__devmodel){.name = name, .line = c->lineno};
		apply_defaults(S_MODEL, &cfg->models[n]);
	} else {
		cfg->ops = arr;
		cfg->ops[cfg->nops++] = (struct plb__op){.name = name, .line = c->lineno};
		apply_defaults(S_OP, &cfg->ops[n]);
	}
	c->sect = sect;
	snprintf(c->label, sizeof c->label, "[%s %s]", kind, name);
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
		return open_named(c, S_NODE, s + rest, len - rest);
	if (starts_word(s, len, "model", &rest))
		return open_named(c, S_MODEL, s + rest, len - rest);
	if (starts_word(s, len, "op", &rest))
		return open_named(c, S_OP, s + rest, len - rest);
	return fail(c, c->lineno, "[%.*s]: unknown section; accepted: " SECTIONS_ACCEPTED,
		    (int)(len > SHOW ? SHOW : len), s);
}

/* The longest line a config file may have (a scenario of 1024 PUs has
 * lines of some KiB); a longer one, or a NUL byte, is not a config file
 * (plbsim /dev/zero grew by 140 MB/s and never ended). */
#define LINE_MAX_BYTES (1 << 20)

/* A new line has been read: check it and open its section if it is a
 * header, deciding "header" exactly as inih does. */
static int new_line(struct ctx *c)
{
	const char *s = c->buf;

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

/* The next line of c->f into c->buf, newline included: its length, 0 at
 * the end of the file, or -1 with the reason reported (a NUL byte, a line
 * past LINE_MAX_BYTES: found while reading, so nothing is read past them). */
static ssize_t next_line(struct ctx *c)
{
	size_t n = 0;
	int ch;
	while ((ch = getc(c->f)) != EOF) {
		if (ch == '\0') {
			plb__cfg_report(c, PLB_EINVAL, c->lineno + 1,
					"a NUL byte: not a text file; accepted: an INI file (see README.md)");
			return -1;
		}
		if (n + 2 > c->cap) {
			if (n + 2 > LINE_MAX_BYTES) {
				plb__cfg_report(c, PLB_EINVAL, c->lineno + 1,
						"a line longer than %d bytes; accepted: an INI file, lines up to that",
						LINE_MAX_BYTES);
				return -1;
			}
			size_t cap = c->cap ? 2 * c->cap : 256;
			char *b = realloc(c->buf, cap);
			if (!b) {
				oom(c);
				return -1;
			}
			c->buf = b;
			c->cap = cap;
		}
		c->buf[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	if (ferror(c->f)) {
		plb__cfg_report(c, PLB_EIO, c->lineno + 1, "cannot read: %s", strerror(errno));
		return -1;
	}
	if (n)
		c->buf[n] = '\0';
	return (ssize_t)n;
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
		ssize_t n = next_line(c);
		if (n <= 0)
			return NULL;
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

/* The [op] sections: each `after` name an op above it, each op a time on
 * some class. */
static int finish_ops(struct ctx *c)
{
	struct plb__config *cfg = c->cfg;
	for (int i = 0; i < cfg->nops; i++) {
		struct plb__op *o = &cfg->ops[i];
		int any = 0;
		for (int k = 0; k < PLB__OP_CLASSES; k++)
			any |= o->ms[k] > 0;
		if (!any)
			return fail(c, o->line, "[op %s]: no time on any class; accepted: cpu, gpu or mic = milliseconds (at least one)",
				    o->name);
		char *copy = o->after ? strdup(o->after) : NULL, *save = NULL;
		if (o->after && !copy)
			return oom(c);
		for (char *w = copy ? strtok_r(copy, " \t,", &save) : NULL; w;
		     w = strtok_r(NULL, " \t,", &save)) {
			int j = 0;
			while (j < i && strcmp(cfg->ops[j].name, w))
				j++;
			if (j == i) {
				int later = 0;
				for (int m = i; m < cfg->nops; m++)
					later |= !strcmp(cfg->ops[m].name, w);
				fail(c, o->after_line, "[op %s] after: '%.*s' %s; accepted: names of [op] sections above this one",
				     o->name, SHOW, w, later ? "is not above this op (the dataflow runs down the file)" :
				     "is no [op] section");
				free(copy);
				return c->rc;
			}
			o->after_mask |= (uint64_t)1 << j;
		}
		free(copy);
	}
	return 0;
}

/* Checks that need the whole file, then the PU list. */
static int finish(struct ctx *c)
{
	int rc = finish_ops(c);
	return rc ? rc : plb__cfg_finish_nodes(c);
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
	plb__params_init(&cfg->params);

	/* Long lines (1024-PU scenarios) need a growing heap buffer. */
	ini_use_stack = false;
	ini_allow_realloc = true;
	ini_max_line = LINE_MAX_BYTES + 3;     /* inih's room: a whole line always fits */
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
	for (int i = 0; i < c.cap_names * PLB__PU_NKIND; i++)
		free(c.names[i]);
	free(c.names);
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
		return plb__cfg_report(&c, PLB_EIO, 0, "cannot open: %s; accepted: a readable file",
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
		return plb__cfg_report(&c, PLB_ENOMEM, 0, "cannot read the text: %s", strerror(errno));
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
	for (int i = 0; i < cfg->nnodes; i++)
		plb__cfg_node_fini(&cfg->nodes[i]);
	for (int i = 0; i < cfg->nmodels; i++)
		model_fini(&cfg->models[i]);
	free(cfg->nodes);
	free(cfg->models);
	free(cfg->pus);
	free(cfg->path);
	free(cfg->models_file);
	for (int i = 0; i < cfg->ncouple; i++)
		free(cfg->couples[i].culprits);
	free(cfg->couples);
	for (int i = 0; i < cfg->nops; i++) {
		free(cfg->ops[i].name);
		free(cfg->ops[i].after);
	}
	free(cfg->ops);
	memset(cfg, 0, sizeof *cfg);
}
