/* The opencl device class (opencl = all | INDEX | PLATFORM:INDEX ... in a
 * [node]): one OpenCL device per PU, AMD's, Intel's and NVIDIA's GPUs
 * through their vendors' drivers, or PoCL's device on the host's cores.
 * The runtime's only file with OpenCL headers, and built either way:
 * without OpenCL at build time (PLB_HAVE_OPENCL unset) a config that asks
 * for a device gets a message saying so.
 *
 * The ICD loader (libOpenCL.so.1, which finds every installed platform) is
 * loaded (dlopen) the first time a config asks for a device, never linked,
 * so a CPU-only app built against libplb starts on a node without it.
 * Devices are numbered over every platform in the loader's order; a
 * selector PLATFORM:INDEX counts only the devices of the platforms whose
 * name, vendor or ICD suffix contains PLATFORM (case aside).
 *
 * open makes the PU a context of its device (plb_pu_info's cl_device and
 * cl_context); queues, buffers and programs belong to the kernel's opencl
 * class, which times its copies and kernels with the queue's profiling
 * events and reports the copies (plb_report_copies).
 *
 * A device of type CPU (PoCL) runs on [node] opencl_cores cores, the last
 * of those the process may use, which cpu = all leaves to it: PoCL is told
 * its thread count (POCL_MAX_PTHREAD_COUNT, unless set already) and its
 * threads, made when the devices are first listed, start bound there. */
#include <stdio.h>
#include <string.h>

#include "runtime/device/device.h"

#ifdef PLB_HAVE_OPENCL
#include <ctype.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdlib.h>

#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "balancer/base/cl_error.h"

#define MAX_DEVICES 256

struct cl_dev {
	cl_platform_id plat;
	cl_device_id id;
	cl_device_type type;
	char plat_names[3][128];        /* the platform's name, vendor, ICD suffix */
	char name[128];
};

/* What plb calls of OpenCL, and the devices, found once. */
static struct {
	cl_int (*get_platforms)(cl_uint, cl_platform_id *, cl_uint *);
	cl_int (*platform_info)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
	cl_int (*get_devices)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
	cl_int (*device_info)(cl_device_id, cl_device_info, size_t, void *, size_t *);
	cl_context (*create_context)(const cl_context_properties *, cl_uint, const cl_device_id *,
				     void(CL_CALLBACK *)(const char *, const void *, size_t, void *),
				     void *, cl_int *);
	cl_int (*release_context)(cl_context);
	int loaded;             /* tried: dev/ndev or why hold the answer */
	struct cl_dev dev[MAX_DEVICES];
	int ndev;
	char why[300];          /* why none could be listed ("" if they could) */
} ocl;
static pthread_mutex_t ocl_mu = PTHREAD_MUTEX_INITIALIZER;

/* Binds the calling thread to the last `cores` cores it may use, saving
 * its binding in *old (allocated; NULL: nothing changed). */
static void bind_last_cores(hwloc_topology_t topo, int cores, hwloc_bitmap_t *old)
{
	const hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
	hwloc_bitmap_t mine = hwloc_bitmap_alloc(), set = hwloc_bitmap_alloc();
	*old = NULL;
	if (!mine || !set || hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_THREAD))
		goto out;
	hwloc_bitmap_and(mine, mine, allowed);
	int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, mine, HWLOC_OBJ_CORE);
	if (n <= cores)
		goto out;       /* no core to spare: PoCL's threads go where they will */
	for (int i = n - cores; i < n; i++) {
		hwloc_obj_t c = hwloc_get_obj_inside_cpuset_by_type(topo, mine, HWLOC_OBJ_CORE, (unsigned)i);
		if (c)
			hwloc_bitmap_or(set, set, c->cpuset);
	}
	if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0) {
		*old = mine;
		mine = NULL;
	}
out:
	hwloc_bitmap_free(mine);
	hwloc_bitmap_free(set);
}

/* Loads the ICD loader and lists every platform's devices; cores is what
 * a CPU-type device gets (see the top). Called under ocl_mu. */
static void load(int cores)
{
	static const char *const lib = "libOpenCL.so.1";
	void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	ocl.loaded = 1;
	if (!h) {
		const char *e = dlerror();
		snprintf(ocl.why, sizeof ocl.why, "cannot load the OpenCL ICD loader (%s; Debian: ocl-icd-libopencl1)",
			 e ? e : lib);
		return;
	}
	*(void **)&ocl.get_platforms = dlsym(h, "clGetPlatformIDs");
	*(void **)&ocl.platform_info = dlsym(h, "clGetPlatformInfo");
	*(void **)&ocl.get_devices = dlsym(h, "clGetDeviceIDs");
	*(void **)&ocl.device_info = dlsym(h, "clGetDeviceInfo");
	*(void **)&ocl.create_context = dlsym(h, "clCreateContext");
	*(void **)&ocl.release_context = dlsym(h, "clReleaseContext");
	if (!ocl.get_platforms || !ocl.platform_info || !ocl.get_devices || !ocl.device_info ||
	    !ocl.create_context || !ocl.release_context) {
		snprintf(ocl.why, sizeof ocl.why, "%s lacks a function of OpenCL 1.2", lib);
		return;
	}
	cl_platform_id plat[32];
	cl_uint np = 0;
	cl_int e = ocl.get_platforms(32, plat, &np);
	if (e == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (e == CL_SUCCESS && np == 0)) {
		snprintf(ocl.why, sizeof ocl.why, "no OpenCL platform is installed (/etc/OpenCL/vendors is empty; PoCL: pocl-opencl-icd)");
		return;
	}
	if (e != CL_SUCCESS) {
		snprintf(ocl.why, sizeof ocl.why, "clGetPlatformIDs: %s", plb__cl_error_name(e));
		return;
	}
	if (np > 32)
		np = 32;
	char count[16];
	snprintf(count, sizeof count, "%d", cores);
	setenv("POCL_MAX_PTHREAD_COUNT", count, 0);     /* PoCL 1.x-3.x */
	setenv("POCL_CPU_MAX_CU_COUNT", count, 0);      /* PoCL 4 on */
	hwloc_topology_t topo = NULL;
	hwloc_bitmap_t old = NULL;
	if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0)
		bind_last_cores(topo, cores, &old);
	for (cl_uint p = 0; p < np; p++) {
		cl_device_id ids[MAX_DEVICES];
		cl_uint nd = 0;
		if (ocl.get_devices(plat[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, ids, &nd) != CL_SUCCESS)
			continue;       /* a platform without devices (CL_DEVICE_NOT_FOUND) */
		static const cl_platform_info what[3] = {CL_PLATFORM_NAME, CL_PLATFORM_VENDOR,
							 CL_PLATFORM_ICD_SUFFIX_KHR};
		for (cl_uint i = 0; i < nd && i < MAX_DEVICES && ocl.ndev < MAX_DEVICES; i++) {
			struct cl_dev *d = &ocl.dev[ocl.ndev++];
			d->plat = plat[p];
			d->id = ids[i];
			for (int w = 0; w < 3; w++)
				if (ocl.platform_info(plat[p], what[w], sizeof d->plat_names[w],
						      d->plat_names[w], NULL) != CL_SUCCESS)
					d->plat_names[w][0] = '\0';
			if (ocl.device_info(ids[i], CL_DEVICE_NAME, sizeof d->name, d->name, NULL) != CL_SUCCESS)
				snprintf(d->name, sizeof d->name, "?");
			if (ocl.device_info(ids[i], CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL) != CL_SUCCESS)
				d->type = CL_DEVICE_TYPE_DEFAULT;
		}
	}
	if (old) {
		hwloc_set_cpubind(topo, old, HWLOC_CPUBIND_THREAD);
		hwloc_bitmap_free(old);
	}
	if (topo)
		hwloc_topology_destroy(topo);
	if (!ocl.ndev)
		snprintf(ocl.why, sizeof ocl.why, "the %u OpenCL platform%s installed list%s no device",
			 np, np == 1 ? "" : "s", np == 1 ? "s" : "");
}

static int devices(int cores, char *why, size_t len)
{
	pthread_mutex_lock(&ocl_mu);
	if (!ocl.loaded)
		load(cores);
	pthread_mutex_unlock(&ocl_mu);
	if (!ocl.ndev && why && len)
		snprintf(why, len, "%s", ocl.why);
	return ocl.ndev;
}

int plb__dev_opencl_count(char *why, size_t len)
{
	return devices(1, why, len);
}

/* Whether hay contains needle, case aside. */
static int contains(const char *hay, const char *needle, size_t nlen)
{
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < nlen && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == nlen)
			return 1;
	}
	return 0;
}

static int platform_matches(const struct cl_dev *d, const char *want, size_t len)
{
	for (int w = 0; w < 3; w++)
		if (contains(d->plat_names[w], want, len))
			return 1;
	return 0;
}

/* The device selector sel names, sub-th for all: its index in ocl.dev,
 * or -1 with what the node has in err. */
static int resolve(const char *sel, int sub, char *err, size_t errlen)
{
	const char *colon = strrchr(sel, ':');
	int want = atoi(colon ? colon + 1 : sel), seen = 0;
	if (!strcmp(sel, "all"))
		return sub < ocl.ndev ? sub : -1;
	for (int i = 0; i < ocl.ndev; i++)
		if (!colon || platform_matches(&ocl.dev[i], sel, (size_t)(colon - sel)))
			if (seen++ == want)
				return i;
	size_t used = (size_t)snprintf(err, errlen, "%s: %s; this node has:", sel,
				       colon && !seen ? "no platform by that name" : "no such device");
	for (int i = 0; i < ocl.ndev && used < errlen; i++) {
		const struct cl_dev *d = &ocl.dev[i];
		int w = snprintf(err + used, errlen - used, " %d (%s, %s)", i, d->plat_names[0], d->name);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return -1;
}

static const char *selector(const struct plb__dev_spec *s)
{
	return s->cfg->nodes[s->node].pus[PLB__PU_OPENCL].sel[s->value];
}

static int opencl_count(const struct plb__dev_spec *s)
{
	int n = devices(s->cfg->nodes[s->node].opencl_cores, NULL, 0);
	return !strcmp(selector(s), "all") && n > 0 ? n : 1;
}

static int opencl_holds(const struct plb__dev_spec *s)
{
	int cores = s->cfg->nodes[s->node].opencl_cores, held = 0;
	char err[8];
	devices(cores, NULL, 0);
	for (int j = 0, n = opencl_count(s); j < n; j++) {
		int i = resolve(selector(s), j, err, sizeof err);
		held += i >= 0 && ocl.dev[i].type & CL_DEVICE_TYPE_CPU ? cores : 1;
	}
	return held;
}

static int opencl_open(struct plb__dev *d, const struct plb__dev_spec *s, char *err, size_t errlen)
{
	const struct plb__node *node = &s->cfg->nodes[s->node];
	const char *sel = selector(s);
	char why[320] = "";
	if (!devices(node->opencl_cores, why, sizeof why)) {
		snprintf(err, errlen, "opencl = %s: no OpenCL device: %s; accepted: leave opencl out",
			 sel, why);
		return PLB_ECONFIG;
	}
	int i = resolve(sel, s->sub, why, sizeof why);
	if (i < 0) {
		snprintf(err, errlen, "opencl = %s; accepted: all, an index in [0, %d], or PLATFORM:INDEX",
			 why, ocl.ndev - 1);
		return PLB_ECONFIG;
	}
	/* a device asked for twice, by two selectors */
	const struct plb__node_pus *np = &node->pus[PLB__PU_OPENCL];
	for (int k = 0; k < s->value; k++) {
		char e2[8];
		struct plb__dev_spec o = *s;
		o.value = k;
		for (int j = 0, n = opencl_count(&o); j < n; j++)
			if (resolve(np->sel[k], j, e2, sizeof e2) == i) {
				snprintf(err, errlen, "opencl: %s and %s are the same device (%d: %s); accepted: each device once",
					 np->sel[k], sel, i, ocl.dev[i].name);
				return PLB_ECONFIG;
			}
	}
	const struct cl_dev *cd = &ocl.dev[i];
	cl_int e;
	cl_context ctx = ocl.create_context(NULL, 1, &cd->id, NULL, NULL, &e);
	if (!ctx) {
		snprintf(err, errlen, "opencl = %s: clCreateContext on %d (%s): %s", sel, i, cd->name,
			 plb__cl_error_name(e));
		return PLB_EDEVICE;
	}
	d->state = ctx;
	d->desc.device = d->info.device = i;
	d->info.cl_device = cd->id;
	d->info.cl_context = ctx;
	if (cd->type & CL_DEVICE_TYPE_CPU)
		d->desc.cores = d->info.cores = node->opencl_cores;
	snprintf(d->desc.name, sizeof d->desc.name, "%s.cl%d", node->name, i);
	return 0;
}

static void opencl_close(struct plb__dev *d)
{
	if (d->state)
		ocl.release_context(d->state);
	d->state = NULL;
}
#else
static int opencl_open(struct plb__dev *d, const struct plb__dev_spec *s, char *err, size_t errlen)
{
	(void)d;
	snprintf(err, errlen, "opencl = %s: plb was built without OpenCL (no OpenCL headers, ICD loader or CLBlast at build time); accepted: leave opencl out, or rebuild where they are installed (Debian: opencl-headers ocl-icd-opencl-dev libclblast-dev)",
		 s->cfg->nodes[s->node].pus[PLB__PU_OPENCL].sel[s->value]);
	return PLB_ECONFIG;
}
#define opencl_close NULL
#define opencl_count NULL
#define opencl_holds NULL

int plb__dev_opencl_count(char *why, size_t len)
{
	if (why && len)
		snprintf(why, len, "plb was built without OpenCL");
	return 0;
}
#endif

const struct plb__devclass plb__dev_opencl = {
	.name = "opencl",
	.kernel = PLB_DEV_OPENCL,
	.host_core = 1,
	.count = opencl_count,
	.holds = opencl_holds,
	.open = opencl_open,
	.close = opencl_close,
};
