#!/usr/bin/env bash
# make bench-opencl: the opencl device class on this node's first OpenCL
# device (PoCL's, on the CPU, where nothing else is installed), side by
# side in one run:
#   1. plb-mm on opencl = 0 alone against CLBlast called directly on the
#      same device with the same copies (bench/clblast_mm's "copy"), at
#      each order of NS (default "1024 2048"), single precision;
#   2. plb-bs, plb-kmeans and plb-grn on the OpenCL device holding every core
#      (opencl_cores = all of them) against their CPU kernels on the same
#      cores (cpu = all, without the device);
#   3. a node with cpu = 1 and the OpenCL device on the other core
#      (opencl_cores = 1), against the sum of the two alone (plb-bs).
# Figures: seconds (plb's: its report's makespan, the median of RUNS runs
# in one process after a first that compiles and trains; plb-kmeans: of
# its iterations after the first), and the ratios
# the targets are stated in. Nothing is asserted: a timing is not a test.
set -euo pipefail
BUILD=${BUILD:-build}
NS=${NS:-1024 2048}
RUNS=${RUNS:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! "$BUILD/bench/clblast_mm" 64 single 1 >"$T/probe" 2>&1; then
	cat "$T/probe" >&2
	echo "bench-opencl: no OpenCL device to run on (see above)" >&2
	exit 1
fi
cores=$(nproc)
cfg() { printf '[run]\nunits = 1\n[node a]\n'; printf '%s\n' "$@"; }
cfg "opencl = 0" "opencl_cores = $cores" >"$T/cl.ini"
cfg "cpu = all" >"$T/cpu.ini"
cfg "opencl = 0" "opencl_cores = 1" >"$T/cl1.ini"
cfg "cpu = 1" >"$T/cpu1.ini"
cfg "cpu = 1" "opencl = 0" "opencl_cores = 1" >"$T/both.ini"

# med APP CONFIG ARGS...: the median makespan of runs 2.. of one process
med() {
	local app=$1 conf=$2 rep; shift 2
	# plb-kmeans reports each iteration (a run each): --iters, not --runs
	rep=(--runs $((RUNS + 1)))
	[ "$app" = kmeans ] && rep=(--iters $((RUNS + 1)) --tol 0)
	# plb-grn runs once a process: RUNS + 1 processes
	if [ "$app" = grn ]; then
		for _ in $(seq $((RUNS + 1))); do
			"$BUILD/plb-$app" --config "$conf" --json "$@" 2>"$T/err" | grep '^{' || { cat "$T/err" >&2; echo nan; return; }
		done >"$T/out"
		python3 -c '
import json, statistics, sys
print(statistics.median([json.loads(l)["makespan_s"] for l in open(sys.argv[1])][1:]))' "$T/out"
		return
	fi
	"$BUILD/plb-$app" --config "$conf" "${rep[@]}" --json --verify "$@" >"$T/out" 2>"$T/err" ||
		{ cat "$T/err" >&2; echo nan; return; }
	grep -q 'verify.*: ok' "$T/err" || { cat "$T/err" >&2; echo nan; return; }
	grep '^{' "$T/out" | python3 -c '
import json, statistics, sys
m = [json.loads(l)["makespan_s"] for l in sys.stdin][1:]
print(statistics.median(m))'
}
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('%.3f' % (a / b) if b > 0 else 'nan')" "$@"; }

echo "device: $(sed -n 's/^device //p' "$T/probe"); $cores cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "1. plb-mm single on opencl = 0 against CLBlast with the same copies (target: plb/CLBlast <= 1.10)"
printf '%6s %10s %10s %9s\n' n "CLBlast s" "plb s" plb/CLBlast
for n in $NS; do
	"$BUILD/bench/clblast_mm" "$n" single "$RUNS" >"$T/cb"
	ref=$(awk '$1 == "copy" {print $2}' "$T/cb")
	plb=$(med mm "$T/cl.ini" --n "$n" --prec single)
	printf '%6d %10.4f %10.4f %9s\n' "$n" "$ref" "$plb" "$(ratio "$plb" "$ref")"
done

echo "2. on the OpenCL device holding all $cores cores against the CPU kernel on them (target: <= 1.5)"
printf '%-30s %10s %10s %9s\n' run "cpu s" "opencl s" opencl/cpu
for app in "bs --n 4000000 --prec single" "bs --n 2000000 --prec double" \
	"kmeans --n 400000 --d 8 --k 16" "grn --genes 300 --samples 200 --size 2"; do
	set -- $app
	c=$(med "$1" "$T/cpu.ini" "${@:2}")
	o=$(med "$1" "$T/cl.ini" "${@:2}")
	printf '%-30s %10.4f %10.4f %9s\n' "$app" "$c" "$o" "$(ratio "$o" "$c")"
done

echo "3. cpu = 1 and the OpenCL device on one core, together against the sum alone (target: >= 0.9)"
printf '%-30s %10s %10s %10s %9s\n' run "cpu u/s" "opencl u/s" "both u/s" both/sum
for app in "bs --n 4000000 --prec single"; do
	set -- $app
	n=$(sed -n 's/.*--n \([0-9]*\).*/\1/p' <<<"$app")
	c=$(med "$1" "$T/cpu1.ini" "${@:2}")
	o=$(med "$1" "$T/cl1.ini" "${@:2}")
	b=$(med "$1" "$T/both.ini" "${@:2}")
	python3 - "$app" "$n" "$c" "$o" "$b" <<'PY'
import sys
app, n = sys.argv[1], int(sys.argv[2])
c, o, b = (n / float(x) for x in sys.argv[3:])
print("%-30s %10.0f %10.0f %10.0f %9.3f" % (app, c, o, b, b / (c + o)))
PY
done
