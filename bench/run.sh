#!/usr/bin/env bash
# make bench: prints the figures (nothing is asserted). Run on a quiet
# machine; solver and wall times are measured CPU/wall time.
set -euo pipefail
BUILD=${BUILD:-build}
echo "== solver time against PU count (bench_solver)"
"$BUILD"/bench/bench_solver
echo
echo "== model refit and inversion cost (bench_model)"
"$BUILD"/bench/bench_model
echo
echo "== a block's message buffer: fresh, fresh with its pages mapped first, new (huge pages, mapped in one call), kept (bench_msgbuf)"
"$BUILD"/bench/bench_msgbuf
echo
echo "== adaptation to a 4x slowdown (bench_adapt)"
"$BUILD"/bench/bench_adapt
echo "-- the same without growing blocks for efficiency (block_overhead=1)"
"$BUILD"/bench/bench_adapt config/sim/adapt-4x.ini block_overhead=1
echo
echo "== every policy on every scenario, and the simulator's wall time (bench_sim)"
"$BUILD"/bench/bench_sim "$@"
echo
echo "== the 1024-PU cluster with W = 10^8 (a ~35 s run instead of ~3.5 s)"
bash scripts/gen-large-scenario.sh 100000000 > "$BUILD"/large-1e8.ini
"$BUILD"/bench/bench_sim "$BUILD"/large-1e8.ini
echo
echo "== robustness: every policy on 200 drawn clusters (scripts/robust-bench.py)"
PLBSIM=${PLBSIM:-$BUILD/plbsim} python3 scripts/robust-bench.py --json "$BUILD"/bench-robust.json
echo
echo "== step_fraction (the size of a virtual step) against ratio, plb-hac, seed 1"
printf '%-14s' scenario; for f in 0.1 0.25 0.5 1; do printf ' %8s' "sf=$f"; done; echo
for s in mm-5 grn-5 kmeans-5 adapt-4x interference; do
	printf '%-14s' "$s"
	for f in 0.1 0.25 0.5 1; do
		r=$("$BUILD"/plbsim config/sim/$s.ini --policy plb-hac --set step_fraction=$f --json |
		    sed -n 's/^[[:space:]]*"ratio":[[:space:]]*\([0-9.]*\).*/\1/p')
		printf ' %8.4f' "$r"
	done
	echo
done
echo
bash bench/runtime.sh
echo
echo "== many ranks and emulated hosts: the runtime against plbsim (bench/hosts.sh)"
bash bench/hosts.sh
