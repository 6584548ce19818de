# --trace FILE: plbsim and the runtime write trace events that Perfetto and
# chrome://tracing open (check_trace.py checks the format's required fields)
# and that agree with the run's report (a slice per block, a thread per PU).
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
ck() { python3 test/cli/check_trace.py "$@"; }

# plbsim: 1024 PUs on 128 nodes; a cluster that loses two PUs
check "plbsim large-1024 --trace" sh -c "'$PLBSIM' config/sim/large-1024.ini --policy plb-hac --json --trace '$TMP/big.json' >'$TMP/big.out'"
check "plbsim large-1024: trace agrees with the report" ck "$TMP/big.json" "$TMP/big.out"
check "plbsim failure.ini --trace" sh -c "'$PLBSIM' config/sim/failure.ini --policy plb-hac --json --trace '$TMP/f.json' >'$TMP/f.out'"
check "plbsim failure.ini: trace agrees with the report" ck "$TMP/f.json" "$TMP/f.out"
lost=$(python3 -c "import json,sys; print(sum(e['name'] == 'lost' for e in json.load(open(sys.argv[1]))['traceEvents']))" "$TMP/f.json")
check "plbsim failure.ini: an instant per lost PU (got $lost)" test "$lost" = 2
check "plbsim failure.ini: transfers traced" grep -q '"cat":"transfer"' "$TMP/f.json"
check "plbsim: the CSV kept as --csv" sh -c "'$PLBSIM' test/data/small.ini --policy greedy --csv '$TMP/t.csv' >/dev/null && head -1 '$TMP/t.csv' | grep -q '^t,pu,event,grant'"
"$PLBSIM" test/data/small.ini --trace /nonexistent/dir/t.json >"$TMP/out" 2>&1
check "plbsim: an unwritable --trace exits 1" test $? = 1
check "plbsim: ... and names it" grep -q "trace /nonexistent/dir/t.json: cannot write it" "$TMP/out"

# The runtime: in one process and under mpirun, several runs in one file
check "plb-null --trace in one process" one_run "$BUILD/plb-null" --config test/data/small.ini --json --trace "$TMP/one.json"
check "one process: trace agrees with the report" ck "$TMP/one.json" "$TMP/out"
check "one process: emulated transfers traced" grep -q '"cat":"transfer"' "$TMP/one.json"
one_run "$BUILD/plb-null" --config test/data/small.ini --trace /nonexistent/dir/t.json
check "plb-null: an unwritable --trace fails" test $? != 0
check "plb-null: ... and names it" grep -q "trace /nonexistent/dir/t.json: cannot write it" "$TMP/out"
if have_mpirun; then
	check "plb-null --runs 3 --trace under mpirun" mpi_run 4 "$BUILD/plb-null" --config test/data/small.ini --runs 3 --json --trace "$TMP/mpi.json"
	check "mpirun: trace agrees with the report, three runs" ck "$TMP/mpi.json" "$TMP/out" --runs 3
	nodes=$(python3 -c "import json,sys; print(sorted(e['args']['name'] for e in json.load(open(sys.argv[1]))['traceEvents'] if e['name'] == 'process_name'))" "$TMP/mpi.json")
	check "mpirun: a process per worker rank (got $nodes)" grep -q "'node a (rank 1, .*'node b (rank 2, .*'node c (rank 3, " <<<"$nodes"
	# a real PU on a worker: each block's way over the link (from the
	# master's packing to its arrival) as its transfer, before its compute
	app_cluster_ini "$TMP/mm.ini" "poly 0.002 2e-5" "poly 1e-4 1e-6" "poly 0.001 1e-4"
	check "plb-mm --trace under mpirun" mpi_run 3 "$BUILD/plb-mm" --config "$TMP/mm.ini" \
		--n 300 --prec double --json --trace "$TMP/mm.json"
	check "plb-mm under mpirun: trace agrees with the report" ck "$TMP/mm.json" "$TMP/out"
	check "plb-mm under mpirun: the real CPU's blocks have their link time as transfers" \
		python3 - "$TMP/mm.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
tid = {(e['pid'], e['args']['name']): e['tid'] for e in ev if e['name'] == 'thread_name'}
pid, cpu = next(k for k in tid if k[1] == 'a.cpu')
xfer = {e['args']['id']: e for e in ev if e.get('cat') == 'transfer' and e['pid'] == pid
        and e['tid'] == tid.get((pid, cpu + ' transfer'))}
blocks = {e['args']['id']: e for e in ev if e.get('ph') == 'X' and e.get('cat', '').startswith('block')
          and e['pid'] == pid and e['tid'] == tid[pid, cpu]}
print('a.cpu: %d blocks, %d with a transfer' % (len(blocks), len(xfer)))
assert blocks and len(xfer) * 2 >= len(blocks)
for i, x in xfer.items():
    assert x['dur'] > 0 and x['ts'] + x['dur'] <= blocks[i]['ts'] + 1, (x, blocks[i])
PY
fi

# plb-plot: the figures of a trace, and of the robustness bench
png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }
plot=scripts/plb-plot
check "plb-plot on plbsim's trace" "$plot" "$TMP/f.json" -o "$TMP/f" >"$TMP/plot.out"
for fig in gantt blocks models; do
	check "plb-plot: $fig is a PNG" png "$TMP/f-$fig.png"
	check "plb-plot: says it wrote $fig" grep -q "^$TMP/f-$fig.png$" "$TMP/plot.out"
done
check "plb-plot on the runtime's trace, --run 1" "$plot" "$TMP/one.json" --run 1 -o "$TMP/r" >/dev/null
check "plb-plot: the runtime's Gantt chart" png "$TMP/r-gantt.png"
"$plot" "$TMP/one.json" --run 5 -o "$TMP/r5" >"$TMP/out" 2>&1
check "plb-plot: --run past the runs exits 2" test $? = 2
check "plb-plot: ... and says what is accepted" grep -q "accepted: 1 to 1" "$TMP/out"
check "plb-plot: ... and writes nothing" test ! -e "$TMP/r5-gantt.png"
printf '{"traceEvents": [' >"$TMP/cut.json"
"$plot" "$TMP/cut.json" >"$TMP/out" 2>&1
check "plb-plot: a cut trace exits 1" test $? = 1
check "plb-plot: ... naming the file" grep -q "cut.json: not JSON" "$TMP/out"
cat >"$TMP/bench.json" <<'JSON'
{"clusters": {"mixed:1": {"plb-hac": {"ratio": 1.02}, "greedy": {"ratio": 1.10}},
              "cliff:1": {"plb-hac": {"ratio": 1.30}, "greedy": {"ratio": 1.20}}}}
JSON
check "plb-plot --bench: a CDF per policy" "$plot" --bench "$TMP/bench.json" >/dev/null
check "plb-plot --bench: the CDF is a PNG" png "$TMP/bench-cdf.png"
"$plot" --bench "$TMP/f.json" >"$TMP/out" 2>&1
check "plb-plot --bench on a trace exits 1" test $? = 1
finish
