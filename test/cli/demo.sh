# make demo's script runs the five-machine scenario under every policy and
# prints a comparison table with every policy and full coverage.
. test/cli/lib.bash
out=$(bash scripts/demo.sh "$PLBSIM" 2>&1); rc=$?
check "demo exits 0 (got $rc)" [ "$rc" -eq 0 ]
for p in plb-hac plb-hec hdss greedy static; do
	check "demo table has $p" grep -q "^$p .* ok$" <<<"$out"
done
check "demo prints plb-hac's report" grep -q "coverage ok" <<<"$out"
finish
