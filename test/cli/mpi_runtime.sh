# The MPI runtime end to end, under mpirun (oversubscribed, as root):
# plb-mm is right under every policy and both precisions; emulated PUs
# finish with complete coverage, also when some of them die; config and
# command-line mistakes end every rank cleanly with a message naming the
# file:line and key (or the option); the report's JSON has plbsim's keys.
. "$(dirname "$0")/lib.bash"
need_mpi
BUILD=${BUILD:-build}

# plb-mm's units are columns: costlier than the apps' default
app_cluster_ini "$TMP/mm.ini" "poly 0.002 2e-5" "poly 1e-4 1e-6" "poly 0.001 1e-4"

for policy in plb-hac plb-hec hdss greedy static; do
	for prec in double single; do
		check "plb-mm $policy $prec verifies" mpi_run 3 "$BUILD/plb-mm" --config "$TMP/mm.ini" \
			--n 200 --prec $prec --policy $policy --verify --json --quiet
		grep -q 'verify (exact reference): ok' "$TMP/out" || { cat "$TMP/out"; check "plb-mm $policy $prec: verify ok" false; }
		check "plb-mm $policy $prec: coverage" test "$(json_get coverage_ok)" = True
		check "plb-mm $policy $prec: policy in report" test "$(json_get policy)" = $policy
	done
done
for k in policy units units_done coverage_ok makespan_s lower_bound_s eq_optimum_s ratio \
	 imbalance idle_frac blocks gap_blocks solves solver_ms_mean solver_ms_max worker_idle_cpu; do
	check "JSON key $k" json_has $k
done
check "four PUs in the report" test "$(json_get idle_frac | tr ',' '\n' | wc -l)" -eq 4

# Block outputs sent apart from their DONE and received straight into the
# job's output (mpi.c, master.c place_out): every block's with
# PLB_MPI_APART_MIN=1, not only those of 256 KiB and up; right, and placed
for policy in plb-hac greedy; do
	check "plb-mm $policy, outputs apart" mpi_run 3 -x PLB_MPI_APART_MIN=1 -x PLB_LOG=debug \
		"$BUILD/plb-mm" --config "$TMP/mm.ini" --n 200 --prec double --policy $policy --verify
	grep -q 'verify (exact reference): ok' "$TMP/out" || { cat "$TMP/out"; check "plb-mm $policy, outputs apart: verify ok" false; }
	check "plb-mm $policy, outputs apart: received in place" \
		grep -qE 'master: [1-9][0-9]* of [0-9]+ block outputs sent apart were received in place' "$TMP/out"
done

# Resident input: plb-mm --runs keeps A and B on the nodes; runs 2-3 send
# under a quarter of run 1's bytes (B alone is a third: a node lacks only
# what its PUs get beyond what it was sent before), hold all of B between
# the two nodes, and the last C (computed from the nodes' stores) verifies.
check "plb-mm --runs 3, resident input" mpi_run 3 "$BUILD/plb-mm" --config "$TMP/mm.ini" \
	--n 300 --prec double --runs 3 --verify --json --quiet
grep -q 'verify (exact reference): ok' "$TMP/out" || { cat "$TMP/out"; check "plb-mm --runs 3: verify ok" false; }
check "resident input: runs 2-3 send under a quarter of run 1" python3 - "$TMP/out" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
assert len(runs) == 3, len(runs)
b = 300 * 300 * 8
for k, r in enumerate(runs):
    print('run %d: %d bytes sent, %d resident' % (k + 1, r['bytes_sent'], r['resident_bytes']))
    assert r['coverage_ok'] and r['unkept_bytes'] == 0 and r['resident_bytes'] >= b
assert runs[0]['bytes_sent'] > 2 * b
assert all(r['bytes_sent'] < 0.25 * runs[0]['bytes_sent'] for r in runs[1:])
PY

# Emulated PUs only: every unit back exactly once.
check "plb-null small.ini" mpi_run 4 "$BUILD/plb-null" --config test/data/small.ini --json
check "plb-null: coverage" test "$(json_get coverage_ok)" = True
check "plb-null: units" test "$(json_get units_done)" = 200000
check "plb-null: five runs in a row" mpi_run 4 "$BUILD/plb-null" --config test/data/small.ini --runs 5 --json
check "five runs: the last covers every unit" test "$(json_get coverage_ok)" = True
check "five runs: the last starts from the models, no training" test "$(json_get training_blocks)" = 0
check "five runs: five warm PUs" test "$(json_get warm_pus)" = 5
check "five runs: bytes sent counted" python3 -c "import sys; sys.exit(not $(json_get bytes_sent) > 0)"

# A models file: written by the first process, read by the second.
check "plb-null --models: first process" mpi_run 4 "$BUILD/plb-null" --config test/data/small.ini --models "$TMP/m.txt" --json
check "first process trained" test "$(json_get warm_pus)" = 0
check "models file written" grep -q '^plb-models 1$' "$TMP/m.txt"
check "plb-null --models: second process" mpi_run 4 "$BUILD/plb-null" --config test/data/small.ini --models "$TMP/m.txt" --json
check "second process starts warm" test "$(json_get warm_pus)" = 5
check "second process: no training" test "$(json_get training_blocks)" = 0

# Two emulated PUs die mid-run: their blocks go to the others, nothing lost.
# 60,000 units take about 0.7 s, so both deaths (0.2 and 0.35 s) are
# noticed before the end; with far fewer, the others finish first (plb-hac
# runs the dead PU's late block again) and the second death never shows.
python3 - "$TMP/fail.ini" <<'PY'
import sys
open(sys.argv[1], "w").write("""[run]
units = 60000
[network]
fail_detect_ms = 100
[node a]
emu = g c
[node b]
emu = g dies
[node c]
emu = dies2
[model g]
class = gpu
compute = poly 0.002 5e-5
[model c]
class = cpu
compute = poly 0.001 2e-4
[model dies]
class = gpu
compute = poly 0.002 5e-5
fail = 0.2
[model dies2]
class = cpu
compute = poly 0.001 1e-4
fail = 0.35
""")
PY
check "plb-null with failures" mpi_run 4 "$BUILD/plb-null" --config "$TMP/fail.ini" --json
check "failures: coverage" test "$(json_get coverage_ok)" = True
check "failures: two PUs lost" test "$(json_get pus_lost)" = 2

# Mistakes: every rank ends, non-zero, one clear message.
expect_error() {   # expect_error WHAT NP PATTERN PROGRAM ARGS...
	local what=$1 np=$2 pattern=$3 rc; shift 3
	mpi_run "$np" "$@"; rc=$?
	check "$what: fails (exit $rc)" test $rc -ne 0 -a $rc -ne 124
	grep -q -- "$pattern" "$TMP/out" || { cat "$TMP/out"; check "$what: says '$pattern'" false; }
}
printf '[run]\nunits = 10\n[node a]\ncpu = 1\nbogus = 3\n' >"$TMP/bad.ini"
expect_error "bad key" 2 "bad.ini:5: \[node a\] bogus: unknown key" "$BUILD/plb-mm" --config "$TMP/bad.ini" --n 64
printf '[run]\nunits = 10\n[node a]\ncpu = 1\ngpu = 7\n' >"$TMP/gpu.ini"
expect_error "missing GPU" 2 "gpu.ini:5: \[node a\] gpu = 7" "$BUILD/plb-mm" --config "$TMP/gpu.ini" --n 64
printf '[run]\nunits = 10\n[node a]\ncpu = 4096\n' >"$TMP/cores.ini"
expect_error "too many cores" 2 "cores.ini:4: \[node a\] cpu = 4096: this process may run on [0-9]* cores" "$BUILD/plb-mm" --config "$TMP/cores.ini" --n 64
expect_error "too few ranks" 2 "gets no worker rank.*mpirun -np 4" "$BUILD/plb-null" --config test/data/small.ini
printf '[run]\nunits = 10\n[node a]\nhost = no-such-host\ncpu = 1\n' >"$TMP/host.ini"
expect_error "unknown host" 2 "host.ini:4: \[node a\] host = no-such-host" "$BUILD/plb-mm" --config "$TMP/host.ini" --n 64
# the master fails after the workers opened their PUs: they stop cleanly
# (they crashed in plb_finalize, on the transport it had just freed)
expect_error "unwritable trace" 4 "trace /nonexistent/dir/t.json: cannot write it" "$BUILD/plb-null" --config test/data/small.ini --trace /nonexistent/dir/t.json
check "unwritable trace: no rank crashes on its way out" eval '! grep -qi "signal\|segmentation" "$TMP/out"'
expect_error "bad policy" 3 "policy fastest: unknown policy; accepted: plb-hac" "$BUILD/plb-mm" --config "$TMP/mm.ini" --n 64 --policy fastest
check "bad policy: said once" test "$(grep -c 'unknown policy' "$TMP/out")" -eq 1
printf 'plb-models 1\npu a b c kernel=null in=0 out=0 cliff=inf samples=1 sig=\n1 nope 0\n' >"$TMP/bad.txt"
expect_error "corrupt models file" 4 "bad.txt:3: expected 'UNITS EXEC_S XFER_S'" "$BUILD/plb-null" --config test/data/small.ini --models "$TMP/bad.txt"
expect_error "bad --n" 3 "--n 0: accepted" "$BUILD/plb-mm" --config "$TMP/mm.ini" --n 0
# [network] link_gbps: the master's link's bound on the run's bytes; a
# link declared slower than the run shows it to be is flagged
printf '[run]\nunits = 1\n[network]\nlink_gbps = 0.001\n[node a]\ncpu = 1\n[node b]\ncpu = 1\n' >"$TMP/link.ini"
check "link_gbps: a run" mpi_run 3 "$BUILD/plb-mm" --config "$TMP/link.ini" --n 300 --json
check "link_gbps: its bound is the bytes over the link" python3 -c "
import json, sys
r = [json.loads(l) for l in open('$TMP/out') if l.startswith('{')][-1]
want = max(r['bytes_sent'], r['bytes_received']) * 8 / 1e6
assert abs(r['link_bound_s'] - want) < 1e-9 * want and r['lower_bound_s'] >= want, r
assert 'which this run beat' in r['bound_note'], r['bound_note']"
finish
