# make demo's script: plb-mm under mpirun finishes, verified, with its
# report, the comparison with its real CPU PU alone and the run's Gantt
# chart; then the simulator's table with every policy and full coverage.
. test/cli/lib.bash
out=$(BUILD=${BUILD:-build} timeout 300 bash scripts/demo.sh 2>&1); rc=$?
check "demo exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "plb-mm verified" grep -q "plb-mm: verify (Freivalds, 8 vectors): ok" <<<"$out"
check "plb-mm report" grep -q "policy plb-hac on config/demo.ini" <<<"$out"
check "plb-mm coverage ok" grep -q "4096 of 4096 done, coverage ok" <<<"$out"
check "the comparison with the real CPU alone" \
	grep -q "^cluster [0-9.]* s; its real CPU PU alone (one process, cpu = 1) [0-9.]* s: the cluster takes [0-9.]*x its time$" <<<"$out"
check "the Gantt chart's path" grep -q "^Gantt chart of the run: ${BUILD:-build}/demo-gantt.png$" <<<"$out"
check "the Gantt chart is there" test -s "${BUILD:-build}/demo-gantt.png"
for p in plb-hac plb-hec hdss greedy static; do
	check "demo table has $p" grep -q "^$p .* ok$" <<<"$out"
done
finish
