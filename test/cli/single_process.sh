# Apps run without mpirun: the master and one worker in one process (the
# in-process transport), honouring the first matching [node] section. MM
# verifies under every policy; emulated runs cover every unit; the result
# is the same, bit for bit, as under mpirun for the same blocks (and within
# rounding for adaptive blocks); config mistakes name file:line.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
one() { one_run "$@"; }

cat >"$TMP/two.ini" <<'INI'
[run]
units = 1
pipeline = 2
[node a]
host = *
cpu = 1
emu = f
[node b]
emu = f
[model f]
class = gpu
compute = poly 0.001 1e-5
INI

for policy in plb-hac plb-hec hdss greedy static; do
	check "plb-mm $policy in one process" one "$BUILD/plb-mm" --config "$TMP/two.ini" --n 150 \
		--policy $policy --verify --json
	grep -q 'verify (exact reference): ok' "$TMP/out" || { cat "$TMP/out"; check "plb-mm $policy: verify ok" false; }
	check "plb-mm $policy: coverage" test "$(json_get coverage_ok)" = True
	check "plb-mm $policy: in-process transport" test "$(json_get runtime)" = local
	check "plb-mm $policy: node a only (2 PUs)" test "$(json_get pus)" = "['a.cpu', 'a.f#1']"
done

# in place (the default in one process) and through copies (in_place = 0):
# the same blocks (greedy, 7 columns) give the same C to the bit
sed 's/^pipeline = 2$/pipeline = 2\nin_place = 0/' "$TMP/two.ini" >"$TMP/copied.ini"
check "greedy, in place" one "$BUILD/plb-mm" --config "$TMP/two.ini" --n 300 \
	--policy greedy --set greedy_block=7 --output "$TMP/c5" --json
check "in place: only headers sent" python3 -c "import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0]); sys.exit(d['bytes_sent'] > 300 * 300 * 8 / 10)" "$TMP/out"
check "greedy, in_place = 0" one "$BUILD/plb-mm" --config "$TMP/copied.ini" --n 300 \
	--policy greedy --set greedy_block=7 --output "$TMP/c6" --json
check "in_place = 0: the matrices sent" python3 -c "import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0]); sys.exit(d['bytes_sent'] < 2 * 300 * 300 * 8)" "$TMP/out"
check "identical C in place and copied" cmp "$TMP/c5" "$TMP/c6"

check "plb-null --help" one "$BUILD/plb-null" --help
check "plb-null --help: the usage, with --runs" grep -q "^  --runs K " "$TMP/out"
check "plb-null small.ini in one process" one "$BUILD/plb-null" --config test/data/small.ini --json
check "plb-null: coverage" test "$(json_get coverage_ok)" = True
check "plb-null: units" test "$(json_get units_done)" = 200000
check "plb-null: first section's PUs" test "$(json_get pus)" = "['a.cpu6#1', 'a.gpu-fast#1']"

check "five runs in a row in one process" one "$BUILD/plb-null" --config test/data/small.ini --runs 5 --json
check "five runs: the last covers every unit" test "$(json_get coverage_ok)" = True

# an emulated PU dies mid-run: its blocks go to the others, nothing lost
printf '[run]\nunits = 20000\n[network]\nfail_detect_ms = 100\n[node a]\nemu = g dies\n[model g]\nclass = gpu\ncompute = poly 0.002 5e-5\n[model dies]\nclass = gpu\ncompute = poly 0.002 5e-5\nfail = 0.2\n' >"$TMP/fail.ini"
check "failure in one process" one "$BUILD/plb-null" --config "$TMP/fail.ini" --json
check "failure: coverage" test "$(json_get coverage_ok)" = True
check "failure: one PU lost" test "$(json_get pus_lost)" = 1
check "failure: a warning names the PU" grep -q "PU a.dies#1 is out of the run" "$TMP/out"
check "failure, --quiet" one "$BUILD/plb-null" --config "$TMP/fail.ini" --quiet
check "failure, --quiet: no warning" test "$(grep -c 'out of the run' "$TMP/out")" -eq 0

printf '[run]\nunits = 10\n[node a]\nhost = not-this-one\ncpu = 1\n' >"$TMP/host.ini"
one "$BUILD/plb-mm" --config "$TMP/host.ini" --n 16; rc=$?
check "no section for this host: fails" test $rc -ne 0 -a $rc -ne 124
check "no section for this host: says so" grep -q "host.ini: no \[node\] section for this host" "$TMP/out"
printf '[run]\nunits = 10\n[node a]\nhost = *\n[node b]\ncpu = 1\n' >"$TMP/nopu.ini"
one "$BUILD/plb-mm" --config "$TMP/nopu.ini" --n 16; rc=$?
check "section without PU: fails" test $rc -ne 0 -a $rc -ne 124
check "section without PU: names it" grep -q "nopu.ini:3: \[node a\] has no PU" "$TMP/out"
printf '[run]\nunits = 10\n[node a]\ncpu = 1\nspeed = 3\n' >"$TMP/bad.ini"
one "$BUILD/plb-null" --config "$TMP/bad.ini"; rc=$?
check "bad key: fails" test $rc -ne 0 -a $rc -ne 124
check "bad key: names file:line" grep -q "bad.ini:5: \[node a\] speed: unknown key" "$TMP/out"

if have_mpirun; then
	# the same blocks (greedy, 7 columns): the same C to the bit
	check "greedy, one process" one "$BUILD/plb-mm" --config "$TMP/two.ini" --n 300 \
		--policy greedy --set greedy_block=7 --output "$TMP/c1"
	check "greedy, mpirun" mpi_run 3 "$BUILD/plb-mm" --config "$TMP/two.ini" --n 300 \
		--policy greedy --set greedy_block=7 --output "$TMP/c2"
	check "identical C in both modes" cmp "$TMP/c1" "$TMP/c2"
	# adaptive blocks differ from run to run: C within rounding
	check "plb-hac, one process" one "$BUILD/plb-mm" --config "$TMP/two.ini" --n 300 --output "$TMP/c3"
	check "plb-hac, mpirun" mpi_run 3 "$BUILD/plb-mm" --config "$TMP/two.ini" --n 300 --output "$TMP/c4"
	check "C within 1e-13 in both modes" python3 - "$TMP/c3" "$TMP/c4" <<'PY'
import struct, sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
assert len(a) == len(b) == 300 * 300 * 8
x = struct.unpack("%dd" % (len(a) // 8), a); y = struct.unpack("%dd" % (len(b) // 8), b)
worst = max(abs(p - q) / max(abs(p), 1.0) for p, q in zip(x, y))
sys.exit(0 if worst <= 1e-13 else 1)
PY
	check "mpirun -np 1 runs in one process" mpi_run 1 "$BUILD/plb-null" --config test/data/small.ini --json
	check "mpirun -np 1: in-process transport" test "$(json_get runtime)" = local
fi
# An emulated PU whose model is faster than this machine runs its real
# kernel (a 1500-column product, 6.8 GFLOP, in 0.1 ms): the report says it
# overran; with a model slower than the host, it does not. (A block is
# flagged once it is 10 ms late: a 600-column product, 0.4 GFLOP, took
# 10-15 ms here, and 11 runs in 12 were not flagged.)
printf '[run]\nunits = 1\n[node a]\nemu = e\n[model e]\nclass = gpu\ncompute = poly 0.0001 1e-9\n' >"$TMP/fast.ini"
check "too fast a model: runs" one "$BUILD/plb-mm" --config "$TMP/fast.ini" --n 1500 --json
check "too fast a model: overran in the JSON" python3 -c "import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0]); sys.exit(not d['overran'][0] >= 1)" "$TMP/out"
check "too fast a model: the text report says so" sh -c "'$BUILD/plb-mm' --config '$TMP/fast.ini' --n 1500 | grep -q 'overran        a.e#1: '"
printf '[run]\nunits = 1\n[node a]\nemu = e\n[model e]\nclass = gpu\ncompute = poly 0.05 1e-3\n' >"$TMP/slow.ini"
check "a slow model: runs" one "$BUILD/plb-mm" --config "$TMP/slow.ini" --n 100 --json
check "a slow model: nothing overran" python3 -c "import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0]); sys.exit(d['overran'] != [0])" "$TMP/out"
# [model] fail_block = 2: that PU's kernel fails on its second block of
# each run; the block goes to another PU and the PU is out of the run, in
# the runtime (plb-mm still verifies) and in plbsim alike
printf '[run]\nunits = 1\npipeline = 2\n[node a]\nemu = e f\n[model e]\nclass = gpu\ncompute = poly 0.002 1e-6\n[model f]\nclass = gpu\ncompute = poly 0.002 1e-6\nfail_block = 2\n' >"$TMP/fb.ini"
check "fail_block: plb-mm runs and verifies" one "$BUILD/plb-mm" --config "$TMP/fb.ini" --n 256 --verify
check "fail_block: ... every unit once" grep -q "256 of 256 done, coverage ok" "$TMP/out"
check "fail_block: ... the PU is out" grep -q "PUs lost       1" "$TMP/out"
check "fail_block: ... the log names it" grep -q "PU a.f#1 failed block [0-9]*: device error" "$TMP/out"
sed -i 's/^units = 1$/units = 100000/' "$TMP/fb.ini"
for pol in plb-hac plb-hec hdss greedy; do
	"$PLBSIM" "$TMP/fb.ini" --policy $pol >"$TMP/out" 2>&1
	check "fail_block: plbsim $pol, every unit once" grep -q "100000 of 100000 done, coverage ok" "$TMP/out"
	check "fail_block: plbsim $pol, the PU is out" grep -q "PUs lost       1" "$TMP/out"
done
printf '[run]\nunits = 10\n[node a]\nemu = e\n[model e]\nclass = gpu\ncompute = poly 1\nfail_block = 1.5\n' >"$TMP/fbx.ini"
"$PLBSIM" "$TMP/fbx.ini" >"$TMP/out" 2>&1
check "fail_block = 1.5: refused, naming file:line and key" grep -q "fbx.ini:8: .*fail_block = 1.5 is not an integer" "$TMP/out"
# a models file in a missing folder is refused before the run, naming the
# option; one that turns out unwritable only at the end (here its .tmp
# sibling is a folder) leaves the run's results standing, exits 1 and the
# log says why (plb_finalize's own error, after which the app cannot ask
# for a message: its handle is gone)
mkdir -p "$TMP/m2.txt.tmp"
for app in "plb-null" "plb-mm --n 64"; do
	# shellcheck disable=SC2086
	one "$BUILD"/$app --config test/data/small.ini --models "$TMP/no/dir/m.txt"
	rc=$?
	check "$app: models file in a missing folder: exit 1 (got $rc)" test $rc = 1
	check "$app: ... no run" eval '! grep -q "coverage ok" "$TMP/out"'
	check "$app: ... said" grep -q "error: --models $TMP/no/dir/m.txt: its folder $TMP/no/dir does not exist" "$TMP/out"
	# shellcheck disable=SC2086
	one "$BUILD"/$app --config test/data/small.ini --models "$TMP/m2.txt"
	rc=$?
	check "$app: models file unwritable at the end: exit 1 (got $rc)" test $rc = 1
	check "$app: ... the run reported" grep -q "coverage ok" "$TMP/out"
	check "$app: ... said" grep -q "plb_finalize: models file $TMP/m2.txt.tmp: cannot write it" "$TMP/out"
done
finish
