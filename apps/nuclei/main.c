/* plb-nuclei: nuclei segmentation and per-object features on the tiles of a
 * stained-tissue image, as a pipeline (plb_run_pipeline) of eleven
 * operations; each tile is an instance, each node schedules the tasks of
 * its tiles over its PUs (docs/PIPELINES.md). The image is drawn from a
 * seed with known nuclei (kernels/nuclei/nuclei.h).
 *
 *   mpirun -np K plb-nuclei --config FILE [--width PX] [--height PX]
 *          [--tile T] [--seed S] [--scheduler NAME] [--window N]
 *          [--runs K] [--verify] [--json]
 *
 * --verify checks every tile's output against the same operations run
 * one after the other in this process (to the bit), and the objects
 * found against the nuclei drawn (a drawn nucleus is found when one
 * object's centroid lies within half its radius; every object should be
 * one). Exit status 3 when the check fails. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apps/app.h"
#include "kernels/nuclei/nuclei.h"
#include "plb.h"

static const char *const schedulers[] = {"fcfs", "heft", "padas", "pams", NULL};

/* The serial reference: every operation of tile i in order. */
static int reference(const struct nuclei_params *pa, const uint8_t *in, size_t in_unit,
		     struct nuclei_out *out, void *scratch)
{
	struct plb_block b = {.offset = 0, .units = 1, .in = in, .out = out, .members = 1,
			      .scratch = scratch};
	memset(scratch, 0, nuclei_scratch_bytes(pa->tile));
	(void)in_unit;
	for (int m = 0; m < NUCLEI_FEATURES; m++) {
		b.op = m;
		int rc = nuclei_run_op(m, pa, &b);
		if (rc)
			return rc;
	}
	int tasks = ((int)out->reported + NUCLEI_FEAT_TASK - 1) / NUCLEI_FEAT_TASK;
	for (int k = 0; k < tasks; k++) {
		b.op = NUCLEI_FEATURES;
		b.task = k;
		b.tasks = tasks;
		int rc = nuclei_run_op(NUCLEI_FEATURES, pa, &b);
		if (rc)
			return rc;
	}
	return 0;
}

/* Found nuclei and false objects, against the truth. */
static int verify(const struct nuclei_params *pa, const uint8_t *img, size_t ntile,
		  const struct nuclei_out *out, const struct nuclei_truth *truth, size_t ntruth)
{
	size_t in_unit = (size_t)pa->tile * (size_t)pa->tile * 3, diff = 0, first = 0;
	struct nuclei_out *ref = malloc(sizeof *ref);
	void *scratch = malloc(nuclei_scratch_bytes(pa->tile));
	if (!ref || !scratch) {
		free(ref);
		free(scratch);
		fprintf(stderr, "plb-nuclei: out of memory for the check\n");
		return PLB_ENOMEM;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t t = 0; t < ntile; t++) {
		if (reference(pa, img + t * in_unit, in_unit, ref, scratch)) {
			fprintf(stderr, "plb-nuclei: the reference failed on tile %zu\n", t);
			diff++;
		} else if (memcmp(ref, &out[t], sizeof *ref)) {
			first = diff++ ? first : t;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ref_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	free(ref);
	free(scratch);
	/* each drawn nucleus against its tile's objects */
	size_t found = 0, objects = 0, matched = 0;
	unsigned char *used = calloc(ntile * NUCLEI_MAX_OBJ, 1);
	for (size_t k = 0; used && k < ntruth; k++) {
		const struct nuclei_truth *tr = &truth[k];
		const struct nuclei_out *o = &out[tr->tile];
		for (uint32_t j = 0; j < o->reported; j++) {
			double dx = o->obj[j].x - tr->x, dy = o->obj[j].y - tr->y;
			if (sqrt(dx * dx + dy * dy) <= tr->r / 2) {
				found++;
				matched += !used[tr->tile * NUCLEI_MAX_OBJ + j];
				used[tr->tile * NUCLEI_MAX_OBJ + j] = 1;
				break;
			}
		}
	}
	free(used);
	for (size_t t = 0; t < ntile; t++)
		objects += out[t].objects;
	double recall = ntruth ? (double)found / (double)ntruth : 1;
	double precision = objects ? (double)matched / (double)objects : 1;
	int ok = !diff && recall >= 0.95 && precision >= 0.95;
	fprintf(stderr, "plb-nuclei: verify: %s; %zu of %zu tiles as the serial reference (%.3f s on one core); %zu of %zu nuclei drawn found (%.1f%%), %zu objects, %.1f%% of them a drawn nucleus\n",
		ok ? "ok" : "FAILED", ntile - diff, ntile, ref_s, found, ntruth, 100 * recall, objects,
		100 * precision);
	if (diff)
		fprintf(stderr, "plb-nuclei: verify: first tile unlike the reference: %zu\n", first);
	return ok ? 0 : 3;
}

int main(int argc, char **argv)
{
	static const struct plb_kernel *kernels[NUCLEI_NOPS];
	for (int m = 0; m < NUCLEI_NOPS; m++)
		kernels[m] = &nuclei_kernels[m];
	struct plb_options o = {PLB_INIT, .kernels = kernels, .nkernels = NUCLEI_NOPS};
	struct app_args a = {.name = "plb-nuclei",
			     .synopsis = "mpirun -np K plb-nuclei --config FILE [options]",
			     .runs = 1, .seed = 1};
	long width = 2048, height = 2048, tile = 256, window = 0;
	const char *sched = NULL;
	const struct app_opt opts[] = {
		APP_LONG_OPT("--width", "PX", &width, 32, 1 << 20, "an integer in [32, 2^20]",
			     "the image's width, a multiple of --tile (default 2048)"),
		APP_LONG_OPT("--height", "PX", &height, 32, 1 << 20, "an integer in [32, 2^20]",
			     "its height, a multiple of --tile (default 2048)"),
		APP_LONG_OPT("--tile", "T", &tile, 32, 1024, "a multiple of 32 in [32, 1024]",
			     "a tile's side in pixels: a tile is an instance (default 256)"),
		APP_OPT_SEED(&a, "seed of the drawn image (default 1)"),
		APP_WORD_OPT("--scheduler", "NAME", &sched, schedulers, "fcfs, heft, padas or pams",
			     "the nodes' scheduler (default: the config's [run]\n"
			     "scheduler, else pams)"),
		APP_LONG_OPT("--window", "N", &window, 1, 1 << 20, "an integer in [1, 2^20]",
			     "tiles a node holds at once (default: the config's\n"
			     "[run] window, else 4 a task slot)"),
		APP_OPT_VERIFY(&a, "check every tile against the serial reference, and the\n"
				   "objects found against the nuclei drawn"),
		APP_OPT_RUNS(&a, "run the pipeline K times, one report each (default 1)"),
		APP_OPT_JSON(&a, "the report as one JSON object"),
	};
	int status = APP_COMMAND_LINE(&a, &o, opts, &argc, argv);
	if (status >= 0)
		return status;
	if (!o.config)
		return app_wrong(&a, 1, "--config FILE is required");
	if (tile % 32 || width % tile || height % tile)
		return app_wrong(&a, 1, "--tile %ld must be a multiple of 32 and divide --width %ld and --height %ld",
				 tile, width, height);

	plb_t *p;
	int irc = plb_init(&argc, &argv, &o, &p);
	if ((status = app_worker(p, irc)) >= 0)
		return status;
	int rc = 0, tx = (int)(width / tile), ty = (int)(height / tile);
	size_t ntile = (size_t)tx * (size_t)ty, in_unit = (size_t)tile * (size_t)tile * 3;
	size_t cells = (size_t)(tile / 32) * (size_t)(tile / 32) * ntile, ntruth = 0;
	uint8_t *img = malloc(ntile * in_unit);
	struct nuclei_out *out = calloc(ntile, sizeof *out);
	struct nuclei_truth *truth = malloc((cells + 1) * sizeof *truth);
	if (!img || !out || !truth) {
		fprintf(stderr, "plb-nuclei: out of memory for a %ld x %ld image\n", width, height);
		rc = PLB_ENOMEM;
		goto end;
	}
	nuclei_draw((uint64_t)a.seed, tx, ty, (int)tile, img, truth, cells, &ntruth);
	struct nuclei_params pa = {.tile = (int32_t)tile, .open_r = 1, .area_min = 30, .area_max = 1200};
	struct plb_op ops[NUCLEI_NOPS];
	nuclei_pipeline_ops(ops);
	struct plb_pipeline pl = {PLB_INIT, .ops = ops, .nops = NUCLEI_NOPS, .instances = ntile,
				  .shared = &pa, .shared_bytes = sizeof pa,
				  .in = img, .in_unit = in_unit, .out = out, .out_unit = sizeof *out,
				  .scratch_bytes = nuclei_scratch_bytes((int)tile),
				  .scheduler = sched, .window = (int)window};
	for (long r = 0; r < a.runs && !rc; r++) {
		if ((rc = plb_run_pipeline(p, &pl)))
			fprintf(stderr, "plb-nuclei: %s\n", plb_errmsg(p));
		else
			rc = plb_report(p, stdout, a.json);
	}
	fflush(stdout);
	if (!rc && a.verify)
		rc = verify(&pa, img, ntile, out, truth, ntruth);
end:
	free(img);
	free(out);
	free(truth);
	return app_end(p, rc);
}
