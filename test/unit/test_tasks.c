/* A node's scheduler of pipeline tasks (balancer/tasks.c): the dataflow of
 * an instance (a task ready only once the operations before it ended; an
 * operation expanded at run time or passed over), each policy's choice
 * against its definition (fcfs, heft, padas, pams), the estimate error,
 * lost PUs, operations some types cannot run, bad arguments, and on
 * random pipelines and nodes under every policy through the driver: every
 * task run once, after its predecessors, every instance finished. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/vec.h"
#include "balancer/driver.h"
#include "balancer/tasks.h"

#define ALL 0xfu

struct fin {
	uint64_t inst[64];
	int n;
};

static void on_finished(void *ctx, uint64_t inst, double now)
{
	struct fin *f = ctx;
	(void)now;
	if (f->n < 64)
		f->inst[f->n] = inst;
	f->n++;
}

static plb__tasks_t *make(enum plb__tasks_policy pol, int nops, const struct plb__pipe_op *ops,
			  int npu, const int *type, double err, struct fin *f)
{
	struct plb__tasks_cfg c = {.policy = pol, .nops = nops, .ops = ops, .npu = npu, .type = type,
				   .est_error = err, .seed = 7, .finished = f ? on_finished : NULL,
				   .ctx = f};
	int e;
	char why[160];
	plb__tasks_t *t = plb__tasks_create(&c, &e, why, sizeof why);
	if (!t)
		fail_msg("create: %d %s", e, why);
	return t;
}

/* the grant PU pu gets, or fails */
static struct plb__grant take(plb__tasks_t *t, int pu, double now)
{
	struct plb__grant g;
	int rc = plb__tasks_next(t, pu, now, &g);
	if (rc != PLB__NEXT_GRANT)
		fail_msg("PU %d: next answered %d, expected a grant", pu, rc);
	return g;
}

static int op_of(plb__tasks_t *t, const struct plb__grant *g)
{
	uint64_t inst;
	int op, idx;
	assert_int_equal(plb__tasks_task(t, g->id, &inst, &op, &idx), 0);
	assert_int_equal(inst, g->offset);
	return op;
}

static void finish(plb__tasks_t *t, int pu, const struct plb__grant *g, double exec, double now)
{
	struct plb__block_done s = {.grant_id = g->id, .exec_s = exec, .finish = now};
	assert_int_equal(plb__tasks_done(t, pu, &s), 0);
}

static int int_less(const void *a, const void *b)
{
	return *(const int *)a < *(const int *)b;
}

/* The binary heap the schedulers and plbsim's pipeline runs keep
 * (balancer/base/vec.c): what goes in comes out in order. */
static void test_heap(void **state)
{
	(void)state;
	int *v = NULL, top, last = -1;
	size_t n = 0, cap = 0;
	uint64_t z = 12345;
	for (int i = 0; i < 1000; i++) {
		z = z * 6364136223846793005ULL + 1442695040888963407ULL;
		int x = (int)(z >> 40) % 500;
		assert_int_equal(plb__heap_push(&v, &n, &cap, sizeof x, &x, int_less), 0);
	}
	for (int i = 0; i < 1000; i++) {
		plb__heap_pop(&v, &n, sizeof top, &top, int_less);
		assert_true(top >= last);
		last = top;
	}
	assert_int_equal(n, 0);
	free(v);
}

static void test_names(void **state)
{
	(void)state;
	enum plb__tasks_policy p;
	for (int i = 0; i < PLB__TASKS_NPOLICY; i++) {
		assert_int_equal(plb__tasks_policy_parse(plb__tasks_policy_name((enum plb__tasks_policy)i), &p), 0);
		assert_int_equal(p, i);
		assert_non_null(strstr(plb__tasks_policies_accepted(), plb__tasks_policy_name(p)));
	}
	assert_int_equal(plb__tasks_policy_parse("heftt", &p), PLB_EINVAL);
	assert_int_equal(plb__tasks_policy_parse(NULL, &p), PLB_EINVAL);
}

/* A -> B, A -> C, A -> Z, {B, C, Z} -> D on one CPU: A first, then B
 * and C, D last; B expanded to 3 tasks, Z of 0 tasks passed over; the
 * instance finished once, and DONE only after close. */
static void test_dataflow(void **state)
{
	(void)state;
	struct plb__pipe_op ops[5] = {
		{0, 1, ALL}, {1, 1, ALL}, {1, 1, ALL}, {1, 0, ALL}, {1 << 1 | 1 << 2 | 1 << 3, 1, ALL},
	};
	int type[1] = {0};
	struct fin f = {0};
	plb__tasks_t *t = make(PLB__TASKS_FCFS, 5, ops, 1, type, 0, &f);
	struct plb__grant g;
	assert_int_equal(plb__tasks_next(t, 0, 0, &g), PLB__NEXT_WAIT);
	assert_int_equal(plb__tasks_idle_waits(t, 0), 1);
	assert_int_equal(plb__tasks_admit(t, 42, 0), 0);
	assert_int_equal(plb__tasks_admit(t, 42, 0), PLB_EINVAL);       /* known id */
	assert_int_equal(plb__tasks_expand(t, 42, 1, 3), 0);
	assert_int_equal(plb__tasks_expand(t, 42, 0, 3), PLB_EINVAL);   /* already made */
	assert_int_equal(plb__tasks_expand(t, 43, 1, 3), PLB_EINVAL);   /* unknown */
	g = take(t, 0, 0);
	assert_int_equal(op_of(t, &g), 0);
	assert_int_equal(g.offset, 42);
	assert_int_equal(plb__tasks_next(t, 0, 0, &g), PLB__NEXT_WAIT); /* B, C wait for A */
	finish(t, 0, &g, 1, 1);
	assert_int_equal(plb__tasks_done(t, 0, &(struct plb__block_done){.grant_id = g.id}), PLB_ESTALE);
	int seen[5] = {0};
	for (int i = 0; i < 4; i++) {   /* three B, one C, in any order; D not yet */
		g = take(t, 0, 1);
		int op = op_of(t, &g);
		assert_true(op == 1 || op == 2);
		seen[op]++;
		finish(t, 0, &g, 1, 2);
	}
	assert_int_equal(seen[1], 3);
	assert_int_equal(seen[2], 1);
	assert_int_equal(f.n, 0);
	g = take(t, 0, 2);
	assert_int_equal(op_of(t, &g), 4);
	finish(t, 0, &g, 1, 3);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.inst[0], 42);
	assert_int_equal(plb__tasks_next(t, 0, 3, &g), PLB__NEXT_WAIT);
	plb__tasks_close(t);
	assert_int_equal(plb__tasks_admit(t, 44, 3), PLB_EINVAL);
	assert_int_equal(plb__tasks_next(t, 0, 3, &g), PLB__NEXT_DONE);
	struct plb__tasks_stats st;
	plb__tasks_stats(t, &st);
	assert_int_equal(st.tasks_made, 6);
	assert_int_equal(st.tasks_done, 6);
	assert_int_equal(st.ran[1][0], 3);
	plb__tasks_destroy(t);
}

/* Three independent operations with known times on CPU, GPU (type 1) and
 * MIC (type 2): op 0 gains 10x on the GPU and 2x on the MIC, op 1 2x and
 * 8x, op 2 1.1x and 1.2x. */
static const double times[3][3] = {{1, 0.1, 0.5}, {1, 0.5, 0.125}, {1, 1 / 1.1, 1 / 1.2}};

static plb__tasks_t *three(enum plb__tasks_policy pol, const int *type, int npu, int ninst)
{
	static const struct plb__pipe_op ops[3] = {{0, 1, ALL}, {0, 1, ALL}, {0, 1, ALL}};
	plb__tasks_t *t = make(pol, 3, ops, npu, type, 0, NULL);
	for (int m = 0; m < 3; m++)
		for (int y = 0; y < 3; y++)
			assert_int_equal(plb__tasks_estimate(t, m, y, times[m][y]), 0);
	for (int i = 0; i < ninst; i++)
		assert_int_equal(plb__tasks_admit(t, (uint64_t)i, 0), 0);
	return t;
}

/* pams: each type takes the task of its highest speedup, the CPU the one
 * the accelerators gain least on; a task taken leaves every queue */
static void test_pams(void **state)
{
	(void)state;
	int type[3] = {0, 1, 2};
	plb__tasks_t *t = three(PLB__TASKS_PAMS, type, 3, 1);
	struct plb__grant g = take(t, 1, 0);
	assert_int_equal(op_of(t, &g), 0);
	g = take(t, 2, 0);
	assert_int_equal(op_of(t, &g), 1);
	g = take(t, 0, 0);
	assert_int_equal(op_of(t, &g), 2);
	assert_int_equal(plb__tasks_next(t, 1, 0, &g), PLB__NEXT_WAIT);
	plb__tasks_destroy(t);
	/* the CPU first: still the one the accelerators gain least on; then
	 * the GPU its best of what is left, the MIC the last */
	t = three(PLB__TASKS_PAMS, type, 3, 1);
	g = take(t, 0, 0);
	assert_int_equal(op_of(t, &g), 2);
	g = take(t, 1, 0);
	assert_int_equal(op_of(t, &g), 0);
	g = take(t, 2, 0);
	assert_int_equal(op_of(t, &g), 1);
	assert_int_equal(plb__tasks_next(t, 0, 0, &g), PLB__NEXT_WAIT);
	plb__tasks_destroy(t);
	/* equal speedups keep the order they became ready in */
	t = three(PLB__TASKS_PAMS, type, 3, 3);
	for (int i = 0; i < 3; i++) {
		g = take(t, 1, 0);
		assert_int_equal(op_of(t, &g), 0);
		assert_int_equal(g.offset, (uint64_t)i);
	}
	plb__tasks_destroy(t);
}

/* padas: tasks gaining more on the MIC in from the head, the others from
 * the tail; the MIC takes the head, the GPU the tail, the CPU the
 * boundary (the end task of the lower side) */
static void test_padas(void **state)
{
	(void)state;
	int type[3] = {0, 1, 2};
	plb__tasks_t *t = three(PLB__TASKS_PADAS, type, 3, 2);
	/* head half: op 1 (8), op 1 (8), op 2 (1.2), op 2 (1.2); tail half
	 * from the tail: op 0 (10), op 0 (10) */
	struct plb__grant g = take(t, 2, 0);
	assert_int_equal(op_of(t, &g), 1);
	assert_int_equal(g.offset, 0);
	g = take(t, 1, 0);
	assert_int_equal(op_of(t, &g), 0);
	g = take(t, 0, 0);      /* the boundary: op 2 (1.2) against op 0 (10) */
	assert_int_equal(op_of(t, &g), 2);
	assert_int_equal(g.offset, 1); /* the end of the head half: the later one */
	g = take(t, 0, 0);
	assert_int_equal(op_of(t, &g), 2);
	g = take(t, 0, 0);      /* op 1 (8) against op 0 (10) */
	assert_int_equal(op_of(t, &g), 1);
	g = take(t, 2, 0);      /* the head half is empty: the deque's head is op 0 */
	assert_int_equal(op_of(t, &g), 0);
	assert_int_equal(plb__tasks_next(t, 1, 0, &g), PLB__NEXT_WAIT);
	plb__tasks_destroy(t);
	/* four accelerator types: refused, saying to use pams */
	static const struct plb__pipe_op ops[1] = {{0, 1, ALL}};
	int four[4] = {0, 1, 2, 3};
	struct plb__tasks_cfg c = {.policy = PLB__TASKS_PADAS, .nops = 1, .ops = ops, .npu = 4,
				   .type = four};
	int e;
	char why[160];
	assert_null(plb__tasks_create(&c, &e, why, sizeof why));
	assert_int_equal(e, PLB_EINVAL);
	assert_non_null(strstr(why, "use pams"));
}

/* heft: each task, as it becomes ready, to the PU where it would end
 * first: on a CPU (1 s) and a GPU (0.3 s) five tasks ready at 0 end at
 * 0.3 0.6 0.9 on the GPU, then 1.0 on the CPU, then 1.2 on the GPU */
static void test_heft(void **state)
{
	(void)state;
	static const struct plb__pipe_op ops[1] = {{0, 1, ALL}};
	int type[2] = {0, 1};
	plb__tasks_t *t = make(PLB__TASKS_HEFT, 1, ops, 2, type, 0, NULL);
	assert_int_equal(plb__tasks_estimate(t, 0, 0, 1.0), 0);
	assert_int_equal(plb__tasks_estimate(t, 0, 1, 0.3), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(plb__tasks_admit(t, (uint64_t)i, 0), 0);
	struct plb__grant g = take(t, 0, 0);
	assert_int_equal(g.offset, 3);
	assert_true(fabs(g.predicted_s - 1.0) < 1e-12);
	assert_int_equal(plb__tasks_next(t, 0, 0, &g), PLB__NEXT_WAIT);
	uint64_t want[4] = {0, 1, 2, 4};
	for (int i = 0; i < 4; i++) {
		g = take(t, 1, 0);
		assert_int_equal(g.offset, want[i]);
		finish(t, 1, &g, 0.3, 0.3 * (i + 1));
	}
	plb__tasks_destroy(t);
}

/* est_error e: each expected time times 1 + e or 1 / (1 + e), the same
 * for a seed; 0 leaves them as measured; measurements refine the mean */
static void test_estimate_error(void **state)
{
	(void)state;
	static const struct plb__pipe_op ops[4] = {{0, 1, ALL}, {0, 1, ALL}, {0, 1, ALL}, {0, 1, ALL}};
	int type[2] = {0, 1};
	int up = 0, down = 0;
	plb__tasks_t *t0 = make(PLB__TASKS_PAMS, 4, ops, 2, type, 0, NULL);
	plb__tasks_t *t1 = make(PLB__TASKS_PAMS, 4, ops, 2, type, 1.0, NULL);
	plb__tasks_t *t2 = make(PLB__TASKS_PAMS, 4, ops, 2, type, 1.0, NULL);
	assert_true(isnan(plb__tasks_expected(t1, 0, 0)));    /* nothing known */
	for (int m = 0; m < 4; m++)
		for (int y = 0; y < 2; y++) {
			assert_int_equal(plb__tasks_estimate(t0, m, y, 2.0), 0);
			assert_int_equal(plb__tasks_estimate(t1, m, y, 2.0), 0);
			assert_int_equal(plb__tasks_estimate(t2, m, y, 2.0), 0);
			assert_true(plb__tasks_expected(t0, m, y) == 2.0);
			double e = plb__tasks_expected(t1, m, y);
			assert_true(e == 4.0 || e == 1.0);
			up += e == 4.0;
			down += e == 1.0;
			assert_true(e == plb__tasks_expected(t2, m, y));
		}
	assert_true(up > 0 && down > 0);        /* 8 coin flips: both sides seen */
	assert_int_equal(plb__tasks_estimate(t0, 0, 0, 0), PLB_EINVAL);
	assert_int_equal(plb__tasks_estimate(t0, 4, 0, 1), PLB_EINVAL);
	/* a measurement moves the mean: (2 + 4) / 2 */
	assert_int_equal(plb__tasks_admit(t0, 1, 0), 0);
	struct plb__grant g = take(t0, 0, 0);
	finish(t0, 0, &g, 4.0, 4.0);
	assert_true(plb__tasks_expected(t0, op_of(t0, &g), 0) == 3.0);
	plb__tasks_destroy(t0);
	plb__tasks_destroy(t1);
	plb__tasks_destroy(t2);
}

/* An operation only the GPU runs is never given to the CPU; a lost PU's
 * task goes to another; a node where no PU runs an operation is refused */
static void test_types_and_lost(void **state)
{
	(void)state;
	static const struct plb__pipe_op ops[2] = {{0, 1, 1u << 1}, {0, 1, ALL}};
	int type[3] = {0, 1, 1};
	for (int pol = 0; pol < PLB__TASKS_NPOLICY; pol++) {
		plb__tasks_t *t = make((enum plb__tasks_policy)pol, 2, ops, 3, type, 0, NULL);
		assert_int_equal(plb__tasks_admit(t, 5, 0), 0);
		struct plb__grant g = take(t, 0, 0);
		assert_int_equal(op_of(t, &g), 1);
		finish(t, 0, &g, 1, 1);
		struct plb__grant h;
		assert_int_equal(plb__tasks_next(t, 0, 1, &h), PLB__NEXT_WAIT);
		/* op 0 on a GPU: heft put it in one GPU's queue; take it there */
		int pu = 1;
		if (plb__tasks_next(t, 1, 1, &g) != PLB__NEXT_GRANT) {
			pu = 2;
			g = take(t, 2, 1);
		}
		assert_int_equal(op_of(t, &g), 0);
		assert_int_equal(plb__tasks_lost(t, pu, 2), 0);
		assert_int_equal(plb__tasks_next(t, pu, 2, &h), PLB_EINVAL);
		struct plb__block_done s = {.grant_id = g.id, .exec_s = 1, .finish = 2};
		assert_int_equal(plb__tasks_done(t, pu, &s), PLB_ESTALE);
		assert_int_equal(plb__tasks_next(t, 0, 2, &h), PLB__NEXT_WAIT);
		h = take(t, 3 - pu, 2);
		assert_int_equal(op_of(t, &h), 0);
		finish(t, 3 - pu, &h, 1, 3);
		plb__tasks_close(t);
		assert_int_equal(plb__tasks_next(t, 0, 3, &h), PLB__NEXT_DONE);
		plb__tasks_destroy(t);
	}
	int cpu_only[2] = {0, 0};
	struct plb__tasks_cfg c = {.policy = PLB__TASKS_PAMS, .nops = 2, .ops = ops, .npu = 2,
				   .type = cpu_only};
	int e;
	char why[160];
	assert_null(plb__tasks_create(&c, &e, why, sizeof why));
	assert_non_null(strstr(why, "operation 0: no PU of this node can run it"));
	struct plb__pipe_op loop[2] = {{1u << 1, 1, ALL}, {0, 1, ALL}};
	c.ops = loop;
	assert_null(plb__tasks_create(&c, &e, why, sizeof why));
	assert_non_null(strstr(why, "waits for itself or a later operation"));
}

/* Data stays where it was made: a task made ready by a GPU's output has
 * its inputs there (plb__tasks_home), and its speedup counts the copy
 * back to the host: pams gives the GPU the task whose inputs it holds;
 * measured copies (a done's xfer_s) refine the expected copy; the input
 * tasks are listed. */
static void test_data_where_made(void **state)
{
	(void)state;
	static const struct plb__pipe_op ops[2] = {{0, 1, ALL}, {1, 1, ALL}};
	int type[2] = {0, 1};
	plb__tasks_t *t = make(PLB__TASKS_PAMS, 2, ops, 2, type, 0, NULL);
	assert_int_equal(plb__tasks_estimate(t, 0, 0, 1.0), 0);
	assert_int_equal(plb__tasks_estimate(t, 0, 1, 1.0), 0);
	assert_int_equal(plb__tasks_estimate(t, 1, 0, 1.0), 0);
	assert_int_equal(plb__tasks_estimate(t, 1, 1, 0.5), 0);
	assert_int_equal(plb__tasks_estimate_copy(t, 1, 1, 0, 2.0), 0);        /* GPU -> host */
	assert_int_equal(plb__tasks_estimate_copy(t, 1, 9, 0, 2.0), PLB_EINVAL);
	assert_int_equal(plb__tasks_admit(t, 10, 0), 0);
	assert_int_equal(plb__tasks_admit(t, 20, 0), 0);
	struct plb__grant a = take(t, 0, 0), b = take(t, 1, 0);     /* op 0 of each */
	assert_int_equal(op_of(t, &a), 0);
	assert_int_equal(op_of(t, &b), 0);
	finish(t, 0, &a, 1.0, 1.0);     /* instance a.offset's input on the host */
	finish(t, 1, &b, 1.0, 1.0);     /* b.offset's on the GPU */
	/* both op 1 tasks ready: the one on the GPU's output gains 3 / 0.5 = 6
	 * there, the other 1 / 0.5 = 2: the GPU takes the first */
	struct plb__grant g = take(t, 1, 1);
	assert_int_equal(op_of(t, &g), 1);
	assert_int_equal(g.offset, b.offset);
	assert_int_equal(plb__tasks_home(t, g.id), 1);
	uint64_t in[4];
	assert_int_equal(plb__tasks_inputs(t, g.id, in, 4), 1);
	assert_int_equal(in[0], b.id);
	struct plb__grant c = take(t, 0, 1);
	assert_int_equal(c.offset, a.offset);
	assert_int_equal(plb__tasks_home(t, c.id), 0);
	assert_int_equal(plb__tasks_inputs(t, a.id, in, 4), 0);     /* op 0 reads nothing */
	/* a measured copy moves the mean: host -> GPU, 1.0 s */
	struct plb__block_done s = {.grant_id = c.id, .exec_s = 1, .xfer_s = 0, .finish = 2};
	assert_int_equal(plb__tasks_done(t, 0, &s), 0);
	plb__tasks_destroy(t);
	/* heft counts the copy in the finish time. op 0: CPU 2 s, GPU 1 s;
	 * op 1: CPU 1 s, GPU 1.5 s, and 5 s to bring its input back from the
	 * GPU. Instances 1 and 3's op 0 queue on the GPU, 2's on the CPU; once
	 * 1's op 0 ends on the GPU (t = 1), its op 1 would end at 3 on the CPU
	 * but for the copy (8), at 3.5 on the GPU: the GPU's queue gets it,
	 * and the CPU's next is instance 2's own op 1. */
	t = make(PLB__TASKS_HEFT, 2, ops, 2, type, 0, NULL);
	assert_int_equal(plb__tasks_estimate(t, 0, 0, 2.0), 0);
	assert_int_equal(plb__tasks_estimate(t, 0, 1, 1.0), 0);
	assert_int_equal(plb__tasks_estimate(t, 1, 0, 1.0), 0);
	assert_int_equal(plb__tasks_estimate(t, 1, 1, 1.5), 0);
	assert_int_equal(plb__tasks_estimate_copy(t, 1, 1, 0, 5.0), 0);
	for (uint64_t i = 1; i <= 3; i++)
		assert_int_equal(plb__tasks_admit(t, i, 0), 0);
	struct plb__grant x = take(t, 1, 0);
	assert_int_equal(x.offset, 1);
	finish(t, 1, &x, 1.0, 1.0);
	struct plb__grant y = take(t, 0, 1.0);
	assert_int_equal(y.offset, 2);
	finish(t, 0, &y, 2.0, 2.0);
	/* the CPU's next is instance 2's op 1 (its input on the host), not 1's */
	y = take(t, 0, 2.0);
	assert_int_equal(op_of(t, &y), 1);
	assert_int_equal(y.offset, 2);
	y = take(t, 1, 2.0);
	assert_int_equal(y.offset, 3);
	finish(t, 1, &y, 1.0, 3.0);
	y = take(t, 1, 3.0);
	assert_int_equal(op_of(t, &y), 1);
	assert_int_equal(y.offset, 1);
	plb__tasks_destroy(t);
}

/* ---- random pipelines through the driver ---------------------------------- */

struct bed {
	plb__tasks_t *t;
	struct plb__driver d;
	int npu, nops;
	struct plb__pipe_op ops[8];
	int type[8];
	uint64_t out[8];        /* the task each PU runs (0: none) */
	unsigned char *done;    /* by task id */
	long ran;
	uint64_t rng;
};

static uint64_t rnd(struct bed *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return b->rng;
}

static int bed_grant(void *ctx, int pu, const struct plb__grant *g)
{
	struct bed *b = ctx;
	assert_int_equal(b->out[pu], 0);       /* pipeline depth 1 */
	b->out[pu] = g->id;
	return 0;
}

/* every task of the operations before op in inst has ended */
static void preds_ended(struct bed *b, uint64_t inst, int op)
{
	struct plb__tasks_stats st;
	plb__tasks_stats(b->t, &st);
	for (uint64_t id = 1; id <= (uint64_t)st.tasks_made; id++) {
		uint64_t i;
		int o, x;
		assert_int_equal(plb__tasks_task(b->t, id, &i, &o, &x), 0);
		if (i == inst && (b->ops[op].after >> o & 1) && !b->done[id])
			fail_msg("instance %llu: op %d given before op %d ended", (unsigned long long)inst,
				 op, o);
	}
}

static void test_random_pipelines(void **state)
{
	(void)state;
	for (int trial = 0; trial < 60; trial++) {
		struct bed b = {.rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(trial + 1)};
		enum plb__tasks_policy pol = (enum plb__tasks_policy)(trial % PLB__TASKS_NPOLICY);
		b.nops = 1 + (int)(rnd(&b) % 8);
		b.npu = 1 + (int)(rnd(&b) % 8);
		for (int p = 0; p < b.npu; p++)
			b.type[p] = p == 0 ? 0 : (int)(rnd(&b) % 3);
		for (int m = 0; m < b.nops; m++) {
			b.ops[m].after = m ? rnd(&b) & ((1u << m) - 1) : 0;
			b.ops[m].tasks = (int)(rnd(&b) % 3);
			b.ops[m].types = 1u | (unsigned)(rnd(&b) & 6);  /* the CPU runs all */
		}
		struct fin f = {0};
		b.t = make(pol, b.nops, b.ops, b.npu, b.type, (double)(trial % 3) * 0.5, &f);
		assert_int_equal(plb__driver_init_source(&b.d, &plb__tasks_source, b.t, b.npu, 1, bed_grant,
							 NULL, &b), 0);
		b.done = calloc(100000, 1);
		int ninst = 1 + (int)(rnd(&b) % 30), admitted = 0;
		double now = 0;
		for (int p = 0; p < b.npu; p++)
			assert_int_equal(plb__driver_poll(&b.d, p, now), 0);
		for (int step = 0; step < 100000; step++) {
			if (admitted < ninst && rnd(&b) % 3 == 0) {
				assert_int_equal(plb__tasks_admit(b.t, (uint64_t)admitted * 7 + 1, now), 0);
				if (rnd(&b) % 4 == 0 && b.nops > 1) {   /* expand a later op, maybe */
					/* EINVAL where the op was made at admission already */
					int rc = plb__tasks_expand(b.t, (uint64_t)admitted * 7 + 1, b.nops - 1,
								   (int)(rnd(&b) % 4));
					assert_true(rc == 0 || rc == PLB_EINVAL);
				}
				if (++admitted == ninst)
					plb__tasks_close(b.t);
			} else {
				int p = (int)(rnd(&b) % (uint64_t)b.npu);
				if (!b.out[p])
					continue;
				uint64_t id = b.out[p], inst;
				int op, x;
				assert_int_equal(plb__tasks_task(b.t, id, &inst, &op, &x), 0);
				assert_true((b.ops[op].types >> b.type[p]) & 1);
				preds_ended(&b, inst, op);
				assert_int_equal(b.done[id], 0);
				b.done[id] = 1;
				b.ran++;
				b.out[p] = 0;
				now += 0.001;
				struct plb__block_done s = {.grant_id = id, .exec_s = 0.001 * (1 + b.type[p]), .finish = now};
				assert_int_equal(plb__driver_done(&b.d, p, &s), 0);
			}
			assert_int_equal(plb__driver_answer(&b.d, now), 0);
			int busy = 0;
			for (int p = 0; p < b.npu; p++)
				busy |= b.out[p] != 0;
			if (admitted == ninst && !busy)
				break;
		}
		struct plb__tasks_stats st;
		plb__tasks_stats(b.t, &st);
		if (f.n != ninst || st.tasks_done != st.tasks_made || b.ran != st.tasks_made)
			fail_msg("trial %d (%s): %d of %d instances, %ld of %ld tasks", trial,
				 plb__tasks_policy_name(pol), f.n, ninst, st.tasks_done, st.tasks_made);
		for (int p = 0; p < b.npu; p++)
			assert_true(b.d.pu[p].finished);
		plb__driver_fini(&b.d);
		plb__tasks_destroy(b.t);
		free(b.done);
	}
}

/* pams leaves a task taken from one type's heap in the others' until it
 * surfaces; a type that takes nothing must not hold them all: a GPU held
 * by one task for ever, while a CPU runs 5,000 instances of two ops both
 * types run, keeps at most twice the ready tasks (and 64) in its heap. */
static void test_pams_heaps_bounded(void **state)
{
	(void)state;
	struct plb__pipe_op ops[2] = {{0, 1, 3}, {1, 1, 3}};
	const int type[2] = {0, 1};
	plb__tasks_t *t = make(PLB__TASKS_PAMS, 2, ops, 2, type, 0, NULL);
	assert_int_equal(plb__tasks_estimate(t, 0, 0, 1), 0);
	assert_int_equal(plb__tasks_estimate(t, 0, 1, 0.5), 0);
	assert_int_equal(plb__tasks_estimate(t, 1, 0, 1), 0);
	assert_int_equal(plb__tasks_estimate(t, 1, 1, 0.5), 0);
	assert_int_equal(plb__tasks_admit(t, 0, 0), 0);
	struct plb__grant held = take(t, 1, 0);         /* the GPU's, never done */
	(void)held;
	double now = 0;
	long most = 0;
	for (uint64_t i = 1; i <= 5000; i++) {
		assert_int_equal(plb__tasks_admit(t, i, now), 0);
		for (int k = 0; k < 2; k++) {
			struct plb__grant g;
			if (plb__tasks_next(t, 0, now, &g) != PLB__NEXT_GRANT)
				break;
			now += 1;
			finish(t, 0, &g, 1, now);
		}
		struct plb__tasks_stats st;
		plb__tasks_stats(t, &st);
		if (st.heap_entries > most)
			most = st.heap_entries;
		assert_true(st.heap_entries <= 2 * (st.ready + 1) + 64 + 2);
	}
	struct plb__tasks_stats st;
	plb__tasks_stats(t, &st);
	assert_true(st.tasks_done > 9000);      /* the CPU ran nearly all */
	assert_true(most < 200);
	plb__tasks_destroy(t);
}

/* A long run keeps only what is live: 20,000 instances of a three-op
 * dataflow (one op with two tasks, one only the GPU type runs) through
 * each policy on two CPUs and a GPU, the PUs ending their tasks in a
 * random order, 8 instances in the window; every task is made and done
 * once, a task's id names its instance while it is out, and the tasks
 * and instances kept stay bounded. */
static void test_long_run_bounded(void **state)
{
	(void)state;
	struct plb__pipe_op ops[3] = {{0, 1, 3}, {1, 2, 3}, {1, 1, 2}};
	const int type[3] = {0, 0, 1};
	for (int pol = 0; pol < PLB__TASKS_NPOLICY; pol++) {
		struct fin f = {{0}, 0};
		plb__tasks_t *t = make((enum plb__tasks_policy)pol, 3, ops, 3, type, 0, &f);
		for (int m = 0; m < 3; m++)
			for (int y = 0; y < 2; y++)
				if (ops[m].types >> y & 1)
					assert_int_equal(plb__tasks_estimate(t, m, y, y ? 0.5 : 1), 0);
		uint64_t next = 0, seed = 12345;
		struct plb__grant out[3] = {{0}};
		int busy[3] = {0};
		long most_tasks = 0, most_inst = 0;
		double now = 0;
		while (f.n < 20000) {
			while (next < 20000 && next - (uint64_t)f.n < 8)
				assert_int_equal(plb__tasks_admit(t, next++, now), 0);
			if (next == 20000)
				plb__tasks_close(t);
			for (int p = 0; p < 3; p++)
				if (!busy[p] && plb__tasks_next(t, p, now, &out[p]) == PLB__NEXT_GRANT) {
					uint64_t inst;
					int op, idx;
					assert_int_equal(plb__tasks_task(t, out[p].id, &inst, &op, &idx), 0);
					assert_int_equal(inst, out[p].offset);
					assert_true(op != 2 || type[p] == 1);
					busy[p] = 1;
				}
			/* one PU ends its task, at random */
			int p = -1;
			for (int k = 0; k < 3 && p < 0; k++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				int c = (int)(seed >> 33) % 3;
				if (busy[c])
					p = c;
			}
			for (int c = 0; c < 3 && p < 0; c++)
				if (busy[c])
					p = c;
			assert_true(p >= 0);
			now += 0.01;
			finish(t, p, &out[p], type[p] ? 0.5 : 1, now);
			busy[p] = 0;
			struct plb__tasks_stats st;
			plb__tasks_stats(t, &st);
			most_tasks = st.tasks_kept > most_tasks ? st.tasks_kept : most_tasks;
			most_inst = st.instances_kept > most_inst ? st.instances_kept : most_inst;
		}
		struct plb__tasks_stats st;
		plb__tasks_stats(t, &st);
		assert_int_equal(st.tasks_done, 20000 * 4);
		assert_int_equal(st.tasks_made, 20000 * 4);
		assert_int_equal(st.instances_done, 20000);
		if (most_tasks > 3000 || most_inst > 1000)
			fail_msg("%s kept up to %ld tasks and %ld instances", plb__tasks_policy_name(pol),
				 most_tasks, most_inst);
		plb__tasks_destroy(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_dataflow),
		cmocka_unit_test(test_pams),
		cmocka_unit_test(test_padas),
		cmocka_unit_test(test_heft),
		cmocka_unit_test(test_estimate_error),
		cmocka_unit_test(test_types_and_lost),
		cmocka_unit_test(test_data_where_made),
		cmocka_unit_test(test_random_pipelines),
		cmocka_unit_test(test_pams_heaps_bounded),
		cmocka_unit_test(test_long_run_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
