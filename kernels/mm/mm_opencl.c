/* The matrix-multiply OpenCL kernel (see mm.h): CLBlast's gemm on a block
 * of columns, A on the device for the whole run. A block is cut into up to
 * CHUNKS chunks of columns that alternate between the PU's two queues, so
 * that one chunk's copies overlap the other's gemm; the copies go straight
 * from and to the block's memory (no staging). */
#include <clblast_c.h>

#include "kernels/mm/mm.h"
#include "kernels/opencl_util.h"

#define CHUNKS 4
#define CHUNK_MIN 64    /* columns: smaller chunks cost more than they overlap */

struct plb__mm_cl {
	struct plb__cl cl;      /* its err says what failed */
	enum plb__mm_prec prec;
	int n;
	int64_t max_cols, chunk_cols;
	size_t elem;
	cl_mem dA, dB[2], dC[2];
	struct plb__phase_times last;
};

/* CLBlast's status: its codes below -1000 are its own (clblast_c.h's
 * CLBlastStatusCode), above they are OpenCL's. */
#define CLBLAST_CHECK(m, call)                                                 \
	do {                                                                   \
		CLBlastStatusCode st_ = (call);                                \
		if (st_ != CLBlastSuccess) {                                   \
			if (st_ > -1000)                                       \
				return plb__cl_fail((m)->cl.err, sizeof (m)->cl.err, __FILE__, \
						    __LINE__, #call, st_);     \
			snprintf((m)->cl.err, sizeof (m)->cl.err, "%s:%d: %s: CLBlast status %d", \
				 __FILE__, __LINE__, #call, (int)st_);         \
			fprintf(stderr, "plb: opencl: %s\n", (m)->cl.err);      \
			return PLB_EIO;                                        \
		}                                                              \
	} while (0)

static int setup(struct plb__mm_cl *m, void *ctx, void *dev)
{
	int rc = plb__cl_open(&m->cl, ctx, dev);
	if (!rc && m->prec == PLB__MM_F64)
		rc = plb__cl_need_fp64(&m->cl, "plb-mm in double precision");
	if (rc)
		return rc;
	size_t colb = (size_t)m->n * m->elem;
	PLB__CL_MAKE(&m->cl, m->dA, clCreateBuffer(ctx, CL_MEM_READ_ONLY, colb * (size_t)m->n, NULL, &e_));
	for (int q = 0; q < 2; q++) {
		PLB__CL_MAKE(&m->cl, m->dB[q], clCreateBuffer(ctx, CL_MEM_READ_ONLY,
							      colb * (size_t)m->chunk_cols, NULL, &e_));
		PLB__CL_MAKE(&m->cl, m->dC[q], clCreateBuffer(ctx, CL_MEM_WRITE_ONLY,
							      colb * (size_t)m->chunk_cols, NULL, &e_));
	}
	return 0;
}

int plb__mm_cl_create(void *ctx, void *dev, enum plb__mm_prec prec, int n, int64_t max_cols,
		      struct plb__mm_cl **out, char *err, size_t errlen)
{
	*out = NULL;
	if (n < 1 || max_cols < 1)
		return PLB_EINVAL;
	struct plb__mm_cl *m = calloc(1, sizeof *m);
	if (!m)
		return PLB_ENOMEM;
	m->prec = prec;
	m->n = n;
	m->elem = plb__mm_elem(prec);
	m->max_cols = max_cols;
	m->chunk_cols = (max_cols + CHUNKS - 1) / CHUNKS;
	m->chunk_cols = m->chunk_cols < CHUNK_MIN ? CHUNK_MIN : m->chunk_cols;
	m->chunk_cols = m->chunk_cols > max_cols ? max_cols : m->chunk_cols;
	int rc = setup(m, ctx, dev);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", m->cl.err);
		plb__mm_cl_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

int plb__mm_cl_set_a(struct plb__mm_cl *m, const void *A)
{
	size_t bytes = (size_t)m->n * (size_t)m->n * m->elem;
	PLB__CL_CHECK(&m->cl, clEnqueueWriteBuffer(m->cl.q[0], m->dA, CL_TRUE, 0, bytes, A, 0, NULL, NULL));
	return 0;
}

int plb__mm_cl_run(struct plb__mm_cl *m, int64_t cols, const void *B_blk, void *C_blk)
{
	m->last = (struct plb__phase_times){0, 0, 0};
	if (cols < 0 || cols > m->max_cols)
		return PLB_EINVAL;
	size_t colb = (size_t)m->n * m->elem;
	int64_t cc = (cols + CHUNKS - 1) / CHUNKS;
	cc = cc < CHUNK_MIN ? CHUNK_MIN : cc;
	cc = cc > m->chunk_cols ? m->chunk_cols : cc;
	cl_event ev[2 * CHUNKS + 2][3] = {{0}};
	int k = 0;
	for (int64_t c0 = 0; c0 < cols; c0 += cc, k++) {
		int q = k % 2;
		size_t nc = (size_t)(cols - c0 < cc ? cols - c0 : cc), bytes = colb * nc;
		cl_command_queue queue = m->cl.q[q];
		PLB__CL_CHECK(&m->cl, clEnqueueWriteBuffer(queue, m->dB[q], CL_FALSE, 0, bytes,
							   (const char *)B_blk + colb * (size_t)c0,
							   0, NULL, &ev[k][0]));
		size_t n = (size_t)m->n;
		if (m->prec == PLB__MM_F64)
			CLBLAST_CHECK(m, CLBlastDgemm(CLBlastLayoutColMajor, CLBlastTransposeNo,
						      CLBlastTransposeNo, n, nc, n, 1.0, m->dA, 0, n,
						      m->dB[q], 0, n, 0.0, m->dC[q], 0, n, &queue,
						      &ev[k][1]));
		else
			CLBLAST_CHECK(m, CLBlastSgemm(CLBlastLayoutColMajor, CLBlastTransposeNo,
						      CLBlastTransposeNo, n, nc, n, 1.0f, m->dA, 0, n,
						      m->dB[q], 0, n, 0.0f, m->dC[q], 0, n, &queue,
						      &ev[k][1]));
		PLB__CL_CHECK(&m->cl, clEnqueueReadBuffer(queue, m->dC[q], CL_FALSE, 0, bytes,
							  (char *)C_blk + colb * (size_t)c0, 0, NULL,
							  &ev[k][2]));
		PLB__CL_CHECK(&m->cl, clFlush(queue));
	}
	for (int q = 0; q < 2; q++)
		PLB__CL_CHECK(&m->cl, clFinish(m->cl.q[q]));
	for (int i = 0; i < k; i++)
		plb__cl_phases_add(ev[i], &m->last);
	return 0;
}

void plb__mm_cl_times(const struct plb__mm_cl *m, struct plb__phase_times *t)
{
	*t = m->last;
}

void plb__mm_cl_destroy(struct plb__mm_cl *m)
{
	if (!m)
		return;
	for (int q = 0; q < 2; q++)
		if (m->cl.q[q])
			clFinish(m->cl.q[q]);
	cl_mem *bufs[] = {&m->dA, &m->dB[0], &m->dB[1], &m->dC[0], &m->dC[1]};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		if (*bufs[i])
			clReleaseMemObject(*bufs[i]);
	plb__cl_close(&m->cl);
	free(m);
}

/* ---- the 2-D product's step (plb__mm2d_kernel's opencl class) ----------
 * The PU's slice of C stays on the device from its first step to the
 * class's fini, which reads it back; each step writes the pivots (a: rows
 * x k, b's slice: k x cols, strided) and runs CLBlast's row-major gemm
 * with beta 1. */
struct plb__mm2d_cl {
	struct plb__cl cl;
	cl_mem dA, dB, dC;
	size_t capA, capB, capC;        /* bytes */
	struct plb_gemm_step held;      /* the step that brought dC's slice (c NULL: none) */
};

/* rows of row_bytes, pitch apart on the host, to (write) or from a packed
 * buffer */
static cl_int rect(cl_command_queue q, cl_mem buf, int write, cl_bool block, size_t rows, size_t row_bytes,
		   size_t pitch, const void *host)
{
	size_t zero[3] = {0, 0, 0}, region[3] = {row_bytes, rows, 1};
	return write ? clEnqueueWriteBufferRect(q, buf, block, zero, zero, region, row_bytes, 0, pitch, 0, host, 0,
						NULL, NULL)
		     : clEnqueueReadBufferRect(q, buf, block, zero, zero, region, row_bytes, 0, pitch, 0, (void *)host,
					       0, NULL, NULL);
}

static CLBlastStatusCode gemm2d(const struct plb_gemm_step *s, cl_mem a, cl_mem b, cl_mem c, cl_command_queue *q)
{
	size_t r = (size_t)s->rows, n = (size_t)s->cols, k = (size_t)s->k;
	if (s->elem == 8)
		return CLBlastDgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, r, n, k, 1.0, a, 0, k,
				    b, 0, n, 1.0, c, 0, n, q, NULL);
	return CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, r, n, k, 1.0f, a, 0, k, b,
			    0, n, 1.0f, c, 0, n, q, NULL);
}

static int grow(struct plb__mm2d_cl *m, cl_mem *buf, size_t *cap, size_t bytes, cl_mem_flags flags)
{
	if (*cap >= bytes)
		return 0;
	if (*buf)
		clReleaseMemObject(*buf);
	*buf = NULL;
	*cap = 0;
	PLB__CL_MAKE(&m->cl, *buf, clCreateBuffer(m->cl.ctx, flags, bytes, NULL, &e_));
	*cap = bytes;
	return 0;
}

/* The slice of C the device holds back to its host memory. */
static int c_back(struct plb__mm2d_cl *m)
{
	if (!m->held.c || !m->held.rows || !m->held.cols)
		return 0;
	const struct plb_gemm_step *h = &m->held;
	size_t e = (size_t)h->elem, bytes = (size_t)h->cols * e, pitch = (size_t)h->ldc * e;
	PLB__CL_CHECK(&m->cl, rect(m->cl.q[0], m->dC, 0, CL_TRUE, (size_t)h->rows, bytes, pitch, h->c));
	m->held.c = NULL;
	return 0;
}

int plb__mm2d_cl_create(void *ctx, void *dev, struct plb__mm2d_cl **out, char *err, size_t errlen)
{
	struct plb__mm2d_cl *m = calloc(1, sizeof *m);
	*out = NULL;
	if (!m)
		return PLB_ENOMEM;
	int rc = plb__cl_open(&m->cl, ctx, dev);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", m->cl.err);
		plb__mm2d_cl_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

int plb__mm2d_cl_step(struct plb__mm2d_cl *m, const struct plb_gemm_step *s)
{
	size_t e = (size_t)s->elem, rows = (size_t)s->rows, k = (size_t)s->k;
	size_t cbytes = (size_t)s->cols * e, cpitch = (size_t)s->ldc * e;
	if (s->elem == 8 && m->held.elem != 8 && plb__cl_need_fp64(&m->cl, "the 2-D product in double precision"))
		return PLB_EDEVICE;
	if (!plb__mm2d_same_slice(&m->held, s)) {
		int rc = c_back(m);     /* another slice: the last one home */
		if (rc || (rc = grow(m, &m->dC, &m->capC, (size_t)s->rows * (size_t)s->cols * e + 1, CL_MEM_READ_WRITE)))
			return rc;
		if (s->rows && s->cols)
			PLB__CL_CHECK(&m->cl, rect(m->cl.q[0], m->dC, 1, CL_TRUE, rows, cbytes, cpitch, s->c));
		m->held = *s;
	}
	if (!s->rows || !s->cols)
		return 0;
	int rc = grow(m, &m->dA, &m->capA, (size_t)s->rows * (size_t)s->k * e, CL_MEM_READ_ONLY);
	if (rc || (rc = grow(m, &m->dB, &m->capB, (size_t)s->k * (size_t)s->cols * e, CL_MEM_READ_ONLY)))
		return rc;
	cl_command_queue q = m->cl.q[0];
	size_t apitch = (size_t)s->lda * e, bpitch = (size_t)s->ldb * e;
	PLB__CL_CHECK(&m->cl, rect(q, m->dA, 1, CL_FALSE, rows, k * e, apitch, s->a));
	PLB__CL_CHECK(&m->cl, rect(q, m->dB, 1, CL_FALSE, k, cbytes, bpitch, s->b));
	CLBLAST_CHECK(m, gemm2d(s, m->dA, m->dB, m->dC, &q));
	PLB__CL_CHECK(&m->cl, clFinish(q));
	return 0;
}

int plb__mm2d_cl_destroy(struct plb__mm2d_cl *m)
{
	if (!m)
		return 0;
	int rc = m->cl.q[0] ? c_back(m) : 0;
	cl_mem *bufs[] = {&m->dA, &m->dB, &m->dC};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		if (*bufs[i])
			clReleaseMemObject(*bufs[i]);
	plb__cl_close(&m->cl);
	free(m);
	return rc;
}
