/* plb_options_parse (and its strict form), plb_options_usage,
 * plb_options_suggest and plb_launch_rank (see plb.h): plb's command-line
 * options, read from one table that also prints them and suggests the
 * nearest of them for a mistyped one. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "balancer/base/words.h"
#include "plb.h"
#include "runtime/core/rt.h"
#include "runtime/transport/transport.h"

int plb_launch_rank(void)
{
	const char *v = plb__launcher_rank();
	return v ? atoi(v) : 0;
}

int plb_usage_error(void)
{
	if (plb_launch_rank() != 0)
		nanosleep(&(struct timespec){1, 0}, NULL);
	return 2;
}

enum opt_kind { OPT_TEXT, OPT_FLAG, OPT_SET };

/* plb's options: where each goes in struct plb_options, and its line in
 * plb_options_usage. */
static const struct opt {
	const char *name, *value, *doc;
	enum opt_kind kind;
	size_t at;              /* offsetof(struct plb_options, ...) */
} opts[] = {
	{"--config", "FILE", "nodes and devices: the INI file (required; README.md)", OPT_TEXT,
	 offsetof(struct plb_options, config)},
	{"--policy", "NAME", "the balancing policy (default: the file's [run] policy)", OPT_TEXT,
	 offsetof(struct plb_options, policy)},
	{"--set", "KEY=VALUE", "a [balancer] parameter (repeatable)", OPT_SET, 0},
	{"--models", "FILE", "read fitted models from FILE at start, write them at the end", OPT_TEXT,
	 offsetof(struct plb_options, models)},
	{"--trace", "FILE", "write every run's blocks to FILE as trace events (Perfetto, plb-plot)", OPT_TEXT,
	 offsetof(struct plb_options, trace)},
	{"--progress", NULL, "a progress line on stderr for runs past a second, also off a terminal (a plain line every 5 s)", OPT_FLAG,
	 offsetof(struct plb_options, progress)},
	{"--quiet", NULL, "errors only on stderr (no warnings, no progress line)", OPT_FLAG,
	 offsetof(struct plb_options, quiet)},
};
#define NOPTS (int)(sizeof opts / sizeof *opts)

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int bad(const char *fmt, ...)
{
	if (plb_launch_rank() == 0) {
		va_list ap;
		va_start(ap, fmt);
		fputs("plb: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
	return PLB_EINVAL;
}

/* "--config FILE, --policy NAME, ...": the options that take a value. */
static const char *with_values(char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int k = 0; k < NOPTS && n < len; k++)
		if (opts[k].value)
			n += (size_t)snprintf(buf + n, len - n, "%s%s %s", n ? ", " : "", opts[k].name,
					      opts[k].value);
	return buf;
}

void plb_options_usage(FILE *f)
{
	fputs("plb options (also as --option=value):\n", f);
	for (int k = 0; k < NOPTS; k++) {
		char left[32];
		snprintf(left, sizeof left, "%s%s%s", opts[k].name, opts[k].value ? " " : "",
			 opts[k].value ? opts[k].value : "");
		fprintf(f, "  %-18s %s\n", left, opts[k].doc);
	}
}

int plb_options_parse(int *argc, char **argv, struct plb_options *o)
{
	char why[256];
	int nset = 0, out = 1;

	if (plb__abi_check(o->abi, "struct plb_options", why, sizeof why))
		return bad("%s", why);
	while (o->set[nset])
		nset++;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i], *val = NULL;
		int k;
		for (k = 0; k < NOPTS; k++) {
			size_t n = strlen(opts[k].name);
			if (!strncmp(a, opts[k].name, n) && (a[n] == '\0' || (a[n] == '=' && opts[k].value))) {
				val = a[n] == '=' ? a + n + 1 : NULL;
				break;
			}
		}
		if (k == NOPTS) {
			argv[out++] = argv[i];  /* the app's */
			continue;
		}
		const struct opt *op = &opts[k];
		if (op->kind == OPT_FLAG) {
			*(int *)((char *)o + op->at) = 1;
			continue;
		}
		if (!val) {
			if (i + 1 >= *argc)
				return bad("%s needs a value; accepted: %s", a, with_values(why, sizeof why));
			val = argv[++i];
		}
		if (!*val)
			return bad("%s: empty value", op->name);
		if (op->kind == OPT_TEXT)
			*(const char **)((char *)o + op->at) = val;
		else if (nset == PLB_MAX_SET)
			return bad("--set %s: too many; accepted: at most 32 --set options", val);
		else
			o->set[nset++] = val, o->set[nset] = NULL;
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

const char *plb_options_suggest(const char *arg, const char *const *more, int nmore)
{
	const char *cand[NOPTS + 64];
	int n = 0;
	char name[128];
	if (!arg)
		return NULL;
	/* --opt=value: the name alone */
	snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
	for (int k = 0; k < NOPTS; k++)
		cand[n++] = opts[k].name;
	cand[n++] = "--help";
	for (int k = 0; more && k < nmore && n < (int)(sizeof cand / sizeof *cand); k++)
		cand[n++] = more[k];
	return plb__nearest(name, cand, n);
}

int plb_options_parse_strict(int *argc, char **argv, struct plb_options *o)
{
	int rc = plb_options_parse(argc, argv, o);
	if (rc)
		return rc;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			break;          /* what follows is the app's, as it is */
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			if (plb_launch_rank() == 0) {
				printf("usage: %s --config FILE [plb options]\n", argv[0] ? argv[0] : "app");
				plb_options_usage(stdout);
			}
			return 1;
		}
		if (a[0] == '-' && a[1]) {
			const char *near = plb_options_suggest(a, NULL, 0);
			char list[256];
			size_t n = 0;
			list[0] = '\0';
			for (int k = 0; k < NOPTS && n < sizeof list; k++)
				n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "",
						      opts[k].name);
			if (near)
				return bad("%s: unknown option; did you mean %s? accepted: %s, --help", a, near,
					   list);
			return bad("%s: unknown option; accepted: %s, --help", a, list);
		}
	}
	return 0;
}
