"""The layer checker of test/cli/layers.sh: run in a git checkout,
   python3 layers.py LAYER...  (the layer folders, lowest first)
prints each file that breaks a rule, and exits 1 if any does."""
import os, re, subprocess, sys
layers = sys.argv[1:]
files = subprocess.check_output(
    ["git", "ls-files", "--cached", "--others", "--exclude-standard"]).decode().split()
src = [f for f in files if re.search(r"\.(c|h|cu)$", f) and os.path.exists(f)]
bad = []

def layer_of(path):
    """index in layers of the folder holding path (longest match), None if none"""
    best = None
    for i, l in enumerate(layers):
        if path.startswith(l + "/") and (best is None or len(l) > len(layers[best])):
            best = i
    return best

def resolve(inc):
    return "include/" + inc if os.path.exists("include/" + inc) else inc

MPI = re.compile(r"^mpi\.h$")
CUDA = re.compile(r"^(cuda|cublas|curand|cufft|cusparse|nvrtc)[^/]*\.h$|^cuda/")
OPENCL = re.compile(r"^(CL|OpenCL)/|^clblast")
BALANCER_DENY = re.compile(r"^(mpi|hwloc|ini|pthread|cuda|cublas)[^/]*\.h$|^(cjson|CL|hwloc)/")
for f in src:
    text = open(f, errors="replace").read()
    quoted = re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M)
    system = re.findall(r"^\s*#\s*include\s+<([^>]+)>", text, re.M)
    lf = layer_of(f)
    if f.startswith(("balancer/", "runtime/")) and lf is None:
        bad.append(f"{f}: not in a layer folder ({' '.join(layers)}); put it in one, or add its folder to LAYERS in the Makefile")
    for inc in quoted:
        h = resolve(inc)
        if h.startswith("include/") or h.startswith("test/") or "/" not in inc:
            if "/" not in inc and not os.path.exists(os.path.join(os.path.dirname(f), inc)) \
               and not h.startswith("include/"):
                bad.append(f'{f}: #include "{inc}": not a public header, nor beside the file; include internal headers by their path')
            continue
        lh = layer_of(h)
        if f.startswith("kernels/"):
            own = "/".join(f.split("/")[:2]) + "/"
            shared = h.startswith("kernels/") and h.count("/") == 1   # kernels/*.h serve every kernel
            if not (h.startswith(own) or shared or h.startswith("balancer/base/")):
                bad.append(f'{f}: #include "{inc}": a kernel sees include/, balancer/base, kernels/*.h and its own folder only')
        elif lf is not None and lh is not None and lh > lf:
            bad.append(f'{f}: #include "{inc}": {layers[lh]} is above {layers[lf]}')
        elif lf is not None and lh is None:
            bad.append(f'{f}: #include "{inc}": not a layer\'s header')
        elif (f.startswith("apps/") and h.startswith("apps/") and h.count("/") > 1 and
              h.split("/")[1] != f.split("/")[1]):
            # apps/*.h serve every bundled app (apps/app.h); apps/NAME/ its own
            bad.append(f'{f}: #include "{inc}": another app\'s header')
    for inc in system:
        if MPI.search(inc) and f != "runtime/transport/mpi.c":
            bad.append(f"{f}: #include <{inc}>: only runtime/transport/mpi.c includes mpi.h")
        if CUDA.search(inc) and f != "runtime/device/cuda.c" and not (f.startswith(("kernels/", "bench/")) and f.endswith(".cu")):
            bad.append(f"{f}: #include <{inc}>: CUDA headers only in runtime/device/cuda.c, kernels/*/*.cu and bench/*.cu")
        if OPENCL.search(inc) and f != "runtime/device/opencl.c" and f != "kernels/opencl_util.h" \
           and not (f.startswith(("kernels/", "bench/")) and f.endswith("_opencl.c")) and f != "bench/clblast_mm.c":
            bad.append(f"{f}: #include <{inc}>: OpenCL headers only in runtime/device/opencl.c, kernels/opencl_util.h, kernels/*/*_opencl.c and bench/clblast_mm.c")
        if f.startswith("balancer/") and BALANCER_DENY.search(inc):
            bad.append(f"{f}: #include <{inc}>: the balancer uses libc, libm, LAPACKE and NLopt only")
tracked = subprocess.check_output(["git", "ls-files"]).decode().split()
for f in tracked:
    if re.search(r"(^|/)build[^/]*/|\.(o|a|so|d)$", f):
        bad.append(f"{f}: a build output tracked by git (git rm --cached it)")
print("\n".join(bad))
print(f"{len(src)} files checked, {len(bad)} problems")
sys.exit(1 if bad else 0)
