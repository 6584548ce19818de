# The opencl device class end to end, on whatever OpenCL device the node
# has (PoCL's, on the CPU, where nothing else is installed; make test's
# machine has it, so this runs in every test run). Each app with
# opencl = 0 alone and beside cpu = 1, verified; opencl = all; the
# devices chosen by platform name; and every wrong selector refused at
# start with file:line and what this node has. Without OpenCL in the
# build, opencl = 0 is an error naming file:line and saying why; without
# a driver it is too, and the script is skipped, unless
# PLB_REQUIRE_OPENCL=1, which fails it.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
printf '[run]\nunits = 1\n[node a]\nopencl = 0\n' >"$TMP/cl.ini"
run() { one_run "$BUILD/plb-$1" --json "${@:2}"; }

if [ "${HAVE_OPENCL:-0}" != 1 ]; then
	run bs --config "$TMP/cl.ini" --n 1000; rc=$?
	check "opencl = 0 without OpenCL in the build: fails (rc $rc)" [ $rc -ne 0 -a $rc -ne 124 ]
	check "opencl = 0 without OpenCL: file:line, and why" grep -q "cl.ini:4: .*built without OpenCL" "$TMP/out"
	finish
fi
if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
	run bs --config "$TMP/cl.ini" --n 1000; rc=$?
	check "opencl = 0 without a driver: fails (rc $rc)" [ $rc -ne 0 -a $rc -ne 124 ]
	check "opencl = 0 without a driver: file:line, and why" grep -q "cl.ini:4: .*no OpenCL" "$TMP/out"
	check "PLB_REQUIRE_OPENCL=1: an OpenCL driver is installed" [ "${PLB_REQUIRE_OPENCL:-0}" != 1 ]
	echo "no OpenCL device on this node (no driver in /etc/OpenCL/vendors)"
	[ "$fails" -eq 0 ] && exit 77 || exit 1
fi

verified() { grep -q 'verify.*: ok' "$TMP/out" || { cat "$TMP/out"; return 1; }; }
printf '[run]\nunits = 1\n[node a]\ncpu = 1\nopencl = 0\n' >"$TMP/both.ini"
printf '[run]\nunits = 1\n[node a]\ncpu = all\nopencl = all\n' >"$TMP/all.ini"
for app in "mm --n 301 --prec single" "mm --n 160 --prec double" "bs --n 300001 --prec single" \
	"bs --n 200000" "kmeans --n 20001 --d 5 --k 7 --iters 2" "grn --genes 60 --samples 80 --size 2"; do
	set -- $app
	check "$1 on opencl = 0 ($app)" run $app --config "$TMP/cl.ini" --verify
	check "$1 on opencl = 0: verified" verified
	check "$1 on opencl = 0: the PU is a.cl0" test "$(json_get pus | tail -n 1)" = "['a.cl0']"
	check "$1 on cpu = 1 and opencl = 0 ($app)" run $app --config "$TMP/both.ini" --verify
	check "$1 on cpu + opencl: verified" verified
	check "$1 on cpu + opencl: coverage" test "$(json_get coverage_ok | tail -n 1)" = True
done
check "mm on cpu = all and opencl = all" run mm --n 200 --config "$TMP/all.ini" --verify --runs 2
check "mm on cpu = all and opencl = all: verified" verified
# plb-mm --layout 2d: the device's slice of C stays on it from its first
# step to the end, verified on the node in both precisions; beside a CPU
# PU, the gathered C is A B element by element
for prec in single double; do
	check "2-D product on the device, $prec" run mm --config "$TMP/cl.ini" --n 512 --block 64 --layout 2d \
		--prec $prec --verify
	check "2-D product on the device, $prec: verified" grep -q "on the nodes): ok" "$TMP/out"
done
printf '[run]\nunits = 1\n[node a]\ncpu = 1\nopencl = 0\n' >"$TMP/cl2.ini"
check "2-D product on cpu = 1 and opencl = 0" run mm --config "$TMP/cl2.ini" --n 256 --block 32 --layout 2d \
	--seed 3 --output "$TMP/c.bin"
check "2-D product on cpu = 1 and opencl = 0: C is A B" python3 test/cli/mm2d_check.py "$TMP/c.bin" 256 3
check "2-D product on cpu = 1 and opencl = 0: two PUs" test "$(json_get pus)" = 2

# plb-nuclei (a pipeline): the device takes some of the six operations it
# has (the first ready tasks go to every slot), the tiles as the CPU's
if [ -x "$BUILD/plb-nuclei" ]; then
	check "nuclei on cpu = 1 and opencl = 0" \
		one_run "$BUILD/plb-nuclei" --config "$TMP/both.ini" --width 512 --height 256 --tile 128 --verify --json
	check "nuclei on cpu + opencl: verified (as the serial reference)" grep -q 'verify: ok' "$TMP/out"
	check "nuclei on cpu + opencl: the device ran tasks" python3 -c "
import json, sys
d = [json.loads(l) for l in open('$TMP/out') if l.startswith('{')][-1]
sys.exit(not sum(o['ran']['mic'] for o in d['ops']))"
fi

# the node's devices, and the first word of the name of the platform
# that has device 0, as the ICD loader lists them
read -r nd plat0 < <(python3 - <<'PY'
import ctypes
cl = ctypes.CDLL("libOpenCL.so.1")
n = ctypes.c_uint(0); ids = (ctypes.c_void_p * 16)()
cl.clGetPlatformIDs(16, ids, ctypes.byref(n)); total = 0; first = None
for i in range(n.value):
    d = ctypes.c_uint(0)
    if cl.clGetDeviceIDs(ctypes.c_void_p(ids[i]), ctypes.c_ulong(0xFFFFFFFF), 0, None, ctypes.byref(d)) == 0:
        if d.value and first is None:
            name = ctypes.create_string_buffer(256)
            cl.clGetPlatformInfo(ctypes.c_void_p(ids[i]), 0x0902, 256, name, None)
            first = name.value.decode().split()[0].lower()
        total += d.value
print(total, first)
PY
)
bad() {     # bad VALUE PATTERN: opencl = VALUE refused with PATTERN
	printf '[run]\nunits = 1\n[node a]\ncpu = 1\nopencl = %s\n' "$1" >"$TMP/bad.ini"
	run bs --config "$TMP/bad.ini" --n 100; local rc=$?
	check "opencl = $1: refused (rc $rc)" [ $rc -ne 0 -a $rc -ne 124 ]
	check "opencl = $1: $2" grep -q "bad.ini:5: .*$2" "$TMP/out"
}
bad "$nd" "no such device; this node has: 0 ("
bad "nosuchplatform:0" "no platform by that name; this node has: 0 ("
bad "0 0" "device 0 is listed twice"
bad "all 0" "all stands alone"
bad "zero" "'zero' is not a device; accepted: all, or OpenCL devices"
printf '[run]\nunits = 1\n[node a]\nopencl = 0 %s:0\n' "$plat0" >"$TMP/twice.ini"
run bs --config "$TMP/twice.ini" --n 100; rc=$?
check "one device by two selectors: refused (rc $rc)" [ $rc -ne 0 -a $rc -ne 124 ]
check "one device by two selectors: named" grep -q "twice.ini:4: .*are the same device" "$TMP/out"
finish
