# The cuda device class end to end. Where this build has CUDA and the node
# a GPU: plb-mm on gpu = 0 alone, on the CPU and the GPU together, and on
# several runs in one process, verified in single and double precision (odd orders,
# so blocks and chunks have ragged ends); a GPU index the node lacks is an
# error naming file:line and the indices accepted. Without a GPU (or
# without CUDA in the build), gpu = 0 is an error naming file:line and
# saying why. PLB_REQUIRE_GPU=1 makes a missing GPU a failure, not the
# other branch (set it where a GPU must be found).
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${PLB_REQUIRE_GPU:-0}" = 1 ]; then
	check "PLB_REQUIRE_GPU=1: nvidia-smi lists a GPU" [ "$ngpu" -ge 1 ]
	check "PLB_REQUIRE_GPU=1: the build has CUDA" [ "${HAVE_CUDA:-0}" = 1 ]
fi
printf '[run]\nunits = 1\n[node a]\ngpu = 0\n' >"$TMP/gpu.ini"
mm() { one_run "$BUILD/plb-mm" --verify --json "$@"; }

if [ "${HAVE_CUDA:-0}" != 1 ]; then
	mm --config "$TMP/gpu.ini" --n 64; rc=$?
	check "gpu = 0 without CUDA in the build: fails (rc $rc)" [ $rc -ne 0 -a $rc -ne 124 ]
	check "gpu = 0 without CUDA: file:line, and why" grep -q "gpu.ini:4: .*built without CUDA" "$TMP/out"
	finish
fi
if [ "$ngpu" -lt 1 ]; then
	mm --config "$TMP/gpu.ini" --n 64; rc=$?
	check "gpu = 0 on a node without a GPU: fails (rc $rc)" [ $rc -ne 0 -a $rc -ne 124 ]
	check "gpu = 0 on a node without a GPU: file:line, and what is accepted" \
		grep -q "gpu.ini:4: .*gpu = 0: .*\(no CUDA device\|cannot ask the CUDA driver\)" "$TMP/out"
	finish
fi

verified() { grep -q 'verify (.*): ok' "$TMP/out" || { cat "$TMP/out"; return 1; }; }
for prec in single double; do
	for n in 1 257 1500; do
		check "gpu alone, $prec, n = $n" mm --config "$TMP/gpu.ini" --n $n --prec $prec
		check "gpu alone, $prec, n = $n: verified" verified
		check "gpu alone, $prec, n = $n: every column" test "$(json_get units_done)" = $n
		check "gpu alone: the PU is a.gpu0" test "$(json_get pus)" = "['a.gpu0']"
	done
done
printf '[run]\nunits = 1\n[node a]\ncpu = 1\ngpu = 0\n' >"$TMP/both.ini"
for policy in plb-hac plb-hec hdss greedy static; do
	check "cpu + gpu, $policy" mm --config "$TMP/both.ini" --n 2001 --prec double --policy $policy
	check "cpu + gpu, $policy: verified" verified
	check "cpu + gpu, $policy: coverage" test "$(json_get coverage_ok)" = True
done
# plb-nuclei (a pipeline): the GPU takes some of its six device operations,
# the tiles as the CPU's
if [ -x "$BUILD/plb-nuclei" ]; then
	check "nuclei on cpu + gpu" one_run "$BUILD/plb-nuclei" --config "$TMP/both.ini" \
		--width 512 --height 256 --tile 128 --verify --json
	check "nuclei on cpu + gpu: verified (as the serial reference)" grep -q 'verify: ok' "$TMP/out"
	check "nuclei on cpu + gpu: the GPU ran tasks" python3 -c "
import json, sys
d = [json.loads(l) for l in open('$TMP/out') if l.startswith('{')][-1]
sys.exit(not sum(o['ran']['gpu'] for o in d['ops']))"
fi
check "three runs in a row on cpu + gpu" mm --config "$TMP/both.ini" --n 777 --prec single --runs 3
check "three runs: verified" verified
check "three runs: three reports" test "$(grep -c '^{' "$TMP/out")" = 3

printf '[run]\nunits = 1\n[node a]\ncpu = 1\ngpu = %d\n' "$ngpu" >"$TMP/none.ini"
mm --config "$TMP/none.ini" --n 64; rc=$?
check "gpu = $ngpu (one past the last): fails (rc $rc)" [ $rc -ne 0 -a $rc -ne 124 ]
check "gpu = $ngpu: file:line and the indices accepted" \
	grep -q "none.ini:5: .*gpu = $ngpu: this node has $ngpu CUDA device.*accepted: indices 0 to $((ngpu - 1))" "$TMP/out"
finish
