# plbsim's pipeline runs (a scenario with [op] sections): under every
# scheduler every instance and task is done, no task runs on a class its
# op has no time for, an input made in another memory is copied (and
# only then), a node without an accelerator runs everything on
# its CPUs, the makespan is no less than the work over the PUs, runs are
# repeatable for a seed; the options that do not apply are refused, and
# a block run (plb_run) on a config with [op] sections is warned once.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
cat >"$TMP/p.ini" <<'INI'
[run]
units = 40
window = 6
[node a]
emu = g c c c
[model c]
class = cpu
compute = poly 0 0.001
noise = 0.05
[model g]
class = gpu
compute = poly 0 0.001
transfer = poly 0.0001 0.0001
noise = 0.03
[op Read]
out_mb = 10
cpu = 5
[op Filter]
after = Read
tasks = 3
cpu = 20
gpu = 2
[op Label]
after = Filter
cpu = 4
gpu = 3
[op Stats]
after = Read
cpu = 6
INI
"$PLBSIM" "$TMP/p.ini" --scheduler all --json >"$TMP/o" 2>"$TMP/e"; rc=$?
check "--scheduler all --json: exit 0 (got $rc: $(cat "$TMP/e"))" test $rc = 0
check "... every scheduler, every instance and task done, CPU-only ops on CPUs, above the bound" python3 - "$TMP/o" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["scheduler"] for r in rows] == ["fcfs", "heft", "padas", "pams"], rows
# work a task at its fastest class, ms: Read 5, Filter 3 x 2, Label 3, Stats 6
bound = 40 * (5 + 3 * 2 + 3 + 6) / 1e3 / 4
for r in rows:
    assert r["instances"] == 40 and r["tasks"] == 40 * 6, r
    assert sum(sum(c.values()) for c in r["ran"].values()) == r["tasks"], r
    assert r["ran"]["Read"]["gpu"] == 0 and r["ran"]["Stats"]["gpu"] == 0, r
    assert r["ran"]["Filter"]["cpu"] + r["ran"]["Filter"]["gpu"] == 120, r
    assert r["makespan_s"] >= bound * 0.9, (r["makespan_s"], bound)   # 0.9: the noise
    assert r["window"] == 6 and r["sched_us_task"] > 0, r
    # data stays where it was made: Read's 10 MB (made on a CPU) copied
    # for each Filter task on the GPU, nothing else moves
    assert r["copies"] == r["ran"]["Filter"]["gpu"] and r["copy_mb"] == 10 * r["copies"], r
    assert r["copy_s"] > 0 or r["copies"] == 0, r
PY
# the accelerator-friendly op mostly on the GPU under pams (10x there)
check "pams: Filter mostly on the GPU" python3 -c "
import json, sys
r = [json.loads(l) for l in open('$TMP/o')][3]
assert r['ran']['Filter']['gpu'] > r['ran']['Filter']['cpu'], r"
"$PLBSIM" "$TMP/p.ini" --scheduler heft --json --seed 3 --estimate-error 0.5 >"$TMP/a"
"$PLBSIM" "$TMP/p.ini" --scheduler heft --json --seed 3 --estimate-error 0.5 >"$TMP/b"
check "a seed repeats the run (but for the schedulers' wall time)" python3 -c "
import json
a, b = (json.load(open(f)) for f in ('$TMP/a', '$TMP/b'))
a.pop('sched_us_task'), b.pop('sched_us_task')
assert a == b, (a, b)"
"$PLBSIM" "$TMP/p.ini" --scheduler pams --learn --window 2 >"$TMP/o" 2>&1
check "--learn --window 2: a text report with where each op ran" grep -q "^Filter " "$TMP/o"
sed 's/^emu = g c c c/emu = c c/' "$TMP/p.ini" >"$TMP/cpu.ini"
sed -i '/^\[model g\]/,/^noise = 0.03/d' "$TMP/cpu.ini"
"$PLBSIM" "$TMP/cpu.ini" --scheduler all --json >"$TMP/o" 2>&1; rc=$?
check "CPUs only: every scheduler runs (got $rc)" test $rc = 0
check "... and does every task" test "$(grep -c '"tasks":240' "$TMP/o")" = 4
check "... copying nothing (one memory)" test "$(grep -c '"copies":0,' "$TMP/o")" = 4
sed -e 's/^emu = g c c c/emu = g/' -e '/^\[model c\]/,/^noise = 0.05/d' "$TMP/p.ini" >"$TMP/gpu.ini"
"$PLBSIM" "$TMP/gpu.ini" --scheduler pams >"$TMP/o" 2>&1; rc=$?
check "an op no PU runs: exit 1 (got $rc)" test $rc = 1
check "... naming the node and why" grep -q "\[node a\]: operation 0: no PU of this node can run it" "$TMP/o"
refused() { # refused DESCRIPTION ARGS...: exit 2 with a message
	"$PLBSIM" "${@:2}" >"$TMP/o" 2>&1; local rc=$?
	check "$1: exit 2 (got $rc)" test $rc = 2
	check "$1: says why" grep -q "plbsim: " "$TMP/o"
}
refused "--policy on a pipeline" "$TMP/p.ini" --policy greedy
refused "--scheduler on a scenario without ops" config/sim/mm-1.ini --scheduler pams
refused "--scheduler bogus" "$TMP/p.ini" --scheduler bogus
refused "--window 0" "$TMP/p.ini" --window 0
refused "--estimate-error -1" "$TMP/p.ini" --estimate-error -1
refused "--blind-copies on a scenario without ops" config/sim/mm-1.ini --blind-copies
"$PLBSIM" "$TMP/p.ini" --scheduler pams --blind-copies --json >"$TMP/o" 2>&1; rc=$?
check "--blind-copies: runs, every task done (got $rc)" eval 'test $rc = 0 && grep -q "\"tasks\":240" "$TMP/o"'
# two tasks a PU ([run] pipeline = 2): every task, and a PU's second
# waits for its first (no more than the work over the PUs sooner)
sed 's/^window = 6/window = 6\npipeline = 2/' "$TMP/p.ini" >"$TMP/p2.ini"
"$PLBSIM" "$TMP/p2.ini" --scheduler all --json >"$TMP/o" 2>&1; rc=$?
check "pipeline = 2: runs (got $rc)" test $rc = 0
check "... every task of every scheduler" test "$(grep -c '"tasks":240' "$TMP/o")" = 4
check "... a PU runs one task at a time: each class's work within its PUs' time" python3 - "$TMP/o" <<'PY'
import json, sys
ms = {"Read": {"cpu": 5}, "Filter": {"cpu": 20, "gpu": 2}, "Label": {"cpu": 4, "gpu": 3},
      "Stats": {"cpu": 6}}
for l in open(sys.argv[1]):
    r = json.loads(l)
    for cls, pus in (("cpu", 3), ("gpu", 1)):
        work = sum(n * ms[op].get(k, 0) for op, c in r["ran"].items() for k, n in c.items() if k == cls) / 1e3
        assert work / pus <= r["makespan_s"] / 0.9, (r["scheduler"], cls, work, r["makespan_s"])
PY
# A block run (plb_run) on a pipeline config runs, and is told once that
# the [op] sections are not its (plb-null runs such a config as the
# pipeline it is: runtime_pipeline.sh).
"$BUILD/plb-mm" --config "$TMP/p.ini" --n 64 --verify --runs 2 >"$TMP/o" 2>&1; rc=$?
check "a block run on a pipeline config: runs (got $rc)" test $rc = 0
check "... warned once, naming the file and the first [op]" \
	test "$(grep -c "p.ini:15: \[op Read\]: the config's \[op\] sections are for pipeline runs" "$TMP/o")" = 1
finish
