/* Fitted models kept from one plb_run to the next (an iterative app runs
 * one kernel on one domain many times): after a run every PU's model
 * samples are kept under the run's kind - kernel, unit sizes and the
 * job's signature - and the next run of that kind starts its balancer
 * from them, so it does not train again ([run] keep_models). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/rt.h"

#define KEEP_MAX 256            /* samples kept per PU (the model's window is smaller) */

const char *plb__kept_key(const struct plb_job *job, char *buf, size_t len)
{
	snprintf(buf, len, "%s|%zu|%zu|%s", job->kernel, job->in_unit, job->out_unit,
		 job->signature ? job->signature : "");
	return buf;
}

static struct plb__kept *find(struct plb *p, const char *key)
{
	for (int i = 0; i < p->nkept; i++)
		if (!strcmp(p->kept[i].key, key))
			return &p->kept[i];
	return NULL;
}

int plb__kept_warm(struct plb *p, const char *key, struct plb_balancer *b)
{
	const struct plb__kept *k = find(p, key);
	int warmed = 0;
	for (int i = 0; k && i < p->npu; i++) {
		const struct plb__kept_pu *u = &k->pu[i];
		if (!u->n)
			continue;
		int rc = plb_balancer_model_set(b, i, u->s, u->n, u->cliff);
		if (rc)
			return rc;
		warmed++;
	}
	return warmed;
}

static void free_pus(struct plb__kept_pu *pu, int npu)
{
	for (int i = 0; pu && i < npu; i++)
		free(pu[i].s);
	free(pu);
}

int plb__kept_store(struct plb *p, const char *key, const struct plb_balancer *b,
		    const int *lost)
{
	struct plb__kept_pu *pu = calloc((size_t)p->npu, sizeof *pu);
	struct plb_model_sample s[KEEP_MAX];
	if (!pu)
		return PLB_ENOMEM;
	for (int i = 0; i < p->npu; i++) {
		int n = lost[i] ? 0 : plb_balancer_model_get(b, i, s, KEEP_MAX, &pu[i].cliff);
		if (n > KEEP_MAX)
			n = KEEP_MAX;
		if (n <= 0)
			continue;
		if (!(pu[i].s = malloc((size_t)n * sizeof *s))) {
			free_pus(pu, p->npu);
			return PLB_ENOMEM;
		}
		memcpy(pu[i].s, s, (size_t)n * sizeof *s);
		pu[i].n = n;
	}
	struct plb__kept *k = find(p, key);
	if (!k) {
		struct plb__kept *grown = realloc(p->kept, (size_t)(p->nkept + 1) * sizeof *grown);
		char *dup = strdup(key);
		if (!grown || !dup) {
			if (grown)
				p->kept = grown;
			free(dup);
			free_pus(pu, p->npu);
			return PLB_ENOMEM;
		}
		p->kept = grown;
		k = &p->kept[p->nkept++];
		*k = (struct plb__kept){.key = dup};
	}
	free_pus(k->pu, p->npu);
	k->pu = pu;
	return 0;
}

void plb__kept_free(struct plb *p)
{
	for (int i = 0; i < p->nkept; i++) {
		free(p->kept[i].key);
		free_pus(p->kept[i].pu, p->npu);
	}
	free(p->kept);
	p->kept = NULL;
	p->nkept = 0;
}
