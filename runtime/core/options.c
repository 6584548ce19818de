/* plb_options_parse and plb_launch_rank (see plb.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plb.h"
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

static int bad(const char *fmt, const char *arg)
{
	if (plb_launch_rank() == 0) {
		fputs("plb: ", stderr);
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
	return PLB_EINVAL;
}

int plb_options_parse(int *argc, char **argv, struct plb_options *o)
{
	static const char *const names[] = {"--config", "--policy", "--set", "--models", "--trace"};
	const int nnames = (int)(sizeof names / sizeof *names);
	int nset = 0, out = 1;

	while (o->set[nset])
		nset++;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i], *val = NULL;
		int k;
		if (!strcmp(a, "--quiet")) {
			o->quiet = 1;
			continue;
		}
		if (!strcmp(a, "--progress")) {
			o->progress = 1;
			continue;
		}
		for (k = 0; k < nnames; k++) {
			size_t n = strlen(names[k]);
			if (!strncmp(a, names[k], n) && (a[n] == '\0' || a[n] == '=')) {
				val = a[n] == '=' ? a + n + 1 : NULL;
				break;
			}
		}
		if (k == nnames) {
			argv[out++] = argv[i];  /* the app's */
			continue;
		}
		if (!val) {
			if (i + 1 >= *argc)
				return bad("%s needs a value; accepted: --config FILE, --policy NAME, --set KEY=VALUE, --models FILE, --trace FILE", a);
			val = argv[++i];
		}
		if (!*val)
			return bad("%s: empty value", names[k]);
		if (k == 0)
			o->config = val;
		else if (k == 1)
			o->policy = val;
		else if (k == 3)
			o->models = val;
		else if (k == 4)
			o->trace = val;
		else if (nset == PLB_MAX_SET)
			return bad("--set %s: too many; accepted: at most 32 --set options", val);
		else
			o->set[nset++] = val, o->set[nset] = NULL;
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}
