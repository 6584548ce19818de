# make demo's script: plb-mm under mpirun finishes, verified, with its
# report; then the simulator's table with every policy and full coverage.
. test/cli/lib.bash
out=$(BUILD=${BUILD:-build} timeout 300 bash scripts/demo.sh 2>&1); rc=$?
check "demo exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "plb-mm verified" grep -q "plb-mm: verify (Freivalds, 8 vectors): ok" <<<"$out"
check "plb-mm report" grep -q "policy plb-hac on config/demo.ini" <<<"$out"
check "plb-mm coverage ok" grep -q "4096 of 4096 done, coverage ok" <<<"$out"
for p in plb-hac plb-hec hdss greedy static; do
	check "demo table has $p" grep -q "^$p .* ok$" <<<"$out"
done
finish
