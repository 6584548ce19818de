#!/usr/bin/env bash
# make bench-bs: plb-bs's figures, side by side in one run (printed, not
# asserted):
#  1. options priced per second on one core: a straightforward vectorised
#     loop built for this machine (bench/bs_ref.c) against plb's CPU
#     kernel called directly;
#  2. plb-bs --n in one process on one core ([node a] cpu = 1) against one
#     direct call of its kernel for drawn options (draw and price) on all
#     the options into fresh memory;
#  3. plb-bs on the demo cluster (config/bs-demo.ini, mpirun -np 3).
N=${N:-4000000}
DEMO_N=${DEMO_N:-16000000}
. "$(dirname "$0")/lib.bash"

echo "== one core: reference loop against plb's kernel, $N options"
for prec in single double; do
	"$BUILD/bench/bs_ref" "$N" $prec
done
echo
echo "== one process, one core: plb-bs's makespan against one direct call (median of $RUNS), $N options"
for prec in single double; do
	plb=() direct=()
	for i in $(seq 1 "$RUNS"); do
		plb+=("$("$BUILD/plb-bs" --config "$T/cpu1.ini" --n "$N" --prec $prec --json | makespan)")
		direct+=("$("$BUILD/bench/bs_ref" "$N" $prec | sed 's/.*one cold call (drawing them) \([0-9.]*\) s.*/\1/')")
	done
	a=$(med "${plb[@]}") b=$(med "${direct[@]}")
	python3 -c "print('%s: plb-bs %.4f s (runs %s), direct call %.4f s (runs %s): %.3fx' % ('$prec', $a, '${plb[*]}', $b, '${direct[*]}', $a / $b))"
done
echo
if [ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null; then
	echo "== the demo cluster: mpirun -np 3 plb-bs --config config/bs-demo.ini --n $DEMO_N --prec single"
	for i in $(seq 1 "$RUNS"); do
		# the report whole before python starts: beside the run it takes
		# CPU from the PUs it measures (makespan in lib.bash)
		out=$(timeout 600 mpirun --oversubscribe --bind-to none -np 3 "$BUILD/plb-bs" --config config/bs-demo.ini \
			--n "$DEMO_N" --prec single --json)
		grep '^{' <<<"$out" | python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
print('run $i: makespan %.3f s, lower bound %.3f s, ratio %.2f, master CPU %.0f%% of the makespan, %.0f MB moved' % (
      d['makespan_s'], d['lower_bound_s'], d['ratio'], 100 * d['master_cpu_s'] / d['makespan_s'],
      (d['bytes_sent'] + d['bytes_received']) / 1e6))"
	done
fi
