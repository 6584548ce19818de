#!/usr/bin/env bash
# Runs every test, with a timeout per program, and ends with the line
# "N passed, N failed, N skipped" (exit status 0 only when none failed).
#  - each cmocka program in $BUILD/test, read as TAP (CMOCKA_MESSAGE_OUTPUT):
#    every "ok" passes, "not ok ... # SKIP" is skipped, any other "not ok"
#    fails, and results short of the plan "1..N" (a crash, a timeout) count
#    as failed;
#  - each test/cli/*.sh script ($TEST_CLI/*.sh) is one test: exit 0 passes,
#    77 is skipped (its last line says why), anything else fails;
#  - TEST_PROGRAMS (the Makefile sets it): the names of the cmocka programs
#    the build must have; each one missing fails;
#  - TEST_STRICT_SKIPS=1 (CI sets it): a skip passes only when its reason
#    names a part this build or node truly lacks: "no MPI in this build"
#    (MPI=0), "no CUDA in this build" (HAVE_CUDA=0), "no GPU on this node"
#    (nvidia-smi lists none), "no network namespaces on this node" (not
#    root, or no iproute2), "no OpenCL in this build" (HAVE_OPENCL=0), "no
#    OpenCL device on this node" (no driver in /etc/OpenCL/vendors). Any
#    other skip, or one without a reason, fails.
set -u
BUILD=${BUILD:-build}
PLBSIM=${PLBSIM:-$BUILD/plbsim}
export PLBSIM BUILD
# under make SANITIZE=thread: what is not plb's is suppressed (test/tsan.supp)
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$PWD/test/tsan.supp"
TIMEOUT=${TEST_TIMEOUT:-300}
CLI=${TEST_CLI:-test/cli}
pass=0 fail=0 skip=0 failed=() programs=0
STRICT=${TEST_STRICT_SKIPS:-0}

# lacks REASON: does this build or node lack what REASON says it lacks?
lacks() {
	case $1 in
	"no MPI in this build"*) [ "${MPI:-1}" = 0 ] ;;
	"no CUDA in this build"*) [ "${HAVE_CUDA:-0}" = 0 ] ;;
	"no GPU on this node"*) ! nvidia-smi -L 2>/dev/null | grep -q '^GPU ' ;;
	"no network namespaces on this node"*) ! bash scripts/netns-hosts.sh check ;;
	"no OpenCL in this build"*) [ "${HAVE_OPENCL:-0}" = 0 ] ;;
	"no OpenCL device on this node"*) ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 ;;
	*) return 1 ;;
	esac
}
# bad_skips K REASONS: under TEST_STRICT_SKIPS=1, one line for each of K
# skips (REASONS: one per line) that is not allowed.
bad_skips() {
	local k=$1 n=0 r
	[ "$STRICT" = 1 ] || return 0
	while IFS= read -r r; do
		[ -n "$r" ] || continue
		n=$((n + 1))
		lacks "$r" || echo "strict skips: not a part this build lacks: $r"
	done <<<"$2"
	for ((; n < k; n++)); do echo "strict skips: a skip without a reason"; done
}
count() { [ -z "$1" ] && echo 0 || printf '%s\n' "$1" | wc -l; }

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
	reasons=$(printf '%s\n' "$out" | grep 'skipped:' || true)
	[ -n "$reasons" ] && printf '%s\n' "$reasons"
	bad=$(bad_skips "$k" "$(printf '%s\n' "$reasons" | sed -n 's/.*skipped: //p')")
	b=$(count "$bad")
	if [ "$b" -gt 0 ]; then
		printf '%s\n' "$bad"
		k=$((k - b)); f=$((f + b)); why="${why:+$why; }$b skip(s) not allowed"
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + k))
	if [ "$f" -ne 0 ]; then
		failed+=("$name"); printf '%s\n' "$out" | tail -n 40
	fi
	echo "$name: $p passed, $f failed$([ "$k" -gt 0 ] && echo ", $k skipped")${why:+ ($why)}"
done
for name in ${TEST_PROGRAMS:-}; do
	[ -x "$BUILD/test/$name" ] && continue
	echo "$name: FAILED (the build should have made $BUILD/test/$name)"
	fail=$((fail + 1)); failed+=("$name")
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
		reason=$(printf '%s\n' "$out" | tail -n 1)
		bad=$(bad_skips 1 "$reason")
		if [ -n "$bad" ]; then
			fail=$((fail + 1)); failed+=("$name"); echo "$bad"; echo "$name: FAILED (skipped)"
		else
			skip=$((skip + 1)); echo "$name: skipped: $reason"
		fi
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
