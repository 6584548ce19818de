/* The gene-regulatory-network OpenCL kernel (see grn.h), the CUDA kernel's
 * search in OpenCL C: a block's targets are the NDRange's rows; each row's
 * work-items share out the target's subsets by colex rank, every item a
 * contiguous run of ranks: it unranks its first subset and steps to the
 * next ones by the colex successor, counts each subset's instances by
 * popcounts of ANDed bit sets, and scores them with the CPU's formula
 * (grn.h's PLB__GRN_SCORE_DEF, made source text here, built without
 * contractions into fused multiply-adds). A tree in local memory keeps
 * each work-group's best (lowest score, then lowest rank), and a second
 * kernel the best of a target's groups. The expression bits and the
 * tables go over once, at create; a block copies back only its bests. */
#include "kernels/grn/grn.h"
#include "kernels/opencl_util.h"

#define STR_(...) #__VA_ARGS__
#define XSTR(...) STR_(__VA_ARGS__)

#define GROUP_MAX 256           /* work-items a group, at most (a power of two) */
#define MAX_GROUPS 64           /* groups a target, at most */

static const char source[] =
	"#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
	"#pragma OPENCL FP_CONTRACT OFF\n"
	"typedef uint uint32_t;\n"
	XSTR(PLB__GRN_SCORE_DEF(, __global)) "\n"
	"#define MAX_K " XSTR(PLB__GRN_MAX_K) "\n"
	"#define MAX_LEVELS " XSTR(PLB__GRN_MAX_LEVELS) "\n"
	"#define MAX_CELLS " XSTR(PLB__GRN_MAX_CELLS) "\n"
	"ulong choose(long m, int j)\n"
	"{\n"
	"	if (m < j)\n"
	"		return 0;\n"
	"	ulong r = 1;\n"
	"	for (int i = 0; i < j; i++)\n"
	"		r = r * (ulong)(m - i) / (ulong)(i + 1);\n"
	"	return r;\n"
	"}\n"
	/* the subset of colex rank r: p[j] the largest q with C(q, j + 1) <= what is left */
	"void unrank(ulong r, int k, int m, int *p)\n"
	"{\n"
	"	for (int j = k - 1; j >= 0; j--) {\n"
	"		int lo = j, hi = m - 1;\n"
	"		while (lo < hi) {\n"
	"			int mid = (lo + hi + 1) / 2;\n"
	"			if (choose(mid, j + 1) <= r)\n"
	"				lo = mid;\n"
	"			else\n"
	"				hi = mid - 1;\n"
	"		}\n"
	"		p[j] = lo;\n"
	"		r -= choose(lo, j + 1);\n"
	"		m = lo;\n"
	"	}\n"
	"}\n"
	"void next_subset(int k, int *p)\n"
	"{\n"
	"	for (int j = 0; j < k; j++)\n"
	"		if (j + 1 == k || p[j] + 1 < p[j + 1]) {\n"
	"			p[j]++;\n"
	"			for (int i = 0; i < j; i++)\n"
	"				p[i] = i;\n"
	"			return;\n"
	"		}\n"
	"}\n"
	"int better(double a, ulong ra, double b, ulong rb)\n"
	"{\n"
	"	return a < b || (a == b && ra < rb);\n"
	"}\n"
	"__kernel void search(__global const ulong *bits, __global const double *nlog,\n"
	"		     __global const double *wf, const double alpha, const int n, const int s,\n"
	"		     const int c, const int k, const int W, const ulong first,\n"
	"		     __global double *pscore, __global ulong *prank,\n"
	"		     __local double *ss, __local ulong *sr)\n"
	"{\n"
	"	size_t lid = get_local_id(0), L = get_local_size(0);\n"
	"	int t = (int)(first + get_global_id(1)), m = n - 1, N = 1;\n"
	"	for (int j = 0; j < k; j++)\n"
	"		N *= c;\n"
	"	ulong total = choose(m, k), items = (ulong)get_global_size(0), me = get_global_id(0);\n"
	"	ulong per = (total + items - 1) / items, r0 = me * per;\n"
	"	ulong r1 = r0 + per < total ? r0 + per : total;\n"
	"	__global const ulong *Y = bits + (size_t)t * c * W;\n"
	"	uint32_t cy[MAX_LEVELS], cnt[MAX_CELLS];\n"
	"	for (int y = 0; y < c; y++) {\n"
	"		cy[y] = 0;\n"
	"		for (int i = 0; i < W; i++)\n"
	"			cy[y] += (uint)popcount(Y[(size_t)y * W + i]);\n"
	"	}\n"
	"	double e = nlog[s];\n"
	"	for (int y = 0; y < c; y++)\n"
	"		e -= nlog[cy[y]];\n"
	"	double hy = e / s, best = INFINITY;\n"
	"	ulong brank = ~(ulong)0;\n"
	"	int p[MAX_K];\n"
	"	if (r0 < r1)\n"
	"		unrank(r0, k, m, p);\n"
	"	for (ulong r = r0; r < r1; r++) {\n"
	"		__global const ulong *G[MAX_K];\n"
	"		for (int j = 0; j < k; j++)\n"
	"			G[j] = bits + (size_t)(p[j] < t ? p[j] : p[j] + 1) * c * W;\n"
	"		for (int x = 0; x < N; x++) {\n"
	"			int l[MAX_K];\n"
	"			for (int j = 0, v = x; j < k; j++, v /= c)\n"
	"				l[j] = v % c;\n"
	"			for (int y = 0; y < c; y++) {\n"
	"				uint q = 0;\n"
	"				for (int i = 0; i < W; i++) {\n"
	"					ulong a = Y[(size_t)y * W + i];\n"
	"					for (int j = 0; j < k; j++)\n"
	"						a &= G[j][(size_t)l[j] * W + i];\n"
	"					q += (uint)popcount(a);\n"
	"				}\n"
	"				cnt[x * c + y] = q;\n"
	"			}\n"
	"		}\n"
	"		double sc = plb__grn_score_(nlog, wf, alpha, s, cnt, N, c, hy);\n"
	"		if (sc < best) {\n"
	"			best = sc;\n"
	"			brank = r;\n"
	"		}\n"
	"		next_subset(k, p);\n"
	"	}\n"
	"	ss[lid] = best;\n"
	"	sr[lid] = brank;\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	for (size_t h = L / 2; h > 0; h /= 2) {\n"
	"		if (lid < h && better(ss[lid + h], sr[lid + h], ss[lid], sr[lid])) {\n"
	"			ss[lid] = ss[lid + h];\n"
	"			sr[lid] = sr[lid + h];\n"
	"		}\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	}\n"
	"	if (!lid) {\n"
	"		size_t at = get_group_id(1) * get_num_groups(0) + get_group_id(0);\n"
	"		pscore[at] = ss[0];\n"
	"		prank[at] = sr[0];\n"
	"	}\n"
	"}\n"
	/* a target's best over its groups, as genes: reg[4] then the score */
	"__kernel void finish(__global const double *pscore, __global const ulong *prank,\n"
	"		     const int nb, const int n, const int k, const ulong first, const uint count,\n"
	"		     __global int *reg, __global double *score)\n"
	"{\n"
	"	size_t u = get_global_id(0);\n"
	"	if (u >= count)\n"
	"		return;\n"
	"	double best = pscore[u * nb];\n"
	"	ulong r = prank[u * nb];\n"
	"	for (int b = 1; b < nb; b++)\n"
	"		if (better(pscore[u * nb + b], prank[u * nb + b], best, r)) {\n"
	"			best = pscore[u * nb + b];\n"
	"			r = prank[u * nb + b];\n"
	"		}\n"
	"	int p[MAX_K], t = (int)(first + u);\n"
	"	unrank(r, k, n - 1, p);\n"
	"	for (int j = 0; j < 4; j++)\n"
	"		reg[u * 6 + j] = j < k ? (p[j] < t ? p[j] : p[j] + 1) : -1;\n"
	"	score[u * 3 + 2] = best;\n"
	"}\n";

/* finish writes struct plb__grn_best as int[6] and double[3] views of one
 * buffer */
_Static_assert(sizeof(struct plb__grn_best) == 24 && offsetof(struct plb__grn_best, score) == 16,
	       "struct plb__grn_best is 4 int32 then a double");

struct plb__grn_cl {
	struct plb__cl cl;      /* its err says what failed */
	int n, s, c, k, W;
	double alpha;
	cl_program prog;
	cl_kernel search, finish;
	cl_mem dbits, dnlog, dwf;
	cl_mem dscore, drank, dout;     /* count * MAX_GROUPS partial bests; the bests */
	size_t cap;                     /* targets the three hold */
	size_t group;                   /* work-items a group */
	struct plb__phase_times last;
};

/* The largest power of two <= GROUP_MAX the search kernel runs with on
 * c's device, its local memory holding a group's bests. */
static int group_size(struct plb__grn_cl *c)
{
	size_t most = 0;
	cl_ulong local = 0;
	PLB__CL_CHECK(&c->cl, clGetKernelWorkGroupInfo(c->search, c->cl.dev, CL_KERNEL_WORK_GROUP_SIZE,
						       sizeof most, &most, NULL));
	PLB__CL_CHECK(&c->cl, clGetDeviceInfo(c->cl.dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local,
					      NULL));
	c->group = 1;
	while (c->group * 2 <= GROUP_MAX && c->group * 2 <= most &&
	       c->group * 2 * (sizeof(double) + sizeof(cl_ulong)) <= local / 2)
		c->group *= 2;
	return 0;
}

static int setup(struct plb__grn_cl *c, void *ctx, void *dev, const void *shared,
		 const struct plb__grn_tables *t)
{
	int rc = plb__cl_open(&c->cl, ctx, dev);
	if (!rc)
		rc = plb__cl_need_fp64(&c->cl, "plb-grn's OpenCL kernel");
	if (!rc)
		rc = plb__cl_program(&c->cl, source, "", &c->prog);
	if (rc)
		return rc;
	PLB__CL_MAKE(&c->cl, c->search, clCreateKernel(c->prog, "search", &e_));
	PLB__CL_MAKE(&c->cl, c->finish, clCreateKernel(c->prog, "finish", &e_));
	if ((rc = group_size(c)))
		return rc;
	const struct plb__grn_shared *h = shared;
	size_t bb = plb__grn_shared_bytes(h->n, h->s, h->levels) - sizeof *h;
	size_t tb = ((size_t)h->s + 1) * sizeof(double);
	cl_mem_flags ro = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
	PLB__CL_MAKE(&c->cl, c->dbits, clCreateBuffer(c->cl.ctx, ro, bb, (void *)(h + 1), &e_));
	PLB__CL_MAKE(&c->cl, c->dnlog, clCreateBuffer(c->cl.ctx, ro, tb, t->nlog, &e_));
	PLB__CL_MAKE(&c->cl, c->dwf, clCreateBuffer(c->cl.ctx, ro, tb, t->wf, &e_));
	return 0;
}

int plb__grn_cl_create(void *ctx, void *dev, const void *shared, const struct plb__grn_tables *t,
		       struct plb__grn_cl **out, char *err, size_t errlen)
{
	const struct plb__grn_shared *h = shared;
	*out = NULL;
	if (!h || !t || t->s != h->s)
		return PLB_EINVAL;
	struct plb__grn_cl *c = calloc(1, sizeof *c);
	if (!c)
		return PLB_ENOMEM;
	*c = (struct plb__grn_cl){.n = h->n, .s = h->s, .c = h->levels, .k = h->k, .W = h->words,
				  .alpha = h->alpha};
	int rc = setup(c, ctx, dev, shared, t);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", c->cl.err);
		plb__grn_cl_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void release(struct plb__grn_cl *c)
{
	cl_mem *m[] = {&c->dscore, &c->drank, &c->dout};
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (*m[i])
			clReleaseMemObject(*m[i]), *m[i] = NULL;
	c->cap = 0;
}

/* Buffers for blocks of count targets. */
static int reserve(struct plb__grn_cl *c, size_t count)
{
	if (count <= c->cap)
		return 0;
	release(c);
	size_t parts = count * MAX_GROUPS;
	PLB__CL_MAKE(&c->cl, c->dscore, clCreateBuffer(c->cl.ctx, CL_MEM_READ_WRITE,
						       parts * sizeof(double), NULL, &e_));
	PLB__CL_MAKE(&c->cl, c->drank, clCreateBuffer(c->cl.ctx, CL_MEM_READ_WRITE,
						      parts * sizeof(cl_ulong), NULL, &e_));
	PLB__CL_MAKE(&c->cl, c->dout, clCreateBuffer(c->cl.ctx, CL_MEM_WRITE_ONLY,
						     count * sizeof(struct plb__grn_best), NULL, &e_));
	c->cap = count;
	return 0;
}

/* C(m, j) for j <= 3, as the kernel counts it. */
static uint64_t choose(int64_t m, int j)
{
	if (m < j)
		return 0;
	uint64_t r = 1;
	for (int i = 0; i < j; i++)
		r = r * (uint64_t)(m - i) / (uint64_t)(i + 1);
	return r;
}

#define ARG(kern, i, v) PLB__CL_CHECK(&c->cl, clSetKernelArg(kern, i, sizeof(v), &(v)))

int plb__grn_cl_run(struct plb__grn_cl *c, uint64_t first, size_t count, struct plb__grn_best *out)
{
	if (!c || first + count > (uint64_t)c->n || count > UINT32_MAX / MAX_GROUPS)
		return PLB_EINVAL;
	c->last = (struct plb__phase_times){0, 0, 0};
	if (!count)
		return 0;
	int rc = reserve(c, count);
	if (rc)
		return rc;
	/* enough work-items for every subset, up to MAX_GROUPS groups a target */
	uint64_t want = (choose(c->n - 1, c->k) + c->group - 1) / c->group;
	cl_int nb = want < MAX_GROUPS ? (cl_int)want : MAX_GROUPS;
	cl_ulong f = first;
	cl_uint cnt = (cl_uint)count;
	cl_mem ms[] = {c->dbits, c->dnlog, c->dwf};
	for (cl_uint i = 0; i < 3; i++)
		ARG(c->search, i, ms[i]);
	ARG(c->search, 3, c->alpha);
	int is[] = {c->n, c->s, c->c, c->k, c->W};
	for (cl_uint i = 0; i < 5; i++)
		ARG(c->search, 4 + i, is[i]);
	ARG(c->search, 9, f);
	ARG(c->search, 10, c->dscore);
	ARG(c->search, 11, c->drank);
	PLB__CL_CHECK(&c->cl, clSetKernelArg(c->search, 12, c->group * sizeof(double), NULL));
	PLB__CL_CHECK(&c->cl, clSetKernelArg(c->search, 13, c->group * sizeof(cl_ulong), NULL));
	ARG(c->finish, 0, c->dscore);
	ARG(c->finish, 1, c->drank);
	ARG(c->finish, 2, nb);
	ARG(c->finish, 3, c->n);
	ARG(c->finish, 4, c->k);
	ARG(c->finish, 5, f);
	ARG(c->finish, 6, cnt);
	ARG(c->finish, 7, c->dout);
	ARG(c->finish, 8, c->dout);
	cl_command_queue q = c->cl.q[0];
	size_t global[2] = {(size_t)nb * c->group, count}, local[2] = {c->group, 1};
	size_t fin = (count + 63) / 64 * 64, fl = 64;
	cl_event ev[3] = {NULL, NULL, NULL}, evf = NULL;
	PLB__CL_CHECK(&c->cl, clEnqueueNDRangeKernel(q, c->search, 2, NULL, global, local, 0, NULL,
						     &ev[1]));
	PLB__CL_CHECK(&c->cl, clEnqueueNDRangeKernel(q, c->finish, 1, NULL, &fin, &fl, 0, NULL, &evf));
	PLB__CL_CHECK(&c->cl, clEnqueueReadBuffer(q, c->dout, CL_TRUE, 0, count * sizeof *out, out, 0,
						  NULL, &ev[2]));
	c->last.run_s = plb__cl_span(evf);
	clReleaseEvent(evf);
	plb__cl_phases_add(ev, &c->last);      /* nothing copied in: ev[0] is none */
	return 0;
}

void plb__grn_cl_times(const struct plb__grn_cl *c, struct plb__phase_times *t)
{
	*t = c->last;
}

void plb__grn_cl_destroy(struct plb__grn_cl *c)
{
	if (!c)
		return;
	release(c);
	cl_mem *m[] = {&c->dbits, &c->dnlog, &c->dwf};
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (*m[i])
			clReleaseMemObject(*m[i]);
	if (c->search)
		clReleaseKernel(c->search);
	if (c->finish)
		clReleaseKernel(c->finish);
	if (c->prog)
		clReleaseProgram(c->prog);
	plb__cl_close(&c->cl);
	free(c);
}
