/* The k-means OpenCL kernel (see kmeans.h): one work-item a point finds
 * its nearest centroid (direct distances, float, ties to the lowest) and
 * writes its label and that distance; the host then adds each point into
 * its cluster's sum, count and the inertia (O(n d), against the device's
 * O(n k d); OpenCL 1.2 has no atomic add of doubles to do it there). A
 * block runs in up to two chunks on the PU's two queues, so that one
 * chunk's copies overlap the other's kernel. */
#include "kernels/kmeans/kmeans.h"
#include "kernels/opencl_util.h"

static const char source[] =
	"__kernel void assign(__global const float *x, __global const float *c, const int k,\n"
	"		     const int d, const uint n, __global int *lab, __global float *dist)\n"
	"{\n"
	"	uint i = get_global_id(0);\n"
	"	if (i >= n)\n"
	"		return;\n"
	"	__global const float *xi = x + (size_t)i * d;\n"
	"	float best = INFINITY;\n"
	"	int bj = 0;\n"
	"	for (int j = 0; j < k; j++) {\n"
	"		float s = 0;\n"
	"		for (int t = 0; t < d; t++) {\n"
	"			float e = xi[t] - c[j * d + t];\n"
	"			s += e * e;\n"
	"		}\n"
	"		if (s < best) {\n"
	"			best = s;\n"
	"			bj = j;\n"
	"		}\n"
	"	}\n"
	"	lab[i] = bj;\n"
	"	dist[i] = best;\n"
	"}\n";

#define CHUNK_MIN 8192
#define GROUP 64

struct plb__km_cl {
	struct plb__cl cl;      /* its err says what failed */
	int k, d;
	cl_program prog;
	cl_kernel kern;
	cl_mem dc;              /* centroids, k * d */
	cl_mem dx[2], dl[2], dd[2];     /* each queue's points, labels, distances */
	float *dist;            /* the block's distances, on the host */
	size_t cap;             /* points a chunk's buffers hold */
	struct plb__phase_times last;
};

static int setup(struct plb__km_cl *c, void *ctx, void *dev, const void *centroids)
{
	int rc = plb__cl_open(&c->cl, ctx, dev);
	if (!rc)
		rc = plb__cl_program(&c->cl, source, "", &c->prog);
	if (rc)
		return rc;
	PLB__CL_MAKE(&c->cl, c->kern, clCreateKernel(c->prog, "assign", &e_));
	size_t cb = (size_t)c->k * (size_t)c->d * sizeof(float);
	PLB__CL_MAKE(&c->cl, c->dc, clCreateBuffer(c->cl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
						   cb, (void *)centroids, &e_));
	return 0;
}

int plb__km_cl_create(void *ctx, void *dev, const void *shared, struct plb__km_cl **out,
		      char *err, size_t errlen)
{
	const struct plb__km_shared *h = shared;
	*out = NULL;
	if (!h || h->k < 1 || h->d < 1)
		return PLB_EINVAL;
	struct plb__km_cl *c = calloc(1, sizeof *c);
	if (!c)
		return PLB_ENOMEM;
	c->k = h->k;
	c->d = h->d;
	int rc = setup(c, ctx, dev, h + 1);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", c->cl.err);
		plb__km_cl_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void release(struct plb__km_cl *c)
{
	for (int q = 0; q < 2; q++) {
		cl_mem *m[] = {&c->dx[q], &c->dl[q], &c->dd[q]};
		for (int i = 0; i < 3; i++)
			if (*m[i])
				clReleaseMemObject(*m[i]), *m[i] = NULL;
	}
	free(c->dist);
	c->dist = NULL;
	c->cap = 0;
}

/* Buffers for chunks of `per` points, and the host's distances for n. */
static int reserve(struct plb__km_cl *c, size_t per, size_t n)
{
	if (per <= c->cap && n <= 2 * c->cap)
		return 0;
	release(c);
	size_t cap = per > (n + 1) / 2 ? per : (n + 1) / 2;
	if (!(c->dist = malloc(2 * cap * sizeof *c->dist)))
		return PLB_ENOMEM;
	for (int q = 0; q < 2; q++) {
		PLB__CL_MAKE(&c->cl, c->dx[q], clCreateBuffer(c->cl.ctx, CL_MEM_READ_ONLY,
							      cap * (size_t)c->d * sizeof(float), NULL, &e_));
		PLB__CL_MAKE(&c->cl, c->dl[q], clCreateBuffer(c->cl.ctx, CL_MEM_WRITE_ONLY,
							      cap * sizeof(int32_t), NULL, &e_));
		PLB__CL_MAKE(&c->cl, c->dd[q], clCreateBuffer(c->cl.ctx, CL_MEM_WRITE_ONLY,
							      cap * sizeof(float), NULL, &e_));
	}
	c->cap = cap;
	return 0;
}

int plb__km_cl_run(struct plb__km_cl *c, const float *points, size_t n, int32_t *labels,
		   double *acc)
{
	c->last = (struct plb__phase_times){0, 0, 0};
	if (!n)
		return 0;
	if (!points || !labels || !acc || n > UINT32_MAX / 2)
		return PLB_EINVAL;
	int chunks = n >= 2 * CHUNK_MIN ? 2 : 1;
	size_t per = (n + (size_t)chunks - 1) / (size_t)chunks, d = (size_t)c->d;
	int rc = reserve(c, per, n);
	if (rc)
		return rc;
	cl_event ev[2][4] = {{0}};
	for (int q = 0; q < chunks; q++) {
		size_t at = (size_t)q * per, len = at + per <= n ? per : n - at;
		size_t global = (len + GROUP - 1) / GROUP * GROUP;
		cl_uint m = (cl_uint)len;
		cl_command_queue queue = c->cl.q[q];
		PLB__CL_CHECK(&c->cl, clEnqueueWriteBuffer(queue, c->dx[q], CL_FALSE, 0,
							   len * d * sizeof(float), points + at * d,
							   0, NULL, &ev[q][0]));
		const void *args[] = {&c->dx[q], &c->dc, &c->k, &c->d, &m, &c->dl[q], &c->dd[q]};
		const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(int), sizeof(int),
					sizeof m, sizeof(cl_mem), sizeof(cl_mem)};
		for (cl_uint a = 0; a < 7; a++)
			PLB__CL_CHECK(&c->cl, clSetKernelArg(c->kern, a, sizes[a], args[a]));
		PLB__CL_CHECK(&c->cl, clEnqueueNDRangeKernel(queue, c->kern, 1, NULL, &global, NULL,
							     0, NULL, &ev[q][1]));
		PLB__CL_CHECK(&c->cl, clEnqueueReadBuffer(queue, c->dl[q], CL_FALSE, 0,
							  len * sizeof(int32_t), labels + at, 0, NULL,
							  &ev[q][2]));
		PLB__CL_CHECK(&c->cl, clEnqueueReadBuffer(queue, c->dd[q], CL_FALSE, 0,
							  len * sizeof(float), c->dist + at, 0, NULL,
							  &ev[q][3]));
		PLB__CL_CHECK(&c->cl, clFlush(queue));
	}
	for (int q = 0; q < chunks; q++) {
		PLB__CL_CHECK(&c->cl, clFinish(c->cl.q[q]));
		c->last.out_s += plb__cl_span(ev[q][3]);
		clReleaseEvent(ev[q][3]);
		plb__cl_phases_add(ev[q], &c->last);
	}
	/* the sums, counts and inertia, in the accumulator's layout */
	double *sums = acc, *counts = acc + (size_t)c->k * d, *inertia = counts + c->k;
	for (size_t i = 0; i < n; i++) {
		int32_t j = labels[i];
		if (j < 0 || j >= c->k)
			return PLB_EIO;
		for (size_t t = 0; t < d; t++)
			sums[(size_t)j * d + t] += points[i * d + t];
		counts[j] += 1;
		*inertia += c->dist[i];
	}
	return 0;
}

void plb__km_cl_times(const struct plb__km_cl *c, struct plb__phase_times *t)
{
	*t = c->last;
}

void plb__km_cl_destroy(struct plb__km_cl *c)
{
	if (!c)
		return;
	release(c);
	if (c->dc)
		clReleaseMemObject(c->dc);
	if (c->kern)
		clReleaseKernel(c->kern);
	if (c->prog)
		clReleaseProgram(c->prog);
	plb__cl_close(&c->cl);
	free(c);
}
