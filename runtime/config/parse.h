/* The config loader's internals, shared by config.c (the file reader, the
 * key table, the [run], [balancer], [network] and [model] sections),
 * node.c (the [node] sections and the PU list), devmodel.c (a model's
 * curves) and parse.c (the text helpers they all use). Not for other
 * folders. */
#ifndef PLB_CONFIG_PARSE_H
#define PLB_CONFIG_PARSE_H

#include <stdio.h>

#include "runtime/config/config.h"

enum sect { S_NONE, S_RUN, S_BALANCER, S_NETWORK, S_NODE, S_MODEL, S_OP };

#define NKEYS_MAX 64            /* rows of the key table, at most */
#define MAX_PARAMS 256          /* more than params.h will ever hold */
/* Values and names quoted in messages are cut here: enough to recognise. */
#define SHOW 60

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
	int idx;                /* node, model or op index */
	int sect_line;
	char label[96];         /* "[node A]", for messages */
	int seen[NKEYS_MAX];    /* line each key was set on, 0 if not yet */
	int pseen[MAX_PARAMS];  /* the same for [balancer] keys */
	int run_line, bal_line, net_line;
	int cap_nodes, cap_models, cap_ops;
	char **names;           /* per node and MODELS kind, the names to resolve
				 * after parsing: [node * PLB__PU_NKIND + kind] */
	int cap_names;          /* nodes names has room for */
	char *err;
	size_t errlen;
	int rc;
};

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
/* Record an error; only the first one is kept, as later ones are usually
 * its consequences. line <= 0: the error belongs to no line. Returns
 * c->rc. */
int plb__cfg_report(struct ctx *c, int rc, int line, const char *fmt, ...);
#define fail(c, line, ...) plb__cfg_report(c, PLB_ECONFIG, line, __VA_ARGS__)
#define oom(c) plb__cfg_report(c, PLB_ENOMEM, 0, "out of memory")

/* Words separated by spaces or tabs. */
int plb__cfg_count_words(const char *s);
/* A finite number filling exactly [s, s + len): 0, or -1. */
int plb__cfg_number(const char *s, size_t len, double *v);
/* The same for a whole string. */
int plb__cfg_parse_num(const char *s, double *v);

/* node.c: the key of kind k in the open [node] section has value v. */
int plb__cfg_set_pus(struct ctx *c, enum plb__pu_kind k, const char *v, const char *accepts);
/* node.c: after the whole file: model names resolved (and every model
 * used), at least one PU, and the emulated PU list. */
int plb__cfg_finish_nodes(struct ctx *c);
/* node.c: frees a node's fields. */
void plb__cfg_node_fini(struct plb__node *n);

#endif
