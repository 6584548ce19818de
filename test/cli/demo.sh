# make demo's script: first the simulator's table of every policy on the
# paper's cluster (full coverage), then the real runtime on a cluster
# sized to this machine's cores (a CPU team of half of them, 1 below 4;
# emulated devices on the others): plb-mm under mpirun finishes,
# verified, with its report, the comparison with the CPU team alone, the
# same cluster in plbsim with a core for every PU (ahead of its team), the
# note on shared cores where the machine has too few, and the Gantt chart.
. test/cli/lib.bash
B=${BUILD:-build}
out=$(BUILD=$B timeout 300 bash scripts/demo.sh 2>&1); rc=$?
check "demo exits 0 (got $rc)" [ "$rc" -eq 0 ]
for p in plb-hac plb-hec hdss greedy static; do
	check "demo table has $p" grep -q "^$p .* ok$" <<<"$out"
done
check "the simulator first, then the runtime" test "$(grep -n '^policy  *makespan' <<<"$out" | cut -d: -f1)" -lt \
	"$(grep -n '^== 2\. The real runtime' <<<"$out" | cut -d: -f1)"
cores=$(nproc)
team=$((cores >= 4 ? cores / 2 : 1))
check "the cluster sized to $cores cores: a CPU team of $team" grep -q "^cpu = $team$" "$B/demo-cluster.ini"
check "... and its devices' speeds from a core's measured time" grep -q "^compute = poly 0.002 [0-9.e-]*$" "$B/demo-cluster.ini"
check "plb-mm verified" grep -q "plb-mm: verify (Freivalds, 8 vectors): ok" <<<"$out"
check "plb-mm report" grep -q "policy plb-hac on $B/demo-cluster.ini" <<<"$out"
check "plb-mm coverage ok" grep -q "4096 of 4096 done, coverage ok" <<<"$out"
check "the comparison with the CPU team alone" \
	grep -q "^cluster [0-9.]* s; its CPU team alone (cpu = $team, one process) [0-9.]* s: the cluster is [0-9.]*x as fast$" <<<"$out"
check "the same cluster in plbsim, a core for every PU: faster than its team" python3 - "$out" <<'PY'
import re, sys
m = re.search(r"^in plbsim, with a core for every PU and the master: cluster ([0-9.]+) s, its CPU team alone ([0-9.]+) s: ([0-9.]+)x as fast$", sys.argv[1], re.M)
assert m, "no plbsim line"
assert float(m[1]) < float(m[2]), m[0]     # emulated devices add to the team
PY
nemu=$((cores - team - 1)); [ $nemu -lt 2 ] && nemu=2; [ $nemu -gt 6 ] && nemu=6
if [ "$cores" -lt $((team + nemu + 1)) ]; then
	check "too few cores: said so" grep -q "so this timing says how the machine copes" <<<"$out"
else
	check "enough cores: no such note" eval '! grep -q "how the machine copes" <<<"$out"'
fi
check "the Gantt chart's path" grep -q "^Gantt chart of the run: $B/demo-gantt.png$" <<<"$out"
check "the Gantt chart is there" test -s "$B/demo-gantt.png"
finish
