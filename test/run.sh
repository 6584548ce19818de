#!/usr/bin/env bash
# Runs every test, with a timeout per program, and ends with the line
# "N passed, N failed, N skipped" (exit status 0 only when none failed).
#  - each cmocka program in $BUILD/test, read as TAP (CMOCKA_MESSAGE_OUTPUT):
#    every "ok" passes, "not ok ... # SKIP" is skipped, any other "not ok"
#    fails, and results short of the plan "1..N" (a crash, a timeout) count
#    as failed;
#  - each test/cli/*.sh script ($TEST_CLI/*.sh) is one test: exit 0 passes,
#    77 is skipped (its last line says why), anything else fails.
set -u
BUILD=${BUILD:-build}
PLBSIM=${PLBSIM:-$BUILD/plbsim}
export PLBSIM BUILD
TIMEOUT=${TEST_TIMEOUT:-300}
CLI=${TEST_CLI:-test/cli}
pass=0 fail=0 skip=0 failed=() programs=0

# tap OUTPUT: "passed failed skipped plan results" (plan -1: none seen)
tap() {
	awk '
	/^1\.\.[0-9]+/          { sub(/^1\.\./, ""); plan = $1 + 0; next }
	/^(not )?ok [0-9]+.*# *[Ss][Kk][Ii][Pp]/ { k++; n++; next }
	/^ok [0-9]+/            { p++; n++; next }
	/^not ok [0-9]+/        { f++; n++; next }
	END { printf "%d %d %d %d %d\n", p, f, k, plan == "" ? -1 : plan, n }' <<<"$1"
}

for t in "$BUILD"/test/test_*; do
	[ -x "$t" ] || continue
	programs=$((programs + 1))
	name=$(basename "$t")
	out=$(CMOCKA_MESSAGE_OUTPUT=TAP timeout "$TIMEOUT" "$t" 2>&1); rc=$?
	read -r p f k plan n <<<"$(tap "$out")"
	why=
	if [ "$plan" -lt 0 ]; then
		f=$((f + 1)); why="no TAP plan (exit $rc)"
	elif [ "$n" -lt "$plan" ]; then
		f=$((f + plan - n)); why="$n of $plan results (exit $rc)"
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1; why="exit $rc with no failed test"
	fi
	[ "$rc" -eq 124 ] && why="timed out after ${TIMEOUT}s; $why"
	printf '%s\n' "$out" | grep 'skipped:' || true
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + k))
	if [ "$f" -ne 0 ]; then
		failed+=("$name"); printf '%s\n' "$out" | tail -n 40
	fi
	echo "$name: $p passed, $f failed$([ "$k" -gt 0 ] && echo ", $k skipped")${why:+ ($why)}"
done
if [ "$programs" -eq 0 ]; then
	echo "no test programs in $BUILD/test: build them first (make test)"
	fail=$((fail + 1)); failed+=("(none built)")
fi
for t in "$CLI"/*.sh; do
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
