/* Matching config [node] sections to worker ranks (see config.h). Pure: no
 * MPI, tested on its own. */
#include <stdio.h>
#include <string.h>

#include "runtime/config/config.h"

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
