#!/usr/bin/env bash
# make bench: prints the figures (nothing is asserted). Run on a quiet
# machine; solver and wall times are measured CPU/wall time.
set -euo pipefail
BUILD=${BUILD:-build}
echo "== solver time against PU count (bench_solver)"
"$BUILD"/bench/bench_solver
echo
echo "== adaptation to a 4x slowdown (bench_adapt)"
"$BUILD"/bench/bench_adapt
echo
echo "== every policy on every scenario, and the simulator's wall time (bench_sim)"
"$BUILD"/bench/bench_sim "$@"
