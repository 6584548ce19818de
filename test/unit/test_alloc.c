/* Allocation failures in the balancer and the coverage check: every
 * allocation of a whole job, from plb__balancer_create to
 * plb__balancer_destroy with each done block recorded for the coverage
 * check, fails once in turn
 * (the linker routes the balancer's malloc, calloc and realloc through
 * the wrappers below: Makefile, -Wl,--wrap). Each time, for every policy:
 * the call that met the failure returns PLB_ENOMEM, no call crashes or
 * returns another error, and destroy frees everything that was
 * allocated. A check of one pointer dropped from an allocation test
 * (`!a || !b` turned into `!a && !b`) leaves a NULL that the job then
 * dereferences; an error path that forgets a buffer leaves it counted. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "balancer/balancer.h"
#include "runtime/config/coverage.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static long fail_at;    /* the allocation (from 1) that fails; 0: none */
static long calls;      /* allocations asked for since the count was reset */
static long live;       /* blocks allocated and not yet freed */

static int fails(void)
{
	return ++calls == fail_at;
}

void *__wrap_malloc(size_t n)
{
	if (fails())
		return NULL;
	void *p = __real_malloc(n);
	live += p != NULL;
	return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
	if (fails())
		return NULL;
	void *p = __real_calloc(k, n);
	live += p != NULL;
	return p;
}

void *__wrap_realloc(void *q, size_t n)
{
	if (fails())
		return NULL;
	void *p = __real_realloc(q, n);
	live += q == NULL && p != NULL;
	return p;
}

void __wrap_free(void *p)
{
	live -= p != NULL;
	__real_free(p);
}

#define NPU 3
#define W 20000

/* PU i's time for a block: a fixed cost and a rate per PU, with a
 * deterministic wobble so that fits and speed changes have work. */
static double block_time(int pu, int k, double units)
{
	static const double fixed[NPU] = {0.002, 0.01, 0.004};
	static const double per[NPU] = {1e-4, 4e-4, 2e-4};
	return (fixed[pu] + per[pu] * units) * (1 + 0.05 * sin(1.7 * k + pu));
}

/* One job to the end or to its first error: the error (0: none). PUs 0
 * and 1 share a node that holds the first third of the input (placement),
 * and PU 2 is lost a third of the way through. */
static int job(const char *policy)
{
	plb__balancer_t *b;
	int rc = plb__balancer_create(NULL, policy, NPU, W, &b);
	if (rc)
		return rc;
	for (int i = 0; i < NPU && rc == 0; i++)
		rc = plb__balancer_group(b, i, i < 2 ? 0 : 1);
	if (rc == 0)
		rc = plb__balancer_hold(b, 0, 0, W / 3);
	if (rc) {
		plb__balancer_destroy(b);
		return rc;
	}
	struct plb__coverage cov = {0};
	struct plb__grant g[NPU];
	int busy[NPU] = {0}, blocks[NPU] = {0}, lost = 0;
	double finish[NPU] = {0}, exec[NPU] = {0}, now = 0;
	for (int events = 0; events < 100000 && rc == 0; events++) {
		for (int i = 0; i < NPU && rc == 0; i++) {
			if (busy[i] || (lost && i == 2))
				continue;
			int r = plb__balancer_next(b, i, now, &g[i]);
			if (r < 0)
				rc = r;
			else if (r == PLB__NEXT_GRANT) {
				exec[i] = block_time(i, blocks[i]++, (double)g[i].units);
				finish[i] = now + exec[i];
				busy[i] = 1;
			}
		}
		if (rc)
			break;
		if (!lost && now > 0.05 * W * 1e-4) {
			lost = 1;
			busy[2] = 0;
			rc = plb__balancer_lost(b, 2, now);
			continue;
		}
		int next = -1;
		for (int i = 0; i < NPU; i++)
			if (busy[i] && (next < 0 || finish[i] < finish[next]))
				next = i;
		if (next < 0) {
			double due = plb__balancer_wake(b);
			if (!isfinite(due))
				break;
			now = fmax(now, due);
			continue;
		}
		now = finish[next];
		busy[next] = 0;
		struct plb__block_done s = {g[next].id, exec[next], 0, now, 0};
		rc = plb__balancer_done(b, next, &s);
		if (rc == PLB_ESTALE)
			rc = 0;
		else if (rc == 0)
			rc = plb__coverage_add(&cov, g[next].offset, g[next].units);
	}
	if (rc == 0 && !(plb__balancer_finished(b) && plb__coverage_ok(&cov, W)))
		rc = -1000;     /* no error, and the job did not end or cover W */
	plb__coverage_fini(&cov);
	plb__balancer_destroy(b);
	return rc;
}

static void every_allocation_fails_once(const char *policy)
{
	calls = live = fail_at = 0;
	assert_int_equal(job(policy), 0);
	assert_int_equal(live, 0);
	long n = calls;
	if (n < 4)      /* the case this test is about */
		fail_msg("%s: %ld allocations in a whole job", policy, n);
	for (fail_at = 1; fail_at <= n; fail_at++) {
		calls = live = 0;
		int rc = job(policy);
		if (rc != PLB_ENOMEM)
			fail_msg("%s, allocation %ld of %ld failed: the job returned %d, not PLB_ENOMEM (%d)",
				 policy, fail_at, n, rc, PLB_ENOMEM);
		if (live != 0)
			fail_msg("%s, allocation %ld of %ld failed: %ld blocks left allocated after destroy",
				 policy, fail_at, n, live);
	}
	fail_at = 0;
}

static void test_hac(void **state) { (void)state; every_allocation_fails_once("plb-hac"); }
static void test_hec(void **state) { (void)state; every_allocation_fails_once("plb-hec"); }
static void test_hdss(void **state) { (void)state; every_allocation_fails_once("hdss"); }
static void test_greedy(void **state) { (void)state; every_allocation_fails_once("greedy"); }
static void test_static(void **state) { (void)state; every_allocation_fails_once("static"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hac),
		cmocka_unit_test(test_hec),
		cmocka_unit_test(test_hdss),
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_static),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
