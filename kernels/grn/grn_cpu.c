/* The gene-regulatory-network CPU kernel, its tables and shared data, and
 * the serial reference (see grn.h). The kernel walks a target's subsets in
 * colex order, keeping for each chosen prefix of genes the AND of their
 * level bit sets with the target's (one set per instance of the prefix and
 * target level), so that a subset's counts are popcounts of one more AND;
 * the walk is built for AVX2 machines, for machines with a popcount
 * instruction and for the baseline, and the best one for the machine is
 * picked when the program starts (target_clones). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/grn/grn.h"

/* Not under ThreadSanitizer: the clones' resolver runs before the
 * sanitizer's runtime is up (see kernels/bs/bs_simd.c). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define PLB_CLONES_ __attribute__((target_clones("arch=x86-64-v3", "popcnt", "default")))
#else
#define PLB_CLONES_
#endif

static int ipow(int b, int e)
{
	int r = 1;
	while (e-- > 0)
		r *= b;
	return r;
}

int plb__grn_shape_ok(int n, int s, int levels, int k)
{
	if (k < 1 || k > PLB__GRN_MAX_K || levels < 2 || levels > PLB__GRN_MAX_LEVELS || s < 1 ||
	    s > PLB__GRN_MAX_SAMPLES || n < k + 1 || ipow(levels, k + 1) > PLB__GRN_MAX_CELLS)
		return PLB_EINVAL;
	return 0;
}

static size_t words_of(int s)
{
	return ((size_t)s + 63) / 64;
}

size_t plb__grn_shared_bytes(int n, int s, int levels)
{
	return sizeof(struct plb__grn_shared) +
	       (size_t)n * (size_t)levels * words_of(s) * sizeof(uint64_t);
}

void plb__grn_share(void *sh, const uint8_t *lev, int n, int s, int levels, int k, double alpha)
{
	struct plb__grn_shared *h = sh;
	size_t W = words_of(s);
	*h = (struct plb__grn_shared){.n = n, .s = s, .levels = levels, .k = k, .words = (int32_t)W,
				      .alpha = alpha};
	uint64_t *bits = (uint64_t *)(h + 1);
	memset(bits, 0, (size_t)n * (size_t)levels * W * sizeof *bits);
	for (size_t g = 0; g < (size_t)n; g++)
		for (size_t i = 0; i < (size_t)s; i++)
			bits[(g * (size_t)levels + lev[g * (size_t)s + i]) * W + i / 64] |= 1ULL << (i % 64);
}

int plb__grn_shared_ok(const void *sh, size_t bytes)
{
	const struct plb__grn_shared *h = sh;
	if (!sh || bytes < sizeof *h || plb__grn_shape_ok(h->n, h->s, h->levels, h->k) ||
	    (size_t)h->words != words_of(h->s) || !(h->alpha >= 0) || !isfinite(h->alpha) ||
	    bytes != plb__grn_shared_bytes(h->n, h->s, h->levels))
		return PLB_EINVAL;
	return 0;
}

int plb__grn_tables_make(int s, double alpha, struct plb__grn_tables *t)
{
	t->nlog = malloc(((size_t)s + 1) * sizeof *t->nlog);
	t->wf = malloc(((size_t)s + 1) * sizeof *t->wf);
	if (!t->nlog || !t->wf) {
		plb__grn_tables_free(t);
		return PLB_ENOMEM;
	}
	t->s = s;
	t->alpha = alpha;
	t->nlog[0] = 0;
	t->wf[0] = 0;
	for (int f = 1; f <= s; f++) {
		t->nlog[f] = f * log2(f);
		t->wf[f] = (f + alpha) / f;
	}
	return 0;
}

void plb__grn_tables_free(struct plb__grn_tables *t)
{
	free(t->nlog);
	free(t->wf);
	t->nlog = t->wf = NULL;
}

double plb__grn_hy(const struct plb__grn_tables *t, const uint32_t *cy, int levels)
{
	double e = t->nlog[t->s];
	for (int y = 0; y < levels; y++)
		e -= t->nlog[cy[y]];
	return e / t->s;
}

double plb__grn_score(const struct plb__grn_tables *t, const uint32_t *cnt, int N, int levels,
		      double hy)
{
	return plb__grn_score_(t->nlog, t->wf, t->alpha, t->s, cnt, N, levels, hy);
}

/* One target's search. */
struct walk {
	const uint64_t *bits;   /* the shared bit sets, [gene][level][word] */
	const struct plb__grn_tables *tab;
	int W, c, k, t;
	double hy, best;
	int32_t pick[PLB__GRN_MAX_K], best_pick[PLB__GRN_MAX_K];
};

/* The last (smallest) gene of the subset, every p in [0, hi): pre holds E
 * = c^(k-1) * c sets (instance x of the genes chosen so far, target level
 * y: entry x * c + y) of W words. A set's count at the last level is what
 * the other levels leave of the whole set's. */
PLB_CLONES_ static void leaf(struct walk *w, int hi, const uint64_t *pre)
{
	const int c = w->c, W = w->W, N = ipow(c, w->k), E = N;
	uint32_t cnt[PLB__GRN_MAX_CELLS], whole[PLB__GRN_MAX_CELLS];
	int at[PLB__GRN_MAX_CELLS];     /* entry e's cell at level 0 */
	for (int e = 0; e < E; e++) {
		uint32_t q = 0;
		for (int i = 0; i < W; i++)
			q += (uint32_t)__builtin_popcountll(pre[(size_t)e * W + i]);
		whole[e] = q;
		at[e] = e / c * c * c + e % c;
	}
	for (int p = 0; p < hi; p++) {
		int g = p < w->t ? p : p + 1;
		const uint64_t *G = w->bits + (size_t)g * (size_t)c * (size_t)W;
		for (int e = 0; e < E; e++) {
			const uint64_t *a = pre + (size_t)e * W;
			uint32_t left = whole[e];
			for (int l = 0; l + 1 < c; l++) {
				const uint64_t *b = G + (size_t)l * W;
				uint32_t n = 0;
				for (int i = 0; i < W; i++)
					n += (uint32_t)__builtin_popcountll(a[i] & b[i]);
				cnt[at[e] + l * c] = n;
				left -= n;
			}
			cnt[at[e] + (c - 1) * c] = left;
		}
		double sc = plb__grn_score_(w->tab->nlog, w->tab->wf, w->tab->alpha, w->tab->s, cnt, N,
					    c, w->hy);
		if (sc < w->best) {
			w->best = sc;
			w->pick[0] = p;
			memcpy(w->best_pick, w->pick, sizeof w->pick);
		}
	}
}

/* The genes of the subset from the depth-th smallest down: each p in
 * [depth - 1, hi) as that gene, its sets ANDed into next, then the rest
 * below p. pre holds c^(k-depth) * c sets. */
static void walk(struct walk *w, int depth, int hi, const uint64_t *pre, uint64_t *next)
{
	if (depth == 1) {
		leaf(w, hi, pre);
		return;
	}
	const int c = w->c, W = w->W, E = ipow(c, w->k - depth + 1);
	for (int p = depth - 1; p < hi; p++) {
		int g = p < w->t ? p : p + 1;
		const uint64_t *G = w->bits + (size_t)g * (size_t)c * (size_t)W;
		w->pick[depth - 1] = p;
		for (int e = 0; e < E; e++) {
			int x = e / c, y = e % c;
			for (int l = 0; l < c; l++) {
				uint64_t *o = next + (size_t)((x * c + l) * c + y) * W;
				for (int i = 0; i < W; i++)
					o[i] = pre[(size_t)e * W + i] & G[(size_t)l * W + i];
			}
		}
		walk(w, depth - 1, p, next, next + (size_t)E * c * W);
	}
}

static void set_best(const struct walk *w, double score, struct plb__grn_best *out)
{
	for (int j = 0; j < 4; j++)
		out->reg[j] = -1;
	for (int j = 0; j < w->k && j < PLB__GRN_MAX_K; j++) {
		int p = w->best_pick[j];
		out->reg[j] = p < w->t ? p : p + 1;
	}
	out->score = score;
}

int plb__grn_cpu(const void *shared, const struct plb__grn_tables *t, uint64_t first,
		 size_t count, struct plb__grn_best *out)
{
	const struct plb__grn_shared *h = shared;
	if (!h || !t || (count && !out) || first + count > (uint64_t)h->n || t->s != h->s)
		return PLB_EINVAL;
	const int c = h->levels, W = h->words;
	/* the prefix sets: c^(j+1) sets at depth j, j < k */
	size_t sets = 0;
	for (int j = 1; j <= h->k; j++)
		sets += (size_t)ipow(c, j);
	uint64_t *scratch = malloc(sets * (size_t)W * sizeof *scratch);
	if (!scratch)
		return PLB_ENOMEM;
	struct walk w = {.bits = (const uint64_t *)(h + 1), .tab = t, .W = W, .c = c, .k = h->k};
	for (size_t u = 0; u < count; u++) {
		w.t = (int)(first + u);
		const uint64_t *Y = w.bits + (size_t)w.t * (size_t)c * (size_t)W;
		uint32_t cy[PLB__GRN_MAX_LEVELS];
		for (int y = 0; y < c; y++) {
			cy[y] = 0;
			for (int i = 0; i < W; i++)
				cy[y] += (uint32_t)__builtin_popcountll(Y[(size_t)y * W + i]);
		}
		w.hy = plb__grn_hy(t, cy, c);
		w.best = INFINITY;
		memcpy(scratch, Y, (size_t)c * (size_t)W * sizeof *scratch);
		walk(&w, h->k, h->n - 1, scratch, scratch + (size_t)c * W);
		set_best(&w, w.best, &out[u]);
	}
	free(scratch);
	return 0;
}

/* The reference's walk: the same subsets in the same order, each counted
 * sample by sample: code[d] holds each sample's instance of the genes
 * chosen above depth d. */
struct ref {
	const uint8_t *lev;
	const struct plb__grn_tables *tab;
	int s, c, k, t, N;
	double hy;
	uint32_t *code;         /* (k + 1) * s: code[d * s + i] */
	struct walk *w;         /* pick, best, best_pick */
};

static void ref_walk(struct ref *r, int depth, int hi)
{
	struct walk *w = r->w;
	const uint32_t *up = r->code + (size_t)depth * r->s;
	uint32_t *here = r->code + (size_t)(depth - 1) * r->s;
	const uint8_t *ty = r->lev + (size_t)r->t * r->s;
	for (int p = depth - 1; p < hi; p++) {
		w->pick[depth - 1] = p;
		const uint8_t *lg = r->lev + (size_t)(p < r->t ? p : p + 1) * r->s;
		for (int i = 0; i < r->s; i++)
			here[i] = up[i] * (uint32_t)r->c + lg[i];
		if (depth > 1) {
			ref_walk(r, depth - 1, p);
			continue;
		}
		uint32_t cnt[PLB__GRN_MAX_CELLS] = {0};
		for (int i = 0; i < r->s; i++)
			cnt[here[i] * (uint32_t)r->c + ty[i]]++;
		double sc = plb__grn_score(r->tab, cnt, r->N, r->c, r->hy);
		if (sc < w->best) {
			w->best = sc;
			memcpy(w->best_pick, w->pick, sizeof w->pick);
		}
	}
}

int plb__grn_ref(const uint8_t *lev, int n, int s, int levels, int k,
		 const struct plb__grn_tables *tab, int t, struct plb__grn_best *out)
{
	if (plb__grn_shape_ok(n, s, levels, k) || t < 0 || t >= n || tab->s != s)
		return PLB_EINVAL;
	struct walk w = {.k = k, .t = t, .best = INFINITY};
	struct ref r = {.lev = lev, .tab = tab, .s = s, .c = levels, .k = k, .t = t,
			.N = ipow(levels, k), .w = &w};
	if (!(r.code = calloc((size_t)(k + 1) * (size_t)s, sizeof *r.code)))
		return PLB_ENOMEM;
	uint32_t cy[PLB__GRN_MAX_LEVELS] = {0};
	for (int i = 0; i < s; i++)
		cy[lev[(size_t)t * s + i]]++;
	r.hy = plb__grn_hy(tab, cy, levels);
	ref_walk(&r, k, n - 1);
	free(r.code);
	set_best(&w, w.best, out);
	return 0;
}
