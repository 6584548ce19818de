/* The figures every run reports (docs/DESIGN.md, "Measuring balance"), as a text
 * table and as one JSON object, the same for plbsim and the runtime. */
#ifndef PLB_REPORT_H
#define PLB_REPORT_H

#include <stdint.h>
#include <stdio.h>

struct cJSON;
struct plb__balancer_stats;

struct plb__report {
	const char *scenario;
	const char *policy;
	uint64_t seed;
	uint64_t units, units_done;
	int coverage_ok;
	double makespan_s;
	double lower_bound_s;   /* T_lb; INFINITY when no PU set can finish */
	double eq_optimum_s;    /* T_eq, single-round optimum */
	const char *bound_note; /* how the bound was obtained */
	double link_bound_s;    /* the links' own bound (their bytes over their
				 * bandwidth); 0: links not modelled */
	const char *link_from;  /* runtime: where the master's link's rate came
				 * from, "config" or "timed" (at start); NULL:
				 * not known (and plbsim) */
	double link_out_gbps, link_in_gbps;     /* ... its rate each way */
	double link_latency_us; /* ... one way, as timed (NAN: not timed) */
	double imbalance;
	int npu;
	const char *const *pu_names;
	const double *idle_frac;        /* npu */
	const double *lost_at;  /* npu: when each PU was lost (s), NAN if it was
				 * not; NULL: not known */
	const double *pu_units;         /* npu: units each PU completed */
	const long *overran;    /* npu: blocks an emulated PU ran past its model
				 * (the host was slower than the model); NULL: none */
	long blocks, training_blocks, gap_blocks, returned_blocks;
	long redo_blocks, redo_won;     /* late blocks run again, and won by the re-run */
	long solves;
	double solver_ms_mean, solver_ms_max;
	int pus_lost;
	int pus_left_out;       /* PUs that cost their node more than they added */
	int ranks_lost;         /* runtime: worker ranks taken out for silence */
	const char *ranks_note; /* ... which, where and when (NULL: none) */
	int speed_changes;      /* detected by the balancer's models */
	double wall_s;          /* wall time of the run itself (simulator or runtime) */
	double bytes_sent;      /* runtime: messages to the workers (headers,
				 * shared data, input); NAN in the simulator */
	double bytes_received;  /* runtime: from them (output, accumulators) */
	int warm_pus;           /* PUs whose model came from an earlier run */
	double resident_bytes;  /* runtime: input the nodes keep after the run */
	double unkept_bytes;    /* runtime: input sent that no budget could keep */
	double master_cpu_s;    /* runtime: CPU seconds of the master's thread in the run
				 * (its loop, the balancer, packing); NAN in the simulator */
};

/* The balancer's counts (blocks, solves, solver time, PUs lost...) into r. */
void plb__report_set_stats(struct plb__report *r, const struct plb__balancer_stats *st);
/* ratio = makespan / lower bound. */
double plb__report_ratio(const struct plb__report *r);
/* Build the JSON object (caller frees with cJSON_Delete); NULL on ENOMEM. */
struct cJSON *plb__report_json(const struct plb__report *r);
/* A human-readable report of one run. */
void plb__report_text(const struct plb__report *r, FILE *f);

#endif
