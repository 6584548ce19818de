/* What the bundled kernels' OpenCL code shares (kernels/NAME/NAME_opencl.c
 * only; it names OpenCL's types): one checking macro, a PU's two queues,
 * a block's phases from the queues' profiling events, and programs built
 * once per device and driver and cached on disk.
 *
 * Errors: a failing call records "file:line: call: CL_NAME" in the state's
 * err buffer, says it on stderr, and makes the calling function return
 * PLB_EIO.
 *
 * The program cache: a program's binary for a device is kept in
 * $PLB_CL_CACHE, else $XDG_CACHE_HOME/plb/opencl, else
 * ~/.cache/plb/opencl, under a hash of the device, its driver, the
 * source and the build options; a run finds it there instead of compiling
 * (PoCL: seconds a program). A cache that cannot be read or written only
 * costs the compile. */
#ifndef PLB_KERNELS_OPENCL_UTIL_H
#define PLB_KERNELS_OPENCL_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CL/cl.h>

#include "plb.h"
#include "kernels/phase_times.h"
#include "balancer/base/cl_error.h"

static inline int plb__cl_fail(char *err, size_t len, const char *file, int line,
			       const char *what, cl_int e)
{
	if (err && len)
		snprintf(err, len, "%s:%d: %s: %s", file, line, what, plb__cl_error_name(e));
	fprintf(stderr, "plb: opencl: %s:%d: %s: %s\n", file, line, what, plb__cl_error_name(e));
	return PLB_EIO;
}

/* s: the kernel's state, with a char err[] member; call returns cl_int. */
#define PLB__CL_CHECK(s, call)                                                 \
	do {                                                                   \
		cl_int e_ = (call);                                            \
		if (e_ != CL_SUCCESS)                                          \
			return plb__cl_fail((s)->err, sizeof (s)->err, __FILE__, __LINE__, \
					    #call, e_);                        \
	} while (0)

/* var = call, where call reports its error through its last argument,
 * written &e_ (clCreateBuffer(..., &e_)). */
#define PLB__CL_MAKE(s, var, call)                                             \
	do {                                                                   \
		cl_int e_ = CL_SUCCESS;                                        \
		(var) = (call);                                                \
		if (e_ != CL_SUCCESS || !(var))                                \
			return plb__cl_fail((s)->err, sizeof (s)->err, __FILE__, __LINE__, \
					    #call, e_ != CL_SUCCESS ? e_ : CL_OUT_OF_HOST_MEMORY); \
	} while (0)

/* A PU's device, its context and two in-order queues with profiling: a
 * block's chunks alternate between them, so one chunk's copies overlap
 * the other's kernel. */
struct plb__cl {
	cl_context ctx;
	cl_device_id dev;
	cl_command_queue q[2];
	char err[256];
};

static inline int plb__cl_open(struct plb__cl *c, cl_context ctx, cl_device_id dev)
{
	c->ctx = ctx;
	c->dev = dev;
	for (int i = 0; i < 2; i++)
		PLB__CL_MAKE(c, c->q[i], clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &e_));
	return 0;
}

static inline void plb__cl_close(struct plb__cl *c)
{
	for (int i = 0; i < 2; i++)
		if (c->q[i])
			clReleaseCommandQueue(c->q[i]);
	c->q[0] = c->q[1] = NULL;
}

/* 0 when c's device computes in double precision (cl_khr_fp64); else
 * PLB_EDEVICE, with "DEVICE has no double precision (cl_khr_fp64), which
 * WHAT needs" in c->err. */
static inline int plb__cl_need_fp64(struct plb__cl *c, const char *what)
{
	cl_device_fp_config fp = 0;
	char name[128] = "the device";
	if (clGetDeviceInfo(c->dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
	    fp)
		return 0;
	clGetDeviceInfo(c->dev, CL_DEVICE_NAME, sizeof name, name, NULL);
	name[sizeof name - 1] = '\0';
	snprintf(c->err, sizeof c->err, "%s has no double precision (cl_khr_fp64), which %s needs",
		 name, what);
	return PLB_EDEVICE;
}

/* Seconds event e ran on the device (0 if its profile cannot be read). */
static inline double plb__cl_span(cl_event e)
{
	cl_ulong t0 = 0, t1 = 0;
	if (!e || clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) ||
	    clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) || t1 < t0)
		return 0;
	return (double)(t1 - t0) * 1e-9;
}

/* A chunk's three events, in copy-in, kernel, copy-out order, added into
 * *t and released. */
static inline void plb__cl_phases_add(cl_event ev[3], struct plb__phase_times *t)
{
	t->in_s += plb__cl_span(ev[0]);
	t->run_s += plb__cl_span(ev[1]);
	t->out_s += plb__cl_span(ev[2]);
	for (int i = 0; i < 3; i++)
		if (ev[i])
			clReleaseEvent(ev[i]), ev[i] = NULL;
}

/* 64-bit FNV-1a of a string, continuing from h. */
static inline uint64_t plb__cl_hash(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;  /* a separator between strings */
}

/* The cache file for this program on this device, or "" (no cache). */
static inline void plb__cl_cache_path(cl_device_id dev, const char *src, const char *opts,
				      char *path, size_t len)
{
	char dir[3072], info[3][256];
	const char *env = getenv("PLB_CL_CACHE"), *xdg = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	static const cl_device_info what[3] = {CL_DEVICE_NAME, CL_DRIVER_VERSION, CL_DEVICE_VERSION};
	path[0] = '\0';
	if (env && *env)
		snprintf(dir, sizeof dir, "%s", env);
	else if (xdg && *xdg)
		snprintf(dir, sizeof dir, "%s/plb/opencl", xdg);
	else if (home && *home)
		snprintf(dir, sizeof dir, "%s/.cache/plb/opencl", home);
	else
		return;
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 3; i++) {
		if (clGetDeviceInfo(dev, what[i], sizeof info[i], info[i], NULL) != CL_SUCCESS)
			return;
		info[i][sizeof info[i] - 1] = '\0';
		h = plb__cl_hash(h, info[i]);
	}
	h = plb__cl_hash(plb__cl_hash(h, src), opts);
	/* make the folder, each level (0700: a user's cache) */
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0700);
			*p = '/';
		}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return;
	snprintf(path, len, "%s/%016llx.bin", dir, (unsigned long long)h);
}

/* The build log of prog on dev, for an error message. */
static inline void plb__cl_build_log(cl_program prog, cl_device_id dev, char *log, size_t len)
{
	log[0] = '\0';
	if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) != CL_SUCCESS)
		log[0] = '\0';
	log[len - 1] = '\0';
}

/* Keeps prog's binary at path, whole or not at all (written aside, then
 * renamed). */
static inline void plb__cl_cache_put(cl_program prog, const char *path)
{
	size_t size = 0;
	if (!*path || clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) ||
	    !size)
		return;
	unsigned char *bin = malloc(size);
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	FILE *f = NULL;
	if (bin && !clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) &&
	    (f = fopen(tmp, "wb"))) {
		int ok = fwrite(bin, 1, size, f) == size;
		ok = !fclose(f) && ok;
		if (!ok || rename(tmp, path))
			unlink(tmp);
	}
	free(bin);
}

/* prog from the cache, or NULL. */
static inline cl_program plb__cl_cache_get(cl_context ctx, cl_device_id dev, const char *path,
					   const char *opts)
{
	FILE *f = *path ? fopen(path, "rb") : NULL;
	if (!f)
		return NULL;
	cl_program prog = NULL;
	unsigned char *bin = NULL;
	long size = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
	if (size > 0 && !fseek(f, 0, SEEK_SET) && (bin = malloc((size_t)size)) &&
	    fread(bin, 1, (size_t)size, f) == (size_t)size) {
		const unsigned char *b = bin;
		size_t len = (size_t)size;
		cl_int e, st;
		prog = clCreateProgramWithBinary(ctx, 1, &dev, &len, &b, &st, &e);
		if (prog && (e != CL_SUCCESS || st != CL_SUCCESS ||
			     clBuildProgram(prog, 1, &dev, opts, NULL, NULL) != CL_SUCCESS)) {
			clReleaseProgram(prog);
			prog = NULL;    /* stale or foreign: compile afresh */
		}
	}
	free(bin);
	fclose(f);
	return prog;
}

/* The program of src with options opts for c's device: from the cache, or
 * compiled (then cached). A compile error gives the start of the build
 * log in c->err. */
static inline int plb__cl_program(struct plb__cl *c, const char *src, const char *opts,
				  cl_program *out)
{
	char path[4096];
	plb__cl_cache_path(c->dev, src, opts, path, sizeof path);
	if ((*out = plb__cl_cache_get(c->ctx, c->dev, path, opts)))
		return 0;
	cl_program prog;
	PLB__CL_MAKE(c, prog, clCreateProgramWithSource(c->ctx, 1, &src, NULL, &e_));
	cl_int e = clBuildProgram(prog, 1, &c->dev, opts, NULL, NULL);
	if (e != CL_SUCCESS) {
		char log[160];
		plb__cl_build_log(prog, c->dev, log, sizeof log);
		clReleaseProgram(prog);
		snprintf(c->err, sizeof c->err, "clBuildProgram: %s: %s", plb__cl_error_name(e), log);
		fprintf(stderr, "plb: opencl: %s\n", c->err);
		return PLB_EIO;
	}
	plb__cl_cache_put(prog, path);
	*out = prog;
	return 0;
}

/* The device's first OpenCL device's context (tests and benchmarks, which
 * run a kernel without the runtime): device `index` over every
 * platform. 0, or PLB_EDEVICE with the reason in why. */
static inline int plb__cl_first(int index, cl_context *ctx, cl_device_id *dev, char *why, size_t len)
{
	cl_platform_id plat[16];
	cl_uint np = 0;
	*ctx = NULL;
	if (clGetPlatformIDs(16, plat, &np) != CL_SUCCESS || !np) {
		snprintf(why, len, "no OpenCL platform");
		return PLB_EDEVICE;
	}
	for (cl_uint p = 0; p < np && p < 16; p++) {
		cl_device_id ids[64];
		cl_uint nd = 0;
		if (clGetDeviceIDs(plat[p], CL_DEVICE_TYPE_ALL, 64, ids, &nd) != CL_SUCCESS)
			continue;
		if ((cl_uint)index < nd && nd <= 64) {
			cl_int e;
			*dev = ids[index];
			*ctx = clCreateContext(NULL, 1, dev, NULL, NULL, &e);
			if (!*ctx)
				snprintf(why, len, "clCreateContext: %s", plb__cl_error_name(e));
			return *ctx ? 0 : PLB_EDEVICE;
		}
		index -= (int)nd;
	}
	snprintf(why, len, "no OpenCL device of that index");
	return PLB_EDEVICE;
}

#endif
