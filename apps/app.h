/* What the bundled apps share: their command line read from a table of
 * options (which also prints their usage, with plb's own options from
 * plb_options_usage), a worker rank's path and the loop of runs. Not part
 * of plb's API (an app of your own writes these few lines itself, as the
 * README's example does); header-only, so each app stays one program. */
#ifndef PLB_APPS_APP_H
#define PLB_APPS_APP_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plb.h"

/* What every bundled app has, filled by the table's common options. */
struct app_args {
	const char *name;       /* "plb-bs": the prefix of its messages */
	const char *synopsis;   /* its usage line after "usage: " */
	int say;                /* this rank prints usage and command-line errors
				 * (the launcher's first: app_command_line) */
	long runs, seed;
	int verify, json;
	const char *prec;       /* --prec: "double" (the default) or "single" */
	const struct app_opt *opts;     /* its options (app_parse) */
	int nopts;
};

enum app_kind {
	APP_FLAG,               /* at: int, set to 1 */
	APP_LONG,               /* at: long, in [lo, hi] */
	APP_REAL,               /* at: double, finite, in [lo, hi] */
	APP_TEXT,               /* at: const char *, any text */
	APP_WORD,               /* at: const char *, one of words */
};

/* One option of an app: its name, the value it takes ("N"; NULL for a
 * flag), what it does (lines apart by \n), where it goes and what it
 * takes (accepted: what a bad value is told). */
struct app_opt {
	const char *name, *value, *doc;
	enum app_kind kind;
	void *at;
	double lo, hi;
	const char *accepted;
	const char *const *words;       /* APP_WORD: NULL-ended */
};

/* A table's entries, one kind each. */
#define APP_LONG_OPT(name, value, at, lo, hi, accepted, doc) \
	{name, value, doc, APP_LONG, at, lo, hi, accepted, NULL}
#define APP_REAL_OPT(name, value, at, lo, hi, accepted, doc) \
	{name, value, doc, APP_REAL, at, lo, hi, accepted, NULL}
#define APP_TEXT_OPT(name, value, at, doc) {name, value, doc, APP_TEXT, at, 0, 0, NULL, NULL}
#define APP_WORD_OPT(name, value, at, words, accepted, doc) \
	{name, value, doc, APP_WORD, at, 0, 0, accepted, words}
#define APP_FLAG_OPT(name, at, doc) {name, NULL, doc, APP_FLAG, at, 0, 0, NULL, NULL}

/* The options most apps have: each takes its own text where it differs. */
static const char *const app_precs[] = {"single", "double", NULL};
#define APP_OPT_VERIFY(a, doc) APP_FLAG_OPT("--verify", &(a)->verify, doc)
#define APP_OPT_JSON(a, doc) APP_FLAG_OPT("--json", &(a)->json, doc)
#define APP_OPT_SEED(a, doc) APP_LONG_OPT("--seed", "S", &(a)->seed, 0, 0x1p62, "an integer >= 0", doc)
#define APP_OPT_RUNS(a, doc) \
	APP_LONG_OPT("--runs", "K", &(a)->runs, 1, 1000000, "an integer in [1, 1000000]", doc)
#define APP_OPT_PREC(a) \
	APP_WORD_OPT("--prec", "P", &(a)->prec, app_precs, "single or double", \
		     "single or double (default double)")

/* The usage: its line, each option of the app's table, plb's options. */
static inline void app_usage(const struct app_args *a, FILE *f)
{
	fprintf(f, "usage: %s\n", a->synopsis);
	for (int k = 0; k < a->nopts; k++) {
		const struct app_opt *o = &a->opts[k];
		char left[40];
		snprintf(left, sizeof left, "%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
		fprintf(f, "  %-18s ", left);
		for (const char *d = o->doc; *d; d++) {
			fputc(*d, f);
			if (*d == '\n')
				fprintf(f, "%21s", "");
		}
		fputc('\n', f);
	}
	plb_options_usage(f);
}

/* A command-line mistake: says it (with the usage where asked) and gives
 * the exit status (plb_usage_error). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int app_wrong(const struct app_args *a, int usage, const char *fmt, ...)
{
	if (a->say) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "%s: ", a->name);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
		if (usage)
			app_usage(a, stderr);
	}
	return plb_usage_error();
}

/* Value v of option o into o->at: 0, or -1 if it is not one o takes. */
static inline int app_take(const struct app_opt *o, const char *v)
{
	char *end;
	errno = 0;
	switch (o->kind) {
	case APP_LONG: {
		long x = strtol(v, &end, 10);
		if (errno || end == v || *end || x < (long)o->lo || x > (long)o->hi)
			return -1;
		*(long *)o->at = x;
		return 0;
	}
	case APP_REAL: {
		double x = strtod(v, &end);
		if (errno || end == v || *end || !isfinite(x) || x < o->lo || x > o->hi)
			return -1;
		*(double *)o->at = x;
		return 0;
	}
	case APP_WORD:
		for (int i = 0; o->words[i]; i++)
			if (!strcmp(v, o->words[i])) {
				*(const char **)o->at = o->words[i];
				return 0;
			}
		return -1;
	case APP_TEXT:
		*(const char **)o->at = v;
		return 0;
	case APP_FLAG:
		break;
	}
	return -1;
}

/* The app's command line (what plb_options_parse left) against its table
 * a->opts: each option in it takes its value (--opt V); --help prints the
 * usage. Returns -1 to go on, or the exit status to return at once: 0
 * after --help, plb_usage_error() after a mistake, which it says. */
static inline int app_parse(struct app_args *a, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *name = argv[i];
		if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
			if (a->say)
				app_usage(a, stdout);
			return 0;
		}
		const struct app_opt *o = NULL;
		for (int k = 0; k < a->nopts && !o; k++)
			if (!strcmp(name, a->opts[k].name))
				o = &a->opts[k];
		if (o && o->value && i + 1 >= argc)
			return app_wrong(a, 1, "%s needs a value (%s)", name, o->value);
		if (!o) {
			const char *names[64];
			int n = 0;
			for (int k = 0; k < a->nopts && n < 64; k++)
				names[n++] = a->opts[k].name;
			const char *near = plb_options_suggest(name, names, n);
			if (near)
				return app_wrong(a, 1, "%s: unknown option; did you mean %s?", name, near);
			return app_wrong(a, 1, "%s: unknown option", name);
		}
		if (!o->value) {
			*(int *)o->at = 1;
			continue;
		}
		const char *v = argv[++i];
		if (app_take(o, v))
			return app_wrong(a, 0, "%s %s: accepted: %s", name, v,
					 o->accepted ? o->accepted : "a value");
	}
	return -1;
}

/* The whole command line: plb's options into o, then the app's, those of
 * its table opts (n of them) into what they point at. Returns -1 to go
 * on, or the exit status to return at once (app_parse). */
static inline int app_command_line(struct app_args *a, struct plb_options *o,
				   const struct app_opt *opts, int n, int *argc, char **argv)
{
	a->opts = opts;
	a->nopts = n;
	a->say = plb_launch_rank() == 0;
	if (plb_options_parse(argc, argv, o))
		return plb_usage_error();
	return app_parse(a, *argc, argv);
}
#define APP_COMMAND_LINE(a, o, opts, argc, argv) \
	app_command_line(a, o, opts, (int)(sizeof opts / sizeof *opts), argc, argv)

/* Option opt's file (path; NULL: not asked for) can be written, checked
 * on the first rank before the run, so that a bad path fails at start, not
 * after the job: 0, or PLB_EIO after saying why. Nothing is created. */
static inline int app_writable(const struct app_args *a, const char *opt, const char *path)
{
	char why[600];
	if (!path || !a->say || !plb_check_writable(path, why, sizeof why))
		return 0;
	fprintf(stderr, "%s: %s %s\n", a->name, opt, why);
	return PLB_EIO;
}

/* After plb_init: a worker rank (or a failed start) serves, finalizes and
 * gets its exit status here; the master gets -1 and goes on. */
static inline int app_worker(plb_t *p, int init_rc)
{
	if (!init_rc && plb_is_master(p))
		return -1;
	if (!init_rc)
		init_rc = plb_serve(p);
	int frc = plb_finalize(p);
	return init_rc || frc ? 1 : 0;
}

/* The master's end: finalizes (plb_finalize logs what fails there: p is
 * gone after it), and the exit status: 3 when the app's check failed
 * (rc 3), 1 on any other error, else 0. */
static inline int app_end(plb_t *p, int rc)
{
	int frc = plb_finalize(p);
	return rc == 3 ? 3 : rc || frc ? 1 : 0;
}

/* a->runs runs of job, one report each. With more than one, the nodes
 * keep the input they are sent, and from the second run on it and the
 * shared data are unchanged: later runs send a node only what it lacks. */
static inline int app_runs(plb_t *p, struct plb_job *job, const struct app_args *a)
{
	for (long r = 0; r < a->runs; r++) {
		if (a->runs > 1)
			job->in_mode = PLB_IN_KEEP | (r ? PLB_IN_UNCHANGED | PLB_SHARED_UNCHANGED : 0);
		int rc = plb_run(p, job);
		if (rc) {
			fprintf(stderr, "%s: %s\n", a->name, plb_errmsg(p));
			return rc;
		}
		if ((rc = plb_report(p, stdout, a->json)))
			return rc;
	}
	fflush(stdout);         /* the reports whole before anything on stderr */
	return 0;
}

#endif
