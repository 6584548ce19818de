#!/usr/bin/env bash
# make bench-gpu: plb-mm on a machine with a CUDA GPU, against cuBLAS called
# directly, side by side in one run. For each precision and order n:
#   cuBLAS gemm      the product alone, A, B and C on the device
#   cuBLAS+copy      A and B copied from host memory, the product, C copied
#                    back (pageable host memory: what a plain program does)
#   plb gpu          plb-mm, [node] gpu = 0
#   plb cpu          plb-mm, [node] cpu = all
#   plb cpu+gpu      plb-mm, cpu = all and gpu = 0
#   sum              the two solo throughputs added
# Figures are GFLOP/s (2 n^3 over the time). plb's time is its report's
# makespan: from plb_run's start (A not yet on the device) to the last
# column of C back in host memory. "cold" is a process's first run, which
# makes the CUDA kernel's cuBLAS handle, streams and pinned buffers; the
# other plb columns are the median of the warm runs after it.
# Environment: NS (orders, default "4096 8192 16384"), PRECS (default
# "single double"), RUNS (plb runs per process, default 3), POLICY, LOGDIR
# (keep each plb-mm run's report there, as CONFIG-PREC-N.json).
# Nothing is asserted: a timing is not a test. Run where nothing else runs.
set -euo pipefail
BUILD=${BUILD:-build}
NS=${NS:-4096 8192 16384}
PRECS=${PRECS:-single double}
RUNS=${RUNS:-3}
POLICY=${POLICY:-plb-hac}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

if [ ! -x "$BUILD/bench/cublas_mm" ]; then
	echo "bench-gpu: $BUILD/bench/cublas_mm is missing: this build has no CUDA (see 'make' output)" >&2
	exit 1
fi
cfg() { printf '[run]\nunits = 1\npolicy = %s\n[node a]\n' "$POLICY"; printf '%s\n' "$@"; }
cfg "gpu = 0" >"$T/gpu.ini"
cfg "cpu = all" >"$T/cpu.ini"
cfg "cpu = all" "gpu = 0" >"$T/both.ini"

# runs CONFIG N PREC: "cold warm-median" makespans of one process's runs
runs() {
	"$BUILD/plb-mm" --config "$1" --n "$2" --prec "$3" --runs "$RUNS" --json --verify \
		>"$T/out" 2>"$T/err" || { cat "$T/err" >&2; echo "nan nan"; return; }
	grep -q 'verify.*: ok' "$T/err" || { cat "$T/err" >&2; echo "nan nan"; return; }
	[ -z "${LOGDIR:-}" ] || cp "$T/out" "$LOGDIR/$(basename "$1" .ini)-$3-$2.json"
	grep '^{' "$T/out" | python3 -c '
import json, statistics, sys
m = [json.loads(l)["makespan_s"] for l in sys.stdin]
print(m[0], statistics.median(m[1:]) if len(m) > 1 else m[0])'
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
	sed 's/^/gpu: /' || true
echo "cpu: $(nproc) logical processors, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "plb-mm --runs $RUNS --policy $POLICY; GFLOP/s"
printf '%-6s %6s %9s %9s | %9s %9s %9s %9s %9s | %7s %7s\n' prec n "cuBLAS" "cuBLAS+cp" \
	"gpu cold" "plb gpu" "plb cpu" "cpu+gpu" "sum" "gpu/cp" "both/sum"
for prec in $PRECS; do
	for n in $NS; do
		"$BUILD/bench/cublas_mm" "$n" "$prec" 5 >"$T/cb" 2>&1 || { cat "$T/cb" >&2; continue; }
		cg=$(awk '$1 == "gemm" {print $2}' "$T/cb")
		cp=$(awk '$1 == "pageable" {print $2}' "$T/cb")
		read -r gcold gwarm < <(runs "$T/gpu.ini" "$n" "$prec")
		read -r _ cwarm < <(runs "$T/cpu.ini" "$n" "$prec")
		read -r _ bwarm < <(runs "$T/both.ini" "$n" "$prec")
		python3 - "$prec" "$n" "$cg" "$cp" "$gcold" "$gwarm" "$cwarm" "$bwarm" <<'PY'
import sys
prec, n = sys.argv[1], int(sys.argv[2])
t = [float(x) for x in sys.argv[3:]]
g = [2 * n**3 / x * 1e-9 if x == x and x > 0 else float("nan") for x in t]
cg, cp, gcold, gpu, cpu, both = g
s = gpu + cpu
print("%-6s %6d %9.0f %9.0f | %9.0f %9.0f %9.0f %9.0f %9.0f | %7.3f %7.3f"
      % (prec, n, cg, cp, gcold, gpu, cpu, both, s, gpu / cp, both / s))
PY
	done
done
