#!/usr/bin/env bash
# make bench-grn: plb-grn's figures, side by side in one run (printed, not
# asserted):
#  1. pairs of predictors scored per second on one core: a straightforward
#     histogram search built for this machine (bench/grn_ref.c) against
#     plb's CPU kernel called directly, with few and with many samples;
#  2. plb-grn in one process on one core ([node a] cpu = 1) against that
#     direct call of its kernel on every target;
#  3. plb-grn on the demo cluster (config/grn-demo.ini, mpirun -np 3).
GENES=${GENES:-300}
DEMO_GENES=${DEMO_GENES:-600}
. "$(dirname "$0")/lib.bash"

echo "== one core: a straightforward pair search against plb's kernel (pairs of predictors, 3 levels)"
"$BUILD/bench/grn_ref" "$GENES" 100
"$BUILD/bench/grn_ref" $((GENES * 2 / 3)) 1000
echo
echo "== one process, one core: plb-grn's makespan against the direct call on the same core (median of $RUNS), $GENES genes, 100 samples"
plb=() direct=()
pin=""
command -v taskset >/dev/null && pin="taskset -c 0"
for i in $(seq 1 "$RUNS"); do
	plb+=("$("$BUILD/plb-grn" --config "$T/cpu1.ini" --genes "$GENES" --json | makespan)")
	# on the core plb's CPU PU is bound to (the node's first): on a shared
	# machine one core can run slower than another for minutes
	direct+=("$($pin "$BUILD/bench/grn_ref" "$GENES" 100 | sed "s/.*plb's kernel \([0-9.]*\) s.*/\1/")")
done
a=$(med "${plb[@]}") b=$(med "${direct[@]}")
python3 -c "print('plb-grn %.4f s (runs %s), direct call %.4f s (runs %s): %.3fx' % ($a, '${plb[*]}', $b, '${direct[*]}', $a / $b))"
echo
if [ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null; then
	echo "== the demo cluster: mpirun -np 3 plb-grn --config config/grn-demo.ini --genes $DEMO_GENES"
	for i in $(seq 1 "$RUNS"); do
		# the report whole before python starts: beside the run it takes
		# CPU from the PUs it measures (makespan in lib.bash)
		out=$(timeout 600 mpirun --oversubscribe --bind-to none -np 3 "$BUILD/plb-grn" --config config/grn-demo.ini \
			--genes "$DEMO_GENES" --json)
		grep '^{' <<<"$out" | python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
print('run $i: makespan %.3f s, lower bound %.3f s, ratio %.3f, imbalance %.3f, %d blocks (%d training)' % (
      d['makespan_s'], d['lower_bound_s'], d['ratio'], d['imbalance'], d['blocks'], d['training_blocks']))"
	done
	echo "(one real core alone: plb-grn --genes $DEMO_GENES on [node a] cpu = 1)"
	printf 'makespan %.3f s\n' "$("$BUILD/plb-grn" --config "$T/cpu1.ini" --genes "$DEMO_GENES" --json | makespan)"
fi
