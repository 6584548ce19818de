# The layers (docs/ARCHITECTURE.md) hold: every source file of balancer/
# and runtime/ is in a layer folder (make layers lists them, lowest
# first), and includes only headers of its own layer, lower layers and
# include/; kernels/NAME includes only include/, balancer/base and its own
# folder; mpi.h is in the MPI transport alone, CUDA headers in the cuda
# device class and kernels' .cu files alone, OpenCL headers in the opencl
# device class and kernels' _opencl.c files alone; the balancer uses none of
# the runtime's libraries; git tracks no build output (test/cli/layers.py
# has the rules). The checker is also shown to catch each kind of break.
# Within each layer's folders, no files call each other in a circle
# (test/cli/calls.py, over the build's objects), shown to catch one too.
. test/cli/lib.bash
layers=$(make -s --no-print-directory layers)
check "make layers lists the layers (got '$layers')" [ "$(wc -w <<<"$layers")" -ge 5 ]
# shellcheck disable=SC2086
python3 test/cli/layers.py $layers >"$TMP/out" 2>&1; rc=$?
cat "$TMP/out"
check "layers hold" [ "$rc" -eq 0 ]

# A scratch repository with one break of each kind.
here=$PWD
mkdir -p "$TMP/r/runtime/config" "$TMP/r/runtime/core" "$TMP/r/balancer" "$TMP/r/kernels/k" \
	"$TMP/r/runtime/stray" "$TMP/r/build" "$TMP/r/apps/x" "$TMP/r/apps/y"
cd "$TMP/r" || exit 1
git init -q .
printf '#include "runtime/core/rt.h"\n' >runtime/config/up.c
printf '#include <mpi.h>\n' >runtime/core/mpi_elsewhere.c
printf '#include <cuda_runtime.h>\n' >runtime/core/cuda_elsewhere.c
printf '#include <CL/cl.h>\n' >runtime/core/opencl_elsewhere.c
printf '#include <hwloc.h>\n' >balancer/uses_hwloc.c
printf '#include "runtime/config/config.h"\n' >kernels/k/k.c
printf 'int x;\n' >runtime/stray/s.c
printf 'x\n' >build/out.o
printf '#include "apps/y/y.h"\n' >apps/x/main.c
printf '#include "apps/app.h"\n#include "apps/y/y.h"\n' >apps/y/main.c
printf '\n' >apps/y/y.h
printf '\n' >apps/app.h
git add -A
out=$(python3 "$here/test/cli/layers.py" balancer runtime/config runtime/core 2>&1); rc=$?
cd "$here" || exit 1
check "breaks: exit 1 (got $rc)" [ "$rc" -eq 1 ]
for what in "runtime/config/up.c: .*above" "runtime/core/mpi_elsewhere.c: .*mpi.h" \
	    "runtime/core/cuda_elsewhere.c: .*CUDA" "runtime/core/opencl_elsewhere.c: .*OpenCL headers only" "balancer/uses_hwloc.c: .*the balancer" \
	    "kernels/k/k.c: .*a kernel sees" "runtime/stray/s.c: not in a layer" "build/out.o: a build output" \
	    "apps/x/main.c: .*another app's header"; do
	check "caught: $what (got: $out)" grep -q "$what" <<<"$out"
done
check "an app may include apps/app.h and its own headers (got: $out)" test "$(grep -c '^apps/y/' <<<"$out")" = 0

# No circle of calls between a layer's files (BUILD's objects).
BUILD=${BUILD:-build}
dirs=$(cd "$BUILD" && find balancer runtime -name '*.o' -printf '%h\n' | sort -u)
check "the build has the layers' objects (got: $(echo $dirs))" [ "$(wc -w <<<"$dirs")" -ge 7 ]
# shellcheck disable=SC2086
python3 test/cli/calls.py $(sed "s|^|$BUILD/|" <<<"$dirs") >"$TMP/calls" 2>&1; rc=$?
cat "$TMP/calls"
check "no files of a layer call each other in a circle" [ "$rc" -eq 0 ]
mkdir -p "$TMP/circle"
printf 'int b(void);\nint a(void) { return b(); }\n' >"$TMP/circle/a.c"
printf 'int a(void);\nint b(void) { return a() + 1; }\n' >"$TMP/circle/b.c"
printf 'int a(void);\nint c(void) { return a(); }\n' >"$TMP/circle/c.c"
(cd "$TMP/circle" && cc -c a.c b.c c.c)
out=$(python3 test/cli/calls.py "$TMP/circle" 2>&1); rc=$?
check "a circle is caught (got: $out)" [ "$rc" -eq 1 ]
check "... naming its files only (got: $out)" grep -q "a.c, b.c call each other" <<<"$out"
finish
