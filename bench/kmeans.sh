#!/usr/bin/env bash
# make bench-kmeans: plb-kmeans's figures, side by side in one run
# (printed, not asserted):
#  1. one Lloyd iteration's work on one core (bench/kmeans_ref.c): a
#     straightforward BLAS program (one sgemm for all distances), a plain
#     loop built for this machine, and plb's CPU kernel called directly;
#  2. plb-kmeans in one process on one core ([node a] cpu = 1): each
#     iteration's makespan against that direct call of its kernel;
#  3. plb-kmeans on the demo cluster (config/kmeans-demo.ini, mpirun -np
#     3): the first iteration's ratio (it trains) and the later ones'.
N=${N:-2000000}
ITERS=${ITERS:-8}
. "$(dirname "$0")/lib.bash"
pin=""
command -v taskset >/dev/null && pin="taskset -c 0"
export OPENBLAS_NUM_THREADS=1

echo "== one core: one iteration's work, a BLAS program and a plain loop against plb's kernel (best of 5)"
for shape in "$N 16 16" "$((N / 4)) 64 64" "$((N / 4)) 4 256"; do
	# shellcheck disable=SC2086
	$pin "$BUILD/bench/kmeans_ref" $shape
done
echo
echo "== one process, one core: plb-kmeans's iterations against the direct call on the same core, n $N, d 16, k 16 (median of $RUNS)"
# the direct call: the kernel's best time on the same points, cores and
# shape (kmeans_ref's last figure but one)
direct=()
for i in $(seq 1 "$RUNS"); do
	direct+=("$($pin "$BUILD/bench/kmeans_ref" "$N" 16 16 |
		sed "s/.*plb kernel \([0-9.]*\) M points\/s.*/\1/" |
		python3 -c "import sys; print($N / float(sys.stdin.read()) / 1e6)")")
done
first=() later=()
for i in $(seq 1 "$RUNS"); do
	"$BUILD/plb-kmeans" --config "$T/cpu1.ini" --n "$N" --d 16 --k 16 --iters "$ITERS" --tol 0 \
		--json >"$T/one.json"
	read -r f l < <(python3 - "$T/one.json" <<'PY'
import json, statistics, sys
its = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
ms = [r["makespan_s"] for r in its]
print(ms[0], statistics.median(ms[1:]))
PY
)
	first+=("$f") later+=("$l")
done
a=$(med "${direct[@]}") f=$(med "${first[@]}") l=$(med "${later[@]}")
python3 -c "print('direct call %.4f s (runs %s); plb-kmeans first iteration %.4f s (%.3fx), later iterations %.4f s (%.3fx; medians of each run: %s)' % ($a, '${direct[*]}', $f, $f / $a, $l, $l / $a, '${later[*]}'))"
echo
if [ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null; then
	echo "== the demo cluster: mpirun -np 3 plb-kmeans --config config/kmeans-demo.ini --n $N --d 16 --k 16 --iters $ITERS --tol 0"
	for i in $(seq 1 "$RUNS"); do
		timeout 600 mpirun --oversubscribe --bind-to none -np 3 "$BUILD/plb-kmeans" \
			--config config/kmeans-demo.ini --n "$N" --d 16 --k 16 --iters "$ITERS" --tol 0 \
			--json >"$T/demo.json"
		python3 - "$T/demo.json" "$i" <<'PY'
import json, statistics, sys
its = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
r = [x["ratio"] for x in its]
print("run %s: first iteration ratio %.3f (%d training blocks); later: median %.3f, worst %.3f (%s)" % (
      sys.argv[2], r[0], its[0]["training_blocks"], statistics.median(r[1:]), max(r[1:]),
      " ".join("%.3f" % x for x in r[1:])))
PY
	done
fi
