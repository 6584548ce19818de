# plbsim's command line: bad options are refused with exit 2 (as the
# apps) and a message saying what is accepted; a bad scenario exits 1;
# --json has every key of the contract; --runs N reports the N-th run,
# warm; --layout 2d partitions for the 2-D product; --csv writes one line per event;
# --params lists the balancer parameters; a valid --set changes the run
# (solver = 2 is refused past 64 PUs); a
# run that loses PUs says so and covers the domain, and one that cannot
# finish exits 3.
. test/cli/lib.bash
S=test/data/small.ini

refused() {     # refused DESCRIPTION PATTERN ARGS...
	local what=$1 pat=$2; shift 2
	local out rc
	out=$("$PLBSIM" "$@" 2>&1); rc=$?
	check "$what: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "$what: says '$pat' (got: $out)" grep -q -- "$pat" <<<"$out"
}
refused "unknown option" "unknown or incomplete option" $S --bogus
refused "unknown policy" "accepted: plb-hac plb-hec hdss greedy static all" $S --policy best
refused "negative seed" "--seed" $S --seed -3
refused "bad solve-us" "--solve-us" $S --solve-us fast
refused "bad --set" "unknown balancer parameter" $S --set nope=1
refused "out of range --set" "out of range" $S --set end_fraction=2
refused "no scenario" "exactly one scenario" --policy greedy
refused "trace with all" "--trace needs a single --policy" $S --policy all --trace "$TMP/t.json"
refused "csv with all" "--csv needs a single --policy" $S --policy all --csv "$TMP/t.csv"
refused "--layout 3d" "accepted: 2d" $S --layout 3d
refused "--layout 2d without --n" "needs --n N" $S --layout 2d
refused "--n without --layout" "go with --layout 2d" $S --n 4096
refused "--partitioner best" "accepted: fpm | multiple-cpm | single-cpm | homogeneous | all" $S --layout 2d --n 4096 --partitioner best
refused "--layout 2d with --policy" "it takes --n, --block" $S --layout 2d --n 4096 --policy greedy
refused "--eps 0" "--eps: '0'; accepted: a number in (0, 1)" $S --layout 2d --n 4096 --eps 0
refused "--eps without --layout" "--partitioner and --eps go with --layout 2d" $S --eps 0.02
# --layout 2d: a line of figures a partitioner, each step no sooner than its bound
two=$("$PLBSIM" config/sim/hier-90.ini --layout 2d --n 16384 --partitioner all --json); rc=$?
check "--layout 2d --json exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "--layout 2d: four partitioners, each step at or above its bound" python3 -c "
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
assert [r['partitioner'] for r in rows] == ['fpm', 'multiple-cpm', 'single-cpm', 'homogeneous'], rows
assert all(r['step_s'] >= r['bound_s'] * (1 - 1e-9) and r['blocks'] == 128 for r in rows), rows
" "$two"
refused "--runs 0" "accepted: an integer in \[1, 1000\]" $S --runs 0
# --runs 3: the third run's report, warm (plb-hac trains no PU), and
# another than the cold one
warm=$("$PLBSIM" $S --policy plb-hac --solve-us 100 --runs 3 --json)
check "--runs 3: runs 3 in the JSON" grep -q '"runs":[[:space:]]*3' <<<"$warm"
check "--runs 3: no training block in the warm run" \
	python3 -c "import json,sys; sys.exit(json.loads(sys.argv[1])['training_blocks'] != 0)" "$warm"
# SLSQP alone past 64 PUs (dense: seconds a solve) is refused at start
refused "solver=2 on 1024 PUs" "solver = 2 (SLSQP only) takes at most 64 PUs, and the cluster has 1024" \
	config/sim/large-1024.ini --set solver=2

json=$("$PLBSIM" $S --policy greedy --solve-us 100 --json); rc=$?
check "json run exits 0" [ "$rc" -eq 0 ]
for k in policy units units_done coverage_ok makespan_s lower_bound_s eq_optimum_s \
	 ratio imbalance idle_frac blocks gap_blocks solves solver_ms_mean solver_ms_max; do
	check "json has \"$k\"" grep -q "\"$k\":" <<<"$json"
done
check "json coverage_ok true" grep -q '"coverage_ok":[[:space:]]*true' <<<"$json"
check "json policy greedy" grep -q '"policy":[[:space:]]*"greedy"' <<<"$json"
# one idle fraction per PU (small.ini has five)
n=$(tr -d ' \t\n' <<<"$json" | sed 's/.*"idle_frac":\[\([^]]*\)\].*/\1/' | tr ',' '\n' | grep -c .)
check "idle_frac has 5 entries (got $n)" [ "$n" -eq 5 ]

all=$("$PLBSIM" $S --policy all --solve-us 100 --json)
check "--policy all --json is an array of 5" [ "$(grep -c '"policy":' <<<"$all")" -eq 5 ]
check "--policy all --json starts with [" grep -q '^\[' <<<"$all"

"$PLBSIM" $S --policy plb-hac --solve-us 100 --csv "$TMP/t.csv" > "$TMP/out.txt"
check "trace header" grep -q '^t,pu,event,grant,offset,units,kind,exec_s,xfer_s$' "$TMP/t.csv"
blocks=$(sed -n 's/^  blocks *\([0-9]*\).*/\1/p' "$TMP/out.txt")
grants=$(grep -c '^[0-9].*,grant,' "$TMP/t.csv")
dones=$(grep -c '^[0-9].*,done,' "$TMP/t.csv")
check "one trace grant per block ($grants vs $blocks)" [ "$grants" -eq "$blocks" ]
# every grant is done, or is a copy of a late block run again whose units
# the other copy did (it ends stale, or is still running at the end)
check "every grant done, or its units done by another copy" python3 - "$TMP/t.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
grants = {r["grant"]: r for r in rows if r["event"] == "grant"}
done = {r["grant"] for r in rows if r["event"] == "done"}
units = set()
for r in rows:
    if r["event"] == "done":
        units.update(range(int(r["offset"]), int(r["offset"]) + int(r["units"])))
for gid, g in grants.items():
    if gid in done:
        continue
    span = range(int(g["offset"]), int(g["offset"]) + int(g["units"]))
    if not all(u in units for u in span):
        sys.exit("grant %s (%s units at %s) never done, nor its units" % (gid, g["units"], g["offset"]))
PY

# greedy_block=K: ceil(200000 / K) blocks
for k in 7919 20000; do
	want=$(( (200000 + k - 1) / k ))
	got=$("$PLBSIM" $S --policy greedy --solve-us 100 --set greedy_block=$k --json |
	      python3 -c "import json,sys; print(json.load(sys.stdin)['blocks'])")
	check "--set greedy_block=$k: $want blocks (got $got)" [ "$got" = "$want" ]
done

# deaths (small.ini's runs last 0.14-0.28 s): three PUs (both of model cpu6,
# and gpu-fast) die at 0.05 s, noticed 0.02 s later; the others finish,
# every unit once
sed 's/^fail_detect_ms = .*/fail_detect_ms = 20/; s/^\[model gpu-fast\]/&\nfail = 0.05/; s/^\[model cpu6\]/&\nfail = 0.05/' \
	$S >"$TMP/die.ini"
out=$("$PLBSIM" "$TMP/die.ini" --policy all --solve-us 100 --json); rc=$?
check "PUs lost: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "PUs lost: every policy reports 3 lost, every unit once" python3 -c '
import json, sys
for r in json.loads(sys.argv[1]):
    assert r["pus_lost"] == 3, (r["policy"], r["pus_lost"])
    assert r["coverage_ok"] and r["units_done"] == r["units"], r["policy"]' "$out"
# every PU dead: no run can finish
sed 's/^\[model .*\]/&\nfail = 0.05/' $S >"$TMP/alldie.ini"
out=$("$PLBSIM" "$TMP/alldie.ini" --policy greedy --solve-us 100 2>&1); rc=$?
check "every PU dead: exit 1, a run error (got $rc)" [ "$rc" -eq 1 ]
check "every PU dead: says so ($out)" grep -q "greedy: run stalled: no PU left to finish it" <<<"$out"

params=$("$PLBSIM" --params)
for k in initial_block gap_threshold_ms end_fraction min_block; do
	check "--params lists $k" grep -q "^$k " <<<"$params"
done
finish
