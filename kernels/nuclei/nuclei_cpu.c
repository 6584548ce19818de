/* plb-nuclei in plain C: the tile's scratch, the synthetic image, colour
 * deconvolution, the features of each object, and each operation run on
 * one tile (nuclei_run_op, which the kernels and the reference share). */
#include <math.h>
#include <string.h>

#include "kernels/nuclei/nuclei.h"

#define PI 3.14159265358979323846

/* ---- the scratch ---------------------------------------------------------- */

static size_t up16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

size_t nuclei_scratch_bytes(int T)
{
	size_t px = (size_t)T * (size_t)T;
	return 6 * up16(px) + 3 * up16(px * 4) + 16 + up16((NUCLEI_MAX_OBJ + 1) * 5 * 4) +
	       up16((NUCLEI_MAX_OBJ + 1) * 2 * 8);
}

void nuclei_scratch_at(void *base, int T, struct nuclei_scratch *s)
{
	size_t px = (size_t)T * (size_t)T;
	char *p = base;
	uint8_t **img[] = {&s->gray, &s->h, &s->marker, &s->recon, &s->mask, &s->clean};
	for (int i = 0; i < 6; i++, p += up16(px))
		*img[i] = (uint8_t *)p;
	s->labels = (int32_t *)p;
	p += up16(px * 4);
	s->dist = (float *)p;
	p += up16(px * 4);
	s->grad = (float *)p;
	p += up16(px * 4);
	s->nobj = (int32_t *)p;
	p += 16;
	s->stats = (int32_t *)p;
	p += up16((NUCLEI_MAX_OBJ + 1) * 5 * 4);
	s->cent = (double *)p;
}

/* ---- the image ------------------------------------------------------------ */

static uint64_t mix(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static double unif(uint64_t *x)
{
	return (double)(mix(x) >> 11) * 0x1p-53;
}

static double gauss(uint64_t *x)
{
	double u = unif(x), v = unif(x);
	return sqrt(-2 * log(u > 0 ? u : 0x1p-53)) * cos(2 * PI * v);
}

/* Ruifrok and Johnston's stain vectors (optical density per channel). */
static const double HV[3] = {0.650, 0.704, 0.286}, EV[3] = {0.072, 0.990, 0.105};

/* A cell of the grid a tile is drawn on: what is in it. */
enum { C_EMPTY, C_NUCLEUS, C_HOLLOW, C_BLOB, C_SPECK };
#define CELL 32

void nuclei_draw(uint64_t seed, int tx, int ty, int T, uint8_t *rgb, struct nuclei_truth *truth,
		 size_t max, size_t *n)
{
	size_t got = 0;
	int cells = T / CELL;
	for (int t = 0; t < tx * ty; t++) {
		uint64_t rs = seed * 0x2545F4914F6CDD1DULL + (uint64_t)t * 0x9E3779B97F4A7C15ULL + 1;
		uint8_t *px = rgb + (size_t)t * (size_t)T * (size_t)T * 3;
		/* the cells' contents: centre, radii, densities */
		int kind[64 * 64];
		double cx[64 * 64], cy[64 * 64], ra[64 * 64], rb[64 * 64], ang[64 * 64], dh[64 * 64];
		for (int c = 0; c < cells * cells && c < 64 * 64; c++) {
			double u = unif(&rs);
			kind[c] = u < 0.45 ? C_NUCLEUS : u < 0.58 ? C_HOLLOW : u < 0.66 ? C_BLOB
				: u < 0.74 ? C_SPECK : C_EMPTY;
			double r = kind[c] == C_BLOB ? 9 + 3 * unif(&rs) : kind[c] == C_SPECK ? 1.2 : 5 + 4 * unif(&rs);
			double room = CELL / 2.0 - r - 2;
			cx[c] = (c % cells) * CELL + CELL / 2.0 + (2 * unif(&rs) - 1) * (room > 0 ? room : 0);
			cy[c] = (c / cells) * CELL + CELL / 2.0 + (2 * unif(&rs) - 1) * (room > 0 ? room : 0);
			ra[c] = r;
			rb[c] = kind[c] == C_SPECK ? r : r * (0.75 + 0.25 * unif(&rs));
			ang[c] = PI * unif(&rs);
			dh[c] = 0.75 + 0.3 * unif(&rs);
			if (kind[c] == C_NUCLEUS || kind[c] == C_HOLLOW) {
				if (truth && got < max)
					truth[got] = (struct nuclei_truth){(uint32_t)t, (float)cx[c], (float)cy[c],
									   (float)ra[c], kind[c] == C_HOLLOW};
				got++;
			}
		}
		for (int y = 0; y < T; y++)
			for (int x = 0; x < T; x++) {
				int c = (y / CELL) * cells + x / CELL;
				double ch = 0.05, ce = 0.25;
				if (y / CELL < cells && x / CELL < cells && c < 64 * 64 && kind[c] != C_EMPTY) {
					double dx = x + 0.5 - cx[c], dy = y + 0.5 - cy[c];
					double u = dx * cos(ang[c]) + dy * sin(ang[c]);
					double v = -dx * sin(ang[c]) + dy * cos(ang[c]);
					double e = u * u / (ra[c] * ra[c]) + v * v / (rb[c] * rb[c]);
					if (e <= 1) {
						if (kind[c] == C_BLOB) {
							ce = 0.9;
						} else {
							ch = dh[c];
							ce = 0.15;
							if (kind[c] == C_HOLLOW && e < 0.16)
								ch = 0.12;
						}
					}
				}
				for (int k = 0; k < 3; k++) {
					double od = ch * HV[k] + ce * EV[k] + 0.02 * gauss(&rs);
					double i = 255 * pow(10, -od);
					px[((size_t)y * (size_t)T + (size_t)x) * 3 + (size_t)k] =
						(uint8_t)(i < 0 ? 0 : i > 255 ? 255 : i + 0.5);
				}
			}
	}
	if (n)
		*n = got;
}

void nuclei_deconv_coeffs(double inv0[3], double lut[256])
{
	/* OD = c M with M's rows the H, E and residual vectors: c = OD M^-1;
	 * only H's column of M^-1 is needed */
	double r[3] = {HV[1] * EV[2] - HV[2] * EV[1], HV[2] * EV[0] - HV[0] * EV[2],
		       HV[0] * EV[1] - HV[1] * EV[0]};
	double rn = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
	double m[3][3] = {{HV[0], HV[1], HV[2]}, {EV[0], EV[1], EV[2]},
			  {r[0] / rn, r[1] / rn, r[2] / rn}};
	double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
		     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
		     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
	/* column 0 of the inverse: M^-1[k][0] = C[0][k] / det, the cofactors
	 * of row 0 */
	inv0[0] = (m[1][1] * m[2][2] - m[1][2] * m[2][1]) / det;
	inv0[1] = -(m[1][0] * m[2][2] - m[1][2] * m[2][0]) / det;
	inv0[2] = (m[1][0] * m[2][1] - m[1][1] * m[2][0]) / det;
	for (int v = 0; v < 256; v++)
		lut[v] = -log10((v + 1) / 256.0);
}

void nuclei_deconv(const uint8_t *rgb, uint8_t *h, int T)
{
	double inv0[3], lut[256];
	nuclei_deconv_coeffs(inv0, lut);
	for (size_t i = 0; i < (size_t)T * (size_t)T; i++) {
		double c = 0;
		for (int k = 0; k < 3; k++)
			c += lut[rgb[i * 3 + (size_t)k]] * inv0[k];
		double v = c * 200;
		h[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
	}
}

/* ---- one operation on one tile ------------------------------------------ */

/* Objects [first, first + NUCLEI_FEAT_TASK) of the tile. */
static void features(const struct nuclei_scratch *s, struct nuclei_out *out, int first, int T)
{
	int n = *s->nobj;
	for (int l = first + 1; l <= n && l <= first + NUCLEI_FEAT_TASK && l <= NUCLEI_MAX_OBJ; l++) {
		const int32_t *st = s->stats + l * 5;
		double sh = 0, sg = 0, rad = 0;
		long a = 0;
		for (int y = st[1]; y < st[1] + st[3]; y++)
			for (int x = st[0]; x < st[0] + st[2]; x++) {
				size_t i = (size_t)y * (size_t)T + (size_t)x;
				if (s->labels[i] != l)
					continue;
				a++;
				sh += s->h[i];
				sg += s->grad[i];
				if (s->dist[i] > rad)
					rad = s->dist[i];
			}
		out->obj[l - 1] = (struct nuclei_obj){(float)s->cent[l * 2], (float)s->cent[l * 2 + 1],
						      (float)a, a ? (float)(sh / (double)a) : 0,
						      a ? (float)(sg / (double)a) : 0, (float)rad};
	}
}

int nuclei_run_op(int op, const struct nuclei_params *pa, const struct plb_block *b)
{
	int T = pa->tile;
	struct nuclei_scratch s;
	if (!b->scratch || T < 8)
		return PLB_EINVAL;
	nuclei_scratch_at(b->scratch, T, &s);
	switch (op) {
	case NUCLEI_GRAY:
		return nuclei_cv_gray(b->in, s.gray, T);
	case NUCLEI_DECONV:
		nuclei_deconv(b->in, s.h, T);
		return 0;
	case NUCLEI_OPEN:
		return nuclei_cv_open(s.h, s.marker, T, pa->open_r);
	case NUCLEI_RECON:
		return nuclei_cv_recon(s.marker, s.h, s.recon, T);
	case NUCLEI_THRESH:
		return nuclei_cv_threshold(s.recon, s.mask, T);
	case NUCLEI_FILL:
		return nuclei_cv_fill_holes(s.mask, s.mask, T);
	case NUCLEI_AREA:
		return nuclei_cv_area(s.mask, s.clean, T, pa->area_min, pa->area_max);
	case NUCLEI_DIST:
		return nuclei_cv_distance(s.clean, s.dist, T);
	case NUCLEI_LABEL: {
		int n = nuclei_cv_label(s.clean, s.labels, s.stats, s.cent, NUCLEI_MAX_OBJ, T);
		if (n < 0)
			return n;
		*s.nobj = n;
		struct nuclei_out *out = b->out;
		memset(out, 0, sizeof *out);
		out->objects = (uint32_t)n;
		out->reported = (uint32_t)(n < NUCLEI_MAX_OBJ ? n : NUCLEI_MAX_OBJ);
		/* the features: a task per NUCLEI_FEAT_TASK objects reported */
		int tasks = ((int)out->reported + NUCLEI_FEAT_TASK - 1) / NUCLEI_FEAT_TASK;
		int rc = plb_task_expand(b, "features", tasks);
		return rc == PLB_EINVAL && !b->tasks ? 0 : rc;  /* the reference: no pipeline */
	}
	case NUCLEI_SOBEL:
		return nuclei_cv_sobel(s.gray, s.grad, T);
	case NUCLEI_FEATURES:
		features(&s, b->out, b->task * NUCLEI_FEAT_TASK, T);
		return 0;
	default:
		return PLB_EINVAL;
	}
}
