/* plb-nuclei: nuclei segmentation and per-object features on the tiles of
 * a stained-tissue image (haematoxylin and eosin), as a pipeline of
 * operations in the three groups of Teodoro et al.'s analysis: regular
 * access (RGB to grey, colour deconvolution, morphological open, Sobel,
 * Otsu's threshold), irregular (morphological reconstruction, fill holes,
 * distance transform) and atomics (area threshold, connected-component
 * labelling). The image is drawn from a seed with known nuclei
 * (nuclei_draw), so a run can be checked against the truth.
 *
 * A tile is T x T RGB pixels (an instance of the pipeline: its input);
 * its output is struct nuclei_out; its scratch (struct nuclei_scratch's
 * layout, nuclei_scratch_bytes) holds the images between the operations.
 * The image operations are OpenCV's (nuclei_opencv.cpp, behind the C
 * functions nuclei_cv_*); colour deconvolution and the features are plain
 * C (nuclei_cpu.c). */
#ifndef PLB_KERNELS_NUCLEI_H
#define PLB_KERNELS_NUCLEI_H

#include <stddef.h>
#include <stdint.h>

#include "plb.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NUCLEI_MAX_OBJ 1024     /* objects a tile reports (a tile of 1024 has about 600); more are counted */
#define NUCLEI_FEAT_TASK 16     /* objects a features task computes */

/* What every tile shares (the pipeline's shared data). */
struct nuclei_params {
	int32_t tile;           /* T */
	int32_t open_r;         /* the opening's disc radius, pixels */
	int32_t area_min, area_max;     /* objects kept, pixels */
};

struct nuclei_obj {
	float x, y;             /* centroid in the tile, pixels */
	float area;             /* pixels */
	float mean_h;           /* mean haematoxylin (0-255) */
	float mean_grad;        /* mean Sobel gradient magnitude of the grey image */
	float radius;           /* largest distance to the background inside it */
};

/* A tile's output. */
struct nuclei_out {
	uint32_t objects;       /* found (all of them) */
	uint32_t reported;      /* in obj: min(objects, NUCLEI_MAX_OBJ) */
	uint32_t pad[2];
	struct nuclei_obj obj[NUCLEI_MAX_OBJ];
};

/* A tile's scratch: images of T x T, and the labelling's statistics. */
struct nuclei_scratch {
	uint8_t *gray, *h, *marker, *recon, *mask, *clean;
	int32_t *labels;
	float *dist, *grad;
	int32_t *nobj;          /* labels 1 .. nobj */
	int32_t *stats;         /* (NUCLEI_MAX_OBJ + 1) x 5: left, top, width, height, area */
	double *cent;           /* (NUCLEI_MAX_OBJ + 1) x 2 */
};
size_t nuclei_scratch_bytes(int tile);
void nuclei_scratch_at(void *base, int tile, struct nuclei_scratch *s);

/* The operations, in pipeline order (each a kernel "nuclei.NAME"). */
#define NUCLEI_OPS(X)                                                         \
	X(GRAY, "gray", "")                                                   \
	X(DECONV, "deconv", "")                                               \
	X(OPEN, "open", "deconv")                                             \
	X(RECON, "recon", "open")                                             \
	X(THRESH, "threshold", "recon")                                       \
	X(FILL, "fill_holes", "threshold")                                    \
	X(AREA, "area_threshold", "fill_holes")                               \
	X(DIST, "distance", "area_threshold")                                 \
	X(LABEL, "label", "area_threshold")                                   \
	X(SOBEL, "sobel", "gray")                                             \
	X(FEATURES, "features", "label distance sobel")

enum nuclei_op {
#define X(ID, name, after) NUCLEI_##ID,
	NUCLEI_OPS(X)
#undef X
	NUCLEI_NOPS
};
extern const char *const nuclei_op_names[NUCLEI_NOPS];
extern const struct plb_kernel nuclei_kernels[NUCLEI_NOPS];
/* The pipeline's ops (op i's kernel nuclei_kernels[i]; features' tasks
 * set by label: one per NUCLEI_FEAT_TASK objects). */
void nuclei_pipeline_ops(struct plb_op ops[NUCLEI_NOPS]);

/* Runs operation op of tile blk's instance directly (the reference the
 * plb run is checked against runs them in order with one task each, a
 * features task over objects [task * NUCLEI_FEAT_TASK, ...)). 0 or a
 * PLB_E code. */
int nuclei_run_op(int op, const struct nuclei_params *pa, const struct plb_block *blk);

/* ---- the image ---------------------------------------------------------- */

struct nuclei_truth {
	uint32_t tile;
	float x, y, r;          /* in the tile */
	int hollow;             /* drawn with a pale centre (fill holes' case) */
};

/* Draws a (tx * T) x (ty * T) image tile by tile (tile i's T x T x 3
 * bytes at rgb + i * T * T * 3, rows of RGB) from seed: eosin
 * background, haematoxylin nuclei of radius 5-9 on a jittered grid (none
 * crosses a tile's edge), a fifth hollow, eosin-dark blobs and specks too
 * small to count. truth gets the nuclei (at most max; *n how many drawn).
 */
void nuclei_draw(uint64_t seed, int tx, int ty, int T, uint8_t *rgb, struct nuclei_truth *truth,
		 size_t max, size_t *n);

/* Colour deconvolution (Ruifrok and Johnston's H&E vectors): the
 * haematoxylin density of each pixel, scaled to 0-255. */
void nuclei_deconv(const uint8_t *rgb, uint8_t *h, int T);
/* Its coefficients: haematoxylin's column of the stains' inverse, and the
 * optical density of each 8-bit value (a device computes the same). */
void nuclei_deconv_coeffs(double inv0[3], double lut[256]);

/* The operations a device runs (nuclei_opencl.c; the others stay on
 * CPUs): each the CPU operation's output to the bit. */
#define NUCLEI_DEVICE_OP(op) \
	((op) == NUCLEI_GRAY || (op) == NUCLEI_DECONV || (op) == NUCLEI_OPEN || \
	 (op) == NUCLEI_RECON || (op) == NUCLEI_FILL || (op) == NUCLEI_SOBEL)
struct nuclei_cl;
/* An OpenCL device's state for tiles of T (cl_context, cl_device_id): 0,
 * or a PLB_E code with the reason in err. */
int nuclei_cl_create(void *cl_context, void *cl_device, int T, struct nuclei_cl **d, char *err,
		     size_t len);
/* Runs device operation op on b's tile, its inputs copied from the tile's
 * scratch (or input) and its output back; the copies' time reported with
 * plb_report_copies. 0 or a PLB_E code. */
int nuclei_cl_run(struct nuclei_cl *d, int op, const struct nuclei_params *pa,
		  const struct plb_block *b);
void nuclei_cl_destroy(struct nuclei_cl *d);
/* The same on a CUDA GPU (nuclei_cuda.cu; dev: the device ordinal). */
struct nuclei_cuda;
int nuclei_cuda_create(int dev, int T, struct nuclei_cuda **d, char *err, size_t len);
int nuclei_cuda_run(struct nuclei_cuda *d, int op, const struct nuclei_params *pa,
		    const struct plb_block *b);
void nuclei_cuda_destroy(struct nuclei_cuda *d);

/* OpenCV's operations on T x T images (nuclei_opencv.cpp). */
void nuclei_cv_init(void);
int nuclei_cv_gray(const uint8_t *rgb, uint8_t *gray, int T);
int nuclei_cv_open(const uint8_t *src, uint8_t *dst, int T, int r);
int nuclei_cv_recon(const uint8_t *marker, const uint8_t *mask, uint8_t *dst, int T);
int nuclei_cv_threshold(const uint8_t *src, uint8_t *mask, int T);
int nuclei_cv_fill_holes(const uint8_t *mask, uint8_t *dst, int T);
int nuclei_cv_area(const uint8_t *mask, uint8_t *dst, int T, int amin, int amax);
int nuclei_cv_distance(const uint8_t *mask, float *dist, int T);
/* labels, and each label's stats (5 ints) and centroid (2 doubles) up to
 * max labels; returns the number of objects (labels 1..n), or < 0 */
int nuclei_cv_label(const uint8_t *mask, int32_t *labels, int32_t *stats, double *cent, int max,
		    int T);
int nuclei_cv_sobel(const uint8_t *gray, float *grad, int T);

#ifdef __cplusplus
}
#endif

#endif
