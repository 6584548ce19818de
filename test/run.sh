#!/usr/bin/env bash
# Runs every test: each cmocka binary in $BUILD/test (each of its cases
# counts) and each test/cli/*.sh script (one test each), with a timeout per
# program (a script exiting 77 is skipped). Ends with the line
# "N passed, N failed, N skipped".
set -u
BUILD=${BUILD:-build}
PLBSIM=${PLBSIM:-$BUILD/plbsim}
export PLBSIM BUILD
TIMEOUT=${TEST_TIMEOUT:-300}
pass=0 fail=0 skip=0 failed=()
for t in "$BUILD"/test/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	out=$(timeout "$TIMEOUT" "$t" 2>&1); rc=$?
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	k=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
	skip=$((skip + k))
	printf '%s\n' "$out" | grep 'skipped:' || true
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crash or timeout
	pass=$((pass + p)); fail=$((fail + f))
	if [ "$f" -ne 0 ]; then
		failed+=("$name"); printf '%s\n' "$out" | tail -n 40
		[ "$rc" -eq 124 ] && echo "$name: timed out after ${TIMEOUT}s"
	fi
	if [ "$k" -gt 0 ]; then echo "$name: $p passed, $f failed, $k skipped"; else echo "$name: $p passed, $f failed"; fi
done
for t in test/cli/*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	out=$(timeout "$TIMEOUT" bash "$t" 2>&1); rc=$?
	if [ "$rc" -eq 77 ]; then       # skipped, and says why
		skip=$((skip + 1)); echo "$name: skipped: $(printf '%s\n' "$out" | tail -n 1)"
	elif [ "$rc" -eq 0 ]; then
		pass=$((pass + 1)); echo "$name: ok"
	else
		fail=$((fail + 1)); failed+=("$name")
		printf '%s\n' "$out" | tail -n 40; echo "$name: FAILED (exit $rc)"
	fi
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
