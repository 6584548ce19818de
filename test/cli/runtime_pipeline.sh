# The runtime's pipeline runs (plb_run_pipeline): plbsim's pipeline
# scenario run as it is by plb-null (each task counts itself in its
# instance's output, checked) under every scheduler, in one process and
# under mpirun on two nodes; an op no PU of a node can run stops the run
# naming it; and plb-nuclei (OpenCV's operations) checked against its
# serial reference and the nuclei it drew, in one process and under
# mpirun, under every scheduler.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
cat >"$TMP/p.ini" <<'INI'
[run]
units = 30
window = 5
[node a]
emu = g c c
[model c]
class = cpu
compute = poly 0 0.001
[model g]
class = gpu
compute = poly 0 0.001
[op Read]
cpu = 2
[op Filter]
after = Read
tasks = 3
cpu = 6
gpu = 1
[op Label]
after = Filter
cpu = 2
gpu = 2
[op Stats]
after = Read
cpu = 3
INI
for s in fcfs heft padas pams; do
	"$BUILD/plb-null" --config "$TMP/p.ini" --scheduler $s --json >"$TMP/o" 2>"$TMP/e"; rc=$?
	check "plb-null, pipeline scenario, $s: exit 0 (got $rc: $(head -c 300 "$TMP/e"))" test $rc = 0
	check "... every instance, 6 tasks each" grep -q '"instances_done":30,"coverage_ok":true,"tasks":180' "$TMP/o"
	check "... the GPU never ran Read or Stats (no gpu time)" \
		python3 -c "import json,sys; d=json.load(open('$TMP/o')); sys.exit(any(o['ran']['gpu'] for o in d['ops'] if o['name'] in ('Read','Stats')))"
done
# an op no PU can run: the node says which, the run fails
sed 's/^emu = g c c/emu = g/' "$TMP/p.ini" >"$TMP/g.ini"
"$BUILD/plb-null" --config "$TMP/g.ini" >"$TMP/o" 2>&1; rc=$?
check "an op no PU of the node runs: exit 1 (got $rc)" test $rc = 1
check "... naming the node and why" grep -q "node 'a'.*no PU of this node can run it" "$TMP/o"
if have_mpirun; then
	printf '[node b]\nemu = c c\n' | cat "$TMP/p.ini" - >"$TMP/two.ini"
	mpirun -np 3 --oversubscribe --bind-to none "$BUILD/plb-null" --config "$TMP/two.ini" \
		--scheduler heft --json >"$TMP/o" 2>"$TMP/e"; rc=$?
	check "plb-null, two nodes under mpirun: exit 0 (got $rc: $(head -c 300 "$TMP/e"))" test $rc = 0
	check "... every instance, 6 tasks each" grep -q '"instances_done":30,"coverage_ok":true,"tasks":180' "$TMP/o"
	check "... both nodes ran tasks" \
		python3 -c "import json,sys; d=json.load(open('$TMP/o')); n={s['name'].split('.')[0] for s in d['slots'] if s['tasks']}; sys.exit(n != {'a','b'})"
fi
if [ ! -x "$BUILD/plb-nuclei" ]; then
	echo "plb-nuclei not built (no OpenCV in this build: make OPENCV=0, or libopencv-imgproc-dev missing): its part not run"
	finish
fi
printf '[node a]\ncpu = 2\nemu = g\n[model g]\nclass = gpu\ncompute = poly 0 0.001\n[op recon]\ncpu = 2\ngpu = 0.3\n[op features]\ncpu = 0.05\n' >"$TMP/n.ini"
for s in fcfs heft padas pams; do
	"$BUILD/plb-nuclei" --config "$TMP/n.ini" --width 1024 --height 512 --tile 128 --scheduler $s \
		--verify >"$TMP/o" 2>"$TMP/e"; rc=$?
	check "plb-nuclei, one process, $s: exit 0 (got $rc: $(tail -c 300 "$TMP/e"))" test $rc = 0
	check "... as the serial reference, every nucleus found" \
		grep -q "verify: ok; 32 of 32 tiles as the serial reference ([0-9.]* s on one core); \([0-9]*\) of \1 nuclei drawn found" "$TMP/e"
done
# --trace: each task a slice on its slot's thread (a team's second core
# its own), none overlapping another on one thread, as many as the report
# says; plb-plot draws it
printf '[node a]\ncpu = 2\n' >"$TMP/n2c.ini"
"$BUILD/plb-nuclei" --config "$TMP/n2c.ini" --width 512 --height 512 --tile 128 --json \
	--trace "$TMP/t.json" >"$TMP/o" 2>"$TMP/e"; rc=$?
check "plb-nuclei --trace: exit 0 (got $rc: $(tail -c 300 "$TMP/e"))" test $rc = 0
check "... a slice a task, on the slots' threads, none overlapping" python3 - "$TMP/t.json" "$TMP/o" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
rep = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")][-1]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
tasks = [e for e in ev if e["ph"] == "X" and e.get("cat", "").startswith("block")]
assert len(tasks) == rep["tasks"], (len(tasks), rep["tasks"])
ops = {o["name"] for o in rep["ops"]}
assert all(e["name"] in ops for e in tasks)
rows = {}
for e in tasks:
    rows.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
assert sorted(names[k] for k in rows) == ["a.cpu", "a.cpu:1"], [names.get(k) for k in rows]
for v in rows.values():
    v.sort()
    assert all(a[1] <= b[0] + 1e-3 for a, b in zip(v, v[1:]))
assert sum(e["ph"] == "X" and e.get("cat") == "run" for e in ev) == 1
PY
check "... plb-plot draws it" eval '/usr/bin/python3 scripts/plb-plot "$TMP/t.json" -o "$TMP/t.png" >/dev/null'
"$BUILD/plb-nuclei" --config "$TMP/n.ini" --tile 100 >"$TMP/o" 2>&1; rc=$?
check "plb-nuclei --tile 100: exit 2 (got $rc)" test $rc = 2
check "... saying what is accepted" grep -q "a multiple of 32" "$TMP/o"
if have_mpirun; then
	printf '[node b]\ncpu = 1\n' | cat "$TMP/n.ini" - | sed 's/^cpu = 2$/cpu = 1/' >"$TMP/n2.ini"
	mpirun -np 3 --oversubscribe --bind-to none "$BUILD/plb-nuclei" --config "$TMP/n2.ini" \
		--width 1024 --height 512 --tile 128 --verify --json >"$TMP/o" 2>"$TMP/e"; rc=$?
	check "plb-nuclei, two nodes under mpirun: exit 0 (got $rc: $(tail -c 300 "$TMP/e"))" test $rc = 0
	check "... as the serial reference, every nucleus found" \
		grep -q "verify: ok; 32 of 32 tiles as the serial reference ([0-9.]* s on one core); \([0-9]*\) of \1 nuclei drawn found" "$TMP/e"
fi
finish
