#!/usr/bin/env bash
# make bench-cpu: plb-mm on this node's cores in one process, against one
# multi-threaded BLAS gemm call on the same cores (bench/blas_mm), side by
# side in one run. For each precision and order n:
#   blas        one cblas gemm call, the BLAS library's own threads
#   cold        plb-mm's first run in its process (it trains its models)
#   in place    plb-mm's later runs, the median ([run] in_place = 1, the
#               default: blocks read B and write C where the app keeps them)
#   copied      the same with in_place = 0 (each block's columns copied
#               into a message and C's back, as between processes)
# Figures are seconds: plb's is the report's makespan (first grant to the
# last column of C in place), its wall (plb_run, START included) beside it.
# The ratios are plb's over blas's. Environment: NS (orders, default
# "4096 8192"), PRECS (default "single double"), RUNS (plb runs per
# process, default 4), CPU (the [node] cpu value, default all).
# Nothing is asserted: a timing is not a test. Run where nothing else runs.
set -euo pipefail
BUILD=${BUILD:-build}
NS=${NS:-4096 8192}
PRECS=${PRECS:-single double}
RUNS=${RUNS:-4}
CPU=${CPU:-all}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

for b in "$BUILD/bench/blas_mm" "$BUILD/plb-mm"; do
	[ -x "$b" ] || { echo "bench-cpu: $b is missing (make first)" >&2; exit 1; }
done
printf '[run]\nunits = 1\n[node a]\ncpu = %s\n' "$CPU" >"$T/inplace.ini"
printf '[run]\nunits = 1\nin_place = 0\n[node a]\ncpu = %s\n' "$CPU" >"$T/copied.ini"

# runs CONFIG N PREC: "cold-makespan warm-makespan warm-wall" (medians of
# the runs after the first)
runs() {
	"$BUILD/plb-mm" --config "$1" --n "$2" --prec "$3" --runs "$RUNS" --json --verify \
		>"$T/out" 2>"$T/err" || { cat "$T/err" >&2; echo "nan nan nan"; return; }
	grep -q 'verify.*: ok' "$T/err" || { cat "$T/err" >&2; echo "nan nan nan"; return; }
	grep '^{' "$T/out" | python3 -c '
import json, statistics, sys
r = [json.loads(l) for l in sys.stdin]
w = r[1:] or r
print(r[0]["makespan_s"], statistics.median(x["makespan_s"] for x in w),
      statistics.median(x["wall_s"] for x in w))'
}

echo "cpu: $(nproc) logical processors,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "plb-mm [node] cpu = $CPU, one process, --runs $RUNS; seconds (makespan; wall in brackets)"
printf '%-6s %6s %8s | %8s %18s %18s | %8s %8s %8s\n' prec n blas cold "in place" copied \
	"cold/b" "inpl/b" "copy/b"
for prec in $PRECS; do
	for n in $NS; do
		"$BUILD/bench/blas_mm" "$n" "$prec" 3 >"$T/b" 2>&1 || { cat "$T/b" >&2; continue; }
		read -r cold inm inw < <(runs "$T/inplace.ini" "$n" "$prec")
		read -r _ cpm cpw < <(runs "$T/copied.ini" "$n" "$prec")
		b1=$(awk '$1 == "gemm" {print $2}' "$T/b")
		"$BUILD/bench/blas_mm" "$n" "$prec" 3 >"$T/b" 2>&1 || { cat "$T/b" >&2; continue; }
		b2=$(awk '$1 == "gemm" {print $2}' "$T/b")
		python3 - "$prec" "$n" "$b1" "$b2" "$cold" "$inm" "$inw" "$cpm" "$cpw" <<'PY'
import sys
prec, n = sys.argv[1], int(sys.argv[2])
b1, b2, cold, inm, inw, cpm, cpw = (float(x) for x in sys.argv[3:])
b = min(b1, b2)  # blas ran before and after plb: its better figure
print("%-6s %6d %8.3f | %8.3f %8.3f (%6.3f) %8.3f (%6.3f) | %8.3f %8.3f %8.3f"
      % (prec, n, b, cold, inm, inw, cpm, cpw, cold / b, inm / b, cpm / b))
PY
	done
done
