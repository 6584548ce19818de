/* A node's scheduler of pipeline tasks (see tasks.h): the dataflow of each
 * admitted instance, the expected times, and the four policies' ready
 * sets. fcfs: a FIFO; heft: a FIFO a PU and each PU's expected end; padas:
 * two sorted arrays, the deque's head half and its tail half; pams: a
 * binary heap a device type, a task leaving the others lazily (a taken
 * task is skipped when it reaches a heap's top). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/base/vec.h"
#include "balancer/tasks.h"

enum { T_WAIT, T_READY, T_OUT, T_DONE };

struct task {
	int inst;               /* the instance's slot; -1: its instance ended and
				 * its slot was dropped (compact) */
	int op, index, state;
	int home;               /* the device type its inputs are on (0: the host) */
	int pu;                 /* T_OUT: where; heft, T_READY: whose queue */
	uint64_t seq;           /* when it became ready: the order of equals */
};

struct inst {
	uint64_t id;
	int ops_left;
};

/* An entry of a sorted set: key, then the order it became ready in. */
struct ent {
	double key;
	uint64_t seq;
	int task;
};

struct fifo {
	int *v;
	size_t n, cap, head;
};

struct heap {
	struct ent *v;
	size_t n, cap;
};

struct sorted {                 /* key descending, equal keys in seq order */
	struct ent *v;
	size_t n, cap;
};

struct plb__tasks {
	struct plb__tasks_cfg c;
	struct plb__pipe_op ops[PLB__TASKS_MAX_OPS];
	int *type;              /* each PU's */
	int ntypes;             /* highest type + 1 */
	int present[PLB__TASKS_MAX_TYPES];      /* PUs of each type alive */
	unsigned char *lost;
	/* expected times: sums and counts of measurements, by op and type, and
	 * the error's factor */
	double sum[PLB__TASKS_MAX_OPS][PLB__TASKS_MAX_TYPES];
	long cnt[PLB__TASKS_MAX_OPS][PLB__TASKS_MAX_TYPES];
	double err_f[PLB__TASKS_MAX_OPS][PLB__TASKS_MAX_TYPES];
	/* copies of a task's inputs, by op, from the type they are on to the
	 * type that runs it: sums and counts of measurements */
	double csum[PLB__TASKS_MAX_OPS][PLB__TASKS_MAX_TYPES][PLB__TASKS_MAX_TYPES];
	long ccnt[PLB__TASKS_MAX_OPS][PLB__TASKS_MAX_TYPES][PLB__TASKS_MAX_TYPES];
	struct task *task;      /* task id tbase + k + 1 at k */
	size_t ntask, captask;
	uint64_t tbase;         /* tasks dropped from the front (compact) */
	struct inst *inst;
	size_t ninst, capinst;
	int *left, *count;      /* ninst * nops: tasks of op not ended (-1: not made), to make */
	int *first, *where;     /* ninst * nops: its first task's index; the type that ran
				 * its last task to end (where its output is) */
	size_t capio;
	uint64_t *hkey;         /* open addressing: instance id + 1 -> slot */
	int *hval;
	size_t hcap;
	uint64_t seq;
	int closed;
	long ready;             /* tasks T_READY */
	/* ready sets */
	struct fifo fcfs;
	struct fifo *pq;        /* heft: a queue a PU */
	double *avail;          /* heft: when each PU's queue is expected to end */
	struct heap heap[PLB__TASKS_MAX_TYPES];
	struct sorted side[2];  /* padas: [0] the head half (type 2), [1] the tail half (type 1) */
	struct plb__tasks_stats st;
};

static const char *const policy_names[] = {
#define X(ID, name) name,
	PLB__TASKS_POLICIES(X)
#undef X
};

int plb__tasks_policy_parse(const char *name, enum plb__tasks_policy *p)
{
	for (int i = 0; i < PLB__TASKS_NPOLICY; i++)
		if (name && !strcmp(name, policy_names[i])) {
			*p = (enum plb__tasks_policy)i;
			return 0;
		}
	return PLB_EINVAL;
}

const char *plb__tasks_policy_name(enum plb__tasks_policy p)
{
	return (unsigned)p < PLB__TASKS_NPOLICY ? policy_names[p] : "?";
}

const char *plb__tasks_policies_accepted(void)
{
	return "fcfs | heft | padas | pams";
}

/* ---- expected times and speedups ---------------------------------------- */

static int runs(const plb__tasks_t *t, int op, int type)
{
	return (int)(t->ops[op].types >> type & 1);
}

double plb__tasks_expected(const plb__tasks_t *t, int op, int type)
{
	if (!runs(t, op, type))
		return INFINITY;
	if (t->cnt[op][type])
		return t->sum[op][type] / (double)t->cnt[op][type] * t->err_f[op][type];
	/* not known on this type: the mean of the types it is known on */
	double s = 0;
	int k = 0;
	for (int y = 0; y < t->ntypes; y++)
		if (runs(t, op, y) && t->cnt[op][y]) {
			s += t->sum[op][y] / (double)t->cnt[op][y] * t->err_f[op][y];
			k++;
		}
	return k ? s / k : NAN;
}

/* The expected time to bring op's inputs from type `from` to type `to`:
 * none on one type, or between CPUs (host memory); the mean of what was
 * measured (and seeded); 0 while nothing is known. */
static double copy_s(const plb__tasks_t *t, int op, int from, int to)
{
	if (t->c.blind_copies || from == to || (unsigned)from >= PLB__TASKS_MAX_TYPES || (unsigned)to >= PLB__TASKS_MAX_TYPES)
		return 0;
	long n = t->ccnt[op][from][to];
	return n ? t->csum[op][from][to] / (double)n : 0;
}

/* Task k's expected time on type, its inputs' copy included */
static double task_time(const plb__tasks_t *t, int k, int type)
{
	const struct task *x = &t->task[k];
	return plb__tasks_expected(t, x->op, type) + copy_s(t, x->op, x->home, type);
}

/* Task k's speedup on type against the CPU type, copies counted: the
 * paper's speedup where nothing moves */
static double task_speedup(const plb__tasks_t *t, int k, int type)
{
	const struct task *x = &t->task[k];
	if (!runs(t, x->op, type))
		return 0;
	if (!type)
		return 1;
	double c = task_time(t, k, 0), a = task_time(t, k, type);
	if (isnan(c) || isnan(a))
		return 1;
	return a > 0 ? c / a : INFINITY;
}

static double task_best_acc(const plb__tasks_t *t, int k)
{
	double b = 0;
	for (int y = 1; y < t->ntypes; y++)
		if (t->present[y] && task_speedup(t, k, y) > b)
			b = task_speedup(t, k, y);
	return b;
}

int plb__tasks_estimate_copy(plb__tasks_t *t, int op, int from, int to, double seconds)
{
	if (!t || op < 0 || op >= t->c.nops || (unsigned)from >= PLB__TASKS_MAX_TYPES ||
	    (unsigned)to >= PLB__TASKS_MAX_TYPES || !(seconds >= 0) || !isfinite(seconds))
		return PLB_EINVAL;
	t->csum[op][from][to] += seconds;
	t->ccnt[op][from][to]++;
	return 0;
}

int plb__tasks_estimate(plb__tasks_t *t, int op, int type, double seconds)
{
	if (!t || op < 0 || op >= t->c.nops || type < 0 || type >= PLB__TASKS_MAX_TYPES ||
	    !(seconds > 0) || !isfinite(seconds))
		return PLB_EINVAL;
	t->sum[op][type] += seconds;
	t->cnt[op][type]++;
	return 0;
}

/* ---- the ready sets ----------------------------------------------------- */

static int ent_before(const struct ent *a, const struct ent *b)
{
	return a->key > b->key || (a->key == b->key && a->seq < b->seq);
}

static int ent_first(const void *a, const void *b)
{
	return ent_before(a, b);
}

static int heap_push(struct heap *h, struct ent e)
{
	return plb__heap_push(&h->v, &h->n, &h->cap, sizeof e, &e, ent_first);
}

static int sorted_insert(struct sorted *s, struct ent e)
{
	if (plb__push(&s->v, &s->n, &s->cap, sizeof e, &e))
		return PLB_ENOMEM;
	/* before the first entry with a smaller key: after its equals */
	size_t lo = 0, hi = s->n - 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ent_before(&s->v[mid], &e))
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(s->v + lo + 1, s->v + lo, (s->n - 1 - lo) * sizeof e);
	s->v[lo] = e;
	return 0;
}

static void sorted_remove(struct sorted *s, size_t i)
{
	memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
	s->n--;
}

static int fifo_push(struct fifo *f, int x)
{
	if (f->head > 64 && f->head * 2 > f->n) {       /* compact */
		memmove(f->v, f->v + f->head, (f->n - f->head) * sizeof *f->v);
		f->n -= f->head;
		f->head = 0;
	}
	return plb__push(&f->v, &f->n, &f->cap, sizeof x, &x);
}

/* The first task of f that PU type `type` runs, taken out; -1 if none. */
static int fifo_take(plb__tasks_t *t, struct fifo *f, int type)
{
	for (size_t i = f->head; i < f->n; i++) {
		int k = f->v[i];
		if (!runs(t, t->task[k].op, type))
			continue;
		memmove(f->v + f->head + 1, f->v + f->head, (i - f->head) * sizeof *f->v);
		f->head++;
		return k;
	}
	return -1;
}

/* heft: PU p's queue's expected end, from now */
static void heft_avail(plb__tasks_t *t, int p, double now)
{
	double e = now;
	struct fifo *f = &t->pq[p];
	for (size_t i = f->head; i < f->n; i++) {
		double x = task_time(t, f->v[i], t->type[p]);
		e += isnan(x) ? 1 : x;
	}
	t->avail[p] = e;        /* (from now: the task it runs has ended) */
}

/* heft: the PU on which task k would finish first */
static int heft_place(plb__tasks_t *t, int k, double now)
{
	int best = -1;
	double bf = INFINITY;
	for (int p = 0; p < t->c.npu; p++) {
		if (t->lost[p] || !runs(t, t->task[k].op, t->type[p]))
			continue;
		double e = task_time(t, k, t->type[p]);
		double f = (t->avail[p] > now ? t->avail[p] : now) + (isnan(e) ? 1 : e);
		if (f < bf || best < 0) {
			bf = f;
			best = p;
		}
	}
	if (best < 0)
		return PLB_ESTATE;      /* no PU left runs it */
	t->task[k].pu = best;
	t->avail[best] = bf;
	return fifo_push(&t->pq[best], k);
}

/* padas: which half task k goes in, and its key there */
static int padas_side(const plb__tasks_t *t, int k, double *key)
{
	double s1 = t->ntypes > 1 && t->present[1] ? task_speedup(t, k, 1) : 0;
	double s2 = t->ntypes > 2 && t->present[2] ? task_speedup(t, k, 2) : 0;
	if (s2 > s1) {
		*key = s2;
		return 0;       /* the head half */
	}
	*key = s1;
	return 1;
}

/* pams: the entries of tasks no longer ready (taken from another type's
 * heap) are left to surface; a heap whose type seldom takes a task would
 * keep them for ever, so past twice the ready tasks it is rebuilt from
 * the ready ones. Entries order by (key, seq), unique, so the heap pops
 * the same tasks in the same order either way. 0 or PLB_ENOMEM. */
static int heap_purge(plb__tasks_t *t, struct heap *h)
{
	struct heap k = {0};
	for (size_t i = 0; i < h->n; i++)
		if (t->task[h->v[i].task].state == T_READY && heap_push(&k, h->v[i])) {
			free(k.v);
			return PLB_ENOMEM;
		}
	free(h->v);
	*h = k;
	return 0;
}

/* Task k becomes ready at now. */
static int make_ready(plb__tasks_t *t, int k, double now)
{
	struct task *x = &t->task[k];
	x->state = T_READY;
	x->seq = ++t->seq;
	t->ready++;
	switch (t->c.policy) {
	case PLB__TASKS_FCFS:
		return fifo_push(&t->fcfs, k);
	case PLB__TASKS_HEFT:
		return heft_place(t, k, now);
	case PLB__TASKS_PADAS: {
		struct ent e = {0, x->seq, k};
		int side = padas_side(t, k, &e.key);
		return sorted_insert(&t->side[side], e);
	}
	case PLB__TASKS_PAMS:
		for (int y = 0; y < t->ntypes; y++) {
			if (!t->present[y] || !runs(t, x->op, y))
				continue;
			double key = y ? task_speedup(t, k, y) : -task_best_acc(t, k);
			int rc = heap_push(&t->heap[y], (struct ent){key, x->seq, k});
			if (!rc && t->heap[y].n > 2 * (size_t)t->ready + 64)
				rc = heap_purge(t, &t->heap[y]);
			if (rc)
				return rc;
		}
		return 0;
	default:
		return PLB_ESTATE;
	}
}

/* padas: the entry at deque position at (from the head: the head half in
 * order, then the tail half backwards), and taking it out */
static struct ent *deque_at(plb__tasks_t *t, size_t at)
{
	struct sorted *h = &t->side[0], *tl = &t->side[1];
	return at < h->n ? &h->v[at] : &tl->v[h->n + tl->n - 1 - at];
}

static int deque_take(plb__tasks_t *t, size_t at)
{
	struct sorted *h = &t->side[0], *tl = &t->side[1];
	int k = deque_at(t, at)->task;
	if (at < h->n)
		sorted_remove(h, at);
	else
		sorted_remove(tl, h->n + tl->n - 1 - at);
	return k;
}

/* padas: the task a PU of type `type` takes: the second accelerator type
 * from the head, the first from the tail, a CPU from the boundary outwards
 * (at each step the side whose end task has the lower speedup); the first
 * it can run; -1 if none */
static int padas_take(plb__tasks_t *t, int type)
{
	size_t n = t->side[0].n + t->side[1].n;
	if (type) {
		for (size_t j = 0; j < n; j++) {
			size_t at = type == 2 ? j : n - 1 - j;
			if (runs(t, t->task[deque_at(t, at)->task].op, type))
				return deque_take(t, at);
		}
		return -1;
	}
	long lo = (long)t->side[0].n - 1, hi = (long)t->side[0].n;
	while (lo >= 0 || hi < (long)n) {
		int use_lo = hi >= (long)n ||
			     (lo >= 0 && deque_at(t, (size_t)lo)->key <= deque_at(t, (size_t)hi)->key);
		size_t at = (size_t)(use_lo ? lo : hi);
		if (runs(t, t->task[deque_at(t, at)->task].op, 0))
			return deque_take(t, at);
		if (use_lo)
			lo--;
		else
			hi++;
	}
	return -1;
}

/* pams: the top of type's heap still ready; -1 if none */
static int pams_take(plb__tasks_t *t, int type)
{
	struct heap *h = &t->heap[type];
	while (h->n) {
		struct ent top;
		plb__heap_pop(&h->v, &h->n, sizeof top, &top, ent_first);
		if (t->task[top.task].state == T_READY)
			return top.task;
	}
	return -1;
}

/* ---- instances and their dataflow --------------------------------------- */

static size_t slot_hash(uint64_t id, size_t cap)
{
	uint64_t z = (id + 1) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(z ^ (z >> 29)) & (cap - 1);
}

static int find_slot(const plb__tasks_t *t, uint64_t id)
{
	if (!t->hcap)
		return -1;
	for (size_t i = slot_hash(id, t->hcap);; i = (i + 1) & (t->hcap - 1)) {
		if (!t->hkey[i])
			return -1;
		if (t->hkey[i] == id + 1)
			return t->hval[i];
	}
}

static int hash_put(plb__tasks_t *t, uint64_t id, int slot)
{
	if ((t->ninst + 1) * 2 > t->hcap) {
		size_t cap = t->hcap ? t->hcap * 2 : 64;
		uint64_t *k = calloc(cap, sizeof *k);
		int *v = calloc(cap, sizeof *v);
		if (!k || !v) {
			free(k);
			free(v);
			return PLB_ENOMEM;
		}
		for (size_t i = 0; i < t->hcap; i++)
			if (t->hkey[i]) {
				size_t j = slot_hash(t->hkey[i] - 1, cap);
				while (k[j])
					j = (j + 1) & (cap - 1);
				k[j] = t->hkey[i];
				v[j] = t->hval[i];
			}
		free(t->hkey);
		free(t->hval);
		t->hkey = k;
		t->hval = v;
		t->hcap = cap;
	}
	size_t j = slot_hash(id, t->hcap);
	while (t->hkey[j])
		j = (j + 1) & (t->hcap - 1);
	t->hkey[j] = id + 1;
	t->hval[j] = slot;
	return 0;
}

static int *left_of(plb__tasks_t *t, int slot)
{
	return t->left + (size_t)slot * (size_t)t->c.nops;
}

static int *count_of(plb__tasks_t *t, int slot)
{
	return t->count + (size_t)slot * (size_t)t->c.nops;
}

static int op_ended(plb__tasks_t *t, int slot, int op, double now);

/* Makes op's tasks of instance slot, ready now (op's predecessors ended,
 * the last of them on type home). */
static int make_op(plb__tasks_t *t, int slot, int op, int home, double now)
{
	int n = count_of(t, slot)[op];
	left_of(t, slot)[op] = n;
	t->first[(size_t)slot * (size_t)t->c.nops + (size_t)op] = (int)t->ntask;
	t->where[(size_t)slot * (size_t)t->c.nops + (size_t)op] = home;
	if (!n)
		return op_ended(t, slot, op, now);
	for (int i = 0; i < n; i++) {
		struct task x = {.inst = slot, .op = op, .index = i, .state = T_WAIT, .pu = -1,
				 .home = home};
		if (plb__push(&t->task, &t->ntask, &t->captask, sizeof x, &x))
			return PLB_ENOMEM;
		t->st.tasks_made++;
		int rc = make_ready(t, (int)t->ntask - 1, now);
		if (rc)
			return rc;
	}
	return 0;
}

/* The tasks of op in instance slot have all ended: the operations waiting
 * for it start where it was the last they waited for. */
static int op_ended(plb__tasks_t *t, int slot, int op, double now)
{
	int *left = left_of(t, slot);
	left[op] = 0;
	struct inst *in = &t->inst[slot];
	if (--in->ops_left == 0) {
		t->st.instances_done++;
		if (t->c.finished)
			t->c.finished(t->c.ctx, in->id, now);
		return 0;
	}
	for (int m = op + 1; m < t->c.nops; m++) {
		uint64_t a = t->ops[m].after;
		if (!(a >> op & 1) || left[m] >= 0)
			continue;
		int ready = 1;
		for (int j = 0; j < m && ready; j++)
			if ((a >> j & 1) && left[j] != 0)
				ready = 0;
		int rc = ready ? make_op(t, slot, m, t->where[(size_t)slot * (size_t)t->c.nops + (size_t)op],
					 now) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

int plb__tasks_admit(plb__tasks_t *t, uint64_t inst, double now)
{
	if (!t || t->closed || find_slot(t, inst) >= 0 || inst == UINT64_MAX)
		return PLB_EINVAL;
	size_t nops = (size_t)t->c.nops;
	if (t->ninst + 1 > t->capio) {
		size_t cap = t->capio ? t->capio * 2 : 64;
		int *l = realloc(t->left, cap * nops * sizeof *l);
		if (!l)
			return PLB_ENOMEM;
		t->left = l;
		int *c = realloc(t->count, cap * nops * sizeof *c);
		if (!c)
			return PLB_ENOMEM;
		t->count = c;
		int *f = realloc(t->first, cap * nops * sizeof *f);
		if (!f)
			return PLB_ENOMEM;
		t->first = f;
		int *w = realloc(t->where, cap * nops * sizeof *w);
		if (!w)
			return PLB_ENOMEM;
		t->where = w;
		t->capio = cap;
	}
	struct inst x = {.id = inst, .ops_left = t->c.nops};
	if (hash_put(t, inst, (int)t->ninst) ||
	    plb__push(&t->inst, &t->ninst, &t->capinst, sizeof x, &x))
		return PLB_ENOMEM;
	int slot = (int)t->ninst - 1;
	t->st.instances_admitted++;
	for (size_t m = 0; m < nops; m++) {
		left_of(t, slot)[m] = -1;
		count_of(t, slot)[m] = t->ops[m].tasks;
		t->first[(size_t)slot * nops + m] = -1;
		t->where[(size_t)slot * nops + m] = 0;
	}
	for (int m = 0; m < t->c.nops; m++) {
		int rc = !t->ops[m].after ? make_op(t, slot, m, 0, now) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

int plb__tasks_expand(plb__tasks_t *t, uint64_t inst, int op, int count)
{
	int slot = t ? find_slot(t, inst) : -1;
	if (slot < 0 || op < 0 || op >= t->c.nops || count < 0 || left_of(t, slot)[op] >= 0)
		return PLB_EINVAL;
	count_of(t, slot)[op] = count;
	return 0;
}

void plb__tasks_close(plb__tasks_t *t)
{
	t->closed = 1;
}

/* ---- ids, and the ended instances' tasks dropped ----------------------- */

/* Task id's index, or -1 when it is not one of the tasks kept (or its
 * instance's slot is gone). */
static long index_of(const plb__tasks_t *t, uint64_t id)
{
	if (!t || id <= t->tbase || id - t->tbase > t->ntask)
		return -1;
	long k = (long)(id - t->tbase - 1);
	return t->task[k].inst >= 0 ? k : -1;
}

static uint64_t id_of(const plb__tasks_t *t, size_t k)
{
	return t->tbase + (uint64_t)k + 1;
}

static void shift_fifo(struct fifo *f, int by)
{
	for (size_t i = f->head; i < f->n; i++)
		f->v[i] -= by;
}

static void shift_ents(struct ent *v, size_t n, int by)
{
	for (size_t i = 0; i < n; i++)
		v[i].task -= by;
}

/* A run of many instances would keep every task and instance it made:
 * those of ended instances are dropped from the front of the arrays once
 * they are more than half of them (and a thousand). Ids stay as they were
 * (the caller holds them): id = tbase + index + 1. The ready sets hold
 * ready tasks only, but pams' heaps also stale entries: they are rebuilt
 * from the ready ones first. Nothing any policy decides depends on where
 * a task is kept. 0 or PLB_ENOMEM. */
static int compact(plb__tasks_t *t)
{
	size_t dead = 0, gone = 0;
	while (dead < t->ntask && (t->task[dead].inst < 0 || t->inst[t->task[dead].inst].ops_left == 0))
		dead++;
	while (gone < t->ninst && t->inst[gone].ops_left == 0)
		gone++;
	if (dead < 1024 || dead * 2 < t->ntask)
		return 0;
	for (int y = 0; y < PLB__TASKS_MAX_TYPES; y++)
		if (t->heap[y].n && heap_purge(t, &t->heap[y]))
			return PLB_ENOMEM;
	int by = (int)dead;
	memmove(t->task, t->task + dead, (t->ntask - dead) * sizeof *t->task);
	t->ntask -= dead;
	t->tbase += dead;
	shift_fifo(&t->fcfs, by);
	for (int p = 0; t->pq && p < t->c.npu; p++)
		shift_fifo(&t->pq[p], by);
	for (int y = 0; y < PLB__TASKS_MAX_TYPES; y++)
		shift_ents(t->heap[y].v, t->heap[y].n, by);
	for (int i = 0; i < 2; i++)
		shift_ents(t->side[i].v, t->side[i].n, by);
	size_t nops = (size_t)t->c.nops;
	for (size_t i = 0; i < t->ninst * nops; i++)
		if (t->first[i] >= 0)
			t->first[i] = t->first[i] >= by ? t->first[i] - by : -1;
	/* and the ended instances in front: their slots (and the hash's) */
	if (gone < 256)
		return 0;
	for (size_t k = 0; k < t->ntask; k++)       /* an ended instance's: none */
		t->task[k].inst = t->task[k].inst >= (int)gone ? t->task[k].inst - (int)gone : -1;
	memmove(t->inst, t->inst + gone, (t->ninst - gone) * sizeof *t->inst);
	int *arr[] = {t->left, t->count, t->first, t->where};
	for (int a = 0; a < 4; a++)
		memmove(arr[a], arr[a] + gone * nops, (t->ninst - gone) * nops * sizeof *arr[a]);
	t->ninst -= gone;
	memset(t->hkey, 0, t->hcap * sizeof *t->hkey);
	for (size_t i = 0; i < t->ninst; i++) {
		size_t j = slot_hash(t->inst[i].id, t->hcap);
		while (t->hkey[j])
			j = (j + 1) & (t->hcap - 1);
		t->hkey[j] = t->inst[i].id + 1;
		t->hval[j] = (int)i;
	}
	return 0;
}

/* ---- the driver's questions --------------------------------------------- */

int plb__tasks_next(plb__tasks_t *t, int pu, double now, struct plb__grant *g)
{
	if (!t || pu < 0 || pu >= t->c.npu || t->lost[pu])
		return PLB_EINVAL;
	int type = t->type[pu], k = -1;
	switch (t->c.policy) {
	case PLB__TASKS_FCFS:
		k = fifo_take(t, &t->fcfs, type);
		break;
	case PLB__TASKS_HEFT:
		k = fifo_take(t, &t->pq[pu], type);
		break;
	case PLB__TASKS_PADAS:
		k = padas_take(t, type);
		break;
	case PLB__TASKS_PAMS:
		k = pams_take(t, type);
		break;
	default:
		break;
	}
	if (k < 0) {
		if (t->closed && t->st.instances_done == t->st.instances_admitted)
			return PLB__NEXT_DONE;
		return PLB__NEXT_WAIT;
	}
	struct task *x = &t->task[k];
	x->state = T_OUT;
	x->pu = pu;
	t->ready--;
	double e = plb__tasks_expected(t, x->op, type);
	*g = (struct plb__grant){.id = id_of(t, (size_t)k), .pu = pu, .offset = t->inst[x->inst].id,
				 .units = 1, .kind = PLB__GRANT_REGULAR,
				 .predicted_s = isfinite(e) ? e : 0};
	(void)now;
	return PLB__NEXT_GRANT;
}

int plb__tasks_done(plb__tasks_t *t, int pu, const struct plb__block_done *s)
{
	if (!t || pu < 0 || pu >= t->c.npu || !s)
		return PLB_EINVAL;
	long k = index_of(t, s->grant_id);
	if (k < 0 || t->task[k].state != T_OUT || t->task[k].pu != pu)
		return PLB_ESTALE;
	struct task *x = &t->task[k];
	x->state = T_DONE;
	t->st.tasks_done++;
	int type = t->type[pu];
	t->st.ran[x->op][type]++;
	if (s->exec_s > 0 && isfinite(s->exec_s)) {
		t->sum[x->op][type] += s->exec_s;
		t->cnt[x->op][type]++;
	}
	if (x->home != type && s->xfer_s >= 0 && isfinite(s->xfer_s)) {
		t->csum[x->op][x->home][type] += s->xfer_s;
		t->ccnt[x->op][x->home][type]++;
	}
	t->where[(size_t)x->inst * (size_t)t->c.nops + (size_t)x->op] = type;
	if (t->c.policy == PLB__TASKS_HEFT)
		heft_avail(t, pu, s->finish);
	int slot = x->inst, op = x->op, rc = 0;
	if (--left_of(t, slot)[op] == 0)
		rc = op_ended(t, slot, op, s->finish);
	return rc ? rc : compact(t);
}

int plb__tasks_lost(plb__tasks_t *t, int pu, double now)
{
	if (!t || pu < 0 || pu >= t->c.npu)
		return PLB_EINVAL;
	if (t->lost[pu])
		return 0;
	t->lost[pu] = 1;
	t->present[t->type[pu]]--;
	/* its task out and (heft) its queue: ready again, for the others */
	for (size_t k = 0; k < t->ntask; k++) {
		struct task *x = &t->task[k];
		int mine = x->pu == pu && (x->state == T_OUT ||
					   (x->state == T_READY && t->c.policy == PLB__TASKS_HEFT));
		if (!mine)
			continue;
		if (x->state == T_READY)
			t->ready--;
		int rc = make_ready(t, (int)k, now);
		if (rc)
			return rc;
	}
	if (t->c.policy == PLB__TASKS_HEFT)
		t->pq[pu].n = t->pq[pu].head = 0;
	return 0;
}

int plb__tasks_idle_waits(const plb__tasks_t *t, double now)
{
	(void)now;
	return t->ready == 0 && !(t->closed && t->st.instances_done == t->st.instances_admitted);
}

int plb__tasks_task(const plb__tasks_t *t, uint64_t id, uint64_t *inst, int *op, int *index)
{
	long k = index_of(t, id);
	if (k < 0)
		return PLB_EINVAL;
	const struct task *x = &t->task[k];
	*inst = t->inst[x->inst].id;
	*op = x->op;
	*index = x->index;
	return 0;
}

int plb__tasks_of(const plb__tasks_t *t, uint64_t id)
{
	long k = index_of(t, id);
	if (k < 0)
		return PLB_EINVAL;
	const struct task *x = &t->task[k];
	return t->count[(size_t)x->inst * (size_t)t->c.nops + (size_t)x->op];
}

int plb__tasks_inputs(const plb__tasks_t *t, uint64_t id, uint64_t *ids, int max)
{
	long k = index_of(t, id);
	if (k < 0 || max < 0)
		return PLB_EINVAL;
	const struct task *x = &t->task[k];
	size_t base = (size_t)x->inst * (size_t)t->c.nops;
	int n = 0;
	for (int j = 0; j < x->op; j++) {
		if (!(t->ops[x->op].after >> j & 1) || t->first[base + (size_t)j] < 0)
			continue;
		for (int i = 0; i < t->count[base + (size_t)j]; i++, n++)
			if (n < max)
				ids[n] = id_of(t, (size_t)t->first[base + (size_t)j] + (size_t)i);
	}
	return n;
}

int plb__tasks_home(const plb__tasks_t *t, uint64_t id)
{
	long k = index_of(t, id);
	return k >= 0 ? t->task[k].home : -1;
}

void plb__tasks_stats(const plb__tasks_t *t, struct plb__tasks_stats *st)
{
	*st = t->st;
	st->ready = t->ready;
	st->tasks_kept = (long)t->ntask;
	st->instances_kept = (long)t->ninst;
	st->heap_entries = 0;
	for (int y = 0; y < PLB__TASKS_MAX_TYPES; y++)
		st->heap_entries += (long)t->heap[y].n;
}

/* ---- create and destroy ------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static int check(const struct plb__tasks_cfg *c, const int *present, int ntypes, char *why,
		 size_t len)
{
	if (c->nops < 1 || c->nops > PLB__TASKS_MAX_OPS || !c->ops || c->npu < 1 || !c->type ||
	    !(c->est_error >= 0) || !isfinite(c->est_error) ||
	    (unsigned)c->policy >= PLB__TASKS_NPOLICY) {
		snprintf(why, len, "bad arguments");
		return PLB_EINVAL;
	}
	for (int m = 0; m < c->nops; m++) {
		const struct plb__pipe_op *o = &c->ops[m];
		if (o->tasks < 0 || (m < 64 && o->after >> m)) {
			snprintf(why, len, "operation %d: %s", m,
				 o->tasks < 0 ? "a negative task count" :
				 "waits for itself or a later operation");
			return PLB_EINVAL;
		}
		int any = 0;
		for (int y = 0; y < ntypes; y++)
			any |= present[y] && (o->types >> y & 1);
		if (!any) {
			snprintf(why, len, "operation %d: no PU of this node can run it", m);
			return PLB_EINVAL;
		}
	}
	if (c->policy == PLB__TASKS_PADAS && ntypes > 3) {
		snprintf(why, len, "padas orders one deque between two accelerator types; this node "
			 "has %d: use pams", ntypes - 1);
		return PLB_EINVAL;
	}
	return 0;
}

plb__tasks_t *plb__tasks_create(const struct plb__tasks_cfg *c, int *err, char *why,
				size_t whylen)
{
	int present[PLB__TASKS_MAX_TYPES] = {0}, ntypes = 1;
	char dummy[8];
	if (!why || !whylen)
		why = dummy, whylen = sizeof dummy;
	*err = PLB_EINVAL;
	if (!c || !c->type || c->npu < 1) {
		snprintf(why, whylen, "bad arguments");
		return NULL;
	}
	for (int p = 0; p < c->npu; p++) {
		if (c->type[p] < 0 || c->type[p] >= PLB__TASKS_MAX_TYPES) {
			snprintf(why, whylen, "PU %d: device type %d; accepted: 0 to %d", p, c->type[p],
				 PLB__TASKS_MAX_TYPES - 1);
			return NULL;
		}
		present[c->type[p]]++;
		if (c->type[p] + 1 > ntypes)
			ntypes = c->type[p] + 1;
	}
	if (check(c, present, ntypes, why, whylen))
		return NULL;
	*err = PLB_ENOMEM;
	plb__tasks_t *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->c = *c;
	memcpy(t->ops, c->ops, (size_t)c->nops * sizeof *c->ops);
	t->c.ops = t->ops;
	t->ntypes = ntypes;
	memcpy(t->present, present, sizeof present);
	t->type = malloc((size_t)c->npu * sizeof *t->type);
	t->lost = calloc((size_t)c->npu, 1);
	t->pq = calloc((size_t)c->npu, sizeof *t->pq);
	t->avail = calloc((size_t)c->npu, sizeof *t->avail);
	if (!t->type || !t->lost || !t->pq || !t->avail) {
		plb__tasks_destroy(t);
		return NULL;
	}
	memcpy(t->type, c->type, (size_t)c->npu * sizeof *t->type);
	t->c.type = t->type;
	for (int m = 0; m < c->nops; m++)
		for (int y = 0; y < PLB__TASKS_MAX_TYPES; y++) {
			uint64_t z = mix64(c->seed ^ mix64((uint64_t)(m * PLB__TASKS_MAX_TYPES + y + 1)));
			double f = 1 + c->est_error;
			t->err_f[m][y] = c->est_error == 0 ? 1 : (z & 1) ? f : 1 / f;
		}
	*err = 0;
	return t;
}

void plb__tasks_destroy(plb__tasks_t *t)
{
	if (!t)
		return;
	free(t->type);
	free(t->lost);
	if (t->pq)
		for (int p = 0; p < t->c.npu; p++)
			free(t->pq[p].v);
	free(t->pq);
	free(t->avail);
	for (int y = 0; y < PLB__TASKS_MAX_TYPES; y++)
		free(t->heap[y].v);
	free(t->side[0].v);
	free(t->side[1].v);
	free(t->fcfs.v);
	free(t->task);
	free(t->inst);
	free(t->left);
	free(t->count);
	free(t->first);
	free(t->where);
	free(t->hkey);
	free(t->hval);
	free(t);
}
