/* Report of a run: text and JSON (cJSON), one definition of the keys. */
#include <cjson/cJSON.h>
#include <math.h>

#include "balancer/balancer.h"
#include "runtime/config/report.h"

void plb__report_set_stats(struct plb__report *r, const struct plb__balancer_stats *st)
{
	r->blocks = st->blocks;
	r->training_blocks = st->training_blocks;
	r->gap_blocks = st->gap_blocks;
	r->returned_blocks = st->returned_blocks;
	r->redo_blocks = st->redo_blocks;
	r->redo_won = st->redo_won;
	r->solves = st->solves;
	r->solver_ms_mean = st->solves ? 1e3 * st->solve_s_total / (double)st->solves : 0;
	r->solver_ms_max = 1e3 * st->solve_s_max;
	r->pus_lost = st->pus_lost;
	r->pus_left_out = st->pus_left_out;
	r->speed_changes = st->speed_changes;
}

double plb__report_ratio(const struct plb__report *r)
{
	return r->lower_bound_s > 0 && isfinite(r->lower_bound_s)
	       ? r->makespan_s / r->lower_bound_s : NAN;
}

/* cJSON writes NaN/inf as null, which is what we want for "unknown". */
struct cJSON *plb__report_json(const struct plb__report *r)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "scenario", r->scenario ? r->scenario : "");
	cJSON_AddStringToObject(o, "policy", r->policy);
	cJSON_AddNumberToObject(o, "seed", (double)r->seed);
	cJSON_AddNumberToObject(o, "units", (double)r->units);
	cJSON_AddNumberToObject(o, "units_done", (double)r->units_done);
	cJSON_AddBoolToObject(o, "coverage_ok", r->coverage_ok);
	cJSON_AddNumberToObject(o, "makespan_s", r->makespan_s);
	cJSON_AddNumberToObject(o, "lower_bound_s", r->lower_bound_s);
	cJSON_AddNumberToObject(o, "eq_optimum_s", r->eq_optimum_s);
	cJSON_AddStringToObject(o, "bound_note", r->bound_note ? r->bound_note : "");
	if (r->link_bound_s > 0)
		cJSON_AddNumberToObject(o, "link_bound_s", r->link_bound_s);
	if (r->link_from) {
		cJSON_AddStringToObject(o, "link_from", r->link_from);
		cJSON_AddNumberToObject(o, "link_out_gbps", r->link_out_gbps);
		cJSON_AddNumberToObject(o, "link_in_gbps", r->link_in_gbps);
		cJSON_AddNumberToObject(o, "link_latency_us", r->link_latency_us);
	}
	cJSON_AddNumberToObject(o, "ratio", plb__report_ratio(r));
	cJSON_AddNumberToObject(o, "imbalance", r->imbalance);
	cJSON *idle = cJSON_AddArrayToObject(o, "idle_frac");
	cJSON *names = cJSON_AddArrayToObject(o, "pus");
	cJSON *units = cJSON_AddArrayToObject(o, "pu_units");
	cJSON *over = cJSON_AddArrayToObject(o, "overran");
	for (int i = 0; i < r->npu; i++) {
		cJSON_AddItemToArray(idle, cJSON_CreateNumber(r->idle_frac[i]));
		cJSON_AddItemToArray(names, cJSON_CreateString(r->pu_names[i]));
		cJSON_AddItemToArray(units, cJSON_CreateNumber(r->pu_units[i]));
		cJSON_AddItemToArray(over, cJSON_CreateNumber(r->overran ? (double)r->overran[i] : 0));
	}
	cJSON_AddNumberToObject(o, "blocks", (double)r->blocks);
	cJSON_AddNumberToObject(o, "training_blocks", (double)r->training_blocks);
	cJSON_AddNumberToObject(o, "gap_blocks", (double)r->gap_blocks);
	cJSON_AddNumberToObject(o, "returned_blocks", (double)r->returned_blocks);
	cJSON_AddNumberToObject(o, "redo_blocks", (double)r->redo_blocks);
	cJSON_AddNumberToObject(o, "redo_won", (double)r->redo_won);
	cJSON_AddNumberToObject(o, "solves", (double)r->solves);
	cJSON_AddNumberToObject(o, "solver_ms_mean", r->solver_ms_mean);
	cJSON_AddNumberToObject(o, "solver_ms_max", r->solver_ms_max);
	cJSON_AddNumberToObject(o, "pus_lost", r->pus_lost);
	if (r->pus_left_out)
		cJSON_AddNumberToObject(o, "pus_left_out", r->pus_left_out);
	cJSON_AddNumberToObject(o, "ranks_lost", r->ranks_lost);
	cJSON_AddNumberToObject(o, "speed_changes", r->speed_changes);
	cJSON_AddNumberToObject(o, "wall_s", r->wall_s);
	cJSON_AddNumberToObject(o, "bytes_sent", r->bytes_sent);
	cJSON_AddNumberToObject(o, "bytes_received", r->bytes_received);
	cJSON_AddNumberToObject(o, "warm_pus", r->warm_pus);
	cJSON_AddNumberToObject(o, "resident_bytes", r->resident_bytes);
	cJSON_AddNumberToObject(o, "unkept_bytes", r->unkept_bytes);
	cJSON_AddNumberToObject(o, "master_cpu_s", r->master_cpu_s);
	return o;
}

void plb__report_text(const struct plb__report *r, FILE *f)
{
	fprintf(f, "policy %s on %s (seed %llu)\n", r->policy,
		r->scenario ? r->scenario : "?", (unsigned long long)r->seed);
	fprintf(f, "  units          %llu of %llu done, coverage %s\n",
		(unsigned long long)r->units_done, (unsigned long long)r->units,
		r->coverage_ok ? "ok (every unit exactly once)" : "FAILED");
	fprintf(f, "  makespan       %.4f s\n", r->makespan_s);
	fprintf(f, "  lower bound    %.4f s (%s)\n", r->lower_bound_s,
		r->bound_note ? r->bound_note : "");
	if (r->link_bound_s > 0)
		fprintf(f, "  links          %.4f s for the bytes alone%s\n", r->link_bound_s,
			r->link_bound_s >= 0.99 * r->lower_bound_s ? ": the links, not the PUs, bound the run" : "");
	if (r->link_from && r->link_latency_us >= 0)
		fprintf(f, "  master's link  %.3g Gbit/s out, %.3g Gbit/s in, %.0f us one way (timed at start)\n",
			r->link_out_gbps, r->link_in_gbps, r->link_latency_us);
	else if (r->link_from)
		fprintf(f, "  master's link  %.3g Gbit/s each way ([network] link_gbps)\n", r->link_out_gbps);
	fprintf(f, "  ratio          %.4f\n", plb__report_ratio(r));
	fprintf(f, "  1-round optimum %.4f s\n", r->eq_optimum_s);
	fprintf(f, "  imbalance      %.4f (last - first finish) / makespan\n", r->imbalance);
	fprintf(f, "  blocks         %ld (%ld training, %ld gap, %ld returned by lost PUs)\n",
		r->blocks, r->training_blocks, r->gap_blocks, r->returned_blocks);
	if (plb__report_ratio(r) >= 8 && r->blocks > 0 && r->makespan_s > 0)
		fprintf(f, "  hint           the run took %.0fx its bound: a job this small is mostly fixed costs (start, messages, training blocks); give it more units, or fewer PUs\n",
			plb__report_ratio(r));
	fprintf(f, "  solves         %ld, %.3f ms mean, %.3f ms max\n", r->solves,
		r->solver_ms_mean, r->solver_ms_max);
	if (r->redo_blocks)
		fprintf(f, "  re-run         %ld blocks ran parts of late blocks again; "
			"%ld late blocks were finished by them first\n", r->redo_blocks, r->redo_won);
	if (r->warm_pus)
		fprintf(f, "  warm start     %d PUs started from the last run's models\n", r->warm_pus);
	if (isfinite(r->bytes_sent))
		fprintf(f, "  bytes          %.0f sent to workers, %.0f received\n", r->bytes_sent,
			r->bytes_received);
	if (r->resident_bytes > 0 || r->unkept_bytes > 0)
		fprintf(f, "  resident input %.0f bytes kept on the nodes, %.0f sent but over their budget\n",
			r->resident_bytes, r->unkept_bytes);
	if (isfinite(r->master_cpu_s) && r->blocks > 0 && r->makespan_s > 0)
		fprintf(f, "  master CPU     %.3f s (%.2f us a block, %.0f%% of the makespan)\n",
			r->master_cpu_s, 1e6 * r->master_cpu_s / (double)r->blocks,
			100 * r->master_cpu_s / r->makespan_s);
	if (r->pus_lost) {
		fprintf(f, "  PUs lost       %d", r->pus_lost);
		for (int i = 0, k = 0; r->lost_at && i < r->npu; i++)
			if (!isnan(r->lost_at[i]))
				fprintf(f, "%s%s at %.3f s", k++ ? ", " : ": ", r->pu_names[i], r->lost_at[i]);
		fputc('\n', f);
	}
	if (r->pus_left_out)
		fprintf(f, "  PUs left out   %d: each slowed its node more than it added (they ran without it)\n",
			r->pus_left_out);
	if (r->ranks_lost)
		fprintf(f, "  ranks lost     %d: %s; their blocks went to the others\n", r->ranks_lost,
			r->ranks_note ? r->ranks_note : "");
	if (r->speed_changes)
		fprintf(f, "  speed changes  %d detected by the models\n", r->speed_changes);
	fprintf(f, "  %-28s %10s %12s\n", "PU", "idle", "units");
	for (int i = 0; i < r->npu; i++) {
		if (r->lost_at && !isnan(r->lost_at[i]))
			fprintf(f, "  %-28s %10s %12.0f  (lost at %.3f s; idle %.1f%% before)\n",
				r->pu_names[i], "lost", r->pu_units[i], r->lost_at[i],
				100 * r->idle_frac[i]);
		else
			fprintf(f, "  %-28s %9.1f%% %12.0f\n", r->pu_names[i],
				100 * r->idle_frac[i], r->pu_units[i]);
	}
	for (int i = 0; r->overran && i < r->npu; i++)
		if (r->overran[i])
			fprintf(f, "  overran        %s: %ld block%s took longer than its model (this machine ran its real kernel slower): its times, and the ratio, are not the model's\n",
				r->pu_names[i], r->overran[i], r->overran[i] == 1 ? "" : "s");
}
