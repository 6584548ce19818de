# scripts/device-check.sh, the check a lent GPU machine runs first, as far
# as it goes without a GPU: its stages and options; in a build without MPI
# and with CUDA, the packing of the programs and their libraries and the
# dry run up to the first GPU call (results as text and JSON lines); a
# missing library is caught; --again repeats the stages that did not pass.
# In an MPI build, or one without CUDA, --prepare refuses with the reason.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
DC=scripts/device-check.sh
"$DC" --list >"$TMP/list"
check "--list: the stages, most important first" \
	test "$(awk 'NR > 1 {print $1}' "$TMP/list" | paste -sd' ')" = "kit gpu tests kernels apps opencl gemm"
check "--list: the limits add up to at most 5 minutes" \
	test "$(awk 'NR > 1 {s += $2} END {print s <= 300}' "$TMP/list")" = 1
"$DC" --only kit,nosuch >"$TMP/o" 2>&1; rc=$?
check "--only with an unknown stage: exit 2 (got $rc)" test $rc = 2
check "... naming it and the stages accepted" grep -q "no stage nosuch; accepted: kit gpu tests kernels apps opencl gemm" "$TMP/o"
"$DC" --budget 10 >"$TMP/o" 2>&1; rc=$?
check "--budget 10: refused (got $rc)" test $rc = 2
"$DC" --frobnicate >"$TMP/o" 2>&1; rc=$?
check "an unknown option: exit 2 and the usage (got $rc)" eval 'test $rc = 2 && grep -q "^usage:" "$TMP/o"'
DEVCHECK_DIR=$TMP/none "$DC" --dry-run >"$TMP/o" 2>&1; rc=$?
check "no prebuilt tree: exit 1, saying to prepare (got $rc)" \
	eval 'test $rc = 1 && grep -q "run scripts/device-check.sh --prepare" "$TMP/o"'

export DEVCHECK_DIR=$TMP/dc
if [ "${MPI:-1}" != 0 ]; then
	"$DC" --prepare --build "$BUILD" >"$TMP/o" 2>&1; rc=$?
	check "--prepare on an MPI build: refused (got $rc)" test $rc = 1
	check "... saying why" grep -q "holds an MPI build: the device machine has no MPI" "$TMP/o"
	finish
fi
if [ "${HAVE_CUDA:-0}" != 1 ]; then
	# (CUDA=0: the build's own setting, for make inside --prepare)
	CUDA=0 "$DC" --prepare --build "$BUILD" >"$TMP/o" 2>&1; rc=$?
	check "--prepare without CUDA: refused (got $rc)" test $rc = 1
	check "... saying why" grep -q "the device check needs nvcc and cuBLAS here" "$TMP/o"
	finish
fi
"$DC" --prepare --build "$BUILD" --out "$TMP/out" >"$TMP/o" 2>&1; rc=$?
check "--prepare and its dry run: exit 0 (got $rc)" test $rc = 0
check "... packed under the size that travels" grep -q "^== packed .*: [0-9]* MiB" "$TMP/o"
check "... the kit stage passed" grep -q "^kit  *ok" "$TMP/out/summary.txt"
check "... it stopped at the first GPU call, saying so" \
	eval 'grep -q "dry run: stopping before the first GPU call" "$TMP/o" && grep -q "^gpu  *dry" "$TMP/out/summary.txt"'
check "... the later stages skipped, saying why" \
	test "$(grep -c "skipped .*the dry run stopped" "$TMP/out/summary.txt")" = 5
check "... every JSON line parses" python3 -c "
import json, sys
rows = [json.loads(l) for l in open('$TMP/out/device-check.json')]
assert [r['stage'] for r in rows if 'stage' in r] == 'kit gpu tests kernels apps opencl gemm'.split()"
check "... the text log holds the stages" grep -q "^== stage kit" "$TMP/out/device-check.txt"
check "... what travels stays under 60 MiB after the dry run too" \
	test "$(du -sb "$TMP/dc" | cut -f1)" -lt $((60 * 1048576))
check "... no C runtime or CUDA library packed" \
	eval '! tar -tzf "$TMP/dc/lib.tar.gz" | grep -Eq "lib/(libc|libcudart|libcublas)\.so"'
# a library the pack lacks fails the kit stage; --again repeats it
rm "$TMP/dc.lib/lib/libinih.so.1"
"$DC" --only kit --out "$TMP/out" >"$TMP/o" 2>&1; rc=$?
check "a library missing from the pack: exit 1 (got $rc)" test $rc = 1
check "... named" grep -q "not in .*/lib: libinih.so.1" "$TMP/o"
check "... and the way to run it again" grep -q "again: scripts/device-check.sh --again (or --only kit)" "$TMP/out/summary.txt"
rm -rf "$TMP/dc.lib"           # unpacked again from the pack
"$DC" --again --dry-run --out "$TMP/out" >"$TMP/o" 2>&1; rc=$?
check "--again: the stage that failed runs again and passes (got $rc)" grep -q "^kit  *ok" "$TMP/out/summary.txt"
"$DC" --only kit --out "$TMP/out" >"$TMP/o" 2>&1
check "--only kit: passes" grep -q "^kit  *ok" "$TMP/out/summary.txt"
check "... and only kit ran" test "$(grep -c '^== stage' "$TMP/out/device-check.txt")" = 1
finish
