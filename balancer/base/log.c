/* See log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/log.h"

int plb__log_level = PLB__LOG_WARN;
static char who[96] = "[?]";
static char host_short[64] = "?";
static _Thread_local char who_thread[96];
static _Atomic int progress_shown;     /* a line without its newline is on stderr */

void plb__log_init(int rank, const char *host)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	const char *env = getenv("PLB_LOG");
	int known = !env || !*env;
	for (int i = 0; env && i < 4; i++)
		if (!strcmp(env, names[i])) {
			plb__log_level = i;
			known = 1;
		}
	snprintf(host_short, sizeof host_short, "%s", host ? host : "?");
	host_short[strcspn(host_short, ".")] = '\0';
	if (rank >= 0)
		snprintf(who, sizeof who, "[%d@%s]", rank, host_short);
	else
		snprintf(who, sizeof who, "[%s]", host_short);
	static int warned;
	if (!known && rank <= 0 && !warned++)
		plb__log(PLB__LOG_WARN, "plb", "PLB_LOG=%.40s: not a level, kept at %s; accepted: error, warn, info, debug",
			 env, names[plb__log_level]);
}

void plb__log_thread(int rank)
{
	snprintf(who_thread, sizeof who_thread, "[%d@%s]", rank, host_short);
}

void plb__log_progress(int shown)
{
	progress_shown = shown;
}

void plb__log_write(int level, const char *module, const char *fmt, ...)
{
	static const char *const tags[] = {"error: ", "warning: ", "", ""};
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* over a progress line: cleared first (it is drawn again at its next
	 * update), in the same call so that no other line comes between */
	fprintf(stderr, "%s%s %s: %s%s\n", progress_shown ? "\r\033[K" : "",
		who_thread[0] ? who_thread : who, module, tags[level & 3], line);
}
