/* What the bundled apps (plb-mm, plb-bs) share: the command-line options
 * they have in common, a worker rank's path and the loop of runs. Not part
 * of plb's API (an app of your own writes these few lines itself, as the
 * README's example does); header-only, so each app stays one program. */
#ifndef PLB_APPS_APP_H
#define PLB_APPS_APP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plb.h"

struct app_args {
	const char *name;       /* "plb-bs": the prefix of its messages */
	void (*usage)(FILE *f);
	int say;                /* this rank prints usage and command-line errors */
	long runs, seed;
	int verify, json;
	int dbl;                /* --prec double (the default) or single */
	int fixed;              /* the app has no --runs nor --prec (its runs and
				 * precision are its own) */
};

/* v as an integer in [lo, hi] into *out; else says what is accepted and
 * returns -1. */
static inline int app_long(const struct app_args *a, const char *opt, const char *v, long lo,
			   long hi, const char *accepted, long *out)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi) {
		if (a->say)
			fprintf(stderr, "%s: %s %s: accepted: %s\n", a->name, opt, v, accepted);
		return -1;
	}
	*out = x;
	return 0;
}

/* An option the app does not know, or one without its value. */
static inline int app_unknown(const struct app_args *a, const char *opt)
{
	if (a->say) {
		fprintf(stderr, "%s: %s: unknown option or missing value\n", a->name, opt);
		a->usage(stderr);
	}
	return plb_usage_error();
}

enum { APP_NOT_MINE, APP_TAKEN, APP_EXIT };

/* argv[*i] if it is an option every bundled app has: --help, --verify,
 * --json, --runs K, --seed S, --prec single|double. Returns APP_TAKEN (*i
 * is past its value), APP_NOT_MINE, or APP_EXIT: the app returns *status
 * at once (0 after --help, plb_usage_error() after a bad value, said). */
static inline int app_common(struct app_args *a, int argc, char **argv, int *i, int *status)
{
	const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
		if (a->say)
			a->usage(stdout);
		*status = 0;
		return APP_EXIT;
	}
	if (!strcmp(o, "--verify") || !strcmp(o, "--json")) {
		*(o[2] == 'v' ? &a->verify : &a->json) = 1;
		return APP_TAKEN;
	}
	if (!v || (a->fixed && (!strcmp(o, "--runs") || !strcmp(o, "--prec"))))
		return APP_NOT_MINE;
	int bad;
	if (!strcmp(o, "--runs"))
		bad = app_long(a, o, v, 1, 1000000, "an integer in [1, 1000000]", &a->runs);
	else if (!strcmp(o, "--seed"))
		bad = app_long(a, o, v, 0, 1L << 62, "an integer >= 0", &a->seed);
	else if (!strcmp(o, "--prec")) {
		bad = strcmp(v, "double") && strcmp(v, "single");
		if (bad && a->say)
			fprintf(stderr, "%s: --prec %s: accepted: single or double\n", a->name, v);
		a->dbl = !strcmp(v, "double");
	} else {
		return APP_NOT_MINE;
	}
	++*i;
	if (!bad)
		return APP_TAKEN;
	*status = plb_usage_error();
	return APP_EXIT;
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
