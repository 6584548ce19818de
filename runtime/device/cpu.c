/* The cpu device class (cpu = all | N in a [node]): one PU over a team of
 * cores. The PU's thread and cores - 1 helpers are each bound to one core
 * of those this process may run on (hwloc; the binding that mpirun's
 * --bind-to, a batch system's cpuset or taskset gave it is kept); a block
 * is cut into one contiguous part per team member and the kernel's cpu
 * function runs on every part at once (the worker has set BLAS to one
 * thread per caller), or, for a kernel class with `whole`, every member is
 * called on the whole block with its member index. cpu = all is every core
 * but one per PU of the same node section whose class has host_core (a
 * GPU's). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "balancer/base/log.h"
#include "runtime/device/device.h"

#define MAX_TEAM 512    /* cores in one CPU PU's team */

struct team;

struct member {
	struct team *t;
	pthread_t th;
	int idx;
	int started;
	/* a pipeline's tasks for this member (on_slot), in order: at most
	 * two wait (a slot holds one running and one next at [run] pipeline 2) */
	void (*fn[2])(void *);
	void *arg[2];
	int nfn;
};

struct team {
	hwloc_topology_t topo;
	int n;                          /* members, the PU's own thread included */
	hwloc_bitmap_t core[MAX_TEAM];  /* member i's core (within the binding) */
	struct member *m;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned gen;                   /* bumped per block */
	int pending, stop;
	/* the block being run */
	const struct plb_kernel_class *kc;
	void *kstate;
	struct plb_block part[MAX_TEAM];
	int rc[MAX_TEAM];
	char *acc;                      /* members 1..n-1's accumulators */
	size_t acc_cap;
};

static void bind_core(struct team *t, int member)
{
	if (t->core[member])
		hwloc_set_cpubind(t->topo, t->core[member], HWLOC_CPUBIND_THREAD);
}

/* The cores this process may run on, in the topology's order: those its
 * binding (the calling thread's, which the launcher set) touches, each
 * cut to the binding; hardware threads where hwloc sees no cores. Fills
 * set[0..max) with copies (the caller frees them) when set is not NULL;
 * returns how many there are, at least 1 where the binding is unknown
 * (then every core counts). */
static int usable_cores(hwloc_topology_t topo, hwloc_bitmap_t *set, int max)
{
	hwloc_bitmap_t mine = hwloc_bitmap_alloc();
	int n = 0;
	if (!mine)
		return 1;
	if (hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_THREAD) || hwloc_bitmap_iszero(mine))
		hwloc_bitmap_copy(mine, hwloc_topology_get_allowed_cpuset(topo));
	hwloc_obj_type_t type = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE
										   : HWLOC_OBJ_PU;
	hwloc_obj_t o = NULL;
	while ((o = hwloc_get_next_obj_by_type(topo, type, o))) {
		if (!o->cpuset || !hwloc_bitmap_intersects(o->cpuset, mine))
			continue;
		if (set && n < max && (set[n] = hwloc_bitmap_alloc()))
			hwloc_bitmap_and(set[n], o->cpuset, mine);
		n++;
	}
	hwloc_bitmap_free(mine);
	return n < 1 ? 1 : n;
}

static void *member_main(void *arg)
{
	struct member *m = arg;
	struct team *t = m->t;
	unsigned seen = 0;

	bind_core(t, m->idx);
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->stop && t->gen == seen && !m->nfn)
			pthread_cond_wait(&t->go, &t->mu);
		if (t->stop)
			break;
		if (m->nfn) {
			/* a task of its own (a pipeline's): fn hands it back,
			 * after which another may come at once */
			void (*fn)(void *) = m->fn[0];
			void *task = m->arg[0];
			m->fn[0] = m->fn[1];
			m->arg[0] = m->arg[1];
			m->nfn--;
			pthread_mutex_unlock(&t->mu);
			fn(task);
			pthread_mutex_lock(&t->mu);
			continue;
		}
		seen = t->gen;
		pthread_mutex_unlock(&t->mu);
		int rc = t->part[m->idx].units ? t->kc->run(t->kstate, &t->part[m->idx]) : 0;
		pthread_mutex_lock(&t->mu);
		t->rc[m->idx] = rc;
		if (--t->pending == 0)
			pthread_cond_signal(&t->done);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static void cpu_close(struct plb__dev *d)
{
	struct team *t = d->state;
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = 1;
	pthread_cond_broadcast(&t->go);
	pthread_mutex_unlock(&t->mu);
	for (int i = 1; i < t->n; i++)
		if (t->m[i].started)
			pthread_join(t->m[i].th, NULL);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->go);
	pthread_cond_destroy(&t->done);
	for (int i = 0; i < t->n; i++)
		hwloc_bitmap_free(t->core[i]);
	hwloc_topology_destroy(t->topo);
	free(t->acc);
	free(t->m);
	free(t);
	d->state = NULL;
}

static int cpu_open(struct plb__dev *d, const struct plb__dev_spec *s, char *err, size_t errlen)
{
	struct team *t = calloc(1, sizeof *t);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return PLB_ENOMEM;
	}
	if (hwloc_topology_init(&t->topo) || hwloc_topology_load(t->topo)) {
		free(t);
		snprintf(err, errlen, "hwloc cannot read this node's topology");
		return PLB_EIO;
	}
	int have = usable_cores(t->topo, NULL, 0);
	int node = hwloc_get_nbobjs_inside_cpuset_by_type(t->topo, hwloc_topology_get_allowed_cpuset(t->topo),
							  HWLOC_OBJ_CORE);
	if (s->value < 0 && node > have)
		plb__log(PLB__LOG_WARN, "cpu", "cpu = all: this process may run on %d of its node's %d cores (its binding: Open MPI binds each rank to one core when it starts two or fewer; --bind-to none, or --map-by ppr:1:node:pe=N, gives it more)",
			 have, node);
	/* all: leave a core to each PU whose thread feeds a device (a GPU's:
	 * staging copies, launches, waits); a team member sharing that core
	 * would hold the whole team back */
	int others = s->host_cores;
	int n = s->value >= 0 ? s->value : have - others > 0 ? have - others : 1;
	if (s->value < 0 && n > MAX_TEAM)
		n = MAX_TEAM;

	snprintf(d->desc.name, sizeof d->desc.name, "%s.cpu", s->cfg->nodes[s->node].name);
	int too_many = n > have || n > MAX_TEAM;
	if (too_many || !(t->m = calloc((size_t)n, sizeof *t->m))) {
		if (too_many)
			snprintf(err, errlen, "cpu = %d: this process may run on %d cores (its binding: mpirun's --bind-to, the batch system's cpuset, taskset); accepted: all, or 1 to %d",
				 n, have, have < MAX_TEAM ? have : MAX_TEAM);
		else
			snprintf(err, errlen, "out of memory");
		hwloc_topology_destroy(t->topo);
		free(t);
		return too_many ? PLB_ECONFIG : PLB_ENOMEM;
	}
	usable_cores(t->topo, t->core, n);
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->go, NULL);
	pthread_cond_init(&t->done, NULL);
	t->n = n;
	d->state = t;
	d->desc.cores = n;
	d->info.cores = n;
	for (int i = 0; i < n; i++) {
		t->m[i].t = t;
		t->m[i].idx = i;
		if (i > 0 && pthread_create(&t->m[i].th, NULL, member_main, &t->m[i]) == 0)
			t->m[i].started = 1;
		else if (i > 0) {
			cpu_close(d);
			snprintf(err, errlen, "cannot start the CPU team's threads");
			return PLB_ENOMEM;
		}
	}
	return 0;
}

static int cpu_thread_start(struct plb__dev *d, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	bind_core(d->state, 0);
	return 0;
}

static int cpu_run(struct plb__dev *d, const struct plb_kernel_class *kc, void *kstate,
		   const struct plb_block *b, double arrive, struct plb__dev_times *tm)
{
	struct team *t = d->state;
	int rc = 0;

	size_t ab = d->run.acc_bytes;
	if (t->n == 1 || (!kc->whole && b->units < (uint64_t)t->n)) {
		rc = kc->run(kstate, b);
	} else {
		/* member 0 adds into the block's accumulator, the others into
		 * their own (from the identity), joined in member order after */
		size_t need = (size_t)(t->n - 1) * ab;
		if (need > t->acc_cap) {
			char *a = realloc(t->acc, need);
			if (!a)
				return PLB_ENOMEM;
			t->acc = a;
			t->acc_cap = need;
		}
		/* one contiguous part per member (the unit sizes come from the
		 * run), or the whole block to each */
		uint64_t per = b->units / (uint64_t)t->n, rem = b->units % (uint64_t)t->n, off = 0;
		pthread_mutex_lock(&t->mu);
		for (int i = 0; i < t->n; i++) {
			uint64_t u = per + ((uint64_t)i < rem);
			t->part[i] = *b;        /* whole: the block itself */
			t->part[i].member = kc->whole ? i : 0;
			t->part[i].members = kc->whole ? t->n : 1;
			if (!kc->whole) {
				t->part[i].offset = b->offset + off;
				t->part[i].units = u;
				t->part[i].in = (const char *)b->in + off * d->run.in_unit;
				t->part[i].out = (char *)b->out + off * d->run.out_unit;
			}
			t->part[i].acc = !ab ? NULL : i == 0 ? b->acc : t->acc + (size_t)(i - 1) * ab;
			if (ab && i > 0)
				memcpy(t->part[i].acc, d->run.acc_identity, ab);
			t->rc[i] = 0;
			off += u;
		}
		t->kc = kc;
		t->kstate = kstate;
		t->pending = t->n - 1;
		t->gen++;
		pthread_cond_broadcast(&t->go);
		pthread_mutex_unlock(&t->mu);
		rc = kc->run(kstate, &t->part[0]);
		pthread_mutex_lock(&t->mu);
		while (t->pending)
			pthread_cond_wait(&t->done, &t->mu);
		pthread_mutex_unlock(&t->mu);
		for (int i = 1; i < t->n && !rc; i++)
			rc = t->rc[i];
		for (int i = 1; i < t->n && !rc && ab; i++)
			d->run.combine(b->acc, t->part[i].acc, ab);
	}
	return rc;
}

static int cpu_on_slot(struct plb__dev *d, int s, void (*fn)(void *), void *arg)
{
	struct team *t = d->state;
	if (s < 1 || s >= t->n)
		return PLB_EINVAL;
	pthread_mutex_lock(&t->mu);
	struct member *m = &t->m[s];
	int full = m->nfn == 2;
	if (!full) {
		m->fn[m->nfn] = fn;
		m->arg[m->nfn++] = arg;
		pthread_cond_broadcast(&t->go);
	}
	pthread_mutex_unlock(&t->mu);
	return full ? PLB_ESTATE : 0;
}

const struct plb__devclass plb__dev_cpu = {
	.name = "cpu",
	.kernel = PLB_DEV_CPU,
	.open = cpu_open,
	.thread_start = cpu_thread_start,
	.run = cpu_run,
	.close = cpu_close,
	.on_slot = cpu_on_slot,
};
