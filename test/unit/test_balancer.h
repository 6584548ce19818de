/* Helpers shared by the balancer's test programs (test_balancer, test_pool,
 * test_busy, test_redo, test_hdss, test_plb_hec, test_static): a seeded
 * random stream, a greedy balancer of 100-unit blocks, checks of the free
 * list and of the busy PUs' summary against the PUs' own state, and a
 * warm start of four linear samples. Include after cmocka.h. */
#ifndef PLB_TEST_BALANCER_H
#define PLB_TEST_BALANCER_H

#include <math.h>
#include <stdint.h>

#include "balancer/balancer.h"
#include "balancer/internal.h"
#include "balancer/ranges.h"
#include "test_util.h"

static uint64_t rng_state __attribute__((unused));

static inline double urand(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A greedy balancer handing out blocks of 100 units (min_block 1): the
 * blocks' ranges are then known in advance. */
static inline plb__balancer_t *greedy100(int n, uint64_t W)
{
	struct plb__params p;
	plb__params_init(&p);
	p.greedy_block = 100;
	p.min_block = 1;
	plb__balancer_t *b;
	assert_int_equal(plb__balancer_create(&p, "greedy", n, W, &b), 0);
	return b;
}

/* The free list is sorted, disjoint and merged (no two ranges touch) and
 * sums to the pool, which is `want` units. */
static inline void check_free_list(const plb__balancer_t *b, uint64_t want, const char *what)
{
	uint64_t sum = 0;
	for (int r = 0; r < b->nfree; r++) {
		assert_true(b->free[r].len > 0);
		if (r > 0 && b->free[r - 1].off + b->free[r - 1].len >= b->free[r].off)
			fail_msg("%s: ranges %d and %d touch or overlap", what, r - 1, r);
		sum += b->free[r].len;
	}
	assert_true(b->nfree <= b->capfree);
	assert_int_equal(sum, b->pool);
	assert_int_equal(sum, want);
}

/* When PU pu is free, from its grants themselves: plb__busy_for and the
 * scans of the busy PUs read a summary of them kept beside each PU's
 * (struct plb__bsum) that every change to a PU's grants must update. */
static inline double busy_scan(const plb__balancer_t *b, int pu, double now)
{
	double end = now;
	for (int k = 0; k < b->pu[pu].nout; k++) {
		double e = b->pu[pu].out[k].pred_end;
		if (e < now)
			e = now + (now - e);
		end = fmax(end, e);
	}
	return end - now;
}

/* The summary (struct plb__bsum) agrees with each PU's own state: its
 * free time to the bit, busy, lost, its rate (0 without a ready model)
 * and its model's time for min_block. */
static inline void check_busy_summary(const plb__balancer_t *b, double now)
{
	for (int i = 0; i < b->n; i++) {
		const struct plb__pu *u = &b->pu[i];
		const struct plb__bsum *s = &b->bs[i];
		int ready = b->model && plb__model_ready(&b->model[i]);
		if (plb__busy_for(b, i, now) != busy_scan(b, i, now))
			fail_msg("PU %d at %g: free in %g, its grants say %g", i, now,
				 plb__busy_for(b, i, now), busy_scan(b, i, now));
		if (s->busy != (!u->lost && u->nout > 0) || s->lost != u->lost ||
		    s->rate != (ready ? u->rate : 0) ||
		    (ready && s->t_minb != plb__model_eval(&b->model[i], b->p.min_block)))
			fail_msg("PU %d at %g: its summary is stale (busy %d, lost %d, rate %g, %g s for min_block)",
				 i, now, s->busy, s->lost, s->rate, s->t_minb);
	}
}

/* PUs from..to-1 get a model of four blocks of 1000-8000 units at
 * 0.01 s + 10 us a unit. */
static inline void four_linear_samples(plb__balancer_t *b, int from, int to)
{
	struct plb__sample four[4];
	for (int k = 0; k < 4; k++)
		four[k] = (struct plb__sample){1000.0 * (1 << k), 0.01 + 1e-5 * 1000.0 * (1 << k), 0};
	for (int i = from; i < to; i++)
		assert_int_equal(plb__balancer_model_set(b, i, four, 4, INFINITY), 0);
}

/* 16 PUs of greedy100 each granted a block of [0, 1600) of W units; then
 * PUs 0, 2, 4, ... lost (free ranges that do not touch) until the free
 * list holds `nfree` ranges. Returns the balancer; *k: PUs lost. */
static inline plb__balancer_t *every_other_lost(uint64_t W, int nfree, int *k)
{
	plb__balancer_t *b = greedy100(16, W);
	struct plb__grant g;
	for (int i = 0; i < 16; i++)
		assert_int_equal(plb__balancer_next(b, i, 0, &g), PLB__NEXT_GRANT);
	*k = 0;
	for (int pu = 0; pu < 16 && b->nfree < nfree; pu += 2, ++*k)
		assert_int_equal(plb__balancer_lost(b, pu, 1), 0);
	assert_int_equal(b->nfree, nfree);      /* the case */
	return b;
}

#endif
